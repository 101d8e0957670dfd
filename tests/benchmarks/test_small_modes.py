"""Benchmarks never rot: every script in benchmarks/ runs in its small mode, prints its
figures and passes the exactness checks it makes, and the scripts import nothing from
each other (issue 24, item 4).

Each `benchmarks/bench_*.py` takes `--small` (benchmarks/README.md): a run of seconds on
tiny inputs whose last line is `RESULT {json}` with the figures it measured and a
`checks` object (name -> true/false) of what must hold whatever the machine: every
population group output, 0 violations after consistency, no under-protected primary,
the sampler's goodness of fit, the same groups as the files' key set, the same reports
in every layout, ... A new script without a small mode, one that stops running, stops
printing its main figure or fails its own check fails here. No assertion is on a time.

The Tumult Analytics side needs its own environment (`bash benchmarks/setup_tumult_env.sh
DIR`): `test_tumult_side_by_side` runs it when SAFETAB_TUMULT_VENV (or .venv-tumult in
the repository) holds one and is skipped, saying so, otherwise. bench_app.py drives the
app in Chromium: it runs when Chromium and Playwright are there (SAFETAB_REQUIRE_BROWSER=1
makes their absence a failure, as for tests/e2e).
"""

from __future__ import annotations

import ast
import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BENCH = REPO / "benchmarks"
SCRIPTS = sorted(BENCH.glob("bench_*.py"))
#: Scripts that drive a browser (their own test below).
BROWSER_SCRIPTS = {"bench_app"}
#: Per script, the figures its small mode must print (paths into its RESULT; each a finite
#: number > 0). A script not listed must still print some positive figure and a check.
FIGURES = {
    "bench_consistency": [("methods", "none", "wall"), ("methods", "tree-dp", "wall"),
                          ("methods", "least-squares", "stage")],
    "bench_legacy": [("levels", "(COUNTY, 1)", "lps"), ("levels", "(COUNTY, 1)", "protect_and_audit")],
    "bench_mechanism": [("runs", 0, "wall"), ("runs", 0, "cpu"), ("runs", 0, "peak_gb"), ("runs", 0, "groups"),
                        ("runs", 0, "phases", "read_and_count_persons", "wall"),
                        ("runs", 0, "phases", "write_rows", "wall")],
    "bench_noise": [("draws_per_second", "1"), ("draws_per_second", "100"), ("worst_p",)],
    "bench_projection": [("projections", 0, "whole_median_ms"), ("profile_vs_run", "ratio"),
                         ("profile_vs_run", "profile", "wall_s"), ("profile_vs_run", "run", "wall_s")],
    "bench_spines": [("runs", 0, "study_seconds"), ("runs", 0, "blocks")],
    "bench_study": [("layouts", "studio", "per_trial", "wall"), ("layouts", "both", "per_trial", "wall"),
                    ("layouts", "production", "wall"), ("production_per_studio", "wall"),
                    ("layouts", "both", "extrapolated", "wall"), ("parallel", "per_trial", "wall"),
                    ("parallel", "parallel_per_trial", "cpu"), ("parallel", "pss_gb")],
    "bench_tumult": [("runs", 0, "ours_seconds"), ("runs", 0, "ours_warm_seconds"), ("runs", 0, "groups")],
}


def _numbers(value) -> list[float]:
    if isinstance(value, bool):
        return []
    if isinstance(value, (int, float)):
        return [float(value)]
    if isinstance(value, dict):
        return [x for v in value.values() for x in _numbers(v)]
    if isinstance(value, list):
        return [x for v in value for x in _numbers(v)]
    return []


def _at(figures, path: tuple):
    value = figures
    for key in path:
        value = value[key]
    return value


def _run_small(script: Path, tmp_path: Path, *extra: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO), "TMPDIR": str(tmp_path)}
    proc = subprocess.run([sys.executable, str(script), "--small", *extra], cwd=REPO, capture_output=True,
                          text=True, timeout=850, env=env)
    assert proc.returncode == 0, f"{script.name} --small failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
    return proc


def _result(script: Path, proc: subprocess.CompletedProcess) -> dict:
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    assert lines, f"{script.name} --small printed no RESULT line:\n{proc.stdout[-2000:]}"
    return json.loads(lines[-1][len("RESULT "):])


def _assert_figures_and_checks(name: str, figures: dict) -> None:
    for path in FIGURES.get(name, []):
        try:
            value = _at(figures, path)
        except (KeyError, IndexError, TypeError):
            pytest.fail(f"{name} --small: no figure at {path} in its RESULT: {json.dumps(figures)[:1500]}")
        assert isinstance(value, (int, float)) and not isinstance(value, bool), (name, path, value)
        assert math.isfinite(value) and value > 0, (name, path, value)
    assert any(x > 0 for x in _numbers(figures)), figures
    checks = figures.get("checks")
    assert isinstance(checks, dict) and checks, f"{name} --small reports no checks: {figures}"
    failed = [what for what, ok in checks.items() if ok is not True]
    assert not failed, f"{name} --small: checks failed: {failed}"


@pytest.mark.timeout(900)
@pytest.mark.parametrize("script", [s for s in SCRIPTS if s.stem not in BROWSER_SCRIPTS],
                         ids=[s.stem for s in SCRIPTS if s.stem not in BROWSER_SCRIPTS])
def test_every_benchmark_runs_in_its_small_mode_and_its_checks_hold(script, tmp_path):
    figures = _result(script, _run_small(script, tmp_path))
    _assert_figures_and_checks(script.stem, figures)


