"""Any number of plans side by side (ui.committee.comparison) and the charts that overlay them
(ui.committee.scenario_charts): every figure checked against the calculators directly."""

from __future__ import annotations

import pytest

from calculators import budget, geometric, suppression
from calculators.levels import POPULATION_GROUP_LEVELS, PopulationGroupLevel
from calculators.presets import production_2020
from ui.committee import comparison, scenario_charts
from ui.core import planner
from ui.committee.comparison import DIFFERS, Plan

COUNTY2 = PopulationGroupLevel("COUNTY", 2)
USA2 = PopulationGroupLevel("USA", 2)
ROW = POPULATION_GROUP_LEVELS.index(COUNTY2)


@pytest.fixture(scope="module")
def plans():
    prod = production_2020()
    return [
        Plan("2020", prod, planner.production_targets()),
        Plan("r = 3", prod.updated(max_race_codes=3)),
        Plan("county 0.3", prod.with_rho(COUNTY2, 0.3), planner.production_targets()),
        Plan("pure", prod.updated(privacy_defn="puredp")),
    ]


def test_every_measure_matches_the_calculators(plans):
    delta = 1e-10
    moe = comparison.by_level(plans, "moe_exact").iloc[ROW]
    assert moe["2020"] == budget.moe_for_rho(0.159, 9, 0.1, exact=True) == 11
    assert moe["r = 3"] == budget.moe_for_rho(0.159, 4, 0.1, exact=True)
    assert moe["county 0.3"] == budget.moe_for_rho(0.3, 9, 0.1, exact=True)
    assert moe["pure"] == geometric.moe(9 / (0.9 * 0.159))
    bound = comparison.by_level(plans, "moe_bound").iloc[ROW]
    assert bound["r = 3"] == budget.moe_for_rho(0.159, 4, 0.1, exact=False)
    eps = comparison.by_level(plans, "epsilon", delta=delta).iloc[ROW]
    assert eps["2020"] == pytest.approx(budget.epsilon_tight(0.159, delta))
    assert eps["pure"] == pytest.approx(0.159)  # a pure-DP budget is its epsilon
    T = comparison.by_level(plans, "suppression").iloc[ROW]
    assert T["2020"] == suppression.threshold(budget.sigma2_stage2(0.159, 0.1, 9), 0.9999) == 21
    assert T["county 0.3"] == suppression.threshold(budget.sigma2_stage2(0.3, 0.1, 9), 0.9999)
    assert T["pure"] == suppression.threshold(9 / (0.9 * 0.159), 0.9999, noise="geometric")
    usa = comparison.by_level(plans, "suppression").iloc[POPULATION_GROUP_LEVELS.index(USA2)]
    assert usa[["2020", "r = 3"]].isna().all()  # never suppressed at state and above
    th = comparison.by_level(plans, "thresholds").iloc[ROW]
    assert th["2020"] == "971, 4,971, 19,971"
    assert comparison.by_level(plans, "target").iloc[ROW]["2020"] == 11


def test_differs_marks_exactly_the_rows_that_differ(plans):
    two = plans[:1] + plans[2:3]  # only (COUNTY, 2) differs
    for m in ("budget", "epsilon", "moe_exact", "suppression"):
        df = comparison.by_level(two, m)
        assert list(df.index[df[DIFFERS]]) == [ROW], m
    assert not comparison.by_level(two, "thresholds")[DIFFERS].any()
    counts = comparison.count_differences(two)
    assert counts["levels"] == 1 and counts["keys"] == 1
    keys = comparison.config_keys(two)
    assert list(keys.loc[keys[DIFFERS], "Key"]) == ["privacy_budget_p_level_2_county"]


def test_a_level_switched_off_is_empty_not_zero(plans):
    off = Plan("no county", plans[0].config.with_rho(COUNTY2, 0.0))
    df = comparison.by_level([plans[0], off], "moe_exact")
    assert df.iloc[ROW]["no county"] is None or df["no county"].isna().iloc[ROW]
    assert comparison.by_level([plans[0], off], "budget").iloc[ROW]["no county"] == 0.0


def test_summary_puts_both_privacy_definitions_on_one_page(plans):
    s = comparison.summary(plans).set_index("Quantity")
    assert s.loc["Privacy definition", "pure"].startswith("pure DP")
    assert s.loc["Stability S", "r = 3"] == "4" and s.loc["Stability S", "2020"] == "9"
    assert s.loc["Budget, release = max(US, PR)", "2020"] == "4.944"
    assert bool(s.loc["Stability S", DIFFERS]) and not bool(s.loc["Stage-1 fraction γ", DIFFERS])


