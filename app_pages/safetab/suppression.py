"""Suppression of small totals: zero-suppression chance p -> threshold T per level,
suppression probability and bias against the true count, the expected released value."""

import pandas as pd
import streamlit as st

from calculators.levels import PopulationGroupLevel
from ui.safetab import analysis, projection_panel
from ui.core import charts, planner, state, typed, widgets

state.page_setup()

st.title("Suppression")
st.caption(
    "At sub-state levels, a group that only gets a total (stat level 0) has that total **suppressed** "
    "unless its noisy value is above a threshold T. T is the smallest count with P(noise ≤ T) ≥ p, so a "
    "true zero is hidden with probability at least p (the zero-suppression chance). Counts that are "
    "released are biased upward: only the lucky draws get through. Suppression is post-processing: "
    "it costs no privacy budget. T is the design paper's eq. (12) (Haney et al., Section 5.3.2; its Table 6, "
    "T = 93, 21 and 11 at ρ 0.008, 0.159 and 0.543, is set beside the app's figures on the Budget and MOE "
    "planner)."
)


#: What the typed boxes accept: p as the configuration does (0 <= p < 1), n a whole
#: number of persons.
P_RULE = typed.Rule(lo=0.0, hi=1.0, hi_open=True)
N_RULE = typed.Rule(whole=True, lo=0, hi=10**9, unit="persons")
#: The two charts of a level, one per tab.
CHART_TABS = ["Chance of suppression", "Bias of what is released"]


@st.fragment
def _page() -> None:
    """Everything below the title: a change of p, of the level or of n redraws only this
    part (the sidebar does not show them; `state.fragment_done` redraws the rest when
    it must)."""
    ss = st.session_state
    widgets.fragment_start()  # a change the sidebar shows: the whole app at once, not twice
    state.show_flashes()
    cfg = state.config()
    c = st.columns([1.3, 1.1, 2.2])
    with c[0]:
        widgets.number_box("Zero-suppression chance p", "w_p", P_RULE, float(cfg.zero_suppression_chance),
                           on_change=lambda v: widgets.plan_update(zero_suppression_chance=v),
                           help="config key zero_suppression_chance (2020: 0.9999): the chance that a group with "
                                "nobody in it has its total hidden. At least 0 and below 1, used exactly as typed; "
                                "0 turns suppression off.")
    cfg = state.config()
    p = cfg.zero_suppression_chance
    sub_state = [lvl for lvl in cfg.tabulated_levels() if not lvl.is_state_or_above]

    u = planner.units(cfg)
    st.subheader("Threshold T per level")
    tbl = analysis.suppression_table(cfg, p, state.delta())
    widgets.table(
        tbl, "suppression_thresholds.csv", key="sup_table", height=35 * (len(tbl) + 1) + 3,
        column_config={
            planner.label(planner.RHO, cfg): st.column_config.NumberColumn(format="%.5g", width=56),
            planner.epsilon_label(cfg, state.delta()): st.column_config.NumberColumn(
                "ε", format="%.3g", width=52,
                help=f"The ε this level's ρ alone gives at δ = {state.delta():.0e} (tight conversion). Smaller is "
                     "more private."),
            planner.label("σ² stage 2", cfg): None,
            planner.GEO: st.column_config.TextColumn(width=86),
            planner.ITER: st.column_config.TextColumn(width=70),
            "Suppression": st.column_config.TextColumn(width=140),
            "Threshold T": st.column_config.NumberColumn("T", width=44, help="Suppression threshold (persons)."),
            "P(true 0 suppressed)": st.column_config.NumberColumn("P(0 hidden)", format="%.6f", width=85,
                                                                  help="P(a true 0 is suppressed) = CDF(T) ≥ p."),
            "P(suppressed) at n = T": st.column_config.NumberColumn("P(hidden) at T", format="%.4f", width=95),
            "n released with 95% chance": st.column_config.NumberColumn(
                "n released", width=80, help="Smallest true count released with at least 95% chance."),
            "Bias of a released count at n = 0": st.column_config.NumberColumn(
                "Bias at 0", format="%.2f", width=70, help="E[noise | released] when the true count is 0."),
            "Bias of a released count at n = T": st.column_config.NumberColumn(
                "Bias at T", format="%.2f", width=70, help="E[noise | released] when the true count is T."),
        },
        caption=f"T uses the exact stage-2 {u['scale']} = {u['scale_formula']} of the {u['law']} noise, as the "
                "engine does (the download also has it). USA, STATE and PR-STATE totals are never suppressed "
                "(— = does not apply).",
    )

    st.subheader("Suppressed groups nationally")
    projection_panel.outcome(cfg, "sup_nat", columns=projection_panel.PLANNER_COLUMNS)  # one table

    if p == 0:
        st.info("Suppression is off (p = 0): every total is released.")
        state.fragment_done()
        return
    if not sub_state:
        st.info("No sub-state level is tabulated, so nothing can be suppressed.")
        state.fragment_done()
        return

    keys = [lvl.key for lvl in sub_state]
    if ss.get("sup_level") not in keys:
        ss["sup_level"] = "(COUNTY, 2)" if "(COUNTY, 2)" in keys else keys[0]
    with c[1]:
        key = st.selectbox("Level for the curves", keys, key="sup_level", persist_state="session",
                           format_func=lambda k: planner.level_label(PopulationGroupLevel.parse(k)))
    level = PopulationGroupLevel.parse(key)
    sig = analysis.sigmas(cfg, level)
    s2, nz = sig["stage2"], sig["noise"]
    t = analysis.threshold_for(cfg, level, p)
    with c[2]:
        st.markdown(f"**{planner.level_label(level)}**: {u['scale']} stage 2 = {s2:.4g}, threshold **T = {t}**  \n"
                    f"a count is released if its noisy value is above {t}.")
        ss.setdefault("sup_frac", False)
        as_fraction = st.toggle("x axis as a fraction of T (n / T)", key="sup_frac", persist_state="session",
                                disabled=t <= 0)

    widgets.typed_value("sup_n", max(t, 0))  # the first n shown is T
    _curves(level, t, s2, nz, as_fraction and t > 0, p, cfg)
    state.fragment_done()


