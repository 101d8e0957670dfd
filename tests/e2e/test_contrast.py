"""Contrast as displayed (issue 40 item 8): every caption and paragraph of the app's pages
renders at 4.5:1 or more against what is behind it, measured in the browser.

The colours are read from the rendered page (Chromium via Playwright), not from the theme:
each text's computed colour, its alpha times the opacity of the element and of every
ancestor, over the backgrounds of the ancestors whose box is behind it, composited from
the page down (WCAG 2 relative luminance). Large text (24 px, or 18.66 px bold) needs 3:1.
Text that is not shown (opacity 0, hidden) and disabled controls are exempt (WCAG 1.4.3).
Streamlit draws captions at opacity 0.6, which made the app's caption grey 2.8:1 as displayed
while the theme's colours alone give 7.1:1: that is what this test is there to catch.
"""

from __future__ import annotations

import pytest

from tests.e2e.browser import new_context
from tests.e2e.test_browser import _go

pytestmark = pytest.mark.e2e

#: The pages whose texts are measured: the SafeTab-P section (captions and paragraphs of every kind). The
#: measure itself is checked after the last (`probe_opacity`).
PAGES = ("", "budget", "adaptive", "suppression", "scenarios", "memo", "glossary")

#: Every visible text of the page with its contrast as displayed (module docstring).
MEASURE = """() => {
  const rgba = c => { const m = c.match(/rgba?\\(([^)]+)\\)/); if (!m) return null;
    const p = m[1].split(',').map(parseFloat); return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1]; };
  const lum = c => { const f = v => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); };
    return 0.2126 * f(c[0]) + 0.7152 * f(c[1]) + 0.0722 * f(c[2]); };
  const over = (top, under, a) => [0, 1, 2].map(i => top[i] * a + under[i] * (1 - a));
  const found = [], done = new Set();
  const walk = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  while (walk.nextNode()) {
    const el = walk.currentNode.parentElement, text = walk.currentNode.textContent.trim();
    if (!text || !el || done.has(el)) continue;
    done.add(el);
    if (el.closest('svg, script, style, noscript, [aria-hidden="true"], [disabled], [aria-disabled="true"]')) continue;
    const box = el.getBoundingClientRect();
    const style = getComputedStyle(el);
    if (box.width < 1 || box.height < 1 || style.visibility === 'hidden') continue;
    const cx = box.left + box.width / 2, cy = box.top + box.height / 2;
    let opacity = 1; const layers = [];
    for (let e = el; e; e = e.parentElement) {
      const s = getComputedStyle(e);
      opacity *= parseFloat(s.opacity);
      const b = e.getBoundingClientRect();
      const behind = e === el || e === document.body || e === document.documentElement ||
                     (cx >= b.left && cx <= b.right && cy >= b.top && cy <= b.bottom);
      if (behind) layers.push(rgba(s.backgroundColor));
    }
    if (opacity === 0) continue;
    let bg = [255, 255, 255];
    for (const c of layers.reverse()) if (c && c[3] > 0) bg = over(c, bg, c[3]);
    const fg0 = rgba(style.color);
    if (!fg0) continue;
    const fg = over(fg0, bg, fg0[3] * opacity);
    const hi = Math.max(lum(fg), lum(bg)), lo = Math.min(lum(fg), lum(bg));
    const size = parseFloat(style.fontSize), bold = parseInt(style.fontWeight) >= 700;
    found.push({text: text.slice(0, 70), ratio: (hi + 0.05) / (lo + 0.05), large: size >= 24 || (bold && size >= 18.66),
                color: style.color, opacity: opacity, where: (el.closest('[data-testid]') || {dataset: {}}).dataset.testid || el.tagName});
  }
  return found;
}"""


def probe_opacity(page) -> list[str]:
    """The measure is of what is displayed: the caption colour at Streamlit's own opacity 0.6
    (what captions had before) measures 2.8:1, at full opacity over 7:1. Two probe paragraphs
    are added to the open page (it is not measured again after them). Returns what is wrong."""
    page.evaluate("""() => {
      for (const [id, o] of [['faint', '0.6'], ['full', '1']]) {
        const d = document.createElement('p'); d.textContent = 'probe ' + id; d.dataset.testid = id;
        d.style.color = 'rgb(85, 88, 102)'; d.style.opacity = o;
        document.querySelector('[data-testid="stMainBlockContainer"]').appendChild(d);
      }
    }""")
    texts = {t["where"]: t["ratio"] for t in page.evaluate(MEASURE)}
    bad = []
    if texts["faint"] != pytest.approx(2.8, abs=0.15):
        bad.append(f"the measure does not see opacity: the caption grey at opacity 0.6 measures {texts['faint']:.2f}:1, "
                   "expected 2.8:1")
    if not texts["full"] > 7.0:
        bad.append(f"the caption grey at full opacity measures {texts['full']:.2f}:1, expected over 7:1")
    return bad


def page_problems(page, where: str) -> list[str]:
    """The open page's texts measured (MEASURE): over 20 of them, captions among them, and
    none under its ratio. Returns what is wrong, each named by `where`."""
    texts = page.evaluate(MEASURE)
    captions = [t for t in texts if t["where"] == "stCaptionContainer"]
    problems = []
    if not (len(texts) > 20 and captions):
        problems.append(f"{where}: the page's texts were not measured, captions among them "
                        f"({len(texts)} texts, {len(captions)} captions)")
    bad = [t for t in texts if t["ratio"] < (3.0 if t["large"] else 4.5)]
    problems += [f"{where}: {t['ratio']:.2f}:1 {t['where']} {t['color']} x opacity {t['opacity']:.2f}: "
                 f"{t['text']!r}" for t in bad]
    return problems


def test_every_text_is_readable_as_displayed_and_the_measure_sees_opacity(page_tour, request):
    """Every page of PAGES, opened once each in one window, the first by its address and the
    others by their sidebar links as a user goes (one page load, not one per page: a load
    costs Chromium seconds of CPU), has over 20 texts measured, captions among them, and
    none under its ratio (`page_problems`); then the measure itself is checked
    (`probe_opacity`). Every failure names its page.

    The page-fit test (tests/e2e/test_browser.py) opens every page of PAGES too, by its sidebar
    link, and measures them there at 1280 px (`page_tour["contrast"]`): this test, of the same
    group of browser tests and collected after it, then reads that measure instead of opening
    the pages a second time. Run without it (alone, or before it), it opens them itself."""
    problems = page_tour.get("contrast")
    if problems is None:
        server, browser = request.getfixturevalue("server"), request.getfixturevalue("browser")
        context = new_context(browser, viewport={"width": 1280, "height": 800})
        page = context.new_page()
        page.set_default_timeout(60_000)
        problems = []
        try:
            for address in PAGES:
                _go(page, server, address)
                problems += page_problems(page, f"page /{address}")
            problems += probe_opacity(page)
        finally:
            context.close()
    assert not problems, "\n".join(problems)
