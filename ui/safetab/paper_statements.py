"""Two statements of the SafeTab-P paper (Section 6.1, "Error bounds") that do not hold
exactly for the discrete Gaussian, each beside the exact figure (pure helpers, and one
panel the SafeTab-P pages show).

1. "X in [-floor(1.96 sigma), floor(1.96 sigma)] with probability at least 95%": for
   the discrete Gaussian the probability is P(|X| <= floor(1.96 sigma)) =
   1 - 2 sf(floor(1.96 sigma)) (`calculators.discrete_gaussian`), below 95% for about
   half of all sigma (the floor cuts off up to a unit of the interval).
2. Corollary 2, "NoisyCount run with rho = 1.92 / floor(MOE)^2 has a 95% MOE of at most
   MOE": with sigma^2 = 1 / (2 rho) = MOE^2 / 3.84 the exact 95% MOE
   (`discrete_gaussian.moe`) is MOE up to MOE = 2,632, and larger from 2,633 on
   (1.96 sigma = 1.0002 MOE outgrows the half unit the discreteness gives).

Beside them, `paper_numbers` sets the paper's own worked numbers against the same
figures computed now by the calculators: Table 6 (suppression thresholds, eq. 12), Table 7
(the budgets of the 2020 MOE targets, unbounded and bounded) and the race-multiplicity
example of Section 6.3.1 (r = 3: stability 9 -> 4, MOE 33% smaller).
"""

from __future__ import annotations

import functools
import math

import numpy as np
import pandas as pd

from calculators import budget
from calculators import discrete_gaussian as dg
from calculators import noise_family
from calculators import suppression

#: The range of MOE searched for the last one Corollary 2 holds for.
COROLLARY_SEARCH = 20_000
#: Session key of the panel's expander (open or closed).
OPEN_KEY = "paper_statements_open"


def coverage(sigma2) -> np.ndarray:
    """P(|X| <= floor(1.96 sigma)) for the discrete Gaussian of variance parameter sigma^2."""
    s2 = np.asarray(sigma2, dtype=float)
    m = np.floor(1.96 * np.sqrt(s2) * (1 + 1e-12))
    return 1.0 - 2.0 * np.asarray(dg.sf(m, s2), dtype=float)


def corollary_2_limit() -> int:
    """The largest MOE up to which Corollary 2 holds: for every M <= it, the exact 95% MOE
    at sigma^2 = M^2 / 3.84 is at most M (searched exactly up to `COROLLARY_SEARCH`)."""
    M = np.arange(1, COROLLARY_SEARCH + 1)
    exact = np.asarray(dg.moe(M.astype(float) ** 2 / 3.84))
    bad = np.flatnonzero(exact > M)
    return int(bad[0]) if len(bad) else COROLLARY_SEARCH  # index of the first failure = last M that holds


def statements() -> pd.DataFrame:
    """The two statements, what the paper claims and the exact figures (the same for
    every plan: computed once per process, about 0.15 s, not on every redraw)."""
    return _statements().copy()


@functools.lru_cache(maxsize=1)
def _statements() -> pd.DataFrame:
    grid = np.linspace(1.0, 100.0, 9901)
    cov = coverage(grid**2)
    below = float((cov < 0.95).mean())
    worst = int(np.argmin(cov))
    limit = corollary_2_limit()
    nxt = limit + 1
    nxt_moe = int(dg.moe(nxt**2 / 3.84))
    return pd.DataFrame([
        {"Where": "§6.1", "The paper says": "X in ±⌊1.96σ⌋ with probability at least 95%",
         "Paper's value": "≥ 95% for every σ",
         "Exact figure": (f"below 95% for {below:.0%} of σ in [1, 100]; lowest {cov[worst]:.2%} "
                          f"(σ = {grid[worst]:.2f})"),
         "Holds": "no"},
        {"Where": "§6.1, Corollary 2", "The paper says": "ρ = 1.92 / ⌊MOE⌋² gives a 95% MOE of at most MOE",
         "Paper's value": "every MOE",
         "Exact figure": f"holds up to MOE {limit:,}; at {nxt:,} the exact MOE is {nxt_moe:,}",
         "Holds": f"up to {limit:,}"},
    ])


