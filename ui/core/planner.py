"""Tables of the overview and of the budget and MOE planner (pure; no Streamlit).

Every figure is computed by `calculators`; this module arranges them in tables a
policy committee can read, and turns planner edits into a new `SafeTabConfig`.

Vocabulary (SPEC §2): the MOE of a level is the 95% margin of error of ONE stage-2
cell, in persons. Two figures exist and the tables show both:

* "design bound" = floor(1.96 sigma), the design paper's figure, whose inversion is
  rho = 1.96^2 S / (2 MOE^2) / (1 - gamma) (`budget.rho_level_for_moe`);
* "exact" = the smallest m with P(|X| <= m) >= 95% for the discrete Gaussian
  (`budget.moe_exact`), inverted by `budget.rho_level_for_exact_moe`.

The planner's "MOE target" is what a user asked for; it is kept apart from the
configuration (config.json has no such key), remembered per level, and compared with
what the level's rho achieves.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from calculators import budget, explain, noise_family
from calculators import plan as pm
from calculators.config import BUDGET_RANGE, ConfigError, SafeTabConfig
# The plan model (calculators.plan) computes a plan's figures; this module lays them out.
from calculators.plan import (  # noqa: F401  (re-exported: the pages call them planner.X)
    BOUND,
    BUDGET_DIGITS,
    DEFAULT_DELTA,
    EXACT,
    achieved_moe,
    achieved_target,
    epsilon_of,
    level_moe,
    level_name,
    noise_of,
    resolve_targets,
    rho_for_target,
    round_sig,
    round_up,
    stability_of,
)
from calculators.levels import (
    ITERATION_LEVEL_NAMES,
    POPULATION_GROUP_LEVELS,
    PopulationGroupLevel,
)
from calculators.presets import PRODUCTION_MOE_TARGETS, PRODUCTION_THRESHOLDS
from ui.core import typed

METHODS = (EXACT, BOUND)
#: The planner's default: the exact MOE is the true 95% half-width of the noise, so a
#: target is met when the noise really stays within it 95% of the time.
DEFAULT_METHOD = EXACT
METHOD_LABELS = {
    BOUND: "Design paper: ρ = 1.96²·S / (2·MOE²) / (1−γ), MOE = ⌊1.96σ⌋",
    EXACT: "Exact discrete Gaussian: smallest ρ whose exact 95% MOE ≤ target",
}
METHOD_SHORT = {BOUND: "design-paper bound ⌊1.96σ⌋", EXACT: "exact discrete-Gaussian MOE"}
METHOD_LABELS_PUREDP = {
    BOUND: "Bound: smallest ε with ⌊1.96σ⌋ ≤ target (σ = the geometric's standard deviation)",
    EXACT: "Exact geometric: smallest ε whose exact 95% MOE ≤ target",
}

# Column names of the planner table (the editable ones are ON, TARGET and RHO; TARGET
# and RHO are text, parsed here, so a typed value is used as typed or rejected).
GEO = "Geography"
ITER = "Iterations"
RUN = "Run"
ON = "On"
TARGET = "MOE target"
RHO = "ρ"
EPS = "ε of the level"
SHARE = "% of run's ρ"
SIGMA2 = "σ² stage 2"
MOE_BOUND = "MOE (⌊1.96σ⌋ bound)"
MOE_EXACT = "MOE (exact)"
STATUS = "Meets target?"
#: The planner's column of changes from the reference plan (budget and exact MOE).
CHANGE = "Change from reference"
EDITABLE = (ON, TARGET, RHO)
#: The radio of the planner: when a MOE target counts as met.
TARGET_RULES = {EXACT: "exact MOE ≤ target (recommended)", BOUND: "⌊1.96σ⌋ ≤ target (design paper)"}
#: The two privacy definitions of config.json, as the pages name them.
PRIVACY_NAMES = {"zcdp": "zCDP: budgets ρ, Gaussian noise", "puredp": "Pure DP: budgets ε, geometric noise"}
#: What the verdict column compares with the target, by method.
VERDICT_LABEL = {EXACT: "Target met? (exact MOE)", BOUND: "Target met? (⌊1.96σ⌋)"}
#: Which budget a typed MOE target gives, by method (`rho_for_target`): under the exact MOE
#: the smallest one that meets it; under the design bound the paper's inversion (its Table 7),
#: which keeps 1.96σ at the target (smaller budgets still meet ⌊1.96σ⌋ ≤ target).
TARGET_BUDGET = {
    EXACT: "the smallest such budget whose exact MOE meets the target",
    BOUND: ("the design paper's inversion 1.96² S / (2 (1 − γ) target²), which keeps 1.96σ at the target as "
            "its Table 7 does (2.134, 0.159, 0.008 for 3, 11, 50), not the smallest budget meeting ⌊1.96σ⌋ ≤ "
            "target"),
}

#: MOE target used when a level is switched on and none is remembered (SPEC §3).
FALLBACK_TARGET = {1: 50, 2: 11}

DELTAS = (1e-5, 1e-6, 1e-7, 1e-8, 1e-9, 1e-10, 1e-11, 1e-12, 1e-13, 1e-14)

#: Largest accepted MOE target (persons): a margin of error of millions hides every
#: count. A smaller target can still be refused when its budget falls below BUDGET_MIN.
TARGET_MAX = 1_000_000
#: Accepted range of a typed level budget (besides 0 = off): the engine's own range
#: (`calculators.config.BUDGET_RANGE`). At 1e-6 a stage-2 cell already has a MOE of
#: thousands of persons; from about 100 on every count is published exactly (noise 0).
BUDGET_MIN, BUDGET_MAX = BUDGET_RANGE
#: Warning levels for budgets that mean something else than their user may think.
EPS_WEAK = 30.0            # per-level epsilon above which privacy is "very weak"
EXACT_SHARE_NO_PRIVACY = 0.5  # P(noise = 0) from which counts are "essentially exact"
MOE_HUGE = 1_000           # exact cell MOE (persons) from which noise swamps most groups' counts


# ----------------------------------------------------------------------- basics
def units(config: SafeTabConfig) -> dict[str, Any]:
    """What the pages call the budget and the noise scale under the configuration's
    privacy definition (SPEC §1): rho and sigma2 (zCDP), epsilon and b (pure DP)."""
    puredp = config.privacy_defn == "puredp"
    return {
        "puredp": puredp,
        "budget": "ε" if puredp else "ρ",
        "scale": "b" if puredp else "σ²",
        "law": "two-sided geometric" if puredp else "discrete Gaussian",
        "budget_long": "pure-DP budget ε" if puredp else "zCDP budget ρ",
        "scale_formula": "S / ((1−γ) ε)" if puredp else "S / (2 (1−γ) ρ)",
    }


def method_labels(config: SafeTabConfig) -> dict[str, str]:
    """How the planner names its two ways from a MOE target to a budget."""
    return METHOD_LABELS_PUREDP if config.privacy_defn == "puredp" else METHOD_LABELS


def label(name: str, config: SafeTabConfig) -> str:
    """A column or axis name with ρ / σ² read as ε / b under pure DP."""
    if config.privacy_defn != "puredp":
        return name
    return name.replace("ρ", "ε").replace("σ²", "b").replace("discrete-Gaussian", "geometric")


def relabel(df: pd.DataFrame, config: SafeTabConfig) -> pd.DataFrame:
    """`label` applied to every column (what downloads and read-only tables show)."""
    if config.privacy_defn != "puredp":
        return df
    return df.rename(columns=lambda c: label(str(c), config))


level_label = level_name  # the planner's name of a level ("USA Regional"), as everywhere


def production_targets() -> dict[str, int]:
    """The 2020 production MOE targets (3, 11, 50; SPEC §3) by level key."""
    return {lvl.key: m for lvl, m in PRODUCTION_MOE_TARGETS.items() if m is not None}


def default_targets(config: SafeTabConfig, method: str) -> dict[str, int]:
    """Targets equal to what each level's rho achieves (for configs loaded from files)."""
    out = {}
    for lvl in POPULATION_GROUP_LEVELS:
        m = achieved_target(config, lvl, method)
        if m is not None:
            out[lvl.key] = m
    return out


