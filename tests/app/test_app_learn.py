"""The "Learn" section (issue 41): every lesson renders with its parts; its answers equal
the calculators' values (computed here from `calculators`, not from the lesson's helper);
its "Try this" controls leave the plan alone until "Use this in the planner", which is one
step of Undo; the class starts on the 2020 plan and gives the learner's plan back; the
presenter view is kept across pages and hides the sidebar's plan summary."""

from __future__ import annotations

import json
import re

import pytest

from calculators import adaptive, budget, discrete_gaussian, suppression
from calculators.presets import production_2020
from tests.app.conftest import config, open_app, shown, texts
from ui.learn import classroom, lessons

TRACT2, COUNTY2 = "privacy_budget_p_level_2_tract", "privacy_budget_p_level_2_county"


def _lesson(number: int, query: dict | None = None):
    at = open_app(query=query)
    at.switch_page(lessons.by_number(number).script).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _answer(at, number: int) -> str:
    """Reveal the lesson's answer and return its text (shown as a reader sees it)."""
    assert not [s for s in at.success if "lightbulb" in str(s.icon)]  # hidden until asked for
    at.toggle(key=f"learn{number}_reveal").set_value(True).run()
    assert not at.exception, [e.value for e in at.exception]
    found = [shown(s.value) for s in at.success if s.icon == ":material/lightbulb:"]
    assert len(found) == 1, [s.value for s in at.success]
    return found[0]


def _numbers(text: str) -> list[float]:
    return [float(x.replace(",", "")) for x in re.findall(r"\d[\d,]*(?:\.\d+)?", text)]


def _undo(at):
    at.sidebar.button(key="sb_undo").click().run()
    assert not at.exception, [e.value for e in at.exception]


def _used_then_undone(at, number: int, before, **expected) -> None:
    """The tried values have left the plan as it was; "Use this in the planner" gives the
    plan the `expected` config.json values, and one Undo puts it back."""
    assert config(at).to_dict() == before.to_dict()
    at.button(key=f"learn{number}_use").click().run()
    assert not at.exception, [e.value for e in at.exception]
    after = config(at).to_dict()
    assert {k: after[k] for k in expected} == expected
    _undo(at)
    assert config(at).to_dict() == before.to_dict()


def _metric(at, start: str) -> str:
    found = [m.value for m in at.metric if m.label.startswith(start)]
    assert found, [m.label for m in at.metric]
    return found[0]


@pytest.mark.parametrize("number", range(1, 7))
def test_every_lesson_has_its_parts(number):
    at = _lesson(number)
    lesson = lessons.by_number(number)
    assert at.title[0].value == f"Lesson {number}: {lesson.title}"
    heads = [h.value for h in at.subheader]
    assert heads[0].startswith("Worked example: ")
    assert {"Try this", "Question", "What you learned", "Go further"} <= set(heads)
    md = texts(at)
    assert f"**Goal.** {lesson.goal}" in md
    lists = [m.value for m in at.markdown if m.value.startswith("1. ")]
    assert lists[-1].count("\n") == 2 and lists[-1].split("\n")[2].startswith("3. ")  # what you learned: 3 lines
    assert at.button(key=f"learn{number}_use").disabled  # nothing tried yet: nothing to use
    assert at.button(key=f"learn_start_{number}").label == "Start the class"
    links = {(el.proto.label, el.proto.query_string) for el in at.get("page_link")}
    assert any(label.startswith("The full page: ") for label, _q in links)
    assert all(any(label == t and q.startswith("term=") for label, q in links) for t in lesson.terms)
    prev, nxt = lessons.neighbours(lesson)
    labels = {label for label, _q in links}
    if prev is not None:
        assert f"Previous: {prev.nav_title}" in labels
    assert not any(label.startswith("Previous:") for label in labels) or prev is not None
    assert (f"Next: {nxt.nav_title}" if nxt else "Next: write the decision memo") in labels


def test_lesson_1_answer_and_try_this():
    at = _lesson(1)
    before = config(at)
    # the worked example: a Detailed group of 40 persons in one tract, at rho 0.159
    s2 = float(budget.sigma2_stage2(0.159, 0.1, 9))
    moe = int(discrete_gaussian.moe(s2))
    assert f"between **{40 - moe} and {40 + moe}**" in texts(at)
    # the answer: four times the budget
    ans = _answer(at, 1)
    assert _numbers(ans)[0] == int(discrete_gaussian.moe(budget.sigma2_stage2(4 * 0.159, 0.1, 9))) == 5
    # try another budget and group size: the plan does not move
    at.select_slider(key="learn1_rho").set_value(0.5).run()
    at.text_input(key="learn1_n").input("100").run()
    moe = int(discrete_gaussian.moe(budget.sigma2_stage2(0.5, 0.1, 9)))
    assert _metric(at, "Exact 95 % MOE") == f"{moe} persons"
    assert _metric(at, "95 % of counts between") == f"{100 - moe} and {100 + moe}"
    _used_then_undone(at, 1, before, **{TRACT2: 0.5})


