"""The "Compare methods" section: its index page lists SafeTab-P and every method page."""

from __future__ import annotations

from urllib.parse import urlencode

from tests.app.conftest import STUDIES, open_app, texts
from ui.compare import layout as compare


def test_index_lists_the_methods_with_their_questions():
    at = open_app("compare_index")
    shown = texts(at)
    table = compare.overview_table()
    assert table["method"].tolist()[0] == "SafeTab-P" and len(table) == 1 + len(compare.METHODS)
    for row in table.itertuples(index=False):  # every sentence in full
        assert f"**{row.method}**: {row[1]}" in shown and row[2] in shown and row.source in shown
    assert any("same sample data and the same plan" in m.value for m in at.markdown)
    assert any(b.label == "Download this list (CSV)" for b in at.download_button)


def test_index_links_every_method_term_to_its_glossary_entry():
    at = open_app("compare_index")
    links = [(link.proto.label, link.proto.query_string) for link in at.get("page_link")
             if "glossary" in link.proto.page]
    want = [t for m in compare.METHODS for t in m.terms]
    assert len(want) >= 24 and [label for label, _ in links] == want  # each card links its method's terms
    for label, query in links:
        assert query == urlencode({"term": label}), (label, query)


@STUDIES  # it opens the Cell suppression and Consistency pages too: their studies made once
def test_every_method_page_opens_without_error():
    for m in compare.METHODS:
        at = open_app(m.url_path, timeout=600)  # studies take a while
        assert at.title and at.title[0].value == m.title
        # every term of the page is linked to its glossary entry
        links = {link.proto.label: link.proto.query_string for link in at.get("page_link")
                 if "glossary" in link.proto.page}
        assert set(m.terms) <= set(links), (m.title, links)
        assert all("term=" in links[t] for t in m.terms)
