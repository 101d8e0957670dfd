"""Plotly figures and the flow diagram of the app (pure; no Streamlit).

Every chart is built from a DataFrame the page also offers for download, has axis
titles with units and shows the values on hover. Log axes are labelled in full
(`log_ticks`: 1, 2, 5, 10, 20 ..., never plotly's "2, 5" shorthand).

Figures are written as plain plotly dicts and validated once, by ``go.Figure(spec)``
at the end: building them through plotly's object API (update_layout, add_vline,
make_subplots) validates every step and costs several times more, on every redraw.
"""

from __future__ import annotations

import html
import math
import re
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from calculators.config import SafeTabConfig
from calculators.levels import GEO_LEVELS_US
from ui.core.planner import MOE_BOUND, MOE_EXACT, RHO, stability_of

COLORS = ["#1f5aa6", "#e07b00", "#2a9d4b", "#c0392b", "#7d3c98", "#17a2b8", "#8c564b", "#555555"]
TABLE_COLORS = ["#7f7f7f", "#1f5aa6", "#e07b00", "#2a9d4b"]

Spec = dict[str, Any]


# ------------------------------------------------------------------- helpers
def _a(values) -> list:
    """Plain values for plotly (a pandas Series costs plotly a slow type inspection)."""
    return np.asarray(values).tolist()


#: The app's font (Streamlit's sans-serif), for chart text.
FONT = {"family": '"Source Sans", "Source Sans Pro", sans-serif', "size": 13}


#: Every axis of the app's charts: margins sized to the tick labels and title (plotly's
#: automargin), ticks outside (so that the first labels of the two axes do not touch at the
#: corner), and tick labels drawn without plotly's check that each one stays inside the
#: chart ("hide past div", its default): automargin already makes room for them, and that
#: check measures every label in the browser on every redraw, a tenth to a third of the
#: time plotly spends drawing a chart (benchmarks/RESULTS.md, "Charts drawn faster").
AXIS: dict[str, Any] = {"automargin": True, "ticks": "outside", "ticklen": 4, "ticklabeloverflow": "allow"}


def _figure(title: str, x: str, y: str, height: int = 400, legend_room: int = 110, top: int = 50) -> Spec:
    """An empty figure spec with the app's layout. No plotly template, and the app
    draws charts without Streamlit's theme (`ui.core.widgets.plotly`): the layout names the
    app's font and everything else is plotly's plain default."""
    return {
        "data": [],
        "layout": {
            "font": dict(FONT),
            "title": {"text": title, "x": 0, "xanchor": "left", "font": {"size": 15}},
            "height": height,
            "margin": {"l": 60, "r": 20, "t": top, "b": legend_room},
            "legend": {"orientation": "h", "yref": "container", "yanchor": "bottom", "y": 0, "xanchor": "left",
                       "x": 0},
            "hovermode": "closest",
            "xaxis": {"title": {"text": x}, **AXIS},
            "yaxis": {"title": {"text": y}, **AXIS},
            "shapes": [],
            "annotations": [],
        },
    }


def style(fig: go.Figure, title: str, x: str, y: str, height: int = 400, legend_room: int = 110,
          **layout: Any) -> go.Figure:
    """Give a figure built with plotly's object API (the comparison pages' charts) the
    app's layout: the same title, margins, legend and axis titles as `_figure`."""
    lay = _figure(title, x, y, height=height, legend_room=legend_room)["layout"]
    for k in ("shapes", "annotations", "xaxis", "yaxis"):
        lay.pop(k)
    fig.update_layout(**{**lay, **layout})  # the caller's settings (e.g. margin) win
    fig.update_xaxes(title_text=x, **AXIS)
    fig.update_yaxes(title_text=y, **AXIS)
    return fig


def fit(fig: go.Figure) -> go.Figure:
    """The figure with every axis set as `AXIS` says: its margin sized to its tick labels
    and title (plotly's automargin), so that no label is cut off and no title overlaps its
    ticks, whoever built it. The figures of this module already have it (no work is done
    then)."""
    lay = fig.layout
    axes = [k for k in lay if k.startswith(("xaxis", "yaxis"))] if hasattr(lay, "__iter__") else []
    if not axes or any(getattr(lay, k).automargin is not True or getattr(lay, k).ticklabeloverflow != "allow"
                       for k in axes):
        fig.update_xaxes(**AXIS)
        fig.update_yaxes(**AXIS)
    return fig


