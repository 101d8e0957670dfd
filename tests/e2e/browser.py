"""What every browser test shares: Debian's Chromium (never a downloaded browser), a free
loopback port, and a Streamlit server of app.py that is always terminated.

`tests/e2e/conftest.py` turns these into fixtures: one server and one browser for the
whole run (per pytest-xdist worker), shared by every browser test that needs the app as
shipped; a test that needs another server (e.g. with sign-in configured) starts its own
with `streamlit_server`.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = Path("/usr/bin/chromium")
LAUNCH_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
               "--disable-sync", "--no-first-run"]
#: Debian's headless build of the same Chromium (package chromium-headless-shell, same version and
#: engine, no window code): the browser tests drive it when it is installed, Chromium otherwise. It
#: does the same work with less CPU (benchmarks/RESULTS.md, "Round 7"). Hinted, it would round every
#: glyph's advance to whole pixels (text about 1 % wider than Chromium's, and the page-fit test would
#: not measure what Chromium shows); with hinting off (SHELL_ARGS) every text is as wide as in
#: Chromium, to the hundredth of a pixel: tests/e2e/test_headless_shell.py checks it.
HEADLESS_SHELL = Path("/usr/lib/chromium/chromium-headless-shell")
SHELL_ARGS = ["--font-render-hinting=none"]


def executable() -> tuple[Path, list[str]]:
    """The browser the tests drive and its launch arguments: Debian's headless shell when it is
    installed (HEADLESS_SHELL), else Chromium."""
    if HEADLESS_SHELL.exists():
        return HEADLESS_SHELL, LAUNCH_ARGS + SHELL_ARGS
    return CHROMIUM, LAUNCH_ARGS


#: Set on a test's item when its call failed (tests/e2e/conftest.py), read by `failed`.
FAILED = pytest.StashKey[bool]()


def failed(item) -> bool:
    """Whether the test `item` has failed (a fixture's teardown pictures the page then)."""
    return item.stash.get(FAILED, False)


def require_browser() -> None:
    """Skip the test without Chromium or Playwright; fail instead when SAFETAB_REQUIRE_BROWSER=1 (CI)."""
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


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def running(cmd: Sequence[str], *, cwd: Path, env: Mapping[str, str], log: Path, ready: Callable[[], bool],
            what: str, startup_seconds: float = 90, poll: float = 0.3) -> Iterator[subprocess.Popen]:
    """Start `cmd` in its own process group (output to `log`), wait until `ready()` is true
    (a test fails, with the log's end, if the process exits or `startup_seconds` pass first),
    and terminate the whole group on exit, whatever happened."""
    with open(log, "wb") as fh:
        proc = subprocess.Popen(list(cmd), cwd=cwd, stdout=fh, stderr=subprocess.STDOUT, start_new_session=True,
                                env={**os.environ, **env})
    try:
        deadline = time.monotonic() + startup_seconds
        while True:
            try:
                if ready():
                    break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"{what} did not start:\n{log.read_text()[-3000:]}", pytrace=False)
            time.sleep(poll)
        yield proc
    finally:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=10)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)


def answers(url: str, expected: bytes | None = None) -> bool:
    """`url` answers 200 (with exactly `expected` as its body, stripped, if given)."""
    with urllib.request.urlopen(url, timeout=2) as r:
        return r.status == 200 and (expected is None or r.read().strip() == expected)


@contextlib.contextmanager
def streamlit_server(log: Path, cwd: Path = REPO, env: Mapping[str, str] | None = None,
                     startup_seconds: float = 90, port: int | None = None, args: Sequence[str] = ()) -> Iterator[str]:
    """`streamlit run app.py` in `cwd` on a free loopback port (or `port`, when the test must
    know it first, e.g. for a sign-in redirect address), with more options `args` (e.g.
    ``--secrets.files``); yields its URL once it answers its health check, and terminates it
    (and its process group) on exit, whatever happened."""
    port = free_port() if port is None else port
    cmd = [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true",
           "--server.port", str(port), "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false",
           "--server.fileWatcherType", "none", *args]
    url = f"http://127.0.0.1:{port}"
    with running(cmd, cwd=cwd, env=env or {}, log=log, ready=lambda: answers(f"{url}/_stcore/health", b"ok"),
                 what="streamlit", startup_seconds=startup_seconds):
        yield url


