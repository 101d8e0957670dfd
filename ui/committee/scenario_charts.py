"""Plotly figures that overlay several plans (pure; no Streamlit).

Each figure draws one trace per plan, in the plan's colour (the same colour in every
figure), from DataFrames built by `ui.committee.comparison` and `ui.safetab.analysis`, which the pages
also offer for download.
"""

from __future__ import annotations

import html

from collections.abc import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from calculators.levels import PopulationGroupLevel
from ui.safetab import analysis
from ui.core import planner
from ui.core.charts import COLORS, style
from ui.committee.comparison import DIFFERS, Plan, unique_names
from ui.core.planner import GEO, ITER


def _text(name: str) -> str:
    """A plan name as plotly shows it: its pseudo-HTML escaped, so that a name such as
    '<a href="...">' is shown as written, never as a link (issue 21 item 3)."""
    return html.escape(str(name), quote=False)

_DASHES = ["solid", "dash", "dot", "dashdot", "longdash", "longdashdot"]


def color(i: int) -> str:
    return COLORS[i % len(COLORS)]


def _layout(fig: go.Figure, title: str, x: str, y: str, height: int = 420) -> go.Figure:
    """The app's chart layout (`charts.style`) with room for a legend of several plans."""
    return style(fig, title, x, y, height=height, legend_room=130, margin={"l": 70, "r": 20, "t": 60, "b": 130},
                 font={"size": 13})


def level_bars(df: pd.DataFrame, title: str, y_title: str, log_y: bool = False) -> go.Figure:
    """Grouped bars: one group per population group level (rows of a `comparison.by_level`
    table), one bar per plan. Levels no plan tabulates are left out."""
    plans = [c for c in df.columns if c not in (GEO, ITER, DIFFERS)]
    keep = df[plans].notna().any(axis=1) & (df[plans].fillna(0).astype(float) != 0).any(axis=1)
    d = df[keep]
    labels = [f"{g} {('Reg.' if i == 'Regional' else 'Det.')}" for g, i in zip(d[GEO], d[ITER], strict=True)]
    fig = go.Figure()
    for i, name in enumerate(plans):
        vals = d[name].astype("Float64").astype(float)
        fig.add_trace(go.Bar(
            x=labels, y=vals, name=_text(name), marker_color=color(i),
            text=[("" if np.isnan(v) else f"{v:.4g}") for v in vals], textposition="none",
            hovertemplate=f"<b>{_text(name)}</b><br>%{{x}}<br>{y_title} = %{{y:.5g}}<extra></extra>"))
    _layout(fig, title, "population group level (geography, Regional / Detailed)", y_title)
    fig.update_layout(barmode="group", bargap=0.25)
    fig.update_xaxes(tickangle=-40, tickfont=dict(size=12))
    if log_y:
        fig.update_yaxes(type="log", dtick=1, title_text=f"{y_title} (log scale)")  # ticks at 1, 10, 100
    return fig


