"""The app in a real browser: Debian's Chromium driven by Playwright.

Starts `streamlit run app.py` on a free loopback port, opens every page at 1280 and
1920 px wide and checks that nothing is cut off (key numbers, labels, buttons, table
columns), changes a control and sees a number change, types values into the planner
table and sees them used as typed or refused with a message, runs the mechanism on the
sample data, downloads results and checks their content. With SAFETAB_SCREENSHOTS set,
it also saves a full-height screenshot of every page into $SAFETAB_SCREENSHOTS/<page>.png
and <page>_<width>.png; without it, only a page that fails a check is pictured (into
safetab-screenshots in the system temp folder), never into the repository. To refresh
the pictures in docs/screenshots/ (the README shows budget.png):
SAFETAB_SCREENSHOTS=docs/screenshots python -m pytest tests/e2e

Waits are for a condition, never a fixed time: `_settle` waits until the script run is
over, every element is drawn and the page has not changed for a short quiet period
(tests/e2e/browser.py: `settle`).

Without /usr/bin/chromium the module is skipped, unless SAFETAB_REQUIRE_BROWSER=1
(CI), where that is a failure. The server is always terminated.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import time
import zipfile
from pathlib import Path
from urllib.parse import urlparse

import pytest

from tests.e2e.browser import ReusedPage, failed, settle

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
#: Every page is pictured when SAFETAB_SCREENSHOTS names a folder; otherwise only a failure, into the temp folder.
SCREENSHOTS_WANTED = bool(os.environ.get("SAFETAB_SCREENSHOTS"))
SHOTS = Path(os.environ.get("SAFETAB_SCREENSHOTS") or Path(tempfile.gettempdir()) / "safetab-screenshots")
WIDTH = 1500
#: Widths every page is checked at: a laptop (the narrowest a committee uses) and a desk screen.
WIDTHS = (1280, 1920)
#: Every page of the app by its address (the "Compare methods" pages are added from ui.compare.layout).
PAGES = ("", "budget", "adaptive", "suppression", "run", "configuration", "scenarios", "memo", "glossary",
         "compare_index")


@pytest.fixture(scope="module")
def _window(browser):
    """The module's page, lent to one test after another and emptied between them (`ReusedPage`)."""
    window = ReusedPage(browser, WIDTH, accept_downloads=True)
    yield window
    window.close()


@pytest.fixture
def page(_window, request):
    """A page at WIDTH x 1000 px, with no session, cookies or storage of another test (`ReusedPage`)."""
    pg = _window.take()
    yield pg
    if failed(request.node):
        _failure_picture(pg, f"{request.node.name}-failure")
    _window.give_back()


def _open(page, url: str, text: str):
    page.goto(url)
    page.get_by_text(text, exact=False).first.wait_for()
    _settle(page)


def _open_by_link(page, server: str, name: str, text: str):
    """Open the page `name` by its sidebar link, as a user goes, the session kept (`_go`; a
    page load costs Chromium seconds of CPU, a sidebar link a fraction of that), and wait for
    `text`."""
    _go(page, server, name)
    page.get_by_text(text, exact=False).first.wait_for()
    _settle(page)


def _compare_tab(page):
    """Open the Scenarios page's "Compare plans" tab (the page opens on its saved scenarios)."""
    page.get_by_role("tab", name="Compare plans").click()
    page.get_by_text("Compare plans side by side").first.wait_for()
    _settle(page)


def _settle(page):
    """Wait until the script run is over, every element (tables, charts) is drawn and the
    page is still (tests/e2e/browser.py: `settle`; the method studies take minutes under load)."""
    settle(page)


