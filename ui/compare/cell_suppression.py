"""The "Cell suppression" comparison (pure; no Streamlit): legacy cell suppression and
SafeTab-P on the same groups of the same data and plan.

`run` builds both: the legacy release of one population group level and its parent level
(`engine.reports.legacy`: group threshold, primary and complementary suppression, LP audit)
and a seeded SafeTab-P release of the same level (`engine.reports.legacy.safetab_release`).
The other functions turn them into the page's tables, charts and verdict.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from calculators import noise_family
from calculators.levels import ITERATION_LEVEL_NAMES, STAT_LEVEL_AGE_EDGES, PopulationGroupLevel, age_bins
from engine.reports import legacy as lg
from methods import cell_suppression as cs

LEGACY = "Legacy cell suppression"
SAFETAB = "SafeTab-P"
SEX = {1: "Male", 2: "Female"}
SIZE_BINS = [1, 10, 100, 1_000]
SIZE_LABELS = ["1-9 persons", "10-99 persons", "100-999 persons", "1,000+ persons"]
STATUS_COLORS = {"published": "#e8eef6", "primary": "#c0392b", "complementary": "#e07b00",
                 "group below threshold": "#7f7f7f", "solver fallback": "#7d3c98", "noisy": "#d9ecd9",
                 "not published": "#ffffff"}


@dataclass
class Study:
    """Both releases of one level, with what the page needs to describe them."""

    level: PopulationGroupLevel
    legacy: lg.LegacyRelease
    safetab: lg.SafeTabSide
    names: dict[str, str]
    seconds_safetab: float
    moe_cell: int  # 95% MOE of one SafeTab-P stage-2 count (a sex x age cell or a small total)

    @property
    def table(self) -> lg.LegacyTables:
        return self.legacy.tables[0]

    @property
    def seconds_legacy(self) -> float:
        """The time the legacy release took to make (also when it was taken again from `reuse`)."""
        return sum(self.legacy.timings[k] for k in ("counts", "relations", "protect_and_audit"))


def levels_offered(prepared) -> list[PopulationGroupLevel]:
    """The plan's tabulated levels that have regions (both methods can run on them)."""
    return [lvl for lvl in prepared.plans if prepared.inputs.geography.n_regions(lvl.geo) > 0]


def level_label(lvl: PopulationGroupLevel) -> str:
    parent = lg.PARENT.get(lvl.geo)
    linked = f", linked to {parent}" if parent else ""
    return f"{lvl.geo} {ITERATION_LEVEL_NAMES[lvl.iteration_level]}{linked}"


def run(prepared, level: PopulationGroupLevel, options: lg.LegacyOptions, seed: int, progress=None,
        reuse=None) -> Study:
    """The legacy release of `level` (and its parent) and a seeded SafeTab-P release of the
    same groups; `progress(stage, done, total)`; `reuse`: where a legacy release made from
    the same counts and options is kept (`engine.reports.legacy.legacy_release`), e.g. under
    another plan, whose budgets the legacy release does not read."""
    from engine import noise as _noise
    from engine.run import make_noise

    rel = lg.legacy_release(prepared, options, progress, reuse=reuse)
    if progress:
        progress("SafeTab-P release (seeded study)", 0, 1)
    plan = prepared.plans[level]
    noise = make_noise(plan.privacy_defn, _noise.RandomSource.seeded(seed))
    side = lg.safetab_release(prepared, noise, [level])
    law = noise_family.law(noise_family.family_of(plan.privacy_defn))
    names = {c: it.name for c, it in prepared.inputs.specs.iterations.items()}
    return Study(level=level, legacy=rel, safetab=side, names=names,
                 seconds_safetab=side.seconds.get(level, 0.0), moe_cell=int(law.moe(float(plan.stage2))))


# ------------------------------------------------------------------ summary
def _n(x) -> str:
    return f"{int(x):,}"


def seconds(x: float) -> str:
    """A duration as a person reads it."""
    return f"{x * 1000:.0f} ms" if x < 1 else f"{x:.1f} s"


def _pct(a, b) -> str:
    return f"{100 * a / b:.1f}%" if b else "—"