def moe_budget_curves(plans: Sequence[Plan], method: str = planner.EXACT) -> go.Figure:
    """Exact MOE of one stage-2 cell against the level budget, one curve per plan (its own
    S, γ and noise law; `planner.moe_rho_curve`), with its levels as markers
    (`planner.level_points`). The budget axis is ρ for zCDP plans and ε for pure-DP
    plans: pass plans of one privacy definition."""
    names = unique_names([p.name for p in plans])
    puredp = any(p.config.privacy_defn == "puredp" for p in plans)
    b = "ε" if puredp else "ρ"
    rhos = [r for p in plans for r, _ in planner.rho_groups(p.config)]
    lo, hi = min([1e-3] + [r / 2 for r in rhos]), max([10.0] + [r * 2 for r in rhos])
    fig = go.Figure()
    for i, (name, p) in enumerate(zip(names, plans, strict=True)):
        cfg = p.config
        curve = planner.moe_rho_curve(planner.stability_of(cfg), cfg.gamma, lo, hi, points=121,
                                      noise=planner.noise_of(cfg))
        fig.add_trace(go.Scatter(
            x=curve[planner.RHO], y=curve[planner.MOE_EXACT], mode="lines", name=f"{_text(name)}",
            legendgroup=name, line=dict(color=color(i), shape="hv", dash=_DASHES[i % len(_DASHES)]),
            hovertemplate=f"<b>{_text(name)}</b><br>{b} = %{{x:.4g}}<br>exact MOE = %{{y}} persons<extra></extra>"))
        pts = planner.level_points(cfg, method)
        if len(pts):
            fig.add_trace(go.Scatter(
                x=pts[planner.RHO], y=pts["MOE"], mode="markers", name=f"{_text(name)}: its levels",
                legendgroup=name, showlegend=False,
                marker=dict(size=11, color=color(i), symbol="diamond", line=dict(width=1, color="white")),
                customdata=pts[["Levels"]],
                hovertemplate=f"<b>{_text(name)}</b><br>%{{customdata[0]}}<br>{b} = %{{x:.4g}}<br>MOE = %{{y}}"
                              "<extra></extra>"))
    _layout(fig, f"MOE of one stage-2 cell against the level budget {b}: one curve per plan",
            f"level budget {b} ({'pure DP' if puredp else 'zCDP'}, log scale)",
            "exact 95% MOE (persons, log scale)")
    fig.update_xaxes(type="log", dtick=1)  # one tick a decade: 0.001, 0.01, ... (no "2, 5" ticks)
    fig.update_yaxes(type="log", dtick=1)
    return fig


def _grid(plans: Sequence[Plan], level: PopulationGroupLevel) -> np.ndarray:
    grids = [analysis.size_grid(p.config.thresholds(level)) for p in plans if level.key in p.config.thresholds_p]
    return np.unique(np.concatenate(grids)) if grids else analysis.size_grid((1, 10, 100))


def adaptive_data(plans: Sequence[Plan], level: PopulationGroupLevel) -> pd.DataFrame:
    """Expected accuracy of what is published against the true group size, per plan
    tabulating the level (`analysis.moe_curves` on one common size grid), long form."""
    names = unique_names([p.name for p in plans])
    n = _grid(plans, level)
    parts = []
    for name, p in zip(names, plans, strict=True):
        if p.config.rho(level) <= 0 or not p.config.runs_geo(level):
            continue
        parts.append(analysis.moe_curves(p.config, level, n=n).assign(Plan=name))
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def adaptive_overlay(data: pd.DataFrame, plans: Sequence[Plan], level: PopulationGroupLevel) -> go.Figure:
    """Expected MOE of the group total T1 and expected relative MOE of a published cell
    against the true group size, one line per plan, each plan's thresholds marked."""
    names = unique_names([p.name for p in plans])
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.1, subplot_titles=(
        "Expected MOE of the group total T1", "Expected relative MOE of a published cell"))
    for i, (name, p) in enumerate(zip(names, plans, strict=True)):
        sub = data[data["Plan"] == name] if len(data) else data
        if not len(sub):
            continue
        dash = _DASHES[i % len(_DASHES)]
        th = ", ".join(f"{t:,}" for t in p.config.thresholds(level))
        fig.add_trace(go.Scatter(
            x=sub["True group size"], y=sub["Expected MOE of the group total T1"], mode="lines",
            name=f"{_text(name)} (Θ = {th})", legendgroup=name, line=dict(color=color(i), width=2, dash=dash),
            hovertemplate=f"<b>{_text(name)}</b><br>true size %{{x:,}}<br>T1 MOE = %{{y:.1f}} persons<extra></extra>"),
            row=1, col=1)
        fig.add_trace(go.Scatter(
            x=sub["True group size"], y=sub["Expected relative MOE of a published cell (%)"], mode="lines",
            name=_text(name), legendgroup=name, showlegend=False, line=dict(color=color(i), width=2, dash=dash),
            hovertemplate=f"<b>{_text(name)}</b><br>true size %{{x:,}}<br>relative cell MOE = %{{y:.1f}}%"
                          "<extra></extra>"), row=1, col=2)
    _layout(fig, f"{planner.level_label(level)}: expected accuracy by true group size, one line per plan", "", "",
            height=440)
    fig.update_layout(margin=dict(t=85))
    fig.update_xaxes(type="log", dtick=1, title_text="true group size (persons, log scale)")
    fig.update_yaxes(title_text="95% MOE (persons)", rangemode="tozero", row=1, col=1)
    fig.update_yaxes(title_text="MOE / expected cell count (%, log scale)", type="log", dtick=1, row=1, col=2)
    return fig


