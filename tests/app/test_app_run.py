"""Run page: the engine on the sample data with the app's plan, results, downloads,
bad uploads as messages."""

from __future__ import annotations

import io
import json
import zipfile

import pytest

from calculators.config import SafeTabConfig
from calculators.levels import GEO_LEVELS
from tests.app.conftest import SAMPLE, config, frame, metric, needs_sample, open_app, shown, texts
from ui.core import widgets


@needs_sample
def test_seeded_run_on_the_sample_data_shows_results_and_downloads():
    at = open_app("run", timeout=120)
    assert at.radio(key="run_source").value == "sample"
    assert at.button(key="run_button").disabled is False
    at.radio(key="run_noise").set_value("seeded").run()
    at.text_input(key="run_seed").input("7").run()
    at.button(key="run_button").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("NOT FOR RELEASE" in w.value and "seed 7" in w.value for w in at.warning)
    assert metric(at, "Persons counted (confidential)") == "50,000"
    out = at.session_state["run"]
    # a first run on the shipped sample uses the sample's own plan, and says so
    sample_cfg = SafeTabConfig.read(SAMPLE / "params" / "config.json")
    assert at.radio(key="run_plan").value == "data"
    assert out.seed == 7 and out.config.to_dict() == sample_cfg.to_dict() != config(at).to_dict()
    assert out.plan == "sample-data plan" and "Plan run: **sample-data plan**" in texts(at)
    assert metric(at, "Population groups") == f"{len(out.t1):,}"
    assert metric(at, "Suppressed totals") == f"{int(out.t1['SUPPRESSED'].sum()):,}"
    labels = [b.label for b in at.download_button]
    for want in ("T1 files (zip)", "T2 files (zip)", "manifest.json", "Plan (config.json)",
                 "Operator file (CONFIDENTIAL)"):
        assert want in labels
    # a seeded run and its truth are marked in their folder names and inside, in the session's own folder
    work = at.session_state["workdir"].path
    assert out.release_dir.name == "release-seeded-NOT-FOR-RELEASE" and out.release_dir.parent.parent == work
    assert out.truth_dir.name == "truth-NOT-FOR-RELEASE" and (out.truth_dir / "NOT-FOR-RELEASE.txt").is_file()
    assert any("marked NOT FOR RELEASE" in c.value for c in at.caption)
    plan_dl = next(b for b in at.download_button if b.label == "Plan (config.json)")
    assert "sample-data plan" in plan_dl.help.replace("\\", "")  # user text, escaped
    # the true counts are labelled confidential wherever they show
    assert any("confidential" in w.value and "Never publish" in w.value for w in at.warning)
    assert any("with the confidential true counts" in b.label for b in at.download_button)
    assert at.dataframe and all(d.proto.placeholder == "—" for d in at.dataframe)  # no "None" cells
    # browsing filters the stored results without running again
    at.multiselect(key="br_geo").set_value(["USA"]).run()
    at.text_input(key="br_search").set_value("alone").run()
    shown = frame(at, "ITERATION_NAME", "SUPPRESSED")
    assert len(shown) > 0 and set(shown["REGION_TYPE"]) == {"USA"}
    assert shown["ITERATION_NAME"].str.contains("alone", case=False).all()
    # no name is cut: the column is as wide as the longest name shown (the grid cannot wrap)
    widths = [json.loads(d.proto.columns).get("ITERATION_NAME", {}).get("width") for d in at.dataframe]
    longest = max(widgets.text_px(n) for n in shown["ITERATION_NAME"].dropna())
    assert any(w is not None and w >= longest + widgets.CELL_PADDING_PX for w in widths)
    assert at.session_state["run"] is out
    # accuracy report beside the predicted MOE
    at.text_input(key="acc_trials").input("1").run()
    at.button(key="acc_button").click().run()
    acc = frame(at, "Observed 95th percentile of |error|", "Predicted 95% MOE (exact)")
    assert len(acc) > 0 and (acc["Trials"] == 1).all()
    assert list(acc["Geography"]) == sorted(acc["Geography"], key=GEO_LEVELS.index)  # geography order
    chart = json.loads(at.get("plotly_chart")[-1].proto.spec)
    names = {tr["name"] for tr in chart["data"]}
    assert names == {"observed: 95th percentile of |released − true|", "predicted 95% MOE (exact)"}
    rows = chart["data"][0]["y"]
    assert all(", size " in r for r in rows) and len(rows) == len(set(rows))
    kind = at.selectbox(key="acc_kind").value
    assert kind == "total (stat level 0)"
    # ... and production's layouts of the same release, as downloads
    labels = [b.label for b in at.download_button]
    assert "error_report.csv" in labels and "multi_run_error_report.csv" in labels
    from ui.safetab import runner

    files = runner.production_reports(at.session_state["accuracy_dir"])
    head = files["error_report.csv"].decode().split("\n")[0]
    assert head.startswith("REGION_ID,REGION_TYPE,ITERATION_CODE,DETAILED_ONLY,COARSE_ONLY,Population group size")
    # the race-code truncation next to r (the sample's plan: r = 8, nobody truncated)
    assert any("Race multiplicity r = 8" in c.value and "**0** persons" in c.value for c in at.caption)


