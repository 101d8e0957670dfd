"""Tables and curves of the adaptive-table and suppression pages (pure; no Streamlit).

All figures come from `calculators.adaptive`, `calculators.suppression` and
`calculators.budget`; this module picks the level's sigma^2 from a configuration and
lays the results out as DataFrames (which are also what the download buttons offer).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd

from calculators import adaptive, budget, discrete_gaussian, suppression
from calculators.config import SafeTabConfig
from calculators.levels import ITERATION_LEVEL_NAMES, STAT_LEVEL_CELLS, PopulationGroupLevel
from ui.planner import GEO, ITER, RHO, stability_of

#: Names of the stage-2 tables by stat level (SPEC §1).
TABLE_NAMES = {
    0: "total only",
    1: "sex × age4 (8 cells)",
    2: "sex × age9 (18 cells)",
    3: "sex × age23 (46 cells)",
}
RULES = {
    "average_cell": "every cell of the table, at its average size, meets the target",
    "total": "the group total built from the table meets the target",
}


# ------------------------------------------------------------------- sigma^2
def sigmas(config: SafeTabConfig, level: PopulationGroupLevel) -> dict[str, Any]:
    """sigma^2 of stage 1, stage 2 and TotalOnly groups (SPEC §1), as floats, plus the
    exact rational stage-2 sigma^2 the engine uses (for suppression thresholds)."""
    rho, g, S = config.rho(level), config.gamma, stability_of(config)
    return {
        "stage1": float(budget.sigma2_stage1(rho, g, S)),
        "stage2": float(budget.sigma2_stage2(rho, g, S)),
        "total_only": float(budget.sigma2_total_only(rho, S)),
        "stage2_exact": budget.sigma2_exact(config.rho_exact(level), S, Fraction(1) - config.gamma_exact),
    }


# --------------------------------------------------------------- adaptive
def size_grid(thresholds: tuple[int, int, int], points: int = 240) -> np.ndarray:
    """Group sizes 1 .. max(3 Theta_3, 100), log-spaced integers, thresholds included."""
    top = max(3 * int(max(thresholds)), 100)
    n = np.unique(np.round(np.geomspace(1, top, points)).astype(np.int64))
    extra = [int(t) for t in thresholds if 1 <= t <= top]
    return np.unique(np.concatenate([n, np.array(extra, dtype=np.int64)]))


def stat_level_curves(
    config: SafeTabConfig, level: PopulationGroupLevel, thresholds: tuple[int, int, int] | None = None,
    n: np.ndarray | None = None,
) -> pd.DataFrame:
    """P(each table is published) against the true group size n (SPEC §1 stage 1):
    `adaptive.stat_level_probabilities` with the level's stage-1 sigma^2."""
    th = thresholds or config.thresholds(level)
    n = size_grid(th) if n is None else np.asarray(n)
    p = adaptive.stat_level_probabilities(n, th, sigmas(config, level)["stage1"])
    df = pd.DataFrame({"True group size": n})
    for j in range(4):
        df[f"P({TABLE_NAMES[j]})"] = p[:, j]
    return df


def moe_curves(
    config: SafeTabConfig, level: PopulationGroupLevel, thresholds: tuple[int, int, int] | None = None,
    n: np.ndarray | None = None, exact: bool = True,
) -> pd.DataFrame:
    """Expected MOEs against the true group size n (SPEC §1-§2): of one published cell
    (`adaptive.expected_cell_moe`, constant), of the group total T1
    (`adaptive.expected_t1_moe`) and the expected relative MOE of a published cell
    (`adaptive.expected_relative_cell_moe`, in %)."""
    th = thresholds or config.thresholds(level)
    n = size_grid(th) if n is None else np.asarray(n)
    s = sigmas(config, level)
    return pd.DataFrame({
        "True group size": n,
        "Expected MOE of one published cell": adaptive.expected_cell_moe(n, th, s["stage1"], s["stage2"], exact),
        "Expected MOE of the group total T1": adaptive.expected_t1_moe(n, th, s["stage1"], s["stage2"], exact),
        "Expected relative MOE of a published cell (%)":
            100 * adaptive.expected_relative_cell_moe(n, th, s["stage1"], s["stage2"], exact),
    })


def level_tables(config: SafeTabConfig, level: PopulationGroupLevel) -> pd.DataFrame:
    """For each stat level: the table published, its cells, the MOE of one cell and of
    the total T1 built from it (exact and design bound; SPEC §2, sums of c cells)."""
    s2 = sigmas(config, level)["stage2"]
    t1_exact = adaptive.t1_moe_by_level(s2, exact=True)
    t1_bound = adaptive.t1_moe_by_level(s2, exact=False)
    cell_exact = int(adaptive.cell_moe(s2, exact=True))
    cell_bound = int(adaptive.cell_moe(s2, exact=False))
    th = config.thresholds(level)
    when = ["noisy total < Θ₁", "Θ₁ ≤ noisy total < Θ₂", "Θ₂ ≤ noisy total < Θ₃", "noisy total ≥ Θ₃"]
    rows = []
    for j in range(4):
        rows.append({
            "Stat level": j,
            "Published table": TABLE_NAMES[j],
            "When (stage-1 noisy total)": when[j].replace("Θ₁", f"Θ₁={th[0]}").replace("Θ₂", f"Θ₂={th[1]}")
            .replace("Θ₃", f"Θ₃={th[2]}"),
            "Cells": STAT_LEVEL_CELLS[j],
            "Cell MOE (exact)": cell_exact,
            "Cell MOE ⌊1.96σ⌋": cell_bound,
            "Total T1 MOE (exact)": int(t1_exact[j]),
            "Total T1 MOE ⌊1.96σ√c⌋": int(t1_bound[j]),
        })
    return pd.DataFrame(rows)


