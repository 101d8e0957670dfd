"""Run the mechanism: the engine on the sample data, generated data or uploaded files,
with the app's current configuration; browse, compare with the truth, download."""

import time
from pathlib import Path

import pandas as pd
import streamlit as st

from calculators.config import ConfigError, SafeTabConfig
from calculators.levels import GEO_LEVELS, ITERATION_LEVEL_NAMES
from ui.safetab import analysis, run_report, runner
from ui.core import auth, charts, files, planner, state, typed, urlcodec, widgets, workdir
from ui.core.progress import ProgressBar
from ui.compare import layout as compare

state.page_setup()

st.title("Run the mechanism")
st.caption(
    "Runs the full SafeTab-P mechanism (validation, two-stage adaptive tabulation with exact discrete "
    "Gaussian noise, post-processing) with the plan you choose below (the data's own config.json or the app's "
    "plan), and tabulates the confidential truth beside it so you can see what the noise does. Nothing runs "
    "until you press Run."
)

ss = st.session_state
if "workdir" not in ss or not ss["workdir"].alive:
    workdir.sweep()  # folders of sessions whose server has stopped
    ss["workdir"] = workdir.SessionDir()  # removed when the session ends
work = ss["workdir"].path


# ------------------------------------------------------------------ the data
SOURCES = {"sample": "Shipped sample data", "generated": "Generated data of a chosen size",
           "upload": "Uploaded SafeTab-P files"}
if "run_source" not in ss:
    ss["run_source"] = "sample"
source = st.radio("Data", list(SOURCES), format_func=SOURCES.get, horizontal=True, key="run_source",
                  persist_state="session")

params_dir = data_dir = None
if source == "sample":
    if state.has_sample():
        params_dir, data_dir = state.sample_dir() / "params", state.sample_dir() / "data"
        size = sum(p.stat().st_size for p in data_dir.glob("*") if p.is_file())
        st.markdown(f"`{state.sample_dir()}`: a synthetic nation made by `python -m engine sample` "
                    f"({size / 1e6:.1f} MB of person records and geography).")
    else:
        st.warning(f"The sample data is not there ({state.sample_dir()}). Generate data of a chosen size "
                   "instead, or upload files.")
elif source == "generated":
    g = st.columns([1, 1, 1, 2])
    persons = widgets.number_box("Persons", "gen_persons", typed.Rule(whole=True, lo=1_000, hi=5_000_000), 50_000,
                                 container=g[0],
                                 help="A whole number from 1,000 to 5,000,000 here (the command line goes further).")
    gseed = widgets.number_box("Generator seed", "gen_seed", typed.SEED, 0, container=g[1],
                               help="A whole number from 0 to 2,147,483,647.")
    with g[2]:
        st.write("")
        gen_go = st.button("Generate", key="gen_button", icon=":material/factory:")
    if gen_go:
        from engine.synthetic import nation as sample

        bar = ProgressBar("Generating persons")
        target = work / "generated"
        try:
            summary = sample.generate(target, int(persons), seed=int(gseed),
                                      progress=lambda d, t: bar(f"Generating persons: {d:,} of {t:,}",
                                                                d / t if t else 0))
            ss["generated"] = {"dir": str(target), "persons": summary.persons, "seed": summary.seed,
                               "summary": f"{summary.persons:,} persons, {len(summary.states)} states, "
                                          f"{summary.counties:,} counties, {summary.tracts:,} tracts, "
                                          f"{summary.places:,} places, {summary.aiannh_areas} AIANNH areas"}
        except (ValueError, OSError) as exc:
            st.error(widgets.plain(f"Could not generate the data: {exc}"))
        bar.empty()
    gen = ss.get("generated")
    if gen and Path(gen["dir"]).is_dir():
        params_dir, data_dir = Path(gen["dir"]) / "params", Path(gen["dir"]) / "data"
        g[3].success(f"Generated (seed {gen['seed']}): {gen['summary']}.")
    else:
        g[3].info("Choose a size and press Generate.")
elif not auth.allowed(auth.UPLOAD_INPUTS):
    pass  # only an operator uploads confidential inputs; the page says why