def _kind(t) -> str:
    if t.type in ("bar", "histogram"):
        return "bars"
    if t.type == "heatmap":
        return "cells"
    return "lines" if "lines" in (t.mode or "lines") else "points"


def _words(text: str | None) -> str | None:
    """A chart text (plotly's pseudo-HTML: <br>, <b>, &lt; for a user's '<') as the words
    a reader sees; plain text, to be shown with `ui.plaintext.plain`."""
    if text is None:
        return None
    return html.unescape(re.sub(r"<[^>]*>", "", re.sub(r"(?i)<br\s*/?>", " ", str(text))))


def summary(fig: go.Figure) -> str:
    """One sentence that says what a chart shows, for readers who cannot see it: its
    title, what is plotted against what, and its series (the numbers are in the chart's
    CSV download beside it). Plain text: series names are users' plan names, so the
    caller shows it with `ui.plaintext.plain` (`ui.core.widgets.plotly` does)."""
    lay = fig.layout
    title = (_words(lay.title.text) or "Chart").rstrip(".")
    x = _words(lay.xaxis.title.text) if lay.xaxis and lay.xaxis.title else None
    y = _words(lay.yaxis.title.text) if lay.yaxis and lay.yaxis.title else None
    by_kind: dict[str, list[str]] = {}
    for t in fig.data:
        if t.showlegend is not False:
            by_kind.setdefault(_kind(t), []).append(_words(t.name) or "")
    parts = []
    for kind, names in by_kind.items():
        named = [n for n in names if n]
        listed = "; ".join(named[:5]) + (f"; and {len(named) - 5} more" if len(named) > 5 else "")
        parts.append(f"{kind} ({listed})" if named else kind)
    what = f": {y} against {x}" if x and y else f" by {x}" if x else ""
    return (f"Chart summary: {title}{what}; it shows {', '.join(parts) or 'no data'}. Its data are in the CSV "
            "download.")


def _two_panels(spec: Spec, titles: tuple[str, str], gap: float = 0.1) -> None:
    """Two side-by-side plots (x/y and x2/y2) with titles above them."""
    w = (1 - gap) / 2
    lay = spec["layout"]
    lay["xaxis"].update(domain=[0, w], anchor="y")
    lay["yaxis"].update(anchor="x")
    lay["xaxis2"] = {"domain": [1 - w, 1], "anchor": "y2", "title": {"text": lay["xaxis"]["title"]["text"]}, **AXIS}
    # the right-hand plot's axis on the right edge, where the margin grows to fit it (in
    # the gap between the plots its title would overlap the left plot at 1280 px)
    lay["yaxis2"] = {"anchor": "x2", "title": {"text": ""}, "side": "right", **AXIS}
    for i, t in enumerate(titles):
        lay["annotations"].append({"text": t, "x": w / 2 if i == 0 else 1 - w / 2, "y": 1.0, "xref": "paper",
                                   "yref": "paper", "xanchor": "center", "yanchor": "bottom", "showarrow": False,
                                   "font": {"size": 14}})


def _vline(spec: Spec, x: float, color: str = "#999999", dash: str = "dash", width: float = 1, axis: str = "") -> None:
    """A vertical line across a plot (axis "" or "2")."""
    spec["layout"]["shapes"].append({"type": "line", "x0": x, "x1": x, "y0": 0, "y1": 1, "xref": f"x{axis}",
                                     "yref": f"y{axis} domain", "line": {"color": color, "dash": dash,
                                                                         "width": width}})


def tick_text(v: float) -> str:
    """A tick label written out in full: 0.001, 0.5, 2, 1,000, 100,000 (never the
    2 / 5 shorthand plotly puts between powers of ten)."""
    if v >= 1:
        return f"{v:,.0f}" if float(v).is_integer() else f"{v:,g}"
    return np.format_float_positional(float(v), trim="-")


