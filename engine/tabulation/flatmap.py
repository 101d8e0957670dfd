"""Flat map: which population groups (iterations) each person joins, per iteration level.

Persons are summarised by their *characteristic key*: the set of distinct race codes
(codes after the first Null ignored; a *combo*) and the ethnicity code. SPEC §1:
- alone race iterations = the intersection over the combo's codes of their ALONE=True
  iterations; AOIC iterations = the union of their ALONE=False iterations;
- ethnicity iterations = those of the ethnicity code;
restricted to the iterations the geography level tabulates (state-or-above levels skip
COARSE_ONLY, sub-state levels skip DETAILED_ONLY). Race and ethnicity iterations have
distinct codes, so a key's groups are its combo's race groups followed by its
ethnicity code's groups. Everything is computed per combo (numba kernels in
`engine.tabulation._kernels`), never per person.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from calculators.levels import ITERATION_LEVELS
from engine.errors import InputError, Problem
from engine.inputs.specs import STATE_CLASS, SUBSTATE_CLASS, Iteration, Specs
from engine.inputs.specs import tabulation_class as geo_class
from engine.tabulation import _kernels


@dataclass
class IterationCatalog:
    """The tabulated iterations of each (geography class, iteration level), in file order."""

    specs: Specs
    lists: dict[tuple[str, int], list[Iteration]] = field(default_factory=dict)
    _codes: dict[tuple[str, int], np.ndarray] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        for cls, geo in ((STATE_CLASS, "STATE"), (SUBSTATE_CLASS, "COUNTY")):
            for lvl in ITERATION_LEVELS:
                self.lists[(cls, lvl)] = self.specs.tabulated(geo, lvl)

    def iterations(self, geo: str, level: int) -> list[Iteration]:
        return self.lists[(geo_class(geo), level)]

    def codes(self, geo: str, level: int) -> np.ndarray:
        """The iteration codes (one array per geography class and level, made once)."""
        key = (geo_class(geo), level)
        if key not in self._codes:
            self._codes[key] = np.array([it.code for it in self.lists[key]], dtype=object)
        return self._codes[key]

    def detailed_only(self, geo: str, level: int) -> np.ndarray:
        return np.array([it.detailed_only for it in self.iterations(geo, level)], dtype=bool)


class CharKeys:
    """Registry of characteristic keys: (race combo, ethnicity code index) -> id.

    A combo is the sorted set of a person's distinct race code indices; combos are kept
    as CSR arrays (`combo_offsets`, `combo_codes`). Ids are dense, in order of first
    appearance, and found per row by a numba hash table (`_kernels.charkey_ids`): a
    combo of up to `per_word` codes is one int64 word (the codes + 1, packed), so a key
    is two integers; the rare longer combos take a Python path.
    """

    def __init__(self, n_codes: int):
        self.n_codes = n_codes
        self._bits = max(1, int(n_codes).bit_length())
        #: Race codes (each + 1, 0 = none) packed into one int64 when they fit.
        self.per_word = max(1, 63 // self._bits)
        self._counters = np.zeros(6, np.int64)
        self._keys, self._combos = _hash_tables(1 << 16)
        # persons with one race code: a dense table (ethnicity, code) -> key id, when small
        self._n_single = n_codes if n_codes * n_codes <= _SINGLE_MAX else 0
        self._single = np.full(self._n_single ** 2, -1, np.int64)
        self._long: dict[tuple[int, int], int] = {}
        self._long_keys: dict[tuple[int, int], int] = {}
        self._offsets = [np.zeros(1, np.int64)]
        self._codes: list[np.ndarray] = []
        self._combo_of: list[np.ndarray] = []
        self._eth_of: list[np.ndarray] = []

    # ------------------------------------------------------------------ registering
    def _add_combos(self, rows: np.ndarray) -> None:
        """Append combos (rows of ascending code indices, -1 padded) to the CSR arrays."""
        lens = (rows >= 0).sum(axis=1)
        self._codes.append(rows[rows >= 0].astype(np.int64))
        self._offsets.append(self._offsets[-1][-1:] + np.cumsum(lens))

    def _pack(self, race: np.ndarray, cols: range) -> np.ndarray:
        packed = np.zeros(len(race), dtype=np.int64)
        for j in cols:
            packed = (packed << self._bits) | (race[:, j].astype(np.int64) + 1)
        return packed

    def _next(self, which: int) -> int:
        i = int(self._counters[which])
        self._counters[which] += 1
        return i

    def ids(self, race: np.ndarray, eth: np.ndarray) -> np.ndarray:
        """Characteristic-key id of every row; `race` (n, 8) ascending code indices, -1 padded."""
        n = len(race)
        race = np.ascontiguousarray(race)
        eth = np.ascontiguousarray(eth)
        c = self._counters
        c[_kernels.NEW_KEYS] = c[_kernels.NEW_COMBOS] = 0
        key_rows = np.empty(n, np.int64)
        key_combo = np.empty(n, np.int64)
        combo_rows = np.empty(n, np.int64)
        out = np.empty(n, np.int64)
        start = 0
        while True:
            start = _kernels.charkey_ids(race, eth, start, self._bits, self.per_word, self._single, self._n_single,
                                         self._keys, self._combos, c, out, key_rows, key_combo, combo_rows)
            if start == n:
                break
            old_keys, old_combos = self._keys, self._combos
            self._keys, self._combos = _hash_tables(2 * len(old_keys))
            _kernels.rehash(old_keys, old_combos, self._keys, self._combos)
        n_new, n_combos = int(c[_kernels.NEW_KEYS]), int(c[_kernels.NEW_COMBOS])
        if n_combos:
            self._add_combos(race[combo_rows[:n_combos]])
        if n_new:
            self._combo_of.append(key_combo[:n_new].copy())
            self._eth_of.append(eth[key_rows[:n_new]].astype(np.int64))
        long_rows = np.flatnonzero(out < 0)
        if len(long_rows):  # rare: more codes than fit in one word
            out[long_rows] = self._long_ids(race[long_rows], eth[long_rows])
        return out

    def _long_ids(self, sub: np.ndarray, eth: np.ndarray) -> np.ndarray:
        w = min(self.per_word, sub.shape[1])
        lo, hi = self._pack(sub, range(w)), self._pack(sub, range(w, sub.shape[1]))
        pairs, first, inv = np.unique(np.stack([lo, hi], axis=1), axis=0, return_index=True, return_inverse=True)
        combos = np.empty(len(pairs), dtype=np.int64)
        fresh = []
        for i, (a, b) in enumerate(pairs.tolist()):
            if (a, b) not in self._long:
                self._long[(a, b)] = self._next(_kernels.N_COMBOS)
                fresh.append(first[i])
            combos[i] = self._long[(a, b)]
        if fresh:  # in id order
            self._add_combos(sub[np.array(fresh)])
        combo = combos[inv.reshape(-1)]
        ids = np.empty(len(sub), dtype=np.int64)
        new_combo, new_eth = [], []
        for i, (cb, e) in enumerate(zip(combo.tolist(), eth.tolist())):
            k = self._long_keys.get((cb, e))
            if k is None:
                k = self._long_keys[(cb, e)] = self._next(_kernels.N_KEYS)
                new_combo.append(cb)
                new_eth.append(e)
            ids[i] = k
        if new_combo:
            self._combo_of.append(np.array(new_combo, np.int64))
            self._eth_of.append(np.array(new_eth, np.int64))
        return ids

    # ------------------------------------------------------------------ reading
    @property
    def n_combos(self) -> int:
        return int(self._counters[_kernels.N_COMBOS])

    @staticmethod
    def _joined(parts: list[np.ndarray]) -> np.ndarray:
        """The concatenation of parts, kept as the single part for the next call."""
        if len(parts) > 1:
            parts[:] = [np.concatenate(parts)]
        return parts[0] if parts else np.zeros(0, np.int64)

    @property
    def combo_offsets(self) -> np.ndarray:
        return self._joined(self._offsets)

    @property
    def combo_codes(self) -> np.ndarray:
        return self._joined(self._codes)

    @property
    def combo_of(self) -> np.ndarray:
        return self._joined(self._combo_of)

    @property
    def eth_of(self) -> np.ndarray:
        return self._joined(self._eth_of)

    def combo(self, i: int) -> tuple[int, ...]:
        off = self.combo_offsets
        return tuple(int(c) for c in self.combo_codes[off[i] : off[i + 1]])

    def __len__(self) -> int:
        return int(self._counters[_kernels.N_KEYS])


#: The largest dense table of single-code keys (entries; 8 bytes each).
_SINGLE_MAX = 1 << 23


def _hash_tables(size: int) -> tuple[np.ndarray, np.ndarray]:
    """Empty tables of `CharKeys` (`_kernels.charkey_ids`): rows (word, ethnicity, key
    id) and (word, combo id)."""
    keys = np.zeros((size, 3), np.int64)
    keys[:, 0] = _kernels.EMPTY
    combos = np.zeros((size, 2), np.int64)
    combos[:, 0] = _kernels.EMPTY
    return keys, combos


@dataclass(frozen=True)
class CSR:
    """Rows -> lists of integers (compressed sparse rows)."""

    offsets: np.ndarray  # int64, len = rows + 1
    members: np.ndarray  # int64

    def sizes(self) -> np.ndarray:
        return np.diff(self.offsets)

    def expand(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """For each position i of `rows`, its members: (position repeated, member)."""
        sizes = self.sizes()[rows]
        pos = np.repeat(np.arange(len(rows)), sizes)
        within = np.arange(int(sizes.sum())) - np.repeat(np.cumsum(sizes) - sizes, sizes)
        return pos, self.members[self.offsets[rows][pos] + within]

    @classmethod
    def from_pairs(cls, rows: np.ndarray, members: np.ndarray, n_rows: int) -> "CSR":
        order = np.lexsort((members, rows))
        rows, members = rows[order], members[order]
        offsets = np.zeros(n_rows + 1, dtype=np.int64)
        np.add.at(offsets, rows + 1, 1)
        return cls(np.cumsum(offsets), members.astype(np.int64))


@dataclass(frozen=True)
class Membership:
    """The groups of every characteristic key at one (geography class, iteration level).

    `race[combo]` and `ethnicity[code]` list iteration indices into the catalog list.
    """

    race: CSR
    ethnicity: CSR

    def expand(self, combo: np.ndarray, eth: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(row position, iteration index) pairs for rows with these combos and eth codes."""
        p1, i1 = self.race.expand(combo)
        p2, i2 = self.ethnicity.expand(eth)
        return np.concatenate([p1, p2]), np.concatenate([i1, i2])


