"""Typed numbers (ui.core.typed): used exactly as typed, or refused with the reason."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ui.core import typed

GAMMA = typed.Rule(lo=1e-4, hi=1 - 1e-4)
THETA = typed.Rule(whole=True, lo=0, hi=10**12, unit="persons")
P = typed.Rule(lo=0.0, hi=1.0, hi_open=True)


@pytest.mark.parametrize("text, rule, want", [
    ("0.1234", GAMMA, 0.1234), (" 0.5 ", GAMMA, 0.5), (".25", GAMMA, 0.25), ("1e-3", GAMMA, 0.001),
    ("25000", THETA, 25000), ("25,000", THETA, 25000), ("0", THETA, 0), ("0", P, 0.0), ("0.9999", P, 0.9999),
])
def test_a_valid_text_is_used_exactly_as_typed(text, rule, want):
    got = typed.parse(text, rule)
    assert got == want and type(got) is type(want)


@pytest.mark.parametrize("text, rule, words", [
    ("", GAMMA, "The box is empty: type a number from 0.0001 to 0.9999"),
    ("   ", THETA, "The box is empty: type a whole number from 0 to 1,000,000,000,000 persons"),
    ("abc", GAMMA, "'abc' is not a number"),
    ("2,5", GAMMA, "'2,5' is not a number (use a point for decimals"),
    ("2_000", THETA, "'2_000' is not a number"),
    ("nan", GAMMA, "'nan' is not a finite number"),
    ("inf", THETA, "'inf' is not a finite number"),
    ("25000.5", THETA, "'25000.5' is not a whole number"),
    ("-1", THETA, "'-1' is below 0"),
    ("1.5", GAMMA, "'1.5' is above 0.9999"),
    ("0", GAMMA, "'0' is below 0.0001"),
    ("1", P, "'1' is not below 1: type a number of at least 0 and below 1"),
    # a float cannot hold these as typed: refused, never used as the nearest float
    ("1e-400", P, "'1e-400' cannot be used exactly: it has more digits than a number here holds, and would be "
                  "used as 0.0"),
    ("8.0000000000000001", THETA, "'8.0000000000000001' cannot be used exactly"),
    ("0.99999999999999999", P, "would be used as 1.0"),
    ("12345678901234567891", typed.Rule(whole=True), "would be used as 1.2345678901234567e+19"),
])
def test_a_bad_text_is_refused_with_the_reason(text, rule, words):
    with pytest.raises(typed.Refused) as exc:
        typed.parse(text, rule)
    assert words in str(exc.value)


@pytest.mark.parametrize("text, want", [("0.10", 0.1), ("1E-3", 0.001), ("+0.5", 0.5), ("2.50000", 2.5),
                                        ("1e-300", 1e-300), ("9007199254740992", 2**53)])
def test_a_number_a_float_holds_is_used_however_it_is_written(text, want):
    assert typed.to_number(text) == want


def test_a_long_text_is_echoed_cut():
    with pytest.raises(typed.Refused) as exc:
        typed.parse("x" * 500, GAMMA)
    assert len(str(exc.value)) < 200 and "…" in str(exc.value)


@given(st.floats(min_value=1e-4, max_value=1 - 1e-4))
def test_a_value_is_shown_as_the_text_that_reads_back_to_it(x):
    assert typed.parse(typed.show(x), GAMMA) == x


@given(st.integers(min_value=0, max_value=10**12))
def test_whole_numbers_are_shown_and_read_back_exactly(n):
    assert typed.parse(typed.show(n), THETA) == n and typed.show(n) == str(n)


def test_same_keeps_the_users_spelling_of_the_value_in_use():
    assert typed.same("0.10", 0.1, GAMMA) and typed.same("25,000", 25000, THETA)
    assert not typed.same("0.1234", 0.123, GAMMA) and not typed.same("abc", 0.1, GAMMA)
    assert typed.show(0.1234) == "0.1234" and typed.show(1e-5) == "1e-05"


def test_a_number_that_is_not_whole_never_reads_as_whole():
    assert typed.significant(2.134) == "2.134" and typed.significant(0.2646726442517879) == "0.2647"
    assert typed.significant(29.996) == "30.00" and typed.significant(59.992) == "59.99"
    assert typed.significant(30.0) == "30" and typed.significant(4.944) == "4.944"
    assert typed.significant(1e-6) == "1e-06" and typed.significant(1_000_000.5) == "1.000e+06"
