"""Any number of plans side by side (pure; no Streamlit).

Each table has one row per quantity or population group level and one column per
plan, plus "Differs" (True when the plans do not all agree on the row). Every figure
comes from the same helpers as the single-plan pages: `planner.plan_summary`,
`planner.level_moe`, `analysis.threshold_for`, `budget.epsilon_tight` (SPEC §1-§2),
so a plan shows the same numbers here as on the planner, adaptive and suppression
pages. A level that a plan does not tabulate (budget 0 or its run off) shows as empty.

Budgets are rho (zCDP) or epsilon (pure DP, `privacy_defn: "puredp"`); rows that
carry budgets say so, and "ε" rows put both kinds of plan on one scale: the level's
epsilon at delta for zCDP (tight conversion), the level's epsilon itself for pure DP.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import pandas as pd

from calculators import budget
from calculators import plan as pm
from calculators.config import SafeTabConfig
from calculators.levels import ITERATION_LEVEL_NAMES, POPULATION_GROUP_LEVELS, PopulationGroupLevel
from ui.safetab import analysis
from ui.core import planner
from ui.core.planner import GEO, ITER

DIFFERS = "Differs"
#: Background of a cell that differs from the first plan (and of its row's label).
HIGHLIGHT = "#fde2e1"
HIGHLIGHT_ROW = "#fff3cd"
_DASH = "—"


class Plan(NamedTuple):
    """A plan to compare: its name, configuration and the planner's MOE targets, and the
    SafeTab-H plan kept with it (`calculators.safetab_h.SafeTabHConfig`; None: none)."""

    name: str
    config: SafeTabConfig
    targets: Mapping[str, int] = {}
    h_config: Any = None


#: The per-level measures, in the order the pages show them: key -> (title, help).
MEASURES: dict[str, tuple[str, str]] = {
    "budget": ("Budget ρ / ε", "The level's budget: ρ for a zCDP plan, ε for a pure-DP plan (0 = off)."),
    "epsilon": ("ε per level", "ε of the level alone: at δ (tight conversion) for zCDP, the budget itself "
                               "for pure DP. Smaller is more private."),
    "moe_exact": ("MOE exact", "Exact 95% margin of error of one stage-2 cell (persons), each plan's own "
                               "noise law."),
    "moe_bound": ("MOE ⌊1.96σ⌋", "The design paper's bound ⌊1.96σ⌋ of one stage-2 cell (persons)."),
    "target": ("MOE target", "The planner's MOE target of the level (persons)."),
    "thresholds": ("Θ₁, Θ₂, Θ₃", "Adaptive-table thresholds of the level (persons)."),
    "suppression": ("Suppression T", "Threshold T below which a sub-state stat-level-0 total is suppressed "
                                     "(released iff noisy total > T); empty at state and above or when off."),
}


def cell_text(value: Any) -> str:
    """A value as the comparison tables print it, by the plan model's one rule
    (`calculators.plan.fmt`): integers with thousands separators, other numbers to 4
    significant digits, missing values as a dash."""
    if value is None or value is pd.NA:
        return _DASH
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int | float) and not isinstance(value, bool):
        x = float(value)
        if math.isnan(x):
            return _DASH
        if math.isinf(x):
            return "∞" if x > 0 else "−∞"
        if isinstance(value, int) or (x.is_integer() and abs(x) < 1e15):
            return pm.fmt(x, pm.COUNT).replace("−", "-")
        return pm.fmt(x, pm.NUMBER)
    if hasattr(value, "item"):  # numpy scalars
        return cell_text(value.item())
    return str(value)


def unique_names(names: Sequence[str]) -> list[str]:
    """Names made unique for use as column names ("A", "A (2)", ...)."""
    out: list[str] = []
    seen: set[str] = set()
    for n in names:
        cand, k = n, 2
        while cand in seen:
            cand, k = f"{n} ({k})", k + 1
        seen.add(cand)
        out.append(cand)
    return out


def _level_label(lvl: PopulationGroupLevel) -> tuple[str, str]:
    return lvl.geo, ITERATION_LEVEL_NAMES[lvl.iteration_level]


def _on(config: SafeTabConfig, lvl: PopulationGroupLevel) -> bool:
    return config.rho(lvl) > 0 and config.runs_geo(lvl)


def level_value(plan: Plan, lvl: PopulationGroupLevel, measure: str, method: str = planner.EXACT,
                delta: float = planner.DEFAULT_DELTA) -> Any:
    """One measure of one level of one plan (None where the level is not tabulated or
    the measure does not apply)."""
    cfg = plan.config
    if measure == "target":
        return plan.targets.get(lvl.key) if _on(cfg, lvl) else None
    if measure == "budget":
        return float(cfg.rho(lvl)) if cfg.runs_geo(lvl) else 0.0
    if not _on(cfg, lvl):
        return None
    S, g, nz = planner.stability_of(cfg), cfg.gamma, planner.noise_of(cfg)
    rho = cfg.rho(lvl)
    if measure == "epsilon":
        return float(rho) if cfg.privacy_defn == "puredp" else float(budget.epsilon_tight(rho, delta))
    if measure == "moe_exact":
        return planner.level_moe(rho, S, g, planner.EXACT, noise=nz)
    if measure == "moe_bound":
        return planner.level_moe(rho, S, g, planner.BOUND, noise=nz)
    if measure == "thresholds":
        return ", ".join(f"{t:,}" for t in cfg.thresholds(lvl))
    if measure == "suppression":
        if lvl.is_state_or_above or cfg.zero_suppression_chance == 0:
            return None
        return analysis.threshold_for(cfg, lvl)
    raise ValueError(f"unknown measure {measure!r}; one of {', '.join(MEASURES)}")


def _differs(values: list[Any]) -> bool:
    first = values[0]
    return any(not _same(v, first) for v in values[1:])


def _same(a: Any, b: Any) -> bool:
    if a is None or b is None or (isinstance(a, float) and a != a) or (isinstance(b, float) and b != b):
        return _missing(a) and _missing(b)
    return a == b


def _missing(v: Any) -> bool:
    return v is None or (isinstance(v, float) and v != v) or v is pd.NA


def by_level(plans: Sequence[Plan], measure: str, method: str = planner.EXACT,
             delta: float = planner.DEFAULT_DELTA, levels: Sequence[PopulationGroupLevel] | None = None
             ) -> pd.DataFrame:
    """One measure (see MEASURES) for every population group level (rows) of every plan
    (columns, named after the plans), with "Differs"."""
    names = unique_names([p.name for p in plans])
    rows = []
    for lvl in levels or POPULATION_GROUP_LEVELS:
        geo, it = _level_label(lvl)
        values = [level_value(p, lvl, measure, method, delta) for p in plans]
        row: dict[str, Any] = {GEO: geo, ITER: it}
        row.update(dict(zip(names, values, strict=True)))
        row[DIFFERS] = _differs(values)
        rows.append(row)
    df = pd.DataFrame(rows)
    if measure in ("moe_exact", "moe_bound", "target", "suppression"):
        for n in names:
            df[n] = df[n].astype("Int64")
    elif measure in ("budget", "epsilon"):
        for n in names:
            df[n] = df[n].astype("Float64")
    return df


def _fmt_bool(v: bool) -> str:
    return "yes" if v else "no"


def summary(plans: Sequence[Plan], delta: float = planner.DEFAULT_DELTA) -> pd.DataFrame:
    """The plans' settings and privacy accounting (SPEC §1), one row per quantity:
    privacy definition, r, S, γ, p, negative counts, runs, states, the budget of the
    US run, the PR run and the release (unbounded and bounded neighbours), ε at δ
    (tight and classic; pure DP: ε itself, δ = 0) and the levels tabulated. Budgets
    are ρ for zCDP plans and ε for pure-DP plans (row "Privacy definition")."""
    names = unique_names([p.name for p in plans])
    cols: dict[str, dict[str, Any]] = {}
    for name, p in zip(names, plans, strict=True):
        cfg, s = p.config, planner.plan_summary(p.config, delta)
        pure = cfg.privacy_defn == "puredp"
        cols[name] = {
            "Privacy definition": "pure DP (ε)" if pure else "zCDP (ρ)",
            "Race multiplicity r": cfg.max_race_codes,
            "Stability S": s["S"],
            "Stage-1 fraction γ": float(cfg.gamma),
            "Zero-suppression chance p": float(cfg.zero_suppression_chance),
            "Negative counts allowed": _fmt_bool(cfg.allow_negative_counts),
            "Runs": " + ".join(r for r, on in (("US", cfg.run_us), ("PR", cfg.run_pr)) if on),
            "US states in the run": len(cfg.state_filter_us),
            "Budget, US run (ρ / ε)": s["rho_us"],
            "Budget, PR run (ρ / ε)": s["rho_pr"],
            "Budget, release = max(US, PR)": s["rho_release"],
            "Budget, release, bounded (×2)": s["rho_release_bounded"],
            f"ε, release, tight (δ = {delta:g})": s["eps_tight"],
            f"ε, release, classic (δ = {delta:g})": s["eps_classic"],
            "ε, release, bounded, tight": s["eps_tight_bounded"],
            "Levels tabulated (of 20)": s["levels_tabulated"],
        }
    quantities = list(next(iter(cols.values())))
    rows = []
    for q in quantities:
        values = [cols[n][q] for n in names]
        texts = [cell_text(v) for v in values]  # one column mixes words and numbers: shown as text
        rows.append({"Quantity": q, **dict(zip(names, texts, strict=True)), DIFFERS: _differs(values)})
    return pd.DataFrame(rows)


def _flat(config: SafeTabConfig) -> dict[str, str]:
    out: dict[str, str] = {}
    for key, value in config.to_dict().items():
        if key == "thresholds_p" and isinstance(value, dict):
            for k, v in value.items():
                out[f"thresholds_p {k}"] = ", ".join(str(x) for x in v)
        elif isinstance(value, list):
            out[key] = ", ".join(str(x) for x in value)
        else:
            out[key] = str(value)
    return out


def config_keys(plans: Sequence[Plan]) -> pd.DataFrame:
    """Every config.json key (thresholds one row per level) of every plan, "(absent)"
    where a plan lacks it, with "Differs"."""
    names = unique_names([p.name for p in plans])
    flats = [_flat(p.config) for p in plans]
    keys: list[str] = []
    for f in flats:
        keys += [k for k in f if k not in keys]
    rows = []
    for k in keys:
        values = [f.get(k, "(absent)") for f in flats]
        rows.append({"Key": k, **dict(zip(names, values, strict=True)), DIFFERS: _differs(values)})
    return pd.DataFrame(rows)


def long_table(plans: Sequence[Plan], method: str = planner.EXACT,
               delta: float = planner.DEFAULT_DELTA) -> pd.DataFrame:
    """Every per-level measure of every plan in long form (plan, level, measure, value):
    the one download that holds the whole comparison."""
    names = unique_names([p.name for p in plans])
    rows = []
    for name, p in zip(names, plans, strict=True):
        for lvl in POPULATION_GROUP_LEVELS:
            geo, it = _level_label(lvl)
            for m, (title, _help) in MEASURES.items():
                rows.append({"Plan": name, GEO: geo, ITER: it, "Measure": title,
                             "Value": level_value(p, lvl, m, method, delta)})
    return pd.DataFrame(rows)


def count_differences(plans: Sequence[Plan], method: str = planner.EXACT,
                      delta: float = planner.DEFAULT_DELTA) -> dict[str, int]:
    """How many rows differ: settings, config keys and levels (any per-level measure)."""
    levels_differ = set()
    for m in MEASURES:
        df = by_level(plans, m, method, delta)
        levels_differ |= {i for i, d in enumerate(df[DIFFERS]) if d}
    return {
        "settings": int(summary(plans, delta)[DIFFERS].sum()),
        "keys": int(config_keys(plans)[DIFFERS].sum()),
        "levels": len(levels_differ),
    }


def styled(df: pd.DataFrame, value_columns: Sequence[str], formats: Mapping[str, str] | None = None):
    """A pandas Styler of a comparison table: a cell that differs from the first plan's
    value in its row is highlighted, and so is the label of every row that differs."""
    cols = list(value_columns)

    def row_style(row: pd.Series) -> list[str]:
        out = []
        first = row[cols[0]] if cols else None
        for c in row.index:
            if c in cols[1:] and not _same(_plain(row[c]), _plain(first)):
                out.append(f"background-color: {HIGHLIGHT}; font-weight: 600")
            elif c not in cols and c != DIFFERS and bool(row.get(DIFFERS)):
                out.append(f"background-color: {HIGHLIGHT_ROW}")
            else:
                out.append("")
        return out

    sty = df.style.apply(row_style, axis=1)
    if formats:
        sty = sty.format({c: f for c, f in formats.items() if c in df.columns}, na_rep="—")
    else:
        sty = sty.format(na_rep="—")
    return sty


def _plain(v: Any) -> Any:
    return None if _missing(v) else v


def differing_cells(df: pd.DataFrame, value_columns: Sequence[str]) -> list[tuple[int, str]]:
    """(row position, column) of the cells `styled` highlights (for renderers other
    than pandas, e.g. the PDF memo)."""
    cols = list(value_columns)
    out = []
    for i, (_, row) in enumerate(df.iterrows()):
        first = _plain(row[cols[0]])
        out += [(i, c) for c in cols[1:] if not _same(_plain(row[c]), first)]
    return out
