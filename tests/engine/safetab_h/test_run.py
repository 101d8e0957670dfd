"""SafeTab-H end to end on hand-made households and a T1 that forces every table level:
cell by cell against a hand count (no noise), rows per group, pruning, the output check,
the command line, and the noise's variance against sigma^2."""

from __future__ import annotations

import json
import shutil
from fractions import Fraction

import numpy as np
import pytest

from calculators import discrete_gaussian
from calculators.safetab_h import published_cells
from engine.cli import main
from engine.noise import RandomSource
from engine.release.check import OutputInvalid
from engine.safetab_h import check
from engine.safetab_h.run import make_noise, prepare, run
from engine.safetab_h.tabulate import tabulate_query
from tests.engine.conftest import REFERENCE, read_part_files
from tests.engine.safetab_h.conftest import HDataset

# Hand counts of the nine households of county 01001 (conftest.TYPES_TENURES):
# types 1: 2, 2: 1, 3: 2, 4: 3, 5: 1; tenures 1: 2, 2: 2, 3: 3, 4: 2.
T3_BY_LEVEL = {
    0: {0: 9},
    1: {0: 9, 1: 5, 6: 4},
    2: {0: 9, 1: 5, 2: 2, 3: 3, 6: 4, 7: 3, 8: 1},
    3: {0: 9, 1: 5, 2: 2, 3: 3, 4: 1, 5: 2, 6: 4, 7: 3, 8: 1},
}
T4_BY_LEVEL = {0: {0: 9}, 1: {0: 9, 1: 2, 2: 2, 3: 5}}
#: The T1 groups tabulated and their (T3 level, T4 level), from conftest.T1_ROWS.
EXPECTED_LEVELS = {
    ("1", "USA", "2001"): (0, 0), ("1", "USA", "2002"): (1, 1), ("01", "STATE", "3001"): (2, 1),
    ("01", "STATE", "4021"): (3, 1), ("01001", "COUNTY", "2001"): (3, 1), ("01001", "COUNTY", "3002"): (0, 0),
}


@pytest.fixture(scope="module")
def truth_out(tmp_path_factory):
    ds = HDataset(tmp_path_factory.mktemp("h") / "in").write()
    out = ds.root.parent / "truth"
    res = run(ds.params, ds.data, out, truth=True)
    return ds, out, res.manifest


def _folder_rows(out, table: str, folder: str) -> dict:
    df = read_part_files(out / table / folder)
    rows: dict = {}
    col = "T3_DATA_CELL" if table == "t3" else "T4_DATA_CELL"
    for r in df.itertuples(index=False):
        d = r._asdict()
        rows.setdefault((d["REGION_ID"], d["REGION_TYPE"], d["ITERATION_CODE"]), {})[int(d[col])] = int(d["COUNT"])
    return rows


def test_every_cell_equals_the_hand_count(truth_out):
    _ds, out, _m = truth_out
    for table, names, expected in (("t3", ["T03001", "T03002", "T03003", "T03004"], T3_BY_LEVEL),
                                   ("t4", ["T04001", "T04002"], T4_BY_LEVEL)):
        found = {}
        for level, name in enumerate(names):
            for group, cells in _folder_rows(out, table, name).items():
                found[group] = (level, cells)
        assert set(found) == set(EXPECTED_LEVELS), table
        for group, (t3_level, t4_level) in EXPECTED_LEVELS.items():
            level = t3_level if table == "t3" else t4_level
            assert found[group] == (level, expected[level]), (table, group)


def test_rows_per_group_are_1_3_7_9_and_1_4(truth_out):
    _ds, out, _m = truth_out
    for table, names, rows in (("t3", ["T03001", "T03002", "T03003", "T03004"], [1, 3, 7, 9]),
                               ("t4", ["T04001", "T04002"], [1, 4])):
        for level, (name, n) in enumerate(zip(names, rows)):
            assert len(published_cells(table, level)) == n
            for cells in _folder_rows(out, table, name).values():
                assert len(cells) == n


