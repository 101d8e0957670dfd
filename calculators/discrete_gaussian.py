"""The discrete Gaussian distribution N_Z(0, sigma2) of SafeTab-P's zCDP noise (SPEC §1).

P(X = k) = exp(-k^2 / (2 sigma2)) / Z for every integer k, with
Z = sum_{k in Z} exp(-k^2 / (2 sigma2)). ``sigma2`` is the variance *parameter*
S / (2 rho) of SPEC §1; the true variance is slightly smaller (`variance`).

Every function accepts Python or numpy scalars and arrays (broadcast together) and
answers elementwise exactly as a scalar call would. Probabilities are computed in log
space so that tails far below 1e-300 keep their relative accuracy in `logcdf` /
`logsf`; `cdf` / `sf` return 0.0 only where the value is below the float range.

How the sums are evaluated (why it is both accurate and fast):

* Symmetry reduces every CDF / survival value to an upper tail
  ``tail(m) = sum_{i >= m} exp(-i^2 / (2 sigma2))`` with m >= 1 (the smaller side),
  so no probability is ever obtained by a cancelling subtraction.
* Z uses direct summation for small sigma2 and the theta-function (Poisson
  summation) form Z = sqrt(2 pi sigma2) (1 + 2 sum_{m>=1} exp(-2 pi^2 sigma2 m^2))
  otherwise.
* A tail is summed directly when few terms matter (at most ``_L_DIRECT``: small
  sigma2, or far tails); otherwise an Euler-Maclaurin expansion is used whose integral
  is written with ``scipy.special.erfcx`` and whose derivative terms are Hermite
  polynomials. The EM correction terms shrink like (m / (2 pi sigma2))^(2p-1) and
  like (p / (2 pi^2 sigma2))^p, both tiny exactly where direct summation would be
  long, so one call at sigma2 = 1e8 costs well under a millisecond.
* Integer answers (`inverse_cdf`, `moe`) are decided with the float CDF and, when it
  lies within 1e-8 (relative) of the target, re-decided with a 60-digit mpmath
  evaluation so that the integer is exactly right.
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from typing import Any

import mpmath
import numpy as np
from scipy.special import erfcx, ndtri

# Direct summation is used when at most this many terms matter; beyond it the EM
# expansion's ratio m / (2 pi sigma2) is below 8 / _L_DIRECT (see module docstring).
_L_DIRECT = 128
# Number of Euler-Maclaurin correction terms (Bernoulli B_2 .. B_2P).
_EM_TERMS = 12
# B_{2p} / (2p)! for p = 1.._EM_TERMS, the Euler-Maclaurin coefficients.
_EM_COEF: tuple[float, ...] = tuple(
    float(mpmath.bernoulli(2 * p) / mpmath.factorial(2 * p)) for p in range(1, _EM_TERMS + 1)
)
# Relative closeness of the float CDF to a target below which an integer answer is
# re-decided in high precision.
_CONFIRM_RTOL = 1e-8
_MP_DPS = 60
# High-precision counterparts of the direct / EM switch (terms down to exp(-140)).
_MP_L_DIRECT = 3000
_MP_EM_TERMS = 18

#: The largest sigma2 the functions here accept (ValueError above): every search is
#: bounded, quantiles stay far inside int64 and are still exact (checked symmetric to the
#: unit up to 1e26; the float sums lose units near 1e30). A configuration within the
#: ranges of `calculators.config` reaches at most 4.5e15 (`config.MAX_NOISE_SCALE` / 2).
MAX_SIGMA2 = 1e24
# Doubling steps of an integer search before it gives up (2^70 exceeds every int64).
_MAX_DOUBLINGS = 70

__all__ = [
    "MAX_SIGMA2",
    "cdf",
    "inverse_cdf",
    "log_normalizer",
    "logcdf",
    "logpmf",
    "logsf",
    "moe",
    "normalizer",
    "partial_mean",
    "pmf",
    "sf",
    "truncated_mean",
    "variance",
]


# --------------------------------------------------------------------------- inputs
def _as_sigma2(sigma2: Any) -> np.ndarray:
    s2 = np.asarray(sigma2, dtype=float)
    if s2.size and not np.all(np.isfinite(s2) & (s2 > 0)):
        raise ValueError(
            f"sigma2 (the noise variance parameter) must be a finite number > 0 (got {_short(sigma2)})"
        )
    if s2.size and np.any(s2 > MAX_SIGMA2):
        raise ValueError(
            f"sigma2 (the noise variance parameter) must be at most {MAX_SIGMA2:g} (got "
            f"{_short(sigma2)}): the budget is far below the supported range (see README, "
            "\"Configuration ranges\")"
        )
    return s2


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:60] + "..."


def _broadcast(x: Any, sigma2: Any) -> tuple[np.ndarray, np.ndarray, bool]:
    xa = np.asarray(x, dtype=float)
    s2 = _as_sigma2(sigma2)
    scalar = xa.ndim == 0 and s2.ndim == 0
    xb, sb = np.broadcast_arrays(xa, s2)
    return np.array(xb, dtype=float), np.array(sb, dtype=float), scalar


def _out(a: np.ndarray, scalar: bool) -> Any:
    return a[()] if scalar else a


# ------------------------------------------------------------------ float core sums
def _hermite_scaled(m: np.ndarray, s2: np.ndarray, n_max: int) -> list[np.ndarray]:
    """h_n = H_n(u) / (2 sigma2)^(n/2) with u = m / sqrt(2 sigma2), n = 0..n_max.

    f^(n)(m) = (-1)^n h_n f(m) for f(x) = exp(-x^2 / (2 sigma2)); the scaled recurrence
    h_{n+1} = (m h_n - n h_{n-1}) / sigma2 never overflows where EM is used.
    """
    h = [np.ones_like(m), m / s2]
    for n in range(1, n_max):
        h.append((m * h[n] - n * h[n - 1]) / s2)
    return h


def _direct_sum_log(m: np.ndarray, s2: np.ndarray, weight_power: int) -> np.ndarray:
    """log sum_{d>=0} (m+d)^w exp(-d (2m + d) / (2 sigma2)) over the terms that matter."""
    out = np.empty(m.shape)
    if m.size == 0:
        return out
    own = np.floor(100 * s2 / (np.sqrt(m * m + 100 * s2) + m)) + 3
    # Rows are summed in groups of similar length (own from 2^(b-1) to 2^b terms), each group
    # as wide as its longest row: a national profile's rows mostly need a few terms and some
    # over a hundred, and one width for all did four times the work. A row's sum does not
    # depend on its group (see _direct_rows).
    group = np.ceil(np.log2(own)).astype(np.int64)
    for b in np.unique(group):
        rows = np.flatnonzero(group == b)
        out[rows] = _direct_rows(m[rows], s2[rows], own[rows], weight_power)
    return out


def _direct_rows(m: np.ndarray, s2: np.ndarray, own: np.ndarray, weight_power: int) -> np.ndarray:
    """`_direct_sum_log` of rows that keep their first `own` terms each."""
    out = np.empty(m.shape)
    n_terms = int(np.max(own))
    d = np.arange(n_terms, dtype=float)
    # rows in chunks so the (rows x terms) matrix stays a few MB
    step = max(1, 2_000_000 // n_terms)
    for start in range(0, m.size, step):
        mc = m[start : start + step, None]
        sc = s2[start : start + step, None]
        with np.errstate(under="ignore"):
            terms = np.exp(-d * (2 * mc + d) / (2 * sc))
        if weight_power:
            terms = terms * (mc + d)
        # Each row keeps exactly its own terms (zeros beyond) and is added sequentially,
        # smallest first (the zeros first, adding nothing): the result is then independent
        # of the other rows and of the matrix's width, so array calls equal scalar calls
        # bit for bit, whatever group a row is summed in.
        terms = np.where(d < own[start : start + step, None], terms, 0.0)
        out[start : start + step] = np.log(np.cumsum(terms[:, ::-1], axis=1)[:, -1])
    return out


def _log_tail(m: np.ndarray, s2: np.ndarray, first_moment: bool = False) -> np.ndarray:
    """log sum_{i >= m} i^w exp(-i^2 / (2 sigma2)), w = 1 if first_moment else 0.

    m >= 1 (m >= 0 allowed when w = 0), float arrays of one shape; m may be +inf.
    """
    out = np.full(m.shape, -np.inf)
    out[np.isnan(m)] = np.nan
    fin = np.isfinite(m)
    mm = np.minimum(m, 1e300)
    with np.errstate(over="ignore", invalid="ignore"):
        n_terms = 100 * s2 / (np.sqrt(mm * mm + 100 * s2) + mm) + 2
    direct = fin & (n_terms <= _L_DIRECT)
    em = fin & ~direct
    with np.errstate(over="ignore", under="ignore"):
        if direct.any():
            md, sd = mm[direct], s2[direct]
            out[direct] = -(md * md) / (2 * sd) + _direct_sum_log(md, sd, int(first_moment))
        if em.any():
            me, se = mm[em], s2[em]
            h = _hermite_scaled(me, se, 2 * _EM_TERMS)
            if first_moment:
                # g(x) = x f(x) = -sigma2 f'(x): its integral is sigma2 f(m) and
                # g^(n) = (-1)^n sigma2 h_{n+1} f
                bracket = se + 0.5 * me
                for p, c in enumerate(_EM_COEF, start=1):
                    bracket = bracket + c * se * h[2 * p]
            else:
                u = me / np.sqrt(2 * se)
                bracket = np.sqrt(np.pi * se / 2) * erfcx(u) + 0.5
                for p, c in enumerate(_EM_COEF, start=1):
                    bracket = bracket + c * h[2 * p - 1]
            out[em] = -(me * me) / (2 * se) + np.log(bracket)
    return out


def _log_z(s2: np.ndarray) -> np.ndarray:
    s2 = np.asarray(s2, dtype=float)
    out = np.empty(s2.shape)
    small = s2 < 0.5
    if small.any():
        t = _log_tail(np.ones(int(small.sum())), s2[small])
        out[small] = np.log1p(2 * np.exp(t))
    big = ~small
    if big.any():
        sb = s2[big]
        theta = sum(np.exp(-2 * np.pi**2 * sb * k * k) for k in range(1, 5))
        out[big] = 0.5 * np.log(2 * np.pi * sb) + np.log1p(2 * theta)
    return out


def _log_sides(k: np.ndarray, s2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(logcdf, logsf) at floor(k), each from the smaller side so none cancels."""
    kf = np.floor(k)
    upper = kf >= 0
    m = np.where(upper, kf + 1, -kf)  # P(X > kf) = tail(kf+1)/Z ; P(X <= kf) = tail(-kf)/Z
    small = _log_tail(m, s2) - _log_z(s2)
    with np.errstate(under="ignore"):
        big = np.log1p(-np.exp(small))
    return np.where(upper, big, small), np.where(upper, small, big)


