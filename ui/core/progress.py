"""A progress bar for long work that is redrawn at most a few times a second.

Every update of ``st.progress`` is a message to the browser, which redraws the page for it. In
headless Chromium, on the Cell suppression page, one update cost about 30 ms of CPU: a page that
updated its bar every 0.15 s kept a fifth of a core busy for as long as the study ran
(benchmarks/RESULTS.md, "Round 9"). The work itself reports as often as it likes; the bar shows
the newest report at most once per `INTERVAL`, and always the first one and the last one (the work
done), so it starts at once and never stops short of its end.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import streamlit as st

#: Seconds between two updates of a bar: twice a second still reads as moving.
INTERVAL = 0.5


class Throttle:
    """Whether an update is due: the first one, a final one, or one at least `interval` seconds
    after the last update shown (by `clock`, monotonic seconds)."""

    def __init__(self, interval: float = INTERVAL, clock: Callable[[], float] = time.monotonic):
        self._interval, self._clock, self._last = interval, clock, None

    def due(self, final: bool = False) -> bool:
        now = self._clock()
        if final or self._last is None or now - self._last >= self._interval:
            self._last = now
            return True
        return False


class ProgressBar:
    """``st.progress`` at the place it is created, fed through a `Throttle`."""

    def __init__(self, text: str, interval: float = INTERVAL, clock: Callable[[], float] = time.monotonic):
        self._bar = st.progress(0.0, text=text)
        self._throttle = Throttle(interval, clock)

    def __call__(self, text: str, fraction: float) -> None:
        """Show `text` and `fraction` (clamped to 0..1) if an update is due (a fraction of 1 always is):
        the callback of the engine's runs, ``progress(text, fraction)``."""
        fraction = min(1.0, max(0.0, fraction))
        if self._throttle.due(final=fraction >= 1.0):
            self._bar.progress(fraction, text=text)

    def count(self, stage: str, done: float, total: float) -> None:
        """The callback of the studies, ``progress(stage, done, total)``, shown as "stage: done of total"."""
        self(f"{stage}: {int(done):,} of {int(total):,}", done / total if total else 0.0)

    def empty(self) -> None:
        self._bar.empty()
