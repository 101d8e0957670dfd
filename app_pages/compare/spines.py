"""Compare methods: custom geographies, off-spine distance and geographic spine optimisation."""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from calculators.config import SafeTabConfig
from engine.errors import InputError
from engine.reports import spines as rs
from methods import spines
from ui.compare import layout as compare
from ui.safetab import runner
from ui.core import state, typed, widgets
from ui.core.progress import ProgressBar
from ui.compare import spines as cs

state.page_setup()
PAGE = next(m for m in compare.METHODS if m.path == "app_pages/compare/spines.py")
compare.header(PAGE)

VIEWS = ("Custom area", "Spine optimisation")
MAX_UPLOAD = 1_000_000
PAPER_CAPTION = ("Computed now with methods.spines (lowest_max_fanout, should_bypass, bypass_variances, "
                 "group_size_cap). The paper's formula for the largest optimised block group is lost in the text we "
                 "have; the production code's rules, int(√n + fanout_cutoff + 1) of a tract's n blocks per block "
                 "group and int(√T + fanout_cutoff) of a county's T tracts per tract group (docs/spines.md gives the "
                 "source), are what the project follows. "
                 "Match: equal to the printed value.")


@st.cache_resource(show_spinner=False, max_entries=3)
def _release(cfg_json: str, seed: int, folder: str):
    """The sample prepared under the plan, one seeded release, and its geography trees."""
    from engine import noise
    from engine.reports.levels import level_tables
    from engine.run import make_noise, prepare

    cfg = runner.on_files(SafeTabConfig.from_json(cfg_json))  # the sample's files, as the Run page reads them
    prepared = prepare(Path(folder) / "params", Path(folder) / "data", config=cfg)
    tables = level_tables(prepared, make_noise(cfg.privacy_defn, noise.RandomSource.seeded(seed)))
    geo = prepared.inputs.geography
    return prepared, tables, rs.published_units(geo), rs.census_spine(geo), geo.coterminous_sets()


@st.cache_resource(show_spinner=False, max_entries=6)
def _slot(key: str) -> dict:
    """A shared box per study's inputs, filled by `_spine_study`: the study runs outside the
    cached call so that its progress shows in the session that asked for it (Streamlit
    replays what a cached function drew, which fails for a bar it did not make)."""
    return {}


def _spine_study(source: str, persons: int, seed: int, fanout: int, threshold: int, folder: str, progress=None):
    box = _slot(repr((source, persons, seed, fanout, threshold, folder)))
    if "value" not in box:
        box["value"] = _make_spine_study(source, persons, seed, fanout, threshold, folder, progress)
    return box["value"]


def _make_spine_study(source: str, persons: int, seed: int, fanout: int, threshold: int, folder: str,
                      progress=None):
    if source == "sample":
        from engine.inputs.validate import load_inputs

        geo = load_inputs(Path(folder) / "params", Path(folder) / "data").geography
    else:
        from engine.inputs.geography import build_geography
        from engine.synthetic.nation import synthetic_grf

        grf, cfg = synthetic_grf(persons, seed)
        geo = build_geography(grf, cfg)
    return rs.spine_study(geo, fanout, threshold, progress=progress)


if not state.has_sample():
    st.error("The sample data folder is missing, so there is nothing to compose areas from.")
    st.stop()
folder = str(state.sample_dir())
view = st.segmented_control("View", VIEWS, default=VIEWS[0], key="sp_view") or VIEWS[0]

