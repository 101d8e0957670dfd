"""Adaptive tables page: typed and derived thresholds, per-level tables and curves."""

from __future__ import annotations

import json

from calculators import adaptive, budget
from calculators.levels import PopulationGroupLevel
from tests.app.conftest import config, frame, open_app, shown, texts

COUNTY2 = PopulationGroupLevel("COUNTY", 2)


def _tables(at):
    return frame(at, "Stat level", "Published table")


def test_typed_thresholds_change_the_plan():
    at = open_app("adaptive")
    assert at.selectbox(key="ad_level").value == "(COUNTY, 2)"
    assert _tables(at)["When (stage-1 noisy total)"][1] == "Θ₁=971 ≤ noisy total < Θ₂=4971"
    at.text_input(key="ad_t1").input("500").run()
    assert config(at).thresholds(COUNTY2) == (500, 4971, 19971)
    assert "Θ₁=500" in _tables(at)["When (stage-1 noisy total)"][1]
    assert "Θ = 500, 4,971, 19,971" in texts(at)
    th = frame(at, "Θ₁", "Θ₂", "Θ₃")
    row = th[(th["Geography"] == "COUNTY") & (th["Iterations"] == "Detailed")].iloc[0]
    assert row["Θ₁"] == 500


def test_decreasing_thresholds_are_refused_in_plain_words():
    at = open_app("adaptive")
    at.text_input(key="ad_t2").input("100").run()
    assert not at.exception
    assert any("non-decreasing" in shown(e.value) for e in at.error)
    assert config(at).thresholds(COUNTY2) == (971, 4971, 19971)


def test_a_refused_threshold_stays_with_its_level():
    """Θ₁ = 999999 refused for COUNTY Detailed; on TRACT Detailed the box shows TRACT's
    own Θ₁ and no message about COUNTY (it kept the refused text and COUNTY's message)."""
    at = open_app("adaptive")
    at.text_input(key="ad_t1").input("999999").run()
    assert any("(COUNTY, 2)" in shown(e.value) for e in at.error)
    at.selectbox(key="ad_level").set_value("(TRACT, 2)").run()
    tract = config(at).thresholds(PopulationGroupLevel("TRACT", 2))
    assert at.text_input(key="ad_t1").value == str(tract[0])
    assert not any("non-decreasing" in shown(e.value) for e in at.error)
    assert config(at).thresholds(COUNTY2) == (971, 4971, 19971)


def test_derived_thresholds_follow_the_target():
    at = open_app("adaptive")
    at.radio(key="ad_mode").set_value("derived").run()
    at.text_input(key="ad_target").input("5.0").run()
    s2 = float(budget.sigma2_stage2(0.159, 0.1, 9))
    want = adaptive.derive_thresholds(0.05, s2)
    assert config(at).thresholds(COUNTY2) == want
    at.radio(key="ad_rule").set_value("total").run()
    assert config(at).thresholds(COUNTY2) == adaptive.derive_thresholds(0.05, s2, rule="total")
    at.button(key="ad_apply_all").click().run()
    usa2 = PopulationGroupLevel("USA", 2)
    assert config(at).thresholds(usa2) == adaptive.derive_thresholds(
        0.05, float(budget.sigma2_stage2(2.134, 0.1, 9)), rule="total")


def test_level_tables_and_curves_follow_the_level():
    at = open_app("adaptive")
    assert list(_tables(at)["Cell MOE (exact)"]) == [11] * 4
    at.selectbox(key="ad_level").set_value("(USA, 2)").run()
    t = _tables(at)
    assert list(t["Cell MOE (exact)"]) == [3] * 4
    assert list(t["Total T1 MOE (exact)"]) == list(adaptive.t1_moe_by_level(float(budget.sigma2_stage2(2.134, 0.1, 9))))
    charts = at.get("plotly_chart")
    assert len(charts) == 1  # one chart per tab, only the open tab drawn
    fig = json.loads(charts[0].proto.spec)
    assert fig["layout"]["xaxis"]["title"]["text"].startswith("true population group size")
    assert {tr["name"] for tr in fig["data"]} >= {"total only", "sex × age23 (46 cells)"}
    at.session_state["ad_chart_tabs"] = "Expected accuracy"
    at.run()
    charts = at.get("plotly_chart")
    assert len(charts) == 1
    fig = json.loads(charts[0].proto.spec)
    assert fig["layout"]["title"]["text"].startswith("Expected accuracy")
    t1 = next(tr for tr in fig["data"] if tr["name"] == "total T1 (expected)")
    assert max(t1["y"]) == max(adaptive.t1_moe_by_level(float(budget.sigma2_stage2(2.134, 0.1, 9))))


def test_the_open_chart_tab_is_kept_after_a_visit_to_another_page():
    at = open_app("adaptive")
    at.session_state["ad_chart_tabs"] = "Expected accuracy"
    at.run()
    at.switch_page("app_pages/safetab/budget.py").run()
    at.switch_page("app_pages/safetab/adaptive.py").run()
    titles = [json.loads(c.proto.spec)["layout"]["title"]["text"] for c in at.get("plotly_chart")]
    assert len(titles) == 1 and titles[0].startswith("Expected accuracy")


def test_thresholds_beyond_any_population_do_not_break_the_page():
    import base64
    import zlib

    from calculators.config import THRESHOLD_LIMIT
    from calculators.presets import production_2020
    from ui.safetab import analysis
    from ui.core import urlcodec

    # A link with thresholds of 1e40 (beyond the configuration's range): a message, no traceback.
    data = production_2020().to_dict()
    data["thresholds_p"]["(COUNTY, 2)"] = [10**40] * 3
    raw = json.dumps({"v": 1, "c": data}, separators=(",", ":")).encode()
    token = base64.urlsafe_b64encode(zlib.compress(raw, 9)).decode().rstrip("=")
    at = open_app(query={"config": token})  # asserts no exception
    assert any("could not be used" in shown(e.value) and "1,000,000,000,000" in shown(e.value) for e in at.error)
    at.switch_page("app_pages/safetab/adaptive.py").run()
    assert not at.exception
    assert config(at).thresholds(COUNTY2) == production_2020().thresholds(COUNTY2)
    # Thresholds at the largest value the range allows: kept as typed, the page draws.
    cfg = production_2020().with_thresholds(COUNTY2, [THRESHOLD_LIMIT] * 3)
    at = open_app("adaptive", query={"config": urlcodec.encode(cfg)})
    assert config(at).thresholds(COUNTY2) == (THRESHOLD_LIMIT,) * 3  # the value is kept, not changed
    assert len(at.get("plotly_chart")) == 1
    probs = analysis.stat_level_curves(config(at), COUNTY2)
    assert probs["True group size"].max() == analysis.MAX_GROUP_SIZE
    below = probs["True group size"] < THRESHOLD_LIMIT * 0.999
    assert below.sum() > 100 and (probs[below]["P(total only)"] > 0.999).all()  # none reaches the thresholds
    th = frame(at, "Θ₁", "Θ₂", "Θ₃")
    assert th[(th["Geography"] == "COUNTY") & (th["Iterations"] == "Detailed")]["Θ₁"].iloc[0] == THRESHOLD_LIMIT
