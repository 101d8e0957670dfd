"""Reading DATA_DIR: persons and GRF-C as text (pipe-delimited) or Parquet (SPEC section 4).

Both are read as string columns so that validation sees the values exactly as written.
Persons are streamed in batches (`iter_batches`) so memory does not grow with the
number of persons. Each batch knows the file line (Parquet: the row) of its first row.
Everything a file can do wrong is a Problem with file and line, never an exception:
unreadable files, bytes that are not UTF-8, null Parquet cells, files that end early.
"""

from __future__ import annotations

import hashlib
import itertools
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from calculators.config import expected_file
from engine.errors import ProblemLog

PERSON_COLUMNS = [
    "QAGE", "QSEX", "HOUSEHOLDER", "TABBLKST", "TABBLKCOU", "TABTRACTCE", "TABBLK", "CENRACE",
    "QRACE1", "QRACE2", "QRACE3", "QRACE4", "QRACE5", "QRACE6", "QRACE7", "QRACE8", "QSPAN",
]
RACE_COLUMNS = [f"QRACE{i}" for i in range(1, 9)]
GRF_COLUMNS = ["TABBLKST", "TABBLKCOU", "TABTRACTCE", "TABBLK", "PLACEFP", "AIANNHCE"]

PERSONS_STEM = "person-records"
GRF_STEM = "GRF-C"

#: The most bytes of a header line read (a header is ~150 bytes; a file without line
#: breaks must not be read whole to report it).
_HEADER_BYTES = 1 << 16
#: Bytes per text block read by pyarrow: at most 64 MiB (about 1-2 million person rows,
#: a national file's blocks), at least 1 MiB, and otherwise the size that reads a file in
#: `_MIN_BLOCKS` blocks. Parsing a block, checking the one before and counting the one
#: before that overlap on two cores only when there are several blocks: read in 64 MiB
#: blocks, a million persons (80 MB) were two blocks, and each step waited for the other.
_MAX_BLOCK, _MIN_BLOCK, _MIN_BLOCKS = 64 << 20, 1 << 20, 16


