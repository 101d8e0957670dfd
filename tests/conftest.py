"""Session-wide guards for the whole test suite."""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


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
