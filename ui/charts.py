"""Plotly figures and the flow diagram of the app (pure; no Streamlit).

Every chart is built from a DataFrame the page also offers for download, has axis
titles with units and shows the values on hover.
"""

from __future__ import annotations

import math

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from calculators.config import SafeTabConfig
from ui.planner import MOE_BOUND, MOE_EXACT, RHO, stability_of

COLORS = ["#1f5aa6", "#e07b00", "#2a9d4b", "#c0392b", "#7d3c98", "#17a2b8", "#8c564b", "#555555"]
TABLE_COLORS = ["#7f7f7f", "#1f5aa6", "#e07b00", "#2a9d4b"]


def _layout(fig: go.Figure, title: str, x: str, y: str, height: int = 400, legend_room: int = 110,
            **kw) -> go.Figure:
    fig.update_layout(
        title=dict(text=title, x=0, xanchor="left", font=dict(size=15)),
        height=height,
        margin=dict(l=60, r=20, t=50, b=legend_room),
        legend=dict(orientation="h", yref="container", yanchor="bottom", y=0, xanchor="left", x=0),
        hovermode="closest",
        template="plotly_white",
        **kw,
    )
    fig.update_xaxes(title_text=x)
    fig.update_yaxes(title_text=y)
    return fig


# ------------------------------------------------------------------- diagram
def flow_dot(config: SafeTabConfig) -> str:
    """Graphviz DOT of the two-stage flow (SPEC §1), with the configuration's numbers."""
    g = config.gamma
    S = stability_of(config)
    n_levels = len(config.tabulated_levels())
    p = config.zero_suppression_chance
    supp = f"suppress small totals (p = {p:g})" if p > 0 else "no suppression (p = 0)"
    clamp = "clamp at 0" if not config.allow_negative_counts else "negatives allowed"
    b = "ε" if config.privacy_defn == "puredp" else "ρ"
    return f"""digraph safetab {{
  rankdir=LR; bgcolor="transparent"; nodesep=0.12; ranksep=0.3;
  node [shape=box, style="rounded,filled", fillcolor="#eef3fb", color="#1f5aa6",
        fontname="Helvetica", fontsize=15, margin="0.12,0.06"];
  edge [color="#555555", fontname="Helvetica", fontsize=13];
  persons [label="Persons\\nblock, race,\\nethnicity,\\nsex, age", fillcolor="#fdf1e2", color="#e07b00"];
  groups [label="Population\\ngroups\\nS = {S} per person\\n{n_levels} levels"];
  stage1 [label="Stage 1\\nnoisy total\\nγ{b}, γ = {g:g}"];
  level [label="Stat level\\nΘ₁ ≤ Θ₂ ≤ Θ₃", shape=diamond, fillcolor="#fff8d6", color="#b08d00", margin="0.02,0.02"];
  t0 [label="total", fillcolor="#f2f2f2", color="#7f7f7f"];
  t1 [label="sex × age4 (8)"];
  t2 [label="sex × age9 (18)"];
  t3 [label="sex × age23 (46)"];
  post [label="Post-processing\\nmarginals, {clamp},\\n{supp},\\ncoterminous copies"];
  out [label="T1 totals\\nT2 sex × age", fillcolor="#e6f4ea", color="#2a9d4b"];
  persons -> groups; groups -> stage1;
  stage1 -> level [label="not\\npublished"];
  level -> t0 [label="0"]; level -> t1 [label="1"]; level -> t2 [label="2"]; level -> t3 [label="3"];
  subgraph cluster_stage2 {{ label="Stage 2: (1−γ){b}"; fontname="Helvetica"; fontsize=13;
    color="#bbbbbb"; style=dashed; t0; t1; t2; t3; }}
  t0 -> post; t1 -> post; t2 -> post; t3 -> post;
  post -> out;
}}"""


# --------------------------------------------------------------- planner
_ZCDP_UNITS = {"budget": "ρ", "law": "discrete Gaussian", "puredp": False}


