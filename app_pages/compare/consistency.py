"""Compare methods: hierarchical consistency (least squares, tree DP, relax-then-round) beside SafeTab-P."""

import streamlit as st

from calculators.levels import ITERATION_LEVEL_NAMES
from engine.reports.consistency import table7
from engine.tabulation.consistency import DESCRIPTIONS, LABELS
from ui.compare import layout as compare
from ui.compare import lists
from ui.core import state, typed, widgets
from ui.core.progress import ProgressBar
from ui.compare import consistency as cc

state.page_setup()
PAGE = next(m for m in compare.METHODS if m.path == "app_pages/compare/consistency.py")
compare.header(PAGE)

if not state.has_sample():
    st.error(f"The sample data are not there ({state.sample_dir()}): this comparison runs on them.")
    st.stop()

basis = compare.sample_plan("cons_plan")
cfg = basis.config
ss = st.session_state
c = st.columns([1, 1.2, 1, 1.4, 2])
seed = int(widgets.number_box("Seed of the study", "cons_seed", typed.SEED, 1, container=c[0],
                              help="The noise is drawn from a seeded stream: the same seed gives the same releases."))
trials = int(c[1].slider("Releases to average", 1, 5, 1, key="cons_trials",
                         help="Each release draws SafeTab-P's noise once; every method post-processes the same "
                              "noisy counts. More releases average the noise out (about 10 s each on the sample)."))
c[4].caption(
    f"{basis.sentence} Seeded: a study, **NOT FOR RELEASE**. Errors are over the published totals of the nested "
    "levels (USA, states, counties, tracts and Puerto Rico's); suppressed groups are the same for every method and "
    "are not counted.")

key = (cfg.to_json(), seed, trials)
cache = ss.setdefault("cons_cache", {})
if key not in cache:
    shared = compare.shared_result("consistency", repr((str(state.sample_dir()), *key)))
    if "value" not in shared:  # not yet run by any session
        bar = ProgressBar("Running the study ...")

        def _progress(stage, done, total):
            bar(stage, done / total if total else 0.0)

        try:
            shared["value"] = cc.run_study(state.sample_dir() / "params", state.sample_dir() / "data", cfg, seed,
                                           trials, _progress)
        except Exception as exc:  # noqa: BLE001 - shown as a message, never a traceback
            bar.empty()
            st.error(f"The study could not run with this plan: {exc}")
            st.stop()
        bar.empty()
    while len(cache) >= 4:  # keep the last few studies of this session
        cache.pop(next(iter(cache)))
    cache[key] = shared["value"]
comp = cache[key]

levels = cc.iteration_levels(comp)
if not levels:
    st.info("This plan tabulates no two nested levels (USA, STATE, COUNTY, TRACT), so there is nothing to make "
            "consistent.")
    st.stop()
with c[2]:
    lvl = st.radio("Groups", levels, format_func=lambda x: ITERATION_LEVEL_NAMES[x], horizontal=True,
                   key="cons_level")
with c[3]:
    value = st.radio("Measure", list(cc.MEASURES), format_func=lambda v: cc.MEASURES[v].split(" (")[0],
                     horizontal=True, key="cons_measure",
                     help="Mean absolute error: how far published totals are from the truth. Bias: whether they "
                          "are too high (+) or too low (−) on average.")
summary = comp.summary.set_index("method")
what = cc.MEASURES[value].split(" (")[0].lower()

# Narrow columns: the paper's Table 7 fits in half the page at 1280 px.
_T7_COLUMNS = {"Geography level": st.column_config.TextColumn("Geography", width=80),
               "Published totals": st.column_config.NumberColumn("Totals", width=55,
                                                                  help="Published totals of the level")}
_T7_COLUMNS |= {LABELS[m]: st.column_config.NumberColumn(
    LABELS[m].replace("Relax then round", "Relax-round"), width=78, help=LABELS[m]) for m in cc.OTHERS}
left, right = compare.side_by_side("Consistency methods", "SafeTab-P as published")
with left:
    st.markdown(f"**{what.capitalize()} by geography level** (persons; {ITERATION_LEVEL_NAMES[lvl]} groups), "
                "the layout of the paper's Table 7")
    widgets.table(cc.table7_view(comp, lvl, cc.OTHERS, value), f"consistency_table7_{lvl}_{value}.csv",
                  key="cons_t7", column_config=_T7_COLUMNS)
    st.markdown("**Parents not adding up, per release**")
    m = st.columns(3)
    for col, meth in zip(m, cc.OTHERS):
        col.metric(LABELS[meth], f"{summary.loc[meth, 'violations_per_release']:,.0f}", help=DESCRIPTIONS[meth])
