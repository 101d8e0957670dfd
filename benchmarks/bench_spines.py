"""Speed of the geographic-spine study (engine.reports.spines.spine_study).

For each size N: builds the GRF-C of the synthetic nation `python -m engine sample
--persons N` would write (geography only, `engine.synthetic.nation.synthetic_grf`; not
timed), then times, `--repeat` times, the whole study: the seed's spine optimisation
(`methods.spines.optimize_spine`) on every county, the nation-wide OSED of every place
and AIANNH area before and after and from SafeTab-P's tracts, and the bypass counts.
Prints the median wall time of the study and of the optimisation alone, and the OSED
summary.

    python benchmarks/bench_spines.py                          # 1M, 10M and 100M persons
    python benchmarks/bench_spines.py --persons 1e6 --repeat 5
    python benchmarks/bench_spines.py --small                  # seconds (CI)
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from benchmarks._shared import SMALL_FLAG, load, result  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--persons", type=float, nargs="+", default=[1e6, 1e7, 1e8])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(SMALL_FLAG, action="store_true", help="a 20,000-person geography, one run (CI)")
    args = ap.parse_args(argv)
    if args.small:
        args.persons, args.repeat = [2e4], 1
    print(load())
    rows = []

    from engine.inputs.geography import build_geography
    from engine.reports import spines as rs
    from engine.synthetic.nation import synthetic_grf

    print("| persons | blocks | counties | places + AIANNH | study (median) | optimisation (median) | "
          "mean OSED places, Census -> optimised | mean OSED AIANNH |")
    print("|---:|---:|---:|---:|---:|---:|---|---|")
    for n in args.persons:
        grf, cfg = synthetic_grf(int(n), args.seed)
        geo = build_geography(grf, cfg)
        walls, opts, study = [], [], None
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            study = rs.spine_study(geo)
            walls.append(time.perf_counter() - t0)
            opts.append(study.seconds)
        e = study.entities
        pl, ai = e[e["level"] != "AIANNH"], e[e["level"] == "AIANNH"]
        print(f"| {int(n):,} | {grf.num_rows:,} | {study.counties:,} | {len(e):,} | "
              f"{statistics.median(walls):.2f} s | {statistics.median(opts):.2f} s | "
              f"{pl['osed_census'].mean():.2f} -> {pl['osed_optimised'].mean():.2f} | "
              f"{ai['osed_census'].mean():.2f} -> {ai['osed_optimised'].mean():.2f} |", flush=True)
        rows.append({"persons": int(n), "blocks": grf.num_rows, "study_seconds": statistics.median(walls),
                     "optimisation_seconds": statistics.median(opts),
                     "mean_osed": {"places": [float(pl["osed_census"].mean()), float(pl["osed_optimised"].mean())],
                                   "aiannh": [float(ai["osed_census"].mean()), float(ai["osed_optimised"].mean())]}})
    # the optimisation minimises the off-spine distance: it never leaves an entity further off
    result(runs=rows, load=load(),
           checks={"optimised spine: no mean OSED above the Census spine's":
                   not any(after > before + 1e-9 for r in rows for before, after in r["mean_osed"].values())})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
