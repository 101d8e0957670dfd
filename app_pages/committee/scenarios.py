"""Scenarios: named plans kept on disk (save, load, rename, delete, import, export) and
any number of them compared side by side, differences highlighted, charts overlaid."""

import io
import zipfile

import pandas as pd
import streamlit as st


from calculators.levels import POPULATION_GROUP_LEVELS, PopulationGroupLevel
from ui.committee import comparison, plan_controls, record, scenario_charts, scenarios
from ui.core import auth, planner, state, widgets
from ui.safetab import projection_panel

state.page_setup()
ss = st.session_state

st.title("Scenarios")
st.caption(
    "A scenario is a named plan: the configuration (config.json) and the planner's MOE targets, with the "
    "times it was created and last changed. Save the plans a committee weighs, come back to them after a "
    "restart, and compare any number of them side by side. Undo and Redo (sidebar) step through every change "
    "of the current plan in this session."
)
store = plan_controls.store()
user = auth.current()

try:
    items = store.all()
    store_problem = None
except scenarios.ScenarioError as exc:
    items, store_problem = [], str(exc)
    st.error(widgets.plain(f"The saved scenarios cannot be read: {exc}."))
if store.skipped:
    widgets.problems("Some rows of the store cannot be shown (written by another program?); they are left in it "
                     "untouched:", store.skipped, kind="warning")
by_name = {s.name: s for s in items}


