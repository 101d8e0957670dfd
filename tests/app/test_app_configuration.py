"""Configuration page: import/export round trip, validation messages, the shareable URL."""

from __future__ import annotations

import json

from calculators.presets import production_2020
from tests.app.conftest import config, open_app, shown, texts
from ui.core import urlcodec


def _upload(at, name: str, text: str):
    at.file_uploader(key="cfg_upload").upload(name, text.encode(), "application/json").run()
    assert not at.exception, [e.value for e in at.exception]


def test_import_round_trips_and_exports_exactly():
    data = production_2020().to_dict()
    data["max_race_codes"] = 4
    data["privacy_budget_p_level_1_aiannh"] = 0  # an int stays an int
    del data["zero_suppression_chance"]  # optional, as in production: stays absent
    at = open_app("configuration")
    _upload(at, "plan.json", json.dumps(data))
    cfg = config(at)
    assert cfg.max_race_codes == 4
    out = json.loads(cfg.to_json())
    assert out == data and "zero_suppression_chance" not in out  # every key, nothing added or lost
    assert "imported plan.json" in "\n".join(shown(m.value) for m in at.sidebar.markdown)
    # the link of the page restores exactly this plan
    link = next(c.value for c in at.code if "?config=" in c.value)
    token = link.split("?config=", 1)[1]
    back, _ = urlcodec.decode(token)
    assert back.to_dict() == cfg.to_dict()


def test_unknown_keys_and_loose_types_are_refused_by_name():
    data = production_2020().to_dict()
    data["privacy_budget_p_level_2_conty"] = data.pop("privacy_budget_p_level_2_county")
    data["run_us"] = "Yes"
    data["max_race_codes"] = 8.0
    at = open_app("configuration")
    _upload(at, "typo.json", json.dumps(data))
    err = " ".join(shown(e.value) for e in at.error)
    assert "typo.json was not loaded" in err
    assert "privacy_budget_p_level_2_conty" in err and 'did you mean "privacy_budget_p_level_2_county"' in err
    assert "run_us" in err and '"Yes"' in err and "max_race_codes" in err and "8.0" in err
    assert config(at).to_dict() == production_2020().to_dict()
    at.file_uploader(key="cfg_upload").upload("latin1.json", b'{\n"reader": "caf\xe9"}', "application/json").run()
    assert not at.exception
    err = " ".join(shown(e.value) for e in at.error)
    assert "latin1.json was not loaded" in err and "line 2" in err and "0xe9" in err and "UTF-8" in err


def test_bad_config_shows_its_problems_and_keeps_the_plan():
    data = production_2020().to_dict()
    data["max_race_codes"] = 11
    data["thresholds_p"]["(COUNTY, 2)"] = [5000, 100, 20]
    data["privacy_budget_p_level_2_tract"] = -1
    at = open_app("configuration")
    _upload(at, "bad.json", json.dumps(data))
    err = " ".join(shown(e.value) for e in at.error)
    assert "bad.json was not loaded" in err
    assert "max_race_codes" in err and "non-decreasing" in err and "privacy_budget_p_level_2_tract" in err
    assert config(at).to_dict() == production_2020().to_dict()
    _upload(at, "broken.json", "{not json")
    assert "not valid JSON" in " ".join(shown(e.value) for e in at.error)


def test_pasted_json_is_checked():
    at = open_app("configuration")
    at.text_area[0].set_value('{"max_race_codes": 0}').run()
    at.button(key="cfg_apply").click().run()
    assert any("max_race_codes" in shown(e.value) for e in at.error)
    data = production_2020().updated(allow_negative_counts=False).to_json()
    at.text_area[0].set_value(data).run()
    at.button(key="cfg_apply").click().run()
    assert config(at).allow_negative_counts is False