# ------------------------------------------------------------------------ public API
def log_normalizer(sigma2: Any) -> Any:
    """log Z, Z = sum_{k in Z} exp(-k^2 / (2 sigma2)) (SPEC §1 discrete Gaussian noise).

    Z = sqrt(2 pi sigma2) (1 + 2 sum_{m>=1} exp(-2 pi^2 sigma2 m^2)) (Poisson summation)
    for sigma2 >= 0.5, Z = 1 + 2 sum_{k>=1} exp(-k^2 / (2 sigma2)) below.
    """
    s2 = _as_sigma2(sigma2)
    return _out(_log_z(s2), s2.ndim == 0)


def normalizer(sigma2: Any) -> Any:
    """Z = sum_{k in Z} exp(-k^2 / (2 sigma2)) (SPEC §1); see `log_normalizer`."""
    return np.exp(log_normalizer(sigma2))


def logpmf(k: Any, sigma2: Any) -> Any:
    """log P(X = k) = -k^2 / (2 sigma2) - log Z for integer k, -inf otherwise (SPEC §1)."""
    ka, s2, scalar = _broadcast(k, sigma2)
    with np.errstate(over="ignore", invalid="ignore"):
        val = -(ka * ka) / (2 * s2) - _log_z(s2)
    val = np.where(np.floor(ka) == ka, val, -np.inf)
    val = np.where(np.isnan(ka), np.nan, val)
    return _out(val, scalar)


