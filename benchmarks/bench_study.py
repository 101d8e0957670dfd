"""Speed of accuracy studies: `python -m engine accuracy ... --trials T --layout L`.

For each layout (studio, production, both) one study of T trials (seeded, so every
layout draws the same noise) runs as a separate process, measured by the operating
system (wall clock, user + system CPU, peak memory); inside it, the time and process
CPU at the start of every trial are recorded (from the progress of
`engine.reports.accuracy.accuracy_report`). The cost of one trial is the median of
trials 2..T (the first also computes the totals of every level, kept for the others),
the fixed cost the rest (start-up, reading and counting the persons, writing the
reports):

    fixed = total - T x per trial

It prints both for every layout, the ratio of the production layouts' per-trial cost to
the studio layout's (issue 24's target: at most 1.5), and the time of a study of
--extrapolate trials (fixed + trials x per trial; target for 25 national trials, both
layouts: under one hour). The load average is printed before and after each run.

With --jobs N (accuracy --jobs: the first trial in the study's process, the others in N
worker processes at once) trials overlap, so they are not timed one by one: the trials
span from the start of the first to the end of the last ("trials done" progress), fixed
is the rest, and per trial = (total - fixed) / T. The first trial (alone) and the pace
of the others with the workers are printed apart, and the extrapolation is fixed + first
+ (trials - 1) x that pace. Use at least 2N + 1 trials. Memory: the peak of the largest
single process (from the operating system) and the largest PSS of the study's process
and its workers together (pages shared by the fork counted once), sampled every second.

    python benchmarks/bench_study.py --persons 1e6                 # a generated nation
    flock /work/bigjob.lock python benchmarks/bench_study.py --data /work/data/h24/n100m-pq --trials 3
    flock /work/bigjob.lock python benchmarks/bench_study.py --data /work/data/h24/n100m-pq --trials 5 \
        --jobs 2 --layouts both
    python benchmarks/bench_study.py --small                       # seconds (CI; --jobs 2 too)

--small runs the nation's generation and every study in this process (the same code,
one interpreter start-up: it checks that the benchmark works; its fixed costs leave the
start-up out).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks._shared import SMALL_FLAG, SPEC_2020, ensure_sample, load, machine, measure, measure_here, result, \
    spec_or_none, workdir  # noqa: E402

LAYOUTS = ("studio", "production", "both")


def _child(params: str, data: str, out: str, trials: int, layout: str, jobs: int = 1) -> None:
    """The study in this process; prints `TIMES {json}` (`_study_times`)."""
    import json

    print("TIMES " + json.dumps(_study_times(params, data, out, trials, layout, jobs)), flush=True)


def _study_times(params: str, data: str, out: str, trials: int, layout: str, jobs: int = 1,
                 cpu0: float = 0.0) -> dict:
    """The study in this process: wall clock and process CPU (this process's own, less
    `cpu0`: the CPU it had used before the study when that is not its start) when each
    trial starts here, when each trial is done (`--jobs` > 1: the parent's "trials done"
    progress) and when the study ends, and the largest total proportional set size (PSS)
    of this process and its workers, sampled every second."""
    import os
    import threading
    import time

    from engine.reports.accuracy import accuracy_report

    marks: list[tuple[float, float]] = []
    done: list[tuple[float, float, float]] = []
    seen: set[str] = set()

    def cpu() -> float:
        t = os.times()
        return t.user + t.system - cpu0

    def progress(stage: str, n: float, total: float) -> None:
        trial = stage.split(",")[0]
        if trial.startswith("trial ") and trial not in seen:
            seen.add(trial)
            marks.append((time.perf_counter(), cpu()))
        elif trial == "trials done" and (not done or done[-1][2] != n):
            done.append((time.perf_counter(), cpu(), n))

    pss = [0.0]
    stop = threading.Event()

    def sample() -> None:
        while not stop.wait(1.0):
            pss[0] = max(pss[0], _tree_pss_gb(os.getpid()))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    t0 = time.perf_counter()
    accuracy_report(params, data, out, trials=trials, seed=1, overwrite=True, progress=progress, layout=layout,
                    jobs=jobs)
    marks.append((time.perf_counter(), cpu()))
    stop.set()
    sampler.join()
    # Sampled at the end as well: a study that ends within the sampler's first second was
    # never sampled and reported 0 GB (a figure that depended on the machine's speed).
    pss[0] = max(pss[0], _tree_pss_gb(os.getpid()))
    return {"start": t0, "marks": marks, "done": done, "pss_gb": pss[0]}


def _tree_pss_gb(pid: int) -> float:
    """PSS of a process and its child processes (Linux; 0 elsewhere): the memory they use
    together, pages shared by a fork counted once."""
    total = 0
    procs = [pid]
    try:
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    with open(f"/proc/{entry}/stat") as f:
                        if int(f.read().rsplit(")", 1)[1].split()[1]) == pid:
                            procs.append(int(entry))
                except (OSError, ValueError, IndexError):
                    continue
        for p in procs:
            try:
                with open(f"/proc/{p}/smaps_rollup") as f:
                    total += sum(int(ln.split()[1]) for ln in f if ln.startswith("Pss:"))
            except OSError:
                continue
    except OSError:
        return 0.0
    return total / 1024**2


def study(root: Path, out: Path, trials: int, layout: str, jobs: int = 1, here: bool = False) -> dict:
    """One study as a child process: its totals from the operating system, the per-trial
    cost from inside it (`here`, the small mode: in this process, `_shared.measure_here`;
    the totals then leave out the interpreter's start-up).

    One after another (no workers), a trial costs the median of trials 2..T (the first also
    computes the totals of every level) and fixed = total - T x per trial. With workers
    (`--jobs` > 1: the first trial here, the others in the workers, several at once) the
    trials run from the start of the first to the end of the last: fixed is the rest of the
    study (wall; CPU: this process's own outside that span), per trial is (total - fixed) /
    T, and the first trial and the parallel ones are also given apart
    (`parallel_per_trial`: wall per trial once the workers run)."""
    import json
    import statistics

    child = (str(root / "params"), str(root / "data"), str(out), trials, layout, jobs)
    if here:
        m, times = measure_here(lambda: _study_times(*child, cpu0=sum(os.times()[:2])))
    else:
        m = measure([sys.executable, __file__, "--child", *map(str, child)], capture=True)
    if m.returncode != 0:
        raise SystemExit(f"accuracy --trials {trials} --layout {layout} --jobs {jobs} failed:\n{m.stderr}")
    digests = _digests(out)
    shutil.rmtree(out, ignore_errors=True)
    if not here:
        times = json.loads(next(ln for ln in m.stdout.splitlines() if ln.startswith("TIMES "))[6:])
    marks, done = times["marks"], times["done"]
    row = {"trials": trials, "jobs": jobs, "wall": m.wall, "cpu": m.cpu, "peak_gb": m.peak_gb,
           "pss_gb": times["pss_gb"], "load": [m.load_before, m.load_after], "reports": digests}
    if not done:  # one after another
        walls = [b[0] - a[0] for a, b in zip(marks, marks[1:])]
        cpus = [b[1] - a[1] for a, b in zip(marks, marks[1:])]
        later = slice(1, None) if trials > 1 else slice(None)
        per = {"wall": statistics.median(walls[later]), "cpu": statistics.median(cpus[later])}
        fixed = {"wall": m.wall - trials * per["wall"], "cpu": m.cpu - trials * per["cpu"]}
        return {**row, "trial_walls": walls, "trial_cpus": cpus, "per_trial": per, "fixed": fixed,
                "first_trial": per, "parallel_per_trial": per}
    first, end = marks[0], marks[-1]
    first_done, last_done = done[0], done[-1]
    fixed = {"wall": m.wall - (last_done[0] - first[0]), "cpu": first[1] + end[1] - last_done[1]}
    per = {k: (getattr(m, k) - fixed[k]) / trials for k in ("wall", "cpu")}
    one = {"wall": first_done[0] - first[0], "cpu": first_done[1] - first[1]}
    parallel = {"wall": (last_done[0] - first_done[0]) / max(trials - 1, 1),
                "cpu": (m.cpu - fixed["cpu"] - one["cpu"]) / max(trials - 1, 1)}
    return {**row, "done_walls": [d[0] - first[0] for d in done], "per_trial": per, "fixed": fixed,
            "first_trial": one, "parallel_per_trial": parallel}


def _show(layout: str, r: dict) -> dict:
    """Print one study's figures; returns them."""
    per, fixed = r["per_trial"], r["fixed"]
    print(f"{layout:>10}: {r['trials']} trials, --jobs {r['jobs']}: {r['wall']:8.1f} s wall / {r['cpu']:8.1f} s "
          f"CPU (peak {r['peak_gb']:.2f} GB in one process, {r['pss_gb']:.2f} GB PSS of all); per trial "
          f"{per['wall']:.2f} s wall / {per['cpu']:.2f} s CPU, fixed {fixed['wall']:.1f} s / "
          f"{fixed['cpu']:.1f} s ({r['load'][0]} before, {r['load'][1].split(' on ')[0]} after)", flush=True)
    if "done_walls" in r:
        one, par = r["first_trial"], r["parallel_per_trial"]
        print(f"{'':>10}  in parallel: the first trial alone {one['wall']:.2f} s wall / {one['cpu']:.2f} s "
              f"CPU, then {par['wall']:.2f} s wall / {par['cpu']:.2f} s CPU per trial with the workers "
              f"(per trial above = (wall - fixed) / trials)", flush=True)
    return r


def _digests(out: Path) -> dict[str, str]:
    """SHA-256 of every CSV report of a study (the JSON ones carry the time they were made)."""
    import hashlib

    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(out.glob("*.csv"))}


def _same_reports(rows: dict) -> dict[str, bool]:
    """Seeded studies draw the same noise whatever the layout, so "both" writes exactly the
    studio layout's and the production layouts' reports."""
    checks = {}
    if "both" not in rows:
        return checks
    both = rows["both"]["reports"]
    for layout in ("studio", "production"):
        if layout in rows:
            own = rows[layout]["reports"]
            checks[f"layout both writes the {layout} layout's reports, byte for byte"] = \
                bool(own) and all(both.get(name) == digest for name, digest in own.items())
    return checks


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--persons", type=float, default=1e6, help="size of a generated nation")
    ap.add_argument("--data", type=Path, default=None, metavar="NATION", help="an existing nation instead")
    ap.add_argument("--spec", type=Path, default=SPEC_2020)
    ap.add_argument("--format", choices=["txt", "parquet"], default="parquet")
    ap.add_argument("--trials", type=int, default=3, help="trials of each study (at least 2; default 3)")
    ap.add_argument("--layouts", nargs="+", choices=LAYOUTS, default=list(LAYOUTS))
    ap.add_argument("--extrapolate", type=int, default=25, help="trials of the study to extrapolate to (25)")
    ap.add_argument("--scale", type=float, default=1.0,
                    help="also scale the per-trial and fixed costs by this factor (e.g. 3.3 from 100M to 330M "
                         "persons; both grow linearly with the persons)")
    ap.add_argument("--workdir", type=Path, default=None)
    ap.add_argument("--jobs", type=int, default=1,
                    help="accuracy --jobs: trials after the first in this many worker processes (default 1); "
                         "use at least 2 x jobs + 1 trials for the parallel part to be measured")
    ap.add_argument(SMALL_FLAG, action="store_true",
                    help="20,000 persons, 3 trials, and the layout both once more with --jobs 2, all in this process "
                         "(CI)")
    ap.add_argument("--child", nargs=6, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        p, d, o, t, layout, jobs = args.child
        _child(p, d, o, int(t), layout, int(jobs))
        return 0
    trials = 3 if args.small else args.trials
    if trials < 2:
        raise SystemExit("--trials must be at least 2")
    if args.jobs < 1:
        raise SystemExit("--jobs must be at least 1")
    print(f"Accuracy studies, {machine()}; {load()}")
    with workdir(args.workdir, args.small) as folder:
        folder = Path(folder)
        root = args.data or ensure_sample(20_000 if args.small else int(args.persons), spec_or_none(args.spec), folder,
                                          "txt" if args.small else args.format, here=args.small)
        print(f"nation {root}")
        rows = {}
        for layout in args.layouts:
            rows[layout] = _show(layout, study(root, folder / "study", trials, layout, args.jobs, args.small))
        out = {"layouts": rows, "checks": _same_reports(rows)}
        if args.small and args.jobs == 1 and "both" in rows:
            # the parallel path too (CI): the same seeded trials give the same reports
            par = out["parallel"] = _show("both", study(root, folder / "study", trials, "both", 2, here=True))
            out["checks"]["--jobs 2 writes the reports of --jobs 1, byte for byte"] = \
                par["reports"] == rows["both"]["reports"]
    if "studio" in rows:
        for layout in ("production", "both"):
            if layout in rows:
                ratio = {k: rows[layout]["per_trial"][k] / max(rows["studio"]["per_trial"][k], 1e-9)
                         for k in ("wall", "cpu")}
                out[f"{layout}_per_studio"] = ratio
                verdict = ""
                if layout == "production":  # the target of issue 24 (both = the two reports at once)
                    verdict = "; target <= 1.5: " + ("met" if ratio["cpu"] <= 1.5 else "MISSED")
                    if rows["studio"]["per_trial"]["cpu"] < 0.5:
                        verdict = "; target not judged: a trial costs too little here to compare"
                print(f"per trial, {layout} / studio: {ratio['wall']:.2f} (wall), {ratio['cpu']:.2f} (CPU){verdict}")
    for layout, r in rows.items():
        s = args.scale
        # the first trial, then the others at the pace measured for them (the same when serial)
        est = {k: s * (r["fixed"][k] + r["first_trial"][k] + (args.extrapolate - 1) * r["parallel_per_trial"][k])
               for k in ("wall", "cpu")}
        r["extrapolated"] = {"trials": args.extrapolate, "scale": s, **est}
        print(f"{layout:>10}: a study of {args.extrapolate} trials" + (f" at {s:g}x the persons" if s != 1 else "")
              + f", --jobs {args.jobs}: {est['wall'] / 60:.1f} min wall (at this load), {est['cpu'] / 60:.1f} min "
                f"CPU (/ 2 cores: {est['cpu'] / 120:.1f} min)")
    print(f"load average after: {load()}")
    result(**out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
