"""AppTest helpers: the app as a user opens it, page by page."""

from __future__ import annotations

import ast
import os
import re
import threading
from functools import cache
from pathlib import Path

import pytest
from streamlit.components.v2 import manifest_scanner
from streamlit.runtime.scriptrunner.script_cache import ScriptCache
from streamlit.testing.v1 import AppTest, local_script_runner
from streamlit.util import calc_hash

from ui.committee import images

REPO = Path(__file__).resolve().parents[2]
_SCAN = manifest_scanner.scan_component_manifests  # Streamlit's own, before any test replaces it
APP = REPO / "app.py"
SAMPLE = REPO / "sample_data"


@pytest.fixture(autouse=True)
def _served_like_a_running_server(monkeypatch):
    """Run every AppTest script the way a running server does after its first session:
    through app.py and st.navigation.

    AppTest rebuilds Streamlit's PagesManager for every run, and with a pages/ folder
    beside app.py that starts each run in Streamlit's legacy "pages folder" mode, which
    a real server leaves for good once app.py has called st.navigation (see
    ui.core.state.page_setup, and the browser test, which opens a deep link on a fresh
    server). Without this, every run would first run the page alone and rerun. And, as a
    server does once when it starts, the installed packages' components are looked up
    once (`_component_manifests`), not for each new AppTest. And the test waits for a
    script run to end as a server does, woken by the run's end (`_wait_for_the_run`).
    The memo page opens its chart browser on demand (SAFETAB_CHART_BROWSER), not in the
    background.
    """
    from streamlit.runtime import pages_manager
    from streamlit.testing.v1 import app_test, local_script_runner

    original = pages_manager.PagesManager.__init__

    def init(self, *args, **kwargs):
        original(self, *args, **kwargs)
        pages_manager.PagesManager.uses_pages_directory = False

    monkeypatch.setattr(pages_manager.PagesManager, "__init__", init)
    monkeypatch.setattr(app_test, "ScriptCache", _CompiledOnce)  # the pages' scripts
    monkeypatch.setattr(local_script_runner, "ScriptCache", _CompiledOnce)  # app.py's
    monkeypatch.setattr(manifest_scanner, "scan_component_manifests", _component_manifests)
    monkeypatch.setattr(local_script_runner, "require_widgets_deltas", _wait_for_the_run)
    # No AppTest draws a memo picture from the page (AppTest cannot click a download button), so the
    # memo page's chart browser is not opened in the background for each test process (a Chromium
    # start, about 6 s of CPU, each); tests/app/test_app_memo_browser.py tests that setting itself.
    monkeypatch.setenv(images.BACKGROUND_ENV, "on-demand")


def _wait_for_the_run(runner, timeout: float = 3) -> None:
    """Streamlit's AppTest `require_widgets_deltas`, woken by the run's end instead of polling.

    AppTest's own wait wakes every millisecond and scans the run's events each time: while
    a page computes for seconds, that main thread takes the GIL from the script's thread a
    thousand times a second. This one waits on the runner's SHUTDOWN event (the event
    AppTest's `script_stopped` looks for), with the same timeout and the same error."""
    ended = threading.Event()

    def on_event(sender, event, **kwargs) -> None:
        if event == local_script_runner.ScriptRunnerEvent.SHUTDOWN:
            ended.set()

    runner.on_event.connect(on_event, weak=False)
    try:
        if runner.script_stopped() or ended.wait(timeout):
            return
        runner.request_stop()  # as AppTest does: stop the script before failing
        runner.join()
        raise RuntimeError(f"AppTest script run timed out after {timeout}(s)")
    finally:
        runner.on_event.disconnect(on_event)


@cache
def _scanned_manifests() -> tuple:
    return tuple(_SCAN())


def _component_manifests(max_workers: int | None = None) -> list:
    """The installed packages' Streamlit component manifests, scanned once per test process.

    A running server scans every installed distribution once, when it starts; AppTest
    scans them again for each new AppTest (each `open_app`), which was a quarter of the
    CPU of a page's test. The installed packages do not change while the tests run."""
    return list(_scanned_manifests())


@cache
def _compiled(path: str, stamp: tuple[int, int]):
    """The script at `path` as Streamlit compiles it (with its "magic"), once per version of the file."""
    return ScriptCache().get_bytecode(path)


class _CompiledOnce(ScriptCache):
    """A running server compiles app.py and each page once and keeps the code until the file
    changes; AppTest makes a new, empty ScriptCache for every run, so each run parsed and
    rewrote both scripts again (about a third of a page run). This cache keeps the code of
    each script until its file changes (modification time or size)."""

    def get_bytecode(self, script_path: str):
        stat = os.stat(script_path)
        return _compiled(os.path.abspath(script_path), (stat.st_mtime_ns, stat.st_size))


