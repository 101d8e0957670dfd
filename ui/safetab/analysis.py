"""Tables and curves of the adaptive-table and suppression pages (pure; no Streamlit).

All figures come from `calculators.adaptive`, `calculators.suppression` and
`calculators.budget`; this module picks the level's sigma^2 from a configuration and
lays the results out as DataFrames (which are also what the download buttons offer).
"""

from __future__ import annotations

from fractions import Fraction
from functools import lru_cache
from typing import Any

import numpy as np
import pandas as pd

from calculators import adaptive, noise_family, suppression
from calculators.config import SafeTabConfig
from calculators.levels import (
    GEO_LEVELS,
    ITERATION_LEVEL_NAMES,
    STAT_LEVEL_CELLS,
    PopulationGroupLevel,
)
from calculators.plan import sigmas, threshold_for  # noqa: F401  (the plan model; re-exported)
from ui.core.planner import (
    DEFAULT_DELTA,
    GEO,
    ITER,
    RHO,
    epsilon_label,
    epsilon_of,
    relabel,
    resolve_targets,
)

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


# --------------------------------------------------------------- adaptive
#: The largest group size the curves show: beyond any real population (the world has
#: about 8e9 persons), and exact in float64 and int64. Larger thresholds are never reached.
MAX_GROUP_SIZE = 10**12


def size_grid(thresholds: tuple[int, int, int], points: int = 240) -> np.ndarray:
    """Group sizes 1 .. max(3 Theta_3, 100), log-spaced integers, thresholds included;
    capped at `MAX_GROUP_SIZE` (a threshold of 1e40 is legal but no group reaches it, and
    Python integers that large break numpy's float and int64 arithmetic)."""
    top = min(max(3 * int(max(thresholds)), 100), MAX_GROUP_SIZE)
    n = np.unique(np.round(np.geomspace(1.0, float(top), points)).astype(np.int64))
    extra = [int(t) for t in thresholds if 1 <= t <= top]
    return np.unique(np.concatenate([n, np.array(extra, dtype=np.int64)]))


def stat_level_curves(
    config: SafeTabConfig, level: PopulationGroupLevel, thresholds: tuple[int, int, int] | None = None,
    n: np.ndarray | None = None,
) -> pd.DataFrame:
    """P(each table is published) against the true group size n (SPEC §1 stage 1):
    `adaptive.stat_level_probabilities` with the level's stage-1 sigma^2."""
    th = tuple(int(x) for x in (thresholds or config.thresholds(level)))
    s = sigmas(config, level)
    if n is None:
        n, p = _stat_level_curves(th, s["stage1"], s["noise"])
    else:
        n = np.asarray(n)
        p = adaptive.stat_level_probabilities(n, th, s["stage1"], s["noise"])
    df = pd.DataFrame({"True group size": n})
    for j in range(4):
        df[f"P({TABLE_NAMES[j]})"] = p[:, j]
    return df


@lru_cache(maxsize=256)
def _stat_level_curves(th: tuple[int, int, int], s1: float, noise: str) -> tuple[np.ndarray, np.ndarray]:
    # a level's curves are redrawn unchanged on every rerun of the page: compute once
    n = size_grid(th)
    p = adaptive.stat_level_probabilities(n, th, s1, noise)
    n.flags.writeable = False
    p.flags.writeable = False
    return n, p


def moe_curves(
    config: SafeTabConfig, level: PopulationGroupLevel, thresholds: tuple[int, int, int] | None = None,
    n: np.ndarray | None = None, exact: bool = True,
) -> pd.DataFrame:
    """Expected MOEs against the true group size n (SPEC §1-§2): of one published cell
    (`adaptive.expected_cell_moe`, constant), of the group total T1
    (`adaptive.expected_t1_moe`) and the expected relative MOE of a published cell
    (`adaptive.expected_relative_cell_moe`, in %), all from `adaptive.expected_moes`."""
    th = tuple(int(x) for x in (thresholds or config.thresholds(level)))
    s = sigmas(config, level)
    if n is None:
        n, e = _moe_curves(th, s["stage1"], s["stage2"], exact, s["noise"])
    else:
        n = np.asarray(n)
        e = adaptive.expected_moes(n, th, s["stage1"], s["stage2"], exact, s["noise"])
    return pd.DataFrame({
        "True group size": n,
        "Expected MOE of one published cell": e["cell"],
        "Expected MOE of the group total T1": e["t1"],
        "Expected relative MOE of a published cell (%)": 100 * np.asarray(e["relative_cell"]),
    })


