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
    assert any(b.label == "verdict.txt" for b in at.get("download_button"))  # the verdict, its data and plan


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
    assert any("'banana' is not a number: type a whole number" in shown(e.value) for e in at.error)
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


def _column_of(at, key):
    """The column that holds the text box `key` (its message is drawn in it, under the box)."""
    return next(c for c in at.columns if any(t.key == key for t in c.text_input))


@needs_sample
def test_table_shape_is_read_by_the_shared_rules_and_a_refusal_keeps_the_last_shape():
    """The shape box reads each length as every number box does (ui.core.typed): "1e3" is
    1000; "²", "-1", 5,000 digits are refused with the shared, bounded messages, under the
    box, while the page goes on with the last valid shape."""
    at = open_app("compare_invariants")
    at.radio(key="inv_mode").set_value("A custom table").run()
    at.text_input(key="inv_shape").set_value("2 x 1e3").run()
    assert not at.exception and not at.error
    assert at.session_state["inv_shape::value"] == (2, 1000)

    def study_shown():  # the grand total held on 2 x 1000 cells: factor 1 - 1/2000
        body = texts(at)
        return "Variance factor per cell=0.9995" in body and "on all 2,000 cells" in body

    assert study_shown()
    for bad, message in (("²", "'²' is not a number: type a whole number from 1 to 5,000,000."),
                         ("-1", "'-1' is below 1: type a whole number from 1 to 5,000,000."),
                         ("3 x 0", "'0' is below 1"),
                         ("9" * 5000, "is not a finite number: type a whole number from 1 to 5,000,000.")):
        at.text_input(key="inv_shape").set_value(bad).run()
        assert not at.exception
        col = _column_of(at, "inv_shape")
        assert len(col.error) == 1, (bad, [e.value for e in at.error])
        msg = shown(col.error[0].value)
        assert message in msg and msg.endswith("Still in use: 2 × 1000."), msg
        assert len(msg) < 200 and "invalid literal" not in msg and "Exceeds the limit" not in msg
        assert at.text_input(key="inv_shape").value == bad  # the text stays as typed
        # the study of the last valid shape is still shown
        assert study_shown()
        assert at.session_state["inv_shape::value"] == (2, 1000)
    # equal lengths are a valid shape, not a duplicate
    at.text_input(key="inv_shape").set_value("5 x 5").run()
    assert not at.error and at.session_state["inv_shape::value"] == (5, 5)


def test_the_custom_table_links_its_terms_to_the_glossary():
    at = open_app("compare_invariants")
    at.radio(key="inv_mode").set_value("A custom table").run()
    links = [link.proto.label for link in at.get("page_link") if "glossary" in link.proto.page]
    assert links.count("Margins (held exact)") == 2  # in the header and beside the margins box