@needs_sample
def test_the_production_plan_is_one_click_away_and_named():
    at = open_app("run", timeout=120)
    at.radio(key="run_plan").set_value("production").run()
    at.radio(key="run_noise").set_value("seeded").run()
    at.button(key="run_button").click().run()
    out = at.session_state["run"]
    assert out.config.to_dict() == config(at).to_dict() and out.plan == "2020 production plan"
    assert "Plan run: **2020 production plan** on the shipped synthetic sample (50,000 persons" in texts(at)
    # the 2020 thresholds publish no sex by age table on 50,000 persons: said in words, not a bare 0
    assert any("Under 2020 production plan, SafeTab-P publishes totals only, no sex by age table" in w.value
               and "data's own plan" in w.value for w in at.warning) == (len(out.t2) == 0)
    assert any(b.label == "Plan (config.json)" and "2020 production plan" in b.help
               for b in at.download_button)


@needs_sample
def test_the_data_config_can_become_the_plan():
    at = open_app("run")
    assert at.radio(key="run_plan").value == "data"
    at.button(key="use_data_cfg").click().run()
    assert config(at).to_dict() == SafeTabConfig.read(SAMPLE / "params" / "config.json").to_dict()
    assert "sample-data plan" in "\n".join(shown(m.value) for m in at.sidebar.markdown)
    assert at.radio(key="run_plan").value == "current"


@needs_sample
def test_the_data_plan_is_the_default_and_the_choice_is_shared_with_the_compare_pages():
    at = open_app("budget")
    at.slider(key="w_r").set_value(3).run()
    at.switch_page("app_pages/safetab/run.py").run()
    assert at.radio(key="run_plan").value == "data"  # the data's own plan by default, as on every page
    assert any("(2020 production plan, edited) differs from the data's own config.json and is one click away"
               in shown(c.value) for c in at.caption)
    at.radio(key="run_plan").set_value("current").run()
    at.switch_page("app_pages/compare/invariants.py").run(timeout=120)
    assert at.radio(key="inv_plan").value == "current"  # the same choice on the Compare pages
    assert "Plan: 2020 production plan, edited (the current plan)" in texts(at)


def test_incomplete_upload_is_a_message():
    at = open_app("run")
    at.radio(key="run_source").set_value("upload").run()
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("GRF-C.txt", "TABBLKST|TABBLKCOU|TABTRACTCE|TABBLK|PLACEFP|AIANNHCE\n")
        zf.writestr("readme.md", "hi")
    at.file_uploader(key="run_upload").upload("inputs.zip", buf.getvalue(), "application/zip").run()
    assert not at.exception
    errors = " ".join(shown(e.value) for e in at.error)
    assert "missing" in errors and "person-records.txt" in errors and "race-characteristic-iterations.txt" in errors
    assert any("readme.md" in shown(w.value) for w in at.warning)
    assert at.button(key="run_button").disabled is True


@needs_sample
def test_bad_person_records_are_reported_not_raised():
    at = open_app("run", timeout=60)
    at.radio(key="run_source").set_value("upload").run()
    files = [(p.name, p.read_bytes(), "text/plain") for p in (SAMPLE / "params").iterdir()]
    files.append(("GRF-C.txt", (SAMPLE / "data" / "GRF-C.txt").read_bytes(), "text/plain"))
    header = (SAMPLE / "data" / "person-records.txt").read_text().splitlines()[0]
    files.append(("person-records.txt", (header + "\n999|3|0|01|001|000100|0001|01|X|Null|Null|Null|Null|Null|"
                                         "Null|Null|Null\n").encode(), "text/plain"))
    at.file_uploader(key="run_upload").set_value(files).run()
    assert any("Files in place" in s.value for s in at.success)
    at.button(key="run_button").click().run()
    assert not at.exception
    text = " ".join(shown(e.value) for e in at.error)
    assert "not valid" in text and "person-records.txt" in text and "QAGE" in text
    assert "run" not in at.session_state
    assert "Results" not in texts(at)


