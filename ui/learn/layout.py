"""The page of a lesson (Streamlit): title and goal, the class bar, the worked example,
"Try this" with "Use this in the planner", the question with its answer on request,
"What you learned", links to the full page and the glossary, Previous / Next.

The figures come from `ui.learn.content`; "Try this" controls are the lesson's own
session values (keys ``learn<N>_...``) and never touch the plan: only "Use this in the
planner" does, through `ui.core.state.update` (one step of Undo, as any plan change)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import plotly.graph_objects as go
import streamlit as st

from calculators.config import SafeTabConfig
from ui.core import charts, glossary, history, state, typed, widgets
from ui.learn import classroom, content, lessons

#: What the lessons' own "persons in the group" boxes accept.
PERSONS = typed.Rule(whole=True, lo=0, hi=10**9, unit="persons")


def header(lesson: lessons.Lesson) -> SafeTabConfig:
    """Title, goal and the class bar; returns the plan the lesson uses (the current one).
    A lesson opened by a "start the class" link starts the class first."""
    state.page_setup()
    if st.query_params.get(classroom.START_PARAM) == classroom.START_VALUE:
        classroom.start_from_link(lesson)
        st.rerun()  # the sidebar was drawn with the plan before
    classroom.lesson_style()
    st.title(f"Lesson {lesson.number}: {lesson.title}")
    st.markdown(f"**Goal.** {lesson.goal}")
    st.caption(f"Lesson {lesson.number} of {len(lessons.LESSONS)}, about {lesson.minutes} minutes.")
    classroom.class_bar(lesson)
    cfg = state.config()
    if cfg.privacy_defn == "puredp":
        st.info("The lessons follow the 2020 design, zCDP with discrete Gaussian noise; the current plan uses pure "
                "DP. Press **Start the class** to follow them on the 2020 production plan (your plan comes back "
                "when the class ends).", icon=":material/school:")
        footer(lesson)
        st.stop()
    return cfg


def worked_example(title: str, lines: list[str]) -> None:
    st.subheader(f"Worked example: {title}")
    st.markdown("\n".join(f"{i}. {line}" for i, line in enumerate(lines, 1)))


@contextmanager
def try_this() -> Iterator[None]:
    st.subheader("Try this")
    st.caption("These controls are the lesson's own: the plan changes only if you press **Use this in the "
               "planner** (and Undo, in the sidebar, puts it back).")
    with st.container(border=True):
        yield


def persons_box(label: str, key: str, value: int, container: Any = None) -> int:
    """A lesson's own whole-number box (used exactly as typed, or refused with a message)."""
    return int(widgets.number_box(label, key, PERSONS, value, container=container,
                                  help="A whole number of persons, 0 or more."))


def _use(changes: dict[str, Any], what: str) -> None:
    """Apply the tried values to the plan: one change, one step of Undo."""
    with history.batch(st.session_state):
        if state.update(**changes):
            state.flash("success", f"Used in the planner: {what}. Undo (in the sidebar) puts the plan back.")


def use_in_planner(lesson: lessons.Lesson, cfg: SafeTabConfig, changes: dict[str, Any], what: str) -> None:
    """The one button of a lesson that changes the plan; disabled while the tried values
    are the plan's."""
    todo = content.try_changes(cfg, **changes)
    st.button("Use this in the planner", key=f"learn{lesson.number}_use", icon=":material/tune:",
              on_click=_use, args=(todo, what), disabled=not todo,
              help=f"Makes the plan use {what}." if todo else "The plan already uses these values.")


def chart(fig: go.Figure, key: str) -> None:
    """A lesson's chart: the app's layout; in the presenter view 600 px tall, its text larger."""
    fig.update_layout(height=classroom.chart_height())
    if classroom.presenter():  # a projector: chart text as large as the body text
        fig.update_layout(font_size=classroom.PRESENTER_TEXT_PX - 2, title_font_size=classroom.PRESENTER_TEXT_PX + 2)
    widgets.plotly(fig, key)


def bar_chart(title: str, x: str, y: str, xs: list, ys: list, name: str, key: str, mark: Any = None) -> None:
    """Bars of ys against xs (one series), the bar at `mark` highlighted."""
    colors = [charts.COLORS[1] if v == mark else charts.COLORS[0] for v in xs]
    fig = go.Figure(go.Bar(x=xs, y=ys, name=name, marker_color=colors))
    chart(charts.style(fig, title, x, y, legend_room=60, showlegend=False), key)


def line_chart(title: str, x: str, y: str, xs: list, ys: list, name: str, key: str, mark: Any = None,
               mark_low: bool = False) -> None:
    """A line of ys against xs, with a dashed line at x = `mark`, labelled at the bottom
    (`mark_low`, where a falling line is high) or at the top."""
    fig = go.Figure(go.Scatter(x=xs, y=ys, name=name, mode="lines", line={"color": charts.COLORS[3], "width": 3}))
    if mark is not None:
        fig.add_vline(x=mark, line_dash="dash", line_color=charts.COLORS[0], annotation_text=f"n = {content.num(mark)}",
                      annotation_position="bottom right" if mark_low else "top right")
    chart(charts.style(fig, title, x, y, legend_room=60, showlegend=False), key)


def question(lesson: lessons.Lesson, answer: content.Answer) -> None:
    st.subheader("Question")
    st.markdown(answer.question)
    if st.toggle("Show the answer", key=f"learn{lesson.number}_reveal"):
        st.success(answer.text, icon=":material/lightbulb:")


def learned(lines: list[str]) -> None:
    st.subheader("What you learned")
    st.markdown("\n".join(f"{i}. {line}" for i, line in enumerate(lines, 1)))


def footer(lesson: lessons.Lesson) -> None:
    """Links to the full page and the glossary terms, then Previous / Next."""
    st.subheader("Go further")
    st.page_link(lesson.full_page, label=f"The full page: {lesson.full_label}", icon=":material/open_in_new:")
    row = st.container(horizontal=True, gap="small", vertical_alignment="center")
    row.markdown("In the glossary:")
    for t in lesson.terms:
        row.page_link(lessons.GLOSSARY_PAGE, label=t, icon=":material/menu_book:", query_params=glossary.link_params(t))
    prev, nxt = lessons.neighbours(lesson)
    c = st.columns(2)
    if prev is not None:
        c[0].page_link(prev.script, label=f"Previous: {prev.nav_title}", icon=":material/arrow_back:")
    if nxt is not None:
        c[1].page_link(nxt.script, label=f"Next: {nxt.nav_title}", icon=":material/arrow_forward:")
    else:
        c[1].page_link("app_pages/committee/memo.py", label="Next: write the decision memo",
                       icon=":material/arrow_forward:")


def overview_links() -> None:
    """The Overview's way in: start the class at lesson 1, or open any lesson."""
    first = lessons.LESSONS[0]
    st.markdown(f"**New here, or teaching?** Learn SafeTab-P in an hour: {len(lessons.LESSONS)} short lessons "
                f"({lessons.total_minutes()} minutes).")
    row = st.container(horizontal=True, gap="small")
    row.page_link(first.script, label="Start the class", icon=":material/school:",
                  query_params={classroom.START_PARAM: classroom.START_VALUE},
                  help="Opens lesson 1 on the 2020 production plan; your plan is kept and comes back when the class "
                       "ends.")
    for lesson in lessons.LESSONS:  # each starts the class there
        row.page_link(lesson.script, label=lesson.nav_title, icon=":material/school:",
                      query_params={classroom.START_PARAM: classroom.START_VALUE})
