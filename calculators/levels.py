"""Structural constants of SafeTab-P shared by the calculators, the engine and the app.

Geography levels, iteration levels, population group levels, the config-key suffix of
each geography level, and the age bins of the sex x age tables (SPEC section 1).
"""

from __future__ import annotations

from typing import NamedTuple

#: US geography levels in the coterminous-priority order of SPEC section 1.
GEO_LEVELS_US: tuple[str, ...] = ("USA", "STATE", "COUNTY", "TRACT", "PLACE", "AIANNH")
#: Puerto Rico geography levels (PR runs separately; no USA and no AIANNH).
GEO_LEVELS_PR: tuple[str, ...] = ("PR-STATE", "PR-COUNTY", "PR-TRACT", "PR-PLACE")
GEO_LEVELS: tuple[str, ...] = GEO_LEVELS_US + GEO_LEVELS_PR

#: Geography levels that tabulate every iteration except COARSE_ONLY ones and that
#: carry the DETAILED_ONLY ("TotalOnly") groups; all others are sub-state levels.
STATE_OR_ABOVE: frozenset[str] = frozenset({"USA", "STATE", "PR-STATE"})

#: Iteration levels that are tabulated: 1 = Regional, 2 = Detailed (0 is never tabulated).
ITERATION_LEVELS: tuple[int, ...] = (1, 2)
ITERATION_LEVEL_NAMES: dict[int, str] = {0: "Major race", 1: "Regional", 2: "Detailed"}

#: Suffix of the config.json budget key of each geography level.
CONFIG_SUFFIX: dict[str, str] = {
    "USA": "usa",
    "STATE": "state",
    "COUNTY": "county",
    "TRACT": "tract",
    "PLACE": "place",
    "AIANNH": "aiannh",
    "PR-STATE": "pr_state",
    "PR-COUNTY": "pr_county",
    "PR-TRACT": "pr_tract",
    "PR-PLACE": "pr_place",
}

#: FIPS code of Puerto Rico, which runs with the PR-* levels.
PR_STATE_CODE = "72"

#: FIPS codes of the 50 states and DC, the only codes allowed in `state_filter_us`.
US_STATE_CODES: tuple[str, ...] = (
    "01", "02", "04", "05", "06", "08", "09", "10", "11", "12", "13", "15", "16",
    "17", "18", "19", "20", "21", "22", "23", "24", "25", "26", "27", "28", "29",
    "30", "31", "32", "33", "34", "35", "36", "37", "38", "39", "40", "41", "42",
    "44", "45", "46", "47", "48", "49", "50", "51", "53", "54", "55", "56",
)


class PopulationGroupLevel(NamedTuple):
    """A (geography level, iteration level) pair; each has its own budget rho_i."""

    geo: str
    iteration_level: int

    @property
    def key(self) -> str:
        """The `thresholds_p` key, e.g. ``"(COUNTY, 2)"``."""
        return f"({self.geo}, {self.iteration_level})"

    @property
    def budget_key(self) -> str:
        """The config.json budget key, e.g. ``privacy_budget_p_level_2_county``."""
        return f"privacy_budget_p_level_{self.iteration_level}_{CONFIG_SUFFIX[self.geo]}"

    @property
    def is_pr(self) -> bool:
        return self.geo in GEO_LEVELS_PR

    @property
    def is_state_or_above(self) -> bool:
        return self.geo in STATE_OR_ABOVE

    @property
    def label(self) -> str:
        return f"{self.geo} {ITERATION_LEVEL_NAMES[self.iteration_level]}"

    @classmethod
    def parse(cls, key: str) -> "PopulationGroupLevel":
        """Parse a `thresholds_p` key such as ``"(PR-TRACT, 1)"``; ValueError if unknown."""
        text = key.strip()
        if not (text.startswith("(") and text.endswith(")")):
            raise ValueError(f"{key!r} is not of the form \"(GEO, LEVEL)\"")
        parts = [p.strip() for p in text[1:-1].split(",")]
        if len(parts) != 2 or parts[0] not in GEO_LEVELS or parts[1] not in ("1", "2"):
            raise ValueError(
                f"{key!r} is not a population group level; expected a geography level "
                f"({', '.join(GEO_LEVELS)}) and an iteration level (1 or 2)"
            )
        return cls(parts[0], int(parts[1]))


#: Every population group level, US levels first, in the order of the config file.
POPULATION_GROUP_LEVELS: tuple[PopulationGroupLevel, ...] = tuple(
    PopulationGroupLevel(geo, lvl) for geo in GEO_LEVELS for lvl in ITERATION_LEVELS
)

# ---------------------------------------------------------------------------------
# Age bins (SPEC section 1): lower edges; each bin ends one below the next edge and
# the last ends at MAX_AGE. Age4 and age9 edges are subsets of the age23 edges, so
# the engine counts in age23 bins and sums them up.
MAX_AGE = 115
AGE4_EDGES: tuple[int, ...] = (0, 18, 45, 65)
AGE9_EDGES: tuple[int, ...] = (0, 5, 18, 25, 35, 45, 55, 65, 75)
AGE23_EDGES: tuple[int, ...] = (
    0, 5, 10, 15, 18, 20, 21, 22, 25, 30, 35, 40, 45, 50, 55, 60, 62, 65, 67, 70, 75, 80, 85,
)
#: Age edges of the sex x age table published at each stat level (0 = total only).
STAT_LEVEL_AGE_EDGES: dict[int, tuple[int, ...]] = {1: AGE4_EDGES, 2: AGE9_EDGES, 3: AGE23_EDGES}
STAT_LEVEL_NAMES: dict[int, str] = {0: "total", 1: "sex x age4", 2: "sex x age9", 3: "sex x age23"}
#: Number of stage-2 cells at each stat level: 1 total, or 2 sexes x the age bins.
STAT_LEVEL_CELLS: dict[int, int] = {0: 1, 1: 8, 2: 18, 3: 46}
SEXES: tuple[int, ...] = (1, 2)


def age_bins(edges: tuple[int, ...]) -> list[tuple[int, int]]:
    """(start, end) of each bin, inclusive, for the given lower edges."""
    ends = [e - 1 for e in edges[1:]] + [MAX_AGE]
    return list(zip(edges, ends))
