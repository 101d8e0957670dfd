"""Overview page: the live summary equals the calculators; shared state shows here."""

from __future__ import annotations

import pytest

from calculators import budget
from calculators.presets import production_2020
from tests.app.conftest import frame, metric, open_app, shown, texts
from ui.core import planner


def test_opens_on_the_2020_plan_with_its_numbers():
    at = open_app()
    t = budget.plan_totals(production_2020())
    assert metric(at, "ρ, US run") == f"{t.us:.4g}" == "4.944"
    assert metric(at, "ρ, Puerto Rico run") == "2.643"
    assert metric(at, "ρ, whole release") == "4.944"
    assert metric(at, "ρ, bounded") == "9.888"
    assert metric(at, "ε at δ = 1e-10, classic") == f"{float(budget.epsilon_classic(t.release, 1e-10)):.2f}"
    assert metric(at, "ε at δ = 1e-10, tight") == f"{float(budget.epsilon_tight(t.release, 1e-10)):.2f}"
    assert metric(at, "Levels tabulated") == "19 of 20"
    assert "2020 production plan" in texts(at)
    moe = frame(at, "Stage-1 total MOE (exact, not published)")
    county = moe[(moe["Geography"] == "COUNTY") & (moe["Iterations"] == "Detailed")].iloc[0]
    assert (county["MOE target"], county[planner.MOE_EXACT], county[planner.MOE_BOUND]) == (11, 11, 10)
    assert county["ε of the level (δ = 1e-10)"] == pytest.approx(float(budget.epsilon_tight(0.159, 1e-10)))
    assert set(moe.loc[moe["Iterations"] == "Regional", "MOE target"]) == {50}
    usa = moe[(moe["Geography"] == "USA") & (moe["Iterations"] == "Detailed")].iloc[0]
    assert (usa[planner.MOE_EXACT], usa["ρ"]) == (3, 2.134)
    assert len(moe) == 19
    # the caption's figures for the 2020 budgets say which MOE they are: the COUNTY Detailed
    # budget 0.159 gives an exact MOE of 11 but a design bound floor(1.96 sigma) of 10
    assert "give exact MOEs of 3, 11 and 49, and ⌊1.96σ⌋ of 3, 10 and 49" in texts(at)
    for lvl, exact, bound in (("USA", 3, 3), ("COUNTY", 11, 10)):
        row = moe[(moe["Geography"] == lvl) & (moe["Iterations"] == "Detailed")].iloc[0]
        assert (row[planner.MOE_EXACT], row[planner.MOE_BOUND]) == (exact, bound)
    regional = moe[(moe["Geography"] == "COUNTY") & (moe["Iterations"] == "Regional")].iloc[0]
    assert (regional[planner.MOE_EXACT], regional[planner.MOE_BOUND]) == (49, 49)
    dot = at.get("graphviz_chart")[0].proto.spec
    assert "γ = 0.1" in dot and "S = 9" in dot


def test_delta_changes_epsilon():
    at = open_app()
    at.select_slider(key="w_delta").set_value(1e-6).run()
    assert metric(at, "ε at δ = 1e-06, classic") == f"{float(budget.epsilon_classic(4.944, 1e-6)):.2f}"
    assert metric(at, "ε at δ = 1e-06, tight") == f"{float(budget.epsilon_tight(4.944, 1e-6)):.2f}"


def test_a_change_on_the_planner_shows_on_the_overview():
    at = open_app("budget")
    at.slider(key="w_r").set_value(3).run()
    at.toggle(key="w_run_pr").set_value(False).run()
    at.switch_page("app_pages/safetab/overview.py").run()
    assert "S = 4" in texts(at) and "r = 3" in texts(at)
    assert metric(at, "ρ, Puerto Rico run") == "0"
    assert metric(at, "Levels tabulated") == "11 of 20"
    sidebar = "\n".join(shown(m.value) for m in at.sidebar.markdown)
    assert "2020 production plan, edited" in sidebar and "11 of 20 levels on" in sidebar
    moe = frame(at, "Stage-1 total MOE (exact, not published)")
    county = moe[(moe["Geography"] == "COUNTY") & (moe["Iterations"] == "Detailed")].iloc[0]
    assert county[planner.MOE_EXACT] == int(budget.moe_for_rho(0.159, 4, 0.1, exact=True))
