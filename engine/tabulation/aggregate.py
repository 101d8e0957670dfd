"""Aggregation: persons -> counts per population group and cell.

This is the one step whose cost grows with the number of persons, so it sits behind a
narrow interface (`Aggregator.count`) that a distributed engine can take over: it
receives the checked public `Inputs` (which say where the persons are) and returns a
`CountTable` of person counts per (piece, characteristic key, cell). `level_counts`
derives from it the counts of every population group of a level (numba kernels that
flat-map each table row in place), so memory stays bounded by the aggregated counts
and the level's groups. Nothing here draws noise.

Cells are sex x age23 bins (46 cells, index sex * 23 + bin; SPEC §1): every published
table (total, age4, age9, age23) is a sum of these cells.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Callable, Iterator, Protocol

import numpy as np

from calculators.levels import PopulationGroupLevel
from engine.errors import ProblemLog
from engine.inputs.readers import PERSON_COLUMNS, PERSONS_STEM, ReadAhead, find_data_file, iter_batches, prefetch
from engine.inputs.validate import EncodedPersons, Inputs, check_person_batch
from engine.tabulation import _kernels
from engine.tabulation.flatmap import CharKeys, IterationCatalog, Membership, geo_class, membership

N_CELLS = 46
#: Capacity of characteristic-key ids inside packed int64 keys.
_CK_CAP = _kernels.CK_CAP
#: Merge the buffered sorted runs of batch counts once they hold this many rows.
_MERGE_ROWS = 32_000_000

Progress = Callable[[str, float, float], None]


@dataclass
class CountTable:
    """Person counts per (piece, characteristic key, cell): one row per distinct triple.

    key = (piece * _CK_CAP + charkey) * N_CELLS + cell, sorted ascending, so rows of a
    piece are contiguous (`piece_rows`) and pieces are in GRF-C order (state, county,
    tract, ...).
    """

    key: np.ndarray  # int64, sorted, distinct
    count: np.ndarray  # int32
    charkeys: CharKeys
    persons: int = 0
    persons_us: int = 0
    persons_pr: int = 0
    #: Persons (in the runs) with a race code beyond QRACE{max_race_codes} that is not
    #: among their first max_race_codes codes: read with the first codes only (SPEC §1).
    persons_truncated: int = 0
    #: Pieces of the geography (rows of `piece_rows`); 0: the largest piece in `key` + 1.
    n_pieces: int = 0
    _piece_rows: np.ndarray | None = field(default=None, repr=False)

    def pieces(self) -> np.ndarray:
        return self.key // (_CK_CAP * N_CELLS)

    def decompose(self, rows: slice | np.ndarray = slice(None)) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(piece, characteristic key, cell) of some rows."""
        k = self.key[rows]
        return k // (_CK_CAP * N_CELLS), (k // N_CELLS) % _CK_CAP, k % N_CELLS

    @property
    def piece_rows(self) -> np.ndarray:
        """Row offsets of each piece: the rows of piece p are piece_rows[p]:piece_rows[p + 1]."""
        if self._piece_rows is None:
            n = self.n_pieces or (int(self.key[-1]) // (_CK_CAP * N_CELLS) + 1 if len(self.key) else 0)
            self._piece_rows = np.searchsorted(self.key, np.arange(n + 1, dtype=np.int64) * (_CK_CAP * N_CELLS))
        return self._piece_rows


class Aggregator(Protocol):
    """Counts persons. Implementations: `LocalAggregator` (one machine, streaming)."""

    def count(self, inputs: Inputs, progress: Progress | None = None) -> CountTable: ...


def _merge(keys: list[np.ndarray], counts: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Sorted distinct keys with their summed counts, from sorted runs (a k-way merge)."""
    runs = [(k, c) for k, c in zip(keys, counts) if len(k)]
    if not runs:
        return np.zeros(0, np.int64), np.zeros(0, np.int32)
    if len(runs) == 1:
        return runs[0][0], runs[0][1].astype(np.int32, copy=False)
    starts = np.zeros(len(runs) + 1, np.int64)
    starts[1:] = np.cumsum([len(k) for k, _ in runs])
    k, c = _kernels.merge_runs(np.concatenate([k for k, _ in runs]).astype(np.int64, copy=False),
                               np.concatenate([c for _, c in runs]).astype(np.int64, copy=False), starts)
    return k.copy(), c.astype(np.int32)


class _CountRuns:
    """The sorted runs of batch counts, merged into disjoint sorted segments.

    Buffered runs are merged with the parts of the segments whose keys they overlap
    once they hold `merge_rows` rows. Persons files sorted by geography (as the Census
    files and the synthetic nations are) give runs that overlap almost nothing already
    merged, so each merge costs only its own rows and memory stays near the final
    table; in any other order a merge waits until the buffer holds half as many rows as
    it overlaps, so the total merging work stays proportional to the final table.
    """

    def __init__(self, merge_rows: int):
        self.merge_rows = merge_rows
        self.segments: list[tuple[np.ndarray, np.ndarray]] = []
        self.buffer: list[tuple[np.ndarray, np.ndarray]] = []
        self.buffered = 0

    def add(self, keys: np.ndarray, counts: np.ndarray) -> None:
        if len(keys):
            self.buffer.append((keys, counts))
            self.buffered += len(keys)
        if self.buffered > self.merge_rows:
            self._flush(force=False)

    def _flush(self, force: bool) -> None:
        if not self.buffer:
            return
        lo = min(int(k[0]) for k, _ in self.buffer)
        hi = max(int(k[-1]) for k, _ in self.buffer)
        hit = [i for i, (k, _) in enumerate(self.segments) if k[-1] >= lo and k[0] <= hi]
        left = right = None
        middle: list[tuple[np.ndarray, np.ndarray]] = []
        for n, i in enumerate(hit):
            k, c = self.segments[i]
            a = int(np.searchsorted(k, lo)) if n == 0 else 0
            b = int(np.searchsorted(k, hi, side="right")) if n == len(hit) - 1 else len(k)
            if a:
                left = (k[:a], c[:a])
            if b < len(k):
                right = (k[b:], c[b:])
            middle.append((k[a:b], c[a:b]))
        overlap = sum(len(k) for k, _ in middle)
        if not force and overlap > 2 * self.buffered:
            return  # merging now would cost more than the rows it adds; buffer more
        parts = middle + self.buffer
        merged = _merge([k for k, _ in parts], [c for _, c in parts])
        # left and right parts are copied, so that they do not keep a merged segment alive
        new = [(left[0].copy(), left[1].copy())] if left is not None else []
        new += [merged] if len(merged[0]) else []
        new += [(right[0].copy(), right[1].copy())] if right is not None else []
        first = hit[0] if hit else sum(1 for k, _ in self.segments if k[-1] < lo)
        last = hit[-1] + 1 if hit else first
        self.segments[first:last] = new
        self.buffer, self.buffered = [], 0

    def table(self) -> tuple[np.ndarray, np.ndarray]:
        """All rows as one sorted table (segments are freed as they are copied)."""
        self._flush(force=True)
        n = sum(len(k) for k, _ in self.segments)
        key, count = np.empty(n, np.int64), np.empty(n, np.int32)
        at = 0
        while self.segments:
            k, c = self.segments.pop(0)
            key[at: at + len(k)] = k
            count[at: at + len(k)] = c
            at += len(k)
        return key, count


def read_persons_ahead(data_dir) -> ReadAhead | None:
    """Start parsing DATA_DIR's person file now, for `LocalAggregator.count` (text only;
    None when it is Parquet, missing or ambiguous: `load_inputs` reports the last two).
    The caller closes it (a ``with`` block), whether or not the inputs are accepted."""
    from pathlib import Path

    df = find_data_file(Path(data_dir), PERSONS_STEM, ProblemLog())
    if df is None or df.kind != "txt":
        return None
    return ReadAhead(df, PERSON_COLUMNS, dictionary=True)


def _counted_batches(inputs: Inputs, log: ProblemLog,
                     ahead: ReadAhead | None = None) -> Iterator[tuple[int, EncodedPersons]]:
    """(rows read, checked and encoded good rows) of each person batch."""
    for batch in iter_batches(inputs.persons_file, PERSON_COLUMNS, log, dictionary=True, ahead=ahead):
        yield batch.table.num_rows, check_person_batch(batch, inputs, log)


@dataclass
class LocalAggregator:
    """Single-machine aggregation: streams person batches, checks them, counts them.

    Reading and checking run on a second thread (`prefetch`), a batch ahead of the
    counting. Each batch's keys are sorted and counted into a sorted run; runs are
    merged (k-way, `_kernels.merge_runs`) when they outgrow the merged table, so the
    merging work stays proportional to the final table. Memory grows with the number
    of distinct (piece, characteristic key, cell) rows, not with the number of persons.
    A text person file's parsing can be started before the inputs are loaded
    (`read_persons_ahead`, given as `ahead`).
    """

    merge_rows: int = _MERGE_ROWS
    #: (inputs, log, ahead) -> (rows read, encoded good rows) of each batch: the person
    #: records by default; SafeTab-H counts households with its own (`engine.safetab_h`).
    batches: Callable | None = None
    #: What a row is, in the messages ("person", "household").
    unit: str = "person"

    def count(self, inputs: Inputs, progress: Progress | None = None, ahead: ReadAhead | None = None) -> CountTable:
        log = ProblemLog()
        charkeys = CharKeys(len(inputs.code_names))
        runs = _CountRuns(self.merge_rows)
        persons = persons_pr = truncated = 0
        geo = inputs.geography
        in_run = _pieces_in_run(inputs)
        pr_piece = geo.piece_region["PR-STATE"] >= 0 if "PR-STATE" in geo.piece_region else np.zeros(geo.n_pieces, bool)
        expected = _estimate_rows(inputs)
        rows_read = 0
        for n_rows, enc in prefetch((self.batches or _counted_batches)(inputs, log, ahead)):
            rows_read += n_rows
            if progress:
                progress(f"reading {self.unit}s", rows_read, max(rows_read, expected))
            if log or not len(enc):
                continue  # keep checking, stop counting: nothing will be released
            piece = geo.block_piece[enc.block]
            keep = in_run[piece]
            every = bool(keep.all())
            n_keep = len(keep) if every else int(keep.sum())
            persons += n_keep
            persons_pr += int((keep & pr_piece[piece]).sum())
            truncated += int((keep & enc.truncated).sum())
            if every:
                ck = charkeys.ids(enc.race, enc.eth)
                k = (piece * _CK_CAP + ck) * N_CELLS + enc.cell
            else:
                ck = charkeys.ids(enc.race[keep], enc.eth[keep])
                k = (piece[keep] * _CK_CAP + ck) * N_CELLS + enc.cell[keep]
            if len(charkeys) > _CK_CAP:
                raise ValueError(f"more than {_CK_CAP:,} distinct (race codes, ethnicity) combinations; the count "
                                 "table's packed keys cannot hold them")
            k.sort()
            u, c = _kernels.count_sorted(k)
            runs.add(u.copy(), c.astype(np.int32))
        if rows_read and not persons and not log:
            # As production, whose readers keep only the runs' states and then refuse
            # an empty person table.
            log.add(inputs.persons_file.name, None, None, None,
                    f"at least one {self.unit} in the states of the runs (state_filter_us with run_us, 72 with "
                    f"run_pr); none of the {rows_read:,} {self.unit}s lives there")
        log.raise_if_any()
        k, c = runs.table()
        return CountTable(k, c, charkeys, persons=persons, persons_us=persons - persons_pr, persons_pr=persons_pr,
                          persons_truncated=truncated, n_pieces=geo.n_pieces)


def _estimate_rows(inputs: Inputs) -> int:
    if inputs.persons_file.kind == "parquet":
        import pyarrow.parquet as pq

        return pq.ParquetFile(inputs.persons_file.path).metadata.num_rows
    # About 78 bytes per person row in the SafeTab-P text layout.
    return max(1, inputs.persons_file.path.stat().st_size // 78)


def _pieces_in_run(inputs: Inputs) -> np.ndarray:
    """Pieces that belong to a run that is on (US states in the filter, or PR)."""
    geo = inputs.geography
    inside = np.zeros(geo.n_pieces, dtype=bool)
    for g in ("USA", "PR-STATE"):
        if g in geo.piece_region:
            inside |= geo.piece_region[g] >= 0
    return inside


@dataclass
class KeyRecords:
    """The groups of every characteristic key for several (geography class, iteration
    level) memberships, one record per key (`_kernels.key_records`): what a count-table
    row joins at every level is read from one place in memory."""

    classes: list[tuple[str, int]]
    rec: np.ndarray  # (classes, keys, width) int32

    @classmethod
    def build(cls, classes: list[tuple[str, int]], members: list[Membership], charkeys: CharKeys) -> "KeyRecords":
        def padded(arrays: list[np.ndarray]) -> np.ndarray:
            width = max([len(a) for a in arrays] + [1])
            out = np.zeros((len(arrays), width), np.int64)
            for i, a in enumerate(arrays):
                out[i, : len(a)] = a
            return out

        rec = _kernels.key_records(
            charkeys.combo_of, charkeys.eth_of,
            padded([m.race.offsets for m in members]), padded([m.race.members for m in members]),
            padded([m.ethnicity.offsets for m in members]), padded([m.ethnicity.members for m in members]))
        return cls(list(classes), rec)


@dataclass
class LevelCounts:
    """The counts of every population group of one level, computed from the count table.

    group = region index * n_iterations + iteration index (the universe order). Each
    count-table row is flat-mapped (SPEC §1) to the groups of its piece's region by a
    numba kernel that adds its count in place (`_kernels.totals_all`,
    `_kernels.level_cells`): nothing of the size "rows x groups per person" is built.
    """

    level: PopulationGroupLevel
    n_regions: int
    n_iterations: int
    members: Membership
    combo_of: np.ndarray
    eth_of: np.ndarray
    table: CountTable | None = None
    #: Region index of each piece at this level (-1: outside the level).
    piece_region: np.ndarray | None = None
    records: KeyRecords | None = None
    #: The totals, if computed beforehand with other levels' (`all_totals`).
    known_totals: np.ndarray | None = field(default=None, repr=False)
    #: Cells computed before for this level, kept across the trials of a study.
    cell_cache: CellCache | None = field(default=None, repr=False)

    @property
    def n_groups(self) -> int:
        return self.n_regions * self.n_iterations

    def _empty(self) -> bool:
        return self.table is None or len(self.table.count) == 0 or self.n_groups == 0

    def _records(self) -> tuple[KeyRecords, int]:
        key = (geo_class(self.level.geo), self.level.iteration_level)
        if self.records is None or key not in self.records.classes:
            self.records = KeyRecords.build([key], [self.members], self.table.charkeys)
        return self.records, self.records.classes.index(key)

    def totals(self) -> np.ndarray:
        """True total of every group of the universe (zeros included)."""
        if self.known_totals is not None:
            return self.known_totals
        return all_totals(self.table, [self])[0]

    def cells_of(self, groups: np.ndarray) -> np.ndarray:
        """(len(groups), 46) true counts of the given sorted, distinct group indices.

        With a `cell_cache` (the trials of a study), groups counted before are read from
        it and only the others are counted (and added to it): the groups that get a
        table are mostly the same in every trial."""
        groups = np.asarray(groups, dtype=np.int64)
        if self.cell_cache is None:
            return self._count_cells(groups)
        return self.cell_cache.cells_of(groups, self._count_cells)

    def _count_cells(self, groups: np.ndarray) -> np.ndarray:
        out = np.zeros((len(groups), N_CELLS), dtype=np.int64)
        if len(groups) == 0 or self._empty():
            return out
        slot = np.full(self.n_groups, -1, dtype=np.int32)
        slot[groups] = np.arange(len(groups), dtype=np.int32)
        wanted_region = np.zeros(self.n_regions, dtype=np.bool_)
        wanted_region[groups // self.n_iterations] = True
        rec, cls = self._records()
        t = self.table
        ranges = _piece_ranges(t)
        # each thread adds into its own table of cells (small: the wanted groups only)
        outs = [out] + [np.zeros_like(out) for _ in ranges[1:]]
        _in_threads(lambda i: _kernels.level_cells(t.key, t.count, t.piece_rows, *ranges[i], rec.rec, cls,
                                                   self.piece_region, self.n_iterations, wanted_region, slot,
                                                   outs[i]), len(ranges))
        for extra in outs[1:]:
            out += extra
        return out


class CellCache:
    """True cells of the groups of one level counted so far (sorted group indices and their
    (n, 46) cells); exact counts, so serving them again changes nothing."""

    def __init__(self) -> None:
        self.groups = np.zeros(0, np.int64)
        self.cells = np.zeros((0, N_CELLS), np.int64)
        #: Serve the cells kept, keep no more: in a worker process of a parallel study,
        #: adding to the cache would copy it (pages shared with the parent made private).
        self.frozen = False

    def cells_of(self, groups: np.ndarray, count: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
        """The cells of sorted, distinct `groups`: known ones from here, the others from
        `count(missing groups)` (then kept)."""
        pos = np.searchsorted(self.groups, groups)
        hit = np.zeros(len(groups), np.bool_)
        inside = pos < len(self.groups)
        hit[inside] = self.groups[pos[inside]] == groups[inside]
        missing = groups[~hit]
        new = count(missing)
        out = np.empty((len(groups), N_CELLS), np.int64)
        out[hit] = self.cells[pos[hit]]
        out[~hit] = new
        if len(missing) and not self.frozen:
            merged = np.concatenate([self.groups, missing])
            order = np.argsort(merged, kind="stable")
            self.groups = merged[order]
            self.cells = np.concatenate([self.cells, new])[order]
        return out


def all_totals(table: CountTable, levels: list[LevelCounts]) -> list[np.ndarray]:
    """The totals of several levels in one pass over the count table (`_kernels.totals_all`).

    The levels must share one `KeyRecords` (or have none: one is built for them all).
    """
    outs = [np.zeros(lc.n_groups, np.int64) for lc in levels]
    todo = [i for i, lc in enumerate(levels) if not lc._empty()]
    if not todo:
        return outs
    records = levels[todo[0]].records
    needed = {(geo_class(levels[i].level.geo), levels[i].level.iteration_level) for i in todo}
    if records is None or not needed <= set(records.classes) or any(levels[i].records is not records for i in todo):
        classes = sorted(needed)
        members = {(geo_class(levels[i].level.geo), levels[i].level.iteration_level): levels[i].members for i in todo}
        records = KeyRecords.build(classes, [members[c] for c in classes], table.charkeys)
        for i in todo:
            levels[i].records = records
    sizes = np.array([levels[i].n_groups for i in todo], np.int64)
    out_base = np.r_[0, np.cumsum(sizes)[:-1]].astype(np.int64)
    out = np.zeros(int(sizes.sum()), np.int64)
    piece_region = np.stack([levels[i].piece_region for i in todo])
    level_cls = np.array([records.classes.index((geo_class(levels[i].level.geo), levels[i].level.iteration_level))
                          for i in todo], np.int64)
    level_nit = np.array([levels[i].n_iterations for i in todo], np.int64)
    ranges = _piece_ranges(table)
    # The second thread keeps its own totals of the levels whose regions have pieces on
    # both sides of the split (USA, AIANNH areas, ...); other levels' regions are on one
    # side only, so both threads add into `out` without touching the same element.
    shared = np.zeros(len(todo), np.bool_)
    if len(ranges) > 1:
        (a, s), (_s, b) = ranges
        for j in range(len(todo)):
            left, right = np.unique(piece_region[j, a:s]), np.unique(piece_region[j, s:b])
            shared[j] = len(np.intersect1d(left[left >= 0], right[right >= 0])) > 0
        if int(sizes[shared].sum()) > _PRIVATE_MAX:
            ranges = [(a, b)]  # a copy would cost too much memory: one thread
    priv_base = np.r_[0, np.cumsum(np.where(shared, sizes, 0))[:-1]].astype(np.int64)
    privs = [np.zeros(0, np.int64)] + [np.zeros(int(sizes[shared].sum()), np.int64) for _ in ranges[1:]]
    _in_threads(lambda i: _kernels.totals_all(table.key, table.count, table.piece_rows, *ranges[i], records.rec,
                                              piece_region, level_cls, level_nit, out_base, out,
                                              shared if i else np.zeros_like(shared), priv_base, privs[i]),
                len(ranges))
    for j in np.flatnonzero(shared) if len(ranges) > 1 else ():
        out[out_base[j]: out_base[j] + sizes[j]] += privs[1][priv_base[j]: priv_base[j] + sizes[j]]
    for j, i in enumerate(todo):
        outs[i] = out[out_base[j]: out_base[j] + sizes[j]]
    return outs


#: Largest private copy of level totals a second thread may use (elements).
_PRIVATE_MAX = 64_000_000
#: Count tables below this many rows are read by one thread.
_THREAD_ROWS = 1_000_000


def _threads() -> int:
    """Threads for the counting kernels: the usable CPUs, at most 2 (the kernels are
    bound by memory latency; a second thread on another core doubles the misses in
    flight)."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not on Linux
        cpus = os.cpu_count() or 1
    return max(1, min(2, cpus))


def _piece_ranges(table: CountTable) -> list[tuple[int, int]]:
    """The pieces split into one range per thread, with about as many table rows each."""
    rows = table.piece_rows
    n = len(rows) - 1
    if _threads() < 2 or rows[-1] < _THREAD_ROWS:
        return [(0, n)]
    s = int(np.searchsorted(rows, rows[-1] // 2))
    return [(0, s), (s, n)]


def _in_threads(work, n: int) -> None:
    """work(0), ..., work(n - 1), each on its own thread (the kernels release the GIL)."""
    if n == 1:
        work(0)
        return
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=n) as pool:
        for f in [pool.submit(work, i) for i in range(n)]:
            f.result()


def level_counts(
    table: CountTable, inputs: Inputs, catalog: IterationCatalog, level: PopulationGroupLevel,
    stability: int, memberships: dict | None = None, records: KeyRecords | None = None,
) -> LevelCounts:
    """The counts of every population group of `level` (computed when asked for).

    `memberships` is a cache shared by the levels of one run; `records`, if given,
    holds the groups of every characteristic key for this level's membership too.
    """
    geo, lvl = level.geo, level.iteration_level
    n_regions = inputs.geography.n_regions(geo)
    n_it = len(catalog.iterations(geo, lvl))
    cls = geo_class(geo)
    if memberships is not None and (cls, lvl) in memberships:
        members: Membership = memberships[(cls, lvl)]
    else:
        members = membership(inputs.specs, catalog, table.charkeys, inputs.code_names, cls, lvl, stability)
        if memberships is not None:
            memberships[(cls, lvl)] = members
    piece_region = inputs.geography.piece_region.get(geo)
    if piece_region is None:
        piece_region = np.full(inputs.geography.n_pieces, -1, np.int64)
    return LevelCounts(level, n_regions, n_it, members, table.charkeys.combo_of, table.charkeys.eth_of, table,
                       piece_region.astype(np.int64, copy=False), records)