def pmf(k: Any, sigma2: Any) -> Any:
    """P(X = k) = exp(-k^2 / (2 sigma2)) / Z for integer k, 0 otherwise (SPEC §1)."""
    with np.errstate(under="ignore"):
        return np.exp(logpmf(k, sigma2))


def logcdf(k: Any, sigma2: Any) -> Any:
    """log P(X <= floor(k)) (SPEC §1); for k < 0 it is log(tail(-k) / Z) with
    tail(m) = sum_{i>=m} exp(-i^2/(2 sigma2)), for k >= 0 log1p(-sf(k))."""
    ka, s2, scalar = _broadcast(k, sigma2)
    return _out(_log_sides(ka, s2)[0], scalar)


def logsf(k: Any, sigma2: Any) -> Any:
    """log P(X > floor(k)) = logcdf(-floor(k) - 1) by symmetry (SPEC §1)."""
    ka, s2, scalar = _broadcast(k, sigma2)
    return _out(_log_sides(ka, s2)[1], scalar)


def cdf(k: Any, sigma2: Any) -> Any:
    """P(X <= floor(k)) = sum_{i <= k} exp(-i^2 / (2 sigma2)) / Z (SPEC §1)."""
    with np.errstate(under="ignore"):
        return np.exp(logcdf(k, sigma2))


