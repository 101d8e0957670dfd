"""Undo / redo of the SafeTab-H plan (the SafeTab-H page), as a user drives them: a change of
the SafeTab-H plan is one step, undone and redone like a change of SafeTab-P's; a scenario or
preset that changes both is one step that restores both; "before my last change" as the
reference plan covers the SafeTab-H plan."""

from __future__ import annotations

import pytest

from calculators.levels import PopulationGroupLevel
from calculators.presets import production_2020
from calculators.safetab_h import budget_key, production_2020_h
from tests.app.conftest import config, frame, open_app, page_script, texts
from ui.committee import scenarios
from ui.core import state, urlcodec

STATE2 = PopulationGroupLevel("STATE", 2)
BOX = "h_rho_t3_STATE_2"  # the budget box of T3 at STATE Detailed (the page's default query)


@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.setenv(scenarios.ENV_DATA, str(tmp_path / "data"))
    return scenarios.ScenarioStore()


def _box(at):
    return next(t for t in at.text_input if t.key.startswith(BOX))


def _h_budget(at) -> float:
    """T3 STATE Detailed's budget in the session's SafeTab-H plan (absent: the 2020 plan)."""
    h = at.session_state[state.K_H_PLAN] if state.K_H_PLAN in at.session_state else production_2020_h()
    return h.budget("t3", STATE2)


def _row(at):
    df = frame(at, "Table", "Level", "Budget", "Cell MOE")
    return df.query("Level == 'STATE Detailed' and Table == 'T3'").iloc[0]


def _click(at, key):
    at.button(key=key).click().run()
    assert not at.exception, [e.value for e in at.exception]


def test_a_budget_typed_on_the_page_is_undone_and_redone():
    at = open_app("safetab_h", timeout=120)
    assert at.button(key="sb_undo").disabled
    _box(at).set_value("0.5").run()
    assert _h_budget(at) == 0.5 and _row(at)["Cell MOE"] == 6
    assert not at.button(key="sb_undo").disabled
    _click(at, "sb_undo")
    assert _h_budget(at) == 1.9208 and _box(at).value == "1.9208"  # the plan and the page
    assert _row(at)["Budget"] == 1.9208 and _row(at)["Cell MOE"] == 3
    assert "Undone: SafeTab-H privacy_budget_h_t3_level_2_state: 0.5 → 1.9208" in texts(at)
    assert "config" not in at.query_params  # the untouched 2020 plans again: no link parameter
    assert at.button(key="sb_undo").disabled and not at.button(key="sb_redo").disabled
    _click(at, "sb_redo")
    assert _h_budget(at) == 0.5 and _box(at).value == "0.5" and _row(at)["Cell MOE"] == 6
    tok = at.query_params["config"]
    assert urlcodec.decode(tok[0] if isinstance(tok, list) else tok).h_config.budget("t3", STATE2) == 0.5
    assert at.button(key="sb_redo").disabled


def test_a_moe_target_applied_and_the_2020_preset_are_one_step_each():
    at = open_app("safetab_h", timeout=120)
    next(t for t in at.text_input if t.key.startswith("h_target_t3_STATE_2")).set_value("11").run()
    _click(at, "h_apply")
    applied = _h_budget(at)
    assert applied < 0.2 and _row(at)["Cell MOE"] == 11
    _click(at, "h_preset")
    assert _h_budget(at) == 1.9208
    _click(at, "sb_undo")  # back to the applied target, not further
    assert _h_budget(at) == applied and _box(at).value != "1.9208"
    _click(at, "sb_undo")
    assert _h_budget(at) == 1.9208 and at.button(key="sb_undo").disabled


def test_a_safetab_p_change_then_a_safetab_h_change_undone_twice_and_redone():
    at = open_app("budget", timeout=120)
    at.slider(key="w_r").set_value(3).run()
    assert config(at).max_race_codes == 3
    at.switch_page(page_script("safetab_h")).run()
    _box(at).set_value("0.5").run()
    _click(at, "sb_undo")  # the SafeTab-H change only
    assert _h_budget(at) == 1.9208 and config(at).max_race_codes == 3 and _box(at).value == "1.9208"
    _click(at, "sb_undo")  # then SafeTab-P's
    assert config(at).to_dict() == production_2020().to_dict() and _h_budget(at) == 1.9208
    assert at.button(key="sb_undo").disabled
    _click(at, "sb_redo")
    assert config(at).max_race_codes == 3 and _h_budget(at) == 1.9208
    _click(at, "sb_redo")
    assert config(at).max_race_codes == 3 and _h_budget(at) == 0.5 and _box(at).value == "0.5"


