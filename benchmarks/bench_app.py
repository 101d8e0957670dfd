"""How fast the app answers: control changes and page switches in a real browser.

Starts ``streamlit run app.py`` headless on a free loopback port, drives Debian's
Chromium with Playwright and times, for each user action, the wall-clock time from the
action to the page being settled again: Streamlit's script-state attribute on the app
root (``data-test-script-state``) has gone to "running" and back to "notRunning", no
skeleton placeholder is left and every plotly chart has drawn its SVG (the same
SETTLED condition as tests/e2e/test_browser.py). Both ends are taken with the page's
own clock (``performance.now()``): the start just before the key press or click is
dispatched, the end on the first animation frame at which the page is settled.

Actions (``--rounds`` rounds, 6 by default, each round going through all of them):

* control changes (7 per round): race multiplicity r (slider, keyboard), the stage-1
  fraction gamma and a MOE-target cell of the planner table (COUNTY Detailed, typed
  as a user does: select, Enter, type, Enter) on the planner; Theta_1 on the
  adaptive-tables page; the zero-suppression chance p and the true count n on the
  suppression page; "Only rows that differ" on the Scenarios page with 5 plans;
* page switches (6 per round): sidebar links between those pages, the Scenarios page
  comparing 5 plans on its "Compare plans" tab (four saved scenarios in a temporary
  store, $SAFETAB_STUDIO_DATA, and the current plan) and the overview.

Then, once (not with --small): the Run page's "Everything (zip)" on the sample, from
the click to the finished download, clicked as soon as the results show and again a
while later (the accuracy of the release is computed in the background after the
run), and the decision memo's PDF of one plan, from the click to the download.

The floor: the same timer on the smallest Streamlit app there is (a slider in a fragment,
as the app's controls are, and one line of text that repeats its value), served with the
app's own Streamlit settings (`.streamlit/config.toml`, copied beside it) and drawn by the
same Streamlit and Chromium (`--floor` changes, 10 by default, 3 with --small). No page
of the app can answer faster than that on the machine; the summary gives each control's
median above it.

CPU: for every action the benchmark also reads the CPU time (user + system, from
/proc) that the Streamlit server and every Chromium process used from the action until
the page settled again. The app, the browser and the benchmark share the machine's cores,
so wall-clock time moves with the load while CPU time hardly does: compare versions of
the app by CPU time, and read the wall-clock medians against the targets.

Prints every timing (with its CPU time), then the median and 90th percentile of control
changes and of page switches (and per control), the median CPU time of each, the machine's load average before and after, and
whether the targets are met (median control change < 200 ms, median page switch
< 500 ms, "Everything (zip)" < 3 s, the memo < 5 s). Run from the repository root:

    python benchmarks/bench_app.py               # 6 rounds: 42 control changes, 36 page switches
    python benchmarks/bench_app.py --rounds 10 --width 1400
    python benchmarks/bench_app.py --small       # one round, no run, zip or memo: checks it works

(--small: r, gamma, the planner cell and two page switches once, counted, after 3 floor
changes, the floor and the app in one Chromium, no saved scenarios: seconds.)

Needs /usr/bin/chromium and the playwright package (requirements-test.txt); with
--small and no Chromium it says so and exits 0. The first round warms the server
(imports, caches) and is not counted unless --count-warmup.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
LAUNCH_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
               "--disable-sync", "--no-first-run"]

#: Installed once per page load: counts script runs and keeps the last state change.
_WATCH = """() => {
  if (window.__bench) return;
  const app = document.querySelector('[data-testid="stApp"]');
  window.__bench = {runs: 0, input: null};
  // The user's own action: the key press or mouse press that changes the value or opens
  // the page (typing the digits before Enter changes nothing yet).
  const keys = new Set(['Enter', 'ArrowLeft', 'ArrowRight', 'ArrowUp', 'ArrowDown', 'Home', 'End']);
  document.addEventListener('keydown', (e) => { if (keys.has(e.key)) window.__bench.input = performance.now(); }, true);
  document.addEventListener('mousedown', () => { window.__bench.input = performance.now(); }, true);
  new MutationObserver(() => {
    if (app.getAttribute('data-test-script-state') === 'running') window.__bench.runs += 1;
  }).observe(app, {attributes: true, attributeFilter: ['data-test-script-state']});
}"""

#: True once the action's run is over and the page has settled after it: a run has
#: started since the mark (control changes), or the page shows the title of the page
#: switched to (page switches: a switch can start while a run is still going, with no
#: "notRunning" in between for the observer to see).
_DONE = """([runs0, title]) => {
  const b = window.__bench;
  const app = document.querySelector('[data-testid="stApp"]');
  if (!b || !app) return false;
  if (title === null) { if (b.runs <= runs0) return false; }
  else { const h = document.querySelector('[data-testid="stMain"] h1'); if (!h || h.innerText.trim() !== title) return false; }
  if (app.getAttribute('data-test-script-state') !== 'notRunning') return false;
  if (document.querySelectorAll('[data-testid="stSkeleton"]').length) return false;
  const charts = document.querySelectorAll('[data-testid="stPlotlyChart"]').length;
  if (document.querySelectorAll('[data-testid="stPlotlyChart"] .main-svg').length < charts) return false;
  b.done = performance.now();
  return true;
}"""

_SETTLED = """() => {
  const app = document.querySelector('[data-testid="stApp"]');
  if (!app || app.getAttribute('data-test-script-state') !== 'notRunning') return false;
  if (document.querySelectorAll('[data-testid="stSkeleton"]').length) return false;
  const charts = document.querySelectorAll('[data-testid="stPlotlyChart"]').length;
  return document.querySelectorAll('[data-testid="stPlotlyChart"] .main-svg').length >= charts;
}"""


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _processes() -> dict[int, tuple[int, int]]:
    """Every process's parent and CPU time (clock ticks of user + system), from /proc."""
    out = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()  # the command name may hold spaces
        except OSError:  # the process ended meanwhile
            continue
        out[int(name)] = (int(fields[1]), int(fields[11]) + int(fields[12]))
    return out