if view == VIEWS[0]:
    basis = compare.sample_plan("sp_plan")
    cfg = basis.config
    st.markdown(
        "SafeTab-P publishes **states, counties and tracts** (nested) and **places and AIANNH areas** (which "
        "cross them) — never block groups or blocks. A custom area can therefore be made **exactly** only if it "
        "is a union of whole *pieces*: blocks sharing one tract, one place and one AIANNH area. Then it is a "
        "signed sum of published totals of the same group (for example *place − tract*), and the fewest units "
        "that takes is its off-spine distance (OSED) over SafeTab-P's geography. Each unit brings its own "
        "independent noise, so the variances add up; a unit whose group was suppressed cannot be used."
    )
    seed = int(widgets.number_box("Seed of the study", "sp_seed", typed.SEED, 1,
                                  help="The study draws one release with seeded noise: reproducible, NOT a release."))
    try:
        with st.status(f"Preparing the sample under {basis.plan_text} and drawing a seeded release…",
                       expanded=False) as status:
            prepared, tables, units, cspine, coterminous = _release(cfg.to_json(), seed, folder)
            status.update(label="Sample prepared and released (seeded study, not a release).", state="complete")
    except (InputError, ValueError) as exc:
        widgets.problems(f"The sample cannot be run under {basis.plan}:", str(exc).splitlines())
        st.stop()
    geo = prepared.inputs.geography
    if not tables:
        st.error(f"{basis.plan_opening} tabulates no population group level on the sample.")
        st.stop()

    left_c, right_c = st.columns(2, gap="large")
    with left_c:
        st.markdown("**The area**")
        how = st.selectbox("Build the area from", cs.BUILDERS, index=1, key="sp_builder")
        area, problems, n_problems = None, [], 0
        if how == cs.BUILDERS[0]:
            tracts = cs.tract_options(geo)
            chosen = st.multiselect("Tracts", tracts, default=tracts[:2], key="sp_tracts", wrap=True)
            area = cs.area_from_tracts(geo, chosen)
        elif how == cs.BUILDERS[1]:
            ents = cs.entity_options(geo)
            label = st.selectbox("Place or AIANNH area", list(ents), key="sp_entity")
            level, region = ents[label]
            touched = cs.entity_tracts(geo, level, region)
            minus = st.multiselect("Minus these tracts", touched, default=touched[:1] if len(touched) > 1 else [],
                                   key="sp_minus", wrap=True)
            area = cs.area_from_entity(geo, level, region, minus)
        elif how == cs.BUILDERS[2]:
            blocks = cs.block_options(geo)
            chosen = st.multiselect("Blocks (state, county, tract, block)", blocks, default=blocks[:2],
                                    key="sp_blocks", wrap=True)
            area = cs.area_from_blocks(geo, chosen)
        else:
            text = st.text_area("One entry a line: [+|-] [level] id (levels: state, county, tract, place, aiannh, "
                                "block; the id's length tells the level if it is left out)", cs.EXAMPLE_LIST,
                                height=140, key="sp_text")
            up = st.file_uploader("…or upload such a list (.txt)", type=["txt", "csv"], key="sp_upload")
            name = "the list"
            if up is not None:
                if up.size > MAX_UPLOAD:
                    problems = [f"{up.name} is {up.size:,} bytes; the limit is {MAX_UPLOAD:,}."]
                else:
                    text, name = up.getvalue().decode("utf-8", errors="replace"), up.name
            if not problems:
                try:
                    area = rs.parse_area(text, geo, file=name)
                except InputError as exc:
                    problems, n_problems = [str(p) for p in exc.problems], exc.total
        widgets.problems("The area cannot be read:", problems, total=n_problems)
    with right_c:
        st.markdown("**The population group**")
        levels = cs.iteration_levels(tables)
        it_level = st.selectbox("Population group level (iteration level of the plan)", levels,
                                index=len(levels) - 1, format_func=cs.level_label, key="sp_level")
        groups = cs.group_options(tables, prepared.inputs.specs, it_level)
        label = st.selectbox("Group (largest first)", groups["label"].tolist(), key="sp_group")
        code = str(groups.loc[groups["label"] == label, "code"].iloc[0])
        st.caption(f"Seeded study (seed {seed}): stat levels, suppression and published counts come from one "
                   f"reproducible draw; it is **not a release**. {basis.sentence}")

    if area is None or not area.any():
        if not problems:
            st.info("The area is empty: choose at least one tract, block or region.")
        st.stop()
    avail = rs.availability(units, tables, it_level, code, coterminous, cfg.allow_negative_counts)
    res = rs.compose_area(units, avail, area, cspine)
    used = set(res.units["unit"]) if len(res.units) else set()
    direct = rs.nearest_unit(avail, units, res.truth, exclude=used) if res.truth is not None else None

    left, right = compare.side_by_side("Custom area, composed of published units",
                                       "SafeTab-P: a published unit of the same size")
    dec = cs.decomposition_table(res)
    with left:
        if res.composable:
            a, b, c = st.columns(3)
            a.metric("Units (OSED)", res.count, help="Published units added or subtracted to make the area")
            b.metric("95% MOE (exact)", f"±{res.moe_exact:,}")
            c.metric("Noise variance", f"{res.variance:,.0f}")
            st.markdown(f"Composed count **{res.estimate:,}** against a true count of **{res.truth:,}** "
                        f"(error {res.estimate - res.truth:+,}).")
        elif res.split_pieces:
            st.error(f"Not composable: {res.reason}.", icon=":material/block:")
        elif res.count_if_all_published is None:  # the group is published for none of the units the area needs
            st.warning(f"Not composable: {res.reason}. This group is not published for the units this area needs.",
                       icon=":material/visibility_off:")
        else:
            st.warning(f"Not composable: {res.reason}. With every unit published it would take "
                       f"{res.count_if_all_published:,} unit(s); suppressed or missing for this group: "
                       f"{', '.join(cs.unit_label(x) for x in res.needed_but_suppressed) or '—'}.",
                       icon=":material/visibility_off:")
        if not dec.empty:
            st.markdown("The units of the composition are listed below the two columns.")
        if res.composable and res.moe_exact_is_exact:
            st.caption("MOE: the exact law of the signed sum of the units' noises, by convolution of their pmfs (a "
                       "sum of discrete Gaussians is not itself a discrete Gaussian); the normal approximation "
                       f"1.96·√variance gives ±{res.moe_normal:,}. Variances are those of the released totals "
                       "before any clamping at zero; released stat-level-0 totals passed the suppression test, "
                       "which biases them upward (see the Suppression page).")
        elif res.composable:
            st.caption("MOE: the convolution would be too wide, so this is the discrete-Gaussian MOE of the same "
                       "variance (an approximation).")
        st.markdown(f"**If block groups and blocks were published** (a TopDown-style release), the area would "
                    f"take **{res.census_osed:,}** unit(s) of the Census spine (block > block group > tract > "
                    "county > state):")
        census = cs.census_table(res)
        if not census.empty:
            widgets.table(census, "census_spine_units.csv", key="sp_census")
    with right:
        if direct:
            a, b, c = st.columns(3)
            a.metric("Units", 1, help="A published unit is one noisy total")
            b.metric("95% MOE (exact)", f"±{direct['moe_exact']:,}")
            c.metric("Noise variance", f"{direct['variance']:,.0f}")
            st.markdown(f"**{cs.unit_label(direct['unit'])}**, the released unit of this group whose true count is "
                        f"nearest the area's: **{direct['truth']:,}** persons, published as "
                        f"**{direct['published']:,}** with a {cs.table_name(direct['stat_level'])} table.")
        else:
            st.info("No comparison: the area's true count is unknown here (it is not made of units of this "
                    "group), or no unit of this group was released.")
    if not dec.empty:  # eight columns: the page's full width, not half of it
        st.markdown("**The units of the composition**")
        widgets.table(dec, "composition.csv", key="sp_dec",
                      caption=("Signs: + added, − subtracted. " + res.search[:1].upper() + res.search[1:] + "."
                               if res.search else None))
    summary = cs.summary_table(res, direct)
    widgets.table(summary, "summary.csv", key="sp_summary")
    files = {"composition.csv": dec, "summary.csv": summary, "census_spine_units.csv": cs.census_table(res),
             "area.txt": cs.area_file(geo, area)}
    if res.composable and res.variance is not None and len(res.units):
        fig, data = cs.variance_chart(res, direct)
        widgets.chart(fig, data, "variance_by_unit.csv", key="sp_var_chart")
        files["variance_by_unit.csv"] = data
    paper = cs.paper_numbers()
    compare.paper_numbers(paper, PAPER_CAPTION, key="sp_paper_area")
    files["paper_numbers.csv"] = paper
    verdict = compare.verdict(cs.area_verdict(res, direct), basis, nothing=compare.nothing_published(
        basis, None, "no total of this group in any unit the area could be made of (all suppressed)")
        if direct is None and not res.composable and res.needed_but_suppressed else None,
        study=f"Seeded study (seed {seed}): one release with seeded noise, NOT FOR RELEASE.")
    compare.downloads(files, "custom_area.zip", key="sp_dl_area", verdict=verdict)

