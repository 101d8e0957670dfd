"""Accuracy reports: releases compared with the ground truth, from the command line."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import pandas as pd
import pytest

from engine.cli import main
from engine.reports.accuracy import AccuracyCollector
from tests.engine.conftest import BLOCKS, cli_help, person


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


def test_a_bad_count_after_empty_lines_of_a_release_is_named_on_its_line(dataset, tmp_path, capsys):
    # pyarrow skips empty lines: the message used to name the line the row would have
    # had without them (line 3 for the fifth line)
    dataset.persons = [person(block=BLOCKS[i % 5], age=i % 100, races=("1020",)) for i in range(100)]
    dataset.write()
    rel = tmp_path / "rel"
    assert main(["run", str(dataset.params), str(dataset.data), str(rel), "--seed", "3", "--quiet"]) == 0
    part = next(p for p in sorted((rel / "t1").glob("*.csv")) if p.name != "headers.csv"
                and len(p.read_text().splitlines()) >= 3)
    lines = part.read_bytes().split(b"\n")
    lines[2] = lines[2].rsplit(b"|", 1)[0] + b"|x"
    part.write_bytes(b"\n\n\n".join(lines[:2]) + b"\n" + b"\n".join(lines[2:]))
    capsys.readouterr()
    assert main(["accuracy", str(dataset.params), str(dataset.data), str(tmp_path / "acc"), "--release", str(rel),
                 "--quiet"]) == 1
    err = capsys.readouterr().err
    assert f"rel/t1/{part.name}, line 5, column COUNT: found 'x'" in err, err
    assert not (tmp_path / "acc").exists()


@pytest.mark.parametrize("table, change, fragment", [
    ("t1", "repeat", "expected each population group once in t1/ (already on rel/t1/"),
    ("t2", "repeat", "expected each T2 cell of a group once in t2/ (already on rel/t2/"),
    ("t2", "drop", "expected a whole sex x age table of one binning"),
    ("t2", "orphan", "expected a table of a group whose total is in t1/"),
])
def test_a_release_with_a_repeated_row_or_a_partial_table_is_refused(dataset, tmp_path, capsys, table, change,
                                                                     fragment):
    # check-output refuses such a release; accuracy --release used to report it (exit 0),
    # keeping one of two counts of a group or leaving a table with a missing cell out
    dataset.persons = [person(block=BLOCKS[i % 5], age=i % 100, races=("1020",)) for i in range(100)]
    dataset.write()
    rel = tmp_path / "rel"
    assert main(["run", str(dataset.params), str(dataset.data), str(rel), "--seed", "3", "--quiet"]) == 0
    part = next(p for p in sorted((rel / table).glob("*.csv")) if p.name != "headers.csv"
                and len(p.read_text().splitlines()) >= 3)
    lines = part.read_text().splitlines()
    if change == "repeat":
        lines.insert(2, lines[1].rsplit("|", 1)[0] + "|12345")
    elif change == "drop":
        del lines[1]
    else:  # the group's total taken out of t1/
        key = "|".join(lines[1].split("|")[:3]) + "|"
        t1_part = next(p for p in (rel / "t1").glob("*.csv") if key in p.read_text())
        t1_part.write_text("".join(ln for ln in t1_part.read_text().splitlines(True) if not ln.startswith(key)))
    part.write_text("\n".join(lines) + "\n")
    capsys.readouterr()
    for layout in ("studio", "production"):
        assert main(["accuracy", str(dataset.params), str(dataset.data), str(tmp_path / "acc"), "--release", str(rel),
                     "--layout", layout, "--quiet"]) == 1
        err = capsys.readouterr().err
        assert f"rel/{table}/{part.name}, line " in err and fragment in err, err
        assert "Traceback" not in err and not (tmp_path / "acc").exists()


def test_accuracy_refuses_a_folder_that_is_not_a_release_saying_what_it_is(dataset, tmp_path, capsys):
    dataset.persons = [person(block=BLOCKS[i % 5], age=i % 100, races=("1020",)) for i in range(100)]
    dataset.write()
    p, d = str(dataset.params), str(dataset.data)
    # the ground truth compared with itself would give a report of zero errors: refused
    tru = tmp_path / "tru"
    assert main(["truth", p, d, str(tru), "--quiet"]) == 0
    capsys.readouterr()
    for layout in ("studio", "production"):
        assert main(["accuracy", p, d, str(tmp_path / "acc"), "--release", str(tru), "--layout", layout,
                     "--quiet"]) == 1
        err = capsys.readouterr().err
        assert "tru/manifest.json, key mode.kind: found 'ground truth'; expected a release" in err
        assert "python -m engine truth" in err and "Traceback" not in err
        assert not (tmp_path / "acc").exists()
    # a legacy study: its manifest is readable, and the message says what the folder is
    leg = tmp_path / "leg"
    assert main(["legacy", p, d, str(leg), "--quiet"]) == 0
    capsys.readouterr()
    assert main(["accuracy", p, d, str(tmp_path / "acc"), "--release", str(leg), "--quiet"]) == 1
    err = capsys.readouterr().err
    assert "found 'legacy cell-suppression study'" in err and "python -m engine legacy" in err
    assert "no readable manifest.json" not in err and not (tmp_path / "acc").exists()
    # a folder without a manifest: said as found and expected, with why
    (leg / "manifest.json").unlink()
    assert main(["accuracy", p, d, str(tmp_path / "acc"), "--release", str(leg), "--quiet"]) == 1
    err = capsys.readouterr().err
    assert "leg/manifest.json: found no readable manifest.json (No such file or directory" in err
    assert "; expected the manifest naming the inputs of the release" in err and not (tmp_path / "acc").exists()


@pytest.fixture(scope="module")
def nation(tmp_path_factory):
    """A generated nation of 5,000 persons for the studies below (read only): coterminous
    sets, tables at every level and suppressed groups, as in the 50,000 of sample_data,
    at a third of the work per trial (serial and parallel, cached and fresh studies are
    compared with each other: the size of the nation is not their point)."""
    from engine.synthetic.nation import generate

    return generate(tmp_path_factory.mktemp("nation"), 5_000, seed=2)


def test_cells_kept_across_trials_change_no_report(tmp_path, monkeypatch, nation):
    """A study keeps each level's table cells across its trials (`CellCache`, issue 24):
    seeded studies with and without the cache write the same reports, byte for byte."""
    from engine.reports.accuracy import accuracy_report
    from engine.tabulation import aggregate

    cached = []

    def study(out):
        accuracy_report(nation.params_dir, nation.data_dir, out, trials=3, seed=5, layout="both")
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


# ------------------------------------------------------------------ parallel studies (--jobs)
SAMPLE = Path(__file__).resolve().parents[3] / "sample_data"
REPORTS = ("accuracy.csv", "error_report.csv", "multi_run_error_report.csv")
#: The files of a release that carry its timings.
TIMED = ("manifest.json", "SHA256SUMS")


def _collectors(prepared):
    from engine.reports.production import ProductionCollector

    return {"studio": lambda first=True: AccuracyCollector(prepared.plans),
            "production": lambda first=True: ProductionCollector(prepared, keep_first=first)}


def _reports(collector) -> list[pd.DataFrame]:
    if isinstance(collector, AccuracyCollector):
        return [collector.table()]
    return [collector.error_report(), collector.multi_run_error_report()]


@pytest.mark.parametrize("layout", ["studio", "production"])
def test_merged_collectors_report_what_one_collector_of_all_trials_reports(dataset, layout):
    """A worker's collector, pickled back (its mergeable state only) and merged, gives
    exactly the report of one collector that saw every trial; the first trial's rows
    (error_report.csv) stay the receiving collector's."""
    from engine import noise
    from engine.run import make_noise, prepare, publish_trial

    dataset.persons = [person(block=BLOCKS[i % 5], age=i % 100, races=(("1010",), ("1020",))[i % 2])
                       for i in range(300)]
    dataset.config["thresholds_p"] = {k: [2, 6, 25] for k in dataset.config["thresholds_p"]}
    dataset.write()
    prepared = prepare(dataset.params, dataset.data)
    make = _collectors(prepared)[layout]
    one, first, worker = make(), make(), make(first=False)

    def trial(seed, *sinks):
        source = noise.RandomSource.seeded(seed)
        publish_trial(prepared, make_noise(prepared.inputs.config.privacy_defn, source), sinks)
        for c in sinks:
            c.end_trial()

    trial(1, one, first)
    for seed in (2, 3):
        trial(seed, one, worker)
    sent = pickle.loads(pickle.dumps(worker))
    assert not hasattr(sent, "plans") or sent.plans == {}
    assert getattr(worker, "first", []) == [] and getattr(sent, "_flags", None) is None
    first.merge(sent)
    for merged, whole in zip(_reports(first), _reports(one)):
        assert len(whole)
        pd.testing.assert_frame_equal(merged, whole)
    # and the merge is not a no-op: the first trial alone reports other counts
    assert not _reports(make())[0].equals(_reports(one)[0])
    if layout == "studio":
        assert set(first.table().trials) == {3}


