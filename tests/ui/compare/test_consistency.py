"""The Consistency page's logic (ui.compare.consistency), on a hand-made comparison."""

from __future__ import annotations

import pandas as pd
import pytest

from engine.reports.consistency import ConsistencyComparison
from ui.compare import consistency as cc

METHODS = ["none", "least-squares", "tree-dp", "relax-then-round"]


def _comparison() -> ConsistencyComparison:
    rows = []
    mae = {"none": [4.0, 3.0, 6.0], "least-squares": [3.5, 2.5, 5.0], "tree-dp": [3.0, 2.0, 4.0],
           "relax-then-round": [3.1, 2.1, 4.1]}
    for m in METHODS:
        for geo, e in zip(["USA", "STATE", "TRACT"], mae[m]):
            rows.append({"method": m, "geo_level": geo, "iteration_level": 2, "counts": 10, "mean_abs_error": e,
                         "bias": 0.1, "share_negative": 0.0})
        rows.append({"method": m, "geo_level": "STATE", "iteration_level": 1, "counts": 5, "mean_abs_error": 9.0,
                     "bias": 0.0, "share_negative": 0.0})
    by_level = pd.DataFrame(rows)
    by_size = pd.DataFrame([
        {"method": m, "true_size": size, "counts": 7, "mean_abs_error": 1.0, "bias": b, "share_negative": 0.0}
        for size, bias in (("0", {"none": 0.0, "least-squares": 0.1, "tree-dp": 1.5, "relax-then-round": 1.6}),
                           ("10-99", {"none": 0.0, "least-squares": -0.2, "tree-dp": -0.3, "relax-then-round": -0.3}))
        for m, b in bias.items()])
    summary = pd.DataFrame({
        "method": METHODS, "counts": [35] * 4, "mean_abs_error": [4.5, 3.8, 3.1, 3.2],
        "bias": [0.05, -0.02, 0.4, 0.45], "share_negative": [0.12, 0.08, 0.0, 0.0], "cells": [100] * 4,
        "cells_mean_abs_error": [2.0, 2.1, 1.9, 1.9], "cells_share_negative": [0.1, 0.1, 0.0, 0.0],
        "violations_per_release": [812.0, 0.0, 0.0, 301.0], "parents_per_release": [1200.0] * 4,
        "seconds_per_release": [0.0, 0.2, 0.3, 0.25], "description": ["x"] * 4})
    return ConsistencyComparison(by_level, by_size, summary, trials=1, mode={"seed": 1})


def test_table7_view_is_levels_by_methods_with_plain_labels():
    t = cc.table7_view(_comparison(), 2, cc.OTHERS)
    assert list(t.columns) == ["Geography level", "Published totals", "Least squares", "Tree DP", "Relax then round"]
    assert list(t["Geography level"]) == ["USA", "STATE", "TRACT"]
    assert list(t["Tree DP"]) == [3.0, 2.0, 4.0] and list(t["Published totals"]) == [10, 10, 10]
    none = cc.table7_view(_comparison(), 1, ["none"])
    assert list(none.columns) == ["Geography level", "Published totals", "SafeTab-P (none)"]
    assert list(none["SafeTab-P (none)"]) == [9.0]
    assert cc.iteration_levels(_comparison()) == [2, 1]


def test_summary_view_in_percent_and_persons():
    s = cc.summary_view(_comparison(), METHODS)
    assert list(s["Method"]) == ["SafeTab-P (none)", "Least squares", "Tree DP", "Relax then round"]
    assert list(s["Negative totals (%)"]) == [12.0, 8.0, 0.0, 0.0]
    assert s["Parents not adding up, per release"].tolist() == [812, 0, 0, 301]
    assert list(s.columns[:5]) == ["Method", "Mean absolute error (persons)", "Bias (persons)", "Negative totals (%)",
                                   "Parents not adding up, per release"]


def test_charts_draw_every_method_in_order():
    fig, data = cc.level_chart(_comparison(), 2)
    assert [t.name for t in fig.data] == ["SafeTab-P (none)", "Least squares", "Tree DP", "Relax then round"]
    assert list(fig.data[2].y) == [3.0, 2.0, 4.0] and fig.layout.barmode == "group"
    assert set(data.columns) == {"Geography level", "Mean absolute error (persons)", "Method"} and len(data) == 12
    size = cc.size_chart(_comparison(), min_counts=5)
    assert list(size.data[2].x) == ["0", "10-99"] and list(size.data[2].y) == [1.5, -0.3]
    assert not cc.size_chart(_comparison(), min_counts=8).data  # 7 totals per bucket: too few
    bias, _data = cc.level_chart(_comparison(), 2, "bias")
    assert list(bias.data[0].y) == [0.1, 0.1, 0.1] and "Bias" in bias.layout.title.text


def test_by_size_table():
    t = cc.by_size_table(_comparison(), "bias")
    assert list(t.columns) == ["True size (persons)", "Published totals", "SafeTab-P (none)", "Least squares",
                               "Tree DP", "Relax then round"]
    assert list(t["True size (persons)"]) == ["0", "10-99"] and list(t["Tree DP"]) == [1.5, -0.3]


