"""Tumult Analytics against this engine on one population group level.

The workload: (COUNTY, 2) noisy totals of every (county, sub-state Detailed
iteration) group of the US, discrete Gaussian noise at the 2020 budget (rho = 0.159),
from the person and geography files on disk to the noisy counts in memory. Each side
runs in its own process; Tumult in the virtual environment made by
benchmarks/setup_tumult_env.sh. Called by bench_mechanism.py --tumult-venv, or:

    python benchmarks/bench_tumult.py --tumult-venv .venv-tumult --persons 100000
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
RHO = 0.159
LEVEL = ("COUNTY", 2)


def ours(params: str, data: str, rho: float) -> dict:
    """The same workload with this engine: count, flat-map, one discrete Gaussian draw per group."""
    t0 = time.perf_counter()
    from calculators import budget
    from calculators.config import SafeTabConfig
    from calculators.levels import POPULATION_GROUP_LEVELS, PopulationGroupLevel
    from engine import noise
    from engine.run import prepare

    level = PopulationGroupLevel(*LEVEL)
    config = SafeTabConfig.read(Path(params) / "config.json").updated(
        run_pr=False, **{lvl.budget_key: (rho if lvl == level else 0.0) for lvl in POPULATION_GROUP_LEVELS})
    prepared = prepare(params, data, config=config)
    counts = prepared.counts(level)
    S = prepared.stability[2]
    noisy = counts.totals() + noise.sample_discrete_gaussian(budget.sigma2_exact(rho, S), counts.n_groups)
    return {"seconds": time.perf_counter() - t0, "groups": int(len(noisy)), "stability": S}


def compare(venv: Path, persons: int, spec: Path, workdir: Path, fmt: str = "txt") -> None:
    from benchmarks.bench_mechanism import ensure_sample

    py = Path(venv) / "bin" / "python"
    if not py.exists():
        print(f"Tumult comparison skipped: no virtual environment at {venv} "
              f"(create it with: bash benchmarks/setup_tumult_env.sh {venv})")
        return
    if fmt != "txt":
        print("Tumult comparison uses the text files; generating them.")
    root = ensure_sample(persons, spec, workdir, "txt")
    params, data = str(root / "params"), str(root / "data")
    mine = json.loads(subprocess.run([sys.executable, __file__, "--ours", params, data], cwd=REPO, check=True,
                                     capture_output=True, text=True).stdout.strip().splitlines()[-1])
    proc = subprocess.run([str(py), str(REPO / "benchmarks" / "_tumult_workload.py"), params, data, str(RHO),
                           str(mine["stability"])], cwd=REPO, capture_output=True, text=True)
    if proc.returncode != 0:
        print("Tumult run failed:\n" + proc.stderr[-3000:])
        return
    theirs = json.loads(proc.stdout.strip().splitlines()[-1])
    print(f"\nOne level, {LEVEL}, {persons:,} persons, rho {RHO}:")
    print(f"  this engine     : {mine['seconds']:8.2f} s  ({mine['groups']:,} groups)")
    print(f"  Tumult Analytics: {theirs['seconds']:8.2f} s  ({theirs['groups']:,} groups; "
          f"{theirs['spark_start_seconds']:.1f} s of it starting Spark)")
    print(f"  ratio (Tumult / this engine): {theirs['seconds'] / mine['seconds']:.1f}x")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tumult-venv", type=Path, default=REPO / ".venv-tumult")
    ap.add_argument("--persons", type=int, default=100_000)
    ap.add_argument("--spec", type=Path, default=REPO.parent / "shared" / "reference" / "safetab-p-2020")
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/safetab-bench"))
    ap.add_argument("--ours", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.ours:
        print(json.dumps(ours(*args.ours, RHO)))
        return
    args.workdir.mkdir(parents=True, exist_ok=True)
    compare(args.tumult_venv, args.persons, args.spec, args.workdir)


if __name__ == "__main__":
    main()
