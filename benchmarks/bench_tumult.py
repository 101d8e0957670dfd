"""Tumult Analytics against this engine on one population group level, side by side.

The workload (`benchmarks/_shared.one_level`): (COUNTY, 2) noisy totals of every
(county, sub-state Detailed iteration) group of the US, discrete Gaussian noise at the
2020 budget (rho = 0.159), from the person and geography files on disk to the noisy
counts in memory. Each side runs in its own process, one after the other, on the same
synthetic nation (the 2020 spec files, text input); Tumult Analytics in the virtual
environment made by benchmarks/setup_tumult_env.sh (`_tumult_workload.py`), skipped
with a note when that environment is absent.

Each side's time starts once its libraries are imported (Python, numpy, pyarrow and the
engine's modules; PySpark and tmlt.analytics) and ends with the noisy counts in memory:
Tumult's includes starting Spark (reported apart), ours loading its compiled kernels.
The import times are reported too. Each side also reports a warm time: the same workload
again in the same process (this engine always; Tumult with --warm, a second query in the
same Spark session), the steady state once the one-time start-up costs are paid.

    python benchmarks/bench_tumult.py --tumult-venv /work/venv-tumult --persons 1e6 1e7
    python benchmarks/bench_tumult.py --tumult-venv /work/venv-tumult --persons 1e6 --warm
    python benchmarks/bench_tumult.py --small       # seconds (CI): 5,000 persons, Tumult if present

(--small generates the nation and runs this engine's side in the benchmark's own process:
it checks that the benchmark works; compare the sides with a full run.)
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks._shared import REPO, SMALL_FLAG, SPEC_2020, TUMULT_LEVEL, TUMULT_RHO, ensure_sample, load, \
    machine, result, spec_or_none, workdir  # noqa: E402


def ours(params: str, data: str) -> dict:
    """This engine's side in this process: imports, then the workload."""
    import time

    t0 = time.perf_counter()
    import engine.noise  # noqa: F401 - the imports are timed apart
    import engine.run  # noqa: F401
    from benchmarks._shared import one_level

    imports = time.perf_counter() - t0
    cold = one_level(params, data)
    # again in the same process: loading the compiled kernels and the libraries' own
    # first-use set-up are behind it, as Spark's start is behind a second Tumult query
    warm = one_level(params, data)
    return {**cold, "import_seconds": imports, "warm_seconds": warm["seconds"]}


def _key_set_size(root: Path) -> int:
    """Groups of the workload counted from the files alone, as Tumult's KeySet: US counties
    of GRF-C times the level-2 iterations that are not Detailed-only."""
    import csv

    def rows(path: Path):
        with open(path, encoding="utf-8", newline="") as fh:
            yield from csv.DictReader(fh, delimiter="|")

    grf = next((root / "data").glob("GRF-C.*"))
    if grf.suffix == ".parquet":
        import pyarrow.parquet as pq

        t = pq.read_table(grf, columns=["TABBLKST", "TABBLKCOU"]).to_pydict()
        counties = set(zip(t["TABBLKST"], t["TABBLKCOU"]))
    else:
        counties = {(r["TABBLKST"], r["TABBLKCOU"]) for r in rows(grf)}
    iterations = {r["ITERATION_CODE"] for name in ("race", "ethnicity")
                  for r in rows(root / "params" / f"{name}-characteristic-iterations.txt")
                  if r["LEVEL"] == "2" and r["DETAILED_ONLY"] != "True"}
    return sum(1 for st, _ in counties if st != "72") * len(iterations)


