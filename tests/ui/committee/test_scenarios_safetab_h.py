"""A scenario and a plan file keep the SafeTab-H plan beside SafeTab-P's (issue 45 item 4)."""

from __future__ import annotations

import json
import sqlite3

import pytest

from calculators.presets import production_2020
from calculators.safetab_h import BUDGET_KEYS, production_2020_h
from ui.committee import scenarios
from ui.committee.scenarios import ScenarioError, ScenarioStore


@pytest.fixture
def store(tmp_path):
    return ScenarioStore(tmp_path / "data" / scenarios.DB_NAME)


def _changed_h():
    return production_2020_h().updated(**{sorted(BUDGET_KEYS)[0]: 0.5})


def test_a_scenario_keeps_its_safetab_h_plan_across_a_restart_rename_and_history(store):
    h = _changed_h()
    store.save("With H", production_2020(), {"(COUNTY, 2)": 8}, h_config=h)
    store.save("Without H", production_2020())
    again = ScenarioStore(store.path)
    s = again.get("With H")
    assert s.ok and s.h_config is not None and s.h_config.to_dict() == h.to_dict()
    assert s.config.to_dict() == production_2020().to_dict() and s.targets == {"(COUNTY, 2)": 8}
    assert again.get("Without H").h_config is None
    again.rename("With H", "Renamed")
    assert again.get("Renamed").h_config.to_dict() == h.to_dict()
    assert again.history("Renamed")[0].scenario.h_config.to_dict() == h.to_dict()


def test_a_plan_without_safetab_h_is_stored_as_before(store):
    store.save("P only", production_2020())
    with sqlite3.connect(store.path) as con:
        text = con.execute("SELECT config FROM scenarios").fetchone()[0]
    assert text == production_2020().to_json()


def test_a_bad_stored_safetab_h_plan_makes_the_scenario_invalid_in_words(store):
    store.save("Bad H", production_2020(), h_config=_changed_h())
    with sqlite3.connect(store.path) as con:
        doc = json.loads(con.execute("SELECT config FROM scenarios").fetchone()[0])
        doc[scenarios.H_KEY]["max_race_codes"] = "eight"
        con.execute("UPDATE scenarios SET config = ?", (json.dumps(doc),))
    s = store.get("Bad H")
    assert not s.ok and s.h_config is None
    assert any("max_race_codes" in p for p in s.problems)


def test_a_plan_file_carries_the_safetab_h_plan():
    h = _changed_h()
    text = scenarios.plan_file_text("Plan H", production_2020(), {}, h_config=h)
    plan = scenarios.read_plan_file(text, "plan-h.plan.json")
    assert plan.h_config.to_dict() == h.to_dict()
    assert scenarios.read_plan_file(scenarios.plan_file_text("P", production_2020()), "p.json").h_config is None
    doc = json.loads(text)
    doc[scenarios.H_KEY]["run_us"] = "yes"
    with pytest.raises(ScenarioError, match="SafeTab-H configuration is not valid"):
        scenarios.read_plan_file(json.dumps(doc), "bad.plan.json")