@lru_cache(maxsize=256)
def _moe_curves(th: tuple[int, int, int], s1: float, s2: float, exact: bool, noise: str) -> tuple:
    n = size_grid(th)
    e = adaptive.expected_moes(n, th, s1, s2, exact, noise)
    for v in (n, *e.values()):
        v.flags.writeable = False
    return n, e


def level_tables(config: SafeTabConfig, level: PopulationGroupLevel) -> pd.DataFrame:
    """For each stat level: the table published, its cells, the MOE of one cell and of
    the total T1 built from it (exact and design bound; SPEC §2, sums of c cells)."""
    s = sigmas(config, level)
    s2, nz = s["stage2"], s["noise"]
    t1_exact = adaptive.t1_moe_by_level(s2, exact=True, noise=nz)
    t1_bound = adaptive.t1_moe_by_level(s2, exact=False, noise=nz)
    cell_exact = int(adaptive.cell_moe(s2, exact=True, noise=nz))
    cell_bound = int(adaptive.cell_moe(s2, exact=False, noise=nz))
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
    s = sigmas(config, level)
    return adaptive.derive_thresholds(target, s["stage2"], rule=rule, exact=exact, noise=s["noise"])


def rederive_plan(config: SafeTabConfig, targets: dict[str, int], method: str,
                  relative_error: float | None = None, rule: str = "average_cell") -> SafeTabConfig:
    """The plan with every tabulated level's budget re-derived from its MOE target
    (`planner.resolve_targets`, the chosen inversion of SPEC §2) and, if
    `relative_error` is given, its thresholds re-derived from that target relative
    error with the new noise scale (`derive`). Raises ConfigError / ValueError like the
    configuration model."""
    out = resolve_targets(config, targets, method)
    if relative_error is not None:
        tp = {k: list(v) for k, v in out.thresholds_p.items()}
        for lvl in out.tabulated_levels():
            tp[lvl.key] = list(derive(out, lvl, relative_error, rule))
        out = out.updated(thresholds_p=tp)
    return out


def thresholds_table(config: SafeTabConfig) -> pd.DataFrame:
    """Theta_1..3 of every tabulated level and the relative MOE of a cell of the table
    each threshold opens, at its average size c_j MOE / Theta_j (SPEC §2)."""
    rows = []
    for lvl in config.tabulated_levels():
        th = config.thresholds(lvl)
        s = sigmas(config, lvl)
        m = int(adaptive.cell_moe(s["stage2"], exact=True, noise=s["noise"]))
        row: dict[str, Any] = {GEO: lvl.geo, ITER: ITERATION_LEVEL_NAMES[lvl.iteration_level],
                               "Θ₁": th[0], "Θ₂": th[1], "Θ₃": th[2], "Cell MOE (exact)": m}
        for j, name in ((1, "age4"), (2, "age9"), (3, "age23")):
            t = th[j - 1]
            row[f"Cell rel. MOE at Θ{j} ({name}, %)"] = 100 * STAT_LEVEL_CELLS[j] * m / t if t > 0 else None
        rows.append(row)
    df = pd.DataFrame(rows)
    for col in ("Θ₁", "Θ₂", "Θ₃"):
        if col in df and df[col].dtype == object:  # thresholds beyond int64 (legal, never reached)
            df[col] = df[col].astype(float)
    return df