def _is_browser(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return b"chromium" in fh.read().split(b"\0", 1)[0]
    except OSError:
        return False


class Cpu:
    """CPU time used by the Streamlit server and the browser (all of their processes):
    what one action costs the machine, independent of how busy the machine is."""

    TICK_MS = 1000 / os.sysconf("SC_CLK_TCK")

    def __init__(self, server_pid: int, browsers: bool = True):
        self.server_pid = server_pid
        self.browsers = browsers

    def ms(self) -> float:
        procs = _processes()
        kids: dict[int, list[int]] = {}
        for pid, (ppid, _) in procs.items():
            kids.setdefault(ppid, []).append(pid)
        # the server's process tree and the browser's (Chromium under Playwright's driver,
        # itself a child of this process); the benchmark's own Python and the driver are not counted
        roots = [self.server_pid]
        if self.browsers:
            roots += [p for k in kids.get(os.getpid(), []) for p in kids.get(k, []) if _is_browser(p)]
        seen, todo = set(), list(roots)
        while todo:
            pid = todo.pop()
            if pid in seen or pid not in procs:
                continue
            seen.add(pid)
            todo += kids.get(pid, [])
        return sum(procs[p][1] for p in seen) * self.TICK_MS


#: The saved scenarios the Scenarios page compares with the current plan (5 plans).
SCENARIOS = {"Bench r = 3": {"max_race_codes": 3}, "Bench r = 5": {"max_race_codes": 5},
             "Bench gamma 0.2": {"privacy_budget_p_stage_1_fraction": 0.2},
             "Bench p 0.99": {"zero_suppression_chance": 0.99}}


def _scenario_store(folder: Path) -> None:
    """Four saved scenarios in `folder` (the server's $SAFETAB_STUDIO_DATA)."""
    sys.path.insert(0, str(ROOT))
    from calculators.presets import production_2020
    from ui.core import planner
    from ui.committee import scenarios

    store = scenarios.ScenarioStore(folder / "scenarios.sqlite3")
    for name, changes in SCENARIOS.items():
        store.save(name, production_2020().updated(**changes), planner.production_targets(), overwrite=True)


def _start_server(port: int, log: Path, data: Path, root: Path | None = None) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true", "--server.port",
           str(port), "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false",
           "--server.fileWatcherType", "none"]
    env = {**os.environ, "SAFETAB_STUDIO_DATA": str(data)}
    with open(log, "wb") as fh:
        proc = subprocess.Popen(cmd, cwd=root or ROOT, stdout=fh, stderr=subprocess.STDOUT, start_new_session=True, env=env)
    deadline = time.monotonic() + 90
    while True:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2) as r:
                if r.read().strip() == b"ok":
                    return proc
        except OSError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            _stop(proc)
            raise SystemExit(f"streamlit did not start; see {log}")
        time.sleep(0.3)


