"""The Decennial Tabulation System's suppression (SafeTab-P paper, Section 5.3.4):
`run --tabulation-suppression`, applied after the release is computed."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from engine.inputs.specs import load_specs
from engine.release.check import check_output
from engine.run import NO_PAIRS_NOTE, run
from engine.tabulation.postprocess import (
    ALONE_EXCEEDS_AOIC, NONNEGATIVITY, GroupRows, TabulationSuppression, alone_pairs,
)
from tests.engine.conftest import BLOCKS, RACE_ITERATIONS, REFERENCE, cli_help, person, read_part_files

REPO = Path(__file__).resolve().parents[3]


def _rows(t1, released, codes, tables=None) -> GroupRows:
    """Groups of one region ("01") per code, in code order."""
    n = len(t1)
    return GroupRows("STATE-2", "STATE", 2, np.array(["01"], object), np.array(codes, object),
                     np.zeros(n, np.int64), np.arange(n, dtype=np.int64), np.array(t1, np.int64),
                     np.array(released, bool), np.zeros(n, np.int8), None, tables or {})


def _its(rows) -> dict:
    from engine.inputs.specs import Iteration

    return {c: Iteration(c, n, int(lv), "RACE", a == "True", False, False) for c, n, lv, a, *_ in rows}


def test_pairs_are_read_from_the_iteration_names_and_flags(dataset):
    dataset.write()
    pairs = alone_pairs(load_specs(dataset.params).iterations)
    assert pairs == {"1001": "1002", "2001": "2002", "3001": "3002", "3011": "3012", "3021": "3022",
                     "2101": "2102", "3101": "3102"}
    # a name without its partner, or a partner at another LEVEL, makes no pair
    rows = [r for r in RACE_ITERATIONS if r[0] != "3002"]
    rows = [(c, n, "1" if c == "3012" else lv, a) for c, n, lv, a, *_ in rows]
    pairs = alone_pairs(_its(rows))
    assert "3001" not in pairs and "3011" not in pairs and pairs["3101"] == "3102"
    # level 0's AOIC is named "... alone or in combination with one or more other races"
    assert alone_pairs(_its([("1", "White alone", "0", "True"),
                             ("2", "White alone or in combination with one or more other races", "0", "False")])) \
        == {"1": "2"}


@pytest.mark.skipif(not (REFERENCE / "safetab-p-2020").is_dir(), reason="the 2020 reference files are absent")
def test_every_alone_iteration_of_2020_and_of_the_sample_has_its_partner():
    import csv

    for folder, n in ((REFERENCE / "safetab-p-2020", 1508), (REPO / "sample_data" / "params", 298)):
        rows = list(csv.reader(open(folder / "race-characteristic-iterations.txt"), delimiter="|"))[1:]
        rows = [r for r in rows if r]
        its = _its(rows)
        pairs = alone_pairs(its)
        assert len(pairs) == n == sum(r[3] == "True" for r in rows)
        assert its[pairs["1001"]].name.startswith("White alone or in combination")
    assert alone_pairs({}) == {}


def test_both_rules_on_hand_made_groups():
    """Codes A1/C1 (pair), A2/C2, A3/C3, A4/C4, A5/C5. A1 > C1: removed; A2 = C2: kept;
    A3 > C3 but C3 suppressed: kept; A4 > C4 but C4 negative: C4 removed (nonnegativity),
    A4 kept; C5 has a negative table cell: removed, A5 kept."""
    codes = ["A1", "C1", "A2", "C2", "A3", "C3", "A4", "C4", "A5", "C5"]
    pairs = {"A1": "C1", "A2": "C2", "A3": "C3", "A4": "C4", "A5": "C5"}
    t1 = [9, 8, 5, 5, 7, 3, 2, -1, 1, 6]
    released = [True] * 10
    released[5] = False
    cells = np.array([[1, 2, 0, 0, 0, 0, 0, 1], [4, 1, 3, 0, 0, 0, -2, 0]])
    tables = {1: (np.array([0, 0]), np.array([8, 9]), cells, cells.reshape(2, 2, -1).sum(axis=2), None)}
    sup = TabulationSuppression(pairs)
    out, removed, rule = sup.apply(_rows(t1, released, codes, tables))
    got = {codes[i]: ("nonneg", "exceeds")[r] for i, r in zip(removed, rule)}
    assert got == {"A1": "exceeds", "C4": "nonneg", "C5": "nonneg"}
    assert out.released.tolist() == [False, True, True, True, True, False, True, False, True, False]
    # C5's table is gone with it, A5's stays
    assert out.tables[1][1].tolist() == [8]
    assert sup.counts == {"(STATE, 2)": {NONNEGATIVITY: 2, ALONE_EXCEEDS_AOIC: 1}}
    assert sup.totals() == {NONNEGATIVITY: 2, ALONE_EXCEEDS_AOIC: 1}
    # without pairs only non-negativity applies
    out, removed, _ = TabulationSuppression({}).apply(_rows(t1, released, codes, tables))
    assert sorted(codes[i] for i in removed) == ["C4", "C5"]


@pytest.fixture(scope="module")
def two_releases(tmp_path_factory):
    """The same seeded release without and with the rules: small budgets, so many counts
    are negative and many Alone totals exceed their AOIC's."""
    from tests.engine.conftest import Dataset, base_config

    root = tmp_path_factory.mktemp("tabsup")
    ds = Dataset(root / "in", config=base_config(**{k: 0.05 for k in base_config() if k.startswith("privacy_budget_p_level")}))
    races = [("1010",), ("1010", "1020"), ("1011",), ("1012", "1020"), ("1020",)]
    ds.persons = [person(age=5 + 7 * i % 80, sex=1 + i % 2, block=b, races=races[i % 5])
                  for i, b in enumerate(BLOCKS * 6)]
    ds.write()
    plain = run(ds.params, ds.data, root / "plain", seed=11)
    tab = run(ds.params, ds.data, root / "tab", seed=11, tabulation_suppression=True)
    return ds, plain, tab