# -------------------------------------------------------------- suppression
def _n_released_95(t: int, s2: float, noise: str = "gaussian") -> int:
    """Smallest true count n >= 0 released with probability >= 95%: P(released) = sf(T - n)
    grows with n, so an integer bisection finds it in O(log) calls at any noise scale."""
    def ok(n: int) -> bool:
        return float(suppression.release_probability(n, t, s2, noise)) >= 0.95

    if ok(0):
        return 0
    lo, step = 0, max(1, int(np.sqrt(float(noise_family.variance_parameter(s2, noise)))))
    hi = max(t, 0) + step
    while not ok(hi):  # lo fails, hi passes
        lo, hi, step = hi, hi + 2 * step, 2 * step
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if ok(mid):
            hi = mid
        else:
            lo = mid
    return hi


@lru_cache(maxsize=1024)
def _suppression_row(stage2_exact: Fraction, s2: float, p: float, nz: str) -> tuple:
    # the same few noise scales recur over the levels and the redraws: compute each once
    t = int(suppression.threshold(stage2_exact, p, noise=nz))
    # a true count is never negative: with a tiny p, T < 0 and the figures "at n = T" would
    # describe a count that cannot be (P(hidden) and a bias at n = -926); they are left empty
    at_t = t >= 0
    return (
        ("Suppression", "stat-level-0 totals"),
        ("Threshold T", t),
        ("P(true 0 suppressed)", float(suppression.suppression_probability(0, t, s2, nz))),
        ("P(suppressed) at n = T", float(suppression.suppression_probability(t, t, s2, nz)) if at_t else None),
        ("n released with 95% chance", _n_released_95(t, s2, nz)),
        ("Bias of a released count at n = 0", float(suppression.release_bias(0, t, s2, nz))),
        ("Bias of a released count at n = T", float(suppression.release_bias(t, t, s2, nz)) if at_t else None),
    )


def suppression_table(config: SafeTabConfig, p: float | None = None, delta: float = DEFAULT_DELTA) -> pd.DataFrame:
    """Per tabulated level: its budget and the epsilon it gives at `delta` (zCDP only),
    whether suppression applies (sub-state levels, stat-level-0 totals only), the
    stage-2 sigma^2, the threshold T, P(a true 0 is suppressed) = CDF(T), P(suppressed)
    at n = T, the smallest n released with 95% probability and the upward bias of a
    released count at n = 0 and n = T (SPEC §1)."""
    p = config.zero_suppression_chance if p is None else p
    rows = []
    for lvl in config.tabulated_levels():
        s = sigmas(config, lvl)
        s2, nz = s["stage2"], s["noise"]
        row: dict[str, Any] = {
            GEO: lvl.geo,
            ITER: ITERATION_LEVEL_NAMES[lvl.iteration_level],
            RHO: config.rho(lvl),
        }
        if config.privacy_defn != "puredp":
            row[epsilon_label(config, delta)] = epsilon_of(config.rho(lvl), delta)
        row["σ² stage 2"] = s2
        if lvl.is_state_or_above:
            row["Suppression"] = "never (state or above)"
        elif p == 0:
            row["Suppression"] = "off (p = 0)"
        else:
            row.update(_suppression_row(s["stage2_exact"], s2, p, nz))
        rows.append(row)
    df = pd.DataFrame(rows)
    for col in ("Threshold T", "n released with 95% chance"):
        if col in df:
            df[col] = df[col].astype("Int64")
    return relabel(df, config)


def suppression_curves(t: int, s2: float, n_max: int | None = None, points: int = 201,
                       noise: str = "gaussian") -> pd.DataFrame:
    """Suppression probability, bias and expected released / published value against
    the true count n (counts and n / T), from `suppression.curves` (SPEC §1)."""
    c = suppression.curves(t, s2, n_max=n_max, points=points, noise=noise)
    n = c["n"]
    return pd.DataFrame({
        "True count n": n,
        "n / T": c["n_over_T"],
        "P(suppressed)": c["suppression_probability"],
        "Bias of a released count": c["release_bias"],
        "Expected released value": c["expected_released_value"],
        "Expected published value (suppressed = 0)":
            np.asarray(suppression.expected_published_value(n, t, s2, noise), dtype=float),
    })


