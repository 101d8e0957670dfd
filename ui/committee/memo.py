"""The decision memo: the current plan, or a comparison of plans, as one document
(pure; no Streamlit). `ui.committee.memo_html` and `ui.committee.memo_pdf` print it.

A memo opens with a one-page **decision sheet** (`decision_sheet`): the plan(s), the
release's privacy loss (ρ or ε, unbounded and bounded neighbours, ε at δ), which levels
meet their MOE targets, the national outcome (share of groups that get each table and
that are suppressed, from the national projection; `national_outcome`) and what differs
from the reference plan. The detail follows as an appendix of sections of text, tables
and figures. Every table and figure is built by the same helpers as the app's pages,
so the memo shows the numbers the pages show: `ui.core.planner` (plan table, MOEs, summary,
race multiplicity, MOE against ρ), `ui.safetab.analysis` (adaptive tables and curves,
suppression thresholds and curves), `ui.core.charts` (the pages' figures), `ui.committee.comparison`
and `ui.committee.scenario_charts` (plans side by side) and `ui.safetab.run_report` (the last run).
Levels that share their budget and thresholds have identical curves, so the memo draws
them once and names them all. Numbers are printed by `memo_text`: budgets and other
measurements to 4 significant digits, counts whole, and a number that is not whole never
as one (p = 0.99995 is not printed 1); what differs from the reference plan gets the
digits that tell its two sides apart (`differing_texts`). The last run's accuracy is
summarised per level (the full reports, hundreds of rows, are in the run's downloads),
so that a one-plan memo with its run keeps to 12 pages.

Every memo carries its date, the project version (pyproject.toml), the privacy
definition and delta, and the MOE method used for the "meets its target" verdicts.
"""

from __future__ import annotations

import math
import re
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import pandas as pd
import plotly.graph_objects as go

from calculators import budget, explain, presets
from calculators import plan as pm
from calculators.levels import GEO_LEVELS, POPULATION_GROUP_LEVELS, PopulationGroupLevel
from ui.safetab import analysis
from ui.safetab import safetab_h as hplan
from ui.core import charts, files, planner, typed
from ui.committee import comparison, scenario_charts
from ui.committee.comparison import DIFFERS, Plan, unique_names

ROOT = Path(__file__).resolve().parent.parent.parent
DASH = "—"
#: Section titles of a plan, of a comparison, and of the last run (the appendix).
PLAN_SECTIONS = ("Parameters", "Privacy accounting", "Budget and MOE planner", "Adaptive tables", "Suppression")
COMPARISON_SECTIONS = ("Plans side by side", "By population group level", "Charts that overlay the plans",
                       "config.json keys that differ")
RUN_SECTION = "The last run: accuracy"
SHEET_TITLE = "Decision sheet"
#: Differences from the reference plan listed on the decision sheet, per plan (the rest
#: are counted, and listed in the appendix).
SHEET_DIFFERENCES = 8


# ------------------------------------------------------------------ the model
@dataclass
class Table:
    title: str
    df: pd.DataFrame
    caption: str = ""
    #: (row position, column) of cells to highlight (differences between plans).
    highlight: list[tuple[int, str]] = field(default_factory=list)
    #: Rows (positions) whose label is highlighted (the row differs).
    rows: list[int] = field(default_factory=list)


@dataclass
class Figure:
    title: str
    fig: go.Figure
    data: pd.DataFrame
    caption: str = ""
    #: Drawn half the page wide (two side by side), else the whole width.
    half: bool = False

    @property
    def size(self) -> tuple[int, int]:
        """(width, height) in pixels the picture is drawn at: the figure's own height,
        half or whole page width, so that its text prints at about 7-9 pt."""
        h = int(self.fig.layout.height or 420)
        return (HALF_PX, min(h, 380)) if self.half else (FULL_PX, h)


#: Pixel widths of half-page and whole-page pictures.
HALF_PX, FULL_PX = 720, 1100


@dataclass
class Text:
    text: str
    kind: str = "p"  # "p", "note" (shaded) or "warning"


@dataclass
class Section:
    title: str
    blocks: list[Table | Figure | Text] = field(default_factory=list)
    level: int = 1


@dataclass
class RunInfo:
    """The last run of the session, as the memo shows it."""

    summary: pd.DataFrame
    levels: pd.DataFrame
    release_report: pd.DataFrame | None
    trials: pd.DataFrame | None
    same_plan: bool
    #: The configuration the run used (config.json as a dict), so that a memo carries a
    #: run's accuracy only as the accuracy of the plan that ran (issue 40 item 5).
    config: dict | None = None

    def of(self, plan: Plan) -> bool:
        """Whether this run is a run of `plan` (same configuration; without the run's
        configuration, whether it is a run of the current plan)."""
        if self.config is None:
            return self.same_plan
        return self.config == plan.config.to_dict()


@dataclass
class Memo:
    title: str
    subtitle: str
    date: str
    version: str
    facts: list[tuple[str, str]]
    sections: list[Section]
    #: The decision sheet (page 1): blocks of text and tables, no figures.
    sheet: list = field(default_factory=list)
    #: The sheet's outcome per geography (`geography_outcome`): printed on page 1 under the
    #: sheet where it fits, else at the top of page 2 with a pointer on page 1 (`GEOGRAPHY_POINTER`).
    sheet_geography: list = field(default_factory=list)

    def figures(self) -> list[Figure]:
        return [b for s in self.sections for b in s.blocks if isinstance(b, Figure)]

    def tables(self) -> list[Table]:
        return [b for b in self.sheet + self.sheet_geography if isinstance(b, Table)] + \
            [b for s in self.sections for b in s.blocks if isinstance(b, Table)]


# ------------------------------------------------------------------ formatting
def project_version(root: Path = ROOT) -> str:
    """`version` of pyproject.toml ("unknown" if it cannot be read)."""
    try:
        with open(root / "pyproject.toml", "rb") as fh:
            return str(tomllib.load(fh)["project"]["version"])
    except (OSError, KeyError, tomllib.TOMLDecodeError):
        return "unknown"


def _slice(df: pd.DataFrame, columns: Sequence[str]) -> pd.DataFrame:
    return df[[c for c in columns if c in df.columns]]


_NUMBER = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$")


def number_text(x: float) -> str:
    """A measured number as the memo prints it: 4 significant digits (2.134, 0.2647,
    1e-06), whole with thousands separators from 1,000 on (12,346). A number between -1
    and 1 never prints as ±1: digits are added until it does not (p = 0.99995 prints
    0.99995, not 1, which would be another, here invalid, value)."""
    if math.isnan(x):
        return DASH
    if math.isinf(x):
        return "∞" if x > 0 else "−∞"
    if x.is_integer() and abs(x) < 1e15:
        return f"{int(x):,}"
    if abs(x) >= 1000:
        return f"{round(x):,}"
    return _significant(x, 4)


def _significant(x: float, digits: int) -> str:
    """`x` to `digits` significant digits; a fraction (|x| < 1: a probability, a share)
    gets more if it would read as ±1, as far as the shortest text that reads back as `x`."""
    text = typed.significant(x, digits)
    for d in range(digits + 1, 18):
        if abs(x) >= 1 or abs(float(text)) < 1:
            break
        text = f"{x:.{d}g}"
    return text if abs(x) >= 1 or abs(float(text)) < 1 else repr(x)


