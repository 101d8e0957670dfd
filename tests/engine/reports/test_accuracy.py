"""Accuracy reports: releases compared with the ground truth, from the command line."""

from __future__ import annotations

import json

import pandas as pd

from engine.cli import main
from tests.engine.conftest import BLOCKS, person


def test_accuracy_report_with_trials(dataset, tmp_path, capsys):
    dataset.persons = [person(block=BLOCKS[i % 5], age=i % 100, races=(("1010",), ("1020",))[i % 2]) for i in range(400)]
    dataset.write()
    out = tmp_path / "acc"
    assert main(["accuracy", str(dataset.params), str(dataset.data), str(out), "--trials", "3", "--seed", "5",
                 "--quiet"]) == 0
    df = pd.read_csv(out / "accuracy.csv")
    assert set(df.trials) == {3}
    assert {"geo_level", "iteration_level", "table", "true_size", "p95_abs_error", "predicted_moe95_exact"} <= set(df.columns)
    row = df[(df.geo_level == "TRACT") & (df.iteration_level == 2) & (df.table == "total (stat level 0)")
             & (df.true_size == "0")]
    # Thousands of empty tract groups: the empirical 95th percentile is close to the predicted MOE.
    assert row.counts_compared.item() > 50
    assert abs(row.p95_abs_error.item() - row.predicted_moe95_exact.item()) <= 0.35 * row.predicted_moe95_exact.item() + 1
    js = json.loads((out / "accuracy.json").read_text())
    assert js["mode"]["trials"] == 3 and len(js["rows"]) == len(df)


def test_accuracy_of_an_existing_release(dataset, tmp_path):
    dataset.persons = [person(block=BLOCKS[i % 5], age=i % 100, races=("1020",)) for i in range(100)]
    dataset.write()
    rel = tmp_path / "rel"
    assert main(["run", str(dataset.params), str(dataset.data), str(rel), "--seed", "3", "--quiet"]) == 0
    out = tmp_path / "acc"
    assert main(["accuracy", str(dataset.params), str(dataset.data), str(out), "--release", str(rel), "--quiet"]) == 0
    df = pd.read_csv(out / "accuracy.csv")
    # The USA Angolan group (100 persons) has a sex x age table: its cells are compared.
    cells = df[(df.geo_level == "USA") & df.table.str.startswith("cell")]
    assert cells.counts_compared.sum() >= 8
    # Comparing the truth with itself gives zero error everywhere.
    tru = tmp_path / "tru"
    assert main(["truth", str(dataset.params), str(dataset.data), str(tru), "--quiet"]) == 0
    out2 = tmp_path / "acc2"
    assert main(["accuracy", str(dataset.params), str(dataset.data), str(out2), "--release", str(tru), "--quiet"]) == 0
    df2 = pd.read_csv(out2 / "accuracy.csv")
    assert (df2.p95_abs_error == 0).all() and (df2.mean_error == 0).all()


def test_cells_kept_across_trials_change_no_report(tmp_path, monkeypatch):
    """A study keeps each level's table cells across its trials (`CellCache`, issue 24):
    seeded studies with and without the cache write the same reports, byte for byte."""
    from pathlib import Path

    from engine.reports.accuracy import accuracy_report
    from engine.tabulation import aggregate

    sample = Path(__file__).resolve().parents[3] / "sample_data"
    cached = []

    def study(out):
        accuracy_report(sample / "params", sample / "data", out, trials=3, seed=5, layout="both")
        return {p.name: p.read_bytes() for p in sorted(out.glob("*.csv"))}

    real = aggregate.CellCache.cells_of

    def spy(self, groups, count):
        cached.append(len(self.groups))
        return real(self, groups, count)

    monkeypatch.setattr(aggregate.CellCache, "cells_of", spy)
    with_cache = study(tmp_path / "cached")
    assert cached and max(cached) > 0  # later trials found cells counted before
    monkeypatch.setattr(aggregate.CellCache, "cells_of", lambda self, groups, count: count(groups))
    without = study(tmp_path / "fresh")
    assert set(with_cache) == {"accuracy.csv", "error_report.csv", "multi_run_error_report.csv"}
    assert with_cache == without