with right:
    st.markdown(f"**{what.capitalize()} by geography level** (persons; {ITERATION_LEVEL_NAMES[lvl]} groups)")
    widgets.table(cc.table7_view(comp, lvl, ["none"], value), f"safetab_{lvl}_{value}.csv", key="cons_t7_none",
                  column_config=_T7_COLUMNS)
    m = st.columns(2)
    m[0].metric("Parents not adding up", f"{summary.loc['none', 'violations_per_release']:,.0f}",
                help=f"Per release, of {summary.loc['none', 'parents_per_release']:,.0f} parent totals: a published parent must "
                     "equal the sum of its children, or be at least the sum of the published ones when some are "
                     "suppressed")
    m[1].metric("Negative totals", f"{100 * summary.loc['none', 'share_negative']:.1f}%")

fig, data = cc.level_chart(comp, lvl, value)
widgets.chart(fig, data, f"consistency_by_level_{lvl}_{value}.csv", key="cons_chart_level")
st.subheader("All nested levels together, Detailed and Regional groups")
sv = cc.summary_view(comp, ["none", *cc.OTHERS])
widgets.table(sv, "consistency_summary.csv", key="cons_summary", column_config={
    "Method": st.column_config.TextColumn(width=108),
    **{c: st.column_config.NumberColumn(label, width=w, help=c) for c, label, w in (
        ("Mean absolute error (persons)", "Mean |error|", 90), ("Bias (persons)", "Bias", 70),
        ("Negative totals (%)", "Negative %", 85), ("Parents not adding up, per release", "Not adding up", 100),
        ("Parents checked, per release", "Parents", 70), ("Run time per release (s)", "Run time (s)", 90),
        ("Table cells: mean absolute error (persons)", "Cells: mean |error|", 115),
        ("Table cells: negative (%)", "Cells: negative %", 105))}},
              caption="Run time: the method's post-processing of one release on this machine (SafeTab-P: none). "
                      "Parents checked: published parents with published children, per release.")
st.subheader(f"{what.capitalize()} by true size")
size = cc.by_size_view(comp)
widgets.chart(cc.size_chart(comp, value), size, "consistency_by_size.csv", key="cons_chart_size")
widgets.table(cc.by_size_table(comp, value), f"consistency_by_size_{value}.csv", key="cons_size_table",
              caption=f"{cc.MEASURES[value]} of the published totals of every nested level, by the group's true "
                      f"size. Sizes with fewer than {cc.MIN_COUNTS} published totals are left out of the chart "
                      "(too few to say); the table has them all.")

_none = comp.by_level[(comp.by_level.method == "none") & ~comp.by_level.geo_level.isin(["USA", "STATE", "PR-STATE"])]
verdict = compare.verdict(cc.verdict_text(comp), basis, nothing=compare.nothing_published(
    basis, None, "no county or tract total (every one is suppressed), so the methods have only the nation and the "
                 "states to make consistent") if not int(_none.counts.sum()) else None,
    study=f"Seeded study (seed {seed}, {trials:,} releases), NOT FOR RELEASE.")
full = table7(comp).rename(columns={"geo_level": "geography_level"})
compare.downloads({
    "consistency_table7_error.csv": full,
    "consistency_table7_bias.csv": table7(comp, value="bias").rename(columns={"geo_level": "geography_level"}),
    "consistency_summary.csv": sv,
    "consistency_by_size.csv": size,
    "consistency_by_level.csv": comp.by_level,
    f"consistency_chart_{lvl}_{value}.csv": data,
}, "consistency.zip", key="cons_dl", verdict=verdict)

# ------------------------------------------------------------------ the paper's own problem
st.divider()
st.header("Group sizes (the paper's problem)")
st.markdown(
    "Fioretto, Van Hentenryck and Zhu wrote their dynamic program for another release: for every area, **how many "
    "households have 1, 2, 3, … persons**, consistent from the nation down, never negative, in whole numbers, and "
    "adding up to the public number of households at every level. Noise is added per level with the paper's "
    "sensitivities (2 for the counts of each size, 1 for cumulative counts, which need half the noise), then the "
    "noisy counts are post-processed exactly, or relaxed and rounded as the paper's baselines.")
gc = st.columns([1.4, 1, 1, 1])
epsilons = lists.list_box("Privacy budgets ε (comma-separated)", "gs_eps", cc.parse_epsilons, (0.1, 0.5, 1.0),
                          container=gc[0],
                          help=f"Each budget is split evenly over the 4 levels (USA, states, counties, tracts). Up "
                               f"to {cc.MAX_EPSILONS} budgets, each {cc.EPSILON_RULE.describe()}, each typed once. "
                               "The paper's Table 7 uses 0.1, 0.5 and 1.")
gs_trials = int(widgets.number_box("Releases per budget", "gs_trials", cc.GS_TRIALS_RULE, 5, container=gc[1],
                                   help=f"{cc.GS_TRIALS_RULE.describe().capitalize()}; the table averages them."))
gs_seed = int(widgets.number_box("Seed", "gs_seed", typed.SEED, 1, container=gc[2],
                                 help="Draws the households (seed) and the noise (seed + 1)."))
