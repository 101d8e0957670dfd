"""Glossary page: in the SafeTab-P section, searchable, linked from the overview."""

from __future__ import annotations

import pytest

from tests.app.conftest import open_app, texts
from ui.core import glossary


def test_glossary_page_lists_and_searches_terms():
    at = open_app("glossary")
    shown = texts(at)
    assert all(f"**{t.term}**" in shown for t in glossary.TERMS)
    assert "smaller privacy budget (ρ or ε) is more private" in shown
    at.text_input(key="gl_query").set_value("TotalOnly").run()
    shown = texts(at)
    assert "**TotalOnly (DETAILED_ONLY)**" in shown and "**δ (delta)**" not in shown


def test_overview_links_to_the_glossary():
    at = open_app()
    assert any(link.proto.page == "app_pages/safetab/glossary.py" or "glossary" in link.proto.page
               for link in at.get("page_link"))


def test_a_link_opens_the_glossary_on_its_entry():
    at = open_app(query={"term": "Off-spine entity distance (OSED)"})
    at.switch_page("app_pages/safetab/glossary.py").run()
    assert any(i.value.startswith("**Off-spine entity distance (OSED)**") for i in at.info)


@pytest.mark.parametrize("term", ["Capacity (how far a count may move)", "Refinement run", "Entity threshold",
                                  "AIAN spine", "Consistency violations and faithfulness", "Sensitivity",
                                  "Margins (held exact)"])
def test_the_compare_pages_new_terms_open_on_their_entry(term):
    at = open_app(query={"term": term})
    at.switch_page("app_pages/safetab/glossary.py").run()
    assert [i.value.split("**")[1] for i in at.info] == [term]
