"""The Consistency page (Compare methods) in AppTest, on the shipped sample and the app's plan."""

from __future__ import annotations

import pandas as pd

from tests.app.conftest import frame, needs_sample, open_app, texts
from tests.app.paper_tables import static_table


@needs_sample
def test_consistency_page_shows_table7_side_by_side_a_verdict_and_downloads():
    at = open_app("compare_consistency", timeout=300)
    assert at.title[0].value == "Consistency"
    body = texts(at)
    assert "The question." in body and "Fioretto" in body and "NOT FOR RELEASE" in body
    t7 = frame(at, "Geography level", "Least squares", "Tree DP", "Relax then round")
    assert list(t7["Geography level"])[:4] == ["USA", "STATE", "COUNTY", "TRACT"]
    none = frame(at, "Geography level", "SafeTab-P (none)")
    assert len(none) == len(t7)
    summary = frame(at, "Method", "Mean absolute error (persons)")
    assert summary.set_index("Method").loc["Tree DP", "Negative totals (%)"] == 0
    assert summary.set_index("Method").loc["Least squares", "Parents not adding up, per release"] == 0
    assert summary.set_index("Method").loc["SafeTab-P (none)", "Parents not adding up, per release"] > 0
    assert at.success and "do not add up" in at.success[0].value
    assert any(b.label.startswith("Everything") for b in at.get("download_button"))
    # Regional groups: another table, the same layout.
    at.radio(key="cons_level").set_value(1).run()
    t7r = frame(at, "Geography level", "Least squares", "Tree DP")
    assert not t7r.equals(t7)
    # "All nested levels together" is over Detailed and Regional groups, as its heading says: the
    # totals-weighted mean of both tables (each rounded to 0.01)
    both = pd.concat([none, frame(at, "Geography level", "SafeTab-P (none)")])
    weighted = (both["SafeTab-P (none)"] * both["Published totals"]).sum() / both["Published totals"].sum()
    assert abs(weighted - summary.set_index("Method").loc["SafeTab-P (none)", "Mean absolute error (persons)"]) < 0.01
    assert "All nested levels together, Detailed and Regional groups" in [h.value for h in at.subheader]
    # Bias instead of error: the same layout, other numbers.
    at.radio(key="cons_measure").set_value("bias").run()
    assert not frame(at, "Geography level", "Least squares", "Tree DP").equals(t7r)
    assert "Bias by true size" in [h.value for h in at.subheader]
    assert not at.exception


@needs_sample
def test_group_sizes_study_the_papers_problem():
    """The second study: the paper's Table 7 on synthetic households of the sample, its own
    numbers, a verdict and downloads; settings typed wrongly are refused with a message."""
    at = open_app("compare_consistency", timeout=600)
    assert "Group sizes (the paper's problem)" in [h.value for h in at.header]
    t7 = frame(at, "ε", "Mechanism", "Error, USA", "Consistency violations")
    assert sorted(set(t7["ε"])) == [0.1, 0.5, 1.0] and len(t7) == 12
    exact = t7[t7["Mechanism"].isin(["Group sizes, exact DP", "Cumulative, exact"])]
    assert (exact["Consistency violations"] == 0).all() and (exact["Levels not adding up to n"] == 0).all()
    relaxed = t7[t7["Mechanism"].str.contains("relaxed")]
    assert relaxed["Consistency violations"].sum() > 0
    # Half the noise: the cumulative exact mechanism beats the group-size DP at the USA level.
    by = t7.set_index(["ε", "Mechanism"])
    assert by.loc[(0.1, "Cumulative, exact"), "Error, USA"] < by.loc[(0.1, "Group sizes, exact DP"), "Error, USA"]
    paper = static_table(at, "The paper says").set_index("The paper says")
    assert paper.loc["Sensitivity of the group-size vector", "Computed here"] == "2"
    assert paper.loc["Sensitivity of the cumulative vector", "Computed here"] == "1"
    assert paper.loc["The group-size vectors of GA, NY and the US", "Computed here"] == "(2, 0, 1), (1, 1, 1), (3, 1, 2)"
    assert paper.loc["The group-size vectors of GA, NY and the US", "Paper's value"] == "lost in the text"
    assert "never break the hierarchy" in at.success[-1].value
    assert any(b.label == "Everything (group_sizes.zip)" for b in at.get("download_button"))
    assert "NOT FOR RELEASE" in texts(at)
    # One budget, two releases: a smaller table, computed again.
    at.text_input(key="gs_eps").set_value("2").run(timeout=600)
    at.text_input(key="gs_trials").set_value("2").run(timeout=600)
    assert not at.exception
    t7 = frame(at, "ε", "Mechanism", "Error, USA")
    assert t7["ε"].tolist() == [2.0] * 4
    # Typed wrongly: a message, the value is not changed.
    at.text_input(key="gs_eps").set_value("0, banana").run(timeout=600)
    assert not at.exception
    assert any("out of range" in e.value or "not a number" in e.value for e in at.error)
    assert at.text_input(key="gs_eps").value == "0, banana"
    at.text_input(key="gs_eps").set_value("1").run(timeout=600)
    at.text_input(key="gs_trials").set_value("2.5").run(timeout=600)
    assert any("not a whole number" in e.value for e in at.error)