def test_loading_a_scenario_with_a_safetab_h_plan_is_one_step_that_restores_both(store):
    h = production_2020_h().updated(**{budget_key("t3", STATE2): 0.25})
    store.save("With H", production_2020().updated(max_race_codes=4), h_config=h)
    at = open_app("scenarios", timeout=120)
    at.selectbox(key="sc_pick").set_value("With H").run()
    _click(at, "sc_load")
    assert config(at).max_race_codes == 4 and _h_budget(at) == 0.25
    _click(at, "sb_undo")  # one step: both plans as they were
    assert config(at).max_race_codes == 8 and _h_budget(at) == 1.9208
    assert at.button(key="sb_undo").disabled
    _click(at, "sb_redo")
    assert config(at).max_race_codes == 4 and _h_budget(at) == 0.25
    at.switch_page(page_script("safetab_h")).run()
    assert _box(at).value == "0.25"


def test_a_link_with_a_safetab_h_plan_is_no_step_to_undo():
    h = production_2020_h().updated(**{budget_key("t3", STATE2): 0.5})
    at = open_app("safetab_h", query={"config": urlcodec.encode(production_2020(), h_config=h)}, timeout=120)
    assert _h_budget(at) == 0.5 and at.button(key="sb_undo").disabled


def test_before_my_last_change_as_the_reference_covers_the_safetab_h_plan():
    at = open_app("safetab_h", timeout=120)
    at.selectbox(key=state.K_REFERENCE).set_value(state.REF_LAST).run()
    assert "The same SafeTab-H plan as the reference plan (before my last change" in texts(at)
    _box(at).set_value("0.5").run()
    assert ("Changed from the reference plan (before my last change (2020 production plan)): "
            "privacy_budget_h_t3_level_2_state: 1.9208 → 0.5.") in texts(at)
    at.switch_page(page_script("budget")).run()
    at.slider(key="w_r").set_value(3).run()  # now the last change is SafeTab-P's: its reference has the new H plan
    at.switch_page(page_script("safetab_h")).run()
    assert "The same SafeTab-H plan as the reference plan (before my last change" in texts(at)
    at.selectbox(key=state.K_REFERENCE).set_value(state.REF_PRODUCTION).run()
    assert ("Changed from the reference plan (2020 production plan): privacy_budget_h_t3_level_2_state: 1.9208 → 0.5."
            in texts(at))


def test_an_uploaded_safetab_h_config_is_one_step_and_a_later_edit_is_kept():
    h = production_2020_h().updated(**{budget_key("t3", STATE2): 0.25})
    at = open_app("safetab_h", timeout=120)
    at.file_uploader(key="h_upload").upload("h.json", h.to_json().encode(), "application/json").run()
    assert not at.exception
    assert _h_budget(at) == 0.25 and _box(at).value == "0.25"
    assert "Loaded h.json as the SafeTab-H plan" in texts(at)
    _box(at).set_value("0.5").run()  # the file stays in the box: it is not loaded over the edit again
    at.run()
    assert _h_budget(at) == 0.5
    _click(at, "sb_undo")
    assert _h_budget(at) == 0.25  # back to the file's plan
    _click(at, "sb_undo")
    assert _h_budget(at) == 1.9208 and at.button(key="sb_undo").disabled


def test_an_uploaded_file_that_is_not_a_safetab_h_config_changes_nothing():
    at = open_app("safetab_h", timeout=120)
    at.file_uploader(key="h_upload").upload("bad.json", b'{"max_race_codes": 9}', "application/json").run()
    assert not at.exception
    assert "bad.json is not a SafeTab-H config.json" in texts(at)
    assert _h_budget(at) == 1.9208 and at.button(key="sb_undo").disabled


def test_a_plan_file_with_a_safetab_h_plan_is_one_step_and_a_config_json_keeps_the_safetab_h_plan():
    h = production_2020_h().updated(**{budget_key("t3", STATE2): 0.25})
    text = scenarios.plan_file_text("Plan with H", production_2020().updated(max_race_codes=4), h_config=h)
    at = open_app("configuration", timeout=120)
    at.file_uploader(key="cfg_upload").upload("p.plan.json", text.encode(), "application/json").run()
    assert not at.exception
    assert config(at).max_race_codes == 4 and _h_budget(at) == 0.25
    _click(at, "sb_undo")  # one step: both plans as they were
    assert config(at).max_race_codes == 8 and _h_budget(at) == 1.9208 and at.button(key="sb_undo").disabled
    _click(at, "sb_redo")
    assert config(at).max_race_codes == 4 and _h_budget(at) == 0.25
    # a plain config.json brings SafeTab-P's plan only: the SafeTab-H plan stays
    plain = production_2020().updated(max_race_codes=2).to_json()
    at.file_uploader(key="cfg_upload").upload("c.json", plain.encode(), "application/json").run()
    assert config(at).max_race_codes == 2 and _h_budget(at) == 0.25
    _click(at, "sb_undo")
    assert config(at).max_race_codes == 4 and _h_budget(at) == 0.25
