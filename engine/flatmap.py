"""Flat map: which population groups (iterations) each person joins, per iteration level.

Persons are summarised by their *characteristic key*: the set of distinct race codes
(codes after the first Null ignored) and the ethnicity code. Iterations depend only on
this key, the iteration level and whether the geography level is state-or-above
(SPEC §1), so they are computed once per key instead of once per person.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from calculators.levels import ITERATION_LEVELS
from engine.errors import InputError, Problem
from engine.specs import Iteration, Specs

#: Geography classes: state-or-above levels skip COARSE_ONLY, sub-state skip DETAILED_ONLY.
STATE_CLASS, SUBSTATE_CLASS = "state", "substate"


def geo_class(geo: str) -> str:
    from calculators.levels import STATE_OR_ABOVE

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
    """Registry of characteristic keys: (race code indices, ethnicity code index) -> id."""

    ids: dict[tuple[tuple[int, ...], int], int] = field(default_factory=dict)
    keys: list[tuple[tuple[int, ...], int]] = field(default_factory=list)

    def get(self, race: tuple[int, ...], eth: int) -> int:
        key = (race, eth)
        i = self.ids.get(key)
        if i is None:
            i = self.ids[key] = len(self.keys)
            self.keys.append(key)
        return i

    def __len__(self) -> int:
        return len(self.keys)


@dataclass(frozen=True)
class MembershipCSR:
    """Iterations (indices into the catalog list) of every characteristic key, as CSR."""

    offsets: np.ndarray  # int64, len = n_keys + 1
    members: np.ndarray  # int64 iteration indices

    def sizes(self) -> np.ndarray:
        return np.diff(self.offsets)


def membership(
    specs: Specs,
    catalog: IterationCatalog,
    charkeys: CharKeys,
    code_names: list[str],
    cls: str,
    level: int,
    stability: int,
) -> MembershipCSR:
    """CSR of the iterations each characteristic key joins at (geography class, level).

    Raises InputError if a key joins more groups than the stability S allows: the noise
    scale assumes each person is in at most S groups of a population group level.
    """
    index = {it.code: i for i, it in enumerate(catalog.lists[(cls, level)])}
    offsets = np.zeros(len(charkeys) + 1, dtype=np.int64)
    members: list[int] = []
    for k, (race, eth) in enumerate(charkeys.keys):
        its = specs.person_iterations(frozenset(code_names[c] for c in race), code_names[eth], level)
        idx = sorted(index[c] for c in its if c in index)
        if len(idx) > stability:
            codes = ", ".join(code_names[c] for c in race)
            raise InputError([Problem(
                "race-and-ethnicity-code-to-iteration.txt", None, None, None,
                f"a person with race codes {codes} and ethnicity code {code_names[eth]} joins "
                f"{len(idx)} level-{level} groups, more than the stability S = {stability} the "
                f"noise is calibrated for (S = h_r * max(2, r) + h_e, SPEC section 1)")])
        members.extend(idx)
        offsets[k + 1] = len(members)
    return MembershipCSR(offsets, np.asarray(members, dtype=np.int64))
