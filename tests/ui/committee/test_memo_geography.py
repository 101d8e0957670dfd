"""Memo page 1's outcome per geography (issue 40, gap 3): each plan's groups with a person that
publish a total / get a table / are suppressed per geography, with its change from the
reference; under the decision sheet on page 1 where it fits, else at the top of page 2 with
a pointer on page 1 (the PDF read back with pypdf; charts left out: no browser needed)."""

from __future__ import annotations

import dataclasses
import io

import pytest

from calculators import plan as pm
from calculators.levels import PopulationGroupLevel
from calculators.presets import production_2020
from calculators.projection import project
from ui.committee import memo, memo_html, memo_pdf
from ui.committee.comparison import Plan
from ui.core import planner
from ui.safetab import projection as pj

COUNTY2 = PopulationGroupLevel("COUNTY", 2)
GEOS = ["Nation", "State", "County", "Tract", "Place", "AIANNH", "Puerto Rico", "All levels"]


@pytest.fixture(scope="module")
def plans():
    ref = Plan("2020 production plan", production_2020(), planner.production_targets())
    b = Plan("Plan B", production_2020().updated(max_race_codes=3).with_rho(COUNTY2, 0.3),
             planner.production_targets())
    return ref, b


@pytest.fixture(scope="module")
def one_memo(plans):
    return memo.plan_memo(plans[1], planner.EXACT, 1e-10)


def _pdf_pages(m: memo.Memo) -> list[str]:
    from pypdf import PdfReader

    data = memo_pdf.render(m, pngs=[None] * len(m.figures()), paper="US Letter")
    return [" ".join(p.extract_text().split()) for p in PdfReader(io.BytesIO(data)).pages]


def test_the_table_is_each_plans_outcome_per_geography_and_its_change(plans):
    ref, b = plans
    (table,) = memo.geography_outcome([b], None, ref)
    df = table.df
    assert list(df["Geography"]) == GEOS
    cell, change = f"{b.name}: published / with a table / suppressed", f"{b.name}: change from {ref.name}"
    assert list(df.columns) == ["Geography", "With a person", cell, change]
    nat = pj.shipped(pj.NATIONAL)
    mine = {r["geography"]: r for r in pm.geography_table(project(b.config, nat))}
    base = {r["geography"]: r for r in pm.geography_table(project(ref.config, nat))}
    county = df[df["Geography"] == "County"].iloc[0]
    keys = ("published", "with_table", "suppressed")
    assert county[cell] == " / ".join(f"{round(mine['County'][k]):,}" for k in keys)
    assert county["With a person"] == f"{round(mine['County']['occupied']):,}"
    # fewer codes and a larger county budget: fewer county groups suppressed than in 2020
    published, _tables, suppressed = county[change].split(" / ")
    assert published.startswith("+") and suppressed.startswith("−")
    fewer = round(base["County"]["suppressed"] - mine["County"]["suppressed"])
    assert int(suppressed[1:].replace(",", "")) == fewer > 0
    # the reference itself has no change column; a comparison memo's reference is its first plan
    (same,) = memo.geography_outcome([ref, b], None, ref)
    assert f"{ref.name}: change from {ref.name}" not in same.df.columns and change in same.df.columns


def test_page_one_keeps_the_sheet_and_points_to_page_two(one_memo):
    m = one_memo
    assert m.sheet_geography and m.sheet_geography[0] in m.tables()
    pages = _pdf_pages(m)
    page1, page2 = pages[0], pages[1]
    # the decision sheet stays whole on page 1: what differs from the reference is its last table
    assert "What differs from the reference plan" in page1 and "race multiplicity r 8 → 3" in page1
    # the per-geography table does not fit under it on page 1 (8 rows): on top of page 2, with a pointer
    assert memo.GEOGRAPHY_POINTER in page1 and memo.GEOGRAPHY_TITLE not in page1
    assert memo.GEOGRAPHY_TITLE in page2
    assert page2.index(memo.GEOGRAPHY_TITLE) < page2.index("A. Parameters")  # before the appendix
    county = m.sheet_geography[0].df.set_index("Geography").loc["County"]
    for value in county:
        assert value in page2  # each figure printed as computed


def test_a_table_that_fits_stays_on_page_one(one_memo):
    """Where the sheet leaves room (here a one-row table), the table is printed on page 1
    under the sheet, and no pointer is printed."""
    small = one_memo.sheet_geography[0]
    m = dataclasses.replace(one_memo, sheet_geography=[
        memo.Table(small.title, small.df[small.df["Geography"] == "Nation"], small.caption)])
    page1 = _pdf_pages(m)[0]
    assert memo.GEOGRAPHY_TITLE in page1 and memo.GEOGRAPHY_POINTER not in page1
    assert page1.index("What differs from the reference plan") < page1.index(memo.GEOGRAPHY_TITLE) \
        < page1.index("Appendix: A. Parameters")


def test_the_html_memo_has_it_in_the_sheet(plans):
    ref, b = plans
    m = memo.comparison_memo([ref, b], planner.EXACT, 1e-10)
    html = memo_html.render(m, svgs=[b"<svg xmlns='http://www.w3.org/2000/svg'/>"] * len(m.figures()))
    sheet = html[html.index('<section id="sheet">'):html.index("</section>")]
    assert memo.GEOGRAPHY_TITLE in sheet and "Puerto Rico" in sheet


def test_no_profile_no_table(plans, monkeypatch):
    ref, b = plans
    monkeypatch.setattr(pj, "shipped", lambda which: None)
    assert memo.geography_outcome([b], None, ref) == []
