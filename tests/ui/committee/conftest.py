"""Fixtures of the scenario-store tests: a store in a temp folder, and the 2020 plan."""

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