def _saved() -> None:
    """Save the current plan, the saved scenarios (load, rename, delete), import and export."""
    st.caption(f"Saved in {widgets.plain(store.path)} (an SQLite file). Set the environment variable "
               f"`{scenarios.ENV_DATA}` to a folder to keep them elsewhere. Every save, replace, rename and delete is "
               "kept as a version with who made it and when: see a scenario's history below.")
    if user.local:
        st.info("**Local mode**: nobody signs in (the server's `.streamlit/secrets.toml` has no `[auth]` section), so "
                "the app is for one person on their own machine: you are its operator, and your changes are recorded "
                f"as by “{scenarios.LOCAL}”. README.md, “Serving a committee”, says how a committee shares one server "
                "with sign-in.", icon=":material/person:")
    else:
        st.caption(widgets.plain(f"Signed in as {user.email or user.name} ({user.role}): your changes are recorded "
                                 "under this name."))
    # ------------------------------------------------------------------ save
    st.subheader("Save the current plan")

    def _on_save():
        if plan_controls.save_current(ss.get("sc_name", ""), ss.get("sc_note", ""),
                                      overwrite=bool(ss.get("sc_replace"))):
            ss["sc_replace"] = False

    if not ss.get("sc_name"):
        ss["sc_name"] = scenarios.suggested_name(state.source_label())
    sv = st.columns([2.2, 3], vertical_alignment="bottom")
    sv[0].text_input("Name", key="sc_name", max_chars=scenarios.MAX_NAME,
                     help=f"Up to {scenarios.MAX_NAME} characters; names are unique whatever their case.")
    sv[1].text_input("Note (optional)", key="sc_note", max_chars=scenarios.MAX_NOTE,
                     placeholder="e.g. what the committee asked for")
    taken = next((n for n in by_name if scenarios.name_key(n) == scenarios.name_key(ss.get("sc_name", ""))), None)
    with st.container(horizontal=True, vertical_alignment="center"):
        st.button("Save the current plan", key="sc_save", type="primary", icon=":material/save:", on_click=_on_save,
                  disabled=bool(taken and not ss.get("sc_replace")) or store_problem is not None)
        if taken:
            st.checkbox(f"Replace the saved “{widgets.plain(taken)}”", key="sc_replace")
        st.markdown(f"Current plan: **{widgets.plain(state.source_label())}**")

    # ------------------------------------------------------------------ list
    st.subheader(f"Saved scenarios ({len(items)})")
    if items:
        rows = []
        for s in items:
            # its creation is version 1 of its history below (and in its plan file): room for who changed it last
            row = {"Name": s.name, "Modified (UTC)": s.modified.replace("T", " ")[:16],
                   "Version": s.version or None, "By": s.author,
                   "Plan": record.plan_text(s.config, state.delta(), s.problems), "Note": s.note}
            rows.append(row)
        listing = pd.DataFrame(rows)
        widgets.table(listing, "scenarios.csv", key="sc_list",
                      column_config={"Name": st.column_config.TextColumn(width=140),
                                     "Plan": st.column_config.TextColumn(width=300),
                                     "Modified (UTC)": st.column_config.TextColumn(width=125),
                                     "Version": st.column_config.NumberColumn(width=60, format="%d"),
                                     "By": st.column_config.TextColumn("Last change by", width=120),
                                     "Note": st.column_config.TextColumn(width=90)},
                      caption=f"ε of the release at δ = {state.delta():g} (tight; pure DP: the ε itself).")
        bad = [s for s in items if not s.ok]
        if bad:
            st.warning(widgets.plain("Some scenarios no longer pass validation (saved by another version or program?); "
                                     "they can be renamed or deleted but not loaded: "
                                     + ", ".join(s.name for s in bad)))

        if ss.get("sc_pick") not in by_name:
            ss["sc_pick"] = items[0].name
        pick = st.selectbox("Scenario", list(by_name), key="sc_pick", persist_state="session", width=420)
        chosen = by_name[pick]
        act = st.container(horizontal=True)

        def _on_load():
            s = by_name.get(ss.get("sc_pick"))
            if s is not None and s.ok:
                state.set_config(s.config, s.name, dict(s.targets) or None, h_config=s.h_config)  # one step
                plan_controls.remember_version(s)
                state.flash("success", f"Scenario “{s.name}” is now the plan on every page (Undo in the sidebar "
                                       "goes back).")

        act.button("Load as the current plan", key="sc_load", icon=":material/upload:", on_click=_on_load,
                      disabled=not chosen.ok)
        if chosen.ok:
            act.download_button("Download its plan file", scenarios.scenario_file_text(chosen),
                                   file_name=f"{scenarios.file_stem(chosen.name)}.plan.json",
                                   mime="application/json", key="sc_dl_one", on_click="ignore",
                                   icon=":material/download:",
                                   help="Name, config.json and MOE targets in one JSON file; import it here or on the "
                                        "Configuration page.")
        with act.popover("Rename or delete", icon=":material/edit:"):
            def _on_rename():
                try:
                    new = store.rename(ss["sc_pick"], ss.get("sc_new_name", ""), by=user.who)
                except scenarios.ScenarioError as exc:
                    state.flash("error", f"Not renamed: {exc}.")
                    return
                if ss.get(state.K_SOURCE) == ss["sc_pick"]:
                    ss[state.K_SOURCE] = new.name
                state.flash("success", f"Renamed “{ss['sc_pick']}” to “{new.name}”.")
                ss["sc_pick"] = new.name

            def _on_delete():
                try:
                    store.delete(ss["sc_pick"], by=user.who)
                except scenarios.ScenarioError as exc:
                    state.flash("error", f"Not deleted: {exc}.")
                    return
                state.flash("success", f"Deleted scenario “{ss['sc_pick']}”: it is under “Deleted scenarios”, from "
                                       "which anyone can restore it.")
                ss["sc_delete_sure"] = False

            st.text_input("New name", key="sc_new_name", max_chars=scenarios.MAX_NAME, placeholder=pick)
            st.button("Rename", key="sc_rename", on_click=_on_rename, disabled=not ss.get("sc_new_name", "").strip())
            st.divider()
            st.checkbox(f"Yes, delete “{widgets.plain(pick)}” (it moves to Deleted scenarios, with its history)",
                        key="sc_delete_sure")
            st.button("Delete", key="sc_delete", icon=":material/delete:", on_click=_on_delete,
                      disabled=not ss.get("sc_delete_sure"))
        _history(chosen)
    else:
        st.info("No scenario is saved yet. Save the current plan above (or with Save in the sidebar), or import plan "
                "files below.")
    _deleted()

    # ------------------------------------------------------------------ import / export
    # drawn only while open (on_change="rerun"): the upload box and the zip of every scenario are
    # not made and sent again with every change of the comparison below
    _imp = st.expander("Import plan files or config.json files as scenarios; export them all", key="sc_import_open",
                       on_change="rerun")
    if _imp.open:
        with _imp:
            ups = st.file_uploader("Plan files (.plan.json) or config.json files", type=["json"],
                                   accept_multiple_files=True, key="sc_upload")
            if ups:
                parsed, problems, first = [], [], {}
                for up in ups:
                    try:
                        plan = scenarios.read_plan_file(up.getvalue(), up.name)
                    except scenarios.ScenarioError as exc:
                        problems.append(str(exc))
                        continue
                    key = scenarios.name_key(plan.name)
                    if key in first:  # one name, one scenario: said before "Save", not after it
                        problems.append(f"{up.name}: its plan is named {plan.name!r}, as {first[key]}'s is; "
                                        "rename one of them to import both")
                        continue
                    first[key] = up.name
                    parsed.append(plan)
                widgets.problems("Not importable:", problems)
                if parsed:
                    st.markdown("Ready to save: " + ", ".join(
                        f"**{widgets.plain(p.name)}**"
                        + ("" if p.is_plan_file else " (config.json: named after the file)")
                        for p in parsed))
                    keys = {scenarios.name_key(n) for n in by_name}
                    clash = [p.name for p in parsed if scenarios.name_key(p.name) in keys]
                    if clash:
                        st.checkbox("Replace the scenarios of the same name: " + widgets.plain(", ".join(clash)),
                                    key="sc_import_replace")

                    def _on_import(parsed=parsed):
                        done, errs = [], []
                        for p in parsed:
                            try:
                                store.save(p.name, p.config, p.targets if p.targets is not None
                                           else planner.default_targets(p.config, state.method()),
                                           note=p.note, overwrite=bool(ss.get("sc_import_replace")),
                                           by=user.who)
                                done.append(p.name)
                            except scenarios.ScenarioError as exc:
                                errs.append(f"{p.name}: {exc}")
                        if done:
                            state.flash("success", "Saved as scenarios: " + ", ".join(done) + ".")
                        if errs:
                            state.flash("error", "Not saved:\n" + "\n".join(f"- {e}" for e in errs))

                    st.button(f"Save {len(parsed)} as scenario{'s' * (len(parsed) != 1)}", key="sc_import",
                              icon=":material/library_add:", on_click=_on_import)
            if any(s.ok for s in items):
                buf = io.BytesIO()
                with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
                    stems = comparison.unique_names([scenarios.file_stem(s.name) for s in items if s.ok])
                    for stem, s in zip(stems, [s for s in items if s.ok], strict=True):
                        zf.writestr(f"{stem}.plan.json", scenarios.scenario_file_text(s))
                st.download_button(f"Download all {sum(s.ok for s in items)} scenarios (zip of plan files)",
                                   buf.getvalue(), file_name="scenarios.zip", mime="application/zip", key="sc_dl_all",
                                   on_click="ignore", icon=":material/download:")


