"""Discrete Gaussian N_Z(0, sigma2) against 50-digit direct sums and its own properties."""

from __future__ import annotations

import math
from fractions import Fraction

from tests.calculators import _calc_mpref as ref
import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calculators import discrete_gaussian as dg

SIGMA2_GRID = [0.01, 0.5, 1, 31.4, 5625, 1e4, 1e6, 1e8]
RTOL = 1e-9
TINY = mpmath.mpf("1e-300")

sigma2s = st.floats(min_value=0.01, max_value=1e8).map(lambda x: float(x))
log_sigma2s = st.floats(min_value=math.log(0.01), max_value=math.log(1e8)).map(math.exp)


def _grid_ks(s2: float) -> list[int]:
    """k from the centre out to the last k whose tail is still >= 1e-300."""
    sigma = math.sqrt(s2)
    k_far = int(math.sqrt(2 * s2 * 300 * math.log(10)))  # exp(-k^2/(2 s2)) ~ 1e-300
    ks = {0, 1, 2, 3, k_far - 1, k_far, k_far + 1}
    ks |= {round(z * sigma) for z in (0.3, 1, 2, 5, 10, 20, 30, 36)}
    return sorted(k for k in ks if k >= 0)


@pytest.mark.parametrize("s2", SIGMA2_GRID)
def test_cdf_sf_match_50_digit_direct_sums(s2: float) -> None:
    checked_far_tail = False
    for k in _grid_ks(s2):
        tail = ref.sf(k, s2)  # P(X > k) = P(X <= -k-1), the small side
        big = ref.cdf(k, s2)
        # log space: accurate even below the float range
        assert abs(dg.logsf(k, s2) - float(mpmath.log(tail))) <= RTOL * max(
            1.0, abs(float(mpmath.log(tail)))
        )
        assert abs(dg.logcdf(-k - 1, s2) - float(mpmath.log(tail))) <= RTOL * max(
            1.0, abs(float(mpmath.log(tail)))
        )
        if tail >= TINY:
            assert ref.rel_err(dg.sf(k, s2), tail) <= RTOL, (k, s2)
            assert ref.rel_err(dg.cdf(-k - 1, s2), tail) <= RTOL, (k, s2)
            if tail < mpmath.mpf("1e-190"):  # 0.01 jumps from 1e-196 to 1e-348
                checked_far_tail = True
        else:
            assert dg.sf(k, s2) < 1e-290
        assert ref.rel_err(dg.cdf(k, s2), big) <= RTOL
        assert ref.rel_err(dg.sf(-k - 1, s2), big) <= RTOL
    assert checked_far_tail


@pytest.mark.parametrize("s2", SIGMA2_GRID)
def test_normalizer_and_variance_match_direct_sums(s2: float) -> None:
    assert ref.rel_err(dg.normalizer(s2), ref.normalizer(s2)) <= 1e-12
    assert abs(dg.log_normalizer(s2) - float(mpmath.log(ref.normalizer(s2)))) <= 1e-12 * max(
        1, math.log(s2)
    )
    assert ref.rel_err(dg.variance(s2), ref.variance(s2)) <= 1e-12
    assert dg.variance(s2) <= s2


@pytest.mark.parametrize("s2", [0.01, 1, 31.4, 1e4, 1e8])
def test_partial_and_truncated_means_match_direct_sums(s2: float) -> None:
    sigma = math.sqrt(s2)
    for k in sorted({round(z * sigma) for z in (-30, -8, -2, -0.5, 0, 0.5, 2, 8, 30)}):
        pm = ref.partial_mean(k, s2)
        tm = pm / ref.sf(k, s2)
        if pm >= TINY:
            assert ref.rel_err(dg.partial_mean(k, s2), pm) <= RTOL, (k, s2)
        assert ref.rel_err(dg.truncated_mean(k, s2), tm) <= RTOL, (k, s2)


def test_partial_mean_pairing_identity_against_plain_float_sum() -> None:
    # the reference uses the exact cancellation of i and -i; check it on a plain sum
    s2 = 2.0
    i = np.arange(-60, 61)
    w = np.exp(-i * i / (2 * s2))
    w /= w.sum()
    for k in range(-6, 6):
        direct = float(np.sum((i * w)[i > k]))
        assert dg.partial_mean(k, s2) == pytest.approx(direct, rel=1e-12, abs=1e-15)


@pytest.mark.parametrize("s2", SIGMA2_GRID)
def test_inverse_cdf_is_exactly_the_smallest_k(s2: float) -> None:
    probs = [1e-300, 1e-12, 0.025, 0.3, 0.5, 0.7, 0.975, 0.9999, 1 - 1e-12]
    sigma = math.sqrt(s2)
    # p equal to the float CDF at some k is the hardest case (a tie up to rounding)
    for k in {0, 1, -1, int(2 * sigma), -int(2 * sigma), int(5 * sigma)}:
        p = float(dg.cdf(k, s2))
        if 0 < p <= 1 - 1e-12:
            probs.append(p)
    with mpmath.workdps(ref.DPS):
        for p in probs:
            k = dg.inverse_cdf(p, s2)
            assert isinstance(k, int)
            assert ref.cdf(k, s2) >= mpmath.mpf(p) > ref.cdf(k - 1, s2), (s2, p, k)


