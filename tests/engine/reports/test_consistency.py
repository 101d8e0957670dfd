"""The consistency comparison (engine.reports.consistency) and `accuracy --consistency`."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from engine.cli import main
from engine.reports.consistency import compare, parse_methods, table7
from engine.run import prepare, run
from tests.engine.conftest import read_part_files
from tests.engine.tabulation.conftest import random_persons

SAMPLE = Path(__file__).resolve().parents[3] / "sample_data"
CHAIN = ["USA", "STATE", "COUNTY", "TRACT", "PR-STATE", "PR-COUNTY", "PR-TRACT"]


@pytest.fixture
def data(dataset):
    from tests.engine.conftest import base_config

    dataset.persons = random_persons(500)
    dataset.config = base_config(zero_suppression_chance=0.99)
    dataset.config.update({k: v * 0.05 for k, v in dataset.config.items() if k.startswith("privacy_budget_p_level")})
    dataset.write()
    return dataset


def test_safetab_row_is_the_error_of_the_written_release(data, tmp_path):
    prepared = prepare(data.params, data.data)
    comp = compare(prepared, ["tree-dp"], trials=1, seed=9)
    # The same release, written, against the written truth, computed independently.
    rel = read_part_files(run(data.params, data.data, tmp_path / "r", seed=9).out_dir / "t1")
    tru = read_part_files(run(data.params, data.data, tmp_path / "t", truth=True).out_dir / "t1")
    key = ["REGION_TYPE", "REGION_ID", "ITERATION_CODE"]
    j = rel.merge(tru, on=key, suffixes=("", "_true"))
    j = j[j.REGION_TYPE.isin(CHAIN)]
    err = j.COUNT.astype(int) - j.COUNT_true.astype(int)
    none = comp.summary.set_index("method").loc["none"]
    assert none.counts == len(j)
    assert none.mean_abs_error == pytest.approx(err.abs().mean())
    assert none.bias == pytest.approx(err.mean())
    assert none.share_negative == pytest.approx((j.COUNT.astype(int) < 0).mean())
    by_geo = comp.by_level[comp.by_level.method == "none"].groupby("geo_level").counts.sum()
    assert by_geo.to_dict() == j.groupby("REGION_TYPE").size().to_dict()


def test_methods_side_by_side(data):
    prepared = prepare(data.params, data.data)
    comp = compare(prepared, ["least-squares", "tree-dp", "relax-then-round"], trials=2, seed=3)
    s = comp.summary.set_index("method")
    assert list(s.index) == ["none", "least-squares", "tree-dp", "relax-then-round"]
    assert s.loc["none", "violations_per_release"] > 0
    assert s.loc["least-squares", "violations_per_release"] == s.loc["tree-dp", "violations_per_release"] == 0
    assert s.loc["tree-dp", "share_negative"] == 0 and s.loc["tree-dp", "cells_share_negative"] == 0
    assert (s.counts == s.loc["none", "counts"]).all()  # the same published groups for every method
    assert s.loc["none", "seconds_per_release"] == 0 and s.loc["tree-dp", "seconds_per_release"] > 0
    # Clamping at zero: tree DP can only raise a true zero.
    zero = comp.by_size[(comp.by_size.true_size == "0") & (comp.by_size.method == "tree-dp")]
    assert (zero.bias >= 0).all()
    t = table7(comp, 2)
    assert list(t.columns) == ["geo_level", "none", "least-squares", "tree-dp", "relax-then-round"]
    assert list(t.geo_level) == [g for g in CHAIN if g in set(t.geo_level)]
    assert set(table7(comp).columns) >= {"geo_level", "iteration_level"}


@pytest.mark.slow
def test_least_squares_reduces_the_error_on_the_sample():
    # BLUE: pooling the levels lowers the variance; on 2 seeded releases of the sample
    # the overall mean absolute error drops by about a tenth (8.2 -> 7.3 in one release).
    prepared = prepare(SAMPLE / "params", SAMPLE / "data")
    comp = compare(prepared, ["least-squares", "tree-dp"], trials=2, seed=11)
    s = comp.summary.set_index("method")
    assert s.loc["least-squares", "mean_abs_error"] < 0.95 * s.loc["none", "mean_abs_error"]
    assert s.loc["tree-dp", "mean_abs_error"] < s.loc["least-squares", "mean_abs_error"]
    assert abs(s.loc["least-squares", "bias"]) < abs(s.loc["tree-dp", "bias"])


def test_parse_methods():
    assert parse_methods("all") == ["none", "least-squares", "tree-dp", "relax-then-round"]
    assert parse_methods("tree-dp, none,tree-dp") == ["none", "tree-dp"]
    with pytest.raises(ValueError, match="unknown method 'magic'"):
        parse_methods("tree-dp,magic")
    with pytest.raises(ValueError, match="no method"):
        parse_methods(" , ")


def test_command_line(data, tmp_path, capsys):
    out = tmp_path / "acc"
    assert main(["accuracy", str(data.params), str(data.data), str(out), "--consistency", "tree-dp,least-squares",
                 "--seed", "1", "--quiet"]) == 0
    text = capsys.readouterr().out
    assert "Mean absolute error of published totals, Detailed groups" in text and "Tree DP" in text
    summary = pd.read_csv(out / "consistency_summary.csv")
    assert list(summary.method) == ["none", "least-squares", "tree-dp"]
    assert json.loads((out / "consistency.json").read_text())["mode"]["seed"] == 1
    assert set(pd.read_csv(out / "consistency_by_level.csv").geo_level) <= set(CHAIN)
    assert not np.isnan(pd.read_csv(out / "consistency_by_size.csv").mean_abs_error).any()
    assert main(["accuracy", str(data.params), str(data.data), str(tmp_path / "x"), "--consistency", "nope"]) == 2
    assert "unknown method" in capsys.readouterr().err and not (tmp_path / "x").exists()
    assert main(["accuracy", str(data.params), str(data.data), str(tmp_path / "y"), "--consistency", "all",
                 "--release", str(out)]) == 2