def _study(nation, out, jobs, **kw):
    from engine.reports.accuracy import accuracy_report

    seen = []
    accuracy_report(nation.params_dir, nation.data_dir, out, seed=5, jobs=jobs,
                    progress=lambda stage, done, total: seen.append((stage, done, total)), **kw)
    return seen


def _trial_pids(monkeypatch, folder):
    """Record the process of every trial (a file per trial: the workers are other processes)."""
    import os

    from engine import run as run_mod

    real = run_mod.publish_trial
    folder.mkdir()

    def spy(*args, **kwargs):
        (folder / f"{os.getpid()}-{len(list(folder.iterdir()))}").touch()
        return real(*args, **kwargs)

    monkeypatch.setattr(run_mod, "publish_trial", spy)
    return lambda: {int(p.name.split("-")[0]) for p in folder.iterdir()}


def test_parallel_study_writes_the_serial_reports_byte_for_byte(tmp_path, monkeypatch, nation):
    """--jobs 2: trials 2..4 in two worker processes, the same seeded noise per trial, the
    reports merged: accuracy.csv, error_report.csv and multi_run_error_report.csv are
    the serial study's, byte for byte."""
    import os

    pids = _trial_pids(monkeypatch, tmp_path / "pids")
    _study(nation, tmp_path / "serial", 1, trials=4, layout="both")
    assert pids() == {os.getpid()}
    seen = _study(nation, tmp_path / "parallel", 2, trials=4, layout="both")
    assert len(pids() - {os.getpid()}) == 2  # two workers ran trials
    for name in REPORTS:
        assert (tmp_path / "parallel" / name).read_bytes() == (tmp_path / "serial" / name).read_bytes(), name
    serial = json.loads((tmp_path / "serial" / "accuracy.json").read_text())
    assert json.loads((tmp_path / "parallel" / "accuracy.json").read_text()) == serial
    assert serial["mode"]["trials"] == 4
    # progress: the first trial's stages, then every trial done, in order
    trials = [s for s, _, _ in seen if s.startswith("trial")]
    assert trials[0].startswith("trial 1/4, ")
    assert [d for s, d, _ in seen if s.startswith("trials done")] == [1, 2, 3, 4]
    assert not any(s.startswith("trial 2/4") for s, _, _ in seen)