#: Table 6 of the paper: level budget rho -> suppression threshold T (gamma 0.1, S 9, p 99.99%).
TABLE_6 = ((0.008, 93), (0.159, 21), (0.543, 11))
#: Table 7 of the paper: MOE target -> (Step 2, Total) rho, unbounded and bounded, as printed.
TABLE_7 = ((3, "(Nation, State) Detailed", ("1.921", "2.134", "3.842", "4.268")),
           (11, "(County, Tract, Place, AIANNH) Detailed", ("0.143", "0.159", "0.286", "0.318")),
           (50, "Regional", ("0.007", "0.008", "0.014", "0.016")))
#: Columns of `paper_numbers` (those of the Compare pages' "The paper's own numbers").
PAPER_COLUMNS = ["Where", "The paper says", "Paper's value", "Computed here", "Match"]


def paper_numbers() -> pd.DataFrame:
    """The SafeTab-P paper's own worked numbers beside the same figures computed now
    (S = 9, gamma = 0.1, p = 0.9999, as the paper's tables): Table 6's thresholds
    (`suppression.threshold` of the stage-2 sigma^2, eq. 12), Table 7's budgets
    (`budget.rho_stage_for_moe`, the design inversion 1.96^2 S / (2 MOE^2); the level's
    Total is Step 2 / (1 - gamma); bounded = 2x, Theorem 2) and Section 6.3.1's race
    multiplicity example. Table 7 prints 3 decimals; its bounded Total is twice the
    *printed* Total (0.318 = 2 x 0.159), not twice the unrounded one (0.3175)."""
    return _paper_numbers().copy()


@functools.lru_cache(maxsize=1)
def _paper_numbers() -> pd.DataFrame:
    S, gamma, p = budget.stability(8), 0.1, 0.9999
    rows = []
    for rho, printed in TABLE_6:
        t = int(suppression.threshold(budget.sigma2_stage2(rho, gamma, S), p))
        rows.append(("§5.3.2, Table 6", f"Suppression threshold T at ρ = {rho:g} (γ = 0.1, p = 99.99%)",
                     f"{printed}", f"{t}", "yes" if t == printed else "no"))
    for moe, who, printed in TABLE_7:
        step2 = float(budget.rho_stage_for_moe(moe, S))
        total = step2 / (1 - gamma)
        shown = [f"{v:.3f}" for v in (step2, total, 2 * step2)]
        doubled = f"{2 * float(printed[1]):.3f}"  # the bounded Total as the paper forms it
        ok_unbounded = shown[:2] == list(printed[:2])
        ok_bounded = shown[2] == printed[2] and doubled == printed[3]
        rows.append(("§6.3.1, Table 7", f"MOE target {moe}, {who}: ρ of Step 2 and Total (unbounded)",
                     f"{printed[0]}, {printed[1]}", f"{step2:.5g}, {total:.5g}", "yes" if ok_unbounded else "no"))
        rows.append(("§6.3.1, Table 7", f"… bounded (2ρ): Step 2 and Total", f"{printed[2]}, {printed[3]}",
                     f"{2 * step2:.5g}, {2 * total:.5g} (2 × the printed Total: {doubled})",
                     "yes" if ok_bounded else "no"))
    s3 = budget.stability(3)
    drop = 1 - math.sqrt(s3 / S)
    county = 0.159  # the 2020 (COUNTY, Detailed) budget: the MOEs a committee would see
    before, after = budget.sigma2_stage2(county, gamma, S), budget.sigma2_stage2(county, gamma, s3)
    rows.append(("§6.3.1", "Race multiplicity 8 → 3: stability", "9 → 4", f"{S} → {s3}",
                 "yes" if (S, s3) == (9, 4) else "no"))
    rows.append(("§6.3.1", "… MOE decrease at the same privacy loss", "33%",
                 f"{drop:.1%} (σ); at ρ 0.159, ⌊1.96σ⌋ {budget.moe_bound(before)} → {budget.moe_bound(after)}, "
                 f"exact {int(dg.moe(before))} → {int(dg.moe(after))}", "yes" if round(100 * drop) == 33 else "no"))
    return pd.DataFrame(rows, columns=PAPER_COLUMNS)


