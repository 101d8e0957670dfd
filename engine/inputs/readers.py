"""Reading DATA_DIR: persons and GRF-C as text (pipe-delimited) or Parquet (SPEC section 4).

Both are read as string columns so that validation sees the values exactly as written.
Persons are streamed in batches (`iter_batches`) so memory does not grow with the
number of persons. Each batch knows the file line (Parquet: the row) of its first row.
Everything a file can do wrong is a Problem with file and line, never an exception:
unreadable files, bytes that are not UTF-8, null Parquet cells, files that end early.
"""

from __future__ import annotations

import hashlib
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
#: Bytes per text block read by pyarrow; about 1-2 million person rows.
_BLOCK_SIZE = 64 << 20


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
        log.add(f"{stem}.txt", None, None, None, expected_file(txt, f" (or {parquet.name})"))
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
    try:
        if df.kind == "parquet":
            names = pq.ParquetFile(df.path).schema_arrow.names
            where, shown = None, "|".join(names)
        else:
            with open_input(df.path) as fh:
                first = fh.readline(_HEADER_BYTES).decode("utf-8", errors="replace").rstrip("\r\n")
            names, where, shown = first.split("|"), 1, first
    except (OSError, pa.ArrowException) as exc:
        log.add(df.name, None, None, None, f"a readable {'Parquet ' if df.kind == 'parquet' else ''}file ({exc})")
        return None
    what = "columns" if df.kind == "parquet" else "header"
    if names == expected:
        return names
    if extra_ok and all(names.count(c) == 1 for c in expected):
        pos = [names.index(c) for c in expected]
        if pos == sorted(pos):
            return names
    wanted = "|".join(expected) + (" in this order (other columns may come between them)" if extra_ok else "")
    log.add(df.name, where, "columns" if where is None else None, shown, f"the {what} {wanted}")
    return None


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

    def line(self, i: int) -> int | None:
        return None if self.first_line is None else self.first_line + int(i)

    def unreported(self, bad: np.ndarray) -> np.ndarray:
        """`bad` without the rows the reader already reported."""
        return bad if self.reported is None else bad & ~self.reported


def iter_batches(df: DataFile, expected: list[str], log: ProblemLog, extra_ok: bool = False) -> Iterator[Batch]:
    """Stream a data file in batches of string columns (only the `expected` ones).

    Problems go to `log` with their line (text) or row (Parquet): rows with the wrong
    number of fields, null cells, bytes that are not UTF-8, a file with no row after
    its header (production rejects empty person and GRF-C files), and a file that cannot
    be read or parsed (the batches read so far stand; reading stops there).
    """
    if check_header(df, expected, log, extra_ok) is None:
        return
    rows = 0
    try:
        source = _parquet_batches(df, expected) if df.kind == "parquet" else _text_batches(df, expected, log)
        for table, first in source:
            batch = _decode(df, table, first, log)
            rows += table.num_rows
            yield batch
    except (OSError, pa.ArrowException) as exc:
        where = f" (after {rows:,} rows)" if rows else ""
        log.add(df.name, None, None, None, f"a readable {'Parquet ' if df.kind == 'parquet' else ''}file; "
                                           f"reading stopped{where}: {exc}")
        return
    if rows == 0:
        log.add(df.name, None, None, None, "at least one data row (the file has only its header; production "
                                           "rejects empty person and GRF-C files)")


def _parquet_batches(df: DataFile, expected: list[str]) -> Iterator[tuple[pa.Table, int]]:
    pf = pq.ParquetFile(df.path)
    row = 1
    for rb in pf.iter_batches(batch_size=1_000_000, columns=expected):
        t = pa.Table.from_batches([rb]).select(expected)
        # Values as written: numbers and strings alike become text (bytes stay bytes,
        # decoded and checked like the text files).
        t = pa.table({c: t[c] if pa.types.is_binary(t[c].type) or pa.types.is_large_binary(t[c].type)
                      else t[c].cast(pa.string()) for c in expected})
        yield t, row
        row += rb.num_rows


def _text_batches(df: DataFile, expected: list[str], log: ProblemLog) -> Iterator[tuple[pa.Table, int | None]]:
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
        for rb in _csv_reader(df, expected):
            yield pa.Table.from_batches([rb]), line
            line += rb.num_rows
        return
    except pa.ArrowInvalid:
        pass  # a malformed row (or another error, which the second reading raises again)
    bad_rows = []

    def _on_invalid(row) -> str:
        bad_rows.append(row)
        return "skip"

    skip = line - 2  # rows yielded above: all before the first malformed row
    try:
        for rb in _csv_reader(df, expected, _on_invalid):
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


def _csv_reader(df: DataFile, expected: list[str], on_invalid=None):
    """pyarrow's streaming reader of a data file: multi-threaded without `on_invalid`,
    on the calling thread with it (see `_text_batches`)."""
    return pacsv.open_csv(
        df.path,
        read_options=pacsv.ReadOptions(block_size=_BLOCK_SIZE, use_threads=on_invalid is None),
        parse_options=pacsv.ParseOptions(delimiter="|", quote_char=False, invalid_row_handler=on_invalid),
        # Bytes first: UTF-8 is checked per column by `_decode`, which can say which line.
        convert_options=pacsv.ConvertOptions(
            column_types={c: pa.binary() for c in expected}, include_columns=expected,
            strings_can_be_null=False, quoted_strings_can_be_null=False,
        ),
    )


def _decode(df: DataFile, table: pa.Table, first: int | None, log: ProblemLog) -> Batch:
    """Binary columns -> UTF-8 string columns; null cells and non-UTF-8 bytes are
    logged (one problem per cell) and the rows marked `reported`."""
    n = table.num_rows
    reported = None
    cols = {}
    batch = Batch(table, first)
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
    return Batch(pa.table(cols), first, reported)


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
    """Iterate `it` in a background thread, `depth` items ahead.

    Parsing text (pyarrow, which releases the GIL) then overlaps with the checking and
    counting of the previous batch on the other core. However the consumer stops (the
    end, an error, Ctrl-C), the worker is told to stop, closes `it` (so its pyarrow
    reader is released by that thread) and is joined: no thread is left inside pyarrow
    when the interpreter exits (issue 21 item 12).
    """
    import queue
    import threading

    q: queue.Queue = queue.Queue(maxsize=depth)
    done = object()
    stop = threading.Event()

    def _put(item) -> bool:
        while not stop.is_set():
            try:
                q.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def _work() -> None:
        try:
            for item in it:
                if not _put(item):
                    return
            _put(done)
        except BaseException as exc:  # noqa: BLE001 - handed over to the consumer
            _put(exc)
        finally:
            close = getattr(it, "close", None)
            if close is not None:
                close()

    t = threading.Thread(target=_work, name="safetab-prefetch", daemon=True)
    t.start()
    try:
        while True:
            item = q.get()
            if item is done:
                return
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        stop.set()
        t.join()


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
    return Batch(pa.concat_tables([b.table for b in batches]), first, reported)


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(16 << 20), b""):
            h.update(chunk)
    return h.hexdigest()
