"""Budget and MOE planner: privacy definition, rho (or epsilon) <-> MOE per population
group level, r, gamma, presets, MOE against the budget (plans side by side: the Scenarios page)."""

import streamlit as st

from calculators import explain
from calculators.config import GAMMA_RANGE, ConfigError
from ui.safetab import analysis, projection_panel
from ui.core import charts, planner, state, typed, widgets

state.page_setup()
ss = st.session_state
#: What the typed boxes of this page accept (the configuration's own ranges).
GAMMA_RULE = typed.Rule(lo=GAMMA_RANGE[0], hi=GAMMA_RANGE[1])
REL_RULE = typed.Rule(lo=0.1, hi=1000.0, unit="%")
#: The tabs under the plan's key numbers; the first opens by default.
PLAN_TABS = ["National outcome", "MOE against the budget", "Race multiplicity r"]
#: The plan before the last switch of the privacy definition, to switch back to exactly.
K_ORIGIN = "privacy_origin"

st.title("Budget and MOE planner")
_b = planner.units(state.config())["budget"]
st.caption(
    "Each population group level (a geography level × Regional or Detailed iterations) has its own "
    f"privacy budget {_b}. Type a **MOE target** and {_b} follows, or type **{_b}** and the MOE follows. The MOE is "
    "the 95% margin of error of one published count, in persons. **A smaller budget is more private** and "
    "gives more noise (a larger MOE). Terms are explained in the Glossary."
)

# ----------------------------------------------------------------- presets
p = st.columns([1.3, 1.3, 2], vertical_alignment="center")
if p[0].button("2020 production plan", key="preset_production", icon=":material/restart_alt:", width="stretch",
               help="Load the 2020 production plan (SPEC §3): MOE targets 3 / 11 / 50, ρ 2.134 / 0.159 / 0.008."):
    state.load_production()
    st.rerun()
has_sample = state.sample_config_path().is_file()
if p[1].button("Sample-data plan", key="preset_sample", disabled=not has_sample,
               icon=":material/dataset:", width="stretch",
               help="Load sample_data/params/config.json: the 2020 budgets with thresholds scaled to the "
                    "synthetic nation." if has_sample else "sample_data/ is not there.") and state.load_sample():
    st.rerun()
p[2].markdown(f"Current plan: **{widgets.plain(state.source_label())}**")

# ----------------------------------------------------------------- controls
def _remember_change(kind: str, what: str) -> None:
    """Start (or extend) the before/after panel of a change of r or gamma."""
    change = ss.get(state.K_CHANGE)
    if change is None or change["kind"] != "rederive":
        ss[state.K_CHANGE] = {"kind": "rederive", "before": state.config(), "targets": state.targets(),
                              "what": [what]}
    else:
        change["what"].append(what)


def _on_r():
    old, new = state.config().max_race_codes, int(ss["w_r"])
    if new != old:
        _remember_change("r", f"r {old} → {new}")
        state.update(max_race_codes=new)


def _on_gamma(new: float) -> str | None:
    old = state.config().gamma
    problem = widgets.plan_update(privacy_budget_p_stage_1_fraction=new)
    if problem is None:
        _remember_change("gamma", f"γ {typed.show(old)} → {typed.show(new)}")
    return problem


def _on_method():
    ss[state.K_METHOD] = ss["w_method"]


def _on_runs():
    state.update(run_us=bool(ss["w_run_us"]), run_pr=bool(ss["w_run_pr"]))


def _on_privacy():
    """Switching the privacy definition converts every budget to the one of the new
    noise law that meets the same MOE targets, and shows what changed. Switching back
    before anything else changed restores the plan as it was, exactly (the converted
    budgets meet the same targets but are not the original ones, e.g. the 2020
    ρ 2.134 would come back as 1.528): the switch is a reversible view."""
    before, targets = state.config(), state.targets()
    defn = ss["w_privacy_defn"]
    what = [f"{planner.PRIVACY_NAMES[before.privacy_defn]} → {planner.PRIVACY_NAMES[defn]}"]
    origin = ss.get(K_ORIGIN)
    if origin is not None and origin["after"] == before.to_dict() and origin["before"].privacy_defn == defn:
        state.set_config(origin["before"], targets=origin["targets"])
        ss[state.K_EDITED] = origin["edited"]
        ss.pop(K_ORIGIN, None)
        ss[state.K_CHANGE] = {"kind": "privacy", "before": before, "targets": targets, "what": what,
                              "restored": True}
        return
    try:
        after, new_targets = planner.convert_privacy(before, targets, state.method(), defn)
    except (ConfigError, ValueError) as exc:
        state.flash("error", f"The privacy definition was not changed: {exc}")
        return
    edited = bool(ss.get(state.K_EDITED))
    state.set_config(after, targets=new_targets)
    ss[K_ORIGIN] = {"before": before, "targets": targets, "edited": edited, "after": after.to_dict()}
    ss[state.K_CHANGE] = {"kind": "privacy", "before": before, "targets": targets, "what": what}