def plan_coverage(config) -> pd.DataFrame:
    """Statement 1 for the plan's stage-2 cells, level by level (discrete Gaussian plans):
    sigma, floor(1.96 sigma), the exact probability it covers, and the exact 95% MOE."""
    from ui.safetab import analysis
    from ui.core import planner

    levels = []
    for lvl in config.tabulated_levels():
        sig = analysis.sigmas(config, lvl)
        if sig["noise"] == noise_family.GAUSSIAN:
            levels.append((planner.level_label(lvl), float(sig["stage2"])))
    return pd.DataFrame([_coverage_row(label, s2) for label, s2 in levels])


@functools.lru_cache(maxsize=512)
def _coverage_row(label: str, s2: float) -> dict:
    """One level's row of `plan_coverage` (cached: the exact MOE is a search, and a
    redraw that changes one level leaves the others' rows as they were)."""
    m = math.floor(1.96 * math.sqrt(s2) * (1 + 1e-12))
    p = float(coverage(s2))
    return {"Level": label, "σ (stage 2)": round(math.sqrt(s2), 3), "⌊1.96σ⌋": m,
            "P(|X| ≤ ⌊1.96σ⌋)": round(p, 4), "At least 95%": "yes" if p >= 0.95 else "no",
            "Exact 95% MOE": int(dg.moe(s2))}


def panel(config) -> None:
    """The paper's own numbers, the two statements and the plan's levels, in an expander (Streamlit) whose content
    is computed and drawn only while it is open: a closed expander's content still costs
    the browser its drawing (its static table most) on every redraw of the whole app."""
    import streamlit as st

    from ui.core import widgets

    box = st.expander("The SafeTab-P paper's own numbers, and two statements the discrete Gaussian does not meet "
                      "exactly", key=OPEN_KEY, on_change="rerun")
    if not box.open:
        return
    with box:
        st.markdown("**The paper's own numbers** (Haney et al., Tables 6 and 7 and Section 6.3.1), computed now "
                    "with the same formulas at S = 9, γ = 0.1 and p = 99.99%, as the paper's tables.")
        numbers = paper_numbers()
        st.table(numbers.set_index("Where"))
        st.caption("Computed with calculators.budget (the design inversion ρ = 1.96² S / (2 MOE²) of Step 2, the "
                   "level's Total = Step 2 / (1 − γ), bounded = 2ρ) and calculators.suppression.threshold (eq. 12, "
                   "exact discrete Gaussian). Table 7 prints 3 decimals; its bounded Total is twice the printed "
                   "Total (0.318 = 2 × 0.159, 0.016 = 2 × 0.008), not twice the unrounded one. Match: equal to the "
                   "printed value. Independent of the current plan.")
        widgets.download_csv(numbers, "safetab_paper_numbers.csv", key="paper_numbers_csv",
                             label="Download this table (CSV)")
        st.markdown("The design paper's Section 6.1 states two error bounds with continuous-Gaussian reasoning. For "
                    "the discrete Gaussian SafeTab-P draws, the exact figures differ; the planner's exact MOE is "
                    "the smallest m with P(|X| ≤ m) ≥ 95%.")
        table = statements()
        st.table(table.set_index("Where"))  # a static table: the statements wrap, nothing is cut off
        widgets.download_csv(table, "safetab_paper_statements.csv", key="paper_statements_csv",
                             label="Download this table (CSV)")
        levels = plan_coverage(config)
        if levels.empty:
            st.caption("This plan uses geometric noise (pure DP): the two statements are about the discrete Gaussian.")
        else:
            widgets.table(levels, "floor_1_96_sigma_coverage.csv", key="paper_statements_plan",
                          caption="This plan's stage-2 cells: how often ⌊1.96σ⌋ covers the noise exactly, and the "
                                  "exact 95% MOE.")