def sf(k: Any, sigma2: Any) -> Any:
    """P(X > floor(k)) = 1 - cdf(k) = cdf(-floor(k) - 1) (SPEC §1)."""
    with np.errstate(under="ignore"):
        return np.exp(logsf(k, sigma2))


def variance(sigma2: Any) -> Any:
    """The true variance E[X^2] = sum_k k^2 exp(-k^2 / (2 sigma2)) / Z, slightly below
    sigma2 (SPEC §1). By Poisson summation,
    E[X^2] = sigma2 (1 + 2 sum_m (1 - 4 pi^2 sigma2 m^2) q_m) / (1 + 2 sum_m q_m),
    q_m = exp(-2 pi^2 sigma2 m^2), used for sigma2 >= 0.5; direct sums below.
    """
    s2 = _as_sigma2(sigma2)
    out = np.empty(s2.shape)
    small = s2 < 0.5
    if small.any():
        ss = s2[small][..., None]
        kk = np.arange(1, 12, dtype=float)
        with np.errstate(under="ignore"):
            w = np.exp(-kk * kk / (2 * ss))
        out[small] = 2 * (kk * kk * w).sum(-1) / (1 + 2 * w.sum(-1))
    big = ~small
    if big.any():
        sb = s2[big]
        num = np.ones_like(sb)
        den = np.ones_like(sb)
        for m in range(1, 5):
            q = np.exp(-2 * np.pi**2 * sb * m * m)
            num += 2 * (1 - 4 * np.pi**2 * sb * m * m) * q
            den += 2 * q
        out[big] = sb * num / den
    return _out(out, s2.ndim == 0)


def partial_mean(k: Any, sigma2: Any) -> Any:
    """E[X 1{X > floor(k)}] = sum_{i > k} i exp(-i^2/(2 sigma2)) / Z (SPEC §1 suppression).

    With a = floor(k) + 1 <= 0 the terms i and -i (1 <= i <= -a) cancel exactly, so in
    all cases the value is sum_{i >= max(a, 1 - a)} i exp(-i^2/(2 sigma2)) / Z: always
    >= 0 and never obtained by a cancelling subtraction. Large sigma2 uses
    Euler-Maclaurin with the closed-form integral sigma2 exp(-m^2 / (2 sigma2)).
    """
    ka, s2, scalar = _broadcast(k, sigma2)
    a = np.floor(ka) + 1
    m = np.maximum(a, 1 - a)
    with np.errstate(under="ignore"):
        val = np.exp(_log_tail(m, s2, first_moment=True) - _log_z(s2))
    return _out(val, scalar)


def truncated_mean(k: Any, sigma2: Any) -> Any:
    """E[X | X > floor(k)] = partial_mean(k) / sf(k), an exact discrete sum (SPEC §1).

    This is the expected noise of a count that is released because it exceeds a
    threshold (suppression). Computed as a ratio of logs, so it stays accurate even
    when both the numerator and sf(k) are far below the float range.
    """
    ka, s2, scalar = _broadcast(k, sigma2)
    a = np.floor(ka) + 1
    m = np.maximum(a, 1 - a)
    log_num = _log_tail(m, s2, first_moment=True) - _log_z(s2)
    log_den = _log_sides(ka, s2)[1]
    with np.errstate(under="ignore", invalid="ignore"):
        val = np.exp(log_num - log_den)
    val = np.where(np.isposinf(ka), np.nan, val)
    return _out(val, scalar)


# ------------------------------------------------------------- high precision (mpmath)
def _mp_value(x: Any) -> mpmath.mpf:
    """Exact mpf of a float, int or Fraction (floats are binary rationals)."""
    if isinstance(x, Fraction):
        return mpmath.mpf(x.numerator) / x.denominator
    return mpmath.mpf(x)


