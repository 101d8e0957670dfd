"""Two-sided geometric distribution of SafeTab-P's pure-DP variant (SPEC §1).

P(X = k) = (1 - a) / (1 + a) * a^|k| for every integer k, a = exp(-1 / scale), with
scale b = S / epsilon (``privacy_defn: "puredp"``). Same function names as
`calculators.discrete_gaussian`, with ``scale`` in place of ``sigma2``.

All quantities have closed forms; they are evaluated in log space with expm1 / log1p
so that large scales (a close to 1) and far tails keep their relative accuracy.
Scalars and numpy arrays are accepted and broadcast together.
"""

from __future__ import annotations

from typing import Any

import numpy as np

#: The largest scale the functions here accept (ValueError above): quantiles (37 scale
#: for p = 1 - 1e-16) stay exact to the unit (checked symmetric up to 3e12; floats lose
#: units near 1e13). A configuration within the ranges of `calculators.config` reaches
#: at most 9e10 (`config.MAX_NOISE_SCALE`).
MAX_SCALE = 1e12

__all__ = [
    "MAX_SCALE",
    "cdf", "inverse_cdf", "logcdf", "logpmf", "logsf", "moe", "partial_mean", "pmf", "sf",
    "truncated_mean", "variance",
]


def _as_scale(scale: Any) -> np.ndarray:
    b = np.asarray(scale, dtype=float)
    if b.size and not np.all(np.isfinite(b) & (b > 0)):
        raise ValueError(f"scale (S / epsilon) must be a finite number > 0 (got {repr(scale)[:60]})")
    if b.size and np.any(b > MAX_SCALE):
        raise ValueError(f"scale (S / epsilon) must be at most {MAX_SCALE:g} (got {repr(scale)[:60]}): the "
                         "budget is far below the supported range (see README, \"Configuration ranges\")")
    return b


def _broadcast(x: Any, scale: Any) -> tuple[np.ndarray, np.ndarray, bool]:
    xa = np.asarray(x, dtype=float)
    b = _as_scale(scale)
    scalar = xa.ndim == 0 and b.ndim == 0
    xb, bb = np.broadcast_arrays(xa, b)
    return np.array(xb, dtype=float), np.array(bb, dtype=float), scalar


def _out(a: np.ndarray, scalar: bool) -> Any:
    return a[()] if scalar else a


def _log1p_a(b: np.ndarray) -> np.ndarray:
    """log(1 + a), a = exp(-1/b)."""
    return np.log1p(np.exp(-1 / b))