else:
    st.markdown("Upload the **4 spec files**, **person-records.txt** and **GRF-C.txt** (or .parquet), and "
                "optionally **config.json**, one by one or as one **zip**.")
    ups = st.file_uploader("SafeTab-P files", accept_multiple_files=True, key="run_upload",
                           type=["txt", "json", "zip", "parquet"])
    if ups:
        sig = tuple((u.name, u.size) for u in ups)
        if ss.get("upload_sig") != sig:
            try:  # one set of uploads per session: the one it replaces is removed
                staged = files.stage_session_upload([(u.name, u.getvalue()) for u in ups], work)
            except OSError as exc:
                staged = None
                st.error(widgets.plain(f"Could not store the uploaded files: {exc}"))
            ss["upload_sig"], ss["upload_staged"] = sig, staged
        staged = ss.get("upload_staged")
        if staged is not None:
            if staged.ignored:
                st.warning(widgets.plain("Ignored (not SafeTab-P file names): " + ", ".join(staged.ignored)))
            if staged.problems:
                widgets.problems("The upload is not complete:", staged.problems)
            else:
                params_dir, data_dir = staged.params_dir, staged.data_dir
                st.success(widgets.plain("Files in place: " + ", ".join(staged.placed)))
            if staged.config_text is not None:
                if st.button("Use the uploaded config.json as the app's plan", key="up_cfg"):
                    try:
                        state.set_config(urlcodec.config_from_text(staged.config_text, "config.json"),
                                         "uploaded config.json")
                        st.rerun()
                    except ConfigError as exc:
                        widgets.problems("The uploaded config.json is not valid:", exc.problems)
    else:
        ss.pop("upload_sig", None)
        if ss.pop("upload_staged", None) is not None:
            files.clear_uploads(work)

# ------------------------------------------------------------------ plan and noise
app_cfg = state.config()
own = None
if params_dir is not None and (params_dir / "config.json").is_file():
    try:
        own = SafeTabConfig.read(params_dir / "config.json")
    except ConfigError as exc:
        widgets.problems("The data's config.json is not valid, so only the app's plan can run:", exc.problems,
                         kind="warning")
own_label = {"sample": state.SAMPLE, "generated": "generated data's config.json",
             "upload": "uploaded config.json"}[source] if own is not None else None
if source == "sample":
    n_persons = compare.sample_persons(state.sample_dir())
    data_words = (f"the shipped synthetic sample ({n_persons:,} persons, {state.sample_dir().name}/)"
                  if n_persons is not None else "the shipped synthetic sample")
elif source == "generated" and ss.get("generated"):
    data_words = (f"generated synthetic data ({ss['generated']['persons']:,} persons, "
                  f"generator seed {ss['generated']['seed']})")
else:
    data_words = "the uploaded files"


def _adopt_data_plan(plan: SafeTabConfig, label: str) -> None:
    state.set_config(plan, label)
    ss[compare.K_CHOICE] = compare.CURRENT


pc = st.columns([3, 1.3])
basis = compare.choose_plan(own, own_label, data_words, key="run_plan", container=pc[0])
if own is not None and own.to_dict() != app_cfg.to_dict():
    if basis.choice == compare.DATA:
        pc[0].caption(f"The current plan ({widgets.plain(state.source_label())}) differs from the data's own config.json and is one "
                      "click away above. The 2020 production plan's thresholds were made for 330 million persons: "
                      "on a small nation they leave most groups with a total only, often suppressed.")
    pc[1].button("Make the data's plan the app's plan", key="use_data_cfg", on_click=_adopt_data_plan,
                 args=(own, own_label),
                 help="Load the data's config.json as the plan of every page (planner, adaptive tables, ...) "
                      "and run it.")
cfg = basis.config
plan_name = basis.name

if runner.reads_as_csv(cfg):
    st.caption(f'The plan says reader "{cfg.reader}" (production\'s Census Edited File reader). This page reads the '
               'files chosen above, so the run uses reader "csv"; `python -m engine` refuses "cef" with a message.')
n1, n2, n3 = st.columns([1.6, 1, 2.4])
noise = n1.radio("Noise", ["secure", "seeded"], key="run_noise", persist_state="session", horizontal=True,
                 format_func=lambda k: {"secure": "Secure random (for release)",
                                        "seeded": "Seeded (reproducible, NOT FOR RELEASE)"}[k])
seed = None
if noise == "seeded":
    seed = int(widgets.number_box("Seed", "run_seed", typed.SEED, 1, container=n2,
                                  help="A whole number from 0 to 2,147,483,647."))
