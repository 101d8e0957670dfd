"""Pure analytic math of SafeTab-P (SPEC §1-§3): numpy-friendly, no Streamlit, no I/O
except the configuration model (`calculators.config`)."""

from calculators import (
    adaptive,
    budget,
    config,
    discrete_gaussian,
    geometric,
    levels,
    noise_family,
    presets,
    suppression,
)

__all__ = [
    "adaptive",
    "budget",
    "config",
    "discrete_gaussian",
    "geometric",
    "levels",
    "noise_family",
    "presets",
    "suppression",
]
