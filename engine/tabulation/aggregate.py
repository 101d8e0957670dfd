"""Aggregation: persons -> counts per population group and cell.

This is the one step whose cost grows with the number of persons, so it sits behind a
narrow interface (`Aggregator.count`) that a distributed engine can take over: it
receives the checked public `Inputs` (which say where the persons are) and returns a
`CountTable` of person counts per (piece, characteristic key, cell). `level_counts`
derives from it the counts of every population group of a level, region chunk by
region chunk, so memory stays bounded by the aggregated counts. Nothing here draws
noise.

Cells are sex x age23 bins (46 cells, index sex * 23 + bin; SPEC §1): every published
table (total, age4, age9, age23) is a sum of these cells.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterator, Protocol

import numpy as np

from calculators.levels import PopulationGroupLevel
from engine.errors import ProblemLog
from engine.tabulation.flatmap import CharKeys, IterationCatalog, Membership, geo_class, membership
from engine.inputs.readers import PERSON_COLUMNS, iter_batches, prefetch
from engine.inputs.validate import Inputs, check_person_batch

N_CELLS = 46
#: Capacity of characteristic-key ids inside packed int64 keys.
_CK_CAP = 1 << 24
#: Merge buffered batch results once they hold this many rows.
_MERGE_ROWS = 20_000_000
#: Count-table rows flat-mapped at once when deriving a level's counts.
_CHUNK_ROWS = 3_000_000

Progress = Callable[[str, float, float], None]


@dataclass
class CountTable:
    """Person counts per (piece, characteristic key, cell): one row per distinct triple.

    key = (piece * _CK_CAP + charkey) * N_CELLS + cell, sorted ascending, so rows of a
    piece are contiguous and pieces are in GRF-C order (state, county, tract, ...).
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

    def pieces(self) -> np.ndarray:
        return self.key // (_CK_CAP * N_CELLS)

    def decompose(self, rows: slice | np.ndarray = slice(None)) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(piece, characteristic key, cell) of some rows."""
        k = self.key[rows]
        return k // (_CK_CAP * N_CELLS), (k // N_CELLS) % _CK_CAP, k % N_CELLS


class Aggregator(Protocol):
    """Counts persons. Implementations: `LocalAggregator` (one machine, streaming)."""

    def count(self, inputs: Inputs, progress: Progress | None = None) -> CountTable: ...


def _merge(keys: list[np.ndarray], counts: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Sorted distinct keys with their summed counts."""
    k = np.concatenate(keys)
    c = np.concatenate(counts)
    if len(k) == 0:
        return k, c
    order = np.argsort(k)
    k, c = k[order], c[order]
    del order
    start = np.flatnonzero(np.r_[True, k[1:] != k[:-1]])
    return k[start], np.add.reduceat(c, start)


