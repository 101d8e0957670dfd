"""Planner tables and edits against the calculators."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from calculators import budget
from calculators.levels import POPULATION_GROUP_LEVELS, PopulationGroupLevel
from calculators.presets import production_2020
from ui.core import planner

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
    # the editable cells are text, shown as typed
    assert by[("USA", "Detailed")][planner.TARGET] == "3"
    assert by[("COUNTY", "Detailed")][planner.TARGET] == "11"
    assert by[("TRACT", "Regional")][planner.TARGET] == "50"
    assert by[("USA", "Detailed")][planner.RHO] == "2.134"
    assert by[("COUNTY", "Detailed")][planner.RHO] == "0.159"
    assert by[("COUNTY", "Detailed")][planner.MOE_EXACT] == 11
    assert by[("COUNTY", "Detailed")][planner.MOE_BOUND] == 10  # floor(10.99)
    assert by[("COUNTY", "Detailed")][planner.EPS] == pytest.approx(float(budget.epsilon_tight(0.159, 1e-10)))
    assert not by[("AIANNH", "Regional")][planner.ON]
    assert (t[planner.STATUS].str.startswith("✓") | (t[planner.STATUS] == "off (not tabulated)")).all()
    nums = planner.plan_numbers(t)
    assert nums[planner.RHO].dtype == float and nums.loc[1, planner.TARGET] == 3
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
    assert cfg.rho(COUNTY2) == pytest.approx(planner.round_sig(budget.rho_level_for_moe(8, 9, 0.1), up=False))
    assert targets[COUNTY2.key] == 8
    assert planner.achieved_moe(cfg, COUNTY2, planner.BOUND) == 8
    cfg2, _, _ = planner.apply_edits(prod, {}, edits, planner.EXACT)
    assert cfg2.rho(COUNTY2) == pytest.approx(planner.round_up(budget.rho_level_for_exact_moe(8, 9, 0.1)))
    assert planner.achieved_moe(cfg2, COUNTY2, planner.EXACT) == 8
    assert cfg2.rho(COUNTY2) != cfg.rho(COUNTY2)


def test_editing_rho_sets_the_target(prod):
    edits = {ROW[USA1]: {planner.RHO: 0.5}}
    cfg, targets, problems = planner.apply_edits(prod, planner.production_targets(), edits, planner.EXACT)
    assert not problems and cfg.rho(USA1) == 0.5
    assert targets[USA1.key] == int(budget.moe_for_rho(0.5, 9, 0.1, exact=True))


@pytest.mark.parametrize("method", [planner.EXACT, planner.BOUND])
def test_a_budget_whose_moe_is_0_gets_a_target_of_1_and_its_link_opens_again(prod, method):
    """rho = 100 gives MOE 0; a target is a whole number of persons from 1, so the level's
    target is 1 (met by 0), and the plan's link reads back (a target of 0 made the app
    refuse its own link and load the 2020 plan instead)."""
    from ui.core import urlcodec

    state2 = PopulationGroupLevel("STATE", 2)
    cfg, targets, problems = planner.apply_edits(prod, planner.production_targets(),
                                                 {ROW[state2]: {planner.RHO: "100"}}, method)
    assert not problems and cfg.rho(state2) == 100
    assert planner.achieved_moe(cfg, state2, method) == 0 and targets[state2.key] == 1
    back = urlcodec.decode(urlcodec.encode(cfg, targets, "big", edited=True))
    assert back[0] == cfg and back[1] == targets
    assert planner.default_targets(cfg, method)[state2.key] == 1
    assert planner.reconcile_targets({}, None, cfg, method)[state2.key] == 1
    row = planner.plan_table(cfg, targets, method).iloc[ROW[state2]]
    assert row[planner.STATUS].startswith("✓")


def test_switching_levels_on_and_off(prod):
    cfg, targets, _ = planner.apply_edits(prod, planner.production_targets(), {ROW[COUNTY2]: {planner.ON: False}},
                                          planner.BOUND)
    assert cfg.rho(COUNTY2) == 0 and targets[COUNTY2.key] == 11  # remembered
    cfg, targets, _ = planner.apply_edits(cfg, targets, {ROW[COUNTY2]: {planner.ON: True}}, planner.BOUND)
    assert cfg.rho(COUNTY2) == pytest.approx(planner.round_sig(budget.rho_level_for_moe(11, 9, 0.1), up=False))
    cfg, targets, _ = planner.apply_edits(cfg, targets, {ROW[AIANNH1]: {planner.ON: True}}, planner.BOUND)
    assert cfg.rho(AIANNH1) == pytest.approx(planner.round_sig(budget.rho_level_for_moe(50, 9, 0.1), up=False))
    assert AIANNH1 in cfg.tabulated_levels()


def test_bad_edits_are_problems_not_exceptions(prod):
    edits = {ROW[COUNTY2]: {planner.TARGET: "2.5"}, ROW[USA1]: {planner.RHO: "-1"}}
    cfg, _, problems = planner.apply_edits(prod, {}, edits, planner.BOUND)
    assert len(problems) == 2
    assert problems[0] == "USA Regional, ρ: '-1' is negative; ρ is 0 (level off) or more; ρ stays 0.008."
    assert problems[1].startswith("COUNTY Detailed, MOE target: '2.5' is not a whole number of persons")
    assert cfg.to_dict() == prod.to_dict()


@pytest.mark.parametrize("typed,want", [("12", 12), (" 7 ", 7), ("1,000", 1000), ("1e3", 1000), ("12.0", 12),
                                        (25, 25), ("1000000", 1_000_000)])
def test_parse_target_uses_a_value_as_typed(typed, want):
    assert planner.parse_target(typed) == want


@pytest.mark.parametrize("typed,why", [("2.5", "not a whole number"), ("-5", "below 1"), ("0", "below 1"),
                                       ("1e7", "above 1,000,000"), ("2,5", "point for decimals"),
                                       ("", "empty"), ("abc", "not a number"), ("inf", "finite"), (True, "number")])
def test_parse_target_refuses_what_it_cannot_use_as_typed(typed, why):
    with pytest.raises(ValueError, match=why):
        planner.parse_target(typed)


@pytest.mark.parametrize("typed,want", [("0.159", 0.159), ("1e-3", 0.001), (".5", 0.5), ("0", 0.0), ("1e5", 1e5),
                                        ("1e6", 1e6), ("1e-6", 1e-6), (2.134, 2.134)])
def test_parse_budget_uses_a_value_as_typed(typed, want):
    assert planner.parse_budget(typed) == want


@pytest.mark.parametrize("typed,why", [("-1", "negative"), ("1e300", "above 1e"), ("1e-7", "below 1e-06"),
                                       ("1e8", "above 1e\\+06, the largest budget the engine accepts"),
                                       ("nan", "finite"), ("0,5", "point for decimals"), ("x", "not a number"),
                                       ("1e-400", "cannot be used exactly.*used as 0.0")])  # not: the level off
def test_parse_budget_refuses_what_it_cannot_use_as_typed(typed, why):
    with pytest.raises(ValueError, match=why):
        planner.parse_budget(typed)


def test_verdict_names_the_exact_moe_when_the_bound_would_hide_it():
    assert planner.verdict(11, 12, 11, planner.BOUND) == "✓ 11 ≤ 11; exact 12"
    assert planner.verdict(11, 11, 11, planner.BOUND) == "✓ meets (11 ≤ 11)"
    assert planner.verdict(12, 12, 11, planner.EXACT) == "✗ misses (12 > 11)"
    assert planner.DEFAULT_METHOD == planner.EXACT


def test_absurd_budgets_get_warnings_that_say_what_they_mean(prod):
    assert planner.budget_warnings(prod) == []  # the 2020 plan is fine
    huge = planner.budget_warnings(prod.with_rho(COUNTY2, planner.BUDGET_MAX))
    assert len(huge) == 1 and "COUNTY Detailed" in huge[0] and "essentially no privacy" in huge[0]
    assert "ε ≈ 1.01e+06" in huge[0] and "100.0%" in huge[0]
    weak = planner.budget_warnings(prod.with_rho(COUNTY2, 7.0))  # noise 0 in 47% of cells, epsilon 31
    eps = float(budget.epsilon_tight(7.0, 1e-10))
    assert eps > planner.EPS_WEAK and len(weak) == 1 and "very weak privacy" in weak[0] and f"{eps:.3g}" in weak[0]
    assert planner.budget_warnings(prod.with_rho(COUNTY2, 1e-3)) == []  # MOE 463: large, not absurd
    tiny = planner.budget_warnings(prod.with_rho(COUNTY2, planner.BUDGET_MIN))  # MOE 4,383 persons
    assert len(tiny) == 1 and "swamps" in tiny[0]
    pure = planner.budget_warnings(prod.updated(privacy_defn="puredp").with_rho(COUNTY2, 1e4))
    assert any("essentially no privacy" in w for w in pure)


def test_a_target_whose_budget_the_engine_refuses_is_refused_with_the_largest_one(prod):
    targets = planner.production_targets()
    row = planner.POPULATION_GROUP_LEVELS.index(COUNTY2)
    cfg, t, problems = planner.apply_edits(prod, targets, {row: {planner.TARGET: "10000"}}, planner.EXACT)
    largest = planner.level_moe(planner.BUDGET_MIN, 9, 0.1, planner.EXACT)
    assert cfg.to_dict() == prod.to_dict() and t == targets
    assert len(problems) == 1 and "COUNTY Detailed, MOE target: '10000' would need ρ = 1.9e-07" in problems[0]
    assert f"whose MOE here is {largest:,} persons, the largest target here" in problems[0] and "the target stays 11" in problems[0]
    cfg, t, problems = planner.apply_edits(prod, targets, {row: {planner.TARGET: str(largest)}}, planner.EXACT)
    assert problems == [] and t[COUNTY2.key] == largest and cfg.rho(COUNTY2) == planner.BUDGET_MIN


def test_converting_to_pure_dp_keeps_every_target(prod):
    targets = planner.production_targets()
    pure, t2 = planner.convert_privacy(prod, targets, planner.EXACT, "puredp")
    assert pure.privacy_defn == "puredp" and t2 == targets
    for lvl in pure.tabulated_levels():
        assert planner.achieved_moe(pure, lvl, planner.EXACT) <= targets[lvl.key]
        assert pure.rho(lvl) == pytest.approx(planner.round_up(budget.rho_level_for_exact_moe(
            targets[lvl.key], 9, 0.1, noise="geometric")))
    assert pure.rho(AIANNH1) == 0 and pure.thresholds_p == prod.thresholds_p
    back, _ = planner.convert_privacy(pure, t2, planner.EXACT, "zcdp")
    assert back.rho(COUNTY2) == pytest.approx(planner.round_up(budget.rho_level_for_exact_moe(11, 9, 0.1)))
    change = planner.change_table(prod, pure, targets)
    row = change[change["Level"] == "COUNTY Detailed"].iloc[0]
    assert row["Budget ρ before"] == 0.159 and row["Budget ε after"] == pure.rho(COUNTY2)
    assert row["Level ε before"] == pytest.approx(float(budget.epsilon_tight(0.159, 1e-10)))
    assert row["Level ε after"] == pure.rho(COUNTY2)  # pure DP: the budget is epsilon
    assert row["MOE after"] <= 11 and "Θ before" not in change.columns  # thresholds unchanged


def test_r_and_gamma_keep_targets_and_show_misses(prod):
    tg = planner.production_targets()
    cfg = prod.updated(max_race_codes=8, privacy_budget_p_stage_1_fraction=0.3)
    tg2 = planner.reconcile_targets(tg, prod, cfg, planner.BOUND)
    assert tg2 == tg
    table = planner.plan_table(cfg, tg2, planner.BOUND)
    assert "COUNTY Detailed" in planner.missed_targets(table)
    fixed = planner.resolve_targets(cfg, tg2, planner.BOUND)
    assert planner.missed_targets(planner.plan_table(fixed, tg2, planner.BOUND)) == []
    assert fixed.rho(COUNTY2) == pytest.approx(planner.round_sig(budget.rho_level_for_moe(11, 9, 0.3), up=False))


def test_race_multiplicity_table(prod):
    t = planner.race_multiplicity_table(prod, planner.EXACT)
    assert list(t["S"]) == [3, 3, 4, 5, 6, 7, 8, 9]
    col = "MOE at ρ = 0.159"
    assert t.loc[t["r"] == 3, col].item() == int(budget.moe_for_rho(0.159, 4, 0.1, exact=True))
    assert t.loc[t["r"] == 8, col].item() == 11
    assert t[col].is_monotonic_increasing


def test_moe_rho_curve_is_monotone():
    c = planner.moe_rho_curve(9, 0.1)
    assert c[planner.MOE_EXACT].is_monotonic_decreasing
    assert (c[planner.MOE_BOUND] <= c["1.96σ"] + 1e-9).all()


@pytest.mark.parametrize("method", [planner.EXACT, planner.BOUND])
@pytest.mark.parametrize("noise", ["gaussian", "geometric"])
def test_a_budget_derived_from_a_target_is_written_with_four_digits_and_meets_it(method, noise):
    """The planner writes a derived budget as the 2020 plan's are (0.159, 2.134): at most 4
    significant digits, read back exactly; its MOE is the target (the design bound keeps
    1.96 sigma at the target), and under the exact MOE it is the smallest 4-digit budget."""
    for moe, S, gamma in ((3, 9, 0.1), (8, 9, 0.1), (11, 9, 0.1), (49, 9, 0.1), (11, 4, 0.2), (500, 3, 0.5)):
        rho = planner.rho_for_target(moe, S, gamma, method, noise)
        digits = repr(rho).replace(".", "").lstrip("0").split("e")[0].rstrip("0")
        assert len(digits) <= planner.BUDGET_DIGITS, rho
        assert planner.level_moe(rho, S, gamma, method, noise=noise) == moe, (moe, S, gamma, rho)
        if method == planner.EXACT:
            step = 10 ** (math.floor(math.log10(rho)) - planner.BUDGET_DIGITS + 1)
            assert planner.level_moe(rho - step, S, gamma, method, noise=noise) > moe
    assert planner.round_sig(0.12267539111898958, up=True) == 0.1227
    assert planner.round_sig(0.12267539111898958, up=False) == 0.1226
    assert planner.round_sig(0.159, up=True) == planner.round_sig(0.159, up=False) == 0.159
    assert planner.round_sig(999_999.9, up=True) == 1e6


def test_a_run_that_is_off_spends_nothing_in_the_plan_table(prod):
    """With the US run off its levels keep their budgets (switching it on restores them)
    but show no ε and no share of a run that spends nothing (they showed up to 43 %)."""
    import math

    t = planner.plan_table(prod.updated(run_us=False), planner.production_targets(), planner.EXACT)
    us, pr = t[t[planner.RUN] == "US"], t[t[planner.RUN] == "PR"]
    on = us[us[planner.ON]]
    assert len(on) and all(math.isnan(x) for x in on[planner.SHARE]) and on[planner.EPS].isna().all()
    assert (on[planner.STATUS] == "US run is off").all() and on[planner.RHO].tolist()[0] == "0.008"
    assert pr[planner.SHARE].sum() == pytest.approx(100) and pr[pr[planner.ON]][planner.EPS].notna().all()


@pytest.mark.parametrize("value,text", [(1e6, "1000000"), (2.0, "2"), (0.159, "0.159"), (0.0, "0"),
                                        (1e-7, "1e-07"), (1e16, "1e+16"), (1234567.5, "1234567.5")])
def test_a_budget_is_shown_as_typed_and_reads_back(value, text):
    assert planner.budget_text(value) == text and float(text) == value


def test_the_target_help_says_which_budget_each_rule_gives():
    """The planner's MOE-target help said the budget is "the smallest such budget that meets the
    target" under either rule; under the design bound it is the paper's inversion (Table 7's
    2.134, 0.159, 0.008), and much smaller budgets still meet floor(1.96 sigma) <= target."""
    bound, exact = planner.TARGET_BUDGET[planner.BOUND], planner.TARGET_BUDGET[planner.EXACT]
    assert "smallest" in exact and "not the smallest" in bound and "Table 7" in bound
    rho = planner.rho_for_target(11, 9, 0.1, planner.BOUND)
    assert rho == 0.1587 and round(rho, 3) == 0.159  # the paper's 0.159, to its 3 decimals
    assert planner.level_moe(0.135, 9, 0.1, planner.BOUND) == 11  # a smaller budget meets the bound too
    assert planner.rho_for_target(3, 9, 0.1, planner.BOUND) == 2.134
    src = (Path(__file__).resolve().parents[3] / "app_pages" / "safetab" / "budget.py").read_text(encoding="utf-8")
    assert "planner.TARGET_BUDGET[method]" in src and "(the smallest such budget that meets the target)" not in src
