"""Parquet inputs, the 2020 spec files end to end, and aggregation in several merges."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from engine.tabulation.aggregate import LocalAggregator
from engine.cli import main
from engine.run import prepare, run
from engine.synthetic.nation import generate
from tests.engine.conftest import REFERENCE, read_part_files

REF_2020 = REFERENCE / "safetab-p-2020"


def _sorted(df: pd.DataFrame) -> pd.DataFrame:
    return df.sort_values(list(df.columns)).reset_index(drop=True)


def test_parquet_inputs_give_the_same_tables_as_text(tmp_path):
    txt = generate(tmp_path / "txt", 5_000, seed=3)
    pq = generate(tmp_path / "pq", 5_000, seed=3, fmt="parquet")
    assert (tmp_path / "pq" / "data" / "person-records.parquet").is_file()
    a = run(txt.params_dir, txt.data_dir, tmp_path / "a", truth=True).out_dir
    b = run(pq.params_dir, pq.data_dir, tmp_path / "b", truth=True).out_dir
    for sub in ("t1", "t2"):
        pd.testing.assert_frame_equal(_sorted(read_part_files(a / sub)), _sorted(read_part_files(b / sub)))


def test_the_2020_spec_files_run_end_to_end(tmp_path):
    if not REF_2020.is_dir():
        pytest.skip("the 2020 reference files (../shared/reference) are not present")
    root = tmp_path / "nation"
    assert main(["sample", "--persons", "20000", "--spec", str(REF_2020), str(root), "--quiet"]) == 0
    out = tmp_path / "out"
    assert main(["run", str(root / "params"), str(root / "data"), str(out), "--seed", "1", "--quiet"]) == 0
    m = json.loads((out / "manifest.json").read_text())
    # The real 2020 configuration: every level but (AIANNH, 1), US and PR, S = 9, suppression on.
    assert len(m["levels"]) == 19 and "(AIANNH, 1)" not in m["levels"]
    assert m["stability"]["state"]["2"]["S"] == m["stability"]["substate"]["2"]["S"] == 9
    assert m["levels"]["(COUNTY, 2)"]["iterations"] == 2150 and m["levels"]["(STATE, 2)"]["iterations"] == 2944
    assert m["levels"]["(TRACT, 2)"]["suppression_threshold"] > 0
    assert m["levels"]["(STATE, 2)"]["sigma2"]["stage2"]["exact"] == "2500/1067"  # 9 / (2 * 0.9 * 2.134) exactly
    assert m["privacy"]["us"]["budget"] == pytest.approx(2 * 2.134 + 4 * 0.159 + 5 * 0.008)
    t1 = read_part_files(out / "t1")
    sup = read_part_files(out / "suppressed")
    assert len(t1) + len(sup) == sum(lvl["groups"] for lvl in m["levels"].values())


def test_aggregation_does_not_depend_on_merge_size(tmp_path):
    s = generate(tmp_path / "n", 8_000, seed=5)
    one = prepare(s.params_dir, s.data_dir)
    many = prepare(s.params_dir, s.data_dir, aggregator=LocalAggregator(merge_rows=50))
    for lvl in one.levels[:4]:
        a, b = one.counts(lvl), many.counts(lvl)
        assert np.array_equal(a.totals(), b.totals())
    assert one.table.persons == many.table.persons == 8_000


def test_level_counts_equal_the_flat_map_written_with_arrays(tmp_path):
    """The kernels of `LevelCounts` against the flat map as array expressions, every level."""
    from tests.engine.tabulation.test_kernels import _expand_plain

    s = generate(tmp_path / "n", 6_000, seed=8)
    p = prepare(s.params_dir, s.data_dir)
    for lvl in p.levels:
        counts = p.counts(lvl)
        g, cell, c = _expand_plain(p.table.key, p.table.count, counts.piece_region, counts.combo_of,
                                   counts.eth_of, counts.members.race, counts.members.ethnicity, counts.n_iterations)
        totals = counts.totals()
        assert np.array_equal(totals, np.bincount(g, weights=c, minlength=counts.n_groups).astype(np.int64))
        groups = np.flatnonzero(totals >= 3)[::7]
        cells = counts.cells_of(groups)
        sel = np.isin(g, groups)
        dense = np.zeros((len(groups), 46), np.int64)
        np.add.at(dense, (np.searchsorted(groups, g[sel]), cell[sel]), c[sel])
        assert np.array_equal(cells, dense)
        assert np.array_equal(cells.sum(axis=1), totals[groups])
    # Every counted person is in exactly one USA... group per iteration they belong to:
    usa = p.counts(p.levels[0])
    assert usa.totals().max() <= p.table.persons_us


def test_two_threads_count_what_one_thread_counts(tmp_path, monkeypatch):
    from engine.tabulation import aggregate

    s = generate(tmp_path / "n", 6_000, seed=4)
    one = prepare(s.params_dir, s.data_dir)
    one.compute_totals()
    monkeypatch.setattr(aggregate, "_THREAD_ROWS", 0)
    monkeypatch.setattr(aggregate, "_threads", lambda: 2)
    assert len(aggregate._piece_ranges(one.table)) == 2
    two = prepare(s.params_dir, s.data_dir)
    two.compute_totals()
    for lvl in one.levels:
        a, b = one.counts(lvl), two.counts(lvl)
        assert np.array_equal(a.totals(), b.totals())
        groups = np.flatnonzero(a.totals() >= 2)
        assert np.array_equal(a.cells_of(groups), b.cells_of(groups))
