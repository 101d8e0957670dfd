"""Compare methods: hierarchical consistency (least squares, tree DP, relax-then-round) beside SafeTab-P."""

import time

import streamlit as st

from calculators.levels import ITERATION_LEVEL_NAMES
from engine.reports.consistency import table7
from engine.tabulation.consistency import DESCRIPTIONS, LABELS
from ui import compare, state, typed, widgets
from ui import compare_consistency as cc

state.page_setup()
PAGE = next(m for m in compare.METHODS if m.path == "pages/compare_consistency.py")
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
    bar = st.progress(0.0, text="Running the study ...")
    last = [0.0]

    def _progress(stage, done, total):
        now = time.monotonic()
        if now - last[0] > 0.2:
            last[0] = now
            bar.progress(min(1.0, done / total) if total else 0.0, text=stage)

    try:
        comp = cc.run_study(state.sample_dir() / "params", state.sample_dir() / "data", cfg, seed, trials, _progress)
    except Exception as exc:  # noqa: BLE001 - shown as a message, never a traceback
        bar.empty()
        st.error(f"The study could not run with this plan: {exc}")
        st.stop()
    bar.empty()
    while len(cache) >= 4:  # keep the last few studies of this session
        cache.pop(next(iter(cache)))
    cache[key] = comp
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
               "Published totals": st.column_config.NumberColumn("Totals", width=60,
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
st.subheader("All nested levels together")
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
compare.verdict(cc.verdict_text(comp), basis, nothing=compare.nothing_published(
    basis, None, "no county or tract total (every one is suppressed), so the methods have only the nation and the "
                 "states to make consistent") if not int(_none.counts.sum()) else None)
full = table7(comp).rename(columns={"geo_level": "geography_level"})
compare.downloads({
    "consistency_table7_error.csv": full,
    "consistency_table7_bias.csv": table7(comp, value="bias").rename(columns={"geo_level": "geography_level"}),
    "consistency_summary.csv": sv,
    "consistency_by_size.csv": size,
    "consistency_by_level.csv": comp.by_level,
    f"consistency_chart_{lvl}_{value}.csv": data,
    "verdict.txt": cc.verdict_text(comp),
}, "consistency.zip", key="cons_dl")
