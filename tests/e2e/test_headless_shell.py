"""The browser the tests drive lays text out as Chromium does (tests/e2e/browser.py, `executable`).

Where Debian's headless shell is installed the browser tests drive it instead of Chromium. The
page-fit and contrast tests measure what is displayed, so the shell must lay text out as Chromium
does: the same text, in the app's fonts (Streamlit's Source Sans and Source Code, and the
system's sans-serif that Greek letters may fall back to), at the app's sizes and weights, must be
exactly as wide in both."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from tests.e2e.browser import CHROMIUM, HEADLESS_SHELL, LAUNCH_ARGS, SHELL_ARGS, executable, require_browser

#: Texts of the app's kinds: words, numbers with separators, Greek letters, a formula, a code.
TEXTS = ("Budget and MOE planner", "Each population group level (a geography and an iteration level)",
         "MOE target", "1,234,567 persons", "ρ = 0.0123, ε ≈ 4.94, σ² = 1,234.5", "Θ₁ ≥ 149,971",
         "COUNTY Detailed, MOE target", "Least squares", "(COUNTY, 1)", "0.000123456789")
#: (font family, size in px, weight) as the app shows them: body text, captions, headings, tables, code.
STYLES = (("Source Sans", 16, 400), ("Source Sans", 14, 400), ("Source Sans", 14, 600), ("Source Sans", 44, 700),
          ("Source Sans", 12.8, 400), ("Source Code", 14, 400), ("sans-serif", 16, 400))

WIDTHS = """() => [...document.querySelectorAll('span')].map(s => s.getBoundingClientRect().width)"""


def _page(folder: Path) -> Path:
    """A page of TEXTS in every style of STYLES, with Streamlit's own font files."""
    import streamlit

    media = Path(streamlit.__file__).parent / "static" / "static" / "media"

    def data(stem: str) -> str:  # inline: a page opened from a file may not load fonts from other files
        font = next(media.glob(f"{stem}-Upright*.woff2")).read_bytes()
        return "data:font/woff2;base64," + base64.b64encode(font).decode()

    faces = "".join(f"@font-face {{ font-family: '{name}'; src: url('{data(stem)}'); font-weight: 200 900; }}\n"
                    for name, stem in (("Source Sans", "SourceSansVF"), ("Source Code", "SourceCodeVF")))
    spans = "".join(f"<div><span style=\"font: {weight} {size}px '{family}'\">{text}</span></div>"
                    for family, size, weight in STYLES for text in TEXTS)
    path = folder / "texts.html"
    path.write_text(f"<!doctype html><meta charset='utf-8'><style>{faces}</style>{spans}", encoding="utf-8")
    return path


def _widths(p, exe: Path, args: list[str], page: Path) -> list[float]:
    b = p.chromium.launch(executable_path=str(exe), args=args)
    try:
        pg = b.new_page(viewport={"width": 1600, "height": 800})
        pg.goto(page.as_uri())
        pg.evaluate("() => document.fonts.ready")
        assert pg.evaluate("() => [...document.fonts].every(f => f.status === 'loaded')"), "a font did not load"
        return pg.evaluate(WIDTHS)
    finally:
        b.close()


def test_the_tests_browser_lays_text_out_as_chromium(tmp_path):
    require_browser()
    exe, args = executable()
    if exe == CHROMIUM:
        pytest.skip(f"{HEADLESS_SHELL} is not installed: the browser tests drive Chromium itself")
    from playwright.sync_api import sync_playwright

    page = _page(tmp_path)
    with sync_playwright() as p:
        chromium, shell = _widths(p, CHROMIUM, LAUNCH_ARGS, page), _widths(p, exe, args, page)
        hinted = _widths(p, exe, LAUNCH_ARGS, page)  # the shell as it starts by default
    assert len(chromium) == len(TEXTS) * len(STYLES) and all(w > 0 for w in chromium)
    labels = [f"{text!r} in {family} {size}px {weight}" for family, size, weight in STYLES for text in TEXTS]
    differ = [f"{label}: {a:.2f} px in Chromium, {b:.2f} px in the shell"
              for label, a, b in zip(labels, chromium, shell) if abs(a - b) > 0.01]
    assert not differ, "\n".join(differ)
    # the measure sees the difference SHELL_ARGS removes: hinted (each glyph's advance rounded to
    # whole pixels), most texts are wider or narrower than in Chromium (61 of the 70 on Debian 12)
    off = sum(abs(a - b) > 0.01 for a, b in zip(chromium, hinted))
    assert off > len(chromium) // 2, f"only {off} of {len(chromium)} texts differ without {SHELL_ARGS}"
