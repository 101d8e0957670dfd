"""The glossary: the terms a committee meets, searchable."""

from __future__ import annotations

from pathlib import Path

import pytest

from ui.core import glossary


@pytest.mark.parametrize("term", ["ε (epsilon)", "ρ (rho), zCDP", "δ (delta)", "Pure DP", "TotalOnly (DETAILED_ONLY)",
                                  "Regional and Detailed", "Bounded and unbounded neighbours", "Per-level ε",
                                  "True counts (confidential)", "Exact MOE and the ⌊1.96σ⌋ bound",
                                  "Group-size profile", "National outcome (projection)"])
def test_the_terms_the_issue_asks_for_are_explained(term):
    found = [t for t in glossary.TERMS if t.term == term]
    assert len(found) == 1 and len(found[0].meaning) > 80 and found[0].topic in glossary.TOPICS


def test_smaller_budgets_are_said_to_be_more_private():
    for name in ("Privacy budget", "ε (epsilon)", "ρ (rho), zCDP"):
        t = next(t for t in glossary.TERMS if t.term == name)
        assert "more private" in t.meaning.lower()


def test_search_matches_every_word_and_topic():
    assert [t.term for t in glossary.search("bounded neighbours")] == ["Bounded and unbounded neighbours"]
    assert {t.topic for t in glossary.search("", glossary.PRIVACY)} == {glossary.PRIVACY}
    assert glossary.search("no such word anywhere") == []
    assert len(glossary.search()) == len(glossary.TERMS) == len({t.term for t in glossary.TERMS})


@pytest.mark.parametrize("word, term", [
    ("OSED", "Off-spine entity distance (OSED)"), ("off-spine entity distance", "Off-spine entity distance (OSED)"),
    ("spine", "Geographic spine"), ("bypass", "Bypassing"), ("invariant", "Invariant"),
    ("subspace differential privacy", "Subspace differential privacy"), ("projection", "Projection"),
    ("least squares", "Least squares"), ("tree dynamic program", "Tree dynamic program"),
    ("relax-then-round", "Relax-then-round"), ("primary", "Primary suppression"),
    ("complementary", "Complementary suppression"), ("audit", "Audit interval"),
    ("p% dominance", "p% dominance rule"), ("(n, k)", "(n, k) dominance rule"), ("protection", "Protection"),
    ("capacity", "Capacity (how far a count may move)"), ("how far a count may move", "Capacity (how far a count may move)"),
    ("refinement run", "Refinement run"), ("entity threshold", "Entity threshold"), ("AIAN spine", "AIAN spine"),
    ("consistency violations", "Consistency violations and faithfulness"),
    ("faithfulness", "Consistency violations and faithfulness"), ("sensitivity", "Sensitivity"),
    ("margins held exact", "Margins (held exact)"),
])
def test_every_compare_methods_term_is_found(word, term):
    assert term in [t.term for t in glossary.search(word)]
    assert len(glossary.find(term).meaning) > 120


def test_every_term_a_compare_page_links_to_is_in_the_glossary():
    from ui.compare import layout as compare

    linked = [t for m in compare.METHODS for t in m.terms]
    assert len(linked) >= 24
    for t in linked:
        assert glossary.link_params(t) == {"term": t} and glossary.find(t).topic == glossary.METHODS
    with pytest.raises(KeyError):
        glossary.link_params("no such term")


#: The words the Compare pages use for a setting or a measure (in a label, a heading or a
#: caption) -> the glossary entry the page links for it.
PAGE_WORDS = {
    "app_pages/compare/cell_suppression.py": {"How far a count may move": "Capacity (how far a count may move)",
                                              "Refinement run": "Refinement run"},
    "app_pages/compare/spines.py": {"Entity threshold": "Entity threshold", "AIAN spine": "AIAN spine"},
    "app_pages/compare/consistency.py": {"sensitivities": "Sensitivity",
                                         "consistency violations": "Consistency violations and faithfulness",
                                         "faithfulness": "Consistency violations and faithfulness"},
    "app_pages/compare/invariants.py": {"Margins held exact": "Margins (held exact)"},
}


@pytest.mark.parametrize("path", sorted(PAGE_WORDS))
def test_every_word_a_compare_page_uses_has_an_entry_linked_from_that_page(path):
    from ui.compare import layout as compare

    source = (Path(__file__).resolve().parents[3] / path).read_text(encoding="utf-8")
    page = next(m for m in compare.METHODS if m.path == path)
    for word, term in PAGE_WORDS[path].items():
        assert word in source, (path, word)  # the page still says it
        entry = glossary.find(term)
        assert entry is not None and entry.topic == glossary.METHODS and len(entry.meaning) > 120
        assert term in page.terms, (path, term)  # linked from the page's header


def test_every_term_a_compare_page_links_beside_its_controls_is_in_the_glossary():
    """The pages' own glossary_links((...)) calls name existing entries (a typo would be
    a KeyError on the page)."""
    import ast

    root = Path(__file__).resolve().parents[3] / "app_pages" / "compare"
    named = []
    for path in root.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "glossary_links" and node.args \
                    and isinstance(node.args[0], ast.Tuple):
                named += [(path.name, e.value) for e in node.args[0].elts]
    assert len(named) >= 8
    for page, term in named:
        assert glossary.find(term) is not None, (page, term)