#: Installed in every page before the app's own scripts (`new_context`): when the DOM last
#: changed, and when the app's websocket last sent a message to the server (a widget
#: changed, a rerun asked for) and last received one (a script run's elements, its end).
WATCH = """(() => {
  if (window.__settle) return;
  const w = window.__settle = {mutated: performance.now(), sent: 0, received: 0};
  new MutationObserver(() => { w.mutated = performance.now(); })
    .observe(document, {subtree: true, childList: true, attributes: true, characterData: true});
  const Native = window.WebSocket;
  window.WebSocket = class extends Native {
    constructor(...args) {
      super(...args);
      this.addEventListener('message', () => { w.received = performance.now(); });
    }
    send(data) { w.sent = performance.now(); return super.send(data); }
  };
})()"""

#: The page has settled: the app is connected and no script run is going on, every
#: element is drawn (no placeholder, every chart has its SVG), the server has answered
#: the last message sent to it, and neither the DOM nor the websocket has changed for
#: `quiet` ms, counted from `start` (when the settle was asked for) at the earliest.
#: The quiet period covers a rerun asked for just before `start` that has not shown
#: itself yet: its request is an unanswered message, its answer a change.
SETTLED = """([start, quiet]) => {
  const w = window.__settle;
  if (!w) throw new Error('the page has no settle watcher: open it in a context from tests.e2e.browser.new_context');
  const app = document.querySelector('[data-testid="stApp"]');
  if (!app || app.getAttribute('data-test-script-state') !== 'notRunning') return false;
  if (document.querySelector('[data-testid="stSkeleton"]')) return false;
  const charts = document.querySelectorAll('[data-testid="stPlotlyChart"]').length;
  if (document.querySelectorAll('[data-testid="stPlotlyChart"] .main-svg').length < charts) return false;
  if (w.sent > w.received) return false;
  return performance.now() - Math.max(start, w.mutated, w.received) >= quiet;
}"""


def settle(page, quiet_ms: int = 400, timeout_ms: int = 600_000) -> None:
    """Wait until the page has settled (SETTLED): the script run is over, every element
    is drawn and nothing has changed for `quiet_ms`. No fixed sleep: a page that is
    ready returns after the quiet period, a slow one is waited for (up to `timeout_ms`:
    the method studies take minutes on a loaded machine)."""
    start = page.evaluate("() => performance.now()")
    page.wait_for_function(SETTLED, arg=[start, quiet_ms], timeout=timeout_ms, polling=100)


def new_context(browser, **options):
    """A fresh browser context (no cookies or storage of another test) whose pages carry
    the settle watcher (WATCH)."""
    context = browser.new_context(**options)
    context.add_init_script(script=WATCH)
    return context


@contextlib.contextmanager
def new_page(browser, width: int, height: int = 1000, **options) -> Iterator[object]:
    """A page in a fresh browser context (no cookies or storage of another test), closed on exit."""
    context = new_context(browser, viewport={"width": width, "height": height}, **options)
    pg = context.new_page()
    pg.set_default_timeout(30_000)
    try:
        yield pg
    finally:
        context.close()


class ReusedPage:
    """One browser page, in a context of its own, lent to a module's tests one after
    another (`take`, `give_back`): Chromium starts the page's renderer and the app's
    scripts once, not once per test (a page in a new context costs about 3 s more CPU to
    load the app). Between tests it is emptied as a new context would be: it leaves the
    app for about:blank (the server ends that session; the next test's first address
    starts a new one), the app's local and session storage and the context's cookies are
    cleared, and the window size and default timeout are set back. A page that cannot be
    emptied (a test left it broken) is closed with its context; the next test gets a new one."""

    def __init__(self, browser, width: int, height: int = 1000, **options):
        self._browser, self._size, self._options = browser, {"width": width, "height": height}, options
        self._context = self._page = None

    def take(self):
        if self._page is None:
            self._context = new_context(self._browser, viewport=self._size, **self._options)
            self._page = self._context.new_page()
        self._page.set_viewport_size(self._size)
        self._page.set_default_timeout(30_000)
        return self._page

    def give_back(self) -> None:
        try:
            if self._page.url.startswith("http"):
                self._page.evaluate("() => { localStorage.clear(); sessionStorage.clear(); }")
            self._page.goto("about:blank")
            self._context.clear_cookies()
        except Exception:  # noqa: BLE001 - whatever broke it, the next test gets a new context
            self.close()

    def close(self) -> None:
        if self._context is not None:
            with contextlib.suppress(Exception):
                self._context.close()
        self._context = self._page = None


@contextlib.contextmanager
def chromium() -> Iterator[object]:
    """A headless Debian Chromium (`executable`) driven by Playwright, closed on exit."""
    from playwright.sync_api import sync_playwright

    path, args = executable()
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(path), args=args)
        try:
            yield b
        finally:
            b.close()
