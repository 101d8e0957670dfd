"""Scenarios, undo / redo, share links with a name, and the decision memo page, as a user
drives them (AppTest). The store lives in the session's temp folder (tests/conftest.py)."""

from __future__ import annotations

import json

import pytest

from calculators import budget
from calculators.levels import PopulationGroupLevel
from calculators.presets import production_2020
from tests.app.conftest import compare_tab, config, frame, open_app, texts
from ui.committee import comparison, scenarios
from ui.core import urlcodec

COUNTY2 = PopulationGroupLevel("COUNTY", 2)


@pytest.fixture
def store(tmp_path, monkeypatch):
    """An empty store of this test's own (so tests do not see each other's scenarios)."""
    monkeypatch.setenv(scenarios.ENV_DATA, str(tmp_path / "data"))
    return scenarios.ScenarioStore()


def test_save_from_the_page_and_find_it_after_a_restart(store):
    at = open_app("scenarios")
    assert "No scenario is saved yet" in texts(at)
    at.session_state["config"] = production_2020().updated(max_race_codes=3)
    at.text_input(key="sc_name").set_value("r = 3 for the committee").run()
    at.text_input(key="sc_note").set_value("asked on 4 May").run()
    at.button(key="sc_save").click().run()
    s = store.get("r = 3 for the committee")
    assert s.config.max_race_codes == 3 and s.note == "asked on 4 May"
    assert "Current plan: **r = 3 for the committee**" in texts(at)  # the plan takes the name
    again = open_app("scenarios")  # a new session: what a restart sees
    listing = frame(again, "Name", "Modified (UTC)")
    assert list(listing["Name"]) == ["r = 3 for the committee"] and "r = 3," in listing["Plan"].item()


def test_a_taken_name_needs_consent(store):
    store.save("Plan A", production_2020())
    at = open_app("scenarios")
    at.text_input(key="sc_name").set_value("plan a").run()
    assert at.button(key="sc_save").disabled
    at.checkbox(key="sc_replace").check().run()
    at.session_state["config"] = production_2020().updated(max_race_codes=2)
    at.button(key="sc_save").click().run()
    assert store.get("Plan A").config.max_race_codes == 2 and len(store.all()) == 1


def test_load_rename_and_delete(store):
    store.save("Low budget", production_2020().with_rho(COUNTY2, 0.05), {"(COUNTY, 2)": 20})
    store.save("Other", production_2020())
    at = open_app("scenarios")
    at.selectbox(key="sc_pick").set_value("Low budget").run()
    at.button(key="sc_load").click().run()
    assert config(at).rho(COUNTY2) == 0.05 and at.session_state["moe_targets"]["(COUNTY, 2)"] == 20
    assert "Scenario “Low budget” is now the plan" in texts(at)
    at.text_input(key="sc_new_name").set_value("Low county budget").run()
    at.button(key="sc_rename").click().run()
    assert set(store.names()) == {"Low county budget", "Other"}
    assert "Current plan: **Low county budget**" in texts(at)  # the loaded plan follows its new name
    at.selectbox(key="sc_pick").set_value("Other").run()
    assert at.button(key="sc_delete").disabled  # not without the tick
    at.checkbox(key="sc_delete_sure").check().run()
    at.button(key="sc_delete").click().run()
    assert store.names() == ["Low county budget"]


def test_the_page_draws_only_its_open_tab_and_keeps_it_across_pages(store):
    """Saved scenarios (save, list, import) and the comparison are two tabs; only the open
    one is drawn, and the one a user opened is still open when they come back."""
    store.save("r = 3", production_2020().updated(max_race_codes=3))
    at = open_app("scenarios")  # a first visit: the saved scenarios
    keys = lambda: {w.key for kind in ("selectbox", "multiselect", "button") for w in at.get(kind)}  # noqa: E731
    assert {"sc_pick", "sc_save"} <= keys() and "sc_compare" not in keys()
    compare_tab(at)
    assert "sc_compare" in keys() and not {"sc_pick", "sc_save"} & keys()
    assert "2 plans:" in texts(at)  # the current plan against the saved one
    at.switch_page("app_pages/safetab/configuration.py").run()
    at.switch_page("app_pages/committee/scenarios.py").run()
    assert "sc_compare" in keys() and "sc_pick" not in keys()


