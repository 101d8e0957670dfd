"""The "national outcome" panel the planner, adaptive-tables and suppression pages share,
and the profile choice behind it (Streamlit; the figures and words are `ui.safetab.projection`).

The chosen profile is one session value (``proj_choice``: national, the sample's, or an
uploaded one), so every page shows the same nation; an uploaded profile lives in this
session's memory only (``proj_uploaded``) and is never written to disk.
"""

from __future__ import annotations

import streamlit as st

from calculators import explain
from calculators import plan as pm
from calculators.config import SafeTabConfig
from calculators.levels import PopulationGroupLevel
from calculators.projection import Profile, ProfileError, Projection, project
from ui.safetab import projection as pj
from ui.core import auth, state, widgets

K_CHOICE = "proj_choice"
K_UPLOADED = "proj_uploaded"


def _options() -> dict[str, str]:
    opts = dict(pj.available())
    up = st.session_state.get(K_UPLOADED)
    if up is not None:
        opts[pj.UPLOADED] = f"Uploaded: {up.name}"
    return opts


def chosen() -> Profile | None:
    """The profile of the session's choice (the national one by default); None if no
    profile is there."""
    ss = st.session_state
    opts = _options()
    choice = ss.get(K_CHOICE, pj.NATIONAL)
    if choice not in opts:
        choice = next(iter(opts), None)
    if choice is None:
        return None
    if choice == pj.UPLOADED:
        return ss[K_UPLOADED]
    return pj.shipped(choice)


def _on_choice(widget: str) -> None:
    st.session_state[K_CHOICE] = st.session_state[widget]


def _on_upload(widget: str) -> None:
    ss = st.session_state
    up = ss.get(widget)
    ss.pop(f"{widget}_error", None)
    if up is None:
        return
    try:
        if up.size > pj.MAX_UPLOAD_BYTES:
            raise ProfileError([f"the file is {up.size:,} bytes; a profile may have at most "
                                f"{pj.MAX_UPLOAD_BYTES:,}"], up.name)
        prof = pj.read_upload(up.getvalue(), up.name)
        why = auth.refusal(auth.CONFIDENTIAL_PROFILE) if prof.confidential else None
        if why:  # a member plans on the shipped or synthetic profiles only; this one is dropped at once
            raise ProfileError([why], up.name)
    except ProfileError as exc:
        ss[f"{widget}_error"] = exc
        return
    ss[K_UPLOADED] = prof
    ss[K_CHOICE] = pj.UPLOADED


def picker(key: str) -> Profile | None:
    """The profile choice (a select box), the upload of one's own, and what the profile
    is (named; synthetic or CONFIDENTIAL)."""
    ss = st.session_state
    opts = _options()
    if not opts:
        st.info("No group-size profile is available (sample_data/profiles/ is missing): load one below.")
    widget = f"{key}_profile"
    cols = st.columns([2.2, 2.8], vertical_alignment="bottom")
    if opts:
        current = ss.get(K_CHOICE, pj.NATIONAL)
        ss[widget] = current if current in opts else next(iter(opts))
        cols[0].selectbox("Group-size profile (the nation the figures are for)", list(opts), key=widget,
                          format_func=opts.get, on_change=_on_choice, args=(widget,),
                          help="A profile lists how many population groups of each true size a nation has; the "
                               "outcome of a plan follows from it exactly.")
    # drawn only while open (on_change="rerun"): a closed popover's uploader would be sent
    # and drawn again with every control change of the page
    pop = cols[1].popover("Load a profile", icon=":material/upload_file:", key=f"{widget}_pop", on_change="rerun")
    if pop.open:
        with pop:
            st.file_uploader("A profile written by `python -m engine profile` (.json or .json.gz)",
                             type=["json", "gz"], key=f"{widget}_upload", on_change=_on_upload,
                             args=(f"{widget}_upload",))
            st.caption("It stays in this session's memory only and is never saved.")
    err = ss.get(f"{widget}_upload_error")
    if err is not None:
        widgets.problems(f"This profile ({err.source or 'the upload'}) cannot be used; the one shown "
                         "before stays:", err.problems)  # widgets.problems shows them as plain text
    try:
        prof = chosen()
    except ProfileError as exc:
        widgets.problems("The shipped profile cannot be used:", exc.problems)
        return None
    if prof is not None:
        if prof.confidential:
            st.error(f"**Profile:** {pj.plain(prof.name)}, {prof.persons:,} persons. {prof.notice} The figures below "
                     "are computed without noise from it, so they are confidential too.", icon=":material/lock:")
        else:
            st.caption(f"**Profile:** {pj.describe(prof)}. "
                       + prof.notice.removeprefix("SYNTHETIC: ").capitalize())
    return prof


