"""The national outcome on the planner, adaptive-tables, suppression and scenarios pages
(AppTest): the numbers shown are the projection of the current plan on the chosen profile,
they follow every control, the profile is named and its nature said."""

from __future__ import annotations

import json

import pytest

from calculators import projection as P
from calculators.levels import POPULATION_GROUP_LEVELS, PopulationGroupLevel
from calculators.presets import production_2020
from engine.reports.profile import compute_profile
from tests.app.conftest import SAMPLE, compare_tab, config, frame, metric, open_app, shown, texts
from ui.safetab import projection as pj
from ui.safetab import projection_panel
from ui.committee import scenarios

COUNTY2 = PopulationGroupLevel("COUNTY", 2)
LEVEL, SUPP = pj.LEVEL, pj.LABELS["suppressed"]
AGE4, AGE9, AGE23 = pj.LABELS["age4"], pj.LABELS["age9"], pj.LABELS["age23"]
#: The change columns of the pages' table (issue 40): groups with a table and suppressed groups.
D_TABLE, D_SUPP = pj.CHANGE_COLUMNS["tables"], pj.CHANGE_COLUMNS["suppressed"]


def _national(at):
    return frame(at, LEVEL, AGE23, D_TABLE)


def _row(df, label="COUNTY Detailed"):
    return df[df[LEVEL] == label].iloc[0]


def _expected(cfg, which=pj.NATIONAL):
    """The table the pages show: against the default reference plan, the 2020 production plan."""
    prof = pj.shipped(which)
    return pj.display_table(P.project(cfg, prof), projection_panel.PLANNER_COLUMNS,
                            P.project(production_2020(), prof), projection_panel.PLANNER_CHANGES)


def test_the_planner_shows_the_national_outcome_of_the_plan():
    at = open_app("budget")
    shown = _national(at)
    want = _expected(config(at))
    assert shown.to_dict("records") == want.to_dict("records")
    # the 2020 plan at national scale: thousands of county groups get a table; every level and the total are there
    assert _row(shown)[AGE4] + _row(shown)[AGE9] + _row(shown)[AGE23] > 1000
    assert list(shown.columns[-2:]) == [D_TABLE, D_SUPP] and _row(shown)[D_TABLE] == "0"  # the reference itself
    assert list(shown[LEVEL])[-1] == "All levels" and len(shown) == 20
    t = texts(at)
    assert "Synthetic nation of 330,000,000 persons" in t and "synthetic (invented persons)" in t
    assert "Coterminous copying is ignored" in t
    assert "python -m engine profile" in t and "confidential" in t  # how an agency makes its own
    assert "(scale)" in t  # why the nation differs from the 50,000-person sample
    assert not at.get("plotly_chart")  # the tab that opens first; the charts wait in theirs


def test_the_planner_draws_only_its_open_tab():
    at = open_app("budget")
    at.session_state["pl_tabs"] = "MOE against the budget"
    at.run()
    charts = at.get("plotly_chart")
    assert len(charts) == 1 and json.loads(charts[0].proto.spec)["layout"]["title"]["text"].startswith("MOE")
    assert not any({LEVEL, AGE23} <= set(df.value.columns)
                   for df in at.dataframe)  # the national outcome is not drawn meanwhile
    at.switch_page("app_pages/safetab/adaptive.py").run()
    at.switch_page("app_pages/safetab/budget.py").run()
    assert len(at.get("plotly_chart")) == 1  # the tab the user opened is kept


def test_the_outcome_follows_a_new_budget():
    at = open_app("budget")
    before = _row(_national(at))
    row = POPULATION_GROUP_LEVELS.index(COUNTY2)
    at.session_state["planner_0"] = {"edited_rows": {row: {"ρ": 0.02}}, "added_rows": [], "deleted_rows": []}
    at.run()
    assert config(at).rho(COUNTY2) == 0.02
    after = _row(_national(at))
    assert after.to_dict() == _row(_expected(config(at))).to_dict()
    assert after[pj.LABELS["mean_abs_error"]] > before[pj.LABELS["mean_abs_error"]]  # more noise


def test_the_adaptive_page_shows_its_level_and_follows_the_thresholds():
    at = open_app("adaptive")
    s = pj.level_summary(P.project(config(at), pj.shipped(pj.NATIONAL)), COUNTY2)
    # the groups that exist (issue 40 item 2)
    assert metric(at, "Groups with a person") == f"{s['occupied']:,.0f}"
    assert metric(at, "With a sex × age table") == f"{s['occupied_with_table']:,.0f}"
    assert metric(at, "Suppressed") == f"{s['occupied_suppressed']:,.0f}"
    at.text_input(key="ad_t1").input("100").run()
    s2 = pj.level_summary(P.project(config(at), pj.shipped(pj.NATIONAL)), COUNTY2)
    assert s2["occupied_with_table"] > s["occupied_with_table"]
    assert metric(at, "With a sex × age table") == f"{s2['occupied_with_table']:,.0f}"
    # one table, the same on every page: total only never holds the suppressed
    from ui.safetab import projection_panel

    assert _national(at).to_dict("records") == _expected(config(at)).to_dict("records")