def _stop(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=10)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait(timeout=10)


class Timer:
    """Times one action on a page: mark, act, wait for a finished run, read the clock."""

    def __init__(self, page, cpu: Cpu):
        self.page = page
        self.cpu = cpu
        #: CPU milliseconds of each counted action, by action (`_record`)
        self.cpu_ms: dict[str, list[float]] = {}
        self.last_cpu: float | None = None

    def settle(self) -> None:
        self.page.wait_for_function(_SETTLED, timeout=120_000, polling=100)
        self.page.evaluate(_WATCH)

    def time(self, action, title: str | None = None) -> float | None:
        """Milliseconds from the action to the settled page (for a page switch, the page
        titled `title`); None (reported) if that did not happen within a minute."""
        from playwright.sync_api import TimeoutError as PlaywrightTimeout

        page = self.page
        page.evaluate(_WATCH)
        runs0 = page.evaluate("() => window.__bench.runs")
        cpu0 = self.cpu.ms()
        start = page.evaluate("() => performance.now()")
        action()
        try:
            page.wait_for_function(_DONE, arg=[runs0, title], timeout=60_000, polling="raf")
        except PlaywrightTimeout:
            self.settle()
            return None
        done, pressed = page.evaluate("() => [window.__bench.done, window.__bench.input]")
        # from the key press or click (Playwright's own steps before it, e.g. filling the
        # box, are not the app's time); the mark before the action if no press was seen
        ms = done - (pressed if pressed is not None and pressed >= start else start)
        time.sleep(0.25)  # let late messages land before the next action
        self.settle()
        self.last_cpu = self.cpu.ms() - cpu0  # everything the action caused, late messages included
        return ms


def _type_into(page, label: str, value: str):
    def act():
        box = page.get_by_role("textbox", name=label)
        box.fill(value)
        box.press("Enter")
    return act


