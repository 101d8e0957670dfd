"""Fixtures of the scenario-store and memo tests: a store in a temp folder, the 2020 plan, and
one browser kept open to draw the memos' charts."""

from __future__ import annotations

import pytest

from calculators.presets import production_2020
from ui.committee import scenarios
from ui.committee.scenarios import ScenarioStore


@pytest.fixture
def store(tmp_path):
    return ScenarioStore(tmp_path / "data" / scenarios.DB_NAME)


@pytest.fixture
def prod():
    return production_2020()


@pytest.fixture(scope="session")
def renderer():
    """One browser (ui.committee.images.Renderer, as the app keeps one) drawing the charts of
    the memos the tests print, instead of a browser started for each memo: starting Chromium
    is most of a memo's cost. Only drawn on, never closed or reconfigured by a test; closed at
    the end. (test_memo.py also prints a memo with a browser started for it, and checks that both draw alike.)"""
    from ui.committee import images

    r = images.Renderer()
    yield r
    r.close()