# ----------------------------------------------------------------- before / after
def _change_panel(method: str, u: dict, delta: float) -> None:
    change = ss.get(state.K_CHANGE)
    if not change:
        return
    now = state.config()
    if change["kind"] == "privacy":
        with st.container(border=True):
            if change.get("restored"):
                st.markdown(f"**Privacy definition changed back ({change['what'][0]}).** The plan is again exactly "
                            "as it was before the switch (budgets, MOE targets, thresholds). Before and after:")
            else:
                st.markdown(f"**Privacy definition changed ({change['what'][0]}).** Every level's budget was "
                            f"converted so that it meets the same MOE target under the {u['law']} noise "
                            "(thresholds unchanged); switching back restores this plan exactly. Before and after:")
            widgets.change_table(planner.change_table(change["before"], now, state.targets(), delta), "chg_priv")
            b = st.columns([1, 2, 3])
            if b[0].button("OK", key="chg_ok", type="primary"):
                ss.pop(state.K_CHANGE, None)
                st.rerun()
            if b[1].button("Undo: back to the plan before", key="chg_undo"):
                state.set_config(change["before"], targets=change["targets"])
                ss.pop(state.K_CHANGE, None)
                st.rerun()
        return
    # r or gamma changed: offer (not apply) budgets re-derived from the targets
    rel = widgets.typed_value("rederive_rel", 10.0) / 100 if ss.get("rederive_th") else None
    try:
        proposal = analysis.rederive_plan(now, state.targets(), method, rel, ss.get("ad_rule", "average_cell"))
    except (ConfigError, ValueError) as exc:
        st.error(f"Could not re-derive the budgets: {exc}")
        return
    if proposal.to_dict() == now.to_dict():
        ss.pop(state.K_CHANGE, None)
        return
    with st.container(border=True):
        st.markdown(f"**You changed {', '.join(change['what'])}.** The budgets are as before, so the MOEs moved "
                    f"away from their targets. Re-derive {u['budget']} from the MOE targets?")
        st.caption(explain.r_change_columns(u["budget"])["caption"])
        widgets.change_table(planner.change_table(now, proposal, state.targets(), delta, kept_rederived=True),
                             "chg_rederive")
        old_r = change["before"].max_race_codes
        if now.max_race_codes < old_r:
            prof = projection_panel.chosen()
            why = [] if prof is None else explain.smaller_r_suppresses_more(
                change["before"], now.max_race_codes, state.targets(), method, prof)
            if why:
                st.info("\n\n".join(why), icon=":material/lightbulb:")
        b = st.columns([1.4, 1.4, 2.6])
        if b[0].button(f"Re-derive {u['budget']}", key="chg_apply", type="primary",
                       help="Apply the 'after' column: every level meets its MOE target again."):
            state.set_config(proposal, targets=state.targets())
            ss.pop(state.K_CHANGE, None)
            st.rerun()
        if b[1].button("Keep the budgets as they are", key="chg_keep"):
            ss.pop(state.K_CHANGE, None)
            st.rerun()
        with b[2]:
            ss.setdefault("rederive_th", False)
            st.checkbox("Also re-derive the thresholds Θ from a target relative error", key="rederive_th",
                        persist_state="session",
                        help="Each level's Θ₁, Θ₂, Θ₃ become the smallest group sizes whose table cells meet this "
                             "relative MOE at the new noise (the rule chosen on the Adaptive tables page).")
            if ss["rederive_th"]:
                widgets.number_box("Target relative error (%)", "rederive_rel", REL_RULE, 10.0,
                                   help="From 0.1 to 1000 (%), used exactly as typed.")


# ----------------------------------------------------------------- the table
def _on_edit(editor_key: str) -> None:
    edits = (ss.get(editor_key) or {}).get("edited_rows") or {}
    if not edits:
        return
    new_cfg, new_targets, problems = planner.apply_edits(state.config(), state.targets(), edits, state.method())
    ss["planner_problems"] = problems
    state.set_config(new_cfg, targets=new_targets)
    ss["planner_version"] = ss.get("planner_version", 0) + 1


