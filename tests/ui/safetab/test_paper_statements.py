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


def test_the_papers_own_numbers_tables_6_and_7_and_race_multiplicity():
    """The paper's Table 6 (T = 93, 21, 11 at rho 0.008, 0.159, 0.543), Table 7 (the budgets of
    the MOE targets 3, 11 and 50, unbounded and bounded) and Section 6.3.1 (r = 3: S 9 -> 4,
    MOE 33% smaller), each beside the figure computed now, all matching."""
    t = ps.paper_numbers()
    assert list(t.columns) == ["Where", "The paper says", "Paper's value", "Computed here", "Match"]
    assert (t["Match"] == "yes").all(), t[t["Match"] != "yes"]
    six = t[t["Where"] == "§5.3.2, Table 6"]
    assert six["Paper's value"].tolist() == ["93", "21", "11"] and six["Computed here"].tolist() == ["93", "21", "11"]
    seven = t[t["Where"] == "§6.3.1, Table 7"]["Paper's value"].tolist()
    assert seven == ["1.921, 2.134", "3.842, 4.268", "0.143, 0.159", "0.286, 0.318", "0.007, 0.008", "0.014, 0.016"]
    # the bounded Total is twice the printed Total (0.318 = 2 x 0.159), not twice the unrounded 0.15874
    assert "0.31749 (2 × the printed Total: 0.318)" in t["Computed here"].tolist()[6]
    r = t[t["Where"] == "§6.3.1"].set_index("The paper says")
    assert r.loc["Race multiplicity 8 → 3: stability", "Computed here"] == "9 → 4"
    assert r.loc["… MOE decrease at the same privacy loss", "Computed here"].startswith("33.3% (σ)")
