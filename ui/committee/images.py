"""Static images of the app's plotly figures, for the decision memo (no Streamlit).

Drawn by Kaleido (plotly's own exporter), which drives a Chrome or Chromium already on
the machine; it never downloads one. The browser is the one named by the ``BROWSER_PATH``
environment variable, else the first of `BROWSERS` on the PATH: Debian's headless build of
Chromium (package ``chromium-headless-shell``) where it is installed, else Chromium or Chrome
as Kaleido's choreographer finds them; Debian's package ``chromium`` (/usr/bin/chromium) is
enough. The headless build draws the memo's charts in about half the time and with less
CPU (benchmarks/RESULTS.md, round 8); the pictures are the same but for the anti-aliasing
of a few glyphs. One browser is started per call of `render` and closed at
its end, whatever happens.
Without a browser, `available` says why and the memo carries the charts' data instead.

`Renderer` keeps one such browser open (in a thread of its own) so that the app's
decision memo does not wait for a browser to start on every click: the memo page starts
it when it opens, and it closes itself after some minutes unused. A server short of
memory can ask for the browser only when a memo is drawn (`opens_in_background`).
"""

from __future__ import annotations

import asyncio
import atexit
import os
import shutil
import threading
from collections.abc import Sequence
from concurrent.futures import TimeoutError as FutureTimeout
from pathlib import Path

import plotly.graph_objects as go

#: Executables looked for when BROWSER_PATH is not set, in this order: Debian's headless build of
#: Chromium (made for drawing pages without a screen), then those Kaleido's choreographer looks for.
BROWSERS = ("chromium-headless-shell", "chromium", "chromium-browser", "google-chrome", "google-chrome-stable",
            "chrome")
#: Seconds allowed for one image (a chart of the app takes well under a second).
TIMEOUT = 60.0
WIDTH = 1100


#: The environment variable that says when the memo page opens its chart browser, and its values:
#: "background" (the default) when the page is shown, so that a click only draws; "on-demand" when a
#: memo is drawn (the first click waits a few seconds; no browser kept for users who only read the page).
BACKGROUND_ENV = "SAFETAB_CHART_BROWSER"
BACKGROUND_MODES = ("background", "on-demand")


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


def opens_in_background(environ=None) -> tuple[bool, str | None]:
    """Whether the memo page opens the chart browser as soon as it is shown (SAFETAB_CHART_BROWSER:
    "background", the default, or "on-demand"), and a message when the value is none of these
    (the default is then used, and the message says so)."""
    raw = (os.environ if environ is None else environ).get(BACKGROUND_ENV, "")
    value = raw.strip().lower() or "background"
    if value in BACKGROUND_MODES:
        return value == "background", None
    return True, (f"{BACKGROUND_ENV}={raw!r} is not one of " + ", ".join(BACKGROUND_MODES)
                  + "; the chart browser opens in the background (the default).")


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


#: Pages the browser draws on at once (two cores: two tabs draw in parallel).
TABS = 2
FORMATS = ("png", "jpeg", "svg")


async def _draw(k, jobs: Sequence[tuple[go.Figure, tuple[int, int]]], fmt: str, scale: float) -> list[bytes]:
    """Draw the jobs (figure, (width, height)) on an open Kaleido, TABS at a time."""
    async def one(fig, size):
        w, h = size
        return await k.calc_fig(fig, opts={"format": fmt, "width": w, "height": h, "scale": scale})

    return list(await asyncio.gather(*(one(f, s) for f, s in jobs)))


def _kaleido(n: int, path: str):
    """A Kaleido that keeps its pages loaded between charts. Kaleido reloads a page
    (plotly.js and all) after every chart, which costs about 0.4 s of CPU per chart;
    plotly redraws a chart in place, so the pictures are the same (checked byte for
    byte) at a quarter of the time."""
    import kaleido

    class _Kaleido(kaleido.Kaleido):
        async def _return_kaleido_tab(self, tab) -> None:
            await self.tabs_ready.put(tab)

    return _Kaleido(n=n, timeout=TIMEOUT, mathjax=False, path=path)


async def _render(jobs, fmt: str, scale: float, path: str) -> list[bytes]:
    async with _kaleido(min(TABS, max(len(jobs), 1)), path) as k:
        return await _draw(k, jobs, fmt, scale)


def _jobs(figs: Sequence[go.Figure], width: int, sizes) -> tuple[list[str], dict[str, tuple]]:
    """(a key per figure, the distinct (figure, size) jobs by key): a figure drawn twice
    at the same size is drawn once."""
    keys, first = [], {}
    for i, f in enumerate(figs):
        size = tuple(sizes[i]) if sizes is not None else _size(f, width)
        key = f"{size}|{f.to_json()}"
        keys.append(key)
        first.setdefault(key, (f, size))
    return keys, first


