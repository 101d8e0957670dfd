"""The plan model (calculators.plan): per-level figures, the national headline, one format."""

from __future__ import annotations

import math

import numpy as np
import pytest

from calculators import adaptive, budget, plan, presets, suppression
from calculators.levels import POPULATION_GROUP_LEVELS, PopulationGroupLevel
from calculators.projection import project
from tests.calculators.test_projection import _profile

USA1 = PopulationGroupLevel("USA", 1)
COUNTY2 = PopulationGroupLevel("COUNTY", 2)
TRACT2 = PopulationGroupLevel("TRACT", 2)
PRCOUNTY2 = PopulationGroupLevel("PR-COUNTY", 2)


@pytest.mark.parametrize("value, kind, text", [
    (2.134567, plan.BUDGET, "2.135"), (0.0081234, plan.BUDGET, "0.008123"), (0.159, plan.BUDGET, "0.159"),
    (0, plan.BUDGET, "0"), (1e6, plan.BUDGET, "1,000,000"), (9.99996, plan.BUDGET, "10.00"),
    (0.99995, plan.NUMBER, "0.99995"), (0.2647, plan.NUMBER, "0.2647"), (18.3, plan.NUMBER, "18.3"),
    (1234567.6, plan.COUNT, "1,234,568"), (-2312345.2, plan.COUNT, "−2,312,345"), (49, plan.COUNT, "49"),
    (0.81818, plan.SHARE, "81.8 %"), (0.99934, plan.SHARE, "99.9 %"), (0.0012345, plan.SHARE, "0.123 %"),
    (1.0, plan.SHARE, "100 %"), (117.94, plan.NUMBER, "117.9"), (25.36281, plan.NUMBER, "25.36"),
    (None, plan.COUNT, "—"), (math.nan, plan.SHARE, "—"), (math.inf, plan.NUMBER, "∞"),
])
def test_one_format_rule(value, kind, text):
    assert plan.fmt(value, kind) == text


def test_changes_are_signed_and_shares_change_in_points():
    assert plan.fmt_change(-2312345.4, plan.COUNT) == "−2,312,345"
    assert plan.fmt_change(1234, plan.COUNT) == "+1,234"
    assert plan.fmt_change(0.2, plan.COUNT) == "0"
    assert plan.fmt_change(0.0123, plan.SHARE) == "+1.23 points"
    assert plan.fmt_change(-0.5, plan.BUDGET) == "−0.5"
    assert plan.fmt_change(None) == "—"


def test_level_names_are_the_planners():
    assert plan.level_name(USA1) == "USA Regional"
    assert plan.level_name(PRCOUNTY2) == "PR-COUNTY Detailed"


def test_level_figures_are_those_of_the_calculators():
    cfg = presets.production_2020()
    targets = {COUNTY2.key: 11, USA1.key: 40}
    figs = {f.level: f for f in plan.plan_levels(cfg, targets)}
    assert [f.level for f in figs.values()] == list(POPULATION_GROUP_LEVELS)
    S = int(budget.stability(cfg.max_race_codes))
    for lvl in (USA1, COUNTY2):
        f = figs[lvl]
        rho = cfg.rho(lvl)
        s2 = float(budget.noise_scale(rho, S, 1 - cfg.gamma))
        assert f.on and f.budget == rho and f.name == plan.level_name(lvl)
        assert f.sigma2_stage2 == pytest.approx(s2) and f.sigma == pytest.approx(math.sqrt(s2))
        assert f.moe_exact == int(budget.moe_for_rho(rho, S, cfg.gamma, exact=True))
        assert f.moe_bound == int(budget.moe_for_rho(rho, S, cfg.gamma, exact=False))  # ⌊1.96σ⌋, exactly
        assert abs(f.moe_bound - 1.96 * math.sqrt(s2)) < 1
        assert f.epsilon == pytest.approx(float(budget.epsilon_tight(rho, plan.DEFAULT_DELTA)))
        assert f.thresholds == tuple(cfg.thresholds(lvl))
    assert figs[USA1].suppression_threshold is None  # never at state and above
    exact_s2 = budget.noise_scale_exact(cfg.rho_exact(COUNTY2), S, 1 - cfg.gamma_exact)
    assert figs[COUNTY2].suppression_threshold == int(suppression.threshold(exact_s2, cfg.zero_suppression_chance))
    assert figs[COUNTY2].meets == (figs[COUNTY2].moe_exact <= 11)
    assert figs[USA1].meets is False  # the 2020 USA Regional MOE is 49 > 40
    off = plan.level_figures(cfg.updated(**{TRACT2.budget_key: 0.0}), TRACT2)
    assert not off.on and off.moe_exact is None and off.suppression_threshold is None


