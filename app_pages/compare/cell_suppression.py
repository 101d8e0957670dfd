"""Compare methods: legacy cell suppression (group threshold, primary and complementary
suppression, LP audit) against SafeTab-P on the same groups of the sample data and plan."""

import json

import streamlit as st

from calculators.config import ConfigError
from calculators.levels import PopulationGroupLevel
from engine.errors import InputError
from engine.reports.legacy import LegacyOptions
from ui.compare import layout as compare
from ui.safetab import runner
from ui.core import state, typed, widgets
from ui.core.progress import ProgressBar
from ui.compare import cell_suppression as cmp

state.page_setup()
PAGE = next(m for m in compare.METHODS if m.path == "app_pages/compare/cell_suppression.py")
compare.header(PAGE)
st.info("A seeded study on the synthetic sample data, never a release: the legacy tables hold **exact counts** "
        "(that is how they were published), and SafeTab-P's noise comes from a seeded stream (NOT FOR RELEASE).",
        icon=":material/science:")

ss = st.session_state
KEYS = ("cs_level", "cs_minpop", "cs_mincell", "cs_prot", "cs_ages", "cs_parent", "cs_narrow", "cs_seed",
        "cs_capacity", "cs_refine")
CAPACITY = {"value": "Its value (Massell's model)", "unbounded": "Unbounded (zero counts may rise)"}
for k, v in ss.get("cs_saved", {}).items():  # controls keep their values across pages
    if k not in ss:
        ss[k] = v

if not state.has_sample():
    st.warning(f"The sample data is not there ({state.sample_dir()}), so there is nothing to compare on.")
    st.stop()
basis = compare.sample_plan("cs_plan")
cfg = basis.config


@st.cache_data(show_spinner=False, max_entries=1)
def _paper_numbers():
    return cmp.paper_numbers()


@st.cache_resource(show_spinner=False, max_entries=16)
def _slot(kind: str, key: str) -> dict:
    """A shared box per (kind, key), filled below: the work runs outside the cached call so
    that its progress shows. Kinds: the prepared data, a study (per plan and options) and its
    legacy release (per counts and options, the same under every plan)."""
    return {}


prep = _slot("prepared", json.dumps([str(state.sample_dir()), cfg.to_json()]))
if "value" not in prep:
    with st.spinner("Checking the sample data and counting persons..."):
        try:
            from engine.run import prepare

            prep["value"] = prepare(state.sample_dir() / "params", state.sample_dir() / "data",
                                    config=runner.on_files(cfg))  # the files, as the Run page reads them
        except (InputError, ConfigError) as exc:
            st.error(f"The sample data cannot be used with {basis.plan_text}:\n\n{widgets.plain(str(exc))}")
            st.stop()
prepared = prep["value"]
levels = cmp.levels_offered(prepared)
if not levels:
    st.warning(f"{basis.plan_opening} tabulates no level that has regions in the sample data.")
    st.stop()

# ------------------------------------------------------------------ controls
keys = [lvl.key for lvl in levels]
if ss.get("cs_level") not in keys:
    ss["cs_level"] = "(COUNTY, 1)" if "(COUNTY, 1)" in keys else keys[0]
d = LegacyOptions()
for k, v in (("cs_ages", d.ages), ("cs_parent", True), ("cs_capacity", d.capacity), ("cs_refine", d.refine)):
    ss.setdefault(k, v)
c = st.columns([2.2, 1, 1, 1, 1])
key = c[0].selectbox("Population group level", keys, key="cs_level",
                     format_func=lambda k: cmp.level_label(PopulationGroupLevel.parse(k)),
                     help="The legacy release covers this level and the level above it (e.g. STATE above COUNTY), "
                          "whose cells are sums of this level's. Levels linked to USA or STATE take longer.")