def reconcile_targets(
    targets: Mapping[str, int], old: SafeTabConfig | None, new: SafeTabConfig, method: str
) -> dict[str, int]:
    """Targets after a configuration change: a level keeps its target while its rho is
    unchanged (so changing r or gamma shows whether the target is still met); a level
    whose rho changed gets the MOE its new rho achieves; a level switched off keeps its
    last target (switching it on again restores it)."""
    out: dict[str, int] = {}
    for lvl in POPULATION_GROUP_LEVELS:
        rho = new.rho(lvl)
        kept = targets.get(lvl.key)
        if rho <= 0:
            if kept is not None:
                out[lvl.key] = int(kept)
            continue
        if kept is not None and old is not None and old.rho(lvl) == rho:
            out[lvl.key] = int(kept)
        else:
            m = achieved_target(new, lvl, method)
            if m is not None:
                out[lvl.key] = m
    return out


# ------------------------------------------------------------------ the summary
def plan_summary(config: SafeTabConfig, delta: float = DEFAULT_DELTA) -> dict[str, Any]:
    """The live summary (SPEC §1 privacy accounting): rho of the US run, the PR run and
    the release (max of the two), bounded neighbours (x2), epsilon at delta (classic and
    tight conversions), the number of population group levels tabulated, S, gamma."""
    t = budget.plan_totals(config)
    tab = config.tabulated_levels()
    if config.privacy_defn == "puredp":
        # pure DP composes by adding epsilons and has delta = 0: the totals are the epsilons
        eps = {"eps_classic": t.release, "eps_tight": t.release,
               "eps_classic_bounded": t.release_bounded, "eps_tight_bounded": t.release_bounded}
    else:
        eps = {
            "eps_classic": epsilon_of(t.release, delta, tight=False),
            "eps_tight": epsilon_of(t.release, delta),
            "eps_classic_bounded": epsilon_of(t.release_bounded, delta, tight=False),
            "eps_tight_bounded": epsilon_of(t.release_bounded, delta),
        }
    return {
        "rho_us": t.us,
        "rho_pr": t.pr,
        "rho_release": t.release,
        "rho_us_bounded": t.us_bounded,
        "rho_pr_bounded": t.pr_bounded,
        "rho_release_bounded": t.release_bounded,
        "delta": 0.0 if config.privacy_defn == "puredp" else delta,
        **eps,
        "levels_tabulated": len(tab),
        "levels_total": len(POPULATION_GROUP_LEVELS),
        "levels_us": sum(1 for lvl in tab if not lvl.is_pr),
        "levels_pr": sum(1 for lvl in tab if lvl.is_pr),
        "S": stability_of(config),
        "gamma": config.gamma,
        "privacy_defn": config.privacy_defn,
    }


