"""Plotly figures and the flow diagram of the app (pure; no Streamlit).

Every chart is built from a DataFrame the page also offers for download, has axis
titles with units and shows the values on hover.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from calculators.config import SafeTabConfig
from ui.planner import MOE_BOUND, MOE_EXACT, RHO, stability_of

COLORS = ["#1f5aa6", "#e07b00", "#2a9d4b", "#c0392b", "#7d3c98", "#17a2b8", "#8c564b", "#555555"]
TABLE_COLORS = ["#7f7f7f", "#1f5aa6", "#e07b00", "#2a9d4b"]


def _layout(fig: go.Figure, title: str, x: str, y: str, height: int = 400, legend_room: int = 110,
            **kw) -> go.Figure:
    # No plotly template: the app draws charts in Streamlit's theme, and building a
    # template costs more than the rest of a figure.
    fig.update_layout(
        title=dict(text=title, x=0, xanchor="left", font=dict(size=15)),
        height=height,
        margin=dict(l=60, r=20, t=50, b=legend_room),
        legend=dict(orientation="h", yref="container", yanchor="bottom", y=0, xanchor="left", x=0),
        hovermode="closest",
        **kw,
    )
    fig.update_xaxes(title_text=x)
    fig.update_yaxes(title_text=y)
    return fig


def _a(values) -> np.ndarray:
    """Plain arrays for plotly (a pandas Series costs plotly a slow type inspection)."""
    return np.asarray(values)


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
        steps = (1, 2, 5)
        vals = [m * 10.0 ** d for d in range(d0, d1 + 1) for m in steps]
    else:
        every = 1 if span <= 8 else 2
        vals = [10.0 ** d for d in range(d0, d1 + 1, every)]
    vals = [float(f"{v:.12g}") for v in vals if lo * (1 - 1e-9) <= v <= hi * (1 + 1e-9)]
    return vals, [tick_text(v) for v in vals]


def _log_axis(fig: go.Figure, axis: str, values, **selector) -> None:
    """Make an axis logarithmic with ticks labelled in full (`log_ticks`) over the
    positive range of `values`."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v) & (v > 0)]
    update = fig.update_xaxes if axis == "x" else fig.update_yaxes
    if not len(v):
        update(type="log", **selector)
        return
    vals, text = log_ticks(v.min(), v.max())
    update(type="log", tickmode="array", tickvals=vals, ticktext=text, **selector)


