"""The pure-DP (two-sided geometric) side of the calculators, checked against direct sums
over the geometric pmf and against the engine's own scale and threshold."""

from __future__ import annotations

from fractions import Fraction

import mpmath
import numpy as np
import pytest

from calculators import adaptive, budget, geometric, noise_family, suppression
from calculators.levels import PopulationGroupLevel
from calculators.presets import production_2020

# a support wide enough that the mass left out is below 1e-30 for every scale used here
_K = np.arange(-6000, 6001)


def _pmf(b: float) -> np.ndarray:
    a = np.exp(-1 / b)
    return (1 - a) / (1 + a) * a ** np.abs(_K)


def test_family_dispatch_and_scales():
    assert noise_family.family_of("zcdp") == "gaussian" and noise_family.family_of("puredp") == "geometric"
    with pytest.raises(ValueError, match="privacy_defn"):
        noise_family.family_of("approx")
    with pytest.raises(ValueError, match="noise must be"):
        noise_family.law("laplace")
    # sigma2 = S / (2 share rho); b = S / (share eps)
    assert budget.noise_scale(0.5, 9, 0.9) == pytest.approx(9 / (2 * 0.9 * 0.5))
    assert budget.noise_scale(0.5, 9, 0.9, "geometric") == pytest.approx(9 / (0.9 * 0.5))
    assert budget.noise_scale_exact("0.159", 9, Fraction(9, 10), "geometric") == Fraction(9) / (Fraction(9, 10) * Fraction("0.159"))
    assert budget.noise_scale_exact("0.159", 9, Fraction(9, 10)) == budget.sigma2_exact(Fraction("0.159"), 9, Fraction(9, 10))
    with pytest.raises(ValueError, match="budget"):
        budget.noise_scale(0, 9, 0.9, "geometric")
    # the bound's variance: sigma2 itself, or the geometric's 2a/(1-a)^2
    assert noise_family.variance_parameter(7.0) == 7.0
    assert noise_family.variance_parameter(3.0, "geometric") == pytest.approx(float((_pmf(3.0) * _K**2).sum()), rel=1e-12)


def _mp_tail_sums(k: int, b: float) -> tuple[float, float]:
    """(sum_{i > k} i P(i), sum_{i > k} P(i)) at 40 digits, term by term (no cancellation
    trick: the reference has to be independent of the closed form)."""
    with mpmath.workdps(40):
        a = mpmath.exp(-1 / mpmath.mpf(b))
        c = (1 - a) / (1 + a)
        hi = int(80 * b) + 200 + max(k, 0)
        num = mpmath.fsum(i * c * a ** abs(i) for i in range(k + 1, hi))
        den = mpmath.fsum(c * a ** abs(i) for i in range(k + 1, hi))
        return float(num), float(den)


@pytest.mark.parametrize("b", [0.4, 2.0, 25.0])
def test_geometric_partial_and_truncated_means_are_the_direct_sums(b):
    for k in (-40, -7, -1, 0, 1, 5, 60):
        num, den = _mp_tail_sums(k, b)
        assert geometric.partial_mean(k, b) == pytest.approx(num, rel=1e-10)
        assert geometric.truncated_mean(k, b) == pytest.approx(num / den, rel=1e-10)
    # arrays give the scalar answers
    ks = np.array([-3, 0, 4])
    assert np.allclose(geometric.truncated_mean(ks, b), [geometric.truncated_mean(int(k), b) for k in ks])


def test_geometric_truncated_mean_far_in_the_tail_is_memoryless():
    # P(X > k) underflows far beyond the float range, the conditional mean does not
    b = 2.0
    a = np.exp(-1 / b)
    assert geometric.sf(5000, b) == 0.0
    assert geometric.truncated_mean(5000, b) == pytest.approx(5001 + a / (1 - a), rel=1e-12)


