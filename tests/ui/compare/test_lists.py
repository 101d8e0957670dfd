"""Lists of numbers typed in one box (ui.compare.lists), read by ui.core.typed's rules."""

from __future__ import annotations

import pytest

from ui.compare import lists
from ui.core import typed

WHOLE = typed.Rule(whole=True, lo=1, hi=100)


def test_items_are_read_exactly_in_the_order_typed():
    assert lists.parse_list("3, 1e1;2", WHOLE, most=5, example="1, 2") == (3, 10, 2)
    assert lists.parse_list("5 5", WHOLE, most=5, example="1, 2", unique=False) == (5, 5)
    assert lists.show_list((0.1, 2, 1e-05)) == "0.1, 2, 1e-05"


@pytest.mark.parametrize("text, message", [
    ("", "The box is empty: type one or more numbers, e.g. 1, 2."),
    ("1 2 3 4 5 6", "At most 5 numbers at once (got 6): e.g. 1, 2."),
    ("1, 1", "'1' is typed twice: type each of the numbers once."),
    ("10, 1e1", "'1e1' is the same as '10': type each of the numbers once."),
    ("1, -1", "'-1' is below 1: type a whole number from 1 to 100."),
    ("²", "'²' is not a number: type a whole number from 1 to 100."),
])
def test_refusals_use_the_shared_messages(text, message):
    with pytest.raises(typed.Refused) as err:
        lists.parse_list(text, WHOLE, most=5, example="1, 2")
    assert str(err.value) == message
