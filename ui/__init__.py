"""Streamlit helpers of the SafeTab-P app.

Pure modules (no Streamlit import, tested alone in tests/ui):

* `ui.urlcodec` — the shareable link: configuration <-> compact URL token.
* `ui.planner` — the tables of the overview and of the budget and MOE planner.
* `ui.analysis` — the tables and curves of the adaptive-table and suppression pages.
* `ui.charts` — plotly figures and the flow diagram (each chart has a data table).
* `ui.files` — uploads, reading and zipping a release, results tables.

Streamlit modules: `ui.state` (the one shared configuration in st.session_state) and
`ui.widgets` (tables and charts with their download buttons, the sidebar summary).
Every number comes from `calculators` or `engine`; these modules only arrange it.
"""