max_size = int(gc[3].selectbox("Largest size (\"or more\")", list(range(3, 11)), index=4, key="gs_max",
                               help="Households of this size or more are counted together (the 2010 tables: 7+)."))
compare.glossary_links(("Sensitivity", "Consistency violations and faithfulness", "Tree dynamic program",
                        "Relax-then-round"), label="This study's terms:")
gs_key = (str(state.sample_dir()), epsilons, gs_trials, gs_seed, max_size)
gs_cache = ss.setdefault("gs_cache", {})
if gs_key not in gs_cache:
    gs_shared = compare.shared_result("group sizes", repr(gs_key))
    if "value" not in gs_shared:  # not yet run by any session
        gbar = ProgressBar("Releasing group sizes ...")
        try:
            gs_shared["value"] = cc.run_group_study(state.sample_dir() / "params", state.sample_dir() / "data",
                                                    epsilons, gs_trials, gs_seed, max_size, gbar.count)
        except Exception as exc:  # noqa: BLE001 - shown as a message, never a traceback
            gbar.empty()
            st.error(f"The group-size study could not run: {exc}")
            st.stop()
        gbar.empty()
    while len(gs_cache) >= 4:
        gs_cache.pop(next(iter(gs_cache)))
    gs_cache[gs_key] = gs_shared["value"]
gstudy = gs_cache[gs_key]
hh = gstudy.hierarchy
st.caption(
    f"Synthetic households, NOT FOR RELEASE: the shipped sample's {hh.persons:,} persons of the US runs, tract by "
    f"tract, split into {hh.households:,} households of 1 to {max_size}+ persons with illustrative shares "
    f"(seed {gs_seed}); hierarchy USA > {int((hh.level == 1).sum())} states > {int((hh.level == 2).sum())} counties > "
    f"{int((hh.level == 3).sum())} tracts; {gs_trials} seeded releases per budget (numpy noise: a study). On the "
    "sample every state has one county, so their rows match.")
gt7 = cc.group_table7(gstudy)
_GS_COLUMNS = {"ε": st.column_config.NumberColumn(width=45), "Mechanism": st.column_config.TextColumn(width=215)}
_GS_COLUMNS |= {c: st.column_config.NumberColumn(c.replace("Error, ", "Err. "), width=82, help=c)
                for c in gt7.columns if c.startswith("Error, ")}
_GS_COLUMNS |= {"Consistency violations": st.column_config.NumberColumn("Violations", width=80,
                                                                       help="Consistency violations per release"),
                "Levels not adding up to n": st.column_config.NumberColumn("Levels ≠ n", width=80,
                                                                          help="Levels not adding up to n"),
                "Run time (s)": st.column_config.NumberColumn("Time (s)", width=70, help="Run time (s)")}
widgets.table(gt7, "group_sizes_table7.csv", key="gs_t7", column_config=_GS_COLUMNS,
              height=35 * (len(gt7) + 1) + 3, caption=(
    "The paper's Table 7: error = Σ over sizes of |released − true| for one area, averaged over the level's areas "
    "and the releases (the paper's exact normalisation is lost in the text we have); consistency violations = "
    "(parent area, size) pairs whose count differs from the sum of the areas inside; levels not adding up to n = "
    "faithfulness broken. Exact mechanisms: the tree DP on the paper's hierarchy H_DP for group sizes; for cumulative "
    "counts, the paper's Model 2 solved exactly (not its Sec. 9.2 chain, see docs/consistency.md)."))
eps_pick = st.radio("Budget shown in the chart", list(gstudy.epsilons), format_func=lambda e: f"ε = {e:g}",
                    horizontal=True, key="gs_eps_pick")
gfig, gdata = cc.group_chart(gstudy, eps_pick)
widgets.chart(gfig, gdata, f"group_sizes_by_level_{eps_pick:g}.csv", key="gs_chart")
gpaper = cc.paper_numbers()
compare.paper_numbers(gpaper, key="cons_paper", caption=(
    "Computed now with methods.consistency from the running example's households (Table 3: A has users 01, 03 and "
    "04; B, C, E one each; D three; F two) and, for the sensitivities, every neighbour of that data set (a person "
    "joins or leaves a household; the number of households is public). The text we have lost Example 2's vectors "
    "and Example 3's total; it names A and B as Georgia's one-person households, where Table 3 gives B and C "
    "(the counts agree)."))
gverdict = compare.verdict(cc.group_verdict(gstudy), study=(
    f"Synthetic households drawn from the shipped sample with seed {gs_seed}, noise with seed {gs_seed + 1}: "
    "a study, NOT FOR RELEASE."))
compare.downloads({
    "group_sizes_table7.csv": gt7,
    "group_sizes_releases.csv": gstudy.releases,
    "group_sizes_by_size.csv": gstudy.by_size,
    "group_sizes_truth.csv": cc.group_truth(gstudy),
    "paper_numbers.csv": gpaper,
}, "group_sizes.zip", key="gs_dl", verdict=gverdict)
