"""Lesson 6 (ui.learn.national): the plan variants, the outcome against the projection,
and the two explanations computed from the numbers, on a small profile built here."""

from __future__ import annotations

import numpy as np
import pytest

from calculators import budget, suppression
from calculators.levels import POPULATION_GROUP_LEVELS, PopulationGroupLevel
from calculators.presets import production_2020
from calculators.projection import LevelProfile, Profile, SizeHistogram, project
from ui.core import planner
from ui.learn import national

CFG = production_2020()
TRACT = PopulationGroupLevel("TRACT", 2)


@pytest.fixture(scope="module")
def profile() -> Profile:
    """Tract Detailed groups: many empty or tiny groups, a few near and above Θ₁ = 971;
    every other level of the plan one small group (so that the plan projects)."""
    rng = np.random.default_rng(7)
    sizes = np.concatenate([np.zeros(20_000, int), rng.integers(1, 40, 20_000), rng.integers(850, 980, 300),
                            rng.integers(5000, 6000, 20)])
    levels = {}
    for lvl in POPULATION_GROUP_LEVELS:
        if CFG.rho(lvl) <= 0:
            continue
        hist = SizeHistogram.of(sizes if lvl == TRACT else [3])
        levels[lvl] = LevelProfile(lvl, regions=1, iterations=hist.groups, total_only_iterations=0,
                                   stability=tuple(int(budget.stability(r)) for r in range(1, 9)),
                                   adaptive=hist, total_only=SizeHistogram.of([]))
    return Profile(name="lesson test", persons=int(sizes.sum()), persons_us=int(sizes.sum()), persons_pr=0,
                   synthetic=True, max_race_codes=8, run_us=True, run_pr=True,
                   state_filter_us=tuple(CFG.state_filter_us), levels=levels)


def test_variants_scale_or_rederive_the_budgets():
    half = national.variant(CFG, planner.production_targets(), 0.5)
    assert half.rho(TRACT) == 0.0795 and half.max_race_codes == 8
    r6 = national.variant(CFG, planner.production_targets(), 1.0, 6, rederive=True)
    assert r6.max_race_codes == 6
    assert r6.rho(TRACT) == planner.rho_for_target(11, 7, 0.1, planner.EXACT) == 0.1127
    assert budget.moe_exact(budget.sigma2_stage2(r6.rho(TRACT), 0.1, 7)) == 11  # still meets the target
    both = national.variant(CFG, planner.production_targets(), 0.5, 6, rederive=True)
    assert both.rho(TRACT) == 0.05635 and both.max_race_codes == 6


def test_outcome_is_the_projections_total(profile):
    proj = project(CFG, profile)
    out = national.outcome(proj, CFG)
    t = proj.total
    assert out.tables == pytest.approx(t["age4"] + t["age9"] + t["age23"])
    assert (out.suppressed, out.t1_rows, out.rho) == (t["suppressed"], t["t1_rows"], 4.944)
    assert national.change_text("suppressed", 10.0, 1234.4) == "+1,224"
    assert national.change_text("mae", 7.0, 6.5) == "−0.5" and national.change_text("tables", 3, 3.2) == "no change"


def test_the_question_halves_every_budget(profile):
    q, text, values = national.question(CFG, profile, planner.production_targets())
    half = national.variant(CFG, planner.production_targets(), 0.5)
    a, b = project(CFG, profile).total, project(half, profile).total
    assert values["suppressed_change"] == pytest.approx(b["suppressed"] - a["suppressed"])
    assert f"{round(b['suppressed']):,} instead of {round(a['suppressed']):,}" in text
    t = [int(suppression.threshold(budget.sigma2_stage2(rho, 0.1, 9), 0.9999)) for rho in (0.159, 0.0795)]
    assert t[1] > t[0] and f"suppression threshold from T = {t[0]} to {t[1]}" in text


def test_empty_share_counts_the_groups_with_nobody(profile):
    lp = profile.levels[TRACT]
    groups = sum(p.adaptive.groups for lvl, p in profile.levels.items() if CFG.rho(lvl) > 0)
    assert national.empty_share(CFG, profile) == pytest.approx(20_000 / groups)
    assert lp.adaptive.counts[0] == 20_000 and lp.adaptive.sizes[0] == 0
