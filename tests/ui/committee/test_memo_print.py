"""The comparison memo prints (issue 40 item 6): a memo of 3 plans read back from its PDF
with pypdf: each value drawn once, no page holding only a heading or a word, at most 20
pages; the two-panel charts' titles whole and apart."""

from __future__ import annotations

import io
import os
import re

import pytest

from calculators import budget
from calculators.levels import PopulationGroupLevel
from calculators.presets import production_2020
from ui.committee import images, memo, memo_pdf
from ui.committee.comparison import Plan
from ui.core import planner

COUNTY2 = PopulationGroupLevel("COUNTY", 2)
#: One worker (pytest-xdist) takes all the memo tests: the browser drawing the charts
#: (conftest's `renderer`) and the memos printed once per module are made once, not on each worker.
pytestmark = pytest.mark.xdist_group("memo")


def _plans() -> list[Plan]:
    prod = production_2020()
    return [Plan("2020 production plan", prod, planner.production_targets()),
            Plan("Plan B", prod.updated(max_race_codes=3).with_rho(COUNTY2, 0.3), planner.production_targets()),
            Plan("Plan C", prod.updated(privacy_budget_p_stage_1_fraction=0.2), planner.production_targets())]


@pytest.fixture(scope="module")
def printed(renderer):
    from pypdf import PdfReader

    ok, why = images.available()
    if not ok:
        if os.environ.get("SAFETAB_REQUIRE_BROWSER") == "1":
            pytest.fail(f"SAFETAB_REQUIRE_BROWSER=1 but {why}", pytrace=False)
        pytest.skip(why)
    m = memo.comparison_memo(_plans(), planner.EXACT, 1e-10)
    reader = PdfReader(io.BytesIO(memo_pdf.render(m, paper="US Letter", renderer=renderer)))
    return m, reader, [p.extract_text() for p in reader.pages]


def _lines_after(pages: list[str], title: str) -> list[str]:
    lines = "\n".join(pages).splitlines()
    i = next(k for k, line in enumerate(lines) if line.strip() == title)
    return lines[i + 1:]


def test_three_plans_print_in_at_most_20_pages(printed):
    _m, reader, _pages = printed
    assert len(reader.pages) <= 20


def test_each_compared_value_is_drawn_once(printed):
    """A highlighted (differing) cell was drawn twice, in regular and bold, slightly apart:
    its text came back twice. Now each row reads back as its values, once each."""
    _m, _reader, pages = printed
    moe = [int(budget.moe_for_rho(rho, S, g, exact=True))
           for rho, S, g in ((0.159, 9, 0.1), (0.3, 4, 0.1), (0.159, 9, 0.2))]
    rows = _lines_after(pages, "MOE exact")
    county = next(line for line in rows if line.startswith("COUNTY Detailed"))
    assert county.split() == ["COUNTY", "Detailed", *map(str, moe), "yes"]
    budgets = _lines_after(pages, "Budget ρ / ε")
    county = next(line for line in budgets if line.startswith("COUNTY Detailed"))
    assert county.split() == ["COUNTY", "Detailed", "0.159", "0.3", "0.159", "yes"]
    # no number of the comparison tables is doubled anywhere ("11 11", "1111" from two drawings)
    for line in rows[:40]:
        tokens = line.split()
        assert not any(a == b and re.fullmatch(r"[\d,.]+", a) and a not in ("0",) and tokens.count(a) > 3
                       for a, b in zip(tokens, tokens[1:])), line


def test_no_page_holds_only_a_heading_or_a_word(printed):
    _m, reader, pages = printed
    for k, (page, text) in enumerate(zip(reader.pages, pages, strict=True)):
        lines = [line for line in text.splitlines() if line.strip()]
        body = [line for line in lines if "SafeTab-P Studio" not in line]  # the footer
        pictures = len(page.images)
        assert pictures or len(body) >= 4, (k + 1, body)
        assert pictures or len(" ".join(body)) >= 200, (k + 1, body)


def test_two_panel_charts_keep_their_titles_whole_and_apart(printed):
    m, _reader, _pages = printed
    panels = [f for f in m.figures() if len(f.fig.layout.annotations) >= 2 and f.half]
    assert len(panels) >= 4  # adaptive tables and suppression of several level groups
    for f in panels:
        assert not f.fig.layout.title.text  # the memo's heading above the picture names it
        x1, x2 = f.fig.layout.xaxis.domain, f.fig.layout.xaxis2.domain
        assert x2[0] - x1[1] >= 0.2  # room between the panels for the right one's y-axis title
        width_px = memo.HALF_PX * (x1[1] - x1[0])
        titles = [a.text for a in f.fig.layout.annotations[:2]] + [
            f.fig.layout.yaxis.title.text, f.fig.layout.yaxis2.title.text]
        for t in titles:
            for line in t.split("<br>"):
                assert len(line) <= memo.PANEL_CHARS and 7.5 * len(line) <= width_px, line