def _merge_sorted(keys: list[np.ndarray], counts: list[np.ndarray], parts: int = 16,
                  min_rows: int = _MERGE_ROWS // 4) -> tuple[np.ndarray, np.ndarray]:
    """`_merge` of already sorted parts, one key range at a time.

    Each part is cut at the same key boundaries (a binary search per part), so the
    sorting temporaries hold about 1/`parts` of the rows at once instead of all of them.
    """
    total = sum(len(k) for k in keys)
    if total < min_rows or len(keys) == 1:
        return _merge(keys, counts)
    lo = min(int(k[0]) for k in keys if len(k))
    hi = max(int(k[-1]) for k in keys if len(k))
    bounds = np.unique(np.linspace(lo, hi + 1, parts + 1).astype(np.int64))
    out_k, out_c = [], []
    for a, b in zip(bounds[:-1], bounds[1:]):
        sk, sc = [], []
        for k, c in zip(keys, counts):
            i, j = np.searchsorted(k, [a, b])
            sk.append(k[i:j])
            sc.append(c[i:j])
        mk, mc = _merge(sk, sc)
        out_k.append(mk)
        out_c.append(mc)
    return np.concatenate(out_k), np.concatenate(out_c)


@dataclass
class LocalAggregator:
    """Single-machine aggregation: streams person batches, checks them, counts them.

    Memory grows with the number of distinct (piece, characteristic key, cell) rows,
    not with the number of persons.
    """

    merge_rows: int = _MERGE_ROWS

    def count(self, inputs: Inputs, progress: Progress | None = None) -> CountTable:
        log = ProblemLog()
        charkeys = CharKeys(len(inputs.code_names))
        keys: list[np.ndarray] = []
        counts: list[np.ndarray] = []
        buffered = merged_rows = 0
        persons = persons_pr = truncated = 0
        geo = inputs.geography
        in_run = _pieces_in_run(inputs)
        pr_piece = geo.piece_region["PR-STATE"] >= 0 if "PR-STATE" in geo.piece_region else np.zeros(geo.n_pieces, bool)
        expected = _estimate_rows(inputs)
        rows_read = 0
        for batch in prefetch(iter_batches(inputs.persons_file, PERSON_COLUMNS, log)):
            enc = check_person_batch(batch, inputs, log)
            rows_read += batch.table.num_rows
            if progress:
                progress("reading persons", rows_read, max(rows_read, expected))
            if log or not len(enc):
                continue  # keep checking, stop counting: nothing will be released
            piece = geo.block_piece[enc.block]
            keep = in_run[piece]
            persons += int(keep.sum())
            persons_pr += int((keep & pr_piece[piece]).sum())
            truncated += int((keep & enc.truncated).sum())
            ck = charkeys.ids(enc.race[keep], enc.eth[keep])
            k = (piece[keep] * _CK_CAP + ck) * N_CELLS + enc.cell[keep].astype(np.int64)
            u, c = np.unique(k, return_counts=True)
            keys.append(u)
            counts.append(c.astype(np.int32))
            buffered += len(u)
            # Merge when the new rows outgrow both the limit and the merged table, so the
            # total merging work stays proportional to the final table (not quadratic).
            if buffered > max(self.merge_rows, merged_rows) and len(keys) > 1:
                mk, mc = _merge_sorted(keys, counts)
                keys, counts, merged_rows, buffered = [mk], [mc], len(mk), 0
        if rows_read and not persons and not log:
            # As production, whose readers keep only the runs' states and then refuse
            # an empty person table.
            log.add(inputs.persons_file.name, None, None, None,
                    "at least one person in the states of the runs (state_filter_us with run_us, 72 with run_pr); "
                    f"none of the {rows_read:,} persons lives there")
        log.raise_if_any()
        if keys:
            k, c = _merge_sorted(keys, counts)
        else:
            k, c = np.zeros(0, np.int64), np.zeros(0, np.int32)
        return CountTable(k, c, charkeys, persons=persons, persons_us=persons - persons_pr, persons_pr=persons_pr,
                          persons_truncated=truncated)


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
class LevelCounts:
    """The counts of every population group of one level, derived chunk by chunk.

    group = region index * n_iterations + iteration index (the universe order). The
    count-table rows of the level are split into region ranges of bounded size; each
    range is flat-mapped on demand (SPEC §1), so nothing of the size "rows x groups per
    person" is ever held for the whole level.
    """

    level: PopulationGroupLevel
    n_regions: int
    n_iterations: int
    members: Membership
    combo_of: np.ndarray
    eth_of: np.ndarray
    #: Rows: packed keys (top * _CK_CAP + characteristic key) * 46 + cell and counts, where
    #: `top` is a region index, or a piece index mapped to regions by `top_region`.
    key: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    count: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    top_region: np.ndarray | None = None
    chunks: list[tuple[int, int, np.ndarray | slice]] = field(default_factory=list)

    @property
    def n_groups(self) -> int:
        return self.n_regions * self.n_iterations

    def _chunk_rows(self, sel: np.ndarray | slice) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        k = self.key[sel]
        top, ck, cell = k // (_CK_CAP * N_CELLS), (k // N_CELLS) % _CK_CAP, k % N_CELLS
        region = top if self.top_region is None else self.top_region[top]
        return region, ck, cell, self.count[sel]

    def iter_chunks(self) -> Iterator[tuple[int, int, np.ndarray, np.ndarray]]:
        """(first region, end region, local keys, counts) per chunk.

        local key = (group - first region * n_iterations) * 46 + cell; keys may repeat.
        """
        for r0, r1, sel in self.chunks:
            region, ck, cell, count = self._chunk_rows(sel)
            pos, it = self.members.expand(self.combo_of[ck], self.eth_of[ck])
            local = ((region[pos] - r0) * self.n_iterations + it) * N_CELLS + cell[pos]
            yield r0, r1, local, count[pos]

    def totals(self) -> np.ndarray:
        """True total of every group of the universe (zeros included)."""
        out = np.zeros(self.n_groups, dtype=np.int64)
        for r0, r1, local, count in self.iter_chunks():
            g0, g1 = r0 * self.n_iterations, r1 * self.n_iterations
            # float64 weights are exact: counts are far below 2**53.
            out[g0:g1] += np.bincount(local // N_CELLS, weights=count, minlength=g1 - g0).astype(np.int64)
        return out

    def cells_of(self, groups: np.ndarray) -> np.ndarray:
        """(len(groups), 46) true counts of the given sorted, distinct group indices."""
        out = np.zeros((len(groups), N_CELLS), dtype=np.int64)
        if len(groups) == 0:
            return out
        for r0, r1, local, count in self.iter_chunks():
            g0, g1 = r0 * self.n_iterations, r1 * self.n_iterations
            lo, hi = np.searchsorted(groups, [g0, g1])
            if lo == hi:
                continue
            wanted = np.zeros(g1 - g0, dtype=bool)
            wanted[groups[lo:hi] - g0] = True
            g = local // N_CELLS
            m = wanted[g]
            pos = (np.searchsorted(groups, g[m] + g0) - lo) * N_CELLS + local[m] % N_CELLS
            out[lo:hi] += np.bincount(pos, weights=count[m], minlength=(hi - lo) * N_CELLS).astype(
                np.int64).reshape(hi - lo, N_CELLS)
        return out


def _region_chunks(region: np.ndarray, n_regions: int, chunk_rows: int, contiguous: bool
                   ) -> list[tuple[int, int, np.ndarray | slice]]:
    """Region ranges [r0, r1) holding at most about `chunk_rows` rows each (a region is
    never split), with the rows of each range as a slice (rows sorted by region) or an
    index array."""
    per_region = np.bincount(region[region >= 0], minlength=n_regions)
    bounds = [0]
    cum = np.cumsum(per_region)
    while bounds[-1] < n_regions:
        start_rows = cum[bounds[-1] - 1] if bounds[-1] else 0
        r1 = int(np.searchsorted(cum, start_rows + chunk_rows, side="right"))
        bounds.append(min(n_regions, max(r1, bounds[-1] + 1)))
    out = []
    if contiguous:
        first = int(np.flatnonzero(region >= 0)[0]) if (region >= 0).any() else 0
        for r0, r1 in zip(bounds, bounds[1:]):
            a = first + (int(cum[r0 - 1]) if r0 else 0)
            out.append((r0, r1, slice(a, first + int(cum[r1 - 1]))))
    else:
        for r0, r1 in zip(bounds, bounds[1:]):
            out.append((r0, r1, np.flatnonzero((region >= r0) & (region < r1))))
    return out


#: The next finer level whose regions nest in each coarse level's regions.
_FINER = {"USA": "STATE", "STATE": "COUNTY", "PR-STATE": "PR-COUNTY"}


def is_coarse(inputs: Inputs, geo: str) -> bool:
    """Many pieces per region: summing rows per region first pays off."""
    return 2 * inputs.geography.n_regions(geo) <= inputs.geography.n_pieces


def _merged_rows(table: CountTable, inputs: Inputs, geo: str, cache: dict) -> tuple[np.ndarray, np.ndarray]:
    """Sorted keys (region * _CK_CAP + characteristic key) * 46 + cell and counts of a
    coarse level: one row per distinct triple.

    Built from the next finer coarse level when there is one (states from counties, the
    USA from states), so the full count table is sorted only once.
    """
    if geo in cache:
        return cache[geo]
    geog = inputs.geography
    finer = _FINER.get(geo)
    if finer in geog.regions and is_coarse(inputs, finer):
        key_f, count = _merged_rows(table, inputs, finer, cache)
        region_f, ck, cell = key_f // (_CK_CAP * N_CELLS), (key_f // N_CELLS) % _CK_CAP, key_f % N_CELLS
        parent = np.full(geog.n_regions(finer), -1, dtype=np.int64)
        inside = geog.piece_region[finer] >= 0
        parent[geog.piece_region[finer][inside]] = geog.piece_region[geo][inside]
        region = parent[region_f]
        k, count = _merge([(region * _CK_CAP + ck) * N_CELLS + cell], [count])
    else:
        # From the count table, a slice of rows at a time, so temporaries stay small.
        keys, counts = [], []
        step = 4 * _CHUNK_ROWS
        for a in range(0, len(table.count), step):
            sl = slice(a, a + step)
            piece, ck, cell = table.decompose(sl)
            region = geog.piece_region[geo][piece]
            keep = region >= 0
            part_k, part_c = _merge([(region[keep] * _CK_CAP + ck[keep]) * N_CELLS + cell[keep]],
                                    [table.count[sl][keep]])
            keys.append(part_k)
            counts.append(part_c)
        k, count = _merge_sorted(keys, counts)
    cache[geo] = (k, count)
    return cache[geo]


def level_counts(
    table: CountTable, inputs: Inputs, catalog: IterationCatalog, level: PopulationGroupLevel,
    stability: int, memberships: dict | None = None, chunk_rows: int = _CHUNK_ROWS,
    merged: dict | None = None,
) -> LevelCounts:
    """The counts of every population group of `level`, ready to be read chunk by chunk.

    `memberships` and `merged` are caches shared by the levels of one run.
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
    out = LevelCounts(level, n_regions, n_it, members, table.charkeys.combo_of, table.charkeys.eth_of)
    if len(table.count) == 0 or n_it == 0 or n_regions == 0:
        return out
    if is_coarse(inputs, geo):
        out.key, out.count = _merged_rows(table, inputs, geo, merged if merged is not None else {})
        out.chunks = _region_chunks(out.key // (_CK_CAP * N_CELLS), n_regions, chunk_rows, contiguous=True)
    else:
        out.key, out.count = table.key, table.count
        out.top_region = inputs.geography.piece_region[geo]
        region = out.top_region.astype(np.int32)[table.pieces()]
        inside = np.flatnonzero(region >= 0)
        # The table is sorted by piece; for STATE, COUNTY and TRACT that is region order too.
        contiguous = len(inside) > 0 and inside[-1] - inside[0] + 1 == len(inside) and bool(
            np.all(np.diff(region[inside]) >= 0))
        out.chunks = _region_chunks(region, n_regions, chunk_rows, contiguous)
    return out
