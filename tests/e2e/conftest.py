"""Browser-test fixtures: one Streamlit server of the shipped app and one Chromium for the
whole run (tests/e2e/browser.py), and every browser test in one pytest-xdist group, so
that under `-n 2` they run one after another on one worker (each drives a server and a
browser of its own processes: two at once would fight for the two cores) while the other
worker runs the rest of the suite."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.browser import chromium, require_browser, streamlit_server

_HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(config, items):
    for item in items:
        if Path(str(item.fspath)).resolve().is_relative_to(_HERE):
            item.add_marker(pytest.mark.xdist_group("browser"))


@pytest.fixture(scope="session")
def server(tmp_path_factory, _scenario_store_in_a_temp_folder):
    """The URL of `streamlit run app.py` (the shipped app, scenarios in the run's temp store)."""
    require_browser()
    with streamlit_server(tmp_path_factory.mktemp("server") / "streamlit.log") as url:
        yield url


@pytest.fixture(scope="session")
def browser(server):
    with chromium() as b:
        yield b
