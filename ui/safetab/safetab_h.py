"""The SafeTab-H page's helpers (no layout): the SafeTab-H plan kept in the session
beside SafeTab-P's, and the tables the page shows, built from `calculators.safetab_h`.

The SafeTab-H plan couples to SafeTab-P's through the published T1: a group of n
persons gets a T3 / T4 table level, or none, with probabilities that depend on
SafeTab-P's plan (`calculators.safetab_h.level_probabilities`), so the page moves when
SafeTab-P's plan does. The privacy accounting of the two is per household and per
person: shown apart, never added.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import pandas as pd

from calculators import budget
from calculators.config import ConfigError, SafeTabConfig
from calculators.levels import ITERATION_LEVEL_NAMES, PopulationGroupLevel
from calculators.safetab_h import (
    TABLE_LEVELS, TABLE_NAMES, TABLES, SafeTabHConfig, budget_key, cell_moe, expected_moe, household_stability,
    ladder_differences, level_probabilities, national_outcome, published_cells,
)
from ui.core import history, state

K_PLAN = state.K_H_PLAN
PRESET_NAME = "2020 SafeTab-H plan"
#: Group sizes (persons) of the probability chart: 1 to 1,000,000 on a log scale.
CHART_SIZES = np.unique(np.round(np.logspace(0, 6, 121)).astype(np.int64))


def plan() -> SafeTabHConfig:
    """The SafeTab-H plan of this session (the 2020 plan until changed)."""
    return state.h_plan()


def set_plan(cfg: SafeTabHConfig) -> None:
    """Make `cfg` the SafeTab-H plan: one step of undo (`ui.core.state.set_h_plan`)."""
    state.set_h_plan(cfg)


def set_budget(table: str, level: PopulationGroupLevel, value: float) -> str | None:
    """Change one query's budget; the reason if refused (as typed, never clamped)."""
    try:
        set_plan(plan().updated(**{budget_key(table, level): value}))
    except ConfigError as exc:
        return "; ".join(exc.problems)
    return None


def read_plan(raw: bytes, name: str) -> SafeTabHConfig:
    """An uploaded SafeTab-H config.json (ConfigError with each problem named)."""
    from calculators.config import decode_utf8

    return SafeTabHConfig.from_json(decode_utf8(raw, name), name)


def reference_note(ref: history.Snapshot, cfg: SafeTabHConfig, limit: int = 6) -> str:
    """How this SafeTab-H plan differs from the reference plan's (the sidebar's choice:
    the 2020 production plan with the 2020 SafeTab-H plan, the plan before my last
    change, or a saved scenario), in one sentence for the page."""
    diff = history.h_changes(ref.h_config, history.changed_h_plan(cfg))
    if not diff:
        return f"The same SafeTab-H plan as the reference plan ({ref.source})."
    more = len(diff) - limit
    return (f"Changed from the reference plan ({ref.source}): " + "; ".join(diff[:limit])
            + (f"; and {more} more" if more > 0 else "") + ".")


def level_name(level: PopulationGroupLevel) -> str:
    return f"{level.geo} {ITERATION_LEVEL_NAMES[level.iteration_level]}"


def budget_table(cfg: SafeTabHConfig, exact: bool = True) -> pd.DataFrame:
    """One row per query (table x geography x iteration level) of the runs that are on:
    budget, sigma^2, the MOE of one cell (exact, and the design 1.96 sigma) and of the
    total of the finest table level (a sum of its direct cells: variance m sigma^2)."""
    S = household_stability(cfg.max_race_codes)
    rows = []
    for lvl in cfg.levels():
        for table in TABLES:
            rho = cfg.budget(table, lvl)
            top = max(TABLE_LEVELS[table])
            row = {"Table": table.upper(), "Level": level_name(lvl), "Budget": rho}
            if rho > 0:
                row["σ² (zCDP)" if cfg.privacy_defn == "zcdp" else "Scale (pure DP)"] = float(
                    budget.noise_scale(rho, S, 1.0, "gaussian" if cfg.privacy_defn == "zcdp" else "geometric"))
                row["Cell MOE"] = _moe(rho, S, exact, cfg.privacy_defn, 1)
                if cfg.privacy_defn == "zcdp":
                    row["1.96σ"] = round(float(expected_moe(rho, S)), 4)
                row["Total MOE"] = _moe(rho, S, exact, cfg.privacy_defn,
                                                       len(published_cells(table, top)[0]))
            rows.append(row)
    return pd.DataFrame(rows)


@lru_cache(maxsize=512)
def _moe(rho: float, S: int, exact: bool, privacy_defn: str, cells: int) -> int:
    return cell_moe(rho, S, exact, privacy_defn, cells)