def _projection(config: SafeTabConfig, profile: Profile) -> Projection:
    return project(config, profile)


def scale_words(config: SafeTabConfig, proj: Projection) -> list[str]:
    """Why the national figures differ from the sample's (when the nation is not the sample)."""
    sample = pj.shipped(pj.SAMPLE) if pj.SAMPLE in pj.available() else None
    if sample is None or proj.profile is sample:
        return []
    return pj.scale_notes(proj, _projection(config, sample))


def outcome(config: SafeTabConfig, key: str, *, columns: tuple[str, ...] | None = None,
            level: PopulationGroupLevel | None = None, intro: str | None = None) -> Projection | None:
    """The panel: the profile choice, the plan's expected national outcome per level (with
    the level `level` in figures first, if given), why it differs from the sample, the
    projection's notes, how an agency makes its own profile, and the CSV."""
    st.markdown(intro or "Expected over the noise, per population group level, for **the current plan** "
                         f"({pj.plain(_plan_name())}).")
    prof = picker(key)
    if prof is None:
        return None
    proj = _projection(config, prof)
    if not proj.rows:
        st.info("The plan tabulates no level this profile holds.")
        return proj
    if level is not None:
        s = pj.level_summary(proj, level)
        if s is None:
            st.info(f"The profile has no groups of {level.key}.")
        else:
            m = st.columns(5)  # the groups that exist (issue 40 item 2)
            m[0].metric("Groups with a person", pm.fmt(s["occupied"], pm.COUNT),
                        help=f"Of the level's {pm.fmt(s['groups'], pm.COUNT)} groups, those with at least one person.")
            m[1].metric("Publish a total", pm.fmt(s["occupied_published"], pm.COUNT),
                        help=f"{pm.fmt(s['occupied_published'] / s['occupied'] if s['occupied'] else 0, pm.SHARE)} of "
                             f"the groups with a person. Groups with no person that publish a total: "
                             f"{pm.fmt(s['empty_published'], pm.COUNT)}.")
            m[2].metric("With a sex × age table", pm.fmt(s["occupied_with_table"], pm.COUNT),
                        help=f"Groups with a person that get a table: sex × age4 {pm.fmt(s['occupied_age4'], pm.COUNT)}, "
                             f"age9 {pm.fmt(s['occupied_age9'], pm.COUNT)}, age23 {pm.fmt(s['occupied_age23'], pm.COUNT)}.")
            m[3].metric("Suppressed", pm.fmt(s["occupied_suppressed"], pm.COUNT),
                        help=f"Groups with a person whose total is suppressed; ± "
                             f"{pm.fmt(s['occupied_suppressed_sd'], pm.COUNT)} (one standard deviation). All groups: "
                             f"{pm.fmt(s['suppressed'], pm.COUNT)}.")
            if s["mean_abs_error_bound"]:
                m[4].metric("Mean |error| of a total", f"≤ {s['mean_abs_error']:.1f}", help=BOUND_HELP)
            else:
                m[4].metric("Mean |error| of a total", f"{s['mean_abs_error']:.1f}",
                            help="Expected |published − true| of a published total, in persons.")
    ref_name, ref_proj = _reference_projection(prof)
    headline(config, proj, key, (ref_name, ref_proj))
    table = pj.display_table(proj, columns, ref_proj, PLANNER_CHANGES if columns == PLANNER_COLUMNS else None)
    full = proj.frame()
    widgets.table(table, f"national_outcome_{key}.csv", key=f"{key}_table", data=full, csv_head=proj.header_lines(),
                  height=35 * (len(table) + 1) + 3,
                  column_config=_columns(table, bool(proj.total["mean_abs_error_bound"])),
                  caption=f"Expected numbers of groups and rows (rounded) for the nation of **{pj.plain(prof.name)}** "
                          f"({prof.persons:,} persons); the download has the decimals and each figure's standard "
                          f"deviation. “Δ”: the change from the reference plan ({pj.plain(ref_name)}; chosen in "
                          "the sidebar); a level's published totals change by the opposite of its suppressed groups "
                          "(every group publishes a total unless suppressed). A group with only a total may have it "
                          "suppressed (sub-state levels). "
                          + " ".join(proj.notes) + " " + pj.OWN_IN_SHORT)
    over = _error_above_moe(config, proj)
    if over:
        st.caption(" ".join(over))
    words = scale_words(config, proj)
    if words:
        st.info(words[0] + "\n" + "\n".join(f"- {w}" for w in words[1:]), icon=":material/straighten:")
    # drawn only while open: the page's control changes do not redraw a closed text
    how = st.expander("Where the profile comes from, and how to use your own", key=f"{key}_how", on_change="rerun")
    if how.open:
        with how:
            st.markdown(pj.HOW_TO_OWN)
            _glossary_links()
    return proj


