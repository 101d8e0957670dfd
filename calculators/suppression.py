"""Suppression of small totals (SPEC §1 post-processing).

Only stat-level-0 groups (T1 only) at sub-state geography levels are affected. With
the zero-suppression chance p (config ``zero_suppression_chance``; 0 turns it off) the
threshold is T = the smallest integer k with CDF_stage2(k) >= p, and a count is
*released iff noisy > T*. X below is the stage-2 noise, N_Z(0, sigma2_stage2).

All expectations are exact discrete sums (`discrete_gaussian.partial_mean`,
`discrete_gaussian.truncated_mean`), not the continuous inverse-Mills formula.
Functions accept numpy arrays for n; ``threshold=None`` means suppression is off.
With noise="geometric" (``privacy_defn: "puredp"``) "sigma2" is the two-sided
geometric scale b and the same formulas use the geometric law (its closed-form tail
sums, `geometric.partial_mean` / `geometric.truncated_mean`).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from calculators import noise_family

__all__ = [
    "curves",
    "expected_published_value",
    "expected_released_value",
    "release_bias",
    "release_bias_eq13",
    "release_probability",
    "suppression_probability",
    "threshold",
]


def _ret(a: Any) -> Any:
    a = np.asarray(a)
    return a[()] if a.ndim == 0 else a


def threshold(sigma2: Any, p: float, noise: str = "gaussian") -> Any:
    """Suppression threshold T = smallest integer k with CDF(k) >= p (SPEC §1),
    CDF of the discrete Gaussian with the stage-2 sigma2; exact (the CDF is checked at
    60 digits near ties; a Fraction sigma2 is used exactly).

    p = 0 means suppression is off: returns None. p must be in [0, 1).
    A true zero is then suppressed with probability CDF(T) >= p.
    """
    try:
        pf = float(p)
    except (TypeError, ValueError):
        raise ValueError(
            f"the zero-suppression chance must be a number in [0, 1) (got {p!r})"
        ) from None
    if not (0 <= pf < 1) or math.isnan(pf):
        raise ValueError(
            f"the zero-suppression chance must be at least 0 and less than 1 (got {p!r}); "
            "0 turns suppression off"
        )
    if pf == 0:
        return None
    return noise_family.law(noise).inverse_cdf(pf, sigma2)


def _shift(n: Any, threshold: Any) -> np.ndarray:
    return np.asarray(threshold, dtype=float) - np.asarray(n, dtype=float)


def suppression_probability(n: Any, threshold: Any, sigma2: Any, noise: str = "gaussian") -> Any:
    """P(count suppressed) = P(n + X <= T) = cdf(T - n) for true count n (SPEC §1);
    0 when threshold is None (suppression off)."""
    if threshold is None:
        return _ret(np.zeros(np.broadcast(np.asarray(n), np.asarray(sigma2)).shape))
    return noise_family.law(noise).cdf(_shift(n, threshold), sigma2)


def release_probability(n: Any, threshold: Any, sigma2: Any, noise: str = "gaussian") -> Any:
    """P(count released) = P(n + X > T) = sf(T - n) (SPEC §1); 1 when threshold is None."""
    if threshold is None:
        return _ret(np.ones(np.broadcast(np.asarray(n), np.asarray(sigma2)).shape))
    return noise_family.law(noise).sf(_shift(n, threshold), sigma2)


def release_bias(n: Any, threshold: Any, sigma2: Any, noise: str = "gaussian") -> Any:
    """Expected noise of a released count, E[X | n + X > T] = E[X | X > T - n]
    (SPEC §1), as the exact discrete sum

        sum_{k > T - n} k exp(-k^2/(2 sigma2)) / sum_{k > T - n} exp(-k^2/(2 sigma2)),

    evaluated with symmetry and tail sums (`discrete_gaussian.truncated_mean`), so it
    is accurate to ~1e-13 relative and fast at any sigma2. Always > 0 (released
    counts are biased upward); 0 when threshold is None.
    """
    if threshold is None:
        return _ret(np.zeros(np.broadcast(np.asarray(n), np.asarray(sigma2)).shape))
    return noise_family.law(noise).truncated_mean(_shift(n, threshold), sigma2)


def _mills(z: float) -> float:
    """phi(z) / (1 - Phi(z)) for the standard normal (its inverse Mills ratio)."""
    q = 0.5 * math.erfc(z / math.sqrt(2.0))
    if q > 0.0:
        return math.exp(-0.5 * z * z) / math.sqrt(2.0 * math.pi) / q
    return z + 1.0 / z  # far tail (z > 38): the ratio's asymptote


def release_bias_eq13(n: Any, threshold: Any, sigma2: Any) -> Any:
    """The design paper's formula for the same bias (Haney et al., Section 5.3.2, eq. 13):
    E[X | n + X > T] = sigma phi((T - n) / sigma) / (1 - Phi((T - n) / sigma)), with
    sigma = sqrt(sigma2). The paper calls phi and Phi those "of the standard discrete
    Gaussian", but evaluates them at the real number (T - n) / sigma, which only the
    standard normal's density and CDF are defined at: this is the continuous inverse Mills
    ratio. It is shown beside `release_bias` (the exact discrete sum SPEC §1 asks for),
    which it underestimates by up to about half a person (2020 COUNTY Detailed, T = 21,
    n = 0: 22.34 against 22.87). Discrete Gaussian noise only; 0 when threshold is None."""
    if threshold is None:
        return _ret(np.zeros(np.broadcast(np.asarray(n), np.asarray(sigma2)).shape))
    sd = np.sqrt(np.asarray(sigma2, dtype=float))
    z = _shift(n, threshold) / sd
    return _ret(sd * np.vectorize(_mills, otypes=[float])(z))


def expected_released_value(n: Any, threshold: Any, sigma2: Any, noise: str = "gaussian") -> Any:
    """E[n + X | n + X > T] = n + release_bias (SPEC §1): the average of the counts
    that are released."""
    return _ret(np.asarray(n, dtype=float) + release_bias(n, threshold, sigma2, noise))


def expected_published_value(n: Any, threshold: Any, sigma2: Any, noise: str = "gaussian") -> Any:
    """E[(n + X) 1{n + X > T}] = n P(X > T - n) + E[X 1{X > T - n}] (SPEC §1): the
    average published figure when suppressed counts are read as 0."""
    if threshold is None:
        return _ret(np.asarray(n, dtype=float) + 0 * np.asarray(sigma2, dtype=float))
    d = _shift(n, threshold)
    na = np.asarray(n, dtype=float)
    law = noise_family.law(noise)
    return _ret(na * law.sf(d, sigma2) + law.partial_mean(d, sigma2))


def curves(
    threshold: int, sigma2: float, n_max: int | None = None, points: int = 201, noise: str = "gaussian"
) -> dict[str, np.ndarray]:
    """Chart data for a threshold T and stage-2 sigma2 (SPEC §1):

    n (integers 0..n_max, at most `points` of them; n_max defaults to
    max(2T, T + 6 sigma)), n_over_T (n / T; nan if T <= 0),
    suppression_probability cdf(T - n), release_bias E[X | n + X > T] and
    expected_released_value n + release_bias.
    """
    if threshold is None:
        raise ValueError(
            "suppression is off (no threshold): there are no suppression curves to draw"
        )
    t = int(threshold)
    s2 = float(sigma2)
    if n_max is None:
        sd = math.sqrt(float(noise_family.variance_parameter(s2, noise)))
        n_max = max(2 * t, t + math.ceil(6 * sd), 1)
    if n_max < 0 or points < 2:
        raise ValueError(f"need n_max >= 0 and points >= 2 (got n_max={n_max}, points={points})")
    n = np.unique(np.round(np.linspace(0, n_max, points))).astype(np.int64)
    bias = release_bias(n, t, s2, noise)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = n / t if t > 0 else np.full(n.shape, np.nan)
    return {
        "n": n,
        "n_over_T": np.asarray(ratio, dtype=float),
        "suppression_probability": np.asarray(suppression_probability(n, t, s2, noise), dtype=float),
        "release_bias": np.asarray(bias, dtype=float),
        "expected_released_value": n + np.asarray(bias, dtype=float),
    }