def summary_table(config: SafeTabConfig, delta: float = DEFAULT_DELTA) -> pd.DataFrame:
    """The summary as a two-column table (for download)."""
    s = plan_summary(config, delta)
    if config.privacy_defn == "puredp":
        rows = [
            ("ε of the US run (sum over its levels)", s["rho_us"]),
            ("ε of the Puerto Rico run", s["rho_pr"]),
            ("ε of the release = max(US, PR), pure DP (δ = 0)", s["rho_release"]),
            ("ε of the release, bounded neighbours (×2)", s["rho_release_bounded"]),
            ("Population group levels tabulated (of 20)", s["levels_tabulated"]),
            ("Stability S", s["S"]),
            ("Stage-1 fraction γ", s["gamma"]),
        ]
        return pd.DataFrame(rows, columns=["Quantity", "Value"])
    rows = [
        ("ρ of the US run (sum over its levels)", s["rho_us"]),
        ("ρ of the Puerto Rico run", s["rho_pr"]),
        ("ρ of the release = max(US, PR)", s["rho_release"]),
        ("ρ of the release, bounded neighbours (×2)", s["rho_release_bounded"]),
        (f"ε at δ = {delta:g}, classic ρ + 2√(ρ ln 1/δ)", s["eps_classic"]),
        (f"ε at δ = {delta:g}, tight (Canonne-Kamath-Steinke)", s["eps_tight"]),
        (f"ε at δ = {delta:g}, classic, bounded", s["eps_classic_bounded"]),
        (f"ε at δ = {delta:g}, tight, bounded", s["eps_tight_bounded"]),
        ("Population group levels tabulated (of 20)", s["levels_tabulated"]),
        ("Stability S", s["S"]),
        ("Stage-1 fraction γ", s["gamma"]),
    ]
    return pd.DataFrame(rows, columns=["Quantity", "Value"])


def epsilon_label(config: SafeTabConfig, delta: float) -> str:
    """Name of the per-level epsilon column: at delta under zCDP, the budget itself
    under pure DP."""
    if config.privacy_defn == "puredp":
        return "ε of the level (δ = 0)"
    return f"ε of the level (δ = {delta:.0e})"


def moe_table(config: SafeTabConfig, targets: Mapping[str, int] | None = None,
              delta: float = DEFAULT_DELTA) -> pd.DataFrame:
    """MOE per tabulated level (SPEC §1-§2): the planner's MOE target (if given), rho
    and the epsilon it gives at `delta`, sigma2 of each stage and the 95% MOE of one
    stage-2 cell (exact and design bound), of the (unpublished) stage-1 total and of a
    TotalOnly total (USA / STATE / PR-STATE only)."""
    S, g, nz = stability_of(config), config.gamma, noise_of(config)
    eps_col = epsilon_label(config, delta)
    rows = []
    for lvl in config.tabulated_levels():
        rho = config.rho(lvl)
        rows.append({
            GEO: lvl.geo,
            ITER: ITERATION_LEVEL_NAMES[lvl.iteration_level],
            TARGET: (targets or {}).get(lvl.key),
            RHO: rho,
            eps_col: epsilon_of(rho, delta, config.privacy_defn),
            "σ² stage 1": float(budget.noise_scale(rho, S, g, nz)),
            SIGMA2: float(budget.noise_scale(rho, S, 1 - g, nz)),
            MOE_EXACT: level_moe(rho, S, g, EXACT, noise=nz),
            MOE_BOUND: level_moe(rho, S, g, BOUND, noise=nz),
            "Stage-1 total MOE (exact, not published)": level_moe(rho, S, g, EXACT, "stage1", nz),
            "TotalOnly total MOE (exact)": (
                level_moe(rho, S, g, EXACT, "total_only", nz) if lvl.is_state_or_above else None
            ),
            "Θ₁, Θ₂, Θ₃": ", ".join(str(x) for x in config.thresholds(lvl)),
        })
    df = pd.DataFrame(rows)
    if config.privacy_defn == "puredp" and len(df):
        df = df.drop(columns=eps_col)  # the budget column already is epsilon
    if targets is None and len(df):
        df = df.drop(columns=TARGET)
    elif len(df):
        df[TARGET] = df[TARGET].astype("Int64")
    if len(df):
        df["TotalOnly total MOE (exact)"] = df["TotalOnly total MOE (exact)"].astype("Int64")
    return df


