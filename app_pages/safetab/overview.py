"""Overview: what SafeTab-P does, its two-stage flow, and the current plan in numbers."""

import streamlit as st

from ui.core import charts, planner, state, typed, widgets
from ui.learn import layout as learn

state.page_setup()
cfg = state.config()

st.title("SafeTab-P Studio")
st.markdown(
    "Tune, explain and run **SafeTab-P**, the differentially private algorithm that published the "
    "2020 Census **Detailed DHC-A**: counts of people, and sex-by-age tables, for thousands of detailed "
    "race and ethnicity groups in the nation, every state, county, tract, place and tribal area."
)
learn.overview_links()  # the lessons, and "Start the class" (issue 41)

_u = planner.units(cfg)
_b = _u["budget"]
st.subheader("The two-stage flow")
st.graphviz_chart(charts.flow_dot(cfg), width="stretch", height="content")
st.caption(f"Diagram summary: persons are counted in population groups (S = {planner.stability_of(cfg)} per person "
           f"and level); stage 1 draws a noisy total with a share γ = {cfg.gamma:g} of the budget, never published; "
           "comparing it with Θ₁, Θ₂, Θ₃ picks a total only or a sex × age table with 4, 9 or 23 age groups, drawn "
           "in stage 2 with the rest of the budget; post-processing then publishes T1 and T2.")
st.caption(
    "Numbers in the boxes are those of the current plan. Each population group level (a geography "
    f"level × Regional or Detailed iterations) runs this flow with its own budget {_b}. The persons' records are "
    "confidential; only the T1 and T2 tables are published."
)

left, right = st.columns([5, 6], gap="large")
with left:
    st.subheader("What it does, in plain words")
    st.markdown(
        f"""
1. **Groups.** Every person is counted in the *population groups* they belong to: a place
   (e.g. a county) crossed with a race or ethnicity group (e.g. "Albanian alone", "Asian alone or
   in any combination"). A person with several race codes joins several groups: at most **S** per
   level (S = {planner.stability_of(cfg)} here, from race multiplicity r = {cfg.max_race_codes}).
2. **Stage 1.** Each group gets a noisy total that spends a small share γ = {cfg.gamma:g} of the level's
   budget {_b}. It is never published; it only decides how much detail the group gets.
3. **Stage 2.** By comparing that noisy total with three thresholds Θ₁ ≤ Θ₂ ≤ Θ₃, a group
   gets a total only, or a sex × age table with 4, 9 or 23 age groups, all with fresh noise that
   spends the rest of the budget (1−γ){_b}. Bigger groups get more detail.
4. **Post-processing** (free of privacy cost): totals are the sums of the table cells, small
   totals may be suppressed, coterminous areas share their numbers. The result is the T1 (totals)
   and T2 (sex × age) files.

Every group of the public universe is processed, empty or not, so the output never reveals
which groups have nobody in them. The noise is the exact **{_u["law"]}**, and the privacy
loss is measured in **{"pure-DP ε" if _u["puredp"] else "zCDP ρ"}**: each population group level spends
its own {_b} and the levels add up. **A smaller {_b} (or ε) is more private**: more noise, larger MOEs.
The Glossary page explains every term.
"""
    )


def _on_delta():
    st.session_state[state.K_DELTA] = st.session_state["w_delta"]


with right:
    st.subheader(f"The current plan: {widgets.plain(state.source_label())}")
    u = planner.units(cfg)
    if u["puredp"]:
        st.info("This plan uses **pure DP** (privacy_defn = puredp): level budgets are ε, noise is two-sided "
                "geometric, and the release is ε-DP with δ = 0 (no conversion needed).", icon=":material/info:")
    else:
        state.bind("w_delta", state.delta())
        st.select_slider(
            "δ for the (ε, δ) conversion", options=list(planner.DELTAS), key="w_delta", on_change=_on_delta,
            format_func=lambda d: f"{d:.0e}",
            help="δ is the small chance that the ε guarantee does not hold. zCDP ρ converts to (ε, δ)-DP for any "
                 "δ; a smaller δ gives a larger ε for the same ρ.",
        )
    s = planner.plan_summary(cfg, state.delta())
    b = u["budget"]
    c = st.columns(2)
    c[0].metric(f"{b}, US run", f"{typed.significant(s['rho_us'])}", help="Sequential composition: the US run spends the sum "
                f"of the {b} of its population group levels. Smaller is more private.")
    c[1].metric(f"{b}, Puerto Rico run", f"{typed.significant(s['rho_pr'])}")
    c = st.columns(2)
    c[0].metric(f"{b}, whole release", f"{typed.significant(s['rho_release'])}",
                help="max(US, PR): US and Puerto Rico persons are disjoint, so the release costs the larger of "
                     "the two.")
    c[1].metric(f"{b}, bounded neighbours", f"{typed.significant(s['rho_release_bounded'])}",
                help="If a neighbouring data set changes one person instead of adding or removing one, "
                     "the cost doubles (×2).")
    c = st.columns(2)
    if not u["puredp"]:
        c[0].metric(f"ε at δ = {s['delta']:.0e}, tight", f"{s['eps_tight']:.2f}",
                    help="The tighter numeric conversion of Canonne, Kamath and Steinke (2020). Smaller is more "
                         "private.")
        c[1].metric(f"ε at δ = {s['delta']:.0e}, classic", f"{s['eps_classic']:.2f}",
                    help="ε = ρ + 2√(ρ ln(1/δ)) (Bun and Steinke 2016).")
        c = st.columns(2)
        c[0].metric("ε, bounded (tight)", f"{s['eps_tight_bounded']:.2f}",
                    help=f"Classic: {s['eps_classic_bounded']:.2f}.")
    c[1].metric("Levels tabulated", f"{s['levels_tabulated']} of {s['levels_total']}",
                help=f"US {s['levels_us']}, Puerto Rico {s['levels_pr']}. A level with {b} = 0 (or whose run is "
                     "off) is not tabulated.")
    widgets.download_csv(planner.summary_table(cfg, state.delta()), "plan_summary.csv", key="summary_csv",
                         label="Download this summary (CSV)")


