"""The class: started from a known plan and ended with the learner's plan back, and the
presenter view (Streamlit; the plan changes go through `ui.core.state.set_config`, so
each is one step of Undo, as every other change of the plan).

* "Start the class" keeps the learner's current plan (`ui.core.history.Snapshot`, under
  `K_SAVED`) and loads the lesson's plan (the 2020 production plan). Starting again
  during a class reloads that plan and keeps the plan saved first.
* "End the class" makes the kept plan the current one again (its name, MOE targets and
  "edited" mark as they were).
* A link opens a lesson with ``?class=start`` (`START_PARAM`) to start the class there.
* The presenter view (`K_PRESENTER`, kept for the session) enlarges body text on every
  page (`PRESENTER_CSS`: 20 px) and every chart (`ui.core.widgets.plotly`: 600 px), labels,
  buttons and key numbers of the lessons (`LESSON_PRESENTER_CSS`), and hides the sidebar's
  plan summary.
"""

from __future__ import annotations

import re

import streamlit as st

from calculators import presets
from ui.core import history, planner, state, widgets
from ui.learn import lessons

K_SAVED = "learn_saved_plan"
K_PRESENTER = state.K_PRESENTER
W_PRESENTER = "w_learn_presenter"
START_PARAM = "class"
START_VALUE = "start"
#: Body text in the presenter view, px (a projector at the back of a room).
PRESENTER_TEXT_PX = 20
#: Charts of the lessons, px: in the presenter view and otherwise.
PRESENTER_CHART_PX = state.PRESENTER_CHART_PX
CHART_PX = 380
#: The presenter view on every page: body text (paragraphs, lists, captions, messages) at
#: PRESENTER_TEXT_PX. Controls, buttons and key numbers keep their size there: the pages'
#: columns are laid out for it (larger, their labels would be cut at 1280 px).
PRESENTER_CSS = f"""<style>
[data-testid='stMain'] [data-testid='stMarkdown'] p, [data-testid='stMain'] [data-testid='stMarkdown'] li,
[data-testid='stMain'] [data-testid='stCaptionContainer'] p,
[data-testid='stMain'] [data-testid='stAlert'] p {{font-size: {PRESENTER_TEXT_PX}px !important; line-height: 1.45;}}
</style>"""
#: The presenter view of a lesson, laid out for it: titles, labels, buttons, links and key
#: numbers larger too.
LESSON_PRESENTER_CSS = f"""<style>
[data-testid='stMain'] [data-testid='stWidgetLabel'] p,
[data-testid='stMain'] button p,
[data-testid='stMain'] [data-testid='stPageLink'] p,
[data-testid='stMain'] [data-testid='stMetricLabel'] p {{font-size: {PRESENTER_TEXT_PX}px !important;}}
[data-testid='stMain'] h1 {{font-size: 2.8rem !important;}}
[data-testid='stMain'] h3 {{font-size: 1.8rem !important;}}
[data-testid='stMain'] [data-testid='stMetricValue'] {{font-size: 2.6rem !important;}}
</style>"""


# ------------------------------------------------------------------ the class
def in_class() -> bool:
    return K_SAVED in st.session_state


def saved_plan() -> history.Snapshot | None:
    return st.session_state.get(K_SAVED)


def _reset_lesson_controls() -> None:
    """Forget the lessons' own "Try this" values and revealed answers (keys ``learn<N>_...``),
    so that they start again from the plan the class now uses."""
    ss = st.session_state
    for key in [k for k in ss if re.match(r"learn\d+_", str(k))]:
        del ss[key]


def start(lesson: lessons.Lesson | None = None) -> None:
    """Keep the learner's plan (unless a class is running already) and load the lesson's
    plan, the 2020 production plan: one step of Undo."""
    ss = st.session_state
    _reset_lesson_controls()
    if K_SAVED not in ss:
        ss[K_SAVED] = state.snapshot()
    state.set_config(presets.production_2020(), state.PRODUCTION, planner.production_targets())
    where = f" at lesson {lesson.number}" if lesson else ""
    state.flash("success", f"The class has started{where} on the {state.PRODUCTION}. Your plan "
                           f"({ss[K_SAVED].source}) is kept and comes back when you end the class.")


def end() -> None:
    """Make the plan kept at the start of the class the current plan again (one step of Undo)."""
    snap = st.session_state.pop(K_SAVED, None)
    if snap is None:
        return
    _reset_lesson_controls()
    state.set_config(snap.config, snap.source, snap.targets, snap.edited)
    state.flash("success", f"The class has ended: your plan ({snap.source}) is back.")


def start_from_link(lesson: lessons.Lesson) -> None:
    """Start the class when the lesson was opened by a "start the class" link."""
    if st.query_params.get(START_PARAM) == START_VALUE:
        del st.query_params[START_PARAM]
        start(lesson)


def class_bar(lesson: lessons.Lesson) -> None:
    """The lesson's line about the class: start it here, or end it and get your plan back."""
    saved = saved_plan()
    row = st.container(horizontal=True, gap="small", vertical_alignment="center")
    if saved is None:
        row.button("Start the class", key=f"learn_start_{lesson.number}", icon=":material/school:",
                   on_click=start, args=(lesson,),
                   help="Opens this lesson on the 2020 production plan, so that everybody sees the same numbers. "
                        "Your current plan is kept and comes back when you end the class (Undo works as usual).")
        row.caption(f"Lessons use the current plan: {widgets.plain(state.source_label())}.")
    else:
        row.button("End the class", key=f"learn_end_{lesson.number}", icon=":material/logout:", on_click=end,
                   help="Puts your own plan back, as it was when the class started.")
        row.caption(f"Class in progress. Your plan, {widgets.plain(saved.source)}, comes back when the class ends.")


# ------------------------------------------------------------------ presenter view
def presenter() -> bool:
    return bool(st.session_state.get(K_PRESENTER, False))


def lesson_style() -> None:
    """A lesson's own presenter view (call on a lesson page)."""
    if presenter():
        st.html(LESSON_PRESENTER_CSS)


def chart_height() -> int:
    return PRESENTER_CHART_PX if presenter() else CHART_PX


def _on_presenter() -> None:
    st.session_state[K_PRESENTER] = bool(st.session_state.get(W_PRESENTER))


def sidebar_summary() -> None:
    """The sidebar's plan summary (`widgets.sidebar_summary`), hidden in the presenter
    view; what it would show is still recorded, so that page fragments know when the
    whole app must be redrawn (`state.fragment_done`)."""
    if presenter():
        st.session_state[state.K_SIDEBAR] = state.sidebar_signature()
        return
    widgets.sidebar_summary()


def sidebar() -> None:
    """The presenter view toggle and, during a class, "End the class" (call in app.py)."""
    state.bind(W_PRESENTER, presenter())
    with st.sidebar:
        st.toggle("Presenter view", key=W_PRESENTER, on_change=_on_presenter,
                  help="Larger text and charts for a projector; hides the plan summary above. Kept until you "
                       "switch it off.")
        if in_class():
            st.button("End the class", key="learn_end_sidebar", icon=":material/logout:", on_click=end,
                      width="stretch", help="Puts your own plan back, as it was when the class started.")
    if presenter():
        st.html(PRESENTER_CSS)