def _read(out: Path, kind: str) -> pd.DataFrame:
    df = read_part_files(out / kind)
    return df[~df["REGION_ID"].isna()] if len(df) else df


def test_the_rules_remove_exactly_what_they_say_from_the_same_release(two_releases):
    """Recomputed here from the release without the rules: every group with a negative
    total or table cell, then every Alone group whose total exceeds its released AOIC's."""
    ds, plain, tab = two_releases
    t1 = _read(plain.out_dir, "t1")
    t2 = _read(plain.out_dir, "t2")
    key = ["REGION_TYPE", "REGION_ID", "ITERATION_CODE"]
    t1["COUNT"] = t1["COUNT"].astype(int)
    neg_cells = t2[t2["COUNT"].astype(int) < 0][key].drop_duplicates()
    neg = set(map(tuple, t1[t1["COUNT"] < 0][key].to_numpy())) | set(map(tuple, neg_cells.to_numpy()))
    pairs = alone_pairs(load_specs(ds.params).iterations)
    count = {tuple(r[:3]): r[3] for r in t1[key + ["COUNT"]].to_numpy()}
    exceeds = {k for k, v in count.items() if k not in neg and k[2] in pairs
               and (k[0], k[1], pairs[k[2]]) in count and (k[0], k[1], pairs[k[2]]) not in neg
               and v > count[(k[0], k[1], pairs[k[2]])]}
    assert neg and exceeds  # the data make both rules act
    listed = _read(tab.out_dir, "suppressed")
    reasons = pd.read_csv(tab.out_dir / "suppressed" / "tabulation-system.csv", sep="|", dtype=str)
    assert list(reasons.columns) == ["REGION_ID", "REGION_TYPE", "ITERATION_CODE", "REASON"]
    got = {(r.REGION_TYPE, r.REGION_ID, r.ITERATION_CODE): r.REASON for r in reasons.itertuples()}
    assert got == {**{k: NONNEGATIVITY for k in neg}, **{k: ALONE_EXCEEDS_AOIC for k in exceeds}}
    # the rest of the release is the same release
    t1_tab = _read(tab.out_dir, "t1")
    kept = t1[[tuple(k) not in got for k in t1[key].to_numpy()]]
    assert sorted(map(tuple, t1_tab[key + ["COUNT"]].astype(str).to_numpy())) == \
        sorted(map(tuple, kept[key + ["COUNT"]].astype(str).to_numpy()))
    t2_tab = _read(tab.out_dir, "t2")
    assert len(t2_tab) == sum(tuple(k) not in got for k in t2[key].to_numpy())
    # each removed group is listed once, in tabulation-system.csv only
    plain_sup = _read(plain.out_dir, "suppressed")
    assert len(listed) == len(plain_sup) + len(got)
    # the manifest's counts are computed, and agree with the file
    m = json.loads((tab.out_dir / "manifest.json").read_text())["postprocessing"]["tabulation_suppression"]
    assert m["groups_removed"] == {NONNEGATIVITY: len(neg), ALONE_EXCEEDS_AOIC: len(exceeds)}
    assert sum(v[NONNEGATIVITY] for v in m["by_level"].values()) == len(neg)
    assert "Lemma 4" in m["note"] and m["pairs"] == 7 and "pairs_note" not in m
    assert json.loads((plain.out_dir / "manifest.json").read_text())["postprocessing"]["tabulation_suppression"] \
        is False