def _reference_projection(profile: Profile) -> tuple[str, Projection]:
    ref = state.reference()
    return ref.source, _projection(ref.config, profile)


def headline(config: SafeTabConfig, proj: Projection, key: str,
             reference: tuple[str, Projection] | None = None) -> None:
    """What the plan does to the groups that exist (issue 40 item 2), per geography, with
    each figure's change from the reference plan (chosen in the sidebar; `reference`: its
    name and projection, if already made), and why a plan with less budget publishes more
    tables when it does."""
    ref_name, ref_proj = reference or _reference_projection(proj.profile)
    st.markdown(explain.headline_sentence(proj))
    widgets.table(pj.geography_frame(proj, ref_proj), f"national_by_geography_{key}.csv", key=f"{key}_geo",
                  csv_head=proj.header_lines(),
                  column_config={"Geography": st.column_config.TextColumn(width=84)},
                  caption=f"Groups with at least one person, per geography; under a geography, its change from the "
                          f"reference plan ({pj.plain(ref_name)}; chosen in the sidebar) where it differs. “Total only” is published totals "
                          "without a table; the suppressed are their own column. “Empty, published”: groups with no "
                          "person that publish a total. “Persons covered”: share of the persons' group memberships "
                          "whose group publishes a total.")
    why = explain.less_budget_more_tables(state.reference().config, config, proj.profile)
    if why:
        st.info("\n\n".join(why), icon=":material/lightbulb:")


def _error_above_moe(config: SafeTabConfig, proj: Projection) -> list[str]:
    """Why a level's mean |error| of a published total exceeds its MOE (the level where it
    does most), in words from the numbers (`calculators.explain.published_error_above_moe`)."""
    worst, ratio = None, 1.0
    for r in proj.rows:
        lvl = PopulationGroupLevel(r["geo"], int(r["iteration_level"]))
        moe = pm.achieved_moe(config, lvl, pm.EXACT)
        if moe and r["mean_abs_error"] == r["mean_abs_error"] and r["mean_abs_error"] / moe > ratio:
            worst, ratio = lvl, r["mean_abs_error"] / moe
    if worst is None:
        return []
    lines = explain.published_error_above_moe(config, worst, proj)
    moe = pm.achieved_moe(config, worst, pm.EXACT)
    return [f"Why “Mean |err|” can exceed the MOE: {pm.level_name(worst)} expects "
            f"{pm.fmt(proj.row(worst)['mean_abs_error'])} persons beside a MOE of {pm.fmt(moe, pm.COUNT)}.", *lines[:2]]


def national_metrics(config: SafeTabConfig) -> None:
    """The compact national summary the planner keeps beside its controls: five figures
    about the groups that exist, each with its change from the reference plan (st.metric
    deltas), on the profile chosen for the national outcome."""
    try:
        prof = chosen()
    except ProfileError:
        return
    if prof is None:
        return
    proj = _projection(config, prof)
    if not proj.rows:
        return
    ref_name, ref_proj = _reference_projection(prof)
    a, b = pm.national_headline(proj), pm.national_headline(ref_proj)
    ch = pm.national_changes(b, a)
    shown = (("published", "Publish a total", "normal"), ("with_table", "With a sex × age table", "normal"),
             ("suppressed", "Suppressed", "inverse"), ("empty_published", "Empty, published", "inverse"),
             ("persons_published_share", "Persons covered", "normal"))
    with st.container(key="pl_national_metrics"):
        st.markdown(f"**Nation** ({pj.plain(prof.name)}): of **{pm.fmt(a['occupied'], pm.COUNT)}** groups with at "
                    f"least one person; change from **{pj.plain(ref_name)}**")
        cols = st.columns(len(shown))
        for col, (k, label, colour) in zip(cols, shown):
            kind = pm.HEADLINE[k][1]
            change = pm.fmt_change(ch[k], kind)
            moved = change not in ("0", "0 points")
            # st.metric reads the direction from a leading ASCII "-"
            col.metric(label, pm.fmt(a[k], kind), delta=change.replace("−", "-", 1),
                       delta_color=colour if moved else "off", delta_arrow="auto" if moved else "off",
                       help=f"{pm.HEADLINE[k][0][0].upper()}{pm.HEADLINE[k][0][1:]}; reference "
                            f"{pm.fmt(b[k], kind)}. Expected over the noise.")