# -------------------------------------------------------------- the plan table
def budget_text(value: float) -> str:
    """A level budget as the planner shows it: exactly the value in use, as the shortest
    text that reads back to it (0.159, 2.134, 0.1234567, 0.12267539111898958 for a budget
    derived from a MOE target); 0 for a level that is off. A whole budget is shown whole
    (1000000, not 1000000.0), as it is typed; it reads back to the same value."""
    text = "0" if value == 0 else typed.show(float(value))
    return text[:-2] if text.endswith(".0") else text


def verdict(achieved: int, exact: int, target: int, method: str) -> str:
    """"✓ meets (11 ≤ 11)" / "✗ misses (12 > 11)": the MOE of the chosen method
    against the target; with the design bound, an exact MOE above the target is said
    too, so a "meets" never hides a larger true 95% MOE."""
    if achieved <= target:
        if method == BOUND and exact > target:
            return f"✓ {achieved} ≤ {target}; exact {exact}"
        return f"✓ meets ({achieved} ≤ {target})"
    return f"✗ misses ({achieved} > {target})"


def reference_change(config: SafeTabConfig, reference: SafeTabConfig, level: PopulationGroupLevel) -> str:
    """A level's change from the reference plan in words, by the one format rule
    (`calculators.plan.fmt_change`): "ρ −0.1190, MOE +4", "same", "on (off in the
    reference)", "off (on in the reference)"."""
    a, b = pm.level_figures(config, level), pm.level_figures(reference, level)
    if not a.on and not b.on:
        return ""
    if a.on != b.on:
        return "on (off in the reference)" if a.on else "off (on in the reference)"
    parts = []
    if config.privacy_defn == reference.privacy_defn and a.budget != b.budget:
        parts.append(f"{units(config)['budget']} {pm.fmt_change(a.budget - b.budget, pm.BUDGET)}")
    if a.moe_exact != b.moe_exact:
        parts.append(f"MOE {pm.fmt_change(a.moe_exact - b.moe_exact, pm.COUNT)}")
    return ", ".join(parts) or "same"


def reference_table(config: SafeTabConfig, reference: SafeTabConfig) -> pd.DataFrame:
    """The levels whose budget or exact MOE differ from the reference plan's, with both
    values and the change, as text by the one format rule (`calculators.plan.fmt`); no
    row when nothing differs."""
    u = units(config)["budget"]
    rows = []
    for r in pm.level_changes(pm.plan_levels(reference), pm.plan_levels(config)):
        text = reference_change(config, reference, r["level"])
        if text in ("", "same"):
            continue
        rows.append({"Level": r["name"], f"Budget {u}": pm.fmt(r["budget"], pm.BUDGET),
                     "Reference budget": pm.fmt(r["budget_reference"], pm.BUDGET),
                     "Budget change": pm.fmt_change(r["budget_change"], pm.BUDGET)
                     if config.privacy_defn == reference.privacy_defn else "—",
                     "MOE exact": pm.fmt(r["moe_exact"], pm.COUNT),
                     "Reference MOE": pm.fmt(r["moe_exact_reference"], pm.COUNT),
                     "MOE change": pm.fmt_change(r["moe_exact_change"], pm.COUNT)})
    return pd.DataFrame(rows)


