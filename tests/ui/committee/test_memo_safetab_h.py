"""The decision memo shows the SafeTab-H plan kept with a plan (issue 45 item 4)."""

from __future__ import annotations

import io
from datetime import datetime, timezone

import pytest

from calculators.presets import production_2020
from calculators.safetab_h import budget_key, cell_moe, household_stability, production_2020_h
from ui.committee import images, memo, memo_html, memo_pdf
from ui.committee.comparison import Plan
from ui.core import planner
from ui.safetab.safetab_h import level_name

NOW = datetime(2026, 5, 4, 9, 30, tzinfo=timezone.utc)


@pytest.fixture(scope="module")
def h_plan():
    base = production_2020_h()
    level = base.levels()[0]
    return base.updated(**{budget_key("t3", level): 0.37}), level


@pytest.fixture
def memo_with_h(h_plan, monkeypatch):
    monkeypatch.setattr(images, "available", lambda: (False, "no Chrome or Chromium was found"))  # no pictures: fast
    plan = Plan("Plan H", production_2020(), planner.production_targets())
    return memo.plan_memo(plan, planner.EXACT, 1e-10, now=NOW, h_config=h_plan[0])


def test_the_memo_has_the_safetab_h_budgets_and_cell_moes(memo_with_h, h_plan):
    cfg, level = h_plan
    sec = next(s for s in memo_with_h.sections if s.title == memo.H_SECTION)
    df = sec.blocks[1].df
    row = df[(df["Table"] == "T3") & (df["Level"] == level_name(level))].iloc[0]
    S = household_stability(cfg.max_race_codes)
    assert row["Budget"] == 0.37
    assert row["Cell MOE"] == cell_moe(0.37, S, True, cfg.privacy_defn, 1)
    assert row["Total MOE"] == cell_moe(0.37, S, True, cfg.privacy_defn, 5)  # T3's finest level sums 5 cells
    assert row["Total MOE"] > row["Cell MOE"]


def test_the_html_and_pdf_memos_show_the_safetab_h_section(memo_with_h, h_plan):
    from pypdf import PdfReader

    cfg, _ = h_plan
    moe = str(cell_moe(0.37, household_stability(cfg.max_race_codes), True, cfg.privacy_defn, 1))
    doc = memo_html.render(memo_with_h)
    assert memo.H_SECTION in doc and "SafeTab-H budgets and MOEs per query" in doc and "0.37" in doc
    text = "\n".join(p.extract_text() for p in PdfReader(io.BytesIO(memo_pdf.render(memo_with_h))).pages)
    assert memo.H_SECTION in text and "0.37" in text and moe in text


def test_a_memo_without_a_safetab_h_plan_has_no_such_section(monkeypatch):
    monkeypatch.setattr(images, "available", lambda: (False, "no Chrome or Chromium was found"))
    m = memo.plan_memo(Plan("P", production_2020(), planner.production_targets()), planner.EXACT, 1e-10, now=NOW)
    assert all(s.title != memo.H_SECTION for s in m.sections)


def test_a_comparison_memo_shows_the_safetab_h_plan_of_each_plan_that_has_one(h_plan, monkeypatch):
    monkeypatch.setattr(images, "available", lambda: (False, "no Chrome or Chromium was found"))
    plans = [Plan("Reference", production_2020(), planner.production_targets()),
             Plan("With H", production_2020().updated(max_race_codes=4), planner.production_targets(), h_plan[0])]
    m = memo.comparison_memo(plans, planner.EXACT, 1e-10, now=NOW)
    titles = [s.title for s in m.sections]
    assert "With H: " + memo.H_SECTION in titles and "Reference: " + memo.H_SECTION not in titles
    sec = next(s for s in m.sections if s.title == "With H: " + memo.H_SECTION)
    assert 0.37 in set(sec.blocks[1].df["Budget"])
    assert memo.outline(plans) == [memo.SHEET_TITLE] + [t for t in titles if not t.startswith(memo.RUN_SECTION)]


def test_a_plan_that_carries_a_safetab_h_plan_gets_its_section(h_plan, monkeypatch):
    monkeypatch.setattr(images, "available", lambda: (False, "no Chrome or Chromium was found"))
    plan = Plan("Plan H", production_2020(), planner.production_targets(), h_plan[0])
    m = memo.plan_memo(plan, planner.EXACT, 1e-10, now=NOW)
    assert memo.H_SECTION in [s.title for s in m.sections] and memo.outline([plan])[-1] == memo.H_SECTION