#: The glossary's entries of the panel's terms (linked in "Where the profile comes from").
GLOSSARY_TERMS = ("Group-size profile", "National outcome (projection)")


def _glossary_links() -> None:
    from ui.core import glossary

    row = st.container(horizontal=True, gap="small", vertical_alignment="center")
    row.markdown("In the glossary:")
    for term in GLOSSARY_TERMS:
        row.page_link("app_pages/safetab/glossary.py", label=term, icon=":material/menu_book:",
                      query_params=glossary.link_params(term))


#: The planner's columns (and the adaptive-tables and suppression pages'; every download has all).
PLANNER_COLUMNS = ("groups", "age4", "age9", "age23", "total_only_published", "suppressed", "mean_abs_error")
#: The planner's changes from the reference plan (issue 40): groups with a table and suppressed
#: groups. So that the table fits beside the sidebar at 1280 px, it leaves out two figures that
#: its other columns give: groups with a table (the sum of the three sex × age columns) and
#: published totals (T1 rows: the groups less the suppressed, so that their change is that of
#: the suppressed with the other sign; the caption says so). The download has both.
PLANNER_CHANGES = ("tables", "suppressed")


#: Short headers and their help, so that the widest table (11 columns) fits beside the sidebar at 1280 px.
_HEADERS = {
    "groups": ("Groups", "Population groups of the level (every region x iteration, empty or not)."),
    "tables": ("With table", "Groups that get a sex × age table (age4, age9 or age23)."),
    "age4": ("Sex×age4", "Groups that get sex × age4 (8 cells)."),
    "age9": ("Sex×age9", "Groups that get sex × age9 (18 cells)."),
    "age23": ("Sex×age23", "Groups that get sex × age23 (46 cells)."),
    "total_only": ("Total only", "Groups that publish a total only (stat level 0, suppressed or not, and TotalOnly "
                                 "groups)."),
    "total_only_published": ("Total only", "Groups that publish a total and no table (the suppressed are not in "
                                           "it: their own column)."),
    "suppressed": ("Suppressed", "Groups whose total is suppressed (stat level 0 at sub-state levels)."),
    "t1_rows": ("T1 rows", "Published totals."),
    "t2_rows": ("T2 rows", "Published sex × age rows: the cells and two sex marginals of each table."),
    "mean_abs_error": ("Mean |err|", "Expected |published − true| of a published total, in persons."),
}


#: Short headers of the change columns (`projection.CHANGE_COLUMNS`), so that they fit at 1280 px.
_CHANGE_HEADERS = {"t1_rows": "Δ T1 rows", "tables": "Δ table", "suppressed": "Δ suppr."}


#: What a bound of the mean |error| is (counts clamped at 0; `calculators.projection`).
BOUND_HELP = ("At most this: an upper bound of the expected |published − true| of a published total, in persons. "
              "The plan clamps counts at 0, and a table's total is then the sum of its clamped cells, whose error "
              "depends on the cells' counts, which a group-size profile does not hold.")