def test_parallel_study_keeps_each_trials_release(tmp_path, nation):
    """--keep-trials with --jobs 2: every worker writes its trials' releases, the same
    files as the serial study's (the manifests, and so SHA256SUMS, differ in their timings)."""
    _study(nation, tmp_path / "serial", 1, trials=3, keep_trials=True)
    _study(nation, tmp_path / "parallel", 2, trials=3, keep_trials=True)
    for t in range(3):
        a, b = (tmp_path / x / "single_runs" / f"trial_{t}" for x in ("serial", "parallel"))
        files = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file() and p.name not in TIMED)
        assert any(str(f).startswith("t2/") for f in files)
        assert files == sorted(p.relative_to(b) for p in b.rglob("*") if p.is_file() and p.name not in TIMED)
        for f in files:
            assert (a / f).read_bytes() == (b / f).read_bytes(), (t, f)
        assert json.loads((b / "manifest.json").read_text())["mode"]["for_release"] is False
    assert (tmp_path / "parallel" / "accuracy.csv").read_bytes() == (tmp_path / "serial" / "accuracy.csv").read_bytes()


class TrialFailed(Exception):
    pass


def test_an_exception_in_a_worker_is_raised_and_nothing_is_written(tmp_path, monkeypatch, nation):
    import os

    from engine import run as run_mod

    parent = os.getpid()
    real = run_mod.publish_trial

    def failing(*args, **kwargs):
        if os.getpid() != parent:
            raise TrialFailed(f"trial failed in process {os.getpid()}")
        return real(*args, **kwargs)

    monkeypatch.setattr(run_mod, "publish_trial", failing)
    with pytest.raises(TrialFailed, match="trial failed in process") as err:
        _study(nation, tmp_path / "out", 2, trials=4, layout="both")
    assert str(parent) not in str(err.value)  # raised there, re-raised here
    assert list(tmp_path.iterdir()) == []  # no OUT_DIR, no staging folder, no lock


