"""SafeTab-P Studio: tune, explain and run SafeTab-P (streamlit run app.py).

The navigation has two sections: "SafeTab-P" (tune, explain and run it) and "Compare
methods" (the other disclosure-avoidance methods, one page each, listed in
`ui.compare.layout.METHODS`). Every page shares one configuration (`ui.core.state`); the address
bar carries it as ?config=... whenever it differs from the 2020 production plan.
"""

from __future__ import annotations

import sys
from pathlib import Path

import streamlit as st

sys.path.insert(0, str(Path(__file__).resolve().parent))

from ui.compare import layout as compare
from ui.committee import plan_controls
from ui.core import auth, state, widgets

st.set_page_config(page_title="SafeTab-P Studio", page_icon=":material/tune:", layout="wide")
st.html(widgets.APP_CSS)  # margins that fit the tables at 1280 px, messages kept in view, focus, contrast
USER = auth.gate()  # with [auth] in secrets.toml: only the sign-in until signed in, whatever the address

state.init()

#: Pages are filed by section (app_pages/safetab, app_pages/committee, app_pages/compare, as
#: ui/ is), and each keeps the address it had before (url_path): share links and bookmarks
#: use it. The folder is not called pages/: Streamlit would serve a fresh server's first
#: request in its legacy "pages/ folder" mode, which knows no page in a subfolder.
OVERVIEW = st.Page("app_pages/safetab/overview.py", url_path="home", title="Overview", icon=":material/home:",
                   default=True)  # served at the root address; "home" is only reserved
SECTIONS = {
    "SafeTab-P": [
        OVERVIEW,
        st.Page("app_pages/safetab/budget.py", url_path="budget", title="Budget and MOE planner",
                icon=":material/tune:"),
        st.Page("app_pages/safetab/adaptive.py", url_path="adaptive", title="Adaptive tables",
                icon=":material/table_chart:"),
        st.Page("app_pages/safetab/suppression.py", url_path="suppression", title="Suppression",
                icon=":material/visibility_off:"),
        st.Page("app_pages/safetab/run.py", url_path="run", title="Run the mechanism", icon=":material/play_circle:"),
        st.Page("app_pages/safetab/configuration.py", url_path="configuration", title="Configuration",
                icon=":material/settings:"),
        st.Page("app_pages/committee/scenarios.py", url_path="scenarios", title="Scenarios",
                icon=":material/folder_open:"),
        st.Page("app_pages/committee/memo.py", url_path="memo", title="Decision memo", icon=":material/picture_as_pdf:"),
        st.Page("app_pages/safetab/glossary.py", url_path="glossary", title="Glossary", icon=":material/menu_book:"),
    ],
    "Compare methods": [
        st.Page("app_pages/compare/index.py", url_path="compare_index", title="Methods at a glance",
                icon=":material/compare_arrows:"),
        *(st.Page(m.path, url_path=m.url_path, title=m.title, icon=m.icon) for m in compare.METHODS),
    ],
}
# The overview is the default page, at the app's root address, and Streamlit serves the
# default page at no other: a bookmark of /overview (its address before, and the one a user
# guesses) would say "Page not found". This hidden page serves the overview at that address.
OLD_OVERVIEW = st.Page("app_pages/safetab/overview.py", url_path="overview", title="Overview", visibility="hidden")
SECTIONS["SafeTab-P"].append(OLD_OVERVIEW)

page = st.navigation(SECTIONS, expanded=True)  # every page listed: no "View more" hiding methods
widgets.sidebar_summary()
auth.sidebar(USER)
plan_controls.sidebar()
state.show_flashes()
page.run()
state.sync_url()
