"""Cost of `python -m engine run --consistency`: the hierarchy stage against the rest of the run.

Writes a synthetic nation with `python -m engine sample --persons N` (not timed; the
generated spec files by default, `--spec DIR` for others such as the 2020 files), then
runs `python -m engine run PARAMS DATA OUT --consistency METHOD` as a separate process
for none and each method, `--repeat` times each, with the secure noise source. For each
run it reads from the manifest the seconds of the hierarchy stage (gathering the nested
levels, adjusting them, the cells) and of the adjust function alone, and takes the
wall clock of the whole process. "Rest of the run" is the wall clock less the stage.

    python benchmarks/bench_consistency.py                     # 10 million persons
    python benchmarks/bench_consistency.py --persons 1e6 --repeat 1
    python benchmarks/bench_consistency.py --spec ../shared/reference/safetab-p-2020
    python benchmarks/bench_consistency.py --small      # seconds (CI): checks that it works

--small generates 20,000 persons and runs each method once, the commands in this process
(`engine.cli.main`, the same code without a process start-up per run).

Target (issue 13): at 10 million persons the option adds at most the time of the rest
of the run (stage <= rest). Medians over the repetitions are printed. The sample is
removed at the end unless --keep is given (10 million persons take about 1 GB).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from benchmarks._shared import SMALL_FLAG, engine_cli, ensure_sample, result, workdir  # noqa: E402


def _load() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "n/a"


def run_once(root: Path, out: Path, method: str, here: bool = False) -> dict:
    """One run as a separate process (`here`, the small mode: the same command in this process)."""
    proc = engine_cli(["run", str(root / "params"), str(root / "data"), str(out), "--overwrite", "--quiet",
                       "--consistency", method], here=here)
    wall = proc.wall
    if proc.returncode != 0:
        raise SystemExit(f"engine run --consistency {method} failed:\n{proc.stderr[-2000:]}")
    m = json.loads((out / "manifest.json").read_text())
    c = m["postprocessing"]["consistency"]
    return {"wall": wall, "stage": c.get("seconds", 0.0), "adjust": c.get("adjust_seconds", 0.0),
            "violations_before": c.get("violations_before"), "violations_after": c.get("violations_after"),
            "groups": c.get("groups_adjusted"),
            "tracts": m["levels"].get("(TRACT, 2)", {}).get("regions"),
            "iterations": m["levels"].get("(TRACT, 2)", {}).get("iterations")}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--persons", type=float, default=1e7)
    ap.add_argument("--spec", type=Path, default=None, help="spec files (and config.json); default: generated")
    ap.add_argument("--methods", nargs="+", default=["least-squares", "tree-dp"])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--workdir", type=Path, default=None,
                    help="where the sample is generated (default /tmp/safetab-consistency-bench; with --small a temporary folder)")
    ap.add_argument("--keep", action="store_true", help="keep the generated sample")
    ap.add_argument(SMALL_FLAG, action="store_true",
                    help="20,000 persons, one run per method, in this process (CI: checks that it works)")
    args = ap.parse_args()
    if args.small:
        args.persons, args.repeat = 2e4, 1
    n = int(args.persons)
    figures = {}
    with workdir(args.workdir, args.small, "/tmp/safetab-consistency-bench") as folder:
        _run(args, n, figures, Path(folder))


def _run(args, n: int, figures: dict, folder: Path) -> None:
    root = ensure_sample(n, args.spec, folder, "txt", here=args.small)
    out = folder / "out"
    print(f"{n:,} persons, spec {args.spec or 'generated'}, {os.cpu_count()} cores, load average {_load()}")
    print(f"{'method':>14} {'wall s':>8} {'stage s':>8} {'adjust s':>9} {'rest s':>8} {'stage/rest':>10}  target")
    try:
        for method in ["none", *args.methods]:
            runs = [run_once(root, out, method, args.small) for _ in range(args.repeat)]
            wall = statistics.median(r["wall"] for r in runs)
            stage = statistics.median(r["stage"] for r in runs)
            adjust = statistics.median(r["adjust"] for r in runs)
            rest = statistics.median(r["wall"] - r["stage"] for r in runs)
            verdict = "" if method == "none" else ("met" if stage <= rest else "MISSED")
            figures[method] = {"wall": wall, "stage": stage, "adjust": adjust, "rest": rest,
                               "violations_after": max(r["violations_after"] or 0 for r in runs)}
            print(f"{method:>14} {wall:>8.1f} {stage:>8.2f} {adjust:>9.2f} {rest:>8.1f} {stage / rest:>10.3f}  "
                  f"{verdict}", flush=True)
            if method != "none":
                r = runs[0]
                print(f"{'':>14} {r['groups']:,} released groups in the trees ({r['tracts']:,} tracts, "
                      f"{r['iterations']:,} sub-state Detailed iterations), {r['violations_before']:,} "
                      f"violations before, {r['violations_after']:,} after; walls {[round(x['wall'], 1) for x in runs]}", flush=True)
    finally:
        shutil.rmtree(out, ignore_errors=True)
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    print(f"load average after: {_load()}")
    adjusted = {m: f for m, f in figures.items() if m != "none"}
    result(persons=n, methods=figures,
           checks={"nested levels add up after every method (0 violations)":
                   bool(adjusted) and all(f["violations_after"] == 0 for f in adjusted.values())})


if __name__ == "__main__":
    main()
