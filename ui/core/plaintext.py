"""User text shown as plain text (pure; no Streamlit): `plain` escapes what Streamlit's
Markdown would interpret, for every place a name, note, file name or echoed value is
rendered (issue 21 item 3). `ui.core.widgets.plain` is the same function for the pages."""

from __future__ import annotations

import re
from typing import Any

#: Every ASCII punctuation character: CommonMark lets a backslash escape each of them.
_MARKUP = re.compile(r"([!-/:-@\[-`{-~])")
#: Where GitHub-flavoured Markdown turns bare text into a link (http://..., www...., a@b.c),
#: which it does after escapes are read: an invisible WORD JOINER breaks the pattern.
_AUTOLINK = re.compile(r"(?i)\b(https?|ftp|mailto|xmpp|www)(?=[:.])|(?=@)")
WORD_JOINER = "\u2060"


def plain(text: Any) -> str:
    """User text (plan and scenario names, notes, file names, values echoed in messages)
    for anything Streamlit renders as Markdown (st.markdown, st.caption, st.error...,
    widget labels), shown exactly as typed: every ASCII punctuation character is
    backslash-escaped, so nothing in it becomes a link, an image, emphasis, a heading,
    HTML, math, an icon or a colour directive, and an invisible word joiner (U+2060)
    keeps a bare address ("http://...", "www....", "a@b.c") from becoming a link; line
    breaks are kept."""
    lines = str(text).split("\n")
    return "  \n".join(_MARKUP.sub(r"\\\1", _AUTOLINK.sub(lambda m: (m.group(1) or "") + WORD_JOINER, line))
                       for line in lines)
