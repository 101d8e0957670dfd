"""The package layout: no import cycles, and each layer imports only what lies below it.

The graph is read from the source with `ast` (function-level imports included, since a
cycle hidden in a function is still a cycle a reader has to untangle).
"""

from __future__ import annotations

import ast
from functools import cache
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


@cache  # each file is parsed once per run, however many rules read it (the tests never change a node)
def _nodes(source: str) -> tuple[ast.AST, ...]:
    """Every node of a module's syntax tree (`ast.walk` of its `ast.parse`)."""
    return tuple(ast.walk(ast.parse(source)))


def _imports(path: Path, modules: dict[str, Path]) -> set[str]:
    """Project modules imported by a file (a `from pkg import sub` counts as pkg.sub)."""
    me = _module_name(path)
    found = set()
    for node in _nodes(path.read_text(encoding="utf-8")):
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


@cache  # read once per run: every layer's test walks the same graph (callers never change it)
def _graph() -> dict[str, frozenset[str]]:
    modules = _modules()
    graph = {}
    for name, path in modules.items():
        deps = _imports(path, modules)
        # Importing a submodule runs its package's __init__; a package importing its own
        # children is not an edge between different concerns.
        graph[name] = frozenset(d for d in deps if not name.startswith(d + "."))
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
    # leaf helpers every layer may use: numba compilation with its cache fallback, phase timers
    "engine._jit": (),
    "engine.timing": (),
    "engine.noise": ("engine.noise",),
    "engine.inputs": ("engine.inputs", "engine.errors", "engine._jit", "calculators"),
    "engine.tabulation": ("engine.tabulation", "engine.inputs", "engine.errors", "engine.noise", "engine._jit",
                          "engine.timing", "calculators", "methods"),
    "engine.release": ("engine.release", "engine.tabulation", "engine.inputs", "engine.errors", "engine._jit",
                       "calculators"),
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
    out = set()
    for node in _nodes(path.read_text(encoding="utf-8")):
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
                         for n in _nodes(p.read_text(encoding="utf-8")))
        if used or calls_open:
            bad[str(p.relative_to(REPO))] = sorted(used) + (["open()"] if calls_open else [])
    assert not bad, bad


def test_tests_mirror_the_packages():
    """Every sub-package of engine, and calculators and methods, has its tests folder."""
    for pkg in [p for p in (REPO / "engine").iterdir() if (p / "__init__.py").is_file()]:
        assert (REPO / "tests" / "engine" / pkg.name).is_dir(), f"tests/engine/{pkg.name} is missing"
    for pkg in ("calculators", "methods", "ui"):
        assert (REPO / "tests" / pkg).is_dir(), f"tests/{pkg} is missing"


# --------------------------------------------------------------- the app's ui/ and app_pages/
#: The ui subpackages, one per section of the app, and what each may import from ui/
#: (besides itself): core is below everything; committee and compare both build on core
#: and safetab and never import each other.
UI_SECTIONS = {
    "core": (),
    "safetab": ("core",),
    "committee": ("core", "safetab"),
    "compare": ("core", "safetab"),
    "learn": ("core", "safetab"),
}
#: Deliberate exceptions, each with its reason.
UI_EXCEPTIONS = {
    # the national outcome panel's Scenarios view highlights differing cells with the
    # comparison table's styler (a lazy import inside `projection_panel.compare`)
    ("ui.safetab.projection_panel", "ui.committee.comparison"),
}
#: Page folders that must not reach into each other's helpers.
PAGES_APART = {"compare": ("committee",), "committee": ("compare",)}


def _ui_imports(name: str, source: str) -> set[str]:
    """The ui modules or packages a module imports (function-level imports included),
    as written: `from ui.core import state` gives "ui.core.state", `from ui import x`
    gives "ui.x", `import ui.safetab.runner` gives that, relative imports resolved."""
    package = name.split(".")[:-1]
    found = set()
    for node in _nodes(source):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name == "ui" or a.name.startswith("ui.")}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            if module == "ui" or module.startswith("ui."):
                found |= {f"{module}.{a.name}" for a in node.names}
    return found


