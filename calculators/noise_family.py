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
The scale of a budget is `budget.noise_scale` (and `budget.noise_scale_exact`).
"""

from __future__ import annotations

from types import ModuleType
from typing import Any, Literal

from calculators import discrete_gaussian, geometric

GAUSSIAN = "gaussian"
GEOMETRIC = "geometric"
NoiseFamily = Literal["gaussian", "geometric"]

__all__ = [
    "GAUSSIAN",
    "GEOMETRIC",
    "NoiseFamily",
    "family_of",
    "law",
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


def variance_parameter(scale_: Any, noise: str = GAUSSIAN) -> Any:
    """The variance the design paper's MOE bound floor(1.96 sqrt(.)) uses (SPEC §2):
    sigma2 itself for the discrete Gaussian, 2a / (1 - a)^2 (a = exp(-1/b)) for the
    geometric, whose scale is not a variance."""
    if law(noise) is discrete_gaussian:
        return scale_
    return geometric.variance(scale_)