def test_pruned_and_dropped_t1_rows_are_counted_and_absent(truth_out):
    _ds, out, man = truth_out
    g = man["groups"]
    assert g["tabulated"] == 6 and g["t1_rows_read"] == 11
    nt = g["t1_rows_not_tabulated"]
    assert nt["outside_the_runs_states"] == 1
    assert nt["unknown_iteration"] == 1 and nt["level_0"] == 1
    assert nt["pruned_detailed_only"] == 1 and nt["pruned_coarse_only"] == 1
    text = "".join(p.read_text() for p in out.rglob("*.csv"))
    for code in ("3011", "3021", "1001", "9999"):
        assert f"|{code}|" not in text


def test_the_truth_is_not_for_release_and_passes_the_output_check(truth_out):
    ds, out, man = truth_out
    assert man["mode"]["for_release"] is False and (out / "NOT-FOR-RELEASE.txt").is_file()
    summary = check.check_output(ds.params, out)
    assert summary.groups == 2 * 6 and summary.files_verified > 0


def test_the_output_check_finds_a_changed_count_and_a_missing_cell(truth_out, tmp_path):
    ds, out, _m = truth_out
    copy = tmp_path / "copy"
    shutil.copytree(out, copy)
    part = copy / "t3" / "T03004" / "STATE-2.csv"
    lines = part.read_text().splitlines(keepends=True)
    part.write_text("".join(lines[:-1]))  # a group loses a cell
    with pytest.raises(OutputInvalid) as exc:
        check.check_output(ds.params, copy)
    report = exc.value.report()
    assert "other contents than SHA256SUMS lists" in report
    assert "each of the 9 cells of T3 level 3 once (found 8 rows)" in report


def test_a_group_with_no_budget_gets_no_table(hdata, tmp_path):
    hdata.config["privacy_budget_h_t3_level_1_usa"] = 0
    hdata.write()
    res = run(hdata.params, hdata.data, tmp_path / "o", truth=True)
    groups = set()
    for name in ("T03001", "T03002", "T03003", "T03004"):
        groups |= set(_folder_rows(tmp_path / "o", "t3", name))
    assert ("1", "USA", "2001") not in groups and ("1", "USA", "3001") not in groups
    assert ("01", "STATE", "3001") in groups
    assert "privacy_budget_h_t3_level_1_usa" not in res.manifest["queries"]
    assert "privacy_budget_h_t4_level_1_usa" in res.manifest["queries"]


def test_clamping_before_the_sums_when_negatives_are_not_allowed(truth_out):
    ds, _out, _m = truth_out
    prep = prepare(ds.params, ds.data)
    state2 = next(g for g in prep.groups if g.level.geo == "STATE" and g.level.iteration_level == 2)

    def minus_five(scale, size):  # every direct cell's noise is -5
        return np.full(size, -5, np.int64)

    res = tabulate_query(state2, "t3", (10, 20, 30), Fraction(1), "zcdp", minus_five, allow_negative=False)
    lvl3 = res.by_level[3]
    assert (lvl3["direct"] == np.maximum(lvl3["direct_true"] - 5, 0)).all()
    cells = dict(zip(lvl3["cells"], lvl3["published"][0]))
    # direct 2: 2, 4: 1, 5: 2, 7: 3, 8: 1, all clamped to 0, so every sum is 0
    assert cells == {c: 0 for c in (0, 1, 2, 3, 4, 5, 6, 7, 8)}
    res = tabulate_query(state2, "t3", (10, 20, 30), Fraction(1), "zcdp", minus_five, allow_negative=True)
    cells = dict(zip(res.by_level[3]["cells"], res.by_level[3]["published"][0]))
    assert cells[0] == 9 - 5 * 5 and cells[3] == 3 - 2 * 5 and cells[8] == 1 - 5


