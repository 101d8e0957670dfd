"""Browser-test fixtures: one Streamlit server of the shipped app per test process (per
pytest-xdist worker) and a Chromium per module (tests/e2e/browser.py).

Under `-n 3 --dist loadgroup` (pyproject.toml) each browser-test module is one group, run one test after
another on one worker, with its Chromium opened once (and the page-fit test, the longest,
is a group of its own; it checks both widths on one visit of every page): the groups spread
over the workers instead of one worker running every browser test while the other
idles at the end."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.browser import FAILED, chromium, require_browser, streamlit_server

_HERE = Path(__file__).resolve().parent


#: Browser tests long enough to be a group of their own.
_ALONE = {"test_every_page_fits_at_common_widths"}


def pytest_collection_modifyitems(config, items):
    for item in items:
        path = Path(str(item.fspath)).resolve()
        if path.is_relative_to(_HERE):
            group = f"browser-{path.stem}"
            name = getattr(item, "originalname", None)
            if name in _ALONE:
                group += f"-{name}"
            item.add_marker(pytest.mark.xdist_group(group))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """Mark a browser test whose call failed (`tests.e2e.browser.failed`): its page is pictured."""
    report = yield
    if report.when == "call" and report.failed:
        item.stash[FAILED] = True
    return report


@pytest.fixture(scope="session")
def server(tmp_path_factory, _scenario_store_in_a_temp_folder):
    """The URL of `streamlit run app.py` (the shipped app, scenarios in the run's temp store)."""
    require_browser()
    with streamlit_server(tmp_path_factory.mktemp("server") / "streamlit.log") as url:
        yield url


@pytest.fixture(scope="module")
def browser(server):
    """Chromium for one module's tests. Module-scoped, not session-scoped: Playwright's sync
    API keeps an asyncio loop running while it is open, and a later test in the same worker
    that calls asyncio.run (Kaleido, drawing the memo's charts) would fail beside it."""
    with chromium() as b:
        yield b
