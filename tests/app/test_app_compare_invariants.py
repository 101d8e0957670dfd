"""The Invariants page (Compare methods) as a user drives it."""

from __future__ import annotations

import math

from calculators import budget, discrete_gaussian
from tests.app.conftest import frame, needs_sample, open_app, shown, texts
from tests.app.paper_tables import static_table


@needs_sample
def test_level_study_states_and_tracts():
    at = open_app("compare_invariants", timeout=120)
    assert at.radio(key="inv_plan").value == "data"  # the sample's own plan by default
    at.radio(key="inv_plan").set_value("production").run(timeout=120)
    body = texts(at)
    assert "Data: the shipped synthetic sample (50,000 persons, sample_data/). Plan: 2020 production plan." in body
    assert at.title[0].value == "Invariants"
    assert "Invariants are not SafeTab-P" in body
    # Default: tracts held to their county's true count (some sample counties hold 2-3
    # tracts), so the noise that is left can be simulated.
    assert "True totals published exactly=" in body
    assert "the disclosure SafeTab-P exists to prevent" in body
    rev = frame(at, "True total (persons)", "Totals published exactly")
    shown = int(next(m.value for m in at.metric if m.label == "True totals published exactly" and m.value != "0")
                .replace(",", ""))
    assert rev["Totals published exactly"].sum() == shown
    sim = frame(at, "Var. with, simulated", "Var. with, predicted")
    assert len(sim) >= 2
    assert (sim["Var. with, simulated"] < sim["Var. SafeTab-P, simulated"]).all()
    assert "In every replication the regions add up to the true total exactly." in texts(at)
    assert "shrinks the typical MOE" in at.success[-1].value
    # Counties within states: on the sample every state has one county, so every county
    # count is exact and nothing is left to simulate.
    at.selectbox(key="inv_chain").set_value("STATE").run()
    assert not at.exception
    assert "there is no noise left to simulate" in texts(at)
    assert any(b.label.startswith("Everything (invariants_level_study.zip)") for b in at.get("download_button"))


def test_custom_table_presets_and_errors():
    at = open_app("compare_invariants")
    at.radio(key="inv_mode").set_value("A custom table").run()
    assert not at.exception
    body = texts(at)
    # Default preset: the paper's 102 counties with the state total held.
    assert "Variance factor per cell=0.9902" in body
    assert "general projector" in body and "rank 1," in body
    s2 = float(budget.sigma2_stage2(0.159, 0.1, 9))
    assert f"MOE of a cell (exact)={int(discrete_gaussian.moe(s2))}" in body
    # The paper's 14 x 24 x 20 table: rank 740, factor 299/336.
    at.selectbox(key="inv_preset").set_value(
        "Paper §5.2: 14 × 24 × 20 table, two-way margins held at each of the 20 locations").run()
    assert not at.exception
    body = texts(at)
    assert "Variance factor per cell=0.8899" in body and "rank 740" in body
    fig = frame(at, "Figure", "Value")
    assert "299/336" in " ".join(fig["Value"])
    moe = 1.96 * math.sqrt(float(discrete_gaussian.variance(s2)) * 299 / 336)
    assert f"MOE of a cell (normal approx.)={moe:.2f}" in body
    # A bad shape is a message, not a traceback; the margins follow the shape.
    at.text_input(key="inv_shape").set_value("14 x banana").run()
    assert not at.exception
    assert any("'banana' is not a whole number" in shown(e.value) for e in at.error)
    at.text_input(key="inv_shape").set_value("3 x 4").run()
    assert not at.exception
    assert at.multiselect(key="inv_margins").value == []
    at.multiselect(key="inv_margins").set_value([(0, 1)]).run()
    assert "Cells published exactly=12" in texts(at)
    assert "whole table would be published exactly" in at.success[-1].value


def test_the_papers_own_numbers_are_computed_on_the_page():
    """Both views show Gao, Gong and Yu's printed numbers beside the project's: rank 740,
    Sec. 5.2's 0.88 (0.86, 0.91) matching the variance factor (not a standard deviation),
    epsilon = 0.192, and Lemma 3.4's c beside Dwork and Roth's."""
    at = open_app("compare_invariants")
    at.radio(key="inv_mode").set_value("A custom table").run()
    assert not at.exception
    assert "The paper's own numbers" in [h.value for h in at.subheader]
    paper = static_table(at, "The paper says").set_index("The paper says")
    assert paper.loc["Invariant dimension, (24 + 14 − 1) × 20", "Computed here"].startswith("740")
    assert paper.loc["Invariant dimension, (24 + 14 − 1) × 20", "Match"] == "yes"
    med = paper.loc["Median 'standard deviation' of the errors (50 runs)"]
    assert med["Computed here"].startswith("0.8898 variance (exact)") and med["Match"] == "yes"
    assert paper.loc["… its 5% quantile", "Match"] == paper.loc["… its 95% quantile", "Match"] == "yes"
    sd = paper.loc["The same figures read as standard deviations"]
    assert sd["Computed here"].startswith("0.9433") and sd["Match"] == "no"
    assert paper.loc["Budget ε = 4 (total) × 0.16 (county) × 0.3 (population)", "Computed here"] == "0.192"
    c = frame(at, "c, paper (Lemma 3.4)", "c, Dwork–Roth").set_index(["ε", "δ"])
    assert c.loc[(1.0, 1e-5), "c, paper (Lemma 3.4)"] == 4.5374
    assert c.loc[(0.5, 1e-5), "c, paper (Lemma 3.4)"] == 9.0747
    assert c.loc[(0.5, 1e-5), "c, Dwork–Roth"] == 9.6896
    assert math.isnan(c.loc[(1.0, 1e-5), "c, Dwork–Roth"])  # not defined for epsilon >= 1
    assert "matches the variance factor 299/336" in texts(at)
    assert any(b.label == "paper_numbers.csv" for b in at.get("download_button"))