def _code_lists(slice_map: dict[str, frozenset[str]], code_names: list[str], index: dict[str, int]) -> CSR:
    """CSR: code index -> tabulated iteration indices of one (kind, level, alone) slice."""
    rows, members = [], []
    for ci, code in enumerate(code_names):
        for it in slice_map.get(code, ()):
            j = index.get(it)
            if j is not None:
                rows.append(ci)
                members.append(j)
    return CSR.from_pairs(np.asarray(rows, np.int64), np.asarray(members, np.int64), len(code_names))


def membership(
    specs: Specs,
    catalog: IterationCatalog,
    charkeys: CharKeys,
    code_names: list[str],
    cls: str,
    level: int,
    stability: int,
) -> Membership:
    """Groups of every registered combo and ethnicity code at (geography class, level).

    Raises InputError if a characteristic key joins more groups than the stability S:
    the noise scale assumes each person is in at most S groups of a level (SPEC §1).
    """
    index = {it.code: i for i, it in enumerate(catalog.lists[(cls, level)])}
    alone = _code_lists(specs.race_alone(level), code_names, index)
    aoic = _code_lists(specs.race_aoic(level), code_names, index)
    eth = _code_lists(specs.ethnicity(level), code_names, index)

    offsets, members = _kernels.combo_groups(charkeys.combo_offsets, charkeys.combo_codes, aoic.offsets,
                                             aoic.members, alone.offsets, alone.members, len(index))
    race = CSR(offsets, members)

    combo_of, eth_of = charkeys.combo_of, charkeys.eth_of
    sizes = race.sizes()[combo_of] + eth.sizes()[eth_of]
    over = np.flatnonzero(sizes > stability)
    if len(over):
        k = int(over[0])
        codes_txt = ", ".join(code_names[c] for c in charkeys.combo(int(combo_of[k])))
        raise InputError([Problem(
            "race-and-ethnicity-code-to-iteration.txt", None, None, None,
            f"a person with race codes {codes_txt} and ethnicity code {code_names[eth_of[k]]} joins "
            f"{int(sizes[k])} level-{level} groups, more than the stability S = {stability} the noise is "
            f"calibrated for (S = h_r * max(2, r) + h_e, SPEC section 1)")], total=len(over))
    return Membership(race, eth)
