"""Privacy accounting and the MOE <-> rho language of SafeTab-P (SPEC §1, §2).

Stability S, the noise variance parameter sigma2 = S / (2 * share * rho) of each
stage, the design paper's MOE bound and its inversion, exact discrete-Gaussian MOEs,
the plan totals (sequential composition, US / PR disjointness, bounded neighbours) and
conversions from rho-zCDP to (epsilon, delta)-DP.

Two MOE figures exist and both are offered (SPEC §2):

* ``moe_bound`` — the design paper's floor(1.96 * sigma), a continuous-Gaussian figure;
* ``moe_exact`` — the smallest m with P(|X| <= m) >= 95% for the discrete Gaussian.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from calculators import discrete_gaussian, geometric, noise_family
from calculators.levels import PopulationGroupLevel

if TYPE_CHECKING:  # config imports pydantic; keep this module light to import
    from calculators.config import SafeTabConfig

#: The 95% normal quantile used by the design paper's MOE bound (SPEC §2).
Z95 = 1.96

__all__ = [
    "Z95",
    "PlanTotals",
    "delta_for_epsilon",
    "epsilon_classic",
    "epsilon_tight",
    "geometric_scale",
    "moe_bound",
    "moe_exact",
    "moe_for_rho",
    "moe_of_independent_sum",
    "moe_of_sum",
    "noise_scale",
    "noise_scale_exact",
    "plan_totals",
    "plan_totals_from_budgets",
    "rho_level_for_exact_moe",
    "rho_level_for_moe",
    "rho_stage_for_moe",
    "sigma2",
    "sigma2_exact",
    "sigma2_stage1",
    "sigma2_stage2",
    "sigma2_total_only",
    "stability",
]


def _ret(a: np.ndarray) -> Any:
    return a[()] if a.ndim == 0 else a


def _check_positive(name: str, value: Any, what: str) -> np.ndarray:
    arr = np.asarray(value, dtype=float)
    if arr.size and not np.all(np.isfinite(arr) & (arr > 0)):
        raise ValueError(f"{name} ({what}) must be a finite number > 0 (got {value!r})")
    return arr


def _check_gamma(gamma: Any) -> np.ndarray:
    g = np.asarray(gamma, dtype=float)
    if g.size and not np.all((g > 0) & (g < 1)):
        raise ValueError(
            "gamma (the stage-1 share of the budget) must be strictly between 0 and 1 "
            f"(got {gamma!r})"
        )
    return g


# ------------------------------------------------------------------------ stability
def stability(max_race_codes: Any, h_r: Any = 1, h_e: Any = 1) -> Any:
    """Stability S = h_r * max(2, r) + h_e (SPEC §1): the most population groups one
    person joins in one population group level; r = max race codes (1..8), h_r / h_e =
    the most iterations one race / ethnicity code maps to within one (level, ALONE)
    slice (1 in the 2020 spec). 2020: r = 8 -> 9, r = 3 -> 4.
    """
    r = np.asarray(max_race_codes)
    if r.size and not np.all((r >= 1) & (np.floor(r) == r)):
        raise ValueError(f"max_race_codes must be a whole number >= 1 (got {max_race_codes!r})")
    s = np.asarray(h_r) * np.maximum(2, r) + np.asarray(h_e)
    if s.ndim == 0:
        return int(s)
    return s.astype(np.int64)


# ------------------------------------------------------------------------- sigma^2
def sigma2(rho: Any, S: Any, share: Any = 1.0) -> Any:
    """Noise variance parameter sigma2 = S / (2 * share * rho) (SPEC §1).

    rho is the level budget (zCDP), share the fraction of it a stage spends (gamma for
    stage 1, 1 - gamma for stage 2, 1 for TotalOnly groups), S the stability.
    """
    r = _check_positive(
        "rho", rho, "the level's zCDP budget; a level with rho = 0 is not tabulated"
    )
    s = _check_positive("S", S, "the stability")
    sh = np.asarray(share, dtype=float)
    if sh.size and not np.all((sh > 0) & (sh <= 1)):
        raise ValueError(f"share must be in (0, 1] (got {share!r})")
    # a stage budget share * rho below the smallest float (e.g. 1e-300 * 1e-300) gives an
    # infinite sigma2, which the callers refuse with a message ("not finite"); no warning
    with np.errstate(divide="ignore"):
        return _ret(np.asarray(s / (2 * sh * r)))


def sigma2_stage1(rho: Any, gamma: Any, S: Any) -> Any:
    """Stage-1 sigma2 = S / (2 * gamma * rho) (SPEC §1)."""
    return sigma2(rho, S, _check_gamma(gamma))


def sigma2_stage2(rho: Any, gamma: Any, S: Any) -> Any:
    """Stage-2 sigma2 = S / (2 * (1 - gamma) * rho) (SPEC §1)."""
    return sigma2(rho, S, 1 - _check_gamma(gamma))


def sigma2_total_only(rho: Any, S: Any) -> Any:
    """TotalOnly (DETAILED_ONLY) groups: sigma2 = S / (2 * rho), full budget (SPEC §1)."""
    return sigma2(rho, S, 1.0)


def sigma2_exact(rho: Any, S: Any, share: Any = 1) -> Fraction:
    """sigma2 = S / (2 * share * rho) in exact rational arithmetic (SPEC §1).

    Floats are taken as the decimal they print as (0.159 -> 159/1000, as written in
    config.json), so the engine can sample without any rounding.
    """
    from calculators.config import to_fraction

    r, s, sh = to_fraction(rho), to_fraction(S), to_fraction(share)
    if r <= 0:
        raise ValueError(f"rho must be > 0 (got {rho!r}); a level with rho = 0 is not tabulated")
    if s <= 0:
        raise ValueError(f"S (the stability) must be > 0 (got {S!r})")
    if not 0 < sh <= 1:
        raise ValueError(f"share must be in (0, 1] (got {share!r})")
    return s / (2 * sh * r)


def geometric_scale(epsilon: Any, S: Any, share: Any = 1.0) -> Any:
    """Pure-DP variant: two-sided geometric scale b = S / (share * epsilon) (SPEC §1)."""
    e = _check_positive("epsilon", epsilon, "the level's pure-DP budget")
    s = _check_positive("S", S, "the stability")
    sh = np.asarray(share, dtype=float)
    if sh.size and not np.all((sh > 0) & (sh <= 1)):
        raise ValueError(f"share must be in (0, 1] (got {share!r})")
    return _ret(np.asarray(s / (sh * e)))


def noise_scale(level_budget: Any, S: Any, share: Any = 1.0, noise: str = "gaussian") -> Any:
    """The noise scale of a stage spending `share` of a level budget (SPEC §1):
    `sigma2` (zCDP, budget rho) or `geometric_scale` (pure DP, budget epsilon)."""
    if noise_family.law(noise) is discrete_gaussian:
        return sigma2(level_budget, S, share)
    return geometric_scale(level_budget, S, share)


def noise_scale_exact(level_budget: Any, S: Any, share: Any = 1, noise: str = "gaussian") -> Fraction:
    """`noise_scale` as an exact rational, as the engine samples with it:
    `sigma2_exact` = S / (2 share rho), or b = S / (share epsilon) = twice that."""
    s2 = sigma2_exact(level_budget, S, share)
    return s2 if noise_family.law(noise) is discrete_gaussian else 2 * s2


def _stage_share(stage: str, gamma: Any) -> Any:
    """The share of the level budget a stage spends: gamma, 1 - gamma or 1 (SPEC §1)."""
    if stage == "total_only":
        return 1.0
    if stage not in ("stage1", "stage2"):
        raise ValueError(f"stage must be 'stage2', 'stage1' or 'total_only' (got {stage!r})")
    if gamma is None:
        raise ValueError(f"gamma is needed for {stage}")
    g = _check_gamma(gamma)
    return g if stage == "stage1" else 1 - g


# -------------------------------------------------------------------------- MOE
def moe_bound(sigma2: Any) -> Any:
    """Design-paper MOE bound floor(1.96 * sqrt(sigma2)) (SPEC §2).

    A continuous-Gaussian figure. A relative 1e-12 guard keeps the exact boundary
    (sigma2 = (moe / 1.96)^2, what `rho_stage_for_moe` returns) from rounding down.
    """
    s2 = _check_positive("sigma2", sigma2, "the noise variance parameter")
    if s2.size and np.any(s2 > discrete_gaussian.MAX_SIGMA2):
        raise ValueError(f"sigma2 (the noise variance parameter) must be at most {discrete_gaussian.MAX_SIGMA2:g} "
                         "(the budget is far below the supported range; see README, \"Configuration ranges\")")
    m = np.floor(Z95 * np.sqrt(s2) * (1 + 1e-12)).astype(np.int64)
    return int(m) if m.ndim == 0 else m


def moe_exact(sigma2: Any, confidence: Any = 0.95) -> Any:
    """Exact MOE of one discrete-Gaussian cell: the smallest integer m >= 0 with
    P(|X| <= m) >= confidence (SPEC §2); = `discrete_gaussian.moe`."""
    return discrete_gaussian.moe(sigma2, confidence)


def rho_stage_for_moe(moe: Any, S: Any) -> Any:
    """Design-paper inversion rho = 1.96^2 * S / (2 * moe^2) (SPEC §2): the budget a
    stage must spend for its cells to have MOE bound `moe`."""
    m = _check_positive("moe", moe, "the target margin of error")
    s = _check_positive("S", S, "the stability")
    return _ret(np.asarray(Z95**2 * s / (2 * m**2)))


def rho_level_for_moe(moe: Any, S: Any, gamma: Any, noise: str = "gaussian") -> Any:
    """Level budget whose stage-2 cells have MOE bound `moe` (SPEC §2):
    rho = 1.96^2 * S / (2 * moe^2) / (1 - gamma).

    noise="geometric" (pure DP): the level epsilon whose stage-2 geometric cells have
    floor(1.96 sd) = moe: sd^2 = 2a / (1 - a)^2 = V = (moe / 1.96)^2 gives
    a = (V + 1 - sqrt(2V + 1)) / V, b = -1 / ln a, epsilon = S / ((1 - gamma) b).
    """
    if noise == noise_family.GAUSSIAN:
        return _ret(np.asarray(rho_stage_for_moe(moe, S) / (1 - _check_gamma(gamma))))
    noise_family.law(noise)
    m = _check_positive("moe", moe, "the target margin of error")
    s = _check_positive("S", S, "the stability")
    g = _check_gamma(gamma)
    v = (m / Z95) ** 2
    a = (v + 1 - np.sqrt(2 * v + 1)) / v
    b = -1 / np.log(a)
    return _ret(np.asarray(s / ((1 - g) * b)))


def moe_for_rho(
    rho: Any,
    S: Any,
    gamma: Any = None,
    stage: Literal["stage2", "stage1", "total_only"] = "stage2",
    exact: bool = False,
    noise: str = "gaussian",
) -> Any:
    """MOE of one cell of a stage for a level budget rho (SPEC §2).

    sigma2 = S / (2 share rho) with share = 1 - gamma (stage2), gamma (stage1) or 1
    (total_only); the MOE is `moe_bound` (floor(1.96 sigma)) or, with exact=True,
    `moe_exact` (the discrete Gaussian's own 95% half-width).

    noise="geometric" (pure DP): `rho` is the level's epsilon, the scale is
    b = S / (share epsilon), the exact MOE is `geometric.moe(b)` and the bound is
    floor(1.96 sd) with the geometric's variance 2a / (1 - a)^2.
    """
    scale = noise_scale(rho, S, _stage_share(stage, gamma), noise)
    if exact:
        return noise_family.law(noise).moe(scale)
    return moe_of_sum(scale, 1, exact=False, noise=noise)


def _largest_passing_scale(ok: Any, first_hi: float) -> float:
    """The largest scale s with ok(s), for a condition that holds on an interval (0, s*]
    (the MOE grows with the scale): bracket s* from 1e-3 and `first_hi`, then bisect to
    1e-14 relative."""
    lo = 1e-3
    while not ok(lo):
        lo /= 10
    hi = max(2 * lo, first_hi)
    while ok(hi):
        lo, hi = hi, 4 * hi
    while hi - lo > 1e-14 * hi:
        mid = 0.5 * (lo + hi)
        if ok(mid):
            lo = mid
        else:
            hi = mid
    return lo


def _largest_passing_sigma2(moe: int, confidence: float, ok: Any) -> float:
    """The largest sigma2 whose exact MOE is <= moe (the boundary s* of `ok`).

    moe(sigma2) <= m  <=>  P(|X| <= m) >= confidence  <=>  log sf(m; sigma2) <= log q,
    q = (1 - confidence) / 2, and sf(m; sigma2) grows with sigma2: so s* is the root in
    t = ln sigma2 of g(t) = log sf(m; e^t) - log q, found by Brent's method to 1e-15 in t
    (a dozen tail evaluations instead of a bisection of whole MOE searches). The exact
    `ok` (ties decided in high precision) has the last word: the root is stepped down
    by relative 1e-13 until it passes. Falls back to the bisection if the float tail
    cannot bracket the root. The float root is within ~1e-13 (relative) of the exact
    boundary, so the budget is the smallest to that precision."""
    from scipy.optimize import brentq

    log_q = math.log((1 - confidence) / 2)

    def g(t: float) -> float:
        return float(discrete_gaussian.logsf(moe, math.exp(t))) - log_q

    t0 = 2 * math.log((moe + 0.5) / Z95)  # the continuity-corrected normal boundary
    lo_t, hi_t = t0 - 1.0, t0 + 1.0
    for _ in range(60):
        if g(lo_t) < 0:
            break
        lo_t -= 2.0
    for _ in range(60):
        if g(hi_t) > 0:
            break
        hi_t += 2.0
    if not (g(lo_t) < 0 < g(hi_t)):
        return _largest_passing_scale(ok, ((moe + 2) / Z95) ** 2)
    s = math.exp(brentq(g, lo_t, hi_t, xtol=1e-15, rtol=4 * 2.0**-52, maxiter=200))
    for _ in range(200):
        if ok(s):
            break
        s *= 1 - 1e-13
    else:
        return _largest_passing_scale(ok, ((moe + 2) / Z95) ** 2)
    return s


@lru_cache(maxsize=1024)
def _scale_limit(moe: int, confidence: float, noise: str) -> float:
    """s*(m): the largest noise scale (sigma2, or the geometric's b) whose exact MOE is
    <= m. It depends on m, the confidence and the noise law only, not on S or gamma
    (rho = S / (2 (1-gamma) s*)), so it is searched once per target and reused when r
    or gamma change (the planner asks again on every change of either)."""
    if noise != noise_family.GAUSSIAN:
        # pure DP: P(|X| > m) = 2 a^(m+1) / (1 + a) grows with a = exp(-1/b), so the
        # passing geometric scales form an interval (0, b*]
        def ok_b(b: float) -> bool:
            return geometric.moe(b, confidence) <= moe

        return _largest_passing_scale(ok_b, 2e-3)

    def ok(s2: float) -> bool:
        return discrete_gaussian.moe(s2, confidence) <= moe

    # P(|X| <= m) falls as sigma2 grows (|X| is stochastically increasing in sigma2),
    # so {sigma2 : moe(sigma2) <= m} is an interval (0, s*]
    return _largest_passing_sigma2(moe, confidence, ok)


def _rho_level_for_exact_moe_scalar(
    moe: int, S: float, gamma: float, confidence: float, noise: str = "gaussian"
) -> float:
    if noise != noise_family.GAUSSIAN:
        # epsilon = S / ((1 - gamma) b*)
        eps = S / ((1 - gamma) * _scale_limit(moe, confidence, noise))
        while geometric.moe(S / ((1 - gamma) * eps), confidence) > moe:
            eps = math.nextafter(eps, math.inf)
        return eps

    lo = _scale_limit(moe, confidence, noise)
    rho = S / (2 * (1 - gamma) * lo)
    # the float rho must itself pass after the division round trip
    while discrete_gaussian.moe(float(sigma2_stage2(rho, gamma, S)), confidence) > moe:
        rho = math.nextafter(rho, math.inf)
    return rho


def rho_level_for_exact_moe(
    moe: Any, S: Any, gamma: Any, confidence: float = 0.95, noise: str = "gaussian"
) -> Any:
    """Smallest level rho whose *exact* stage-2 MOE (`moe_exact`) is <= moe (SPEC §2).

    The exact MOE is a non-decreasing step function of sigma2 = S / (2 (1-gamma) rho),
    so the answer is rho* = S / (2 (1-gamma) s*) with s* the largest sigma2 whose
    exact MOE is <= moe. s* is the root of log sf(moe; sigma2) = log((1 - confidence)/2)
    in ln sigma2 (Brent's method), confirmed by the exact `discrete_gaussian.moe`
    (`_largest_passing_sigma2`), and the returned float is nudged up, one ulp at a time,
    until it passes the check itself.

    noise="geometric" (pure DP): the smallest level epsilon whose stage-2 geometric
    cells (scale b = S / ((1 - gamma) epsilon)) have exact MOE <= moe.
    """
    m = np.asarray(moe)
    if m.size and not np.all((m >= 0) & (np.floor(m) == m)):
        raise ValueError(f"moe must be a whole number >= 0 (got {moe!r})")
    _check_positive("S", S, "the stability")
    _check_gamma(gamma)
    noise_family.law(noise)
    f = np.vectorize(
        lambda a, b, c: _rho_level_for_exact_moe_scalar(int(a), float(b), float(c), confidence, noise)
    )
    return _ret(np.asarray(f(m, S, gamma), dtype=float))


#: Largest support (points) of a convolved sum; beyond it the geometric falls back.
_MAX_CONVOLVED = 4_000_000


def _half_width(scale: float, noise: str) -> int:
    """Support half-width of one cell beyond which the mass is below exp(-40)."""
    if noise == noise_family.GAUSSIAN:
        return int(math.sqrt(80 * scale)) + 3
    return int(40 * scale) + 3  # 2 a^(h+1) / (1 + a) < exp(-40)


def _convolve(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Full convolution; by FFT (numpy's, no heavy import) for large inputs."""
    if len(x) * len(y) <= 1_000_000:
        return np.convolve(x, y)
    n = len(x) + len(y) - 1
    size = 1 << (n - 1).bit_length()
    out = np.fft.irfft(np.fft.rfft(x, size) * np.fft.rfft(y, size), size)[:n]
    return np.clip(out, 0.0, None)  # FFT round-off can leave tiny negatives; probabilities are >= 0


def _trim(pmf: np.ndarray, tail: float) -> np.ndarray:
    """Drop the same number of points from both ends of a symmetric centred pmf while
    the mass dropped on each side stays below `tail` (0: keep everything)."""
    if tail <= 0 or len(pmf) < 3:
        return pmf
    k = int(np.searchsorted(np.cumsum(pmf[: len(pmf) // 2]), tail, side="left"))
    return pmf[k : len(pmf) - k] if k else pmf


def _sum_pmf(scale: float, cells: int, noise: str, tail: float = 0.0) -> np.ndarray:
    """pmf of a sum of `cells` independent cells, centred (binary powering of the
    convolution keeps the number of convolutions at O(log cells)); `tail` > 0 trims
    the negligible tails after every convolution."""
    half = _half_width(scale, noise)
    p = np.asarray(noise_family.law(noise).pmf(np.arange(-half, half + 1), scale), dtype=float)
    total, power, c = np.array([1.0]), p, cells
    while c:
        if c & 1:
            total = _trim(_convolve(total, power), tail)
        c >>= 1
        if c:
            power = _trim(_convolve(power, power), tail)
    return total


def _central_moe(pmf: np.ndarray, confidence: float) -> int:
    """Smallest m with P(|X| <= m) >= confidence for a centred pmf of odd length."""
    centre = len(pmf) // 2
    inside = pmf[centre] + np.concatenate(
        [[0.0], np.cumsum(pmf[centre + 1 :] + pmf[centre - 1 :: -1][: len(pmf) - centre - 1])]
    )
    return int(np.argmax(inside >= confidence))


def _moe_of_sum_convolved(s2: float, cells: int, confidence: float, noise: str = "gaussian") -> int:
    """Exact MOE of a sum of `cells` independent cells of a noise law with scale s2, by
    numerical convolution (FFT; binary powering)."""
    return _central_moe(_sum_pmf(s2, cells, noise), confidence)


#: Mass a convolved sum may drop on each side (far below any MOE's resolution).
_TAIL = 1e-18


def moe_of_independent_sum(parts: list[tuple[Any, int]], confidence: float = 0.95,
                           noise: str = "gaussian") -> tuple[int, bool]:
    """MOE of a sum (or difference: the laws are symmetric) of independent noisy cells
    of different scales, e.g. a custom area composed of published totals of several
    geography levels.

    `parts` lists (scale, cells): `cells` independent cells with scale sigma2 (zCDP)
    or geometric b (pure DP). A sum of discrete Gaussians is not a discrete Gaussian,
    so the law of the sum is computed by convolving the exact pmfs (mass beyond
    exp(-40) per cell dropped, and at most 1e-18 a side after each convolution) and the
    MOE is the smallest m with P(|sum| <= m) >= confidence. Returns (moe, True). When the convolved support would exceed 4
    million points, returns the discrete-Gaussian MOE of the same total variance
    and False (an approximation: wide sums are close to Gaussian).
    """
    law = noise_family.law(noise)
    norm = []
    for scale, cells in parts:
        if isinstance(cells, bool) or int(cells) != cells or cells < 1:
            raise ValueError(f"cells must be a whole number >= 1 (got {cells!r})")
        _check_positive("scale", scale, "a noise scale")
        norm.append((float(scale), int(cells)))
    if not norm:
        return 0, True
    width = sum((2 * _half_width(s, noise) + 1) * c for s, c in norm)
    if width > _MAX_CONVOLVED:
        var = sum(float(law.variance(s)) * c for s, c in norm)
        return int(discrete_gaussian.moe(var, confidence)), False
    merged: dict[float, int] = {}
    for s, c in norm:
        merged[s] = merged.get(s, 0) + c
    pmf = np.array([1.0])
    for s, c in sorted(merged.items()):
        pmf = _trim(_convolve(pmf, _sum_pmf(s, c, noise, _TAIL)), _TAIL)
    return _central_moe(pmf, confidence), True


def moe_of_sum(
    sigma2: Any, cells: Any, exact: bool = False, confidence: float = 0.95, noise: str = "gaussian"
) -> Any:
    """MOE of a total of `cells` independent noisy cells, each with parameter sigma2
    (SPEC §2: the variances add up, c * sigma2).

    exact=False: the bound floor(1.96 * sqrt(c * sigma2)).
    exact=True: for sigma2 >= 2, the exact discrete-Gaussian MOE of N_Z(0, c * sigma2).
    That is an approximation, since a sum of c discrete Gaussians is not itself
    discrete Gaussian; it equals the MOE of the true sum in every case checked
    (sigma2 from 0.5 to 60, c up to 46) but could differ by one right at a step. For
    sigma2 < 2, where the approximation does fail (e.g. sigma2 = 0.1, c = 8), the law
    of the sum is computed exactly by convolution instead.

    noise="geometric" (pure DP; sigma2 is then the scale b): the bound uses the
    geometric's variance, floor(1.96 sqrt(c * 2a / (1 - a)^2)); exact=True convolves
    the c geometric laws numerically (support 2 * (40 b + 3) + 1 points per cell,
    beyond exp(-40) of mass dropped), and for sums whose support would exceed 4 million
    points (b above about 1,000) takes the discrete-Gaussian MOE of the same variance,
    which the central limit theorem makes close for such wide sums.
    """
    c = np.asarray(cells)
    if c.size and not np.all((c >= 1) & (np.floor(c) == c)):
        raise ValueError(f"cells must be a whole number >= 1 (got {cells!r})")
    if noise != noise_family.GAUSSIAN:
        return _moe_of_geometric_sum(sigma2, c, exact, confidence)
    s2 = _check_positive("sigma2", sigma2, "the noise variance parameter")
    total = s2 * c
    if not exact:
        return moe_bound(total)
    s2b, cb = np.broadcast_arrays(s2, c)
    out = np.asarray(moe_exact(total, confidence)).copy()
    small = (s2b < 2) & (cb > 1)
    for idx in np.ndindex(out.shape):
        if small[idx]:
            out[idx] = _moe_of_sum_convolved(float(s2b[idx]), int(cb[idx]), confidence)
    return int(out) if out.ndim == 0 else out


def _geometric_bound(scale: Any, cells: Any = 1) -> Any:
    """floor(1.96 sqrt(c Var)) for geometric cells; 0 where the scale is so small that the
    variance 2a / (1 - a)^2 underflows to 0 (the noise is then 0 with certainty)."""
    var = np.asarray(geometric.variance(scale), dtype=float) * np.asarray(cells)
    out = np.asarray(moe_bound(np.where(var > 0, var, 1.0)))
    out = np.where(var > 0, out, 0).astype(np.int64)
    return int(out) if out.ndim == 0 else out


def _moe_of_geometric_sum(scale: Any, c: np.ndarray, exact: bool, confidence: float) -> Any:
    b = _check_positive("scale", scale, "the geometric scale b = S / epsilon")
    if not exact:
        return _geometric_bound(b, c)
    bb, cb = np.broadcast_arrays(b, c)
    out = np.zeros(bb.shape, dtype=np.int64)
    for idx in np.ndindex(out.shape):
        bi, ci = float(bb[idx]), int(cb[idx])
        if ci == 1:
            out[idx] = geometric.moe(bi, confidence)
        elif (2 * (40 * bi + 3) + 1) * ci <= _MAX_CONVOLVED:
            out[idx] = _moe_of_sum_convolved(bi, ci, confidence, noise_family.GEOMETRIC)
        else:  # wide cells: their variance is far from underflow
            out[idx] = discrete_gaussian.moe(float(geometric.variance(bi)) * ci, confidence)
    return int(out) if out.ndim == 0 else out


# ------------------------------------------------------------------- plan totals
@dataclass(frozen=True)
class PlanTotals:
    """Whole-plan privacy cost (SPEC §1 "Privacy accounting").

    us / pr: sums of the level budgets of each run (0 if the run is off); release:
    max(us, pr) (US and PR persons are disjoint); *_bounded: the same under bounded
    neighbours (change one person), twice the unbounded figures. Units are rho (zCDP)
    or epsilon (pure DP, basic composition), matching the budgets given.
    """

    us: float
    pr: float
    release: float
    us_bounded: float
    pr_bounded: float
    release_bounded: float


def plan_totals_from_budgets(
    budgets: Mapping[PopulationGroupLevel, float], run_us: bool = True, run_pr: bool = True
) -> PlanTotals:
    """Plan totals from level budgets (SPEC §1): US = sum of rho over US levels (if
    run_us), PR = sum over PR-* levels (if run_pr), release = max(US, PR), bounded = 2x.
    """
    us = (
        math.fsum(v for lvl, v in budgets.items() if not PopulationGroupLevel(*lvl).is_pr)
        if run_us
        else 0.0
    )
    pr = (
        math.fsum(v for lvl, v in budgets.items() if PopulationGroupLevel(*lvl).is_pr)
        if run_pr
        else 0.0
    )
    release = max(us, pr)
    return PlanTotals(us, pr, release, 2 * us, 2 * pr, 2 * release)


def plan_totals(config: SafeTabConfig) -> PlanTotals:
    """Plan totals of a `SafeTabConfig` (SPEC §1): see `plan_totals_from_budgets`;
    uses the config's budgets and its run_us / run_pr switches."""
    return plan_totals_from_budgets(config.budgets(), run_us=config.run_us, run_pr=config.run_pr)


# ------------------------------------------------------------- (epsilon, delta)
def _check_delta(delta: Any) -> np.ndarray:
    d = np.asarray(delta, dtype=float)
    if d.size and not np.all((d > 0) & (d < 1)):
        raise ValueError(f"delta must be strictly between 0 and 1 (got {delta!r})")
    return d


def _check_rho(rho: Any) -> np.ndarray:
    r = np.asarray(rho, dtype=float)
    if r.size and not np.all(np.isfinite(r) & (r >= 0)):
        raise ValueError(f"rho must be a finite number >= 0 (got {rho!r})")
    return r


def epsilon_classic(rho: Any, delta: Any) -> Any:
    """Classic zCDP -> (epsilon, delta) bound: epsilon = rho + 2 sqrt(rho ln(1/delta))
    (SPEC §1, Bun-Steinke 2016)."""
    r, d = _check_rho(rho), _check_delta(delta)
    return _ret(np.asarray(r + 2 * np.sqrt(r * -np.log(d))))


def _minimise_over_t(f: Any, center: float, half_width: float) -> float:
    """min over t of f(t) (t = log(alpha - 1)): grid, then bounded Brent near the best."""
    grid = np.linspace(center - half_width, center + half_width, 401)
    vals = np.array([f(t) for t in grid])
    i = int(np.nanargmin(vals))
    step = grid[1] - grid[0]
    # Imported here: scipy.optimize costs most of a second to import, and the engine
    # needs it only for the manifest's epsilon.
    from scipy.optimize import minimize_scalar

    res = minimize_scalar(
        f, bounds=(grid[i] - step, grid[i] + step), method="bounded", options={"xatol": 1e-12}
    )
    return float(min(vals[i], res.fun))


@lru_cache(maxsize=4096)  # a pure function that pages ask again for the same budgets
def _epsilon_tight_scalar(rho: float, delta: float) -> float:
    if rho == 0:
        return 0.0
    log_inv_delta = -math.log(delta)

    def eps(t: float) -> float:
        # alpha = 1 + e^t; log(alpha) = log1p(e^t); log(1 - 1/alpha) = t - log(alpha)
        am1 = math.exp(t)
        log_alpha = math.log1p(am1)
        return (1 + am1) * rho + log_inv_delta / am1 + (t - log_alpha) - log_alpha / am1

    center = 0.5 * math.log(log_inv_delta / rho)  # classic optimum alpha - 1 = sqrt(L / rho)
    best = min(_minimise_over_t(eps, center, 20.0), eps(center))
    return max(0.0, min(best, rho + 2 * math.sqrt(rho * log_inv_delta)))


def epsilon_tight(rho: Any, delta: Any) -> Any:
    """Tighter zCDP -> (epsilon, delta) conversion of Canonne, Kamath & Steinke (2020)
    (SPEC §1):

        epsilon = inf_{alpha > 1} alpha rho
                  + (ln(1/delta) + (alpha - 1) ln(1 - 1/alpha) - ln(alpha)) / (alpha - 1).

    Minimised numerically over t = ln(alpha - 1) (a 401-point grid around the classic
    optimum alpha - 1 = sqrt(ln(1/delta) / rho), then bounded Brent); never above
    `epsilon_classic`, never below 0; rho = 0 gives 0.
    """
    r, d = _check_rho(rho), _check_delta(delta)
    f = np.vectorize(lambda a, b: _epsilon_tight_scalar(float(a), float(b)), otypes=[float])
    return _ret(np.asarray(f(r, d)))


def _delta_scalar(rho: float, epsilon: float) -> float:
    if rho == 0:
        return 0.0

    def log_delta(t: float) -> float:
        am1 = math.exp(t)
        log_alpha = math.log1p(am1)
        return am1 * ((1 + am1) * rho - epsilon) + am1 * (t - log_alpha) - log_alpha

    center = math.log(max(epsilon - rho, rho) / (2 * rho))  # near alpha = (eps + rho) / (2 rho)
    best = _minimise_over_t(log_delta, center, 25.0)
    return min(1.0, math.exp(best))


def delta_for_epsilon(rho: Any, epsilon: Any) -> Any:
    """The delta at which rho-zCDP gives (epsilon, delta)-DP under the tight conversion
    of Canonne, Kamath & Steinke (2020), the inverse of `epsilon_tight` (SPEC §1):

        delta = inf_{alpha > 1} exp((alpha-1)(alpha rho - epsilon)) (1 - 1/alpha)^(alpha-1) / alpha.

    Minimised numerically over t = ln(alpha - 1); capped at 1; rho = 0 gives 0.
    """
    r = _check_rho(rho)
    e = np.asarray(epsilon, dtype=float)
    if e.size and not np.all(np.isfinite(e) & (e >= 0)):
        raise ValueError(f"epsilon must be a finite number >= 0 (got {epsilon!r})")
    f = np.vectorize(lambda a, b: _delta_scalar(float(a), float(b)), otypes=[float])
    return _ret(np.asarray(f(r, e)))
