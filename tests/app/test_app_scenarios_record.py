"""The decision record on the Scenarios page and in the memo, as a user drives them in local
mode (AppTest; no [auth] in secrets, so the one user is the operator, recorded as "local")."""

from __future__ import annotations

import pytest

from calculators.presets import production_2020
from tests.app.conftest import config, frame, open_app, shown, texts
from ui.committee import comparison, memo, scenarios
from ui.core import planner


@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.setenv(scenarios.ENV_DATA, str(tmp_path / "data"))
    return scenarios.ScenarioStore()


def _save_from_page(at, name: str, r: int, replace: bool = False):
    at.session_state["config"] = production_2020().updated(max_race_codes=r)
    at.text_input(key="sc_name").set_value(name).run()
    if replace:
        at.checkbox(key="sc_replace").check().run()
    at.button(key="sc_save").click().run()
    assert not at.exception, [e.value for e in at.exception]


def test_local_mode_is_said_and_every_change_from_the_page_is_a_version_by_local(store):
    at = open_app("scenarios")
    infos = " ".join(shown(i.value) for i in at.info)
    assert "**Local mode**: nobody signs in" in infos and "you are its operator" in infos
    assert "recorded as by “local”" in infos
    _save_from_page(at, "Plan A", 3)
    _save_from_page(at, "Plan A", 2, replace=True)
    listing = frame(at, "Name", "Modified (UTC)")
    assert listing[["Name", "Version", "By"]].values.tolist() == [["Plan A", 2, "local"]]
    hist = frame(at, "Version", "Change")
    assert hist[["Version", "Change", "By", "Name"]].values.tolist() == [[2, "replaced", "local", "Plan A"],
                                                                         [1, "saved", "local", "Plan A"]]
    assert [v.author for v in store.history("Plan A")] == ["local", "local"]


def test_two_versions_are_compared_and_an_old_one_loaded_as_the_plan(store):
    store.save("Plan A", production_2020().updated(max_race_codes=3), {"(COUNTY, 2)": 9}, note="first",
               by="ana@example.org")
    store.save("Plan A", production_2020().updated(max_race_codes=5), {"(COUNTY, 2)": 7}, note="second",
               overwrite=True, by="bo@example.org")
    at = open_app("scenarios")
    assert at.selectbox(key="sc_ver_a").value == 1 and at.selectbox(key="sc_ver_b").value == 2
    diff = frame(at, "Item")
    a, b = "version 1 (ana@example.org)", "version 2 (bo@example.org)"
    rows = {r["Item"]: (r[a], r[b]) for r in diff.to_dict("records")}
    assert rows["Note"] == ("first", "second")
    assert rows["config.json: max_race_codes"] == ("3", "5")
    assert rows["MOE target (COUNTY, 2)"] == ("9", "7")
    assert all(diff[comparison.DIFFERS])  # only what differs is listed
    assert "items differ** between version 1 and version 2" in texts(at)
    at.selectbox(key="sc_ver_b").set_value(1).run()
    at.button(key="sc_ver_load").click().run()
    assert config(at).max_race_codes == 3 and at.session_state["moe_targets"]["(COUNTY, 2)"] == 9
    # the memo of the current plan names the version and its author
    at.switch_page("app_pages/committee/memo.py").run()
    assert "The current plan is the saved scenario “Plan A”, version 1 by ana@example.org" in texts(at)


def test_a_deleted_scenario_is_listed_and_restored_from_the_page(store):
    store.save("Keep me", production_2020(), by="ana@example.org")
    at = open_app("scenarios")
    at.checkbox(key="sc_delete_sure").check().run()
    at.button(key="sc_delete").click().run()
    assert store.names() == [] and "No scenario is saved yet" in texts(at)
    at.session_state["sc_deleted_open"] = True
    at.run()
    gone = frame(at, "Deleted by")
    assert gone[["Name", "Deleted by", "Versions"]].values.tolist() == [["Keep me", "local", 2]]
    its = frame(at, "Version", "Change")  # the deleted scenario's history
    assert its[["Version", "Change", "By"]].values.tolist() == [[2, "deleted", "local"],
                                                                [1, "saved", "ana@example.org"]]
    at.button(key="sc_restore").click().run()
    assert store.names() == ["Keep me"]
    assert [v.action for v in store.history("Keep me")] == ["restore", "delete", "create"]


def test_the_memo_names_each_saved_version_and_its_author(store):
    prod = production_2020()
    s = store.save("Plan B", prod.updated(max_race_codes=4), by="bo@example.org")
    plan = comparison.Plan("Plan B", s.config, s.targets)
    one = memo.plan_memo(plan, version=s.version_label)
    assert ("Saved scenario", f"Plan B, version 1 by bo@example.org, {s.modified.replace('T', ' ')[:16]} UTC") \
        in one.facts
    assert all(k != "Saved scenario" for k, _v in memo.plan_memo(plan).facts)
    ref = comparison.Plan("2020 production plan", prod, planner.production_targets())
    both = memo.comparison_memo([ref, plan], details={"Plan B": (s.created, s.modified, s.note, s.version_label)})
    listing = next(t.df for t in both.tables() if t.title == "The plans")
    assert listing.set_index("Plan")["Version (author)"].to_dict() == {"2020 production plan": "—",
                                                                       "Plan B": s.version_label}
