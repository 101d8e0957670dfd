"""Accuracy report: a release against the ground truth, next to the predicted MOE.

For every published count the error is (published - true). Errors are grouped by
geography level, iteration level, table type and the true size of the group, and the
report gives the empirical 95th percentile of |error| beside the 95% MOE the
calculators predict for that count (SPEC §2):

- a stage-2 cell or a stat-level-0 total: MOE of one cell at the stage-2 sigma^2;
- a TotalOnly total: MOE at the TotalOnly sigma^2;
- T1 of a sex x age table with c cells, or a sex marginal of b cells: MOE of a sum.

Suppressed totals are not published, so they are not in the errors; clamping at zero
(`allow_negative_counts: false`) and suppression make small groups deviate from the
prediction, which is why the report bins by true size. Errors are kept as exact
integer histograms, so memory does not grow with the number of trials.
"""

from __future__ import annotations

import functools
import json
import logging
import os
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from calculators import budget, noise_family
from calculators.levels import STAT_LEVEL_CELLS, PopulationGroupLevel
from engine.reports.production import _level_groups, _refuse_unknown_groups, _rows_by_geo, read_release
from engine.tabulation.mechanism import TOTAL_ONLY, collapse_cells

SIZE_BINS = [0, 1, 10, 100, 1_000, 10_000, 100_000]
SIZE_LABELS = ["0", "1-9", "10-99", "100-999", "1,000-9,999", "10,000-99,999", "100,000+"]
TABLE_TYPES = {
    TOTAL_ONLY: "total (TotalOnly)",
    0: "total (stat level 0)",
    1: "T1 of sex x age4",
    2: "T1 of sex x age9",
    3: "T1 of sex x age23",
}
CELL_TYPES = {1: "cell of sex x age4", 2: "cell of sex x age9", 3: "cell of sex x age23"}
MARGINAL_TYPES = {1: "sex marginal (age4)", 2: "sex marginal (age9)", 3: "sex marginal (age23)"}


def size_bin(true_total: np.ndarray) -> np.ndarray:
    return np.searchsorted(np.array(SIZE_BINS), true_total, side="right") - 1


@dataclass
class _Hist:
    counts: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    n: int = 0
    sum_err: int = 0

    def add(self, err: np.ndarray) -> None:
        if len(err) == 0:
            return
        a = np.abs(err)
        h = np.bincount(a)
        if len(h) > len(self.counts):
            self.counts = np.pad(self.counts, (0, len(h) - len(self.counts)))
        self.counts[: len(h)] += h
        self.n += len(err)
        self.sum_err += int(err.sum())

    def merge(self, other: _Hist) -> None:
        """Add another histogram's counts (exact: the sum of both's errors)."""
        if len(other.counts) > len(self.counts):
            self.counts = np.pad(self.counts, (0, len(other.counts) - len(self.counts)))
        self.counts[: len(other.counts)] += other.counts
        self.n += other.n
        self.sum_err += other.sum_err

    def quantile(self, q: float) -> int:
        """Smallest e with P(|error| <= e) >= q (empirical, exact on integers)."""
        c = np.cumsum(self.counts)
        return int(np.searchsorted(c, q * self.n - 1e-9 * self.n))