def cells_table(cfg: SafeTabHConfig, table: str, level: PopulationGroupLevel, exact: bool = True) -> pd.DataFrame:
    """Every published cell of each table level of one query: the direct cells it sums
    and its MOE (variance: that many times sigma^2)."""
    from calculators.safetab_h import T3_CELL_NAMES, T4_CELL_NAMES

    names = T3_CELL_NAMES if table == "t3" else T4_CELL_NAMES
    rho = cfg.budget(table, level)
    S = household_stability(cfg.max_race_codes)
    rows = []
    for k in TABLE_LEVELS[table]:
        for cell, parts in published_cells(table, k).items():
            rows.append({"Table level": k, "Cell": f"{cell} {names[cell]}", "Direct cells summed": len(parts),
                         "MOE": _moe(rho, S, exact, cfg.privacy_defn, len(parts)) if rho > 0 else None})
    return pd.DataFrame(rows)


def accounting(p_cfg: SafeTabConfig, h_cfg: SafeTabHConfig, delta: float) -> pd.DataFrame:
    """Privacy accounting of the two programs side by side: SafeTab-P per person,
    SafeTab-H per household. Never added: they protect different units."""
    p_tot = budget.plan_totals(p_cfg)
    us = float(sum(h_cfg.budget_exact(t, lvl) for t in TABLES for lvl in h_cfg.levels() if not lvl.is_pr))
    pr = float(sum(h_cfg.budget_exact(t, lvl) for t in TABLES for lvl in h_cfg.levels() if lvl.is_pr))
    rows = []
    for who, unit, vals, defn in (("SafeTab-P", "one person", (float(p_tot.us), float(p_tot.pr)), p_cfg.privacy_defn),
                                  ("SafeTab-H", "one household", (us, pr), h_cfg.privacy_defn)):
        release = max(vals)
        row = {"Program": who, "Protects": unit, "US": vals[0], "PR": vals[1], "Release (max)": release,
               "Definition": "ρ (zCDP)" if defn == "zcdp" else "ε (pure DP)"}
        row[f"ε at δ = {delta:.0e}"] = float(budget.epsilon_tight(release, delta)) if defn == "zcdp" and release > 0 \
            else release
        rows.append(row)
    return pd.DataFrame(rows)


def group_probabilities(p_cfg: SafeTabConfig, h_cfg: SafeTabHConfig, level: PopulationGroupLevel,
                        n: int) -> pd.DataFrame:
    """For a group of n persons at this level: P(absent) and P(each T3 / T4 level)."""
    rows = []
    for table in TABLES:
        th = h_cfg.thresholds(table, level)
        p = level_probabilities(p_cfg, th, level, [n])[0]
        on = h_cfg.budget(table, level) > 0
        row = {"Table": TABLE_NAMES[table], "Absent (no T1 row)": float(p[0])}
        for j in range(len(th) + 1):
            row[f"Level {j}"] = float(p[j + 1]) if on else 0.0
        if not on:
            row["Absent (no T1 row)"] = 1.0  # budget 0: SafeTab-H publishes no table here
        rows.append(row)
    return pd.DataFrame(rows)


def probability_curves(p_cfg: SafeTabConfig, h_cfg: SafeTabHConfig, level: PopulationGroupLevel,
                       table: str) -> pd.DataFrame:
    """P(absent) and P(each table level) against the group size (persons), for a chart."""
    th = h_cfg.thresholds(table, level)
    p = level_probabilities(p_cfg, th, level, CHART_SIZES)
    out = pd.DataFrame({"persons": CHART_SIZES, "absent": p[:, 0]})
    for j in range(len(th) + 1):
        out[f"level {j}"] = p[:, j + 1]
    return out


def national(p_cfg: SafeTabConfig, h_cfg: SafeTabHConfig, which: str) -> pd.DataFrame:
    """Expected groups per level with each T3 / T4 table level, from a shipped group-size
    profile (`ui.safetab.projection.shipped(which)`; cached per pair of plans: seconds
    for the national profile)."""
    return _national(p_cfg.to_json(), h_cfg.to_json(), which).copy()


@lru_cache(maxsize=16)
def _national(p_json: str, h_json: str, which: str) -> pd.DataFrame:
    from ui.safetab import projection

    profile = projection.shipped(which)
    if profile is None:
        return pd.DataFrame()
    rows = national_outcome(SafeTabConfig.from_json(p_json), SafeTabHConfig.from_json(h_json), profile)
    df = pd.DataFrame(rows)
    if df.empty:
        return df
    total = {"level": "All levels", **{c: df[c].sum() for c in df.columns if c != "level"}}
    return pd.concat([df, pd.DataFrame([total])], ignore_index=True)


def ladder_notes(p_cfg: SafeTabConfig, h_cfg: SafeTabHConfig) -> list[str]:
    return ladder_differences(p_cfg, h_cfg)
