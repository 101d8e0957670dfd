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
from engine.flatmap import CharKeys, IterationCatalog, Membership, geo_class, membership
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
    """Person counts per (piece, characteristic key, cell), one row per distinct triple.

    `combo` and `eth` are the race combo and ethnicity code of the row's key (see
    engine.flatmap.CharKeys); they are what the flat map needs.
    """

    piece: np.ndarray  # int64
    charkey: np.ndarray  # int64
    cell: np.ndarray  # int64
    count: np.ndarray  # int64
    charkeys: CharKeys
    persons: int = 0
    persons_us: int = 0
    persons_pr: int = 0

    @property
    def combo(self) -> np.ndarray:
        return np.asarray(self.charkeys.combo_of, np.int64)[self.charkey]

    @property
    def eth(self) -> np.ndarray:
        return np.asarray(self.charkeys.eth_of, np.int64)[self.charkey]

    @classmethod
    def from_keys(cls, key: np.ndarray, count: np.ndarray, charkeys: CharKeys, **persons: int) -> "CountTable":
        """From packed keys (piece * _CK_CAP + charkey) * N_CELLS + cell."""
        return cls(key // (_CK_CAP * N_CELLS), (key // N_CELLS) % _CK_CAP, key % N_CELLS, count, charkeys, **persons)


@dataclass
class GroupCounts:
    """Counts of one population group level.

    group = region index * n_iterations + iteration index (the universe order).
    `key` = group * 46 + cell holds the non-zero counts, unsorted and possibly repeated
    (counts of a key add up): the mechanism needs dense totals and the cells of the few
    groups that get a table, neither of which needs a sort of all rows.
    """

    level: PopulationGroupLevel
    n_regions: int
    n_iterations: int
    key: np.ndarray  # int64
    count: np.ndarray  # int64

    @property
    def n_groups(self) -> int:
        return self.n_regions * self.n_iterations

    def totals(self) -> np.ndarray:
        """True total of every group of the universe (zeros included)."""
        # float64 weights are exact: a count is far below 2**53.
        return np.bincount(self.key // N_CELLS, weights=self.count, minlength=self.n_groups).astype(np.int64)

    def cells_of(self, groups: np.ndarray) -> np.ndarray:
        """(len(groups), 46) true counts of the given sorted, distinct group indices."""
        out = np.zeros((len(groups), N_CELLS), dtype=np.int64)
        if len(groups) == 0 or len(self.key) == 0:
            return out
        wanted = np.zeros(self.n_groups, dtype=bool)
        wanted[groups] = True
        g = self.key // N_CELLS
        m = wanted[g]
        pos = np.searchsorted(groups, g[m]) * N_CELLS + self.key[m] % N_CELLS
        out += np.bincount(pos, weights=self.count[m], minlength=out.size).astype(np.int64).reshape(out.shape)
        return out


class Aggregator(Protocol):
    """Counts persons. Implementations: `LocalAggregator` (one machine, streaming)."""

    def count(self, inputs: Inputs, progress: Progress | None = None) -> CountTable: ...


def _merge(keys: list[np.ndarray], counts: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    k = np.concatenate(keys)
    c = np.concatenate(counts)
    if len(k) == 0:
        return k, c
    order = np.argsort(k)
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
    _known_packed: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    _known_ids: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))

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
        return CountTable.from_keys(k, c, self._charkeys, persons=persons, persons_us=persons - persons_pr,
                                    persons_pr=persons_pr)

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
            uniq = np.asarray(uniq, dtype=np.int64)
            # Known packed keys are looked up in bulk; only new ones are decoded in Python.
            pos = np.searchsorted(self._known_packed, uniq)
            pos_c = np.minimum(pos, max(0, len(self._known_packed) - 1))
            hit = (pos < len(self._known_packed)) & (self._known_packed[pos_c] == uniq) if len(self._known_packed) else np.zeros(len(uniq), bool)
            ids = np.empty(len(uniq), dtype=np.int64)
            ids[hit] = self._known_ids[pos_c[hit]]
            new = np.flatnonzero(~hit)
            for i in new:
                u = int(uniq[i])
                vals = []
                for _ in range(min(per_word, 8)):
                    vals.append(u & ((1 << bits) - 1))
                    u >>= bits
                combo = tuple(sorted(v - 1 for v in vals if v))
                ids[i] = self._charkeys.get(combo, u)
            if len(new):
                keys = np.concatenate([self._known_packed, uniq[new]])
                vals_ = np.concatenate([self._known_ids, ids[new]])
                order = np.argsort(keys)
                self._known_packed, self._known_ids = keys[order], vals_[order]
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
        members: Membership = csr_cache[cache_key]
    else:
        members = membership(inputs.specs, catalog, table.charkeys, inputs.code_names, cls, lvl, stability)
        if csr_cache is not None:
            csr_cache[cache_key] = members
    if len(table.count) == 0 or n_it == 0:
        return GroupCounts(level, n_regions, n_it, np.zeros(0, np.int64), np.zeros(0, np.int64))
    region = regions[table.piece]
    keep = region >= 0
    if 2 * n_regions <= inputs.geography.n_pieces:
        # Many pieces per region (USA, states, counties): sum them first, fewer rows to flat-map.
        k2 = (region[keep] * _CK_CAP + table.charkey[keep]) * N_CELLS + table.cell[keep]
        k2, count = _merge([k2], [table.count[keep]])
        region, charkey, cell = k2 // (_CK_CAP * N_CELLS), (k2 // N_CELLS) % _CK_CAP, k2 % N_CELLS
    else:
        region, charkey, cell, count = region[keep], table.charkey[keep], table.cell[keep], table.count[keep]
    combo_of = np.asarray(table.charkeys.combo_of, np.int64)
    eth_of = np.asarray(table.charkeys.eth_of, np.int64)
    rows, it = members.expand(combo_of[charkey], eth_of[charkey])
    return GroupCounts(level, n_regions, n_it, (region[rows] * n_it + it) * N_CELLS + cell[rows], count[rows])
