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

from calculators.levels import ITERATION_LEVELS, STATE_OR_ABOVE
from engine.errors import InputError, Problem
from engine.specs import Iteration, Specs

#: Geography classes: state-or-above levels skip COARSE_ONLY, sub-state skip DETAILED_ONLY.
STATE_CLASS, SUBSTATE_CLASS = "state", "substate"


def geo_class(geo: str) -> str:
    return STATE_CLASS if geo in STATE_OR_ABOVE else SUBSTATE_CLASS


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


@dataclass
class CharKeys:
    """Registry of characteristic keys: (race combo, ethnicity code index) -> id.

    A combo is the sorted tuple of a person's distinct race code indices.
    """

    combo_ids: dict[tuple[int, ...], int] = field(default_factory=dict)
    combos: list[tuple[int, ...]] = field(default_factory=list)
    ids: dict[tuple[int, int], int] = field(default_factory=dict)
    combo_of: list[int] = field(default_factory=list)
    eth_of: list[int] = field(default_factory=list)

    def get(self, race: tuple[int, ...], eth: int) -> int:
        c = self.combo_ids.get(race)
        if c is None:
            c = self.combo_ids[race] = len(self.combos)
            self.combos.append(race)
        key = (c, eth)
        i = self.ids.get(key)
        if i is None:
            i = self.ids[key] = len(self.combo_of)
            self.combo_of.append(c)
            self.eth_of.append(eth)
        return i

    def __len__(self) -> int:
        return len(self.combo_of)


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

    n_combos = len(charkeys.combos)
    lens = np.fromiter((len(c) for c in charkeys.combos), dtype=np.int64, count=n_combos)
    combo_of_code = np.repeat(np.arange(n_combos), lens)
    codes = np.fromiter((x for c in charkeys.combos for x in c), dtype=np.int64, count=int(lens.sum()))
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

    sizes = race.sizes()[np.asarray(charkeys.combo_of, np.int64)] + eth.sizes()[np.asarray(charkeys.eth_of, np.int64)]
    over = np.flatnonzero(sizes > stability)
    if len(over):
        k = int(over[0])
        codes_txt = ", ".join(code_names[c] for c in charkeys.combos[charkeys.combo_of[k]])
        raise InputError([Problem(
            "race-and-ethnicity-code-to-iteration.txt", None, None, None,
            f"a person with race codes {codes_txt} and ethnicity code {code_names[charkeys.eth_of[k]]} joins "
            f"{int(sizes[k])} level-{level} groups, more than the stability S = {stability} the noise is "
            f"calibrated for (S = h_r * max(2, r) + h_e, SPEC section 1)")], total=len(over))
    return Membership(race, eth)