def derive(config: SafeTabConfig, level: PopulationGroupLevel, target: float, rule: str,
           exact: bool = True) -> tuple[int, int, int]:
    """Thresholds from a target relative error (`adaptive.derive_thresholds`)."""
    return adaptive.derive_thresholds(target, sigmas(config, level)["stage2"], rule=rule, exact=exact)


def thresholds_table(config: SafeTabConfig) -> pd.DataFrame:
    """Theta_1..3 of every tabulated level and the relative MOE of a cell of the table
    each threshold opens, at its average size c_j MOE / Theta_j (SPEC §2)."""
    rows = []
    for lvl in config.tabulated_levels():
        th = config.thresholds(lvl)
        m = int(adaptive.cell_moe(sigmas(config, lvl)["stage2"], exact=True))
        row: dict[str, Any] = {GEO: lvl.geo, ITER: ITERATION_LEVEL_NAMES[lvl.iteration_level],
                               "Θ₁": th[0], "Θ₂": th[1], "Θ₃": th[2], "Cell MOE (exact)": m}
        for j, name in ((1, "age4"), (2, "age9"), (3, "age23")):
            t = th[j - 1]
            row[f"Cell rel. MOE at Θ{j} ({name}, %)"] = 100 * STAT_LEVEL_CELLS[j] * m / t if t > 0 else None
        rows.append(row)
    return pd.DataFrame(rows)


# -------------------------------------------------------------- suppression
def threshold_for(config: SafeTabConfig, level: PopulationGroupLevel, p: float | None = None) -> int | None:
    """The level's suppression threshold T (SPEC §1): `suppression.threshold` with the
    exact stage-2 sigma^2, as the engine computes it; None if p = 0 (off)."""
    p = config.zero_suppression_chance if p is None else p
    t = suppression.threshold(sigmas(config, level)["stage2_exact"], p)
    return None if t is None else int(t)


def _n_released_95(t: int, s2: float) -> int:
    """Smallest true count released with probability >= 95%."""
    half = int(np.ceil(6 * np.sqrt(s2))) + 2
    n = np.arange(max(0, t - half), t + 2 * half + 1)
    ok = np.asarray(suppression.release_probability(n, t, s2)) >= 0.95
    return int(n[np.argmax(ok)]) if ok.any() else int(n[-1])


def suppression_table(config: SafeTabConfig, p: float | None = None) -> pd.DataFrame:
    """Per tabulated level: whether suppression applies (sub-state levels, stat-level-0
    totals only), the stage-2 sigma^2, the threshold T, P(a true 0 is suppressed) =
    CDF(T), P(suppressed) at n = T, the smallest n released with 95% probability and
    the upward bias of a released count at n = 0 and n = T (SPEC §1)."""
    p = config.zero_suppression_chance if p is None else p
    rows = []
    for lvl in config.tabulated_levels():
        s = sigmas(config, lvl)
        s2 = s["stage2"]
        row: dict[str, Any] = {
            GEO: lvl.geo,
            ITER: ITERATION_LEVEL_NAMES[lvl.iteration_level],
            RHO: config.rho(lvl),
            "σ² stage 2": s2,
        }
        if lvl.is_state_or_above:
            row["Suppression"] = "never (state or above)"
        elif p == 0:
            row["Suppression"] = "off (p = 0)"
        else:
            t = threshold_for(config, lvl, p)
            row.update({
                "Suppression": "stat-level-0 totals",
                "Threshold T": t,
                "P(true 0 suppressed)": float(suppression.suppression_probability(0, t, s2)),
                "P(suppressed) at n = T": float(suppression.suppression_probability(t, t, s2)),
                "n released with 95% chance": _n_released_95(t, s2),
                "Bias of a released count at n = 0": float(suppression.release_bias(0, t, s2)),
                "Bias of a released count at n = T": float(suppression.release_bias(t, t, s2)),
            })
        rows.append(row)
    df = pd.DataFrame(rows)
    for col in ("Threshold T", "n released with 95% chance"):
        if col in df:
            df[col] = df[col].astype("Int64")
    return df


def suppression_curves(t: int, s2: float, n_max: int | None = None, points: int = 201) -> pd.DataFrame:
    """Suppression probability, bias and expected released / published value against
    the true count n (counts and n / T), from `suppression.curves` (SPEC §1)."""
    c = suppression.curves(t, s2, n_max=n_max, points=points)
    n = c["n"]
    return pd.DataFrame({
        "True count n": n,
        "n / T": c["n_over_T"],
        "P(suppressed)": c["suppression_probability"],
        "Bias of a released count": c["release_bias"],
        "Expected released value": c["expected_released_value"],
        "Expected published value (suppressed = 0)":
            np.asarray(suppression.expected_published_value(n, t, s2), dtype=float),
    })


def value_at(n: int, t: int | None, s2: float) -> dict[str, float]:
    """What happens to one true count n: P(suppressed), P(released), the bias and the
    expected value of a released count, the expected published value (SPEC §1)."""
    return {
        "P(suppressed)": float(suppression.suppression_probability(n, t, s2)),
        "P(released)": float(suppression.release_probability(n, t, s2)),
        "Bias of a released count": float(suppression.release_bias(n, t, s2)),
        "Expected released value": float(suppression.expected_released_value(n, t, s2)),
        "Expected published value": float(suppression.expected_published_value(n, t, s2)),
    }


def noise_pmf(s2: float, half_width: int | None = None) -> pd.DataFrame:
    """pmf of the stage-2 noise (for a small picture of what sigma^2 means)."""
    h = half_width or int(np.ceil(4 * np.sqrt(s2))) + 1
    k = np.arange(-h, h + 1)
    return pd.DataFrame({"Noise": k, "Probability": discrete_gaussian.pmf(k, s2)})
