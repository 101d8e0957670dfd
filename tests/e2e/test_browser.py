"""The app in a real browser: Debian's Chromium driven by Playwright.

Starts `streamlit run app.py` on a free loopback port, opens every page at 1280 and
1920 px wide and checks that nothing is cut off (key numbers, labels, buttons, table
columns), changes a control and sees a number change, types values into the planner
table and sees them used as typed or refused with a message, runs the mechanism on the
sample data, downloads results and checks their content, and saves a screenshot of
every page into $SAFETAB_SCREENSHOTS/<page>_<width>.png (default: safetab-screenshots
in the system temp folder), never into the repository. To refresh the pictures in
docs/screenshots/ (the README shows budget.png): SAFETAB_SCREENSHOTS=docs/screenshots
python -m pytest tests/e2e

Without /usr/bin/chromium the module is skipped, unless SAFETAB_REQUIRE_BROWSER=1
(CI), where that is a failure. The server is always terminated.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
SHOTS = Path(os.environ.get("SAFETAB_SCREENSHOTS") or Path(tempfile.gettempdir()) / "safetab-screenshots")
CHROMIUM = Path("/usr/bin/chromium")
LAUNCH_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
               "--disable-sync", "--no-first-run"]
WIDTH = 1500
#: Widths every page is checked at: a laptop (the narrowest a committee uses) and a desk screen.
WIDTHS = (1280, 1920)
#: Every page of the app by its address (the "Compare methods" pages are added from ui.compare).
PAGES = ("", "budget", "adaptive", "suppression", "run", "configuration", "glossary", "compare_index")


def _require_browser():
    missing = None
    if not CHROMIUM.exists():
        missing = f"{CHROMIUM} is missing (apt-get install chromium)"
    else:
        try:
            import playwright.sync_api  # noqa: F401
        except ImportError:
            missing = "the playwright Python package is missing (pip install -r requirements-test.txt)"
    if missing:
        if os.environ.get("SAFETAB_REQUIRE_BROWSER") == "1":
            pytest.fail(f"SAFETAB_REQUIRE_BROWSER=1 but {missing}", pytrace=False)
        pytest.skip(missing)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    _require_browser()
    port = _free_port()
    log = tmp_path_factory.mktemp("server") / "streamlit.log"
    cmd = [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true",
           "--server.port", str(port), "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false",
           "--server.fileWatcherType", "none"]
    with open(log, "wb") as fh:
        proc = subprocess.Popen(cmd, cwd=REPO, stdout=fh, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                    if r.read().strip() == b"ok":
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"streamlit did not start:\n{log.read_text()[-3000:]}", pytrace=False)
            time.sleep(0.3)
        yield url
    finally:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=10)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)


@pytest.fixture(scope="module")
def browser(server):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=LAUNCH_ARGS)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture
def page(browser, tmp_path):
    context = browser.new_context(viewport={"width": WIDTH, "height": 1000}, accept_downloads=True)
    pg = context.new_page()
    pg.set_default_timeout(30_000)
    try:
        yield pg
    finally:
        context.close()


def _open(page, url: str, text: str):
    page.goto(url)
    page.get_by_text(text, exact=False).first.wait_for()
    _settle(page)


SETTLED = """() => {
  const app = document.querySelector('[data-testid="stApp"]');
  if (!app || app.getAttribute('data-test-script-state') !== 'notRunning') return false;
  if (document.querySelectorAll('[data-testid="stSkeleton"]').length) return false;
  const charts = document.querySelectorAll('[data-testid="stPlotlyChart"]').length;
  return document.querySelectorAll('[data-testid="stPlotlyChart"] .main-svg').length >= charts;
}"""


def _settle(page, pause: float = 0.5):
    """Wait until the script run is over and every element (tables, charts) is drawn."""
    time.sleep(0.3)
    page.wait_for_function(SETTLED, timeout=60_000, polling=200)
    time.sleep(pause)


def _screenshot(page, name: str, width: int = WIDTH):
    SHOTS.mkdir(parents=True, exist_ok=True)
    height = page.evaluate("() => document.querySelector('[data-testid=\"stMain\"]').scrollHeight")
    page.set_viewport_size({"width": width, "height": min(int(height) + 20, 7000)})
    time.sleep(1.5)  # charts re-layout to the new size
    page.screenshot(path=str(SHOTS / f"{name}.png"))
    page.set_viewport_size({"width": width, "height": 1000})


#: What is cut off on the page: metric values and labels wider than their box, text
#: shown with an ellipsis, tables whose right-hand columns are hidden behind a
#: horizontal scroll, a page that scrolls sideways. Returns plain descriptions.
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
  main.querySelectorAll('[data-testid="stDataFrame"]').forEach((d, i) => {
    const sc = d.querySelector('.dvn-scroller');
    if (sc && clipped(sc)) {
      const head = [...d.querySelectorAll('[role="columnheader"]')].map(h => h.innerText).join(' | ');
      bad.push('table ' + i + ' hides columns (' + sc.scrollWidth + ' > ' + sc.clientWidth + ' px): ' + head.slice(0, 80));
    }
  });
  if (document.scrollingElement.scrollWidth > window.innerWidth + 1) bad.push('the page scrolls sideways');
  return [...new Set(bad)];
}"""