def log_ticks(lo: float, hi: float) -> tuple[list[float], list[str]]:
    """Tick values and labels of a log axis over [lo, hi] (lo > 0): 1, 2, 5 in every
    decade when the range spans at most 4 decades, else one tick per decade (every
    other decade beyond 8), each labelled in full by `tick_text`."""
    lo, hi = float(lo), float(hi)
    if not (lo > 0 and hi >= lo and math.isfinite(hi)):
        return [], []
    d0, d1 = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
    span = d1 - d0
    if span <= 4:
        vals = [m * 10.0 ** d for d in range(d0, d1 + 1) for m in (1, 2, 5)]
    else:
        every = 1 if span <= 8 else 2
        vals = [10.0 ** d for d in range(d0, d1 + 1, every)]
    vals = [float(f"{v:.12g}") for v in vals if lo * (1 - 1e-9) <= v <= hi * (1 + 1e-9)]
    return vals, [tick_text(v) for v in vals]


def _log_axis(spec: Spec, axis: str, values) -> None:
    """Make an axis ("xaxis", "yaxis2", ...) logarithmic with ticks labelled in full
    (`log_ticks`) over the positive range of `values`."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v) & (v > 0)]
    ax = spec["layout"].setdefault(axis, {})
    ax["type"] = "log"
    if len(v):
        vals, text = log_ticks(v.min(), v.max())
        ax.update(tickmode="array", tickvals=vals, ticktext=text)


def _done(spec: Spec) -> go.Figure:
    """The spec as a validated plotly figure."""
    return go.Figure(spec)


# ------------------------------------------------------------------- diagram
def flow_dot(config: SafeTabConfig) -> str:
    """Graphviz DOT of the two-stage flow (SPEC §1), with the configuration's numbers.

    Five columns of short labels, drawn left to right: the app draws it at the page's
    width, and a narrow drawing keeps its text at a readable size (about 14 px at 1280
    px wide). The persons are confidential; only T1 and T2 are published."""
    g = config.gamma
    S = stability_of(config)
    n_levels = len(config.tabulated_levels())
    p = config.zero_suppression_chance
    supp = f"suppress small\\ntotals (p = {p:g})" if p > 0 else "no suppression"
    clamp = "clamp at 0" if not config.allow_negative_counts else "negatives kept"
    b = "ε" if config.privacy_defn == "puredp" else "ρ"
    return f"""digraph safetab {{
  rankdir=LR; bgcolor="transparent"; nodesep=0.1; ranksep=0.28; pad=0.02;
  node [shape=box, style="rounded,filled", fillcolor="#eef3fb", color="#1f5aa6",
        fontname="Helvetica", fontsize=14, margin="0.07,0.04"];
  edge [color="#555555", fontname="Helvetica", fontsize=12, arrowsize=0.7];
  groups [label="Persons in\\npopulation groups\\nS = {S} per person\\n{n_levels} levels",
          fillcolor="#fdf1e2", color="#e07b00"];
  stage1 [label="Stage 1\\nnoisy total, {b}·γ\\nγ = {g:g}\\nnot published"];
  level [label="Compare\\nwith Θ₁,\\nΘ₂, Θ₃", fillcolor="#fff8d6", color="#b08d00"];
  t0 [label="total", fillcolor="#f2f2f2", color="#7f7f7f"];
  t1 [label="sex × age4"];
  t2 [label="sex × age9"];
  t3 [label="sex × age23"];
  out [label="Post-processing:\\n{clamp},\\n{supp}\\n→ T1, T2 published", fillcolor="#e6f4ea",
       color="#2a9d4b"];
  groups -> stage1 -> level;
  level -> t0 [label="0"]; level -> t1 [label="1"]; level -> t2 [label="2"]; level -> t3 [label="3"];
  subgraph cluster_stage2 {{ label="Stage 2: {b}·(1−γ)"; fontname="Helvetica"; fontsize=13;
    color="#bbbbbb"; style=dashed; margin=6; t0; t1; t2; t3; }}
  t0 -> out; t1 -> out; t2 -> out; t3 -> out;
}}"""


# --------------------------------------------------------------- planner
_ZCDP_UNITS = {"budget": "ρ", "law": "discrete Gaussian", "puredp": False}


def moe_vs_rho(curve: pd.DataFrame, points: pd.DataFrame, method_label: str,
               units: dict | None = None) -> go.Figure:
    """Stage-2 cell MOE against the level rho (epsilon under pure DP: `units` from
    `planner.units`), with the configuration's levels; both axes logarithmic, ticks
    labelled in full."""
    u = units or _ZCDP_UNITS
    b = u["budget"]
    kind = "pure DP" if u["puredp"] else "zCDP"
    spec = _figure(f"MOE of one published count against the level budget {b}",
                   f"level budget {b} ({kind}, log scale; smaller = more private)",
                   "95% margin of error (persons, log scale)")
    x = _a(curve[RHO])
    spec["data"] += [
        {"type": "scatter", "x": x, "y": _a(curve[MOE_EXACT]), "mode": "lines", "name": f"exact {u['law']} MOE",
         "line": {"color": COLORS[0], "shape": "hv"},
         "hovertemplate": f"{b} = %{{x:.4g}}<br>exact MOE = %{{y}} persons<extra></extra>"},
        {"type": "scatter", "x": x, "y": _a(curve[MOE_BOUND]), "mode": "lines", "name": "design bound ⌊1.96σ⌋",
         "line": {"color": COLORS[1], "dash": "dot", "shape": "hv"},
         "hovertemplate": f"{b} = %{{x:.4g}}<br>⌊1.96σ⌋ = %{{y}} persons<extra></extra>"},
    ]
    if len(points):
        spec["data"].append({
            "type": "scatter", "x": _a(points[RHO]), "y": _a(points["MOE"]), "mode": "markers",
            "name": f"levels of this plan ({method_label})",
            "marker": {"size": 11, "color": COLORS[3], "symbol": "diamond", "line": {"width": 1, "color": "white"}},
            "customdata": [[v] for v in points["Levels"]],
            "hovertemplate": f"%{{customdata[0]}}<br>{b} = %{{x:.4g}}<br>MOE = %{{y}} persons<extra></extra>"})
    _log_axis(spec, "xaxis", x)
    _log_axis(spec, "yaxis", np.concatenate([curve[MOE_EXACT], curve[MOE_BOUND]]).astype(float))
    return _done(spec)


def race_multiplicity(long: pd.DataFrame, units: dict | None = None) -> go.Figure:
    """Stage-2 cell MOE against race multiplicity r, one line per rho group."""
    b = (units or _ZCDP_UNITS)["budget"]
    spec = _figure(f"What race multiplicity r does to every MOE ({b} and γ fixed)",
                   "race multiplicity r (max race codes)", "MOE of one published count (persons)", height=380)
    for i, (name, sub) in enumerate(long.groupby("Levels", sort=False)):
        rho = sub[RHO].iloc[0]
        spec["data"].append({
            "type": "scatter", "x": _a(sub["r"]), "y": _a(sub["MOE"]), "mode": "lines+markers",
            "name": f"{b} = {rho:.4g} ({_count_levels(name)})", "line": {"color": COLORS[i % len(COLORS)]},
            "customdata": _a(sub[["S", "Levels"]].astype(object)),
            "hovertemplate": "r = %{x}, S = %{customdata[0]}<br>MOE = %{y} persons<br>%{customdata[1]}"
                             "<extra></extra>"})
        cur = sub[sub["current"]]
        if len(cur):
            spec["data"].append({
                "type": "scatter", "x": _a(cur["r"]), "y": _a(cur["MOE"]), "mode": "markers", "showlegend": False,
                "marker": {"size": 14, "color": "rgba(0,0,0,0)", "line": {"width": 2, "color": "black"}},
                "hoverinfo": "skip"})
    spec["layout"]["xaxis"]["dtick"] = 1
    return _done(spec)


def _count_levels(name: str) -> str:
    """'USA, STATE Detailed; COUNTY Regional' -> '3 levels'."""
    n = sum(len(part.rsplit(" ", 1)[0].split(",")) for part in name.split("; "))
    return f"{n} level{'s' if n != 1 else ''}"


# --------------------------------------------------------------- adaptive
def _threshold_lines(spec: Spec, thresholds, log_x: bool) -> None:
    """Dashed vertical lines at the thresholds, labelled above the plot (a log axis
    takes the label position in log10 units)."""
    for j, t in enumerate(thresholds, start=1):
        _vline(spec, t, "#555555")
        if t > 0 or not log_x:
            spec["layout"]["annotations"].append({
                "x": math.log10(t) if log_x else t, "y": 1.0, "yref": "paper", "yanchor": "bottom",
                "text": f"Θ{j} = {t:,}", "showarrow": False, "font": {"size": 11, "color": "#555555"}})


def stat_level_probabilities(df: pd.DataFrame, thresholds, log_x: bool = True) -> go.Figure:
    """P(each table is published) against the true group size (log x)."""
    spec = _figure("Which table a group gets, by its true size",
                   f"true population group size (persons{', log scale' if log_x else ''})", "probability",
                   height=380, top=70)
    n = df.columns[0]
    x = _a(df[n])
    for j, col in enumerate(df.columns[1:]):
        spec["data"].append({
            "type": "scatter", "x": x, "y": _a(df[col]), "mode": "lines", "name": col[2:-1],
            "line": {"color": TABLE_COLORS[j], "width": 2},
            "hovertemplate": "true size %{x:,}<br>" + col + " = %{y:.3f}<extra></extra>"})
    _threshold_lines(spec, thresholds, log_x)
    if log_x:
        _log_axis(spec, "xaxis", x)
    spec["layout"]["yaxis"]["range"] = [-0.02, 1.02]
    return _done(spec)


def expected_moe(df: pd.DataFrame, thresholds, log_x: bool = True) -> go.Figure:
    """Expected MOE (persons) and relative MOE (%) against the true group size."""
    x_title = f"true group size (persons{', log scale' if log_x else ''})"
    spec = _figure("Expected accuracy of what is published, by true group size", x_title, "95% MOE (persons)",
                   height=420, top=85)
    _two_panels(spec, ("MOE in persons", "Relative MOE of a published cell"))
    n = df.columns[0]
    x = _a(df[n])
    rel = df["Expected relative MOE of a published cell (%)"]
    spec["data"] += [
        {"type": "scatter", "x": x, "y": _a(df["Expected MOE of the group total T1"]), "mode": "lines",
         "name": "total T1 (expected)", "line": {"color": COLORS[0], "width": 2},
         "hovertemplate": "true size %{x:,}<br>expected T1 MOE = %{y:.1f} persons<extra></extra>"},
        {"type": "scatter", "x": x, "y": _a(df["Expected MOE of one published cell"]), "mode": "lines",
         "name": "one published cell", "line": {"color": COLORS[1], "width": 2, "dash": "dot"},
         "hovertemplate": "true size %{x:,}<br>cell MOE = %{y:.1f} persons<extra></extra>"},
        {"type": "scatter", "x": x, "y": _a(rel), "mode": "lines", "name": "relative MOE of a cell (expected)",
         "line": {"color": COLORS[2], "width": 2}, "xaxis": "x2", "yaxis": "y2",
         "hovertemplate": "true size %{x:,}<br>relative cell MOE = %{y:.1f}%<extra></extra>"},
    ]
    for axis in ("", "2"):
        for t in thresholds:
            _vline(spec, t, axis=axis)
    lay = spec["layout"]
    lay["yaxis"]["rangemode"] = "tozero"
    lay["yaxis2"]["title"]["text"] = "MOE / expected cell count (%, log scale)"
    if log_x:
        _log_axis(spec, "xaxis", x)
        _log_axis(spec, "xaxis2", x)
    _log_axis(spec, "yaxis2", rel)
    return _done(spec)


# ------------------------------------------------------------- suppression
def _x(df: pd.DataFrame, as_fraction: bool):
    if as_fraction:
        return _a(df["n / T"]), "true count as a fraction of T (n / T)", "n/T = %{x:.2f}"
    return _a(df["True count n"]), "true count n (persons)", "n = %{x}"


def _mark_n(spec: Spec, xn: float, points: list[tuple[float, str]]) -> None:
    """The chosen true count n: a dotted vertical line and a ring on each curve
    (points: (y, axis suffix "" or "2"))."""
    for y, axis in points:
        spec["data"].append({
            "type": "scatter", "x": [xn], "y": [y], "mode": "markers", "showlegend": False, "hoverinfo": "skip",
            "xaxis": f"x{axis}", "yaxis": f"y{axis}",
            "marker": {"size": 12, "color": "rgba(0,0,0,0)", "line": {"width": 2, "color": "black"}}})
    for axis in sorted({a for _, a in points}):
        _vline(spec, xn, "#333333", "dot", axis=axis)


def suppression_probability(df: pd.DataFrame, t: int, as_fraction: bool = False,
                            n: int | None = None, at_n: dict | None = None) -> go.Figure:
    """P(a stat-level-0 total is suppressed) against the true count, with the
    threshold T and (optionally) the chosen true count n (`at_n`: `analysis.value_at`)."""
    x, title, hx = _x(df, as_fraction)
    spec = _figure("Chance that a total is suppressed", title, "probability", height=360)
    spec["data"].append({
        "type": "scatter", "x": x, "y": _a(df["P(suppressed)"]), "mode": "lines",
        "name": "P(suppressed)", "line": {"color": COLORS[3], "width": 2},
        "customdata": [[v] for v in _a(df["True count n"])],
        "hovertemplate": hx + " (n = %{customdata[0]})<br>P(suppressed) = %{y:.4f}<extra></extra>"})
    tx = 1 if as_fraction else t
    _vline(spec, tx)
    spec["layout"]["annotations"].append({"x": tx, "y": 1, "yref": "y domain", "text": f"T = {t}",
                                          "showarrow": False, "xanchor": "left", "yanchor": "top"})
    if n is not None and at_n is not None:
        xn = (n / t) if as_fraction and t > 0 else n
        _mark_n(spec, xn, [(at_n["P(suppressed)"], "")])
        spec["layout"]["annotations"].append({"x": xn, "y": at_n["P(suppressed)"], "text": f"n = {n}",
                                              "showarrow": True, "arrowhead": 0, "ax": 30, "ay": -25,
                                              "font": {"size": 12}})
    spec["layout"]["yaxis"]["range"] = [-0.02, 1.02]
    return _done(spec)


def release_bias(df: pd.DataFrame, t: int, as_fraction: bool = False,
                 n: int | None = None, at_n: dict | None = None) -> go.Figure:
    """Bias of a released count and the expected released / published values against
    the true count, with (optionally) the chosen true count n marked."""
    x, title, hx = _x(df, as_fraction)
    spec = _figure("Bias that suppression puts on what is released", title, "bias (persons)", height=400, top=85)
    _two_panels(spec, ("Bias of a released count", "Expected value against the truth"), gap=0.14)
    spec["layout"]["yaxis2"]["title"]["text"] = "persons"
    cd = [[v] for v in _a(df["True count n"])]
    spec["data"] += [
        {"type": "scatter", "x": x, "y": _a(df["Bias of a released count"]), "mode": "lines",
         "name": "bias of a released count", "line": {"color": COLORS[1], "width": 2}, "customdata": cd,
         "hovertemplate": hx + " (n = %{customdata[0]})<br>bias = %{y:.2f} persons<extra></extra>"},
        {"type": "scatter", "x": x, "y": _a(df["Expected released value"]), "mode": "lines",
         "name": "expected released value", "line": {"color": COLORS[0], "width": 2}, "customdata": cd,
         "xaxis": "x2", "yaxis": "y2",
         "hovertemplate": hx + " (n = %{customdata[0]})<br>E[released] = %{y:.1f}<extra></extra>"},
        {"type": "scatter", "x": x, "y": _a(df["Expected published value (suppressed = 0)"]), "mode": "lines",
         "name": "expected published value (suppressed read as 0)",
         "line": {"color": COLORS[2], "width": 2, "dash": "dot"}, "customdata": cd, "xaxis": "x2", "yaxis": "y2",
         "hovertemplate": hx + " (n = %{customdata[0]})<br>E[published] = %{y:.1f}<extra></extra>"},
        {"type": "scatter", "x": x, "y": _a(df["True count n"]), "mode": "lines", "name": "true count (no bias)",
         "line": {"color": "#999999", "width": 1, "dash": "dash"}, "hoverinfo": "skip", "xaxis": "x2",
         "yaxis": "y2"},
    ]
    if n is not None and at_n is not None:
        xn = (n / t) if as_fraction and t > 0 else n
        _mark_n(spec, xn, [(at_n["Bias of a released count"], ""), (at_n["Expected released value"], "2"),
                           (at_n["Expected published value"], "2")])
    return _done(spec)


# -------------------------------------------------------------------- run
def _geo_marker(geo: str, kind: str) -> dict:
    """The marker of a geography level's points (`kind` "points") or bars ("bars"): the
    colour of its place in GEO_LEVELS_US; for a Puerto Rico level, its US counterpart's
    colour with crosses instead of dots, or hatched bars, so that the 10 levels of a run
    all look different (one palette of 8 colours could not do that)."""
    base = geo.removeprefix("PR-")
    i = GEO_LEVELS_US.index(base) if base in GEO_LEVELS_US else len(GEO_LEVELS_US)
    marker = {"color": COLORS[i % len(COLORS)]}
    if geo != base:
        marker |= {"symbol": "x"} if kind == "points" else {"pattern": {"shape": "/", "solidity": 0.45}}
    return marker


def truth_vs_release(df: pd.DataFrame, log: bool = False) -> go.Figure:
    """Released T1 against the true T1 (confidential), one colour per geography level."""
    spec = _figure("Released group totals (T1) against the true counts (confidential)",
                   "true count (persons; confidential)", "released count (persons)", height=440)
    top = float(max(df["True"].max(), df["Released"].max(), 1)) if len(df) else 1.0
    for geo, sub in df.groupby("Geography", sort=False):
        spec["data"].append({
            "type": "scattergl", "x": _a(sub["True"]), "y": _a(sub["Released"]), "mode": "markers", "name": geo,
            "marker": {"size": 5, "opacity": 0.6, **_geo_marker(str(geo), "points")},
            "customdata": _a(sub[["Region", "Iteration", "Error"]].astype(object)),
            "hovertemplate": "%{customdata[0]} · %{customdata[1]}<br>true = %{x:,}<br>released = %{y:,}"
                             "<br>error = %{customdata[2]:+,}<extra></extra>"})
    lo = 1 if log else 0
    spec["data"].append({"type": "scatter", "x": [lo, top], "y": [lo, top], "mode": "lines",
                         "name": "released = true", "line": {"color": "#999999", "dash": "dash"},
                         "hoverinfo": "skip"})
    if log:
        vals = np.concatenate([df["True"], df["Released"]]).astype(float) if len(df) else np.array([1.0])
        spec["layout"]["xaxis"]["title"]["text"] = "true count (persons, log scale; confidential)"
        spec["layout"]["yaxis"]["title"]["text"] = "released count (persons, log scale)"
        _log_axis(spec, "xaxis", vals)
        _log_axis(spec, "yaxis", vals)
    return _done(spec)


def error_histogram(df: pd.DataFrame) -> go.Figure:
    """Errors of the released totals (released − true), one colour per geography level."""
    spec = _figure("Errors of the released totals (released − true)", "error (persons)", "number of T1 counts",
                   height=440)
    spec["layout"]["barmode"] = "overlay"
    for geo, sub in df.groupby("Geography", sort=False):
        spec["data"].append({"type": "histogram", "x": _a(sub["Error"]), "name": geo, "opacity": 0.65,
                             "marker": _geo_marker(str(geo), "bars"),
                             "hovertemplate": "error %{x}<br>%{y} counts<extra></extra>"})
    return _done(spec)


def accuracy(df: pd.DataFrame) -> go.Figure:
    """Observed 95th percentile of |error| (bars) beside the predicted exact 95% MOE
    (ticks), one row per geography, iteration level and group size, in the order of
    `analysis.accuracy_view` (geography order, Regional before Detailed, small groups
    first), with plain labels."""
    spec = _figure("Observed error against the predicted MOE", "persons", "", height=max(320, 24 * len(df) + 150))
    y = _a(df["Groups"])
    spec["data"] += [
        {"type": "bar", "y": y, "x": _a(df["Observed 95th percentile of |error|"]), "orientation": "h",
         "name": "observed: 95th percentile of |released − true|", "marker": {"color": COLORS[0]},
         "customdata": [[v] for v in _a(df["Counts compared"])],
         "hovertemplate": "%{y}<br>observed = %{x} persons<br>%{customdata[0]:,} counts<extra></extra>"},
        {"type": "scatter", "y": y, "x": _a(df["Predicted 95% MOE (exact)"]), "mode": "markers",
         "name": "predicted 95% MOE (exact)",
         "marker": {"symbol": "line-ns-open", "size": 16, "color": COLORS[3], "line": {"width": 3,
                                                                                      "color": COLORS[3]}},
         "hovertemplate": "%{y}<br>predicted = %{x} persons<extra></extra>"},
    ]
    spec["layout"]["yaxis"].update(autorange="reversed", tickfont={"size": 12}, categoryorder="array",
                                   categoryarray=y)
    return _done(spec)