def plan_table(config: SafeTabConfig, targets: Mapping[str, int], method: str,
               delta: float = DEFAULT_DELTA, reference: SafeTabConfig | None = None) -> pd.DataFrame:
    """One row per population group level, in config order (the row position is the
    index into `POPULATION_GROUP_LEVELS`): on/off, MOE target and rho as text (the
    editable cells: `apply_edits` parses them), the epsilon the level's budget gives at
    `delta` (`epsilon_of`), its share of the run's budget (both empty for a level of a
    run that is off: it spends nothing), the stage-2 sigma2, the MOE
    of one stage-2 cell (exact and design bound) and whether the target is met by the
    MOE of the chosen method (`verdict`)."""
    S, g, nz = stability_of(config), config.gamma, noise_of(config)
    totals = budget.plan_totals_from_budgets(config.budgets())  # both runs, for the shares
    rows = []
    for lvl in POPULATION_GROUP_LEVELS:
        rho = config.rho(lvl)
        on = rho > 0
        run_total = totals.pr if lvl.is_pr else totals.us
        spends = on and config.runs_geo(lvl)  # a level of a run that is off spends nothing
        m_bound = level_moe(rho, S, g, BOUND, noise=nz) if on else None
        m_exact = level_moe(rho, S, g, EXACT, noise=nz) if on else None
        target = targets.get(lvl.key)
        run_name = "PR" if lvl.is_pr else "US"
        if not on:
            status = "off (not tabulated)"
        elif not config.runs_geo(lvl):
            status = f"{run_name} run is off"
        elif target is None:
            status = ""
        else:
            status = verdict(m_exact if method == EXACT else m_bound, m_exact, int(target), method)
        rows.append({
            GEO: lvl.geo,
            ITER: ITERATION_LEVEL_NAMES[lvl.iteration_level],
            RUN: run_name,
            ON: on,
            TARGET: "" if target is None else str(int(target)),
            RHO: budget_text(rho),
            EPS: epsilon_of(rho, delta, config.privacy_defn) if spends else None,
            SHARE: (100 * rho / run_total if run_total > 0 else 0.0) if spends or not on else None,
            SIGMA2: float(budget.noise_scale(rho, S, 1 - g, nz)) if on else None,
            MOE_EXACT: m_exact,
            MOE_BOUND: m_bound,
            STATUS: status,
            **({CHANGE: reference_change(config, reference, lvl)} if reference is not None else {}),
        })
    df = pd.DataFrame(rows)
    for col in (MOE_BOUND, MOE_EXACT):
        df[col] = df[col].astype("Int64")
    df[TARGET] = df[TARGET].astype(object)
    df[RHO] = df[RHO].astype(object)
    return df


def plan_numbers(table: pd.DataFrame) -> pd.DataFrame:
    """The plan table with its text cells as numbers (for downloads): MOE target as a
    whole number (empty if none), the budget as a float."""
    out = table.copy()
    out[TARGET] = pd.to_numeric(out[TARGET].replace("", None)).astype("Int64")
    out[RHO] = out[RHO].astype(float)
    return out


def _with_level(config: SafeTabConfig, level: PopulationGroupLevel, rho: float) -> SafeTabConfig:
    """config with a new rho for a level; thresholds are added (2020 values) if missing."""
    changes: dict[str, Any] = {level.budget_key: float(rho)}
    if rho > 0 and level.key not in config.thresholds_p:
        tp = {k: list(v) for k, v in config.thresholds_p.items()}
        tp[level.key] = list(PRODUCTION_THRESHOLDS[level.key])
        changes["thresholds_p"] = tp
    return config.updated(**changes)


def _echo(value: Any, limit: int = 24) -> str:
    """A typed value as quoted in a message, cut to a short prefix."""
    text = str(value)
    return repr(text if len(text) <= limit else text[:limit] + "…")


def _parse_number(value: Any) -> float:
    """A typed number (`ui.core.typed.to_number`): "0.159", "1e-3", ".5" or "1,000"; a
    comma used as a decimal mark ("2,5") is refused rather than read as 25."""
    return typed.to_number(value)


def parse_target(value: Any) -> int:
    """A typed MOE target: a whole number of persons from 1 to TARGET_MAX, used as
    typed ("2.5" is refused, never read as 25). ValueError says why not."""
    x = _parse_number(value)
    if x != math.floor(x):
        raise ValueError("is not a whole number of persons")
    if x < 1:
        raise ValueError("is below 1 person (untick On to switch the level off)")
    if x > TARGET_MAX:
        raise ValueError(f"is above {TARGET_MAX:,} persons; a margin of error that large hides every count")
    return int(x)


def parse_budget(value: Any, unit: str = "ρ") -> float:
    """A typed level budget: 0 (off) or a number from BUDGET_MIN to BUDGET_MAX, used
    as typed ("-1" and "1e300" are refused, never read as 1 or 1300). ValueError says
    why not."""
    x = _parse_number(value)
    if x < 0:
        raise ValueError(f"is negative; {unit} is 0 (level off) or more")
    if 0 < x < BUDGET_MIN:
        raise ValueError(f"is below {BUDGET_MIN:g}, the smallest budget the engine accepts: its noise "
                         f"would have a MOE of thousands of persons or more (type 0 to switch the level off)")
    if x > BUDGET_MAX:
        raise ValueError(f"is above {BUDGET_MAX:g}, the largest budget the engine accepts; from about 100 on "
                         f"the noise is already 0 in every cell, so larger budgets mean nothing more")
    return x