def _cell_edit(page, right: int, down: int, value: str):
    """Type into the planner table's cell as a user does (the timer starts at the Enter
    that commits it): select the cell with the arrow keys, Enter, type, Enter."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    def act():
        cell = page.locator("#portal textarea.gdg-input")
        for _ in range(5):  # a key press can be lost while the grid redraws on a loaded machine: try again
            editor = page.locator("[class*='st-key-planner_'] [data-testid='stDataFrame']").first
            editor.scroll_into_view_if_needed()
            box = editor.bounding_box()
            page.mouse.click(box["x"] + 30, box["y"] + 52)  # the first body cell
            for key in ["ArrowRight"] * right + ["ArrowDown"] * down:
                page.keyboard.press(key)
                time.sleep(0.05)
            try:
                editor.locator(f"td[data-testid='glide-cell-{right}-{down}']"
                             f"[aria-selected='true']").first.wait_for(state="attached", timeout=5_000)
                page.keyboard.press("Enter")
                cell.wait_for(timeout=5_000)
                break
            except PlaywrightTimeout:
                page.keyboard.press("Escape")
                page.wait_for_function(_SETTLED, timeout=120_000, polling=100)
        cell.fill(value)
        page.evaluate("() => { window.__bench.input = null; }")  # the commit below is the user's action
        cell.press("Enter")
    return act


def _pick_five(page) -> None:
    """Compare 5 plans on the Scenarios page: open its "Compare plans" tab (it stays open
    when the user comes back to the page), which shows the current plan and two
    scenarios; add the other two."""
    page.get_by_role("tab", name="Compare plans").click()
    box = page.get_by_role("combobox", name="Plans to compare (any number; the first is the reference)")
    box.wait_for(timeout=120_000)
    for name in SCENARIOS:
        if name in page.locator("[data-testid='stMultiSelect']").first.inner_text():
            continue
        box.click()
        box.fill(name)
        page.get_by_role("option", name=name).first.click()
        page.keyboard.press("Escape")
        time.sleep(0.5)
        page.wait_for_function(_SETTLED, timeout=120_000, polling=100)
    page.get_by_text("5 plans:").first.wait_for(timeout=120_000)


#: The sidebar link and the title of each page the benchmark switches to.
_TITLES = {"Budget and MOE planner": "Budget and MOE planner", "Adaptive tables": "Adaptive tables",
           "Suppression": "Suppression", "Configuration": "Configuration", "Overview": "SafeTab-P Studio",
           "Scenarios": "Scenarios"}


def _nav(page, name: str):
    return lambda: page.locator("[data-testid='stSidebarNav']").get_by_role("link", name=name, exact=True).click()


def _switch(timer: Timer, page, name: str) -> float | None:
    return timer.time(_nav(page, name), _TITLES[name])


def _record(store: dict, key: str, ms: float | None, rnd: int, counted: bool, timer: Timer) -> None:
    tag = f"round {rnd}{'' if counted else ' (warm-up)'}  {key:<28}"
    if ms is None:
        print(f"{tag} not settled within a minute (not counted)", flush=True)
        return
    if counted:
        store.setdefault(key, []).append(ms)
        timer.cpu_ms.setdefault(key, []).append(timer.last_cpu)
    print(f"{tag} {ms:8.1f} ms  (CPU {timer.last_cpu:6.0f} ms)", flush=True)


def _round(t: Timer, page, rnd: int, counted: bool, controls: dict, switches: dict, small: bool = False) -> None:
    """One round: 7 control changes and 6 page switches (see the module docstring);
    `small`: r, gamma, the cell edit and two page switches."""

    def rec(store: dict, key: str, ms: float | None) -> None:
        _record(store, key, ms, rnd, counted, t)

    rec(switches, "overview -> planner", _switch(t, page, "Budget and MOE planner"))
    slider = page.locator("[data-testid='stSlider'] input[type='range']").first
    key = "ArrowLeft" if rnd % 2 == 0 else "ArrowRight"

    def move_r() -> None:
        slider.focus()
        slider.press(key)

    rec(controls, "r", t.time(move_r))
    gamma = f"{0.1 + 0.01 * ((rnd % 5) + 1):.2f}"
    rec(controls, "gamma", t.time(_type_into(page, "Stage-1 fraction γ", gamma)))
    # column 3: MOE target, row 5: COUNTY Detailed
    rec(controls, "planner cell", t.time(_cell_edit(page, 3, 5, str(10 + rnd % 2))))
    if small:
        rec(switches, "planner -> overview", _switch(t, page, "Overview"))
        return
    rec(switches, "planner -> adaptive", _switch(t, page, "Adaptive tables"))
    rec(controls, "Theta1", t.time(_type_into(page, "Θ1 (persons)", str(500 + 10 * rnd))))
    rec(switches, "adaptive -> suppression", _switch(t, page, "Suppression"))
    p = f"{0.999 - 0.0001 * rnd:.4f}"
    rec(controls, "p", t.time(_type_into(page, "Zero-suppression chance p", p)))
    rec(controls, "n", t.time(_type_into(page, "True count n (persons)", str(5 + rnd))))
    rec(switches, "suppression -> configuration", _switch(t, page, "Configuration"))
    rec(switches, "configuration -> scenarios (5 plans)", _switch(t, page, "Scenarios"))
    if rnd == 0:
        _pick_five(page)
    toggle = page.get_by_text("Only rows that differ", exact=True).first
    rec(controls, "only rows that differ", t.time(lambda: toggle.click()))
    rec(switches, "scenarios -> overview", _switch(t, page, "Overview"))


def _download_seconds(page, button: str, timeout: float = 600) -> float:
    """Seconds from the click on a download button to the finished download."""
    with page.expect_download(timeout=timeout * 1000) as info:
        t0 = time.perf_counter()
        page.get_by_role("button", name=button).first.click()
    info.value.path()  # waits for the whole file
    return time.perf_counter() - t0


def _once(page, url: str, later: float) -> dict[str, float]:
    """The Run page's "Everything (zip)" (right after the results show, and `later`
    seconds after a second run) and the memo's PDF of one plan."""
    out = {}
    page.get_by_role("link", name="Run the mechanism").click()
    page.get_by_text("Shipped sample data").first.wait_for()
    page.get_by_text("Seeded (reproducible, NOT FOR RELEASE)").click()
    page.wait_for_function(_SETTLED, timeout=120_000, polling=100)
    for label, wait in (("Everything (zip), clicked at once", 0.0), (f"Everything (zip), clicked after {later:g} s",
                                                                       later)):
        page.get_by_role("button", name="Run SafeTab-P").click()
        page.get_by_text("Persons counted").first.wait_for(timeout=600_000)
        page.wait_for_function(_SETTLED, timeout=600_000, polling=100)
        time.sleep(wait)
        out[label] = _download_seconds(page, "Everything (zip)")
        print(f"{label:<44} {out[label]:8.2f} s", flush=True)
    page.get_by_role("link", name="Decision memo").click()
    page.get_by_text("What the memo holds").first.wait_for()
    page.wait_for_function(_SETTLED, timeout=120_000, polling=100)
    time.sleep(8)  # the page opens the browser that draws the charts while the user reads it
    out["memo PDF, one plan"] = _download_seconds(page, "Decision memo (PDF)")
    print(f"{'memo PDF, one plan':<44} {out['memo PDF, one plan']:8.2f} s", flush=True)
    return out