def test_noise_variance_of_a_cell_is_sigma2(truth_out):
    """Over seeded draws, the error of each direct cell has the discrete Gaussian's
    variance at sigma^2 = S / (2 rho) = 9 / (2 * 0.5) = 9 (r = 8)."""
    ds, _out, _m = truth_out
    prep = prepare(ds.params, ds.data)
    state2 = next(g for g in prep.groups if g.level.geo == "STATE" and g.level.iteration_level == 2)
    assert state2.stability == 9
    noise = make_noise("zcdp", RandomSource.seeded(2026))
    errors = []
    for _ in range(3000):
        res = tabulate_query(state2, "t3", (10, 20, 30), Fraction(1, 2), "zcdp", noise, allow_negative=True)
        part = res.by_level[3]
        errors.append((part["direct"] - part["direct_true"]).ravel())
    err = np.concatenate(errors)  # 3000 draws x (5 + 5) cells
    var = float(discrete_gaussian.variance(9.0))
    assert res.scale == Fraction(9)
    # the sample variance of n draws has sd sigma^2 sqrt(2 / n) (about 0.09 here): 5 sd
    assert abs(err.var() - var) < 5 * var * np.sqrt(2 / len(err))
    assert abs(err.mean()) < 5 * np.sqrt(var / len(err))


def test_command_line_safetab_h_check_output_and_validate(hdata, tmp_path, capsys):
    hdata.write()
    out = tmp_path / "rel"
    assert main(["safetab-h", str(hdata.params), str(hdata.data), str(out), "--seed", "1", "--quiet"]) == 0
    assert "6 population groups" in capsys.readouterr().out
    assert main(["check-output", str(hdata.params), str(out)]) == 0
    assert "SafeTab-H output" in capsys.readouterr().out
    assert main(["validate", str(hdata.params), str(hdata.data), "--quiet"]) == 0
    # 9 + 1 households in state 01; the one of state 02 is not read (not in the run)
    assert "OK (SafeTab-H): 10 households in the runs" in capsys.readouterr().out
    man = json.loads((out / "manifest.json").read_text())
    assert man["mode"]["kind"] == "seeded release"
    assert man["privacy"]["protected_unit"] == "one household"
    # 40 budgets of 1.0, the 24 of the US run spent: rho 24 per household
    assert man["privacy"]["us"]["value"] == 24.0


def test_t1_from_a_release_folder(hdata, tmp_path):
    hdata.write()
    rel = tmp_path / "p-release" / "t1"
    rel.mkdir(parents=True)
    (rel / "headers.csv").write_text("REGION_ID|REGION_TYPE|ITERATION_CODE|COUNT\n")
    rows = (hdata.data / "pop-group-totals.txt").read_text().splitlines(keepends=True)
    (rel / "USA-1.csv").write_text(rows[0] + "".join(r for r in rows[1:] if "|USA|" in r))
    (rel / "STATE-2.csv").write_text(rows[0] + "".join(r for r in rows[1:] if "|STATE|" in r))
    res = run(hdata.params, hdata.data, tmp_path / "o", t1=tmp_path / "p-release", truth=True)
    assert res.manifest["groups"]["tabulated"] == 4  # USA 2001, 2002; STATE 3001, 4021


TOY = REFERENCE / "safetab-h-toy"