def render(figs: Sequence[go.Figure], fmt: str = "png", width: int = WIDTH, scale: float = 2.0,
           sizes: Sequence[tuple[int, int]] | None = None) -> list[bytes]:
    """Images (PNG, JPEG or SVG bytes) of the figures, in order, each `width` pixels wide
    and as high as its layout says (or of `sizes`, one (width, height) per figure); a
    figure that appears twice is drawn once. ImageError if no browser is found or
    drawing fails."""
    ok, why = available()  # why: the browser's path when ok
    if not ok:
        raise ImageError(why)
    if fmt not in FORMATS:
        raise ValueError(f"format {fmt!r}: one of {', '.join(FORMATS)}")
    if not figs:
        return []
    keys, first = _jobs(figs, width, sizes)
    try:
        drawn = asyncio.run(_render(list(first.values()), fmt, scale, why))
    except Exception as exc:  # noqa: BLE001 - the browser's failures come in many types
        raise ImageError(f"the charts could not be drawn ({type(exc).__name__}: {str(exc)[:200]})") from None
    by_key = dict(zip(first, drawn, strict=True))
    return [by_key[k] for k in keys]



class Renderer:
    """A browser kept open to draw charts: `start` opens it in the background (a thread
    with its own event loop), `render` draws on it (starting it if needed), and it is
    closed after `idle` seconds unused, by `close`, or when its process ends. A browser
    that fails is closed and opened again once. Thread-safe; `render` has the same
    meaning as the module's `render`."""

    def __init__(self, idle: float = 600.0, start_timeout: float = 120.0):
        self.idle, self.start_timeout = idle, start_timeout
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._kaleido = None
        self._opening = None  # the future of the browser being opened
        self._timer = None

    # -- the loop thread
    def _ensure_loop(self) -> asyncio.AbstractEventLoop:
        if self._loop is None or not self._loop.is_running():
            loop = asyncio.new_event_loop()
            threading.Thread(target=loop.run_forever, name="chart-renderer", daemon=True).start()
            self._loop = loop
        return self._loop

    async def _open(self, path: str):
        k = _kaleido(TABS, path)
        await k.__aenter__()
        return k

    async def _close(self) -> None:
        k, self._kaleido = self._kaleido, None
        if k is not None:
            try:
                await k.__aexit__(None, None, None)
            except Exception:  # noqa: BLE001 - closing a browser that already died
                pass

    def _touch(self) -> None:
        """(Re)arm the idle timer (on the loop's thread)."""
        if self._timer is not None:
            self._timer.cancel()
        self._timer = self._loop.call_later(self.idle, lambda: asyncio.ensure_future(self._close()))

    def start(self) -> bool:
        """Open the browser in the background if it is not open or opening; False (and
        nothing started) when no browser is found."""
        ok, why = available()
        if not ok:
            return False
        with self._lock:
            if self._loop is None:
                atexit.register(self.close)  # the browser never outlives the app
            loop = self._ensure_loop()
            if self._kaleido is None and (self._opening is None or self._opening.done()):
                self._opening = asyncio.run_coroutine_threadsafe(self._open(why), loop)
        return True

    def _browser(self):
        with self._lock:
            opening = self._opening
        if self._kaleido is None:
            if opening is None and not self.start():
                raise ImageError(available()[1])
            with self._lock:
                opening = self._opening
            try:
                self._kaleido = opening.result(self.start_timeout)
            except FutureTimeout:
                raise ImageError("the browser did not start in time to draw the charts") from None
            except Exception as exc:  # noqa: BLE001
                with self._lock:
                    self._opening = None
                raise ImageError(f"the browser could not be started ({type(exc).__name__}: "
                                 f"{str(exc)[:200]})") from None
        return self._kaleido

    def render(self, figs: Sequence[go.Figure], fmt: str = "png", width: int = WIDTH, scale: float = 2.0,
               sizes: Sequence[tuple[int, int]] | None = None) -> list[bytes]:
        if fmt not in FORMATS:
            raise ValueError(f"format {fmt!r}: one of {', '.join(FORMATS)}")
        if not figs:
            return []
        keys, first = _jobs(figs, width, sizes)
        for attempt in (1, 2):
            k = self._browser()
            fut = asyncio.run_coroutine_threadsafe(_draw(k, list(first.values()), fmt, scale), self._loop)
            try:
                drawn = fut.result(TIMEOUT * max(1, len(first)))
                break
            except Exception as exc:  # noqa: BLE001 - a dead browser: start a fresh one once
                asyncio.run_coroutine_threadsafe(self._close(), self._loop).result(30)
                with self._lock:
                    self._opening = None
                if attempt == 2:
                    raise ImageError(f"the charts could not be drawn ({type(exc).__name__}: "
                                     f"{str(exc)[:200]})") from None
        self._loop.call_soon_threadsafe(self._touch)
        by_key = dict(zip(first, drawn, strict=True))
        return [by_key[k] for k in keys]

    def close(self) -> None:
        """Close the browser (and stop the thread)."""
        loop, self._loop = self._loop, None
        if loop is not None and loop.is_running():
            try:
                if self._opening is not None and self._kaleido is None:
                    self._kaleido = self._opening.result(self.start_timeout)
                asyncio.run_coroutine_threadsafe(self._close(), loop).result(30)
            except Exception:  # noqa: BLE001 - closing whatever is left
                pass
            loop.call_soon_threadsafe(loop.stop)