def test_lesson_2_answer_and_try_this():
    at = _lesson(2)
    before = config(at)
    t = budget.plan_totals(before)
    ans = _answer(at, 2)
    assert f"ρ = {t.release_bounded:.4g}" in ans
    assert f"ε = {float(budget.epsilon_tight(t.release_bounded, 1e-10)):.3g}" in ans
    at.select_slider(key="learn2_factor").set_value(4.0).run()
    assert _metric(at, "ρ of the release") == f"{t.release + 3 * 0.159:.4g}"
    _used_then_undone(at, 2, before, **{TRACT2: 0.636})


def test_lesson_3_answer_and_try_this():
    at = _lesson(3)
    before = config(at)
    ans = _answer(at, 3)
    s2 = budget.sigma2_stage2(0.159, 0.1, budget.stability(3))
    assert f"**S = {budget.stability(3)}** and an exact MOE of **{int(discrete_gaussian.moe(s2))} persons**" in ans
    at.select_slider(key="learn3_r").set_value(2).run()
    assert _metric(at, "Stability S") == "3"
    _used_then_undone(at, 3, before, max_race_codes=2)


def test_lesson_4_answer_and_try_this():
    at = _lesson(4)
    before = config(at)
    ans = _answer(at, 4)
    s1 = float(budget.sigma2_stage1(0.159, 0.1, 9))
    p = adaptive.stat_level_probabilities(970, (971, 4971, 19971), s1)
    assert ans.startswith(f"**{100 * (1 - p[0]):.1f} %**")
    at.select_slider(key="learn4_gamma").set_value(0.3).run()
    at.text_input(key="learn4_n").input("5000").run()
    s1 = float(budget.sigma2_stage1(0.159, 0.3, 9))
    p = adaptive.stat_level_probabilities(5000, (971, 4971, 19971), s1)
    assert _metric(at, "Chance of a table") == f"{100 * (1 - p[0]):.3g} %"
    assert _metric(at, "Stage-1 MOE") == f"{int(discrete_gaussian.moe(s1))} persons"
    _used_then_undone(at, 4, before, privacy_budget_p_stage_1_fraction=0.3)


def test_lesson_5_answer_and_try_this():
    at = _lesson(5)
    before = config(at)
    s2 = float(budget.sigma2_stage2(0.159, 0.1, 9))
    T = int(suppression.threshold(s2, 0.9999))
    assert f"**T = {T}**" in texts(at) and T == 21
    ans = _answer(at, 5)
    p = float(suppression.suppression_probability(T, T, s2))
    assert ans.startswith(f"**{100 * p:.1f} %**") and p > 0.5
    at.select_slider(key="learn5_p").set_value(0.99).run()
    assert _metric(at, "Threshold T") == str(int(suppression.threshold(s2, 0.99)))
    _used_then_undone(at, 5, before, zero_suppression_chance=0.99)


def test_lesson_6_answer_and_try_this():
    from calculators.projection import project
    from ui.safetab import projection

    profile = projection.shipped(projection.NATIONAL)
    if profile is None:
        pytest.skip("the shipped national profile is not there")
    at = _lesson(6)
    before = config(at)
    full = project(before, profile).total
    half = project(before.updated(**{lvl.budget_key: before.rho(lvl) / 2 for lvl in before.tabulated_levels()}),
                   profile).total
    ans = _answer(at, 6)
    tables = lambda t: t["age4"] + t["age9"] + t["age23"]  # noqa: E731
    assert f"{round(abs(tables(half) - tables(full))):,} groups" in ans
    assert f"{round(half['suppressed']):,} instead of {round(full['suppressed']):,}" in ans
    assert _metric(at, "Totals suppressed") == f"{round(full['suppressed']):,}"
    # the two explanations are calculators.explain's, for this plan
    from calculators import explain
    from ui.core import planner

    md = texts(at)
    why = explain.less_budget_more_tables(before, before.updated(**{
        lvl.budget_key: float(f"{before.rho(lvl) / 2:.4g}") for lvl in before.tabulated_levels()}), profile)
    why_r = explain.smaller_r_suppresses_more(before, 6, planner.production_targets(), planner.EXACT, profile)
    assert why and why_r
    assert all(f"- {line}" in md for line in why + why_r), [line for line in why + why_r if line not in md]
    at.select_slider(key="learn6_factor").set_value(0.5).run()
    assert _metric(at, "Totals suppressed") == f"{round(half['suppressed']):,}"
    _used_then_undone(at, 6, before, **{COUNTY2: 0.0795})


