"""Budget and MOE planner: rho <-> MOE per population group level, r, gamma, presets,
MOE against rho (plans side by side: the Scenarios page)."""

import streamlit as st

from calculators.config import ConfigError
from ui import charts, planner, state, widgets

state.page_setup()

st.title("Budget and MOE planner")
_b = planner.units(state.config())["budget"]
st.caption(
    "Each population group level (a geography level × Regional or Detailed iterations) has its own "
    f"budget {_b}. Type a **MOE target** and {_b} follows, or type **{_b}** and the MOE follows. The MOE is the "
    "95% margin of error of one published stage-2 count, in persons."
)

# ----------------------------------------------------------------- presets
p = st.columns([1.5, 1.5, 2.5])
if p[0].button("Load the 2020 production plan", key="preset_production", icon=":material/restart_alt:"):
    state.load_production()
    st.rerun()
has_sample = state.sample_config_path().is_file()
if p[1].button("Load the sample-data plan", key="preset_sample", disabled=not has_sample,
               icon=":material/dataset:",
               help="sample_data/params/config.json: the 2020 budgets with thresholds scaled to the "
                    "synthetic nation." if has_sample else "sample_data/ is not there."):
    if state.load_sample():
        st.rerun()
p[2].markdown(f"Current plan: **{state.source_label()}**")

cfg = state.config()
S = planner.stability_of(cfg)

# ----------------------------------------------------------------- controls


def _on_r():
    state.update(max_race_codes=int(st.session_state["w_r"]))


def _on_gamma():
    state.update(privacy_budget_p_stage_1_fraction=float(st.session_state["w_gamma"]))


def _on_method():
    st.session_state[state.K_METHOD] = st.session_state["w_method"]


def _on_runs():
    state.update(run_us=bool(st.session_state["w_run_us"]), run_pr=bool(st.session_state["w_run_pr"]))


c = st.columns([1.3, 1, 2.4, 1])
with c[0]:
    state.bind("w_r", cfg.max_race_codes)
    st.slider("Race multiplicity r (max race codes)", 1, 8, key="w_r", on_change=_on_r,
              help="The most race codes one person can have. Stability S = max(2, r) + 1 with the 2020 "
                   "spec files: the most groups one person joins in one level.")
    st.markdown(f"Stability **S = {S}**")
with c[1]:
    state.bind("w_gamma", float(cfg.gamma))
    st.number_input("Stage-1 fraction γ", min_value=0.01, max_value=0.99, step=0.01, format="%.3f",
                    key="w_gamma", on_change=_on_gamma,
                    help="Share of each level's ρ spent on the (unpublished) stage-1 total that picks the table.")
with c[2]:
    state.bind("w_method", state.method())
    st.radio(f"{planner.units(cfg)['budget']} from a MOE target by", planner.METHODS, key="w_method",
             on_change=_on_method, format_func=lambda m: planner.method_labels(cfg)[m])
with c[3]:
    state.bind("w_run_us", cfg.run_us)
    st.toggle("US run", key="w_run_us", on_change=_on_runs)
    state.bind("w_run_pr", cfg.run_pr)
    st.toggle("Puerto Rico run", key="w_run_pr", on_change=_on_runs)

method = state.method()
cfg = state.config()
u = planner.units(cfg)
if u["puredp"]:
    st.info(
        "This plan uses **pure DP** (privacy_defn = puredp): each level's budget is **ε**, its noise is "
        "two-sided geometric with scale b = S / ((1−γ) ε) in stage 2, and the MOEs below are that law's. "
        f"MOE targets are met with the **{planner.label(planner.METHOD_SHORT[method], cfg)}** "
        "(⌊1.96σ⌋ uses the geometric's standard deviation σ). Both MOE columns are always shown.",
        icon=":material/info:",
    )
else:
    st.info(
        f"Shown: MOE targets are met with the **{planner.METHOD_SHORT[method]}**; "
        f"{'ρ = 1.96²·S / (2·MOE²) / (1−γ) (design paper)' if method == planner.BOUND else 'ρ = the smallest budget whose exact discrete-Gaussian 95% MOE is at most the target'}. "
        "Both MOE columns are always shown.",
        icon=":material/info:",
    )