def test_any_number_of_plans_with_repeated_names(plans):
    many = plans + [Plan("2020", plans[0].config), Plan("2020", plans[1].config)]
    df = comparison.by_level(many, "moe_exact")
    assert list(df.columns[2:-1]) == ["2020", "r = 3", "county 0.3", "pure", "2020 (2)", "2020 (3)"]
    assert df.iloc[ROW]["2020 (3)"] == df.iloc[ROW]["r = 3"]


def test_highlighting_marks_cells_that_differ_from_the_first_plan(plans):
    df = comparison.by_level(plans[:3], "moe_exact")
    names = ["2020", "r = 3", "county 0.3"]
    cells = comparison.differing_cells(df, names)
    assert (ROW, "county 0.3") in cells and (ROW, "r = 3") in cells
    assert all(c != "2020" for _, c in cells)  # the reference is never highlighted
    html = comparison.styled(df, names).to_html()
    assert html.count(comparison.HIGHLIGHT) >= 1
    ctx = comparison.styled(df, names)._compute().ctx
    col = list(df.columns).index("county 0.3")
    assert any("background-color" in p for p, _ in ctx[(ROW, col)])
    assert not ctx.get((ROW, list(df.columns).index("2020")))


def test_long_table_holds_every_measure(plans):
    lt = comparison.long_table(plans[:2])
    assert len(lt) == 2 * 20 * len(comparison.MEASURES)
    v = lt[(lt["Plan"] == "r = 3") & (lt["Geography"] == "COUNTY") & (lt["Iterations"] == "Detailed")
           & (lt["Measure"] == "MOE exact")]["Value"].item()
    assert v == budget.moe_for_rho(0.159, 4, 0.1, exact=True)


def test_unknown_measure():
    with pytest.raises(ValueError, match="unknown measure"):
        comparison.level_value(Plan("x", production_2020()), COUNTY2, "nope")


def test_cell_text():
    assert comparison.cell_text(4971) == "4,971" and comparison.cell_text(4971.0) == "4,971"
    assert comparison.cell_text(0.159) == "0.159" and comparison.cell_text(None) == "—"
    assert comparison.cell_text(float("nan")) == "—" and comparison.cell_text(True) == "yes"


# ------------------------------------------------------------------ charts
def test_bars_have_one_trace_per_plan_and_skip_levels_no_plan_tabulates(plans):
    df = comparison.by_level(plans, "moe_exact")
    fig = scenario_charts.level_bars(df, "t", "persons")
    assert [t.name for t in fig.data] == ["2020", "r = 3", "county 0.3", "pure"]
    assert "AIANNH Reg." not in fig.data[0].x  # (AIANNH, 1) is off in every plan
    i = list(fig.data[2].x).index("COUNTY Det.")
    assert fig.data[2].y[i] == budget.moe_for_rho(0.3, 9, 0.1, exact=True)


def test_moe_curves_draw_each_plan_with_its_own_s(plans):
    fig = scenario_charts.moe_budget_curves(plans[:2])
    lines = [t for t in fig.data if t.mode == "lines"]
    assert [t.name for t in lines] == ["2020", "r = 3"]
    # at the same rho the r = 3 curve (S = 4) is below the r = 8 one (S = 9)
    assert all(a >= b for a, b in zip(lines[0].y, lines[1].y))
    assert any(a > b for a, b in zip(lines[0].y, lines[1].y))


def test_adaptive_and_suppression_overlays(plans):
    ad = scenario_charts.adaptive_data(plans, COUNTY2)
    assert set(ad["Plan"]) == {p.name for p in plans}
    fig = scenario_charts.adaptive_overlay(ad, plans, COUNTY2)
    assert sum(1 for t in fig.data if t.showlegend is not False) == len(plans)
    sd = scenario_charts.suppression_data(plans, COUNTY2)
    t = sd.groupby("Plan")["Threshold T"].first()
    assert t["2020"] == 21 and t["county 0.3"] == suppression.threshold(budget.sigma2_stage2(0.3, 0.1, 9), 0.9999)
    p0 = sd[(sd["Plan"] == "2020") & (sd["True count n"] == 0)]["P(suppressed)"].item()
    assert p0 >= 0.9999
    fig = scenario_charts.suppression_overlay(sd, COUNTY2)
    assert len(fig.layout.shapes) == len(plans)  # each plan's T marked
    assert scenario_charts.suppression_data(plans, USA2).empty  # never suppressed
