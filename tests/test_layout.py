"""The package layout: no import cycles, and each layer imports only what lies below it.

The graph is read from the source with `ast` (function-level imports included, since a
cycle hidden in a function is still a cycle a reader has to untangle).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("calculators", "engine", "methods", "ui")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    out = {}
    for pkg in PACKAGES:
        for path in (REPO / pkg).rglob("*.py"):
            out[_module_name(path)] = path
    return out


def _imports(path: Path, modules: dict[str, Path]) -> set[str]:
    """Project modules imported by a file (a `from pkg import sub` counts as pkg.sub)."""
    me = _module_name(path)
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = set()
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [f"{node.module}.{a.name}" for a in node.names] + [node.module]
        for name in names:
            # the longest prefix that is a project module
            parts = name.split(".")
            for i in range(len(parts), 0, -1):
                cand = ".".join(parts[:i])
                if cand in modules and cand != me:
                    found.add(cand)
                    break
    # A package's __init__ importing its own submodules is re-exporting, not depending.
    return {m for m in found if not (path.name == "__init__.py" and m.startswith(me + "."))}


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    graph = {}
    for name, path in modules.items():
        deps = _imports(path, modules)
        # Importing a submodule runs its package's __init__; a package importing its own
        # children is not an edge between different concerns.
        graph[name] = {d for d in deps if not name.startswith(d + ".")}
    return graph


def _find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(n: str) -> list[str] | None:
        state[n] = 1
        stack.append(n)
        for d in sorted(graph.get(n, ())):
            if state.get(d) == 1:
                return stack[stack.index(d):] + [d]
            if d not in state:
                found = visit(d)
                if found:
                    return found
        stack.pop()
        state[n] = 2
        return None

    for n in sorted(graph):
        if n not in state:
            found = visit(n)
            if found:
                return found
    return None


def test_the_graph_is_read():
    g = _graph()
    assert "engine.tabulation.aggregate" in g["engine.run"]
    assert "engine.inputs.validate" in g["engine.tabulation.aggregate"]
    assert "calculators.config" in g["engine.inputs.validate"]


def test_no_import_cycles():
    cycle = _find_cycle(_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_a_cycle_would_be_found():
    assert _find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]


#: What each part may import from the project (prefixes). Lower layers never import
#: higher ones: calculators < engine.inputs < engine.tabulation < engine.release < engine.run.
ALLOWED = {
    "calculators": ("calculators",),
    "methods": ("methods", "calculators"),
    "engine.errors": (),
    "engine.noise": ("engine.noise",),
    "engine.inputs": ("engine.inputs", "engine.errors", "calculators"),
    "engine.tabulation": ("engine.tabulation", "engine.inputs", "engine.errors", "engine.noise", "calculators",
                          "methods"),
    "engine.release": ("engine.release", "engine.tabulation", "engine.inputs", "engine.errors", "calculators"),
    "engine.synthetic": ("engine.synthetic", "engine.inputs", "engine.errors", "calculators"),
}


@pytest.mark.parametrize("part", sorted(ALLOWED))
def test_layers_import_only_what_lies_below(part):
    allowed = ALLOWED[part]
    bad = []
    for name, deps in _graph().items():
        if name == part or name.startswith(part + "."):
            for d in deps:
                if not any(d == a or d.startswith(a + ".") for a in allowed):
                    bad.append(f"{name} imports {d}")
    assert not bad, bad


def _third_party(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module.split(".")[0])
    return out


@pytest.mark.parametrize("pkg", ["calculators", "engine", "methods"])
def test_no_streamlit_outside_the_app(pkg):
    users = [str(p.relative_to(REPO)) for p in (REPO / pkg).rglob("*.py") if "streamlit" in _third_party(p)]
    assert not users, users


def test_methods_do_no_io():
    """Arrays in, arrays out: the methods read and write no files."""
    io_modules = {"os", "io", "pathlib", "shutil", "tempfile", "pyarrow", "pandas", "streamlit", "engine", "ui"}
    bad = {}
    for p in (REPO / "methods").rglob("*.py"):
        used = _third_party(p) & io_modules
        calls_open = any(isinstance(n, ast.Call) and getattr(n.func, "id", None) == "open"
                         for n in ast.walk(ast.parse(p.read_text(encoding="utf-8"))))
        if used or calls_open:
            bad[str(p.relative_to(REPO))] = sorted(used) + (["open()"] if calls_open else [])
    assert not bad, bad


def test_tests_mirror_the_packages():
    """Every sub-package of engine, and calculators and methods, has its tests folder."""
    for pkg in [p for p in (REPO / "engine").iterdir() if (p / "__init__.py").is_file()]:
        assert (REPO / "tests" / "engine" / pkg.name).is_dir(), f"tests/engine/{pkg.name} is missing"
    for pkg in ("calculators", "methods", "ui"):
        assert (REPO / "tests" / pkg).is_dir(), f"tests/{pkg} is missing"
