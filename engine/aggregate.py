"""Aggregation: persons -> counts per population group and cell.

This is the one step whose cost grows with the number of persons, so it sits behind a
narrow interface (`Aggregator.count`) that a distributed engine can take over: it
receives the checked public `Inputs` (which say where the persons are) and returns a
`CountTable`, from which `group_counts` derives the counts of every population group
level. Nothing here draws noise.

Cells are sex x age23 bins (46 cells, index sex * 23 + bin; SPEC §1): every published
table (total, age4, age9, age23) is a sum of these cells.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Protocol

import numpy as np
import pandas as pd

from calculators.levels import PopulationGroupLevel
from engine.errors import ProblemLog
from engine.flatmap import CharKeys, IterationCatalog, MembershipCSR, geo_class, membership
from engine.readers import PERSON_COLUMNS, iter_batches
from engine.validate import EncodedPersons, Inputs, check_person_batch

N_CELLS = 46
#: Capacity of characteristic-key ids inside packed int64 keys.
_CK_CAP = 1 << 24
#: Merge buffered batch results once they hold this many rows.
_MERGE_ROWS = 20_000_000

Progress = Callable[[str, float, float], None]


@dataclass
class CountTable:
    """Person counts per (piece, characteristic key, cell): sorted unique packed keys.

    key = (piece * _CK_CAP + charkey) * N_CELLS + cell.
    """

    key: np.ndarray
    count: np.ndarray
    charkeys: CharKeys
    persons: int = 0
    persons_us: int = 0
    persons_pr: int = 0

    @property
    def piece(self) -> np.ndarray:
        return self.key // (_CK_CAP * N_CELLS)

    @property
    def charkey(self) -> np.ndarray:
        return (self.key // N_CELLS) % _CK_CAP

    @property
    def cell(self) -> np.ndarray:
        return self.key % N_CELLS


@dataclass
class GroupCounts:
    """Sparse counts of one population group level.

    group = region index * n_iterations + iteration index (the universe order);
    rows are sorted by (group, cell) and only non-zero counts are stored.
    """

    level: PopulationGroupLevel
    n_regions: int
    n_iterations: int
    group: np.ndarray  # int64
    cell: np.ndarray  # int64
    count: np.ndarray  # int64

    @property
    def n_groups(self) -> int:
        return self.n_regions * self.n_iterations

    def totals(self) -> np.ndarray:
        """True total of every group of the universe (zeros included)."""
        return np.bincount(self.group, weights=self.count, minlength=self.n_groups).astype(np.int64)

    def cells_of(self, groups: np.ndarray) -> np.ndarray:
        """(len(groups), 46) true counts of the given sorted group indices."""
        out = np.zeros((len(groups), N_CELLS), dtype=np.int64)
        if len(groups) == 0 or len(self.group) == 0:
            return out
        lo = np.searchsorted(self.group, groups, side="left")
        hi = np.searchsorted(self.group, groups, side="right")
        lens = hi - lo
        rows = np.repeat(np.arange(len(groups)), lens)
        idx = np.repeat(lo - np.cumsum(lens) + lens, lens) + np.arange(lens.sum())
        np.add.at(out, (rows, self.cell[idx]), self.count[idx])
        return out


class Aggregator(Protocol):
    """Counts persons. Implementations: `LocalAggregator` (one machine, streaming)."""

    def count(self, inputs: Inputs, progress: Progress | None = None) -> CountTable: ...


def _merge(keys: list[np.ndarray], counts: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    k = np.concatenate(keys)
    c = np.concatenate(counts)
    if len(k) == 0:
        return k, c
    order = np.argsort(k, kind="stable")
    k, c = k[order], c[order]
    start = np.flatnonzero(np.r_[True, k[1:] != k[:-1]])
    return k[start], np.add.reduceat(c, start)


@dataclass
class LocalAggregator:
    """Single-machine aggregation: streams person batches, checks them, counts them.

    Memory grows with the number of distinct (piece, characteristic key, cell) rows,
    not with the number of persons.
    """

    merge_rows: int = _MERGE_ROWS
    _charkeys: CharKeys = field(default_factory=CharKeys)

    def count(self, inputs: Inputs, progress: Progress | None = None) -> CountTable:
        log = ProblemLog()
        keys: list[np.ndarray] = []
        counts: list[np.ndarray] = []
        buffered = 0
        persons = persons_pr = 0
        geo = inputs.geography
        pr_piece = _pr_pieces(inputs)
        size = inputs.persons_file.path.stat().st_size
        rows_read = 0
        for batch in iter_batches(inputs.persons_file, PERSON_COLUMNS, log):
            enc = check_person_batch(batch, inputs, log)
            rows_read += batch.table.num_rows
            if progress:
                # Bytes are not known per batch for Parquet; rows give a fair estimate.
                progress("reading persons", rows_read, max(rows_read, _estimate_rows(inputs, size)))
            if log or not len(enc):
                continue  # keep checking, stop counting: nothing will be released
            piece = geo.block_piece[enc.block]
            in_run = piece_in_run(inputs, piece)
            persons += int(in_run.sum())
            persons_pr += int((in_run & pr_piece[piece]).sum())
            ck = self._charkey_ids(enc, len(inputs.code_names))
            k = (piece * _CK_CAP + ck) * N_CELLS + enc.cell.astype(np.int64)
            k = k[in_run]
            u, c = np.unique(k, return_counts=True)
            keys.append(u)
            counts.append(c.astype(np.int64))
            buffered += len(u)
            if buffered > self.merge_rows and len(keys) > 1:
                mk, mc = _merge(keys, counts)
                keys, counts, buffered = [mk], [mc], len(mk)
        log.raise_if_any()
        if keys:
            k, c = _merge(keys, counts)
        else:
            k, c = np.zeros(0, np.int64), np.zeros(0, np.int64)
        return CountTable(k, c, self._charkeys, persons, persons - persons_pr, persons_pr)

    def _charkey_ids(self, enc: EncodedPersons, n_codes: int) -> np.ndarray:
        """Characteristic-key id of every row (registering new keys)."""
        bits = max(1, int(n_codes).bit_length())
        per_word = max(1, (63 - bits) // bits)
        race = enc.race.astype(np.int64) + 1  # 0 = no code
        n = len(race)
        fits = (race[:, per_word:] == 0).all(axis=1) if per_word < 8 else np.ones(n, bool)
        packed = enc.eth.astype(np.int64)
        for j in range(min(per_word, 8)):
            packed = (packed << bits) | race[:, j]
        out = np.empty(n, dtype=np.int64)
        if fits.any():
            codes, uniq = pd.factorize(packed[fits])
            ids = np.empty(len(uniq), dtype=np.int64)
            for i, u in enumerate(uniq.tolist()):
                vals = []
                for _ in range(min(per_word, 8)):
                    vals.append(u & ((1 << bits) - 1))
                    u >>= bits
                eth = u
                combo = tuple(sorted(v - 1 for v in vals if v))
                ids[i] = self._charkeys.get(combo, int(eth))
            out[fits] = ids[codes]
        for i in np.flatnonzero(~fits):  # rare: more race codes than fit in one word
            combo = tuple(int(v) for v in enc.race[i] if v >= 0)
            out[i] = self._charkeys.get(combo, int(enc.eth[i]))
        return out


def _estimate_rows(inputs: Inputs, size: int) -> int:
    if inputs.persons_file.kind == "parquet":
        import pyarrow.parquet as pq

        return pq.ParquetFile(inputs.persons_file.path).metadata.num_rows
    return max(1, size // 60)


def _pr_pieces(inputs: Inputs) -> np.ndarray:
    geo = inputs.geography
    out = np.zeros(geo.n_pieces, dtype=bool)
    for g in ("PR-STATE",):
        if g in geo.piece_region:
            out |= geo.piece_region[g] >= 0
    return out


def piece_in_run(inputs: Inputs, piece: np.ndarray) -> np.ndarray:
    """Pieces that belong to a run that is on (US states in the filter, or PR)."""
    geo = inputs.geography
    top = [g for g in ("USA", "PR-STATE") if g in geo.piece_region]
    inside = np.zeros(geo.n_pieces, dtype=bool)
    for g in top:
        inside |= geo.piece_region[g] >= 0
    return inside[piece]


def group_counts(
    table: CountTable, inputs: Inputs, catalog: IterationCatalog, level: PopulationGroupLevel,
    stability: int, csr_cache: dict | None = None,
) -> GroupCounts:
    """Counts of every population group of `level` and cell, from the count table.

    Each (piece, key, cell) row is summed into its region, then flat-mapped to the
    iterations of its characteristic key (SPEC §1), then summed per (group, cell).
    """
    geo, lvl = level.geo, level.iteration_level
    regions = inputs.geography.piece_region[geo]
    n_regions = inputs.geography.n_regions(geo)
    n_it = len(catalog.iterations(geo, lvl))
    cls = geo_class(geo)
    cache_key = (cls, lvl)
    if csr_cache is not None and cache_key in csr_cache:
        csr: MembershipCSR = csr_cache[cache_key]
    else:
        csr = membership(inputs.specs, catalog, table.charkeys, inputs.code_names, cls, lvl, stability)
        if csr_cache is not None:
            csr_cache[cache_key] = csr
    empty = GroupCounts(level, n_regions, n_it, np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64))
    if len(table.key) == 0 or n_it == 0:
        return empty
    region = regions[table.piece]
    keep = region >= 0
    ck = table.charkey[keep]
    cell = table.cell[keep]
    k2 = (region[keep] * _CK_CAP + ck) * N_CELLS + cell
    k2, c2 = _merge([k2], [table.count[keep]])
    region2 = k2 // (_CK_CAP * N_CELLS)
    ck2 = (k2 // N_CELLS) % _CK_CAP
    cell2 = k2 % N_CELLS
    sizes = csr.sizes()[ck2]
    rows = np.repeat(np.arange(len(k2)), sizes)
    starts = csr.offsets[ck2]
    within = np.arange(int(sizes.sum())) - np.repeat(np.cumsum(sizes) - sizes, sizes)
    it = csr.members[starts[rows] + within]
    k3 = (region2[rows] * n_it + it) * N_CELLS + cell2[rows]
    k3, c3 = _merge([k3], [c2[rows]])
    return GroupCounts(level, n_regions, n_it, k3 // N_CELLS, k3 % N_CELLS, c3)