@pytest.mark.skipif(not TOY.is_dir(), reason="the released toy inputs are not available")
@pytest.mark.parametrize("params", ["params-zcdp", "params-puredp"])
def test_the_toy_with_huge_budgets_equals_its_ground_truth(params, tmp_path):
    cfg = json.loads((TOY / params / "config.json").read_text())
    for k in cfg:
        if k.startswith("privacy_budget_h_"):
            cfg[k] = 1e6 if cfg[k] > 0 else 0
    # thresholds low enough that the toy's T1 counts reach every level
    cfg["thresholds_h_t3"] = {k: [-40, 0, 5] for k in cfg["thresholds_h_t3"]}
    cfg["thresholds_h_t4"] = {k: [1] for k in cfg["thresholds_h_t4"]}
    params_dir = tmp_path / "params"
    shutil.copytree(TOY / params, params_dir)
    (params_dir / "config.json").write_text(json.dumps(cfg))
    noisy = run(params_dir, TOY / "data", tmp_path / "noisy", seed=7)
    truth = run(params_dir, TOY / "data", tmp_path / "truth", truth=True)
    files = sorted(p.relative_to(tmp_path / "truth") for p in (tmp_path / "truth").rglob("*.csv"))
    assert files == sorted(p.relative_to(tmp_path / "noisy") for p in (tmp_path / "noisy").rglob("*.csv"))
    assert len(files) > 10
    for rel in files:
        assert (tmp_path / "noisy" / rel).read_bytes() == (tmp_path / "truth" / rel).read_bytes(), rel
    rows = truth.manifest["outputs"]["rows"]
    assert all(rows[k] > 0 for k in rows)  # every table level occurs
    # the toy's households, counted by hand: 4 of its 6 are in the states 01, 02, 11
    usa = read_part_files(tmp_path / "truth" / "t3" / "T03001")
    assert usa.empty or usa["COUNT"].astype(int).max() <= 4


def test_parquet_inputs_give_the_same_tables(hdata, tmp_path):
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    hdata.write()
    text = run(hdata.params, hdata.data, tmp_path / "txt", truth=True)
    for stem in ("household-records", "pop-group-totals"):
        src = hdata.data / f"{stem}.txt"
        names = src.read_text().splitlines()[0].split("|")
        table = pacsv.read_csv(src, parse_options=pacsv.ParseOptions(delimiter="|"),
                               convert_options=pacsv.ConvertOptions(column_types={c: "string" for c in names}))
        pq.write_table(table, hdata.data / f"{stem}.parquet")
        src.unlink()
    par = run(hdata.params, hdata.data, tmp_path / "pq", truth=True)
    assert par.manifest["outputs"] == text.manifest["outputs"]
    for p in (tmp_path / "txt").rglob("*.csv"):
        assert p.read_bytes() == (tmp_path / "pq" / p.relative_to(tmp_path / "txt")).read_bytes()


def test_run_households_chains_safetab_p_then_safetab_h_on_its_t1(hdata, tmp_path, capsys):
    from tests.engine.conftest import base_config, person

    hdata.config, h_config = base_config(run_pr=False, state_filter_us=["01"]), hdata.config
    hdata.persons = [person(block=hdata.blocks[i % 2], races=("1010",), eth="2010") for i in range(40)]
    hdata.write()
    (hdata.data / "person-records.txt").write_text(
        "QAGE|QSEX|HOUSEHOLDER|TABBLKST|TABBLKCOU|TABTRACTCE|TABBLK|CENRACE|QRACE1|QRACE2|QRACE3|QRACE4|QRACE5|"
        "QRACE6|QRACE7|QRACE8|QSPAN\n" + "".join("|".join(p) + "\n" for p in hdata.persons))
    hdata.config = h_config
    (tmp_path / "h.json").write_text(json.dumps(h_config))
    out = tmp_path / "rel"
    assert main(["run", str(hdata.params), str(hdata.data), str(out), "--seed", "3", "--quiet",
                 "--households", str(tmp_path / "h.json")]) == 0
    said = capsys.readouterr().out
    assert f"Wrote {out}-safetab-h:" in said
    h_man = json.loads((tmp_path / "rel-safetab-h" / "manifest.json").read_text())
    t1_rows = sum(len(p.read_text().splitlines()) - 1 for p in (out / "t1").glob("*.csv") if p.name != "headers.csv")
    # every T1 row of SafeTab-P's release (state 01 only) is a SafeTab-H group, or pruned
    assert h_man["groups"]["t1_rows_read"] == t1_rows
    assert h_man["groups"]["tabulated"] > 0
    assert main(["check-output", str(tmp_path / "h.json"), str(tmp_path / "rel-safetab-h")]) == 0