def _controls(cfg) -> None:
    """Privacy definition, r, gamma, the target rule and the runs."""
    S = planner.stability_of(cfg)
    c = st.columns([1.45, 1.2, 0.8, 1.75])
    with c[0]:
        state.bind("w_privacy_defn", cfg.privacy_defn)
        st.radio("Privacy definition", list(planner.PRIVACY_NAMES), key="w_privacy_defn", on_change=_on_privacy,
                 format_func=planner.PRIVACY_NAMES.get,
                 help="zCDP (the 2020 choice): budgets are ρ, noise is discrete Gaussian, and a release is "
                      "(ε, δ)-DP for every δ > 0. Pure DP: budgets are ε, noise is two-sided geometric, δ = 0. "
                      "Switching converts every level's budget so that it meets the same MOE target.")
    with c[1]:
        state.bind("w_r", cfg.max_race_codes)
        st.slider("Race multiplicity r", 1, 8, key="w_r", on_change=_on_r,
                  help="The most race codes one person can have (max_race_codes). Stability S = max(2, r) + 1 with "
                       "the 2020 spec files: the most groups one person joins in one level. A larger S means more "
                       "noise for the same budget.")
        st.markdown(f"Stability **S = {S}**")
    with c[2]:
        widgets.number_box("Stage-1 fraction γ", "w_gamma", GAMMA_RULE, cfg.gamma, on_change=_on_gamma,
                           help="Share of each level's budget spent on the (unpublished) stage-1 total that picks "
                                "the table; the published counts get the rest, 1 − γ. From 0.0001 to 0.9999, used "
                                "exactly as typed.")
    with c[3]:
        state.bind("w_method", state.method())
        st.radio("A MOE target is met when", planner.METHODS, key="w_method", on_change=_on_method,
                 format_func=lambda m: planner.TARGET_RULES[m],
                 help="Exact: the noise stays within the target in at least 95% of cells (recommended). "
                      "Design paper: ⌊1.96σ⌋ ≤ target, the continuous-Gaussian rule the 2020 budgets were set "
                      "with; its exact MOE can be one larger.")
        runs = st.columns(2)
        with runs[0]:
            state.bind("w_run_us", cfg.run_us)
            st.toggle("US run", key="w_run_us", on_change=_on_runs, help="Tabulate the 50 states and DC.")
        with runs[1]:
            state.bind("w_run_pr", cfg.run_pr)
            st.toggle("Puerto Rico", key="w_run_pr", on_change=_on_runs, help="Run the Puerto Rico levels (PR-*).")