def moe_vs_rho(curve: pd.DataFrame, points: pd.DataFrame, method_label: str,
               units: dict | None = None) -> go.Figure:
    """Stage-2 cell MOE against the level rho (epsilon under pure DP: `units` from
    `planner.units`), with the configuration's levels."""
    u = units or _ZCDP_UNITS
    b = u["budget"]
    fig = go.Figure()
    fig.add_trace(go.Scatter(
        x=curve[RHO], y=curve[MOE_EXACT], mode="lines", name=f"exact {u['law']} MOE",
        line=dict(color=COLORS[0], shape="hv"),
        hovertemplate=f"{b} = %{{x:.4g}}<br>exact MOE = %{{y}} persons<extra></extra>"))
    fig.add_trace(go.Scatter(
        x=curve[RHO], y=curve[MOE_BOUND], mode="lines", name="design bound ⌊1.96σ⌋",
        line=dict(color=COLORS[1], dash="dot", shape="hv"),
        hovertemplate=f"{b} = %{{x:.4g}}<br>⌊1.96σ⌋ = %{{y}} persons<extra></extra>"))
    if len(points):
        fig.add_trace(go.Scatter(
            x=points[RHO], y=points["MOE"], mode="markers", name=f"levels of this plan ({method_label})",
            marker=dict(size=11, color=COLORS[3], symbol="diamond", line=dict(width=1, color="white")),
            customdata=points[["Levels"]],
            hovertemplate=f"%{{customdata[0]}}<br>{b} = %{{x:.4g}}<br>MOE = %{{y}} persons<extra></extra>"))
    kind = "pure DP" if u["puredp"] else "zCDP"
    _layout(fig, f"MOE of one stage-2 cell against the level budget {b}", f"level budget {b} ({kind}, log scale)",
            "95% margin of error (persons, log scale)")
    fig.update_xaxes(type="log")
    fig.update_yaxes(type="log")
    return fig


def race_multiplicity(long: pd.DataFrame, units: dict | None = None) -> go.Figure:
    """Stage-2 cell MOE against race multiplicity r, one line per rho group."""
    b = (units or _ZCDP_UNITS)["budget"]
    fig = go.Figure()
    for i, (name, sub) in enumerate(long.groupby("Levels", sort=False)):
        rho = sub[RHO].iloc[0]
        fig.add_trace(go.Scatter(
            x=sub["r"], y=sub["MOE"], mode="lines+markers",
            name=f"{b} = {rho:.4g} ({_count_levels(name)})",
            line=dict(color=COLORS[i % len(COLORS)]), customdata=sub[["S", "Levels"]],
            hovertemplate="r = %{x}, S = %{customdata[0]}<br>MOE = %{y} persons<br>%{customdata[1]}"
                          "<extra></extra>"))
        cur = sub[sub["current"]]
        if len(cur):
            fig.add_trace(go.Scatter(
                x=cur["r"], y=cur["MOE"], mode="markers", showlegend=False,
                marker=dict(size=14, color="rgba(0,0,0,0)", line=dict(width=2, color="black")),
                hoverinfo="skip"))
    _layout(fig, f"What race multiplicity r does to every MOE ({b} and γ fixed)", "race multiplicity r (max race codes)",
            "MOE of one stage-2 cell (persons)", height=380)
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
    for j, col in enumerate(df.columns[1:]):
        fig.add_trace(go.Scatter(
            x=df[n], y=df[col], mode="lines", name=col[2:-1], line=dict(color=TABLE_COLORS[j], width=2),
            hovertemplate="true size %{x:,}<br>" + col + " = %{y:.3f}<extra></extra>"))
    _threshold_lines(fig, thresholds, log_x)
    _layout(fig, "Which table a group gets, by its true size",
            f"true population group size (persons{', log scale' if log_x else ''})", "probability", height=380)
    fig.update_layout(margin=dict(t=70))
    fig.update_xaxes(type="log" if log_x else "linear")
    fig.update_yaxes(range=[-0.02, 1.02])
    return fig