def test_changes_from_a_reference_per_level():
    ref = presets.production_2020()
    new = ref.updated(**{COUNTY2.budget_key: ref.rho(COUNTY2) / 4})
    rows = {r["level"]: r for r in plan.level_changes(plan.plan_levels(ref), plan.plan_levels(new))}
    assert rows[COUNTY2]["budget_change"] == pytest.approx(-0.75 * ref.rho(COUNTY2))
    assert rows[COUNTY2]["moe_exact_change"] > 0 and rows[USA1]["moe_exact_change"] == 0


def test_the_pages_use_the_plan_model_not_a_copy():
    from ui.core import planner
    from ui.safetab import analysis

    for name in ("level_moe", "epsilon_of", "rho_for_target", "stability_of", "noise_of", "resolve_targets"):
        assert getattr(planner, name) is getattr(plan, name), name
    assert analysis.sigmas is plan.sigmas and analysis.threshold_for is plan.threshold_for
    assert planner.level_label is plan.level_name


def _nation():
    rng = np.random.default_rng(3)
    sizes = np.concatenate([np.zeros(3000, int), rng.integers(1, 8, 800), rng.integers(20, 400, 150)])
    return _profile({COUNTY2: sizes, TRACT2: np.concatenate([np.zeros(500, int), rng.integers(1, 60, 300)]),
                     PRCOUNTY2: rng.integers(0, 30, 200), USA1: [5000, 90000]})


def test_the_headline_is_about_groups_that_exist():
    cfg = presets.production_2020()
    proj = project(cfg, _nation())
    h = plan.national_headline(proj)
    rows = proj.rows
    occ = sum(r["occupied"] for r in rows)
    assert h["occupied"] == occ
    assert h["published"] + h["suppressed"] == pytest.approx(occ)
    assert h["total_only"] + h["with_table"] == pytest.approx(h["published"])  # total only: never the suppressed
    assert h["age4"] + h["age9"] + h["age23"] == pytest.approx(h["with_table"])
    assert h["published_share"] == pytest.approx(h["published"] / occ)
    assert h["empty_published"] == pytest.approx(sum(r["empty_published"] for r in rows))
    assert h["persons_published_share"] == proj.total["persons_published_share"]
    table = {r["geography"]: r for r in plan.geography_table(proj)}
    assert list(table) == ["Nation", "County", "Tract", "Puerto Rico", "All levels"]
    assert table["County"]["occupied"] == proj.row(COUNTY2)["occupied"]
    assert table["County"]["persons_published_share"] == pytest.approx(proj.row(COUNTY2)["persons_published_share"])
    assert table["All levels"] == {"geography": "All levels", **h}
    # the persons' share of several levels weights each by its persons
    us = [proj.row(COUNTY2), proj.row(TRACT2)]
    assert sum(r["occupied"] for r in us) == table["County"]["occupied"] + table["Tract"]["occupied"]


def test_largest_changes_name_the_counts_that_moved_most():
    cfg = presets.production_2020()
    prof = _nation()
    ref = plan.national_headline(project(cfg, prof))
    new = plan.national_headline(project(cfg.updated(zero_suppression_chance=0.5), prof))
    ch = plan.national_changes(ref, new)
    assert ch["suppressed"] < 0 and ch["published"] == pytest.approx(-ch["suppressed"])
    phrases = plan.largest_changes(ref, new, limit=2)
    assert len(phrases) == 2 and all(p[0] in "+−" for p in phrases)
    assert phrases[0].endswith(plan.HEADLINE["suppressed"][0]) or phrases[0].endswith(plan.HEADLINE["published"][0])


def test_a_value_that_is_not_whole_never_reads_as_whole():
    # the pure-DP release epsilon 29.996 (sidebar, memo, Scenarios): "30.00", as before the plan model
    assert plan.fmt(29.996, plan.BUDGET) == "30.00"
    assert plan.fmt(30.0, plan.BUDGET) == "30"
    assert plan.fmt(0.1590, plan.BUDGET) == "0.159"
    assert plan.fmt_change(-29.996, plan.BUDGET) == "−30.00"