def _history(chosen: scenarios.Scenario) -> None:
    """The chosen scenario's versions (who, when, what), two of them compared, and any
    version loaded as the current plan."""
    st.subheader(f"History of “{widgets.plain(chosen.name)}”")
    try:
        hist = store.history(chosen.name)
    except scenarios.ScenarioError as exc:
        st.caption(widgets.plain(f"{exc}."))
        return
    delta = state.delta()
    widgets.table(record.history_frame(hist, delta), "scenario_history.csv", key="sc_history",
                  column_config={"Version": st.column_config.NumberColumn(width=60, format="%d"),
                                 "Change": st.column_config.TextColumn(width=90),
                                 "By": st.column_config.TextColumn(width=120),
                                 "When (UTC)": st.column_config.TextColumn(width=125),
                                 "Name": st.column_config.TextColumn(width=110),
                                 "Plan": st.column_config.TextColumn(width=250),
                                 "Note": st.column_config.TextColumn(width=80)},
                  # names, plans and notes are as long as their authors made them: fitting them would
                  # push the table past a 1280-px page; the CSV holds every text whole
                  fit_texts=False,
                  caption="Every version as it was after the change (a replace keeps what it replaced here; "
                          "the CSV holds each text whole).")
    by_number = {v.number: v for v in hist}
    numbers = list(by_number)
    pick = st.columns([1.4, 1.4, 1.6], vertical_alignment="bottom")
    if len(numbers) >= 2:
        for key, default in (("sc_ver_a", numbers[1]), ("sc_ver_b", numbers[0])):
            if ss.get(key) not in by_number:
                ss[key] = default
        a = pick[0].selectbox("Compare version", numbers, key="sc_ver_a",
                              format_func=lambda n: record.version_title(by_number[n]))
        b = pick[1].selectbox("with version", numbers, key="sc_ver_b",
                              format_func=lambda n: record.version_title(by_number[n]))
        diff = record.compare_versions(by_number[a], by_number[b], delta)
        names = [c for c in diff.columns if c not in ("Item", comparison.DIFFERS)]
        differ = diff[diff[comparison.DIFFERS]]
        st.markdown(f"**{len(differ)} of {len(diff)} items differ** between version {a} and version {b}.")
        widgets.table(differ, "scenario_versions_compared.csv", key="sc_ver_diff",
                      style=(comparison.styled, (names,)), empty="The two versions are the same plan.",
                      data=diff)
    else:
        st.caption("One version so far: the next save, replace, rename or note adds one, to compare.")
        ss["sc_ver_b"] = numbers[0]

    def _on_load_version():
        v = by_number.get(ss.get("sc_ver_b"))
        if v is not None and v.scenario.ok:
            state.set_config(v.scenario.config, chosen.name, dict(v.scenario.targets) or None,
                             h_config=v.scenario.h_config)  # both plans: one step of undo
            plan_controls.remember_version(chosen, v.label)
            state.flash("success", f"Version {v.number} of “{chosen.name}” ({v.label}) is now the plan on "
                                   "every page.")

    shown_b = by_number.get(ss.get("sc_ver_b"))
    pick[2 if len(numbers) >= 2 else 0].button(
        f"Load version {shown_b.number} as the current plan" if shown_b else "Load", key="sc_ver_load",
        icon=":material/history:", on_click=_on_load_version, disabled=shown_b is None or not shown_b.scenario.ok)


