"""The two noise laws of SafeTab-P and what each calls its scale (SPEC §1).

* ``"gaussian"`` (``privacy_defn: "zcdp"``, the default and the 2020 production
  setting): discrete Gaussian N_Z(0, sigma2), scale = sigma2 = S / (2 share rho),
  functions in `calculators.discrete_gaussian`.
* ``"geometric"`` (``privacy_defn: "puredp"``): two-sided geometric with
  P(k) proportional to exp(-|k| / b), scale = b = S / (share epsilon), functions in
  `calculators.geometric`.

Both modules offer the same names (pmf, cdf, sf, inverse_cdf, moe, variance,
partial_mean, truncated_mean) with the scale in second place, so the adaptive,
suppression and budget calculators take a ``noise`` argument and call `law(noise)`.
"""

from __future__ import annotations

from fractions import Fraction
from types import ModuleType
from typing import Any, Literal

import numpy as np

from calculators import discrete_gaussian, geometric

GAUSSIAN = "gaussian"
GEOMETRIC = "geometric"
NoiseFamily = Literal["gaussian", "geometric"]

__all__ = [
    "GAUSSIAN",
    "GEOMETRIC",
    "NoiseFamily",
    "budget_unit",
    "family_of",
    "law",
    "scale",
    "scale_exact",
    "scale_name",
    "variance_parameter",
]


def family_of(privacy_defn: str) -> NoiseFamily:
    """The noise law of a privacy definition: zcdp -> gaussian, puredp -> geometric."""
    if privacy_defn == "zcdp":
        return GAUSSIAN
    if privacy_defn == "puredp":
        return GEOMETRIC
    raise ValueError(f"privacy_defn must be 'zcdp' or 'puredp' (got {privacy_defn!r})")


def law(noise: str) -> ModuleType:
    """The module of functions of a noise law (`discrete_gaussian` or `geometric`)."""
    if noise == GAUSSIAN:
        return discrete_gaussian
    if noise == GEOMETRIC:
        return geometric
    raise ValueError(f"noise must be 'gaussian' or 'geometric' (got {noise!r})")


def scale(budget: Any, S: Any, share: Any = 1.0, noise: str = GAUSSIAN) -> Any:
    """Noise scale of a count vector of stability S given `share` of a level budget
    (SPEC §1): sigma2 = S / (2 share rho) (gaussian) or b = S / (share epsilon)
    (geometric). Budgets must be > 0."""
    law(noise)
    bud = np.asarray(budget, dtype=float)
    s = np.asarray(S, dtype=float)
    sh = np.asarray(share, dtype=float)
    if bud.size and not np.all(np.isfinite(bud) & (bud > 0)):
        raise ValueError(f"the budget must be a number > 0 (got {budget!r})")
    if s.size and not np.all(np.isfinite(s) & (s > 0)):
        raise ValueError(f"S (the stability) must be a number > 0 (got {S!r})")
    if sh.size and not np.all((sh > 0) & (sh <= 1)):
        raise ValueError(f"share must be in (0, 1] (got {share!r})")
    out = s / (2 * sh * bud) if noise == GAUSSIAN else s / (sh * bud)
    return out[()] if out.ndim == 0 else out


def scale_exact(budget: Any, S: int, share: Any = 1, noise: str = GAUSSIAN) -> Fraction:
    """`scale` as an exact Fraction of the decimal budget and share, as the engine uses it."""
    law(noise)
    b, sh = Fraction(str(budget)), Fraction(str(share))
    if b <= 0 or not 0 < sh <= 1:
        raise ValueError(f"need budget > 0 and share in (0, 1] (got {budget!r}, {share!r})")
    return Fraction(S) / (2 * sh * b) if noise == GAUSSIAN else Fraction(S) / (sh * b)


def variance_parameter(scale_: Any, noise: str = GAUSSIAN) -> Any:
    """The variance the design paper's MOE bound floor(1.96 sqrt(.)) uses (SPEC §2):
    sigma2 itself for the discrete Gaussian, 2a / (1 - a)^2 (a = exp(-1/b)) for the
    geometric, whose scale is not a variance."""
    if law(noise) is discrete_gaussian:
        return scale_
    return geometric.variance(scale_)


def scale_name(noise: str) -> str:
    """How pages name the scale: 'σ²' or 'b'."""
    return "σ²" if law(noise) is discrete_gaussian else "b"


def budget_unit(noise: str) -> str:
    """How pages name a level budget: 'ρ' (zCDP) or 'ε' (pure DP)."""
    return "ρ" if law(noise) is discrete_gaussian else "ε"
