"""Streamlit building blocks: tables and charts with their download buttons, the
sidebar summary, plain-words problem lists."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from ui.core import charts, planner, state, typed
from ui.core.plaintext import plain  # the pages call it as widgets.plain

PLOTLY_CONFIG = {"displaylogo": False, "toImageButtonOptions": {"format": "png", "scale": 2}}


#: The app's own style sheet (app.py puts it on every page):
#: * narrower side margins than Streamlit's 5rem, so tables of 10 columns fit beside
#:   the sidebar at 1280 px (what a laptop shows); at 1920 px the margins are still wide;
#: * containers keyed with `sticky_key` stay pinned under the page's header while the
#:   content after them scrolls (messages about a tall table stay in view).
#: * captions, widget help and placeholders in CAPTION_COLOR (Streamlit's faded grey is
#:   3.9:1 on white; this one is over 6:1 on both backgrounds), captions at full opacity
#:   (Streamlit draws them at 0.6, which made CAPTION_COLOR 2.8:1 as displayed;
#:   tests/e2e/test_contrast.py measures the colours as rendered);
#: * a clear outline (FOCUS_COLOR, 3 px) on whatever has keyboard focus.
CAPTION_COLOR = "#555866"
FOCUS_COLOR = "#1f5aa6"
APP_CSS = f"""<style>
[data-testid='stMainBlockContainer'] {{padding-left: 2.5rem; padding-right: 2.5rem;}}
[class*='st-key-sticky-'] {{position: sticky; top: 3.75rem; z-index: 5; background: #ffffff;}}
[data-testid='stCaptionContainer'], [data-testid='stCaptionContainer'] p,
[data-testid='stWidgetLabel'] [data-testid='stTooltipHoverTarget'] svg,
[data-testid='stMetricLabel'] svg {{color: {CAPTION_COLOR};}}
[data-testid='stCaptionContainer'] {{opacity: 1 !important;}}
input::placeholder, textarea::placeholder {{color: {CAPTION_COLOR}; opacity: 1;}}
a:focus-visible, button:focus-visible, [role='tab']:focus-visible, [role='radio']:focus-visible,
input:focus-visible, textarea:focus-visible, summary:focus-visible,
[data-testid='stSidebarNav'] a:focus, [data-testid='stSidebarNavLink']:focus {{
  outline: 3px solid {FOCUS_COLOR} !important; outline-offset: 2px;}}
</style>"""


def kept_tabs(labels: list[str], key: str) -> Sequence[Any]:
    """Tabs of which only the open one is drawn (the page draws a tab's content only when
    its `open` is true) and which open on the tab the user opened last, also after a visit
    to another page. Pages put their charts in them because a plotly chart whose data follow
    a control costs the browser 0.1 to 0.15 s per change and per page opening on a
    two-core machine (benchmarks/RESULTS.md, "Only the open tab is drawn"). Page controls
    keep their value with ``persist_state="session"``; tabs take no such option, and
    Streamlit forgets their state on a page switch, so the open tab is kept in a plain
    session value (``<key>::open``)."""
    ss = st.session_state
    kept = f"{key}::open"
    if key not in ss and ss.get(kept) in labels:
        ss[key] = ss[kept]
    tabs = st.tabs(labels, key=key, on_change="rerun")
    ss[kept] = next((label for label, tab in zip(labels, tabs, strict=True) if tab.open), labels[0])
    return tabs


def fragment_start() -> None:
    """First line of a page fragment whose controls may change what the sidebar shows
    (a budget typed in the planner table, p, the thresholds): when a control's callback
    has already changed it, redraw the whole app at once, rather than drawing the
    fragment and then the whole app with it again (`state.fragment_done`)."""
    if state.K_SIDEBAR in st.session_state and st.session_state[state.K_SIDEBAR] != state.sidebar_signature():
        st.rerun(scope="app")


def contrast(fg: str, bg: str) -> float:
    """WCAG 2 contrast ratio of two colours "#rrggbb" (1 to 21; text needs 4.5, large
    text and focus outlines 3)."""
    def lum(h: str) -> float:
        h = h.lstrip("#")
        r, g, b = (int(h[i:i + 2], 16) / 255 for i in (0, 2, 4))

        def lin(c: float) -> float:
            return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4

        return 0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b)

    hi, lo = sorted((lum(fg), lum(bg)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


#: The key prefix of a container whose table may scroll sideways: a data browser whose
#: long texts (the Run page's iteration names) are shown whole in a column as wide as
#: the longest one, since the grid cannot wrap a text. Every other table fits its page
#: (the browser tests check both).
SCROLLS_SIDEWAYS = "scrolls-sideways-"


def sticky_key(name: str) -> str:
    """The key of a container that stays in view under the header while the page
    scrolls past the content after it (`APP_CSS`)."""
    return f"sticky-{name}"


#: Advance widths (px, rounded up to half a pixel) of the characters of Streamlit's table
#: font (Source Sans, 14 px), as the browser measures them: `text_px` uses them to give
#: every column at least the width of its header (`fit_columns`).
_CHAR_PX_GROUPS = {
    2.5: "ⱼ", 3: " ", 3.5: "',.:;ij|’·", 4: "Il", 4.5: "!()-[]f{}", 5: "/\\rt°", 5.5: "²₁₂₃⌊⌋", 6: "\"*?sz“”",
    6.5: "cxε", 7: "0123456789#$+<=>FJLY^_ekvy~γ≤≥×–−≈", 7.5: "ESTVXagδθ✗", 8: "ACPRZ`bdhnopquρσ√Σμ",
    8.5: "BK", 9: "&DG→✓", 9.5: "HNOQUΘ", 10.5: "Mw", 11: "W∞", 11.5: "—", 12: "%@m", 13.5: "…",
}
_CHAR_PX = {c: float(w) for w, chars in _CHAR_PX_GROUPS.items() for c in chars}
#: Table cells keep 8 px of padding on each side (Streamlit's grid theme), and a pixel more.
CELL_PADDING_PX = 17


def text_px(text: str) -> float:
    """How wide `text` is drawn in a table header or cell (px; unknown characters as
    wide as "W")."""
    return sum(_CHAR_PX.get(c, 11.0) for c in str(text))


#: Up to this many distinct fractional numbers in a column, `_number_px` prints each one;
#: beyond, it bounds them (a data browser's column may hold a hundred thousand).
_EXACT_FRACTIONS = 1_000


def _number_px(values: pd.Series) -> float:
    """How wide the widest of `values` (numbers, none missing) is printed in a table: a
    whole number with thousands separators ("262,667,218"), any other with 4 significant
    digits ("0.0123", "1.5e+05"), as Streamlit's grid does by default.

    Every value counts, wherever it is in the table, at a cost that does not grow with
    the table: all digits are drawn equally wide (`_CHAR_PX`; a test checks it), so the
    widest whole number is the largest or the smallest. Fractional numbers are printed
    one by one up to `_EXACT_FRACTIONS` distinct values; beyond that, each sign and
    decimal exponent present is printed once with four significant digits (and the next
    exponent, which rounding can reach): a bound, never narrower than a value."""
    v = values.to_numpy(dtype=float)
    whole = np.isfinite(v) & (v == np.floor(v))
    texts = [f"{x:,.0f}" for x in (v[whole].max(), v[whole].min())] if whole.any() else []
    fractions = np.unique(v[~whole])
    finite = fractions[np.isfinite(fractions)]
    texts += [f"{x:.4g}" for x in fractions[~np.isfinite(fractions)]]  # inf, -inf
    if len(finite) <= _EXACT_FRACTIONS:
        texts += [f"{x:.4g}" for x in finite]
    else:
        # each (sign, decimal exponent) once, as one number sign * (exponent + 1000): a 1-D
        # unique is 20 times faster than np.unique(..., axis=0) of pairs
        for key in np.unique(np.sign(finite) * (np.floor(np.log10(np.abs(finite))) + 1000)).tolist():
            sign, e = np.sign(key), abs(key) - 1000
            texts += [f"{sign * 1.111 * 10.0 ** (e + k):.4g}" for k in (0, 1)]
    return max(text_px(t) for t in texts)


def fit_columns(df: pd.DataFrame, column_config: dict | None, texts: bool = True) -> dict:
    """The column configuration with every column at least as wide as its header and
    its widest value (a number as displayed, or a text unless `texts` is False): a width
    given in pixels that would cut one of them is widened; other settings are kept."""
    out = dict(column_config or {})
    for col in df.columns:
        cfg = out.get(col, {})
        if cfg is None:  # a hidden column
            continue
        cfg = dict(cfg) if isinstance(cfg, dict) else {"label": cfg} if isinstance(cfg, str) else dict(cfg)
        width = cfg.get("width")
        if not isinstance(width, int | float):
            continue
        label = cfg.get("label") or str(col)
        need = text_px(label) + CELL_PADDING_PX
        # "localized" and "accounting" (`count_column`) print thousands separators: the same width
        values = df[col].dropna()
        if pd.api.types.is_numeric_dtype(df[col]) and len(values) and cfg.get("type_config", {}).get("format") in (
                None, "localized", "accounting"):
            need = max(need, _number_px(values) + CELL_PADDING_PX)  # every value, wherever it is in the table
        elif texts and not pd.api.types.is_numeric_dtype(df[col]) and len(values):
            # every distinct text, wherever it is in the table (a long name may be far down)
            need = max(need, max(text_px(v) for v in values.astype(str).unique()) + CELL_PADDING_PX)
        if width < need:
            cfg["width"] = int(need + 0.999)
            out[col] = cfg
    return out


def count_column(label: str | None = None, **kwargs: Any) -> Any:
    """A column of whole counts of 0 or more, printed with thousands separators ("12,345").
    Streamlit's "localized" format prints the same, but makes a new `Intl.NumberFormat`
    in the browser for every cell drawn (about 40 ms a page of national outcomes,
    benchmarks/RESULTS.md); its "accounting" format with a step of 1 uses the grid's own
    number formatter. (Accounting would print a negative count in brackets: counts here
    are never negative.)"""
    return st.column_config.NumberColumn(label, format="accounting", step=1, **kwargs)


def csv_bytes(df: pd.DataFrame, head: Iterable[str] = ()) -> bytes:
    """CSV of `df`, after `head` as '#' comment lines (what the figures are and come from;
    read with ``pandas.read_csv(path, comment="#")``; a line of `head` that holds a line
    break gives several '#' lines, so that no text of it is read as a row)."""
    from calculators.projection import comment_lines

    return (comment_lines(head) + df.to_csv(index=False)).encode("utf-8")


#: What a table shows for a missing value (Streamlit's default is the word "None").
MISSING = "—"


def download_csv(df: pd.DataFrame | Callable[[], pd.DataFrame], filename: str, key: str,
                 label: str | None = None, head: Iterable[str] = ()) -> None:
    """A download button of `df` as CSV, made only when it is clicked (the CSV is not
    rebuilt and sent on every redraw). `df` may be a function that makes the table, for
    a table that is costly to make and not shown (it is then made only on the click);
    `head`: lines said before the table (`csv_bytes`)."""
    head = list(head)
    st.download_button(
        label or f"Download {filename}", lambda: csv_bytes(df() if callable(df) else df, head), file_name=filename,
        mime="text/csv",
        key=key, on_click="ignore", icon=":material/download:",
    )


def table(df: pd.DataFrame, filename: str, key: str, *, column_config: dict | None = None,
          height: int | str = "auto", caption: str | None = None,
          style: tuple[Callable[..., Any], tuple] | None = None,
          data: pd.DataFrame | None = None, fit_texts: bool = True, csv_head: Iterable[str] = (),
          empty: str | None = None) -> bool:
    """A read-only table with a CSV download of exactly its numbers (`data`, when the
    table shows them differently, e.g. with marks), after `csv_head` as '#' lines; missing
    values show as a dash.
    Columns given a width in pixels fit their header and values (`fit_columns`; texts
    too unless `fit_texts` is False, for a table too wide for the page otherwise).
    `style`: (function, args) whose ``function(df, *args)`` is a pandas Styler of `df` to
    show instead; the styled table is made once per content and drawn again from
    Streamlit's cache (`_styled_grid`).
    `empty`: what to say instead of the table when `df` has no rows (an empty grid would
    draw "empty" over the text under it). Returns whether the table was drawn."""
    if empty is not None and df.empty:
        st.success(empty)
        return False
    cfg = fit_columns(df, column_config, texts=fit_texts)
    if style is not None:
        fn, args = style
        _styled_grid(df, fn, f"{fn.__module__}.{fn.__qualname__}", tuple(args), cfg, height, key)
    else:
        st.dataframe(df, hide_index=True, column_config=cfg,
                     height=height, key=key, placeholder=MISSING)
    if caption:
        st.caption(caption)
    download_csv(df if data is None else data, filename, key=f"{key}_csv", label="Download this table (CSV)",
                 head=csv_head)
    return True


@st.cache_data(max_entries=256, show_spinner=False)
def _styled_grid(df: pd.DataFrame, _fn: Callable[..., Any], fn_name: str, args: tuple, column_config: dict,
                 height: int | str, key: str) -> None:
    """The grid of ``_fn(df, *args)`` (a pandas Styler), named `fn_name` in the cache key.
    Streamlit records the element this makes and sends the recording again on the next
    call with the same arguments: turning a Styler into a grid costs pandas about 30 ms
    a table, on every redraw of every page that shows one (benchmarks/RESULTS.md)."""
    sty = _fn(df, *args)
    sty.set_uuid(key)  # the grid's own style names, the same on every redraw
    st.dataframe(sty, hide_index=True, column_config=column_config, height=height, key=key, placeholder=MISSING)


def change_table(df: pd.DataFrame, key: str) -> None:
    """A before / after table of a plan change (`planner.change_table`), with its CSV."""
    fmt = {c: st.column_config.NumberColumn(format="%.5g") for c in df.columns if c.startswith("Budget")}
    fmt.update({c: st.column_config.NumberColumn(format="%.3g") for c in df.columns if c.startswith("Level ε")})
    table(df, f"{key}.csv", key=key, column_config=fmt, height=min(35 * (len(df) + 1) + 3, 420))


def plotly(fig: go.Figure, key: str, summary: str | None = None) -> None:
    """A plotly chart as the app draws every chart: in the figure's own layout
    (`charts._figure`), its margins sized to its labels (`charts.fit`), not restyled
    with Streamlit's theme, whose template the browser would merge into the figure on
    every redraw (about 25 ms per chart and change); with a one-sentence text summary
    under it (`charts.summary` unless given), for readers who cannot see the chart."""
    if st.session_state.get(state.K_PRESENTER):  # a projector: every chart at least this tall
        # a copy: a page may draw a cached figure again after the view is switched off
        fig = go.Figure(fig).update_layout(height=max(fig.layout.height or 0, state.PRESENTER_CHART_PX))
    st.plotly_chart(charts.fit(fig), key=key, config=PLOTLY_CONFIG, theme=None)
    st.caption(plain(summary or charts.summary(fig)))  # series are named after plans: shown as typed


def chart(fig: go.Figure, data: pd.DataFrame, filename: str, key: str) -> None:
    """A plotly chart with a CSV download of the data it draws."""
    plotly(fig, key)
    download_csv(data, filename, key=f"{key}_csv", label="Download the chart's data (CSV)")


def number_box(label: str, key: str, rule: typed.Rule, value: float | int, *,
               on_change: Callable[[Any], str | None] | None = None, help: str | None = None,
               container: Any = None, placeholder: str | None = None) -> float | int:
    """A box for a number that is used exactly as typed, or refused with a message
    right under it (empty, not a number, not a whole number, out of `rule`'s range);
    never clamped or rounded (`ui.core.typed`). Returns the value in use.

    * Bound to the plan (`on_change` given): `value` is the plan's value; a valid typed
      value that differs is handed to `on_change`, which applies it (returns None) or
      refuses it (returns the reason, shown under the box). The box shows the value in
      use, exactly, whenever it changes elsewhere (undo, another page), and keeps the
      user's own spelling of the same value ("0.10").
    * A page's own control (no `on_change`): `value` is its first value; the last valid
      value typed is kept in the session and returned while a refused text is shown.
    """
    ss = st.session_state
    box = container if container is not None else st
    err_key, ok_key = f"{key}::refused", f"{key}::value"
    if on_change is None:
        if key not in ss:  # first drawn, or back on the page (Streamlit forgets a widget not drawn): the value in use
            ss[key] = typed.show(ss.get(ok_key, value))
        _typed_local(key, rule)
        current = ss.get(ok_key, value)
        box.text_input(label, key=key, help=help, placeholder=placeholder, on_change=_typed_local,
                       args=(key, rule))
    else:
        err = ss.get(err_key)
        if err is not None and err[0] != ss.get(key):
            ss.pop(err_key, None)
            err = None
        if err is None and not typed.same(ss.get(key), value, rule):
            ss[key] = typed.show(value)
        current = value
        box.text_input(label, key=key, help=help, placeholder=placeholder, on_change=_typed_changed,
                       args=(key, rule, value, on_change))
    err = ss.get(err_key)
    if err is not None:
        box.error(f"{err[1]} Still in use: {typed.show(current)}.")  # no icon: narrow columns keep their width
    return current


def typed_value(key: str, default: float | int) -> float | int:
    """The value in use of a page's own `number_box`: the last valid value typed, else
    `default`, which becomes its first value (before the box is drawn)."""
    ss = st.session_state
    if key not in ss:
        ss[key] = typed.show(ss.get(f"{key}::value", default))
        ss.setdefault(f"{key}::value", default)
    return ss.get(f"{key}::value", default)


def _typed_local(key: str, rule: typed.Rule) -> None:
    """Parse a page's own `number_box` (on_change, so that the value is current before
    the page's script reads it): keep a valid value, or the reason for refusing."""
    ss = st.session_state
    text = ss.get(key)
    try:
        ss[f"{key}::value"] = typed.parse(text, rule)
        ss.pop(f"{key}::refused", None)
    except typed.Refused as exc:
        ss[f"{key}::refused"] = (text, str(exc))


def plan_update(**changes: Any) -> str | None:
    """Change keys of the shared plan (for a bound `number_box`): None when applied,
    else why not (the configuration's own check), shown under the box."""
    from calculators.config import ConfigError

    try:
        cfg = state.config().updated(**changes)
    except ConfigError as exc:
        return "Not applied: " + "; ".join(exc.problems) + "."
    state.set_config(cfg)
    return None


def _typed_changed(key: str, rule: typed.Rule, value: float | int, apply: Callable[[Any], str | None]) -> None:
    """on_change of a bound `number_box`: parse the text; apply a valid new value."""
    ss = st.session_state
    text = ss.get(key)
    try:
        v = typed.parse(text, rule)
    except typed.Refused as exc:
        ss[f"{key}::refused"] = (text, str(exc))
        return
    problem = apply(v) if v != value else None
    if problem:
        ss[f"{key}::refused"] = (text, problem)
    else:
        ss.pop(f"{key}::refused", None)


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
    # a Markdown list of escaped items: each problem its own list item (read one by one,
    # and kept in view one by one), nothing in it ever read as Markdown
    shown = [f"- {plain(p)}" for p in items[:SHOWN_PROBLEMS]]
    if total > len(shown):
        shown.append(f"- {plain(f'... and {total - len(shown):,} more')}")
    text = plain(title) + "\n\n" + "\n".join(shown)
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
    costs (SPEC §1) and how many levels are on, by the plan model's one format rule
    (`calculators.plan.fmt`: the memo and Scenarios print the same digits). r and gamma,
    which change the noise but not the budget, are shown where they are set (planner,
    overview), so that changing them redraws only the planner's own part
    (`state.sidebar_signature`)."""
    from calculators import plan as pm

    cfg = state.config()
    s = planner.plan_summary(cfg, state.delta())
    st.session_state[state.K_SIDEBAR] = state.sidebar_signature()
    head = f"**Current plan:** {plain(state.source_label())}\n\n"
    levels = f"{s['levels_tabulated']} of {s['levels_total']} levels on"
    b = {k: pm.fmt(s[k], pm.BUDGET) for k in ("rho_release", "rho_us", "rho_pr", "rho_release_bounded")}
    with st.sidebar:
        if cfg.privacy_defn == "puredp":
            st.markdown(
                f"{head}**Pure DP** (geometric noise): ε release **{b['rho_release']}** (US {b['rho_us']}, "
                f"PR {b['rho_pr']}; bounded {b['rho_release_bounded']}), δ = 0  \n{levels}"
            )
            return
        st.markdown(
            f"{head}ρ release **{b['rho_release']}** (US {b['rho_us']}, PR {b['rho_pr']}; "
            f"bounded {b['rho_release_bounded']})  \n"
            f"ε at δ = {s['delta']:g}: **{pm.fmt(s['eps_tight'])}** tight, {pm.fmt(s['eps_classic'])} classic  \n"
            f"{levels}"
        )
