"""The glossary: the terms a committee meets, searchable."""

from __future__ import annotations

import pytest

from ui import glossary


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
