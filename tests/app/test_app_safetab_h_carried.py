"""The SafeTab-H plan travels with SafeTab-P's in a session (issue 45 item 4): a share link
brings it to the SafeTab-H page and keeps it in the address bar, and a scenario saved from
the sidebar keeps it."""

from __future__ import annotations

import pytest

from calculators.levels import PopulationGroupLevel
from calculators.presets import production_2020
from calculators.safetab_h import budget_key, production_2020_h
from tests.app.conftest import frame, open_app, page_script, texts
from ui.committee import scenarios
from ui.core import urlcodec

STATE2 = PopulationGroupLevel("STATE", 2)


@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.setenv(scenarios.ENV_DATA, str(tmp_path / "data"))
    return scenarios.ScenarioStore()


def _token(at) -> str:
    tok = at.query_params["config"]
    return tok[0] if isinstance(tok, list) else tok


def test_a_link_brings_the_safetab_h_plan_to_its_page_and_keeps_it():
    h = production_2020_h().updated(**{budget_key("t3", STATE2): 0.5})
    at = open_app("safetab_h", query={"config": urlcodec.encode(production_2020(), h_config=h)}, timeout=120)
    row = frame(at, "Table", "Level", "Budget", "Cell MOE").query("Level == 'STATE Detailed' and Table == 'T3'")
    assert row.iloc[0]["Budget"] == 0.5 and row.iloc[0]["Cell MOE"] == 6
    assert urlcodec.decode(_token(at)).h_config.to_dict() == h.to_dict()


def test_a_scenario_saved_from_the_sidebar_keeps_the_safetab_h_plan(store):
    at = open_app("safetab_h", timeout=120)
    next(t for t in at.text_input if t.key.startswith("h_rho_t3_STATE_2")).set_value("0.5").run()
    assert urlcodec.decode(_token(at)).h_config.budget("t3", STATE2) == 0.5  # the address bar has it at once
    at.text_input(key="sb_save_name").set_value("Plan with H")
    at.button(key="sb_save").click().run()
    assert not at.exception
    assert store.get("Plan with H").h_config.budget("t3", STATE2) == 0.5


def test_the_memo_page_lists_the_safetab_h_section_of_a_changed_plan():
    at = open_app("safetab_h", timeout=120)
    assert "SafeTab-H plan: the household tables" not in texts(open_app("memo", timeout=120))
    next(t for t in at.text_input if t.key.startswith("h_rho_t3_STATE_2")).set_value("0.5").run()
    at.switch_page(page_script("memo")).run()
    assert not at.exception
    assert "SafeTab-H plan: the household tables" in texts(at)
