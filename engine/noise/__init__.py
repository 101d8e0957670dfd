"""Exact noise for a release: the discrete Gaussian (zCDP) and the two-sided geometric
(pure DP), drawn from a cryptographically secure stream (SPEC section 1, "Noise").

Public surface (the rest lives in `engine.noise.samplers` and the private kernel and
reference modules):

* `sample_discrete_gaussian(sigma2, size, source=None)`
* `sample_two_sided_geometric(scale, size, source=None)`
* `RandomSource.secure()` (the default) and `RandomSource.seeded(seed)` (not for release)
* `exact_sigma2`, `exact_scale`: the exact rationals a scale is drawn with
* `MAX_SIGMA2`, `MAX_SCALE`: the supported range (a ValueError says so above it)
"""

from engine.noise.samplers import (
    MAX_SCALE,
    MAX_SIGMA2,
    RandomSource,
    exact_scale,
    exact_sigma2,
    sample_discrete_gaussian,
    sample_two_sided_geometric,
)

__all__ = [
    "MAX_SCALE",
    "MAX_SIGMA2",
    "RandomSource",
    "exact_scale",
    "exact_sigma2",
    "sample_discrete_gaussian",
    "sample_two_sided_geometric",
]
