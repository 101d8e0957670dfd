"""Flat map: which population groups (iterations) each person joins, per iteration level.

Persons are summarised by their *characteristic key*: the set of distinct race codes
(codes after the first Null ignored; a *combo*) and the ethnicity code. SPEC §1:
- alone race iterations = the intersection over the combo's codes of their ALONE=True
  iterations; AOIC iterations = the union of their ALONE=False iterations;
- ethnicity iterations = those of the ethnicity code;
restricted to the iterations the geography level tabulates (state-or-above levels skip
COARSE_ONLY, sub-state levels skip DETAILED_ONLY). Race and ethnicity iterations have
distinct codes, so a key's groups are its combo's race groups followed by its
ethnicity code's groups. Everything is computed with array operations per combo,
never per person.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from calculators.levels import ITERATION_LEVELS
from engine.errors import InputError, Problem
from engine.inputs.specs import STATE_CLASS, SUBSTATE_CLASS, Iteration, Specs
from engine.inputs.specs import tabulation_class as geo_class


@dataclass
class IterationCatalog:
    """The tabulated iterations of each (geography class, iteration level), in file order."""

    specs: Specs
    lists: dict[tuple[str, int], list[Iteration]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for cls, geo in ((STATE_CLASS, "STATE"), (SUBSTATE_CLASS, "COUNTY")):
            for lvl in ITERATION_LEVELS:
                self.lists[(cls, lvl)] = self.specs.tabulated(geo, lvl)

    def iterations(self, geo: str, level: int) -> list[Iteration]:
        return self.lists[(geo_class(geo), level)]

    def codes(self, geo: str, level: int) -> np.ndarray:
        return np.array([it.code for it in self.iterations(geo, level)], dtype=object)

    def detailed_only(self, geo: str, level: int) -> np.ndarray:
        return np.array([it.detailed_only for it in self.iterations(geo, level)], dtype=bool)


class _Registry:
    """Dense ids for int64 keys, in order of first appearance (sorted arrays, no Python loop)."""

    def __init__(self) -> None:
        self.keys = np.zeros(0, np.int64)  # sorted
        self.ids = np.zeros(0, np.int64)
        self.n = 0

    def lookup(self, uniq: np.ndarray, next_id: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Ids of sorted distinct keys, registering new ones from `next_id` on; and the new mask."""
        pos = np.searchsorted(self.keys, uniq)
        hit = np.zeros(len(uniq), dtype=bool)
        inside = pos < len(self.keys)
        hit[inside] = self.keys[pos[inside]] == uniq[inside]
        out = np.empty(len(uniq), dtype=np.int64)
        out[hit] = self.ids[pos[hit]]
        new = ~hit
        n_new = int(new.sum())
        if n_new:
            start = self.n if next_id is None else next_id
            out[new] = np.arange(start, start + n_new)
            self.keys = np.insert(self.keys, pos[new], uniq[new])
            self.ids = np.insert(self.ids, pos[new], out[new])
            self.n += n_new
        return out, new