def _columns(table, bound: bool = False) -> dict:
    """The table's column headers and help; `bound`: the error column holds upper bounds."""
    cfg = {pj.LEVEL: st.column_config.TextColumn(width=118)}
    for key, head in pj.CHANGE_COLUMNS.items():
        if head in table.columns:
            cfg[head] = st.column_config.TextColumn(
                _CHANGE_HEADERS[key], width=60,
                help=f"{_HEADERS[key][1]} The change from the reference plan (chosen in the sidebar): this plan "
                     "minus the reference, expected over the noise.")
    for key, (head, helptext) in _HEADERS.items():
        if key == "mean_abs_error" and bound:
            head, helptext = "Mean |err| ≤", BOUND_HELP
        label = pj.LABELS[key]
        if label in table.columns:
            cfg[label] = (st.column_config.NumberColumn(head, help=helptext, width=74, format="%.1f")
                          if key == "mean_abs_error" else widgets.count_column(head, help=helptext, width=74))
    return cfg


def _plan_name() -> str:
    from ui.core import state

    return state.source_label()


def compare(plans, names: list[str]) -> None:
    """Scenarios: the plans side by side on their expected national outcome, one measure
    at a time, cells that differ from the first plan highlighted."""
    from ui.committee import comparison

    prof = picker("sc_nat")
    if prof is None:
        return
    ss = st.session_state
    plan_list = [(n, p.config) for n, p in zip(names, plans)]
    heads = pj.plans_headline(plan_list, prof)
    st.markdown(f"**The groups that exist** (at least one person): each plan's outcome, and its change from "
                f"{pj.plain(names[0])}.")
    widgets.table(heads, "compare_national_headline.csv", key="sc_nat_head",
                  csv_head=pj.profile_lines(prof, "each plan's outcome for the groups with at least one person."))
    _by_geography(plan_list, prof)
    if ss.get("sc_nat_measure") not in pj.MEASURES:  # opens on the figure the plans differ on most
        ss["sc_nat_measure"] = pj.most_different([(n, p.config) for n, p in zip(names, plans)], prof)[0]
    measure = st.radio("Figure", list(pj.MEASURES), key="sc_nat_measure", horizontal=True,
                       format_func=lambda m: pj.MEASURES[m][0])
    df = pj.compare_plans([(n, p.config) for n, p in zip(names, plans)], prof, measure)
    words = [pj.MEASURES[measure][1], f"Nation: {pj.describe(prof)}. Expected over the noise; a level a plan does "
             "not tabulate is empty."]
    bounded = [n for n, p in zip(names, plans) if not p.config.allow_negative_counts]
    if bounded and measure == "mean_abs_error":
        verb = "clamps" if len(bounded) == 1 else "clamp"
        words.append(f"{pj.plain(', '.join(bounded))} {verb} counts at 0: at a level with tables its figure is an "
                     "upper bound (a table's total is the sum of clamped cells).")
    st.caption(" ".join(words + df.attrs["notes"]))
    widgets.table(df, f"compare_national_{measure}.csv", key="sc_nat_table", height=35 * (len(df) + 1) + 3,
                  csv_head=pj.profile_lines(prof, pj.MEASURES[measure][1]),
                  style=(comparison.styled, (names, {n: "{:.4g}" if measure == "mean_abs_error" else "{:,.0f}"
                                                     for n in names})))


def _by_geography(plan_list, prof: Profile) -> None:
    """Scenarios: the plans per geography, one figure of the groups that exist at a time,
    opening on the figure the plans differ on most."""
    ss = st.session_state
    if ss.get("sc_geo_measure") not in pj.GEOGRAPHY_MEASURES:
        ss["sc_geo_measure"] = pj.geography_most_different(plan_list, prof)[0]
    measure = st.radio("Per geography, groups with a person", list(pj.GEOGRAPHY_MEASURES), key="sc_geo_measure",
                       horizontal=True, format_func=pj.GEOGRAPHY_MEASURES.get,
                       help="Opens on the figure the plans differ on most.")
    df = pj.plans_by_geography(plan_list, prof, measure)
    widgets.table(df, f"compare_by_geography_{measure}.csv", key="sc_geo_table", height=35 * (len(df) + 1) + 3,
                  csv_head=pj.profile_lines(prof, f"each plan's {pm.HEADLINE[measure][0]}, per geography, for the "
                                                  "groups with at least one person."),
                  column_config={"Geography": st.column_config.TextColumn(width=96)},
                  caption=f"{pm.HEADLINE[measure][0][0].upper()}{pm.HEADLINE[measure][0][1:]}, of the groups with "
                          f"at least one person, per geography; “Δ”: the change from {pj.plain(plan_list[0][0])}. "
                          "Expected over the noise; a geography a plan does not tabulate is a dash.")