minpop = widgets.number_box("Minimum population (persons)", "cs_minpop", typed.Rule(whole=True, lo=0, hi=1_000_000),
                            d.min_population, container=c[1],
                            help="A group's table and total are published only from this many persons; 100 in the "
                                 "2000 and 2010 detailed-group products. A whole number from 0 to 1,000,000.")
mincell = widgets.number_box("Smallest count shown (persons)", "cs_mincell", typed.Rule(whole=True, lo=1, hi=1_000),
                             d.min_cell, container=c[2],
                             help="Counts of 1 up to one less than this are withheld (primary suppression). A whole "
                                  "number from 1 to 1,000.")
prot = widgets.number_box("Protection (persons)", "cs_prot", typed.Rule(whole=True, lo=0, hi=1_000), d.protection,
                          container=c[3],
                          help="How far above, and below (down to 0), each small count must stay possible for an "
                               "attacker who knows every published count. A whole number from 0 to 1,000.")
c[4].selectbox("Age bins", [23, 9, 4], key="cs_ages", help="Age bins of the legacy sex by age table.")
c2 = st.columns([2.2, 1, 1, 2])
c2[0].toggle("Protect across the geography hierarchy", key="cs_parent",
             help="Off: each level is protected alone, as if nobody could add up the child regions' cells "
                  "against the parent's. The audit still does, and shows what that gives away.")
narrow = float(widgets.number_box("Narrow interval (persons)", "cs_narrow", typed.Rule(whole=True, lo=0, hi=100), 2,
                                  container=c2[1],
                                  help="A withheld count whose possible range is at most this wide counts as nearly "
                                       "disclosed. A whole number from 0 to 100."))
seed = int(widgets.number_box("Noise seed (SafeTab-P)", "cs_seed", typed.SEED, 1, container=c2[2]))
c3 = st.columns([2.2, 2, 2])
c3[0].selectbox("How far a count may move", list(CAPACITY), format_func=CAPACITY.get,
                key="cs_capacity", help="Massell's capacity model: in the linear program that picks complementary "
                                        "cells, each count moves by at most its own value, so a zero count never "
                                        "protects another. Unbounded lets counts rise without limit (the audit's "
                                        "view of what an attacker cannot rule out).")
c3[1].toggle("Refinement run", key="cs_refine", help="Massell's second pass: only the first pass's complements are "
                                                     "candidates, small counts the dearest; it keeps the ones it "
                                                     "needs.")
with c3[2]:
    compare.glossary_links(("Capacity (how far a count may move)", "Refinement run"), label="These settings:")
ss["cs_saved"] = {k: ss[k] for k in KEYS if k in ss}

level = PopulationGroupLevel.parse(key)
options = LegacyOptions(geo=level.geo, iteration_level=level.iteration_level, min_population=int(minpop),
                        min_cell=int(mincell), protection=int(prot), ages=int(ss["cs_ages"]),
                        hierarchy=bool(ss["cs_parent"]), capacity=str(ss["cs_capacity"]),
                        refine=bool(ss["cs_refine"]), time_budget=300.0)

# ------------------------------------------------------------------ the study (cached)
slot = _slot("study", json.dumps([str(state.sample_dir()), cfg.to_json(), repr(options), seed]))
if "value" not in slot:
    with st.status("Building both releases...", expanded=True) as status:
        bar = ProgressBar("Starting")
        try:
            slot["value"] = cmp.run(prepared, level, options, seed, bar.count,
                                    reuse=lambda key: _slot("legacy", key))
        except ValueError as exc:
            status.update(label="Could not build the study", state="error")
            st.error(str(exc))
            st.stop()
        status.update(label=f"Both releases built ({slot['value'].seconds_legacy:.1f} s for the legacy release)",
                      state="complete", expanded=False)
study = slot["value"]
counts = cmp.counts(study, narrow)
lgc, spc = counts[cmp.LEGACY], counts[cmp.SAFETAB]
if study.legacy.notes or lgc["not_audited"]:
    widgets.problems(cmp.solver_heading(lgc, study.legacy.notes), study.legacy.notes + (
        [f"{lgc['not_audited']:,} withheld counts were not audited (the audit ran out of time)"]
        if lgc["not_audited"] else []), kind="warning")