def suppression_data(plans: Sequence[Plan], level: PopulationGroupLevel) -> pd.DataFrame:
    """P(suppressed) and the bias of a released count against the true count n, per plan
    that suppresses at the level (`analysis.suppression_curves` with its own T and
    stage-2 scale), on n = 0 .. 2 max(T) + a few noise scales, long form."""
    names = unique_names([p.name for p in plans])
    rows = []
    specs = []
    for name, p in zip(names, plans, strict=True):
        cfg = p.config
        if level.is_state_or_above or cfg.zero_suppression_chance == 0 or cfg.rho(level) <= 0 \
                or not cfg.runs_geo(level):
            continue
        sig = analysis.sigmas(cfg, level)
        specs.append((name, analysis.threshold_for(cfg, level), sig["stage2"], sig["noise"]))
    if not specs:
        return pd.DataFrame()
    n_max = max(2 * max(t, 1) for _, t, _, _ in specs) + 10
    for name, t, s2, nz in specs:
        c = analysis.suppression_curves(t, s2, n_max=n_max, noise=nz)
        rows.append(c.assign(Plan=name, **{"Threshold T": t}))
    return pd.concat(rows, ignore_index=True)


def suppression_overlay(data: pd.DataFrame, level: PopulationGroupLevel) -> go.Figure:
    """P(suppressed) and the bias of a released count against the true count, one line
    per plan, each plan's threshold T marked."""
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.1, subplot_titles=(
        "Chance that a stat-level-0 total is suppressed", "Bias of a released count E[X | released]"))
    for i, (name, sub) in enumerate(data.groupby("Plan", sort=False)):
        t = int(sub["Threshold T"].iloc[0])
        dash = _DASHES[i % len(_DASHES)]
        fig.add_trace(go.Scatter(
            x=sub["True count n"], y=sub["P(suppressed)"], mode="lines", name=f"{_text(name)} (T = {t})",
            legendgroup=name, line=dict(color=color(i), width=2, dash=dash),
            hovertemplate=f"<b>{_text(name)}</b><br>n = %{{x}}<br>P(suppressed) = %{{y:.4f}}<extra></extra>"),
            row=1, col=1)
        fig.add_trace(go.Scatter(
            x=sub["True count n"], y=sub["Bias of a released count"], mode="lines", name=_text(name),
            legendgroup=name, showlegend=False, line=dict(color=color(i), width=2, dash=dash),
            hovertemplate=f"<b>{_text(name)}</b><br>n = %{{x}}<br>bias = %{{y:.2f}} persons<extra></extra>"),
            row=1, col=2)
        fig.add_vline(x=t, line=dict(color=color(i), dash="dot", width=1), row=1, col=1)
    _layout(fig, f"{planner.level_label(level)}: suppression by true count, one line per plan", "", "",
            height=420)
    fig.update_layout(margin=dict(t=85))
    fig.update_xaxes(title_text="true count n (persons)")
    fig.update_yaxes(title_text="probability", range=[-0.02, 1.02], row=1, col=1)
    fig.update_yaxes(title_text="expected noise of a released count (persons)", row=1, col=2)
    return fig
