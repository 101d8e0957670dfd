"""Budget and MOE planner: MOE <-> rho, typed values, r, gamma, privacy definition,
presets, comparison."""

from __future__ import annotations

import json

import pytest

from calculators import budget, geometric
from calculators.levels import POPULATION_GROUP_LEVELS, PopulationGroupLevel
from calculators.presets import production_2020
from tests.app.conftest import SAMPLE, config, frame, metric, needs_sample, open_app, shown, texts
from ui.core import planner

COUNTY2 = PopulationGroupLevel("COUNTY", 2)
USA1 = PopulationGroupLevel("USA", 1)
USA2 = PopulationGroupLevel("USA", 2)
ROW = {lvl: i for i, lvl in enumerate(POPULATION_GROUP_LEVELS)}


def _row(at, lvl):
    return at.data_editor[0].value.iloc[ROW[lvl]]


def _edit(at, edits):
    key = f"planner_{at.session_state.get('planner_version', 0)}"
    at.session_state[key] = {"edited_rows": edits, "added_rows": [], "deleted_rows": []}
    at.run()
    assert not at.exception, [e.value for e in at.exception]


def _verdict_label(at) -> str:
    return json.loads(at.data_editor[0].proto.columns)[planner.STATUS]["label"]


def _errors(at) -> str:
    return "\n".join(shown(e.value) for e in at.error)


def test_changing_r_changes_s_and_every_moe():
    at = open_app("budget")
    assert "Stability **S = 9**" in texts(at)
    assert _row(at, COUNTY2)[planner.MOE_EXACT] == 11
    at.slider(key="w_r").set_value(3).run()
    assert "Stability **S = 4**" in texts(at)
    assert config(at).max_race_codes == 3
    for lvl in (COUNTY2, USA1, USA2):
        row = _row(at, lvl)
        assert row[planner.MOE_EXACT] == int(budget.moe_for_rho(config(at).rho(lvl), 4, 0.1, exact=True))
        assert row[planner.MOE_BOUND] == int(budget.moe_for_rho(config(at).rho(lvl), 4, 0.1))
    assert _row(at, COUNTY2)[planner.MOE_EXACT] < 11
    at.session_state["pl_tabs"] = "Race multiplicity r"
    at.run()
    r_table = frame(at, "r", "S")
    assert list(r_table["S"]) == [3, 3, 4, 5, 6, 7, 8, 9]
    assert r_table.loc[r_table["r"] == 3, "Current"].item() == "◀ this plan"


def test_a_typed_budget_is_shown_exactly_as_used():
    at = open_app("budget")
    _edit(at, {ROW[COUNTY2]: {planner.RHO: "0.1234567"}})
    assert config(at).rho(COUNTY2) == 0.1234567
    assert _row(at, COUNTY2)[planner.RHO] == "0.1234567"  # not 0.123457


def test_editing_a_moe_target_sets_rho_by_the_exact_moe():
    at = open_app("budget")
    assert at.radio(key="w_method").value == planner.EXACT  # the default
    _edit(at, {ROW[COUNTY2]: {planner.TARGET: "8"}})
    want = planner.round_up(budget.rho_level_for_exact_moe(8, 9, 0.1))
    assert config(at).rho(COUNTY2) == pytest.approx(want)
    row = _row(at, COUNTY2)
    assert float(row[planner.RHO]) == config(at).rho(COUNTY2) and row[planner.TARGET] == "8"  # shown as used
    assert row[planner.MOE_EXACT] == 8 and row[planner.STATUS] == "✓ meets (8 ≤ 8)"
    assert metric(at, "ρ of the release") == f"{budget.plan_totals(config(at)).us:.4g}" != "4.944"


def test_editing_rho_sets_the_moe():
    at = open_app("budget")
    _edit(at, {ROW[USA1]: {planner.RHO: "0.05"}})
    assert config(at).rho(USA1) == 0.05
    row = _row(at, USA1)
    assert row[planner.TARGET] == str(int(budget.moe_for_rho(0.05, 9, 0.1, exact=True))) == str(row[planner.MOE_EXACT])
    assert row[planner.EPS] == pytest.approx(float(budget.epsilon_tight(0.05, 1e-10)))


