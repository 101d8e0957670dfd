"""The reference plan (issue 40 item 3) and Save as scenario (item 7), as a user drives them."""

from __future__ import annotations

import pytest

from calculators import plan as pm
from calculators.levels import PopulationGroupLevel
from calculators.presets import production_2020
from tests.app.conftest import config, open_app, texts
from ui.committee import scenarios
from ui.core import state


@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.setenv(scenarios.ENV_DATA, str(tmp_path / "data"))
    return scenarios.ScenarioStore()


def _nation_metrics(at) -> dict[str, tuple[str, str]]:
    names = ("Publish a total", "With a sex × age table", "Suppressed", "Empty, published", "Persons covered")
    return {m.label: (m.value, m.delta) for m in at.metric if m.label in names}


def test_the_planner_shows_the_nations_change_from_the_reference_after_r_changes(store):
    at = open_app("budget")
    assert at.selectbox(key=state.K_REFERENCE).value == state.REF_PRODUCTION  # the default reference
    before = _nation_metrics(at)
    assert len(before) == 5 and all(delta in ("0", "0 points") for _v, delta in before.values())
    at.slider(key="w_r").set_value(2).run()
    after = _nation_metrics(at)
    assert config(at).max_race_codes == 2
    # less noise at r = 2 (S = 3): fewer suppressed, more published; each change is the difference shown
    sup_now, sup_delta = after["Suppressed"]
    assert sup_delta.startswith("-") and after["Publish a total"][1].startswith("+")
    change = int(sup_delta.replace(",", ""))
    assert int(sup_now.replace(",", "")) - int(before["Suppressed"][0].replace(",", "")) == change
    assert "change from **2020 production plan**" in texts(at)


def test_the_reference_can_be_the_plan_before_the_last_change_or_a_saved_scenario(store):
    store.save("Committee draft", production_2020().updated(max_race_codes=4))
    at = open_app("budget")
    at.slider(key="w_r").set_value(2).run()
    at.slider(key="w_r").set_value(3).run()
    at.selectbox(key=state.K_REFERENCE).select(state.REF_LAST).run()
    ref = at.session_state[state.K_REFERENCE]
    assert ref == state.REF_LAST
    # against r = 2 (the plan before the last change), not against the 2020 plan
    assert f"before my last change ({state.PRODUCTION}, edited)" in texts(at)
    sup = {m.label: m.delta for m in at.metric}["Suppressed"]
    assert sup.startswith("+")  # r 2 -> 3: more noise, more suppressed
    at.selectbox(key=state.K_REFERENCE).select("Committee draft").run()
    assert "change from **Committee draft**" in texts(at)
    assert {m.label: m.delta for m in at.metric}["Suppressed"].startswith("-")  # r 4 -> 3: less noise
    # the levels that differ from the reference, with both values and the change
    table = [d.value for d in at.dataframe if "MOE change" in d.value.columns][0]
    county = table[table["Level"] == "COUNTY Detailed"].iloc[0]
    moe3 = pm.achieved_moe(production_2020().updated(max_race_codes=3), PopulationGroupLevel("COUNTY", 2), pm.EXACT)
    assert county["MOE exact"] == pm.fmt(moe3, pm.COUNT) and county["MOE change"].startswith("−")
    store.delete("Committee draft")
    at.run()
    assert at.session_state[state.K_REFERENCE] == state.REF_PRODUCTION  # a deleted reference falls back, said
    assert "“Committee draft” is no longer there" in texts(at)


def test_save_as_scenario_suggests_a_fresh_name_and_asks_before_replacing(store):
    at = open_app("overview")
    assert at.text_input(key="sb_save_name").value == "2020 production plan (copy)"
    at.text_input(key="sb_save_name").set_value("Plan A")
    at.button(key="sb_save").click().run()  # the typed name goes with the click: no Enter
    assert store.names() == ["Plan A"]
    assert at.text_input(key="sb_save_name").value == "Plan A (2)"  # opened again: a fresh name
    at.switch_page("app_pages/safetab/budget.py").run()
    at.slider(key="w_r").set_value(5).run()
    at.text_input(key="sb_save_name").set_value("Plan A")
    at.button(key="sb_save").click().run()
    assert store.get("Plan A").config.max_race_codes == 8  # not overwritten by one click
    assert "A scenario named “Plan A” exists" in texts(at)
    at.button(key="sb_save_cancel").click().run()
    assert store.get("Plan A").config.max_race_codes == 8 and "exists" not in texts(at)
    at.button(key="sb_save").click().run()
    at.button(key="sb_save_replace").click().run()  # the second, explicit step
    assert store.get("Plan A").config.max_race_codes == 5


def test_scenarios_compare_opens_on_the_figures_that_differ_most(store):
    from tests.app.conftest import compare_tab
    from ui.committee import plan_controls
    from ui.safetab import projection as pj

    store.save("Fewer codes", production_2020().updated(max_race_codes=3))
    at = compare_tab(open_app("scenarios"))
    at.multiselect(key="sc_compare").set_value([plan_controls.PRODUCTION, "Fewer codes"]).run()
    assert not at.exception
    plans = [("a", production_2020()), ("b", production_2020().updated(max_race_codes=3))]
    order = pj.most_different(plans, pj.shipped(pj.NATIONAL))
    assert at.radio(key="sc_nat_measure").value == order[0]
    assert order[0] != "tables"  # groups with a table differ by little; the suppressed by millions
    # each plan's outcome for the groups that exist, the second with its change from the first
    head = [d.value for d in at.dataframe if "Plan" in d.value.columns and "Suppressed" in d.value.columns][0]
    assert list(head["Plan"]) == [plan_controls.PRODUCTION, "Fewer codes", pj.CHANGE_ROW]
    assert head.iloc[2]["Suppressed"].startswith("−") and head.iloc[2]["With a person"] == "0"
    # per geography (nation ... Puerto Rico), opening on the figure the plans differ on most
    geo_order = pj.geography_most_different(plans, pj.shipped(pj.NATIONAL))
    assert at.radio(key="sc_geo_measure").value == geo_order[0]
    by_geo = [d.value for d in at.dataframe if "Geography" in d.value.columns and "Δ Fewer codes" in d.value.columns]
    assert len(by_geo) == 1
    want = pj.plans_by_geography([(plan_controls.PRODUCTION, production_2020()),
                                  ("Fewer codes", production_2020().updated(max_race_codes=3))],
                                 pj.shipped(pj.NATIONAL), geo_order[0])
    assert by_geo[0].to_dict("records") == want.to_dict("records")
    assert {"Nation", "State", "County", "Tract", "Place", "AIANNH", "Puerto Rico"} <= set(by_geo[0]["Geography"])
    at.radio(key="sc_geo_measure").set_value("suppressed").run()
    by_geo = [d.value for d in at.dataframe if "Geography" in d.value.columns and "Δ Fewer codes" in d.value.columns][0]
    assert by_geo[by_geo["Geography"] == "County"].iloc[0]["Δ Fewer codes"].startswith("−")