@st.fragment
def _curves(level: PopulationGroupLevel, t: int, s2: float, nz: str, frac: bool, p: float, cfg) -> None:
    """The curves and the chosen true count n: a change of n redraws only this part."""
    n = int(widgets.typed_value("sup_n", max(t, 0)))
    v = analysis.value_at(n, t, s2, nz)
    curves = analysis.suppression_curves(t, s2, noise=nz)
    # one chart per tab, only the open one drawn (`widgets.kept_tabs` says why)
    chance, bias = widgets.kept_tabs(CHART_TABS, key="sup_chart_tabs")
    if chance.open:
        with chance:
            widgets.chart(charts.suppression_probability(curves, t, frac, n=n, at_n=v), curves,
                          f"suppression_{level.geo}_{level.iteration_level}.csv", key="sup_prob_chart")
    if bias.open:
        with bias:
            widgets.chart(charts.release_bias(curves, t, frac, n=n, at_n=v), curves,
                          f"suppression_bias_{level.geo}_{level.iteration_level}.csv", key="sup_bias_chart")
    st.caption(f"The ring and the dotted line mark the true count n = {n} chosen below.")

    st.subheader("One true count")
    vc = st.columns([1, 4])
    widgets.number_box("True count n (persons)", "sup_n", N_RULE, max(t, 0), container=vc[0],
                       help="A group's true (confidential) size, a whole number from 0 to 1,000,000,000; the "
                            "figures below are what happens to its total.")
    m = st.columns(5)
    m[0].metric("P(suppressed)", f"{v['P(suppressed)']:.4f}")
    m[1].metric("P(released)", f"{v['P(released)']:.4f}")
    m[2].metric("Expected if released", f"{v['Expected released value']:.2f}",
                help="E[n + noise | released]: the average of the counts that get published.")
    m[3].metric("Bias when released", f"{v['Bias of a released count']:+.2f}",
                help="E[noise | released], an exact discrete sum.")
    m[4].metric("Expected published", f"{v['Expected published value']:.2f}",
                help="Average published figure if suppressed counts are read as 0.")
    paper = analysis.paper_bias(n, t, s2, nz)
    if paper is not None:
        st.caption(f"Bias when released is the exact E[noise | n + noise > T] of the discrete Gaussian. The design "
                   f"paper's eq. (13) writes it with the normal's inverse Mills ratio, σφ((T − n)/σ) / "
                   f"(1 − Φ((T − n)/σ)), a continuous-Gaussian figure: {paper:+.2f} for this n "
                   f"(exact {v['Bias of a released count']:+.2f}).")
    widgets.download_csv(
        pd.DataFrame([{"Level": planner.level_label(level), "p": p, planner.label("σ² stage 2", cfg): s2,
                       "Threshold T": t, "True count n": n, **v}]),
        "one_true_count.csv", key="sup_one_csv", label="Download these numbers (CSV)")


_page()