def _section(target: str) -> str | None:
    """The subpackage of "ui.<section>..." (None for "ui" itself)."""
    parts = target.split(".")
    return parts[1] if len(parts) > 1 else None


def _ui_violations(sources: dict[str, str]) -> list[str]:
    """Broken rules among ui modules (module name -> source)."""
    bad = []
    for name, source in sources.items():
        parts = name.split(".")
        if parts[0] != "ui" or name == "ui":
            continue
        section = parts[1]
        if section not in UI_SECTIONS:
            bad.append(f"{name} lies directly in ui/ (put it in one of {sorted(UI_SECTIONS)})")
            continue
        for target in sorted(_ui_imports(name, source)):
            other = _section(target)
            if other is None or other not in UI_SECTIONS:
                bad.append(f"{name} imports {target}, which is not in a ui subpackage")
            elif other != section and other not in UI_SECTIONS[section] and not any(
                    name == a and (target == b or target.startswith(b + ".")) for a, b in UI_EXCEPTIONS):
                bad.append(f"{name} ({section}) imports {target} ({other})")
    return bad


def _page_violations(sources: dict[str, str]) -> list[str]:
    """Broken rules among pages (path relative to the repository -> source): ui only
    through its subpackages, and the compare and committee pages apart."""
    bad = []
    for rel, source in sources.items():
        parts = rel.split("/")
        folder = parts[1] if parts[0] == "app_pages" and len(parts) > 2 else None
        if parts[0] == "app_pages" and folder is None:
            bad.append(f"{rel} lies directly in app_pages/ (put it in its section's folder)")
        for target in sorted(_ui_imports(rel.removesuffix(".py").replace("/", "."), source)):
            other = _section(target)
            if other is None or other not in UI_SECTIONS or target == f"ui.{other}":
                bad.append(f"{rel} imports {target}: import a module of a ui subpackage (from ui.core import state)")
            elif other in PAGES_APART.get(folder, ()):
                bad.append(f"{rel} ({folder}) imports {target} ({other})")
    return bad


def _sources(paths) -> dict[str, str]:
    return {p: (REPO / p).read_text(encoding="utf-8") for p in paths}


def test_ui_subpackages_import_only_what_they_may():
    modules = {_module_name(p): p.read_text(encoding="utf-8") for p in (REPO / "ui").rglob("*.py")}
    assert {"ui.core.state", "ui.safetab.runner", "ui.committee.memo", "ui.compare.layout"} <= set(modules)
    assert not _ui_violations(modules), _ui_violations(modules)


def test_the_listed_exceptions_are_still_needed():
    """An exception nobody uses any more is removed from the list."""
    for a, b in UI_EXCEPTIONS:
        path = REPO / (a.replace(".", "/") + ".py")
        assert any(t == b or t.startswith(b + ".") for t in _ui_imports(a, path.read_text(encoding="utf-8"))), (a, b)


def test_no_module_is_left_directly_in_ui():
    flat = sorted(p.name for p in (REPO / "ui").glob("*.py") if p.name != "__init__.py")
    assert not flat, f"modules directly in ui/: {flat}"
    assert sorted(p.name for p in (REPO / "ui").iterdir() if (p / "__init__.py").is_file()) == sorted(UI_SECTIONS)


def test_pages_import_ui_through_its_subpackages():
    paths = [p.relative_to(REPO).as_posix() for p in (REPO / "app_pages").rglob("*.py")] + ["app.py"]
    assert len(paths) > 10
    assert not _page_violations(_sources(paths)), _page_violations(_sources(paths))