def test_check_output_accepts_the_release_and_refuses_a_bad_reason(two_releases, tmp_path):
    import shutil

    ds, _plain, tab = two_releases
    summary = check_output(ds.params, tab.out_dir, ds.data)
    assert summary.groups > 0
    bad = tmp_path / "bad"
    shutil.copytree(tab.out_dir, bad)
    f = bad / "suppressed" / "tabulation-system.csv"
    f.write_text(f.read_text().replace(f"|{NONNEGATIVITY}\n", "|too small\n", 1))
    from engine.release.check import OutputInvalid

    with pytest.raises(OutputInvalid) as info:
        check_output(ds.params, bad, ds.data)
    assert "REASON" in info.value.report() and "too small" in info.value.report()


def test_a_spec_without_pairs_says_so(dataset, tmp_path, capsys):
    """Names that pair nothing: the run says the second rule removes nothing, in the
    manifest and on the command line (its main, in this process)."""
    from engine.cli import main

    dataset.persons = [person(block=b) for b in dataset.blocks for _ in range(2)]
    dataset.race_iterations = [(c, n.replace(" or in any combination", " or in any mixture"), lv, a, d, co)
                               for c, n, lv, a, d, co in dataset.race_iterations]
    dataset.write()
    code = main(["run", str(dataset.params), str(dataset.data), str(tmp_path / "rel"), "--seed", "1", "--quiet",
                 "--tabulation-suppression"])
    out = capsys.readouterr()
    assert code == 0, out.err
    assert NO_PAIRS_NOTE in " ".join(out.out.split())
    m = json.loads((tmp_path / "rel" / "manifest.json").read_text())["postprocessing"]["tabulation_suppression"]
    assert m["pairs"] == 0 and m["pairs_note"] == NO_PAIRS_NOTE
    assert m["groups_removed"][ALONE_EXCEEDS_AOIC] == 0


def test_accuracy_reports_how_many_groups_each_rule_removed(two_releases, tmp_path):
    """Of an existing release: counted from its suppressed/tabulation-system.csv; of drawn
    trials: the same counts as `run` writes with the same seed (trial 0 is seed + 0)."""
    from engine.reports.accuracy import accuracy_report, format_report

    ds, plain, tab = two_releases
    reasons = pd.read_csv(tab.out_dir / "suppressed" / "tabulation-system.csv", sep="|", dtype=str)
    want = reasons["REASON"].value_counts().to_dict()
    df = accuracy_report(ds.params, ds.data, tmp_path / "acc", release_dir=tab.out_dir)
    got = json.loads((tmp_path / "acc" / "accuracy.json").read_text())["mode"]["tabulation_suppression"]
    assert {k: v for k, v in got["groups_removed"].items() if v} == want
    text = format_report(df)
    assert f"{want[NONNEGATIVITY]:,} groups removed by {NONNEGATIVITY}" in text
    # the plain release applied no rule: nothing to report
    df = accuracy_report(ds.params, ds.data, tmp_path / "acc0", release_dir=plain.out_dir)
    assert "tabulation_suppression" not in json.loads((tmp_path / "acc0" / "accuracy.json").read_text())["mode"]
    assert "Tabulation System" not in format_report(df)
    # drawn trials with the rules: two trials, seeds 11 and 12; the first is the release above
    df = accuracy_report(ds.params, ds.data, tmp_path / "acc2", trials=2, seed=11, tabulation_suppression=True)
    got = json.loads((tmp_path / "acc2" / "accuracy.json").read_text())["mode"]["tabulation_suppression"]
    second = run(ds.params, ds.data, tmp_path / "rel12", seed=12, tabulation_suppression=True).manifest
    removed12 = second["postprocessing"]["tabulation_suppression"]["groups_removed"]
    assert got["trials"] == 2
    assert got["groups_removed"] == {r: want.get(r, 0) + removed12[r] for r in (NONNEGATIVITY, ALONE_EXCEEDS_AOIC)}
    with pytest.raises(ValueError, match="--release"):
        accuracy_report(ds.params, ds.data, tmp_path / "acc3", release_dir=tab.out_dir, tabulation_suppression=True)


def test_run_help_says_which_output_matches_the_released_code():
    out = cli_help("run")
    flat = " ".join(out.split())
    assert "it is --no-coterminous output that matches that code's output" in flat
    assert "DAS_2020_DDHCA_Production_Code" in flat and "Section 5.3.3" in flat
    assert "--tabulation-suppression" in flat and "Lemma 4" in flat and "suppressed/tabulation-system.csv" in flat
