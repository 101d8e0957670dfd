"""The glossary: the terms a committee meets, searchable."""

from __future__ import annotations

import pytest

from ui.core import glossary


@pytest.mark.parametrize("term", ["ε (epsilon)", "ρ (rho), zCDP", "δ (delta)", "Pure DP", "TotalOnly (DETAILED_ONLY)",
                                  "Regional and Detailed", "Bounded and unbounded neighbours", "Per-level ε",
                                  "True counts (confidential)", "Exact MOE and the ⌊1.96σ⌋ bound"])
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
])
def test_every_compare_methods_term_is_found(word, term):
    assert term in [t.term for t in glossary.search(word)]
    assert len(glossary.find(term).meaning) > 120


def test_every_term_a_compare_page_links_to_is_in_the_glossary():
    from ui.compare import layout as compare

    linked = [t for m in compare.METHODS for t in m.terms]
    assert len(linked) >= 15
    for t in linked:
        assert glossary.link_params(t) == {"term": t} and glossary.find(t).topic == glossary.METHODS
    with pytest.raises(KeyError):
        glossary.link_params("no such term")