def _deleted() -> None:
    """The deleted scenarios: anyone restores one, an operator purges one."""
    try:
        gone = store.deleted()
    except scenarios.ScenarioError as exc:
        st.caption(widgets.plain(f"The deleted scenarios cannot be read: {exc}."))
        return
    # one label whatever the count: a new label would be a new expander, closed after each restore or purge
    box = st.expander("Deleted scenarios: restore or purge", key="sc_deleted_open", on_change="rerun",
                      icon=":material/delete:")
    if not box.open:
        return
    with box:
        purged = store.purged()
        if purged:
            st.caption(widgets.plain("Purged for good: " + "; ".join(
                f"“{name}” ({n} versions) by {by}, {at.replace('T', ' ')[:16]} UTC"
                for _sid, name, n, by, at in purged[:5]) + (f"; and {len(purged) - 5} more" if len(purged) > 5
                                                          else "") + "."))
        if not gone:
            st.caption("None. A deleted scenario comes here, with its history; anyone can restore it.")
            return
        widgets.table(record.deleted_frame(gone), "deleted_scenarios.csv", key="sc_deleted",
                      caption=f"{len(gone)} deleted scenario{'s' * (len(gone) != 1)}, each with its history.")
        by_sid = {v.sid: v for v in gone}
        if ss.get("sc_gone_pick") not in by_sid:
            ss["sc_gone_pick"] = gone[0].sid
        sid = st.selectbox("Deleted scenario", list(by_sid), key="sc_gone_pick", width=420,
                           format_func=lambda k: f"{by_sid[k].scenario.name} (deleted by {by_sid[k].author}, "
                                                 f"{by_sid[k].at.replace('T', ' ')[:16]} UTC)")

        try:
            widgets.table(record.history_frame(store.history(sid), state.delta()), "deleted_scenario_history.csv",
                          key="sc_gone_history", caption="Its history, newest first: a restore brings back the "
                                                         "latest version, which is what was deleted.")
        except scenarios.ScenarioError as exc:  # purged by another session a moment ago
            st.caption(widgets.plain(f"{exc}."))

        def _on_restore():
            try:
                back = store.restore(ss["sc_gone_pick"], by=user.who, name=ss.get("sc_restore_name") or None)
            except scenarios.ScenarioError as exc:
                state.flash("error", f"Not restored: {exc}.")
                return
            ss["sc_restore_name"] = ""
            ss["sc_pick"] = back.name
            state.flash("success", f"Restored scenario “{back.name}” ({back.version_label}).")

        def _on_purge():
            why = auth.refusal(auth.PURGE, user)
            if why:
                state.flash("error", why)
                return
            try:
                n = store.purge(ss["sc_gone_pick"], by=user.who)
            except scenarios.ScenarioError as exc:
                state.flash("error", f"Not purged: {exc}.")
                return
            ss["sc_purge_sure"] = False
            state.flash("success", f"Purged “{by_sid[sid].scenario.name}” and its {n} versions for good.")

        r = st.columns([2.2, 1.2, 2.6], vertical_alignment="bottom")
        r[0].text_input("Restore under another name (optional)", key="sc_restore_name", max_chars=scenarios.MAX_NAME,
                        placeholder=by_sid[sid].scenario.name)
        r[1].button("Restore", key="sc_restore", icon=":material/restore_from_trash:", on_click=_on_restore)
        if auth.allowed(auth.PURGE, user):
            p = st.columns([3, 1.2], vertical_alignment="center")
            p[0].checkbox(f"Yes, purge “{widgets.plain(by_sid[sid].scenario.name)}” and its whole history for good",
                          key="sc_purge_sure")
            p[1].button("Purge", key="sc_purge", icon=":material/delete_forever:", on_click=_on_purge,
                        disabled=not ss.get("sc_purge_sure"))