@pytest.mark.parametrize("s2", SIGMA2_GRID)
@pytest.mark.parametrize("confidence", [0.5, 0.9, 0.95, 0.99])
def test_moe_is_exactly_the_smallest_half_width(s2: float, confidence: float) -> None:
    m = dg.moe(s2, confidence)
    assert isinstance(m, int) and m >= 0
    with mpmath.workdps(ref.DPS):
        inside = lambda j: 1 - 2 * ref.sf(j, s2)
        assert inside(m) >= mpmath.mpf(confidence)
        assert m == 0 or inside(m - 1) < mpmath.mpf(confidence)


def test_moe_near_the_normal_figure_for_large_sigma2() -> None:
    # the discrete law tends to the continuous one: m within a step of 1.96 sigma
    for s2 in (1e4, 1e6, 1e8):
        assert abs(dg.moe(s2) - 1.959964 * math.sqrt(s2)) <= 1.5


def test_fraction_sigma2_is_accepted() -> None:
    s2 = Fraction(9, 1) / (2 * Fraction(9, 10) * Fraction(159, 1000))
    assert dg.inverse_cdf(0.9999, s2) == dg.inverse_cdf(0.9999, float(s2))
    assert dg.moe(s2) == dg.moe(float(s2))


# ------------------------------------------------------------------ properties
@settings(max_examples=60, deadline=None)
@given(s2=st.floats(min_value=0.01, max_value=2e3))
def test_pmf_sums_to_one(s2: float) -> None:
    half = int(40 * math.sqrt(s2)) + 5
    k = np.arange(-half, half + 1)
    assert math.fsum(dg.pmf(k, s2)) == pytest.approx(1.0, abs=1e-12)


@settings(max_examples=100, deadline=None)
@given(s2=log_sigma2s, z=st.floats(min_value=-40, max_value=40))
def test_symmetry_and_complement(s2: float, z: float) -> None:
    k = round(z * math.sqrt(s2))
    assert dg.pmf(k, s2) == pytest.approx(dg.pmf(-k, s2), rel=1e-15)
    assert dg.cdf(k, s2) + dg.sf(k, s2) == pytest.approx(1.0, abs=2e-16)
    assert dg.cdf(-k - 1, s2) == pytest.approx(dg.sf(k, s2), rel=1e-14, abs=0)
    assert dg.logcdf(-k - 1, s2) == pytest.approx(dg.logsf(k, s2), rel=1e-14, abs=1e-300)


@settings(max_examples=100, deadline=None)
@given(s2=log_sigma2s, z=st.floats(min_value=-40, max_value=40))
def test_cdf_is_monotone_in_k_and_pmf_is_its_increment(s2: float, z: float) -> None:
    k = round(z * math.sqrt(s2))
    c0, c1 = dg.cdf(k, s2), dg.cdf(k + 1, s2)
    assert c0 <= c1
    assert dg.logcdf(k, s2) <= dg.logcdf(k + 1, s2)
    # increment from the small side, where it does not cancel
    if k >= 0:
        inc = dg.sf(k, s2) - dg.sf(k + 1, s2)
    else:
        inc = c1 - c0
    assert inc == pytest.approx(dg.pmf(k + 1, s2), rel=1e-6, abs=1e-300)


@settings(max_examples=60, deadline=None)
@given(s2a=log_sigma2s, s2b=log_sigma2s, conf=st.sampled_from([0.5, 0.9, 0.95, 0.99]))
def test_moe_is_monotone_in_sigma2(s2a: float, s2b: float, conf: float) -> None:
    lo, hi = sorted((s2a, s2b))
    assert dg.moe(lo, conf) <= dg.moe(hi, conf)


@settings(max_examples=40, deadline=None)
@given(
    s2=st.floats(min_value=0.01, max_value=1e6), p=st.floats(min_value=1e-12, max_value=1 - 1e-12)
)
def test_inverse_cdf_is_the_smallest_k(s2: float, p: float) -> None:
    k = dg.inverse_cdf(p, s2)
    with mpmath.workdps(ref.DPS):
        assert ref.cdf(k, s2) >= mpmath.mpf(p) > ref.cdf(k - 1, s2)


