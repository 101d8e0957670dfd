"""Planner tables and edits against the calculators."""

from __future__ import annotations

import pytest

from calculators import budget
from calculators.levels import POPULATION_GROUP_LEVELS, PopulationGroupLevel
from calculators.presets import production_2020
from ui import planner

COUNTY2 = PopulationGroupLevel("COUNTY", 2)
USA1 = PopulationGroupLevel("USA", 1)
AIANNH1 = PopulationGroupLevel("AIANNH", 1)
ROW = {lvl: i for i, lvl in enumerate(POPULATION_GROUP_LEVELS)}


@pytest.fixture(scope="module")
def prod():
    return production_2020()


def test_production_plan_table_reads_as_the_committee_knows_it(prod):
    t = planner.plan_table(prod, planner.production_targets(), planner.BOUND)
    assert len(t) == 20
    by = {(r[planner.GEO], r[planner.ITER]): r for _, r in t.iterrows()}
    assert by[("USA", "Detailed")][planner.TARGET] == 3
    assert by[("COUNTY", "Detailed")][planner.TARGET] == 11
    assert by[("TRACT", "Regional")][planner.TARGET] == 50
    assert by[("USA", "Detailed")][planner.RHO] == 2.134
    assert by[("COUNTY", "Detailed")][planner.RHO] == 0.159
    assert by[("COUNTY", "Detailed")][planner.MOE_EXACT] == 11
    assert by[("COUNTY", "Detailed")][planner.MOE_BOUND] == 10  # floor(10.99)
    assert not by[("AIANNH", "Regional")][planner.ON]
    assert (t[planner.STATUS].str.startswith("✓") | (t[planner.STATUS] == "not tabulated")).all()
    # shares add up to 100% per run
    us = t[t[planner.RUN] == "US"][planner.SHARE].sum()
    assert us == pytest.approx(100)


def test_summary_matches_budget(prod):
    s = planner.plan_summary(prod, 1e-10)
    t = budget.plan_totals(prod)
    assert s["rho_us"] == pytest.approx(4.944) == t.us
    assert s["rho_pr"] == pytest.approx(2.643)
    assert s["rho_release_bounded"] == pytest.approx(9.888)
    assert s["eps_classic"] == pytest.approx(float(budget.epsilon_classic(t.release, 1e-10)))
    assert s["eps_tight"] == pytest.approx(float(budget.epsilon_tight(t.release, 1e-10)))
    assert s["eps_tight"] < s["eps_classic"]
    assert s["levels_tabulated"] == 19 and s["S"] == 9


def test_editing_a_target_sets_rho_by_the_chosen_inversion(prod):
    edits = {ROW[COUNTY2]: {planner.TARGET: 8}}
    cfg, targets, problems = planner.apply_edits(prod, planner.production_targets(), edits, planner.BOUND)
    assert not problems
    assert cfg.rho(COUNTY2) == pytest.approx(float(budget.rho_level_for_moe(8, 9, 0.1)))
    assert targets[COUNTY2.key] == 8
    assert planner.achieved_moe(cfg, COUNTY2, planner.BOUND) == 8
    cfg2, _, _ = planner.apply_edits(prod, {}, edits, planner.EXACT)
    assert cfg2.rho(COUNTY2) == pytest.approx(float(budget.rho_level_for_exact_moe(8, 9, 0.1)))
    assert planner.achieved_moe(cfg2, COUNTY2, planner.EXACT) == 8
    assert cfg2.rho(COUNTY2) != cfg.rho(COUNTY2)


def test_editing_rho_sets_the_target(prod):
    edits = {ROW[USA1]: {planner.RHO: 0.5}}
    cfg, targets, problems = planner.apply_edits(prod, planner.production_targets(), edits, planner.EXACT)
    assert not problems and cfg.rho(USA1) == 0.5
    assert targets[USA1.key] == int(budget.moe_for_rho(0.5, 9, 0.1, exact=True))


def test_switching_levels_on_and_off(prod):
    cfg, targets, _ = planner.apply_edits(prod, planner.production_targets(), {ROW[COUNTY2]: {planner.ON: False}},
                                          planner.BOUND)
    assert cfg.rho(COUNTY2) == 0 and targets[COUNTY2.key] == 11  # remembered
    cfg, targets, _ = planner.apply_edits(cfg, targets, {ROW[COUNTY2]: {planner.ON: True}}, planner.BOUND)
    assert cfg.rho(COUNTY2) == pytest.approx(float(budget.rho_level_for_moe(11, 9, 0.1)))
    cfg, targets, _ = planner.apply_edits(cfg, targets, {ROW[AIANNH1]: {planner.ON: True}}, planner.BOUND)
    assert cfg.rho(AIANNH1) == pytest.approx(float(budget.rho_level_for_moe(50, 9, 0.1)))
    assert AIANNH1 in cfg.tabulated_levels()


def test_bad_edits_are_problems_not_exceptions(prod):
    edits = {ROW[COUNTY2]: {planner.TARGET: 0}, ROW[USA1]: {planner.RHO: -1}}
    cfg, _, problems = planner.apply_edits(prod, {}, edits, planner.BOUND)
    assert len(problems) == 2
    assert "USA Regional" in problems[0] and "ρ must be 0" in problems[0]
    assert "COUNTY Detailed" in problems[1] and "whole number" in problems[1]
    assert cfg.to_dict() == prod.to_dict()


def test_r_and_gamma_keep_targets_and_show_misses(prod):
    tg = planner.production_targets()
    cfg = prod.updated(max_race_codes=8, privacy_budget_p_stage_1_fraction=0.3)
    tg2 = planner.reconcile_targets(tg, prod, cfg, planner.BOUND)
    assert tg2 == tg
    table = planner.plan_table(cfg, tg2, planner.BOUND)
    assert "COUNTY Detailed" in planner.missed_targets(table)
    fixed = planner.resolve_targets(cfg, tg2, planner.BOUND)
    assert planner.missed_targets(planner.plan_table(fixed, tg2, planner.BOUND)) == []
    assert fixed.rho(COUNTY2) == pytest.approx(float(budget.rho_level_for_moe(11, 9, 0.3)))


def test_race_multiplicity_table(prod):
    t = planner.race_multiplicity_table(prod, planner.EXACT)
    assert list(t["S"]) == [3, 3, 4, 5, 6, 7, 8, 9]
    col = "MOE at ρ = 0.159"
    assert t.loc[t["r"] == 3, col].item() == int(budget.moe_for_rho(0.159, 4, 0.1, exact=True))
    assert t.loc[t["r"] == 8, col].item() == 11
    assert t[col].is_monotonic_increasing


def test_compare(prod):
    other = prod.with_rho(COUNTY2, 0.3).updated(zero_suppression_chance=0.5)
    lv = planner.compare_levels(prod, other, planner.BOUND)
    assert lv["Differs"].sum() == 1
    row = lv[lv["Differs"]].iloc[0]
    assert (row[planner.GEO], row["ρ B"]) == ("COUNTY", 0.3)
    keys = planner.compare_keys(prod, other)
    assert set(keys.loc[keys["Differs"], "Key"]) == {"privacy_budget_p_level_2_county", "zero_suppression_chance"}


def test_moe_rho_curve_is_monotone():
    c = planner.moe_rho_curve(9, 0.1)
    assert c[planner.MOE_EXACT].is_monotonic_decreasing
    assert (c[planner.MOE_BOUND] <= c["1.96σ"] + 1e-9).all()