def test_a_killed_worker_fails_the_study_clearly(tmp_path, monkeypatch, capsys, nation):
    """A worker killed (SIGKILL, as by the out-of-memory killer) fails the study with a
    message naming the signal and --jobs, exit 1, nothing written; never a hang."""
    import os
    import signal

    from engine import run as run_mod

    parent = os.getpid()
    real = run_mod.publish_trial

    def killed(*args, **kwargs):
        if os.getpid() != parent:
            os.kill(os.getpid(), signal.SIGKILL)
        return real(*args, **kwargs)

    monkeypatch.setattr(run_mod, "publish_trial", killed)
    out = tmp_path / "out"
    assert main(["accuracy", str(nation.params_dir), str(nation.data_dir), str(out), "--trials", "3", "--seed", "1",
                 "--jobs", "2", "--quiet"]) == 1
    err = capsys.readouterr().err
    assert "The study failed: a worker process" in err and "killed by SIGKILL" in err and "--jobs" in err
    assert "Nothing was written" in err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("jobs", ["0", "-1", "two"])
def test_jobs_must_be_at_least_one(tmp_path, capsys, jobs):
    with pytest.raises(SystemExit) as exit_:
        main(["accuracy", str(SAMPLE / "params"), str(SAMPLE / "data"), str(tmp_path / "o"), "--jobs", jobs])
    assert exit_.value.code == 2
    assert "argument --jobs: expected a whole number of at least 1" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("trials", [0, 10_001, 100_000_000])
def test_trials_are_bounded_and_refused_before_any_work(tmp_path, capsys, monkeypatch, trials):
    """A study of 10^8 trials would run for years: refused at once, naming the range
    (which --help states too), for every kind of study."""
    import engine.run as er
    from engine.reports.accuracy import MAX_TRIALS

    def never(*a, **k):
        raise AssertionError("prepared before --trials was checked")

    monkeypatch.setattr(er, "prepare", never)
    for extra in ([], ["--consistency", "all"], ["--invariant", "STATE"]):
        assert main(["accuracy", str(SAMPLE / "params"), str(SAMPLE / "data"), str(tmp_path / "o"),
                     "--trials", str(trials), *extra]) == 2
        assert f"--trials must be from 1 to {MAX_TRIALS:,} (got {trials:,})" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()
    helptext = cli_help("accuracy")
    assert f"1 to {MAX_TRIALS:,}" in " ".join(helptext.split())


def test_jobs_with_a_release_or_a_comparison_is_refused(tmp_path, capsys):
    for extra in (["--release", str(tmp_path)], ["--consistency", "all"], ["--invariant", "STATE"]):
        assert main(["accuracy", str(SAMPLE / "params"), str(SAMPLE / "data"), str(tmp_path / "o"), "--jobs", "2",
                     *extra]) == 2
        assert "--jobs runs the trials of a plain study in parallel" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_workers_are_capped_and_need_linux(monkeypatch, caplog):
    """At most trials - 1 workers, none for a single one (the parent would only wait for
    it); not on Linux, none, with a note."""
    import logging
    import sys

    from engine.reports.accuracy import _workers

    assert [_workers(1, 10), _workers(2, 10), _workers(8, 4), _workers(2, 2), _workers(3, 1)] == [0, 2, 3, 0, 0]
    monkeypatch.setattr(sys, "platform", "darwin")
    with caplog.at_level(logging.INFO, logger="engine"):
        assert _workers(2, 10) == 0
    assert "parallel trials need Linux" in caplog.text


def test_secure_parallel_trials_draw_their_own_noise(tmp_path, monkeypatch, nation):
    """Without a seed every trial, in the parent or in a worker, draws from its own secure
    source made in that process: no two trials start with the same noise (a source copied
    by the fork would repeat the parent's, and `RandomSource` refuses to be used so)."""
    import hashlib
    import os

    from engine import run as run_mod

    real = run_mod.publish_trial
    drawn = tmp_path / "drawn"
    drawn.mkdir()

    def spy(prepared, noise, *args, **kwargs):
        first = []

        def recorded(scale, size):
            out = noise(scale, size)
            if not first and size >= 50:
                first.append(out)
                digest = hashlib.sha256(out.tobytes()).hexdigest()
                (drawn / f"{os.getpid()}-{len(list(drawn.iterdir()))}-{digest}").touch()
            return out

        return real(prepared, recorded, *args, **kwargs)

    monkeypatch.setattr(run_mod, "publish_trial", spy)
    from engine.reports.accuracy import accuracy_report

    accuracy_report(nation.params_dir, nation.data_dir, tmp_path / "out", trials=5, jobs=2)
    names = [p.name.split("-") for p in drawn.iterdir()]
    assert len(names) == 5 and len({pid for pid, _, _ in names}) == 3
    assert len({digest for _, _, digest in names}) == 5
    js = json.loads((tmp_path / "out" / "accuracy.json").read_text())
    assert js["mode"]["kind"] == "secure trials" and js["mode"]["trials"] == 5
