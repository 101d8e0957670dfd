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
