"""The two-stage adaptive tabulation seen from one population group (SPEC §1).

A group of true size n gets a stage-1 noisy total n + X, X ~ N_Z(0, sigma2_stage1);
its stat level is the number of thresholds Theta_1 <= Theta_2 <= Theta_3 that are
<= n + X, and stage 2 publishes, with sigma2_stage2 per cell, either a total (level 0)
or a sex x age table of c_j = 8, 18, 46 cells (levels 1, 2, 3;
`calculators.levels.STAT_LEVEL_CELLS`).

Definitions used throughout (all functions accept numpy arrays for n):

* P_j(n) = P(stat level = j), j = 0..3.
* "cell MOE" = the MOE of one stage-2 cell (every cell of every level has the same
  sigma2_stage2, so it does not depend on n or on the level).
* "T1 MOE at level j" = the MOE of the published group total T1: one stage-2 cell at
  level 0, the sum of the c_j cells of the table at level j >= 1 (SPEC §1
  post-processing), computed with `calculators.budget.moe_of_sum`.
* MOEs are exact discrete-Gaussian figures with exact=True (the default) and the
  design paper's floor(1.96 sigma) bound with exact=False (SPEC §2).
* noise="geometric" (``privacy_defn: "puredp"``): every "sigma2" argument is then the
  two-sided geometric scale b = S / (share epsilon) and the same formulas use the
  geometric law (`calculators.noise_family`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction
from functools import lru_cache
from typing import Any, Literal

import numpy as np

from calculators import budget, noise_family
from calculators.levels import STAT_LEVEL_CELLS

__all__ = [
    "cell_moe",
    "derive_thresholds",
    "expected_cell_moe",
    "expected_relative_cell_moe",
    "expected_t1_moe",
    "stat_level_probabilities",
    "t1_moe_by_level",
]

_CELLS = np.array([STAT_LEVEL_CELLS[j] for j in range(4)], dtype=float)


def _check_thresholds(thresholds: Sequence[float]) -> tuple[float, float, float]:
    t = tuple(float(x) for x in thresholds)
    if len(t) != 3:
        raise ValueError(
            f"thresholds must be 3 numbers Theta_1 <= Theta_2 <= Theta_3 (got {thresholds!r})"
        )
    if not (t[0] <= t[1] <= t[2]):
        raise ValueError(f"thresholds must be non-decreasing (got {list(thresholds)})")
    return t  # type: ignore[return-value]


def _interval_prob(a: np.ndarray, b: np.ndarray, s2: float, noise: str = "gaussian") -> np.ndarray:
    """P(a <= X <= b) for integer arrays a <= b, from whichever side avoids cancellation."""
    law = noise_family.law(noise)
    # both ends on the upper side: sf(a-1) - sf(b); on the lower side: cdf(b) - cdf(a-1)
    sf_a, sf_b, cdf_a, cdf_b = law.sf(a - 1, s2), law.sf(b, s2), law.cdf(a - 1, s2), law.cdf(b, s2)
    upper = sf_a - sf_b
    lower = cdf_b - cdf_a
    middle = 1 - cdf_a - sf_b
    out = np.where(a >= 1, upper, np.where(b <= -1, lower, middle))
    return np.clip(out, 0.0, 1.0)


def stat_level_probabilities(
    n: Any, thresholds: Sequence[float], sigma2_stage1: float, noise: str = "gaussian"
) -> np.ndarray:
    """P(stat level = j), j = 0..3, for a group of true size n (SPEC §1 stage 1).

    level = #{j : Theta_j <= n + X}, X ~ N_Z(0, sigma2_stage1). With integer
    thresholds: P(0) = P(n + X < Theta_1) = cdf(Theta_1 - n - 1),
    P(j) = P(Theta_j <= n + X < Theta_{j+1}) for j = 1, 2, P(3) = sf(Theta_3 - n - 1).
    For any real n and thresholds: n + X >= Theta <=> X >= ceil(Theta - n).
    Returns an array of shape n.shape + (4,); each row sums to 1.
    """
    th = np.array(_check_thresholds(thresholds))
    s2 = float(sigma2_stage1)
    law = noise_family.law(noise)
    na = np.asarray(n, dtype=float)
    lows = np.concatenate([[-np.inf], th])  # level j needs lows[j] <= n + X < lows[j+1]
    highs = np.concatenate([th, [np.inf]])
    out = np.empty(na.shape + (4,))
    for j in range(4):
        with np.errstate(invalid="ignore"):
            a = np.ceil(lows[j] - na)  # X >= a
            b = np.ceil(highs[j] - na) - 1  # X <= b
        if j == 0:
            out[..., j] = law.cdf(b, s2)
        elif j == 3:
            out[..., j] = law.sf(a - 1, s2)
        else:
            out[..., j] = np.where(a <= b, _interval_prob(a, np.maximum(a, b), s2, noise), 0.0)
    return out


@lru_cache(maxsize=4096)
def _cell_moe(sigma2_stage2: float, exact: bool, noise: str) -> int:
    if exact:
        return int(noise_family.law(noise).moe(sigma2_stage2))
    return int(budget.moe_of_sum(sigma2_stage2, 1, exact=False, noise=noise))


def cell_moe(sigma2_stage2: Any, exact: bool = True, noise: str = "gaussian") -> Any:
    """MOE of one stage-2 cell (SPEC §2): `budget.moe_exact` (exact=True) or
    `budget.moe_bound` = floor(1.96 sqrt(sigma2_stage2)) (exact=False); for the
    geometric, `geometric.moe(b)` or floor(1.96 sd). Scalar scales are computed once
    (cached)."""
    if np.ndim(sigma2_stage2) == 0 and not isinstance(sigma2_stage2, Fraction):
        return _cell_moe(float(sigma2_stage2), bool(exact), noise)
    if exact:
        return noise_family.law(noise).moe(sigma2_stage2)
    return budget.moe_of_sum(sigma2_stage2, 1, exact=False, noise=noise)


@lru_cache(maxsize=1024)
def _t1_moes(sigma2_stage2: float, exact: bool, noise: str) -> tuple[float, ...]:
    # exact MOEs of sums are numerical convolutions: the app asks for the same noise
    # scale on every redraw of a page, so they are computed once per scale
    return tuple(float(budget.moe_of_sum(sigma2_stage2, int(c), exact=exact, noise=noise)) for c in _CELLS)


def t1_moe_by_level(sigma2_stage2: float, exact: bool = True, noise: str = "gaussian") -> np.ndarray:
    """MOE of the published total T1 at stat levels 0..3 (SPEC §1, §2): the MOE of
    a sum of c_j = 1, 8, 18, 46 stage-2 cells (`budget.moe_of_sum`)."""
    return np.array(_t1_moes(float(sigma2_stage2), bool(exact), noise), dtype=float)


def expected_moes(
    n: Any,
    thresholds: Sequence[float],
    sigma2_stage1: float,
    sigma2_stage2: float,
    exact: bool = True,
    noise: str = "gaussian",
) -> dict[str, Any]:
    """The three expectations below from one computation of the stat-level
    probabilities P_j(n) (SPEC §1, §2): "t1" = `expected_t1_moe`, "cell" =
    `expected_cell_moe`, "relative_cell" = `expected_relative_cell_moe`."""
    na = np.asarray(n, dtype=float)
    p = stat_level_probabilities(na, thresholds, sigma2_stage1, noise)
    m = float(cell_moe(sigma2_stage2, exact, noise))
    t1 = p @ t1_moe_by_level(sigma2_stage2, exact, noise)
    cell = p.sum(axis=-1) * m
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = (p @ _CELLS) * m / na
    rel = np.where(na > 0, rel, np.inf)
    return {k: (v[()] if np.ndim(v) == 0 else v) for k, v in (("t1", t1), ("cell", cell), ("relative_cell", rel))}


def expected_t1_moe(
    n: Any,
    thresholds: Sequence[float],
    sigma2_stage1: float,
    sigma2_stage2: float,
    exact: bool = True,
    noise: str = "gaussian",
) -> Any:
    """Expected MOE of the published total T1 of a group of true size n (SPEC §1, §2):

        sum_{j=0..3} P_j(n) * MOE(T1 at level j),

    MOE(T1 at level j) = MOE of the sum of c_j stage-2 cells (c = 1, 8, 18, 46).
    """
    return expected_moes(n, thresholds, sigma2_stage1, sigma2_stage2, exact, noise)["t1"]


def expected_cell_moe(
    n: Any,
    thresholds: Sequence[float],
    sigma2_stage1: float,
    sigma2_stage2: float,
    exact: bool = True,
    noise: str = "gaussian",
) -> Any:
    """Expected MOE of one published stage-2 cell of a group of size n (SPEC §1, §2):

        sum_{j=0..3} P_j(n) * cell MOE = cell MOE,

    where the published cell is the total at level 0 and a table cell at levels 1-3.
    Every stage-2 cell gets the same sigma2_stage2, so this is constant in n and equal
    to `cell_moe`; it is offered with the same signature as the other expectations
    (for charts), and the level mix shows up in `expected_relative_cell_moe`.
    """
    return expected_moes(n, thresholds, sigma2_stage1, sigma2_stage2, exact, noise)["cell"]


def expected_relative_cell_moe(
    n: Any,
    thresholds: Sequence[float],
    sigma2_stage1: float,
    sigma2_stage2: float,
    exact: bool = True,
    noise: str = "gaussian",
) -> Any:
    """Expected relative MOE of a published cell of a group of true size n (SPEC §2):

        sum_{j=0..3} P_j(n) * cell MOE / (n / c_j),   c = 1, 8, 18, 46,

    i.e. the cell MOE divided by the expected count of a cell of the table actually
    published (the group spread evenly over its c_j cells; the total itself at level 0),
    averaged over the stat-level probabilities. +inf for n <= 0.
    """
    return expected_moes(n, thresholds, sigma2_stage1, sigma2_stage2, exact, noise)["relative_cell"]


def _ceil_ratio(num: float, target: float) -> int:
    """ceil(num / target) in exact rational arithmetic of the two floats."""
    return math.ceil(Fraction(num) / Fraction(target))


def derive_thresholds(
    target_relative_error: float,
    sigma2_stage2: float,
    rule: Literal["average_cell", "total"] = "average_cell",
    exact: bool = True,
    noise: str = "gaussian",
) -> tuple[int, int, int]:
    """Thresholds (Theta_1, Theta_2, Theta_3) from a target relative error (SPEC §2).

    rule="average_cell" (default): Theta_j is the smallest n at which every cell of
    the level-j table at its average size n / c_j has relative MOE <= target,
        MOE_cell / (n / c_j) <= target  <=>  Theta_j = ceil(c_j * MOE_cell / target),
    c = 8, 18, 46 for j = 1, 2, 3.
    rule="total": Theta_j is the smallest n at which the group total T1 built from the
    level-j table has relative MOE <= target,
        MOE(sum of c_j cells) / n <= target  <=>  Theta_j = ceil(MOE(c_j cells) / target).
    MOEs are exact discrete-Gaussian figures (exact=True) or the 1.96 sigma bound; the
    ceilings are taken in exact rational arithmetic, so the defining inequality holds
    exactly for the float target. Results are non-decreasing integers.
    """
    t = float(target_relative_error)
    if not (math.isfinite(t) and t > 0):
        raise ValueError(
            "target_relative_error must be a number > 0, e.g. 0.1 for 10% "
            f"(got {target_relative_error!r})"
        )
    cells = [STAT_LEVEL_CELLS[j] for j in (1, 2, 3)]
    if rule == "average_cell":
        m = int(cell_moe(sigma2_stage2, exact, noise))
        out = [_ceil_ratio(c * m, t) for c in cells]
    elif rule == "total":
        out = [_ceil_ratio(int(budget.moe_of_sum(sigma2_stage2, c, exact=exact, noise=noise)), t)
               for c in cells]
    else:
        raise ValueError(f"rule must be 'average_cell' or 'total' (got {rule!r})")
    return (out[0], out[1], out[2])