def test_the_figures_listed_here_are_of_scripts_that_exist():
    assert set(FIGURES) <= {s.stem for s in SCRIPTS}, set(FIGURES) - {s.stem for s in SCRIPTS}


def _tumult_venv() -> Path:
    return Path(os.environ.get("SAFETAB_TUMULT_VENV") or REPO / ".venv-tumult")


@pytest.mark.timeout(900)
def test_tumult_side_by_side(tmp_path):
    """Both sides of bench_tumult.py on 5,000 persons: the same groups, a ratio."""
    venv = _tumult_venv()
    if not (venv / "bin" / "python").exists():
        pytest.skip(f"no Tumult Analytics environment at {venv} (create one with: bash "
                    "benchmarks/setup_tumult_env.sh DIR, then set SAFETAB_TUMULT_VENV=DIR)")
    script = BENCH / "bench_tumult.py"
    figures = _result(script, _run_small(script, tmp_path, "--tumult-venv", str(venv)))
    _assert_figures_and_checks("bench_tumult", figures)
    run = figures["runs"][0]
    assert run.get("tumult") != "failed", run
    assert run["tumult_groups"] == run["groups"] == run["expected_groups"], run
    assert run["ratio"] > 0 and run["tumult_seconds"] > run["tumult_spark_start"] >= 0, run
    # the warm runs (a second run in each process) are timed and compared too
    assert 0 < run["ours_warm_seconds"] and 0 < run["tumult_warm_seconds"] and run["ratio_warm"] > 0, run
    assert figures["checks"]["Tumult Analytics counted the same groups"] is True


@pytest.mark.timeout(900)
@pytest.mark.xdist_group("browser")  # drives Chromium and a server: never beside another browser test
@pytest.mark.parametrize("name", sorted(BROWSER_SCRIPTS))
def test_browser_benchmarks_run_in_their_small_mode(name, tmp_path):
    script = BENCH / f"{name}.py"
    if not script.exists():
        pytest.skip(f"{script.name} is not in this checkout")
    if "--small" not in script.read_text():
        pytest.skip(f"{script.name} has no --small mode in this checkout (issue 20 gives it one)")
    from tests.e2e.browser import require_browser

    require_browser()
    proc = _run_small(script, tmp_path)
    if any(ln.startswith("RESULT ") for ln in proc.stdout.splitlines()):
        figures = _result(script, proc)
        assert any(x > 0 for x in _numbers(figures)), figures
        checks = figures.get("checks", {})
        assert all(ok is True for ok in checks.values()), checks
    else:  # its summary lines: "control changes (all) n=... median X ms ..."
        medians = re.findall(r"^(control changes|page switches) \(all\)\s+n=\s*(\d+)\s+median\s+([\d.]+) ms",
                             proc.stdout, flags=re.M)
        assert {m[0] for m in medians} == {"control changes", "page switches"}, proc.stdout[-2000:]
        assert all(int(n) > 0 and float(ms) > 0 for _, n, ms in medians), medians
        if name == "bench_app":  # the floor: the smallest Streamlit app, timed the same way
            floor = re.findall(r"^floor \(smallest app\)\s+n=\s*(\d+)\s+median\s+([\d.]+) ms", proc.stdout, flags=re.M)
            assert floor and int(floor[0][0]) == 3 and float(floor[0][1]) > 0, proc.stdout[-2000:]
            assert re.search(r"^  r\s+n=.*\(floor \+ -?\d+\)$", proc.stdout, flags=re.M), proc.stdout[-2000:]
            # the CPU time of each kind of action (server + browser), the floor's too
            for what in ("floor \\(smallest app\\)", "control changes \\(all\\)", "page switches \\(all\\)"):
                cpu = re.search(rf"^  {what}\s+(\d+) ms$", proc.stdout, flags=re.M)
                assert cpu and int(cpu.group(1)) > 0, (what, proc.stdout[-2000:])


def _imports(path: Path) -> set[str]:
    """The benchmark modules a script imports (benchmarks.X or X of benchmarks/)."""
    local = {p.stem for p in BENCH.glob("*.py")}
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        for name in names:
            parts = name.split(".")
            if parts[0] == "benchmarks" and len(parts) > 1 and parts[1] in local:
                out.add(parts[1])
            elif parts[0] in local and len(parts) == 1:
                out.add(parts[0])
    return out - {path.stem}


def test_benchmarks_import_nothing_from_each_other_in_a_circle():
    graph = {p.stem: _imports(p) for p in BENCH.glob("*.py")}
    # the scripts share helpers (underscore modules) but never import another script
    for name, deps in graph.items():
        if name.startswith("bench_"):
            assert not {d for d in deps if d.startswith("bench_")}, (name, deps)

    # and nothing imports itself back through others
    def reach(start: str) -> set[str]:
        seen, todo = set(), list(graph[start])
        while todo:
            n = todo.pop()
            if n not in seen:
                seen.add(n)
                todo.extend(graph.get(n, ()))
        return seen
    for name in graph:
        assert name not in reach(name), f"import cycle through {name}"


def test_every_script_has_a_small_mode_and_is_documented():
    text = (BENCH / "README.md").read_text()
    assert "--small" in text
    for script in SCRIPTS:
        assert script.name in text, f"{script.name} is not described in benchmarks/README.md"
        if script.stem not in BROWSER_SCRIPTS:
            assert "--small" in script.read_text() or "SMALL_FLAG" in script.read_text(), script.name