def test_plans_that_agree_say_so_instead_of_empty_tables(store):
    """"Only rows that differ" with two plans that agree everywhere: every table of the
    comparison says in words that nothing differs (an empty grid would draw over the text
    under it)."""
    store.save("Same as 2020", production_2020())
    at = compare_tab(open_app("scenarios"))
    at.multiselect(key="sc_compare").set_value(["2020 production plan", "Same as 2020"]).run()
    at.toggle(key="sc_only").set_value(True).run()
    at.session_state["sc_keys_open"] = True
    at.run()
    assert not at.exception
    words = texts(at)
    assert "No setting differs." in words and "No config.json key differs." in words and "No level differs." in words
    assert not [d for d in at.dataframe if "Quantity" in d.value.columns or "Key" in d.value.columns]


def test_compare_three_plans_with_their_numbers(store):
    store.save("r = 3", production_2020().updated(max_race_codes=3))
    store.save("County 0.3", production_2020().with_rho(COUNTY2, 0.3))
    at = compare_tab(open_app("scenarios"))
    at.multiselect(key="sc_compare").set_value(["2020 production plan", "r = 3", "County 0.3"]).run()
    assert not at.exception
    at.session_state["sc_tabs"] = "MOE exact"  # only the open tab is drawn
    at.run()
    moe = [f for f in (d.value for d in at.dataframe) if {"r = 3", "County 0.3"} <= set(f.columns)
           and {"Geography", "Iterations"} <= set(f.columns)]  # per level (not the per-geography outcome)
    exact = next(f for f in moe if f.loc[(f["Geography"] == "COUNTY") & (f["Iterations"] == "Detailed"),
                                          "County 0.3"].item() == budget.moe_for_rho(0.3, 9, 0.1, exact=True))
    row = exact[(exact["Geography"] == "COUNTY") & (exact["Iterations"] == "Detailed")].iloc[0]
    assert row["r = 3"] == budget.moe_for_rho(0.159, 4, 0.1, exact=True) and row["Differs"]
    summary = frame(at, "Quantity", "r = 3")
    assert summary.set_index("Quantity").loc["Stability S", "r = 3"] == "4"
    assert "3 plans:" in texts(at)
    at.toggle(key="sc_only").set_value(True).run()
    shown = frame(at, "Quantity", "r = 3")
    assert shown["Differs"].all() and len(shown) < len(summary)


def test_charts_and_config_keys_are_drawn_when_asked_for(store):
    """The page opens on its tables; the charts (a bar chart per level table, the plans
    overlaid) and the config.json keys are one click away, and then drawn for the plans
    picked."""
    store.save("r = 3", production_2020().updated(max_race_codes=3))
    at = compare_tab(open_app("scenarios"))
    at.multiselect(key="sc_compare").set_value(["2020 production plan", "r = 3"]).run()
    assert not at.exception and not at.get("plotly_chart")
    assert "Turn on **Charts** above to overlay the plans" in texts(at)
    assert not [d for d in at.dataframe if "Key" in d.value.columns]
    at.toggle(key="sc_charts").set_value(True).run()
    assert not at.exception
    titles = [json.loads(c.proto.spec)["layout"]["title"]["text"] for c in at.get("plotly_chart")]
    assert len(titles) == 4 and titles[0].startswith("Budget ρ / ε by level, one bar per plan"), titles
    overlay = json.loads(at.get("plotly_chart")[1].proto.spec)
    assert {t["name"] for t in overlay["data"]} >= {"2020 production plan", "r = 3"}
    assert "Turn on **Charts** above" not in texts(at)
    at.session_state["sc_keys_open"] = True  # the user opens "config.json keys"
    at.run()
    keys = frame(at, "Key", "r = 3").set_index("Key")
    assert keys.loc["max_race_codes", "r = 3"] == "3" and keys.loc["max_race_codes", comparison.DIFFERS]
    # kept while the user is on another page
    at.switch_page("app_pages/safetab/configuration.py").run()
    at.switch_page("app_pages/committee/scenarios.py").run()
    assert at.toggle(key="sc_charts").value and len(at.get("plotly_chart")) == 4