def differing_texts(a, b) -> tuple[str, str]:
    """Two values of a setting as the memo prints them, side by side ("0.1 → 0.100001"):
    numbers start at 4 significant digits and get more until the two texts differ, so
    that a change never reads as no change."""
    ta, tb = memo_text(a), memo_text(b)
    nums = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (a, b))
    if ta != tb or not nums or a == b:
        return ta, tb
    for d in range(5, 18):
        ta, tb = _significant(float(a), d), _significant(float(b), d)
        if ta != tb:
            return ta, tb
    return repr(a), repr(b)


def memo_text(value) -> str:
    """How every memo renderer prints a value: whole numbers with thousands separators,
    other numbers to 4 significant digits (`number_text`, also inside text cells that
    hold a bare number, e.g. a config.json value), missing values as a dash."""
    if value is None or value is pd.NA:
        return DASH
    if isinstance(value, bool):
        return "yes" if value else "no"
    if hasattr(value, "item") and not isinstance(value, str):  # numpy scalars
        return memo_text(value.item())
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return number_text(value)
    text = str(value)
    if _NUMBER.match(text.strip()) and ("." in text or "e" in text.lower()):  # "0600100" is an id: as it is
        return number_text(float(text))
    return text


cell_text = memo_text  # the renderers' name for it


# ------------------------------------------------------------------ one plan
def _budget_word(cfg) -> str:
    return planner.units(cfg)["budget"]


def _facts(plan: Plan, method: str, delta: float) -> list[tuple[str, str]]:
    cfg, s = plan.config, planner.plan_summary(plan.config, delta)
    b = _budget_word(cfg)
    pure = cfg.privacy_defn == "puredp"
    out = [
        ("Plan", plan.name),
        ("Privacy definition", "pure DP (budgets ε, geometric noise, δ = 0)" if pure
         else f"zCDP (budgets ρ, discrete Gaussian noise), ε reported at δ = {delta:g}"),
        (f"{b} of the release = max(US, PR)", f"{cell_text(s['rho_release'])} (bounded neighbours: "
                                             f"{cell_text(s['rho_release_bounded'])})"),
    ]
    if not pure:
        out.append(("ε of the release (tight / classic)", f"{number_text(s['eps_tight'])} / "
                                                          f"{number_text(s['eps_classic'])} "
                                                          f"(bounded: {number_text(s['eps_tight_bounded'])})"))
    out += [
        ("Levels tabulated", f"{s['levels_tabulated']} of {s['levels_total']}"),
        ("r, S, γ, p", f"r = {cfg.max_race_codes}, S = {s['S']}, γ = {number_text(float(cfg.gamma))}, "
                       f"p = {number_text(float(cfg.zero_suppression_chance))}"),
        ("MOE targets met with", planner.METHOD_SHORT[method]),
    ]
    return out


def accounting_table(plan: Plan, delta: float) -> pd.DataFrame:
    """Per level: run, on/off, budget, share of its run, ε of the level alone at δ
    (unbounded and bounded neighbours; pure DP: ε and 2ε) (SPEC §1)."""
    cfg = plan.config
    pure = cfg.privacy_defn == "puredp"
    t = planner.plan_table(cfg, plan.targets, planner.BOUND)
    b = _budget_word(cfg)
    eps, eps_b = [], []
    for lvl in POPULATION_GROUP_LEVELS:
        rho = cfg.rho(lvl) if cfg.runs_geo(lvl) else 0.0
        if rho <= 0:
            eps.append(None)
            eps_b.append(None)
        elif pure:
            eps.append(float(rho))
            eps_b.append(float(2 * rho))
        else:
            eps.append(float(budget.epsilon_tight(rho, delta)))
            eps_b.append(float(budget.epsilon_tight(2 * rho, delta)))
    out = pd.DataFrame({
        planner.GEO: t[planner.GEO], planner.ITER: t[planner.ITER], planner.RUN: t[planner.RUN],
        planner.ON: t[planner.ON], b: t[planner.RHO], planner.label(planner.SHARE, cfg): t[planner.SHARE],
        "ε of the level" + ("" if pure else f" at δ = {delta:g}"): eps,
        "ε of the level, bounded": eps_b,
    })
    return out


def _distinct(cfg, levels: Sequence[PopulationGroupLevel]) -> list[list[PopulationGroupLevel]]:
    """Levels grouped by equal (budget, thresholds): their curves are the same."""
    groups: dict[tuple, list[PopulationGroupLevel]] = {}
    for lvl in levels:
        sig = (cfg.rho(lvl), tuple(cfg.thresholds(lvl)), lvl.is_state_or_above)
        groups.setdefault(sig, []).append(lvl)
    return list(groups.values())


def _names(levels: Sequence[PopulationGroupLevel]) -> str:
    return planner.group_name(list(levels))


def _chart_groups(groups: list[list[PopulationGroupLevel]]) -> list[list[PopulationGroupLevel]]:
    """The CHART_GROUPS level groups with most levels, in their order."""
    keep = sorted(range(len(groups)), key=lambda i: -len(groups[i]))[:CHART_GROUPS]
    return [groups[i] for i in sorted(keep)]


def _more_groups(groups: list[list[PopulationGroupLevel]]) -> str:
    shown = {id(g) for g in _chart_groups(groups)}
    rest = [_names(g) for g in groups if id(g) not in shown]
    return (f"Curves of the other level groups ({'; '.join(rest)}) are like these with their own budget and "
            "thresholds (the tables above give them); the app's pages draw every level.")


def _parameters(plan: Plan) -> pd.DataFrame:
    """The plan's config.json keys other than the thresholds (which the adaptive-tables
    section lists per level), folded into two pairs of columns (key, value) to take half
    the height."""
    keys = comparison.config_keys([plan])
    keys = keys.drop(columns=[DIFFERS]).rename(columns={keys.columns[1]: "Value"})
    keys = keys[~keys[keys.columns[0]].astype(str).str.startswith("thresholds_p")].reset_index(drop=True)
    half = (len(keys) + 1) // 2
    left, right = keys.iloc[:half].reset_index(drop=True), keys.iloc[half:].reset_index(drop=True)
    k, v = keys.columns
    return pd.DataFrame({k: left[k], v: left[v], f"{k} ": right[k].reindex(left.index).fillna(""),
                         f"{v} ": right[v].reindex(left.index).fillna("")})


#: Font size (px) of a y-axis title of the memo's half-page charts.
AXIS_TITLE_PX = 12


#: Characters per line of a panel's title or axis title in a half-page chart of two panels.
PANEL_CHARS = 24


def wrap_words(text: str, width: int = PANEL_CHARS) -> str:
    """`text` on lines of at most `width` characters (broken at spaces, joined by <br>)."""
    lines: list[str] = []
    for word in str(text).replace("<br>", " ").split():
        if lines and len(lines[-1]) + 1 + len(word) <= width:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return "<br>".join(lines)


