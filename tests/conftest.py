"""Session-wide guards for the whole test suite."""

from __future__ import annotations

import gc
import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

# The run starts many Python processes (three workers, Streamlit servers, `python -m engine`). Where the
# environment says not to write bytecode (PYTHONDONTWRITEBYTECODE, set by some sandboxes and CI images),
# each of them compiled the repository's modules again and each worker rewrote every test module's
# assertions again: ~10 s of CPU per worker. The caches go to __pycache__ folders, which git ignores.
sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

# Three workers share two cores: the parallelism is theirs. NumPy's and SciPy's OpenBLAS would each start a
# thread per core and, after every matrix operation, keep them spinning for a while in case another comes:
# CPU taken from the other workers for no work done (measured alone: 7 % of the CPU of the engine and methods
# tests; less in the full run, where the spinning threads yield to the other workers). Set before
# the workers and every subprocess (servers, `python -m engine`) start, so they all inherit it; a value the
# caller set is kept. No assertion depends on it (single-threaded BLAS also sums in one fixed order).
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

# Python's cyclic garbage collector, as long-running servers tune it: with the default thresholds it ran
# about 5,000 times per worker and took about 6 % of a worker's CPU (measured with gc.callbacks in a whole
# run), mostly walking the objects of the imported packages and of the collected tests again and again. A
# larger first threshold, and the objects alive after collection moved out of its reach (gc.freeze,
# `pytest_collection_finish`), leave it the test's own garbage. Cycles are still collected; the tests
# that depend on a collection call gc.collect() themselves; no assertion depends on when it runs.
gc.set_threshold(50_000, 20, 100)


def pytest_collection_finish(session):
    gc.collect()
    gc.freeze()


def _compile_ahead(config) -> None:
    """Before the workers start (in the pytest-xdist controller only), do once what every worker and
    subprocess would otherwise each do on a fresh clone, at the same time:
    - compile the engine's numba kernels into their disk cache (engine/**/__pycache__), by a seeded
      run of the engine on the shipped sample in a subprocess (~14 s of CPU cold, ~2 s warm; every
      kernel the tests use is compiled by such a run);
    - meanwhile, compile the repository's modules and write pytest's assertion-rewritten test modules
      with pytest's own rewriter (the cache files its import hook reads, checked by source hash).
    A warm-up only: whatever fails here, the workers compile as they did before."""
    import shutil
    import tempfile

    out = Path(tempfile.mkdtemp(prefix="safetab-warmup-"))
    try:
        kernels = subprocess.Popen(
            [sys.executable, "-m", "engine", "run", "--quiet", "--seed", "1", "sample_data/params",
             "sample_data/data", str(out / "release")],
            cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)}, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL)
    except OSError:
        kernels = None
    try:
        _compile_sources(config)
    finally:
        if kernels is not None:
            try:
                kernels.wait(timeout=600)
            except subprocess.TimeoutExpired:
                kernels.kill()
                kernels.wait()
        shutil.rmtree(out, ignore_errors=True)


def _compile_sources(config) -> None:
    import compileall
    import re

    compileall.compile_dir(str(REPO), quiet=1, workers=1,
                           rx=re.compile(r"[/\\](\.venv[^/\\]*|node_modules|\.git|tmp|out)([/\\]|$)"))
    try:
        from _pytest.assertion import rewrite as _rw

        state = config.stash[_rw.assertstate_key]
        for fn in sorted((REPO / "tests").rglob("*.py")):
            if not (fn.name.startswith("test_") or fn.name == "conftest.py") or "node_modules" in fn.parts:
                continue
            pyc = _rw.get_cache_dir(fn) / (fn.name[:-3] + _rw.PYC_TAIL)
            if not pyc.exists():  # a stale one is found stale by its source hash and rewritten on import
                pyc.parent.mkdir(exist_ok=True)
                source_hash, co = _rw._rewrite_test(fn, config)
                _rw._write_pyc(state, co, source_hash, pyc)
    except Exception:  # noqa: BLE001 -- a warm-up only: any failure leaves the workers to compile as before
        return


def pytest_configure(config):
    workers = getattr(config.option, "numprocesses", None)  # an int by now ("auto" is resolved earlier)
    if os.environ.get("PYTEST_XDIST_WORKER") is None and workers not in (None, 0) \
            and config.getoption("assertmode", "rewrite") == "rewrite":
        _compile_ahead(config)


def _tracked_state() -> tuple[str, str] | None:
    """(paths changed against HEAD, hash of their diff), or None outside a git checkout."""
    try:
        names = subprocess.run(["git", "diff", "HEAD", "--name-only"], cwd=REPO, capture_output=True, text=True,
                               timeout=60, check=True).stdout
        diff = subprocess.run(["git", "diff", "HEAD"], cwd=REPO, capture_output=True, timeout=60, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return names, hashlib.sha256(diff).hexdigest()


@pytest.fixture(scope="session", autouse=True)
def _tests_leave_tracked_files_alone():
    """Running the tests never modifies a tracked file (screenshots go to a temp folder)."""
    before = _tracked_state()
    yield
    after = _tracked_state()
    if before is not None and after is not None and after != before:
        changed = sorted(set(after[0].split()) ^ set(before[0].split())) or after[0].split()
        pytest.fail(f"the tests modified tracked files: {changed}", pytrace=False)


@pytest.fixture(scope="session", autouse=True)
def _scenario_store_in_a_temp_folder(tmp_path_factory):
    """The app's scenario store (ui.committee.scenarios) lives in a temp folder for the whole run,
    for the app tests and for the browser test's server alike (it inherits the
    environment): the tests never touch the user's saved scenarios."""
    import os

    folder = tmp_path_factory.mktemp("studio-data")
    old = os.environ.get("SAFETAB_STUDIO_DATA")
    os.environ["SAFETAB_STUDIO_DATA"] = str(folder)
    yield folder
    if old is None:
        os.environ.pop("SAFETAB_STUDIO_DATA", None)
    else:
        os.environ["SAFETAB_STUDIO_DATA"] = old


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    """`--dist loadgroup` (pyproject.toml) again sends the tests of one `xdist_group` to one
    worker with pytest >= 9.2: pytest-xdist 3.8 marks a grouped test by appending `@group` to
    its node id through `item._nodeid`, which pytest 9.2's structured node ids ignore, so every
    group was silently split over both workers (pytest-dev/pytest-xdist#1386): the browser
    tests ran two at once and fixtures meant to be built once were built on each worker.
    Here, in a worker only, after every hook that adds a group (trylast), the same suffix is
    set on the structured id; with an older pytest xdist has set it already and nothing changes."""
    if not getattr(config.option, "loadgroup", False):
        return
    for item in items:
        names = sorted({str(m.args[0] if m.args else m.kwargs.get("name", "default"))
                        for m in item.iter_markers("xdist_group")})
        suffix = "@" + "_".join(names)
        if names and not item.nodeid.endswith(suffix) and hasattr(item, "_id"):
            from _pytest.nodeid import NodeId

            item._id = NodeId.parse(item.nodeid + suffix)