def test_a_plan_that_clamps_counts_shows_its_error_as_a_bound():
    """Counts clamped at 0: the error of a level with tables is an upper bound, and the
    page says "at most" (≤) and why, never the unclamped figure as if exact."""
    from ui.core import urlcodec

    at = open_app("adaptive", query={"config": urlcodec.encode(production_2020().updated(allow_negative_counts=False))})
    assert config(at).allow_negative_counts is False
    s = pj.level_summary(P.project(config(at), pj.shipped(pj.NATIONAL)), COUNTY2)
    assert s["mean_abs_error_bound"]
    assert metric(at, "Mean |error| of a total") == f"≤ {s['mean_abs_error']:.1f}"
    assert "gives an upper bound of the mean |error|" in texts(at)
    exact = pj.level_summary(P.project(production_2020(), pj.shipped(pj.NATIONAL)), COUNTY2)
    assert not exact["mean_abs_error_bound"] and exact["mean_abs_error"] < s["mean_abs_error"]


def test_the_suppression_page_follows_p():
    from ui.safetab import projection_panel

    at = open_app("suppression")
    cols = projection_panel.PLANNER_COLUMNS  # the same table as on the planner (issue 40 item 4)
    shown = frame(at, LEVEL, SUPP)
    assert cols == projection_panel.PLANNER_COLUMNS
    assert shown.to_dict("records") == _expected(config(at)).to_dict("records")
    at.text_input(key="w_p").input("0.5").run()
    after = frame(at, LEVEL, SUPP)
    assert after.to_dict("records") == _expected(config(at)).to_dict("records")
    assert _row(after)[SUPP] < _row(shown)[SUPP]
    # the change from the reference (the 2020 plan) is in view, signed (gap of issue 40)
    fewer = round(_row(after)[SUPP] - _row(shown)[SUPP])
    change = _row(after)[D_SUPP]
    assert fewer < 0 and change.startswith("−") and abs(int(change[1:].replace(",", "")) + fewer) <= 1
    assert _row(shown)[D_SUPP] == "0"


def test_the_sample_profile_can_be_chosen_and_every_page_keeps_it():
    at = open_app("budget")
    at.selectbox(key="pl_nat_profile").set_value(pj.SAMPLE).run()
    assert _national(at).to_dict("records") == _expected(config(at), pj.SAMPLE).to_dict("records")
    assert "Shipped sample" in texts(at)
    at.switch_page("app_pages/safetab/suppression.py").run()
    assert at.selectbox(key="sup_nat_profile").value == pj.SAMPLE
    assert "(scale)" not in texts(at)  # the sample is not compared with itself
    at.switch_page("app_pages/committee/memo.py").run()  # the memo's page 1 uses it too, and says so
    memo_text = shown(texts(at))
    assert "Page 1's national outcome is the projection on the group-size profile" in memo_text
    assert pj.shipped(pj.SAMPLE).name in memo_text and pj.shipped(pj.NATIONAL).name not in memo_text


def _csv_heads(monkeypatch) -> dict[str, list[str]]:
    """The '#' lines each CSV download of the page starts with, by file name."""
    from ui.core import widgets

    heads: dict[str, list[str]] = {}
    real = widgets.download_csv

    def record(df, filename, key, label=None, head=()):
        heads[filename] = list(head)
        return real(df, filename, key, label, head)

    monkeypatch.setattr(widgets, "download_csv", record)
    return heads


def test_an_uploaded_confidential_profile_is_named_and_marked(monkeypatch):
    heads = _csv_heads(monkeypatch)
    prof = compute_profile(SAMPLE / "params", SAMPLE / "data", name="Agency *data* 2030")
    at = open_app("budget")
    at.session_state["proj_uploaded"] = prof
    at.session_state["proj_choice"] = pj.UPLOADED
    at.run()
    assert at.selectbox(key="pl_nat_profile").value == pj.UPLOADED
    assert _national(at).to_dict("records") == pj.display_table(
        P.project(config(at), prof), projection_panel.PLANNER_COLUMNS,
        P.project(production_2020(), prof), projection_panel.PLANNER_CHANGES).to_dict("records")
    err = " ".join(e.value for e in at.error)
    assert "CONFIDENTIAL" in err and r"Agency \*data\* 2030" in err  # named, as typed (not Markdown)
    # so is its download: the profile named, marked CONFIDENTIAL, as the command line's CSV
    head = heads["national_outcome_pl_nat.csv"]
    assert head == P.project(config(at), prof).header_lines()
    assert any(line.startswith("Profile: Agency *data* 2030") for line in head)
    assert any(line.startswith("CONFIDENTIAL") for line in head)


