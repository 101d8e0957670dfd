"""The 2020 production plan computed from its MOE targets equals the published file."""

from __future__ import annotations

from pathlib import Path

import pytest

from calculators import budget, presets
from calculators.config import SafeTabConfig
from calculators.levels import POPULATION_GROUP_LEVELS, US_STATE_CODES, PopulationGroupLevel

REFERENCE = (
    Path(__file__).resolve().parents[3] / "shared" / "reference" / "safetab-p-2020" / "config.json"
)


def test_production_2020_equals_published_config() -> None:
    if not REFERENCE.is_file():
        pytest.skip(f"reference configuration not present at {REFERENCE}")
    published = SafeTabConfig.read(REFERENCE)
    computed = presets.production_2020()
    assert computed.to_dict() == published.to_dict()
    assert computed == published


def test_production_budgets_follow_moe_targets() -> None:
    cfg = presets.production_2020()
    S = budget.stability(cfg.max_race_codes)
    assert S == 9
    seen = set()
    for lvl in POPULATION_GROUP_LEVELS:
        target = presets.PRODUCTION_MOE_TARGETS[lvl]
        if target is None:
            assert lvl == PopulationGroupLevel("AIANNH", 1) and cfg.rho(lvl) == 0
            continue
        seen.add(target)
        assert cfg.rho(lvl) == round(1.96**2 * 9 / (2 * target**2) / 0.9, 3)
        # the rounded budget still meets (or nearly meets) the design-paper target
        assert abs(budget.moe_for_rho(cfg.rho(lvl), S, cfg.gamma) - target) <= 2
    assert seen == {3, 11, 50}
    assert {cfg.rho(PopulationGroupLevel(g, 2)) for g in ("USA", "STATE", "PR-STATE")} == {2.134}
    assert {
        cfg.rho(PopulationGroupLevel(g, 2))
        for g in ("COUNTY", "TRACT", "PLACE", "AIANNH", "PR-COUNTY", "PR-TRACT", "PR-PLACE")
    } == {0.159}
    assert {
        cfg.rho(PopulationGroupLevel(g, 1))
        for g in (
            "USA",
            "STATE",
            "COUNTY",
            "TRACT",
            "PLACE",
            "PR-STATE",
            "PR-COUNTY",
            "PR-TRACT",
            "PR-PLACE",
        )
    } == {0.008}


def test_production_other_keys() -> None:
    cfg = presets.production_2020()
    assert len(cfg.thresholds_p) == 20 and "(AIANNH, 1)" in cfg.thresholds_p
    assert cfg.thresholds(PopulationGroupLevel("STATE", 2)) == (471, 971, 6971)
    assert cfg.thresholds(PopulationGroupLevel("PR-TRACT", 2)) == (971, 4971, 19971)
    assert cfg.thresholds(PopulationGroupLevel("PLACE", 1)) == (4971, 19971, 149971)
    assert cfg.gamma == 0.1 and cfg.max_race_codes == 8 and cfg.zero_suppression_chance == 0.9999
    assert cfg.allow_negative_counts and cfg.run_us and cfg.run_pr
    assert cfg.reader == "cef" and cfg.privacy_defn == "zcdp"
    assert cfg.state_filter_us == list(US_STATE_CODES) and len(cfg.state_filter_us) == 51
    # callers get fresh objects: editing one plan does not leak into the next
    cfg.thresholds_p["(USA, 1)"].append(0)
    assert presets.production_2020().thresholds_p["(USA, 1)"] == [4971, 19971, 149971]