def _log_sides(k: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(logcdf, logsf) at floor(k), each from the smaller side."""
    kf = np.floor(k)
    upper = kf >= 0
    # sf(k) = a^(k+1) / (1+a) for k >= 0;  cdf(k) = a^(-k) / (1+a) for k < 0
    m = np.where(upper, kf + 1, -kf)
    with np.errstate(invalid="ignore"):
        small = -m / b - _log1p_a(b)
    with np.errstate(under="ignore"):
        big = np.log1p(-np.exp(small))
    return np.where(upper, big, small), np.where(upper, small, big)


def logpmf(k: Any, scale: Any) -> Any:
    """log P(X = k) = log((1-a)/(1+a)) - |k| / scale for integer k (SPEC §1, pure DP)."""
    ka, b, scalar = _broadcast(k, scale)
    val = np.log(-np.expm1(-1 / b)) - _log1p_a(b) - np.abs(ka) / b
    val = np.where(np.floor(ka) == ka, val, -np.inf)
    val = np.where(np.isnan(ka), np.nan, val)
    return _out(val, scalar)


def pmf(k: Any, scale: Any) -> Any:
    """P(X = k) = (1 - a) / (1 + a) * a^|k|, a = exp(-1/scale) (SPEC §1, pure DP)."""
    with np.errstate(under="ignore"):
        return np.exp(logpmf(k, scale))


def logcdf(k: Any, scale: Any) -> Any:
    """log P(X <= floor(k)); P(X <= k) = a^(-k) / (1 + a) for k < 0 (SPEC §1)."""
    ka, b, scalar = _broadcast(k, scale)
    return _out(_log_sides(ka, b)[0], scalar)


def logsf(k: Any, scale: Any) -> Any:
    """log P(X > floor(k)); P(X > k) = a^(k+1) / (1 + a) for k >= 0 (SPEC §1)."""
    ka, b, scalar = _broadcast(k, scale)
    return _out(_log_sides(ka, b)[1], scalar)


def cdf(k: Any, scale: Any) -> Any:
    """P(X <= floor(k)): a^(-k)/(1+a) for k < 0, 1 - a^(k+1)/(1+a) for k >= 0 (SPEC §1)."""
    with np.errstate(under="ignore"):
        return np.exp(logcdf(k, scale))


def sf(k: Any, scale: Any) -> Any:
    """P(X > floor(k)) = a^(k+1)/(1+a) for k >= 0, = cdf(-k-1) by symmetry (SPEC §1)."""
    with np.errstate(under="ignore"):
        return np.exp(logsf(k, scale))


def variance(scale: Any) -> Any:
    """Var X = 2a / (1 - a)^2, a = exp(-1/scale) (SPEC §1, pure DP)."""
    b = _as_scale(scale)
    a = np.exp(-1 / b)
    return _out(2 * a / np.expm1(-1 / b) ** 2, b.ndim == 0)


def _fix_up(k: np.ndarray, cond: Any) -> np.ndarray:
    """Move a closed-form candidate to the exact smallest k with cond(k) (float rounding)."""
    for _ in range(64):
        down = cond(k - 1)
        up = ~cond(k)
        if not (down.any() or up.any()):
            return k
        k = np.where(down, k - 1, np.where(up, k + 1, k))
    return k


def inverse_cdf(p: Any, scale: Any) -> Any:
    """Smallest integer k with P(X <= k) >= p, 0 < p < 1 (SPEC §1, pure DP).

    Closed form: k = ceil(scale * log(p (1+a))) when that is negative, otherwise
    k = ceil(-scale * log((1-p)(1+a)) - 1); then checked against the CDF (comparing on
    the tail side for p > 1/2) so float rounding cannot shift it.
    """
    pa, b, scalar = _broadcast(p, scale)
    if pa.size and not np.all((pa > 0) & (pa < 1)):
        raise ValueError(f"p must be a probability strictly between 0 and 1 (got {p!r})")
    l1a = _log1p_a(b)
    low = np.ceil(b * (np.log(pa) + l1a))
    high = np.ceil(-b * (np.log1p(-pa) + l1a) - 1)
    guess = np.where(low < 0, low, np.maximum(high, 0))
    upper = pa > 0.5

    def cond(k: np.ndarray) -> np.ndarray:
        lc, ls = _log_sides(k, b)
        return np.where(upper, ls <= np.log1p(-pa), lc >= np.log(pa))

    res = _fix_up(guess, cond).astype(np.int64)
    return int(res[()]) if scalar else res


def moe(scale: Any, confidence: Any = 0.95) -> Any:
    """Smallest integer m >= 0 with P(|X| <= m) >= confidence (SPEC §2, pure DP).

    P(|X| > m) = 2 a^(m+1) / (1 + a), so m = max(0, ceil(scale * (log 2 - log(1+a)
    - log(1 - confidence))) - 1), checked against that formula for float rounding.
    """
    ca, b, scalar = _broadcast(confidence, scale)
    if ca.size and not np.all((ca > 0) & (ca < 1)):
        raise ValueError(f"confidence must be strictly between 0 and 1 (got {confidence!r})")
    l1a = _log1p_a(b)
    log_alpha = np.log1p(-ca)
    guess = np.maximum(np.ceil(b * (np.log(2) - l1a - log_alpha)) - 1, 0)

    def cond(m: np.ndarray) -> np.ndarray:
        # m < 0 is never an answer (the MOE is a non-negative half-width)
        return (m >= 0) & (np.log(2) - (m + 1) / b - l1a <= log_alpha)

    res = _fix_up(guess, cond).astype(np.int64)
    return int(res[()]) if scalar else res


def _log_partial_mean(k: np.ndarray, b: np.ndarray) -> np.ndarray:
    """log E[X 1{X > floor(k)}]; see `partial_mean`."""
    m = np.floor(k) + 1
    j = np.maximum(m, 1 - m)
    one_minus_a = -np.expm1(-1 / b)
    with np.errstate(divide="ignore", invalid="ignore"):
        return -j / b + np.log(j * one_minus_a + np.exp(-1 / b)) - _log1p_a(b) - np.log(one_minus_a)


def partial_mean(k: Any, scale: Any) -> Any:
    """E[X 1{X > floor(k)}] for the two-sided geometric (SPEC §1 suppression, pure DP).

    With m = floor(k) + 1 the terms i and -i (1 <= i <= -m) cancel when m <= 0, so the
    value is sum_{i >= j} i P(X = i), j = max(m, 1 - m), and the geometric series gives
    the closed form

        a^j (j (1 - a) + a) / ((1 + a) (1 - a)),   a = exp(-1/scale),

    always > 0 and evaluated in log space (no cancelling subtraction).
    """
    ka, b, scalar = _broadcast(k, scale)
    with np.errstate(under="ignore"):
        val = np.exp(_log_partial_mean(ka, b))
    return _out(val, scalar)


def truncated_mean(k: Any, scale: Any) -> Any:
    """E[X | X > floor(k)] = partial_mean(k) / sf(k) (SPEC §1, pure DP): the expected
    noise of a count released because it exceeds a threshold. For floor(k) >= 0 the
    geometric law is memoryless and this is floor(k) + 1 + a / (1 - a); the ratio is
    taken in log space so far tails keep their accuracy."""
    ka, b, scalar = _broadcast(k, scale)
    with np.errstate(under="ignore", invalid="ignore"):
        val = np.exp(_log_partial_mean(ka, b) - _log_sides(ka, b)[1])
    val = np.where(np.isposinf(ka), np.nan, val)
    return _out(val, scalar)
