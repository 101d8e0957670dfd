"""The Consistency page (Compare methods) in AppTest, on the shipped sample and the app's plan."""

from __future__ import annotations

import pandas as pd

from tests.app.conftest import STUDIES, frame, needs_sample, open_app, shown, texts
from tests.app.paper_tables import static_table

pytestmark = STUDIES  # the page's study made once, on one worker (tests/app/conftest.py)


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
    assert any("'0' is below 0.0001: type a number from 0.0001 to 100." in shown(e.value) for e in at.error)
    assert at.text_input(key="gs_eps").value == "0, banana"
    at.text_input(key="gs_eps").set_value("1").run(timeout=600)
    at.text_input(key="gs_trials").set_value("2.5").run(timeout=600)
    assert any("not a whole number" in e.value for e in at.error)


def _column_of(at, key):
    """The column that holds the text box `key` (its message is drawn in it, under the box)."""
    return next(c for c in at.columns if any(t.key == key for t in c.text_input))


@needs_sample
def test_group_size_boxes_use_the_shared_rules_and_keep_the_last_valid_study():
    """The budgets are read one by one by ui.core.typed's rules, the releases and seed are
    number boxes: a budget typed twice, "-1", "²" or 5,000 digits are refused with the
    shared, bounded messages under their box, never dropped or shown as Python's, and the
    study of the last valid settings stays on the page."""
    at = open_app("compare_consistency", timeout=600)
    links = [link.proto.label for link in at.get("page_link") if "glossary" in link.proto.page]
    assert {"Sensitivity", "Consistency violations and faithfulness"} <= set(links)

    def table_eps():
        return sorted(set(frame(at, "ε", "Mechanism", "Error, USA")["ε"]))

    assert table_eps() == [0.1, 0.5, 1.0]
    for key, bad, message, in_use in (
            ("gs_eps", "0.1, 0.1, 1", "'0.1' is typed twice: type each of the budgets once.", "0.1, 0.5, 1.0"),
            ("gs_eps", "0.1, ²", "'²' is not a number: type a number from 0.0001 to 100.", "0.1, 0.5, 1.0"),
            ("gs_eps", "1" * 5000, "is not a finite number: type a number from 0.0001 to 100.", "0.1, 0.5, 1.0"),
            ("gs_seed", "-1", "'-1' is below 0: type a whole number from 0 to 2,147,483,647.", "1"),
            ("gs_seed", "²", "'²' is not a number", "1"),
            ("gs_trials", "9" * 5000, "is not a finite number: type a whole number from 1 to 20.", "5")):
        at.text_input(key=key).set_value(bad).run(timeout=600)
        assert not at.exception
        col = _column_of(at, key)
        assert len(col.error) == 1, (key, bad, [e.value for e in at.error])
        msg = shown(col.error[0].value)
        assert message in msg and msg.endswith(f"Still in use: {in_use}."), msg
        assert len(msg) < 200 and "invalid literal" not in msg and "Exceeds the limit" not in msg
        assert at.text_input(key=key).value == bad  # the text stays as typed
        assert table_eps() == [0.1, 0.5, 1.0]  # the last valid study is still shown
        assert "never break the hierarchy" in at.success[-1].value
        at.text_input(key=key).set_value({"gs_eps": "0.1, 0.5, 1", "gs_seed": "1", "gs_trials": "5"}[key]).run(
            timeout=600)
        assert not at.error
    # "1e-1" is 0.1, as in every number box: the same study (no message)
    at.text_input(key="gs_eps").set_value("1e-1, 0.5, 1").run(timeout=600)
    assert not at.error and table_eps() == [0.1, 0.5, 1.0]