# ------------------------------------------------------------------ compare
@st.fragment
def _compare() -> None:
    """The comparison: a change of the plans picked, "only rows that differ", a tab or the
    level redraws only this part."""
    st.subheader("Compare plans side by side")
    opts = plan_controls.choices(items)
    if "sc_compare" not in ss or not set(ss["sc_compare"]) <= set(opts):
        saved = [plan_controls.saved_label(s.name) for s in items if s.ok][:2]
        ss["sc_compare"] = [plan_controls.CURRENT] + (saved or [plan_controls.PRODUCTION])
    picked = st.multiselect("Plans to compare (any number; the first is the reference)", list(opts), key="sc_compare",
                            persist_state="session", wrap=True,
                            help="Cells that differ from the first plan are highlighted.")
    ss.setdefault("sc_only", False)
    ss.setdefault("sc_charts", False)
    with st.container(horizontal=True, vertical_alignment="center", gap="large"):
        only_diff = st.toggle("Only rows that differ", key="sc_only", persist_state="session")
        # off by default: the charts are most of what the browser draws here (with 5 plans
        # the page opens in about 0.45 s without them, 1.3 s with them; benchmarks/RESULTS.md)
        charts = st.toggle("Charts", key="sc_charts", persist_state="session",
                           help="A bar chart under each level table, and charts that overlay the plans: MOE against "
                                "the budget, adaptive-table thresholds and suppression by group size. The tables "
                                "hold every figure; the charts take about a second to draw with 5 plans.")
        st.page_link("app_pages/committee/memo.py", label="Decision memo (PDF, HTML) of these plans", icon=":material/picture_as_pdf:")

    if len(picked) < 2:
        st.info("Pick two or more plans to compare.")
        return

    plans = [opts[n]() for n in picked]
    key = plan_controls.plans_key(plans)
    names = comparison.unique_names([p.name for p in plans])
    method, delta = state.method(), state.delta()
    by_level = plan_controls.cached_by_level(key, method, delta)
    levels_differ = set()
    for df in by_level.values():
        levels_differ |= set(df.index[df[comparison.DIFFERS]])
    summ = plan_controls.cached_summary(key, delta)
    keys_tbl = comparison.config_keys(plans)
    st.markdown(f"**{len(plans)} plans:** {int(summ[comparison.DIFFERS].sum())} of {len(summ)} settings, "
                f"{len(levels_differ)} of 20 population group levels and {int(keys_tbl[comparison.DIFFERS].sum())} "
                f"config.json keys differ. Highlighted: cells that differ from **{widgets.plain(names[0])}**.")
    if len({p.config.privacy_defn for p in plans}) > 1:
        st.info("These plans mix zCDP (budgets ρ) and pure DP (budgets ε): their budgets are in different units. Compare "
                "them by the MOEs, thresholds and the ε rows.", icon=":material/info:")


    def _shown(df):
        return df[df[comparison.DIFFERS]] if only_diff else df

    # the figures that differ most first (issue 40 item 3): the nation, then the settings and levels
    st.markdown("**National outcome of each plan** (from a group-size profile, expected over the noise)")
    projection_panel.compare(plans, names)

    s_show = _shown(summ)
    widgets.table(s_show, "compare_settings.csv", key="sc_summary", height=35 * (len(s_show) + 1) + 3,
                  style=(comparison.styled, (names,)), empty="No setting differs.",
                  caption="Settings and privacy accounting. Budgets are ρ (zCDP) or ε (pure DP); smaller budgets "
                          "and smaller ε mean more privacy and more noise.")

    st.markdown("**By population group level**")
    # only the open tab is drawn (each holds a table and a chart per plan): a page of 5 plans opens in a blink
    tabs = st.tabs([comparison.MEASURES[m][0] for m in comparison.MEASURES], key="sc_tabs", on_change="rerun")
    fmt_float = {n: "{:.4g}" for n in names}  # the one format rule: budgets to 4 significant digits
    for tab, m in zip(tabs, comparison.MEASURES, strict=True):
        if not tab.open:
            continue
        with tab:
            title, helptext = comparison.MEASURES[m]
            df = _shown(by_level[m])
            st.caption(helptext)
            if not widgets.table(df, f"compare_{m}.csv", key=f"sc_tbl_{m}", height=35 * (len(df) + 1) + 3,
                                 style=(comparison.styled, (names, fmt_float if m in ("budget", "epsilon") else None)),
                                 empty="No level differs."):
                continue
            if m not in ("thresholds",) and charts:
                full = by_level[m]
                ylab = {"budget": "level budget (ρ or ε)", "epsilon": "ε of the level",
                        "moe_exact": "exact 95% MOE (persons)", "moe_bound": "⌊1.96σ⌋ (persons)",
                        "target": "MOE target (persons)", "suppression": "threshold T (persons)"}[m]
                widgets.chart(scenario_charts.level_bars(full, f"{title} by level, one bar per plan", ylab,
                                                         log_y=m in ("budget", "epsilon", "moe_exact", "moe_bound")),
                              full, f"compare_{m}_chart.csv", key=f"sc_chart_{m}")

    # drawn only while open: a closed expander's table still costs the browser a grid
    keys_box = st.expander(f"config.json keys ({int(keys_tbl[comparison.DIFFERS].sum())} differ)",
                           key="sc_keys_open", on_change="rerun")
    if keys_box.open:
        with keys_box:
            widgets.table(_shown(keys_tbl), "compare_keys.csv", key="sc_keys", style=(comparison.styled, (names,)),
                          empty="No config.json key differs.")

    st.markdown("**Charts that overlay the plans**")
    if charts:
        _overlays(plans, method, delta)
    else:
        st.caption("Turn on **Charts** above to overlay the plans: MOE against the budget, and, for a level you "
                   "pick, the adaptive-table thresholds and suppression by group size.")
    widgets.download_csv(lambda: comparison.long_table(plans, method, delta), "comparison_long.csv", key="sc_long",
                         label="Download every per-level figure of every plan (CSV, long form)")