@pytest.mark.parametrize("column,typed,why", [
    (planner.TARGET, "2.5", "not a whole number"),
    (planner.TARGET, "-5", "below 1 person"),
    (planner.TARGET, "0", "below 1 person"),
    (planner.TARGET, "1e12", "above 1,000,000"),
    (planner.TARGET, "2,5", "use a point for decimals"),
    (planner.TARGET, "eleven", "not a number"),
    (planner.RHO, "-1", "negative"),
    (planner.TARGET, "10000", "below the smallest budget the engine accepts"),
    (planner.RHO, "1e300", "above 1e+06, the largest budget the engine accepts"),
    (planner.RHO, "1e-7", "below 1e-06, the smallest budget the engine accepts"),
    (planner.RHO, "nan", "not a finite number"),
    (planner.RHO, "", "empty"),
])
def test_a_typed_value_is_used_as_typed_or_refused_with_a_message(column, typed, why):
    at = open_app("budget")
    before = config(at).to_dict()
    _edit(at, {ROW[COUNTY2]: {column: typed}})
    errors = _errors(at)
    assert "COUNTY Detailed" in errors and repr(typed) in errors and why in errors, errors
    assert config(at).to_dict() == before  # nothing changed, silently or not
    row = _row(at, COUNTY2)
    assert row[planner.TARGET] == "11" and row[planner.RHO] == "0.159"
    # the message stays next to the table until the next edit, which clears it
    at.run()
    assert why in _errors(at)
    _edit(at, {ROW[COUNTY2]: {planner.TARGET: "12"}})
    assert not at.error and _row(at, COUNTY2)[planner.TARGET] == "12"


def test_typed_numbers_in_other_notations_are_used_as_typed():
    at = open_app("budget")
    _edit(at, {ROW[COUNTY2]: {planner.RHO: "1.5e-1"}, ROW[USA2]: {planner.TARGET: "1,000"}})
    assert config(at).rho(COUNTY2) == 0.15
    assert _row(at, USA2)[planner.TARGET] == "1000" and _row(at, USA2)[planner.MOE_EXACT] <= 1000
    _edit(at, {ROW[COUNTY2]: {planner.RHO: "0"}})
    assert config(at).rho(COUNTY2) == 0 and not _row(at, COUNTY2)[planner.ON]


def test_an_absurd_budget_is_used_with_a_warning_that_says_what_it_means():
    at = open_app("budget")
    _edit(at, {ROW[USA2]: {planner.RHO: "1e6"}})
    assert config(at).rho(USA2) == 1e6
    warning = "\n".join(shown(w.value) for w in at.warning)
    assert "USA Detailed" in warning and "essentially no privacy" in warning and "ε ≈ 1.01e+06" in warning
    assert _row(at, USA2)[planner.MOE_EXACT] == 0
    _edit(at, {ROW[USA2]: {planner.RHO: "1e-6"}})
    assert config(at).rho(USA2) == 1e-6 and "swamps" in "\n".join(shown(w.value) for w in at.warning)
    # beyond the engine's range: refused next to the table, the plan unchanged
    _edit(at, {ROW[USA2]: {planner.RHO: "1e8"}})
    assert config(at).rho(USA2) == 1e-6
    assert any("'1e8' is above 1e+06, the largest budget the engine accepts" in shown(e.value) for e in at.error)


def test_the_verdict_says_which_moe_it_uses():
    at = open_app("budget")
    at.radio(key="w_method").set_value(planner.BOUND).run()
    _edit(at, {ROW[COUNTY2]: {planner.RHO: "0.16"}})
    bound, exact = int(budget.moe_for_rho(0.16, 9, 0.1)), int(budget.moe_for_rho(0.16, 9, 0.1, exact=True))
    assert (bound, exact) == (10, 11)  # the design bound is one below the true 95% MOE here
    row = _row(at, COUNTY2)
    assert row[planner.TARGET] == "10"
    assert row[planner.STATUS] == "✓ 10 ≤ 10; exact 11"  # never a bare "meets" above the exact MOE
    assert _verdict_label(at) == planner.VERDICT_LABEL[planner.BOUND]  # the column says which rule it uses
    # the exact rule (the default) calls the same budget a miss and offers the fix
    at.radio(key="w_method").set_value(planner.EXACT).run()
    assert _row(at, COUNTY2)[planner.STATUS] == "✗ misses (11 > 10)"
    assert _verdict_label(at) == planner.VERDICT_LABEL[planner.EXACT]
    assert any("miss their MOE target" in shown(w.value) for w in at.warning)
    at.button(key="resolve").click().run()
    assert _row(at, COUNTY2)[planner.STATUS] == "✓ meets (10 ≤ 10)"
    assert config(at).rho(COUNTY2) == pytest.approx(planner.round_up(budget.rho_level_for_exact_moe(10, 9, 0.1)))