def apply_edits(
    config: SafeTabConfig,
    targets: Mapping[str, int],
    edited_rows: Mapping[Any, Mapping[str, Any]],
    method: str,
) -> tuple[SafeTabConfig, dict[str, int], list[str]]:
    """Apply planner-table edits ({row position: {column: new value}}); the MOE target
    and budget cells are text, parsed by `parse_target` / `parse_budget`.

    * rho edited: the level gets that rho; its target becomes the MOE the rho achieves,
      at least 1 (`achieved_target`; 0 switches the level off).
    * MOE target edited: rho = the inversion of the chosen method; the target is kept.
    * On ticked: rho from the remembered target (else the 2020 one: 3 / 11 / 50);
      unticked: rho = 0 (the target is remembered).

    Returns (config, targets, problems); a problem names the level, the column, the
    typed value and why it was refused, and leaves its row unchanged.
    """
    new_targets = dict(targets)
    problems: list[str] = []
    S, g, nz = stability_of(config), config.gamma, noise_of(config)
    unit = units(config)["budget"]
    for pos, changes in sorted(edited_rows.items(), key=lambda kv: int(kv[0])):
        try:
            lvl = POPULATION_GROUP_LEVELS[int(pos)]
        except (ValueError, IndexError):
            continue
        name = level_label(lvl)
        try:
            if RHO in changes:
                try:
                    rho = parse_budget(changes[RHO], unit)
                except ValueError as exc:
                    problems.append(f"{name}, {unit}: {_echo(changes[RHO])} {exc}; "
                                    f"{unit} stays {budget_text(config.rho(lvl))}.")
                    continue
                config = _with_level(config, lvl, rho)
                m = achieved_target(config, lvl, method)
                if m is not None:
                    new_targets[lvl.key] = m
            elif TARGET in changes:
                try:
                    m = parse_target(changes[TARGET])
                except ValueError as exc:
                    kept = targets.get(lvl.key)
                    problems.append(f"{name}, MOE target: {_echo(changes[TARGET])} {exc}; the target stays "
                                    f"{kept if kept is not None else 'unset'}.")
                    continue
                rho = rho_for_target(m, S, g, method, nz)
                largest = level_moe(BUDGET_MIN, S, g, method, noise=nz) if rho < BUDGET_MIN else None
                if largest is not None and largest == m:
                    rho = BUDGET_MIN  # the inversion lands a hair below the smallest budget, which has MOE m
                elif largest is not None:  # m above the MOE of the smallest budget: unreachable here
                    kept = targets.get(lvl.key)
                    problems.append(f"{name}, MOE target: {_echo(changes[TARGET])} would need {unit} = {rho:.2g}, "
                                    f"below the smallest budget the engine accepts ({BUDGET_MIN:g}, whose MOE here "
                                    f"is {largest:,} persons, the largest target here); the target stays "
                                    f"{kept if kept is not None else 'unset'}.")
                    continue
                config = _with_level(config, lvl, rho)
                new_targets[lvl.key] = m
            elif ON in changes:
                if bool(changes[ON]):
                    if config.rho(lvl) <= 0:
                        m = new_targets.get(lvl.key) or PRODUCTION_MOE_TARGETS.get(lvl) or \
                            FALLBACK_TARGET[lvl.iteration_level]
                        config = _with_level(config, lvl, rho_for_target(int(m), S, g, method, nz))
                        new_targets[lvl.key] = int(m)
                else:
                    config = _with_level(config, lvl, 0.0)
        except ConfigError as exc:
            problems.extend(f"{name}: {p}" for p in exc.problems)
        except ValueError as exc:
            problems.append(f"{name}: {exc}")
    return config, new_targets, problems