pp = st.columns(2)
coterminous = pp[0].toggle(runner.COTERMINOUS_LABEL, value=True, key="run_coterminous", persist_state="session",
                           help=runner.COTERMINOUS_HELP)
tab_sup = pp[1].toggle(runner.TABULATION_LABEL, value=False, key="run_tabsup", persist_state="session",
                       help=runner.TABULATION_HELP)
st.caption("Output: " + runner.postprocessing_words(coterminous, tab_sup))
with n3:
    st.write("")
    go = st.button("Run SafeTab-P", type="primary", key="run_button", icon=":material/play_arrow:",
                   disabled=params_dir is None)
if go:
    bar = ProgressBar("Starting")
    ss.pop("accuracy", None)
    try:
        ss["run"] = runner.run_with_truth(params_dir, data_dir, cfg, work / "run", seed=seed, report=bar,
                                          plan=plan_name, coterminous=coterminous, tabulation_suppression=tab_sup)
        ss["run_meta"] = {"plan": basis.plan, "data": data_words}
        ss["run_basis"] = basis
        run_report.prepare(ss["run"])  # the accuracy of this release, for "Everything (zip)", while the user reads
    except Exception as exc:  # noqa: BLE001 - shown below, in plain words, never as a traceback
        from engine.errors import InputError

        if isinstance(exc, InputError):
            st.error("The inputs are not valid, so nothing was run.\n\n" + widgets.plain(exc.report()))  # values echoed as typed
        elif isinstance(exc, ConfigError):
            widgets.problems("The configuration is not valid, so nothing was run:", exc.problems)
        elif isinstance(exc, (ValueError, OSError)):
            st.error(widgets.plain(f"The run stopped: {exc}"))
        else:
            st.error(widgets.plain(f"The run stopped unexpectedly ({type(exc).__name__}: {exc})."))
    bar.empty()

out = ss.get("run")
if out is None:
    st.stop()

# ------------------------------------------------------------------ results
st.divider()
meta = ss.get("run_meta", {})
st.subheader("Results")
if out.seeded:
    st.warning(f"NOT FOR RELEASE: seeded, reproducible noise (seed {out.seed}). For demonstration and testing only.",
               icon=":material/warning:")
else:
    st.success("Noise from the cryptographically secure random source.", icon=":material/lock:")
run_basis = ss.get("run_basis")
st.markdown(f"Plan run: **{widgets.plain(out.plan or meta.get('plan', ''))}**"
            + (f" ({run_basis.role})" if run_basis is not None and run_basis.role else "")
            + (f" on {widgets.plain(meta['data'])}" if meta.get("data") else "") +
            f" (r = {out.config.max_race_codes}, γ = {out.config.gamma:g}, p = {out.config.zero_suppression_chance:g}, "
            f"{planner.units(out.config)['budget']} of the release "
            f"{typed.significant(planner.plan_summary(out.config, state.delta())['rho_release'])}).")
if out.config.to_dict() != cfg.to_dict():
    st.info("The plan chosen above differs from the plan of this run. Press Run again to see the effect of the "
            "change.", icon=":material/update:")

man = out.manifest
persons = man.get("confidential", {}).get("persons", {})
m = st.columns(3)
m[0].metric("Persons counted (confidential)", f"{persons.get('counted', 0):,}",
            help="Exact count from the confidential input, for checking the run; never for publication.")
released = out.t1[~out.t1["SUPPRESSED"]]
m[1].metric("Population groups", f"{len(out.t1):,}")
m[2].metric("T1 rows (totals)", f"{len(released):,}")
m = st.columns(3)
m[0].metric("T2 rows (sex × age)", f"{len(out.t2):,}")
m[1].metric("Suppressed totals", f"{int(out.t1['SUPPRESSED'].sum()):,}")
m[2].metric("Run time", f"{out.seconds:.1f} s", help="Release and truth, from the files to the tables.")
tab_words = runner.tabulation_summary(man)
if tab_words is not None:
    st.info(tab_words[0], icon=":material/content_cut:")
    if tab_words[1]:
        st.warning(widgets.plain(tab_words[1]), icon=":material/info:")
st.caption("Post-processing of this run: " + runner.postprocessing_words(
    bool(man.get("postprocessing", {}).get("coterminous", True)), tab_words is not None))