def _nothing_cut_off(page, where: str):
    bad = page.evaluate(CUT_OFF)
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
        editor = page.locator("[data-testid='stDataFrame']").first
        box = editor.bounding_box()
        page.mouse.click(box["x"] + 30, box["y"] + 52)  # first body cell
        for key in ["ArrowRight"] * right + ["ArrowDown"] * down:
            page.keyboard.press(key)
            time.sleep(0.05)
        try:  # the grid marks the selected cell for screen readers once it has drawn it
            page.locator(f"[data-testid='stDataFrame'] {selected}").first.wait_for(state="attached", timeout=3_000)
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


def _download(page, button_name: str) -> bytes:
    with page.expect_download() as info:
        page.get_by_role("button", name=button_name).first.click()
    return Path(info.value.path()).read_bytes()


# ------------------------------------------------------------------------------ tests
def test_deep_link_on_a_fresh_server_restores_the_configuration(server, page):
    """First request of the server goes straight to a page with a shared link."""
    from calculators.presets import production_2020
    from ui import urlcodec

    token = urlcodec.encode(production_2020().updated(max_race_codes=3))
    _open(page, f"{server}/budget?config={token}", "Stability S = 4")
    nav = page.locator("[data-testid='stSidebarNav']").inner_text()
    assert "Budget and MOE planner" in nav and "Run the mechanism" in nav
    # two sections: SafeTab-P's own pages (the glossary among them), then the other methods
    assert nav.index("SafeTab-P") < nav.index("Budget and MOE planner") < nav.index("Compare methods")
    assert nav.index("SafeTab-P") < nav.index("Glossary") < nav.index("Compare methods")
    assert nav.index("Compare methods") < nav.index("Methods at a glance")
    assert "Configuration restored from the link" in page.inner_text("body")


def test_overview(server, page):
    _open(page, server, "SafeTab-P Studio")
    page.get_by_text("4.944").first.wait_for()
    body = page.inner_text("body")
    assert "19 of 20" in body and "25.36" in body and "26.28" in body
    _screenshot(page, "overview")


def test_budget_planner_r_changes_s_and_the_url(server, page):
    from calculators import budget

    _open(page, f"{server}/budget", "Stability S = 9")
    page.get_by_text("MOE against the budget").first.wait_for()
    _screenshot(page, "budget")
    # type a MOE target of 8 for COUNTY Detailed (row 6, column "MOE target"): rho follows
    time.sleep(1.5)  # the page re-lays out after the screenshot's resize
    _type_in_cell(page, 3, 5, "8")  # column 3: MOE target, row 5: COUNTY Detailed
    rho = float(budget.rho_level_for_exact_moe(8, 9, 0.1))  # the exact MOE meets targets by default
    page.get_by_text(f"{4.944 - 0.159 + rho:.4g}").first.wait_for()
    _settle(page)
    slider = page.locator("[data-testid='stSlider'] input[type='range']").first
    slider.focus()
    slider.press("Home")
    page.get_by_text("Stability S = 3").wait_for()
    _settle(page)
    assert "config=" in page.url
    # the sidebar of every page shows the change
    assert "r = 1 (S = 3)" in page.locator("[data-testid='stSidebar']").inner_text()
    moe = int(budget.moe_for_rho(0.159, 3, 0.1))
    assert moe < 10
    page.get_by_role("link", name="Overview").click()
    page.get_by_text("S = 3 here").wait_for()