def test_scenarios_compare_plans_on_the_national_outcome(tmp_path, monkeypatch):
    heads = _csv_heads(monkeypatch)
    monkeypatch.setenv(scenarios.ENV_DATA, str(tmp_path / "data"))
    store = scenarios.ScenarioStore()
    lower = production_2020().with_thresholds(COUNTY2, [100, 4971, 19971])
    store.save("Lower county threshold", lower)
    at = compare_tab(open_app("scenarios"))
    at.multiselect(key="sc_compare").set_value(["2020 production plan", "Lower county threshold"]).run()
    assert not at.exception
    df = frame(at, LEVEL, "Lower county threshold")
    nat = pj.shipped(pj.NATIONAL)
    want = pj.compare_plans([("2020 production plan", production_2020()), ("Lower county threshold", lower)], nat,
                            "tables")
    assert df.to_dict("records") == want.to_dict("records")
    row = _row(df)
    assert row["Lower county threshold"] > row["2020 production plan"] and row["Differs"]
    assert "Coterminous copying is ignored" in texts(at)  # the projection's notes, as on the planner
    at.radio(key="sc_nat_measure").set_value("t2_rows").run()
    df = frame(at, LEVEL, "Lower county threshold")
    assert df.to_dict("records") == pj.compare_plans(
        [("2020 production plan", production_2020()), ("Lower county threshold", lower)], nat,
        "t2_rows").to_dict("records")
    assert _row(df)["Lower county threshold"] > 2 * _row(df)["2020 production plan"]
    head = heads["compare_national_t2_rows.csv"]
    assert f"Profile: {nat.name} (330,000,000 persons)." in head[1] and not any("CONFIDENTIAL" in h for h in head)


@pytest.mark.parametrize("page", ["budget", "adaptive", "suppression"])
def test_no_profile_no_traceback(page, monkeypatch):
    monkeypatch.setattr(pj, "PROFILES", SAMPLE / "no-such-folder")
    at = open_app(page)
    assert not at.exception
    assert "No group-size profile is available" in texts(at)


def test_the_profile_explanation_and_upload_are_drawn_when_opened():
    """The long "where the profile comes from" text and the upload box are drawn only
    while open (lazy), so that a control change does not redraw them; the gist stays in view."""
    at = open_app("budget")
    assert "inside its secure environment with" not in texts(at)
    assert "python -m engine profile" in texts(at) and not at.get("file_uploader")
    at.session_state["pl_nat_how"] = True
    at.session_state["pl_nat_profile_pop"] = True
    at.run()
    assert "inside its secure environment with" in texts(at)  # HOW_TO_OWN, whole
    assert len(at.get("file_uploader")) == 1
    links = [str(e.proto) for e in at.get("page_link")]  # the glossary entries of its terms
    assert any("Group-size profile" in text for text in links) and any("National outcome (projection)" in text
                                                                        for text in links)


def test_the_memo_page_marks_the_memo_of_a_confidential_profile():
    """With a confidential profile chosen on the planner, the memo page says in red that the
    memo is confidential, and its files are named so."""
    prof = P.Profile.from_dict({**pj.shipped(pj.SAMPLE).to_dict(), "confidential": True, "synthetic": False,
                                "name": "Agency data 2030"})
    at = open_app("budget")
    at.session_state["proj_uploaded"] = prof
    at.session_state["proj_choice"] = pj.UPLOADED
    at.run()
    at.switch_page("app_pages/committee/memo.py").run()
    assert not at.exception
    err = " ".join(e.value for e in at.error)
    assert "Agency data 2030" in err and "the memo is marked CONFIDENTIAL" in err
    names = [b.proto.file_name if hasattr(b.proto, "file_name") else "" for b in at.get("download_button")]
    assert names and all(n.startswith("CONFIDENTIAL-decision-memo-") for n in names if n), names


def test_a_profile_named_on_several_lines_is_shown_on_one():
    """An uploaded profile whose name holds line breaks is named on one line (a caption of
    several paragraphs would cut the name and its bold in pieces)."""
    d = pj.shipped(pj.SAMPLE).to_dict()
    d["name"] = "line1\nline2 **x**\n# y"
    prof = pj.read_upload(json.dumps(d).encode(), "p.json")
    assert prof.name == "line1 line2 **x** # y"
    at = open_app("budget")
    at.session_state["proj_uploaded"] = prof
    at.session_state["proj_choice"] = pj.UPLOADED
    at.run()
    assert not at.exception
    assert "** line1 line2 **x** # y: 50,000 persons" in texts(at)  # as typed, on one line
