"""Reading DATA_DIR: persons and GRF-C as text (pipe-delimited) or Parquet (SPEC section 4).

Both are read as string columns so that validation sees the values exactly as written.
Persons are streamed in batches (`iter_person_batches`) so memory does not grow with
the number of persons. Each batch knows the file line of its first row.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from engine.errors import ProblemLog

PERSON_COLUMNS = [
    "QAGE", "QSEX", "HOUSEHOLDER", "TABBLKST", "TABBLKCOU", "TABTRACTCE", "TABBLK", "CENRACE",
    "QRACE1", "QRACE2", "QRACE3", "QRACE4", "QRACE5", "QRACE6", "QRACE7", "QRACE8", "QSPAN",
]
RACE_COLUMNS = [f"QRACE{i}" for i in range(1, 9)]
GRF_COLUMNS = ["TABBLKST", "TABBLKCOU", "TABTRACTCE", "TABBLK", "PLACEFP", "AIANNHCE"]

PERSONS_STEM = "person-records"
GRF_STEM = "GRF-C"

#: Bytes per text block read by pyarrow; about 1-2 million person rows.
_BLOCK_SIZE = 64 << 20


@dataclass(frozen=True)
class DataFile:
    path: Path
    kind: str  # "txt" or "parquet"

    @property
    def name(self) -> str:
        return self.path.name


def find_data_file(data_dir: Path, stem: str, log: ProblemLog) -> DataFile | None:
    """`stem.txt` or `stem.parquet` in data_dir (exactly one of them)."""
    txt, parquet = data_dir / f"{stem}.txt", data_dir / f"{stem}.parquet"
    found = [DataFile(p, k) for p, k in ((txt, "txt"), (parquet, "parquet")) if p.is_file()]
    if not found:
        log.add(f"{stem}.txt", None, None, None, f"the file {txt} (or {parquet.name}) to exist")
        return None
    if len(found) == 2:
        log.add(f"{stem}.txt", None, None, None,
                f"only one of {txt.name} and {parquet.name} in {data_dir} (both are present)")
        return None
    return found[0]


def check_header(df: DataFile, expected: list[str], log: ProblemLog) -> bool:
    if df.kind == "parquet":
        try:
            names = pq.ParquetFile(df.path).schema_arrow.names
        except Exception as exc:  # noqa: BLE001 - any unreadable file is a user problem
            log.add(df.name, None, None, None, f"a readable Parquet file ({exc})")
            return False
        if names != expected:
            log.add(df.name, None, "columns", "|".join(names), "the columns " + "|".join(expected))
            return False
        return True
    with open(df.path, "rb") as fh:
        first = fh.readline().decode("utf-8", errors="replace").rstrip("\r\n")
    if first.split("|") != expected:
        log.add(df.name, 1, None, first, "the header " + "|".join(expected))
        return False
    return True


@dataclass
class Batch:
    """A batch of rows as string columns; `first_line` is the file line of row 0."""

    table: pa.Table
    first_line: int | None

    def line(self, i: int) -> int | None:
        return None if self.first_line is None else self.first_line + int(i)


def iter_batches(df: DataFile, expected: list[str], log: ProblemLog) -> Iterator[Batch]:
    """Stream a data file in batches; rows with the wrong number of fields go to `log`."""
    if not check_header(df, expected, log):
        return
    if df.kind == "parquet":
        pf = pq.ParquetFile(df.path)
        row = 0
        for rb in pf.iter_batches(batch_size=1_000_000, columns=expected):
            table = pa.Table.from_batches([rb]).cast(pa.schema([(c, pa.string()) for c in expected]))
            yield Batch(table, None)
            row += rb.num_rows
        return

    bad_rows = []

    def _on_invalid(row) -> str:
        bad_rows.append(row)
        return "skip"

    reader = pacsv.open_csv(
        df.path,
        read_options=pacsv.ReadOptions(block_size=_BLOCK_SIZE, use_threads=True),
        parse_options=pacsv.ParseOptions(delimiter="|", quote_char=False, invalid_row_handler=_on_invalid),
        convert_options=pacsv.ConvertOptions(
            column_types={c: pa.string() for c in expected}, strings_can_be_null=False,
            quoted_strings_can_be_null=False,
        ),
    )
    # pyarrow does not tell which file line a good row came from; when no row was
    # skipped before it (the normal case) the line is header + rows so far.
    line = 2
    for rb in reader:
        first = None if bad_rows else line
        yield Batch(pa.Table.from_batches([rb]), first)
        line += rb.num_rows
    if bad_rows:
        # Multi-threaded parsing loses the line numbers of bad rows: find them again.
        lines = _locate_lines(df.path, [b.text for b in bad_rows])
        for bad, ln in zip(bad_rows, lines):
            log.add(df.name, ln, None, bad.text,
                    f"{len(expected)} fields separated by '|' (found {bad.actual_columns})")


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
    counting of the previous batch on the other core.
    """
    import queue
    import threading

    q: queue.Queue = queue.Queue(maxsize=depth)
    done = object()
    stop = threading.Event()

    def _work() -> None:
        try:
            for item in it:
                while not stop.is_set():
                    try:
                        q.put(item, timeout=0.1)
                        break
                    except queue.Full:
                        continue
                if stop.is_set():
                    return
            q.put(done)
        except BaseException as exc:  # noqa: BLE001 - handed over to the consumer
            q.put(exc)

    t = threading.Thread(target=_work, daemon=True)
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


def read_all(df: DataFile, expected: list[str], log: ProblemLog) -> Batch | None:
    """The whole file as one batch (for GRF-C)."""
    batches = list(iter_batches(df, expected, log))
    if not batches and log:
        return None
    if not batches:
        return Batch(pa.table({c: pa.array([], pa.string()) for c in expected}), 2)
    first = batches[0].first_line if all(b.first_line is not None for b in batches) else None
    return Batch(pa.concat_tables([b.table for b in batches]), first)


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(16 << 20), b""):
            h.update(chunk)
    return h.hexdigest()
