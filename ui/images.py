"""Static images of the app's plotly figures, for the decision memo (no Streamlit).

Drawn by Kaleido (plotly's own exporter), which drives a Chrome or Chromium already on
the machine; it never downloads one. The browser is found as Kaleido's choreographer
finds it (the ``BROWSER_PATH`` environment variable, then ``chromium``, ``google-chrome``
... on the PATH); Debian's package ``chromium`` (/usr/bin/chromium) is enough. One
browser is started per call of `render` and closed at its end, whatever happens.
Without a browser, `available` says why and the memo carries the charts' data instead.
"""

from __future__ import annotations

import asyncio
import os
import shutil
from collections.abc import Sequence
from pathlib import Path

import plotly.graph_objects as go

#: Executables looked for when BROWSER_PATH is not set (as Kaleido's choreographer does).
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome")
#: Seconds allowed for one image (a chart of the app takes well under a second).
TIMEOUT = 60.0
WIDTH = 1100


class ImageError(RuntimeError):
    """Charts could not be drawn as images; the message says why in plain words."""


def browser() -> str | None:
    """The browser Kaleido will use, or None."""
    env = os.environ.get("BROWSER_PATH", "").strip()
    if env:
        return env if Path(env).is_file() else None
    for name in BROWSERS:
        found = shutil.which(name)
        if found:
            return found
    return None


def available() -> tuple[bool, str]:
    """(True, browser) if charts can be drawn, else (False, why)."""
    try:
        import kaleido  # noqa: F401
    except ImportError:
        return False, "the Python package kaleido is not installed (pip install -r requirements.txt)"
    b = browser()
    if b is None:
        return False, ("no Chrome or Chromium was found to draw the charts (on Debian or Ubuntu: "
                       "sudo apt-get update && sudo apt-get install -y chromium; or set BROWSER_PATH)")
    return True, b


def _size(fig: go.Figure, width: int) -> tuple[int, int]:
    h = fig.layout.height
    return width, int(h) if h else 450


async def _render(figs: Sequence[go.Figure], fmt: str, width: int, scale: float, path: str) -> list[bytes]:
    import kaleido

    out: list[bytes] = []
    async with kaleido.Kaleido(n=1, timeout=TIMEOUT, mathjax=False, path=path) as k:
        for fig in figs:
            w, h = _size(fig, width)
            out.append(await k.calc_fig(fig, opts={"format": fmt, "width": w, "height": h, "scale": scale}))
    return out


def render(figs: Sequence[go.Figure], fmt: str = "png", width: int = WIDTH, scale: float = 2.0) -> list[bytes]:
    """Images (PNG or SVG bytes) of the figures, in order; a figure that appears twice
    is drawn once. ImageError if no browser is found or drawing fails."""
    ok, why = available()  # why: the browser's path when ok
    if not ok:
        raise ImageError(why)
    if fmt not in ("png", "svg"):
        raise ValueError(f"format {fmt!r}: png or svg")
    if not figs:
        return []
    keys = [f.to_json() for f in figs]
    unique = list(dict.fromkeys(keys))
    first = {k: figs[keys.index(k)] for k in unique}
    try:
        drawn = asyncio.run(_render([first[k] for k in unique], fmt, width, scale, why))
    except Exception as exc:  # noqa: BLE001 - the browser's failures come in many types
        raise ImageError(f"the charts could not be drawn ({type(exc).__name__}: {str(exc)[:200]})") from None
    by_key = dict(zip(unique, drawn, strict=True))
    return [by_key[k] for k in keys]
