"""Adaptive tables: thresholds Theta_1..3 per level, typed or derived from a target
relative error; which table a group gets and how accurate it is, by true size."""

import streamlit as st

from calculators.config import THRESHOLD_LIMIT, ConfigError
from calculators.levels import PopulationGroupLevel
from ui.safetab import analysis, projection_panel
from ui.core import charts, history, planner, state, typed, widgets

state.page_setup()

st.title("Adaptive tables")
st.caption(
    "A group's stage-1 noisy total is compared with three thresholds Θ₁ ≤ Θ₂ ≤ Θ₃: below Θ₁ it gets a "
    "total only, then sex × age4 (8 cells), sex × age9 (18 cells), and from Θ₃ sex × age23 (46 cells). "
    "Every cell gets the same stage-2 noise, so more cells mean a noisier total but more detail. "
    "Thresholds cost no privacy budget; they decide how the budget is spread."
)


def _set_thresholds(lvl: PopulationGroupLevel, th) -> bool:
    try:
        state.set_config(state.config().with_thresholds(lvl, th))
        return True
    except ConfigError as exc:
        state.flash("error", f"Thresholds of {planner.level_label(lvl)} not changed:\n"
                    + "\n".join(f"- {p}" for p in exc.problems))
        return False


#: What the typed boxes accept: thresholds as the configuration does (whole numbers
#: within ±THRESHOLD_LIMIT), a target relative error from 0.1 to 1000 %.
THETA_RULE = typed.Rule(whole=True, lo=-THRESHOLD_LIMIT, hi=THRESHOLD_LIMIT, unit="persons")
TARGET_RULE = typed.Rule(lo=0.1, hi=1000.0, unit="%")
#: The two charts of a level, one per tab.
CHART_TABS = ["Which table a group gets", "Expected accuracy"]


def _derived(lvl: PopulationGroupLevel) -> tuple[int, int, int]:
    return analysis.derive(state.config(), lvl, st.session_state.get("ad_target_value", 10.0) / 100,
                           st.session_state["ad_rule"])


def _on_typed(lvl: PopulationGroupLevel, j: int, value: int) -> str | None:
    """Θj of a level typed: applied, or why not (e.g. it would exceed Θj+1)."""
    th = list(state.config().thresholds(lvl))
    th[j - 1] = value
    try:
        state.set_config(state.config().with_thresholds(lvl, th))
    except ConfigError as exc:
        return "Not applied: " + "; ".join(exc.problems) + "."
    return None


def _on_derive_inputs(lvl: PopulationGroupLevel) -> None:
    _set_thresholds(lvl, _derived(lvl))


def _on_target(lvl: PopulationGroupLevel, value: float) -> str | None:
    """A target relative error typed: kept, and this level's thresholds derived from it."""
    st.session_state["ad_target_value"] = value
    derived = _derived(lvl)
    try:
        state.set_config(state.config().with_thresholds(lvl, derived))
    except ConfigError as exc:
        return "Thresholds not changed: " + "; ".join(exc.problems) + "."
    return None


