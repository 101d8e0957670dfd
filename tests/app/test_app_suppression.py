"""Suppression page: p -> threshold T per level, curves, one true count."""

from __future__ import annotations

import json

import pytest

from calculators import budget, suppression
from calculators.levels import POPULATION_GROUP_LEVELS, PopulationGroupLevel
from tests.app.conftest import config, frame, metric, open_app, texts

COUNTY2 = PopulationGroupLevel("COUNTY", 2)


def _t(at, geo="COUNTY", it="Detailed"):
    t = frame(at, "Threshold T")
    return t[(t["Geography"] == geo) & (t["Iterations"] == it)].iloc[0]


def test_threshold_shown_is_the_calculators_threshold():
    at = open_app("suppression")
    s2 = budget.sigma2_stage2(0.159, 0.1, 9)
    want = suppression.threshold(s2, 0.9999)
    assert _t(at)["Threshold T"] == want == 21
    assert f"threshold **T = {want}**" in texts(at)
    assert _t(at, "TRACT", "Regional")["Threshold T"] == suppression.threshold(budget.sigma2_stage2(0.008, 0.1, 9), 0.9999)
    assert _t(at, "USA", "Detailed")["Suppression"].startswith("never")


def test_changing_p_changes_t_and_the_plan():
    at = open_app("suppression")
    at.text_input(key="w_p").input("0.99").run()
    assert config(at).zero_suppression_chance == 0.99
    want = suppression.threshold(budget.sigma2_stage2(0.159, 0.1, 9), 0.99)
    assert _t(at)["Threshold T"] == want and want < 21
    s2 = float(budget.sigma2_stage2(0.159, 0.1, 9))
    n = int(at.text_input(key="sup_n").value)
    assert metric(at, "P(suppressed)") == f"{float(suppression.suppression_probability(n, want, s2)):.4f}"
    at.text_input(key="sup_n").input("0").run()
    assert metric(at, "P(suppressed)") == f"{float(suppression.suppression_probability(0, want, s2)):.4f}"
    assert float(metric(at, "Bias when released")) == pytest.approx(float(suppression.release_bias(0, want, s2)),
                                                                      abs=0.005)


def test_each_chart_tab_draws_its_chart_and_marks_the_chosen_count():
    at = open_app("suppression")
    at.text_input(key="sup_n").input("15").run()
    s2 = float(budget.sigma2_stage2(0.159, 0.1, 9))
    t = suppression.threshold(s2, 0.9999)

    def only_chart() -> dict:
        charts = at.get("plotly_chart")
        assert len(charts) == 1  # one chart per tab, only the open tab drawn
        return json.loads(charts[0].proto.spec)

    fig = only_chart()
    assert fig["layout"]["title"]["text"].startswith("Chance that a total is suppressed")
    ring = [tr for tr in fig["data"] if tr.get("mode") == "markers"]
    assert [(tr["x"], round(tr["y"][0], 4)) for tr in ring] == [
        ([15], round(float(suppression.suppression_probability(15, t, s2)), 4))]
    at.session_state["sup_chart_tabs"] = "Bias of what is released"
    at.run()
    fig = only_chart()
    assert fig["layout"]["title"]["text"].startswith("Bias that suppression puts on what is released")
    ring = [tr for tr in fig["data"] if tr.get("mode") == "markers" and tr.get("yaxis", "y") == "y"]
    assert ring[0]["x"] == [15]
    assert ring[0]["y"][0] == pytest.approx(float(suppression.release_bias(15, t, s2)), abs=1e-6)
    at.text_input(key="sup_n").input("30").run()  # a new n moves the ring on the open tab
    assert [tr["x"] for tr in only_chart()["data"] if tr.get("mode") == "markers"][0] == [30]


def test_p_zero_turns_suppression_off():
    at = open_app("suppression")
    at.text_input(key="w_p").input("0.0").run()
    assert any("Suppression is off" in i.value for i in at.info)
    assert not at.get("plotly_chart")


def test_a_new_rho_on_the_planner_changes_t_here():
    at = open_app("budget")
    row = POPULATION_GROUP_LEVELS.index(COUNTY2)
    at.session_state["planner_0"] = {"edited_rows": {row: {"ρ": 0.02}}, "added_rows": [], "deleted_rows": []}
    at.run()
    at.switch_page("app_pages/safetab/suppression.py").run()
    assert _t(at)["Threshold T"] == suppression.threshold(budget.sigma2_stage2(0.02, 0.1, 9), 0.9999)
    assert _t(at)["Threshold T"] > 21


def test_the_bias_is_shown_beside_the_design_papers_eq_13():
    """The bias of a released count is the exact discrete sum (SPEC §1); the paper's eq. (13)
    (the normal's inverse Mills ratio) gave a different figure that the page did not name.
    Both are now shown, each labelled; the caption names eq. (12) and Table 6 for T."""
    at = open_app("suppression")
    at.text_input(key="sup_n").input("0").run()
    s2 = float(budget.sigma2_stage2(0.159, 0.1, 9))
    exact = float(suppression.release_bias(0, 21, s2))
    paper = float(suppression.release_bias_eq13(0, 21, s2))
    assert paper == pytest.approx(22.335, abs=1e-3) and exact == pytest.approx(22.867, abs=1e-3)
    shown_text = texts(at)
    assert f"a continuous-Gaussian figure: {paper:+.2f} for this n (exact {exact:+.2f})" in shown_text
    assert "T is the design paper's eq. (12)" in shown_text and "T = 93, 21 and 11" in shown_text