def _overlays(plans, method, delta) -> None:
    """MOE against the budget for every plan, and the adaptive thresholds and suppression
    curves of every plan at one level."""
    for defn in ("zcdp", "puredp"):
        group = [p for p in plans if p.config.privacy_defn == defn]
        if group:
            widgets.chart(scenario_charts.moe_budget_curves(group, method),
                          comparison.by_level(group, "moe_exact", method, delta), f"moe_curves_{defn}.csv",
                          key=f"sc_curves_{defn}")

    all_levels = [lvl for lvl in POPULATION_GROUP_LEVELS
                  if any(p.config.rho(lvl) > 0 and p.config.runs_geo(lvl) for p in plans)]
    if all_levels:
        lk = [lvl.key for lvl in all_levels]
        if ss.get("sc_level") not in lk:
            ss["sc_level"] = "(COUNTY, 2)" if "(COUNTY, 2)" in lk else lk[0]
        lc = st.columns([1.3, 4])
        level = PopulationGroupLevel.parse(lc[0].selectbox(
            "Level for the curves", lk, key="sc_level", persist_state="session",
            format_func=lambda k: planner.level_label(PopulationGroupLevel.parse(k))))
        ad = scenario_charts.adaptive_data(plans, level)
        if len(ad):
            widgets.chart(scenario_charts.adaptive_overlay(ad, plans, level), ad,
                          f"compare_adaptive_{level.geo}_{level.iteration_level}.csv", key="sc_adaptive")
        sd = scenario_charts.suppression_data(plans, level)
        if len(sd):
            widgets.chart(scenario_charts.suppression_overlay(sd, level), sd,
                          f"compare_suppression_{level.geo}_{level.iteration_level}.csv", key="sc_supp")
        elif not level.is_state_or_above:
            st.caption("No plan suppresses at this level (p = 0 or the level is off).")
        else:
            st.caption("Totals at state level and above are never suppressed.")


# only the open tab is drawn (on_change="rerun"): the comparison of 5 plans and the scenario
# list each open faster alone (benchmarks/RESULTS.md); the tab is kept across pages
saved_tab, compare_tab = widgets.kept_tabs(["Saved scenarios", "Compare plans"], key="sc_view")
if saved_tab.open:
    with saved_tab:
        _saved()
if compare_tab.open:
    with compare_tab:
        _compare()
