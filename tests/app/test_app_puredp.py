"""The app under a pure-DP plan: every page shows epsilons and geometric figures."""

from __future__ import annotations

from calculators import budget, geometric, suppression
from calculators.levels import PopulationGroupLevel
from tests.app.conftest import config, frame, metric, open_app, page_script, texts

COUNTY2 = PopulationGroupLevel("COUNTY", 2)


def _pure(page: str):
    at = open_app("budget")
    at.radio(key="w_privacy_defn").set_value("puredp").run()
    assert config(at).privacy_defn == "puredp"
    at.switch_page(page_script(page)).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_overview_reports_pure_epsilon():
    at = _pure("overview")
    release = budget.plan_totals(config(at)).release
    assert 29.99 < release < 30  # 29.996: four significant digits that do not make it look whole
    assert metric(at, "ε, whole release") == "30.00"
    assert "ε release **30.00** (US 30.00, PR 18.49; bounded 59.99)" in texts(at)  # the sidebar
    assert "δ = 0" in texts(at) and not any(m.label.startswith("ρ") for m in at.metric)
    t = frame(at, "ε", "b stage 2")
    county = t[(t["Geography"] == "COUNTY") & (t["Iterations"] == "Detailed")].iloc[0]
    assert county["MOE (exact)"] == geometric.moe(county["b stage 2"])


def test_suppression_page_threshold_is_the_geometric_one():
    at = _pure("suppression")
    b = 9 / (0.9 * config(at).rho(COUNTY2))
    want = suppression.threshold(b, 0.9999, noise="geometric")
    assert f"threshold **T = {want}**" in texts(at)
    n = int(at.text_input(key="sup_n").value)
    assert metric(at, "P(suppressed)") == f"{float(suppression.suppression_probability(n, want, b, noise='geometric')):.4f}"


def test_planner_and_adaptive_pages_run_under_pure_dp():
    at = _pure("budget")
    assert metric(at, "ε of the release (δ = 0)") == f"{budget.plan_totals(config(at)).release:.3g}"
    assert at.radio(key="w_privacy_defn").value == "puredp"
    at.switch_page("app_pages/safetab/adaptive.py").run()
    assert not at.exception and "two-sided geometric noise" in texts(at)
