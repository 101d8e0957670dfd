"""Typed numbers (pure; no Streamlit): what a user types into a number box is used
exactly as typed, or refused with a reason; never clamped, rounded or replaced.

`Rule` says what a box accepts (a whole number or any number, its range); `parse`
reads a typed text by it and raises `Refused` (a ValueError whose message says why, in
plain words, echoing the text); `show` writes a value back exactly as it is used (the
shortest text that reads back to the same number: 0.1234, 1e-05, 25000). The app's
box that uses them is `ui.core.widgets.number_box`.

Numbers are written with a point for decimals ("0.1234", ".5", "1e-3"); whole numbers
may carry thousands commas ("25,000"). "2,5" is refused rather than read as 25.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from calculators.config import reads_exactly

_THOUSANDS = re.compile(r"^[+-]?\d{1,3}(,\d{3})+$")
#: Typed texts are echoed in messages cut to this many characters.
ECHO = 40


class Refused(ValueError):
    """A typed value that is not used; the message says why."""


def echo(text: Any) -> str:
    """The typed text as a message quotes it (cut to ECHO characters)."""
    s = str(text)
    return repr(s if len(s) <= ECHO else s[:ECHO] + "…")


def to_number(value: Any) -> float:
    """A typed number: digits with an optional sign, point and exponent ("0.159",
    "1e-3", ".5"), or a whole number with thousands commas ("1,000"). A comma used as a
    decimal mark ("2,5") is refused rather than read as 25. A text whose number a float
    cannot hold as written ("1e-400" would be 0, "8.0000000000000001" would be 8) is
    refused too, since it would be used as another number. ValueError: "is empty", "is
    not a number ...", "is not a finite number", "cannot be used exactly ..."."""
    if isinstance(value, bool):
        raise ValueError("is not a number")
    if isinstance(value, (int, float)):
        x = float(value)
    else:
        text = str(value).strip()
        if not text:
            raise ValueError("is empty")
        if "," in text:
            if not _THOUSANDS.match(text):
                raise ValueError("is not a number (use a point for decimals, e.g. 2.5)")
            text = text.replace(",", "")
        if "_" in text:  # Python would read "2_000" as 2000; a typed number has no underscores
            raise ValueError("is not a number")
        try:
            x = float(text)
        except ValueError:
            raise ValueError("is not a number") from None
    if not math.isfinite(x):
        raise ValueError("is not a finite number")
    if not isinstance(value, (int, float)) and not reads_exactly(text, x):
        raise ValueError(f"cannot be used exactly: it has more digits than a number here holds, and would be "
                         f"used as {show(x)}")
    return x



def show(value: float | int) -> str:
    """A value as the box shows it: exactly the number used (Python's shortest
    round-trip text for a float; a whole number without separators)."""
    if isinstance(value, bool):
        raise TypeError("a number, not a bool")
    if isinstance(value, int):
        return str(value)
    v = float(value)
    return repr(v)


def significant(value: float, digits: int = 4) -> str:
    """A measured number to `digits` significant digits (2.134, 0.2647, 1e-06), as the
    app prints budgets and totals. One that is not whole never reads as whole: rounding
    that would make it look so keeps its zeros (29.996 is "30.00", not "30", which is
    another number a plan may have)."""
    x = float(value)
    text = f"{x:.{digits}g}"
    if math.isfinite(x) and not x.is_integer() and float(text).is_integer():
        text = f"{x:#.{digits}g}"
    return text


@dataclass(frozen=True)
class Rule:
    """What a number box accepts: whole numbers or any number, from `lo` to `hi`
    (`hi_open`: strictly below hi), with a unit for the messages ("persons")."""

    whole: bool = False
    lo: float | None = None
    hi: float | None = None
    hi_open: bool = False
    unit: str = ""

    def describe(self) -> str:
        """The accepted values in words: "a whole number from 0 to 100"."""
        kind = "a whole number" if self.whole else "a number"
        u = f" {self.unit}" if self.unit else ""
        if self.lo is not None and self.hi is not None:
            if self.hi_open:
                return f"{kind} of at least {_num(self.lo)} and below {_num(self.hi)}{u}"
            return f"{kind} from {_num(self.lo)} to {_num(self.hi)}{u}"
        if self.lo is not None:
            return f"{kind} of {_num(self.lo)}{u} or more"
        if self.hi is not None:
            return f"{kind} up to {_num(self.hi)}{u}"
        return kind + u


def _num(x: float) -> str:
    if float(x).is_integer() and abs(x) < 1e15:
        return f"{int(x):,}"
    return f"{x:g}"


def parse(text: Any, rule: Rule) -> float | int:
    """The value of a typed text under `rule` (an int for whole numbers), used exactly as
    typed; `Refused` says why not: empty, not a number, not a whole number, out of
    range. Never rounds or clamps."""
    want = rule.describe()
    try:
        x = to_number(text)
    except ValueError as exc:
        if str(exc) == "is empty":
            raise Refused(f"The box is empty: type {want}.") from None
        raise Refused(f"{echo(str(text).strip())} {exc}: type {want}.") from None
    shown = echo(str(text).strip())
    if rule.whole and not float(x).is_integer():
        raise Refused(f"{shown} is not a whole number: type {want}.")
    if rule.lo is not None and x < rule.lo:
        raise Refused(f"{shown} is below {_num(rule.lo)}: type {want}.")
    if rule.hi is not None and (x > rule.hi or (rule.hi_open and x >= rule.hi)):
        edge = "is not below" if rule.hi_open and x == rule.hi else "is above"
        raise Refused(f"{shown} {edge} {_num(rule.hi)}: type {want}.")
    if rule.whole:
        return int(x)
    return x


def same(text: Any, value: float | int, rule: Rule) -> bool:
    """Whether a typed text reads as exactly `value` (so the box can keep the text as
    typed, e.g. "0.10" for 0.1)."""
    try:
        return parse(text, rule) == value
    except Refused:
        return False


#: Seeds of studies, of the generator and of seeded noise: whole numbers, as the command
#: line takes them.
SEED = Rule(whole=True, lo=0, hi=2**31 - 1)
