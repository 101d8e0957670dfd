"""Two-stage adaptive tabulation: stat-level probabilities, expected MOEs, derived thresholds."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calculators import adaptive, budget, discrete_gaussian
from calculators.levels import STAT_LEVEL_CELLS

TH_SUBSTATE = (971, 4971, 19971)
S2_1 = 9 / (2 * 0.1 * 0.159)  # production COUNTY Detailed stage 1
S2_2 = 9 / (2 * 0.9 * 0.159)


def _brute_levels(n: int, thresholds: tuple[int, int, int], s2: float) -> np.ndarray:
    """P(level j) by summing the noise pmf over x and counting thresholds <= n + x."""
    half = int(40 * math.sqrt(s2)) + 5
    x = np.arange(-half, half + 1)
    w = discrete_gaussian.pmf(x, s2)
    level = sum((n + x >= t).astype(int) for t in thresholds)
    return np.array([w[level == j].sum() for j in range(4)])


@pytest.mark.parametrize("s2", [0.5, 30.0, S2_1])
@pytest.mark.parametrize("n", [0, 40, 960, 971, 980, 3000, 4971, 19960, 19971, 25000])
def test_probabilities_match_brute_force(s2: float, n: int) -> None:
    p = adaptive.stat_level_probabilities(n, TH_SUBSTATE, s2)
    assert p.shape == (4,)
    np.testing.assert_allclose(p, _brute_levels(n, TH_SUBSTATE, s2), atol=1e-13)


def test_equal_and_close_thresholds() -> None:
    th = (50, 50, 52)
    for n in (45, 50, 51, 55):
        p = adaptive.stat_level_probabilities(n, th, 4.0)
        assert p[1] == 0.0
        np.testing.assert_allclose(p, _brute_levels(n, th, 4.0), atol=1e-13)


def test_huge_and_tiny_groups() -> None:
    p = adaptive.stat_level_probabilities([0, 10**9], TH_SUBSTATE, S2_1)
    assert p[0, 0] == 1.0 and p[0, 1:].sum() < 1e-300
    assert p[1, 3] == 1.0 and p[1, :3].sum() < 1e-300
    # well below Theta_1: level 1 has the exact tiny tail probability, not 0 or a rounding error
    p700 = adaptive.stat_level_probabilities(700, TH_SUBSTATE, S2_1)
    assert 0 < p700[1] == pytest.approx(float(discrete_gaussian.sf(270, S2_1)), rel=1e-9)
    assert p700[1] < 1e-50


@settings(max_examples=60, deadline=None)
@given(
    n=st.lists(st.integers(min_value=0, max_value=10**6), min_size=1, max_size=8),
    t=st.lists(st.integers(min_value=0, max_value=30000), min_size=3, max_size=3),
    s2=st.floats(min_value=0.05, max_value=1e5),
)
def test_probabilities_sum_to_one_and_array_matches_scalar(
    n: list[int], t: list[int], s2: float
) -> None:
    th = tuple(sorted(t))
    p = adaptive.stat_level_probabilities(np.array(n), th, s2)
    assert p.shape == (len(n), 4)
    np.testing.assert_allclose(p.sum(axis=-1), 1.0, atol=1e-12)
    assert np.all(p >= 0)
    for i, ni in enumerate(n):
        np.testing.assert_array_equal(p[i], adaptive.stat_level_probabilities(ni, th, s2))
    # P(level >= 1) grows with n
    up = p[:, 1:].sum(axis=-1)
    order = np.argsort(n)
    assert np.all(np.diff(up[order]) >= -1e-12)


def test_expected_moes_are_probability_weighted_sums() -> None:
    n = np.array([0, 971, 4971, 10**6])
    p = adaptive.stat_level_probabilities(n, TH_SUBSTATE, S2_1)
    for exact in (True, False):
        cell = budget.moe_exact(S2_2) if exact else budget.moe_bound(S2_2)
        t1 = [budget.moe_of_sum(S2_2, STAT_LEVEL_CELLS[j], exact=exact) for j in range(4)]
        assert adaptive.cell_moe(S2_2, exact) == cell
        np.testing.assert_allclose(
            adaptive.expected_t1_moe(n, TH_SUBSTATE, S2_1, S2_2, exact), p @ np.array(t1, float)
        )
        np.testing.assert_allclose(
            adaptive.expected_cell_moe(n, TH_SUBSTATE, S2_1, S2_2, exact), cell
        )
        cells = np.array([STAT_LEVEL_CELLS[j] for j in range(4)], float)
        rel = adaptive.expected_relative_cell_moe(n, TH_SUBSTATE, S2_1, S2_2, exact)
        assert rel[0] == np.inf
        np.testing.assert_allclose(rel[1:], (p[1:] * cell * cells / n[1:, None]).sum(-1))
    # a huge group is level 3 for sure: T1 is a 46-cell sum
    assert adaptive.expected_t1_moe(10**9, TH_SUBSTATE, S2_1, S2_2) == budget.moe_of_sum(
        S2_2, 46, exact=True
    )
    assert adaptive.expected_t1_moe(0, TH_SUBSTATE, S2_1, S2_2) == budget.moe_exact(S2_2)


@pytest.mark.parametrize("target", [0.05, 0.1, 0.3, 1.0])
@pytest.mark.parametrize("s2", [0.3, S2_2, 9 / (2 * 0.9 * 2.134), 5000.0])
@pytest.mark.parametrize("exact", [True, False])
def test_derive_thresholds_defining_inequality_and_minimality(
    target: float, s2: float, exact: bool
) -> None:
    t = Fraction(target)
    cell = int(budget.moe_exact(s2) if exact else budget.moe_bound(s2))
    th = adaptive.derive_thresholds(target, s2, exact=exact)
    assert all(isinstance(x, int) for x in th) and list(th) == sorted(th)
    for c, theta in zip((8, 18, 46), th):
        if cell == 0:
            assert theta == 0
            continue
        # every cell of the table at its average size n / c has relative MOE <= target ...
        assert Fraction(cell * c, theta) <= t
        # ... and one person fewer breaks it
        assert theta == 1 or Fraction(cell * c, theta - 1) > t

    th_total = adaptive.derive_thresholds(target, s2, rule="total", exact=exact)
    assert list(th_total) == sorted(th_total)
    for c, theta in zip((8, 18, 46), th_total):
        m = int(budget.moe_of_sum(s2, c, exact=exact))
        if m == 0:
            assert theta == 0
            continue
        assert Fraction(m, theta) <= t
        assert theta == 1 or Fraction(m, theta - 1) > t
    # the total of c cells is more precise, relative to n, than each cell relative to n / c
    assert all(a <= b for a, b in zip(th_total, th))


def test_derive_thresholds_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="target"):
        adaptive.derive_thresholds(0, 10.0)
    with pytest.raises(ValueError, match="rule"):
        adaptive.derive_thresholds(0.1, 10.0, rule="smallest")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="non-decreasing"):
        adaptive.stat_level_probabilities(1, (5, 3, 7), 1.0)
