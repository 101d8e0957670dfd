"""The "Learn" lessons in a real browser (Debian's Chromium, Playwright): a learner walks
lessons 1 to 6 by their "Next" links at 1280 x 800, answers revealed, then again in the
presenter view; on every lesson nothing is cut off and no two elements overlap, and in
the presenter view body text is at least 20 px, charts at least 600 px tall, and the
sidebar's plan summary is hidden (each lesson pictured into $SAFETAB_SCREENSHOTS when set,
see tests/e2e/test_browser.py). It uses the worker's server of the shipped app and the
module's Chromium (tests/e2e/conftest.py): a class changes the plan of its own session
only, which is the test's own browser context."""

from __future__ import annotations

import pytest

from tests.e2e.browser import new_context
from tests.e2e.test_browser import SCREENSHOTS_WANTED, SHOTS, _nothing_cut_off, _settle
from ui.learn import classroom, lessons

pytestmark = pytest.mark.e2e


#: Elements of the page that overlap each other (leaf element containers of the main
#: area, compared pairwise; a container inside another is not compared with it).
OVERLAPS = """() => {
  const main = document.querySelector('[data-testid="stMain"]');
  const all = [...main.querySelectorAll('[data-testid="stElementContainer"]')];
  const leaves = all.filter(e => !e.querySelector('[data-testid="stElementContainer"]'))
    .map(e => ({e, r: e.getBoundingClientRect()})).filter(x => x.r.width > 1 && x.r.height > 1);
  const bad = [];
  for (let a = 0; a < leaves.length; a++) for (let b = a + 1; b < leaves.length; b++) {
    const A = leaves[a].r, B = leaves[b].r;
    if (A.left < B.right - 2 && B.left < A.right - 2 && A.top < B.bottom - 2 && B.top < A.bottom - 2)
      bad.push([a, b].map(i => (leaves[i].e.innerText || '').trim().slice(0, 40)).join(' / '));
  }
  return bad;
}"""

#: The smallest font size of the body text of the main area (paragraphs, list items and
#: captions with text), and the heights of its charts.
SIZES = """() => {
  const main = document.querySelector('[data-testid="stMain"]');
  const md = '[data-testid="stMarkdown"]';
  const texts = [...main.querySelectorAll(md + ' p, ' + md + ' li, [data-testid="stCaptionContainer"] p')]
    .filter(e => (e.innerText || '').trim().length > 0 && !e.closest('[data-testid="stHeading"]'));
  const fonts = texts.map(e => parseFloat(getComputedStyle(e).fontSize));
  const charts = [...main.querySelectorAll('[data-testid="stPlotlyChart"] .main-svg')]
    .map(s => s.getBoundingClientRect().height);
  return {font: Math.min(...fonts), charts};
}"""


def _check(page, where: str) -> None:
    _nothing_cut_off(page, where)
    overlaps = page.evaluate(OVERLAPS)
    assert not overlaps, f"{where}: overlapping: {overlaps}"


def _walk(page, presenter: bool) -> None:
    """Lessons 1 to 6 by the Next links, each checked with its answer shown."""
    tag = "presenter" if presenter else "normal"
    for lesson in lessons.LESSONS:
        page.get_by_text(f"Lesson {lesson.number}: {lesson.title}").first.wait_for()
        _settle(page)
        assert page.url.rstrip("/").endswith(lesson.url_path)
        page.get_by_text("Show the answer").first.click()
        page.locator("[data-testid='stAlertContentSuccess']").first.wait_for()
        _settle(page)
        _check(page, f"lesson {lesson.number}, {tag}, 1280 x 800")
        sizes = page.evaluate(SIZES)
        summary = page.locator("[data-testid='stSidebar']").get_by_text("Current plan:")
        if presenter:
            assert sizes["font"] >= classroom.PRESENTER_TEXT_PX, (lesson.number, sizes)
            assert all(h >= classroom.PRESENTER_CHART_PX for h in sizes["charts"]), (lesson.number, sizes)
            assert summary.count() == 0
        else:
            assert summary.count() == 1
        if SCREENSHOTS_WANTED:
            SHOTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(SHOTS / f"{lesson.url_path}_{tag}.png"), full_page=True)
        _, nxt = lessons.neighbours(lesson)
        if nxt is not None:
            page.get_by_role("link", name=f"Next: {nxt.nav_title}").click()


def test_lessons_1_to_6_at_1280_by_800_and_in_the_presenter_view(server, browser):
    context = new_context(browser, viewport={"width": 1280, "height": 800})
    page = context.new_page()
    page.set_default_timeout(60_000)
    try:
        # the Overview's "Start the class" opens lesson 1 on the 2020 plan
        page.goto(server)
        page.get_by_role("link", name="Start the class").first.click()
        page.get_by_text("Class in progress").first.wait_for()
        _walk(page, presenter=False)
        # the presenter view, kept for the session: switched on once, on the last lesson
        page.locator("[data-testid='stSidebar']").get_by_text("Presenter view").click()
        _settle(page)
        page.get_by_role("link", name=lessons.LESSONS[0].nav_title).first.click()
        _walk(page, presenter=True)
        page.locator("[data-testid='stSidebar']").get_by_role("button", name="End the class").click()
        page.get_by_text("The class has ended").first.wait_for()
        _settle(page)
        # the overlap check finds an overlap when there is one: the goal moved onto the title
        assert not page.evaluate(OVERLAPS)
        page.evaluate("""() => {const g = [...document.querySelectorAll('[data-testid="stElementContainer"]')]
            .find(e => (e.innerText || '').startsWith('Goal.')); g.style.transform = 'translateY(-40px)';}""")
        assert page.evaluate(OVERLAPS)
    finally:
        context.close()
