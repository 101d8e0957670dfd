"""The "Cell suppression" page (Compare methods) as a user opens it, on the sample data."""

from __future__ import annotations

import base64
import functools
import json
import re

import numpy as np
import pandas as pd

from calculators.levels import PopulationGroupLevel
from tests.app.conftest import SAMPLE, STUDIES, frame, metric, needs_sample, open_app, shown, texts
from tests.app.paper_tables import static_table

pytestmark = STUDIES  # the page's study made once, on one worker (tests/app/conftest.py)

PAGE = "compare_cell_suppression"


def _groups_at_least(n: int) -> int:
    """COUNTY Regional groups of the sample with at least n persons, counted by the engine."""
    return int((_sample_groups()["size"] >= n).sum())


@functools.lru_cache(maxsize=1)
def _sample_groups() -> pd.DataFrame:
    """Every COUNTY Regional group of the sample: region, iteration code, true size (the engine's counts)."""
    from calculators.presets import production_2020
    from engine.run import prepare

    lvl = PopulationGroupLevel("COUNTY", 1)
    prepared = prepare(SAMPLE / "params", SAMPLE / "data", config=production_2020().updated(reader="csv"))
    regions = prepared.inputs.geography.regions["COUNTY"].astype(str)
    codes = prepared.catalog.codes("COUNTY", 1).astype(str)
    totals = prepared.counts(lvl).totals()
    g = range(len(totals))
    return pd.DataFrame({"Region": [regions[i // len(codes)] for i in g],
                         "Iteration code": [codes[i % len(codes)] for i in g], "size": totals})


def _published_from_the_page(at, min_population: int) -> pd.DataFrame:
    """Every group with whether its total is published, read from what the page shows: a
    group reaching the minimum population has a published total unless the page's audit
    (cell_suppression_audit.csv) lists its Total as withheld; and whether its every sex by
    age cell is withheld there."""
    audit = frame(at, "Lowest possible", "Highest possible", "Why withheld")
    audit = audit[(audit.Geography == "COUNTY") & (audit["Why withheld"] != "group below threshold")]
    key = ["Region", "Iteration code"]
    d_total = audit[audit.Count == "Total"][key].assign(d_total=True)
    cells = audit[~audit.Count.isin(["Male, all ages", "Female, all ages", "Total"])].groupby(key).size()
    n_cells = 2 * int(at.selectbox(key="cs_ages").value)
    all_cells = cells[cells == n_cells].reset_index()[key].assign(all_cells=True)
    g = _sample_groups().merge(d_total, on=key, how="left").merge(all_cells, on=key, how="left")
    above = g["size"] >= min_population
    g["total"] = above & g.d_total.isna()
    g["table"] = above & g.all_cells.isna()
    return g


def _values(v) -> list:
    """A plotly JSON array as a list (numbers may come as a base64 typed array)."""
    if isinstance(v, dict) and "bdata" in v:
        return np.frombuffer(base64.b64decode(v["bdata"]), dtype=v["dtype"]).tolist()
    return list(v)


def _size_chart(at) -> dict:
    """The by-size chart's legacy bars: {trace name: {size label: percent}}."""
    for c in at.get("plotly_chart"):
        spec = json.loads(c.proto.spec)
        if "true size" in spec["layout"]["title"]["text"]:
            return {t["name"]: dict(zip(_values(t["x"]), _values(t["y"]))) for t in spec["data"]
                    if t["name"].startswith("Legacy")}
    raise AssertionError("no chart by group size")


@needs_sample
def test_a_group_whose_total_is_withheld_is_not_counted_as_published():
    """On the sample, the solver fallback withholds whole tables of groups above the
    threshold, totals included (D in "One table"). The summary, the metric, the chart and
    the verdict count a group as published only when its total is, as a reader of the
    page's own audit finds; with minimum population 0, the verdict's "N of M groups with
    persons" stays within the M groups."""
    at = open_app(PAGE, timeout=600)
    g = _published_from_the_page(at, 100)
    assert ((g["size"] >= 100) & ~g.total).any(), "the case under test: a D total above the threshold"
    n = int(g.total.sum())
    summary = frame(at, "Measure", "Legacy cell suppression", "SafeTab-P").set_index("Measure")
    assert summary.loc["Groups with a published total", "Legacy cell suppression"] == f"{n:,} ({100 * n / len(g):.1f}%)"
    persons = int(g.loc[g.total, "size"].sum())
    assert summary.loc["Persons in groups with a published total", "Legacy cell suppression"].startswith(
        f"{persons:,} of ")
    assert metric(at, "Groups with a table") == f"{int(g.table.sum()):,}"
    verdict = at.success[0].value
    with_persons = g[g["size"] > 0]
    assert (f"publishes an exact total for {int(with_persons.total.sum()):,} of the {len(with_persons):,} groups "
            "with persons") in verdict
    assert "by the solver fallback" in verdict
    bars = _size_chart(at)
    for label, lo, hi in (("1-9 persons", 1, 9), ("10-99 persons", 10, 99), ("100-999 persons", 100, 999),
                          ("1,000+ persons", 1000, None)):
        in_bin = g[(g["size"] >= lo) & ((g["size"] <= hi) if hi else True)]
        assert bars["Legacy cell suppression: total"][label] == round(100 * in_bin.total.mean(), 1), label
        assert bars["Legacy cell suppression: sex by age table"][label] == round(100 * in_bin.table.mean(), 1), label
    # minimum population 0: every group reaches it; the verdict counts within the groups with persons.
    # With 4 age bins (10 cells a table, not 48): the same point, in a study of 1,044 LPs, not 50,766.
    at.selectbox(key="cs_ages").set_value(4)
    at.text_input(key="cs_minpop").input("0").run(timeout=600)
    assert not at.exception, [e.value for e in at.exception]
    g = _published_from_the_page(at, 0)
    with_persons = g[g["size"] > 0]
    published = int(with_persons.total.sum())
    assert published <= len(with_persons)
    assert (f"publishes an exact total for {published:,} of the {len(with_persons):,} groups with persons"
            in at.success[0].value)
    summary = frame(at, "Measure", "Legacy cell suppression", "SafeTab-P").set_index("Measure")
    n = int(g.total.sum())
    assert summary.loc["Groups with a published total", "Legacy cell suppression"] == f"{n:,} ({100 * n / len(g):.1f}%)"


@needs_sample
def test_page_shows_both_methods_the_grid_the_audit_and_a_verdict():
    at = open_app(PAGE, timeout=600)
    assert at.title[0].value == "Cell suppression"
    t = texts(at)
    assert "The question." in t and "Massell" in t and "seeded study" in t
    assert metric(at, "Groups with a table") == f"{int(_published_from_the_page(at, 100).table.sum()):,}"
    summary = frame(at, "Measure", "Legacy cell suppression", "SafeTab-P")
    assert "Withheld counts the audit recovers exactly" in set(summary["Measure"])
    audit = frame(at, "Lowest possible", "Highest possible", "Why withheld")
    assert len(audit) > 0 and (audit["Lowest possible"] <= audit["Highest possible"]).all()
    assert at.success and "Legacy suppression publishes an exact total for" in at.success[0].value
    labels = [b.label for b in at.get("download_button")]
    assert "cell_suppression_audit.csv" in labels and any("cell_suppression.zip" in lab for lab in labels)
    assert "verdict.txt" in labels  # the verdict with its data, plan and seed, in the zip too
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
    legacy = summary.set_index("Measure")["Legacy cell suppression"]
    at.radio(key="cs_plan").set_value("production").run(timeout=600)
    # the legacy release reads the counts, not the plan: it is the one made above, taken again (its
    # computing time too), not solved again
    after = frame(at, "Measure", "Legacy cell suppression", "SafeTab-P").set_index("Measure")["Legacy cell suppression"]
    assert after.to_dict() == legacy.to_dict() and "Computing time" in legacy.index
    assert [m.value for m in at.metric if m.label == "Groups with a table"][1] == "0"
    warning = "\n".join(w.value for w in at.warning)
    assert "Under 2020 production plan, SafeTab-P publishes no sex by age table for any group of this level" in warning
    assert "set for a nation of 330 million persons" in warning and "Choose the data's own plan" in warning


@needs_sample
def test_a_higher_threshold_publishes_fewer_groups():
    at = open_app(PAGE, timeout=600)
    at.text_input(key="cs_minpop").input("1000").run(timeout=600)
    assert not at.exception, [e.value for e in at.exception]
    g = _published_from_the_page(at, 1000)
    assert metric(at, "Groups with a table") == f"{int(g.table.sum()):,}"
    assert int(g.total.sum()) <= _groups_at_least(1000)
    summary = frame(at, "Measure", "Legacy cell suppression", "SafeTab-P").set_index("Measure")
    assert summary.loc["Groups with a published total", "Legacy cell suppression"].startswith(
        f"{int(g.total.sum()):,} (")


@needs_sample
def test_the_papers_own_numbers_and_the_capacity_model():
    """Massell's statements checked on the page, and the capacity model a user can switch:
    the summary says which one the legacy release used."""
    at = open_app(PAGE, timeout=600)
    paper = static_table(at, "The paper says").set_index("The paper says")
    assert paper.loc["Audit bounds: each value between 0 and the grand total", "Computed here"].startswith(
        "this example's grand total 17: largest upper end 17")
    assert paper.loc["Capacity = the cell's value: zero cells protect nothing", "Computed here"].startswith("0 (value)")
    assert paper.loc["Refinement run: a subset of the first run's complements", "Computed here"].startswith("4 → 2")
    assert (paper.drop("Backtracking across linked tables (60 → 100 units)")["Match"] == "yes").all()
    summary = frame(at, "Measure", "Legacy cell suppression", "SafeTab-P").set_index("Measure")
    assert "Massell's capacity" in summary.loc["Complementary suppression", "Legacy cell suppression"]
    # with 4 age bins (10 cells a table, not 48): the second study takes 360 LPs, not 16,054
    at.selectbox(key="cs_ages").set_value(4)
    at.selectbox(key="cs_capacity").set_value("unbounded").run(timeout=600)
    assert not at.exception, [e.value for e in at.exception]
    summary = frame(at, "Measure", "Legacy cell suppression", "SafeTab-P").set_index("Measure")
    assert "unbounded capacity" in summary.loc["Complementary suppression", "Legacy cell suppression"]
    assert any(b.label == "paper_numbers.csv" for b in at.get("download_button"))
