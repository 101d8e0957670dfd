"""Streamlit building blocks: tables and charts with their download buttons, the
sidebar summary, plain-words problem lists."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from ui import planner, state
from ui.plaintext import plain  # the pages call it as widgets.plain

PLOTLY_CONFIG = {"displaylogo": False, "toImageButtonOptions": {"format": "png", "scale": 2}}


def csv_bytes(df: pd.DataFrame) -> bytes:
    return df.to_csv(index=False).encode("utf-8")


#: What a table shows for a missing value (Streamlit's default is the word "None").
MISSING = "—"


def download_csv(df: pd.DataFrame, filename: str, key: str, label: str | None = None) -> None:
    """A download button of `df` as CSV, made only when it is clicked (the CSV is not
    rebuilt and sent on every redraw)."""
    st.download_button(
        label or f"Download {filename}", lambda: csv_bytes(df), file_name=filename, mime="text/csv",
        key=key, on_click="ignore", icon=":material/download:",
    )


def table(df: pd.DataFrame, filename: str, key: str, *, column_config: dict | None = None,
          height: int | str = "auto", caption: str | None = None, styler: Any = None,
          data: pd.DataFrame | None = None) -> None:
    """A read-only table with a CSV download of exactly its numbers (`data`, when the
    table shows them differently, e.g. with marks); missing values show as a dash."""
    st.dataframe(styler if styler is not None else df, hide_index=True, column_config=column_config,
                 height=height, key=key, placeholder=MISSING)
    if caption:
        st.caption(caption)
    download_csv(df if data is None else data, filename, key=f"{key}_csv", label="Download this table (CSV)")


def change_table(df: pd.DataFrame, key: str) -> None:
    """A before / after table of a plan change (`planner.change_table`), with its CSV."""
    fmt = {c: st.column_config.NumberColumn(format="%.5g") for c in df.columns if c.startswith("Budget")}
    fmt.update({c: st.column_config.NumberColumn(format="%.3g") for c in df.columns if c.startswith("Level ε")})
    table(df, f"{key}.csv", key=key, column_config=fmt, height=min(35 * (len(df) + 1) + 3, 420))


def plotly(fig: go.Figure, key: str) -> None:
    """A plotly chart as the app draws every chart: in the figure's own layout
    (`charts._figure`), not restyled with Streamlit's theme, whose template the browser
    would merge into the figure on every redraw (about 25 ms per chart and change)."""
    st.plotly_chart(fig, key=key, config=PLOTLY_CONFIG, theme=None)


def chart(fig: go.Figure, data: pd.DataFrame, filename: str, key: str) -> None:
    """A plotly chart with a CSV download of the data it draws."""
    plotly(fig, key)
    download_csv(data, filename, key=f"{key}_csv", label="Download the chart's data (CSV)")


#: Problems listed in a message box before the others are only counted.
SHOWN_PROBLEMS = 10
#: The last line of a list of problems cut short (`calculators.config.ConfigError`, `urlcodec.cap_problems`).
_MORE = re.compile(r"\.\.\. and ([\d,]+) more problems")


def problems(title: str, items: Iterable[str], kind: str = "error", total: int | None = None) -> None:
    """A message box: `title`, then the first SHOWN_PROBLEMS items and the number of the
    others (`total`, if more were found than given, or the count a ConfigError's last
    line gives: "... and N more problems"), all as plain text (`plain`)."""
    items = list(items)
    if not items:
        return
    more = _MORE.fullmatch(str(items[-1]))
    if more:  # already cut short upstream: count what it left out
        items = items[:-1]
        total = max(total or 0, len(items) + int(more[1].replace(",", "")))
    total = max(total or 0, len(items))
    shown = [f"- {p}" for p in items[:SHOWN_PROBLEMS]]
    if total > len(shown):
        shown.append(f"... and {total - len(shown):,} more")
    text = plain(title + "\n" + "\n".join(shown))
    (st.error if kind == "error" else st.warning)(text)


def fmt(x: float, digits: int = 4) -> str:
    """A number as a committee member would quote it."""
    if x is None:
        return "—"
    if float(x).is_integer() and abs(x) < 1e15:
        return f"{int(x):,}"
    return f"{x:.{digits}g}"


def sidebar_summary() -> None:
    """The current plan's name and privacy accounting, on every page: what the release
    costs (SPEC §1) and how many levels are on. r and gamma, which change the noise but
    not the budget, are shown where they are set (planner, overview), so that changing
    them redraws only the planner's own part (`state.sidebar_signature`)."""
    cfg = state.config()
    s = planner.plan_summary(cfg, state.delta())
    st.session_state[state.K_SIDEBAR] = state.sidebar_signature()
    head = f"**Current plan:** {plain(state.source_label())}\n\n"
    levels = f"{s['levels_tabulated']} of {s['levels_total']} levels on"
    with st.sidebar:
        if cfg.privacy_defn == "puredp":
            st.markdown(
                f"{head}**Pure DP** (geometric noise): ε release **{s['rho_release']:.4g}** (US {s['rho_us']:.4g}, "
                f"PR {s['rho_pr']:.4g}; bounded {s['rho_release_bounded']:.4g}), δ = 0  \n{levels}"
            )
            return
        st.markdown(
            f"{head}ρ release **{s['rho_release']:.4g}** (US {s['rho_us']:.4g}, PR {s['rho_pr']:.4g}; "
            f"bounded {s['rho_release_bounded']:.4g})  \n"
            f"ε at δ = {s['delta']:g}: **{s['eps_tight']:.2f}** tight, {s['eps_classic']:.2f} classic  \n{levels}"
        )
