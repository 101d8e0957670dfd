"""Speed and memory of the full mechanism, from persons on disk to t1/t2 on disk.

For each size N: writes a synthetic nation with `python -m engine sample --persons N
--spec SPEC_DIR` (not timed; the 2020 spec files and their config by default: every
population group level, US and PR, suppression on), then times
`python -m engine run PARAMS DATA OUT` as a separate process with the secure noise
source, and reads its peak resident memory from the operating system.

    python benchmarks/bench_mechanism.py                      # 1M and 10M persons
    python benchmarks/bench_mechanism.py --persons 100000000  # the scale run
    python benchmarks/bench_mechanism.py --persons 1000000 --tumult-venv .venv-tumult

With --tumult-venv (made by benchmarks/setup_tumult_env.sh) it also runs one
population group level, (COUNTY, 2) noisy totals, through Tumult Analytics and
through this engine on the same files, and prints the ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
DEFAULT_SPEC = REPO.parent / "shared" / "reference" / "safetab-p-2020"
#: (persons, seconds, GB) targets of the speed issue.
TARGETS = {1_000_000: (15, None), 10_000_000: (120, 6.0)}


def run_child(cmd: list[str], cwd: Path = REPO) -> tuple[int, str]:
    """Exit code and stderr tail of a child process."""
    proc = subprocess.run(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    return proc.returncode, proc.stderr.decode(errors="replace")[-2000:]


def ensure_sample(n: int, spec: Path, workdir: Path, fmt: str) -> Path:
    from engine.release.publish import is_own_output

    root = workdir / f"nation-{n}-{spec.name}-{fmt}"
    if not is_own_output(root):  # a complete sample carries SHA256SUMS (written last)
        shutil.rmtree(root, ignore_errors=True)  # e.g. one made before samples were published whole
        print(f"  generating {n:,} persons into {root} ...", flush=True)
        subprocess.run([sys.executable, "-m", "engine", "sample", "--persons", str(n), "--spec", str(spec),
                        "--format", fmt, "--quiet", str(root)], cwd=REPO, check=True, stdout=subprocess.DEVNULL)
    return root


def bench_full(n: int, spec: Path, workdir: Path, fmt: str, repeat: int) -> dict:
    root = ensure_sample(n, spec, workdir, fmt)
    out = workdir / f"out-{n}"
    best = None
    for _ in range(repeat):
        # A fresh process per repetition, so the peak memory is this run's alone.
        code, err = run_child([sys.executable, str(Path(__file__).resolve()), "--child-run",
                               str(root / "params"), str(root / "data"), str(out)])
        if code != 0:
            raise SystemExit(f"engine run failed for {n:,} persons:\n{err}")
        res = json.loads(Path(f"{out}.child.json").read_text())
        if best is None or res["wall"] < best["wall"]:
            best = res
    m = json.loads((out / "manifest.json").read_text())
    groups = sum(lvl["groups"] for lvl in m["levels"].values())
    draws = sum(lvl.get("noise_draws", 0) for lvl in m["levels"].values())
    shutil.rmtree(out, ignore_errors=True)
    return {"persons": n, "groups": groups, "draws": draws, "wall": best["wall"], "rss_gb": best["rss_gb"],
            "tracts": m["levels"].get("(TRACT, 2)", {}).get("regions"), "timings": m["timings_seconds"]}


def _child_run(params: str, data: str, out: str) -> None:
    """Run the engine exactly as the command line does, and report wall time and peak RSS.

    The engine is this wrapper's only child, so RUSAGE_CHILDREN's peak is the engine's own.
    """
    import resource

    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "engine", "run", params, data, out, "--overwrite", "--quiet"],
                          cwd=REPO)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(proc.returncode)
    rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024**2
    # beside OUT_DIR, not in it: --overwrite replaces only a folder the engine wrote whole
    Path(f"{out}.child.json").write_text(json.dumps({"wall": wall, "rss_gb": rss}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--persons", type=float, nargs="+", default=[1e6, 1e7])
    ap.add_argument("--spec", type=Path, default=DEFAULT_SPEC, help="spec files (and config.json) to use")
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/safetab-bench"))
    ap.add_argument("--format", choices=["txt", "parquet"], default="txt")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--tumult-venv", type=Path, default=None)
    ap.add_argument("--child-run", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child_run:
        _child_run(*args.child_run)
        return
    if not args.spec.is_dir():
        raise SystemExit(f"spec folder {args.spec} not found (the 2020 files live in ../shared/reference)")
    args.workdir.mkdir(parents=True, exist_ok=True)
    print(f"Full mechanism, spec files {args.spec}, secure noise, {os.cpu_count()} cores")
    print(f"{'persons':>12} {'tracts':>7} {'groups':>12} {'noise draws':>12} {'wall s':>8} {'peak GB':>8}  target")
    for n in [int(x) for x in args.persons]:
        r = bench_full(n, args.spec, args.workdir, args.format, args.repeat)
        t = TARGETS.get(n)
        verdict = ""
        if t:
            ok = r["wall"] <= t[0] and (t[1] is None or r["rss_gb"] < t[1])
            verdict = f"<= {t[0]} s" + (f", < {t[1]} GB" if t[1] else "") + (": met" if ok else ": MISSED")
        print(f"{n:>12,} {r['tracts'] or 0:>7,} {r['groups']:>12,} {r['draws']:>12,} {r['wall']:>8.1f} "
              f"{r['rss_gb']:>8.2f}  {verdict}", flush=True)
        print(f"{'':>12} phases: {r['timings']}", flush=True)
    if args.tumult_venv:
        from benchmarks.bench_tumult import compare

        compare(args.tumult_venv, int(args.persons[0]), args.spec, args.workdir, args.format)


if __name__ == "__main__":
    main()
