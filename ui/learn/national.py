"""Lesson 6, the national trade-off (pure; no Streamlit): a plan's expected national
outcome (`calculators.projection.project` on a group-size profile), its change from a
reference plan, plan variants a learner can try, and the two explanations computed from
the numbers: why less budget can publish more tables, and why re-deriving the budgets
at a smaller r can suppress more (SPEC §1: stage 1 against thresholds fixed in persons;
suppression threshold T from the stage-2 noise)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from calculators import adaptive, budget, suppression
from calculators.config import SafeTabConfig
from calculators.levels import PopulationGroupLevel
from calculators.projection import Profile, Projection, project
from ui.core import planner
from ui.learn.content import num

TRACT = PopulationGroupLevel("TRACT", 2)
#: The figures of the lesson, in the order shown: (key, label, more is better).
FIGURES = (("tables", "Groups with a sex × age table", True), ("suppressed", "Totals suppressed", False),
           ("t1_rows", "Totals published (T1 rows)", True), ("mae", "Mean |error| of a published total", False))


@dataclass(frozen=True)
class Outcome:
    """Expected national figures of a plan (the projection's TOTAL row)."""

    tables: float
    suppressed: float
    t1_rows: float
    mae: float
    groups: float
    rho: float

    def get(self, key: str) -> float:
        return float(getattr(self, key))


def _tables(row: Mapping) -> float:
    return float(row["age4"] + row["age9"] + row["age23"])


def outcome(proj: Projection, cfg: SafeTabConfig) -> Outcome:
    t = proj.total
    return Outcome(_tables(t), float(t["suppressed"]), float(t["t1_rows"]), float(t["mean_abs_error"]),
                   float(t["groups"]), budget.plan_totals(cfg).release)


def variant(cfg: SafeTabConfig, targets: Mapping[str, int], factor: float = 1.0, r: int | None = None,
            rederive: bool = False) -> SafeTabConfig:
    """The plan with every budget times `factor` (to 4 significant digits), or at race
    multiplicity r; with `rederive`, each level's budget is derived again from its MOE
    target at the new S (`planner.rho_for_target`, exact MOE), as the planner does."""
    r = cfg.max_race_codes if r is None else int(r)
    changes: dict = {"max_race_codes": r}
    S = int(budget.stability(r))
    for lvl in cfg.tabulated_levels():
        rho = cfg.rho(lvl) * factor
        if rederive and lvl.key in targets:
            rho = planner.rho_for_target(int(targets[lvl.key]), S, cfg.gamma, planner.EXACT) * factor
        changes[lvl.budget_key] = float(f"{rho:.4g}")
    return cfg.updated(**changes)


# ------------------------------------------------------------------ the explanations
def _lifted(cfg: SafeTabConfig, profile: Profile, level: PopulationGroupLevel) -> tuple[float, float, int]:
    """Expected groups of the level with fewer than Theta_1 persons that get a table
    (noise lifted their stage-1 total over Theta_1), those with Theta_1 or more that do
    not, and Theta_1 (SPEC §1 stage 1): sums over the level's histogram of group sizes
    of count(n) P(stat level >= 1 | n), resp. count(n) P(stat level 0 | n)."""
    lp = profile.levels[level]
    th = cfg.thresholds(level)
    S = lp.stability[cfg.max_race_codes - 1]
    s1 = float(budget.sigma2_stage1(cfg.rho(level), cfg.gamma, S))
    sizes, counts = lp.adaptive.sizes, lp.adaptive.counts.astype(float)
    below = sizes < th[0]
    p0 = adaptive.stat_level_probabilities(sizes, th, s1)[..., 0]
    lifted = float((counts[below] * (1 - p0[below])).sum())  # the histogram lists empty groups as size 0
    dropped = float((counts[~below] * p0[~below]).sum())
    return lifted, dropped, th[0]


def less_budget_more_tables(a: SafeTabConfig, b: SafeTabConfig, profile: Profile,
                            pa: Projection | None = None, pb: Projection | None = None) -> list[str]:
    """Why plan b, with less budget than plan a at some level, gives more groups a table
    there: sentences with the numbers of the level where it gains most (empty if no level
    of b has less budget and more tables)."""
    pa = pa or project(a, profile)
    pb = pb or project(b, profile)
    best, gain = None, 0.5
    for lvl in b.tabulated_levels():
        ra, rb = pa.row(lvl), pb.row(lvl)
        if ra is None or rb is None or lvl not in profile.levels or not 0 < b.rho(lvl) < a.rho(lvl):
            continue
        d = _tables(rb) - _tables(ra)
        if d > gain:
            best, gain = lvl, d
    if best is None:
        return []
    la, da, t1 = _lifted(a, profile, best)
    lb, db, _ = _lifted(b, profile, best)
    name = planner.level_label(best)
    stab = profile.levels[best].stability
    sa = np.sqrt(float(budget.sigma2_stage1(a.rho(best), a.gamma, stab[a.max_race_codes - 1])))
    sb = np.sqrt(float(budget.sigma2_stage1(b.rho(best), b.gamma, stab[b.max_race_codes - 1])))
    return [
        f"At {name}, the second plan spends less (ρ = {num(b.rho(best))} instead of {num(a.rho(best))}) and yet "
        f"gives about **{num(round(gain))} more groups a table**.",
        f"Less budget means more stage-1 noise (σ = {num(sb, 3)} persons instead of {num(sa, 3)}), while the "
        f"threshold stays at Θ₁ = {num(t1)} persons. Most groups are far smaller than Θ₁, so the extra noise lifts "
        f"more of them over it than it drops larger groups below: about {num(round(lb))} groups under Θ₁ get a "
        f"table (instead of {num(round(la))}), and {num(round(db))} groups of Θ₁ or more get none (instead of "
        f"{num(round(da))}).",
        "Those extra tables belong to small groups, whose cells are mostly noise: more tables is not more accuracy.",
    ]


def smaller_r_suppresses_more(a: SafeTabConfig, b: SafeTabConfig, profile: Profile,
                              pa: Projection | None = None, pb: Projection | None = None) -> list[str]:
    """Why plan b, at a smaller r than plan a with its budgets derived again, hides more
    totals: sentences with the numbers of the level where it hides most (empty if b's r
    is not smaller or it hides no more)."""
    if b.max_race_codes >= a.max_race_codes:
        return []
    pa = pa or project(a, profile)
    pb = pb or project(b, profile)
    best, more = None, 0.5
    for lvl in b.tabulated_levels():
        ra, rb = pa.row(lvl), pb.row(lvl)
        if ra is None or rb is None or lvl.is_state_or_above:
            continue
        d = rb["suppressed"] - ra["suppressed"]
        if d > more:
            best, more = lvl, d
    if best is None:
        return []
    total = pb.total["suppressed"] - pa.total["suppressed"]
    lp = profile.levels[best]
    Sa, Sb = lp.stability[a.max_race_codes - 1], lp.stability[b.max_race_codes - 1]
    s2a = float(budget.sigma2_stage2(a.rho(best), a.gamma, Sa))
    s2b = float(budget.sigma2_stage2(b.rho(best), b.gamma, Sb))
    ta = suppression.threshold(s2a, a.suppression_chance)
    tb = suppression.threshold(s2b, b.suppression_chance)
    ma, mb = int(budget.moe_exact(s2a)), int(budget.moe_exact(s2b))
    name = planner.level_label(best)
    if ta == tb:
        why = (f"the suppression threshold stays at T = {ta}, but the stage-1 noise grows too, so more small groups "
               "get a total only, which is what can be suppressed")
    else:
        why = f"and with it the suppression threshold, T = {ta} → {tb}"
    return [
        f"At r = {b.max_race_codes} a person changes at most S = {Sb} counts of a level instead of {Sa}, so the "
        f"planner derives smaller budgets for the same MOE targets: at {name}, ρ = {num(b.rho(best))} instead of "
        f"{num(a.rho(best))}.",
        (f"Re-derived budgets are the smallest that meet the targets; the first plan's had room to spare. At S = "
         f"{Sa}, ρ = {num(a.rho(best))} gives σ² = {num(s2a)} (exact MOE {ma}); at S = {Sb}, ρ = {num(b.rho(best))} "
         f"gives σ² = {num(s2b)} (exact MOE {mb}): more noise within the same target; {why}.") if s2b > s2a else
        (f"At S = {Sb}, ρ = {num(b.rho(best))} gives σ² = {num(s2b)} (exact MOE {mb}), against σ² = {num(s2a)} "
         f"(exact MOE {ma}) before; the stage-1 noise changes too, and with it how many groups get a total only, "
         f"which is what can be suppressed (T = {ta} → {tb})."),
        f"More small totals are hidden: about **{num(round(more))} more at {name}**, "
        f"{num(round(total))} more in all.",
    ]


# ------------------------------------------------------------------ the lesson
def change_text(key: str, before: float, after: float) -> str:
    """A figure's change in words ("+1,234", "-0.5", "no change")."""
    d = after - before
    digits = 3 if key == "mae" else None
    if abs(d) < (0.0005 if digits else 0.5):
        return "no change"
    return ("+" if d > 0 else "−") + (num(abs(d), 3) if digits else num(round(abs(d))))


def empty_share(cfg: SafeTabConfig, profile: Profile) -> float:
    """The share of the groups of the levels the plan tabulates that have nobody in them
    (size 0 in the profile's histograms)."""
    groups = empty = 0
    for lvl in cfg.tabulated_levels():
        lp = profile.levels.get(lvl)
        if lp is None:
            continue
        for hist in (lp.adaptive, lp.total_only):
            groups += hist.groups
            empty += int(hist.counts[hist.sizes == 0].sum())
    return empty / groups if groups else 0.0


def outcome_sentences(plan: Outcome, ref: Outcome, plan_name: str, ref_name: str, profile: Profile,
                      empty: float) -> list[str]:
    """The worked example of lesson 6: the plan's national outcome and its change from the reference."""
    same = all(abs(plan.get(k) - ref.get(k)) < 1e-9 for k, _l, _b in FIGURES)
    lines = [f"On the shipped profile ({profile.name}; {num(plan.groups)} population groups in all, "
             f"{100 * empty:.0f} % of them with nobody in them), the plan **{plan_name}** (ρ = {num(plan.rho)}) is "
             f"expected to give **{num(round(plan.tables))} groups a sex × age table**, publish "
             f"{num(round(plan.t1_rows))} totals and hide {num(round(plan.suppressed))} (suppressed); a published "
             f"total is off by {num(plan.mae, 3)} persons on average."]
    if same:
        lines.append(f"This is the {ref_name} itself: every change below is measured from it. Try another plan "
                     "underneath.")
    else:
        lines.append(f"Against the {ref_name} (ρ = {num(ref.rho)}): " + "; ".join(
            f"{label.lower()} {change_text(k, ref.get(k), plan.get(k))}" for k, label, _b in FIGURES) + ".")
    lines.append("These are expectations over the noise, computed exactly from the profile's group sizes (no noise "
                 "is drawn); the decision memo puts them on its first page.")
    return lines


def _threshold_change(a: SafeTabConfig, b: SafeTabConfig, level: PopulationGroupLevel = TRACT) -> str:
    """How the stage-1 noise and the suppression threshold T of a level change from plan a to b, in words."""
    if a.rho(level) <= 0 or b.rho(level) <= 0:
        return ""
    S = int(budget.stability(a.max_race_codes)), int(budget.stability(b.max_race_codes))
    s1 = [float(np.sqrt(budget.sigma2_stage1(c.rho(level), c.gamma, s))) for c, s in ((a, S[0]), (b, S[1]))]
    t = [suppression.threshold(budget.sigma2_stage2(c.rho(level), c.gamma, s), c.suppression_chance)
         for c, s in ((a, S[0]), (b, S[1]))]
    name = planner.level_label(level)
    said = f"At {name} the stage-1 noise goes from σ = {num(s1[0], 3)} to {num(s1[1], 3)} persons"
    if None in t or t[0] == t[1]:
        return said + "."
    return said + f", and the suppression threshold from T = {t[0]} to {t[1]}."


def question(cfg: SafeTabConfig, profile: Profile, targets: Mapping[str, int]) -> tuple[str, str, dict[str, float]]:
    """Halve every budget: how many more groups get a table, and how many more totals are hidden?"""
    half = variant(cfg, targets, 0.5)
    a, b = outcome(project(cfg, profile), cfg), outcome(project(half, profile), half)
    q = ("Halve every budget of the plan (half the privacy loss in ρ). Do more or fewer groups get a table, and how "
         "many more totals are hidden?")
    dt, ds = b.tables - a.tables, b.suppressed - a.suppressed
    text = (f"**{'More' if dt > 0 else 'Fewer'} tables: {change_text('tables', a.tables, b.tables)} groups**, and "
            f"**{change_text('suppressed', a.suppressed, b.suppressed)} totals hidden** ({num(round(b.suppressed))} "
            f"instead of {num(round(a.suppressed))}); a published total is off by {num(b.mae, 3)} persons instead of "
            f"{num(a.mae, 3)}. {_threshold_change(cfg, half)}")
    return q, text, {"tables_change": dt, "suppressed_change": ds}


def learned(plan: Outcome, ref: Outcome) -> list[str]:
    return ["A plan's national outcome is an exact expectation over a profile of group sizes: tables, hidden "
            f"totals, the error of a published total ({num(plan.mae, 3)} persons here).",
            "Less budget can publish more tables (noise lifts small groups over thresholds fixed in persons), and "
            "re-deriving at a smaller r can hide more totals (the budgets meet the targets with no room to spare).",
            f"Compare with the 2020 plan (ρ = {num(ref.rho)}) before deciding, then write it up in the decision memo."]