def _mp_tail(m: int, s2: mpmath.mpf) -> mpmath.mpf:
    """sum_{i >= m} exp(-i^2 / (2 sigma2)) to about 60 digits (m >= 0 an integer)."""
    n_terms = 280 * s2 / (mpmath.sqrt(m * m + 280 * s2) + m) + 2
    lead = mpmath.exp(-(mpmath.mpf(m) ** 2) / (2 * s2))
    if n_terms <= _MP_L_DIRECT:
        # ratio recurrence: t_{d+1} = t_d r_d, r_{d+1} = r_d exp(-1/sigma2)
        total = mpmath.mpf(0)
        t = mpmath.mpf(1)
        r = mpmath.exp(-(2 * m + 1) / (2 * s2))
        q2 = mpmath.exp(-1 / s2)
        eps = mpmath.mpf(10) ** (-_MP_DPS - 5)
        while t > eps * (total + 1):
            total += t
            t *= r
            r *= q2
        return lead * total
    u = m / mpmath.sqrt(2 * s2)
    integral = mpmath.sqrt(mpmath.pi * s2 / 2) * mpmath.erfc(u)
    h_prev, h = mpmath.mpf(1), mpmath.mpf(m) / s2
    corr = mpmath.mpf(0)
    for n in range(1, 2 * _MP_EM_TERMS):
        if n % 2 == 1:
            p = (n + 1) // 2
            corr += mpmath.bernoulli(2 * p) / mpmath.factorial(2 * p) * h
        h_prev, h = h, (m * h - n * h_prev) / s2
    return integral + lead * (mpmath.mpf(1) / 2 + corr)


def _mp_z(s2: mpmath.mpf) -> mpmath.mpf:
    if s2 >= 1:
        theta = sum(mpmath.exp(-2 * mpmath.pi**2 * s2 * k * k) for k in range(1, 6))
        return mpmath.sqrt(2 * mpmath.pi * s2) * (1 + 2 * theta)
    return 1 + 2 * _mp_tail(1, s2)


def _mp_sf(k: int, s2: mpmath.mpf) -> mpmath.mpf:
    """P(X > k) in high precision (call inside a workdps context)."""
    if k >= 0:
        return _mp_tail(k + 1, s2) / _mp_z(s2)
    return 1 - _mp_tail(-k, s2) / _mp_z(s2)


def _mp_cdf(k: int, s2: mpmath.mpf) -> mpmath.mpf:
    if k < 0:
        return _mp_tail(-k, s2) / _mp_z(s2)
    return 1 - _mp_tail(k + 1, s2) / _mp_z(s2)


# ------------------------------------------------------------- exact integer search
def _smallest_true(cond: Callable[[np.ndarray], np.ndarray], guess: np.ndarray) -> np.ndarray:
    """Smallest integer k with cond(k), cond monotone (False ... False True ... True)."""
    if guess.size and not np.all(np.abs(guess) < 2.0**62):
        raise ValueError("the search starts outside the 64-bit integer range (sigma2 too large)")
    hi = guess.astype(np.int64)
    lo = hi - 1
    step = np.ones_like(hi)
    # Every loop is bounded: a step doubles at most _MAX_DOUBLINGS times (then the
    # bracket spans more than the int64 range and the condition cannot be monotone).
    for _ in range(_MAX_DOUBLINGS):
        c = cond(hi)
        if c.all():
            break
        hi = np.where(c, hi, hi + step)
        step = np.where(c, step, 2 * step)
    else:
        raise ValueError("integer search did not find an upper bracket (sigma2 outside the supported range)")
    step = np.ones_like(hi)
    for _ in range(_MAX_DOUBLINGS):
        c = cond(lo)
        if not c.any():
            break
        lo = np.where(c, lo - step, lo)
        step = np.where(c, 2 * step, step)
    else:
        raise ValueError("integer search did not find a lower bracket (sigma2 outside the supported range)")
    while np.any(hi - lo > 1):
        mid = lo + (hi - lo) // 2
        c = cond(mid)
        active = hi - lo > 1
        hi = np.where(active & c, mid, hi)
        lo = np.where(active & ~c, mid, lo)
    return hi