st.markdown("**MOE per level**: the 95% margin of error of one published count, in persons")
moe = planner.relabel(planner.moe_table(cfg, state.targets(), state.delta()), cfg)
eps_col = planner.epsilon_label(cfg, state.delta())
widgets.table(
    moe, "moe_per_level.csv", key="moe_table", height=35 * (len(moe) + 1) + 3,
    column_config={
        planner.GEO: st.column_config.TextColumn(width=86),
        planner.ITER: st.column_config.TextColumn(width=72),
        planner.TARGET: st.column_config.NumberColumn("Target", width=54, help="The planner's MOE target."),
        planner.label(planner.RHO, cfg): st.column_config.NumberColumn(format="%.5g", width=56,
                                                                       help="The level's budget."),
        eps_col: st.column_config.NumberColumn("ε", format="%.3g", width=52,
                                               help=f"The ε this level's ρ alone gives at δ = {state.delta():.0e} "
                                                    "(tight conversion)."),
        planner.label("σ² stage 1", cfg): None,
        planner.label(planner.SIGMA2, cfg): st.column_config.NumberColumn(
            planner.label("σ² st. 2", cfg), format="%.4g", width=62, help="Noise scale of a published count."),
        planner.MOE_EXACT: st.column_config.NumberColumn("MOE exact", width=72),
        planner.MOE_BOUND: st.column_config.NumberColumn("MOE ⌊1.96σ⌋", width=82),
        "Stage-1 total MOE (exact, not published)": st.column_config.NumberColumn(
            "Stage-1 MOE", width=80, help="MOE of the stage-1 total (exact; never published)."),
        "TotalOnly total MOE (exact)": st.column_config.NumberColumn(
            "TotalOnly", width=76, help="MOE of a TotalOnly total (USA / STATE / PR-STATE only; exact)."),
        "Θ₁, Θ₂, Θ₃": st.column_config.TextColumn(width=128),
    },
    caption=(
        "Target: what the planner was asked for (the 2020 targets are 3, 11 and 50; the published "
        "budgets, rounded to 3 decimals, give exact MOEs of 3, 11 and 49, and ⌊1.96σ⌋ of 3, 10 and 49). "
        "A published count is a total at stat level 0, or one sex × age cell. "
        f"'⌊1.96σ⌋' is the design paper's bound; 'exact' is the {planner.units(cfg)['law']}'s own 95% half-width. "
        "TotalOnly groups (USA / STATE only) get one total with the whole budget; — = does not apply. "
        "The download also has σ² of stage 1."
    ),
)

st.markdown("**Next:**")
n = st.columns(3)
n[0].page_link("app_pages/safetab/budget.py", label="Plan budgets and MOEs", icon=":material/tune:")
n[1].page_link("app_pages/safetab/adaptive.py", label="Set the adaptive thresholds", icon=":material/table_chart:")
n[2].page_link("app_pages/safetab/suppression.py", label="Tune suppression", icon=":material/visibility_off:")
n = st.columns(3)
n[0].page_link("app_pages/safetab/run.py", label="Run it on data", icon=":material/play_circle:")
n[1].page_link("app_pages/safetab/configuration.py", label="Import, export, share", icon=":material/settings:")
n[2].page_link("app_pages/safetab/glossary.py", label="Glossary of terms", icon=":material/menu_book:")
n = st.columns(3)
n[0].page_link("app_pages/committee/scenarios.py", label="Save and compare scenarios", icon=":material/folder_open:")
n[1].page_link("app_pages/committee/memo.py", label="Write the decision memo", icon=":material/picture_as_pdf:")