def test_adaptive_thresholds(server, page):
    _open(page, f"{server}/adaptive", "Which table a group gets")
    _screenshot(page, "adaptive")
    box = page.get_by_role("spinbutton", name="Θ1 (persons)")
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
    box = page.get_by_role("spinbutton", name="Zero-suppression chance p")
    box.fill("0.99")
    box.press("Enter")
    want = suppression.threshold(budget.sigma2_stage2(0.159, 0.1, 9), 0.99)
    page.get_by_text(f"threshold T = {want}").wait_for()
    # the page redraws as a fragment: the address bar and the sidebar still follow the plan
    _settle(page)
    assert "config=" in page.url
    assert "2020 production plan, edited" in page.locator("[data-testid='stSidebar']").inner_text()
    # the chosen n is marked on the curves and redraws them
    box = page.get_by_role("spinbutton", name="True count n (persons)")
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
    _settle(page, 1.0)
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
    data = _download(page, "T1 files (zip)")
    zpath = tmp_path / "t1.zip"
    zpath.write_bytes(data)
    with zipfile.ZipFile(zpath) as zf:
        names = zf.namelist()
        t1 = [n for n in names if n.startswith("t1/")]
        assert t1 and all(n.endswith(".csv") for n in t1)
        rows = zf.read(t1[0]).decode().splitlines()
        assert rows[0] == "REGION_ID|REGION_TYPE|ITERATION_CODE|COUNT"
        assert len(rows) > 1 and all(r.count("|") == 3 for r in rows[1:])
        assert all(r.rsplit("|", 1)[1].lstrip("-").isdigit() for r in rows[1:])
    manifest = json.loads(_download(page, "manifest.json"))
    assert manifest["mode"]["for_release"] is False
    assert manifest["confidential"]["persons"]["counted"] == 50_000


def test_configuration_export(server, page):
    from calculators.presets import production_2020

    _open(page, f"{server}/configuration", "Shareable link")
    _screenshot(page, "configuration")
    exported = json.loads(_download(page, "Download config.json"))
    assert exported == production_2020().to_dict()


def _all_pages() -> list[str]:
    from ui import compare

    return list(PAGES) + [Path(m.path).stem for m in compare.METHODS]


@pytest.mark.parametrize("width", WIDTHS)
def test_every_page_fits_at_common_widths(server, browser, width):
    """Nothing is cut off on any page, at a laptop's and a desk screen's width: key
    numbers, labels, buttons and every table column are visible."""
    context = browser.new_context(viewport={"width": width, "height": 1000})
    page = context.new_page()
    page.set_default_timeout(60_000)
    try:
        for name in _all_pages():
            _open(page, f"{server}/{name}", "SafeTab-P")
            _nothing_cut_off(page, f"{name or 'overview'} at {width} px")
            if name == "budget":  # the planner's other tabs
                for tab in ("Race multiplicity r", "Two plans side by side"):
                    page.get_by_role("tab", name=tab).click()
                    _settle(page)
                    _nothing_cut_off(page, f"budget, tab {tab!r}, at {width} px")
                page.get_by_role("tab", name="MOE against the budget").click()
                _settle(page)
            _screenshot(page, f"{name or 'overview'}_{width}", width)
    finally:
        context.close()


def test_typed_values_are_used_as_typed_or_refused_in_the_browser(server, page):
    """The planner's MOE target and budget cells take text: '2.5' is refused with a
    message next to the table (a number column would have read it as 25), '1e8' is
    used and explained."""
    _open(page, f"{server}/budget", "Stability S = 9")

    _type_in_cell(page, 3, 5, "2.5")  # column 3: MOE target, row 5: COUNTY Detailed
    page.get_by_text("'2.5' is not a whole number of persons").wait_for()
    _settle(page)
    body = page.inner_text("[data-testid='stMain']")
    assert "COUNTY Detailed, MOE target" in body and "the target stays 11" in body
    i = body.find("of the release")
    assert "4.944" in body[i - 40:i + 40], body[max(0, i - 300):i + 200]  # the plan did not change
    _type_in_cell(page, 4, 5, "1e8")  # column 4: rho
    page.get_by_text("Budgets to double-check").first.wait_for()
    _settle(page)
    body = page.inner_text("[data-testid='stMain']")
    if "ρ = 1e+08 means ε ≈ 1e+08" not in body:
        _screenshot(page, "typed_values_failure")
    assert "ρ = 1e+08 means ε ≈ 1e+08" in body and "essentially no privacy" in body, body[body.find("Budgets"):][:600]