# ----------------------------------------------------------------- the table
ver = st.session_state.get("planner_version", 0)
editor_key = f"planner_{ver}"
table = planner.plan_table(cfg, state.targets(), method)
st.data_editor(
    table,
    key=editor_key,
    hide_index=True,
    num_rows="fixed",
    disabled=[col for col in table.columns if col not in planner.EDITABLE],
    column_config={
        planner.ON: st.column_config.CheckboxColumn(help="Tabulate this level (ρ > 0)."),
        planner.TARGET: st.column_config.NumberColumn(
            min_value=1, step=1, format="%d",
            help="MOE you want for one stage-2 cell (persons); ρ follows."),
        planner.RHO: st.column_config.NumberColumn(
            u["budget"], min_value=0.0, format="%.5g",
            help=f"{u['budget_long'][0].upper()}{u['budget_long'][1:]} of the level; the MOE follows. 0 = off."),
        planner.SHARE: st.column_config.NumberColumn(planner.label(planner.SHARE, cfg), format="%.1f%%"),
        planner.SIGMA2: st.column_config.NumberColumn(planner.label(planner.SIGMA2, cfg), format="%.4g",
                                                      help=u["scale_formula"]),
        planner.MOE_BOUND: st.column_config.NumberColumn(format="%d", help="Design paper: ⌊1.96σ⌋"),
        planner.MOE_EXACT: st.column_config.NumberColumn(
            format="%d", help=f"Smallest m with P(|noise| ≤ m) ≥ 95% for the {u['law']}"),
    },
    height=35 * 21 + 3,
)
edits = (st.session_state.get(editor_key) or {}).get("edited_rows") or {}
if edits:
    new_cfg, new_targets, problems = planner.apply_edits(cfg, state.targets(), edits, method)
    for msg in problems:
        state.flash("error", msg)
    state.set_config(new_cfg, targets=new_targets)
    st.session_state["planner_version"] = ver + 1
    st.rerun()
widgets.download_csv(planner.relabel(table, cfg), "budget_plan.csv", key="plan_csv",
                     label="Download this table (CSV)")

missed = planner.missed_targets(table)
if missed:
    st.warning(
        f"{len(missed)} level(s) miss their MOE target with the current r and γ: " + ", ".join(missed) + ".",
        icon=":material/warning:",
    )
    if st.button(f"Recompute {u['budget']} so every level meets its target", key="resolve"):
        try:
            state.set_config(planner.resolve_targets(cfg, state.targets(), method), targets=state.targets())
        except (ConfigError, ValueError) as exc:
            state.flash("error", f"Could not recompute: {exc}")
        st.rerun()

s = planner.plan_summary(cfg, state.delta())
m = st.columns(5)
m[0].metric(f"{u['budget']}, US run", f"{s['rho_us']:.4g}")
m[1].metric(f"{u['budget']}, Puerto Rico run", f"{s['rho_pr']:.4g}")
m[2].metric(f"{u['budget']}, release (bounded)", f"{s['rho_release']:.4g} ({s['rho_release_bounded']:.4g})")
if u["puredp"]:
    m[3].metric("ε, pure DP (δ = 0)", f"{s['eps_tight']:.2f}")
else:
    m[3].metric(f"ε at δ = {s['delta']:.0e} (tight / classic)", f"{s['eps_tight']:.2f} / {s['eps_classic']:.2f}")
m[4].metric("Levels tabulated", f"{s['levels_tabulated']} of {s['levels_total']}")

# ----------------------------------------------------------------- charts
left, right = st.columns(2, gap="large")
with left:
    st.subheader(f"MOE against {u['budget']}")
    rhos = [r for r, _ in planner.rho_groups(cfg)]
    lo = min([1e-3] + [r / 2 for r in rhos])
    hi = max([10.0] + [r * 2 for r in rhos])
    curve = planner.moe_rho_curve(S, cfg.gamma, lo, hi, noise=planner.noise_of(cfg))
    points = planner.level_points(cfg, method)
    widgets.chart(charts.moe_vs_rho(curve, points, planner.label(planner.METHOD_SHORT[method], cfg), units=u),
                  planner.relabel(curve, cfg), "moe_vs_rho.csv", key="moe_rho_chart")
    st.caption(f"At S = {S} and γ = {cfg.gamma:g}. Diamonds: this plan's levels.")
with right:
    st.subheader("Race multiplicity r")
    long = planner.race_multiplicity_long(cfg, method)
    wide = planner.race_multiplicity_table(cfg, method)
    if long.empty:
        st.info("No level is tabulated.")
    else:
        widgets.chart(charts.race_multiplicity(long, units=u), planner.relabel(long, cfg), "race_multiplicity.csv",
                      key="r_chart")
        cur = cfg.max_race_codes
        widgets.table(
            wide, "race_multiplicity_table.csv", key="r_table",
            styler=wide.style.apply(
                lambda row: ["background-color: #fff3cd" if row["r"] == cur else "" for _ in row], axis=1),
            caption=f"Row r = {cur} is the current plan. Budgets {u['budget']} and γ stay as they are; MOE = "
                    f"{planner.METHOD_SHORT[method]} of one stage-2 cell.",
        )

# ----------------------------------------------------------------- compare
st.divider()
st.page_link("pages/scenarios.py", label="Compare this plan with saved scenarios and presets, any number side by side",
             icon=":material/compare_arrows:")