class CharKeys:
    """Registry of characteristic keys: (race combo, ethnicity code index) -> id.

    A combo is the sorted set of a person's distinct race code indices; combos are kept
    as CSR arrays (`combo_offsets`, `combo_codes`). Ids are assigned with array
    operations so that millions of distinct keys cost no Python loop.
    """

    def __init__(self, n_codes: int):
        self.n_codes = n_codes
        self._bits = max(1, int(n_codes).bit_length())
        #: Race codes (each + 1, 0 = none) packed into one int64 when they fit.
        self.per_word = max(1, 63 // self._bits)
        self._combos = _Registry()
        self._long: dict[tuple[int, int], int] = {}
        self._keys = _Registry()
        self._offsets = [np.zeros(1, np.int64)]
        self._codes: list[np.ndarray] = []
        self._combo_of: list[np.ndarray] = []
        self._eth_of: list[np.ndarray] = []
        self._n_combos = 0

    # ------------------------------------------------------------------ registering
    def _add_combos(self, rows: np.ndarray) -> None:
        """Append combos (rows of ascending code indices, -1 padded) to the CSR arrays."""
        lens = (rows >= 0).sum(axis=1)
        self._codes.append(rows[rows >= 0].astype(np.int64))
        self._offsets.append(self._offsets[-1][-1:] + np.cumsum(lens))
        self._n_combos += len(rows)

    def _pack(self, race: np.ndarray, cols: range) -> np.ndarray:
        packed = np.zeros(len(race), dtype=np.int64)
        for j in cols:
            packed = (packed << self._bits) | (race[:, j].astype(np.int64) + 1)
        return packed

    def _register(self, registry: _Registry, keys: np.ndarray, rows: np.ndarray | None = None
                  ) -> tuple[np.ndarray, np.ndarray]:
        """Ids of `keys` (per element) and the positions of first occurrences of new keys."""
        codes, uniq = pd.factorize(keys, sort=False)
        uniq = np.asarray(uniq, dtype=np.int64)
        order = np.argsort(uniq)
        next_id = self._n_combos if rows is not None else None
        ids_sorted, new_sorted = registry.lookup(uniq[order], next_id=next_id)
        ids = np.empty(len(uniq), dtype=np.int64)
        ids[order] = ids_sorted
        new = np.zeros(len(uniq), dtype=bool)
        new[order] = new_sorted
        # factorize numbers keys in order of first appearance: a code's first position
        # is where the running maximum of the codes grows.
        first = np.flatnonzero(np.r_[True, codes[1:] > np.maximum.accumulate(codes)[:-1]])
        new_first = first[new]
        # Registry ids of new keys were given in sorted-key order; CSR rows must follow them.
        new_first = new_first[np.argsort(ids[new])]
        return ids[codes], new_first

    def ids(self, race: np.ndarray, eth: np.ndarray) -> np.ndarray:
        """Characteristic-key id of every row; `race` (n, 8) ascending code indices, -1 padded."""
        n = len(race)
        combo = np.empty(n, dtype=np.int64)
        w = min(self.per_word, race.shape[1])
        fits = (race[:, w:] < 0).all(axis=1) if w < race.shape[1] else np.ones(n, bool)
        if fits.any():
            sub = race[fits]
            # Combo ids are CSR row numbers, shared with the rare long combos below.
            combo[fits], new_first = self._register(self._combos, self._pack(sub, range(w)), rows=sub)
            if len(new_first):
                self._add_combos(sub[new_first])
        if not fits.all():  # rare: more codes than fit in one word
            sub = race[~fits]
            lo, hi = self._pack(sub, range(w)), self._pack(sub, range(w, race.shape[1]))
            pairs, first, inv = np.unique(np.stack([lo, hi], axis=1), axis=0, return_index=True, return_inverse=True)
            ids = np.empty(len(pairs), dtype=np.int64)
            fresh = []
            for i, (a, b) in enumerate(pairs.tolist()):
                if (a, b) not in self._long:
                    self._long[(a, b)] = self._n_combos + len(fresh)
                    fresh.append(first[i])
                ids[i] = self._long[(a, b)]
            if fresh:
                self._add_combos(sub[np.array(fresh)])
            combo[~fits] = ids[inv.reshape(-1)]
        keys = combo * self.n_codes + eth.astype(np.int64)
        out, new_first = self._register(self._keys, keys)
        if len(new_first):
            self._combo_of.append(combo[new_first])
            self._eth_of.append(eth[new_first].astype(np.int64))
        return out

    # ------------------------------------------------------------------ reading
    @property
    def n_combos(self) -> int:
        return self._n_combos

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
        return self._keys.n


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

    n_combos = charkeys.n_combos
    offsets = charkeys.combo_offsets
    lens = np.diff(offsets)
    combo_of_code = np.repeat(np.arange(n_combos), lens)
    codes = charkeys.combo_codes
    # AOIC: the union of the codes' lists.
    pos, its = aoic.expand(codes)
    union = np.unique(combo_of_code[pos] * len(index) + its) if len(its) else np.zeros(0, np.int64)
    # Alone: iterations listed by every code of the combo (each code lists an iteration once).
    pos, its = alone.expand(codes)
    pairs, hits = np.unique(combo_of_code[pos] * len(index) + its, return_counts=True) if len(its) else (
        np.zeros(0, np.int64), np.zeros(0, np.int64))
    inter = pairs[hits == lens[pairs // max(1, len(index))]]
    both = np.concatenate([union, inter])
    race = CSR.from_pairs(both // max(1, len(index)), both % max(1, len(index)), n_combos)

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