#: The smallest app: what any control change costs before the app does anything.
_FLOOR_APP = """import streamlit as st

st.title("Floor")


@st.fragment
def _part():
    st.slider("value", 1, 8, 5, key="w")
    st.markdown(f"value is {st.session_state.w}")


_part()
"""

#: The floor app has settled on the value `want`: its run is over and the text shows it.
_FLOOR_DONE = """([want]) => {
  const app = document.querySelector('[data-testid="stApp"]');
  if (!app || app.getAttribute('data-test-script-state') !== 'notRunning') return false;
  const md = [...document.querySelectorAll('[data-testid="stMarkdown"]')].map((e) => e.innerText.trim());
  if (!md.includes(want)) return false;
  window.__bench.done = performance.now();
  return true;
}"""


def _floor_folder() -> Path:
    """A temporary folder holding the floor app and the app's own Streamlit settings
    (`.streamlit/config.toml`), so that the two differ only in what their pages draw;
    with Streamlit's defaults the floor would include, for one, a full garbage collection
    after every script run, which the app turns off."""
    folder = Path(tempfile.mkdtemp(prefix="bench-app-floor-"))
    (folder / "app.py").write_text(_FLOOR_APP)
    (folder / ".streamlit").mkdir()
    shutil.copyfile(ROOT / ".streamlit" / "config.toml", folder / ".streamlit" / "config.toml")
    return folder


