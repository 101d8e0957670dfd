"""Chart builders: log axes labelled in full, marks, plain labels, a readable diagram."""

from __future__ import annotations

import re

import pandas as pd
import plotly.graph_objects as go
import pytest

from calculators.presets import production_2020
from ui.safetab import analysis
from ui.core import charts, planner


@pytest.mark.parametrize("lo,hi,want", [
    (1, 100, ["1", "2", "5", "10", "20", "50", "100"]),
    (0.001, 10, ["0.001", "0.002", "0.005", "0.01", "0.02", "0.05", "0.1", "0.2", "0.5", "1", "2", "5", "10"]),
    (3, 400, ["5", "10", "20", "50", "100", "200"]),
    (1, 1e6, ["1", "10", "100", "1,000", "10,000", "100,000", "1,000,000"]),
    (1e-3, 1e9, ["0.001", "0.1", "10", "1,000", "100,000", "10,000,000", "1,000,000,000"]),
])
def test_log_ticks_are_labelled_in_full(lo, hi, want):
    vals, text = charts.log_ticks(lo, hi)
    assert text == want
    assert all(lo * (1 - 1e-9) <= v <= hi * (1 + 1e-9) for v in vals)


def test_log_axes_of_the_charts_carry_full_labels():
    cfg = production_2020()
    fig = charts.moe_vs_rho(planner.moe_rho_curve(9, 0.1), planner.level_points(cfg, planner.EXACT), "x")
    for axis in (fig.layout.xaxis, fig.layout.yaxis):
        assert axis.type == "log" and axis.tickmode == "array"
        assert all(re.fullmatch(r"[0-9.,]+", t) for t in axis.ticktext)
    assert {"10", "20", "50", "100"} <= set(fig.layout.yaxis.ticktext)  # a 1-2-5 series, never "100, 5, 2, 10"
    lvl = planner.POPULATION_GROUP_LEVELS[5]
    moes = analysis.moe_curves(cfg, lvl)
    fig = charts.expected_moe(moes, cfg.thresholds(lvl))
    assert fig.layout.xaxis.tickmode == "array" and fig.layout.yaxis2.type == "log"
    assert "1,000" in fig.layout.xaxis.ticktext


def test_charts_validate_as_plotly_figures():
    cfg = production_2020()
    fig = charts.moe_vs_rho(planner.moe_rho_curve(9, 0.1), planner.level_points(cfg, planner.EXACT), "x")
    go.Figure(fig.to_dict())  # raises if anything is not valid plotly


def _axes(fig: go.Figure) -> dict:
    return {k: fig.layout[k] for k in fig.layout if k.startswith(("xaxis", "yaxis"))}


def test_every_axis_fits_its_labels_and_skips_the_overflow_check():
    cfg = production_2020()
    lvl = planner.POPULATION_GROUP_LEVELS[5]
    t, s2 = 21, 31.45
    curves = analysis.suppression_curves(t, s2)
    ours = [charts.moe_vs_rho(planner.moe_rho_curve(9, 0.1), planner.level_points(cfg, planner.EXACT), "x"),
            charts.expected_moe(analysis.moe_curves(cfg, lvl), cfg.thresholds(lvl)),  # two panels: x2, y2
            charts.release_bias(curves, t, n=10, at_n=analysis.value_at(10, t, s2)),
            charts.style(go.Figure(go.Bar(x=[1, 2], y=[3, 4])), "t", "x", "y")]
    foreign = go.Figure(go.Scatter(x=[1, 2], y=[3, 4]), layout={"xaxis2": {"anchor": "y"}})
    assert _axes(foreign)["xaxis2"].ticklabeloverflow is None
    for fig in ours + [charts.fit(foreign)]:
        axes = _axes(fig)
        assert {"xaxis", "yaxis"} <= set(axes)
        for name, axis in axes.items():
            assert axis.automargin is True and axis.ticks == "outside", name
            # automargin makes room for every tick label: plotly's per-label check of
            # "hide past div" would only cost the browser time (benchmarks/RESULTS.md)
            assert axis.ticklabeloverflow == "allow", name
    assert len(_axes(ours[1])) == 4


