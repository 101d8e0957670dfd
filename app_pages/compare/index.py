"""Compare methods: what each other disclosure-avoidance method answers, next to SafeTab-P."""

import streamlit as st

from ui.compare import layout as compare
from ui.core import state, widgets

state.page_setup()

st.title("Compare methods")
st.markdown(
    "A committee weighs SafeTab-P against other ways of protecting detailed tables. Each page in this "
    "section runs one of them **on the same sample data and the same plan** as SafeTab-P and shows both "
    "side by side: the question in plain words, the method in two sentences, its controls, the results, "
    "a verdict, and downloads of every table and chart."
)
table = compare.overview_table()
# one card per method: the long sentences read in full (a table would cut them off)
terms = {m.title: m.terms for m in compare.METHODS}  # SafeTab-P's own terms are on its pages
for row in table.itertuples(index=False):
    with st.container(border=True):
        st.markdown(f"**{row.method}**: {row[1]}")
        st.markdown(row[2])
        st.caption(f"Source: {row.source}")
        compare.glossary_links(terms.get(row.method, ()))
widgets.download_csv(table, "methods.csv", key="cmp_methods_csv", label="Download this list (CSV)")
if compare.METHODS:
    st.markdown("Open a method:")
    for m in compare.METHODS:
        st.page_link(m.path, label=m.title, icon=m.icon)