def expected_moe(df: pd.DataFrame, thresholds, log_x: bool = True) -> go.Figure:
    """Expected MOE (persons) and relative MOE (%) against the true group size."""
    n = df.columns[0]
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.08, subplot_titles=(
        "MOE in persons", "Relative MOE of a published cell"))
    fig.add_trace(go.Scatter(
        x=df[n], y=df["Expected MOE of the group total T1"], mode="lines", name="total T1 (expected)",
        line=dict(color=COLORS[0], width=2),
        hovertemplate="true size %{x:,}<br>expected T1 MOE = %{y:.1f} persons<extra></extra>"), row=1, col=1)
    fig.add_trace(go.Scatter(
        x=df[n], y=df["Expected MOE of one published cell"], mode="lines", name="one published cell",
        line=dict(color=COLORS[1], width=2, dash="dot"),
        hovertemplate="true size %{x:,}<br>cell MOE = %{y:.1f} persons<extra></extra>"), row=1, col=1)
    fig.add_trace(go.Scatter(
        x=df[n], y=df["Expected relative MOE of a published cell (%)"], mode="lines",
        name="relative MOE of a cell (expected)", line=dict(color=COLORS[2], width=2),
        hovertemplate="true size %{x:,}<br>relative cell MOE = %{y:.1f}%<extra></extra>"), row=1, col=2)
    for col in (1, 2):
        for j, t in enumerate(thresholds, start=1):
            fig.add_vline(x=t, line=dict(color="#999999", dash="dash", width=1), row=1, col=col)
    _layout(fig, "Expected accuracy of what is published, by true group size", "", "", height=420)
    fig.update_layout(margin=dict(t=85))
    fig.update_xaxes(type="log" if log_x else "linear",
                     title_text=f"true group size (persons{', log scale' if log_x else ''})")
    fig.update_yaxes(title_text="95% MOE (persons)", row=1, col=1, rangemode="tozero")
    fig.update_yaxes(title_text="MOE / expected cell count (%, log scale)", type="log", row=1, col=2)
    return fig


# ------------------------------------------------------------- suppression
def _x(df: pd.DataFrame, as_fraction: bool):
    if as_fraction:
        return df["n / T"], "true count as a fraction of T (n / T)", "n/T = %{x:.2f}"
    return df["True count n"], "true count n (persons)", "n = %{x}"


def suppression_probability(df: pd.DataFrame, t: int, as_fraction: bool = False) -> go.Figure:
    x, title, hx = _x(df, as_fraction)
    fig = go.Figure(go.Scatter(
        x=x, y=df["P(suppressed)"], mode="lines+markers", marker=dict(size=4), name="P(suppressed)",
        line=dict(color=COLORS[3], width=2), customdata=df[["True count n"]],
        hovertemplate=hx + " (n = %{customdata[0]})<br>P(suppressed) = %{y:.4f}<extra></extra>"))
    fig.add_vline(x=1 if as_fraction else t, line=dict(color="#999999", dash="dash"),
                  annotation_text=f"T = {t}", annotation_position="top right")
    _layout(fig, "Chance that a stat-level-0 total is suppressed", title, "probability", height=360)
    fig.update_yaxes(range=[-0.02, 1.02])
    return fig


def release_bias(df: pd.DataFrame, t: int, as_fraction: bool = False) -> go.Figure:
    x, title, hx = _x(df, as_fraction)
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.12, subplot_titles=(
        "Bias of a released count E[X | released]", "Expected value against the truth"))
    fig.add_trace(go.Scatter(
        x=x, y=df["Bias of a released count"], mode="lines", name="bias of a released count",
        line=dict(color=COLORS[1], width=2), customdata=df[["True count n"]],
        hovertemplate=hx + " (n = %{customdata[0]})<br>bias = %{y:.2f} persons<extra></extra>"), row=1, col=1)
    fig.add_trace(go.Scatter(
        x=x, y=df["Expected released value"], mode="lines", name="expected released value",
        line=dict(color=COLORS[0], width=2), customdata=df[["True count n"]],
        hovertemplate=hx + " (n = %{customdata[0]})<br>E[released] = %{y:.1f}<extra></extra>"), row=1, col=2)
    fig.add_trace(go.Scatter(
        x=x, y=df["Expected published value (suppressed = 0)"], mode="lines",
        name="expected published value (suppressed read as 0)", line=dict(color=COLORS[2], width=2, dash="dot"),
        customdata=df[["True count n"]],
        hovertemplate=hx + " (n = %{customdata[0]})<br>E[published] = %{y:.1f}<extra></extra>"), row=1, col=2)
    fig.add_trace(go.Scatter(
        x=x, y=df["True count n"], mode="lines", name="true count (no bias)",
        line=dict(color="#999999", width=1, dash="dash"), hoverinfo="skip"), row=1, col=2)
    _layout(fig, "Bias that suppression puts on what is released", "", "", height=400)
    fig.update_layout(margin=dict(t=85))
    fig.update_xaxes(title_text=title)
    fig.update_yaxes(title_text="expected noise of a released count (persons)", row=1, col=1)
    fig.update_yaxes(title_text="persons", row=1, col=2)
    return fig


