"""The "Custom geographies" page (app_pages/compare/spines.py) as a user drives it."""

from __future__ import annotations

from tests.app.conftest import SPINES, frame, needs_sample, open_app, shown, texts
from tests.app.paper_tables import static_table

pytestmark = [needs_sample, SPINES]  # SPINES: the page's study made once, on one worker (tests/app/conftest.py)


def _open():
    """The page on the 2020 production plan (its thresholds suppress most of the sample's
    tract groups, which the tests below rely on)."""
    at = open_app("compare_spines", timeout=120)
    at.radio(key="sp_plan").set_value("production").run(timeout=120)
    return at


def test_default_area_is_a_place_minus_a_tract_composed_of_two_units():
    at = _open()
    assert at.title[0].value == "Custom geographies"
    dec = frame(at, "Sign", "Published unit")
    assert dec["Published unit"].tolist() == ["Tract 06001000100", "Place 0600100"]
    assert dec["Sign"].tolist() == ["−", "+"]
    summary = frame(at, "Measure", "Custom area (composed)").set_index("Measure")
    assert summary.loc["Published units added or subtracted"].tolist() == ["2", "1"]
    # The variance of the composed count is the sum of the units' variances.
    composed = float(summary.loc["Noise variance", "Custom area (composed)"].replace(",", ""))
    assert abs(composed - dec["Noise variance"].sum()) < 0.2
    body = texts(at)
    assert "not a release" in body and "exact law of the signed sum" in body
    assert "2 published unit(s)" in at.success[0].value
    labels = [b.label for b in at.get("download_button")]
    assert "Everything (custom_area.zip)" in labels and "area.txt" in labels


def test_blocks_splitting_a_piece_are_not_composable():
    at = _open()
    at.selectbox(key="sp_builder").set_value("Blocks").run(timeout=120)
    assert not at.exception
    assert any("Not composable" in shown(e.value) and "block groups or blocks" in shown(e.value) for e in at.error)
    assert "cannot be built from SafeTab-P's published numbers" in at.success[0].value
    census = frame(at, "Sign", "Unit (not published by SafeTab-P)")
    assert census["Unit (not published by SafeTab-P)"].str.startswith("Block").all()


def test_a_typed_list_and_its_errors():
    at = _open()
    at.selectbox(key="sp_builder").set_value("A list (type or upload)").run(timeout=120)
    at.text_area(key="sp_text").set_value("county 06001\n").run(timeout=120)
    assert frame(at, "Sign", "Published unit")["Published unit"].tolist()[0] in ("County 06001", "State 06")
    at.text_area(key="sp_text").set_value("tract 06001000100\nbogus line\n").run(timeout=120)
    assert not at.exception
    err = "\n".join(shown(e.value) for e in at.error)
    assert "line 2" in err and "bogus line" in err


def test_group_and_level_choices_change_the_numbers():
    at = _open()
    before = frame(at, "Measure", "Custom area (composed)").copy()
    at.selectbox(key="sp_level").set_value(1).run(timeout=120)
    assert not at.exception
    after = frame(at, "Measure", "Custom area (composed)")
    assert not before.equals(after)


