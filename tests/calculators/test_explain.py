"""Explanations computed from the numbers (calculators.explain): each sentence carries the
plan's own figures, and a function whose situation does not arise says nothing."""

from __future__ import annotations

import numpy as np
import pytest

from calculators import adaptive, budget, explain, plan, presets
from calculators.levels import PopulationGroupLevel
from calculators.projection import noise_crossings, project
from tests.calculators.test_projection import _profile

USA1 = PopulationGroupLevel("USA", 1)
COUNTY2 = PopulationGroupLevel("COUNTY", 2)
TRACT2 = PopulationGroupLevel("TRACT", 2)


@pytest.fixture(scope="module")
def nation():
    """Many empty and small groups, a few large ones: a national universe in miniature."""
    rng = np.random.default_rng(11)
    county = np.concatenate([np.zeros(20000, int), rng.integers(1, 6, 3000), rng.integers(6, 40, 800),
                             rng.integers(100, 2000, 100)])
    tract = np.concatenate([np.zeros(40000, int), rng.integers(1, 12, 5000), rng.integers(12, 300, 500)])
    return _profile({COUNTY2: county, TRACT2: tract, USA1: [4000, 70000, 300000]})


def _tables(proj) -> float:
    return proj.total["age4"] + proj.total["age9"] + proj.total["age23"]


def test_less_budget_more_tables_says_how_many_and_why(nation):
    ref = presets.production_2020()
    low = ref.updated(**{lvl.budget_key: ref.rho(lvl) / 20 for lvl in ref.tabulated_levels()})
    p_ref, p_low = project(ref, nation), project(low, nation)
    assert _tables(p_low) > _tables(p_ref)  # the situation the function explains
    lines = explain.less_budget_more_tables(ref, low, nation)
    text = " ".join(lines)
    assert plan.fmt(_tables(p_low) - _tables(p_ref), plan.COUNT) in lines[0]
    assert plan.fmt(budget.plan_totals(low).release) in lines[0]
    c_ref = sum(v["lifted"] for v in noise_crossings(ref, nation).values())
    c_low = sum(v["lifted"] for v in noise_crossings(low, nation).values())
    assert plan.fmt(c_low, plan.COUNT) in text and plan.fmt(c_ref, plan.COUNT) in text
    assert "Θ₁" in text and "fixed in persons" in text
    # more budget, or fewer tables: nothing to explain
    assert explain.less_budget_more_tables(low, ref, nation) == []
    assert explain.less_budget_more_tables(ref, ref, nation) == []


def test_tables_gained_are_the_groups_lifted_minus_those_dropped(nation):
    """The identity the sentences rest on: tables = groups above Θ₁ - dropped + lifted."""
    cfg = presets.production_2020()
    proj = project(cfg, nation)
    for lvl, c in noise_crossings(cfg, nation).items():
        row = proj.row(lvl)
        assert row["age4"] + row["age9"] + row["age23"] == pytest.approx(c["above"] - c["dropped"] + c["lifted"])
        assert c["lifted_empty"] <= c["lifted"] and c["below"] + c["above"] == nation.levels[lvl].adaptive.groups


def test_smaller_r_re_derived_suppresses_more_than_budgets_kept(nation):
    cfg = presets.production_2020()
    targets = {lvl.key: plan.achieved_target(cfg, lvl, plan.EXACT) for lvl in cfg.tabulated_levels()}
    lines = explain.smaller_r_suppresses_more(cfg, 2, targets, plan.EXACT, nation)
    kept = cfg.updated(max_race_codes=2)
    red = plan.resolve_targets(kept, targets, plan.EXACT)
    s_kept = project(kept, nation).total["occupied_suppressed"]
    s_red = project(red, nation).total["occupied_suppressed"]
    assert s_red > s_kept
    text = " ".join(lines)
    assert "from 9 to 3" in lines[0]
    assert plan.fmt(s_kept, plan.COUNT) in text and plan.fmt(s_red, plan.COUNT) in text
    assert plan.fmt(s_red - s_kept, plan.COUNT) + " more" in text
    assert explain.smaller_r_suppresses_more(cfg, 8, targets, plan.EXACT, nation) == []
    assert explain.smaller_r_suppresses_more(cfg, 9, targets, plan.EXACT, nation) == []


def test_a_published_totals_error_above_the_moe_is_explained(nation):
    cfg = presets.production_2020()
    proj = project(cfg, nation)
    lines = explain.published_error_above_moe(cfg, USA1, proj, observed=117.9)
    text = " ".join(lines)
    moe = plan.achieved_moe(cfg, USA1, plan.EXACT)
    assert lines[0].startswith("USA Regional") and "117.9" in lines[0] and "above" in lines[0]
    assert f"MOE of {moe}" in lines[0] or f"({moe} persons)" in text
    t1 = adaptive.t1_moe_by_level(plan.sigmas(cfg, USA1)["stage2"], exact=True)
    for j, c in ((1, 8), (2, 18), (3, 46)):
        assert f"{c} cells {plan.fmt(t1[j], plan.COUNT)}" in text
    assert plan.fmt(proj.row(USA1)["mean_abs_error"]) in text
    assert explain.published_error_above_moe(cfg.updated(**{USA1.budget_key: 0.0}), USA1, proj) == []


def test_the_r_change_columns_are_named_in_words():
    names = explain.r_change_columns("ρ")
    assert names["moe_kept"] == "MOE kept" and names["moe_rederived"] == "MOE re-derived"
    assert "“Kept”: budgets kept" in names["caption"] and "“Re-derived”: budgets re-derived" in names["caption"]
    assert explain.r_change_columns("ε")["budget_kept"] == "Budget ε kept"


def test_the_headline_sentence_counts_groups_that_exist(nation):
    proj = project(presets.production_2020(), nation)
    h = plan.national_headline(proj)
    s = explain.headline_sentence(proj)
    assert s.startswith(f"Of the {plan.fmt(h['occupied'], plan.COUNT)} groups with at least one person")
    assert plan.fmt(h["suppressed"], plan.COUNT) in s and plan.fmt(h["published_share"], plan.SHARE) in s
