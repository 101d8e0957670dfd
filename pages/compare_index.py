"""Compare methods: what each other disclosure-avoidance method answers, next to SafeTab-P."""

import streamlit as st

from ui import compare, state, widgets

state.page_setup()

st.title("Compare methods")
st.markdown(
    "A committee weighs SafeTab-P against other ways of protecting detailed tables. Each page in this "
    "section runs one of them **on the same sample data and the same plan** as SafeTab-P and shows both "
    "side by side: the question in plain words, the method in two sentences, its controls, the results, "
    "a verdict, and downloads of every table and chart."
)
table = compare.overview_table()
widgets.table(table, "methods.csv", key="cmp_methods",
              column_config={"how it works": st.column_config.TextColumn(width="large"),
                             "question it answers": st.column_config.TextColumn(width="large")})
if compare.METHODS:
    st.markdown("Open a method:")
    for m in compare.METHODS:
        st.page_link(m.path, label=m.title, icon=m.icon)
