"""No silent edits: every number box of the app uses the value exactly as typed, or
refuses it with a message under the box and keeps the value in use (issue 20, item 2);
switching the privacy definition and back restores the plan exactly."""

from __future__ import annotations

import pytest

from calculators.levels import PopulationGroupLevel
from calculators.presets import production_2020
from tests.app.conftest import config, open_app, shown, texts

COUNTY2 = PopulationGroupLevel("COUNTY", 2)


def _errors(at) -> str:
    return "\n".join(e.value for e in at.error)


def test_gamma_is_used_and_shown_exactly_as_typed():
    at = open_app("budget")
    at.text_input(key="w_gamma").input("0.1234").run()
    assert config(at).gamma == 0.1234
    assert at.text_input(key="w_gamma").value == "0.1234"  # not 0.123
    assert "You changed γ 0.1 → 0.1234" in texts(at)


@pytest.mark.parametrize("text, words", [
    ("", "The box is empty: type a number from 0.0001 to 0.9999"),
    ("abc", "'abc' is not a number"),
    ("1.5", "'1.5' is above 0.9999"),
    ("0", "'0' is below 0.0001"),
])
def test_a_bad_gamma_is_refused_and_the_plan_keeps_its_gamma(text, words):
    at = open_app("budget")
    at.text_input(key="w_gamma").input(text).run()
    assert not at.exception
    assert config(at).gamma == 0.1 and not at.session_state["config_edited"]
    assert words in _errors(at) and "Still in use: 0.1." in _errors(at)
    assert at.text_input(key="w_gamma").value == text  # the typed text stays for the user to correct
    at.text_input(key="w_gamma").input("0.2").run()  # a good value clears the message
    assert config(at).gamma == 0.2 and words not in _errors(at)


def test_an_emptied_p_is_refused_not_read_as_zero():
    at = open_app("suppression")
    at.text_input(key="w_p").input("").run()
    assert config(at).zero_suppression_chance == 0.9999
    assert "The box is empty" in _errors(at) and "Still in use: 0.9999." in _errors(at)
    at.text_input(key="w_p").input("1").run()
    assert config(at).zero_suppression_chance == 0.9999 and "'1' is not below 1" in _errors(at)
    at.text_input(key="sup_n").input("3.5").run()
    assert "'3.5' is not a whole number" in _errors(at) and "mark the true count n = 21" in texts(at)


def test_adaptive_boxes_refuse_empty_and_fractional_values():
    at = open_app("adaptive")
    th = config(at).thresholds(COUNTY2)
    at.text_input(key="ad_t1").input("25000.5").run()
    assert config(at).thresholds(COUNTY2) == th and "'25000.5' is not a whole number" in _errors(at)
    at.text_input(key="ad_t1").input("30000").run()  # above Θ2: the configuration's own rule, next to the box
    assert config(at).thresholds(COUNTY2) == th and "non-decreasing" in _errors(at)
    at.radio(key="ad_mode").set_value("derived").run()
    at.text_input(key="ad_target").input("").run()
    assert config(at).thresholds(COUNTY2) == th  # not 0.1 % and thresholds of 88,000 and more
    assert "The box is empty: type a number from 0.1 to 1,000 %" in _errors(at)


def test_configuration_and_run_boxes_refuse_what_they_cannot_use():
    at = open_app("configuration")
    at.text_input(key="w_max_race_codes").input("8.5").run()
    assert config(at).max_race_codes == 8 and "'8.5' is not a whole number" in _errors(at)
    at.switch_page("app_pages/safetab/run.py").run()
    at.radio(key="run_noise").set_value("seeded").run()
    at.text_input(key="run_seed").input("abc").run()
    assert "'abc' is not a number" in _errors(at) and "Still in use: 1." in _errors(at)
    at.radio(key="run_source").set_value("generated").run()
    at.text_input(key="gen_persons").input("500").run()
    assert "'500' is below 1,000" in _errors(at) and "Still in use: 50000." in _errors(at)


def test_zcdp_to_pure_dp_and_back_restores_the_plan_exactly():
    at = open_app("budget")
    at.radio(key="w_privacy_defn").set_value("puredp").run()
    assert config(at).privacy_defn == "puredp"
    at.radio(key="w_privacy_defn").set_value("zcdp").run()
    assert not at.exception
    assert config(at).to_dict() == production_2020().to_dict()  # rho 2.134, not 1.528
    assert not at.session_state["config_edited"] and "config" not in at.query_params
    assert "The plan is again exactly as it was before the switch" in texts(at)
    # a change made under pure DP is kept: switching back converts instead
    at.radio(key="w_privacy_defn").set_value("puredp").run()
    at.text_input(key="w_gamma").input("0.2").run()
    at.radio(key="w_privacy_defn").set_value("zcdp").run()
    assert config(at).privacy_defn == "zcdp" and config(at).gamma == 0.2
    assert "Every level's budget was converted" in texts(at)


@pytest.mark.parametrize("page, tabs, tab", [
    ("adaptive", None, None), ("adaptive", "ad_chart_tabs", "Expected accuracy"),
    ("suppression", None, None), ("suppression", "sup_chart_tabs", "Bias of what is released"),
    ("budget", "pl_tabs", "MOE against the budget"), ("budget", "pl_tabs", "Race multiplicity r")])
def test_every_chart_comes_with_its_text_summary(page, tabs, tab):
    at = open_app(page)
    if tabs:  # a page's other chart tab
        at.session_state[tabs] = tab
        at.run()
    charts = at.get("plotly_chart")
    summaries = [c.value for c in at.caption if shown(c.value).startswith("Chart summary: ")]  # escaped as plain text
    assert charts and len(summaries) == len(charts)


def test_a_page_box_shows_its_value_in_use_after_a_visit_to_another_page():
    # Streamlit forgets a box that is not drawn; back on the page it shows the value in use
    at = open_app("compare_invariants", timeout=300)
    at.radio(key="inv_mode").set_value("A custom table").run(timeout=300)
    at.text_input(key="inv_reps_custom").input("500").run(timeout=300)
    at.switch_page("app_pages/safetab/budget.py").run()
    at.switch_page("app_pages/compare/invariants.py").run(timeout=300)
    at.radio(key="inv_mode").set_value("A custom table").run(timeout=300)
    assert at.text_input(key="inv_reps_custom").value == "500" and not at.error
    assert "500 seeded replications" in texts(at)