# ------------------------------------------------------------------ side by side
left, right = compare.side_by_side(cmp.LEGACY, cmp.SAFETAB)
with left:
    m = st.columns(2)
    m[0].metric("Groups with a table", f"{lgc['groups_with_table']:,}",
                help=f"of the {lgc['groups']:,} groups of the level, those with at least one sex by age cell "
                     f"published; {lgc['groups_below_threshold']:,} fall below the minimum population and "
                     f"{lgc['groups_above_threshold'] - lgc['groups_with_table']:,} reach it but have every cell "
                     f"withheld. {lgc['groups_published']:,} groups have a published total.")
    m[1].metric("Cells published", f"{lgc['cells_published']:,}", help="sex by age cells, exact counts")
    m[0].metric("Recovered exactly", f"{lgc['recovered_exactly']:,}",
                help="withheld counts whose smallest and largest possible values, given what is published, agree "
                     "(the audit)")
    m[1].metric(f"Within {narrow:g} persons", f"{lgc['narrow']:,}",
                help="withheld counts the audit pins, not exactly, to a range this narrow")
    m[0].metric("Cells withheld", f"{lgc['cells_withheld']:,}",
                help="sex by age cells withheld in the tables of the groups that reach the minimum population "
                     "(primary, complementary or solver fallback)")
    m[1].metric("Solver time", cmp.seconds(lgc["seconds"]), help=f"{lgc['lps']:,} linear programs (HiGHS)")
with right:
    m = st.columns(2)
    m[0].metric("Groups with a table", f"{spc['groups_with_table']:,}",
                help=f"and {spc['groups_published'] - spc['groups_with_table']:,} more with a total only")
    m[1].metric("Cells published", f"{spc['cells_published']:,}",
                help="sex by age cells, with noise; a group's table is as detailed as its noisy size allows")
    m[0].metric("Recovered exactly", "0", help="every published count carries noise; nothing is withheld "
                                                       "by a rule that the published counts can undo")
    m[1].metric("Margin of error", f"±{study.moe_cell:,}", help="95% margin of error of one cell (a stage-2 count) of this level")
    m[0].metric("Totals suppressed", f"{spc['withheld']:,}",
                help="small noisy totals below SafeTab-P's suppression threshold, and groups not tabulated")
    m[1].metric("Noise time", cmp.seconds(spc["seconds"]), help="tabulating this level with noise")

summary = cmp.summary(study, narrow)
widgets.table(summary, "cell_suppression_summary.csv", key="cs_summary", height=35 * (len(summary) + 1) + 3,
              # each column as wide as its longest entry (widgets.fit_columns): no text is cut
              column_config={c: st.column_config.TextColumn(width=120) for c in summary.columns},
              caption=f"{cmp.level_label(level)}, the same population groups under both methods. "
                      f"SafeTab-P's figures come from one seeded release. Massell's capacity: in the linear "
                      f"program that picks complementary cells, a count may move by at most its value; "
                      f"unbounded: counts may rise without limit. {basis.sentence}")

size = cmp.detail_by_size(study)
widgets.chart(cmp.size_chart(size), size, "cell_suppression_by_size.csv", key="cs_size_chart")

# ------------------------------------------------------------------ one table
st.subheader("One table, both ways")
choices = cmp.table_choices(study)
grid_legacy = grid_sp = None
if not choices:
    st.info("No group of this level reaches the minimum population, so the legacy release has no table to show.")
