"""Accuracy reports in production's layouts (safetab_p/accuracy_report.py): the per-group
error report and the multi-run report, by hand on small tables and end to end."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from engine.cli import main
from engine.errors import InputError
from engine.reports import production as prod
from engine.run import prepare, run
from tests.engine.conftest import BLOCKS, person

KEY = ["REGION_ID", "REGION_TYPE", "ITERATION_CODE"]
FLAGS = pd.DataFrame([["5001", "False", "False", "2"], ["5002", "True", "False", "2"], ["6001", "False", "True", "1"]],
                     columns=["ITERATION_CODE", "DETAILED_ONLY", "COARSE_ONLY", "LEVEL"])
AGE4 = [("0", "17"), ("18", "44"), ("45", "64"), ("65", "115")]


def _t1(rows):
    return pd.DataFrame(rows, columns=KEY + ["NOISY", "GROUND_TRUTH"])


def _t2(rows):
    return pd.DataFrame(rows, columns=KEY + ["AGESTART", "AGEEND", "SEX", "NOISY", "GROUND_TRUTH"])


def _age4_table(region, kind, code, noisy, truth):
    """8 cells (sex 1 then 2, ages ascending) plus the two sex marginals, as the engine writes."""
    rows = [[region, kind, code, a, e, str(s), n, t]
            for (s, (a, e)), n, t in zip([(s, x) for s in (1, 2) for x in AGE4], noisy, truth)]
    for s in (1, 2):
        rows.append([region, kind, code, "*", "*", str(s), sum(noisy[4 * (s - 1):4 * s]), sum(truth[4 * (s - 1):4 * s])])
    return rows


# One release by hand:
#  - COUNTY 01001 / 5001 has a sex x age4 table: cells noisy 3,0,2,5 | 1,1,0,4 vs truth 2,0,2,3 | 1,0,0,5
#    errors 1,0,0,2,0,1,0,1 -> size 13, |error| 5, squared 7; its T1 (12+... ) is dropped
#  - COUNTY 01001 / 5002 is a total: noisy 7, truth 4 -> 3, 9
#  - STATE 01 / 6001 is a total: noisy -2, truth 0 -> 2, 4
CELLS_N, CELLS_T = [3, 0, 2, 5, 1, 1, 0, 4], [2, 0, 2, 3, 1, 0, 0, 5]
ONE_T1 = _t1([["01001", "COUNTY", "5001", sum(CELLS_N), sum(CELLS_T)], ["01001", "COUNTY", "5002", 7, 4],
              ["01", "STATE", "6001", -2, 0]])
ONE_T2 = _t2(_age4_table("01001", "COUNTY", "5001", CELLS_N, CELLS_T))


def test_error_report_by_hand():
    rep = prod.error_report_from(ONE_T1, ONE_T2, FLAGS)
    assert list(rep.columns) == prod.ERROR_REPORT_COLUMNS
    expected = pd.DataFrame([
        ["01", "STATE", "6001", "False", "True", 0, "Total", 2, 4],
        ["01001", "COUNTY", "5001", "False", "False", 13, "Sex x Age(4)", 5, 7],
        ["01001", "COUNTY", "5002", "True", "False", 4, "Total", 3, 9],
    ], columns=prod.ERROR_REPORT_COLUMNS)
    pd.testing.assert_frame_equal(rep, expected, check_dtype=False)


def test_multi_run_report_by_hand():
    # Trial 2: 5001 got a total only (noisy 10, truth 13), 5002 a total (noisy 4, truth 4),
    # 6001 a total (noisy 1, truth 0).
    two = (_t1([["01001", "COUNTY", "5001", 10, 13], ["01001", "COUNTY", "5002", 4, 4],
                ["01", "STATE", "6001", 1, 0]]), _t2([]))
    rep = prod.multi_run_error_report_from([(ONE_T1, ONE_T2), two], FLAGS)
    assert list(rep.columns) == prod.MULTI_RUN_COLUMNS
    rows = {tuple(r[:4]): r[4:] for r in rep.itertuples(index=False)}
    # sizes: 13 (5001, both trials) -> "(10.0, 100.0]"; 4 (5002) -> "(1.0, 10.0]"; 0 (6001) -> "[0.0, 1.0]"
    assert list(rows) == [("COUNTY", "2", "False", "(10.0, 100.0]"), ("COUNTY", "2", "True", "(1.0, 10.0]"),
                          ("STATE", "1", "False", "[0.0, 1.0]")]
    # 5001: trial 1 sex x age4 (cell errors 1,0,0,2,0,1,0,1), trial 2 total (error 3)
    cell_moe = np.quantile([1, 0, 0, 2, 0, 1, 0, 1], 0.95)  # 1.65
    assert rows[("COUNTY", "2", "False", "(10.0, 100.0]")] == (
        "0.50", "3.00", "0.50", f"{cell_moe:.2f}", "0.00", "nan", "0.00", "nan")
    # 5002: errors 3 and 0 over two totals -> 95th percentile 2.85
    assert rows[("COUNTY", "2", "True", "(1.0, 10.0]")][:2] == ("1.00", "2.85")
    assert rows[("STATE", "1", "False", "[0.0, 1.0]")][:2] == ("1.00", "1.95")


def test_small_proportions_use_the_exponent_format():
    # 1 of 200 (group, trial) pairs got a table: 5.00E-03, as production formats it
    t1 = _t1([["01001", "COUNTY", f"{i}", 0, 0] for i in range(199)])
    flags = pd.DataFrame({"ITERATION_CODE": [f"{i}" for i in range(200)], "DETAILED_ONLY": "False",
                          "COARSE_ONLY": "False", "LEVEL": "2"})
    t2 = _t2(_age4_table("01001", "COUNTY", "199", [0] * 8, [0] * 8))
    t1 = pd.concat([t1, _t1([["01001", "COUNTY", "199", 0, 0]])], ignore_index=True)
    rep = prod.multi_run_error_report_from([(t1, t2)], flags)
    assert rep.iloc[0][prod.FREQ + "Sex x Age(4)"] == "5.00E-03"
    assert rep.iloc[0][prod.FREQ + "Total"] == "0.99"


@pytest.mark.parametrize("largest,labels", [
    (0, ["[0.0, 1.0]"]), (1, ["[0.0, 1.0]"]), (10, ["[0.0, 1.0]", "(1.0, 10.0]"]),
    (11, ["[0.0, 1.0]", "(1.0, 10.0]", "(10.0, 100.0]"]),
    (12345, ["[0.0, 1.0]", "(1.0, 10.0]", "(10.0, 100.0]", "(100.0, 1000.0]", "(1000.0, 10000.0]",
             "(10000.0, 100000.0]"]),
])
def test_size_bins_are_powers_of_ten(largest, labels):
    assert prod._size_bins(largest)[0] == labels


# ------------------------------------------------------------------ on engine releases
def _dataset(dataset):
    dataset.persons = ([person(age=a, sex=1 + a % 2) for a in range(0, 90, 3)]
                       + [person(age=40, races=("1020",), block=BLOCKS[4]) for _ in range(12)]
                       + [person(age=70, sex=2, races=("1010", "1020"), block=BLOCKS[7]) for _ in range(5)])
    dataset.config["thresholds_p"] = {k: [2, 6, 25] for k in dataset.config["thresholds_p"]}
    return dataset.write()


def test_the_truth_of_every_row_is_the_truth_release(dataset, tmp_path):
    # With the largest budget the noise is 0: NOISY must equal GROUND_TRUTH on every row of
    # every level, whatever stat level each group got (the truth is computed per row).
    _dataset(dataset)
    data = dict(dataset.config)
    data.update({k: 1e6 for k in data if k.startswith("privacy_budget_p_level_")})
    dataset.config = data
    dataset.write()
    p = prepare(dataset.params, dataset.data)
    run(dataset.params, dataset.data, tmp_path / "rel", seed=3, prepared=p)
    t1, t2 = prod.augmented_tables(p, tmp_path / "rel")
    assert len(t1) and len(t2) and (t2["AGESTART"] == "*").any()
    assert (t1["NOISY"] == t1["GROUND_TRUTH"]).all() and (t2["NOISY"] == t2["GROUND_TRUTH"]).all()
    rep = prod.error_report(p, tmp_path / "rel")
    assert (rep["Total absolute error"] == 0).all() and set(rep["Workload selected"]) > {"Total"}
    # one row per released group; the sizes are the true totals
    assert len(rep) == len(t1)
    sizes = rep.merge(t1, on=KEY)
    assert (sizes["Population group size"] == sizes["GROUND_TRUTH"]).all()


def test_cli_writes_production_layouts_and_keeps_the_trials_only_when_asked(dataset, tmp_path, capsys):
    _dataset(dataset)
    out = tmp_path / "acc"
    assert main(["accuracy", str(dataset.params), str(dataset.data), str(out), "--trials", "2", "--seed", "5",
                 "--layout", "production", "--quiet"]) == 0
    assert "multi_run_error_report.csv (production layouts)" in capsys.readouterr().out
    assert sorted(p.name for p in out.iterdir()) == ["NOT-FOR-RELEASE.txt", "SHA256SUMS", "error_report.csv",
                                                     "multi_run_error_report.csv"]
    kept = tmp_path / "kept"
    assert main(["accuracy", str(dataset.params), str(dataset.data), str(kept), "--trials", "2", "--seed", "5",
                 "--layout", "production", "--keep-trials", "--quiet"]) == 0
    assert sorted(p.name for p in (kept / "single_runs").iterdir()) == ["trial_0", "trial_1"]
    # the reports computed in memory are the ones of the kept releases, byte for byte
    for name in (prod.ERROR_REPORT_FILE, prod.MULTI_RUN_FILE):
        assert (out / name).read_bytes() == (kept / name).read_bytes()
    single = pd.read_csv(out / "error_report.csv", dtype=str)
    assert list(single.columns) == prod.ERROR_REPORT_COLUMNS and len(single)
    multi = pd.read_csv(out / "multi_run_error_report.csv", dtype=str, keep_default_na=False)
    assert list(multi.columns) == prod.MULTI_RUN_COLUMNS
    # the proportions of each row sum to 1 (every (group, trial) pair got one workload)
    freq = multi[[c for c in multi.columns if c.startswith(prod.FREQ)]].astype(float).sum(axis=1)
    assert np.allclose(freq, 1, atol=0.02)
    p = prepare(dataset.params, dataset.data)
    trials = [kept / "single_runs" / f"trial_{i}" for i in range(2)]
    reference = prod.write_reports(p, trials, tmp_path / "reference")
    for name in (prod.ERROR_REPORT_FILE, prod.MULTI_RUN_FILE):
        assert (tmp_path / "reference" / name).read_bytes() == (out / name).read_bytes(), name
    assert len(reference[prod.ERROR_REPORT_FILE]) == len(single)
    # both layouts at once, from an existing release
    both = tmp_path / "both"
    assert main(["accuracy", str(dataset.params), str(dataset.data), str(both), "--release", str(trials[1]),
                 "--layout", "both", "--quiet"]) == 0
    assert {"accuracy.csv", "error_report.csv", "multi_run_error_report.csv"} <= {p.name for p in both.iterdir()}
    assert not (both / "single_runs").exists()


def test_in_memory_reports_equal_the_reports_of_the_written_releases(tmp_path):
    """On a generated nation with coterminous sets, many tables and suppression: the
    reports of the trials as tabulated equal production's reports read back from the
    same trials' releases, and the studio report equals the one of the release files."""
    from engine.reports.accuracy import accuracy_report
    from engine.synthetic.nation import generate

    s = generate(tmp_path / "n", 30_000, seed=2)
    p = prepare(s.params_dir, s.data_dir)
    accuracy_report(s.params_dir, s.data_dir, tmp_path / "mem", trials=3, seed=11, prepared=p, layout="both")
    kept = accuracy_report(s.params_dir, s.data_dir, tmp_path / "kept", trials=3, seed=11, prepared=p,
                           layout="both", keep_trials=True)
    for name in ("accuracy.csv", prod.ERROR_REPORT_FILE, prod.MULTI_RUN_FILE):
        assert (tmp_path / "mem" / name).read_bytes() == (tmp_path / "kept" / name).read_bytes(), name
    trials = [tmp_path / "kept" / "single_runs" / f"trial_{i}" for i in range(3)]
    prod.write_reports(p, trials, tmp_path / "files")
    for name in (prod.ERROR_REPORT_FILE, prod.MULTI_RUN_FILE):
        assert (tmp_path / "files" / name).read_bytes() == (tmp_path / "mem" / name).read_bytes(), name
    one = accuracy_report(s.params_dir, s.data_dir, tmp_path / "one", release_dir=trials[0], prepared=p)
    first = accuracy_report(s.params_dir, s.data_dir, tmp_path / "first", trials=1, seed=11, prepared=p)
    pd.testing.assert_frame_equal(one, first)
    assert len(kept) and (kept["counts_compared"] > 0).all()