def test_the_class_starts_on_the_2020_plan_and_gives_the_learners_plan_back():
    at = open_app("budget")
    at.slider(key="w_r").set_value(3).run()
    mine = config(at)
    assert mine.max_race_codes == 3
    at.switch_page(lessons.by_number(3).script).run()
    assert at.select_slider(key="learn3_r").value == 3  # the lesson's control starts from the plan
    at.button(key="learn_start_3").click().run()
    assert config(at).to_dict() == production_2020().to_dict()
    assert at.select_slider(key="learn3_r").value == 8  # ... and again from the class's plan
    assert "The class has started at lesson 3" in texts(at)
    assert "Class in progress" in texts(at)
    # a change during the class, then the end of the class: the learner's plan is back
    at.select_slider(key="learn3_r").set_value(5).run()
    at.button(key="learn3_use").click().run()
    assert config(at).max_race_codes == 5
    at.sidebar.button(key="learn_end_sidebar").click().run()
    assert config(at).to_dict() == mine.to_dict()
    assert "2020 production plan, edited" in "\n".join(shown(m.value) for m in at.sidebar.markdown)
    # Undo works as before: back to the class's last plan, then to the 2020 plan
    _undo(at)
    assert config(at).max_race_codes == 5
    _undo(at)
    assert config(at).to_dict() == production_2020().to_dict()
    _undo(at)
    assert config(at).to_dict() == mine.to_dict()


def test_a_link_starts_the_class_at_its_lesson():
    at = open_app("budget")
    at.slider(key="w_r").set_value(4).run()
    at.query_params["class"] = "start"
    at.switch_page(lessons.by_number(5).script).run()
    assert not at.exception
    assert config(at).to_dict() == production_2020().to_dict()
    assert "class" not in at.query_params or not at.query_params.get("class")
    assert at.button(key="learn_end_5")
    at.button(key="learn_end_5").click().run()
    assert config(at).max_race_codes == 4


def _chart_heights(at) -> list[int]:
    return [json.loads(c.proto.spec)["layout"]["height"] for c in at.get("plotly_chart")]


def test_presenter_view_is_kept_across_pages_and_hides_the_plan_summary():
    at = _lesson(1)
    assert any("Current plan:" in m.value for m in at.sidebar.markdown)
    assert _chart_heights(at) == [classroom.CHART_PX]
    at.sidebar.toggle(key="w_learn_presenter").set_value(True).run()
    assert not any("Current plan:" in m.value for m in at.sidebar.markdown)
    assert _chart_heights(at) == [600]
    css = "\n".join(h.proto.body for h in at.get("html"))
    assert "font-size: 20px" in css
    at.switch_page(lessons.by_number(4).script).run()
    assert at.sidebar.toggle(key="w_learn_presenter").value is True
    assert not any("Current plan:" in m.value for m in at.sidebar.markdown)
    assert "font-size: 20px" in "\n".join(h.proto.body for h in at.get("html"))
    at.switch_page("app_pages/safetab/suppression.py").run()  # every page's charts, not only the lessons'
    assert not at.exception
    assert not any("Current plan:" in m.value for m in at.sidebar.markdown)
    assert _chart_heights(at) and min(_chart_heights(at)) >= 600
    at.sidebar.toggle(key="w_learn_presenter").set_value(False).run()
    assert any("Current plan:" in m.value for m in at.sidebar.markdown)
    assert min(_chart_heights(at)) < 600


def test_overview_links_to_the_lessons_scenarios_and_the_memo():
    at = open_app()
    assert "Learn SafeTab-P in an hour" in texts(at)
    links = {el.proto.label: (el.proto.page, el.proto.query_string) for el in at.get("page_link")}
    assert links["Start the class"] == ("learn_noise", "class=start")
    for lesson in lessons.LESSONS:  # each lesson's link starts the class there
        assert links[lesson.nav_title] == (lesson.url_path, "class=start")
    assert links["Save and compare scenarios"][0] == "scenarios"
    assert links["Write the decision memo"][0] == "memo"


def test_a_pure_dp_plan_is_told_to_start_the_class():
    at = open_app()
    at.session_state["config"] = production_2020().updated(privacy_defn="puredp")
    at.switch_page(lessons.by_number(1).script).run()
    assert not at.exception
    assert "the current plan uses pure DP" in texts(at)
    assert not at.get("plotly_chart")  # no zCDP figures for a pure-DP plan
    at.button(key="learn_start_1").click().run()
    assert config(at).privacy_defn == "zcdp"
    assert at.get("plotly_chart") and "Exact 95 % MOE" in [m.label for m in at.metric]


def test_a_plan_name_that_looks_like_markdown_is_shown_as_typed():
    at = open_app()
    at.session_state["config_source"] = "**bold** [link](http://example.com)"
    at.switch_page(lessons.by_number(6).script).run()
    assert not at.exception
    example = next(m.value for m in at.markdown if m.value.startswith("1. On the shipped profile"))
    assert "\\*\\*bold\\*\\*" in example and "](http" not in example
    assert "**bold** [link](http://example.com)" in shown(example)
