"""The "Compare methods" section: its index page lists SafeTab-P and every method page."""

from __future__ import annotations

from tests.app.conftest import frame, open_app
from ui import compare


def test_index_lists_the_methods_with_their_questions():
    at = open_app("compare_index")
    t = frame(at, "method", "question it answers")
    assert t["method"].tolist()[0] == "SafeTab-P"
    assert len(t) == 1 + len(compare.METHODS)
    assert any("same sample data and the same plan" in m.value for m in at.markdown)


def test_every_method_page_opens_without_error():
    for m in compare.METHODS:
        at = open_app(m.path.removeprefix("pages/").removesuffix(".py"), timeout=600)  # studies take a while
        assert at.title and at.title[0].value == m.title