@cache
def app_pages() -> dict[str, str]:
    """Every page of app.py: its address (url_path) -> its script (e.g. "budget" ->
    "app_pages/safetab/budget.py"), read from app.py's st.Page calls and the "Compare
    methods" list they are built from."""
    from ui.compare import layout

    out = {m.url_path: m.path for m in layout.METHODS}
    for node in ast.walk(ast.parse(APP.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "Page" and node.args:
            kw = {k.arg: k.value for k in node.keywords}
            if isinstance(kw.get("default"), ast.Constant) and kw["default"].value is True:
                continue  # the default page is served at the root address, not at its url_path
            if isinstance(node.args[0], ast.Constant) and isinstance(kw.get("url_path"), ast.Constant):
                out[kw["url_path"].value] = node.args[0].value
    return out


def page_script(page: str) -> str:
    """The script of the page at address `page` (e.g. "budget", "compare_spines")."""
    pages = app_pages()
    assert page in pages, f"no page at /{page}: {sorted(pages)}"
    return pages[page]


def open_app(page: str | None = None, query: dict | None = None, timeout: float = 30) -> AppTest:
    """A fresh session of the app (optionally with URL query parameters), on `page`
    (its address, e.g. "budget": the same name the browser shows), opened as a link to
    the page opens it (/budget?config=...): the session's first run draws that page.

    (It used to draw the overview first and then switch: one run more per test that the
    page's drawing does not need. A session that moves between pages does so itself,
    with `at.switch_page`.)"""
    at = AppTest.from_file(str(APP), default_timeout=timeout)
    for k, v in (query or {}).items():
        at.query_params[k] = v
    if page:
        page_script(page)  # the address exists
        # AppTest.switch_page resolves addresses only after a first run; a link names the
        # page by its address, and st.navigation knows a page by the hash of its url_path.
        at._page_hash = calc_hash(page)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    if page:
        assert at._finished_page_script_hash == calc_hash(page), f"/{page} did not open its page"
    return at


def compare_tab(at: AppTest) -> AppTest:
    """Open the Scenarios page's "Compare plans" tab, as a user clicks it (only the open
    tab is drawn)."""
    at.session_state["sc_view"] = "Compare plans"
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def shown(markdown: str) -> str:
    """Markdown source as a reader sees its characters: the backslash escapes that
    `ui.core.widgets.plain` puts before punctuation in user text removed."""
    return re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", markdown).replace("\u2060", "")


def texts(at: AppTest) -> str:
    """All markdown, captions, alerts and metric labels of the page, joined, as shown
    (`shown`: user text is escaped in the source so that it is never read as Markdown)."""
    parts = [m.value for m in at.markdown] + [c.value for c in at.caption]
    for kind in (at.error, at.warning, at.info, at.success):
        parts += [e.value for e in kind]
    parts += [f"{m.label}={m.value}" for m in at.metric]
    return shown("\n".join(parts))


def metric(at: AppTest, label_start: str) -> str:
    found = [m.value for m in at.metric if m.label.startswith(label_start)]
    assert found, f"no metric starting with {label_start!r}: {[m.label for m in at.metric]}"
    return found[0]


def config(at: AppTest):
    return at.session_state["config"]


#: One pytest-xdist worker takes the tests that open the Cell suppression and Consistency pages
#: (their own files, the page-opening test of every method, the layout test of those pages), and
#: one the tests of the Spines page: a page's study of the sample is kept by the page
#: (st.cache_resource, per process) and made once, not again on each worker that opens the page.
STUDIES = pytest.mark.xdist_group("compare-studies")
SPINES = pytest.mark.xdist_group("compare-spines")
#: The pages whose default study is shared that way: address -> its group.
STUDY_GROUPS = {"compare_cell_suppression": STUDIES, "compare_consistency": STUDIES, "compare_spines": SPINES}

needs_sample = pytest.mark.skipif(not (SAMPLE / "data" / "person-records.txt").is_file(),
                                  reason="sample_data/ is not there")


def frame(at: AppTest, *columns: str, index: int = 0):
    """The index-th table of the page having all these columns (read-only tables carry no key)."""
    found = [d.value for d in at.dataframe if set(columns) <= set(d.value.columns)]
    assert len(found) > index, f"no table with columns {columns}: {[list(d.value.columns) for d in at.dataframe]}"
    return found[index]