trunc = man.get("confidential", {}).get("race_codes_truncated")
if trunc:
    st.caption(f"Race multiplicity r = {trunc['max_race_codes']}: **{trunc['persons']:,}** persons have a race code "
               f"beyond QRACE{trunc['max_race_codes']} that is not among their first r codes; as in production, "
               f"only QRACE1..QRACE{trunc['max_race_codes']} are read. Exact count from the confidential input, "
               "never for publication.")
st.caption(f"Plan: {widgets.plain(out.plan or meta.get('plan', ''))}. Data: {widgets.plain(meta.get('data', ''))}. "
           f"Output folder: `{out.release_dir}`.")

if run_basis is not None and (len(released) == 0 or len(out.t2) == 0):
    st.warning(compare.nothing_published(
        run_basis, None, "no total and no sex by age table" if len(released) == 0
        else "totals only, no sex by age table for any group"), icon=":material/visibility_off:")
levels = files.stat_level_counts(man)
if len(levels):
    stat0 = levels["Total only (stat 0)"].sum()
    adaptive_groups = (levels["Groups"] - levels["TotalOnly"]).sum()
    if adaptive_groups and stat0 / adaptive_groups > 0.95:
        st.info(f"{stat0 / adaptive_groups:.1%} of the groups got a total only: the thresholds are large for this "
                "data. Lower them on the Adaptive tables page, or use the data's own config.json.")
    planned_s = planner.stability_of(out.config)
    diff_s = files.stability_differences(man, planned_s)
    if diff_s:
        st.info(
            f"The engine's stability S (counted from this run's spec files per tabulation class, as production "
            f"does) differs from the planner's S = {planned_s} (h_r = h_e = 1, as in the 2020 files) at: "
            + ", ".join(f"{k}: S = {v}" for k, v in diff_s.items())
            + ". A smaller S means a class of geographies has no race or no ethnicity iteration at that level; "
            "those levels get " + ("less" if max(diff_s.values()) < planned_s else "different")
            + " noise than the planner pages show.", icon=":material/info:")
    with st.expander(f"Tables published per level (stat levels, suppression), plan {widgets.plain(out.plan)}",
                     expanded=False):
        widgets.table(levels, "stat_levels.csv", key="run_levels")

rel_dir = out.release_dir
operator = auth.refusal(auth.TRUE_COUNTS) is None  # the accuracy (in the zip) and the operator file hold true counts
d = st.columns(5)
d[0].download_button("T1 files (zip)", files.release_zip(rel_dir, ["t1", "suppressed"]),
                     files.download_name("t1", rel_dir, "zip"), "application/zip", key="dl_t1", on_click="ignore",
                     icon=":material/download:")
d[1].download_button("T2 files (zip)", files.release_zip(rel_dir, ["t2"]), files.download_name("t2", rel_dir, "zip"),
                     "application/zip", key="dl_t2", on_click="ignore", icon=":material/download:")
d[2].download_button("manifest.json", (rel_dir / "manifest.json").read_bytes(),
                     files.download_name("manifest", rel_dir, "json"), "application/json", key="dl_manifest",
                     on_click="ignore", icon=":material/download:",
                     help="What the run did; the exact person counts are not in it (see the operator file).")
d[3].download_button("Plan (config.json)", out.config.to_json(), f"config_{out.plan_slug}.json", "application/json",
                     help=f"The plan that ran: {widgets.plain(out.plan)}.", key="dl_config", on_click="ignore",
                     icon=":material/download:")
d[4].download_button("Everything (zip)", lambda: run_report.everything_zip(out, runner.production_reports(
                         ss.get("accuracy_dir"))), run_report.EVERYTHING_DOWNLOAD, "application/zip", key="dl_all",
                     on_click="ignore", icon=":material/download:", disabled=not operator,
                     help="The release folder as written (with SHA256SUMS) and accuracy/: this release against the "
                          "truth, and the reports over repeated releases if computed. The accuracy is measured "
                          "against the confidential truth, so this zip is NOT FOR RELEASE. Without the operator file.")
o = st.columns([2, 4])  # the button label fits at 1280 px
o[0].download_button("Operator file (CONFIDENTIAL)", files.operator_file(rel_dir), files.OPERATOR_DOWNLOAD,
                     "application/json", key="dl_operator", on_click="ignore", icon=":material/lock:",
                     disabled=not operator)