def test_spine_view_shows_osed_before_and_after():
    at = _open()
    at.segmented_control(key="sp_view").set_value("Spine optimisation").run(timeout=120)
    assert not at.exception
    s = frame(at, "Entities", "Spine", "Mean OSED").set_index(["Entities", "Spine"])
    assert s.loc[("Places", "Optimised spine"), "Mean OSED"] < s.loc[("Places", "Census spine"), "Mean OSED"]
    ent = frame(at, "Entity", "OSED, Census spine")
    assert len(ent) == 16
    assert "Optimised 9 counties" in texts(at)
    assert "SafeTab-P needs no spine" in at.success[0].value
    # Production's AIAN spine beside the Census spine: AIANNH area 0020 is on it.
    s_aian = s.loc[("AIANNH areas", "AIAN spine"), "Mean OSED"]
    assert s_aian < s.loc[("AIANNH areas", "Census spine"), "Mean OSED"]
    ent = ent.set_index("Entity")
    assert ent.loc["AIANNH area 0020", "OSED, Census spine"] == 5 and ent.loc["AIANNH area 0020", "OSED, AIAN spine"] == 1
    units = frame(at, "Level", "Census spine", "AIAN spine", "Optimised spine").set_index("Level")
    assert units.loc["State", "Census spine"] == 9 and units.loc["State", "AIAN spine"] == 12
    # The paper's own numbers, computed on the page.
    paper = static_table(at, "The paper says").set_index("The paper says")
    assert paper.loc["Tract of 100 blocks: lowest possible largest fan-out", "Computed here"] == "10"
    assert paper.loc["Equal shares, pure DP: bypass a parent with at most … children", "Computed here"] == "3"
    assert paper.loc["zCDP (Gaussian): bypass parents with only … child", "Match"] == "yes"
    assert paper.loc["Most blocks in an optimised block group (n = 100 blocks, fanout_cutoff = 12)",
                     "Computed here"].startswith("23 (production's int(√n + fanout_cutoff + 1)")
    at.text_input(key="sp_fanout").input("0").run(timeout=120)
    assert not at.exception
    units = frame(at, "Level", "Census spine", "Optimised spine").set_index("Level")
    assert units.loc["Block group", "Optimised spine"] >= 30


def test_a_study_already_made_is_shown_again_in_any_session():
    """The optimised spine is kept for the same inputs; showing it again (a rerun, another
    session) reuses it without the progress bar of the session that made it."""
    at = _open()
    at.segmented_control(key="sp_view").set_value("Spine optimisation").run(timeout=120)
    assert not at.exception
    first = frame(at, "Entity", "OSED, Census spine")
    at.run(timeout=120)  # any rerun with the same inputs
    assert not at.exception, [e.value for e in at.exception]
    other = _open()
    other.segmented_control(key="sp_view").set_value("Spine optimisation").run(timeout=120)
    assert not other.exception, [e.value for e in other.exception]
    assert frame(other, "Entity", "OSED, Census spine").equals(first)


def test_spine_view_on_a_larger_synthetic_geography():
    at = _open()
    at.segmented_control(key="sp_view").set_value("Spine optimisation").run(timeout=120)
    at.radio(key="sp_source").set_value("A synthetic nation (geography only)").run(timeout=120)
    at.text_input(key="sp_persons").input("2000000").run(timeout=120)
    assert not at.exception
    ent = frame(at, "Entity", "OSED, Census spine")
    assert len(ent) > 100  # about one place per 10,000 persons
    assert (ent["OSED, optimised spine"] <= ent["OSED, Census spine"]).mean() > 0.9


def test_a_suppressed_unit_makes_the_area_not_composable():
    at = _open()  # the 2020 production plan, seed 1: European 29 alone is suppressed in the tract
    option = next(o for o in at.selectbox(key="sp_group").options if "(1031)" in o)
    at.selectbox(key="sp_group").set_value(option).run(timeout=120)
    assert not at.exception
    warning = "\n".join(w.value for w in at.warning)
    assert "Not composable" in warning and "Tract 06001000100" in warning
    dec = frame(at, "Sign", "Published unit").set_index("Published unit")
    assert dec.loc["Tract 06001000100", "Available"] == "suppressed"
    assert "no estimate" in at.success[0].value
    # The true count is known in a study, so a published unit of the same size is still shown.
    summary = frame(at, "Measure", "Custom area (composed)").set_index("Measure")
    assert summary.loc["Published units added or subtracted", "Custom area (composed)"] == "not composable"
    assert summary.loc["95% MOE, exact law of the noise", "Published unit of the same size"] != "—"


def test_a_group_published_for_none_of_the_units_says_so_in_words():
    """The current plan without US tracts: the default area (a place minus a tract) needs a
    tract, which this plan never publishes; the page says so (it printed "it would take
    None unit(s)")."""
    from calculators.presets import production_2020

    at = open_app("compare_spines", timeout=120)
    at.session_state["config"] = production_2020().updated(privacy_budget_p_level_1_tract=0.0,
                                                           privacy_budget_p_level_2_tract=0.0)
    at.radio(key="sp_plan").set_value("current").run(timeout=120)
    assert not at.exception
    warning = "\n".join(w.value for w in at.warning)
    assert "Not composable" in warning and "not published for the units this area needs" in warning
    assert "None" not in warning and "None" not in texts(at)
