"""Benchmarks never rot: every script in benchmarks/ runs in its small mode and prints
its figures, and the scripts import nothing from each other (issue 24, item 4).

Each `benchmarks/bench_*.py` takes `--small` (benchmarks/README.md): a run of seconds on
tiny inputs whose last line is `RESULT {json}` with the figures it measured. A new script
without a small mode, or one that stops running, fails here. The Tumult Analytics side
is skipped by the script itself when its environment is absent.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BENCH = REPO / "benchmarks"
SCRIPTS = sorted(BENCH.glob("bench_*.py"))


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


@pytest.mark.timeout(900)
@pytest.mark.parametrize("script", SCRIPTS, ids=[p.stem for p in SCRIPTS])
def test_every_benchmark_runs_in_its_small_mode_and_prints_figures(script, tmp_path):
    env = {**os.environ, "PYTHONPATH": str(REPO), "TMPDIR": str(tmp_path)}
    proc = subprocess.run([sys.executable, str(script), "--small"], cwd=REPO, capture_output=True, text=True,
                          timeout=850, env=env)
    assert proc.returncode == 0, f"{script.name} --small failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    assert lines, f"{script.name} --small printed no RESULT line:\n{proc.stdout[-2000:]}"
    figures = json.loads(lines[-1][len("RESULT "):])
    numbers = _numbers(figures)
    assert numbers and any(x > 0 for x in numbers), figures


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


def test_the_small_flag_is_documented():
    text = (BENCH / "README.md").read_text()
    assert "--small" in text
    for script in SCRIPTS:
        assert script.name in text, f"{script.name} is not described in benchmarks/README.md"