def value_at(n: int, t: int | None, s2: float, noise: str = "gaussian") -> dict[str, float]:
    """What happens to one true count n: P(suppressed), P(released), the bias and the
    expected value of a released count, the expected published value (SPEC §1)."""
    return {
        "P(suppressed)": float(suppression.suppression_probability(n, t, s2, noise)),
        "P(released)": float(suppression.release_probability(n, t, s2, noise)),
        "Bias of a released count": float(suppression.release_bias(n, t, s2, noise)),
        "Expected released value": float(suppression.expected_released_value(n, t, s2, noise)),
        "Expected published value": float(suppression.expected_published_value(n, t, s2, noise)),
    }


def paper_bias(n: int, t: int | None, s2: float, noise: str = "gaussian") -> float | None:
    """The design paper's eq. (13) for the bias of a released count (the normal's inverse
    Mills ratio, `suppression.release_bias_eq13`), to show beside `value_at`'s exact one;
    None under geometric noise (the paper's formula is for the discrete Gaussian)."""
    if noise != noise_family.GAUSSIAN:
        return None
    return float(suppression.release_bias_eq13(n, t, s2))


def noise_pmf(s2: float, half_width: int | None = None, noise: str = "gaussian") -> pd.DataFrame:
    """pmf of the stage-2 noise (for a small picture of what its scale means)."""
    sd = float(np.sqrt(float(noise_family.variance_parameter(s2, noise))))
    h = half_width or int(np.ceil(4 * sd)) + 1
    k = np.arange(-h, h + 1)
    return pd.DataFrame({"Noise": k, "Probability": noise_family.law(noise).pmf(k, s2)})


# ---------------------------------------------------------------- accuracy report
#: Plain names of the accuracy report's columns (`engine.reports.accuracy`).
ACCURACY_COLUMNS = {
    "geo_level": "Geography",
    "iteration_level": "Iterations",
    "table": "Published count",
    "true_size": "True group size",
    "counts_compared": "Counts compared",
    "trials": "Trials",
    "p95_abs_error": "Observed 95th percentile of |error|",
    "mean_error": "Mean error",
    "predicted_moe95_exact": "Predicted 95% MOE (exact)",
    "predicted_moe95_design_bound": "Predicted 95% MOE (⌊1.96σ⌋ bound)",
}


def accuracy_plain(acc: pd.DataFrame) -> pd.DataFrame:
    """The accuracy report with plain column names, iteration levels named, rows in
    geography order (USA first), Regional before Detailed, kind of count, small
    groups first."""
    from engine.reports.accuracy import CELL_TYPES, MARGINAL_TYPES, SIZE_LABELS, TABLE_TYPES

    geo_order = {g: i for i, g in enumerate(GEO_LEVELS)}
    size_order = {s: i for i, s in enumerate(SIZE_LABELS)}
    kinds = [*TABLE_TYPES.values(), *CELL_TYPES.values(), *MARGINAL_TYPES.values()]
    kind_order = {k: i for i, k in enumerate(kinds)}
    df = acc.assign(_g=acc["geo_level"].map(geo_order), _s=acc["true_size"].map(size_order),
                    _k=acc["table"].map(kind_order).fillna(len(kinds)))
    df = df.sort_values(["_g", "iteration_level", "_k", "_s"], kind="stable").drop(columns=["_g", "_s", "_k"])
    df = df.assign(iteration_level=df["iteration_level"].map(ITERATION_LEVEL_NAMES))
    return df.rename(columns=ACCURACY_COLUMNS).reset_index(drop=True)


def accuracy_view(acc: pd.DataFrame, kind: str) -> pd.DataFrame:
    """The rows of one kind of published count (e.g. "total (stat level 0)") for the
    accuracy chart: `accuracy_plain` order, with a "Groups" label per row such as
    "COUNTY Detailed, size 10-99" ("size 0 (empty)" for groups with nobody in them)."""
    df = accuracy_plain(acc)
    df = df[df["Published count"] == kind]
    size = df["True group size"].where(df["True group size"] != "0", "0 (empty)")
    return df.assign(Groups=df["Geography"] + " " + df["Iterations"] + ", size " + size)
