"""Reading text data files: the block size and the read-ahead started before the inputs
are loaded give the counts of a plain reading, report the same problems and leave no
thread behind."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import numpy as np
import pytest

from engine.errors import InputError
from engine.inputs import readers
from engine.inputs.readers import PERSON_COLUMNS, DataFile, ReadAhead, iter_batches
from engine.inputs.validate import load_inputs
from engine.errors import ProblemLog
from engine.run import prepare, run
from engine.tabulation.aggregate import LocalAggregator
from tests.engine.conftest import person

SAMPLE = Path(__file__).resolve().parents[3] / "sample_data"
PERSONS = DataFile(SAMPLE / "data" / "person-records.txt", "txt")


def _threads(name: str) -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == name]


def test_block_size_reads_a_file_in_at_least_16_blocks_within_bounds(tmp_path):
    def size_for(n_bytes: int) -> int:
        f = tmp_path / f"f{n_bytes}"
        with open(f, "wb") as fh:
            fh.truncate(n_bytes)  # sparse: no bytes written
        return readers._block_size(f)

    assert size_for(10) == 1 << 20  # at least 1 MiB
    assert size_for(80_000_000) == 5_000_000  # a million persons: 16 blocks, not 2
    assert size_for(26 << 30) == 64 << 20  # a national file: 64 MiB blocks
    assert readers._block_size(tmp_path / "missing") == 64 << 20


def _level_counts(prepared) -> dict:
    """Every tabulated level's true totals and the cells of its non-empty groups."""
    out = {}
    for lvl in prepared.levels:
        counts = prepared.counts(lvl)
        totals = counts.totals()
        out[lvl] = (totals, counts.cells_of(np.flatnonzero(totals)))
    return out


def test_counts_do_not_depend_on_the_block_size(monkeypatch):
    n_blocks = sum(1 for _ in iter_batches(PERSONS, PERSON_COLUMNS, ProblemLog(), dictionary=True))
    assert n_blocks >= 4  # 3.9 MB in 1 MiB blocks
    many = _level_counts(prepare(SAMPLE / "params", SAMPLE / "data"))
    monkeypatch.setattr(readers, "_MIN_BLOCK", 1 << 30)
    monkeypatch.setattr(readers, "_MAX_BLOCK", 1 << 30)
    assert sum(1 for _ in iter_batches(PERSONS, PERSON_COLUMNS, ProblemLog(), dictionary=True)) == 1
    one = _level_counts(prepare(SAMPLE / "params", SAMPLE / "data"))
    assert one.keys() == many.keys() and len(one) >= 10
    for lvl in one:
        np.testing.assert_array_equal(one[lvl][0], many[lvl][0], err_msg=str(lvl))
        np.testing.assert_array_equal(one[lvl][1], many[lvl][1], err_msg=str(lvl))
    assert sum(t.sum() for t, _ in one.values()) > 50_000


def test_read_ahead_counts_what_a_plain_reading_counts_and_ends_its_thread():
    prepared = prepare(SAMPLE / "params", SAMPLE / "data")
    plain = LocalAggregator().count(load_inputs(SAMPLE / "params", SAMPLE / "data"))
    np.testing.assert_array_equal(prepared.table.key, plain.key)
    np.testing.assert_array_equal(prepared.table.count, plain.count)
    assert not _threads("safetab-read-ahead")


def test_read_ahead_is_bounded_and_stops_when_closed(monkeypatch):
    # 64 KiB blocks, 128 KiB ahead: the queue holds 2 blocks of the 60 and the parser waits
    monkeypatch.setattr(readers, "_MIN_BLOCK", 64 << 10)
    monkeypatch.setattr(readers, "_MIN_BLOCKS", 1 << 20)
    monkeypatch.setattr(readers, "_AHEAD_BYTES", 128 << 10)
    ahead = ReadAhead(PERSONS, PERSON_COLUMNS, dictionary=True)
    end = time.monotonic() + 30
    while not ahead._queue.full() and time.monotonic() < end:
        time.sleep(0.01)
    assert ahead._queue.maxsize == 2 and ahead._queue.full()
    assert _threads("safetab-read-ahead")  # waiting for room, not reading the rest
    first = next(ahead)
    assert first.num_rows > 0 and first.num_columns == len(PERSON_COLUMNS)
    ahead.close()
    assert not _threads("safetab-read-ahead")
    with pytest.raises(StopIteration):
        next(ahead)
    ahead.close()  # idempotent


