"""Browser-test fixtures: one Streamlit server of the shipped app per test process (per
pytest-xdist worker) and a Chromium per module (tests/e2e/browser.py).

Under `-n 3 --dist loadgroup` (pyproject.toml) each browser-test module is one group, run one test
after another on one worker, with its Chromium opened once. test_browser.py, the longest, is split
into the groups of `_GROUPS`: the groups spread over the workers instead of one worker running the
browser tests while the others idle at the end. The page-fit test (both widths on one visit of
every page) is in the engine group, after the engine group's tests: its tour opens every Compare
methods page, whose studies of the sample that server has then already made (a group of its own
made them again on another worker's server, with a server and a Chromium more to start). A
group's tests are independent of each other (any order, any subset); a worker that runs a group
starts its own server and Chromium (about 3 s of CPU)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.browser import FAILED, chromium, require_browser, streamlit_server
from ui.committee.images import BACKGROUND_ENV

_HERE = Path(__file__).resolve().parent


#: test_browser.py's groups: the committee's pages (scenarios, memo, configuration) with the
#: adaptive and suppression pages; the engine runs (the mechanism on the sample data and the other
#: methods' studies) with the page-fit test, which opens those studies' pages again; the planner
#: and overview (the others, `_DEFAULT_GROUP`).
_GROUPS = {
    "test_browser": {
        "committee": ("test_scenarios_saved_compared_undone_and_put_in_a_memo",
                      "test_page_controls_and_tabs_are_kept_across_pages",
                      "test_a_name_that_looks_like_markdown_is_shown_as_text_and_fetches_nothing",
                      "test_a_plan_file_keeps_its_name_when_imported", "test_configuration_export",
                      "test_adaptive_thresholds", "test_suppression_threshold_follows_p"),
        "engine": ("test_run_on_the_sample_data_and_download", "test_compare_cell_suppression",
                   "test_compare_invariants", "test_consistency_comparison",
                   "test_custom_geographies_compose_an_area_and_optimise_the_spine",
                   "test_every_page_fits_at_common_widths"),
    },
}
#: The group of a test of a split module that `_GROUPS` does not name.
_DEFAULT_GROUP = "planner"
#: Modules whose tests join another module's group: the contrast test reads the measure the page-fit
#: test takes on its tour of the pages (`page_tour`), on the same worker, after it.
_JOINS = {"test_contrast": "browser-test_browser-engine"}


def pytest_collection_modifyitems(config, items):
    for item in items:
        path = Path(str(item.fspath)).resolve()
        if path.is_relative_to(_HERE):
            group = _JOINS.get(path.stem, f"browser-{path.stem}")
            if path.stem in _GROUPS:
                name = getattr(item, "originalname", None) or item.name
                group += "-" + next((g for g, names in _GROUPS[path.stem].items() if name in names), _DEFAULT_GROUP)
            item.add_marker(pytest.mark.xdist_group(group))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """Mark a browser test whose call failed (`tests.e2e.browser.failed`): its page is pictured."""
    report = yield
    if report.when == "call" and report.failed:
        item.stash[FAILED] = True
    return report


#: The environment of the browser tests' servers of the shipped app: the Decision memo page opens its
#: chart browser (Kaleido's Chromium, about 4 to 6 s of CPU to start) when a memo is drawn, not in the
#: background whenever the page is shown (the default, SAFETAB_CHART_BROWSER). Two browser tests show the
#: memo page in a run (the page-fit tour, the committee's scenarios test) and only the second draws a memo:
#: servers started a browser that no test used. The default is tested by tests/app/test_app_memo_browser.py
#: (started once per visit) and tests/ui/committee/test_memo.py (a browser kept open draws the same
#: pictures); here the memo is drawn on demand.
APP_ENV = {BACKGROUND_ENV: "on-demand"}


class _SharedServer:
    """The worker's server of the shipped app, and whether a test has asked for it yet."""

    def __init__(self, url: str):
        self.url = url
        self.used = False


@pytest.fixture(scope="session")
def _shared_server(tmp_path_factory, _scenario_store_in_a_temp_folder) -> Iterator[_SharedServer]:
    """`streamlit run app.py` (the shipped app, scenarios in the run's temp store, the memo's chart
    browser opened on demand: APP_ENV), once per test process."""
    require_browser()
    with streamlit_server(tmp_path_factory.mktemp("server") / "streamlit.log", env=APP_ENV) as url:
        yield _SharedServer(url)


@pytest.fixture
def server(_shared_server) -> str:
    """The URL of the worker's server of the shipped app (`_shared_server`)."""
    _shared_server.used = True
    return _shared_server.url


@pytest.fixture
def fresh_server(_shared_server, tmp_path) -> Iterator[str]:
    """The URL of a server of the shipped app that no page request has reached yet: the
    worker's own server when no test has asked for it yet (the first browser test of the
    worker: no second server to start, seconds of CPU saved), else one started for the
    test (scenarios in the same temp store) and stopped after it."""
    if not _shared_server.used:
        _shared_server.used = True
        yield _shared_server.url
        return
    with streamlit_server(tmp_path / "streamlit.log", env=APP_ENV) as url:
        yield url


@pytest.fixture(scope="session")
def page_tour() -> dict:
    """What a test that opens every page measured on its way, for another test of the process to
    read instead of opening the pages again: "contrast", the contrast problems (tests/e2e/test_contrast.py),
    set by the page-fit test once its tour is complete (absent when it has not run, or did not finish)."""
    return {}


@pytest.fixture(scope="module")
def browser(_shared_server):
    """Chromium for one module's tests. Module-scoped, not session-scoped: Playwright's sync
    API keeps an asyncio loop running while it is open, and a later test in the same worker
    that calls asyncio.run (Kaleido, drawing the memo's charts) would fail beside it. (It
    needs the server only to be closed before it.)"""
    with chromium() as b:
        yield b