def half_page_panels(fig: go.Figure) -> go.Figure:
    """A chart of two panels side by side (`scenario_charts`' overlays) made to print half a
    page wide (HALF_PX) with every title whole and apart (issue 40 item 6): the panels a
    fifth of the width apart, each panel's title and axis titles wrapped on lines of
    PANEL_CHARS characters and centred over it, the chart's own title left to the memo's
    heading above the picture (at this width it was cut, and the right panel's y-axis title
    ran into the left panel)."""
    domains = ((0.0, 0.38), (0.62, 1.0))
    fig.update_layout(title_text=None, margin=dict(t=70, l=70, r=20))
    for k, (a, b) in enumerate(domains, start=1):
        fig.update_xaxes(domain=[a, b], row=1, col=k, title_font_size=AXIS_TITLE_PX)
        fig.update_yaxes(row=1, col=k, title_font_size=AXIS_TITLE_PX)
    for axis in (fig.layout.xaxis, fig.layout.xaxis2, fig.layout.yaxis, fig.layout.yaxis2):
        if axis.title.text:
            axis.title.text = wrap_words(axis.title.text)
    for ann, (a, b) in zip(fig.layout.annotations[:2], domains):  # make_subplots' panel titles
        ann.update(text=wrap_words(ann.text), x=(a + b) / 2, font=dict(size=AXIS_TITLE_PX + 1))
    return fig


def axis_title_room(fig: go.Figure) -> go.Figure:
    """The figure with its y-axis title on two lines ("95% margin of error" over "(persons,
    log scale)") at AXIS_TITLE_PX, and room above the plot. Drawn half a page wide and at
    most 380 px high, the app's one-line title ran longer than the plot and over the
    chart's title."""
    title = fig.layout.yaxis.title.text or ""
    if "<br>" not in title and " (" in title:
        head, rest = title.split(" (", 1)
        title = f"{head}<br>({rest}"
    top = max(int(fig.layout.margin.t or 0), 60)
    return fig.update_yaxes(title_text=title, title_font_size=AXIS_TITLE_PX).update_layout(margin_t=top)


#: Level groups whose adaptive-table and suppression curves a one-plan memo draws (the
#: groups with most levels first): one row of two charts, so that a one-plan memo with its
#: run keeps to 12 pages; the others are in the tables, and on the app's pages.
CHART_GROUPS = 2


#: What a plan's brief section (of a comparison memo) says instead of the per-level tables
#: that the comparison already gives side by side.
BRIEF_NOTE = ("Per level (budget, ε, MOE, target, thresholds, suppression threshold T): section B gives every plan "
              "side by side.")


