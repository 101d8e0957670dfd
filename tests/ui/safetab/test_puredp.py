"""Planner and analysis tables under pure DP: budgets are epsilons, noise is geometric,
and every figure comes from the geometric law (not the zCDP formulas)."""

from __future__ import annotations

import math

import pytest

from calculators import budget, geometric, suppression
from calculators.levels import POPULATION_GROUP_LEVELS, PopulationGroupLevel
from calculators.config import ConfigError
from calculators.presets import production_2020
from ui.safetab import analysis
from ui.core import planner

COUNTY2 = PopulationGroupLevel("COUNTY", 2)


@pytest.fixture()
def pure():
    return production_2020().updated(privacy_defn="puredp")


def test_units_and_labels(pure):
    assert planner.units(pure)["budget"] == "ε" and planner.units(production_2020())["budget"] == "ρ"
    assert planner.label("σ² stage 2", pure) == "b stage 2"
    assert planner.label("σ² stage 2", production_2020()) == "σ² stage 2"
    t = planner.relabel(planner.plan_table(pure, {}, planner.EXACT), pure)
    assert "ε" in t.columns and "b stage 2" in t.columns and "ρ" not in t.columns


def test_plan_table_moes_are_geometric(pure):
    t = planner.plan_table(pure, planner.production_targets(), planner.EXACT)
    row = t.iloc[POPULATION_GROUP_LEVELS.index(COUNTY2)]
    b = 9 / (0.9 * 0.159)
    assert row[planner.SIGMA2] == pytest.approx(b)
    assert row[planner.MOE_EXACT] == geometric.moe(b)
    assert row[planner.MOE_EXACT] != budget.moe_for_rho(0.159, 9, 0.1, exact=True)  # not the zCDP figure


def test_a_moe_target_gives_the_smallest_epsilon(pure):
    row = POPULATION_GROUP_LEVELS.index(COUNTY2)
    cfg, targets, problems = planner.apply_edits(pure, {}, {row: {planner.TARGET: 20}}, planner.EXACT)
    assert not problems and targets[COUNTY2.key] == 20
    eps = cfg.rho(COUNTY2)
    assert eps == pytest.approx(planner.round_up(budget.rho_level_for_exact_moe(20, 9, 0.1, noise="geometric")))
    # the smallest ε of 4 significant digits that meets it: one step less misses
    step = 10 ** (math.floor(math.log10(eps)) - planner.BUDGET_DIGITS + 1)
    assert geometric.moe(9 / (0.9 * eps)) <= 20 < geometric.moe(9 / (0.9 * (eps - step)))


def test_summary_is_pure_epsilon(pure):
    s = planner.plan_summary(pure, 1e-10)
    assert s["delta"] == 0.0 and s["eps_tight"] == s["rho_release"] == pytest.approx(budget.plan_totals(pure).release)
    q = planner.summary_table(pure)["Quantity"].tolist()
    assert any("pure DP" in x for x in q) and not any("δ = 1e-10" in x for x in q)


def test_suppression_table_uses_the_engines_geometric_threshold(pure):
    from engine.tabulation.mechanism import level_plan

    t = analysis.suppression_table(pure)
    row = t[(t["Geography"] == "COUNTY") & (t["Iterations"] == "Detailed")].iloc[0]
    want = level_plan(pure, COUNTY2, 9).suppression_threshold
    assert row["Threshold T"] == want == suppression.threshold(9 / (0.9 * 0.159), 0.9999, noise="geometric")
    assert row["b stage 2"] == pytest.approx(9 / (0.9 * 0.159)) and "ε" in t.columns
    assert row["P(true 0 suppressed)"] == pytest.approx(geometric.cdf(want, 9 / (0.9 * 0.159)))


def test_adaptive_curves_follow_the_geometric_law(pure):
    s = analysis.sigmas(pure, COUNTY2)
    assert s["noise"] == "geometric" and s["stage1"] == pytest.approx(9 / (0.1 * 0.159))
    tab = analysis.level_tables(pure, COUNTY2)
    assert (tab["Cell MOE (exact)"] == geometric.moe(s["stage2"])).all()
    curves = analysis.moe_curves(pure, COUNTY2)
    assert curves["Expected MOE of one published cell"].iloc[-1] == pytest.approx(geometric.moe(s["stage2"]))


@pytest.mark.parametrize("defn", ["zcdp", "puredp"])
@pytest.mark.parametrize("eps", [1e-6, 1e6])
def test_extreme_budgets_give_numbers_not_errors(defn, eps):
    # a budget typed by mistake must not exhaust memory or divide by an underflowed variance;
    # the ends of the configuration range (calculators.config.BUDGET_RANGE) still give numbers
    with pytest.raises(ConfigError, match="1e-06"):
        production_2020().updated(privacy_defn=defn).with_rho(COUNTY2, eps / 10 if eps < 1 else eps * 10)
    cfg = production_2020().updated(privacy_defn=defn).with_rho(COUNTY2, eps)
    s = analysis.sigmas(cfg, COUNTY2)
    t = analysis.threshold_for(cfg, COUNTY2)
    sup = analysis.suppression_table(cfg)
    n95 = int(sup[(sup["Geography"] == "COUNTY") & (sup["Iterations"] == "Detailed")].iloc[0]["n released with 95% chance"])
    rel = lambda n: float(suppression.release_probability(n, t, s["stage2"], s["noise"]))  # noqa: E731
    assert rel(n95) >= 0.95 and (n95 == 0 or rel(n95 - 1) < 0.95)
    row = planner.plan_table(cfg, {}, planner.BOUND).iloc[POPULATION_GROUP_LEVELS.index(COUNTY2)]
    if eps > 1:
        assert row[planner.MOE_BOUND] == 0 and row[planner.MOE_EXACT] == 0 and t == 0
    else:
        assert row[planner.MOE_EXACT] > 4000  # sigma = 2,236 (zCDP), b = 1e7 (pure DP)