o[1].caption("The operator file holds the exact counts of the confidential input, for the operator's checks: "
             "never publish it. It is in none of the zips."
             + ("" if files.for_release(rel_dir) else " Every download of this run is marked NOT FOR RELEASE: "
                "in its file name and by a NOT-FOR-RELEASE.txt inside each zip."))

if not auth.allowed(f"{auth.TRUE_COUNTS} (Browse, truth against release, the accuracy report and its downloads, "
                    "Everything (zip), the operator file)"):
    st.stop()  # everything below shows or downloads true counts

st.markdown("**Browse**")
present = [g for g in GEO_LEVELS if g in set(out.t1["REGION_TYPE"])]
f = st.columns([2.2, 1.3, 1.6, 1.2])
if "br_geo" not in ss or not set(ss["br_geo"]) <= set(present):
    ss["br_geo"] = present
ss.setdefault("br_it", [1, 2])
geos = f[0].multiselect("Geography levels", present, key="br_geo", persist_state="session", wrap=True)
its = f[1].multiselect("Iteration levels", [1, 2], key="br_it", persist_state="session", wrap=True,
                       format_func=lambda k: ITERATION_LEVEL_NAMES[k])
search = f[2].text_input("Search iteration names", key="br_search", persist_state="session",
                         placeholder="e.g. Albanian, Asian")
view = f[3].radio("Table", ["T1", "T2"], key="br_view", persist_state="session", horizontal=True,
                  format_func=lambda v: {"T1": "T1 totals", "T2": "T2 sex × age"}[v])
base = out.t1 if view == "T1" else out.t2
shown = files.filter_results(base, geos, its, search)
st.caption(f"{len(shown):,} of {len(base):,} rows. TRUE is the noise-free count: **confidential, for checking the "
           "noise only, never for publication**. ERROR = RELEASED − TRUE. Suppressed totals have no released value. "
           "The iteration names are whole in the last column: scroll the table sideways to read a long one.")
# ITERATION_NAME as wide as the longest name shown (the grid cannot wrap a text), and last:
# the codes and numbers are in view, and the table scrolls sideways rather than cut a name
browse = st.container(key=widgets.SCROLLS_SIDEWAYS + "browse")
browse.dataframe(
    shown, hide_index=True, height=360, key="br_table", placeholder=widgets.MISSING,
    column_order=[c for c in shown.columns if c != "ITERATION_NAME"] + ["ITERATION_NAME"],
    column_config=widgets.fit_columns(shown, {
        "ITERATION_NAME": st.column_config.TextColumn(width=160),
        "ITERATION_LEVEL": st.column_config.NumberColumn("LEVEL", format="%d"),
        "RELEASED": st.column_config.NumberColumn(format="localized"),
        "TRUE": st.column_config.NumberColumn("TRUE (confidential)", format="localized",
                                              help="Noise-free count of the confidential input: never for publication."),
        "ERROR": st.column_config.NumberColumn(format="localized",
                                               help="RELEASED − TRUE (uses the confidential true count)."),
    }))
widgets.download_csv(shown, f"{view.lower()}_with_confidential_truth-NOT-FOR-RELEASE.csv", key="br_csv",
                     label="Download these rows (CSV, with the confidential true counts)")

st.markdown("**Truth against release** (group totals T1 of the rows above)")
st.warning("The true counts below are **confidential**: noise-free figures of the input, shown only to check what "
           "the noise does. Never publish them, nor the errors or charts made from them.", icon=":material/lock:")
pts = files.filter_results(out.t1, geos, its, search)
pts = pts[~pts["SUPPRESSED"]]
plot = pd.DataFrame({
    "Geography": pts["REGION_TYPE"], "Region": pts["REGION_ID"],
    "Iteration": pts["ITERATION_NAME"].fillna(pts["ITERATION_CODE"]),
    "True": pts["TRUE"].astype("float"), "Released": pts["RELEASED"].astype("float"),
    "Error": pts["ERROR"].astype("float"),
})
if len(plot) > 20_000:
    plot = plot.sample(20_000, random_state=0)
    st.caption("Showing a random 20,000 of the totals.")
if plot.empty:
    st.info("No released totals match the filters.")
else:
    log = st.toggle("Log scales (positive counts only)", key="tv_log", persist_state="session")
    p1, p2 = st.columns([1.3, 1], gap="large")
    with p1:
        data = plot[(plot["True"] > 0) & (plot["Released"] > 0)] if log else plot
        widgets.chart(charts.truth_vs_release(data, log=log), plot, "truth_vs_release-NOT-FOR-RELEASE.csv",
                      key="tv_chart")
    with p2:
        widgets.chart(charts.error_histogram(plot), plot, "errors-NOT-FOR-RELEASE.csv", key="err_chart")