def test_geometric_moe_for_budget_and_its_inversions():
    S, g = 9, 0.1
    eps = 0.4
    b2 = S / ((1 - g) * eps)
    assert budget.moe_for_rho(eps, S, g, exact=True, noise="geometric") == geometric.moe(b2)
    assert budget.moe_for_rho(eps, S, g, stage="stage1", exact=True, noise="geometric") == geometric.moe(S / (g * eps))
    sd = np.sqrt(geometric.variance(b2))
    assert budget.moe_for_rho(eps, S, g, noise="geometric") == int(np.floor(1.96 * sd))
    for m in (3, 11, 50):
        e = budget.rho_level_for_exact_moe(m, S, g, noise="geometric")
        assert budget.moe_for_rho(e, S, g, exact=True, noise="geometric") <= m
        assert budget.moe_for_rho(e * (1 - 1e-9), S, g, exact=True, noise="geometric") > m  # the smallest
        e2 = float(budget.rho_level_for_moe(m, S, g, noise="geometric"))
        v = geometric.variance(S / ((1 - g) * e2))
        assert 1.96 * np.sqrt(v) == pytest.approx(m, rel=1e-9)  # floor(1.96 sd) = m exactly at e2
        assert budget.moe_for_rho(e2, S, g, noise="geometric") == m  # the 1e-12 guard keeps it at m
        assert budget.moe_for_rho(e2 * 1.001, S, g, noise="geometric") < m  # more budget, less noise


@pytest.mark.parametrize("b,cells", [(0.7, 8), (3.0, 18), (12.0, 46)])
def test_geometric_moe_of_sum_is_the_convolved_law(b, cells):
    h = int(40 * b) + 3
    k = np.arange(-h, h + 1)
    one = np.asarray(geometric.pmf(k, b))
    law = np.array([1.0])
    for _ in range(cells):  # plain repeated convolution: an independent route
        law = np.convolve(law, one)
    centre = len(law) // 2
    inside = np.array([law[centre - m: centre + m + 1].sum() for m in range(centre)])
    want = int(np.argmax(inside >= 0.95))
    assert budget.moe_of_sum(b, cells, exact=True, noise="geometric") == want
    assert budget.moe_of_sum(b, cells, noise="geometric") == int(np.floor(1.96 * np.sqrt(cells * geometric.variance(b))))


def test_geometric_sum_of_wide_cells_falls_back_to_the_same_variance():
    b, c = 5000.0, 46
    got = budget.moe_of_sum(b, c, exact=True, noise="geometric")
    assert abs(got - 1.96 * np.sqrt(c * geometric.variance(b))) < 0.01 * got


def test_stat_level_probabilities_under_geometric_noise():
    b, th = 6.0, (10, 40, 90)
    p = _pmf(b)
    for n in (0, 12, 45, 200):
        noisy = n + _K
        want = [p[noisy < th[0]].sum(), p[(noisy >= th[0]) & (noisy < th[1])].sum(),
                p[(noisy >= th[1]) & (noisy < th[2])].sum(), p[noisy >= th[2]].sum()]
        got = adaptive.stat_level_probabilities(n, th, b, noise="geometric")
        assert np.allclose(got, want, rtol=1e-9, atol=1e-15)
    # the geometric law is not the Gaussian one with the same number
    assert not np.allclose(adaptive.stat_level_probabilities(12, th, b, noise="geometric"),
                           adaptive.stat_level_probabilities(12, th, b))
    cell = geometric.moe(b)
    assert adaptive.derive_thresholds(0.1, b, noise="geometric") == tuple(int(np.ceil(c * cell / 0.1)) for c in (8, 18, 46))


def test_suppression_under_geometric_noise_matches_direct_sums_and_the_engine():
    from engine.tabulation.mechanism import level_plan

    cfg = production_2020().updated(privacy_defn="puredp")
    county = PopulationGroupLevel("COUNTY", 2)
    plan = level_plan(cfg, county, 9)
    b = float(plan.stage2)
    t = suppression.threshold(b, 0.9999, noise="geometric")
    assert t == plan.suppression_threshold
    p = _pmf(b)
    cdf = np.cumsum(p)
    assert cdf[_K == t][0] >= 0.9999 > cdf[_K == t - 1][0]
    for n in (0, t, 3 * t):
        noisy = n + _K
        rel = noisy > t
        assert suppression.suppression_probability(n, t, b, noise="geometric") == pytest.approx(p[~rel].sum(), rel=1e-9)
        assert suppression.release_bias(n, t, b, noise="geometric") == pytest.approx(
            (_K * p)[rel].sum() / p[rel].sum(), rel=1e-9)
        assert suppression.expected_published_value(n, t, b, noise="geometric") == pytest.approx(
            (noisy * p)[rel].sum(), rel=1e-9)
    c = suppression.curves(t, b, noise="geometric")
    assert np.allclose(c["suppression_probability"], suppression.suppression_probability(c["n"], t, b, noise="geometric"))