@st.fragment
def _page() -> None:
    """Everything below the title: a change of level or thresholds redraws only this
    part (`state.fragment_done` redraws the rest when the sidebar must change)."""
    ss = st.session_state
    widgets.fragment_start()  # a change the sidebar shows: the whole app at once, not twice
    state.show_flashes()
    cfg = state.config()
    levels = cfg.tabulated_levels()
    if not levels:
        st.warning("No population group level is tabulated (every ρ is 0 or the runs are off). "
                   "Switch levels on in the Budget and MOE planner.")
        state.fragment_done()
        return

    keys = [lvl.key for lvl in levels]
    if ss.get("ad_level") not in keys:
        ss["ad_level"] = "(COUNTY, 2)" if "(COUNTY, 2)" in keys else keys[0]

    top = st.columns([1.2, 1.6, 2.2])
    key = top[0].selectbox("Population group level", keys, key="ad_level", persist_state="session",
                           format_func=lambda k: planner.level_label(PopulationGroupLevel.parse(k)))
    level = PopulationGroupLevel.parse(key)
    ss.setdefault("ad_mode", "typed")
    mode = top[1].radio("Thresholds", ["typed", "derived"], horizontal=True, key="ad_mode", persist_state="session",
                        format_func=lambda m: {"typed": "Type Θ₁, Θ₂, Θ₃",
                                               "derived": "Derive from a target relative error"}[m])
    sig = analysis.sigmas(cfg, level)
    u = planner.units(cfg)
    S = planner.stability_of(cfg)
    eps = planner.epsilon_of(cfg.rho(level), state.delta(), cfg.privacy_defn)
    eps_text = "" if u["puredp"] else f" (ε ≈ {eps:.3g} at δ = {state.delta():.0e})"
    top[2].markdown(
        f"{u['budget']} = **{cfg.rho(level):.5g}**{eps_text}, S = {S}, γ = {cfg.gamma:g}  \n"
        f"{u['scale']} stage 1 = {sig['stage1']:.4g} (MOE of the stage-1 total "
        f"{planner.level_moe(cfg.rho(level), S, cfg.gamma, planner.EXACT, 'stage1', sig['noise'])}), "
        f"{u['scale']} stage 2 = {sig['stage2']:.4g} ({u['law']} noise)"
    )

    th = cfg.thresholds(level)
    if ss.get("ad_t_level") != key:  # a refused Θ was typed for the level it names: not kept for another
        for j in (1, 2, 3):
            ss.pop(f"ad_t{j}::refused", None)
        ss["ad_t_level"] = key
    if mode == "typed":
        tc = st.columns(3)
        for j in (1, 2, 3):
            widgets.number_box(f"Θ{j} (persons)", f"ad_t{j}", THETA_RULE, int(th[j - 1]), container=tc[j - 1],
                               on_change=lambda v, j=j: _on_typed(level, j, v),
                               help=f"A group whose stage-1 noisy total is at least Θ{j} gets "
                                    f"{analysis.TABLE_NAMES[j]}. A whole number, used exactly as typed; "
                                    "Θ₁ ≤ Θ₂ ≤ Θ₃.")
    else:
        dc = st.columns([1, 2.2, 1.4])
        ss.setdefault("ad_rule", "average_cell")
        widgets.number_box(
            "Target relative error (%)", "ad_target", TARGET_RULE, ss.get("ad_target_value", 10.0),
            container=dc[0], on_change=lambda v: _on_target(level, v),
            help="Relative MOE = MOE / expected count, from 0.1 to 1000 (%), used exactly as typed. Changing it "
                 "sets this level's thresholds.")
        dc[1].radio("Θⱼ is the smallest size at which", list(analysis.RULES), key="ad_rule", persist_state="session",
                    format_func=lambda r: analysis.RULES[r], on_change=_on_derive_inputs, args=(level,))
        derived = _derived(level)
        with dc[2]:
            st.markdown(f"Derived: **Θ = {derived[0]:,}, {derived[1]:,}, {derived[2]:,}**  \n"
                        f"(current: {th[0]:,}, {th[1]:,}, {th[2]:,})")
            if tuple(derived) != tuple(th) and st.button("Use them for this level", key="ad_apply_one"):
                _set_thresholds(level, derived)
                st.rerun()
            if st.button("Use this target for every level", key="ad_apply_all",
                         help="Each tabulated level gets thresholds derived from its own noise scale."):
                with history.batch(st.session_state):  # one step to undo
                    for lvl in state.config().tabulated_levels():
                        if not _set_thresholds(lvl, _derived(lvl)):
                            break
                st.rerun()
        st.caption(f"Derived with `calculators.adaptive.derive_thresholds` (exact {u['law']} MOEs): "
                   "average cell: Θⱼ = ⌈cⱼ · cell MOE / target⌉; total: Θⱼ = ⌈MOE(sum of cⱼ cells) / target⌉, "
                   "with cⱼ = 8, 18, 46.")

    cfg = state.config()
    th = cfg.thresholds(level)
    if level.is_state_or_above and level.iteration_level == 2:
        st.caption("TotalOnly (DETAILED_ONLY) iterations of this level skip the adaptive choice: they get one total "
                   "with the whole budget. The curves below are for every other group.")

    st.markdown(f"**{planner.level_label(level)}: the four possible tables** (Θ = {th[0]:,}, {th[1]:,}, {th[2]:,})")
    widgets.table(analysis.level_tables(cfg, level), f"tables_{level.geo}_{level.iteration_level}.csv",
                  key="ad_tables",
                  column_config={
                      "Stat level": st.column_config.NumberColumn("Level", width=50),
                      "Published table": st.column_config.TextColumn(width=160),
                      "When (stage-1 noisy total)": st.column_config.TextColumn(width=220),
                      "Cells": st.column_config.NumberColumn(width=48),
                      "Cell MOE (exact)": st.column_config.NumberColumn(width=98),
                      "Cell MOE ⌊1.96σ⌋": st.column_config.NumberColumn("Cell ⌊1.96σ⌋", width=98,
                                                                        help="Cell MOE ⌊1.96σ⌋ (design-paper bound)"),
                      "Total T1 MOE (exact)": st.column_config.NumberColumn("T1 MOE (exact)", width=96),
                      "Total T1 MOE ⌊1.96σ√c⌋": st.column_config.NumberColumn(
                          "T1 ⌊1.96σ√c⌋", width=96, help="Design-paper bound of the sum of c cells."),
                  },
                  caption="MOEs in persons. The total T1 of a sex × age table is the sum of its cells, so its "
                          "MOE is that of a sum of c cells.")

    ss.setdefault("ad_log", True)
    log_x = st.toggle("Log scale for the group size", key="ad_log", persist_state="session")
    # one chart per tab, only the open one drawn (`widgets.kept_tabs` says why)
    which, accuracy = widgets.kept_tabs(CHART_TABS, key="ad_chart_tabs")
    if which.open:
        with which:
            probs = analysis.stat_level_curves(cfg, level)
            widgets.chart(charts.stat_level_probabilities(probs, th, log_x=log_x), probs,
                          f"table_probabilities_{level.geo}_{level.iteration_level}.csv", key="ad_prob_chart")
    if accuracy.open:
        with accuracy:
            moes = analysis.moe_curves(cfg, level)
            widgets.chart(charts.expected_moe(moes, th, log_x=log_x), moes,
                          f"expected_moe_{level.geo}_{level.iteration_level}.csv", key="ad_moe_chart")
            st.caption("Each published cell has the same MOE whatever the group's size; what changes with size is "
                       "how many cells the group is split into, hence the relative MOE of a cell and the MOE of the "
                       "group total.")

    st.subheader(f"National outcome: {planner.level_label(level)} and every level")
    projection_panel.outcome(cfg, "ad_nat", level=level, columns=projection_panel.PLANNER_COLUMNS)  # one table

    st.subheader("Thresholds of every level")
    all_th = analysis.thresholds_table(cfg)
    widgets.table(all_th, "thresholds.csv", key="ad_all", height=35 * (len(all_th) + 1) + 3,
                  column_config={planner.GEO: st.column_config.TextColumn(width=86),
                                 planner.ITER: st.column_config.TextColumn(width=70),
                                 **{c: st.column_config.NumberColumn(width=66) for c in ("Θ₁", "Θ₂", "Θ₃")},
                                 "Cell MOE (exact)": st.column_config.NumberColumn(width=100),
                                 **{c: st.column_config.NumberColumn(
                                     "Rel. MOE " + c.split(" at ")[1].split(" ")[0].replace("1", "₁").replace(
                                         "2", "₂").replace("3", "₃") + " (%)", format="%.1f", width=110, help=c)
                                    for c in all_th.columns if "rel." in c}},
                  caption="Relative MOE (%) of a cell of the table a threshold opens, when the group is exactly at "
                          "the threshold and spread evenly over the table's cells.")
    state.fragment_done()


_page()