def budget_warnings(config: SafeTabConfig, delta: float = DEFAULT_DELTA) -> list[str]:
    """Plain-words warnings for budgets that mean something their user may not expect
    (SPEC §1-§2), one per level:

    * P(stage-2 noise = 0) >= EXACT_SHARE_NO_PRIVACY: most published counts are exact,
      essentially no privacy (e.g. rho 1e8);
    * else epsilon of the level (at delta under zCDP) > EPS_WEAK: very weak privacy;
    * an exact cell MOE >= MOE_HUGE persons: the noise swamps all but the largest counts.
    """
    S, g, nz = stability_of(config), config.gamma, noise_of(config)
    unit = units(config)["budget"]
    out = []
    for lvl in config.tabulated_levels():
        rho = config.rho(lvl)
        eps = epsilon_of(rho, delta, config.privacy_defn)
        at = "" if config.privacy_defn == "puredp" else f" at δ = {delta:.0e}"
        scale = float(budget.noise_scale(rho, S, 1 - g, nz))
        p0 = float(noise_family.law(nz).pmf(0, scale))
        head = f"{level_label(lvl)}: {unit} = {rho:.4g}"
        if unit == "ρ":
            head += f" means ε ≈ {eps:.3g}{at}"
        if p0 >= EXACT_SHARE_NO_PRIVACY:
            out.append(f"{head}, and the noise is 0 in {p0:.1%} of published cells: essentially no privacy "
                       "(most counts are published exactly).")
        elif eps > EPS_WEAK:
            out.append(f"{head}: very weak privacy (the 2020 plan's largest level is ε ≈ 14 at δ = 1e-10; "
                       f"ε = {eps:.3g} lets the release differ by a factor e^ε ≈ {_power_of_e(eps)} "
                       "with or without one person).")
        m = level_moe(rho, S, g, EXACT, noise=nz)
        if m is not None and m >= MOE_HUGE:
            out.append(f"{head}: the MOE of one count is {m:,} persons, so the noise swamps all but "
                       "the very largest groups.")
    return out


def _power_of_e(eps: float) -> str:
    """e^eps in words a committee can read (1.1e13, or 10^4300 when it overflows)."""
    if eps < 700:
        return f"{math.exp(eps):.2g}"
    return f"10^{eps / math.log(10):.0f}"


def convert_privacy(config: SafeTabConfig, targets: Mapping[str, int], method: str,
                    privacy_defn: str) -> tuple[SafeTabConfig, dict[str, int]]:
    """The plan under another privacy definition with the same MOE targets (SPEC §1-§2):
    each tabulated level gets the budget of the new noise law whose stage-2 MOE (chosen
    method) meets its target (`rho_for_target` with the new law; a level without a
    target keeps the MOE it has). Levels that are off stay off; thresholds, r, gamma and
    everything else are kept. Returns (config, targets)."""
    new_targets = dict(targets)
    if privacy_defn == config.privacy_defn:
        return config, new_targets
    S, g = stability_of(config), config.gamma
    noise = noise_family.family_of(privacy_defn)
    changes: dict[str, Any] = {"privacy_defn": privacy_defn}
    for lvl in POPULATION_GROUP_LEVELS:
        if config.rho(lvl) <= 0:
            continue
        m = targets.get(lvl.key)
        if m is None:
            m = achieved_target(config, lvl, method)
        m = int(m)
        new_targets[lvl.key] = m
        changes[lvl.budget_key] = rho_for_target(m, S, g, method, noise)
    return config.updated(**changes), new_targets


def change_table(before: SafeTabConfig, after: SafeTabConfig, targets: Mapping[str, int],
                 delta: float = DEFAULT_DELTA, kept_rederived: bool = False) -> pd.DataFrame:
    """Before / after of a plan change, per level on in either plan (SPEC §1-§2): the
    budget (rho or epsilon, each plan's own), the epsilon it gives (at delta under zCDP),
    the exact MOE of one stage-2 cell, the MOE target and the thresholds. With
    `kept_rederived` (the r-change panel: `before` is the plan with its budgets kept,
    `after` the proposal with budgets re-derived from the targets) the columns say so
    (`calculators.explain.r_change_columns`) instead of "before" / "after"."""
    ub, ua = units(before)["budget"], units(after)["budget"]
    names = {"Budget before": f"Budget {ub} before", "Budget after": f"Budget {ua} after",
             "Level ε before": "Level ε before", "Level ε after": "Level ε after",
             "MOE before": "MOE before", "MOE after": "MOE after"}
    if kept_rederived:
        words = explain.r_change_columns(ub)
        names = {"Budget before": words["budget_kept"], "Budget after": words["budget_rederived"],
                 "Level ε before": words["epsilon_kept"], "Level ε after": words["epsilon_rederived"],
                 "MOE before": words["moe_kept"], "MOE after": words["moe_rederived"]}
    rows = []
    for lvl in POPULATION_GROUP_LEVELS:
        rb, ra = before.rho(lvl), after.rho(lvl)
        if rb <= 0 and ra <= 0:
            continue
        tb = ", ".join(map(str, before.thresholds(lvl))) if lvl.key in before.thresholds_p else ""
        ta = ", ".join(map(str, after.thresholds(lvl))) if lvl.key in after.thresholds_p else ""
        rows.append({
            "Level": level_label(lvl),
            names["Budget before"]: rb,
            names["Budget after"]: ra,
            names["Level ε before"]: epsilon_of(rb, delta, before.privacy_defn) if rb > 0 else None,
            names["Level ε after"]: epsilon_of(ra, delta, after.privacy_defn) if ra > 0 else None,
            names["MOE before"]: achieved_moe(before, lvl, EXACT),
            names["MOE after"]: achieved_moe(after, lvl, EXACT),
            TARGET: targets.get(lvl.key),
            "Θ before": tb,
            "Θ after": ta,
        })
    df = pd.DataFrame(rows)
    if len(df):
        for col in (names["MOE before"], names["MOE after"], TARGET):
            df[col] = df[col].astype("Int64")
        if df["Θ before"].equals(df["Θ after"]):
            df = df.drop(columns=["Θ before", "Θ after"])
    return df


