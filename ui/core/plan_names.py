"""The names of plans (pure): when two names are one, and the names of the plans the app
always offers, which no scenario may take (`ui.committee.scenarios`) and which a link or
a plan file keeps only with that plan's configuration (`ui.core.state.load_named`)."""

from __future__ import annotations

import unicodedata

#: A plan's name has at most this many characters (`ui.committee.scenarios.clean_name`).
MAX_NAME = 80


def name_key(name: str) -> str:
    """What two names must share to be the same scenario: the name after Unicode
    compatibility normalisation (NFKC) and case folding, as Unicode's caseless matching
    defines it, so "été" / "ÉTÉ", "Straße" / "STRASSE" and the composed and decomposed
    spellings of "café" are one name."""
    return unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", " ".join(name.split())).casefold())


#: The names of the plans the app always offers beside the saved ones (the comparison
#: and the memo list them by name): a scenario cannot take one of them.
BUILT_IN_NAMES = ("Current plan", "2020 production plan", "Sample-data plan")
BUILT_IN_KEYS = frozenset(name_key(n) for n in BUILT_IN_NAMES)


def is_built_in(name: str) -> bool:
    """True if `name` is (up to case and Unicode spelling) the name of a built-in plan."""
    return isinstance(name, str) and name_key(name) in BUILT_IN_KEYS


def suggested_name(label: str) -> str:
    """A name to offer for saving the plan called `label`: the label itself, or, for a
    built-in plan, "<label> (copy)", which a scenario may take."""
    text = " ".join(str(label).split())[:MAX_NAME]
    return f"{text[: MAX_NAME - 7]} (copy)" if is_built_in(text) else text