class AccuracyCollector:
    """Accumulates |error| histograms of published counts against the truth."""

    def __init__(self, plans: dict | None = None):
        self.hists: dict[tuple, _Hist] = defaultdict(_Hist)
        self.predicted: dict[tuple, tuple[int, int | None]] = {}
        self.trials = 0
        #: The plan of each level (predicted MOEs), for `add`.
        self.plans = plans or {}
        #: Groups the Tabulation System's rules removed (`run --tabulation-suppression`):
        #: level key -> rule -> groups, over every trial.
        self.tabulation: dict[str, dict[str, int]] = {}

    def _add(self, level: PopulationGroupLevel, kind: str, bins: np.ndarray, err: np.ndarray, moe: tuple) -> None:
        for b in np.unique(bins):
            key = (level.geo, level.iteration_level, kind, int(b))
            self.hists[key].add(err[bins == b])
            self.predicted[(level.geo, level.iteration_level, kind)] = moe

    def _add_totals(self, plan, released, stat, t1, true_total) -> np.ndarray:
        """Errors of the released totals, per table type; returns the size bins of all."""
        bins_all = size_bin(true_total)
        for k, kind in TABLE_TYPES.items():
            sel = released & (stat == k)
            if not sel.any():
                continue
            if k == TOTAL_ONLY:
                moe = _predicted_moe(plan, plan.total_only, 1)
            else:
                moe = _predicted_moe(plan, plan.stage2, STAT_LEVEL_CELLS[k])
            self._add(plan.level, kind, bins_all[sel], t1[sel] - true_total[sel], moe)
        return bins_all

    def add_published(self, plan, counts, pub) -> None:
        """Errors of one post-processed chunk (`engine.tabulation.postprocess.Published`)."""
        lvl = plan.level
        moe_cell = _predicted_moe(plan, plan.stage2, 1)
        bins_all = self._add_totals(plan, pub.released, pub.stat_level, pub.t1, pub.true_total)
        for k, (groups, cells, marg) in pub.tables.items():
            true_cells = pub.true_tables[k]
            b = bins_all[groups - pub.g0]
            width = cells.shape[1]
            self._add(lvl, CELL_TYPES[k], np.repeat(b, width), (cells - true_cells).reshape(-1), moe_cell)
            true_marg = true_cells.reshape(len(groups), 2, -1).sum(axis=2)
            self._add(lvl, MARGINAL_TYPES[k], np.repeat(b, 2), (marg - true_marg).reshape(-1),
                      _predicted_moe(plan, plan.stage2, width // 2))

    def add(self, rows) -> None:
        """What a set of groups publishes (`engine.tabulation.postprocess.GroupRows`,
        coterminous copies resolved: the counts of the release) against their truth."""
        lvl = PopulationGroupLevel(rows.geo, rows.iteration_level)
        plan = self.plans[lvl]
        if rows.removed_by_rule is not None:
            st = self.tabulation.setdefault(lvl.key, {})
            for rule, n in rows.removed_by_rule.items():
                st[rule] = st.get(rule, 0) + n
        moe_cell = _predicted_moe(plan, plan.stage2, 1)
        self._add_totals(plan, rows.released, rows.stat, rows.t1, rows.true_total)
        for k, (_r, _c, cells, marg, true_cells) in rows.tables.items():
            b = size_bin(true_cells.sum(axis=1))
            width = cells.shape[1]
            self._add(lvl, CELL_TYPES[k], np.repeat(b, width), (cells - true_cells).reshape(-1), moe_cell)
            true_marg = true_cells.reshape(len(cells), 2, -1).sum(axis=2)
            self._add(lvl, MARGINAL_TYPES[k], np.repeat(b, 2), (marg - true_marg).reshape(-1),
                      _predicted_moe(plan, plan.stage2, width // 2))

    def end_trial(self) -> None:
        self.trials += 1

    def merge(self, other: AccuracyCollector) -> None:
        """Add the errors and trials another collector gathered (e.g. in a worker process
        of a parallel study): integer histograms, so merging trials gathered apart gives
        exactly what one collector gathering all of them would."""
        for key, h in other.hists.items():
            self.hists[key].merge(h)
        for key, moe in other.predicted.items():
            self.predicted.setdefault(key, moe)
        for key, by_rule in other.tabulation.items():
            st = self.tabulation.setdefault(key, {})
            for rule, n in by_rule.items():
                st[rule] = st.get(rule, 0) + n
        self.trials += other.trials

    def __getstate__(self) -> dict:
        # What a worker of a parallel study sends back: the mergeable state, not the plans.
        return {"hists": dict(self.hists), "predicted": self.predicted, "trials": self.trials,
                "tabulation": self.tabulation}

    def __setstate__(self, state: dict) -> None:
        self.__init__()
        self.hists.update(state["hists"])
        self.predicted, self.trials = state["predicted"], state["trials"]
        self.tabulation = state.get("tabulation", {})

    def tabulation_summary(self) -> dict | None:
        """How many groups each rule of the Tabulation System removed (`tabulation_counts`),
        over the trials; None if no trial applied the rules."""
        if not self.tabulation:
            return None
        return tabulation_counts(self.tabulation, self.trials)

    def table(self) -> pd.DataFrame:
        rows = []
        for (geo, lvl, kind, b), h in sorted(self.hists.items(), key=lambda kv: (kv[0][0], kv[0][1], kv[0][2], kv[0][3])):
            exact, bound = self.predicted[(geo, lvl, kind)]
            rows.append({
                "geo_level": geo,
                "iteration_level": lvl,
                "table": kind,
                "true_size": SIZE_LABELS[b],
                "counts_compared": h.n,
                "trials": self.trials,
                "p95_abs_error": h.quantile(0.95),
                "mean_error": h.sum_err / h.n if h.n else float("nan"),
                "predicted_moe95_exact": exact,
                "predicted_moe95_design_bound": bound,
            })
        return pd.DataFrame(rows)


def tabulation_counts(by_level: dict[str, dict[str, int]], trials: int) -> dict:
    """The groups each rule of the Tabulation System's suppression removed: per level and
    in all, summed over `trials` (and per trial)."""
    from engine.tabulation.postprocess import TABULATION_RULES

    total = {r: sum(st.get(r, 0) for st in by_level.values()) for r in TABULATION_RULES}
    return {"trials": trials, "groups_removed": total,
            "groups_removed_per_trial": {r: n / trials for r, n in total.items()} if trials else {},
            "by_level": by_level}


def release_tabulation_counts(prepared, release_dir: Path) -> dict | None:
    """`tabulation_counts` of an existing release (one trial), read from its
    suppressed/tabulation-system.csv; None if the release did not apply the rules."""
    from engine.release.outputs import REASON_FILE

    path = Path(release_dir) / "suppressed" / REASON_FILE
    if not path.is_file():
        return None
    df = pd.read_csv(path, sep="|", dtype=str, keep_default_na=False)
    its = prepared.inputs.specs.iterations
    by_level: dict[str, dict[str, int]] = {}
    for (geo, code, reason), n in df.groupby(["REGION_TYPE", "ITERATION_CODE", "REASON"]).size().items():
        it = its.get(code)
        key = PopulationGroupLevel(geo, int(it.level)).key if it is not None else f"({geo}, ?)"
        st = by_level.setdefault(key, {})
        st[reason] = st.get(reason, 0) + int(n)
    return tabulation_counts(by_level, 1)


def _predicted_moe(plan, scale, cells: int) -> tuple[int, int | None]:
    """(exact MOE, design-paper bound floor(1.96 sd)) of a sum of `cells` noisy cells
    (SPEC §2; `budget.moe_of_sum`, geometric cells under pure DP)."""
    return _moe_pair(noise_family.family_of(plan.privacy_defn), float(scale), int(cells))


@functools.lru_cache(maxsize=1024)
def _moe_pair(noise: str, s: float, cells: int) -> tuple[int, int]:
    """`_predicted_moe`, kept: a study asks for the same few figures for every chunk of every
    level in every trial, and the exact MOE is a search over the law (milliseconds each)."""
    return (int(budget.moe_of_sum(s, cells, exact=True, noise=noise)),
            int(budget.moe_of_sum(s, cells, exact=False, noise=noise)))


#: Report layouts: the project's own (accuracy.csv), production's (`engine.reports.production`), or both.
LAYOUTS = ("studio", "production", "both")
#: The most trials a study draws: a bound on the work (about 7 hours on the shipped sample,
#: far longer at scale); quantiles of 10,000 trials are already within about 1 %.
MAX_TRIALS = 10_000


def accuracy_report(params_dir, data_dir, out_dir, *, trials: int = 1, seed: int | None = None,
                    release_dir: Path | None = None, overwrite: bool = False, progress=None,
                    prepared=None, layout: str = "studio", keep_trials: bool = False,
                    coterminous: bool = True, jobs: int = 1, tabulation_suppression: bool = False) -> pd.DataFrame:
    """Draw `trials` releases (or read `release_dir`) and compare them with the truth.

    layout "studio" writes OUT_DIR/accuracy.csv and accuracy.json and returns that table;
    "production" writes production's error_report.csv and multi_run_error_report.csv
    (`engine.reports.production`) and returns an empty table; "both" does both on the
    same releases. Each trial is tabulated once and what it publishes (coterminous copies
    resolved, exactly the counts `run` would write with the same noise) goes to the
    reports in memory: no release is written unless `keep_trials`, which keeps each
    trial's release under OUT_DIR/single_runs/trial_<i>, marked as a study (NOT FOR
    RELEASE, no operator file). Everything goes through
    `engine.release.publish.StagedOutput` (which checks and locks OUT_DIR before the
    work) with NOT-FOR-RELEASE.txt and the SHA256SUMS marker: the errors are measured
    against the confidential truth, and nothing confidential (no operator file, no
    exact count) is written into OUT_DIR. `release_dir` is checked first
    (`production.read_release`): InputError naming file and line if it is not a release
    of these inputs. `coterminous=False` measures the counts before the coterminous post-processing (as
    `run --no-coterminous` would write them).

    `jobs` > 1 runs the trials after the first in up to `jobs` worker processes (at most
    trials - 1), forked after the first trial so that they share the prepared inputs,
    counts and cached cells: the same per-trial noise (seeded: seed + t), the same
    reports (exact histograms, merged), each worker adding its own trial's working
    memory (see `_parallel_trials`). Not on Linux, the trials run one after another,
    with a note.
    """
    from engine.release.outputs import not_for_release_text
    from engine.release.publish import NOT_FOR_RELEASE, StagedOutput
    from engine.reports import production
    from engine.run import prepare

    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {', '.join(LAYOUTS)} (got {layout!r})")
    if keep_trials and release_dir is not None:
        raise ValueError("--keep-trials keeps the releases a study draws; with --release nothing is drawn")
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise ValueError(f"--jobs must be a whole number of at least 1 (got {jobs!r})")
    if jobs > 1 and release_dir is not None:
        raise ValueError("--jobs runs a study's trials in parallel; with --release nothing is drawn")
    inputs = [("PARAMS_DIR", params_dir), ("DATA_DIR", data_dir), ("RELEASE_DIR", release_dir)]
    if tabulation_suppression and release_dir is not None:
        raise ValueError("--tabulation-suppression applies the Tabulation System's rules to the trials a study draws; "
                         "with --release the release's own suppressed/tabulation-system.csv is counted")
    # owner-only: error_report.csv holds each group's exact size, and every report is
    # measured against the confidential truth
    with StagedOutput(out_dir, overwrite=overwrite, inputs=inputs, description="accuracy report",
                      private=True) as folder:
        if prepared is None:
            prepared = prepare(params_dir, data_dir, progress)
        studio = AccuracyCollector(prepared.plans) if layout != "production" else None
        if release_dir is not None:
            # An existing release, read from its files (checked: `production.read_release`).
            if studio is not None:
                collect_release_dir(prepared, Path(release_dir), studio)
                studio.trials = 1
            if layout != "studio":
                production.write_reports(prepared, [Path(release_dir)], folder.stage)
            mode = {"kind": "existing release", "release_dir": str(release_dir)}
            tab = release_tabulation_counts(prepared, Path(release_dir))
        else:
            prod = production.ProductionCollector(prepared) if layout != "studio" else None
            sinks = tuple(c for c in (studio, prod) if c is not None)
            # the groups that get a table are mostly the same in every trial: count their
            # cells once (exact counts, so nothing changes but the time)
            prepared.keep_cells = trials > 1
            study = _Trials(prepared, trials, seed, layout, coterminous,
                            folder.stage / "single_runs" if keep_trials else None, tabulation_suppression)
            workers = _workers(jobs, trials)
            # With workers, trial 0 runs here first: it fills the caches (totals, cells)
            # the workers then share, and keeps the first trial for error_report.csv.
            for t in range(1 if workers else trials):
                study.trial(t, sinks, _trial_progress(progress, t, trials))
            if workers:
                _parallel_trials(study, workers, sinks, progress)
            if prod is not None:
                prod.write(folder.stage)
            mode = {"kind": "seeded trials" if seed is not None else "secure trials", "trials": trials, "seed": seed}
            if keep_trials:
                mode["releases"] = "single_runs/ (each marked NOT FOR RELEASE: trials of this study)"
            tab = studio.tabulation_summary() if studio is not None else None
        reason = "accuracy figures measured against the confidential ground truth, without noise"
        df = pd.DataFrame()
        if tab is not None:
            # How many groups each rule of the Tabulation System's suppression removed (outside the DAS).
            mode["tabulation_suppression"] = tab
        if studio is not None:
            df = studio.table()
            mode["note"] = "NOT FOR RELEASE: " + reason
            folder.write_file("accuracy.csv", df.to_csv(index=False).encode("utf-8"))
            folder.write_file("accuracy.json", (json.dumps({"mode": mode, "rows": df.to_dict(orient="records")},
                                                           indent=2, default=float) + "\n").encode("utf-8"))
        folder.write_file(NOT_FOR_RELEASE, not_for_release_text(reason))
        folder.publish(["NOT FOR RELEASE: " + reason])
    df.attrs["tabulation_suppression"] = tab
    return df


@dataclass
class _Trials:
    """The trials of one study: what every trial needs, in the parent and in its workers."""

    prepared: object
    trials: int
    seed: int | None
    layout: str
    coterminous: bool
    #: Where each trial's release goes (OUT_DIR/single_runs in the making), or None.
    keep_dir: Path | None
    #: Apply the Tabulation System's suppression to every trial (`run --tabulation-suppression`).
    tabulation_suppression: bool = False

    def trial(self, t: int, sinks: tuple, progress=None) -> None:
        """Trial t into the sinks: noise seeded from seed + t, or a fresh secure source
        (made here, so in the process that draws it: never one copied by a fork)."""
        from engine import noise as _noise
        from engine.run import make_noise, publish_trial, run

        trial_seed = self.seed + t if self.seed is not None else None
        prepared = self.prepared
        if self.keep_dir is not None:
            run(prepared.inputs.params_dir, prepared.inputs.data_dir, self.keep_dir / f"trial_{t}", seed=trial_seed,
                progress=progress, prepared=prepared,
                study=f"trial {t + 1} of {self.trials} of an accuracy study (its errors are measured against "
                      "the confidential truth)", sinks=sinks, coterminous=self.coterminous,
                tabulation_suppression=self.tabulation_suppression)
        else:
            source = (_noise.RandomSource.seeded(trial_seed) if trial_seed is not None
                      else _noise.RandomSource.secure())
            publish_trial(prepared, make_noise(prepared.inputs.config.privacy_defn, source), sinks,
                          progress=progress, coterminous=self.coterminous,
                          tabulation_suppression=self.tabulation_suppression)
        for c in sinks:
            c.end_trial()

    def worker_trial(self, t: int) -> tuple:
        """Trial t in a worker process, into fresh collectors; returns them (pickled back,
        they carry only their mergeable state)."""
        from engine.reports import production

        sinks = tuple(c for c in (AccuracyCollector(self.prepared.plans) if self.layout != "production" else None,
                                  production.ProductionCollector(self.prepared, keep_first=False)
                                  if self.layout != "studio" else None) if c is not None)
        self.trial(t, sinks)
        return sinks


def _workers(jobs: int, trials: int) -> int:
    """Worker processes for a study (0: the trials run one after another here)."""
    import multiprocessing
    import sys

    if jobs < 2:
        return 0
    # fork shares the prepared inputs without copying them; on macOS it is unsafe with
    # some system libraries, elsewhere it does not exist
    if not sys.platform.startswith("linux") or "fork" not in multiprocessing.get_all_start_methods():
        logging.getLogger("engine").info(
            "--jobs %d: parallel trials need Linux (forked processes); the trials run one after another", jobs)
        return 0
    n = min(jobs, trials - 1)
    # a single worker beside the first trial would gain nothing: the parent only waits
    return n if n >= 2 else 0


_PR_SET_PDEATHSIG = 1


def _die_with_parent(parent: int) -> None:
    """Have the kernel kill this process (a worker) when the process that forked it ends,
    however it ends (kill -9 included): a worker never outlives its study, holding OUT_DIR's
    lock and the caller's pipes (Linux prctl PR_SET_PDEATHSIG). A parent already gone
    before the request ends the worker now."""
    import ctypes
    import signal

    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    except (AttributeError, OSError):  # pragma: no cover - the workers run on Linux only (`_workers`)
        pass
    if os.getppid() != parent:
        os._exit(1)


def _worker_main(study: _Trials, conn, others: list, parent: int) -> None:
    """A worker process (forked from the study's, `_parallel_trials`): trials received on
    `conn` one at a time, each answered with ("done", t, collectors) or ("failed", t,
    exception); None or the parent's end of the pipe closing ends it.

    The fork hands `study` over by copying the parent's memory (nothing is pickled): the
    prepared inputs, counts and cached cells are shared copy-on-write, and stay shared (a
    cell cache that grew would be copied into the worker)."""
    import pickle
    import signal

    _die_with_parent(parent)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the study's to handle: it ends the workers
    for c in others:  # the other workers' pipes: only their own process may hold them open
        c.close()
    study.prepared.freeze_cells()
    while True:
        try:
            t = conn.recv()
        except (EOFError, OSError):
            return
        if t is None:
            return
        try:
            answer = ("done", t, study.worker_trial(t))
        except Exception as exc:  # noqa: BLE001 - handed to the study, which raises it
            # one that cannot make the journey is sent as its text
            try:
                pickle.loads(pickle.dumps(exc))
            except Exception:  # noqa: BLE001
                exc = RuntimeError(f"trial {t + 1}: {type(exc).__name__}: {exc}")
            answer = ("failed", t, exc)
        conn.send(answer)


def _parallel_trials(study: _Trials, workers: int, sinks: tuple, progress=None) -> None:
    """Trials 1..T-1 in `workers` forked processes, one trial at a time each (a worker takes
    the next trial when it is done), merged into `sinks` as they come back.

    Each worker has a pipe of its own, held open only by the study and that worker: a
    worker that dies, even half way through sending its result, closes it, so the study
    reads the end of the pipe (or the worker's exit) and raises `engine.errors.WorkerLost`
    naming the trial lost, never waits for the rest of a message nobody will send. Workers
    die with the study (`_die_with_parent`), and the study ends every worker before it
    returns or raises (SIGTERM, then SIGKILL): none outlives it holding OUT_DIR's lock.
    An exception in a trial is raised here as it was raised there.

    Memory: each worker adds one trial's working memory (the noise, the post-processed
    chunk, its share of the cells) to the parent's; the prepared inputs are shared."""
    import multiprocessing
    from multiprocessing.connection import wait

    from engine.errors import WorkerLost

    ctx = multiprocessing.get_context("fork")
    pipes = [ctx.Pipe(duplex=True) for _ in range(workers)]
    procs = []
    done = 1
    if progress is not None:
        progress(f"trials done, {workers} at once", done, study.trials)
    try:
        for i, (_, child) in enumerate(pipes):
            others = [c for j, pair in enumerate(pipes) for c in pair if j != i] + [pipes[i][0]]
            proc = ctx.Process(target=_worker_main, args=(study, child, others, os.getpid()),
                               name=f"safetab-trials-{i + 1}", daemon=True)
            proc.start()
            procs.append(proc)
        for _, child in pipes:
            child.close()
        conns = [parent for parent, _ in pipes]
        todo = list(range(1, study.trials))
        running: dict[int, int] = {}  # worker -> its trial

        def assign(i: int) -> None:
            if todo:
                running[i] = todo.pop(0)
                try:
                    conns[i].send(running[i])
                except OSError:  # the worker is gone (its end of the pipe is closed)
                    raise WorkerLost(_lost_message(procs, i, running[i], study.trials, workers)) from None

        for i in range(workers):
            assign(i)
        while running:
            ready = set(wait([conns[i] for i in running] + [procs[i].sentinel for i in running]))
            for i in sorted(running):
                if conns[i] in ready:
                    try:
                        kind, t, parts = conns[i].recv()
                    except (EOFError, OSError):  # the worker died, perhaps half way through its message
                        raise WorkerLost(_lost_message(procs, i, running[i], study.trials, workers)) from None
                    if kind == "failed":
                        raise parts
                    del running[i]
                    for sink, part in zip(sinks, parts):
                        sink.merge(part)
                    done += 1
                    if progress is not None:
                        progress(f"trials done, {workers} at once (trial {t + 1} finished)", done, study.trials)
                    assign(i)
                elif procs[i].sentinel in ready:
                    raise WorkerLost(_lost_message(procs, i, running[i], study.trials, workers))
        for c in conns:
            try:
                c.send(None)
            except OSError:  # a worker gone after its last trial: nothing is lost
                pass
    finally:
        _end_workers(procs)
        for pair in pipes:
            for c in pair:
                c.close()


def _end_workers(procs: list, seconds: float = 5.0) -> None:
    """Every worker ended and reaped: those done leave by themselves; any other (the study
    failed or was interrupted) is sent SIGTERM, and SIGKILL after `seconds`."""
    import time

    end = time.monotonic() + seconds
    for p in procs:
        p.join(timeout=max(0.0, min(0.5, end - time.monotonic())))
        if p.exitcode is None:
            p.terminate()
    for p in procs:
        p.join(timeout=max(0.0, end - time.monotonic()))
        if p.exitcode is None:
            p.kill()
            p.join()


def _lost_message(procs: list, i: int, t: int, trials: int, workers: int) -> str:
    import signal

    proc = procs[i]
    proc.join(timeout=5.0)  # its pipe closes as it dies, an instant before its exit status is known
    code = proc.exitcode
    how = (f"killed by {signal.Signals(-code).name}" if code is not None and code < 0
           and -code in signal.valid_signals() else f"exit code {code}" if code is not None else "ended abruptly")
    oom = " (SIGKILL is what the out-of-memory killer sends)" if code == -signal.SIGKILL else ""
    return (f"a worker process of the study ended without finishing its trial ({how}){oom}: trial {t + 1} of "
            f"{trials} was lost. Each of the {workers} workers needs one trial's working memory besides the shared "
            "inputs: run with fewer --jobs (--jobs 1 runs the trials one after another in one process). Nothing "
            "was written.")


def _trial_progress(progress, t: int, trials: int):
    if progress is None:
        return None
    return lambda stage, done, total: progress(f"trial {t + 1}/{trials}, {stage}", done, total)


def collect_release_dir(prepared, release_dir: Path, collector: AccuracyCollector) -> None:
    """Compare the t1/ and t2/ files of an existing release with the truth of the inputs
    (read and checked by `production.read_release`; every row must be a population
    group of these inputs)."""
    t1, t2 = read_release(prepared, release_dir)
    found = {"t1": np.zeros(len(t1), bool), "t2": np.zeros(len(t2), bool)}
    geo = prepared.inputs.geography
    # each table's rows by geography level once; a level's rows are then found among them
    keys = {"t1": _rows_by_geo(t1), "t2": _rows_by_geo(t2)}
    for lvl, plan in prepared.plans.items():
        counts = prepared.counts(lvl)
        totals = counts.totals()
        codes = pd.Index(prepared.catalog.codes(lvl.geo, lvl.iteration_level).astype(str))
        regions = pd.Index(geo.regions[lvl.geo].astype(str))
        detailed_only = prepared.catalog.detailed_only(lvl.geo, lvl.iteration_level)
        n_it = len(codes)
        # the level's rows of each table (a row of no group of the inputs is in no level's)
        rows1, g1 = _level_groups(keys["t1"], lvl.geo, regions, codes)
        rows2, g2 = _level_groups(keys["t2"], lvl.geo, regions, codes)
        sub1, sub2 = t1.iloc[rows1], t2.iloc[rows2]
        found["t1"][rows1] = True
        found["t2"][rows2] = True
        # The stat level of each group follows from the number of T2 rows it has.
        stat = np.zeros(counts.n_groups, dtype=np.int8)
        stat[detailed_only[np.arange(counts.n_groups) % n_it]] = TOTAL_ONLY
        cells_by_group = {}
        if len(sub2):
            # One sort of all the level's cells (group, then sex 1 ascending ages, then sex 2,
            # as the engine orders them), not a pandas sort per group: the same tables in a
            # fraction of the time (10,000 groups of the sample took half a minute).
            keep = (sub2["AGESTART"] != "*").to_numpy()
            body = sub2[keep]
            gb = g2[keep]
            order = np.lexsort((body["AGESTART"].astype(int).to_numpy(), body["SEX"].astype(int).to_numpy(), gb))
            gb, vals = gb[order], body["COUNT"].to_numpy(np.int64)[order]
            starts = np.flatnonzero(np.r_[True, gb[1:] != gb[:-1]]) if len(gb) else np.zeros(0, np.int64)
            for a, b in zip(starts, np.r_[starts[1:], len(gb)].astype(np.int64)):
                k = {8: 1, 18: 2, 46: 3}.get(int(b - a))
                if k is None:
                    continue
                stat[gb[a]] = k
                cells_by_group[int(gb[a])] = vals[a:b]
        from engine.tabulation.postprocess import Published

        t1_val = np.zeros(counts.n_groups, np.int64)
        released = np.zeros(counts.n_groups, bool)
        t1_val[g1] = sub1["COUNT"].to_numpy(np.int64)
        released[g1] = True
        tables, true_tables = {}, {}
        for k in (1, 2, 3):
            gs = np.array(sorted(g for g in cells_by_group if stat[g] == k), dtype=np.int64)
            if len(gs):
                cells = np.stack([cells_by_group[int(g)] for g in gs])
                tables[k] = (gs, cells, cells.reshape(len(gs), 2, -1).sum(axis=2))
                true_tables[k] = collapse_cells(counts.cells_of(gs), k)
        pub = Published(plan, 0, counts.n_groups, stat, t1_val, released, tables, totals, true_tables)
        collector.add_published(plan, counts, pub)
    _refuse_unknown_groups([(t1, np.where(found["t1"], 0, -1)), (t2, np.where(found["t2"], 0, -1))])


def format_tabulation(tab: dict | None) -> str | None:
    """One line: the groups each rule of the Tabulation System's suppression removed."""
    if not tab:
        return None
    n = tab["trials"]
    return ("Tabulation System suppression (outside the DAS): "
            + ", ".join(f"{c:,} groups removed by {rule}" for rule, c in tab["groups_removed"].items())
            + (f" over {n:,} trials" if n != 1 else "") + " (per level in accuracy.json).")


def format_report(df: pd.DataFrame, limit: int = 60) -> str:
    """The report as text, and what the Tabulation System's rules removed if they ran."""
    tab = format_tabulation(df.attrs.get("tabulation_suppression"))
    return _format_table(df, limit) + (f"\n{tab}" if tab else "")


def _format_table(df: pd.DataFrame, limit: int) -> str:
    if df.empty:
        return "No published counts to compare."
    cols = ["geo_level", "iteration_level", "table", "true_size", "counts_compared", "p95_abs_error",
            "predicted_moe95_exact"]
    text = df[cols].head(limit).to_string(index=False)
    if len(df) > limit:
        text += f"\n... {len(df) - limit} more rows in accuracy.csv"
    return text