def _quantile_cond(
    s2: np.ndarray,
    s2_exact: list[Any],
    log_target: np.ndarray,
    mp_target: list[Callable[[], mpmath.mpf]],
    upper: np.ndarray,
) -> Callable[[np.ndarray], np.ndarray]:
    """cond(k): sf(k) <= target where upper, else cdf(k) >= target; exact near ties."""

    def cond(k: np.ndarray) -> np.ndarray:
        lc, ls = _log_sides(k.astype(float), s2)
        val = np.where(upper, ls, lc)
        res = np.where(upper, val <= log_target, val >= log_target)
        close = np.abs(val - log_target) <= _CONFIRM_RTOL
        for i in np.flatnonzero(close):
            with mpmath.workdps(_MP_DPS):
                sv = _mp_value(s2_exact[i])
                target = mp_target[i]()
                if upper[i]:
                    res[i] = _mp_sf(int(k[i]), sv) <= target
                else:
                    res[i] = _mp_cdf(int(k[i]), sv) >= target
        return res

    return cond


def _exact_list(sigma2: Any, shape: tuple[int, ...], s2: np.ndarray) -> list[Any]:
    """Per-element sigma2 for the high-precision check: a Fraction stays exact."""
    if isinstance(sigma2, Fraction):
        return [sigma2] * int(np.prod(shape, dtype=int))
    return list(s2.ravel())


def inverse_cdf(p: Any, sigma2: Any) -> Any:
    """Smallest integer k with P(X <= k) >= p, for 0 < p < 1 (SPEC §1 quantile).

    Exact: the float CDF decides unless it is within 1e-8 (relative) of p at the
    candidate, where a 60-digit evaluation decides. For p > 1/2 the test is done on
    the tail, sf(k) <= 1 - p (1 - p is exact in floating point), so p up to 1 - 1e-16
    is handled. A Fraction sigma2 is used exactly in the high-precision check.
    Returns an int (scalar input) or an int64 array.
    """
    pa, s2, scalar = _broadcast(p, sigma2)
    if pa.size and not np.all((pa > 0) & (pa < 1)):
        raise ValueError(f"p must be a probability strictly between 0 and 1 (got {p!r})")
    pf, sf_ = pa.ravel(), s2.ravel()
    upper = pf > 0.5
    target = np.where(upper, 1 - pf, pf)
    exact = _exact_list(sigma2, pa.shape, s2)

    def mp_target(i: int) -> Callable[[], mpmath.mpf]:
        return (lambda: 1 - mpmath.mpf(pf[i])) if upper[i] else (lambda: mpmath.mpf(pf[i]))

    cond = _quantile_cond(sf_, exact, np.log(target), [mp_target(i) for i in range(pf.size)], upper)
    # the discrete quantile is within a step or two of the continuity-corrected normal one
    guess = np.ceil(np.sqrt(sf_) * ndtri(pf) - 0.5)
    res = _smallest_true(cond, guess).reshape(pa.shape)
    return int(res[()]) if scalar else res


def moe(sigma2: Any, confidence: Any = 0.95) -> Any:
    """Exact margin of error: the smallest integer m >= 0 with P(|X| <= m) >= confidence
    (SPEC §2, "the exact figure for the discrete Gaussian").

    P(|X| <= m) = 1 - 2 sf(m), so m is the smallest m with sf(m) <= (1 - confidence)/2;
    decided exactly as in `inverse_cdf`. Compare `calculators.budget.moe_bound`, the
    design paper's floor(1.96 sigma). Returns an int (scalar input) or an int64 array.
    """
    ca, s2, scalar = _broadcast(confidence, sigma2)
    if ca.size and not np.all((ca > 0) & (ca < 1)):
        raise ValueError(f"confidence must be strictly between 0 and 1 (got {confidence!r})")
    cf, sf_ = ca.ravel(), s2.ravel()
    q = (1 - cf) / 2
    exact = _exact_list(sigma2, ca.shape, s2)

    def mp_target(i: int) -> Callable[[], mpmath.mpf]:
        return lambda: (1 - mpmath.mpf(cf[i])) / 2

    upper = np.ones(cf.shape, dtype=bool)
    cond = _quantile_cond(sf_, exact, np.log(q), [mp_target(i) for i in range(cf.size)], upper)
    guess = np.maximum(np.ceil(np.sqrt(sf_) * ndtri(1 - q) - 0.5), 0)
    res = np.maximum(_smallest_true(cond, guess), 0).reshape(ca.shape)
    return int(res[()]) if scalar else res