@settings(max_examples=30, deadline=None)
@given(
    s2=st.lists(log_sigma2s, min_size=1, max_size=6),
    z=st.floats(min_value=-38, max_value=38),
)
def test_array_calls_equal_scalar_calls(s2: list[float], z: float) -> None:
    s2a = np.array(s2)
    k = np.round(z * np.sqrt(s2a))
    for f in (
        dg.pmf,
        dg.logpmf,
        dg.cdf,
        dg.sf,
        dg.logcdf,
        dg.logsf,
        dg.partial_mean,
        dg.truncated_mean,
    ):
        arr = f(k, s2a)
        assert arr.shape == s2a.shape
        assert list(arr) == [f(float(ki), si) for ki, si in zip(k, s2)]
    p = dg.cdf(k, s2a)
    p = np.clip(p, 1e-300, 1 - 1e-12)
    assert list(dg.inverse_cdf(p, s2a)) == [dg.inverse_cdf(float(pi), si) for pi, si in zip(p, s2)]
    assert list(dg.moe(s2a)) == [dg.moe(si) for si in s2]
    assert list(dg.variance(s2a)) == [dg.variance(si) for si in s2]
    assert dg.cdf(k[:, None], s2a[None, :]).shape == (len(s2), len(s2))


def test_tails_summed_in_groups_of_rows_equal_one_row_at_a_time() -> None:
    """A direct tail sum keeps from 3 to about 130 terms (fewer the farther m is out); the
    rows of one call are summed in groups of similar length. Whatever group a row falls in,
    its value is that of the row alone, bit for bit, and the call covers every group."""
    s2 = np.full(400, 250.0)
    m = np.linspace(1.0, 2_000.0, 400)
    own = np.floor(100 * s2 / (np.sqrt(m * m + 100 * s2) + m)) + 3
    assert len(np.unique(np.ceil(np.log2(own)))) >= 5, "rows of at least five groups"
    for w in (0, 1):
        together = dg._direct_sum_log(m, s2, w)
        assert list(together) == [dg._direct_sum_log(m[i : i + 1], s2[i : i + 1], w)[0] for i in range(m.size)]
        reference = [float(mpmath.log(mpmath.fsum((mi + d) ** w * mpmath.exp(-d * (2 * mi + d) / (2 * 250.0))
                                                  for d in range(400)))) for mi in m[::40]]
        assert together[::40] == pytest.approx(reference, rel=1e-12)


def test_non_integer_and_infinite_k() -> None:
    assert dg.cdf(2.7, 3.0) == dg.cdf(2, 3.0)
    assert dg.sf(-0.5, 3.0) == dg.sf(-1, 3.0)
    assert dg.pmf(2.5, 3.0) == 0.0
    assert dg.cdf(np.inf, 3.0) == 1.0 and dg.cdf(-np.inf, 3.0) == 0.0
    assert dg.sf(np.inf, 3.0) == 0.0 and dg.sf(-np.inf, 3.0) == 1.0
    assert math.isnan(dg.cdf(np.nan, 3.0))
    assert dg.sf(10**6, 1.0) == 0.0 and dg.logsf(10**6, 1.0) < -1e11


def test_invalid_arguments_are_rejected() -> None:
    for bad in (0, -1, np.inf, np.nan):
        with pytest.raises(ValueError, match="sigma2"):
            dg.cdf(0, bad)
    for p in (0, 1, -0.5, 2):
        with pytest.raises(ValueError, match="strictly between 0 and 1"):
            dg.inverse_cdf(p, 1.0)
    with pytest.raises(ValueError, match="confidence"):
        dg.moe(1.0, 1.0)


# ------------------------------------------------------------------ bounded everywhere
@pytest.mark.timeout(20)
@pytest.mark.parametrize("sigma2", [5e37, 1e41, 1e300, float(dg.MAX_SIGMA2) * 1.0001])
def test_sigma2_beyond_the_range_is_refused_at_once(sigma2):
    # These used to search forever (the quantile left the int64 range).
    for f in (lambda: dg.inverse_cdf(0.9999, sigma2), lambda: dg.moe(sigma2), lambda: dg.cdf(3, sigma2)):
        with pytest.raises(ValueError, match="at most 1e\\+24"):
            f()


@pytest.mark.timeout(20)
def test_the_largest_supported_sigma2_still_answers_exactly():
    s2 = dg.MAX_SIGMA2
    m = dg.moe(s2)
    # moe of N_Z(0, s2) is within a few units of 1.96 sigma for such a sigma
    assert abs(m - 1.959963984540054 * math.sqrt(s2)) < 10
    k = dg.inverse_cdf(0.9999, s2)
    assert k > 0 and dg.inverse_cdf(0.0001, s2) == -k  # symmetric to the unit


@pytest.mark.timeout(20)
def test_tiny_sigma2_is_bounded_too():
    assert dg.moe(1e-300) == 0 and dg.inverse_cdf(0.5, 1e-300) == 0
    assert dg.inverse_cdf(1 - 1e-16, 1e-300) == 0
