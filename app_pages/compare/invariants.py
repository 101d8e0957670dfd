"""Compare methods: invariants (exact totals) and subspace differential privacy."""

import pandas as pd
import streamlit as st

from calculators.levels import ITERATION_LEVEL_NAMES, PopulationGroupLevel
from engine.errors import InputError
from ui.safetab import analysis, runner
from ui.compare import layout as compare
from ui.core import planner, state, typed, widgets
from ui.compare import invariants as ci
from ui.compare import lists
from methods import invariants as inv

state.page_setup()
PAGE = next(m for m in compare.METHODS if m.path == "app_pages/compare/invariants.py")
compare.header(PAGE)
st.warning(
    "**Invariants are not SafeTab-P.** The held totals are published **without any noise**: only the way the "
    "counts below them are split is protected (subspace differential privacy). The engine offers it as "
    "`python -m engine run --invariant STATE` for studies, and every such release is marked in its manifest.",
    icon=":material/warning:")

basis = compare.sample_plan("inv_plan") if state.has_sample() else compare.resolve_plan(
    compare.CURRENT, None, None, state.config(), state.source_label(), "no data (a custom table)")
cfg = basis.config
cfg_json = cfg.to_json()
u = planner.units(cfg)

REPS_RULE = typed.Rule(whole=True, lo=100, hi=20_000)
LEVEL, CUSTOM = "A SafeTab-P level of the plan (sample data)", "A custom table"
mode = st.radio("Table", [LEVEL, CUSTOM], horizontal=True, key="inv_mode",
                help="A SafeTab-P level runs the plan chosen above on the shipped sample data; a custom table takes any "
                     "shape and any margins, with the noise of one SafeTab-P cell.")


@st.cache_resource(show_spinner=False, max_entries=4)
def _prepared(config_json: str, sample: str):
    from calculators.config import SafeTabConfig
    from engine.run import prepare

    return prepare(f"{sample}/params", f"{sample}/data", config=runner.on_files(SafeTabConfig.from_json(config_json)))


@st.cache_resource(show_spinner=False, max_entries=8)
def _tables(config_json: str, sample: str, seed: int):
    from engine.noise import RandomSource
    from engine.reports.levels import level_tables
    from engine.run import make_noise

    prepared = _prepared(config_json, sample)
    return level_tables(prepared, make_noise(prepared.inputs.config.privacy_defn, RandomSource.seeded(seed)))


@st.cache_data(show_spinner=False, max_entries=16)
def _family_sim(config_json: str, sample: str, seed: int, chain_key: str, it_level: int, parent: str,
                iteration: str, reps: int):
    prepared = _prepared(config_json, sample)
    tables = _tables(config_json, sample, seed)
    study = ci.level_study(prepared, tables, chain_key, it_level)
    return ci.simulate_family(study, prepared, tables, parent, iteration, it_level, reps, seed)


@st.cache_data(show_spinner=False, max_entries=16)
def _custom_sim(shape, margins, scale, noise, reps, seed):
    study = ci.custom_study(shape, list(margins), float(scale), noise)
    return ci.simulate_custom(study, scale, noise, reps, seed)


@st.cache_data(show_spinner=False, max_entries=1)
def _paper_numbers():
    return ci.paper_numbers(), ci.gaussian_multipliers()


def _paper() -> tuple:
    """The paper's own numbers, computed now (both views show them)."""
    numbers, multipliers = _paper_numbers()
    compare.paper_numbers(numbers, key="inv_paper", caption=(
        "Computed now with methods.invariants: the rank by the closed form of the margins, the Sec. 5.2 figures "
        "by the exact law of the projected errors (unit Gaussian noise: the mean square of one run's 6,720 errors is "
        "a chi-square with 5,980 degrees of freedom over 6,720) and by a seeded rerun of 50 runs. The paper calls "
        "0.88 (0.86, 0.91) a standard deviation, but it matches the variance factor 299/336 = 0.890, not a "
        "standard deviation (its square root, 0.943); the printed digits look truncated. Match: within one unit of "
        "the paper's last printed digit."))
    st.markdown("**The Gaussian multiplier c_ε,δ** (σ = c Δ₂): the paper's Lemma 3.4, "
                "(1 + √(1 + ln(1/δ)))/ε, holds for every ε; Dwork and Roth's √(2 ln(1.25/δ))/ε, which the project "
                "used before, only for ε < 1 (a dash). The extended mechanism's scale uses bounded neighbours "
                "(Definition 2.1: a record moves between cells; Δ₂ = √2 for a total of 5 cells).")
    widgets.table(multipliers, "gaussian_multipliers.csv", key="inv_multipliers",
                  column_config={"δ": st.column_config.NumberColumn(format="%.0e")})
    return numbers, multipliers


