"""ui/core/progress.py: a bar redrawn at most once per interval, never missing its first or last update."""

from __future__ import annotations

import pytest

from ui.core import progress


class _Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class _Shown:
    """What st.progress drew: (fraction, text) per update."""

    def __init__(self):
        self.updates: list[tuple[float, str]] = []

    def progress(self, fraction, text=None):
        self.updates.append((fraction, text))
        return self


@pytest.fixture
def drawn(monkeypatch):
    shown = _Shown()
    monkeypatch.setattr(progress.st, "progress", shown.progress)  # the bar it returns is `shown` itself
    return shown


def test_the_first_update_is_due_then_one_per_interval_and_a_final_one_always():
    clock = _Clock()
    t = progress.Throttle(0.5, clock)
    assert t.due()  # the first report is shown at once
    clock.now += 0.49
    assert not t.due()
    assert t.due(final=True)  # the end of the work is never held back
    clock.now += 0.3
    assert not t.due()  # counted from the final update just shown
    clock.now += 0.2
    assert t.due()


def test_a_thousand_reports_over_ten_seconds_draw_about_twenty_updates_and_end_on_the_last(drawn):
    clock = _Clock()
    bar = progress.ProgressBar("Starting", clock=clock)
    assert drawn.updates == [(0.0, "Starting")]
    for done in range(1, 1001):
        clock.now += 0.01
        bar.count("Auditing", done, 1000)
    shown = drawn.updates[1:]
    assert 19 <= len(shown) <= 21, len(shown)  # one per 0.5 s of the 10 s, not one per report
    assert shown[0] == (0.001, "Auditing: 1 of 1,000")  # the first report, at once
    assert shown[-1] == (1.0, "Auditing: 1,000 of 1,000")  # the last, though 0.01 s after the one before
    assert [f for f, _ in shown] == sorted(f for f, _ in shown)


def test_fractions_are_clamped_and_an_empty_total_is_nothing_done(drawn):
    clock = _Clock()
    bar = progress.ProgressBar("Starting", interval=0.0, clock=clock)
    bar("Over", 1.7)
    bar("Under", -0.2)
    bar.count("Nothing to do", 0, 0)
    assert drawn.updates[1:] == [(1.0, "Over"), (0.0, "Under"), (0.0, "Nothing to do: 0 of 0")]