st.markdown("**Accuracy report**: observed errors over repeated releases against the predicted MOE "
            "(computed from the confidential true counts; for checking, not for publication)")
a = st.columns([1, 1.5, 3])
trials = widgets.number_box("Trials", "acc_trials", typed.Rule(whole=True, lo=1, hi=50), 3, container=a[0],
                            help="Independent releases drawn on the same inputs (each takes about as long as a run): "
                                 "a whole number from 1 to 50.")
with a[1]:
    st.write("")
    acc_go = st.button("Compute the accuracy report", key="acc_button", icon=":material/query_stats:")
if acc_go:
    bar = ProgressBar("Drawing releases")
    try:
        acc_dir = work / f"accuracy-{int(time.time() * 1000)}"
        ss["accuracy"] = runner.accuracy(out, acc_dir, int(trials), report=bar)
        ss["accuracy_dir"] = str(acc_dir)
    except Exception as exc:  # noqa: BLE001 - plain words, never a traceback
        st.error(widgets.plain(f"The accuracy report stopped: {exc}"))
    bar.empty()
acc = ss.get("accuracy")
if acc is not None:
    if acc.empty:
        st.info("No published counts to compare.")
    else:
        st.caption(f"{int(acc['trials'].max())} trial(s){' (seeded from the run seed + 1000)' if out.seeded else ''}. "
                   "Observed: the 95th percentile of |released − true| over the trials; predicted: the 95% MOE from "
                   "the calculators. Small groups deviate where clamping or suppression acts.")
        plain = analysis.accuracy_plain(acc)
        widgets.table(plain, "accuracy-NOT-FOR-RELEASE.csv", key="acc_table", column_config={
            "Geography": st.column_config.TextColumn(width=86),
            "Iterations": st.column_config.TextColumn(width=72),
            "Published count": st.column_config.TextColumn(width=136),
            "True group size": st.column_config.TextColumn("True size", width=90,
                                                           help="True (confidential) size of the group."),
            "Counts compared": st.column_config.NumberColumn("Counts", width=64),
            "Trials": None,
            "Observed 95th percentile of |error|": st.column_config.NumberColumn(
                "Observed p95 |error|", width=124, help="95th percentile of |released − true| (persons)."),
            "Mean error": st.column_config.NumberColumn(format="%.2f", width=80),
            "Predicted 95% MOE (exact)": st.column_config.NumberColumn("Predicted MOE", width=104,
                                                                       help="Exact 95% MOE from the calculators."),
            "Predicted 95% MOE (⌊1.96σ⌋ bound)": st.column_config.NumberColumn("Predicted ⌊1.96σ⌋", width=118),
        })
        kinds = list(dict.fromkeys(plain["Published count"]))
        if ss.get("acc_kind") not in kinds:
            ss["acc_kind"] = "total (stat level 0)" if "total (stat level 0)" in kinds else kinds[0]
        kind = st.selectbox("Chart: kind of published count", kinds, key="acc_kind", persist_state="session")
        sel = analysis.accuracy_view(acc, kind)
        sel = sel[sel["Geography"].isin(geos) & sel["Iterations"].isin([ITERATION_LEVEL_NAMES[i] for i in its])]
        if len(sel):
            widgets.chart(charts.accuracy(sel), sel, "accuracy_chart-NOT-FOR-RELEASE.csv", key="acc_chart")
            st.caption("The chart follows the geography and iteration filters above; rows in geography order, "
                       "small groups first.")
        else:
            st.info("No row of this kind matches the filters above.")
    prod = runner.production_reports(ss.get("accuracy_dir"))
    if prod:
        st.markdown("**The same releases in the Census production layouts** (`safetab_p/accuracy_report.py`): "
                    "the error report per population group of the first trial, and the multi-run report (MOE = "
                    "95th percentile of the cell errors, by geography, iteration level, DETAILED_ONLY and group "
                    "size in powers of ten).")
        pc = st.columns(len(prod))
        for col, (name, data) in zip(pc, prod.items()):
            col.download_button(name, data, name, "text/csv", key=f"dl_{name}", on_click="ignore",
                                icon=":material/download:")
