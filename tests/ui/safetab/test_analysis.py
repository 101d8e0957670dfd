"""Adaptive-table and suppression tables against the calculators."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from calculators import adaptive, budget, suppression
from calculators.levels import PopulationGroupLevel
from calculators.presets import production_2020
from ui.safetab import analysis

COUNTY2 = PopulationGroupLevel("COUNTY", 2)
STATE2 = PopulationGroupLevel("STATE", 2)


@pytest.fixture(scope="module")
def prod():
    return production_2020()


def test_sigmas(prod):
    s = analysis.sigmas(prod, COUNTY2)
    assert s["stage1"] == pytest.approx(float(budget.sigma2_stage1(0.159, 0.1, 9)))
    assert s["stage2"] == pytest.approx(float(budget.sigma2_stage2(0.159, 0.1, 9)))
    assert s["stage2_exact"] == Fraction(9) / (2 * Fraction(9, 10) * Fraction(159, 1000))


def test_threshold_is_the_calculators_threshold(prod):
    for p in (0.5, 0.9, 0.9999):
        t = analysis.threshold_for(prod, COUNTY2, p)
        assert t == suppression.threshold(budget.sigma2_stage2(0.159, 0.1, 9), p)
    assert analysis.threshold_for(prod, COUNTY2, 0.9999) == 21
    assert analysis.threshold_for(prod, COUNTY2, 0) is None


def test_suppression_table(prod):
    t = analysis.suppression_table(prod)
    row = t[(t["Geography"] == "COUNTY") & (t["Iterations"] == "Detailed")].iloc[0]
    assert row["Threshold T"] == 21
    assert row["P(true 0 suppressed)"] >= 0.9999
    s2 = float(budget.sigma2_stage2(0.159, 0.1, 9))
    assert row["Bias of a released count at n = 0"] == pytest.approx(float(suppression.release_bias(0, 21, s2)))
    n95 = row["n released with 95% chance"]
    assert suppression.release_probability(n95, 21, s2) >= 0.95 > suppression.release_probability(n95 - 1, 21, s2)
    state = t[t["Geography"] == "STATE"].iloc[0]
    assert state["Suppression"].startswith("never")
    off = analysis.suppression_table(prod, 0)
    assert (off["Suppression"] != "stat-level-0 totals").all()


def test_a_negative_threshold_leaves_the_figures_at_n_equals_t_empty(prod):
    """p = 1e-300 gives T < 0: no true count is T, so P(hidden) and the bias "at n = T" are
    left empty (they were filled for n = -926); the figures at n = 0 stay."""
    import math

    t = analysis.suppression_table(prod, 1e-300)
    row = t[(t["Geography"] == "COUNTY") & (t["Iterations"] == "Detailed")].iloc[0]
    assert row["Threshold T"] < 0
    assert math.isnan(row["P(suppressed) at n = T"]) and math.isnan(row["Bias of a released count at n = T"])
    assert 0 <= row["P(true 0 suppressed)"] < 1e-6 and not math.isnan(row["Bias of a released count at n = 0"])
    t = analysis.suppression_table(prod)
    row = t[(t["Geography"] == "COUNTY") & (t["Iterations"] == "Detailed")].iloc[0]
    assert row["P(suppressed) at n = T"] > 0  # T >= 0: filled as before


def test_suppression_curves_and_value(prod):
    s2 = analysis.sigmas(prod, COUNTY2)["stage2"]
    c = analysis.suppression_curves(21, s2)
    assert c["P(suppressed)"].is_monotonic_decreasing
    assert (c["Bias of a released count"] > 0).all()
    assert c["n / T"].iloc[-1] == pytest.approx(c["True count n"].iloc[-1] / 21)
    v = analysis.value_at(21, 21, s2)
    assert v["P(suppressed)"] + v["P(released)"] == pytest.approx(1)
    assert v["Expected released value"] == pytest.approx(21 + v["Bias of a released count"])


def test_stat_level_curves_sum_to_one_and_follow_thresholds(prod):
    df = analysis.stat_level_curves(prod, COUNTY2)
    p = df.iloc[:, 1:].to_numpy()
    assert np.allclose(p.sum(axis=1), 1)
    n = df["True group size"].to_numpy()
    assert p[n == 1, 0][0] > 0.999 and p[-1, 3] > 0.999
    got = df.loc[df["True group size"] == 4971].iloc[0, 1:].to_numpy()
    want = adaptive.stat_level_probabilities(4971, (971, 4971, 19971), analysis.sigmas(prod, COUNTY2)["stage1"])
    assert np.allclose(got, want)


def test_moe_curves_and_level_tables(prod):
    m = analysis.moe_curves(prod, COUNTY2)
    assert np.allclose(m["Expected MOE of one published cell"], 11)
    big = m.iloc[-1]
    assert big["Expected MOE of the group total T1"] == pytest.approx(75, abs=0.5)
    t = analysis.level_tables(prod, COUNTY2)
    assert list(t["Cells"]) == [1, 8, 18, 46]
    assert list(t["Total T1 MOE (exact)"]) == list(adaptive.t1_moe_by_level(analysis.sigmas(prod, COUNTY2)["stage2"]))


def test_derive(prod):
    s2 = analysis.sigmas(prod, COUNTY2)["stage2"]
    assert analysis.derive(prod, COUNTY2, 0.1, "average_cell") == adaptive.derive_thresholds(0.1, s2)
    assert analysis.derive(prod, COUNTY2, 0.1, "total") == adaptive.derive_thresholds(0.1, s2, rule="total")


def test_thresholds_table(prod):
    t = analysis.thresholds_table(prod)
    assert len(t) == 19
    row = t[(t["Geography"] == "STATE") & (t["Iterations"] == "Detailed")].iloc[0]
    assert (row["Θ₁"], row["Θ₂"], row["Θ₃"]) == (471, 971, 6971)
    assert row["Cell rel. MOE at Θ1 (age4, %)"] == pytest.approx(100 * 8 * 3 / 471)


def test_rederive_plan_meets_every_target_and_can_rederive_thresholds():
    from calculators import adaptive, budget
    from calculators.presets import production_2020
    from ui.core import planner

    cfg = production_2020().updated(max_race_codes=3, privacy_budget_p_stage_1_fraction=0.2)
    targets = planner.production_targets()
    out = analysis.rederive_plan(cfg, targets, planner.EXACT)
    assert out.max_race_codes == 3 and out.thresholds_p == cfg.thresholds_p
    for lvl in out.tabulated_levels():
        assert out.rho(lvl) == planner.round_up(budget.rho_level_for_exact_moe(targets[lvl.key], 4, 0.2))
    with_th = analysis.rederive_plan(cfg, targets, planner.EXACT, 0.1, "total")
    county2 = planner.POPULATION_GROUP_LEVELS[5]
    s2 = float(budget.sigma2_stage2(with_th.rho(county2), 0.2, 4))
    assert with_th.thresholds(county2) == adaptive.derive_thresholds(0.1, s2, rule="total")