def plan_sections(plan: Plan, method: str, delta: float, prefix: str = "", brief: bool = False) -> list[Section]:
    """Parameters, privacy accounting, planner, adaptive tables and suppression of one
    plan. `brief` (a plan of a comparison, whose charts overlay the plans and whose
    per-level figures section B gives side by side): the tables that are not there
    already, without the per-level charts, so that a memo of 3 plans keeps to 20 pages."""
    cfg, targets = plan.config, plan.targets
    u = planner.units(cfg)
    b = u["budget"]
    secs: list[Section] = []

    # --- parameters
    keys = _parameters(plan)
    secs.append(Section(f"{prefix}{PLAN_SECTIONS[0]}", [
        Text("The plan's config.json (the thresholds are listed per level under Adaptive tables). Numbers are rounded to 4 significant digits; the exact values are in the plan's "
             "config.json (Configuration page). MOE targets are the planner's, not part of config.json."),
        Table("config.json", keys),
    ]))

    # --- privacy accounting
    secs.append(Section(f"{prefix}{PLAN_SECTIONS[1]}", [
        Text(("Pure DP: the levels of a run add up (basic composition); US and Puerto Rico persons are "
              "disjoint, so the release costs the larger run. Bounded neighbours (change one person) cost twice "
              "unbounded ones (add or remove one person). Smaller ε is more private.") if u["puredp"] else
             ("zCDP: the levels of a run add up (sequential composition); US and Puerto Rico persons are "
              "disjoint, so the release costs the larger run. Bounded neighbours (change one person) cost twice "
              f"unbounded ones (add or remove one person). ε is the (ε, δ)-DP guarantee at δ = {delta:g}: tight "
              "(Canonne-Kamath-Steinke) and classic ρ + 2√(ρ ln 1/δ). Smaller ρ and ε are more private.")),
        Table("The release", planner.summary_table(cfg, delta)),
        *([Text(BRIEF_NOTE)] if brief else [
            Table("Each level", accounting_table(plan, delta),
                  caption=f"ε of one level alone; the release's ε is that of the summed {b}, not the sum of these.")]),
    ]))

    # --- planner
    table = planner.plan_table(cfg, targets, method)
    missed = planner.missed_targets(table)
    blocks: list[Table | Figure | Text] = [
        Text(f"MOE = 95% margin of error of one published stage-2 cell, in persons. Two figures: the design "
             f"paper's ⌊1.96σ⌋ and the exact {u['law']} MOE (smallest m with P(|noise| ≤ m) ≥ 95%). The verdict "
             f"uses the {planner.METHOD_SHORT[method]}."),
        Text(BRIEF_NOTE) if brief else Table("Budget and MOE per level", planner.relabel(table, cfg)),
    ]
    if missed:
        blocks.append(Text(f"{len(missed)} level(s) miss their MOE target: {', '.join(missed)}.", "warning"))
    if not brief:
        mt = planner.moe_table(cfg, targets)
        if len(mt):
            blocks.append(Table("Noise and MOE of every stage", planner.relabel(mt, cfg),
                                caption="σ² (b under pure DP) of each stage; MOEs in persons."))
        rhos = [r for r, _ in planner.rho_groups(cfg)]
        lo, hi = min([1e-3] + [r / 2 for r in rhos]), max([10.0] + [r * 2 for r in rhos])
        S = planner.stability_of(cfg)
        curve = planner.moe_rho_curve(S, cfg.gamma, lo, hi, noise=planner.noise_of(cfg))
        points = planner.level_points(cfg, method)
        figs = [Figure(f"MOE against {b}", charts.moe_vs_rho(curve, points, planner.label(
            planner.METHOD_SHORT[method], cfg), units=u), planner.relabel(curve, cfg),
            caption=f"At S = {S} and γ = {number_text(float(cfg.gamma))}. Diamonds: this plan's levels.", half=True)]
        long = planner.race_multiplicity_long(cfg, method)
        if not long.empty:  # the table, then the charts side by side (the table fills the page a chart would not)
            blocks.append(Table("MOE by race multiplicity r", planner.race_multiplicity_table(cfg, method),
                                caption=f"Row r = {cfg.max_race_codes} is this plan; budgets and γ as they are.",
                                rows=[cfg.max_race_codes - 1]))
            figs.append(Figure("Race multiplicity r", charts.race_multiplicity(long, units=u),
                               planner.relabel(long, cfg), half=True))
        blocks += [Figure(f.title, axis_title_room(f.fig), f.data, f.caption, f.half) for f in figs]
    secs.append(Section(f"{prefix}{PLAN_SECTIONS[2]}", blocks))

    # --- adaptive tables
    levels = cfg.tabulated_levels()
    blocks = []
    if levels and brief:
        blocks.append(Text(BRIEF_NOTE))
    elif levels:
        blocks.append(Table("Thresholds of every level", analysis.thresholds_table(cfg),
                            caption="Relative MOE of a cell of the table a threshold opens, for a group exactly at "
                                    "the threshold spread evenly over the table's cells."))
        groups = [] if brief else _distinct(cfg, levels)
        figs = []
        for grp in _chart_groups(groups):  # the tables, then the charts two by two
            lvl = grp[0]
            th = cfg.thresholds(lvl)
            name = _names(grp)
            blocks.append(Table(f"{name}: the four possible tables (Θ = {', '.join(f'{t:,}' for t in th)})",
                                analysis.level_tables(cfg, lvl)))
            probs = analysis.stat_level_curves(cfg, lvl)
            figs.append(Figure(f"{name}: which table a group gets",
                               charts.stat_level_probabilities(probs, th, log_x=True), probs, half=True))
        blocks += figs
        if len(groups) > CHART_GROUPS:
            blocks.append(Text(_more_groups(groups), "note"))
    else:
        blocks.append(Text("No population group level is tabulated.", "warning"))
    secs.append(Section(f"{prefix}{PLAN_SECTIONS[3]}", blocks))

    # --- suppression
    p = cfg.zero_suppression_chance
    blocks = [Text(f"Zero-suppression chance p = {number_text(float(p))}. At sub-state levels a total-only (stat level 0) group's "
                   "total is released only if its noisy value is above T, the smallest count with "
                   "P(noise ≤ T) ≥ p; released counts are biased upward. State and above are never suppressed.")]
    if levels and not brief:
        blocks.append(Table("Threshold T per level", analysis.suppression_table(cfg, p)))
    elif levels:
        blocks.append(Text(BRIEF_NOTE))
    sub = [lvl for lvl in levels if not lvl.is_state_or_above]
    if p > 0 and sub and not brief:
        groups = _distinct(cfg, sub)
        figs = []
        for grp in _chart_groups(groups):  # the tables, then the charts two by two
            lvl = grp[0]
            sig = analysis.sigmas(cfg, lvl)
            t = analysis.threshold_for(cfg, lvl, p)
            curves = analysis.suppression_curves(t, sig["stage2"], noise=sig["noise"])
            name = _names(grp)
            figs.append(Figure(f"{name}: chance of suppression (T = {t})",
                               charts.suppression_probability(curves, t), curves, half=True))
            ns = sorted({0, max(t // 2, 0), max(t, 0), 2 * max(t, 1)})
            rows = [{"True count n": n, **analysis.value_at(n, t, sig["stage2"], sig["noise"])} for n in ns]
            blocks.append(Table(f"{name}: what happens to one true count (bias: E[noise | released])",
                                pd.DataFrame(rows)))
        blocks += figs
        if len(groups) > CHART_GROUPS:
            blocks.append(Text(_more_groups(groups), "note"))
    elif p == 0:
        blocks.append(Text("Suppression is off (p = 0): every total is released."))
    secs.append(Section(f"{prefix}{PLAN_SECTIONS[4]}", blocks))
    return secs


# ------------------------------------------------------------------ the decision sheet
def differences(reference: Plan, plan: Plan) -> list[str]:
    """What differs in `plan` from `reference`, one short line per setting or level:
    "γ 0.1 → 0.2", "COUNTY Detailed: ρ 0.159 → 0.3, MOE target 11 → 8"."""
    a, c = reference.config, plan.config
    out: list[str] = []
    scalars = (("privacy definition", lambda x: planner.PRIVACY_NAMES[x.privacy_defn]),
               ("race multiplicity r", lambda x: x.max_race_codes), ("γ", lambda x: x.gamma),
               ("p (zero-suppression chance)", lambda x: x.zero_suppression_chance),
               ("negative counts", lambda x: "allowed" if x.allow_negative_counts else "clamped at 0"),
               ("US run", lambda x: "on" if x.run_us else "off"), ("Puerto Rico run", lambda x: "on" if x.run_pr else "off"),
               ("US states", lambda x: len(x.state_filter_us)), ("reader", lambda x: x.reader))
    for name, get in scalars:
        va, vc = get(a), get(c)
        if va != vc:
            ta, tc = differing_texts(va, vc)
            out.append(f"{name} {ta} → {tc}")
    for lvl in POPULATION_GROUP_LEVELS:
        parts = []
        ra = a.rho(lvl) if a.runs_geo(lvl) else 0.0
        rc = c.rho(lvl) if c.runs_geo(lvl) else 0.0
        if ra != rc:
            unit = "ρ" if a.privacy_defn == c.privacy_defn == "zcdp" else "budget"
            ta, tc = differing_texts(float(ra), float(rc))
            parts.append(f"{unit} {ta if ra else 'off'} → {tc if rc else 'off'}")
        ta, tc = reference.targets.get(lvl.key), plan.targets.get(lvl.key)
        if rc and ta != tc and ta is not None and tc is not None:
            parts.append(f"MOE target {ta} → {tc}")
        tha = tuple(a.thresholds(lvl)) if lvl.key in a.thresholds_p else ()
        thc = tuple(c.thresholds(lvl)) if lvl.key in c.thresholds_p else ()
        if rc and tha != thc:
            parts.append(f"Θ {'/'.join(f'{t:,}' for t in tha) or '—'} → {'/'.join(f'{t:,}' for t in thc) or '—'}")
        if parts:
            out.append(f"{planner.level_label(lvl)}: {', '.join(parts)}")
    return out


def count_share(count: float, of: float) -> str:
    """An expected number of groups, whole, and its share of `of` by the one format rule
    (`calculators.plan.fmt`: 3 significant digits): "119,694 (0.0456 %)", so that a table
    given to tens of thousands of groups out of millions does not read as 0.0 %."""
    return f"{pm.fmt(count, pm.COUNT)} ({pm.fmt(count / of if of else 0.0, pm.SHARE)})"


def national_outcome(plans: Sequence[Plan], profile=None, reference: Plan | None = None) -> list:
    """NATIONAL PROJECTION BLOCK of the decision sheet (issues 23, 40): per plan, what it
    does to the groups that exist (at least one person): how many publish a total, only a
    total, each sex x age table, are suppressed; how many empty groups publish a total; the
    share of persons covered; and the change of each count from the `reference` plan.
    From the national projection of a group-size profile (`profile`; the shipped synthetic
    national one by default), with the profile named; counts whole, shares to 3
    significant digits (`calculators.plan.fmt`), so plans that differ show different numbers.

    The one place page 1 takes the projection from: `ui.safetab.projection.national_outcome`
    (one row per level and a "TOTAL" row; its attrs name the profile). Without it (an app
    without the projection, or no profile) the block says so in one line. Where a plan
    spends less budget than the reference and yet publishes more tables, a note says why
    (`calculators.explain.less_budget_more_tables`)."""
    try:
        from ui.safetab import projection as pj
    except ImportError:
        return [Text("National outcome (share of groups with each table, suppressed): the national projection "
                     "is not available in this version of the app; the appendix shows the thresholds and "
                     "suppression rules it would apply.", "note")]
    rows, attrs, notes, heads = [], {}, {}, {}
    try:
        prof = profile if profile is not None else pj.shipped(pj.NATIONAL)
        for p in ([reference] if reference is not None else []) + list(plans):
            df = pj.national_outcome(p.config, prof)
            attrs = df.attrs
            notes.update(dict.fromkeys(attrs.get("notes", ())))  # what the projection assumes, each once
            heads[id(p)] = pm.national_headline(project_of(p.config, prof))
    except Exception as exc:  # noqa: BLE001 - a missing or unreadable profile: said on the sheet
        return [Text(f"National outcome: the national projection could not be made ({str(exc)[:200]}).",
                     "warning")]
    ref_h = heads.get(id(reference)) if reference is not None else None
    for p in plans:
        h = heads[id(p)]
        occ = h["occupied"]
        row = {"Plan": p.name, "With a person": pm.fmt(occ, pm.COUNT),
               "Publish a total": count_share(h["published"], occ),
               "Total only": count_share(h["total_only"], occ),
               **{f"Sex × age{a}": count_share(h[f"age{a}"], occ) for a in (4, 9, 23)},
               "Suppressed": count_share(h["suppressed"], occ),
               "Empty groups, published": pm.fmt(h["empty_published"], pm.COUNT),
               "Persons covered": pm.fmt(h["persons_published_share"], pm.SHARE)}
        if ref_h is not None:
            ch = pm.national_changes(ref_h, h)
            moved = [f"{pm.fmt_change(ch[k], pm.COUNT)} {word}" for k, word in (
                ("published", "publish a total"), ("with_table", "with a table"), ("suppressed", "suppressed"))
                if round(ch[k]) != 0]
            row[f"Change from {reference.name}"] = "; ".join(moved) if moved else "none"
        rows.append(row)
    kind = "synthetic" if attrs.get("synthetic") else "CONFIDENTIAL"
    name = attrs.get("profile", "the national profile")
    persons = attrs.get("persons")
    caption = (f"Expected groups with at least one person (whole) and their shares of them, projected on the "
               f"group-size profile “{name}” ({f'{persons:,} persons, ' if persons else ''}{kind}). Total only: "
               "published without a table (the suppressed apart). Empty groups, published: no person, a total. "
               "Persons covered: share of the persons' group memberships whose group publishes a total. "
               "Assumed: " + "; ".join(_gist(n) for n in notes) + " (docs/projection.md).")
    out: list = [Table("National outcome: the groups that exist", pd.DataFrame(rows), caption=caption.strip())]
    if reference is not None and prof is not None:
        for p in plans:
            why = explain.less_budget_more_tables(reference.config, p.config, prof)
            if why and p is not reference:
                out.append(Text(f"{p.name}: " + " ".join(why), "note"))
    return out


#: What page 1 says when the outcome per geography did not fit on it (the PDF prints the
#: table at the top of page 2).
GEOGRAPHY_POINTER = ("The outcome per geography (nation, state, county, tract, place, AIANNH, Puerto Rico) of the "
                     "groups with at least one person is at the top of page 2.")
#: The title of the outcome per geography (`geography_outcome`).
GEOGRAPHY_TITLE = "National outcome per geography: the groups that exist"


def geography_outcome(plans: Sequence[Plan], profile=None, reference: Plan | None = None) -> list:
    """The decision sheet's outcome per geography (issue 40 item 2; nation, state, county,
    tract, place, AIANNH, Puerto Rico and all levels; `calculators.plan.geography_table`),
    compact: per plan one column of "published / with a table / suppressed" (expected
    groups with at least one person, whole, `calculators.plan.fmt`), and for each plan
    but the reference, its change from the `reference` plan (`calculators.plan.fmt_change`).
    Nothing (an empty list) when the projection cannot be made: the sheet's national
    outcome block says why."""
    try:
        from ui.safetab import projection as pj

        prof = profile if profile is not None else pj.shipped(pj.NATIONAL)
        if prof is None:
            return []
        others = [reference] if reference is not None and all(p is not reference for p in plans) else []
        tables = {id(p): {r["geography"]: r for r in pm.geography_table(project_of(p.config, prof))}
                  for p in [*others, *plans]}
    except Exception:  # noqa: BLE001 - said by the national outcome block (`national_outcome`)
        return []
    keys = ("published", "with_table", "suppressed")
    geos = [g for g in [*pm.GEOGRAPHIES, "All levels"] if any(g in t for t in tables.values())]
    ref_t = tables.get(id(reference)) if reference is not None else None

    def cell(r: dict | None) -> str:
        return DASH if r is None else " / ".join(pm.fmt(r[k], pm.COUNT) for k in keys)

    rows = []
    for g in geos:
        occupied = list(dict.fromkeys(pm.fmt(tables[id(p)][g]["occupied"], pm.COUNT)
                                      for p in plans if g in tables[id(p)]))
        row = {"Geography": g, "With a person": " or ".join(occupied) or DASH}
        for p in plans:
            r = tables[id(p)].get(g)
            row[f"{p.name}: published / with a table / suppressed"] = cell(r)
            if ref_t is not None and p is not reference:
                base = ref_t.get(g)
                row[f"{p.name}: change from {reference.name}"] = DASH if r is None or base is None else " / ".join(
                    pm.fmt_change(r[k] - base[k], pm.COUNT) for k in keys)
        rows.append(row)
    caption = ("Expected groups with at least one person, per geography, that publish a total / get a sex × age "
               "table / are suppressed, on the profile of the national outcome above; a change is the plan minus "
               "the reference, in groups. A geography a plan does not tabulate is a dash.")
    return [Table(GEOGRAPHY_TITLE, pd.DataFrame(rows), caption=caption)]


def _gist(note: str) -> str:
    """A projection note's first clause ("Coterminous copying is ignored"), so that page 1
    keeps to one page; docs/projection.md and the planner's panel give them whole."""
    note = re.sub(r"\s*\([^()]*\)", "", note)  # no parenthesis left open by the cut
    cut = min((i for i in (note.find(":"), note.find(";"), note.find(". ")) if i > 0), default=len(note))
    return note[:cut].rstrip(".")


def project_of(config, profile):
    """`calculators.projection.project` (one name for the memo's two uses of it)."""
    from calculators.projection import project

    return project(config, profile)


def _target_line(plan: Plan, method: str) -> str:
    table = planner.plan_table(plan.config, plan.targets, method)
    on = table[table[planner.ON]]
    missed = table[table[planner.STATUS].str.startswith("✗")]
    if not len(on):
        return "no level tabulated"
    if not len(missed):
        return f"all {len(on)} tabulated levels meet their target"
    what = "; ".join(f"{r[planner.GEO]} {r[planner.ITER]} (MOE {r[planner.MOE_EXACT if method == planner.EXACT else planner.MOE_BOUND]}"
                     f" > {r[planner.TARGET]})" for _, r in missed.iterrows())
    return f"{len(on) - len(missed)} of {len(on)} meet their target; missed: {what}"


def decision_sheet(plans: Sequence[Plan], reference: Plan, method: str, delta: float, profile=None) -> list:
    """Page 1 of the memo: the plans, the release's privacy loss (unbounded and bounded,
    ε at δ), which levels meet their MOE targets, the national outcome and what differs
    from the reference plan. Blocks of text and tables only."""
    names = [p.name for p in plans]
    privacy = {"": ["Privacy definition", "Release budget, unbounded (add or remove one person)",
                    "Release budget, bounded (change one person)", f"ε of the release at δ = {delta:g}, unbounded",
                    f"ε of the release at δ = {delta:g}, bounded"]}
    for p in plans:
        s = planner.plan_summary(p.config, delta)
        pure = p.config.privacy_defn == "puredp"
        u = "ε" if pure else "ρ"
        privacy[p.name] = [
            "pure DP (geometric noise, δ = 0)" if pure else "zCDP (discrete Gaussian noise)",
            f"{u} = {number_text(float(s['rho_release']))}", f"{u} = {number_text(float(s['rho_release_bounded']))}",
            f"{number_text(float(s['eps_tight']))}" + (" (δ = 0)" if pure else " (tight)"),
            f"{number_text(float(s['eps_tight_bounded']))}" + (" (δ = 0)" if pure else " (tight)"),
        ]
    targets = pd.DataFrame({"Plan": names, f"MOE targets ({planner.METHOD_SHORT[method]})":
                            [_target_line(p, method) for p in plans]})
    blocks: list = [
        Table("Privacy loss of the release (smaller is more private)", pd.DataFrame(privacy)),
        Table("Which levels meet their MOE target", targets),
        *national_outcome(plans, profile, reference),
    ]
    rows = []
    for p in plans:
        if p is reference:
            continue
        diff = differences(reference, p)
        shown = "; ".join(diff[:SHEET_DIFFERENCES]) if diff else "nothing: the same plan"
        if len(diff) > SHEET_DIFFERENCES:
            shown += f"; and {len(diff) - SHEET_DIFFERENCES} more (appendix)"
        rows.append({"Plan": p.name, f"Differs from {reference.name} in": shown})
    if rows:
        blocks.append(Table(f"What differs from the reference plan ({reference.name})", pd.DataFrame(rows)))
    else:
        blocks.append(Text(f"This is the reference plan ({reference.name}) itself: nothing differs from it."))
    return blocks


# ------------------------------------------------------------------ the last run
#: The column of `analysis.accuracy_view` the memo's accuracy charts pick their rows by.
_COUNTS = "Counts compared"
#: Most bars of an accuracy chart in the memo (one per geography level), so that the
#: half-page chart keeps every label readable.
ACCURACY_CHART_ROWS = 10
#: Height (pixels) of the memo's accuracy charts: room for every label of
#: ACCURACY_CHART_ROWS bars, and the two charts fit under the accuracy table.
ACCURACY_CHART_HEIGHT = 320
#: Where the full accuracy tables are (the memo prints a summary of them).
FULL_ACCURACY = ("The full accuracy tables (every kind of published count and true group size, hundreds of rows) "
                 "are in the run's downloads on the Run page: the accuracy table's CSV and “Everything (zip)” "
                 "(folder accuracy/). Below, their summary per level.")


def accuracy_summary(reports: Sequence[tuple[str, pd.DataFrame]]) -> pd.DataFrame:
    """The accuracy reports (`(short name, report)`: this release, the repeated
    releases) in one row per level ("(COUNTY, 2)", as the run's manifest names it), in
    geography order: per report, in how many of its rows (kind of count × true group
    size) the observed 95th percentile of |error| is above the predicted 95% MOE, and the
    largest observed ÷ predicted. The full reports have a row per kind and size
    (hundreds): too long to print, they are in the run's downloads."""
    order = {g: i for i, g in enumerate(GEO_LEVELS)}
    rows: dict[tuple, dict] = {}
    for name, rep in reports:
        for (geo, it), g in rep.groupby(["geo_level", "iteration_level"], sort=False):
            row = rows.setdefault((order.get(geo, len(order)), it, geo),
                                  {"Level": pm.level_name(PopulationGroupLevel(geo, int(it)))})
            obs, pred = g["p95_abs_error"], g["predicted_moe95_exact"]
            ratio = obs / pred.where(pred > 0)
            row[f"{name}: rows over the MOE"] = f"{int((obs > pred).sum())} of {len(g)}"
            row[f"{name}: largest observed ÷ MOE"] = float(ratio.max()) if ratio.notna().any() else None
    return pd.DataFrame([rows[k] for k in sorted(rows)])


def levels_and_accuracy(levels: pd.DataFrame, summary: pd.DataFrame) -> pd.DataFrame:
    """The run's tables published per level with the accuracy summary's columns beside
    them (one table of one row per level, half the height of two); levels without
    accuracy rows get a dash."""
    levels = _named_levels(levels)
    if not len(levels):
        return summary
    if not len(summary):
        return levels
    out = levels.merge(summary, on="Level", how="left")
    extra = summary[~summary["Level"].isin(levels["Level"])]
    return pd.concat([out, extra], ignore_index=True) if len(extra) else out


def _named_levels(df: pd.DataFrame) -> pd.DataFrame:
    """A table whose "Level" column holds keys as the run's manifest writes them ("(USA, 1)")
    with the planner's names instead ("USA Regional"), as everywhere in the memo."""
    if "Level" not in df.columns or not len(df):
        return df

    def name(key):
        try:
            return pm.level_name(PopulationGroupLevel.parse(str(key)))
        except ValueError:
            return key

    return df.assign(Level=df["Level"].map(name))


def accuracy_chart_rows(rep: pd.DataFrame, kind: str) -> pd.DataFrame:
    """The rows of one kind of published count that the memo's accuracy chart draws:
    per geography level, the iteration level and true group size with the most counts
    compared (the steadiest comparison), at most ACCURACY_CHART_ROWS, so that every
    label of the chart can be read on the page."""
    view = analysis.accuracy_view(rep, kind)
    if not len(view):
        return view
    keep = view.groupby("Geography", sort=False)[_COUNTS].idxmax()
    return view.loc[sorted(keep)].head(ACCURACY_CHART_ROWS)


def run_section(run: RunInfo) -> Section:
    """The last run's accuracy: what ran; per level, the tables published and a summary
    of this release's accuracy (and of the repeated releases', if computed); a chart of
    each report with one bar per geography level. The full reports (hundreds of rows,
    about 20 pages each) are not printed, so that a one-plan memo with its run keeps to
    12 pages: a line says where they are."""
    blocks: list[Table | Figure | Text] = [
        Text("The last run of this session on the Run page. Errors compare the release with the true counts of "
             "the confidential input: for checking the plan, NOT FOR RELEASE.", "note"),
    ]
    if not run.same_plan and run.config is None:
        blocks.append(Text("The plan has changed since this run: the run used the plan named below, not "
                           "necessarily the plan of this memo.", "warning"))
    blocks.append(Table("The run", run.summary))
    n_trials = int(run.trials["trials"].max()) if run.trials is not None and len(run.trials) else 0
    reports = [(short, label, rep) for short, label, rep in (
        ("this release", "This release", run.release_report),
        (f"{n_trials} releases", f"{n_trials} repeated releases", run.trials))
        if rep is not None and len(rep)]
    summary = accuracy_summary([(s, r) for s, _l, r in reports]) if reports else pd.DataFrame()
    if reports:
        blocks.append(Text(FULL_ACCURACY))
    if len(run.levels) or len(summary):
        caption = "" if not reports else (
            f"Accuracy: rows of the full reports, {', '.join(f'{len(r):,} ({s})' for s, _l, r in reports)}, one per kind "
            "of published count and true group size; \"rows over the MOE\": rows whose observed 95th percentile of "
            "|released − true| (persons) is above the calculators' exact 95% MOE.")
        title = "Tables published per level" + (" and their accuracy" if reports else "")
        blocks.append(Table(title, levels_and_accuracy(run.levels, summary), caption=caption))
    for _short, label, rep in reports:
        kinds = list(dict.fromkeys(analysis.accuracy_plain(rep)["Published count"]))
        kind = "total (stat level 0)" if "total (stat level 0)" in kinds else kinds[0]
        view = accuracy_chart_rows(rep, kind)
        fig = charts.accuracy(view).update_layout(height=ACCURACY_CHART_HEIGHT)
        fig.update_yaxes(tickmode="array", tickvals=list(view["Groups"]), tickfont={"size": 11})  # every label
        blocks.append(Figure(f"{label}: observed error and MOE, {kind}", fig, view,
                             caption="Per geography level, the group size with most counts compared.", half=True))
    return Section(RUN_SECTION, blocks)


#: What a one-plan memo says instead of the accuracy of a run of another plan.
OTHER_RUN = ("The last run of this session used another plan than {name}: its accuracy is not this plan's, so it is "
             "left out of this memo. Run {name} on the Run page to include its accuracy.")


def run_info(out, meta: dict | None, current_config) -> RunInfo:
    """A RunInfo of a `ui.safetab.runner.RunOutput` (its own release's accuracy is computed once)."""
    from ui.safetab import run_report

    return RunInfo(run_report.summary(out, meta), files.stat_level_counts(out.manifest),
                   run_report.release_accuracy(out), out.trials,
                   out.config.to_dict() == current_config.to_dict(), out.config.to_dict())


# ------------------------------------------------------------------ memos
#: The reference of a one-plan memo's decision sheet.
REFERENCE = "2020 production plan"


def _production() -> Plan:
    return Plan(REFERENCE, presets.production_2020(), planner.production_targets())


def plan_memo(plan: Plan, method: str = planner.BOUND, delta: float = planner.DEFAULT_DELTA,
              run: RunInfo | None = None, now: datetime | None = None, profile=None, version: str = "",
              h_config=None) -> Memo:
    """The decision memo of one plan: the decision sheet (against the 2020 production
    plan), then the plan in full as an appendix. `version`: the saved scenario's version
    the plan is, and its author (`scenarios.Scenario.version_label`), named among the facts.
    `h_config`: the SafeTab-H plan kept with it (`safetab_h_section`; default: `plan.h_config`)."""
    sections = plan_sections(plan, method, delta)
    h_config = plan.h_config if h_config is None else h_config
    if h_config is not None:
        sections.append(safetab_h_section(plan, h_config, delta))
    if run is not None and run.of(plan):
        sections.append(run_section(run))
    elif run is not None:  # a run of another plan is never shown as this plan's accuracy
        sections.append(Section(RUN_SECTION, [Text(OTHER_RUN.format(name=plan.name), "note")]))
    ref = _production()
    same = plan.config.to_dict() == ref.config.to_dict() and dict(plan.targets) == dict(ref.targets)
    sheet = decision_sheet([plan], plan if same else ref, method, delta, profile)
    facts = _facts(plan, method, delta)
    if version:
        facts.insert(1, ("Saved scenario", f"{plan.name}, {version}"))
    return _marked(Memo(f"SafeTab-P decision memo: {plan.name}", "The plan, its privacy accounting and its accuracy",
                        _date(now), project_version(), facts, sections, sheet,
                        geography_outcome([plan], profile, plan if same else ref)), profile)


#: The title of the memo's SafeTab-H section.
H_SECTION = "SafeTab-H plan: the household tables"
#: The columns of its budget table (the exact MOEs in households).
_H_COLUMNS = ("Table", "Level", "Budget", "Cell MOE", "Total MOE")


def safetab_h_section(plan: Plan, h_cfg, delta: float, prefix: str = "") -> Section:
    """The SafeTab-H plan kept with `plan` (issue 45 item 4): each query's budget and the
    exact 95% MOE of one cell and of the finest level's total (households; variance
    S / (2 rho) per direct cell, m times that for a sum of m, S = max(2, r) + 1; SPEC.md,
    SafeTab-H), and the accounting per household beside SafeTab-P's per person."""
    df = hplan.budget_table(h_cfg, exact=True)
    df = df[[c for c in _H_COLUMNS if c in df.columns]]
    S = hplan.household_stability(h_cfg.max_race_codes)
    return Section(prefix + H_SECTION, [
        Text("SafeTab-H publishes household type (T3) and tenure (T4) for the groups that have a row in "
             "SafeTab-P's published T1; its privacy unit is one household, so its budgets are never added to "
             "SafeTab-P's."),
        Table("SafeTab-H budgets and MOEs per query", df,
              caption=f"S = {S} (r = {h_cfg.max_race_codes}). MOE: exact 95% half-width in households; the total "
                      "sums the finest level's direct cells (T3 5, T4 3). A budget of 0: no table there."),
        Table("Privacy accounting per person and per household", hplan.accounting(plan.config, h_cfg, delta),
              caption="Never added: SafeTab-P protects one person, SafeTab-H one household."),
    ])


def _signature(plans: Sequence[Plan], lvl: PopulationGroupLevel) -> tuple:
    return tuple((p.config.rho(lvl) if p.config.runs_geo(lvl) else 0.0,
                  tuple(p.config.thresholds(lvl)) if lvl.key in p.config.thresholds_p else (),
                  planner.stability_of(p.config), p.config.gamma, p.config.privacy_defn,
                  p.config.zero_suppression_chance) for p in plans) + (lvl.is_state_or_above,)


def comparison_memo(plans: Sequence[Plan], method: str = planner.BOUND, delta: float = planner.DEFAULT_DELTA,
                    run: RunInfo | None = None, now: datetime | None = None,
                    details: dict[str, tuple[str, str, str]] | None = None, profile=None) -> Memo:
    """The decision memo of several plans side by side (the first is the reference): the
    decision sheet, then the plans side by side, charts that overlay them and each plan's
    tables as an appendix. `details`: name -> (created, modified, note) of saved
    scenarios, or (created, modified, note, version) where `version` names the saved
    version and its author (`scenarios.Scenario.version_label`)."""
    if len(plans) < 2:
        raise ValueError("a comparison needs two or more plans")
    names = unique_names([p.name for p in plans])
    plans = [Plan(n, p.config, p.targets, p.h_config) for n, p in zip(names, plans, strict=True)]
    details = details or {}
    listing = pd.DataFrame([{
        "Plan": p.name,
        "Privacy definition": "pure DP" if p.config.privacy_defn == "puredp" else "zCDP",
        "Created (UTC)": details.get(p.name, ("", "", ""))[0].replace("T", " ")[:19] or DASH,
        "Modified (UTC)": details.get(p.name, ("", "", ""))[1].replace("T", " ")[:19] or DASH,
        "Note": details.get(p.name, ("", "", ""))[2] or DASH,
        **({"Version (author)": (details.get(p.name, ())[3:4] or [""])[0] or DASH}
           if any(len(d) > 3 and d[3] for d in details.values()) else {}),
    } for p in plans])

    def cmp_table(title: str, df: pd.DataFrame, caption: str = "") -> Table:
        return Table(title, df, caption, comparison.differing_cells(df, names),
                     [i for i, d in enumerate(df[DIFFERS]) if d])

    summ = comparison.summary(plans, delta)
    head = [
        Text(f"{len(plans)} plans. Highlighted: values that differ from the first plan, {names[0]}; "
             "rows that differ are marked. Budgets are ρ (zCDP) or ε (pure DP); smaller is more private."),
        Table("The plans", listing),
        cmp_table("Settings and privacy accounting", summ),
    ]
    if len({p.config.privacy_defn for p in plans}) > 1:
        head.append(Text("These plans mix zCDP and pure DP: budgets are in different units (ρ and ε). Compare them "
                         "by their MOEs, thresholds and ε.", "warning"))
    secs = [Section(COMPARISON_SECTIONS[0], head)]
    lv_blocks: list[Table | Figure | Text] = []
    for m, (title, helptext) in comparison.MEASURES.items():
        df = comparison.by_level(plans, m, method, delta)
        lv_blocks.append(cmp_table(title, df, helptext))
        if m in ("epsilon", "moe_exact", "suppression"):
            lv_blocks.append(Figure(f"{title} by level", scenario_charts.level_bars(
                df, f"{title} by level, one bar per plan", title, log_y=m != "suppression"), df))
    secs.append(Section(COMPARISON_SECTIONS[1], lv_blocks))

    ov: list[Table | Figure | Text] = []
    for defn in ("zcdp", "puredp"):
        group = [p for p in plans if p.config.privacy_defn == defn]
        if group:
            ov.append(Figure(f"MOE against the level budget ({'pure DP' if defn == 'puredp' else 'zCDP'})",
                             scenario_charts.moe_budget_curves(group, method),
                             comparison.by_level(group, "moe_exact", method, delta)))
    seen: dict[tuple, list[PopulationGroupLevel]] = {}
    for lvl in POPULATION_GROUP_LEVELS:
        if any(p.config.rho(lvl) > 0 and p.config.runs_geo(lvl) for p in plans):
            seen.setdefault(_signature(plans, lvl), []).append(lvl)
    for grp in seen.values():
        lvl, name = grp[0], _names(grp)
        ad = scenario_charts.adaptive_data(plans, lvl)
        if len(ad):
            fig = half_page_panels(scenario_charts.adaptive_overlay(ad, plans, lvl))
            ov.append(Figure(f"{name}: expected accuracy by true group size, one line per plan", fig, ad, half=True))
        sd = scenario_charts.suppression_data(plans, lvl)
        if len(sd):
            fig = half_page_panels(scenario_charts.suppression_overlay(sd, lvl))
            ov.append(Figure(f"{name}: suppression by true count, one line per plan", fig, sd, half=True))
    secs.append(Section(COMPARISON_SECTIONS[2], ov))
    keys = comparison.config_keys(plans)
    diff_keys = keys[keys[DIFFERS]].reset_index(drop=True)
    secs.append(Section(COMPARISON_SECTIONS[3], [
        cmp_table("Keys that differ", diff_keys) if len(diff_keys) else Text("The plans' config.json are identical."),
    ]))
    for p in plans:  # each plan's own tables; the charts above overlay the plans
        for s in plan_sections(p, method, delta, prefix=f"{p.name}: ", brief=True):
            s.level = 2
            secs.append(s)
        if p.h_config is not None:
            secs.append(safetab_h_section(p, p.h_config, delta, prefix=f"{p.name}: "))
            secs[-1].level = 2
    if run is not None:
        ran = next((p for p in plans if run.of(p)), None)
        if ran is None:  # never shown as the accuracy of a plan that did not run
            secs.append(Section(RUN_SECTION, [Text(OTHER_RUN.format(name="any of these plans").replace(
                "Run any of these plans", "Run one of them"), "note")]))
        else:
            sec = run_section(run)
            sec.blocks.insert(0, Text(f"A run of {ran.name}: its accuracy is that plan's.", "note"))
            secs.append(sec)
    facts = [("Plans", ", ".join(names)), ("Reference (first) plan", names[0]),
             ("MOE targets met with", planner.METHOD_SHORT[method]),
             ("δ for ε of zCDP plans", f"{delta:g}")]
    return _marked(Memo(f"SafeTab-P decision memo: {len(plans)} plans compared", ", ".join(names), _date(now),
                        project_version(), facts, secs, decision_sheet(plans, plans[0], method, delta, profile),
                        geography_outcome(plans, profile, plans[0])), profile)


#: What a memo whose national outcome comes from a confidential profile says first, and its title's mark.
CONFIDENTIAL_MARK = "CONFIDENTIAL"
CONFIDENTIAL_MEMO = ("CONFIDENTIAL: page 1's national outcome is computed without noise from a confidential group-size "
                     "profile (exact counts of real data), so this memo is confidential too: handle it like the data "
                     "itself and never publish it. Made on a synthetic profile (the shipped national one), the memo "
                     "can be shared.")


def _marked(m: Memo, profile) -> Memo:
    """The memo marked CONFIDENTIAL when its national outcome comes from a confidential
    profile: the mark leads its title (page 1's heading, every PDF page's footer, the HTML
    title) and a warning opens the decision sheet. A synthetic profile (or none) leaves it
    as it is."""
    if profile is None or not getattr(profile, "confidential", False):
        return m
    m.title = f"{CONFIDENTIAL_MARK}: {m.title}"
    m.sheet.insert(0, Text(CONFIDENTIAL_MEMO, "warning"))
    return m


def outline(plans: Sequence[Plan], with_run: bool = False) -> list[str]:
    """The titles of the memo of these plans (cheap: nothing computed): the decision
    sheet, then the appendix's sections."""
    if len(plans) == 1:
        titles = list(PLAN_SECTIONS) + ([H_SECTION] if plans[0].h_config is not None else [])
    else:
        names = unique_names([p.name for p in plans])
        titles = list(COMPARISON_SECTIONS) + [f"{n}: {t}" for n, p in zip(names, plans, strict=True)
                                              for t in (*PLAN_SECTIONS, *([H_SECTION] if p.h_config else []))]
    return [SHEET_TITLE] + titles + ([RUN_SECTION] if with_run else [])


def appendix_label(i: int) -> str:
    """The label of the appendix's i-th section (0-based): A, B, ..., Z, AA, AB, ..."""
    out = ""
    i += 1
    while i:
        i, r = divmod(i - 1, 26)
        out = chr(65 + r) + out
    return out


def _date(now: datetime | None) -> str:
    return (now or datetime.now().astimezone()).strftime("%Y-%m-%d %H:%M %Z").strip()
