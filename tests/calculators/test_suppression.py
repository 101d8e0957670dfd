"""Suppression of small totals: threshold, suppression probability, release bias."""

from __future__ import annotations

import math
from fractions import Fraction

from tests.calculators import _calc_mpref as ref
import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calculators import discrete_gaussian, suppression

S2_COUNTY = 9 / (2 * 0.9 * 0.159)  # production sub-state Detailed stage 2
SIGMA2S = [0.01, 0.5, 1.0, S2_COUNTY, 31.4, 5625.0, 1e4, 1e6, 1e8]
PROBS = [0.5, 0.9, 0.99, 0.9999, 1 - 1e-12]


@pytest.mark.parametrize("s2", SIGMA2S)
def test_threshold_is_exact_smallest_k(s2: float) -> None:
    with mpmath.workdps(ref.DPS):
        for p in PROBS:
            T = suppression.threshold(s2, p)
            assert isinstance(T, int)
            assert ref.cdf(T, s2) >= mpmath.mpf(p) > ref.cdf(T - 1, s2), (s2, p, T)
            # a true zero is suppressed (noisy <= T) with probability >= p
            assert suppression.suppression_probability(0, T, s2) >= p * (1 - 1e-15)


def test_threshold_off_and_invalid() -> None:
    assert suppression.threshold(S2_COUNTY, 0) is None
    assert suppression.threshold(S2_COUNTY, 0.0) is None
    for bad in (1, 1.0, -0.1, 1.5, float("nan")):
        with pytest.raises(ValueError, match="zero-suppression chance"):
            suppression.threshold(S2_COUNTY, bad)
    with pytest.raises(ValueError, match="zero-suppression chance"):
        suppression.threshold(S2_COUNTY, "high")  # type: ignore[arg-type]


def test_threshold_with_exact_sigma2() -> None:
    s2 = Fraction(9) / (2 * Fraction(9, 10) * Fraction(159, 1000))
    assert suppression.threshold(s2, 0.9999) == suppression.threshold(float(s2), 0.9999)


@pytest.mark.parametrize("s2", [0.5, S2_COUNTY, 1e4, 1e8])
def test_release_bias_matches_direct_mpmath_sum(s2: float) -> None:
    T = suppression.threshold(s2, 0.9999)
    sigma = math.sqrt(s2)
    for n in sorted({0, 1, T, T + 1, int(T + 3 * sigma), int(T + 10 * sigma), int(T + 30 * sigma)}):
        k = T - n  # released iff X > T - n
        with mpmath.workdps(ref.DPS):
            bias = ref.partial_mean(k, s2) / ref.sf(k, s2)
            pub = n * ref.sf(k, s2) + ref.partial_mean(k, s2)
        assert ref.rel_err(suppression.release_bias(n, T, s2), bias) <= 1e-9, (s2, n)
        assert ref.rel_err(suppression.expected_released_value(n, T, s2), n + bias) <= 1e-9
        assert ref.rel_err(suppression.expected_published_value(n, T, s2), pub) <= 1e-9
        assert ref.rel_err(suppression.suppression_probability(n, T, s2), ref.cdf(k, s2)) <= 1e-9
        assert suppression.release_bias(n, T, s2) > 0


def test_against_plain_float_sums_small_sigma2() -> None:
    s2, T = 4.0, 7
    x = np.arange(-80, 81)
    w = np.exp(-x * x / (2 * s2))
    w /= w.sum()
    for n in range(20):
        rel = n + x > T
        assert suppression.suppression_probability(n, T, s2) == pytest.approx(
            w[~rel].sum(), rel=1e-12
        )
        assert suppression.release_bias(n, T, s2) == pytest.approx(
            (x * w)[rel].sum() / w[rel].sum(), rel=1e-10
        )
        assert suppression.expected_published_value(n, T, s2) == pytest.approx(
            ((n + x) * w)[rel].sum(), rel=1e-12
        )


@settings(max_examples=60, deadline=None)
@given(
    s2=st.floats(min_value=0.05, max_value=1e6), n1=st.integers(0, 10**5), n2=st.integers(0, 10**5)
)
def test_suppression_probability_decreases_in_n(s2: float, n1: int, n2: int) -> None:
    T = suppression.threshold(s2, 0.9999)
    lo, hi = sorted((n1, n2))
    assert suppression.suppression_probability(hi, T, s2) <= suppression.suppression_probability(
        lo, T, s2
    )
    # and the bias of what gets released shrinks as the count grows
    assert suppression.release_bias(hi, T, s2) <= suppression.release_bias(lo, T, s2) * (1 + 1e-12)


def test_suppression_off() -> None:
    n = np.array([0, 5, 50])
    np.testing.assert_array_equal(suppression.suppression_probability(n, None, 3.0), 0.0)
    np.testing.assert_array_equal(suppression.release_bias(n, None, 3.0), 0.0)
    np.testing.assert_array_equal(suppression.expected_released_value(n, None, 3.0), n)
    np.testing.assert_array_equal(suppression.expected_published_value(n, None, 3.0), n)


def test_curves() -> None:
    T = suppression.threshold(S2_COUNTY, 0.9999)
    c = suppression.curves(T, S2_COUNTY, points=50)
    assert set(c) == {
        "n",
        "n_over_T",
        "suppression_probability",
        "release_bias",
        "expected_released_value",
    }
    n = c["n"]
    assert (
        n[0] == 0 and n[-1] == max(2 * T, T + math.ceil(6 * math.sqrt(S2_COUNTY))) and len(n) <= 50
    )
    assert np.all(np.diff(n) > 0)
    np.testing.assert_allclose(c["n_over_T"], n / T)
    np.testing.assert_array_equal(
        c["suppression_probability"], suppression.suppression_probability(n, T, S2_COUNTY)
    )
    np.testing.assert_array_equal(c["release_bias"], suppression.release_bias(n, T, S2_COUNTY))
    np.testing.assert_allclose(c["expected_released_value"], n + c["release_bias"])
    assert np.all(np.diff(c["suppression_probability"]) <= 0)
    c2 = suppression.curves(T, S2_COUNTY, n_max=10, points=500)
    np.testing.assert_array_equal(c2["n"], np.arange(11))
    assert discrete_gaussian.cdf(T, S2_COUNTY) == c2["suppression_probability"][0]


def test_release_bias_eq13_is_the_papers_inverse_mills_ratio():
    """Haney et al. eq. (13): sigma phi(z) / (1 - Phi(z)), z = (T - n) / sigma, with the
    standard normal (checked against scipy); below the exact discrete bias by < 1 person."""
    import math

    from scipy.stats import norm

    from calculators import budget

    s2 = float(budget.sigma2_stage2(0.159, 0.1, 9))
    sd = math.sqrt(s2)
    n = np.array([0, 5, 10, 21, 30, 60])
    got = suppression.release_bias_eq13(n, 21, s2)
    z = (21 - n) / sd
    assert np.allclose(got, sd * norm.pdf(z) / norm.sf(z), rtol=1e-12)
    exact = suppression.release_bias(n, 21, s2)
    assert ((exact - got) > 0).all() and ((exact - got) < 1).all()
    assert suppression.release_bias_eq13(0, None, s2) == 0
    assert suppression.release_bias_eq13(-10_000, 21, 1.0) == pytest.approx(10_021 + 1 / 10_021)
