"""Explanations computed from the numbers (pure; no Streamlit).

Each function returns sentences (a list of str, plain text with no Markdown) that say
*why* a figure of a plan is what it is, with the plan's own numbers in them, so that the
planner, the memo and the lessons (Learn section) explain the same thing the same way.
A function whose situation does not arise for the arguments returns an empty list, so a
caller shows its sentences only where they apply.

* `less_budget_more_tables(reference, plan, profile)`: a plan that spends less budget than
  the reference and still publishes more sex x age tables. The thresholds Theta are
  fixed in persons; more noise lifts more small groups (most of them with no person at all
  nationally) over Theta_1 than it drops large ones below it (SPEC §1, stage 1).
* `smaller_r_suppresses_more(config, new_r, targets, method, profile)`: after r falls,
  the budgets kept give less noise (S = max(2, r) + 1 falls, sigma2 = S / (2 (1 - gamma)
  rho)), hence a lower suppression threshold T and fewer suppressions; re-deriving the
  budgets from the MOE targets spends only what the targets need, so the noise, T and
  the suppressions come back up.
* `published_error_above_moe(config, level, projection, observed=None)`: the level's MOE
  is that of ONE stage-2 cell; the published total of a group with a table is the sum of
  its c = 8, 18 or 46 cells, whose noise has sqrt(c) times the spread (SPEC §1-§2).
* `R_CHANGE_COLUMNS`, `r_change_columns(unit)`: what the two MOE columns of the
  r-change panel are, in words (budgets kept / budgets re-derived).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from calculators import adaptive, budget
from calculators.config import SafeTabConfig
from calculators.levels import STAT_LEVEL_CELLS, PopulationGroupLevel
from calculators.plan import (
    COUNT,
    EXACT,
    NUMBER,
    SHARE,
    fmt,
    level_moe,
    level_name,
    national_headline,
    noise_of,
    resolve_targets,
    sigmas,
    stability_of,
    threshold_for,
)
from calculators.projection import Profile, Projection, noise_crossings, project

__all__ = [
    "R_CHANGE_COLUMNS",
    "less_budget_more_tables",
    "headline_sentence",
    "published_error_above_moe",
    "r_change_columns",
    "smaller_r_suppresses_more",
]

#: The r-change panel's two columns, named in words: the plan as it is after r (or gamma)
#: changed, with every level's budget kept, and the proposal, with the budgets re-derived
#: from the MOE targets.
R_CHANGE_COLUMNS = {"kept": "budgets kept", "rederived": "budgets re-derived"}


def r_change_columns(unit: str = "ρ") -> dict[str, str]:
    """Column titles of the r-change panel (before = the budgets kept, after = the budgets
    re-derived from the MOE targets) and one sentence that says what they are: keys
    "budget_kept", "budget_rederived", "moe_kept", "moe_rederived", "epsilon_kept",
    "epsilon_rederived", "caption"."""
    kept, red = R_CHANGE_COLUMNS["kept"], R_CHANGE_COLUMNS["rederived"]
    return {
        "budget_kept": f"Budget {unit} kept", "budget_rederived": f"Budget {unit} re-derived",
        "epsilon_kept": "Level ε kept", "epsilon_rederived": "Level ε re-derived",
        "moe_kept": "MOE kept", "moe_rederived": "MOE re-derived",
        "caption": (f"“Kept”: {kept}, the plan now, every level's {unit} as it was, so its noise and MOE moved with "
                    f"r or γ. “Re-derived”: {red}, the proposal, every level's {unit} recomputed so that its MOE "
                    "meets its target again."),
    }


def _release_budget(config: SafeTabConfig) -> float:
    return float(budget.plan_totals(config).release)


def _tables(proj: Projection) -> float:
    t = proj.total
    return float(t["age4"] + t["age9"] + t["age23"])


def less_budget_more_tables(reference: SafeTabConfig, plan: SafeTabConfig, profile: Profile) -> list[str]:
    """Why `plan`, which spends less budget than `reference` (the release's rho, or
    epsilon under pure DP), publishes more sex x age tables on the nation of `profile`;
    [] unless it does both.

    Stage 1 gives a group a table when n + X1 >= Theta_1 (SPEC §1). Theta_1 is fixed in
    persons, the noise X1 grows as the budget shrinks (sigma2 = S / (2 gamma rho)), so
    more groups below Theta_1 (mostly small or empty ones, which are the great majority
    of a national universe) are lifted over it, while fewer of the groups above it are
    large enough to be dropped. The sentences give the expected numbers of both
    (`calculators.projection.noise_crossings`), for the plan and the reference."""
    if reference.privacy_defn != plan.privacy_defn:
        return []
    b_ref, b_plan = _release_budget(reference), _release_budget(plan)
    p_ref, p_plan = project(reference, profile), project(plan, profile)
    t_ref, t_plan = _tables(p_ref), _tables(p_plan)
    if not (b_plan < b_ref and round(t_plan) > round(t_ref)):
        return []
    unit = "ε" if plan.privacy_defn == "puredp" else "ρ"
    c_ref, c_plan = _crossings(reference, profile), _crossings(plan, profile)
    lifted, dropped = c_plan["lifted"] - c_ref["lifted"], c_plan["dropped"] - c_ref["dropped"]
    occ_ref = p_ref.total["occupied_with_table"]
    occ_plan = p_plan.total["occupied_with_table"]
    out = [
        f"This plan spends less budget than the reference (release {unit} {fmt(b_plan)} against {fmt(b_ref)}) "
        f"and yet publishes {fmt(t_plan - t_ref, COUNT)} more sex × age tables ({fmt(t_plan, COUNT)} against "
        f"{fmt(t_ref, COUNT)}).",
        "A group gets a table when its stage-1 noisy total reaches the threshold Θ₁, and Θ₁ is fixed in persons. "
        f"Less budget means more noise: it lifts {fmt(lifted, COUNT)} more of the groups below Θ₁ over it and "
        f"drops {fmt(dropped, COUNT)} more of the groups above Θ₁ below it; the groups below Θ₁ "
        f"({fmt(c_plan['below'], COUNT)}) outnumber those above ({fmt(c_plan['above'], COUNT)}), so the tables "
        f"gained outnumber those lost by {fmt(lifted - dropped, COUNT)}.",
        f"Expected groups below Θ₁ that get a table by noise: {fmt(c_plan['lifted'], COUNT)} under this plan, "
        f"{fmt(c_ref['lifted'], COUNT)} under the reference ({fmt(c_plan['lifted'] - c_ref['lifted'], COUNT)} "
        f"more); {fmt(c_plan['lifted_empty'], COUNT)} of them have no person at all "
        f"(reference {fmt(c_ref['lifted_empty'], COUNT)}).",
        f"Expected groups at or above Θ₁ that get no table: {fmt(c_plan['dropped'], COUNT)} under this plan, "
        f"{fmt(c_ref['dropped'], COUNT)} under the reference.",
    ]
    if occ_plan <= occ_ref:
        out.append(f"Among the groups with at least one person, this plan gives fewer tables "
                   f"({fmt(occ_plan, COUNT)} against {fmt(occ_ref, COUNT)}): the extra tables are noise on groups "
                   "with no person, whose cells are all noise.")
    else:
        out.append(f"Among the groups with at least one person, this plan gives {fmt(occ_plan - occ_ref, COUNT)} "
                   f"more tables ({fmt(occ_plan, COUNT)} against {fmt(occ_ref, COUNT)}), each noisier than under "
                   "the reference.")
    return out


def _crossings(config: SafeTabConfig, profile: Profile) -> dict[str, float]:
    keys = ("below", "above", "lifted", "lifted_empty", "dropped")
    per = noise_crossings(config, profile).values()
    return {k: float(sum(v[k] for v in per)) for k in keys}


def smaller_r_suppresses_more(config: SafeTabConfig, new_r: int, targets: Mapping[str, int], method: str,
                              profile: Profile) -> list[str]:
    """Why re-deriving the budgets from the MOE targets at a smaller r suppresses more
    groups than keeping them; [] unless `new_r` is smaller than the plan's r and the
    re-derived plan suppresses more (on the nation of `profile`).

    With the budgets kept, S = max(2, r) + 1 falls with r, so every level's noise falls
    (sigma2 = S / (2 (1 - gamma) rho)), its suppression threshold T falls and fewer small
    totals are suppressed. Re-deriving spends only what each MOE target needs: rho falls
    with S, the noise returns to the targets' level, and T and the suppressions with it.
    """
    if new_r >= config.max_race_codes:
        return []
    kept = config.updated(max_race_codes=int(new_r))
    rederived = resolve_targets(kept, targets, method)
    p_now, p_kept, p_red = (project(c, profile) for c in (config, kept, rederived))
    s_now, s_kept, s_red = (p.total["occupied_suppressed"] for p in (p_now, p_kept, p_red))
    a_kept, a_red = p_kept.total["suppressed"], p_red.total["suppressed"]
    if round(s_red) <= round(s_kept) and round(a_red) <= round(a_kept):
        return []
    S_old, S_new = stability_of(config), stability_of(kept)
    unit = "ε" if config.privacy_defn == "puredp" else "ρ"
    out = [
        f"At r = {new_r} the stability S = max(2, r) + 1 falls from {S_old} to {S_new}: each person counts in "
        f"fewer groups, so the same budget buys less noise (σ² = S / (2 (1 − γ) {unit}) becomes "
        f"{S_new}/{S_old} of what it was).",
        f"With the budgets kept, the noise falls, the suppression threshold T falls with it, and "
        f"{fmt(s_kept, COUNT)} groups with at least one person are suppressed ({fmt(s_now, COUNT)} at r = "
        f"{config.max_race_codes}).",
        f"Re-deriving the budgets from the MOE targets ({method} MOE) spends only what each target needs: "
        f"{unit} falls with S, the noise returns to the targets' level, and T comes back up, so "
        f"{fmt(s_red, COUNT)} of them are suppressed: {fmt(s_red - s_kept, COUNT)} more than with the budgets "
        f"kept (all groups: {fmt(a_red, COUNT)} against {fmt(a_kept, COUNT)}).",
        f"The release then spends {unit} {fmt(_release_budget(rederived))} instead of "
        f"{fmt(_release_budget(kept))}: the budget saved is paid for in suppressed totals.",
    ]
    level = _largest_threshold_change(kept, rederived)
    if level is not None:
        lvl, t_kept, t_red = level
        out.append(f"For example {level_name(lvl)}: T = {fmt(t_kept, COUNT)} with the budgets kept, "
                   f"{fmt(t_red, COUNT)} re-derived.")
    return out


def _largest_threshold_change(a: SafeTabConfig, b: SafeTabConfig) -> tuple[PopulationGroupLevel, int, int] | None:
    best = None
    for lvl in a.tabulated_levels():
        if lvl.is_state_or_above or a.zero_suppression_chance == 0 or b.rho(lvl) <= 0:
            continue
        ta, tb = threshold_for(a, lvl), threshold_for(b, lvl)
        if ta is not None and tb is not None and (best is None or tb - ta > best[2] - best[1]):
            best = (lvl, ta, tb)
    return best if best is not None and best[2] != best[1] else None


def published_error_above_moe(config: SafeTabConfig, level: PopulationGroupLevel,
                              projection: Projection | None = None, observed: float | None = None,
                              method: str = EXACT) -> list[str]:
    """Why the mean |error| of the level's published totals can exceed the level's MOE:
    the MOE is that of ONE stage-2 cell, and the total of a group with a table is the sum
    of its c cells (c = 8, 18, 46), each with its own independent noise, so its error has
    sqrt(c) times the spread: MOE of the total ~ sqrt(c) x the cell MOE (SPEC §1-§2,
    `adaptive.t1_moe_by_level`). `projection` (of this plan) gives the share of published
    totals that come from tables and their expected mean |error|; `observed` is a run's
    mean |error| (persons), which the sentences set against the MOE. [] if the level is
    not tabulated."""
    rho = config.rho(level)
    if rho <= 0 or not config.runs_geo(level):
        return []
    s = sigmas(config, level)
    nz = s["noise"]
    moe = level_moe(rho, stability_of(config), config.gamma, method, noise=noise_of(config))
    t1 = adaptive.t1_moe_by_level(s["stage2"], exact=True, noise=nz)
    name = level_name(level)
    out = []
    if observed is not None and not math.isnan(observed):
        relation = "above" if observed > moe else "within"
        out.append(f"{name}: the published totals' mean |error| is {fmt(observed)} persons, {relation} the "
                   f"level's MOE of {fmt(moe, COUNT)}.")
    out.append(f"The MOE of {name} ({fmt(moe, COUNT)} persons) is that of one stage-2 cell. A group with a sex × "
               "age table publishes as its total the sum of the table's cells, each with its own noise, so the "
               "total's error adds up the cells' errors.")
    out.append("MOE of a published total, by table: " + "; ".join(
        f"{STAT_LEVEL_CELLS[j]} cells {fmt(t1[j], COUNT)}" for j in (1, 2, 3))
        + f" persons, against {fmt(t1[0], COUNT)} for a total without a table.")
    row = projection.row(level) if projection is not None else None
    if row is not None and row["t1_rows"] > 0:
        tables = row["age4"] + row["age9"] + row["age23"]
        share = tables / row["t1_rows"]
        bound = " (an upper bound: counts are clamped at 0)" if row["mean_abs_error_bound"] else ""
        out.append(f"Of its expected {fmt(row['t1_rows'], COUNT)} published totals, {fmt(share, SHARE)} are sums of "
                   f"a table's cells; the expected mean |error| of a published total is "
                   f"{fmt(row['mean_abs_error'], NUMBER)} persons{bound}.")
    return out


def headline_sentence(projection: Projection) -> str:
    """The national outcome in one sentence about the groups that exist (issue 40 item 2)."""
    h = national_headline(projection)
    return (f"Of the {fmt(h['occupied'], COUNT)} groups with at least one person, {fmt(h['published'], COUNT)} "
            f"({fmt(h['published_share'], SHARE)}) publish a total and {fmt(h['with_table'], COUNT)} "
            f"({fmt(h['with_table_share'], SHARE)}) a sex × age table; {fmt(h['suppressed'], COUNT)} "
            f"({fmt(h['suppressed_share'], SHARE)}) are suppressed. {fmt(h['empty_published'], COUNT)} groups with "
            f"no person publish a total; the groups that publish a total hold "
            f"{fmt(h['persons_published_share'], SHARE)} of the persons' group memberships.")
