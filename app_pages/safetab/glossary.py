"""Glossary: every term of the app in plain words, searchable."""

import pandas as pd
import streamlit as st

from ui.core import glossary, state, widgets

state.page_setup()

st.title("Glossary")
st.caption("What the app's words mean, in plain language. The one rule to remember: **a smaller privacy "
           "budget (ρ or ε) is more private**, and costs accuracy.")

linked = glossary.find(st.query_params.get("term", ""))  # a page's link to one entry (ui.compare.layout.glossary_links)
if linked is not None:
    st.info(f"**{linked.term}** ({linked.topic}): {linked.meaning}", icon=":material/menu_book:")
c = st.columns([2, 1])
query = c[0].text_input("Search", key="gl_query", placeholder="e.g. delta, TotalOnly, OSED, audit")
topic = c[1].selectbox("Topic", ["All topics", *glossary.TOPICS], key="gl_topic")
found = glossary.search(query, None if topic == "All topics" else topic)
if not found:
    st.info("No term matches. Try fewer or other words.")
for name in glossary.TOPICS:
    terms = [t for t in found if t.topic == name]
    if not terms:
        continue
    st.subheader(name)
    for t in terms:
        st.markdown(f"**{t.term}**: {t.meaning}")
widgets.download_csv(pd.DataFrame([t._asdict() for t in glossary.TERMS]), "glossary.csv", key="gl_csv",
                     label="Download the glossary (CSV)")
