"""Boxes for a short list of numbers (the Consistency page's privacy budgets, the
Invariants page's table shape).

Every item is read by the shared rules of `ui.core.typed`, so a list box refuses what a
number box refuses, with the same bounded messages ("'x' is not a number: type ...");
an item typed twice is refused, never dropped. Like `ui.core.widgets.number_box` for a
page's own control, a refused text stays in the box with its message under it, and the
page goes on with the last valid list (kept in the session under "<key>::value").
`parse_list` and `show_list` are pure; Streamlit is imported by the box alone.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from ui.core import typed
from ui.core.plaintext import plain

#: Items are separated by commas, semicolons or spaces ("0.1, 0.5, 1").
SEPARATORS = re.compile(r"[\s,;]+")


def parse_list(text: Any, rule: typed.Rule, *, most: int, example: str, separators: re.Pattern = SEPARATORS,
               what: str = "numbers", unique: bool = True) -> tuple[float | int, ...]:
    """The items of a typed list, each read exactly by `rule` (`typed.parse`), in the
    order typed. `typed.Refused` (a ValueError) in plain words: an empty box, more than
    `most` items, an item refused by `rule`, an item typed twice (when `unique`)."""
    raw = "" if text is None else str(text)
    items = [p for p in separators.split(raw.strip()) if p]
    if not items:
        raise typed.Refused(f"The box is empty: type one or more {what}, e.g. {example}.")
    if len(items) > most:
        raise typed.Refused(f"At most {most:,} {what} at once (got {len(items):,}): e.g. {example}.")
    out: list[float | int] = []
    for item in items:
        v = typed.parse(item, rule)
        if unique and v in out:
            first = items[out.index(v)]
            twice = "is typed twice" if first == item else f"is the same as {typed.echo(first)}"
            raise typed.Refused(f"{typed.echo(item)} {twice}: type each of the {what} once.")
        out.append(v)
    return tuple(out)


def show_list(values: tuple[float | int, ...], sep: str = ", ") -> str:
    """A list as its box shows it: every value exactly as used (`typed.show`)."""
    return sep.join(typed.show(v) for v in values)


def list_box(label: str, key: str, parse: Callable[[str], tuple], value: tuple, *,
             show: Callable[[tuple], str] = show_list, container: Any = None, help: str | None = None,
             placeholder: str | None = None) -> tuple:
    """A text box for a list of numbers, read by `parse` (which raises ValueError in
    plain words); returns the list in use. `value` is its first value. A refused text
    is shown with its message right under the box, and the last valid list stays in
    use (and is said to be), as `ui.core.widgets.number_box` does for one number."""
    import streamlit as st

    ss = st.session_state
    box = container if container is not None else st
    if key not in ss:  # first drawn, or back on the page (Streamlit forgets a widget not drawn)
        ss[key] = show(ss.get(f"{key}::value", value))
    _parse_local(key, parse)
    current = ss.get(f"{key}::value", value)
    box.text_input(label, key=key, help=help, placeholder=placeholder, on_change=_parse_local, args=(key, parse))
    err = ss.get(f"{key}::refused")
    if err is not None:
        box.error(plain(f"{err[1]} Still in use: {show(current)}."))
    return current


def _parse_local(key: str, parse: Callable[[str], tuple]) -> None:
    """Read a list box's text: keep a valid list, or the reason for refusing it."""
    import streamlit as st

    ss = st.session_state
    text = ss.get(key)
    try:
        ss[f"{key}::value"] = tuple(parse(text))
        ss.pop(f"{key}::refused", None)
    except ValueError as exc:  # typed.Refused and the page's own checks, in plain words
        ss[f"{key}::refused"] = (text, str(exc))
