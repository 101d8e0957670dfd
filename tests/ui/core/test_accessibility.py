"""Accessibility (issue 20, item 6): text contrast of the theme and the app's style sheet
computed from their colours, chart summaries, a visible keyboard focus."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import plotly.graph_objects as go
import pytest

from calculators.levels import PopulationGroupLevel
from calculators.presets import production_2020
from ui.safetab import analysis
from ui.core import charts, widgets

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def theme() -> dict:
    with open(REPO / ".streamlit" / "config.toml", "rb") as fh:
        return tomllib.load(fh)["theme"]


def test_contrast_is_the_wcag_ratio():
    assert widgets.contrast("#000000", "#ffffff") == pytest.approx(21.0)
    assert widgets.contrast("#ffffff", "#ffffff") == pytest.approx(1.0)
    assert widgets.contrast("#777777", "#ffffff") == pytest.approx(4.48, abs=0.01)  # the classic just-too-light grey


def test_every_text_colour_reaches_4_5_to_1_on_every_background(theme):
    backgrounds = [theme["backgroundColor"], theme["secondaryBackgroundColor"]]
    texts = [theme["textColor"], theme["primaryColor"], widgets.CAPTION_COLOR]
    # every colour the style sheet gives to text is one of these
    css_colours = set(re.findall(r"color: (#[0-9a-fA-F]{6})", widgets.APP_CSS))
    assert css_colours and css_colours <= set(texts)
    for fg in texts:
        for bg in backgrounds:
            assert widgets.contrast(fg, bg) >= 4.5, (fg, bg, widgets.contrast(fg, bg))


def test_keyboard_focus_has_a_visible_outline(theme):
    assert "focus" in widgets.APP_CSS and f"outline: 3px solid {widgets.FOCUS_COLOR}" in widgets.APP_CSS
    for bg in (theme["backgroundColor"], theme["secondaryBackgroundColor"]):
        assert widgets.contrast(widgets.FOCUS_COLOR, bg) >= 3.0


def test_every_chart_has_a_one_sentence_summary_naming_what_it_shows():
    cfg, lvl = production_2020(), PopulationGroupLevel("COUNTY", 2)
    probs = analysis.stat_level_curves(cfg, lvl)
    text = charts.summary(charts.stat_level_probabilities(probs, cfg.thresholds(lvl)))
    assert text.startswith("Chart summary: Which table a group gets") and text.count(". ") <= 1
    assert "probability against true population group size" in text and "sex × age23 (46 cells)" in text
    bars = go.Figure(go.Bar(x=["a"], y=[1], name="observed")).update_layout(title_text="Errors")
    assert charts.summary(bars) == "Chart summary: Errors; it shows bars (observed). Its data are in the CSV download."
