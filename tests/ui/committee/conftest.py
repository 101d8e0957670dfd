"""Fixtures of the scenario-store and memo tests: a store in a temp folder, the 2020 plan, and
one browser kept open to draw the memos' charts."""

from __future__ import annotations

import pytest

from calculators.presets import production_2020
from ui.committee import scenarios
from ui.committee.scenarios import ScenarioStore


@pytest.fixture
def store(tmp_path):
    return ScenarioStore(tmp_path / "data" / scenarios.DB_NAME)


@pytest.fixture
def prod():
    return production_2020()


@pytest.fixture(scope="session")
def renderer():
    """One browser (ui.committee.images.Renderer, as the app keeps one) drawing the charts of
    the memos the tests print, instead of a browser started for each memo: starting Chromium
    is most of a memo's cost. Only drawn on, never closed or reconfigured by a test; closed at
    the end. (test_memo.py also prints a memo with a browser started for it, and checks that both draw alike.)
    A chart the tests have already had drawn (the same figure, size, format and scale) is not
    drawn again (`_DrawnOnce`)."""
    from ui.committee import images

    r = images.Renderer()
    yield _DrawnOnce(r)
    r.close()


class _DrawnOnce:
    """The session's Renderer, drawing each distinct chart once per test run: the memos the
    tests print share most of their charts (the plan's memo alone and with its run, the
    comparison of three plans), and a chart is the same picture of the same figure JSON
    whichever memo holds it. Its `render` means what the Renderer's does."""

    def __init__(self, renderer):
        self._renderer = renderer
        self._drawn: dict[tuple, bytes] = {}

    def render(self, figs, fmt: str = "png", width: int | None = None, scale: float = 2.0, sizes=None) -> list[bytes]:
        from ui.committee import images

        width = images.WIDTH if width is None else width
        keys, first = images._jobs(figs, width, sizes)  # the Renderer's own key of a chart
        new = [k for k in first if (k, fmt, scale) not in self._drawn]
        if new:
            drawn = self._renderer.render([first[k][0] for k in new], fmt, width, scale, sizes=[first[k][1] for k in new])
            self._drawn.update({(k, fmt, scale): b for k, b in zip(new, drawn, strict=True)})
        return [self._drawn[(k, fmt, scale)] for k in keys]