def test_generated_data_of_a_chosen_size_runs():
    at = open_app("run", timeout=120)
    at.radio(key="run_source").set_value("generated").run()
    assert at.button(key="run_button").disabled is True
    at.text_input(key="gen_persons").input("2000").run()
    at.button(key="gen_button").click().run()
    assert any("2,000 persons" in s.value for s in at.success)
    at.radio(key="run_noise").set_value("seeded").run()
    at.button(key="run_button").click().run()
    assert not at.exception and not at.error
    assert metric(at, "Persons counted") == "2,000"
    assert "on generated synthetic data (2,000 persons, generator seed 0)" in texts(at)


_TOY = SAMPLE.parents[1] / "shared" / "reference" / "safetab-p-toy"


@pytest.mark.skipif(not _TOY.is_dir(), reason="../shared/reference is not there")
def test_uploaded_toy_run_has_productions_stability():
    at = open_app("run", timeout=120)
    at.radio(key="run_source").set_value("upload").run()
    ups = [(p.name, p.read_bytes(), "text/plain") for d in ("params", "data") for p in (_TOY / d).iterdir()]
    at.file_uploader(key="run_upload").set_value(ups).run()
    at.button(key="use_data_cfg").click().run()  # the toy's own plan
    at.radio(key="run_noise").set_value("seeded").run()
    at.button(key="run_button").click().run()
    assert not at.exception, [e.value for e in at.exception]
    # S counted per tabulation class (production): 9 at every level, the planner's S.
    assert not [i.value for i in at.info if "stability S" in i.value]
    assert metric(at, "Persons counted") == "8"


def test_uploaded_spec_with_a_class_lacking_ethnicity_iterations_says_so(tmp_path):
    from tests.engine.conftest import BLOCKS, Dataset, person

    ds = Dataset(tmp_path / "in")
    # the only level-2 ethnicity iteration is COARSE_ONLY: USA/STATE have h_e = 0 at level 2
    ds.eth_iterations = [("4001", "Not Hispanic or Latino", "0", "Null", "Null"),
                         ("4002", "Hispanic or Latino", "0", "Null", "Null"),
                         ("4011", "Central American", "1", "False", "False"),
                         ("4021", "Costa Rican", "2", "False", "True")]
    ds.persons = [person(), person(block=BLOCKS[4], eth="2010")]
    ds.write()
    at = open_app("run", timeout=120)
    at.radio(key="run_source").set_value("upload").run()
    ups = [(p.name, p.read_bytes(), "text/plain") for d in (ds.params, ds.data) for p in d.iterdir()]
    at.file_uploader(key="run_upload").set_value(ups).run()
    at.button(key="use_data_cfg").click().run()
    at.radio(key="run_noise").set_value("seeded").run()
    at.button(key="run_button").click().run()
    assert not at.exception, [e.value for e in at.exception]
    note = [i.value for i in at.info if "stability S" in i.value]
    assert note and "(USA, 2): S = 8" in note[0] and "(STATE, 2): S = 8" in note[0]
    assert "(COUNTY, 2)" not in note[0] and "less" in note[0]

@needs_sample
def test_the_post_processing_choices_reach_the_release_and_are_said():
    """Coterminous off gives the released code's output; the Tabulation System's rules on
    are applied after the release, counted on the page and in the manifest."""
    at = open_app("run", timeout=120)
    assert at.toggle(key="run_coterminous").value is True and at.toggle(key="run_tabsup").value is False
    assert any("paper's coterminous step is applied" in c.value for c in at.caption)
    at.radio(key="run_noise").set_value("seeded").run()
    at.text_input(key="run_seed").input("5").run()
    at.toggle(key="run_coterminous").set_value(False).run()
    at.toggle(key="run_tabsup").set_value(True).run()
    assert any("released SafeTab-P code gives" in c.value for c in at.caption)
    at.button(key="run_button").click().run()
    assert not at.exception, [e.value for e in at.exception]
    man = at.session_state["run"].manifest["postprocessing"]
    assert man["coterminous"] is False
    removed = man["tabulation_suppression"]["groups_removed"]
    info = next(i.value for i in at.info if "Tabulation System suppression" in i.value)
    from engine.tabulation.postprocess import TABULATION_RULES
    from ui.safetab import runner

    assert set(runner.RULE_WORDS) == set(TABULATION_RULES) == set(removed)
    for rule, n in removed.items():
        assert f"**{n:,}** groups removed by {runner.RULE_WORDS[rule]}" in info
    listed = at.session_state["run"].release_dir / "suppressed" / "tabulation-system.csv"
    assert sum(1 for _ in open(listed)) - 1 == sum(removed.values()) > 0
    assert any("Post-processing of this run: no coterminous step" in c.value for c in at.caption)
