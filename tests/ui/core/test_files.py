"""Uploads, release tables, zips, charts and one engine run through ui.safetab.runner."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import pandas as pd
import pytest

from calculators.config import SafeTabConfig
from calculators.presets import production_2020
from ui.core import charts, files, planner

REPO = Path(__file__).resolve().parents[3]
SAMPLE = REPO / "sample_data"
needs_sample = pytest.mark.skipif(not (SAMPLE / "data" / "person-records.txt").is_file(),
                                  reason="sample_data/ is not there")


def _zip(entries: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, data in entries.items():
            zf.writestr(name, data)
    return buf.getvalue()


def test_stage_uploads_from_a_zip_with_folders(tmp_path):
    entries = {f"x/params/{n}": b"h\n" for n in files.SPEC_NAMES}
    entries.update({"x/data/person-records.txt": b"p\n", "x/data/GRF-C.txt": b"g\n", "x/config.json": b"{}",
                    "__MACOSX/x/._GRF-C.txt": b"junk", "x/notes.md": b"hi"})
    st = files.stage_uploads([("inputs.zip", _zip(entries))], tmp_path)
    assert st.ok, st.problems
    assert sorted(p.name for p in st.params_dir.iterdir()) == sorted(list(files.SPEC_NAMES) + ["config.json"])
    assert sorted(p.name for p in st.data_dir.iterdir()) == ["GRF-C.txt", "person-records.txt"]
    assert st.config_text == "{}"
    assert st.ignored == ["notes.md"]


def test_stage_uploads_names_what_is_missing(tmp_path):
    st = files.stage_uploads([("GRF-C.txt", b"g"), ("GRF-C.parquet", b"g"), ("broken.zip", b"not a zip")],
                             tmp_path)
    text = " ".join(st.problems)
    assert not st.ok
    assert "broken.zip" in text and "not a readable zip" in text
    assert "only one of GRF-C.txt and GRF-C.parquet" in text
    assert "person-records.txt" in text and "race-and-ethnicity-codes.txt" in text


def _write_release(root: Path, t1_rows, sup_rows=(), t2_rows=()):
    for name, header, rows in (("t1", "REGION_ID|REGION_TYPE|ITERATION_CODE|COUNT", t1_rows),
                               ("suppressed", "REGION_ID|REGION_TYPE|ITERATION_CODE", sup_rows),
                               ("t2", "REGION_ID|REGION_TYPE|ITERATION_CODE|AGESTART|AGEEND|SEX|COUNT", t2_rows)):
        (root / name).mkdir(parents=True)
        (root / name / "part.csv").write_text("\n".join([header, *rows]) + "\n")


def test_release_beside_truth_and_filters(tmp_path):
    _write_release(tmp_path / "rel", ["1|USA|A|12", "06|STATE|B|-2"], ["06001|COUNTY|A"],
                   ["1|USA|A|0|17|1|5"])
    _write_release(tmp_path / "tru", ["1|USA|A|10", "06|STATE|B|0", "06001|COUNTY|A|1"], [],
                   ["1|USA|A|0|17|1|4"])
    r, t = files.read_release(tmp_path / "rel"), files.read_release(tmp_path / "tru")
    names = pd.DataFrame({"ITERATION_CODE": ["A", "B"], "ITERATION_NAME": ["Albanian alone", "Basque alone"],
                          "ITERATION_LEVEL": [2, 1]})
    t1 = files.t1_with_truth(r["t1"], t["t1"], r["suppressed"], names)
    assert list(t1["REGION_TYPE"]) == ["USA", "STATE", "COUNTY"]
    assert list(t1["ERROR"].astype("float").fillna(-99)) == [2, -2, -99]
    assert list(t1["SUPPRESSED"]) == [False, False, True]
    assert t1.loc[2, "TRUE"] == 1
    t2 = files.t2_with_truth(r["t2"], t["t2"], names)
    assert t2.loc[0, "ERROR"] == 1
    assert len(files.filter_results(t1, ["USA", "COUNTY"], [2], "")) == 2
    assert list(files.filter_results(t1, None, None, "basq")["ITERATION_CODE"]) == ["B"]
    assert files.filter_results(t1, ["USA"], [1], "").empty
    z = zipfile.ZipFile(io.BytesIO(files.zip_dir(tmp_path / "rel", ["t1", "suppressed"])))
    assert sorted(z.namelist()) == ["suppressed/part.csv", "t1/part.csv"]


def test_stat_level_counts_from_a_manifest():
    man = {"levels": {"(USA, 1)": {"groups": 10, "total_only": 1, "stat_level_0": 2, "stat_level_1": 3,
                                   "stat_level_2": 2, "stat_level_3": 2, "suppressed": 0,
                                   "suppression_threshold": None}}}
    df = files.stat_level_counts(man)
    assert df.loc[0, "Groups"] == 10 and df.loc[0, "sex × age4"] == 3


def test_charts_have_axis_titles_and_hover():
    cfg = production_2020()
    fig = charts.moe_vs_rho(planner.moe_rho_curve(9, 0.1), planner.level_points(cfg, planner.BOUND), "x")
    assert fig.layout.xaxis.title.text.startswith("level budget ρ")
    assert "persons" in fig.layout.yaxis.title.text
    assert all(tr.hovertemplate for tr in fig.data)
    dot = charts.flow_dot(cfg.updated(privacy_budget_p_stage_1_fraction=0.25))
    assert "γ = 0.25" in dot and "S = 9" in dot and dot.startswith("digraph")


@needs_sample
def test_runner_on_the_sample_data(tmp_path):
    from ui.safetab import runner

    # a plan naming production's CEF reader (as the 2020 plan does) runs the page's files as "csv"
    cfg = SafeTabConfig.read(SAMPLE / "params" / "config.json").updated(reader="cef")
    assert runner.reads_as_csv(cfg)
    seen = []
    out = runner.run_with_truth(SAMPLE / "params", SAMPLE / "data", cfg, tmp_path / "run", seed=3,
                                report=lambda text, f: seen.append(f))
    assert out.config.reader == "cef" and out.manifest["config"]["reader"] == "csv"
    assert out.manifest["config"] == cfg.updated(reader="csv").to_dict()
    assert out.seeded and out.manifest["mode"]["for_release"] is False
    assert seen[-1] == 1.0 and seen == sorted(seen)
    assert out.manifest["confidential"]["persons"]["counted"] == 50_000
    rel = out.t1[~out.t1["SUPPRESSED"]]
    assert rel["RELEASED"].notna().all() and rel["TRUE"].notna().all()
    assert (rel["ERROR"] == rel["RELEASED"] - rel["TRUE"]).all()
    usa_total = out.t1[(out.t1["REGION_TYPE"] == "USA")]
    assert usa_total["ITERATION_NAME"].notna().all()
    assert len(out.t2) > 0
    assert json.loads(json.dumps(out.manifest, default=str))["mode"]["kind"] == "seeded release"


def test_stability_differences_name_the_levels_whose_S_is_not_the_planners():
    man = {"levels": {"(COUNTY, 2)": {"groups": 5, "stability_S": 9},
                      "(TRACT, 2)": {"groups": 3, "stability_S": 11}}}
    assert files.stability_differences(man, 9) == {"(TRACT, 2)": 11}
    assert files.stability_differences(man, 11) == {"(COUNTY, 2)": 9}


TOY = Path(__file__).resolve().parents[3].parent / "shared" / "reference" / "safetab-p-toy"


@pytest.mark.skipif(not TOY.is_dir(), reason="../shared/reference is not there")
def test_the_toy_spec_has_the_planners_stability_as_in_production(tmp_path):
    # The toy maps code 1020 to two level-2 alone iterations, one DETAILED_ONLY and one
    # COARSE_ONLY; counted per tabulation class (production) that is h_r = 1: S = 9.
    from engine.run import run

    run(TOY / "params", TOY / "data", tmp_path / "out", seed=1)
    man = json.loads((tmp_path / "out" / "manifest.json").read_text())
    cfg = SafeTabConfig.read(TOY / "params" / "config.json")
    assert planner.stability_of(cfg) == 9
    assert files.stability_differences(man, planner.stability_of(cfg)) == {}
    assert files.stability_differences(man, 18) == {k: 9 for k in man["levels"]}


def _inputs_zip(person_records: bytes, compression=zipfile.ZIP_DEFLATED, extra: dict | None = None) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression) as zf:
        for n in files.SPEC_NAMES:
            zf.writestr(n, b"h\n")
        zf.writestr("GRF-C.txt", b"g\n")
        zf.writestr("person-records.txt", person_records)
        for name, data in (extra or {}).items():
            zf.writestr(name, data)
    return buf.getvalue()


def test_a_zip_bomb_is_refused_without_unpacking_it(tmp_path, monkeypatch):
    import tracemalloc

    bomb = _inputs_zip(b"0" * (64 * 1024**2))  # 64 MB of zeros in about 64 kB
    assert len(bomb) < 200_000
    tracemalloc.start()
    st = files.stage_uploads([("inputs.zip", bomb)], tmp_path)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert any("compressed more than 200:1" in p for p in st.problems), st.problems
    assert not (st.data_dir / "person-records.txt").exists()
    assert peak < 16 * 1024**2  # nothing was inflated into memory


def test_unpacked_bytes_are_bounded_and_streamed(tmp_path, monkeypatch):
    monkeypatch.setattr(files, "MAX_UNZIPPED", 3 * 1024**2)
    rng_bytes = bytes(range(256)) * (4 * 1024**2 // 256)  # 4 MB that barely compress
    st = files.stage_uploads([("inputs.zip", _inputs_zip(rng_bytes, zipfile.ZIP_STORED))], tmp_path)
    assert any("unpack to more than" in p for p in st.problems), st.problems
    monkeypatch.setattr(files, "MAX_MEMBERS", 5)
    st = files.stage_uploads([("many.zip", _inputs_zip(b"p\n"))], tmp_path / "b")
    assert any("holds 6 files; at most 5 are unpacked" in p for p in st.problems), st.problems


def test_only_recognised_members_are_unpacked(tmp_path):
    st = files.stage_uploads([("inputs.zip", _inputs_zip(b"p\n", extra={"big.bin": b"\0" * (8 * 1024**2)}))],
                             tmp_path)
    assert st.ok and st.ignored == ["big.bin"]
    assert not list(tmp_path.rglob("big.bin"))


def test_release_downloads_are_marked_and_never_carry_the_operator_file(tmp_path):
    from engine.release.outputs import operator_path
    from engine.run import run

    needs = SAMPLE / "data" / "person-records.txt"
    if not needs.is_file():
        pytest.skip("sample_data/ is not there")
    seeded = run(SAMPLE / "params", SAMPLE / "data", tmp_path / "seeded", seed=1).out_dir
    assert files.download_name("t1", seeded, "zip") == "t1-NOT-FOR-RELEASE.zip"
    z = zipfile.ZipFile(io.BytesIO(files.release_zip(seeded, ["t1", "suppressed"])))
    names = set(z.namelist())
    assert {"manifest.json", "NOT-FOR-RELEASE.txt", "t1/NOT-FOR-RELEASE.txt", "t1/headers.csv"} <= names
    assert not any(n.startswith("t2/") for n in names) and "SHA256SUMS" not in names
    assert "confidential" not in json.loads(z.read("manifest.json"))
    whole = zipfile.ZipFile(io.BytesIO(files.release_zip(seeded)))
    assert "SHA256SUMS" in whole.namelist() and operator_path(seeded).is_file()
    assert not any("CONFIDENTIAL" in n for n in whole.namelist())
    assert files.for_release(seeded) is False
    assert json.loads(files.operator_file(seeded))["confidential"]["persons"]["counted"] == 50_000


def test_a_session_keeps_one_set_of_uploads(tmp_path):
    """Issue 21 item 4: each new set of uploads replaces the session's earlier one on disk."""
    work = tmp_path / "session"
    work.mkdir()
    (work / "run-1").mkdir()  # a release of the session stays
    first = files.stage_session_upload([("GRF-C.txt", b"g" * 1000), ("person-records.txt", b"p")], work)
    assert first.params_dir.parent.parent == work and (first.data_dir / "GRF-C.txt").stat().st_size == 1000
    second = files.stage_session_upload([("GRF-C.txt", b"h"), ("person-records.txt", b"q")], work)
    uploads = sorted(p.name for p in work.iterdir() if p.name.startswith(files.UPLOAD_PREFIX))
    assert uploads == [second.params_dir.parent.name] and not first.data_dir.exists()
    assert (second.data_dir / "GRF-C.txt").read_bytes() == b"h"
    assert files.clear_uploads(work) == [second.params_dir.parent]
    assert sorted(p.name for p in work.iterdir()) == ["run-1"]
