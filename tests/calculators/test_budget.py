"""Privacy accounting, sigma^2, MOE <-> rho and (epsilon, delta) conversions."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calculators import budget, discrete_gaussian
from calculators.config import SafeTabConfig
from calculators.presets import production_2020
from calculators.levels import POPULATION_GROUP_LEVELS, PopulationGroupLevel


def test_stability() -> None:
    assert budget.stability(8) == 9
    assert budget.stability(3) == 4
    assert budget.stability(1) == 3 and budget.stability(2) == 3  # max(2, r)
    assert budget.stability(8, h_r=2, h_e=3) == 2 * 8 + 3
    assert list(budget.stability(np.array([1, 2, 5, 8]))) == [3, 3, 6, 9]
    with pytest.raises(ValueError, match="max_race_codes"):
        budget.stability(0)


def test_sigma2_per_stage() -> None:
    rho, gamma, S = 0.159, 0.1, 9
    assert budget.sigma2(rho, S) == pytest.approx(9 / (2 * 0.159))
    assert budget.sigma2_total_only(rho, S) == pytest.approx(9 / (2 * 0.159))
    assert budget.sigma2_stage1(rho, gamma, S) == pytest.approx(9 / (2 * 0.1 * 0.159))
    assert budget.sigma2_stage2(rho, gamma, S) == pytest.approx(9 / (2 * 0.9 * 0.159))
    assert budget.sigma2(rho, S, share=0.25) == pytest.approx(9 / (2 * 0.25 * 0.159))
    np.testing.assert_allclose(budget.sigma2(np.array([1.0, 2.0]), 4), [2.0, 1.0])
    with pytest.raises(ValueError, match="rho"):
        budget.sigma2(0, 9)


def test_sigma2_exact_is_rational() -> None:
    s2 = budget.sigma2_exact(0.159, 9, Fraction(9, 10))
    assert isinstance(s2, Fraction)
    assert s2 == Fraction(9) / (2 * Fraction(9, 10) * Fraction(159, 1000))
    assert budget.sigma2_exact(Fraction(1, 3), 4) == Fraction(6)
    assert budget.sigma2_exact(2.134, 9, 1 - Fraction(1, 10)) == Fraction(9) / (
        2 * Fraction(9, 10) * Fraction(2134, 1000)
    )
    with pytest.raises(ValueError):
        budget.sigma2_exact(0, 9)


def test_moe_bound_and_exact() -> None:
    assert budget.moe_bound(100.0) == math.floor(1.96 * 10)
    assert budget.moe_bound(31.4) == math.floor(1.96 * math.sqrt(31.4))
    assert budget.moe_exact(31.4) == discrete_gaussian.moe(31.4)
    assert list(budget.moe_bound(np.array([1.0, 4.0]))) == [1, 3]


@pytest.mark.parametrize("moe", list(range(1, 60)) + [100, 1000])
def test_design_paper_inversion_round_trips(moe: int) -> None:
    for S in (3, 9):
        rho = budget.rho_level_for_moe(moe, S, 0.1)
        assert rho == pytest.approx(1.96**2 * S / (2 * moe**2) / 0.9, rel=1e-15)
        assert budget.moe_for_rho(rho, S, 0.1) == moe
        # a little less budget and the bound is above the target
        assert budget.moe_for_rho(rho * (1 - 1e-6), S, 0.1) >= moe


def test_2020_budgets_recovered_from_moe_targets() -> None:
    S = budget.stability(8)
    assert round(budget.rho_level_for_moe(3, S, 0.1), 3) == 2.134
    assert round(budget.rho_level_for_moe(11, S, 0.1), 3) == 0.159
    assert round(budget.rho_level_for_moe(50, S, 0.1), 3) == 0.008


def test_moe_for_rho_stages() -> None:
    rho, S, g = 0.159, 9, 0.1
    assert budget.moe_for_rho(rho, S, g, stage="stage1") == math.floor(
        1.96 * math.sqrt(9 / (2 * 0.1 * 0.159))
    )
    assert budget.moe_for_rho(rho, S, stage="total_only") == math.floor(
        1.96 * math.sqrt(9 / (2 * 0.159))
    )
    assert budget.moe_for_rho(rho, S, g, exact=True) == discrete_gaussian.moe(9 / (2 * 0.9 * 0.159))
    with pytest.raises(ValueError, match="gamma"):
        budget.moe_for_rho(rho, S)
    with pytest.raises(ValueError, match="stage"):
        budget.moe_for_rho(rho, S, g, stage="stage3")  # type: ignore[arg-type]


@pytest.mark.parametrize("moe", [0, 1, 2, 3, 11, 50, 400])
def test_rho_level_for_exact_moe_is_smallest(moe: int) -> None:
    S, g = 9, 0.1
    rho = budget.rho_level_for_exact_moe(moe, S, g)
    assert budget.moe_for_rho(rho, S, g, exact=True) <= moe
    assert budget.moe_for_rho(rho * (1 - 1e-9), S, g, exact=True) > moe
    # continuity correction: the exact MOE is about 1.96 sigma - 1/2, so its budget lies
    # between the design-paper budgets for moe + 1 and moe, close to that for moe + 1/2
    if moe:
        assert budget.rho_level_for_moe(moe + 1, S, g) < rho <= budget.rho_level_for_moe(moe, S, g)
    if moe >= 11:
        assert rho == pytest.approx(budget.rho_level_for_moe(moe + 0.5, S, g), rel=0.01)


@pytest.mark.parametrize("noise", ["gaussian", "geometric"])
def test_exact_inversion_reused_across_r_and_gamma_is_still_smallest(noise: str) -> None:
    # the scale boundary of a target is searched once and reused for every S and gamma:
    # each reuse must still give the smallest passing budget for its own S and gamma
    for moe in (3, 11, 50):
        for S, g in ((9, 0.1), (3, 0.1), (9, 0.37), (4, 0.05), (9, 0.1)):
            rho = budget.rho_level_for_exact_moe(moe, S, g, noise=noise)
            assert budget.moe_for_rho(rho, S, g, exact=True, noise=noise) <= moe
            assert budget.moe_for_rho(rho * (1 - 1e-9), S, g, exact=True, noise=noise) > moe


def _convolved_moe(s2: float, cells: int, conf: float = 0.95) -> int:
    K = int(40 * math.sqrt(s2)) + 5
    p = discrete_gaussian.pmf(np.arange(-K, K + 1), s2)
    q = np.array([1.0])
    for _ in range(cells):
        q = np.convolve(q, p)
    k = np.arange(len(q)) - len(q) // 2
    return next(m for m in range(len(q)) if q[np.abs(k) <= m].sum() >= conf)


def test_moe_of_sum() -> None:
    for s2, c in [(31.4, 1), (31.4, 8), (31.4, 46), (1e4, 18)]:
        assert budget.moe_of_sum(s2, c) == math.floor(1.96 * math.sqrt(c * s2))
        assert budget.moe_of_sum(s2, c, exact=True) == discrete_gaussian.moe(c * s2)
    # the discrete-Gaussian approximation of a sum against the true convolution
    for s2, c in [(2.0, 8), (3.7, 18), (10.0, 46), (31.4, 8), (0.1, 8), (0.3, 18), (1.0, 46)]:
        assert budget.moe_of_sum(s2, c, exact=True) == _convolved_moe(s2, c), (s2, c)
    assert list(budget.moe_of_sum(np.array([0.1, 31.4]), 8, exact=True)) == [
        _convolved_moe(0.1, 8),
        _convolved_moe(31.4, 8),
    ]


def _config(**changes: object) -> SafeTabConfig:
    # Every key is required (calculators.config): start from all budgets 0.
    data: dict[str, object] = production_2020().to_dict()
    data.update({lvl.budget_key: 0 for lvl in POPULATION_GROUP_LEVELS})
    data.update(changes)
    return SafeTabConfig.from_dict(data)


def test_plan_totals_equal_hand_sums() -> None:
    cfg = _config(
        privacy_budget_p_level_2_usa=1.5,
        privacy_budget_p_level_1_state=0.25,
        privacy_budget_p_level_2_county=0.125,
        privacy_budget_p_level_2_aiannh=0.5,
        privacy_budget_p_level_1_pr_state=0.75,
        privacy_budget_p_level_2_pr_tract=0.5,
    )
    t = budget.plan_totals(cfg)
    us = 1.5 + 0.25 + 0.125 + 0.5
    pr = 0.75 + 0.5
    assert (t.us, t.pr, t.release) == (us, pr, us)
    assert (t.us_bounded, t.pr_bounded, t.release_bounded) == (2 * us, 2 * pr, 2 * us)

    t2 = budget.plan_totals(cfg.updated(run_us=False))
    assert (t2.us, t2.pr, t2.release, t2.release_bounded) == (0.0, pr, pr, 2 * pr)
    t3 = budget.plan_totals(cfg.updated(run_pr=False, privacy_budget_p_level_1_pr_place=9.0))
    assert (t3.pr, t3.release) == (0.0, us)

    budgets = {PopulationGroupLevel("PR-COUNTY", 2): 3.0, PopulationGroupLevel("TRACT", 1): 1.0}
    t4 = budget.plan_totals_from_budgets(budgets)
    assert (t4.us, t4.pr, t4.release, t4.release_bounded) == (1.0, 3.0, 3.0, 6.0)


# ------------------------------------------------------------ (epsilon, delta)
RHOS = [1e-6, 1e-3, 0.05, 1.0, 4.944, 10.0, 100.0]
DELTAS = [1e-15, 1e-10, 1e-5, 0.1]


def _brute_epsilon(rho: float, delta: float) -> float:
    alpha = 1 + np.exp(np.linspace(-20, 25, 200_001))
    L = -math.log(delta)
    eps = alpha * rho + (L + (alpha - 1) * np.log1p(-1 / alpha) - np.log(alpha)) / (alpha - 1)
    return float(np.min(eps))


@pytest.mark.parametrize("rho", RHOS)
@pytest.mark.parametrize("delta", DELTAS)
def test_epsilon_tight_below_classic_and_optimal(rho: float, delta: float) -> None:
    tight = budget.epsilon_tight(rho, delta)
    classic = budget.epsilon_classic(rho, delta)
    assert classic == pytest.approx(rho + 2 * math.sqrt(rho * math.log(1 / delta)))
    assert 0 <= tight <= classic
    brute = max(0.0, _brute_epsilon(rho, delta))
    assert tight <= brute + 1e-12
    assert tight == pytest.approx(brute, rel=1e-6, abs=1e-12)


@pytest.mark.parametrize("rho", RHOS)
@pytest.mark.parametrize("delta", DELTAS)
def test_delta_for_epsilon_inverts_epsilon_tight(rho: float, delta: float) -> None:
    eps = budget.epsilon_tight(rho, delta)
    if eps > 0:
        assert budget.delta_for_epsilon(rho, eps) == pytest.approx(delta, rel=1e-6)


def test_zero_rho() -> None:
    assert budget.epsilon_tight(0, 1e-10) == 0.0
    assert budget.epsilon_classic(0, 1e-10) == 0.0
    assert budget.delta_for_epsilon(0, 1.0) == 0.0


@settings(max_examples=40, deadline=None)
@given(rho=st.floats(min_value=1e-6, max_value=100), e1=st.floats(0.01, 50), e2=st.floats(0.01, 50))
def test_delta_decreases_with_epsilon(rho: float, e1: float, e2: float) -> None:
    lo, hi = sorted((e1, e2))
    assert budget.delta_for_epsilon(rho, hi) <= budget.delta_for_epsilon(rho, lo) * (1 + 1e-9)


def test_epsilon_array_calls() -> None:
    rho = np.array([0.0, 0.1, 2.0])
    assert list(budget.epsilon_tight(rho, 1e-10)) == [budget.epsilon_tight(r, 1e-10) for r in rho]
    with pytest.raises(ValueError, match="delta"):
        budget.epsilon_tight(1.0, 0.0)


@pytest.mark.timeout(30)
@pytest.mark.parametrize("rho,gamma", [(1e-40, 0.1), (0.1, 1e-40), (1e-300, 1e-300)])
def test_extreme_budgets_fail_fast_instead_of_hanging(rho, gamma):
    # MOEs of budgets far below the configuration range: a ValueError, never a hang
    # (nor a wrapped-around int64); a stage whose own budget is fine still answers.
    for exact in (True, False):
        for stage, share in (("stage1", gamma), ("stage2", 1 - gamma)):
            if rho * share > 1e-20:
                assert 0 <= budget.moe_for_rho(rho, 9, gamma, stage=stage, exact=exact) < 100
                continue
            with pytest.raises(ValueError, match="at most|finite"):
                budget.moe_for_rho(rho, 9, gamma, stage=stage, exact=exact)


@pytest.mark.timeout(30)
def test_inverting_a_huge_moe_target_is_bounded():
    try:
        rho = budget.rho_level_for_exact_moe(10**20, 9, 0.1)
    except ValueError as exc:
        assert "at most" in str(exc)
    else:
        assert rho > 0


# ------------------------------------------------ MOE of a sum of mixed scales
def _direct_moe(parts, law, confidence=0.95):
    """P(|sum| <= m) by an explicit sum over every combination of cell values."""
    from itertools import product

    cells = [s for s, c in parts for _ in range(c)]
    half = [int(math.sqrt(80 * s)) + 3 if law is discrete_gaussian else int(40 * s) + 3 for s in cells]
    dist = {0: 1.0}
    for s, h in zip(cells, half):
        p = {k: float(law.pmf(k, s)) for k in range(-h, h + 1)}
        new: dict[int, float] = {}
        for (a, pa), (b, pb) in product(dist.items(), p.items()):
            new[a + b] = new.get(a + b, 0.0) + pa * pb
        dist = new
    m = 0
    while sum(v for k, v in dist.items() if abs(k) <= m) < confidence:
        m += 1
    return m


@pytest.mark.parametrize("parts", [[(3.0, 1)], [(3.0, 1), (0.5, 2)], [(0.1, 8)], [(31.4, 1), (2.0, 3), (7.5, 1)]])
def test_moe_of_independent_sum_is_the_exact_law_of_the_sum(parts):
    got, exact = budget.moe_of_independent_sum(parts)
    assert exact and got == _direct_moe(parts, discrete_gaussian)
    if len(parts) == 1:  # the same as the one-scale function
        assert got == budget.moe_of_sum(parts[0][0], parts[0][1], exact=True)


def test_moe_of_independent_sum_geometric_and_order_free():
    from calculators import geometric

    parts = [(1.5, 2), (4.0, 1)]
    got, exact = budget.moe_of_independent_sum(parts, noise="geometric")
    assert exact and got == _direct_moe(parts, geometric)
    assert budget.moe_of_independent_sum(parts[::-1], noise="geometric") == (got, True)
    assert budget.moe_of_independent_sum([]) == (0, True)


def test_moe_of_independent_sum_falls_back_and_says_so_when_too_wide():
    got, exact = budget.moe_of_independent_sum([(1e4, 3000)], noise="geometric")
    var = float(__import__("calculators").geometric.variance(1e4)) * 3000
    assert not exact and got == discrete_gaussian.moe(var)


@pytest.mark.parametrize("parts, message", [([(1.0, 0)], "cells"), ([(1.0, 1.5)], "cells"), ([(-1.0, 1)], "scale")])
def test_moe_of_independent_sum_bad_parts(parts, message):
    with pytest.raises(ValueError, match=message):
        budget.moe_of_independent_sum(parts)