def _block_size(path: Path) -> int:
    """The text block size for the file at `path` (see `_MAX_BLOCK`)."""
    try:
        size = path.stat().st_size
    except OSError:
        return _MAX_BLOCK  # the reader says what is wrong with the file
    return int(min(_MAX_BLOCK, max(_MIN_BLOCK, size // _MIN_BLOCKS)))


#: The first bytes of a line echoed in a message about it.
ECHO_BYTES = 60


def _long_line(path: Path, limit: int) -> tuple[int, str, int] | None:
    """The first line of the file at `path` longer than `limit` bytes: its number (1-based),
    its first characters and its length in bytes; None if every line is shorter. Reads
    the file once, 1 MiB at a time (only after pyarrow stopped on such a line)."""
    number, length, head = 1, 0, b""
    try:
        with open(path, "rb") as fh:
            while piece := fh.read(1 << 20):
                start = 0
                while True:
                    end = piece.find(b"\n", start)
                    part = piece[start:] if end < 0 else piece[start:end]
                    if length < ECHO_BYTES:
                        head += part[:ECHO_BYTES - length]
                    length += len(part)
                    if end < 0:
                        break
                    if length > limit:
                        return number, head.decode("utf-8", "replace"), length
                    number, length, head, start = number + 1, 0, b"", end + 1
    except OSError:
        return None
    return (number, head.decode("utf-8", "replace"), length) if length > limit else None


def _flat_columns(df: DataFile, schema: pa.Schema | None, expected: list[str], log: ProblemLog,
                  names: list[str]) -> list[str] | None:
    """`names`, or None (logged) if a Parquet column it reads is a list, struct or map:
    its cells hold no single value (pyarrow's reader stopped on one with a KeyError)."""
    if schema is None:
        return names
    bad = [c for c in expected if pa.types.is_nested(schema.field(c).type)
           or (pa.types.is_dictionary(schema.field(c).type) and pa.types.is_nested(schema.field(c).type.value_type))]
    for c in bad:
        log.add(df.name, None, c, str(schema.field(c).type),
                "a column of one text, number or boolean per row (not a list, struct or map)")
    return None if bad else names


@dataclass(frozen=True)
class DataFile:
    path: Path
    kind: str  # "txt" or "parquet"

    @property
    def name(self) -> str:
        return self.path.name


def open_input(path: Path) -> BinaryIO:
    """Open an input file for reading bytes (one place, so that every unreadable input
    is reported the same way: callers turn the OSError into a Problem)."""
    return open(path, "rb")  # noqa: SIM115 - the caller closes it


def find_data_file(data_dir: Path, stem: str, log: ProblemLog) -> DataFile | None:
    """`stem.txt` or `stem.parquet` in data_dir (exactly one of them, readable)."""
    txt, parquet = data_dir / f"{stem}.txt", data_dir / f"{stem}.parquet"
    found = [DataFile(p, k) for p, k in ((txt, "txt"), (parquet, "parquet")) if p.is_file()]
    if not found:
        # the one of the two names that holds something else (a FIFO, a folder, a dangling
        # link) is what the user meant: say what it is, not that neither file exists
        there = [p for p in (txt, parquet) if os.path.lexists(p)]
        shown = there[0] if there else txt
        log.add(shown.name, None, None, None,
                expected_file(shown, "" if there else f" (nor {parquet.name})"))
        return None
    if len(found) == 2:
        log.add(f"{stem}.txt", None, None, None,
                f"only one of {txt.name} and {parquet.name} in {data_dir} (both are present)")
        return None
    try:
        with open_input(found[0].path) as fh:
            fh.read(1)
    except OSError as exc:
        log.add(found[0].name, None, None, None, f"a readable file (cannot read it: {exc.strerror or exc})")
        return None
    return found[0]


def check_header(df: DataFile, expected: list[str], log: ProblemLog, extra_ok: bool = False) -> list[str] | None:
    """The file's column names if they are `expected` (SPEC §4), else None (logged).

    With `extra_ok` (GRF-C: the real file has many more columns, which are ignored, as in
    production) the expected columns must each appear once, in this order, other
    columns between them allowed.
    """
    schema = None
    try:
        if df.kind == "parquet":
            if (footer := _parquet_footer_problem(df.path)) is not None:  # before pyarrow reads the footer
                log.add(df.name, None, None, None, footer)
                return None
            schema = pq.ParquetFile(df.path).schema_arrow
            names = schema.names
            where, shown = None, "|".join(names)
        else:
            with open_input(df.path) as fh:
                first = fh.readline(_HEADER_BYTES).decode("utf-8", errors="replace").rstrip("\r\n")
            # a UTF-8 byte-order mark is skipped, and a lone CR ends the line, as pyarrow's
            # parser (and production's Spark and pandas readers) take them
            first = first.removeprefix("\ufeff").split("\r", 1)[0]
            names, where, shown = first.split("|"), 1, first
    except (OSError, pa.ArrowException) as exc:
        log.add(df.name, None, None, None, f"a readable {'Parquet ' if df.kind == 'parquet' else ''}file ({exc})")
        return None
    what = "columns" if df.kind == "parquet" else "header"
    if names == expected:
        return _flat_columns(df, schema, expected, log, names)
    if extra_ok and all(names.count(c) == 1 for c in expected):
        pos = [names.index(c) for c in expected]
        if pos == sorted(pos):
            return _flat_columns(df, schema, expected, log, names)
    wanted = "|".join(expected) + (" in this order (other columns may come between them)" if extra_ok else "")
    log.add(df.name, where, "columns" if where is None else None, shown, f"the {what} {wanted}")
    return None


class LineMap:
    """The file line of each row of a text data file, for messages.

    Lines end at LF, CRLF or a lone CR, as pyarrow's parser (and production's Spark and
    pandas readers) end them. pyarrow skips empty lines, so "header line + 1 + the row's
    index" is the row's line only in a file without them, the usual case. Rows are
    numbered that way (`Batch.first_line`) and mapped here to their lines. The file is
    read only when a line is first asked for (problems only), once, 16 MiB at a time,
    with byte operations: only its empty lines are looked at one by one, and only the
    rows where the two numberings part are kept.
    """

    def __init__(self, path: Path):
        self.path = path
        self._starts: np.ndarray | None = None  # row numbers (header + 1 + index) where
        self._shift: np.ndarray | None = None  # the line minus the row number changes

    def _load(self) -> None:
        if self._starts is not None:
            return
        try:
            starts, shift = _empty_line_shifts(self.path)
        except OSError:
            starts, shift = [0], [0]  # the rows' numbers stand
        self._starts, self._shift = np.array(starts, np.int64), np.array(shift, np.int64)

    def lines(self, rows: np.ndarray) -> np.ndarray:
        """The lines of rows numbered header + 1 + index (0 where unknown: past
        `_MAX_SHIFTS` empty-line runs)."""
        self._load()
        rows = np.asarray(rows, np.int64)
        shift = self._shift[np.searchsorted(self._starts, rows, side="right") - 1]
        return np.where(shift >= 0, rows + shift, 0)

    def line(self, row: int) -> int:
        return int(self.lines(np.array([row]))[0])


_EMPTY_LINE = re.compile(b"(?<=\n)\n")
#: Bytes read at a time by `_empty_line_shifts`.
_LINE_MAP_CHUNK = 16 << 20
#: The most places where the shift changes that a `LineMap` keeps (a double-spaced file
#: changes it at every row); rows after the last are given no line.
_MAX_SHIFTS = 1 << 18


def _empty_line_shifts(path: Path) -> tuple[list[int], list[int]]:
    """([row numbers], [shifts]): from each row number on (header + 1 + index, rows as
    pyarrow yields them), its line is the row number + the shift (the empty lines before
    it). Line ends are made LF (CRLF first, then a lone CR) chunk by chunk; an empty line
    is an LF that starts a line."""
    starts, shift = [0], [0]
    with open(path, "rb") as fh:
        head = fh.read(_HEADER_BYTES)
        ends = [i for i in (head.find(b"\n"), head.find(b"\r")) if i >= 0]
        if not ends:
            return starts, shift
        skip = min(ends) + (2 if head[min(ends):min(ends) + 2] == b"\r\n" else 1)
        fh.seek(skip)
        newlines = 0  # line ends read so far (after the header's)
        empties = 0
        at_line_start = True
        carry = b""
        while True:
            chunk = fh.read(_LINE_MAP_CHUNK)
            data = carry + chunk
            carry = b""
            if chunk and data.endswith(b"\r"):  # it may be the CR of a CRLF
                data, carry = data[:-1], b"\r"
            text = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
            first = [0] if at_line_start and text[:1] == b"\n" else []
            last, counted = 0, 0
            for pos in itertools.chain(first, (m.start() for m in _EMPTY_LINE.finditer(text))):
                counted += text.count(b"\n", last, pos)
                last = pos
                line = 2 + newlines + counted  # the empty line's number
                row = line - empties  # the row number of the next row
                empties += 1
                if starts[-1] == row:
                    shift[-1] = empties
                elif len(starts) < _MAX_SHIFTS:
                    starts.append(row)
                    shift.append(empties)
                else:
                    starts.append(row)
                    shift.append(-1)  # unknown from here on
                    return starts, shift
            newlines += text.count(b"\n")
            if text:
                at_line_start = text.endswith(b"\n")
            if not chunk:
                break
    return starts, shift


@dataclass
class Batch:
    """A batch of rows as string columns.

    `first_line` is the file line of row 0 (text: the header is line 1) or, for Parquet,
    the 1-based row number of row 0; `reported` marks rows whose problems the reader has
    already logged (null cells, bytes that are not UTF-8), so checks skip reporting them.
    """

    table: pa.Table
    first_line: int | None
    reported: np.ndarray | None = None
    #: A text file's `LineMap`: `first_line` counts rows, not lines, and the two part
    #: where pyarrow skips an empty line or ends a row at a lone carriage return.
    line_map: LineMap | None = None

    def line(self, i: int) -> int | None:
        if self.first_line is None:
            return None
        n = self.first_line + int(i)
        if self.line_map is None:
            return n
        line = self.line_map.line(n)
        return line if line > 0 else None

    def lines(self) -> np.ndarray | None:
        """The line (Parquet: row) of every row (0 where unknown), or None if unknown."""
        if self.first_line is None:
            return None
        n = self.first_line + np.arange(self.table.num_rows, dtype=np.int64)
        return n if self.line_map is None else self.line_map.lines(n)

    def unreported(self, bad: np.ndarray) -> np.ndarray:
        """`bad` without the rows the reader already reported."""
        return bad if self.reported is None else bad & ~self.reported


def iter_batches(df: DataFile, expected: list[str], log: ProblemLog, extra_ok: bool = False,
                 dictionary: bool = False, ahead: ReadAhead | None = None) -> Iterator[Batch]:
    """Stream a data file in batches of string columns (only the `expected` ones).

    Problems go to `log` with their line (text) or row (Parquet): rows with the wrong
    number of fields, null cells, bytes that are not UTF-8, a file with no row after
    its header (production rejects empty person and GRF-C files), and a file that cannot
    be read or parsed (the batches read so far stand; reading stops there).

    With `dictionary` every column is a dictionary array (string values, int32 indices,
    no nulls): each distinct value of a batch is then decoded and checked once, not once
    per row (person files repeat a few thousand values over millions of rows).

    `ahead`: a `ReadAhead` of this file with the same `expected` and `dictionary`,
    started earlier; its blocks are taken instead of parsing the file again.
    """
    if ahead is not None and not ahead.reads(df, expected, dictionary):
        raise ValueError(f"the read-ahead of {ahead.df.name} is not a read of {df.name} with these columns")
    if check_header(df, expected, log, extra_ok) is None:
        return
    rows = 0
    try:
        source = (_parquet_batches(df, expected, dictionary) if df.kind == "parquet"
                  else _text_batches(df, expected, log, dictionary, ahead))
        decode = _decode_dictionary if dictionary else _decode
        line_map = LineMap(df.path) if df.kind == "txt" else None
        for table, first in source:
            batch = decode(df, table, first, log, line_map)
            rows += table.num_rows
            yield batch
    except (OSError, pa.ArrowException) as exc:
        block = _block_size(df.path)
        long = _long_line(df.path, block) if df.kind == "txt" and "straddl" in str(exc) else None
        if long is not None:  # pyarrow's words for a row longer than its block
            number, head, length = long
            log.add(df.name, number, None, head, f"one record per line, at most {block:,} bytes long "
                                                 f"(this line has {length:,} bytes; a line break missing?)")
            return
        where = f" (after {rows:,} rows)" if rows else ""
        log.add(df.name, None, None, None, f"a readable {'Parquet ' if df.kind == 'parquet' else ''}file; "
                                           f"reading stopped{where}: {exc}")
        return
    if rows == 0:
        log.add(df.name, None, None, None, "at least one data row (the file has "
                                           f"{'no row' if df.kind == 'parquet' else 'only its header'}; production "
                                           "rejects empty person and GRF-C files)")


def _is_bytes(t: pa.DataType) -> bool:
    return pa.types.is_binary(t) or pa.types.is_large_binary(t)


#: The largest Parquet footer (the file's metadata: its schema and a description of every
#: row group and column chunk) that is read. pyarrow holds about 11 times its size in
#: memory; a footer grows with the number of row groups (about 1.5 kB per row group of the
#: 17 person columns), so a file of a million one-row groups would need gigabytes before its
#: first row. 16 MiB describes over 10,000 row groups: 10 billion rows in the million-row
#: groups pyarrow writes by default, 320 million in Spark's usual 128 MB groups.
_MAX_PARQUET_FOOTER = 16 << 20
#: Rows per batch of a Parquet file, and the most row groups read by one pyarrow reader:
#: its memory grows by about 26 kB per row group it is given (measured with pyarrow 26 on
#: one-row groups), so it is given at most this many at a time.
_PARQUET_BATCH_ROWS, _PARQUET_ROW_GROUPS = 1_000_000, 1024


def _parquet_footer_problem(path: Path) -> str | None:
    """Why the footer of the Parquet file at `path` is not read (it is larger than
    `_MAX_PARQUET_FOOTER`), said from the file's last 8 bytes (the footer's length, then
    "PAR1") before pyarrow parses it; None otherwise (pyarrow then says what else is wrong)."""
    try:
        with open_input(path) as fh:
            size = fh.seek(0, 2)
            if size < 12:
                return None
            fh.seek(size - 8)
            tail = fh.read(8)
    except OSError:
        return None
    if tail[4:] != b"PAR1":
        return None
    footer = int.from_bytes(tail[:4], "little")
    if footer <= _MAX_PARQUET_FOOTER:
        return None
    return (f"found {footer:,} bytes of Parquet metadata (the description of its row groups: the file was written in "
            f"very many small row groups, and reading that description alone would take about {11 * footer / 1e9:.1f} "
            f"GB of memory); expected at most {_MAX_PARQUET_FOOTER:,} bytes. Nothing was read: write the file again "
            "with larger row groups, e.g. pyarrow.parquet.write_table(table, path, row_group_size=1_000_000)")


def _row_group_runs(pf: pq.ParquetFile) -> Iterator[list[int]]:
    """Consecutive row groups of `pf`, at most `_PARQUET_ROW_GROUPS` and, where they are
    small, about `_PARQUET_BATCH_ROWS` rows at a time (a larger group alone)."""
    meta = pf.metadata
    run, rows = [], 0
    for i in range(meta.num_row_groups):
        n = meta.row_group(i).num_rows
        if run and (rows + n > _PARQUET_BATCH_ROWS or len(run) >= _PARQUET_ROW_GROUPS):
            yield run
            run, rows = [], 0
        run.append(i)
        rows += n
    if run:
        yield run


def _parquet_batches(df: DataFile, expected: list[str], dictionary: bool = False) -> Iterator[tuple[pa.Table, int]]:
    # Dictionary-encoded string columns are read as they are stored (indices into a
    # small dictionary), without expanding every row's text. The row groups are read a
    # run at a time (`_row_group_runs`), each run by its own reader, so that memory stays
    # bounded however many row groups the file has; the batches of many tiny row groups
    # are joined into one table of up to `_PARQUET_BATCH_ROWS` rows, not checked one row
    # group at a time.
    pf = pq.ParquetFile(df.path, read_dictionary=expected if dictionary else None)
    row = 1
    for run in _row_group_runs(pf):
        pending, rows = [], 0
        for rb in pf.iter_batches(batch_size=_PARQUET_BATCH_ROWS, row_groups=run, columns=expected):
            pending.append(rb)
            rows += rb.num_rows
            if rows >= _PARQUET_BATCH_ROWS:
                yield _parquet_table(pending, expected, dictionary), row
                row, pending, rows = row + rows, [], 0
        if pending:
            yield _parquet_table(pending, expected, dictionary), row
            row += rows


def _parquet_table(batches: list[pa.RecordBatch], expected: list[str], dictionary: bool) -> pa.Table:
    t = pa.Table.from_batches(batches).select(expected)
    if not dictionary:
        # Values as written: numbers and strings alike become text (bytes stay bytes,
        # decoded and checked like the text files).
        t = pa.table({c: t[c] if _is_bytes(t[c].type) else t[c].cast(pa.string()) for c in expected})
    return t


def _text_batches(df: DataFile, expected: list[str], log: ProblemLog, dictionary: bool = False,
                  ahead: ReadAhead | None = None) -> Iterator[tuple[pa.Table, int | None]]:
    """Batches of a pipe-delimited file with the line of their first row (None once a row
    was skipped).

    pyarrow is given no Python callback while every row has the right number of fields:
    a callback held by its parser lives on in pyarrow's worker threads after the reader
    is gone, and releasing it takes the GIL; if that happens while the interpreter exits,
    the worker is ended inside a C++ destructor and the process aborts ("terminate called
    without an active exception", issue 21 item 12). Only when a row is malformed (pyarrow
    stops with ArrowInvalid) is the file read again, on this thread (use_threads=False),
    with a handler that collects the malformed rows; the rows already yielded are skipped.
    """
    line = 2
    try:
        for rb in (ahead if ahead is not None else _csv_reader(df, expected, dictionary=dictionary)):
            yield pa.Table.from_batches([rb]), line
            line += rb.num_rows
        return
    except pa.ArrowInvalid:
        pass  # a malformed row (or another error, which the second reading raises again)
    finally:
        if ahead is not None:
            ahead.close()
    bad_rows = []

    def _on_invalid(row) -> str:
        bad_rows.append(row)
        return "skip"

    skip = line - 2  # rows yielded above: all before the first malformed row
    try:
        for rb in _csv_reader(df, expected, _on_invalid, dictionary=dictionary):
            if skip >= rb.num_rows:
                skip -= rb.num_rows
                continue
            rb, skip = rb.slice(skip), 0
            # pyarrow does not tell which file line a good row came from; when no row was
            # skipped before it, the line is header + rows so far.
            first = None if bad_rows else line
            yield pa.Table.from_batches([rb]), first
            line += rb.num_rows
    finally:
        if bad_rows:
            lines = _locate_lines(df.path, [b.text for b in bad_rows])
            for bad, ln in zip(bad_rows, lines):
                log.add(df.name, ln, None, bad.text,
                        f"{bad.expected_columns} fields separated by '|' (found {bad.actual_columns})")


def _csv_reader(df: DataFile, expected: list[str], on_invalid=None, dictionary: bool = False):
    """pyarrow's streaming reader of a data file: multi-threaded without `on_invalid`,
    on the calling thread with it (see `_text_batches`); `dictionary`: dictionary columns."""
    return pacsv.open_csv(
        df.path,
        read_options=pacsv.ReadOptions(block_size=_block_size(df.path), use_threads=on_invalid is None),
        parse_options=pacsv.ParseOptions(delimiter="|", quote_char=False, invalid_row_handler=on_invalid),
        # Bytes first: UTF-8 is checked per column by `_decode`, which can say which line.
        convert_options=pacsv.ConvertOptions(
            column_types={c: pa.dictionary(pa.int32(), pa.binary()) if dictionary else pa.binary() for c in expected},
            include_columns=expected,
            strings_can_be_null=False, quoted_strings_can_be_null=False,
        ),
    )


class _Feed:
    """The items of the iterable `open_()` returns, produced on a thread of its own
    (started now) at most `depth` ahead of the consumer, through a bounded queue.

    The thread opens the iterable, iterates it and closes it (its ``close``, if it has
    one): a pyarrow reader is made, used and released by one thread. An exception there
    is raised to the consumer where the next item would have come. `close` (idempotent;
    also at the end, on an error and on leaving a ``with`` block) tells the thread to stop
    and joins it, however the consumer stops: no thread is left inside pyarrow when the
    interpreter exits (issue 21 item 12).
    """

    def __init__(self, open_, depth: int, name: str):
        import queue
        import threading

        self._open = open_
        self._queue: queue.Queue = queue.Queue(maxsize=depth)
        self._stop = threading.Event()
        self._end = object()
        self._finished = False
        self._thread = threading.Thread(target=self._work, name=name, daemon=True)
        self._thread.start()

    def _put(self, item) -> bool:
        """Put `item` once there is room; False if told to stop first (the consumer has
        gone, and nobody would make room)."""
        import queue

        while not self._stop.is_set():
            try:
                self._queue.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def _work(self) -> None:
        source = None
        try:
            source = self._open()
            for item in source:
                if not self._put(item):
                    return
            self._put(self._end)
        except BaseException as exc:  # noqa: BLE001 - handed over to the consumer
            self._put(exc)
        finally:
            close = getattr(source, "close", None)
            if close is not None:
                close()

    def __iter__(self):
        return self

    def __next__(self):
        if self._finished:
            raise StopIteration
        item = self._queue.get()
        if item is self._end:
            self.close()
            raise StopIteration
        if isinstance(item, BaseException):
            self.close()
            raise item
        return item

    def close(self) -> None:
        self._finished = True
        self._stop.set()
        self._thread.join()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


#: At most this many bytes of text are parsed ahead of their use by a `ReadAhead`.
_AHEAD_BYTES = 256 << 20


class ReadAhead(_Feed):
    """pyarrow's parsing of a text data file, started now on a thread of its own, its
    blocks (record batches) kept in a bounded queue until `iter_batches` takes them.

    A run starts reading the persons this way before it reads the spec files and GRF-C,
    which need the interpreter most of the time while pyarrow's parser does not: on two
    cores the first blocks are parsed meanwhile. At most `_AHEAD_BYTES` of text (or two
    blocks) wait in the queue. pyarrow is given no Python callback (see `_text_batches`),
    and the reader is opened, read and closed by the thread (`_Feed`). An error of the
    parser is raised to the consumer where the block would have come; a malformed row
    then makes `_text_batches` read the file again itself, with its row handler.
    """

    def __init__(self, df: DataFile, expected: list[str], dictionary: bool = False):
        if df.kind != "txt":
            raise ValueError(f"{df.name}: only text files are read ahead")
        self.df, self.expected, self.dictionary = df, list(expected), dictionary
        super().__init__(lambda: _csv_reader(df, self.expected, dictionary=dictionary),
                         depth=max(2, _AHEAD_BYTES // _block_size(df.path)), name="safetab-read-ahead")

    def reads(self, df: DataFile, expected: list[str], dictionary: bool) -> bool:
        return (df, list(expected), dictionary) == (self.df, self.expected, self.dictionary)


def _decode(df: DataFile, table: pa.Table, first: int | None, log: ProblemLog,
            line_map: LineMap | None = None) -> Batch:
    """Binary columns -> UTF-8 string columns; null cells and non-UTF-8 bytes are
    logged (one problem per cell) and the rows marked `reported`."""
    n = table.num_rows
    reported = None
    cols = {}
    batch = Batch(table, first, line_map=line_map)
    for c in table.column_names:
        col = table[c]
        if col.null_count:
            nulls = col.is_null().to_numpy(zero_copy_only=False)
            for i in np.flatnonzero(nulls)[: max(0, log.keep - len(log.problems))]:
                log.add(df.name, batch.line(i), c, None, "the cell is null (empty); a value is required")
            log.count(int(nulls.sum()) - min(int(nulls.sum()), max(0, log.keep - len(log.problems))))
            reported = nulls if reported is None else reported | nulls
            col = pc.fill_null(col, pa.scalar(b"", col.type) if pa.types.is_binary(col.type) else "")
        if pa.types.is_binary(col.type) or pa.types.is_large_binary(col.type):
            try:
                col = col.cast(pa.string())
            except pa.ArrowInvalid:
                values = col.to_pylist()
                bad = np.zeros(n, dtype=bool)
                text = []
                for i, v in enumerate(values):
                    try:
                        text.append(v.decode("utf-8"))
                    except UnicodeDecodeError as exc:
                        bad[i] = True
                        text.append(v.decode("utf-8", errors="replace"))
                        log.add(df.name, batch.line(i), c, text[-1],
                                f"UTF-8 text (the byte 0x{v[exc.start]:02x} is not; SPEC §4: files are UTF-8)")
                col = pa.array(text, pa.string())
                reported = bad if reported is None else reported | bad
        cols[c] = col
    return Batch(pa.table(cols), first, reported, line_map)


def _decode_dictionary(df: DataFile, table: pa.Table, first: int | None, log: ProblemLog,
                       line_map: LineMap | None = None) -> Batch:
    """`_decode` for dictionary columns: every column becomes a dictionary array of
    UTF-8 strings with int32 indices and no nulls. Null cells and values that are not
    UTF-8 are logged per cell (as `_decode` does) and their rows marked `reported`;
    a value is decoded once however many rows hold it."""
    n = table.num_rows
    batch = Batch(table, first, line_map=line_map)
    reported = np.zeros(n, dtype=bool)
    cols = {}
    for c in table.column_names:
        arr = as_dictionary(table[c])
        values, idx = arr.dictionary, arr.indices
        if arr.null_count:
            nulls = arr.is_null().to_numpy(zero_copy_only=False)
            _log_rows(log, df, batch, c, np.flatnonzero(nulls), lambda i: None,
                      "the cell is null (empty); a value is required")
            reported |= nulls
            # null rows point at one more value, "" (marked reported, so no check names it)
            idx = pc.fill_null(idx, len(values))
            values = pa.concat_arrays([values, pa.array([""] if not _is_bytes(values.type) else [b""], values.type)])
        if _is_bytes(values.type):
            try:
                values = values.cast(pa.string())
            except pa.ArrowInvalid:
                raw = values.to_pylist()
                text, bad_byte = [], {}
                for j, v in enumerate(raw):
                    try:
                        text.append(v.decode("utf-8"))
                    except UnicodeDecodeError as exc:
                        text.append(v.decode("utf-8", errors="replace"))
                        bad_byte[j] = v[exc.start]
                values = pa.array(text, pa.string())
                bad_value = np.zeros(len(raw), dtype=bool)
                bad_value[list(bad_byte)] = True
                idx_np = idx.to_numpy(zero_copy_only=False)
                bad = bad_value[idx_np]
                _log_rows(log, df, batch, c, np.flatnonzero(bad), lambda i: text[idx_np[i]],
                          lambda i: f"UTF-8 text (the byte 0x{bad_byte[int(idx_np[i])]:02x} is not; SPEC §4: files "
                                    "are UTF-8)")
                reported |= bad
        cols[c] = pa.DictionaryArray.from_arrays(idx.cast(pa.int32()), values)
    return Batch(pa.table(cols), first, reported if reported.any() else None, line_map)


def as_dictionary(col: pa.ChunkedArray | pa.Array) -> pa.DictionaryArray:
    """One dictionary array of string or binary values for a column of any type."""
    if isinstance(col, pa.ChunkedArray):
        if col.num_chunks == 0:
            col = pa.array([], col.type)
        elif col.num_chunks == 1:
            col = col.chunk(0)
        elif pa.types.is_dictionary(col.type):
            col = pa.table({"c": col}).unify_dictionaries().combine_chunks()["c"].chunk(0)
        else:
            col = col.combine_chunks()
    if pa.types.is_dictionary(col.type):
        if not (_is_bytes(col.type.value_type) or pa.types.is_string(col.type.value_type)
                or pa.types.is_large_string(col.type.value_type)):
            return pa.DictionaryArray.from_arrays(col.indices, col.dictionary.cast(pa.string()))
        return col
    if not (_is_bytes(col.type) or pa.types.is_string(col.type) or pa.types.is_large_string(col.type)):
        col = col.cast(pa.string())  # values as written: numbers become text
    return col.dictionary_encode()


def _log_rows(log: ProblemLog, df: DataFile, batch: Batch, column: str, rows: np.ndarray, value, expected) -> None:
    """One problem per row (the first ones in full, the rest counted)."""
    room = max(0, log.keep - len(log.problems))
    for i in rows[:room]:
        log.add(df.name, batch.line(i), column, value(i), expected(i) if callable(expected) else expected)
    log.count(max(0, len(rows) - room))


def _locate_lines(path: Path, texts: list[str]) -> list[int | None]:
    """File line numbers of the given row texts, in order (only used on the error path)."""
    wanted: dict[str, list[int]] = {}
    for i, t in enumerate(texts):
        wanted.setdefault(t, []).append(i)
    out: list[int | None] = [None] * len(texts)
    with open(path, encoding="utf-8", errors="replace") as fh:
        for n, raw in enumerate(fh, start=1):
            text = raw.rstrip("\r\n")
            if text in wanted and wanted[text]:
                out[wanted[text].pop(0)] = n
                if not any(wanted.values()):
                    break
    return out


def prefetch(it: Iterator[Batch], depth: int = 2) -> Iterator[Batch]:
    """Iterate `it` in a background thread (`_Feed`), `depth` items ahead.

    Parsing text (pyarrow, which releases the GIL) then overlaps with the checking and
    counting of the previous batch on the other core. However the consumer stops (the
    end, an error, Ctrl-C), the worker is told to stop, closes `it` (so its pyarrow
    reader is released by that thread) and is joined: no thread is left inside pyarrow
    when the interpreter exits (issue 21 item 12).
    """
    feed = _Feed(lambda: it, depth, name="safetab-prefetch")
    try:
        yield from feed
    finally:
        feed.close()


def read_all(df: DataFile, expected: list[str], log: ProblemLog, extra_ok: bool = False) -> Batch | None:
    """The whole file as one batch (for GRF-C)."""
    batches = list(iter_batches(df, expected, log, extra_ok))
    if not batches and log:
        return None
    if not batches:
        return Batch(pa.table({c: pa.array([], pa.string()) for c in expected}), 2)
    first = batches[0].first_line if all(b.first_line is not None for b in batches) else None
    rep = [b.reported if b.reported is not None else np.zeros(b.table.num_rows, bool) for b in batches]
    reported = np.concatenate(rep) if any(b.reported is not None for b in batches) else None
    return Batch(pa.concat_tables([b.table for b in batches]), first, reported, batches[0].line_map)


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(16 << 20), b""):
            h.update(chunk)
    return h.hexdigest()