def missed_targets(table: pd.DataFrame) -> list[str]:
    """Labels of the levels whose MOE is above their target."""
    bad = table[table[STATUS].str.startswith("✗")]
    return [f"{r[GEO]} {r[ITER]}" for _, r in bad.iterrows()]


# --------------------------------------------------------- race multiplicity r
def rho_groups(config: SafeTabConfig) -> list[tuple[float, list[PopulationGroupLevel]]]:
    """Tabulated levels grouped by equal rho, largest rho first."""
    groups: dict[float, list[PopulationGroupLevel]] = {}
    for lvl in POPULATION_GROUP_LEVELS:
        rho = config.rho(lvl)
        if rho > 0:
            groups.setdefault(rho, []).append(lvl)
    return sorted(groups.items(), key=lambda kv: -kv[0])


def group_name(levels: list[PopulationGroupLevel]) -> str:
    """'USA, STATE, PR-STATE Detailed' style names of a group of levels."""
    by_iter: dict[int, list[str]] = {}
    for lvl in levels:
        by_iter.setdefault(lvl.iteration_level, []).append(lvl.geo)
    return "; ".join(
        f"{', '.join(geos)} {ITERATION_LEVEL_NAMES[i]}" for i, geos in sorted(by_iter.items(), reverse=True)
    )


def race_multiplicity_long(config: SafeTabConfig, method: str) -> pd.DataFrame:
    """For r = 1..8: S and the stage-2 cell MOE of every group of levels sharing a rho,
    at the current rho and gamma (long format: one row per r and group)."""
    g, nz = config.gamma, noise_of(config)
    rows = []
    for rho, lvls in rho_groups(config):
        for r in range(1, 9):
            S = int(budget.stability(r))
            rows.append({
                "r": r,
                "S": S,
                RHO: rho,
                "Levels": group_name(lvls),
                "MOE": level_moe(rho, S, g, method, noise=nz),
                "current": r == config.max_race_codes,
            })
    return pd.DataFrame(rows)


def race_multiplicity_table(config: SafeTabConfig, method: str) -> pd.DataFrame:
    """Wide form: one row per r (1..8) with S and one MOE column per rho group, headed by
    its budget to 4 significant digits (more where two budgets would read the same)."""
    long = race_multiplicity_long(config, method)
    base = pd.DataFrame({"r": range(1, 9), "S": [int(budget.stability(r)) for r in range(1, 9)]})
    if long.empty:
        return base
    rhos = [rho for rho, _lvls in rho_groups(config)]
    digits = 4  # 4 significant digits, more only if two budgets would read the same
    while digits < 17 and len({f"{rho:.{digits}g}" for rho in rhos}) < len(rhos):
        digits += 1
    for rho in rhos:
        sub = long[long[RHO] == rho].set_index("r")["MOE"]
        base[label(f"MOE at ρ = {rho:.{digits}g}", config)] = base["r"].map(sub).astype("Int64")
    return base


# --------------------------------------------------------------- MOE vs rho
def moe_rho_curve(S: int, gamma: float, rho_min: float = 1e-3, rho_max: float = 10.0,
                  points: int = 161, noise: str = "gaussian") -> pd.DataFrame:
    """Stage-2 cell MOE against the level rho (epsilon under pure DP; log-spaced), both
    figures and 1.96 sd (sd = sigma, or the geometric's standard deviation)."""
    rho = np.geomspace(rho_min, rho_max, points)
    scale = np.asarray(budget.noise_scale(rho, S, 1 - gamma, noise), dtype=float)
    var = np.asarray(noise_family.variance_parameter(scale, noise), dtype=float)
    return pd.DataFrame({
        RHO: rho,
        "1.96σ": 1.96 * np.sqrt(var),
        MOE_BOUND: np.asarray(budget.moe_of_sum(scale, 1, exact=False, noise=noise)),
        MOE_EXACT: np.asarray(noise_family.law(noise).moe(scale)),
    })


def level_points(config: SafeTabConfig, method: str) -> pd.DataFrame:
    """The tabulated levels as points on the MOE-vs-rho chart."""
    rows = []
    for rho, lvls in rho_groups(config):
        rows.append({
            RHO: rho,
            "MOE": level_moe(rho, stability_of(config), config.gamma, method, noise=noise_of(config)),
            "Levels": group_name(lvls),
        })
    return pd.DataFrame(rows, columns=[RHO, "MOE", "Levels"])