else:
    st.markdown(
        "A TopDown-style release measures a **geographic spine**: block > block group > tract > county > state. "
        "Places and AIANNH areas are *off* the spine and must be added and subtracted from spine units. The 2020 "
        "production spine first splits every state, county, tract and block group into its part inside the AIAN "
        "areas and its part outside them (the **AIAN spine**: AIAN and non-AIAN branches under each state); the "
        "seed's optimisation then regroups the block groups of each tract by the places and AIANNH areas they lie "
        "in and groups tracts into tract groups, county part by county part, so that those entities need few units."
    )
    c1, c2, c3 = st.columns(3)
    source = c1.radio("Geography", ("The shipped sample", "A synthetic nation (geography only)"), key="sp_source")
    persons, gseed = 0, 0
    if source != "The shipped sample":
        persons = int(widgets.number_box("Persons of the synthetic nation", "sp_persons",
                                         typed.Rule(whole=True, lo=1_000, hi=50_000_000), 5_000_000, container=c1,
                                         help="About 4,000 persons a tract, 100,000 a county, 10,000 a place. A "
                                              "whole number from 1,000 to 50,000,000."))
        gseed = int(widgets.number_box("Seed of the generator", "sp_gseed", typed.SEED, 0, container=c1))
    fanout = int(widgets.number_box("Fan-out cutoff", "sp_fanout", typed.Rule(whole=True, lo=0, hi=100),
                                    spines.FANOUT_CUTOFF, container=c2,
                                    help="As production: a block group holds at most int(√n + cutoff + 1) of its "
                                         "tract's n blocks, a tract group at most int(√T + cutoff) of the county's T "
                                         "tracts (production: 12). A whole number from 0 to 100."))
    threshold = int(widgets.number_box("Entity threshold", "sp_threshold", typed.Rule(whole=True, lo=0, hi=100),
                                       spines.ENTITY_THRESHOLD, container=c3,
                                       help="Tract groups are optimised for the entities farther than this "
                                            "(production: 9). A whole number from 0 to 100."))
    bar = ProgressBar("Optimising the spine, county by county…")
    try:
        study = _spine_study("sample" if source == "The shipped sample" else "synthetic", persons, gseed, fanout,
                             threshold, folder, progress=bar.count)
    except (InputError, ValueError) as exc:
        bar.empty()
        widgets.problems("The spine study cannot run:", str(exc).splitlines())
        st.stop()
    bar.empty()
    st.caption(f"Optimised {study.counties:,} counties in {study.seconds:.2f} s "
               f"({study.evaluations:,} tract-group merges tested"
               + (f"; {study.stopped_early} counties hit the search cap" if study.stopped_early else "") + ").")
    left, right = compare.side_by_side("TopDown spines: Census, AIAN, optimised", "SafeTab-P")
    ent = study.entities
    with left:
        fig, hist = cs.osed_histogram(ent)
        widgets.chart(fig, hist, "osed_distribution.csv", key="sp_hist")
        st.markdown("**Units of the spine** (the AIAN spine splits units by the AIAN areas; the optimisation then "
                    "redefines block groups and adds tract groups):")
        widgets.table(cs.units_table(study), "spine_units.csv", key="sp_units")
        st.markdown("**Bypassing** (the seed's Theorem 2 and Algorithm 3, equal budget shares at every level): "
                    "units of the optimised spine whose budget the rule moves down to their children, because "
                    "measuring them cannot lower any variance. Under zCDP only single-child units go.")
        widgets.table(cs.bypass_table(study), "bypassed_units.csv", key="sp_bypass")
    with right:
        st.markdown("SafeTab-P tabulates every place and AIANNH area **directly**, with a budget of its own per "
                    "geography level: each is one published unit, whatever the spine. Its states, counties and "
                    "tracts alone could make only the entities that are unions of whole tracts.")
        widgets.table(cs.safetab_summary_view(ent), "safetab_published.csv", key="sp_safetab",
                      data=cs.safetab_summary(ent),
                      caption="From tracts alone: composable from SafeTab-P's states, counties and tracts without "
                              "the place and AIANNH levels; the others split a tract.")
    st.markdown("**Off-spine entity distance by spine** (OSED: published units added or subtracted to make an "
                "entity; 1 = on the spine):")
    widgets.table(cs.osed_summary(ent), "osed_summary.csv", key="sp_osed_sum")
    st.markdown("**Every place and AIANNH area** (farthest first):")
    table = cs.entities_table(ent)
    widgets.table(table, "osed_by_entity.csv", key="sp_entities", height=380, column_config={
        "SafeTab-P from tracts (— = not composable)": st.column_config.TextColumn(
            "SafeTab-P from tracts", help="OSED from SafeTab-P's states, counties and tracts; — = not composable "
                                          "from them (the entity splits a tract)")})
    paper = cs.paper_numbers()
    compare.paper_numbers(paper, PAPER_CAPTION, key="sp_paper_spine")
    verdict = compare.verdict(cs.spine_verdict(study), compare.Basis(
        state.config(), "none needed (the spine and the OSED depend on the geography only)",
        "the geography of the shipped sample" if source == "The shipped sample" else
        f"the geography of a synthetic nation of {persons:,} persons (generator seed {gseed})", ""))
    compare.downloads({"paper_numbers.csv": paper, "osed_by_entity.csv": table, "osed_distribution.csv": hist,
                       "osed_summary.csv": cs.osed_summary(ent), "spine_units.csv": cs.units_table(study),
                       "bypassed_units.csv": cs.bypass_table(study),
                       "safetab_published.csv": cs.safetab_summary(ent)}, "spine_optimisation.zip", key="sp_dl_spine",
                      verdict=verdict)
