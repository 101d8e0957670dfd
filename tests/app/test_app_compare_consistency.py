"""The Consistency page (Compare methods) in AppTest, on the shipped sample and the app's plan."""

from __future__ import annotations

from tests.app.conftest import frame, needs_sample, open_app, texts


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
    # Bias instead of error: the same layout, other numbers.
    at.radio(key="cons_measure").set_value("bias").run()
    assert not frame(at, "Geography level", "Least squares", "Tree DP").equals(t7r)
    assert "Bias by true size" in [h.value for h in at.subheader]
    assert not at.exception