def test_quantile_of_a_histogram_is_pandas_linear_quantile():
    rng = np.random.default_rng(5)
    for n in list(range(1, 40)) + [97, 1000, 4321]:
        values = rng.integers(0, rng.integers(1, 60), size=n)
        want = pd.Series(values).groupby(np.zeros(n)).quantile(0.95, interpolation="linear").iloc[0]
        assert prod._quantile(np.bincount(values), 0.95) == want


def test_a_release_of_other_inputs_is_refused(dataset, tmp_path):
    _dataset(dataset)
    p = prepare(dataset.params, dataset.data)
    run(dataset.params, dataset.data, tmp_path / "rel", seed=3, prepared=p)
    part = next(q for q in (tmp_path / "rel" / "t1").glob("*.csv") if q.name != "headers.csv")
    lines = len(part.read_text().splitlines())
    part.write_text(part.read_text() + "99999|COUNTY|3001|5\n")
    with pytest.raises(InputError, match="is RELEASE_DIR a release of other inputs") as err:
        prod.augmented_tables(p, tmp_path / "rel")
    assert f"rel/t1/{part.name}, line {lines + 1}" in str(err.value) and "'99999|COUNTY|3001'" in str(err.value)


def test_multi_run_histograms_equal_a_count_key_by_key():
    """`ProductionCollector._count` (one pass of bincount, or per key when the errors are
    wide) keeps, per (geo, level, detailed, size bin, workload), the exact histogram of
    |error| and the number of (group, trial) pairs."""
    from collections import defaultdict

    import numpy as np

    from engine.reports.production import _POWERS, ProductionCollector

    rng = np.random.default_rng(11)
    pairs = [("1", "False"), ("2", "True"), ("2", "False")]
    for per_pair, scale in ((1, 30), (4, 30), (1, 200_000), (3, 200_000)):  # the last two: per key
        col = ProductionCollector.__new__(ProductionCollector)
        col.hists, col.pairs = {}, defaultdict(int)
        expected_h, expected_n = {}, defaultdict(int)
        for _trial in range(3):
            n = int(rng.integers(1, 400))
            pair_id = rng.integers(0, len(pairs), n)
            size = rng.integers(0, 10**6, n)
            err = rng.integers(0, scale, n * per_pair)
            col._count("COUNTY", pair_id, pairs, size, "Total", err, per_pair)
            bins = np.searchsorted(_POWERS, size, side="left")
            for g in range(n):
                key = ("COUNTY", *pairs[pair_id[g]], int(bins[g]), "Total")
                h = expected_h.setdefault(key, defaultdict(int))
                for e in err[g * per_pair:(g + 1) * per_pair].tolist():
                    h[e] += 1
                expected_n[key] += 1
        assert set(col.hists) == set(expected_h)
        for key, h in col.hists.items():
            assert {int(e): int(c) for e, c in enumerate(h) if c} == dict(expected_h[key]), key
            assert h[-1] > 0 and col.pairs[key] == expected_n[key]