@contextlib.contextmanager
def _chromium(shared=None):
    """Chromium under Playwright, closed afterwards; `shared`: that browser instead, left
    open (--small measures the floor and the app in one browser: one start-up less)."""
    if shared is not None:
        yield shared
        return
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=LAUNCH_ARGS)
        yield browser
        browser.close()


def floor(changes: int, shared=None) -> tuple[list[float], list[float]]:
    """Milliseconds of `changes` slider changes of the floor app (after one not counted),
    from the key press to the text showing the new value, and the CPU milliseconds of each
    (server and browser, as for the app's actions). `shared`: a browser to use (`_chromium`)."""
    folder = _floor_folder()
    port = _free_port()
    proc = _start_server(port, folder / "server.log", folder, root=folder)
    out, cpu_ms, cpu = [], [], Cpu(proc.pid)
    try:
        with _chromium(shared) as browser:
            page = browser.new_page(viewport={"width": 1280, "height": 1000})
            page.goto(f"http://127.0.0.1:{port}")
            page.get_by_text("value is 5").wait_for(timeout=60_000)
            page.evaluate(_WATCH)
            slider = page.locator("[data-testid='stSlider'] input[type='range']").first
            for k in range(changes + 1):
                want = 4 if k % 2 == 0 else 5
                cpu0 = cpu.ms()
                slider.focus()
                slider.press("ArrowLeft" if want == 4 else "ArrowRight")
                page.wait_for_function(_FLOOR_DONE, arg=[f"value is {want}"], timeout=60_000, polling="raf")
                done, pressed = page.evaluate("() => [window.__bench.done, window.__bench.input]")
                time.sleep(0.25)
                if k:
                    out.append(done - pressed)
                    cpu_ms.append(cpu.ms() - cpu0)
            page.close()
    finally:
        _stop(proc)
    return out, cpu_ms


def run(args, shared=None) -> dict:
    """The rounds of actions (and, not with --small, the downloads) on the app served by a
    server of its own; `shared`: a browser to use (`_chromium`)."""
    port = _free_port()
    log = Path(args.log)
    data = Path(tempfile.mkdtemp(prefix="bench-app-"))
    if not args.small:  # the small round does not open the Scenarios page
        _scenario_store(data)
    proc = _start_server(port, log, data)
    url = f"http://127.0.0.1:{port}"
    names = ("r", "gamma", "planner cell") if args.small else \
        ("r", "gamma", "planner cell", "Theta1", "p", "n", "only rows that differ")
    controls: dict[str, list[float]] = {k: [] for k in names}
    switches: dict[str, list[float]] = {}
    once: dict[str, float] = {}
    try:
        with _chromium(shared) as browser:
            context = browser.new_context(viewport={"width": args.width, "height": 1000}, accept_downloads=True)
            page = context.new_page()
            page.set_default_timeout(120_000)
            t = Timer(page, Cpu(proc.pid))
            page.goto(url)
            page.get_by_text("SafeTab-P Studio").first.wait_for()
            t.settle()
            rounds = 1 if args.small else args.rounds + 1
            for rnd in range(rounds):
                _round(t, page, rnd, rnd > 0 or args.count_warmup or args.small, controls, switches, args.small)
            if not args.small:
                once = _once(page, url, args.later)
            context.close()
    finally:
        _stop(proc)
    return {"controls": controls, "switches": switches, "once": once, "cpu": t.cpu_ms}


def _summary(name: str, xs: list[float]) -> str:
    xs = sorted(xs)
    p90 = xs[min(len(xs) - 1, round(0.9 * (len(xs) - 1)))]  # nearest rank
    return f"{name:<30} n={len(xs):3d}  median {statistics.median(xs):7.1f} ms  p90 {p90:7.1f} ms  " \
           f"min {xs[0]:7.1f}  max {xs[-1]:7.1f}"