@st.fragment
def _plan() -> None:
    """Everything the plan's controls change: a change of r, gamma, the target rule or a
    table cell redraws only this part (title, presets and sidebar stay; `state.fragment_done`
    redraws the whole app when the sidebar summary or undo / redo must change)."""
    widgets.fragment_start()  # a change the sidebar shows: the whole app at once, not twice
    state.show_flashes()
    _controls(state.config())
    # the nation, with its change from the reference, in view with the controls (issue 40 item 3)
    projection_panel.national_metrics(state.config())
    method = state.method()
    cfg = state.config()
    S = planner.stability_of(cfg)
    u = planner.units(cfg)
    delta = state.delta()
    _change_panel(method, u, delta)

    ver = ss.get("planner_version", 0)
    editor_key = f"planner_{ver}"
    table = planner.plan_table(cfg, state.targets(), method, delta, reference=state.reference().config)
    # A refused cell's message stays in view while the user scrolls through the table
    # (`widgets.STICKY`): above the table, and pinned under the page's header.
    messages = st.container(key=widgets.sticky_key("planner_messages"))
    eps_help = (f"The ε this level's ρ alone gives at δ = {delta:.0e} (tight conversion). Smaller is more private."
                if not u["puredp"] else "Under pure DP the budget is ε itself (δ = 0). Smaller is more private.")
    st.data_editor(
        table,
        key=editor_key,
        hide_index=True,
        num_rows="fixed",
        on_change=_on_edit,
        args=(editor_key,),
        disabled=[col for col in table.columns if col not in planner.EDITABLE],
        column_order=[col for col in table.columns  # the changes from the reference: their own table below
                      if col not in (planner.RUN, planner.SIGMA2, planner.CHANGE)
                      and not (u["puredp"] and col == planner.EPS)],
        placeholder="—",
        column_config=widgets.fit_columns(table, {
            planner.GEO: st.column_config.TextColumn(width=86),
            planner.ITER: st.column_config.TextColumn(width=72),
            planner.ON: st.column_config.CheckboxColumn(width=52, help=f"Tabulate this level ({u['budget']} > 0)."),
            planner.TARGET: st.column_config.TextColumn(
                width=96, alignment="right",
                help="Type the MOE you want for one published count, in persons (a whole number, 1 or more); "
                     f"{u['budget']} follows, written with 4 significant digits: {planner.TARGET_BUDGET[method]}. "
                     "A value that is not a whole number is refused with a message above the table."),
            planner.RHO: st.column_config.TextColumn(
                u["budget"], width=70, alignment="right",
                help=f"{u['budget_long'][0].upper()}{u['budget_long'][1:]} of the level (e.g. 0.159 or 1e-3); the MOE "
                     "follows. 0 = off. Smaller is more private. A value that is not a number ≥ 0 is refused with a "
                     "message above the table."),
            planner.EPS: st.column_config.NumberColumn(planner.epsilon_label(cfg, delta).replace(" of the level", ""),
                                                       width=80, format="%.3g", help=eps_help),
            planner.SHARE: st.column_config.NumberColumn(planner.label("% of run", cfg), width=64, format="%.1f%%",
                                                         help=planner.label("This level's share of its run's total ρ "
                                                                            "(US or Puerto Rico).", cfg)),
            planner.SIGMA2: st.column_config.NumberColumn(planner.label(planner.SIGMA2, cfg), width=70, format="%.4g",
                                                          help=f"Noise scale of a published count: {u['scale_formula']}"),
            planner.MOE_EXACT: st.column_config.NumberColumn(
                "MOE exact", width=76, format="%d", help=f"Exact 95% MOE: the smallest m with P(|noise| ≤ m) ≥ 95% for the {u['law']}."),
            planner.MOE_BOUND: st.column_config.NumberColumn(
                "MOE ⌊1.96σ⌋", width=90, format="%d", help="The design paper's bound ⌊1.96σ⌋ (a continuous-Gaussian figure; "
                                            "the exact MOE can be one larger)."),
            planner.STATUS: st.column_config.TextColumn(
                planner.VERDICT_LABEL[method], width=170,
                help=f"Compares the MOE target with the {planner.METHOD_SHORT[method]} (chosen above)."),

        }),
        height=35 * 21 + 3,
    )
    if (ss.get(editor_key) or {}).get("edited_rows"):
        # edits not applied by the callback (a session seeded with edits, as tests do)
        _on_edit(editor_key)
        st.rerun()
    problems = ss.get("planner_problems") or []
    if problems:
        with messages:
            widgets.problems("Not used (the table keeps the previous values):", problems)
    ref = state.reference()
    changed = planner.reference_table(cfg, ref.config)
    if len(changed):
        widgets.table(changed, "changes_from_reference.csv", key="pl_ref_changes",
                      caption=f"The levels whose budget or exact MOE differ from the reference plan "
                              f"({widgets.plain(ref.source)}; chosen in the sidebar).")
    else:
        st.caption(f"Every level's budget and MOE are those of the reference plan ({widgets.plain(ref.source)}).")
    warn = planner.budget_warnings(cfg, delta)
    if warn:
        widgets.problems("Budgets to double-check:", warn, kind="warning")
    widgets.download_csv(planner.relabel(planner.plan_numbers(table), cfg), "budget_plan.csv", key="plan_csv",
                         label="Download this table (CSV)")

    missed = planner.missed_targets(table)
    if missed and not ss.get(state.K_CHANGE):
        st.warning(
            f"{len(missed)} level(s) miss their MOE target ({planner.METHOD_SHORT[method]}): " + ", ".join(missed) + ".",
            icon=":material/warning:",
        )
        if st.button(f"Recompute {u['budget']} so every level meets its target", key="resolve"):
            try:
                state.set_config(planner.resolve_targets(cfg, state.targets(), method), targets=state.targets())
            except (ConfigError, ValueError) as exc:
                state.flash("error", f"Could not recompute: {exc}")
            st.rerun()

    s = planner.plan_summary(cfg, delta)
    m = st.columns(4)
    m[0].metric(f"{u['budget']} of the release", f"{typed.significant(s['rho_release'])}",
                help="max(US run, Puerto Rico run): US and Puerto Rico persons are disjoint. Smaller is more private.")
    m[1].metric(f"{u['budget']}, bounded neighbours", f"{typed.significant(s['rho_release_bounded'])}",
                help="If a neighbouring data set changes one person instead of adding or removing one, the cost doubles.")
    if u["puredp"]:
        m[2].metric("ε of the release (δ = 0)", f"{s['eps_tight']:.3g}", help="Pure DP: the budget is ε itself.")
    else:
        m[2].metric(f"ε at δ = {s['delta']:.0e}", f"{s['eps_tight']:.2f}",
                    help=f"Tight conversion of ρ to (ε, δ)-DP (Canonne, Kamath, Steinke 2020); the classic bound "
                         f"ρ + 2√(ρ ln 1/δ) gives {s['eps_classic']:.2f}. Smaller is more private.")
    m[3].metric("Levels tabulated", f"{s['levels_tabulated']} of {s['levels_total']}")
    st.caption(f"US run {u['budget']} = {typed.significant(s['rho_us'])} (sum of its levels), Puerto Rico run {typed.significant(s['rho_pr'])}."
               + ("" if u["puredp"] else f" ε classic {s['eps_classic']:.2f}; bounded: ε {s['eps_tight_bounded']:.2f}."))

    # ------------------------------------------- national outcome and charts (only the open tab runs)
    # The national outcome opens first: it is the committee's first question (issue 23), and
    # the charts wait in their tabs (`widgets.kept_tabs` says why).
    nat, moe_tab, r_tab = widgets.kept_tabs(PLAN_TABS, key="pl_tabs")
    if nat.open:
        with nat:
            projection_panel.outcome(cfg, "pl_nat", columns=projection_panel.PLANNER_COLUMNS)
    if moe_tab.open:
        with moe_tab:
            rhos = [r for r, _ in planner.rho_groups(cfg)]
            lo = min([1e-3] + [r / 2 for r in rhos])
            hi = max([10.0] + [r * 2 for r in rhos])
            curve = planner.moe_rho_curve(S, cfg.gamma, lo, hi, noise=planner.noise_of(cfg))
            points = planner.level_points(cfg, method)
            widgets.chart(charts.moe_vs_rho(curve, points, planner.label(planner.METHOD_SHORT[method], cfg), units=u),
                          planner.relabel(curve, cfg), "moe_vs_rho.csv", key="moe_rho_chart")
            st.caption(f"At S = {S} and γ = {cfg.gamma:g}. Diamonds: this plan's levels. Further right = more budget = "
                       "less privacy and less noise.")
    if r_tab.open:
        with r_tab:
            long = planner.race_multiplicity_long(cfg, method)
            wide = planner.race_multiplicity_table(cfg, method)
            if long.empty:
                st.info("No level is tabulated.")
            else:
                left, right = st.columns([1.25, 1], gap="medium")
                with left:
                    widgets.chart(charts.race_multiplicity(long, units=u), planner.relabel(long, cfg),
                                  "race_multiplicity.csv", key="r_chart")
                with right:
                    cur = cfg.max_race_codes
                    shown = wide.assign(Current=["◀ this plan" if r == cur else "" for r in wide["r"]])
                    moe_cols = [c for c in wide.columns if c.startswith("MOE at")]
                    widgets.table(shown, "race_multiplicity_table.csv", key="r_table",
                                  column_config={"r": st.column_config.NumberColumn(width=34),
                                                 "S": st.column_config.NumberColumn(width=34),
                                                 "Current": st.column_config.TextColumn("", width=80),
                                                 **{c: st.column_config.NumberColumn(c.replace("MOE at ", ""), width=66)
                                                    for c in moe_cols}},
                                  caption=f"MOE of one published count at each r, per level budget (column). Budgets "
                                          f"{u['budget']} and γ stay as they are; MOE = {planner.METHOD_SHORT[method]}.")
    state.fragment_done()


_plan()

# ----------------------------------------------------------------- compare
st.divider()
st.page_link("app_pages/committee/scenarios.py", label="Compare this plan with saved scenarios and presets, any number side by side",
             icon=":material/compare_arrows:")

# ----------------------------------------------------------------- the design paper's error bounds, exactly
from ui.safetab import paper_statements  # noqa: E402 - one local panel at the end of the page

paper_statements.panel(state.config())