def _choose(page, box, option: str) -> None:
    """Pick `option` in the selectbox `box`. Its text is typed, so the option is in the
    (virtualised) list whatever its place. A rerun that lands just after the click (a page
    restoring its remembered controls) closes the list again, so this is repeated until
    the option is there, at most five times."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

    for _ in range(5):
        box.click()
        page.keyboard.type(option)
        try:
            page.get_by_role("option", name=option).first.wait_for(timeout=5_000)
            break
        except PlaywrightTimeoutError:
            page.keyboard.press("Escape")
            _settle(page)
    page.get_by_role("option", name=option).first.click()


def _picture(page, name: str, width: int | None = None, timeout_ms: int = 600_000):
    """A full-height screenshot of the page into SHOTS/<name>.png, at `width` (default:
    the page's own), then back to the window's size."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    name = "".join(c if c.isalnum() or c in "-_" else "_" for c in name)[:100]
    size = page.viewport_size
    width = width or size["width"]
    height = page.evaluate("() => document.querySelector('[data-testid=\"stMain\"]').scrollHeight")
    page.set_viewport_size({"width": width, "height": min(int(height) + 20, 7000)})
    settle(page, timeout_ms=timeout_ms)  # charts re-layout to the new size
    page.screenshot(path=str(SHOTS / f"{name}.png"))
    page.set_viewport_size(size)
    settle(page, timeout_ms=timeout_ms)


def _failure_picture(page, name: str) -> None:
    """The page as it is when a check failed, into SHOTS (best effort: it never hides the failure)."""
    with contextlib.suppress(Exception):
        _picture(page, name, timeout_ms=30_000)


def _screenshot(page, name: str, width: int = WIDTH):
    """The page's picture for the docs, when SAFETAB_SCREENSHOTS asks for them (module docstring)."""
    if SCREENSHOTS_WANTED:
        _picture(page, name, width)


#: What is cut off on the page: metric values and labels wider than their box, text
#: shown with an ellipsis, tables whose right-hand columns and multiselects whose chosen
#: items are hidden behind a horizontal scroll, a page that scrolls sideways. Returns
#: plain descriptions.
CUT_OFF = """() => {
  const bad = [];
  const main = document.querySelector('[data-testid="stMain"]');
  const clipped = e => e.scrollWidth > e.clientWidth + 1;
  const name = e => (e.innerText || '').trim().replace(/\\s+/g, ' ').slice(0, 60);
  for (const m of main.querySelectorAll('[data-testid="stMetricValue"], [data-testid="stMetricLabel"]'))
    if ([m, ...m.querySelectorAll('*')].some(clipped)) bad.push('key number or label cut: ' + name(m));
  for (const e of main.querySelectorAll('*')) {
    if (getComputedStyle(e).textOverflow === 'ellipsis' && clipped(e) && name(e)
        && !e.closest('[data-baseweb="tag"], [data-baseweb="select"], [data-testid="stMultiSelect"]'))
      bad.push('text cut: ' + name(e));
  }
  // a multiselect whose chosen items scroll sideways shows only the first few of them
  for (const m of main.querySelectorAll('[data-testid="stMultiSelect"]'))
    if ([...m.querySelectorAll('*')].some(e => clipped(e) && !e.closest('[data-baseweb="tag"]')
                                          && ['auto', 'scroll'].includes(getComputedStyle(e).overflowX)))
      bad.push('chosen items hidden sideways: ' + name(m.querySelector('label') || m));
  main.querySelectorAll('[data-testid="stDataFrame"]').forEach((d, i) => {
    const sc = d.querySelector('.dvn-scroller');
    // a data browser with whole long names (widgets.SCROLLS_SIDEWAYS) scrolls sideways by design
    if (sc && clipped(sc) && !d.closest('[class*="st-key-scrolls-sideways-"]')) {
      const head = [...d.querySelectorAll('[role="columnheader"]')].map(h => h.innerText).join(' | ');
      bad.push('table ' + i + ' hides columns (' + sc.scrollWidth + ' > ' + sc.clientWidth + ' px): ' + head.slice(0, 80));
    }
  });
  if (document.scrollingElement.scrollWidth > window.innerWidth + 1) bad.push('the page scrolls sideways');
  return [...new Set(bad)];
}"""


#: What does not fit, measured: the bounding boxes of every chart's title, axis titles,
#: tick labels, legend entries and labels against the chart and each other (a label cut
#: off, two labels overlapping; rotated tick labels are laid out by plotly and only
#: checked against the rest), and every table's column headers and numbers against
#: their column's width, measured in the table's own font (the grid draws on a canvas:
#: its columns, theme and cells are read from the grid's own properties).
FITS = r"""() => {
  const bad = [];
  const main = document.querySelector('[data-testid="stMain"]');
  const ov = (a, b) => a.left < b.right - 2 && b.left < a.right - 2 && a.top < b.bottom - 2 && b.top < a.bottom - 2;
  const inside = (a, c) => a.left >= c.left - 1 && a.right <= c.right + 1 && a.top >= c.top - 1 && a.bottom <= c.bottom + 1;
  main.querySelectorAll('[data-testid="stPlotlyChart"]').forEach((chart, i) => {
    const svgs = chart.querySelectorAll('.main-svg');
    if (!svgs.length) return;
    const box = svgs[0].getBoundingClientRect();
    const t = chart.querySelector('.gtitle');
    const name = 'chart ' + i + (t ? ' "' + t.textContent.trim().slice(0, 50) + '"' : '');
    const items = [];
    const add = (sel, kind) => chart.querySelectorAll(sel).forEach(e => {
      const r = e.getBoundingClientRect();
      const text = (e.textContent || '').trim();
      const rot = /rotate\((?!0[ ,)])/.test(e.getAttribute('transform') || '');
      if (r.width > 0 && r.height > 0 && text) items.push({kind, text: text.slice(0, 40), r, rot});
    });
    add('.gtitle', 'title');
    add('[class^="g-x"][class$="title"] text, [class^="g-y"][class$="title"] text', 'axis title');
    add('[class*="xtick"] > text, [class*="x2tick"] > text', 'x tick');
    add('[class*="ytick"] > text, [class*="y2tick"] > text', 'y tick');
    add('.legendtext', 'legend');
    add('.annotation-text', 'label');
    for (const it of items) if (!inside(it.r, box)) bad.push(`${name}: ${it.kind} '${it.text}' is cut off`);
    for (let a = 0; a < items.length; a++) for (let b = a + 1; b < items.length; b++) {
      const A = items[a], B = items[b];
      if (A.kind === 'legend' && B.kind === 'legend') continue;
      if ((A.rot && B.rot) || !ov(A.r, B.r)) continue; bad.push(`${name}: ${A.kind} '${A.text}' overlaps ${B.kind} '${B.text}'`);
    }
  });
  main.querySelectorAll('[data-testid="stDataFrame"]').forEach((d, i) => {
    const c = d.querySelector('canvas');
    if (!c) return;
    const key = Object.keys(c).find(k => k.startsWith('__reactFiber'));
    let f = c[key], p = null;
    for (let n = 0; f && n < 12; n++, f = f.return)
      if (f.memoizedProps && f.memoizedProps.getCellContent && f.memoizedProps.columns) { p = f.memoizedProps; break; }
    if (!p) return;
    const theme = p.theme || {};
    const pad = 2 * (theme.cellHorizontalPadding ?? 8);
    const ctx = document.createElement('canvas').getContext('2d');
    ctx.font = theme.headerFontFull || '400 14px "Source Sans", sans-serif';
    p.columns.forEach(col => {
      const w = ctx.measureText(col.title || '').width + pad;
      if (w > col.width + 0.5) bad.push(`table ${i}: header '${col.title}' needs ${Math.ceil(w)} px, has ${col.width}`);
    });
    ctx.font = theme.baseFontFull || '400 14px "Source Sans", sans-serif';
    // a table that scrolls sideways does so to show its long texts whole: check them too
    const texts = !!d.closest('[class*="st-key-scrolls-sideways-"]');
    for (let r = 0; r < Math.min(p.rows, 300); r++) p.columns.forEach((col, j) => {
      const cell = p.getCellContent([j, r]);
      if (!cell || !(cell.kind === 'number' || (texts && cell.kind === 'text'))) return;
      const w = ctx.measureText(String(cell.displayData ?? '')).width + pad;
      if (w > col.width + 0.5) bad.push(`table ${i}: ${cell.kind} '${cell.displayData}' in '${col.title}' needs ${Math.ceil(w)} px, has ${col.width}`);
    });
  });
  return [...new Set(bad)];
}"""


def _cut_off(page) -> list[str]:
    """What is cut off on the page or does not fit (CUT_OFF, FITS)."""
    return page.evaluate(CUT_OFF) + page.evaluate(FITS)


def _nothing_cut_off(page, where: str):
    bad = _cut_off(page)
    if bad:
        _failure_picture(page, f"cut-off-{where}")
    assert not bad, f"{where}: " + "; ".join(bad)


def _type_in_cell(page, right: int, down: int, text: str) -> None:
    """Type `text` into the planner table's cell `right` columns and `down` rows from
    its first body cell, as a user does: select the cell with the arrow keys, Enter
    opens its editor, the text replaces its value, Enter commits it. Under load the grid
    can drop a key press while it redraws (and Enter on the wrong cell would tick a
    checkbox), so the selected cell is checked before Enter, and the whole step is
    tried again if it is not the one wanted."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    cell = page.locator("#portal textarea.gdg-input")
    selected = f"td[data-testid='glide-cell-{right}-{down}'][aria-selected='true']"
    for _ in range(6):
        editor = page.locator("[class*='st-key-planner_'] [data-testid='stDataFrame']").first
        editor.scroll_into_view_if_needed()
        box = editor.bounding_box()
        page.mouse.click(box["x"] + 30, box["y"] + 52)  # first body cell
        for key in ["ArrowRight"] * right + ["ArrowDown"] * down:
            page.keyboard.press(key)
            time.sleep(0.05)
        try:  # the grid marks the selected cell for screen readers once it has drawn it
            editor.locator(selected).first.wait_for(state="attached", timeout=3_000)
        except PlaywrightTimeout:
            page.keyboard.press("Escape")
            _settle(page)
            continue
        page.keyboard.press("Enter")
        try:
            cell.wait_for(timeout=5_000)
        except PlaywrightTimeout:
            page.keyboard.press("Escape")
            _settle(page)
            continue
        cell.fill(text)
        cell.press("Enter")
        return
    raise AssertionError(f"could not open the planner table's cell ({right}, {down}) for editing")


def _download(page, button_name: str, name_out: list | None = None) -> bytes:
    with page.expect_download() as info:
        page.get_by_role("button", name=button_name).first.click()
    if name_out is not None:
        name_out.append(info.value.suggested_filename)
    return Path(info.value.path()).read_bytes()


# ------------------------------------------------------------------------------ tests
def test_deep_link_on_a_fresh_server_restores_the_configuration(fresh_server, page):
    """First request of the server goes straight to a page with a shared link (a server no
    request has reached yet: `fresh_server` in tests/e2e/conftest.py)."""
    server = fresh_server
    from calculators.presets import production_2020
    from ui.core import urlcodec

    token = urlcodec.encode(production_2020().updated(max_race_codes=3))
    _open(page, f"{server}/budget?config={token}", "Stability S = 4")
    nav = page.locator("[data-testid='stSidebarNav']").inner_text()
    assert "Budget and MOE planner" in nav and "Run the mechanism" in nav
    # two sections: SafeTab-P's own pages (the glossary among them), then the other methods
    assert nav.index("SafeTab-P") < nav.index("Budget and MOE planner") < nav.index("Compare methods")
    assert nav.index("SafeTab-P") < nav.index("Glossary") < nav.index("Compare methods")
    assert nav.index("Compare methods") < nav.index("Methods at a glance")
    assert "Configuration restored from the link" in page.inner_text("body")
    # served by app.py's navigation from the first request: no "Page not found" dialog
    # (a pages/ folder beside app.py would start Streamlit's legacy mode, which knows no
    # page in app_pages/<section>/)
    assert page.get_by_text("Page not found").count() == 0


def test_overview(server, page):
    _open(page, server, "SafeTab-P Studio")
    page.get_by_text("4.944").first.wait_for()
    body = page.inner_text("body")
    assert "19 of 20" in body and "25.36" in body and "26.28" in body
    # every page is listed in the sidebar, none hidden behind "View more"
    from ui.compare import layout as compare

    nav = page.locator("[data-testid='stSidebarNav']").inner_text()
    for title in ("Scenarios", "Decision memo", "Glossary", "Methods at a glance", *(m.title for m in compare.METHODS)):
        assert title in nav, nav
    assert "View" not in nav and "more" not in nav
    _screenshot(page, "overview")


def test_the_overviews_old_address_opens_the_overview(server, page):
    """/overview (a bookmark of the overview's address, and the one a user guesses) opens
    the overview, with a link's message, not Streamlit's "Page not found"."""
    page.goto(f"{server}/overview?config=damaged")
    page.get_by_text("The two-stage flow").first.wait_for()
    _settle(page)
    assert page.get_by_text("Page not found").count() == 0
    assert "The configuration in the link could not be used" in page.inner_text("body")


def test_budget_planner_r_changes_s_and_the_url(server, page):
    from calculators import budget

    _open(page, f"{server}/budget", "Stability S = 9")
    page.get_by_text("Group-size profile").first.wait_for()  # the national outcome, the tab that opens first
    _screenshot(page, "budget")  # settles after its resize back
    # type a MOE target of 8 for COUNTY Detailed (row 6, column "MOE target"): rho follows
    _type_in_cell(page, 3, 5, "8")  # column 3: MOE target, row 5: COUNTY Detailed
    from ui.core import planner

    # the exact MOE meets targets by default; the budget is written with 4 significant digits
    rho = planner.round_up(budget.rho_level_for_exact_moe(8, 9, 0.1))
    page.get_by_text(f"{4.944 - 0.159 + rho:.4g}").first.wait_for()
    _settle(page)
    slider = page.locator("[data-testid='stSlider'] input[type='range']").first
    slider.focus()
    slider.press("Home")
    page.get_by_text("Stability S = 3").wait_for()
    _settle(page)
    assert "config=" in page.url
    # the planner redraws as a fragment; the sidebar still follows the plan (its name is
    # marked edited, undo is on) and r is shown where it is set
    sidebar = page.locator("[data-testid='stSidebar']")
    assert "2020 production plan, edited" in sidebar.inner_text()
    assert sidebar.get_by_role("button", name="Undo").is_enabled()
    moe = int(budget.moe_for_rho(0.159, 3, 0.1))
    assert moe < 10
    page.get_by_role("link", name="Overview").click()
    page.get_by_text("S = 3 here").wait_for()


def test_adaptive_thresholds(server, page):
    _open(page, f"{server}/adaptive", "Which table a group gets")
    _screenshot(page, "adaptive")
    box = page.get_by_role("textbox", name="Θ1 (persons)")
    box.fill("500")
    box.press("Enter")
    page.get_by_text("Θ = 500, 4,971, 19,971").wait_for()
    _settle(page)
    assert "config=" in page.url  # the fragment keeps the address bar in step


def test_suppression_threshold_follows_p(server, page):
    from calculators import budget, suppression

    _open(page, f"{server}/suppression", "Threshold T per level")
    page.get_by_text("threshold T = 21").wait_for()
    _screenshot(page, "suppression")
    box = page.get_by_role("textbox", name="Zero-suppression chance p")
    box.fill("0.99")
    box.press("Enter")
    want = suppression.threshold(budget.sigma2_stage2(0.159, 0.1, 9), 0.99)
    page.get_by_text(f"threshold T = {want}").wait_for()
    # the page redraws as a fragment: the address bar and the sidebar still follow the plan
    _settle(page)
    assert "config=" in page.url
    assert "2020 production plan, edited" in page.locator("[data-testid='stSidebar']").inner_text()
    # the chosen n is marked on the curves and redraws them
    box = page.get_by_role("textbox", name="True count n (persons)")
    box.fill("3")
    box.press("Enter")
    page.get_by_text("mark the true count n = 3").wait_for()


def test_run_on_the_sample_data_and_download(server, page, tmp_path):
    if not (REPO / "sample_data" / "data" / "person-records.txt").is_file():
        pytest.skip("sample_data/ is not there")
    _open(page, f"{server}/run", "Shipped sample data")
    page.get_by_text("Seeded (reproducible, NOT FOR RELEASE)").click()
    _settle(page)
    page.get_by_role("button", name="Run SafeTab-P").click()
    page.get_by_text("Persons counted").wait_for(timeout=90_000)
    page.get_by_text("50,000").first.wait_for()
    page.get_by_text("Truth against release").wait_for()
    _settle(page)
    body = page.inner_text("body")
    assert "NOT FOR RELEASE: seeded" in body
    assert "Plan run: sample-data plan" in body  # a first run on the sample uses the sample's own plan
    assert "confidential" in body
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 1000})
        _settle(page)
        _nothing_cut_off(page, f"run results at {width} px")
    page.set_viewport_size({"width": WIDTH, "height": 1000})
    _screenshot(page, "run")
    got = []
    data = _download(page, "T1 files (zip)", got)
    assert got == ["t1-NOT-FOR-RELEASE.zip"]  # a seeded run is marked where a person looks
    zpath = tmp_path / "t1.zip"
    zpath.write_bytes(data)
    with zipfile.ZipFile(zpath) as zf:
        names = zf.namelist()
        assert {"NOT-FOR-RELEASE.txt", "manifest.json", "t1/NOT-FOR-RELEASE.txt"} <= set(names)
        t1 = [n for n in names if n.startswith("t1/") and n.endswith(".csv") and n != "t1/headers.csv"]
        assert t1
        rows = zf.read(t1[0]).decode().splitlines()
        assert rows[0] == "REGION_ID|REGION_TYPE|ITERATION_CODE|COUNT"
        assert len(rows) > 1 and all(r.count("|") == 3 for r in rows[1:])
        assert all(r.rsplit("|", 1)[1].lstrip("-").isdigit() for r in rows[1:])
    manifest = json.loads(_download(page, "manifest.json"))
    assert manifest["mode"]["for_release"] is False
    assert "confidential" not in manifest  # the exact counts are in the operator file only
    operator = json.loads(_download(page, "Operator file (CONFIDENTIAL)"))
    assert operator["confidential"]["persons"]["counted"] == 50_000 and "NEVER" in operator["note"]


def test_configuration_export(server, page):
    from calculators.presets import production_2020

    _open(page, f"{server}/configuration", "Shareable link")
    _screenshot(page, "configuration")
    exported = json.loads(_download(page, "Download config.json"))
    assert exported == production_2020().to_dict()


def _screenshot_at(page, name: str, width: int):
    """A full-page screenshot at a given window width (1280 and 1920 px: what committee
    members use), then back to the default size; when SAFETAB_SCREENSHOTS asks for them."""
    if not SCREENSHOTS_WANTED:
        return
    page.set_viewport_size({"width": width, "height": 1000})
    _settle(page)
    _screenshot(page, f"{name}-{width}", width)
    page.set_viewport_size({"width": WIDTH, "height": 1000})
    _settle(page)


def test_scenarios_saved_compared_undone_and_put_in_a_memo(server, page, tmp_path):
    import io

    from pypdf import PdfReader

    from calculators import budget, suppression

    _open(page, f"{server}/scenarios", "Save the current plan")
    name = page.get_by_label("Name", exact=True)
    name.fill("Production copy")
    name.press("Enter")
    _settle(page)
    page.get_by_role("button", name="Save the current plan").click()
    page.get_by_text("Saved the current plan as scenario").first.wait_for()
    _settle(page)
    # a second plan: r = 3 on the planner, saved from the sidebar
    _open_by_link(page, server, "budget", "Stability S = 9")
    slider = page.locator("[data-testid='stSlider'] input[type='range']").first
    slider.focus()
    slider.press("Home")  # r = 1
    page.get_by_text("Stability S = 3").wait_for()
    _settle(page)
    sidebar = page.locator("[data-testid='stSidebar']")
    sidebar.get_by_role("button", name="Undo").click()
    page.get_by_text("Stability S = 9").wait_for()
    assert "Undone: max_race_codes: 1 → 8" in page.inner_text("body")
    _settle(page)
    sidebar.get_by_role("button", name="Redo").click()
    page.get_by_text("Stability S = 3").wait_for()
    _settle(page)
    sidebar.get_by_role("button", name="Save as scenario").click()
    box = page.get_by_label("Scenario name")
    box.fill("r = 1 draft")
    box.press("Enter")
    _settle(page)
    page.get_by_role("button", name="Save", exact=True).click()
    page.get_by_text("Saved the current plan as scenario “r = 1 draft”").first.wait_for()
    # the comparison: current plan and the two scenarios, in a new session (on the 2020 plan)
    _open(page, f"{server}/scenarios", "Save the current plan")
    _compare_tab(page)
    page.get_by_text("3 plans:").first.wait_for()
    _settle(page)
    body = page.inner_text("body")
    assert "Production copy" in body and "r = 1 draft" in body
    for width in (1280, 1920):
        _screenshot_at(page, "scenarios", width)
    # the memo of the comparison, as a PDF
    _open_by_link(page, server, "memo", "What the memo holds")
    page.get_by_text("A comparison of plans").click()
    page.get_by_text("3 plans compared").first.wait_for()
    _settle(page)
    for width in (1280, 1920):
        _screenshot_at(page, "memo", width)
    with page.expect_download(timeout=240_000) as info:
        page.get_by_role("button", name="Decision memo (PDF)").click()
    data = Path(info.value.path()).read_bytes()
    reader = PdfReader(io.BytesIO(data))
    text = "\n".join(p.extract_text() for p in reader.pages)
    assert "3 plans compared" in text and "r = 1 draft: Suppression" in text
    page1 = " ".join(reader.pages[0].extract_text().split())
    assert "Decision sheet" in page1 and "race multiplicity r 8 → 1" in page1  # what differs from the reference
    assert reader.pages[0].mediabox.upper_right == (792, 612)  # US Letter by default
    lines = text.splitlines()
    i = lines.index("MOE exact")
    row = next(line for line in lines[i + 1:] if line.startswith("COUNTY Detailed")).split()
    moe_r1 = str(int(budget.moe_for_rho(0.159, 3, 0.1, exact=True)))
    # a new browser session starts on the 2020 plan: current plan, "r = 1 draft", "Production copy"
    assert row[2:5] == ["11", moe_r1, "11"] and row[5].startswith("yes")  # the next cell's text may abut it
    t = suppression.threshold(budget.sigma2_stage2(0.159, 0.1, 3), 0.9999)
    i = lines.index("Suppression T")  # the comparison's table of T by level, one column per plan
    row = next(line for line in lines[i + 1:] if line.startswith("COUNTY Detailed")).split()
    assert row[3] == str(t)  # the "r = 1 draft" column
    assert sum(len(p.images) for p in reader.pages) >= 5


def test_a_plan_file_keeps_its_name_when_imported(server, page, tmp_path):
    from calculators.presets import production_2020
    from ui.committee import scenarios

    f = tmp_path / "committee.plan.json"
    f.write_text(scenarios.plan_file_text("Committee import", production_2020().updated(max_race_codes=5)))
    _open(page, f"{server}/configuration", "Shareable link")
    page.locator("[data-testid='stFileUploader'] input[type='file']").first.set_input_files(str(f))
    page.get_by_text("Current plan: Committee import").first.wait_for()
    assert "Current plan: Committee import" in page.locator("[data-testid='stSidebar']").inner_text()
    page.get_by_role("link", name="Budget and MOE planner").click()  # the imported plan's r = 5
    page.get_by_text("Stability S = 6").wait_for()


def test_page_controls_and_tabs_are_kept_across_pages(server, page):
    """What a user set on a page is still set when they come back through the sidebar
    (the browser forgets a page's widget states on a page switch; AppTest cannot see
    that): the Scenarios page's open tab and its toggle, the planner's open tab, the
    adaptive-tables page's level and open chart tab."""
    nav = page.locator("[data-testid='stSidebarNav']")

    def go(link: str, text: str) -> None:
        nav.get_by_role("link", name=link, exact=True).click()
        page.get_by_text(text).first.wait_for()
        _settle(page)

    _open(page, f"{server}/scenarios", "Save the current plan")
    _compare_tab(page)
    toggle = lambda: page.locator("label:has-text('Only rows that differ') input").first  # noqa: E731
    page.get_by_text("Only rows that differ", exact=True).first.click()
    _settle(page)
    assert toggle().is_checked()
    go("Budget and MOE planner", "Stability S = 9")
    page.get_by_role("tab", name="Race multiplicity r").click()
    _settle(page)
    go("Adaptive tables", "Which table a group gets")
    level = page.get_by_role("combobox", name="Population group level")
    _choose(page, level, "TRACT Detailed")
    _settle(page)
    assert level.input_value() == "TRACT Detailed"
    page.get_by_role("tab", name="Expected accuracy").click()
    _settle(page)
    go("Configuration", "Shareable link")
    go("Scenarios", "Compare plans side by side")  # back on the tab the user opened
    assert toggle().is_checked() and page.get_by_role("tab", name="Compare plans").get_attribute(
        "aria-selected") == "true"
    go("Budget and MOE planner", "Stability S = 9")
    assert page.get_by_role("tab", name="Race multiplicity r").get_attribute("aria-selected") == "true"
    go("Adaptive tables", "Which table a group gets")
    assert page.get_by_role("combobox", name="Population group level").input_value() == "TRACT Detailed"
    assert page.get_by_role("tab", name="Expected accuracy").get_attribute("aria-selected") == "true"
    page.get_by_text("Expected accuracy of what is published").first.wait_for()  # its chart drawn


def test_custom_geographies_compose_an_area_and_optimise_the_spine(server, page, tmp_path):
    if not (REPO / "sample_data" / "data" / "person-records.txt").is_file():
        pytest.skip("sample_data/ is not there")
    _open(page, f"{server}/compare_spines", "Custom area, composed of published units")
    page.get_by_text("Verdict").first.wait_for(timeout=90_000)
    _settle(page)
    assert "Plan: sample-data plan (the data's own config.json)" in page.inner_text("body")  # by default
    page.get_by_text("The 2020 production plan", exact=True).first.click()  # one click away
    page.get_by_text("Plan: 2020 production plan.").first.wait_for(timeout=300_000)
    _settle(page)
    body = page.inner_text("body")
    assert "2 published unit(s)" in body and "Place 0600100" in body and "Tract 06001000100" in body
    _screenshot(page, "compare_spines")
    zpath = tmp_path / "area.zip"
    zpath.write_bytes(_download(page, "Everything (custom_area.zip)"))
    with zipfile.ZipFile(zpath) as zf:
        assert {"composition.csv", "summary.csv", "area.txt"} <= set(zf.namelist())
        rows = zf.read("composition.csv").decode().splitlines()
        assert len(rows) == 3 and "Place 0600100" in rows[2]
        assert zf.read("area.txt").decode().startswith("# custom area")
    page.get_by_text("Spine optimisation", exact=True).last.click()  # the view (after the header's glossary link)
    page.get_by_text("Off-spine entity distance on the Census, AIAN and optimised spines").first.wait_for(
        timeout=300_000)  # the spine study takes minutes on a loaded machine
    _settle(page)
    assert "Optimised 9 counties" in page.inner_text("body")
    _screenshot(page, "compare_spines_optimisation")


def test_compare_invariants(server, page):
    """The Invariants page: the paper's 14 x 24 x 20 table, then a SafeTab-P level with its
    simulation; every number the page promises is there and the zip downloads."""
    if not (REPO / "sample_data" / "data" / "person-records.txt").is_file():
        pytest.skip("sample_data/ is not there")
    _open(page, f"{server}/compare_invariants", "What the invariant gives away")
    body = page.inner_text("body")
    assert "Invariants are not SafeTab-P" in body and "the disclosure SafeTab-P exists to prevent" in body
    _choose(page, page.locator("[data-testid='stMain'] [data-testid='stSelectbox']").first, "Tracts add up to their county's true count")
    page.get_by_text("In every replication the regions add up to the true total exactly.").wait_for(timeout=90_000)
    _settle(page)
    _screenshot(page, "compare_invariants")
    data = _download(page, "Everything (invariants_level_study.zip)")
    zpath = Path(tempfile.mkdtemp()) / "inv.zip"
    zpath.write_bytes(data)
    with zipfile.ZipFile(zpath) as zf:
        assert "invariants_simulation.csv" in zf.namelist()
        about = zf.read("verdict.txt").decode()  # read away from the page, it says what it came from
        assert "Data: the shipped" in about and "Plan: " in about and "NOT FOR RELEASE" in about
        assert "Var. with, simulated" in zf.read("invariants_simulation.csv").decode().splitlines()[0]
    page.get_by_text("A custom table").click()
    _settle(page)
    _choose(page, page.locator("[data-testid='stMain'] [data-testid='stSelectbox']").first,
            "Paper §5.2: 14 × 24 × 20 table, two-way margins held at each of the 20 locations")
    page.get_by_text("rank 740, largest difference from the closed form").wait_for(timeout=90_000)
    _settle(page)
    body = page.inner_text("body")
    assert "0.8899" in body and "760 sums are published exactly" in body
    _screenshot(page, "compare_invariants_custom")


def test_consistency_comparison(server, page, tmp_path):
    if not (REPO / "sample_data" / "data" / "person-records.txt").is_file():
        pytest.skip("sample_data/ is not there")
    _open(page, f"{server}/compare_consistency", "The question.")
    page.get_by_text("Verdict").first.wait_for(timeout=300_000)
    _settle(page)
    body = page.inner_text("body")
    assert "Consistency methods" in body and "SafeTab-P as published" in body and "do not add up" in body
    _screenshot(page, "compare_consistency")
    zpath = tmp_path / "consistency.zip"
    zpath.write_bytes(_download(page, "Everything (consistency.zip)"))
    with zipfile.ZipFile(zpath) as zf:
        head = zf.read("consistency_table7_error.csv").decode().splitlines()
        assert head[0] == "geography_level,iteration_level,none,least-squares,tree-dp,relax-then-round"
        assert len(head) > 4 and "verdict.txt" in zf.namelist()
    radio = page.locator("[data-testid='stRadio']").filter(has_text="Measure")
    radio.get_by_text("Bias", exact=True).click()
    page.get_by_text("Bias by true size").first.wait_for()
    _settle(page)
    assert "Bias of published totals" in page.inner_text("body")


def test_compare_cell_suppression(server, page, tmp_path):
    if not (REPO / "sample_data" / "data" / "person-records.txt").is_file():
        pytest.skip("sample_data/ is not there")
    page.goto(f"{server}/compare_cell_suppression")
    page.get_by_text("Verdict").first.wait_for(timeout=600_000)
    _settle(page)
    body = page.inner_text("body")
    assert "Legacy cell suppression" in body and "Recovered exactly" in body
    assert "One table, both ways" in body
    assert page.locator("[data-testid='stPlotlyChart']").count() >= 3  # by size, and the two grids
    _screenshot(page, "compare_cell_suppression")
    data = _download(page, "Everything (cell_suppression.zip)")
    zpath = tmp_path / "cs.zip"
    zpath.write_bytes(data)
    with zipfile.ZipFile(zpath) as zf:
        assert {"cell_suppression_summary.csv", "cell_suppression_audit.csv", "one_table_legacy.csv"} <= set(zf.namelist())
        header = zf.read("cell_suppression_audit.csv").decode().splitlines()[0]
        assert "Lowest possible" in header and "Why withheld" in header


def _all_pages() -> list[str]:
    from ui.compare import layout as compare

    return list(PAGES) + [m.url_path for m in compare.METHODS]


#: Every chart has a one-sentence text summary right under it (for readers who cannot see it).
SUMMARIES = """() => [...document.querySelectorAll('[data-testid="stMain"] [data-testid="stPlotlyChart"]')].filter(c => {
  const el = c.closest('[data-testid="stElementContainer"]') || c;
  const next = el.nextElementSibling;
  return !(next && (next.innerText || '').trim().startsWith('Chart summary:'));
}).length"""


#: Pages whose charts (and the planner's national outcome) are in tabs: the tab that opens first, then the others.
CHART_TABS = {"budget": ("National outcome", "MOE against the budget", "Race multiplicity r"),
              "adaptive": ("Which table a group gets", "Expected accuracy"),
              "suppression": ("Chance of suppression", "Bias of what is released")}


def _go(page, server: str, name: str) -> None:
    """Open the page `name` as a user does, by its sidebar link (no reload, the session
    kept); the first page of the session by its address."""
    link = page.locator(f"[data-testid='stSidebarNav'] a[href='{server}/{name}']")
    if page.url.startswith(server) and link.count():
        link.first.click()
        page.wait_for_url(lambda u: urlparse(u).path.strip("/") == name)
    else:
        page.goto(f"{server}/{name}")
    page.get_by_text("SafeTab-P").first.wait_for()
    _settle(page)


@pytest.fixture
def page_fit_problems(server, page, page_tour) -> dict[int, list[str]]:
    """What does not fit, by width (WIDTHS), on every page, its other chart tabs and
    views: each page is opened once (by its sidebar link) and checked at each width in
    turn, the window resized between them. Every problem names its page, view and width.

    On the way, the pages of the contrast test (tests/e2e/test_contrast.py, PAGES) have
    their texts' contrast measured in the view they open on, at 1280 px, and the measure
    itself is checked at the end: kept in `page_tour["contrast"]` for that test (one tour of
    the pages, not two)."""
    from tests.e2e import test_contrast as contrast

    problems: dict[int, list[str]] = {w: [] for w in WIDTHS}
    contrast_problems: list[str] = []
    order = list(WIDTHS)

    def at_each_width(where: str, summaries: bool = True, contrast_of: str | None = None) -> None:
        for width in order:
            if page.viewport_size["width"] != width:
                page.set_viewport_size({"width": width, "height": 1000})
                _settle(page)  # charts and tables re-layout to the new width
            if contrast_of and width == WIDTHS[0]:  # a laptop's, as the contrast test's own window
                contrast_problems.extend(contrast.page_problems(page, contrast_of))
            bad = _cut_off(page)
            if summaries and page.evaluate(SUMMARIES):
                bad.append("a chart without its text summary")
            if bad:
                problems[width].append(f"{where} at {width} px: " + "; ".join(bad))
                _failure_picture(page, f"fit-{where}-{width}")
        order.reverse()  # the next view starts at the width the window has

    page.set_viewport_size({"width": order[0], "height": 1000})  # the module's page, set back after the test
    page.set_default_timeout(60_000)
    for name in _all_pages():
        _go(page, server, name)
        at_each_width(name or "overview", contrast_of=f"page /{name}" if name in contrast.PAGES else None)
        if name in CHART_TABS:  # the page's other chart tabs (only the open tab is drawn)
            first, *others = CHART_TABS[name]
            for tab in others:
                page.get_by_role("tab", name=tab).click()
                _settle(page)
                at_each_width(f"{name}, tab {tab!r},")
            page.get_by_role("tab", name=first).click()
            _settle(page)
        if name == "compare_spines":  # its other view: a chart of two panels and four tables, half width
            page.get_by_text("Spine optimisation", exact=True).last.click()
            page.get_by_text("Off-spine entity distance on the Census, AIAN and optimised spines").first.wait_for(
                timeout=300_000)
            _settle(page)
            at_each_width("compare_spines, Spine optimisation,", summaries=False)
            page.get_by_text("Custom area", exact=True).last.click()
            _settle(page)
        if name == "scenarios":  # its other tab, whose charts are drawn when asked for
            _compare_tab(page)
            at_each_width("scenarios, Compare plans,", summaries=False)
            page.get_by_text("Charts", exact=True).first.click()  # the toggle (the hint under it names it too)
            page.get_by_text("MOE of one stage-2 cell against the level budget").first.wait_for()
            # every chart drawn (a chart not yet drawn has no labels to measure)
            page.wait_for_function("""() => [...document.querySelectorAll('[data-testid="stPlotlyChart"]')]
                .filter(c => c.querySelector('.main-svg')).length >= 4""", timeout=120_000)
            _settle(page)
            at_each_width("scenarios with charts")
        for width in WIDTHS:
            _screenshot(page, f"{name or 'overview'}_{width}", width)
    page_tour["contrast"] = contrast_problems + contrast.probe_opacity(page)
    return problems


def test_every_page_fits_at_common_widths(page_fit_problems):
    """Nothing is cut off on any page, at a laptop's and a desk screen's width: key
    numbers, labels, buttons and every table column are visible, and every chart has its
    text summary. One test for both widths (WIDTHS): each page is opened once and checked
    at each width in turn (`page_fit_problems`); the failure lists what does not fit at
    each width, by width. (Two tests sharing the module fixture would each open every
    page under pytest-xdist, which sends them to different workers.)"""
    bad = [line for width in WIDTHS for line in page_fit_problems[width]]
    assert not bad, "\n".join(bad)


def test_typed_values_are_used_as_typed_or_refused_in_the_browser(server, page):
    """The planner's MOE target and budget cells take text: '2.5' is refused with a
    message next to the table (a number column would have read it as 25), '1e8' is
    refused (beyond the engine's range), '1e6' is used and explained."""
    _open(page, f"{server}/budget", "Stability S = 9")

    _type_in_cell(page, 3, 5, "2.5")  # column 3: MOE target, row 5: COUNTY Detailed
    page.get_by_text("'2.5' is not a whole number of persons").wait_for()
    _settle(page)
    body = page.inner_text("[data-testid='stMain']")
    assert "COUNTY Detailed, MOE target" in body and "the target stays 11" in body
    i = body.find("of the release")
    assert "4.944" in body[i - 40:i + 40], body[max(0, i - 300):i + 200]  # the plan did not change
    _type_in_cell(page, 4, 5, "1e8")  # column 4: rho, beyond the engine's range: refused
    page.get_by_text("'1e8' is above 1e+06, the largest budget the engine accepts").wait_for()
    _settle(page)
    _type_in_cell(page, 4, 5, "1e6")  # the largest accepted budget: used, and explained
    page.get_by_text("Budgets to double-check").first.wait_for()
    _settle(page)
    body = page.inner_text("[data-testid='stMain']")
    if "ρ = 1e+06 means ε ≈ 1.01e+06" not in body:
        _screenshot(page, "typed_values_failure")
    assert "ρ = 1e+06 means ε ≈ 1.01e+06" in body and "essentially no privacy" in body, body[body.find("Budgets"):][:600]


def test_a_name_that_looks_like_markdown_is_shown_as_text_and_fetches_nothing(server, page):
    """Issue 21 item 3: a plan named with Markdown image and link syntax (and HTML) is
    shown exactly as written; the browser asks no other host for anything and the page
    holds no link or image made from it."""
    from calculators.presets import production_2020
    from ui.core import urlcodec

    name = "![x](http://attacker.invalid/p.png) [click](http://attacker.invalid) <b>bold</b>"
    asked = []
    def note(r):
        if "attacker.invalid" in r.url:
            asked.append(r.url)

    page.on("request", note)
    token = urlcodec.encode(production_2020().updated(max_race_codes=4), name=name)
    _open(page, f"{server}/?config={token}", "Current plan:")
    sidebar = page.locator("[data-testid='stSidebar']").inner_text().replace("\u2060", "")  # invisible joiner
    assert name in sidebar  # exactly as written
    _open_by_link(page, server, "scenarios", "Save the current plan")  # the session's plan, by its name
    assert name in page.locator("[data-testid='stMain']").inner_text().replace("\u2060", "")
    _compare_tab(page)
    assert name in page.locator("[data-testid='stMain']").inner_text().replace("\u2060", "")
    found = page.evaluate("""() => [...document.querySelectorAll('a[href*="attacker"], img[src*="attacker"], b')]
                             .filter(e => e.closest('[data-testid="stSidebar"], [data-testid="stMain"]'))
                             .filter(e => e.tagName !== 'B' || e.innerText === 'bold').map(e => e.outerHTML)""")
    page.remove_listener("request", note)  # the page is lent to the next test
    assert found == [] and asked == []


def _in_view(page, text: str) -> bool:
    """Whether `text` is shown inside the browser window (not scrolled out of it)."""
    box = page.get_by_text(text).first.bounding_box()
    view = page.viewport_size
    return box is not None and 0 <= box["y"] and box["y"] + box["height"] <= view["height"]


def test_refused_values_are_said_in_view_at_1280_by_800(server, page):
    """Typing what a box cannot use shows the reason next to it, inside an 800 px high
    window, and the plan keeps its value: a planner cell ('abc' as the USA Detailed MOE
    target), gamma emptied with Ctrl+A, Backspace, Enter."""
    page.set_viewport_size({"width": 1280, "height": 800})  # the module's page, set back after the test
    page.set_default_timeout(60_000)
    _open(page, f"{server}/budget", "Stability S = 9")
    table = page.locator("[data-testid='stDataFrame']").first
    table.scroll_into_view_if_needed()
    _type_in_cell(page, 3, 1, "abc")  # column 3: MOE target, row 1: USA Detailed
    page.get_by_text("'abc' is not a number").first.wait_for()
    _settle(page)
    assert _in_view(page, "'abc' is not a number"), "the planner's message is out of view"
    _type_in_cell(page, 3, 17, "abc")  # a row near the bottom of the table (PR-TRACT Detailed)
    page.get_by_text("PR-TRACT Detailed, MOE target").first.wait_for()
    _settle(page)
    assert _in_view(page, "PR-TRACT Detailed, MOE target"), "the message scrolled away from the table"
    page.evaluate("window.scrollTo(0, 0)")
    _open(page, f"{server}/budget", "Stability S = 9")
    box = page.get_by_role("textbox", name="Stage-1 fraction γ")
    box.click()
    box.press("Control+a")
    box.press("Backspace")
    box.press("Enter")
    page.get_by_text("The box is empty").first.wait_for()
    _settle(page)
    assert _in_view(page, "The box is empty"), "the gamma box's message is out of view"
    assert "Still in use: 0.1." in page.inner_text("[data-testid='stMain']")
    assert "2020 production plan, edited" not in page.locator("[data-testid='stSidebar']").inner_text()
    _screenshot(page, "typed_value_refused_1280", 1280)


def test_keyboard_focus_is_visible(server, page):
    """Tabbing onto a sidebar link draws a clear outline (at least 2 px, contrast >= 3:1
    with the background)."""
    _open(page, server, "SafeTab-P Studio")
    link = page.locator("[data-testid='stSidebarNav'] a").nth(1)
    link.focus()
    page.keyboard.press("Shift+Tab")
    page.keyboard.press("Tab")
    style = page.evaluate("""() => { const e = document.activeElement; const s = getComputedStyle(e);
        return {tag: e.tagName, width: parseFloat(s.outlineWidth), style: s.outlineStyle, color: s.outlineColor}; }""")
    assert style["tag"] == "A" and style["style"] != "none" and style["width"] >= 2, style
    from ui.core import widgets

    rgb = [int(x) for x in style["color"][style["color"].index("(") + 1:].split(")")[0].split(",")[:3]]
    assert widgets.contrast("#%02x%02x%02x" % tuple(rgb), "#ffffff") >= 3.0, style