def test_read_ahead_of_another_file_is_refused(tmp_path):
    with ReadAhead(PERSONS, PERSON_COLUMNS, dictionary=True) as ahead:
        with pytest.raises(ValueError, match="not a read of"):
            list(iter_batches(PERSONS, PERSON_COLUMNS, ProblemLog(), dictionary=False, ahead=ahead))
    with pytest.raises(ValueError, match="only text files"):
        ReadAhead(DataFile(tmp_path / "person-records.parquet", "parquet"), PERSON_COLUMNS)
    assert not _threads("safetab-read-ahead")


def test_refused_inputs_stop_the_read_ahead(dataset, tmp_path):
    dataset.persons = [person()] * 50
    dataset.write()
    (dataset.params / "race-and-ethnicity-codes.txt").write_text("RACE_ETH_CODE|RACE_ETH_NAME\n0123|bad\n")
    with pytest.raises(InputError, match="0123"):
        prepare(dataset.params, dataset.data)
    assert not _threads("safetab-read-ahead")


def test_a_malformed_row_is_reported_on_its_line_through_the_read_ahead(dataset, tmp_path, monkeypatch):
    # small blocks, so that the malformed row is in a later block than the first
    monkeypatch.setattr(readers, "_MIN_BLOCK", 4 << 10)
    monkeypatch.setattr(readers, "_MIN_BLOCKS", 1 << 20)
    dataset.persons = [person()] * 2000
    dataset.write()
    path = dataset.data / "person-records.txt"
    lines = path.read_text().split("\n")
    lines[1500] += "|extra"  # file line 1501
    path.write_text("\n".join(lines))
    with pytest.raises(InputError) as exc:
        run(dataset.params, dataset.data, tmp_path / "out")
    text = str(exc.value)
    assert "line 1501" in text and "found 18" in text
    assert not (tmp_path / "out").exists()
    assert not _threads("safetab-read-ahead")


@pytest.mark.parametrize("text,limit,want", [
    (b"ab\ncdef\ngh\n", 3, (2, "cdef", 4)),          # the first line over the limit
    (b"ab\ncde\nfghij", 4, (3, "fghij", 5)),         # the last line, with no line break after it
    (b"abc\ndef\n", 3, None),                        # at the limit is not over it
    (b"x" * 100 + b"\n" + b"y" * (3 << 20), 2 << 20, (2, "y" * readers.ECHO_BYTES, 3 << 20)),  # across 1 MiB pieces
])
def test_the_first_line_longer_than_the_limit_is_found_with_its_number_and_length(tmp_path, text, limit, want):
    path = tmp_path / "f.txt"
    path.write_bytes(text)
    assert readers._long_line(path, limit) == want


@pytest.mark.parametrize("chunk", [1, 2, 3, 5, 1 << 20])
def test_line_map_gives_every_row_its_line_whatever_the_line_ends_and_empty_lines(tmp_path, monkeypatch, chunk):
    """Rows as pyarrow yields them (empty lines skipped; LF, CRLF and a lone CR end a
    line) mapped to their lines, also when a CRLF or an empty line straddles two reads."""
    import random

    from engine.inputs.readers import LineMap

    monkeypatch.setattr(readers, "_LINE_MAP_CHUNK", chunk)
    rng = random.Random(7)
    ends = [b"\n", b"\r\n", b"\r"]
    for trial in range(20):
        parts, want, line = [b"H" + rng.choice(ends)], [], 2
        for i in range(30):
            if rng.random() < 0.3:  # an empty line (an LF right after a CR would end that line instead)
                parts.append(rng.choice(ends[1:] if parts[-1].endswith(b"\r") else ends))
            else:
                parts.append(b"r%d" % i + rng.choice(ends))
                want.append(line)
            line += 1
        path = tmp_path / f"f{trial}.txt"
        path.write_bytes(b"".join(parts))
        got = LineMap(path).lines(np.arange(len(want)) + 2)
        assert got.tolist() == want, b"".join(parts)


def test_line_map_memory_is_bounded_in_a_double_spaced_file(tmp_path, monkeypatch):
    """Every row of a double-spaced file (CRLF made LF LF) moves the shift: past
    `_MAX_SHIFTS` places the rows are given no line (0) instead of a list without end."""
    from engine.inputs.readers import LineMap

    monkeypatch.setattr(readers, "_MAX_SHIFTS", 4)
    path = tmp_path / "double.txt"
    path.write_bytes(b"H\n" + b"".join(b"r%d\n\n" % i for i in range(10)))
    got = LineMap(path).lines(np.arange(10) + 2)
    assert got[:4].tolist() == [2, 4, 6, 8] and set(got[5:].tolist()) == {0}
