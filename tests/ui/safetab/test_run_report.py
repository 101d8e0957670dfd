"""The last run's accuracy (ui.safetab.run_report): in the Run page's "Everything (zip)" and in
the decision memo. One seeded run on the shipped sample data."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pandas as pd
import pytest

from calculators.config import SafeTabConfig
from ui.safetab import run_report, runner
from ui.committee import memo
from ui.committee.comparison import Plan

SAMPLE = Path(__file__).resolve().parents[3] / "sample_data"
pytestmark = pytest.mark.skipif(not (SAMPLE / "data" / "person-records.txt").is_file(),
                                reason="sample_data/ is not there")


@pytest.fixture(scope="module")
def out(tmp_path_factory):
    cfg = SafeTabConfig.read(SAMPLE / "params" / "config.json")
    return runner.run_with_truth(SAMPLE / "params", SAMPLE / "data", cfg, tmp_path_factory.mktemp("run") / "w",
                                 seed=3)


def test_everything_zip_has_the_release_and_its_accuracy(out, tmp_path):
    z = zipfile.ZipFile(io.BytesIO(run_report.everything_zip(out)))
    names = set(z.namelist())
    assert "manifest.json" in names and any(n.startswith("t1/") for n in names)
    assert {"accuracy/README.txt", "accuracy/accuracy_of_this_release.csv"} <= names
    assert "accuracy/accuracy_over_trials.csv" not in names  # none computed yet
    assert "NOT FOR RELEASE" in z.read("accuracy/README.txt").decode()
    rep = pd.read_csv(io.BytesIO(z.read("accuracy/accuracy_of_this_release.csv")))
    # the report is of this very release: T1 totals compared = released T1 rows
    totals = rep[rep["table"].str.startswith("total") | rep["table"].str.startswith("T1")]
    assert totals["counts_compared"].sum() == int((~out.t1["SUPPRESSED"]).sum())
    assert (rep["trials"] == 1).all()
    # the observed error of the USA totals is the one in the run's own table
    usa = out.t1[(out.t1["REGION_TYPE"] == "USA") & ~out.t1["SUPPRESSED"]]
    worst = totals[totals["geo_level"] == "USA"]["p95_abs_error"].max()
    assert worst <= usa["ERROR"].abs().max()
    trials = runner.accuracy(out, tmp_path / "acc", 1)
    z = zipfile.ZipFile(io.BytesIO(run_report.everything_zip(out)))
    got = pd.read_csv(io.BytesIO(z.read("accuracy/accuracy_over_trials.csv")))
    assert len(got) == len(trials) and got["p95_abs_error"].tolist() == trials["p95_abs_error"].tolist()


def test_the_memo_carries_the_runs_accuracy(out):
    info = memo.run_info(out, {"plan": "sample-data plan", "data": "Shipped sample data"}, out.config)
    assert info.same_plan and info.release_report is out.release_report
    m = memo.plan_memo(Plan("sample-data plan", out.config), run=info)
    sec = m.sections[-1]
    assert sec.title == memo.RUN_SECTION
    tables = {b.title: b.df for b in sec.blocks if isinstance(b, memo.Table)}
    run = tables["The run"].set_index("Quantity")["Value"]
    assert run["Noise"].startswith("seeded (seed 3)") and run["Plan that ran"] == "sample-data plan"
    assert run["Suppressed totals"] == f"{int(out.t1['SUPPRESSED'].sum()):,}"
    # the report summarised per level beside the tables published (the full report is in the downloads)
    acc = tables["Tables published per level and their accuracy"].set_index("Level")
    rep = out.release_report
    g = rep[(rep["geo_level"] == "COUNTY") & (rep["iteration_level"] == 2)]
    over = int((g["p95_abs_error"] > g["predicted_moe95_exact"]).sum())
    assert acc.loc["COUNTY Detailed", "this release: rows over the MOE"] == f"{over} of {len(g)}"  # planner names
    assert any("Everything (zip)" in b.text for b in sec.blocks if isinstance(b, memo.Text))
    fig = next(b for b in sec.blocks if isinstance(b, memo.Figure))
    assert "total (stat level 0)" in fig.title and (fig.data["Published count"] == "total (stat level 0)").all()
    changed = out.config.updated(max_race_codes=2)
    other = memo.run_info(out, {}, changed)
    assert not other.same_plan
    # the memo of the changed plan never carries this run's accuracy as its own (issue 40 item 5)
    sec = memo.plan_memo(Plan("changed", changed), run=other).sections[-1]
    assert [b.text for b in sec.blocks] == [memo.OTHER_RUN.format(name="changed")]
