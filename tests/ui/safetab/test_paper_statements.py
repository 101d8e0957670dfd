"""Two statements of the SafeTab-P paper checked exactly (ui.safetab.paper_statements)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from calculators import discrete_gaussian as dg
from calculators.presets import production_2020
from ui.safetab import paper_statements as ps


def _coverage_by_summing(s2: float) -> float:
    """P(|X| <= floor(1.96 sigma)) by summing the normalised pmf directly."""
    m = math.floor(1.96 * math.sqrt(s2))
    k = np.arange(-int(40 * math.sqrt(s2)) - 40, int(40 * math.sqrt(s2)) + 41)
    w = np.exp(-(k.astype(float) ** 2) / (2 * s2))
    return float(w[np.abs(k) <= m].sum() / w.sum())


def test_floor_1_96_sigma_does_not_always_cover_95_percent():
    for s in (1.02, 5.608, 10.0, 25.0, 51.0):
        assert ps.coverage(s * s) == pytest.approx(_coverage_by_summing(s * s), abs=1e-9)
    # sigma = 5.608 (the 2020 plan's Detailed county cells): floor(1.96 sigma) = 10 covers 93.9%.
    assert ps.coverage(5.608**2) == pytest.approx(0.9392, abs=1e-4) and dg.moe(5.608**2) == 11
    t = ps.statements().set_index("Where")
    assert t.loc["§6.1", "Holds"] == "no" and "below 95% for 49% of σ" in t.loc["§6.1", "Exact figure"]


def test_corollary_2_holds_up_to_moe_2632_only():
    """rho = 1.92 / MOE^2 means sigma^2 = MOE^2 / 3.84; the exact 95% MOE stays at MOE
    while MOE + 1/2 >= 1.959964 sigma = 1.00019 MOE, i.e. up to 2,632 (checked exactly)."""
    assert ps.corollary_2_limit() == 2632
    M = np.arange(1, 2633)
    assert (np.asarray(dg.moe(M.astype(float) ** 2 / 3.84)) <= M).all()
    assert dg.moe(2633**2 / 3.84) == 2634
    # The continuous bound it rests on: 1.959964 sigma - MOE crosses 1/2 near 2,633.
    s = lambda m: m / math.sqrt(3.84)  # noqa: E731
    assert 1.959964 * s(2632) - 2632 < 0.5 < 1.959964 * s(2634) - 2634 + 0.01
    t = ps.statements().set_index("Where")
    assert t.loc["§6.1, Corollary 2", "Holds"] == "up to 2,632"
    assert t.loc["§6.1, Corollary 2", "Exact figure"] == "holds up to MOE 2,632; at 2,633 the exact MOE is 2,634"


def test_the_2020_plans_levels():
    t = ps.plan_coverage(production_2020()).set_index("Level")
    assert t.loc["COUNTY Detailed", "⌊1.96σ⌋"] == 10 and t.loc["COUNTY Detailed", "Exact 95% MOE"] == 11
    assert t.loc["COUNTY Detailed", "At least 95%"] == "no"
    assert t.loc["USA Regional", "At least 95%"] == "yes"
    assert ps.plan_coverage(production_2020().updated(privacy_defn="puredp")).empty