def counts(study: Study, narrow: float) -> dict[str, dict[str, float]]:
    """The numbers behind the summary, per method (same groups: the chosen level)."""
    t = study.table
    s = study.legacy.summary(narrow)[study.level.key]
    st = study.safetab.tables[study.level]
    released = st.released.reshape(-1)
    stat = st.stat_level.reshape(-1)
    truth = st.truth.reshape(-1)
    bins = {k: 2 * len(STAT_LEVEL_AGE_EDGES[k]) for k in STAT_LEVEL_AGE_EDGES}
    cells_sp = sum(bins[k] * int((stat == k).sum()) for k in bins)
    a = s["audit"]
    return {
        LEGACY: {
            "groups": s["groups"], "groups_with_persons": s["groups_with_persons"],
            # a group is published when its total is (LegacyTables.total_published): a total
            # withheld as D by primary, complementary or solver-fallback suppression is not
            "groups_published": s["groups_published"],
            "groups_with_persons_published": s["groups_with_persons_published"],
            "groups_with_table": s["groups_with_table"], "groups_above_threshold": s["groups_above_threshold"],
            "groups_below_threshold": s["groups_below_threshold"],
            "totals_withheld": s["groups_with_persons_total_withheld"],  # of groups with persons
            "cells_published": s["cells_published"], "cells_withheld": s["cells_in_tables_above_threshold"]
            - s["cells_published"], "persons": s["persons_in_groups"],
            "persons_published": s["persons_in_published_groups"],
            "recovered_exactly": a["recovered_exactly"], "recovered_exactly_nonzero": a["recovered_exactly_nonzero"],
            "narrow": a[f"within_{narrow:g}_persons"], "underprotected": a["primaries_underprotected"],
            "group_totals_recovered": a["withheld_group_totals_recovered_exactly"],
            "persons_withheld_cells": s["persons_in_withheld_cells_of_tables_above_threshold"],
            "not_audited": a["not_audited"], "fallback": s["withheld_fallback"],
            "withheld": a["withheld_counts"], "seconds": study.seconds_legacy, "lps": study.legacy.lps,
            "cells_per_table": t.values.shape[1] - 3,
        },
        SAFETAB: {
            "groups": int(truth.size), "groups_with_persons": int((truth > 0).sum()),
            "groups_published": int(released.sum()), "groups_with_table": int((stat >= 1).sum()),
            "cells_published": cells_sp, "cells_withheld": 0, "persons": int(truth.sum()),
            "persons_published": int(truth[released].sum()), "recovered_exactly": 0,
            "recovered_exactly_nonzero": 0, "narrow": 0, "underprotected": 0, "group_totals_recovered": 0,
            "withheld": int((~released).sum()),
            "seconds": study.seconds_safetab, "lps": 0,
        },
    }


def summary(study: Study, narrow: float) -> pd.DataFrame:
    """The side-by-side figures, in words, for the chosen level."""
    c = counts(study, narrow)
    lg_, sp = c[LEGACY], c[SAFETAB]
    rows = [
        ("Population groups in the level", _n(lg_["groups"]), _n(sp["groups"])),
        ("Groups with at least one person", _n(lg_["groups_with_persons"]), _n(sp["groups_with_persons"])),
        ("Groups with a published total", f"{_n(lg_['groups_published'])} ({_pct(lg_['groups_published'], lg_['groups'])})",
         f"{_n(sp['groups_published'])} ({_pct(sp['groups_published'], sp['groups'])})"),
        ("Groups with a sex by age table",
         f"{_n(lg_['groups_with_table'])} ({_pct(lg_['groups_with_table'], lg_['groups'])})",
         f"{_n(sp['groups_with_table'])} ({_pct(sp['groups_with_table'], sp['groups'])})"),
        ("Sex by age cells published", f"{_n(lg_['cells_published'])} exact",
         f"{_n(sp['cells_published'])} with noise"),
        ("Cells withheld in groups above the threshold", _n(lg_["cells_withheld"]), "none (tables come whole)"),
        ("Persons in those withheld cells", _n(lg_["persons_withheld_cells"]), "none"),
        ("Persons in groups with a published total",
         f"{_n(lg_['persons_published'])} of {_n(lg_['persons'])} ({_pct(lg_['persons_published'], lg_['persons'])})",
         f"{_n(sp['persons_published'])} of {_n(sp['persons'])} ({_pct(sp['persons_published'], sp['persons'])})"),
        ("Error of a published count", "none: exact counts",
         f"±{study.moe_cell:,} (95% MOE of a cell or small total)"),
        ("Withheld counts the audit recovers exactly",
         _n(lg_["recovered_exactly"]) + (f" ({_n(lg_['recovered_exactly_nonzero'])} of them above 0)"
                                         if lg_["recovered_exactly"] else ""),
         "none (every count has noise)"),
        (f"Withheld counts pinned within {narrow:g} persons", _n(lg_["narrow"]), "none"),
        ("Totals of withheld groups recovered exactly", _n(lg_["group_totals_recovered"]),
         "none (all counts are noisy)"),
        ("Small counts under-protected", _n(lg_["underprotected"]), "—"),
        ("Computing time", f"{seconds(lg_['seconds'])} ({_n(lg_['lps'])} linear programs)",
         f"{seconds(sp['seconds'])} (noise for the whole level)"),
        ("Complementary suppression", _model(study.legacy.options), "none"),
    ]
    return pd.DataFrame(rows, columns=["Measure", LEGACY, SAFETAB])


