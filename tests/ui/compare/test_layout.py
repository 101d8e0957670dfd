"""The shared layout of the "Compare methods" pages (ui.compare.layout)."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pandas as pd

from ui.compare import layout as compare

REPO = Path(__file__).resolve().parents[3]


def test_overview_table_lists_safetab_p_first_then_every_method():
    t = compare.overview_table()
    assert list(t.columns) == ["method", "question it answers", "how it works", "source"]
    assert t["method"].tolist() == ["SafeTab-P", *[m.title for m in compare.METHODS]]
    assert t["question it answers"].str.len().min() > 20


def test_every_method_page_exists_and_uses_the_shared_layout():
    for m in compare.METHODS:
        src = (REPO / m.path).read_text(encoding="utf-8")
        for part in ("compare.header(", "compare.side_by_side(", "compare.verdict(", "compare.downloads("):
            assert part in src, f"{m.path} does not call {part}"


def test_zip_bytes_writes_frames_as_csv_and_text_as_utf8():
    df = pd.DataFrame({"level": ["COUNTY", "TRACT"], "mae": [1.5, 2.25]})
    data = compare.zip_bytes({"errors.csv": df, "note.txt": "Zoë's note", "chart.png": b"\x89PNG"})
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        assert sorted(zf.namelist()) == ["chart.png", "errors.csv", "note.txt"]
        assert pd.read_csv(zf.open("errors.csv")).equals(df)
        assert zf.read("note.txt").decode("utf-8") == "Zoë's note"
        assert zf.read("chart.png") == b"\x89PNG"


def test_the_verdict_file_names_the_data_the_plan_and_the_seed():
    """verdict.txt, read away from the page, says what it came from (it held the verdict
    alone, or was not in the zip at all)."""
    from calculators.presets import production_2020

    basis = compare.Basis(production_2020(), "2020 production plan", "the shipped synthetic sample (50,000 persons)",
                          compare.PRODUCTION)
    text = compare.verdict_text("SafeTab-P publishes **139** groups.", basis, "Nothing at TRACT.",
                                "Seeded study (seed 7), NOT FOR RELEASE.")
    assert text.splitlines() == ["Verdict", "", "SafeTab-P publishes 139 groups.", "", "Nothing at TRACT.", "",
                                 "Data: the shipped synthetic sample (50,000 persons).",
                                 "Plan: 2020 production plan.", "", "Seeded study (seed 7), NOT FOR RELEASE."]
    assert compare.verdict_text("Plain.") == "Verdict\n\nPlain.\n"


PAPERS = REPO.parent / "shared" / "papers"


def test_the_spine_page_and_glossary_cite_the_spine_paper_the_project_follows():
    """The Custom geographies page named "Abowd et al., ... TopDown Algorithm (2021)", while
    the paper it follows (shared/papers/geographic-spines.txt, docs/spines.md) is Cumings-Menon
    et al., "Geographic Spines in the 2020 Census Disclosure Avoidance System"."""
    from ui.core import glossary

    page = next(m for m in compare.METHODS if m.path == "app_pages/compare/spines.py")
    title = "Geographic Spines in the 2020 Census Disclosure Avoidance System"
    assert f'"{title}"' in page.source and page.source.startswith("R. Cumings-Menon")
    paper = PAPERS / "geographic-spines.txt"
    if paper.exists():  # the shared copy: its first line is the title, its author line starts with Cumings-Menon
        text = paper.read_text(encoding="utf-8")
        assert text.splitlines()[0].strip() == title and "Ryan Cumings-Menon" in text[:3000]
    for name in page.terms:
        meaning = glossary.find(name).meaning
        assert "Abowd et al." not in meaning, name
    assert "Cumings-Menon et al., Theorem 2 and Algorithm 3" in glossary.find("Bypassing").meaning


def test_the_consistency_page_cites_the_papers_versions_as_its_references_do():
    """The page cited "Fioretto, Van Hentenryck, Zhu ... (CP 2019; Artificial Intelligence 2021)",
    but the paper's references give the CP 2019 version to Fioretto and Van Hentenryck alone
    ([15]) and the three authors' version to Artificial Intelligence 296, 2021 ([16])."""
    page = next(m for m in compare.METHODS if m.path == "app_pages/compare/consistency.py")
    assert "Artificial Intelligence 296 (2021), after Fioretto and Van Hentenryck (CP 2019)" in page.source
    assert "Zhu, \"Differential Privacy of Hierarchical Census Data: An Optimization Approach\" (CP 2019" not in page.source
    paper = PAPERS / "hierarchical-consistency.txt"
    if paper.exists():
        refs = paper.read_text(encoding="utf-8").split("References", 1)[-1]
        cp = next(line for line in refs.splitlines() if line.startswith("- [15]"))
        assert "Ferdinando Fioretto and Pascal" in cp and "Zhu" not in cp and "(CP), pages 639" in cp
        assert "Keyu Zhu. Differential privacy of hierarchical census data: An optimization approach. Artificial " \
               "Intelligence, 296" in refs