def test_undo_and_redo_in_the_sidebar():
    at = open_app("budget")
    assert at.button(key="sb_undo").disabled and at.button(key="sb_redo").disabled
    at.slider(key="w_r").set_value(3).run()
    at.text_input(key="w_gamma").input("0.2").run()
    assert (config(at).max_race_codes, config(at).gamma) == (3, 0.2)
    at.button(key="sb_undo").click().run()
    assert (config(at).max_race_codes, config(at).gamma) == (3, 0.1)
    assert "Undone: privacy_budget_p_stage_1_fraction: 0.2 → 0.1" in texts(at)
    at.button(key="sb_undo").click().run()
    assert config(at).to_dict() == production_2020().to_dict()
    assert at.button(key="sb_undo").disabled
    assert at.slider(key="w_r").value == 8  # the controls show the plan undone
    at.button(key="sb_redo").click().run()
    at.button(key="sb_redo").click().run()
    assert (config(at).max_race_codes, config(at).gamma) == (3, 0.2)
    assert at.button(key="sb_redo").disabled


def test_save_from_the_sidebar(store):
    at = open_app("overview")
    at.text_input(key="sb_save_name").set_value("Sidebar plan")  # typed, then Save: no Enter needed
    at.button(key="sb_save").click().run()
    assert store.names() == ["Sidebar plan"]


def test_a_share_link_keeps_the_plans_name():
    cfg = production_2020().updated(max_race_codes=4)
    at = open_app("overview", query={"config": urlcodec.encode(cfg, name="Committee plan B")})
    assert config(at).max_race_codes == 4
    assert "**Current plan:** Committee plan B" in texts(at)
    tok = at.query_params["config"]
    tok = tok[0] if isinstance(tok, list) else tok
    assert urlcodec.decode(tok).name == "Committee plan B"


@pytest.mark.parametrize("name", ["2020 production plan", "2020 PRODUCTION  plan"])
def test_a_link_that_calls_a_changed_plan_the_2020_plan_shows_it_edited_and_keeps_its_link(name):
    """A link may carry any name: under the 2020 plan's name, a plan with another budget
    is shown as that plan, edited, and its link stays in the address bar (it was shown as
    the untouched 2020 plan, and its link was removed, so a reload lost the plan)."""
    cfg = production_2020().updated(privacy_budget_p_level_2_usa=20.0)
    at = open_app("overview", query={"config": urlcodec.encode(cfg, name=name)})
    assert config(at) == cfg
    assert "**Current plan:** 2020 production plan, edited" in texts(at)
    tok = at.query_params["config"]
    tok = tok[0] if isinstance(tok, list) else tok
    back = urlcodec.decode(tok)
    assert back[0] == cfg and back.name == "2020 production plan" and back.edited


def test_a_link_of_the_untouched_2020_plan_is_the_2020_plan():
    at = open_app("overview", query={"config": urlcodec.encode(production_2020(), name="2020 production plan")})
    assert "**Current plan:** 2020 production plan" in texts(at) and "plan, edited" not in texts(at)


def test_a_link_named_current_plan_is_a_copy():
    cfg = production_2020().updated(max_race_codes=4)
    at = open_app("overview", query={"config": urlcodec.encode(cfg, name="Current plan")})
    assert "**Current plan:** Current plan (copy)" in texts(at)


def test_memo_page_offers_the_pdf_and_html_of_the_plan_or_a_comparison(store):
    store.save("r = 3", production_2020().updated(max_race_codes=3))
    at = open_app("memo")
    labels = [b.proto.label for b in at.get("download_button")]
    assert "Decision memo (PDF)" in labels and "Decision memo (HTML)" in labels
    body = texts(at)
    assert "No run in this session" in body and "Budget and MOE planner" in body
    at.radio(key="memo_kind").set_value("comparison").run()
    at.multiselect(key="sc_compare").set_value(["Current plan", "r = 3"]).run()
    body = texts(at)
    assert "2 plans compared" in body and "r = 3: Suppression" in body