def compare(venv: Path | None, persons: int, spec: Path | None, workdir: Path, repeat: int,
            warm: bool = False, here: bool = False) -> dict:
    """Both sides on a nation of `persons`; `here` (the small mode): the nation and this
    engine's side in this process (its import time is then the little left to import)."""
    root = ensure_sample(persons, spec, workdir, "txt", here=here)
    params, data = str(root / "params"), str(root / "data")
    mine, warm_best = None, float("inf")
    for _ in range(repeat):
        if here:
            r = ours(params, data)
        else:
            out = subprocess.run([sys.executable, __file__, "--ours", params, data], cwd=REPO, check=True,
                                 capture_output=True, text=True).stdout
            r = json.loads(out.strip().splitlines()[-1])
        mine = r if mine is None or r["seconds"] < mine["seconds"] else mine
        warm_best = min(warm_best, r["warm_seconds"])
    mine["warm_seconds"] = warm_best
    row = {"persons": persons, "groups": mine["groups"], "expected_groups": _key_set_size(root),
           "ours_seconds": mine["seconds"], "ours_warm_seconds": mine["warm_seconds"],
           "ours_import_seconds": mine["import_seconds"], "load": load()}
    print(f"\nOne level, {TUMULT_LEVEL}, {persons:,} persons, rho {TUMULT_RHO} ({load()}):")
    print(f"  this engine     : {mine['seconds']:8.2f} s  ({mine['groups']:,} groups; imports "
          f"{mine['import_seconds']:.2f} s more); warm (a second run in the same process) "
          f"{mine['warm_seconds']:.2f} s")
    py = Path(venv) / "bin" / "python" if venv is not None else None
    if py is None or not py.exists():
        print(f"  Tumult Analytics: skipped: no virtual environment at {venv} (create it with: bash "
              f"benchmarks/setup_tumult_env.sh DIR, then pass --tumult-venv DIR)")
        row["tumult"] = "skipped"
        return row
    proc = subprocess.run([str(py), str(REPO / "benchmarks" / "_tumult_workload.py"), params, data, str(TUMULT_RHO),
                           str(mine["stability"]), "2" if warm else "1"], cwd=REPO, capture_output=True,
                          text=True)
    if proc.returncode != 0:
        print("  Tumult Analytics: failed:\n" + proc.stderr[-3000:])
        row["tumult"] = "failed"
        return row
    theirs = json.loads(proc.stdout.strip().splitlines()[-1])
    ratio = theirs["seconds"] / mine["seconds"]
    ratio_run = (theirs["seconds"] - theirs["spark_start_seconds"]) / mine["seconds"]
    print(f"  Tumult Analytics: {theirs['seconds']:8.2f} s  ({theirs['groups']:,} groups; "
          f"{theirs['spark_start_seconds']:.1f} s of it starting Spark; imports {theirs.get('import_seconds', 0):.2f} s "
          "more)")
    sides = "this engine in the benchmark's process (--small)" if here else "each in a fresh process"
    print(f"  ratio (Tumult / this engine), {sides}: {ratio:.1f}x ({ratio_run:.1f}x without Spark's start)")
    if theirs.get("warm_seconds"):
        tw = min(theirs["warm_seconds"])
        row.update(tumult_warm_seconds=tw, ratio_warm=tw / mine["warm_seconds"])
        print(f"  warm, a second run in the same process: Tumult {tw:.2f} s, this engine {mine['warm_seconds']:.2f} s: "
              f"{tw / mine['warm_seconds']:.1f}x")
    if theirs["groups"] != mine["groups"]:
        print(f"  WARNING: the two sides counted different numbers of groups")
    row.update(tumult_seconds=theirs["seconds"], tumult_spark_start=theirs["spark_start_seconds"],
               tumult_groups=theirs["groups"], ratio=ratio, ratio_without_spark_start=ratio_run)
    return row


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tumult-venv", type=Path, default=REPO / ".venv-tumult")
    ap.add_argument("--persons", type=float, nargs="+", default=[1e6, 1e7])
    ap.add_argument("--spec", type=Path, default=SPEC_2020)
    ap.add_argument("--workdir", type=Path, default=None,
                    help="where samples are generated (default /tmp/safetab-bench; with --small a temporary folder)")
    ap.add_argument("--repeat", type=int, default=3, help="runs of this engine's side; the fastest is kept")
    ap.add_argument("--warm", action="store_true",
                    help="also time a second Tumult query in the same Spark session (doubles Tumult's time); this "
                         "engine's warm run is always timed")
    ap.add_argument(SMALL_FLAG, action="store_true",
                    help="5,000 persons, one run of each side, this engine's in this process (CI)")
    ap.add_argument("--ours", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.ours:
        print(json.dumps(ours(*args.ours)))
        return 0
    print(f"Tumult Analytics vs this engine, {machine()}")
    sizes = [5_000] if args.small else [int(x) for x in args.persons]
    with workdir(args.workdir, args.small) as folder:
        rows = [compare(args.tumult_venv, n, spec_or_none(args.spec), Path(folder), 1 if args.small else args.repeat,
                        warm=args.warm or args.small, here=args.small)
                for n in sizes]
    checks = {"this engine counted every (county, iteration) group of the files":
              all(r["groups"] == r["expected_groups"] > 0 for r in rows)}
    if any("tumult_groups" in r for r in rows):
        checks["Tumult Analytics counted the same groups"] = all(r.get("tumult_groups") == r["groups"] for r in rows)
    result(runs=rows, checks=checks)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