def _side_metrics(col, items):
    with col:
        for label, value, help_text in items:
            st.metric(label, value, help=help_text)


if mode == LEVEL:
    if not state.has_sample():
        st.info("The sample data are not installed, so only a custom table can be studied.")
        st.stop()
    c = st.columns([2.2, 1.2, 1, 1])
    chain_key = c[0].selectbox("Invariant", [ch.key for ch in ci.CHAINS], key="inv_chain",
                               format_func=lambda k: ci.chain(k).label,
                               help="Which true totals are held exact, and for which areas below them. Puerto Rico "
                                    "is held the same way (PR-STATE, PR-COUNTY).")
    it_level = c[1].radio("Iteration level", [2, 1], format_func=lambda k: ITERATION_LEVEL_NAMES[k],
                          horizontal=True, key="inv_it")
    seed = int(widgets.number_box("Seed of the study", "inv_seed", typed.SEED, 2020, container=c[2],
                                  help="A seeded study, not a release: the same seed draws the same SafeTab-P noise."))
    reps = int(widgets.number_box("Simulation runs", "inv_reps", REPS_RULE, 2_000, container=c[3],
                                  help="A whole number from 100 to 20,000."))
    try:
        with st.spinner("Running SafeTab-P on the sample data (seeded study, not a release)…"):
            prepared = _prepared(cfg_json, str(state.sample_dir()))
            tables = _tables(cfg_json, str(state.sample_dir()), seed)
    except InputError as exc:
        widgets.problems(f"The sample data cannot be run with {basis.plan}:", exc.problems[:10])
        st.stop()
    study = ci.level_study(prepared, tables, chain_key, it_level)
    if study.empty:
        st.info(f"{basis.plan_opening} tabulates no {ITERATION_LEVEL_NAMES[it_level]} counts "
                "(or publishes none) at the lower level of "
                "this invariant on the sample data; pick another invariant or iteration level.")
        st.stop()
    s = study.summary()
    st.caption(f"Seeded study (seed {seed}), NOT a release. {basis.sentence} Stat levels are those SafeTab-P "
               f"drew; each count keeps its own noise "
               f"variance (one {u['law']} value for a total, the sum of 8, 18 or 46 cells for a table).")

    left, right = compare.side_by_side("With the totals held exact", "SafeTab-P")
    _side_metrics(left, [
        ("True totals published exactly", f"{s['parent_totals']:,}",
         f"One per parent region and iteration: {study.description}."),
        ("… of which under 100 persons", f"{s['small_totals']:,}", "Exact counts of small groups."),
        ("Region counts that become exact", f"{s['child_exact']:,}",
         "A region that is the only one inside its parent carries the whole true total."),
        ("Median MOE of a region's count (normal approx.)",
         "0 (exact)" if s["moe_with"] == 0 else f"{s['moe_with']:.1f}",
         "1.96 × the standard deviation of the projected noise; it is not a discrete Gaussian, so this is an "
         "approximation (the simulation below checks it)."),
    ])
    _side_metrics(right, [
        ("True totals published exactly", "0", "Every count SafeTab-P publishes has its own exact noise."),
        ("… of which under 100 persons", "0", None),
        ("Region counts that become exact", "0", None),
        ("Median MOE of a region's count (exact)", f"{s['moe_plain']:.0f}",
         f"Exact 95% MOE of the {u['law']} noise of each published total."),
    ])

    st.subheader("What the invariant gives away")
    rev = study.revealed()
    st.markdown(ci.level_disclosure(study, ITERATION_LEVEL_NAMES[it_level].lower()))
    cols = st.columns([1, 1.6], gap="large")
    with cols[0]:
        widgets.table(rev, "invariants_revealed_by_size.csv", key="inv_revealed",
                      caption="The true totals the invariant publishes exactly, by their size.")
    with cols[1]:
        by_parent = study.by_parent()
        widgets.chart(ci.factor_chart(by_parent), by_parent, "invariants_by_parent.csv", key="inv_factor_chart")

    st.subheader("Accuracy of each kind of count")
    by_table = study.by_table()
    widgets.table(by_table, "invariants_by_table.csv", key="inv_by_table",
                  column_config={"Published as": st.column_config.TextColumn(width=150),
                                 "Counts": st.column_config.NumberColumn(width=65)}
                  | {k: st.column_config.NumberColumn(label, format=fmt, width=w, help=k) for k, label, fmt, w in (
                      ("Variance left (median)", "Var. left, median", "%.3f", 115),
                      ("Variance left (smallest)", "Var. left, smallest", "%.3f", 120),
                      ("MOE, SafeTab-P (exact)", "MOE SafeTab-P", "%.1f", 110),
                      ("MOE, SafeTab-P (normal approx.)", "… normal approx.", "%.1f", 120),
                      ("MOE with invariants (normal approx.)", "MOE with invariants", "%.1f", 135))},
                  caption="Variance factor = the share of a count's noise variance the invariant leaves: "
                          "1 − v / W for a count of noise variance v in a family (a parent group and iteration) "
                          "whose published counts' variances add up to W. Medians over the counts. MOEs with "
                          "invariants are normal approximations (1.96 × standard deviation); SafeTab-P's exact MOE "
                          "is beside its normal approximation for comparison. Suppressed counts are not published "
                          "and not read: the published counts add up to the true total, as in the engine.")
    with st.expander("Every region's count (table)"):
        widgets.table(study.groups, "invariants_groups.csv", key="inv_groups", height=360)

    st.subheader("Simulation check")
    fams = ci.families(study)
    sim_table = pd.DataFrame()
    if fams.empty:
        st.info("No parent group has two or more published regions here, so every published region count is "
                "simply the true total: there is no noise left to simulate.")
    else:
        options = [f"{r['Parent region']}|{r['Iteration']}" for _i, r in fams.head(300).iterrows()]
        labels = {f"{r['Parent region']}|{r['Iteration']}":
                  f"{r['Parent region']} · iteration {r['Iteration']} ({r['Published regions']} published regions, "
                  f"true total {r['Parent true total']:,})" for _i, r in fams.head(300).iterrows()}
        if st.session_state.get("inv_family") not in options:
            st.session_state["inv_family"] = options[0]
        pick = st.selectbox("Family to simulate (parent region · iteration)", options, key="inv_family",
                            format_func=lambda k: labels.get(k, k))
        parent, iteration = pick.split("|", 1)
        with st.spinner("Simulating with exact noise…"):
            sim_table, info = _family_sim(cfg_json, str(state.sample_dir()), seed, chain_key, it_level, parent,
                                          iteration, reps)
        st.caption(
            f"{info['replications']:,} seeded replications: exact {u['law']} noise ({u['scale']} = "
            f"{info['scale']:.4g}) on each of the family's {info['units']:,} noisy values, then the engine's "
            "adjustment (moves weighted by each total's variance, rounded to integers by largest remainders with "
            "random tie-breaks; rounding adds at most 1/4 to a variance). "
            + f"A simulated variance is within about ±{2 * (2 / info['replications']) ** 0.5:.0%} of the true one "
              "(two standard errors). "
            + ("In every replication the regions add up to the true total exactly."
               if info["sums_exact"] else "**The regions did not always add up to the total.**"))
        # Eleven columns do not fit beside the sidebar at 1280 px: the page shows the
        # variances and the 95% errors as two tables, each CSV has every column.
        ident = ["Region", "Published as"]
        for title, cols, short, key in (
            ("Noise variance of each region's total (persons²)",
             ["Var. SafeTab-P, predicted", "Var. SafeTab-P, simulated", "Var. with, predicted",
              "Var. with, + rounding (max)", "Var. with, simulated"],
             ["SafeTab-P, predicted", "SafeTab-P, simulated", "With, predicted", "With, + rounding", "With, simulated"],
             "inv_sim_table"),
            ("95% of errors within (persons)",
             ["MOE SafeTab-P (exact)", "95% |error| SafeTab-P, simulated", "MOE with (normal approx.)",
              "95% |error| with, simulated"],
             ["SafeTab-P, exact MOE", "SafeTab-P, simulated", "With, normal approx.", "With, simulated"],
             "inv_sim_moe")):
            st.markdown(f"**{title}**")
            widgets.table(sim_table[ident + cols], "invariants_simulation.csv", key=key, data=sim_table,
                          column_config={"Region": st.column_config.TextColumn(width=100),
                                         "Published as": st.column_config.TextColumn(width=132)}
                          | {c: st.column_config.NumberColumn(label, format="%.2f", width=118, help=c)
                             for c, label in zip(cols, short)})

    paper, multipliers = _paper()
    verdict = compare.verdict(ci.level_verdict(study), basis, nothing=compare.nothing_published(
        basis, None, "no region count below the held totals (every one is suppressed)")
        if not s["child_groups"] else None, study=f"Seeded study (seed {seed}), NOT FOR RELEASE.")
    compare.downloads({
        "paper_numbers.csv": paper,
        "gaussian_multipliers.csv": multipliers,
        "invariants_groups.csv": study.groups,
        "invariants_by_table.csv": by_table,
        "invariants_by_parent.csv": by_parent,
        "invariants_revealed_by_size.csv": rev,
        "invariants_simulation.csv": sim_table,
    }, "invariants_level_study.zip", key="inv_dl_level", verdict=verdict)

