"""The decision memo (ui.committee.memo, ui.committee.memo_pdf, ui.committee.memo_html, ui.committee.images): the PDF and the
HTML are opened and their numbers checked against the calculators, computed here."""

from __future__ import annotations

import io
import os
import re
from datetime import datetime, timezone

import pytest

from calculators import budget, suppression
from calculators.levels import PopulationGroupLevel
from calculators.presets import production_2020
from ui.committee import images, memo, memo_html, memo_pdf
from ui.core import planner
from ui.committee.comparison import Plan

COUNTY2 = PopulationGroupLevel("COUNTY", 2)
#: One worker (pytest-xdist) takes all the memo tests: the browser drawing the charts
#: (conftest's `renderer`) and the memos printed once per module are made once, not on each worker.
pytestmark = pytest.mark.xdist_group("memo")
NOW = datetime(2026, 5, 4, 9, 30, tzinfo=timezone.utc)


def _need_browser():
    ok, why = images.available()
    if not ok:
        if os.environ.get("SAFETAB_REQUIRE_BROWSER") == "1":
            pytest.fail(f"SAFETAB_REQUIRE_BROWSER=1 but {why}", pytrace=False)
        pytest.skip(why)


@pytest.fixture(scope="module")
def plan():
    # not the production plan: r = 3 (S = 4) and COUNTY Detailed at rho = 0.3
    cfg = production_2020().updated(max_race_codes=3).with_rho(COUNTY2, 0.3)
    targets = planner.reconcile_targets(planner.production_targets(), production_2020(), cfg, planner.BOUND)
    targets["(COUNTY, 2)"] = 8
    return Plan("Committee plan B", cfg, targets)


@pytest.fixture(scope="module")
def plan_memo(plan):
    """The memo of `plan`, made once for the tests that read it: printing, drawing and
    rendering a memo never change it."""
    return memo.plan_memo(plan, planner.EXACT, 1e-10, now=NOW)


@pytest.fixture(scope="module")
def expected():
    """The figures a reader looks for, from the calculators directly."""
    s2 = budget.sigma2_stage2(0.3, 0.1, 4)
    total = 0.008 * 5 + 2.134 * 2 + 0.159 * 3 + 0.3  # the US run's levels (AIANNH Regional off)
    return {
        "moe_exact": int(budget.moe_for_rho(0.3, 4, 0.1, exact=True)),
        "moe_bound": int(budget.moe_for_rho(0.3, 4, 0.1, exact=False)),
        "T": int(suppression.threshold(s2, 0.9999)),
        "eps": f"{budget.epsilon_tight(total, 1e-10):.4g}",
        "rho_release": f"{total:.4g}",
    }


def _row(lines: list[str], title: str, start: str, also_next: bool = False) -> list[str]:
    """Tokens of the first line starting with `start` after the line `title` (and of the
    line after it: a table cell's second line)."""
    i = next(k for k, line in enumerate(lines) if line.strip() == title)
    j = next(k for k in range(i + 1, len(lines)) if lines[k].startswith(start))
    return [t for line in lines[j:j + (3 if also_next else 1)] for t in line.split()]


@pytest.fixture(scope="module")
def pdf_text(plan_memo):
    from pypdf import PdfReader

    _need_browser()
    m = plan_memo
    data = memo_pdf.render(m)  # its own browser: the path without a renderer (the others share one)
    reader = PdfReader(io.BytesIO(data))
    text = "\n".join(p.extract_text() for p in reader.pages)
    return m, reader, text