def solver_heading(legacy_counts: dict, notes: list[str] = ()) -> str:
    """The heading of the legacy solver's notes: how many counts of the level were
    withheld whole with their part of the table, when some were, and what lets zero
    counts protect others when the capacities were the reason."""
    fb = legacy_counts["fallback"]
    if not fb:
        return "Notes from the legacy method's solver:"
    why = (" With Massell's capacity a zero count never moves, so it cannot protect another; "
           "setting \"How far a count may move\" to Unbounded lets it." if any(cs.INFEASIBLE in n for n in notes)
           else "")
    totals = legacy_counts.get("totals_withheld", {}).get("solver fallback", 0)
    among = (f" Among them are the totals of {totals:,} groups that reach the minimum population: those groups have no "
             "published total." if totals > 1 else
             " Among them is the total of a group that reaches the minimum population: it has no published total."
             if totals else "")
    return (f"{fb:,} counts of this level were withheld whole with their part of the tables (\"solver fallback\" "
            f"below), where the legacy method could not protect the small counts cell by cell.{among}{why}")


def _model(options: lg.LegacyOptions) -> str:
    """The complementary-suppression model in words (Massell's capacity by default)."""
    cap = "Massell's capacity" if options.capacity == "value" else "unbounded capacity"
    return f"sequential LP, {cap}" + (", refinement run" if options.refine else "")


def _totals_withheld(by_reason: dict[str, int]) -> str:
    """The totals of groups that reach the minimum population but are withheld anyway, in
    words: "the totals of 36 more groups that reach the minimum population are withheld:
    36 by the solver fallback"; "" when there are none."""
    n = sum(by_reason.values())
    if not n:
        return ""
    why = lg.reasons_in_words(by_reason)
    if n == 1:
        return f"the total of 1 more group that reaches the minimum population is withheld: {why}"
    return f"the totals of {n:,} more groups that reach the minimum population are withheld: {why}"


def verdict(study: Study, narrow: float) -> str:
    c = counts(study, narrow)
    lg_, sp = c[LEGACY], c[SAFETAB]
    exact, close = lg_["recovered_exactly"], lg_["narrow"]
    if exact or close:
        risk = [f"its own audit recovers {exact:,} withheld counts exactly ({lg_['recovered_exactly_nonzero']:,} of "
                f"them above 0) and pins {close:,} more within {narrow:g} persons"]
    else:
        risk = [f"its audit recovers no withheld count exactly or within {narrow:g} persons, at the price of "
                f"withholding {lg_['cells_withheld']:,} cells in the tables of groups above the threshold and every "
                "group below it"]
    if lg_["underprotected"]:
        risk.append(f"{lg_['underprotected']:,} small counts keep less than the protection asked for")
    if lg_["group_totals_recovered"]:
        risk.append(f"{lg_['group_totals_recovered']:,} totals of withheld groups can be worked out exactly")
    withheld = _totals_withheld(lg_["totals_withheld"])
    return (f"Legacy suppression publishes an exact total for {lg_['groups_with_persons_published']:,} of the "
            f"{lg_['groups_with_persons']:,} groups with persons at this level"
            + (f" ({withheld})" if withheld else "") + "; " + "; ".join(risk) + ". "
            f"SafeTab-P publishes a total for {sp['groups_published']:,} of the {sp['groups']:,} groups of the level "
            f"and a sex by age table for {sp['groups_with_table']:,}, every count with noise of known size "
            f"(±{study.moe_cell:,} at 95% per cell): "
            "no count can be recovered exactly, and its protection does not depend on which other counts happen "
            "to be published.")