def test_the_chosen_n_is_marked_on_the_suppression_curves():
    t, s2 = 21, 31.45
    curves = analysis.suppression_curves(t, s2)
    v = analysis.value_at(10, t, s2)
    fig = charts.suppression_probability(curves, t, n=10, at_n=v)
    rings = [tr for tr in fig.data if list(tr.x) == [10]]
    assert len(rings) == 1 and rings[0].y[0] == pytest.approx(v["P(suppressed)"])
    assert any(a.text == "n = 10" for a in fig.layout.annotations)
    assert any(s.x0 == 10 for s in fig.layout.shapes)
    fig = charts.release_bias(curves, t, n=10, at_n=v)
    assert len([tr for tr in fig.data if list(tr.x) == [10]]) == 3
    frac = charts.release_bias(curves, t, True, n=10, at_n=v)
    assert any(list(tr.x) == [pytest.approx(10 / 21)] for tr in frac.data)


def test_flow_diagram_is_compact_enough_to_read():
    dot = charts.flow_dot(production_2020())
    sizes = [int(x) for x in re.findall(r"fontsize=(\d+)", dot)]
    assert min(sizes) >= 11
    # no label line longer than 20 characters keeps the left-to-right drawing about 3:1
    labels = re.findall(r'label="([^"]*)"', dot)
    assert max(len(line) for lab in labels for line in lab.split("\\n")) <= 20


def test_accuracy_chart_rows_are_sorted_and_plainly_labelled():
    acc = pd.DataFrame([
        {"geo_level": g, "iteration_level": it, "table": k, "true_size": size, "counts_compared": 5, "trials": 1,
         "p95_abs_error": 9, "mean_error": 0.1, "predicted_moe95_exact": 11, "predicted_moe95_design_bound": 10}
        for g in ("TRACT", "USA", "COUNTY") for it in (2, 1) for k in ("total (stat level 0)", "cell of sex x age4")
        for size in ("100-999", "1-9", "10-99")
    ])
    plain = analysis.accuracy_plain(acc)
    assert "p95_abs_error" not in plain.columns and "Observed 95th percentile of |error|" in plain.columns
    assert list(dict.fromkeys(plain["Geography"])) == ["USA", "COUNTY", "TRACT"]
    view = analysis.accuracy_view(acc, "total (stat level 0)")
    assert len(view) == 18
    assert list(view["Groups"][:3]) == ["USA Regional, size 1-9", "USA Regional, size 10-99",
                                        "USA Regional, size 100-999"]
    # kinds in the report's order: totals, then T1 of tables, cells and marginals
    assert list(dict.fromkeys(plain["Published count"])) == ["total (stat level 0)", "cell of sex x age4"]
    fig = charts.accuracy(view)
    assert list(fig.data[0].y) == list(view["Groups"])
    assert fig.data[0].name.startswith("observed") and "_" not in fig.data[0].name + fig.data[1].name


def test_the_summary_is_the_words_a_reader_sees_and_names_stay_as_typed():
    """Plan names reach plotly HTML-escaped (scenario_charts); the summary gives them back
    exactly as typed, without plotly's own markup, and shown through `plain` nothing in
    it can become a link or an image (issue 21 item 3)."""
    from ui.committee import scenario_charts
    from ui.core.plaintext import plain

    name = "![x](http://attacker.invalid/p.png) <b>bold</b> & co"
    fig = go.Figure(go.Bar(x=["a"], y=[1], name=scenario_charts._text(name)))
    fig.update_layout(title="Budget<br>by level", xaxis_title="level", yaxis_title="<b>ρ</b>")
    text = charts.summary(fig)
    assert name in text and "Budget by level" in text and ": ρ against level" in text
    assert "&lt;" not in text and "<br>" not in text
    shown = plain(text)
    assert "](" not in shown and "![" not in shown  # escaped: no Markdown link or image syntax left


def test_the_ten_geography_levels_of_a_run_all_look_different():
    """Truth against release and the error histogram: every level of a run has its own
    look (a Puerto Rico level: its US counterpart's colour, crosses or hatched bars)."""
    geos = ["USA", "STATE", "COUNTY", "TRACT", "PLACE", "AIANNH", "PR-STATE", "PR-COUNTY", "PR-TRACT", "PR-PLACE"]
    df = pd.DataFrame({"Geography": geos, "True": range(10), "Released": range(10), "Error": [0] * 10,
                       "Region": ["1"] * 10, "Iteration": ["x"] * 10})
    points = [t for t in charts.truth_vs_release(df).data if t.name in geos]
    looks = {(t.marker.color, t.marker.symbol) for t in points}
    assert len(points) == len(looks) == len(geos)
    bars = charts.error_histogram(df).data
    looks = {(t.marker.color, t.marker.pattern.shape) for t in bars}
    assert len(bars) == len(looks) == len(geos)
    by = {t.name: t for t in bars}
    assert by["PR-TRACT"].marker.color == by["TRACT"].marker.color and by["PR-TRACT"].marker.pattern.shape == "/"