def _cpu_summary(res: dict, floor_cpu: list[float]) -> str:
    """The median CPU time (server + browser) of each kind of action, and of the floor."""
    cpu = res["cpu"]

    def med(keys) -> str:
        xs = [x for k in keys for x in cpu.get(k, [])]
        return f"{statistics.median(xs):7.0f} ms" if xs else "      -"

    lines = ["CPU time per action (Streamlit server + Chromium, all processes), median:"]
    if floor_cpu:
        lines.append(f"  {'floor (smallest app)':<40} {statistics.median(floor_cpu):7.0f} ms")
    lines.append(f"  {'control changes (all)':<40} {med(res['controls'])}")
    lines += [f"    {k:<38} {med([k])}" for k in res["controls"]]
    lines.append(f"  {'page switches (all)':<40} {med(res['switches'])}")
    lines += [f"    {k:<38} {med([k])}" for k in res["switches"]]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=6, help="counted rounds (5 control changes + 5 page switches each)")
    ap.add_argument("--width", type=int, default=1280, help="browser window width in pixels")
    ap.add_argument("--count-warmup", action="store_true", help="count the first (warm-up) round too")
    ap.add_argument("--log", default=str(Path(os.environ.get("TMPDIR", "/tmp")) / "bench_app_streamlit.log"),
                    help="where the server's output goes")
    ap.add_argument("--later", type=float, default=30.0,
                    help="seconds between the run's results and the second click on Everything (zip)")
    ap.add_argument("--floor", type=int, default=None,
                    help="changes of the smallest Streamlit app measured as the floor (10; 3 with --small; 0: none)")
    ap.add_argument("--small", action="store_true",
                    help="one round of r, gamma, a planner cell and two page switches, no run, zip or memo "
                         "(seconds: checks that the benchmark works)")
    args = ap.parse_args(argv)
    if not Path(CHROMIUM).exists():
        print(f"{CHROMIUM} is missing (apt-get install chromium)" + ("; nothing measured" if args.small else ""))
        return 0 if args.small else 1
    print(f"{platform.python_version()} on {os.cpu_count()} CPUs; load average before: "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    n_floor = args.floor if args.floor is not None else (3 if args.small else 10)
    with contextlib.ExitStack() as stack:
        shared = stack.enter_context(_chromium()) if args.small else None
        base, base_cpu = floor(n_floor, shared) if n_floor > 0 else ([], [])
        res = run(args, shared)
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    ctrl = [x for v in res["controls"].values() for x in v]
    sw = [x for v in res["switches"].values() for x in v]
    if not ctrl or not sw:
        print("no timings recorded")
        return 1
    print()
    if base:
        print(_summary("floor (smallest app)", base))
    print(_summary("control changes (all)", ctrl))
    for k, v in res["controls"].items():
        if v:
            print(_summary(f"  {k}", v) + (f"  (floor + {statistics.median(v) - statistics.median(base):.0f})"
                                           if base else ""))
    print(_summary("page switches (all)", sw))
    for k, v in res["switches"].items():
        print(_summary(f"  {k}", v))
    for k, v in res["once"].items():
        print(f"{k:<44} {v:8.2f} s")
    print(_cpu_summary(res, base_cpu))
    print(f"load average after: {load}")
    c_ok, s_ok = statistics.median(ctrl) < 200, statistics.median(sw) < 500
    print(f"target median control change < 200 ms: {'met' if c_ok else 'NOT met'}; "
          f"median page switch < 500 ms: {'met' if s_ok else 'NOT met'}")
    for k, v in res["once"].items():
        limit = 5.0 if k.startswith("memo") else 3.0
        print(f"target {k} < {limit:g} s: {'met' if v < limit else 'NOT met'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