def test_the_pdf_holds_the_plans_numbers(pdf_text, expected):
    m, reader, text = pdf_text
    lines = text.splitlines()
    assert data_ok(text)
    # budget and MOE per level: rho, target, both MOEs and the verdict
    row = _row(lines, "Budget and MOE per level", "COUNTY Detailed")
    assert row[2:6] == ["US", "yes", "8", "0.3"]
    # the verdict names the exact MOE and the target it is held against
    assert row[-7:] == [str(expected["moe_exact"]), str(expected["moe_bound"]), "✓", "meets",
                        f"({expected['moe_exact']}", "≤", "8)"]
    assert _row(lines, "Budget and MOE per level", "STATE Detailed")[5] == "2.134"
    # the suppression threshold of the level
    row = _row(lines, "Threshold T per level", "COUNTY Detailed", also_next=True)  # "stat-level-0 totals" wraps
    k = row.index("stat-level-0")
    assert row[2] == "0.3" and row[k + 1:k + 3] == ["totals", str(expected["T"])]
    # privacy accounting: the release and the level's epsilon
    assert f"ε of the release (tight / classic) {expected['eps']} /" in text
    assert f"ρ of the release = max(US, PR) {expected['rho_release']} (bounded" in text
    row = _row(lines, "Each level", "COUNTY Detailed")
    assert row[6] == f"{float(budget.epsilon_tight(0.3, 1e-10)):.4g}"  # 4 significant digits
    assert row[7] == f"{float(budget.epsilon_tight(0.6, 1e-10)):.4g}"  # bounded: 2 rho
    # every chart is a picture; bookmarks for the sheet and every section; date and version on it
    distinct = {(f.fig.to_json(), f.size) for f in m.figures()}  # the same picture is embedded once
    assert sum(len(p.images) for p in reader.pages) == len(distinct) >= 5
    assert [o.title for o in reader.outline] == [memo.SHEET_TITLE] + [
        f"{memo.appendix_label(i)}. {s.title}" for i, s in enumerate(m.sections)]
    assert "2026-05-04 09:30 UTC" in text and f"SafeTab-P Studio {memo.project_version()}" in text


def test_page_one_is_the_decision_sheet(pdf_text, expected):
    m, reader, text = pdf_text
    page1 = " ".join(reader.pages[0].extract_text().split())  # table cells may wrap
    assert memo.SHEET_TITLE in page1 and "Committee plan B" in page1
    # the release's privacy loss, unbounded and bounded, and epsilon
    assert f"ρ = {expected['rho_release']}" in page1 and f"ρ = {float(expected['rho_release']) * 2:.4g}" in page1
    assert f"{expected['eps']} (tight)" in page1
    # which levels meet their targets, the national outcome block, what differs from 2020
    assert "all 19 tabulated levels meet their target" in page1
    assert "National outcome" in page1
    assert "race multiplicity r 8 → 3" in page1 and "COUNTY Detailed: ρ 0.159 → 0.3, MOE target 11 → 8" in page1
    assert "Appendix: A. Parameters" in page1 and "Parameters" not in reader.pages[0].extract_text().split(
        "Appendix:")[0]  # the appendix starts on page 2


@pytest.fixture(scope="module")
def layouts(plan_memo, renderer):
    """The memo of the plan with its last run, on both papers, with the charts' places."""
    from pypdf import PdfReader

    _need_browser()
    m = plan_memo
    pics = memo_pdf.pictures(m, renderer)
    out = {}
    for paper in memo_pdf.PAPERS:
        placed: list = []
        data = memo_pdf.render(m, pngs=pics, paper=paper, layout=placed)
        out[paper] = (m, PdfReader(io.BytesIO(data)), placed)
    return out


@pytest.mark.parametrize("paper, size", [("US Letter", (792, 612)), ("A4", (842, 595))])
def test_the_memo_prints_on_letter_and_a4_in_at_most_12_pages(layouts, paper, size):
    m, reader, placed = layouts[paper]
    assert 2 <= len(reader.pages) <= 12
    w, h = (float(x) for x in reader.pages[0].mediabox.upper_right)
    assert (round(w), round(h)) == size
    # every chart lies whole inside the page's margins, above the footer
    wmm, hmm = w / 72 * 25.4, h / 72 * 25.4
    assert len(placed) == len(m.figures())
    for page, x, y, cw, ch in placed:
        assert memo_pdf.PAGE_MARGIN - 0.01 <= x and x + cw <= wmm - memo_pdf.PAGE_MARGIN + 0.01
        assert memo_pdf.PAGE_MARGIN <= y and y + ch <= hmm - memo_pdf.PAGE_MARGIN - 4 + 0.01, (page, y, ch)


def _words(m: memo.Memo) -> set[str]:
    return {w for t in m.tables() for text in [*map(str, t.df.columns), *(memo.memo_text(v) for v in t.df.to_numpy().ravel())]
            for w in text.split() if len(w) >= 4 and any(c.isalpha() for c in w)}


@pytest.mark.parametrize("paper", ["US Letter", "A4"])
def test_no_word_is_broken_no_page_holds_only_a_heading_and_numbers_are_rounded(layouts, paper):
    m, reader, _placed = layouts[paper]
    words = _words(m)
    footer = m.title
    for k, page in enumerate(reader.pages, 1):
        lines = [line.strip() for line in page.extract_text().splitlines() if line.strip()]
        tokens = [t for line in lines for t in line.split()]
        # a word broken inside a table shows as two tokens that join into one of its words
        broken = [a + b for a, b in zip(tokens, tokens[1:]) if a + b in words and a not in words and b not in words]
        assert not broken, (paper, k, broken)
        body = [line for line in lines if not line.startswith(footer)]
        assert len(body) > 2 or len(page.images), (paper, k, body)  # more than a heading
    text = "\n".join(p.extract_text() for p in reader.pages)
    # no raw precision (0.2646726442517879): at most 4 significant digits after a decimal point
    long = [x for x in re.findall(r"\d+\.\d+", text) if len(x.replace(".", "").lstrip("0")) > 4]
    assert not long, long[:5]