else:
    names = [p.label for p in ci.PRESETS] + ["Custom"]

    def _on_preset():
        chosen = next((p for p in ci.PRESETS if p.label == st.session_state["inv_preset"]), None)
        if chosen is not None:
            st.session_state["inv_shape"] = ci.shape_text(chosen.shape)
            st.session_state["inv_margins"] = list(chosen.margins)

    if "inv_shape" not in st.session_state and "inv_shape::value" not in st.session_state:
        st.session_state["inv_preset"] = names[0]
        _on_preset()
    c = st.columns([2.2, 1, 2.2])
    c[0].selectbox("Example", names, key="inv_preset", on_change=_on_preset)
    shape = lists.list_box("Table shape (lengths of the axes)", "inv_shape", ci.parse_shape, ci.PRESETS[0].shape,
                           show=ci.shape_text, container=c[1],
                           help=f"For example 14 x 24 x 20 (cells are counted in row-major order): 1 to "
                                f"{inv.MAX_AXES} lengths, each {ci.AXIS_RULE.describe()}, at most "
                                f"{ci.MAX_TABLE_CELLS:,} cells in all.")
    opts = ci.margin_options(shape)
    st.session_state["inv_margins"] = [m for m in st.session_state.get("inv_margins", []) if tuple(m) in opts]
    margins = c[2].multiselect("Margins held exact", opts, key="inv_margins", wrap=True,
                               format_func=lambda m: ci.margin_label(tuple(m), shape),
                               help="Each margin keeps some axes and sums over the others; its sums are published "
                                    "exactly.")
    with c[2]:
        compare.glossary_links(("Margins (held exact)", "Invariant"))
    levels = [lvl.key for lvl in cfg.tabulated_levels()]
    if not levels:
        st.info(f"{basis.plan_opening} tabulates no level, so it gives no cell noise to study.")
        st.stop()
    c2 = st.columns([2, 1, 1, 1.5])
    if st.session_state.get("inv_noise_level") not in levels:
        st.session_state["inv_noise_level"] = "(COUNTY, 2)" if "(COUNTY, 2)" in levels else levels[0]
    lvl_key = c2[0].selectbox("Noise of one cell: a stage-2 cell of", levels, key="inv_noise_level",
                              format_func=lambda k: planner.level_label(PopulationGroupLevel.parse(k)))
    sig = analysis.sigmas(cfg, PopulationGroupLevel.parse(lvl_key))
    reps = int(widgets.number_box("Simulation runs", "inv_reps_custom", REPS_RULE, 2_000, container=c2[1],
                                  help="A whole number from 100 to 20,000."))
    seed = int(widgets.number_box("Seed", "inv_seed_c", typed.SEED, 2020, container=c2[2]))
    c2[3].markdown(f"{u['scale']} = **{sig['stage2']:.4g}** ({u['law']}, the plan's stage-2 cell at "
                   f"{planner.level_label(PopulationGroupLevel.parse(lvl_key))})")
    preset = next((p for p in ci.PRESETS if p.label == st.session_state.get("inv_preset")), None)
    if preset is not None and preset.shape == shape and list(preset.margins) == [tuple(m) for m in margins]:
        st.caption(preset.note)

    margins_t = tuple(tuple(m) for m in margins)
    study = ci.custom_study(shape, list(margins_t), sig["stage2"], sig["noise"])
    with st.spinner("Simulating with exact noise…"):
        sim = _custom_sim(shape, margins_t, sig["stage2_exact"], sig["noise"], reps, seed)

    left, right = compare.side_by_side("With the margins held exact", "SafeTab-P")
    _side_metrics(left, [
        ("Sums published exactly", f"{study.constraints:,}",
         f"{study.rank:,} of them independent (the rank of the constraint matrix)."),
        ("Cells published exactly", f"{study.exact_cells:,}", None),
        ("Variance factor per cell", f"{float(study.factor):.4f}", f"Exactly {study.factor} = (n − n_c) / n."),
        ("MOE of a cell (normal approx.)", f"{study.moe_with_normal:.2f}",
         "1.96 × the standard deviation of the projected noise (a linear combination of exact noise values, "
         "not itself a discrete Gaussian)."),
    ])
    _side_metrics(right, [
        ("Sums published exactly", "0", None),
        ("Cells published exactly", "0", None),
        ("Variance factor per cell", "1", None),
        ("MOE of a cell (exact)", f"{study.moe_plain_exact:,}",
         f"normal approximation {study.moe_plain_normal:.2f}"),
    ])

    st.subheader("What the invariants give away")
    st.markdown(ci.custom_disclosure(study))

    figures = study.table()
    widgets.table(figures, "invariants_custom_figures.csv", key="inv_custom_table", height=35 * (len(figures) + 1) + 3,
                  column_config={"Figure": st.column_config.TextColumn(width="large"),
                                 "Value": st.column_config.TextColumn(width="medium")})
    if study.check is not None:
        ok = study.check["rank"] == study.rank and study.check["max_difference"] < 1e-9
        (st.success if ok else st.error)(
            f"Checked against the general projector (pivoted QR of the {study.constraints:,} × {study.cells:,} "
            f"constraint matrix): rank {study.check['rank']:,}, largest difference from the closed form "
            f"{study.check['max_difference']:.1e}.", icon=":material/check_circle:" if ok else ":material/error:")
    else:
        st.caption(f"The general projector re-check runs for tables up to {ci.CHECK_CELLS:,} cells; the figures "
                   "come from the exact closed form (ANOVA decomposition of the margins).")

    st.subheader("Simulation check")
    sim_table = ci.custom_simulation_table(study, sim)
    widgets.table(sim_table, "invariants_custom_simulation.csv", key="inv_custom_sim",
                  column_config={k: st.column_config.NumberColumn(format="%.3f") for k in sim_table.columns
                                 if k != "Figure"},
                  caption=f"{sim['replications']:,} seeded replications of exact {u['law']} noise on all "
                          f"{study.cells:,} cells (pooled, so the simulated figures are precise), projected with the "
                          "closed form; the largest held sum of the "
                          f"projected noise is {sim['max_margin']:.1e} (0 up to float rounding). SafeTab-P's MOE is "
                          "exact; the MOE with invariants is a normal approximation.")
    hist = sim["histogram"]
    widgets.chart(ci.histogram_chart(hist, study.moe_plain_exact, study.moe_with_normal), hist,
                  "invariants_cell_errors.csv", key="inv_hist")

    paper, multipliers = _paper()
    verdict = compare.verdict(ci.custom_verdict(study), compare.Basis(
        cfg, basis.name, f"a custom table of {study.cells:,} cells with the noise of one stage-2 cell of "
        f"{planner.level_label(PopulationGroupLevel.parse(lvl_key))}", basis.choice),
        study=f"Seeded simulation (seed {seed}), NOT FOR RELEASE.")
    compare.downloads({
        "paper_numbers.csv": paper,
        "gaussian_multipliers.csv": multipliers,
        "invariants_custom_figures.csv": figures,
        "invariants_custom_simulation.csv": sim_table,
        "invariants_cell_errors.csv": hist,
    }, "invariants_custom_table.zip", key="inv_dl_custom", verdict=verdict)
