"""When the Decision memo page opens its chart browser (SAFETAB_CHART_BROWSER): in the
background when the page is shown (the default), only when a memo is drawn ("on-demand"),
and a setting it does not understand is said on the page, the default then used.

The browser itself is not started here: `Renderer.start` is replaced by one that counts
its calls (the drawing is tested in tests/ui/committee/test_memo.py)."""

from __future__ import annotations

import pytest

from tests.app.conftest import open_app, shown
from ui.committee import images


@pytest.fixture
def starts(monkeypatch) -> list[images.Renderer]:
    """The Renderers whose `start` the memo page called (none is really started)."""
    called: list[images.Renderer] = []

    def start(self) -> bool:
        called.append(self)
        return True

    monkeypatch.setattr(images.Renderer, "start", start)
    return called


@pytest.mark.parametrize("value", [None, "background", " Background "])
def test_the_memo_page_opens_its_chart_browser_in_the_background_by_default(monkeypatch, starts, value):
    if value is None:
        monkeypatch.delenv(images.BACKGROUND_ENV, raising=False)
    else:
        monkeypatch.setenv(images.BACKGROUND_ENV, value)
    at = open_app("memo")
    assert len(starts) == 1 and isinstance(starts[0], images.Renderer)
    assert not at.warning, [w.value for w in at.warning]
    at.run()  # a rerun asks again; the renderer itself keeps one browser (it is opening or open)
    assert len(starts) == 2 and starts[1] is starts[0]


def test_on_demand_opens_no_browser_when_the_page_is_shown(monkeypatch, starts):
    monkeypatch.setenv(images.BACKGROUND_ENV, "on-demand")
    at = open_app("memo")
    assert starts == []
    assert not at.warning, [w.value for w in at.warning]
    assert "What the memo holds" in [h.value for h in at.subheader]


def test_a_setting_it_does_not_understand_is_said_and_the_default_used(monkeypatch, starts):
    monkeypatch.setenv(images.BACKGROUND_ENV, "sometimes")
    at = open_app("memo")
    assert len(starts) == 1
    said = [shown(w.value) for w in at.warning]
    assert any("SAFETAB_CHART_BROWSER='sometimes' is not one of background, on-demand" in w
               and "opens in the background (the default)" in w for w in said), said


@pytest.mark.parametrize(("environ", "expected"), [
    ({}, (True, None)),
    ({"SAFETAB_CHART_BROWSER": ""}, (True, None)),
    ({"SAFETAB_CHART_BROWSER": "background"}, (True, None)),
    ({"SAFETAB_CHART_BROWSER": "ON-DEMAND"}, (False, None)),
])
def test_the_setting_is_read_as_written(environ, expected):
    assert images.opens_in_background(environ) == expected


def test_a_wrong_setting_names_the_variable_the_value_and_the_choices():
    background, problem = images.opens_in_background({"SAFETAB_CHART_BROWSER": "lazy"})
    assert background is True
    assert problem == ("SAFETAB_CHART_BROWSER='lazy' is not one of background, on-demand; "
                       "the chart browser opens in the background (the default).")