def test_changing_gamma_offers_to_rederive_with_a_before_after_view():
    at = open_app("budget")
    at.text_input(key="w_gamma").input("0.5").run()
    assert config(at).gamma == 0.5 and config(at).rho(COUNTY2) == 0.159  # offered, not applied
    assert "You changed γ 0.1 → 0.5" in texts(at)
    # the two columns say what they are: the budgets kept, the budgets re-derived (issue 40 item 5)
    change = frame(at, "Budget ρ kept", "Budget ρ re-derived", "MOE kept", "MOE re-derived")
    county = change[change["Level"] == "COUNTY Detailed"].iloc[0]
    want = planner.round_up(budget.rho_level_for_exact_moe(11, 9, 0.5))
    assert county["Budget ρ kept"] == 0.159 and county["Budget ρ re-derived"] == pytest.approx(want)
    assert county["MOE re-derived"] == 11 < county["MOE kept"]
    assert any("“Kept”: budgets kept, the plan now" in c.value for c in at.caption)
    at.button(key="chg_apply").click().run()
    assert config(at).rho(COUNTY2) == pytest.approx(want)
    assert not any("You changed" in m.value for m in at.markdown)


def test_changing_r_offer_can_be_declined_and_can_rederive_thresholds():
    at = open_app("budget")
    at.slider(key="w_r").set_value(4).run()
    assert "You changed r 8 → 4" in texts(at)
    at.button(key="chg_keep").click().run()
    assert "You changed" not in texts(at) and config(at).max_race_codes == 4 and config(at).rho(COUNTY2) == 0.159
    at.slider(key="w_r").set_value(2).run()
    at.checkbox(key="rederive_th").check().run()
    at.text_input(key="rederive_rel").input("20.0").run()
    change = frame(at, "Θ before", "Θ after")
    assert (change["Θ before"] != change["Θ after"]).any()
    at.button(key="chg_apply").click().run()
    cfg = config(at)
    m = int(budget.moe_for_rho(cfg.rho(COUNTY2), 3, 0.1, exact=True))
    assert m == 11 and cfg.thresholds(COUNTY2)[0] == -(-8 * m * 100 // 20)  # ceil(8 * MOE / 0.2)


def test_switching_to_pure_dp_converts_the_budgets_to_the_same_targets():
    at = open_app("budget")
    at.radio(key="w_privacy_defn").set_value("puredp").run()
    cfg = config(at)
    assert cfg.privacy_defn == "puredp"
    eps = cfg.rho(COUNTY2)
    assert eps == pytest.approx(planner.round_up(budget.rho_level_for_exact_moe(11, 9, 0.1, noise="geometric")))
    assert geometric.moe(9 / (0.9 * eps)) <= 11
    table = at.data_editor[0].value
    on = table[table[planner.ON]]
    assert on[planner.STATUS].str.startswith("✓").all()  # no level misses its target after the switch
    assert "Privacy definition changed" in texts(at)
    change = frame(at, "Budget ρ before", "Budget ε after")
    assert len(change) == 19
    at.button(key="chg_undo").click().run()
    assert config(at).privacy_defn == "zcdp" and config(at).rho(COUNTY2) == 0.159


def test_a_tab_runs_only_when_open():
    at = open_app("budget")
    assert not [d for d in at.dataframe if "Current" in d.value.columns]  # the hidden tab did not run
    at.session_state["pl_tabs"] = "Race multiplicity r"
    at.run()
    t = frame(at, "r", "S", "Current")
    assert list(t["S"]) == [3, 3, 4, 5, 6, 7, 8, 9]
    assert t.loc[t["r"] == config(at).max_race_codes, "Current"].item() == "◀ this plan"


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


def test_tables_show_a_dash_for_missing_values():
    at = open_app("budget")
    assert at.data_editor[0].proto.placeholder == "—"
    off = _row(at, PopulationGroupLevel("AIANNH", 1))
    assert not off[planner.ON] and off[planner.STATUS] == "off (not tabulated)"
