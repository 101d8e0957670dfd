"""Every table of every page shows a dash, never the word "None", for a missing value."""

from __future__ import annotations

import pytest

from tests.app.conftest import STUDY_GROUPS, open_app
from ui.compare import layout as compare
from ui.core import widgets

PAGES = [None, "budget", "adaptive", "suppression", "safetab_h", "run", "configuration", "glossary", "compare_index",
         *(pytest.param(m.url_path, marks=STUDY_GROUPS[m.url_path]) if m.url_path in STUDY_GROUPS else m.url_path
           for m in compare.METHODS)]


def _placeholders(at) -> list[str]:
    return [d.proto.placeholder for d in at.dataframe]


@pytest.mark.parametrize("page", PAGES)
def test_missing_values_show_as_a_dash(page):
    at = open_app(page, timeout=600)  # the compare pages make a study of the sample first (no timing asserted)
    assert all(p == widgets.MISSING for p in _placeholders(at)), _placeholders(at)
    if page == "budget":
        for tab in ("MOE against the budget", "Race multiplicity r"):
            at.session_state["pl_tabs"] = tab
            at.run()
            assert at.dataframe and all(p == widgets.MISSING for p in _placeholders(at))