def data_ok(text: str) -> bool:
    return "Committee plan B" in text and "could not be drawn" not in text


def test_project_version_is_read_from_pyproject(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\nversion = "9.8.7"\n')
    assert memo.project_version(tmp_path) == "9.8.7"
    assert memo.project_version(tmp_path / "missing") == "unknown"


def _tables(doc: str) -> dict[str, list[list[str]]]:
    """HTML tables by the title above them: rows of cell texts (header row first)."""
    out = {}
    for title, body in re.findall(r"<h3>([^<]*)</h3><table>(.*?)</table>", doc, flags=re.S):
        rows = []
        for tr in re.findall(r"<tr>(.*?)</tr>", body, flags=re.S):
            rows.append([re.sub(r"<[^>]+>", "", c) for c in re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", tr, flags=re.S)])
        out.setdefault(title, rows)
    return out


def test_the_html_memo_holds_the_same_numbers_and_svg_charts(plan_memo, expected, renderer):
    _need_browser()
    m = plan_memo
    doc = memo_html.render(m, renderer=renderer)
    t = _tables(doc)
    row = next(r for r in t["Budget and MOE per level"] if r[:2] == ["COUNTY", "Detailed"])
    assert row[4:6] == ["8", "0.3"] and row[9:12] == [str(expected["moe_exact"]), str(expected["moe_bound"]),
                                                      f"✓ meets ({expected['moe_exact']} ≤ 8)"]
    row = next(r for r in t["Threshold T per level"] if r[:2] == ["COUNTY", "Detailed"])
    assert row[6] == str(expected["T"])
    assert doc.count("data:image/svg+xml;base64,") == len(m.figures())
    assert "2026-05-04 09:30 UTC" in doc and "plotly" not in doc.split("<body>")[1][:2000]


def test_without_a_browser_the_memo_still_comes_with_the_charts_data(plan_memo, monkeypatch):
    from pypdf import PdfReader

    monkeypatch.setattr(images, "available", lambda: (False, "no Chrome or Chromium was found"))
    m = plan_memo
    doc = memo_html.render(m)
    assert "no Chrome or Chromium was found" in doc
    assert doc.count('class="plotly-graph-div"') == len(m.figures())
    assert doc.count("Plotly.newPlot") == len(m.figures())
    reader = PdfReader(io.BytesIO(memo_pdf.render(m)))
    text = "\n".join(p.extract_text() for p in reader.pages)
    assert "could not be drawn as pictures (no Chrome or Chromium was found)" in text
    assert "the chart's data; the chart could not be drawn" in text
    assert sum(len(p.images) for p in reader.pages) == 0


def _tiny_png() -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (40, 20), "white").save(buf, "PNG")
    return buf.getvalue()


def test_a_font_without_greek_letters_spells_them_out(plan_memo, expected):
    from pypdf import PdfReader

    m = plan_memo
    dot = _tiny_png()
    data = memo_pdf.render(m, pngs=[dot] * len(m.figures()), font=None)  # the PDF core font
    text = "\n".join(p.extract_text() for p in PdfReader(io.BytesIO(data)).pages)
    assert "rho of the release = max(US, PR)" in text and "floor(1.96sigma)" in text
    lines = text.splitlines()
    row = _row(lines, "Threshold T per level", "COUNTY Detailed")
    assert str(expected["T"]) in row


def test_the_comparison_memo_highlights_what_differs(plan):
    prod = Plan("2020 production plan", production_2020(), planner.production_targets())
    m = memo.comparison_memo([prod, plan], planner.EXACT, 1e-10, now=NOW,
                             details={"Committee plan B": ("2026-01-02T03:04:05+00:00", "2026-02-02T00:00:00+00:00",
                                                           "the June draft")})
    titles = [s.title for s in m.sections]
    assert titles[:4] == list(memo.COMPARISON_SECTIONS)
    assert "Committee plan B: Suppression" in titles and "2020 production plan: Parameters" in titles
    assert [memo.SHEET_TITLE] + titles == memo.outline([prod, plan])
    doc = memo_html.render(m, svgs=[b"<svg xmlns='http://www.w3.org/2000/svg'/>"] * len(m.figures()))
    t = _tables(doc)
    assert ["Committee plan B", "zCDP", "2026-01-02 03:04:05", "2026-02-02 00:00:00", "the June draft"] in t["The plans"]
    moe = next(r for r in t["MOE exact"] if r[:2] == ["COUNTY", "Detailed"])
    assert moe[2:4] == ["11", str(int(budget.moe_for_rho(0.3, 4, 0.1, exact=True)))]
    # the differing cell is highlighted, the reference is not
    block = doc.split("<h3>MOE exact</h3>", 1)[1].split("</table>", 1)[0]
    county = [tr for tr in re.findall(r"<tr>(.*?)</tr>", block, flags=re.S) if ">COUNTY<" in tr][1]
    cells = re.findall(r'<td class="([^"]*)">', county)
    assert "hl" in cells[3] and "hl" not in cells[2]


def test_a_comparison_needs_two_plans(plan):
    with pytest.raises(ValueError, match="two or more"):
        memo.comparison_memo([plan])


def test_the_headless_build_is_preferred_then_chromium(monkeypatch, tmp_path):
    """Without BROWSER_PATH the charts are drawn by Debian's headless Chromium where it is on
    the PATH, else by Chromium; BROWSER_PATH names the browser whatever is installed."""
    for name in ("chromium", "chromium-headless-shell"):
        exe = tmp_path / name
        exe.write_text("#!/bin/sh\n")
        exe.chmod(0o755)
    monkeypatch.delenv("BROWSER_PATH", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert images.browser() == str(tmp_path / "chromium-headless-shell")
    (tmp_path / "chromium-headless-shell").unlink()
    assert images.browser() == str(tmp_path / "chromium")
    monkeypatch.setenv("BROWSER_PATH", str(tmp_path / "chromium"))
    (tmp_path / "chromium-headless-shell").write_text("#!/bin/sh\n")
    (tmp_path / "chromium-headless-shell").chmod(0o755)
    assert images.browser() == str(tmp_path / "chromium")


def test_no_browser_is_a_plain_error(monkeypatch):
    import plotly.graph_objects as go

    monkeypatch.setenv("BROWSER_PATH", "/nonexistent/chrome")
    ok, why = images.available()
    assert not ok and "apt-get install -y chromium" in why
    with pytest.raises(images.ImageError, match="no Chrome or Chromium"):
        images.render([go.Figure()])


def test_a_browser_kept_open_draws_the_same_pictures_and_closes():
    """A Renderer (a browser kept open, pages kept loaded) draws the pictures that `render` (a
    browser started for the call) draws, and closes; `render` draws a figure that appears twice
    once, and different figures differently. (One test: each browser started costs seconds.)"""
    import plotly.graph_objects as go

    _need_browser()
    a = go.Figure(go.Scatter(x=[1, 2], y=[3, 4])).update_layout(height=300)
    b = go.Figure(go.Bar(x=["x", "y"], y=[1, 2])).update_layout(height=300)
    c = go.Figure(go.Scatter(x=[1, 2], y=[4, 3])).update_layout(height=300, title="ρ")
    out = images.render([a, b, c, a], "png")
    assert all(x.startswith(b"\x89PNG") for x in out)
    assert out[0] == out[3] and out[0] != out[2], "a figure drawn twice is one picture; another figure, another"
    r = images.Renderer(idle=60)
    try:
        assert r.start()
        first = r.render([a, b], "png")
        assert first == r.render([a, b], "png") == out[:2]  # drawn alike, page kept loaded
    finally:
        r.close()
    assert r._loop is None


def test_page_one_national_outcome_is_the_projection_of_each_plan(plan):
    """The decision sheet's national block (issues 23, 40) is the national projection of each
    plan on the shipped synthetic profile, named, about the groups that exist, with each
    plan's change from the reference; plans that differ show different numbers."""
    from calculators import plan as pm
    from calculators.projection import project
    from ui.safetab import projection

    profile = projection.shipped(projection.NATIONAL)
    assert profile is not None and profile.persons == 330_000_000
    ref = Plan("2020 production plan", production_2020(), planner.production_targets())
    (block,) = memo.national_outcome([plan, ref], reference=ref)
    assert isinstance(block, memo.Table), getattr(block, "text", block)
    df = block.df.set_index("Plan")
    for p in (plan, ref):
        h = pm.national_headline(project(p.config, profile))
        occ = h["occupied"]
        assert df.loc[p.name, "With a person"] == f"{round(occ):,}"
        for key, label in (("published", "Publish a total"), ("age4", "Sex × age4"), ("suppressed", "Suppressed"),
                           ("total_only", "Total only")):
            assert df.loc[p.name, label] == memo.count_share(h[key], occ)
            count, share = df.loc[p.name, label].rstrip("%)").split(" (")
            assert int(count.replace(",", "")) == round(h[key])
            assert float(share) == pytest.approx(100 * h[key] / occ, rel=0.005)
        # total only never holds the suppressed: published = total only + tables; + suppressed = occupied
        assert h["total_only"] + h["with_table"] + h["suppressed"] == pytest.approx(occ)
    assert df.loc[ref.name, "Change from 2020 production plan"] == "none"
    change = df.loc[plan.name, "Change from 2020 production plan"]
    ch = pm.national_changes(pm.national_headline(project(ref.config, profile)),
                             pm.national_headline(project(plan.config, profile)))
    assert pm.fmt_change(ch["suppressed"], pm.COUNT) in change
    assert profile.name in block.caption and "synthetic" in block.caption
    assert block.caption.count("Coterminous copying is ignored") == 1  # its notes, once for all plans
    # r = 3 instead of 8 changes which groups are published at every level
    assert df.loc[plan.name, "With a person"] == df.loc[ref.name, "With a person"]  # the same nation
    for col in ("Publish a total", "Total only", "Suppressed", "Empty groups, published", "Persons covered"):
        assert df.loc[plan.name, col] != df.loc[ref.name, col], col
    # another profile (the one chosen on the planner) is used and named instead
    sample = projection.shipped(projection.SAMPLE)
    (other,) = memo.national_outcome([plan], sample)
    assert sample.name in other.caption and profile.name not in other.caption
    assert other.df.iloc[0]["With a person"] == f"{round(project(plan.config, sample).total['occupied']):,}"


def test_a_small_share_keeps_its_digits():
    """Tens of thousands of groups out of 262 million are not printed as 0.0 % (3 significant digits)."""
    assert memo.count_share(119_694.4, 262_667_218) == "119,694 (0.0456 %)"
    assert memo.count_share(250_228_438, 262_667_218) == "250,228,438 (95.3 %)"
    assert memo.count_share(0.0, 262_667_218) == "0 (0 %)"
    assert memo.count_share(5.0, 0.0) == "5 (0 %)"


def test_page_one_says_so_when_the_profile_cannot_be_read(plan, tmp_path):
    class Broken:
        name = "broken"

    (block,) = memo.national_outcome([plan], profile=Broken())
    assert isinstance(block, memo.Text) and block.kind == "warning"
    assert "national projection could not be made" in block.text


def _report(trials: int, seed: int):
    """An accuracy report as the engine writes it, with every kind of published count
    and every true group size at every level (larger than a real one: the worst case)."""
    import numpy as np
    import pandas as pd
    from engine.reports.accuracy import CELL_TYPES, MARGINAL_TYPES, SIZE_LABELS, TABLE_TYPES

    rng = np.random.default_rng(seed)
    kinds = [*TABLE_TYPES.values(), *CELL_TYPES.values(), *MARGINAL_TYPES.values()]
    rows = [{"geo_level": geo, "iteration_level": it, "table": kind, "true_size": size,
             "counts_compared": int(rng.integers(1, 5000)), "trials": trials,
             "p95_abs_error": int(rng.integers(5, 60)), "mean_error": float(rng.normal()),
             "predicted_moe95_exact": 30, "predicted_moe95_design_bound": 29}
            for geo in ("USA", "STATE", "COUNTY", "TRACT", "PLACE", "AIANNH", "PR-STATE", "PR-COUNTY", "PR-TRACT",
                        "PR-PLACE") for it in (1, 2) for kind in kinds for size in SIZE_LABELS]
    return pd.DataFrame(rows)


@pytest.fixture(scope="module")
def run_info():
    """The last run as the memo gets it: a seeded run with this release's accuracy and the
    report over 3 repeated releases (1,540 rows each, about 20 pages each if printed)."""
    import pandas as pd

    levels = pd.DataFrame([{"Level": f"({geo}, {it})", "Groups": 500, "TotalOnly": 0, "Total only (stat 0)": 300,
                            "sex × age4": 120, "sex × age9": 60, "sex × age23": 20, "Suppressed": 250,
                            "Suppression threshold T": 21}
                           for geo in ("USA", "STATE", "COUNTY", "TRACT", "PLACE", "AIANNH", "PR-STATE",
                                       "PR-COUNTY", "PR-TRACT", "PR-PLACE") for it in (1, 2)])
    summary = pd.DataFrame({"Quantity": ["Plan that ran", "Noise", "Population groups"],
                            "Value": ["Committee plan B", "seeded (seed 3), NOT FOR RELEASE", "24,587"]})
    return memo.RunInfo(summary, levels, _report(1, 1), _report(3, 2), same_plan=True)


def test_a_memo_never_carries_a_run_of_another_plan_as_its_own(plan, run_info):
    """A run of another plan (here: of plan B) is left out of the production plan's memo, with
    a line saying so; a memo of the plan that ran, or a comparison that holds it, keeps it,
    named (issue 40 item 5)."""
    import dataclasses

    ran = dataclasses.replace(run_info, same_plan=False, config=plan.config.to_dict())
    prod = Plan("2020 production plan", production_2020(), planner.production_targets())
    sec = memo.plan_memo(prod, planner.EXACT, 1e-10, run=ran, now=NOW).sections[-1]
    assert sec.title == memo.RUN_SECTION and len(sec.blocks) == 1
    assert "used another plan than 2020 production plan" in sec.blocks[0].text
    assert not any(isinstance(b, memo.Table) for b in sec.blocks)
    own = memo.plan_memo(plan, planner.EXACT, 1e-10, run=ran, now=NOW).sections[-1]
    assert any(isinstance(b, memo.Table) for b in own.blocks)
    both = memo.comparison_memo([prod, plan], planner.EXACT, 1e-10, run=ran, now=NOW).sections[-1]
    assert both.blocks[0].text == f"A run of {plan.name}: its accuracy is that plan's."


@pytest.fixture(scope="module")
def run_layouts(plan, run_info, renderer):
    from pypdf import PdfReader

    _need_browser()
    m = memo.plan_memo(plan, planner.EXACT, 1e-10, run=run_info, now=NOW)
    pics = memo_pdf.pictures(m, renderer)
    return m, {paper: PdfReader(io.BytesIO(memo_pdf.render(m, pngs=pics, paper=paper))) for paper in memo_pdf.PAPERS}


@pytest.mark.parametrize("paper", ["US Letter", "A4"])
def test_a_one_plan_memo_with_its_run_keeps_to_12_pages(run_layouts, paper):
    """The full accuracy reports (hundreds of rows) are summarised, not printed: the memo
    of one plan with its run and its report over repeated releases has at most 12 pages."""
    m, readers = run_layouts
    reader = readers[paper]
    assert len(reader.pages) <= 12, (paper, len(reader.pages))
    text = " ".join(" ".join(p.extract_text() for p in reader.pages).split())
    assert "The last run: accuracy" in text and "“Everything (zip)”" in text  # where the full tables are


def test_the_runs_accuracy_is_summarised_per_level_and_charted_readably(run_layouts, run_info):
    m, _readers = run_layouts
    sec = m.sections[-1]
    assert sec.title == memo.RUN_SECTION
    tables = {b.title: b.df for b in sec.blocks if isinstance(b, memo.Table)}
    acc = tables["Tables published per level and their accuracy"].set_index("Level")
    assert len(acc) == 20  # one row per level, not one per kind and size
    assert "USA Regional" in acc.index and "(USA, 1)" not in acc.index  # the planner's names, as everywhere
    acc = acc.rename(index=lambda name: {"COUNTY Detailed": "(COUNTY, 2)"}.get(name, name))
    # the summary's numbers are those of the reports
    for name, rep in (("this release", run_info.release_report), ("3 releases", run_info.trials)):
        g = rep[(rep["geo_level"] == "COUNTY") & (rep["iteration_level"] == 2)]
        over = int((g["p95_abs_error"] > g["predicted_moe95_exact"]).sum())
        assert acc.loc["(COUNTY, 2)", f"{name}: rows over the MOE"] == f"{over} of {len(g)}"
        assert acc.loc["(COUNTY, 2)", f"{name}: largest observed ÷ MOE"] == pytest.approx(
            g["p95_abs_error"].max() / 30)
    assert acc.loc["(COUNTY, 2)", "Groups"] == 500  # beside the tables published
    # two charts (this release, repeated releases), each with one bar per geography level
    figs = [b for b in sec.blocks if isinstance(b, memo.Figure)]
    assert len(figs) == 2
    for f in figs:
        assert len(f.data) == 10 <= memo.ACCURACY_CHART_ROWS and f.data["Geography"].is_unique
        assert list(f.fig.layout.yaxis.tickvals) == list(f.data["Groups"])  # every label drawn
        assert f.size[1] >= memo.ACCURACY_CHART_HEIGHT


@pytest.fixture(scope="module")
def near_plan():
    """The 2020 production plan with settings a hair from it: p = 0.99995, γ = 0.100001
    and COUNTY Detailed at ρ = 0.15901."""
    cfg = production_2020().updated(zero_suppression_chance=0.99995,
                                    privacy_budget_p_stage_1_fraction=0.100001).with_rho(COUNTY2, 0.15901)
    return Plan("Near plan", cfg, planner.production_targets())


def _sheet_text(m: memo.Memo) -> str:
    return " ".join(memo.memo_text(v) for t in m.sheet if isinstance(t, memo.Table) for v in t.df.to_numpy().ravel())


def test_what_differs_shows_enough_digits_to_differ(near_plan):
    """A change never reads as no change ("γ 0.1 → 0.1"): both sides get digits until they
    differ, and p is never rounded to 1 (an invalid value)."""
    m = memo.plan_memo(near_plan, planner.EXACT, 1e-10, now=NOW)
    sheet = _sheet_text(m)
    assert "γ 0.1 → 0.100001" in sheet
    assert "p (zero-suppression chance) 0.9999 → 0.99995" in sheet
    assert "COUNTY Detailed: ρ 0.159 → 0.15901" in sheet
    assert "→ 1;" not in sheet and "0.9999 → 0.9999;" not in sheet
    assert memo.differing_texts(2.134, 3.0) == ("2.134", "3")  # 4 significant digits when they already differ


def test_p_is_never_printed_as_1_unless_it_is(near_plan):
    m = memo.plan_memo(near_plan, planner.EXACT, 1e-10, now=NOW)
    params = next(t.df for t in m.tables() if t.title == "config.json")
    cells = dict(zip(params.iloc[:, 0], params.iloc[:, 1])) | dict(zip(params.iloc[:, 2], params.iloc[:, 3]))
    assert memo.memo_text(cells["zero_suppression_chance"]) == "0.99995"
    assert dict(m.facts)["r, S, γ, p"].endswith("p = 0.99995")
    suppression = next(s for s in m.sections if s.title == "Suppression")
    assert "p = 0.99995." in suppression.blocks[0].text
    # the rule itself: 4 significant digits, more only where that would read as a whole number
    assert memo.number_text(0.99995) == "0.99995" and memo.number_text(0.999999999) == "0.999999999"
    assert memo.number_text(1.0) == "1" and memo.number_text(0.2646726442517879) == "0.2647"
    assert memo.number_text(123.99) == "124.0" and memo.number_text(1e-6) == "1e-06"
    assert memo.number_text(29.996) == "30.00"  # not whole, so never printed as 30


def test_gamma_reads_the_same_everywhere():
    cfg = production_2020().updated(privacy_budget_p_stage_1_fraction=0.123456789)
    m = memo.plan_memo(Plan("γ plan", cfg, planner.production_targets()), planner.EXACT, 1e-10, now=NOW)
    texts = [v for _k, v in m.facts] + [b.caption for b in m.figures()] + [
        b.text for s in m.sections for b in s.blocks if isinstance(b, memo.Text)] + [
        memo.memo_text(v) for t in m.tables() for v in t.df.to_numpy().ravel()]
    joined = " ".join(texts)
    assert "γ = 0.1235" in dict(m.facts)["r, S, γ, p"]
    assert "γ = 0.1235." in next(f.caption for f in m.figures() if f.title.startswith("MOE against"))
    assert "0.1235" in [memo.memo_text(v) for v in next(t for t in m.tables() if t.title == "The release").df
                        .to_numpy().ravel()]
    assert "0.123457" not in joined and "0.12345" not in joined


def test_race_multiplicity_headers_have_4_significant_digits():
    cfg = production_2020().with_rho(COUNTY2, 0.0964198)
    cols = [c for c in planner.race_multiplicity_table(cfg, planner.EXACT).columns if c.startswith("MOE at")]
    assert "MOE at ρ = 0.09642" in cols and "MOE at ρ = 2.134" in cols
    assert all(len(c.split("= ")[1].replace(".", "").lstrip("0")) <= 4 for c in cols), cols
    # two budgets that read the same at 4 digits get the digits that tell them apart
    close = production_2020().with_rho(COUNTY2, 0.15901)
    cols = [c for c in planner.race_multiplicity_table(close, planner.EXACT).columns if c.startswith("MOE at")]
    assert "MOE at ρ = 0.159" in cols and "MOE at ρ = 0.15901" in cols and len(set(cols)) == len(cols)


def test_the_half_page_charts_y_titles_fit_beside_their_plots(plan_memo):
    """"MOE against ρ" and "Race multiplicity r" are drawn half a page wide and 380 px high:
    their y-axis title must not run longer than the plot (it overlapped the chart's title)."""
    m = plan_memo
    figs = [f for f in m.figures() if f.title.startswith(("MOE against", "Race multiplicity"))]
    assert len(figs) == 2
    for f in figs:
        lay = f.fig.layout
        plot_h = f.size[1] - lay.margin.t - lay.margin.b
        lines = lay.yaxis.title.text.split("<br>")
        size = lay.yaxis.title.font.size
        assert len(lines) == 2 and size == memo.AXIS_TITLE_PX
        assert max(len(line) for line in lines) * 0.6 * size <= plot_h, (f.title, lines, plot_h)  # ~0.6 em a letter
        assert lay.margin.t >= 60  # room between the chart's title and the plot


def test_a_name_without_spaces_wider_than_its_column_stays_inside_the_table(plan, monkeypatch):
    """A comparison of three plans, one named with 80 characters and no space: its column
    header ran past the table's border and off the page (headers are bold, and were
    measured in the regular font); every text drawn now stays inside the page's margins,
    and the name is printed whole, in pieces."""
    name = "Ω" * 47 + "/\\:*?<>|" + "x" * 25
    prod = Plan("2020 production plan", production_2020(), planner.production_targets())
    other = Plan("r = 3 draft", production_2020().updated(max_race_codes=3), planner.production_targets())
    m = memo.comparison_memo([prod, other, Plan(name, plan.config, plan.targets)], planner.EXACT, 1e-10, now=NOW)
    drawn = []
    original = memo_pdf._Doc.text

    def record(self, x, y, text):
        drawn.append((self.page_no(), x + self.get_string_width(text), self.w - memo_pdf.PAGE_MARGIN, text))
        return original(self, x, y, text)

    monkeypatch.setattr(memo_pdf._Doc, "text", record)
    memo_pdf.render(m, pngs=[None] * len(m.figures()))
    over = [(p, round(r, 1), t[:30]) for p, r, limit, t in drawn if r > limit + 0.01]
    assert not over, over[:5]
    assert name[:20] in "".join(t for *_r, t in drawn)


def test_a_memo_from_a_confidential_profile_is_marked_confidential(plan):
    """Page 1's national outcome of a confidential profile (an agency's real data) makes the
    memo confidential: the mark leads its title (page 1, every PDF page's footer, the HTML
    title) and a warning opens the decision sheet; on the synthetic profile nothing says so."""
    from pypdf import PdfReader

    from calculators.projection import Profile
    from ui.safetab import projection

    synthetic = projection.shipped(projection.SAMPLE)
    d = synthetic.to_dict()
    d.update(confidential=True, synthetic=False, name="Agency data 2030")
    real = Profile.from_dict(d)
    ref = Plan("2020 production plan", production_2020(), planner.production_targets())
    for make in (lambda prof: memo.plan_memo(plan, now=NOW, profile=prof),
                 lambda prof: memo.comparison_memo([ref, plan], now=NOW, profile=prof)):
        m = make(real)
        assert m.title.startswith("CONFIDENTIAL: SafeTab-P decision memo")
        assert isinstance(m.sheet[0], memo.Text) and m.sheet[0].kind == "warning"
        assert m.sheet[0].text.startswith("CONFIDENTIAL: page 1's national outcome")
        reader = PdfReader(io.BytesIO(memo_pdf.render(m, pngs=[None] * len(m.figures()), font=None)))
        pages = [p.extract_text() for p in reader.pages]
        assert all("CONFIDENTIAL: SafeTab-P decision memo" in text for text in pages)  # every page's footer
        html_text = memo_html.render(m, svgs=[b"<svg xmlns='http://www.w3.org/2000/svg'/>"] * len(m.figures()))
        assert "<title>CONFIDENTIAL: SafeTab-P decision memo" in html_text
        assert "so this memo is confidential too" in html_text
        for prof in (synthetic, None):
            m = make(prof)
            assert "CONFIDENTIAL" not in m.title and not any(
                isinstance(b, memo.Text) and "CONFIDENTIAL" in b.text for b in m.sheet)
