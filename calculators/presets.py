"""Preset plans: the 2020 production configuration, computed from its MOE targets (SPEC §3).

The 2020 level budgets are not copied from the published file: they are recomputed
from the production MOE targets (one stage-2 cell) with the design paper's inversion
rho = 1.96^2 * S / (2 * MOE^2) / (1 - gamma), S = 9, gamma = 0.1, rounded to the
3 decimals of the published config (SPEC §2, §3). Thresholds are the published ones.
"""

from __future__ import annotations

from typing import Any

from calculators import budget
from calculators.config import SafeTabConfig
from calculators.levels import (
    POPULATION_GROUP_LEVELS,
    STATE_OR_ABOVE,
    US_STATE_CODES,
    PopulationGroupLevel,
)

__all__ = [
    "PRODUCTION_GAMMA",
    "PRODUCTION_MAX_RACE_CODES",
    "PRODUCTION_MOE_TARGETS",
    "PRODUCTION_THRESHOLDS",
    "PRODUCTION_ZERO_SUPPRESSION_CHANCE",
    "production_2020",
    "production_budget",
]

PRODUCTION_GAMMA = 0.1
PRODUCTION_MAX_RACE_CODES = 8
PRODUCTION_ZERO_SUPPRESSION_CHANCE = 0.9999
#: Decimals of the budgets in the published config.json.
PRODUCTION_BUDGET_DECIMALS = 3


def _moe_target(level: PopulationGroupLevel) -> int | None:
    if level.iteration_level == 2:
        return 3 if level.geo in STATE_OR_ABOVE else 11
    return None if level.geo == "AIANNH" else 50


#: MOE target of one stage-2 cell behind each 2020 production budget (SPEC §3):
#: 3 for USA / STATE / PR-STATE Detailed, 11 for every sub-state Detailed level
#: (AIANNH and PR-* included), 50 for every Regional level; None for (AIANNH, 1),
#: which is not tabulated (rho = 0).
PRODUCTION_MOE_TARGETS: dict[PopulationGroupLevel, int | None] = {
    lvl: _moe_target(lvl) for lvl in POPULATION_GROUP_LEVELS
}

_REGIONAL = [4971, 19971, 149971]
_DETAILED_STATE = [471, 971, 6971]
_DETAILED_SUBSTATE = [971, 4971, 19971]

#: The published `thresholds_p` of SPEC §3 (all 20 keys; "(AIANNH, 1)" is unused).
PRODUCTION_THRESHOLDS: dict[str, list[int]] = {
    lvl.key: list(
        _REGIONAL
        if lvl.iteration_level == 1
        else _DETAILED_STATE
        if lvl.geo in STATE_OR_ABOVE
        else _DETAILED_SUBSTATE
    )
    for lvl in POPULATION_GROUP_LEVELS
}


def production_budget(level: PopulationGroupLevel) -> float:
    """2020 budget of one level (SPEC §3): round(rho_level_for_moe(target, S, gamma), 3)
    with S = stability(8) = 9 and gamma = 0.1; 0 where the target is None."""
    target = PRODUCTION_MOE_TARGETS[level]
    if target is None:
        return 0.0
    s = budget.stability(PRODUCTION_MAX_RACE_CODES)
    rho = float(budget.rho_level_for_moe(target, s, PRODUCTION_GAMMA))
    return round(rho, PRODUCTION_BUDGET_DECIMALS)


def production_2020() -> SafeTabConfig:
    """The 2020 production plan (SPEC §3), computed: budgets from
    PRODUCTION_MOE_TARGETS (`production_budget`), thresholds_p as published,
    gamma 0.1, max_race_codes 8, zero_suppression_chance 0.9999, negative counts
    allowed, both runs on, reader "cef", every US state, zCDP."""
    data: dict[str, Any] = {"max_race_codes": PRODUCTION_MAX_RACE_CODES}
    for lvl in POPULATION_GROUP_LEVELS:
        data[lvl.budget_key] = production_budget(lvl)
    data.update(
        {
            "privacy_budget_p_stage_1_fraction": PRODUCTION_GAMMA,
            "thresholds_p": {k: list(v) for k, v in PRODUCTION_THRESHOLDS.items()},
            "zero_suppression_chance": PRODUCTION_ZERO_SUPPRESSION_CHANCE,
            "allow_negative_counts": True,
            "run_us": True,
            "run_pr": True,
            "reader": "cef",
            "state_filter_us": list(US_STATE_CODES),
            "privacy_defn": "zcdp",
        }
    )
    return SafeTabConfig.from_dict(data, source="presets.production_2020")
