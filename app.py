"""SafeTab-P Studio: tune, explain and run SafeTab-P (streamlit run app.py).

The navigation has two sections: "SafeTab-P" (tune, explain and run it) and "Compare
methods" (the other disclosure-avoidance methods, one page each, listed in
`ui.compare.METHODS`). Every page shares one configuration (`ui.state`); the address
bar carries it as ?config=... whenever it differs from the 2020 production plan.
"""

from __future__ import annotations

import sys
from pathlib import Path

import streamlit as st

sys.path.insert(0, str(Path(__file__).resolve().parent))

from ui import compare, plan_controls, state, widgets

st.set_page_config(page_title="SafeTab-P Studio", page_icon=":material/tune:", layout="wide")
st.html(widgets.APP_CSS)  # margins that fit the tables at 1280 px, messages kept in view, focus, contrast

state.init()
state.keep_widgets()

SECTIONS = {
    "SafeTab-P": [
        st.Page("pages/overview.py", title="Overview", icon=":material/home:", default=True),
        st.Page("pages/budget.py", title="Budget and MOE planner", icon=":material/tune:"),
        st.Page("pages/adaptive.py", title="Adaptive tables", icon=":material/table_chart:"),
        st.Page("pages/suppression.py", title="Suppression", icon=":material/visibility_off:"),
        st.Page("pages/run.py", title="Run the mechanism", icon=":material/play_circle:"),
        st.Page("pages/configuration.py", title="Configuration", icon=":material/settings:"),
        st.Page("pages/scenarios.py", title="Scenarios", icon=":material/folder_open:"),
        st.Page("pages/memo.py", title="Decision memo", icon=":material/picture_as_pdf:"),
        st.Page("pages/glossary.py", title="Glossary", icon=":material/menu_book:"),
    ],
    "Compare methods": [
        st.Page("pages/compare_index.py", title="Methods at a glance", icon=":material/compare_arrows:"),
        *(st.Page(m.path, title=m.title, icon=m.icon) for m in compare.METHODS),
    ],
}

page = st.navigation(SECTIONS, expanded=True)  # every page listed: no "View more" hiding methods
widgets.sidebar_summary()
plan_controls.sidebar()
state.show_flashes()
page.run()
state.sync_url()