# ------------------------------------------------------------------ by group size
def _size_bin(total: np.ndarray) -> np.ndarray:
    return np.searchsorted(np.array(SIZE_BINS), total, side="right") - 1


def detail_by_size(study: Study) -> pd.DataFrame:
    """Share of groups with a published total and with a sex by age table, by true size."""
    t = study.table
    st = study.safetab.tables[study.level]
    truth = t.values[:, -1]
    b = _size_bin(truth)
    sp_rel, sp_stat = st.released.reshape(-1), st.stat_level.reshape(-1)
    rows = []
    for k, label in enumerate(SIZE_LABELS):
        m = b == k
        n = int(m.sum())
        if not n:
            continue
        for method, total, table in ((LEGACY, t.total_published[m], t.table_published[m]),
                                     (SAFETAB, sp_rel[m], sp_stat[m] >= 1)):
            rows.append({"Group size": label, "Method": method, "Groups": n,
                         "Groups with a published total (%)": round(100 * total.mean(), 1),
                         "Groups with a sex by age table (%)": round(100 * table.mean(), 1)})
    return pd.DataFrame(rows)


def size_chart(df: pd.DataFrame) -> go.Figure:
    fig = go.Figure()
    for method, color in ((LEGACY, "#c0392b"), (SAFETAB, "#1f5aa6")):
        d = df[df["Method"] == method]
        fig.add_bar(x=d["Group size"], y=d["Groups with a sex by age table (%)"], name=f"{method}: sex by age table",
                    marker_color=color, customdata=d["Groups"],
                    hovertemplate="%{x}: %{y:.1f}% of %{customdata:,} groups<extra>" + method + "</extra>")
        fig.add_bar(x=d["Group size"], y=d["Groups with a published total (%)"], name=f"{method}: total",
                    marker_color=color, opacity=0.45, customdata=d["Groups"],
                    hovertemplate="%{x}: %{y:.1f}% of %{customdata:,} groups<extra>" + method + "</extra>")
    fig.update_layout(barmode="group", height=380, template="plotly_white", margin=dict(l=60, r=20, t=50, b=100),
                      title=dict(text="What each method publishes, by the group's true size", x=0, font=dict(size=15)),
                      legend=dict(orientation="h", yref="container", y=0, yanchor="bottom", x=0))
    fig.update_xaxes(title_text="True size of the population group")
    fig.update_yaxes(title_text="Share of groups (%)", range=[0, 105])
    return fig


# ------------------------------------------------------------------ audit
def _value_labels(bins) -> list[str]:
    cells = [f"{SEX[s]} {a}-{e}" if e < 115 else f"{SEX[s]} {a}+" for s in (1, 2) for a, e in bins]
    return cells + ["Male, all ages", "Female, all ages", "Total"]