# ------------------------------------------------------------------- diagram
def flow_dot(config: SafeTabConfig) -> str:
    """Graphviz DOT of the two-stage flow (SPEC §1), with the configuration's numbers.

    Drawn left to right in a shape close to the page's (about 3:1), with short labels,
    so that the app's full-width drawing keeps the text readable (about 14 px)."""
    g = config.gamma
    S = stability_of(config)
    n_levels = len(config.tabulated_levels())
    p = config.zero_suppression_chance
    supp = f"suppress small\\ntotals (p = {p:g})" if p > 0 else "no suppression\\n(p = 0)"
    clamp = "clamp at 0" if not config.allow_negative_counts else "negatives kept"
    b = "ε" if config.privacy_defn == "puredp" else "ρ"
    return f"""digraph safetab {{
  rankdir=LR; bgcolor="transparent"; nodesep=0.08; ranksep=0.22; pad=0.05;
  node [shape=box, style="rounded,filled", fillcolor="#eef3fb", color="#1f5aa6",
        fontname="Helvetica", fontsize=13, margin="0.08,0.04"];
  edge [color="#555555", fontname="Helvetica", fontsize=11, arrowsize=0.7];
  persons [label="Persons\\n(confidential)", fillcolor="#fdf1e2", color="#e07b00"];
  groups [label="Population\\ngroups\\nS = {S} per person\\n{n_levels} levels"];
  stage1 [label="Stage 1\\nnoisy total\\n{b}·γ, γ = {g:g}"];
  level [label="Θ₁ ≤ Θ₂ ≤ Θ₃", shape=diamond, fillcolor="#fff8d6", color="#b08d00", margin="0.02,0.02"];
  t0 [label="total", fillcolor="#f2f2f2", color="#7f7f7f"];
  t1 [label="sex × age4"];
  t2 [label="sex × age9"];
  t3 [label="sex × age23"];
  post [label="Post-processing\\n{clamp},\\n{supp}"];
  out [label="T1 totals\\nT2 sex × age\\n(published)", fillcolor="#e6f4ea", color="#2a9d4b"];
  persons -> groups; groups -> stage1;
  stage1 -> level [label="not\\npublished"];
  level -> t0 [label="0"]; level -> t1 [label="1"]; level -> t2 [label="2"]; level -> t3 [label="3"];
  subgraph cluster_stage2 {{ label="Stage 2: {b}·(1−γ)"; fontname="Helvetica"; fontsize=12;
    color="#bbbbbb"; style=dashed; margin=6; t0; t1; t2; t3; }}
  t0 -> post; t1 -> post; t2 -> post; t3 -> post;
  post -> out;
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
    fig = go.Figure()
    x = _a(curve[RHO])
    fig.add_trace(go.Scatter(
        x=x, y=_a(curve[MOE_EXACT]), mode="lines", name=f"exact {u['law']} MOE",
        line=dict(color=COLORS[0], shape="hv"),
        hovertemplate=f"{b} = %{{x:.4g}}<br>exact MOE = %{{y}} persons<extra></extra>"))
    fig.add_trace(go.Scatter(
        x=x, y=_a(curve[MOE_BOUND]), mode="lines", name="design bound ⌊1.96σ⌋",
        line=dict(color=COLORS[1], dash="dot", shape="hv"),
        hovertemplate=f"{b} = %{{x:.4g}}<br>⌊1.96σ⌋ = %{{y}} persons<extra></extra>"))
    if len(points):
        fig.add_trace(go.Scatter(
            x=_a(points[RHO]), y=_a(points["MOE"]), mode="markers", name=f"levels of this plan ({method_label})",
            marker=dict(size=11, color=COLORS[3], symbol="diamond", line=dict(width=1, color="white")),
            customdata=_a(points[["Levels"]]),
            hovertemplate=f"%{{customdata[0]}}<br>{b} = %{{x:.4g}}<br>MOE = %{{y}} persons<extra></extra>"))
    kind = "pure DP" if u["puredp"] else "zCDP"
    _layout(fig, f"MOE of one published count against the level budget {b}",
            f"level budget {b} ({kind}, log scale; smaller = more private)",
            "95% margin of error (persons, log scale)")
    _log_axis(fig, "x", x)
    ys = np.concatenate([_a(curve[MOE_EXACT]), _a(curve[MOE_BOUND])]).astype(float)
    _log_axis(fig, "y", ys)
    return fig


def race_multiplicity(long: pd.DataFrame, units: dict | None = None) -> go.Figure:
    """Stage-2 cell MOE against race multiplicity r, one line per rho group."""
    b = (units or _ZCDP_UNITS)["budget"]
    fig = go.Figure()
    for i, (name, sub) in enumerate(long.groupby("Levels", sort=False)):
        rho = sub[RHO].iloc[0]
        fig.add_trace(go.Scatter(
            x=_a(sub["r"]), y=_a(sub["MOE"]), mode="lines+markers",
            name=f"{b} = {rho:.4g} ({_count_levels(name)})",
            line=dict(color=COLORS[i % len(COLORS)]), customdata=_a(sub[["S", "Levels"]]),
            hovertemplate="r = %{x}, S = %{customdata[0]}<br>MOE = %{y} persons<br>%{customdata[1]}"
                          "<extra></extra>"))
        cur = sub[sub["current"]]
        if len(cur):
            fig.add_trace(go.Scatter(
                x=_a(cur["r"]), y=_a(cur["MOE"]), mode="markers", showlegend=False,
                marker=dict(size=14, color="rgba(0,0,0,0)", line=dict(width=2, color="black")),
                hoverinfo="skip"))
    _layout(fig, f"What race multiplicity r does to every MOE ({b} and γ fixed)",
            "race multiplicity r (max race codes)", "MOE of one published count (persons)", height=380)
    fig.update_xaxes(dtick=1)
    return fig


def _count_levels(name: str) -> str:
    """'USA, STATE Detailed; COUNTY Regional' -> '3 levels'."""
    n = sum(len(part.rsplit(" ", 1)[0].split(",")) for part in name.split("; "))
    return f"{n} level{'s' if n != 1 else ''}"


# --------------------------------------------------------------- adaptive
def _threshold_lines(fig: go.Figure, thresholds, log_x: bool) -> None:
    """Dashed vertical lines at the thresholds, labelled above the plot (a log axis
    takes the label position in log10 units)."""
    for j, t in enumerate(thresholds, start=1):
        fig.add_vline(x=t, line=dict(color="#555555", dash="dash", width=1))
        if t > 0 or not log_x:
            fig.add_annotation(x=math.log10(t) if log_x else t, y=1.0, yref="paper", yanchor="bottom",
                               text=f"Θ{j} = {t:,}", showarrow=False, font=dict(size=11, color="#555555"))


def stat_level_probabilities(df: pd.DataFrame, thresholds, log_x: bool = True) -> go.Figure:
    """P(each table is published) against the true group size (log x)."""
    fig = go.Figure()
    n = df.columns[0]
    x = _a(df[n])
    for j, col in enumerate(df.columns[1:]):
        fig.add_trace(go.Scatter(
            x=x, y=_a(df[col]), mode="lines", name=col[2:-1], line=dict(color=TABLE_COLORS[j], width=2),
            hovertemplate="true size %{x:,}<br>" + col + " = %{y:.3f}<extra></extra>"))
    _threshold_lines(fig, thresholds, log_x)
    _layout(fig, "Which table a group gets, by its true size",
            f"true population group size (persons{', log scale' if log_x else ''})", "probability", height=380)
    fig.update_layout(margin=dict(t=70))
    if log_x:
        _log_axis(fig, "x", x)
    fig.update_yaxes(range=[-0.02, 1.02])
    return fig


def expected_moe(df: pd.DataFrame, thresholds, log_x: bool = True) -> go.Figure:
    """Expected MOE (persons) and relative MOE (%) against the true group size."""
    n = df.columns[0]
    x = _a(df[n])
    rel = _a(df["Expected relative MOE of a published cell (%)"])
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.1, subplot_titles=(
        "MOE in persons", "Relative MOE of a published cell"))
    fig.add_trace(go.Scatter(
        x=x, y=_a(df["Expected MOE of the group total T1"]), mode="lines", name="total T1 (expected)",
        line=dict(color=COLORS[0], width=2),
        hovertemplate="true size %{x:,}<br>expected T1 MOE = %{y:.1f} persons<extra></extra>"), row=1, col=1)
    fig.add_trace(go.Scatter(
        x=x, y=_a(df["Expected MOE of one published cell"]), mode="lines", name="one published cell",
        line=dict(color=COLORS[1], width=2, dash="dot"),
        hovertemplate="true size %{x:,}<br>cell MOE = %{y:.1f} persons<extra></extra>"), row=1, col=1)
    fig.add_trace(go.Scatter(
        x=x, y=rel, mode="lines",
        name="relative MOE of a cell (expected)", line=dict(color=COLORS[2], width=2),
        hovertemplate="true size %{x:,}<br>relative cell MOE = %{y:.1f}%<extra></extra>"), row=1, col=2)
    for col in (1, 2):
        for t in thresholds:
            fig.add_vline(x=t, line=dict(color="#999999", dash="dash", width=1), row=1, col=col)
    _layout(fig, "Expected accuracy of what is published, by true group size", "", "", height=420)
    fig.update_layout(margin=dict(t=85))
    fig.update_xaxes(title_text=f"true group size (persons{', log scale' if log_x else ''})")
    if log_x:
        _log_axis(fig, "x", x)
    fig.update_yaxes(title_text="95% MOE (persons)", row=1, col=1, rangemode="tozero")
    fig.update_yaxes(title_text="MOE / expected cell count (%, log scale)", row=1, col=2)
    _log_axis(fig, "y", rel, row=1, col=2)
    return fig


# ------------------------------------------------------------- suppression
def _x(df: pd.DataFrame, as_fraction: bool):
    if as_fraction:
        return _a(df["n / T"]), "true count as a fraction of T (n / T)", "n/T = %{x:.2f}"
    return _a(df["True count n"]), "true count n (persons)", "n = %{x}"


def _mark_n(fig: go.Figure, n: int | None, t: int, as_fraction: bool, points: list[tuple[float, int, int]]) -> None:
    """The chosen true count n: a dotted vertical line and a ring on each curve
    (points: (y, row, col))."""
    if n is None:
        return
    xn = (n / t) if as_fraction and t > 0 else n
    for y, row, col in points:
        fig.add_trace(go.Scatter(
            x=[xn], y=[y], mode="markers", showlegend=False, hoverinfo="skip",
            marker=dict(size=12, color="rgba(0,0,0,0)", line=dict(width=2, color="black"))), row=row, col=col)
    fig.add_vline(x=xn, line=dict(color="#333333", dash="dot", width=1))


def suppression_probability(df: pd.DataFrame, t: int, as_fraction: bool = False,
                            n: int | None = None, at_n: dict | None = None) -> go.Figure:
    """P(a stat-level-0 total is suppressed) against the true count, with the
    threshold T and (optionally) the chosen true count n (`at_n`: `analysis.value_at`)."""
    x, title, hx = _x(df, as_fraction)
    fig = make_subplots(rows=1, cols=1)
    fig.add_trace(go.Scatter(
        x=x, y=_a(df["P(suppressed)"]), mode="lines+markers", marker=dict(size=4), name="P(suppressed)",
        line=dict(color=COLORS[3], width=2), customdata=_a(df[["True count n"]]),
        hovertemplate=hx + " (n = %{customdata[0]})<br>P(suppressed) = %{y:.4f}<extra></extra>"))
    fig.add_vline(x=1 if as_fraction else t, line=dict(color="#999999", dash="dash"),
                  annotation_text=f"T = {t}", annotation_position="top right")
    if n is not None and at_n is not None:
        _mark_n(fig, n, t, as_fraction, [(at_n["P(suppressed)"], 1, 1)])
        fig.add_annotation(x=(n / t) if as_fraction and t > 0 else n, y=at_n["P(suppressed)"],
                           text=f"n = {n}", showarrow=True, arrowhead=0, ax=30, ay=-25, font=dict(size=12))
    _layout(fig, "Chance that a total is suppressed", title, "probability", height=360)
    fig.update_yaxes(range=[-0.02, 1.02])
    return fig


def release_bias(df: pd.DataFrame, t: int, as_fraction: bool = False,
                 n: int | None = None, at_n: dict | None = None) -> go.Figure:
    """Bias of a released count and the expected released / published values against
    the true count, with (optionally) the chosen true count n marked."""
    x, title, hx = _x(df, as_fraction)
    cd = _a(df[["True count n"]])
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.14, subplot_titles=(
        "Bias of a released count", "Expected value against the truth"))
    fig.add_trace(go.Scatter(
        x=x, y=_a(df["Bias of a released count"]), mode="lines", name="bias of a released count",
        line=dict(color=COLORS[1], width=2), customdata=cd,
        hovertemplate=hx + " (n = %{customdata[0]})<br>bias = %{y:.2f} persons<extra></extra>"), row=1, col=1)
    fig.add_trace(go.Scatter(
        x=x, y=_a(df["Expected released value"]), mode="lines", name="expected released value",
        line=dict(color=COLORS[0], width=2), customdata=cd,
        hovertemplate=hx + " (n = %{customdata[0]})<br>E[released] = %{y:.1f}<extra></extra>"), row=1, col=2)
    fig.add_trace(go.Scatter(
        x=x, y=_a(df["Expected published value (suppressed = 0)"]), mode="lines",
        name="expected published value (suppressed read as 0)", line=dict(color=COLORS[2], width=2, dash="dot"),
        customdata=cd,
        hovertemplate=hx + " (n = %{customdata[0]})<br>E[published] = %{y:.1f}<extra></extra>"), row=1, col=2)
    fig.add_trace(go.Scatter(
        x=x, y=_a(df["True count n"]), mode="lines", name="true count (no bias)",
        line=dict(color="#999999", width=1, dash="dash"), hoverinfo="skip"), row=1, col=2)
    if n is not None and at_n is not None:
        _mark_n(fig, n, t, as_fraction, [(at_n["Bias of a released count"], 1, 1),
                                         (at_n["Expected released value"], 1, 2),
                                         (at_n["Expected published value"], 1, 2)])
    _layout(fig, "Bias that suppression puts on what is released", "", "", height=400)
    fig.update_layout(margin=dict(t=85))
    fig.update_xaxes(title_text=title)
    fig.update_yaxes(title_text="expected noise of a released count (persons)", row=1, col=1)
    fig.update_yaxes(title_text="persons", row=1, col=2)
    return fig


# -------------------------------------------------------------------- run
def truth_vs_release(df: pd.DataFrame, log: bool = False) -> go.Figure:
    """Released T1 against the true T1 (confidential), one colour per geography level."""
    fig = go.Figure()
    top = float(max(df["True"].max(), df["Released"].max(), 1)) if len(df) else 1.0
    for i, (geo, sub) in enumerate(df.groupby("Geography", sort=False)):
        fig.add_trace(go.Scattergl(
            x=_a(sub["True"]), y=_a(sub["Released"]), mode="markers", name=geo,
            marker=dict(size=5, color=COLORS[i % len(COLORS)], opacity=0.6),
            customdata=_a(sub[["Region", "Iteration", "Error"]].astype(object)),
            hovertemplate="%{customdata[0]} · %{customdata[1]}<br>true = %{x:,}<br>released = %{y:,}"
                          "<br>error = %{customdata[2]:+,}<extra></extra>"))
    lo = 1 if log else 0
    fig.add_trace(go.Scatter(x=[lo, top], y=[lo, top], mode="lines", name="released = true",
                             line=dict(color="#999999", dash="dash"), hoverinfo="skip"))
    _layout(fig, "Released group totals (T1) against the true counts (confidential)",
            "true count (persons; confidential)", "released count (persons)", height=440)
    if log:
        vals = np.concatenate([_a(df["True"]), _a(df["Released"])]).astype(float) if len(df) else np.array([1.0])
        fig.update_xaxes(title_text="true count (persons, log scale; confidential)")
        fig.update_yaxes(title_text="released count (persons, log scale)")
        _log_axis(fig, "x", vals)
        _log_axis(fig, "y", vals)
    return fig


def error_histogram(df: pd.DataFrame) -> go.Figure:
    fig = go.Figure()
    for i, (geo, sub) in enumerate(df.groupby("Geography", sort=False)):
        fig.add_trace(go.Histogram(x=_a(sub["Error"]), name=geo, opacity=0.65,
                                   marker_color=COLORS[i % len(COLORS)],
                                   hovertemplate="error %{x}<br>%{y} counts<extra></extra>"))
    fig.update_layout(barmode="overlay")
    _layout(fig, "Errors of the released totals (released − true)", "error (persons)", "number of T1 counts",
            height=440)
    return fig


def accuracy(df: pd.DataFrame) -> go.Figure:
    """Observed 95th percentile of |error| (bars) beside the predicted exact 95% MOE
    (ticks), one row per geography, iteration level and group size, in the order of
    `analysis.accuracy_view` (geography order, Regional before Detailed, small groups
    first), with plain labels."""
    fig = go.Figure()
    y = _a(df["Groups"])
    fig.add_trace(go.Bar(y=y, x=_a(df["Observed 95th percentile of |error|"]), orientation="h",
                         name="observed: 95th percentile of |released − true|", marker_color=COLORS[0],
                         customdata=_a(df[["Counts compared"]]),
                         hovertemplate="%{y}<br>observed = %{x} persons<br>%{customdata[0]:,} counts"
                                       "<extra></extra>"))
    fig.add_trace(go.Scatter(y=y, x=_a(df["Predicted 95% MOE (exact)"]), mode="markers",
                             name="predicted 95% MOE (exact)",
                             marker=dict(symbol="line-ns-open", size=16, line=dict(width=3, color=COLORS[3])),
                             hovertemplate="%{y}<br>predicted = %{x} persons<extra></extra>"))
    _layout(fig, "Observed error against the predicted MOE", "persons", "", height=max(320, 24 * len(df) + 150))
    fig.update_yaxes(autorange="reversed", tickfont=dict(size=12), categoryorder="array", categoryarray=y)
    return fig