def test_verdict_quotes_this_comparison():
    text = cc.verdict_text(_comparison())
    for part in ("812 of 1,200", "from 4.50 to 3.80", "3.10", "+1.50 persons on groups whose true count is 0",
                 "301 violations", "8.0% of its totals are negative"):
        assert part in text, part
    assert "cuts the mean absolute error" in text
    worse = _comparison()
    worse.summary.loc[1, "mean_abs_error"] = 5.0
    assert "raises the mean absolute error (all nested levels, Detailed and Regional groups) from 4.50 to 5.00" \
        in cc.verdict_text(worse)


@pytest.mark.parametrize("value", ["mean_abs_error", "bias"])
def test_table7_view_of_other_values(value):
    t = cc.table7_view(_comparison(), 2, ["none", "tree-dp"], value=value)
    assert list(t.columns)[-2:] == ["SafeTab-P (none)", "Tree DP"]


def test_group_size_budgets_are_parsed_exactly_or_refused():
    assert cc.parse_epsilons("0.1, 0.5, 1") == (0.1, 0.5, 1.0)
    assert cc.parse_epsilons("2;3 0.5") == (2.0, 3.0, 0.5)  # in the order typed
    assert cc.parse_epsilons("1e-1, 5e1") == (0.1, 50.0)  # the shared rules of ui.core.typed
    for bad, msg in (("", "The box is empty"), ("0", "'0' is below 0.0001: type a number from 0.0001 to 100."),
                     ("x", "'x' is not a number: type a number from 0.0001 to 100."), ("²", "'²' is not a number"),
                     ("1,2,3,4,5,6,7", "At most 6 budgets at once \\(got 7\\)"),
                     ("101", "'101' is above 100"),
                     ("0.1, 0.1, 1", "'0.1' is typed twice: type each of the budgets once."),
                     ("2;2 3", "'2' is typed twice"), ("0.10, 0.1", "'0.1' is the same as '0.10'"),
                     ("1" * 5000, "is not a finite number")):
        with pytest.raises(ValueError, match=msg):
            cc.parse_epsilons(bad)
    with pytest.raises(ValueError) as err:
        cc.parse_epsilons("9" * 5000)
    assert len(str(err.value)) < 120  # the typed text is echoed cut short


def test_paper_numbers_of_the_running_example():
    """Example 2's printed counts (2, 1 and 3 households of one person in GA, NY and the
    US) and Lemmas 4 and 6 (sensitivities 2 and 1), computed from Table 3's households."""
    t = cc.paper_numbers().set_index("The paper says")
    printed = t[t["Match"] != "—"]
    assert (printed["Match"] == "yes").all() and len(printed) == 6
    assert (printed["Paper's value"] == printed["Computed here"]).all()
    assert t.loc["The root of H_DP: the number of groups n", "Computed here"] == "6"
    assert t.loc["The root of H_DP: the number of groups n", "Paper's value"] == "lost in the text"


def _group_study(relaxed_error: float, exact_error: float):
    """A group-size study's Table 7 with the given errors (relaxed and exact mechanisms)."""
    from types import SimpleNamespace

    rows = []
    for mech, err, cv in (("h-relaxed", relaxed_error, 15.0), ("h-dp", exact_error, 0.0),
                          ("c-relaxed", relaxed_error, 20.0), ("c-exact", exact_error, 0.0)):
        rows.append({"epsilon": 0.1, "mechanism": mech, "violations": cv, "unfaithful_levels": 0.0,
                     **{f"error_{lvl}": err for lvl in ("USA", "STATE", "COUNTY", "TRACT")}})
    return SimpleNamespace(table7=pd.DataFrame(rows), epsilons=(0.1,), hierarchy=SimpleNamespace(households=100))


def test_the_group_verdict_reports_the_relaxed_error_as_measured_and_the_papers_finding():
    """The verdict said "Rounding the relaxation changes the error little" whatever the numbers
    were, while the paper (Sec. 11.3) found its exact mechanisms more accurate than the relaxed
    baselines; it now says what these numbers show and what the paper found."""
    far = cc.group_verdict(_group_study(relaxed_error=40.0, exact_error=10.0))
    assert "changes the error little" not in far
    assert "the exact mechanisms' error is 10.0 groups against 40.0 for relaxing and rounding" in far
    near = cc.group_verdict(_group_study(relaxed_error=30.3, exact_error=30.0))
    assert "changes the error little (30.3 against 30.0 groups" in near
    for text in (far, near):
        assert "more accurate than the relaxed ones" in text and "(Sec. 11.3)" in text


def test_the_verdict_on_relax_then_round_follows_the_measured_figures():
    text = cc.verdict_text(_comparison())  # 3.20 against 3.10, 301 violations
    assert "about the tree DP's mean absolute error (3.20 against 3.10) but leaves 301 violations" in text
    assert "its bias is -0.02 persons" in text and "stays small" not in text
    worse = _comparison()
    worse.summary.loc[3, "mean_abs_error"] = 4.0
    worse.summary.loc[3, "violations_per_release"] = 0.0
    text = cc.verdict_text(worse)
    assert "a larger mean absolute error than the tree DP (4.00 against 3.10)" in text
    assert "left every sum intact" in text and "violations per release" not in text.split("Relax-then-round")[1]
