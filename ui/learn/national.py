"""Lesson 6, the national trade-off (pure; no Streamlit): a plan's expected national
outcome (`calculators.projection.project` on a group-size profile), its change from a
reference plan, the plan variants a learner can try, and the lesson's question. The two
explanations (why less budget can publish more tables, why re-deriving the budgets at a
smaller r can suppress more) are `calculators.explain`'s, as on the planner.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import math

from calculators import budget, explain
from calculators import plan as plan_model
from calculators.config import SafeTabConfig
from calculators.levels import PopulationGroupLevel
from calculators.projection import Profile, Projection, project
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
            rederive: bool = False, method: str = plan_model.EXACT) -> SafeTabConfig:
    """The plan at race multiplicity r, its budgets re-derived from the MOE targets at the
    new S if `rederive` (`calculators.plan.resolve_targets`, as the planner does), then
    every budget times `factor` (to 4 significant digits)."""
    out = cfg.updated(max_race_codes=cfg.max_race_codes if r is None else int(r))
    if rederive:
        out = plan_model.resolve_targets(out, targets, method)
    if factor != 1:
        out = out.updated(**{lvl.budget_key: float(f"{out.rho(lvl) * factor:.4g}") for lvl in out.tabulated_levels()})
    return out


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


def outcome_sentences(proj: Projection, ref: Outcome, plan_name: str, ref_name: str, profile: Profile,
                      empty: float, cfg: SafeTabConfig) -> list[str]:
    """The worked example of lesson 6: the plan's national outcome (`proj`, of `cfg`), about
    the groups that exist too (`explain.headline_sentence`), and its change from the reference."""
    plan = outcome(proj, cfg)
    same = all(abs(plan.get(k) - ref.get(k)) < 1e-9 for k, _l, _b in FIGURES)
    lines = [f"On the shipped profile ({profile.name}; {num(plan.groups)} population groups in all, "
             f"{100 * empty:.0f} % of them with nobody in them), the plan **{plan_name}** (ρ = {num(plan.rho)}) is "
             f"expected to give **{num(round(plan.tables))} groups a sex × age table**, publish "
             f"{num(round(plan.t1_rows))} totals and hide {num(round(plan.suppressed))} (suppressed); a published "
             f"total is off by {num(plan.mae, 3)} persons on average."]
    lines.append(explain.headline_sentence(proj))
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
    """How the stage-1 noise and the suppression threshold T of a level change from plan a
    to b, in words (SPEC §1: sigma2_1 = S / (2 gamma rho); T from the stage-2 noise)."""
    if a.rho(level) <= 0 or b.rho(level) <= 0:
        return ""
    s1 = [math.sqrt(float(plan_model.sigmas(c, level)["stage1"])) for c in (a, b)]
    t = [plan_model.threshold_for(c, level) for c in (a, b)]
    name = plan_model.level_name(level)
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