def test_url_restores_the_configuration():
    cfg = production_2020().updated(max_race_codes=3, privacy_budget_p_stage_1_fraction=0.2)
    at = open_app(query={"config": urlcodec.encode(cfg, {"(COUNTY, 2)": 9})})
    assert config(at).to_dict() == cfg.to_dict()
    assert at.session_state["moe_targets"]["(COUNTY, 2)"] == 9
    assert any("restored from the link" in s.value for s in at.success)
    assert "S = 4" in texts(at)
    at.switch_page("app_pages/safetab/budget.py").run()
    assert at.slider(key="w_r").value == 3 and at.text_input(key="w_gamma").value == "0.2"


def test_damaged_url_is_a_message_and_the_default_plan():
    at = open_app(query={"config": "eNoLycgsVgCi4ozSHAA-cut"})
    assert any("could not be used" in shown(e.value) for e in at.error)
    assert config(at).to_dict() == production_2020().to_dict()


def test_other_settings():
    at = open_app("configuration")
    at.toggle(key="w_allow_negative_counts").set_value(False).run()
    assert config(at).allow_negative_counts is False
    # the privacy definition is changed where the budgets are (the planner converts them)
    assert "w_privacy_defn" not in [w.key for w in at.selectbox]
    assert "Privacy definition: **zCDP" in "\n".join(m.value for m in at.markdown)
    at.multiselect(key="w_state_filter_us").set_value(["06", "11"]).run()
    assert config(at).state_filter_us == ["06", "11"]


def test_hostile_nested_json_is_a_message_in_the_link_the_paste_and_the_upload():
    import base64
    import zlib

    nested = "[" * 50_000 + "]" * 50_000
    token = base64.urlsafe_b64encode(zlib.compress(('{"v": 1, "c": ' + nested + "}").encode(), 9)).decode()
    at = open_app(query={"config": token.rstrip("=")})  # open_app asserts no exception
    assert any("nested 50,001 levels deep" in shown(e.value) for e in at.error)
    assert config(at).to_dict() == production_2020().to_dict()
    at.switch_page("app_pages/safetab/configuration.py").run()
    at.text_area[0].set_value('{"thresholds_p": ' + nested + "}").run()
    at.button(key="cfg_apply").click().run()
    assert not at.exception and any("nested" in shown(e.value) for e in at.error)
    _upload(at, "deep.json", nested)
    assert any("deep.json was not loaded" in shown(e.value) and "nested" in shown(e.value) for e in at.error)


def test_uncaught_errors_never_show_a_traceback():
    import tomllib
    from pathlib import Path

    from streamlit.config import ShowErrorDetailsConfigOptions

    cfg = tomllib.loads((Path(__file__).resolve().parents[2] / ".streamlit" / "config.toml").read_text())
    value = cfg["client"]["showErrorDetails"]
    assert value == ShowErrorDetailsConfigOptions.NONE.value  # generic message only; details in the server log


def test_a_plan_file_under_the_2020_plans_name_with_another_budget_is_shown_edited():
    """A plan file is text anyone can edit: named "2020 production plan" but with the US
    detailed budget 20, it is loaded as the 2020 plan, edited (it was shown as the 2020
    plan itself, with the sidebar's ρ 22.81 beside that name)."""
    from ui.committee import scenarios

    cfg = production_2020().updated(privacy_budget_p_level_2_usa=20.0)
    at = open_app("configuration")
    _upload(at, "prod.plan.json", scenarios.plan_file_text("2020 production plan", cfg))
    assert config(at) == cfg
    assert "Current plan: **2020 production plan, edited**" in texts(at)
    _upload(at, "prod2.plan.json", scenarios.plan_file_text("2020 production plan", production_2020()))
    assert "Current plan: **2020 production plan**" in texts(at)
    at.button(key="sb_undo").click().run()  # back to the changed plan: still said to be edited
    assert config(at) == cfg and "Current plan: **2020 production plan, edited**" in texts(at)
    at.button(key="sb_undo").click().run()
    at.button(key="sb_redo").click().run()  # and so when redone
    assert config(at) == cfg and "Current plan: **2020 production plan, edited**" in texts(at)