else:
    labels = [lab for lab, _g in choices]
    if ss.get("cs_group") not in labels:
        ss["cs_group"] = labels[0]
    pick = st.selectbox("Group", labels, key="cs_group", help="Groups of this level that reach the minimum "
                                                               "population, those with the most withheld counts "
                                                               "first (a group whose total is D has no published "
                                                               "total).")
    g = dict(choices)[pick]
    grid_legacy = cmp.legacy_grid(study, g)
    grid_sp, note = cmp.safetab_grid(study, g)
    gl, gr = st.columns(2, gap="large")
    with gl:
        widgets.plotly(cmp.grid_figure(grid_legacy, "Legacy: D = withheld, [lowest, highest] possible"),
                       key="cs_grid_legacy")
        st.caption("Red: small counts (primary suppression); orange: withheld so that they cannot be worked out "
                   "(complementary); purple: withheld whole by the solver fallback. A group whose total is D has no "
                   "published total. The range under each D is all an attacker can learn from the published counts "
                   "of this level and the level above. Hover for the true count (synthetic data).")
    with gr:
        widgets.plotly(cmp.grid_figure(grid_sp, "SafeTab-P: the same group, every count with noise"),
                       key="cs_grid_safetab")
        st.caption(note)

# ------------------------------------------------------------------ the audit
st.subheader("The audit: what each withheld count could still be")
audit = cmp.audit_frame(study)
st.caption(f"{len(audit):,} withheld counts of the groups that reach the minimum population (and of groups below "
           "it that the published counts bound), narrowest range first. A count recovered exactly has the same "
           "lowest and highest value.")
widgets.table(audit, "cell_suppression_audit.csv", key="cs_audit", height=360, fit_texts=False, column_config={
    # eleven columns in the width of a laptop's page: short labels, full names on hover; a long
    # group name is cut here (widened to fit, the table would hide its last columns) and whole in the CSV
    "Geography": st.column_config.TextColumn(width=75), "Region": st.column_config.TextColumn(width=70),
    "Iteration code": st.column_config.TextColumn("Code", width=50, help="Iteration code"),
    "Group": st.column_config.TextColumn(width=140), "Count": st.column_config.TextColumn("Cell", width=105),
    "Why withheld": st.column_config.TextColumn(width=115),
    "Lowest possible": st.column_config.NumberColumn("Lowest", format="%.0f", width=62, help="Lowest possible"),
    "Highest possible": st.column_config.NumberColumn("Highest", format="%.0f", width=62, help="Highest possible"),
    "Width": st.column_config.NumberColumn(format="%.0f", width=55),
    "Recovered exactly": st.column_config.CheckboxColumn("Exact", width=52, help="Recovered exactly"),
    "Protection met": st.column_config.CheckboxColumn("Protected", width=72, help="Protection met")})

paper = _paper_numbers()
compare.paper_numbers(paper, key="cs_paper", caption=(
    "Massell's report prints rules rather than worked numbers: each row checks one statement on a small table, "
    "computed now with methods.cell_suppression. The audit's a-priori bounds are the seed's [0, grand total] for a "
    "table (audit_table); in this study the group totals are relations of the system, so a published total bounds "
    "its cells already, and a withheld one is no public bound. Linked tables are protected as one system of "
    "relations, so no backtracking is needed."))
verdict = compare.verdict(cmp.verdict(study, narrow), basis, nothing=compare.nothing_published(
    basis, level, "no sex by age table for any group of this level" if spc["groups_published"]
    else "nothing for this level (every total suppressed)") if not spc["groups_with_table"] else None,
    study=f"Legacy tables of exact counts and one SafeTab-P release with seeded noise (seed {seed}): a study, "
          "NOT FOR RELEASE.")
files = {"cell_suppression_summary.csv": summary, "cell_suppression_by_size.csv": size,
         "cell_suppression_audit.csv": audit, "colour_legend.csv": cmp.legend_frame(), "paper_numbers.csv": paper}
if grid_legacy is not None:
    files["one_table_legacy.csv"] = grid_legacy
    files["one_table_safetab_p.csv"] = grid_sp
compare.downloads(files, "cell_suppression.zip", key="cs_dl", verdict=verdict)