def test_the_rules_catch_a_bad_import():
    """Each rule fails on a synthetic module that breaks it (so the checks above can fail)."""
    assert _ui_violations({"ui.core.x": "from ui.safetab import analysis"}) == [
        "ui.core.x (core) imports ui.safetab.analysis (safetab)"]
    assert _ui_violations({"ui.core.x": "def f():\n    import ui.committee.memo\n"}) == [
        "ui.core.x (core) imports ui.committee.memo (committee)"]
    assert _ui_violations({"ui.compare.x": "from ui.committee.memo import Memo"}) == [
        "ui.compare.x (compare) imports ui.committee.memo.Memo (committee)"]
    assert _ui_violations({"ui.committee.x": "from ..compare import layout"}) == [
        "ui.committee.x (committee) imports ui.compare.layout (compare)"]
    assert _ui_violations({"ui.safetab.x": "from ui.committee import comparison"}) == [
        "ui.safetab.x (safetab) imports ui.committee.comparison (committee)"]
    assert _ui_violations({"ui.state": ""}) == [
        "ui.state lies directly in ui/ (put it in one of ['committee', 'compare', 'core', 'learn', 'safetab'])"]
    assert _ui_violations({"ui.core.x": "from ui import planner"}) == [
        "ui.core.x imports ui.planner, which is not in a ui subpackage"]
    # what is allowed passes
    assert not _ui_violations({"ui.committee.x": "from ui.safetab import analysis\nfrom ui.core import state\n"
                                                 "from . import memo"})
    assert not _ui_violations({"ui.safetab.projection_panel": "from ui.committee import comparison"})
    assert _page_violations({"app_pages/compare/x.py": "from ui import state"}) == [
        "app_pages/compare/x.py imports ui.state: import a module of a ui subpackage (from ui.core import state)"]
    assert _page_violations({"app_pages/compare/x.py": "from ui.committee import memo"}) == [
        "app_pages/compare/x.py (compare) imports ui.committee.memo (committee)"]
    assert _page_violations({"app_pages/committee/x.py": "import ui.compare.layout"}) == [
        "app_pages/committee/x.py (committee) imports ui.compare.layout (compare)"]
    assert _page_violations({"app_pages/x.py": ""}) == [
        "app_pages/x.py lies directly in app_pages/ (put it in its section's folder)"]
    assert not _page_violations({"app_pages/compare/x.py": "from ui.compare import layout as compare\n"
                                                        "from ui.safetab import runner"})


def test_ui_tests_mirror_the_subpackages():
    """tests/ui/<section>/ for every ui subpackage, and no test left directly in tests/ui."""
    for section in UI_SECTIONS:
        assert (REPO / "tests" / "ui" / section / "__init__.py").is_file(), f"tests/ui/{section} is missing"
    flat = sorted(p.name for p in (REPO / "tests" / "ui").glob("test_*.py"))
    assert not flat, f"tests directly in tests/ui/: {flat}"


#: The address of every page before the pages were filed by section (issue 25): share
#: links, bookmarks and the tests use them, so they never change.
PAGE_URLS = {"overview", "budget", "adaptive", "suppression", "safetab_h", "run", "configuration", "scenarios", "memo",
             "glossary", "compare_index", "compare_consistency", "compare_invariants", "compare_cell_suppression",
             "compare_spines"}


def test_no_pages_folder_beside_the_app():
    """A pages/ folder beside app.py would put a fresh server's first request in
    Streamlit's legacy mode, which finds no page in a section's folder: a shared link
    opened first would say "Page not found" (the browser test opens one)."""
    assert not (REPO / "pages").exists()
    assert (REPO / "app_pages").is_dir()


def test_every_page_keeps_its_address():
    from tests.app.conftest import app_pages

    pages = app_pages()
    assert set(pages) == PAGE_URLS
    for url, script in pages.items():
        assert (REPO / script).is_file(), script
    # app.py names every page's address (Streamlit would otherwise take the file's name)
    calls = [n for n in _nodes((REPO / "app.py").read_text(encoding="utf-8"))
             if isinstance(n, ast.Call) and getattr(n.func, "attr", None) == "Page"]
    assert calls and all("url_path" in {k.arg for k in c.keywords} for c in calls)