# -------------------------------------------------------------------- run
def truth_vs_release(df: pd.DataFrame, log: bool = False) -> go.Figure:
    """Released T1 against the true T1, one colour per geography level."""
    fig = go.Figure()
    top = float(max(df["True"].max(), df["Released"].max(), 1)) if len(df) else 1.0
    for i, (geo, sub) in enumerate(df.groupby("Geography", sort=False)):
        fig.add_trace(go.Scattergl(
            x=sub["True"], y=sub["Released"], mode="markers", name=geo,
            marker=dict(size=5, color=COLORS[i % len(COLORS)], opacity=0.6),
            customdata=sub[["Region", "Iteration", "Error"]],
            hovertemplate="%{customdata[0]} · %{customdata[1]}<br>true = %{x:,}<br>released = %{y:,}"
                          "<br>error = %{customdata[2]:+,}<extra></extra>"))
    lo = 1 if log else 0
    fig.add_trace(go.Scatter(x=[lo, top], y=[lo, top], mode="lines", name="released = true",
                             line=dict(color="#999999", dash="dash"), hoverinfo="skip"))
    _layout(fig, "Released group totals (T1) against the truth", "true count (persons)",
            "released count (persons)", height=440)
    if log:
        fig.update_xaxes(type="log", title_text="true count (persons, log scale)")
        fig.update_yaxes(type="log", title_text="released count (persons, log scale)")
    return fig


def error_histogram(df: pd.DataFrame) -> go.Figure:
    fig = go.Figure()
    for i, (geo, sub) in enumerate(df.groupby("Geography", sort=False)):
        fig.add_trace(go.Histogram(x=sub["Error"], name=geo, opacity=0.65,
                                   marker_color=COLORS[i % len(COLORS)],
                                   hovertemplate="error %{x}<br>%{y} counts<extra></extra>"))
    fig.update_layout(barmode="overlay")
    _layout(fig, "Errors of the released totals (released − true)", "error (persons)", "number of T1 counts",
            height=440)
    return fig


def accuracy(df: pd.DataFrame) -> go.Figure:
    """Empirical 95th percentile of |error| beside the predicted exact MOE."""
    d = df.copy()
    d["what"] = (d["geo_level"] + " " + d["iteration_level"].map({1: "Reg.", 2: "Det."}).fillna("")
                 + " · " + d["table"] + " · size " + d["true_size"])
    fig = go.Figure()
    fig.add_trace(go.Bar(y=d["what"], x=d["p95_abs_error"], orientation="h", name="observed 95th pct of |error|",
                         marker_color=COLORS[0], customdata=d[["counts_compared"]],
                         hovertemplate="%{y}<br>observed = %{x} persons<br>%{customdata[0]:,} counts"
                                       "<extra></extra>"))
    fig.add_trace(go.Scatter(y=d["what"], x=d["predicted_moe95_exact"], mode="markers",
                             name="predicted 95% MOE (exact)",
                             marker=dict(symbol="line-ns-open", size=16, line=dict(width=3, color=COLORS[3])),
                             hovertemplate="%{y}<br>predicted = %{x} persons<extra></extra>"))
    _layout(fig, "Observed error against the predicted MOE", "persons", "", height=max(360, 22 * len(d) + 120))
    fig.update_yaxes(autorange="reversed", tickfont=dict(size=10))
    return fig
