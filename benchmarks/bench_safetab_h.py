"""Speed and memory of SafeTab-H, from households and SafeTab-P's T1 on disk to t3/ and t4/
on disk.

Times `python -m engine safetab-h PARAMS DATA OUT --t1 T1 --config H_CONFIG` as a separate
process with the secure noise source and reads its wall clock, user and system CPU and
peak resident memory from the operating system. The inputs (not timed) are a synthetic
nation of `python -m engine sample` (its households and its scaled 2020 SafeTab-H plan,
`safetab-h-config.json`) and SafeTab-P's own release of it (`python -m engine run --seed 1`,
whose t1/ is the T1), made once per size into --workdir:

    python benchmarks/bench_safetab_h.py --persons 330000000 --format parquet   # the nation
    python benchmarks/bench_safetab_h.py --small                                # seconds: CI

(--small runs every command in this process, `engine.cli.main`: the same code without a
process start-up per command; it checks that the benchmark works.)

Target (issue 45): the households of the 330-million-person nation in under 5 minutes on
2 cores. The last line is `RESULT {json}`; its checks: the run succeeded, every T1 row of
the run's states is a group of t3/ and t4/ or pruned, `check-output` passes.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks._shared import SMALL_FLAG, engine_cli, ensure_sample, load, machine, result, run_engine, \
    workdir  # noqa: E402

TARGET_SECONDS = 300


def _nation(n: int, fmt: str, work: Path, here: bool = False) -> Path:
    root = ensure_sample(n, None, work, fmt, here=here)
    if not any((root / "data").glob("household-records.*")):  # made before households existed: again
        run_engine(["sample", "--persons", str(n), "--format", fmt, "--quiet", "--overwrite", str(root)], here)
    return root


def _t1(root: Path, work: Path, here: bool = False) -> Path:
    """SafeTab-P's release of the nation (seeded: a benchmark input, not a release)."""
    rel = work / f"{root.name}-safetab-p"
    from engine.release.publish import is_own_output

    if not is_own_output(rel):
        shutil.rmtree(rel, ignore_errors=True)
        print(f"  SafeTab-P release of {root.name} into {rel} ...", flush=True)
        run_engine(["run", "--quiet", "--seed", "1", str(root / "params"), str(root / "data"), str(rel)], here)
    return rel


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--persons", type=float, default=330_000_000)
    ap.add_argument("--format", choices=["txt", "parquet"], default="parquet")
    ap.add_argument("--workdir", type=Path, default=None)
    ap.add_argument("--keep-output", action="store_true")
    ap.add_argument(SMALL_FLAG, action="store_true",
                    help="20,000 persons, the commands in this process: seconds (what CI runs)")
    args = ap.parse_args(argv)
    n = 20_000 if args.small else int(args.persons)
    print(machine())
    with workdir(args.workdir, args.small) as work:
        work = Path(work)
        root = _nation(n, args.format, work, args.small)
        rel = _t1(root, work, args.small)
        out = work / f"{root.name}-safetab-h"
        shutil.rmtree(out, ignore_errors=True)
        m = engine_cli(["safetab-h", "--quiet", str(root / "params"), str(root / "data"), str(out), "--t1", str(rel),
                        "--config", str(root / "safetab-h-config.json")], here=args.small)
        ok = m.returncode == 0
        man = json.loads((out / "manifest.json").read_text()) if ok else {}
        check = engine_cli(["check-output", str(root / "safetab-h-config.json"), str(out)], here=args.small,
                           capture=True) if ok else None
        groups = man.get("groups", {})
        rows = man.get("outputs", {}).get("rows", {})
        households = sum(1 for _ in open(root / "data" / "household-records.txt")) - 1 \
            if args.format == "txt" and n <= 1_000_000 else None
        print(f"{n:,} persons: SafeTab-H took {m.wall:,.1f} s wall, {m.cpu:,.1f} s CPU "
              f"({m.user:,.1f} user + {m.sys:,.1f} system), peak {m.peak_gb:.2f} GB; "
              f"{groups.get('tabulated', 0):,} groups, {sum(rows.values()):,} rows")
        print(f"  phases: {man.get('timings_seconds')}")
        print(f"  {m.load_before} before, {m.load_after} after")
        if n >= 300_000_000:
            print(f"  target {TARGET_SECONDS} s: {'met' if m.wall < TARGET_SECONDS else 'NOT met'}")
        if not ok:
            print(m.stderr)
        nt = groups.get("t1_rows_not_tabulated", {})
        result(persons=n, wall=m.wall, cpu=m.cpu, peak_gb=m.peak_gb, groups=groups.get("tabulated", 0),
               rows=sum(rows.values()), households=households, phases=man.get("timings_seconds"), load=load(),
               checks={"run_ok": ok,
                       "every_t1_row_accounted": ok and groups.get("t1_rows_read") == groups.get("tabulated", 0)
                       + sum(nt.values()),
                       "check_output": bool(check is not None and check.returncode == 0)})
        if not args.keep_output:
            shutil.rmtree(out, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
