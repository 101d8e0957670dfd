"""The "Cell suppression" page (Compare methods) as a user opens it, on the sample data."""

from __future__ import annotations

import re

from calculators.levels import PopulationGroupLevel
from tests.app.conftest import SAMPLE, frame, metric, needs_sample, open_app, shown, texts
from tests.app.paper_tables import static_table

PAGE = "compare_cell_suppression"


def _groups_at_least(n: int) -> int:
    """COUNTY Regional groups of the sample with at least n persons, counted by the engine."""
    from calculators.presets import production_2020
    from engine.run import prepare

    prepared = prepare(SAMPLE / "params", SAMPLE / "data", config=production_2020().updated(reader="csv"))
    return int((prepared.counts(PopulationGroupLevel("COUNTY", 1)).totals() >= n).sum())


@needs_sample
def test_page_shows_both_methods_the_grid_the_audit_and_a_verdict():
    at = open_app(PAGE, timeout=600)
    assert at.title[0].value == "Cell suppression"
    t = texts(at)
    assert "The question." in t and "Massell" in t and "seeded study" in t
    assert metric(at, "Groups with a table") == f"{_groups_at_least(100):,}"
    summary = frame(at, "Measure", "Legacy cell suppression", "SafeTab-P")
    assert "Withheld counts the audit recovers exactly" in set(summary["Measure"])
    audit = frame(at, "Lowest possible", "Highest possible", "Why withheld")
    assert len(audit) > 0 and (audit["Lowest possible"] <= audit["Highest possible"]).all()
    assert at.success and "Legacy suppression publishes exact tables" in at.success[0].value
    labels = [b.label for b in at.get("download_button")]
    assert "cell_suppression_audit.csv" in labels and any("cell_suppression.zip" in lab for lab in labels)
    # the data's own plan by default, named with the data beside the verdict; SafeTab-P publishes tables
    assert at.radio(key="cs_plan").value == "data"
    assert any(shown(c.value) == "Data: the shipped synthetic sample (50,000 persons, sample_data/). Plan: sample-data "
                                 "plan (the data's own config.json)." for c in at.caption)
    safetab_tables = [m.value for m in at.metric if m.label == "Groups with a table"][1]
    assert int(safetab_tables.replace(",", "")) > 0
    assert not any("SafeTab-P publishes" in w.value for w in at.warning)  # no "publishes nothing" words here
    # where the solver withheld parts of the tables whole (as it does on the sample), the page says how
    # many counts, in how many parts, and why; never "did not finish in time" when time was not the cause
    notes = "\n".join(shown(w.value) for w in at.warning)
    assert re.search(r"[1-9][\d,]* counts of this level were withheld whole", notes), notes
    assert re.search(r"[1-9]\d* connected parts?: ", notes) and "in time" not in notes
    # the 2020 production plan, one click away: its thresholds publish no table here, said in words
    at.radio(key="cs_plan").set_value("production").run(timeout=600)
    assert [m.value for m in at.metric if m.label == "Groups with a table"][1] == "0"
    warning = "\n".join(w.value for w in at.warning)
    assert "Under 2020 production plan, SafeTab-P publishes no sex by age table for any group of this level" in warning
    assert "set for a nation of 330 million persons" in warning and "Choose the data's own plan" in warning


@needs_sample
def test_a_higher_threshold_publishes_fewer_groups():
    at = open_app(PAGE, timeout=600)
    at.text_input(key="cs_minpop").input("1000").run(timeout=600)
    assert not at.exception, [e.value for e in at.exception]
    assert metric(at, "Groups with a table") == f"{_groups_at_least(1000):,}"
    summary = frame(at, "Measure", "Legacy cell suppression", "SafeTab-P").set_index("Measure")
    assert summary.loc["Groups with a published total", "Legacy cell suppression"].startswith(
        f"{_groups_at_least(1000):,} (")


@needs_sample
def test_the_papers_own_numbers_and_the_capacity_model():
    """Massell's statements checked on the page, and the capacity model a user can switch:
    the summary says which one the legacy release used."""
    at = open_app(PAGE, timeout=600)
    paper = static_table(at, "The paper says").set_index("The paper says")
    assert paper.loc["Audit bounds: each value between 0 and the grand total", "Computed here"].startswith(
        "largest upper end 17")
    assert paper.loc["Capacity = the cell's value: zero cells protect nothing", "Computed here"].startswith("0 (value)")
    assert paper.loc["Refinement run: a subset of the first run's complements", "Computed here"].startswith("4 → 2")
    assert (paper.drop("Backtracking across linked tables (60 → 100 units)")["Match"] == "yes").all()
    summary = frame(at, "Measure", "Legacy cell suppression", "SafeTab-P").set_index("Measure")
    assert "Massell's capacity" in summary.loc["Complementary suppression", "Legacy cell suppression"]
    at.selectbox(key="cs_capacity").set_value("unbounded").run(timeout=600)
    assert not at.exception, [e.value for e in at.exception]
    summary = frame(at, "Measure", "Legacy cell suppression", "SafeTab-P").set_index("Measure")
    assert "unbounded capacity" in summary.loc["Complementary suppression", "Legacy cell suppression"]
    assert any(b.label == "paper_numbers.csv" for b in at.get("download_button"))