def audit_frame(study: Study) -> pd.DataFrame:
    """Every withheld count of a group that reaches the minimum population (its total
    included), and every withheld count of a group below it that the published counts
    bound, with the interval an attacker derives."""
    labels = np.array(_value_labels(study.legacy.bins))
    rows = []
    for t in study.legacy.tables:
        n_it = len(t.codes)
        above = t.above_threshold  # groups with a table in the release (its counts D or not)
        with np.errstate(invalid="ignore"):
            show = t.withheld & (above[:, None] | np.isfinite(t.high))
        g, v = np.nonzero(show)
        if not g.size:
            continue
        low, high = t.low[g, v], t.high[g, v]
        rows.append(pd.DataFrame({
            "Geography": t.level.geo, "Region": t.regions[g // n_it], "Iteration code": t.codes[g % n_it],
            "Group": [study.names.get(c, c) for c in t.codes[g % n_it]], "Count": labels[v],
            "Why withheld": [lg.STATUS_NAMES[s] for s in t.status[g, v]],
            "Lowest possible": low, "Highest possible": high, "Width": high - low,
            "Recovered exactly": t.exact[g, v], "Protection met": ~t.underprotected[g, v]}))
    if not rows:
        return pd.DataFrame(columns=["Geography", "Region", "Iteration code", "Group", "Count", "Why withheld",
                                     "Lowest possible", "Highest possible", "Width", "Recovered exactly",
                                     "Protection met"])
    return pd.concat(rows, ignore_index=True).sort_values(["Width", "Geography", "Region"], kind="stable")


# ------------------------------------------------------------------ one table
def table_choices(study: Study) -> list[tuple[str, int]]:
    """(label, group index) of the level's groups that reach the minimum population (their
    table is in the release, possibly every count D), those that withhold counts first."""
    t = study.table
    n_it = len(t.codes)
    pub = np.flatnonzero(t.above_threshold)
    withheld = t.withheld[pub].sum(axis=1)
    order = pub[np.lexsort((-t.values[pub, -1], -withheld))]
    out = []
    for g in order.tolist():
        code = t.codes[g % n_it]
        out.append((f"{t.regions[g // n_it]} · {study.names.get(code, code)} ({t.values[g, -1]:,} persons, "
                    f"{int(t.withheld[g].sum())} counts withheld)", g))
    return out


def legacy_grid(study: Study, g: int) -> pd.DataFrame:
    """The legacy table of group g, cell by cell: row, column, count as published, status,
    the audit interval of withheld counts and the true count (a study on synthetic data)."""
    t = study.table
    bins = study.legacy.bins
    cols = [f"{a}-{e}" if e < 115 else f"{a}+" for a, e in bins] + ["All ages"]
    b = len(bins)
    rows = []
    for v in range(t.values.shape[1]):
        if v < 2 * b:
            r, c = SEX[1 + v // b], cols[v % b]
        elif v < 2 * b + 2:
            r, c = SEX[v - 2 * b + 1], "All ages"
        else:
            r, c = "Both sexes", "All ages"
        status = lg.STATUS_NAMES[int(t.status[g, v])]
        shown = str(int(t.values[g, v])) if status == "published" else lg.WITHHELD
        rows.append({"Row": r, "Column": c, "Published": shown, "Status": status,
                     "Lowest possible": t.low[g, v], "Highest possible": t.high[g, v],
                     "True count": int(t.values[g, v])})
    return pd.DataFrame(rows)


def safetab_grid(study: Study, g: int) -> tuple[pd.DataFrame, str]:
    """SafeTab-P's release of the same group: its table at its stat level (noisy cells, sex
    marginals and total as sums), or its total only; and a sentence saying which."""
    st = study.safetab.tables[study.level]
    stat = int(st.stat_level.reshape(-1)[g])
    released = bool(st.released.reshape(-1)[g])
    total = int(st.published.reshape(-1)[g])
    rows = []
    if g in study.safetab.cells.get(study.level, {}):
        k, cells = study.safetab.cells[study.level][g]
        bins = age_bins(STAT_LEVEL_AGE_EDGES[k])
        cols = [f"{a}-{e}" if e < 115 else f"{a}+" for a, e in bins]
        half = len(bins)
        for v, val in enumerate(cells.tolist()):
            rows.append({"Row": SEX[1 + v // half], "Column": cols[v % half], "Published": str(int(val)),
                         "Status": "noisy"})
        for s in (1, 2):
            rows.append({"Row": SEX[s], "Column": "All ages", "Status": "noisy",
                         "Published": str(int(cells[(s - 1) * half:s * half].sum()))})
        rows.append({"Row": "Both sexes", "Column": "All ages", "Published": str(total), "Status": "noisy"})
        note = (f"Stat level {k}: a sex by {len(bins)}-age table with noise, ±{study.moe_cell:,} at 95% per cell; "
                "the marginals and the total are sums of the noisy cells.")
    else:
        rows.append({"Row": "Both sexes", "Column": "All ages", "Published": str(total) if released else "—",
                     "Status": "noisy" if released else "not published"})
        note = ("Only a total for this group (its noisy first-stage count was below the first threshold)."
                if released else "This group's small total was suppressed.")
        if stat < 0:
            note = "A total only (a TotalOnly iteration)."
    return pd.DataFrame(rows), note


def grid_figure(df: pd.DataFrame, title: str) -> go.Figure:
    """The table as a grid, ages down and sexes across: one square per count, coloured by
    status, with the published value (D where withheld) and, for withheld counts, the range
    the audit leaves."""
    ages = list(dict.fromkeys(df["Column"]))
    ages = [a for a in ages if a != "All ages"] + ["All ages"]
    sexes = [r for r in ("Male", "Female", "Both sexes") if r in set(df["Row"])]
    statuses = list(STATUS_COLORS)
    z = np.full((len(ages), len(sexes)), np.nan)
    text = [["" for _ in sexes] for _ in ages]
    hover = [["" for _ in sexes] for _ in ages]
    for rec in df.to_dict("records"):
        i, j = ages.index(rec["Column"]), sexes.index(rec["Row"])
        z[i, j] = statuses.index(rec["Status"])
        lo, hi = rec.get("Lowest possible"), rec.get("Highest possible")
        label = rec["Published"]
        withheld = rec["Published"] == lg.WITHHELD
        if withheld and lo is not None and not np.isnan(lo):
            label += f"  [{_end(lo)}, {_end(hi)}]"
        text[i][j] = label
        hover[i][j] = f"{rec['Row']}, age {rec['Column']}: {rec['Status']}" + (
            f"<br>possible range {_end(lo)} to {_end(hi)}<br>true count {rec['True count']} (synthetic data)"
            if withheld and "True count" in rec else "")
    n = len(statuses)
    scale = []
    for k, s in enumerate(statuses):
        scale += [[k / n, STATUS_COLORS[s]], [(k + 1) / n, STATUS_COLORS[s]]]
    dark = {statuses.index(s) for s in ("primary", "complementary", "group below threshold", "solver fallback")}
    fig = go.Figure(go.Heatmap(z=z, x=sexes, y=ages, colorscale=scale, zmin=0, zmax=n, showscale=False,
                               xgap=2, ygap=2, customdata=hover, hovertemplate="%{customdata}<extra></extra>"))
    # annotations, white on the dark squares; given all at once (add_annotation one by one
    # re-validates every earlier annotation each time: seconds for a 23-age grid)
    notes = [dict(x=sx, y=a, text=text[i][j], showarrow=False,
                  font=dict(size=12, color="white" if z[i, j] in dark else "#1b1b1b"))
             for i, a in enumerate(ages) for j, sx in enumerate(sexes) if text[i][j]]
    fig.update_layout(annotations=notes, title=dict(text=title, x=0, y=0.99, yanchor="top", font=dict(size=14)),
                      height=130 + 26 * len(ages), margin=dict(l=70, r=10, t=75, b=20), template="plotly_white")
    fig.update_yaxes(autorange="reversed", title_text="Age (years)", type="category")
    fig.update_xaxes(side="top", type="category")
    return fig


def _end(v) -> str:
    if v is None or np.isnan(v):
        return "?"
    if np.isinf(v):
        return "∞"
    return f"{v:.0f}" if abs(v - round(v)) < 1e-6 else f"{v:.1f}"


def legend_frame() -> pd.DataFrame:
    return pd.DataFrame({"Colour": list(STATUS_COLORS), "Meaning": [
        "published as an exact count", "withheld: a small count (primary suppression)",
        "withheld so that small counts cannot be worked out (complementary suppression)",
        "withheld: the whole group is below the population threshold",
        "withheld: the solver did not finish, so its part was withheld whole",
        "published with SafeTab-P noise", "not published"]})


# ------------------------------------------------------------------ the paper's own numbers
def _cube(interior) -> tuple[np.ndarray, object]:
    """A 3-D table with every margin (index 2 of an axis is the sum over it) and its relations."""
    a = np.asarray(interior, dtype=float)
    t = np.zeros((3, 3, 3))
    t[:2, :2, :2] = a
    for axis in range(3):
        idx = [slice(None)] * 3
        idx[axis] = 2
        part = [slice(None)] * 3
        part[axis] = slice(0, 2)
        t[tuple(idx)] = t[tuple(part)].sum(axis=axis)
    cell = np.arange(27).reshape(3, 3, 3)
    sums = []
    for axis in range(3):
        for i in range(3):
            for j in range(3):
                line = np.moveaxis(cell, axis, 0)[:, i, j]
                sums.append((int(line[2]), [int(line[0]), int(line[1])]))
    return t.reshape(-1), cs.sum_relations(27, sums)


def paper_numbers() -> pd.DataFrame:
    """Massell's report prints rules rather than worked numbers; each row checks one of
    its statements on a small example computed now by `methods.cell_suppression`."""
    # Sec. 4: the audit's a-priori bounds are [0, grand total].
    t = cs.with_margins([[5, 3], [2, 7]])
    sup = np.zeros(t.shape, bool)
    sup[0, 0] = sup[0, 2] = sup[2, 0] = sup[2, 2] = True
    a = cs.audit_table(t, sup)
    # Sec. 2 ("in the simplest cases, the capacity of a cell is equal to its value") and Sec. 3 (the
    # LP's bounds ub = capacity): zero cells never protect.
    t2 = cs.with_margins([[6, 0, 8], [2, 9, 0]])
    p2 = np.zeros(t2.shape, bool)
    p2[1, 0] = True
    seed = cs.protect_table(t2, p2, 1, method="milp")
    free = cs.protect_table(t2, p2, 1, method="milp", capacity="unbounded")
    zeros = [int((r.complementary & (t2 == 0)).sum()) for r in (seed, free)]
    # Sec. 6: the refinement run keeps a subset that still protects.
    t3 = cs.with_margins([[15, 14, 10, 16], [7, 15, 20, 3], [11, 16, 2, 16]])
    p3 = np.zeros(t3.shape, bool)
    p3[1, 3] = p3[2, 2] = True
    ref = cs.protect_table(t3, p3, 2, refine=True)
    subset = not (ref.complementary & ~ref.first_complementary).any()
    # Sec. 6: frozen cells leave the largest protection they allow (here none).
    frozen = np.zeros(t3.shape, bool)
    frozen[2, [0, 1, 3, 4]] = True
    part = cs.protect_table(t3, p3, 2, frozen=frozen)
    got = part.audit.high[2, 2] - t3[2, 2]
    # Sec. 5 table: the LP protects 3-D tables at the cell level.
    x, rel = _cube([[[1, 9], [8, 6]], [[7, 5], [12, 2]]])
    interior = np.zeros((3, 3, 3), bool)
    interior[:2, :2, :2] = True
    prim = cs.frequency_rule(x, 3) & interior.reshape(-1)
    cube = cs.protect(x, prim, rel, 2)
    rows = [
        ("§4", "Audit bounds: each value between 0 and the grand total", "0 to the grand total (no number)",
         f"this example's grand total {t[-1, -1]:.0f}: largest upper end {np.nanmax(a.high):.0f}; "
         f"x[0,0] in [{a.low[0, 0]:.0f}, {a.high[0, 0]:.0f}]",
         "yes" if np.nanmax(a.high) == t[-1, -1] else "no"),
        ("§2-3", "Capacity = the cell's value: zero cells protect nothing", "0 zero cells",
         f"{zeros[0]} (value); {zeros[1]} with unbounded capacity", "yes" if zeros[0] == 0 else "no"),
        ("§6", "Refinement run: a subset of the first run's complements", "subset, protected",
         f"{int(ref.first_complementary.sum())} → {int(ref.complementary.sum())} cells, "
         f"{'all protected' if ref.audit.protected.all() else 'under-protected'}",
         "yes" if subset and ref.audit.protected.all() else "no"),
        ("§6", "Frozen cells: the largest protection they allow", "partial protection",
         f"{got:.0f} of 2 persons up; noted: {'yes' if part.notes else 'no'}",
         "yes" if part.notes and not (part.suppressed & frozen).any() else "no"),
        ("§5, table", "LP-based suppression protects 3-D tables at the cell level", "Yes",
         f"{'Yes' if cube.audit.protected.all() else 'No'} (a 3 × 3 × 3 table, {int(prim.sum())} primaries)",
         "yes" if cube.audit.protected.all() else "no"),
        ("§6", "Backtracking across linked tables (60 → 100 units)", "60, 100",
         "not needed: linked tables are one system", "—"),
    ]
    return pd.DataFrame(rows, columns=["Where", "The paper says", "Paper's value", "Computed here", "Match"])
