"""Two-sided geometric (pure-DP noise) against direct sums of its pmf."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calculators import geometric as geo

SCALES = [0.3, 1.0, 4.5, 20.0, 250.0]


def _direct(scale: float) -> tuple[np.ndarray, np.ndarray]:
    """Integers -K..K and their pmf, a^|k| normalised by a direct sum (mass beyond K < 1e-25)."""
    K = int(60 * scale) + 20
    k = np.arange(-K, K + 1)
    w = np.array([mpmath.exp(-abs(int(i)) / mpmath.mpf(scale)) for i in k], dtype=object)
    with mpmath.workdps(40):
        total = mpmath.fsum(w)
        pm = np.array([float(x / total) for x in w])
    return k, pm


@pytest.mark.parametrize("scale", SCALES)
def test_pmf_cdf_sf_variance_match_direct_sums(scale: float) -> None:
    k, pm = _direct(scale)
    np.testing.assert_allclose(geo.pmf(k, scale), pm, rtol=1e-12, atol=0)
    cum = np.cumsum(pm)
    tail = np.cumsum(pm[::-1])[::-1]  # P(X >= k)
    inner = np.abs(k) <= 10 * scale + 3  # where the float cumulative sums keep full precision
    np.testing.assert_allclose(geo.cdf(k[inner], scale), cum[inner], rtol=1e-12)
    np.testing.assert_allclose(geo.sf(k[inner][:-1], scale), tail[inner][1:], rtol=1e-12)
    # far tails (down to ~e^-35, where the reference's truncation beyond K, ~e^-60, is
    # negligible): compare the small side with the small side
    far = np.abs(k) <= 35 * scale
    neg = (k < 0) & far
    np.testing.assert_allclose(geo.cdf(k[neg], scale), cum[neg], rtol=1e-10)
    pos = (k >= 0) & far
    np.testing.assert_allclose(geo.sf(k[pos][:-1], scale), tail[pos][1:], rtol=1e-10)
    assert geo.variance(scale) == pytest.approx(float(np.sum(k.astype(float) ** 2 * pm)), rel=1e-12)
    assert math.fsum(geo.pmf(k, scale)) == pytest.approx(1.0, abs=1e-14)


@pytest.mark.parametrize("scale", SCALES)
def test_inverse_cdf_and_moe_are_smallest(scale: float) -> None:
    k, pm = _direct(scale)
    cum = np.cumsum(pm)
    for p in (1e-9, 0.01, 0.3, 0.5, 0.77, 0.95, 0.999, 1 - 1e-9):
        q = geo.inverse_cdf(p, scale)
        i = int(np.searchsorted(k, q))
        assert cum[i] >= p * (1 - 1e-12) and (i == 0 or cum[i - 1] < p * (1 + 1e-12)), (p, q)
    for conf in (0.5, 0.9, 0.95, 0.99):
        m = geo.moe(scale, conf)
        inside = lambda j: float(np.sum(pm[np.abs(k) <= j]))
        assert m >= 0 and inside(m) >= conf - 1e-12
        assert m == 0 or inside(m - 1) < conf + 1e-12


def test_known_closed_forms() -> None:
    a = math.exp(-1 / 2.0)
    assert geo.sf(0, 2.0) == pytest.approx(a / (1 + a), rel=1e-15)
    assert geo.sf(3, 2.0) == pytest.approx(a**4 / (1 + a), rel=1e-14)
    assert geo.pmf(0, 2.0) == pytest.approx((1 - a) / (1 + a), rel=1e-15)
    assert geo.variance(2.0) == pytest.approx(2 * a / (1 - a) ** 2, rel=1e-14)
    assert geo.cdf(2.9, 2.0) == geo.cdf(2, 2.0)
    assert geo.pmf(0.5, 2.0) == 0.0


@settings(max_examples=100, deadline=None)
@given(scale=st.floats(min_value=0.05, max_value=1e6), z=st.floats(min_value=-50, max_value=50))
def test_symmetry_complement_monotone(scale: float, z: float) -> None:
    k = round(z * scale)
    assert geo.pmf(k, scale) == pytest.approx(geo.pmf(-k, scale), rel=1e-15)
    assert geo.cdf(k, scale) + geo.sf(k, scale) == pytest.approx(1.0, abs=2e-16)
    assert geo.cdf(-k - 1, scale) == pytest.approx(geo.sf(k, scale), rel=1e-14)
    assert geo.cdf(k, scale) <= geo.cdf(k + 1, scale)


@settings(max_examples=100, deadline=None)
@given(
    scale=st.floats(min_value=0.05, max_value=1e6),
    p=st.floats(min_value=1e-12, max_value=1 - 1e-12),
)
def test_inverse_cdf_is_smallest_k_by_its_own_cdf(scale: float, p: float) -> None:
    k = geo.inverse_cdf(p, scale)
    if p <= 0.5:
        assert geo.cdf(k, scale) >= p > geo.cdf(k - 1, scale)
    else:  # compare on the tail side, where the float values are exact enough
        assert geo.sf(k, scale) <= 1 - p < geo.sf(k - 1, scale)


def test_array_calls_equal_scalar_calls() -> None:
    scales = np.array([0.5, 3.0, 1e4])
    k = np.array([-2.0, 7.0, 30000.0])
    for f in (geo.pmf, geo.logpmf, geo.cdf, geo.sf, geo.logcdf, geo.logsf):
        assert list(f(k, scales)) == [f(ki, si) for ki, si in zip(k, scales)]
    assert list(geo.moe(scales)) == [geo.moe(s) for s in scales]
    assert list(geo.inverse_cdf(0.9, scales)) == [geo.inverse_cdf(0.9, s) for s in scales]


def test_invalid_scale() -> None:
    with pytest.raises(ValueError, match="scale"):
        geo.cdf(0, 0.0)
    with pytest.raises(ValueError, match="between 0 and 1"):
        geo.inverse_cdf(1.0, 1.0)


@pytest.mark.timeout(20)
@pytest.mark.parametrize("scale", [1.0001e12, 1e19, 1e40, 1e300])
def test_scale_beyond_the_range_is_refused_at_once(scale):
    for f in (lambda: geo.inverse_cdf(0.9999, scale), lambda: geo.moe(scale)):
        with pytest.raises(ValueError, match="at most 1e\\+12"):
            f()


@pytest.mark.timeout(20)
def test_the_largest_supported_scale_is_still_exact():
    k = geo.inverse_cdf(1 - 1e-16, geo.MAX_SCALE)
    assert 0 < k < 2**63 - 1 and geo.moe(geo.MAX_SCALE) > 0
    assert geo.inverse_cdf(0.9999, geo.MAX_SCALE) == -geo.inverse_cdf(0.0001, geo.MAX_SCALE)
