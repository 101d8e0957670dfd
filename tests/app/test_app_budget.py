"""Budget and MOE planner: MOE <-> rho, r, gamma, presets, comparison."""

from __future__ import annotations

import pytest

from calculators import budget
from calculators.levels import POPULATION_GROUP_LEVELS, PopulationGroupLevel
from calculators.presets import production_2020
from tests.app.conftest import SAMPLE, config, frame, metric, needs_sample, open_app, texts

COUNTY2 = PopulationGroupLevel("COUNTY", 2)
USA1 = PopulationGroupLevel("USA", 1)
ROW = {lvl: i for i, lvl in enumerate(POPULATION_GROUP_LEVELS)}


def _row(at, lvl):
    return at.data_editor[0].value.iloc[ROW[lvl]]


def _edit(at, edits):
    key = f"planner_{at.session_state.get('planner_version', 0)}"
    at.session_state[key] = {"edited_rows": edits, "added_rows": [], "deleted_rows": []}
    at.run()
    assert not at.exception, [e.value for e in at.exception]


def test_changing_r_changes_s_and_every_moe():
    at = open_app("budget")
    assert "Stability **S = 9**" in texts(at)
    assert _row(at, COUNTY2)["MOE exact"] == 11
    at.slider(key="w_r").set_value(3).run()
    assert "Stability **S = 4**" in texts(at)
    assert config(at).max_race_codes == 3
    for lvl in (COUNTY2, USA1, PopulationGroupLevel("USA", 2)):
        row = _row(at, lvl)
        assert row["MOE exact"] == int(budget.moe_for_rho(config(at).rho(lvl), 4, 0.1, exact=True))
        assert row["MOE ⌊1.96σ⌋"] == int(budget.moe_for_rho(config(at).rho(lvl), 4, 0.1))
    assert _row(at, COUNTY2)["MOE exact"] < 11
    r_table = frame(at, "r", "S")
    assert list(r_table["S"]) == [3, 3, 4, 5, 6, 7, 8, 9]


def test_editing_a_moe_target_sets_rho():
    at = open_app("budget")
    _edit(at, {ROW[COUNTY2]: {"MOE target": 8}})
    want = float(budget.rho_level_for_moe(8, 9, 0.1))
    assert config(at).rho(COUNTY2) == pytest.approx(want)
    row = _row(at, COUNTY2)
    assert row["ρ"] == pytest.approx(want) and row["MOE target"] == 8 and row["MOE ⌊1.96σ⌋"] == 8
    assert metric(at, "ρ, US run") == f"{budget.plan_totals(config(at)).us:.4g}"
    assert metric(at, "ρ, US run") != "4.944"


def test_editing_rho_sets_the_moe():
    at = open_app("budget")
    _edit(at, {ROW[USA1]: {"ρ": 0.05}})
    assert config(at).rho(USA1) == 0.05
    row = _row(at, USA1)
    assert row["MOE target"] == int(budget.moe_for_rho(0.05, 9, 0.1)) == row["MOE ⌊1.96σ⌋"]
    assert row["MOE exact"] == int(budget.moe_for_rho(0.05, 9, 0.1, exact=True))


def test_exact_inversion_when_chosen():
    at = open_app("budget")
    at.radio(key="w_method").set_value("exact").run()
    assert "exact discrete-Gaussian MOE" in texts(at)
    _edit(at, {ROW[COUNTY2]: {"MOE target": 11}})
    assert config(at).rho(COUNTY2) == pytest.approx(float(budget.rho_level_for_exact_moe(11, 9, 0.1)))
    assert _row(at, COUNTY2)["MOE exact"] == 11


def test_bad_target_is_a_message_not_an_exception():
    at = open_app("budget")
    _edit(at, {ROW[COUNTY2]: {"MOE target": 0}})
    assert any("COUNTY Detailed" in e.value and "whole number" in e.value for e in at.error)
    assert config(at).rho(COUNTY2) == 0.159


def test_gamma_change_shows_missed_targets_and_recomputes():
    at = open_app("budget")
    at.number_input(key="w_gamma").set_value(0.5).run()
    assert config(at).gamma == 0.5
    assert any("miss their MOE target" in w.value for w in at.warning)
    at.button(key="resolve").click().run()
    assert not any("miss their MOE target" in w.value for w in at.warning)
    assert config(at).rho(COUNTY2) == pytest.approx(float(budget.rho_level_for_moe(11, 9, 0.5)))


@needs_sample
def test_presets():
    at = open_app("budget")
    at.button(key="preset_sample").click().run()
    assert "sample-data plan" in texts(at)
    from calculators.config import SafeTabConfig

    assert config(at).to_dict() == SafeTabConfig.read(SAMPLE / "params" / "config.json").to_dict()
    at.button(key="preset_production").click().run()
    assert config(at).to_dict() == production_2020().to_dict()
    # plans side by side live on the Scenarios page (tests/app/test_app_scenarios.py)
