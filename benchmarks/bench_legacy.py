"""Solver time of the legacy cell-suppression study (`python -m engine legacy`).

For each population group level asked for (default: COUNTY Regional and COUNTY Detailed of
the shipped 50,000-person sample, each linked to STATE), validates and counts the input once
(`engine.run.prepare`, not timed), then times `engine.reports.legacy.legacy_release` --reps
times: complementary suppression (the seed's sequential LP) and the audit, both with HiGHS,
with the default rules (minimum population 100, counts of 1 and 2 withheld, protection 3,
sex x 23 age bins, singletons on; --small: COUNTY Regional once, sex x 9 age bins). Prints
the median and the range of each phase, the number of linear programs and connected parts,
and what the release withholds and the audit finds.

Run from the repository root: ``python benchmarks/bench_legacy.py`` (``--help`` for options).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from calculators.levels import PopulationGroupLevel  # noqa: E402
from engine.reports.legacy import LegacyOptions, legacy_release  # noqa: E402
from engine.run import prepare  # noqa: E402
from benchmarks._shared import SMALL_FLAG, result  # noqa: E402


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--params", type=Path, default=REPO / "sample_data" / "params")
    p.add_argument("--data", type=Path, default=REPO / "sample_data" / "data")
    p.add_argument("--levels", nargs="+", default=["(COUNTY, 1)", "(COUNTY, 2)"], metavar="LEVEL",
                   help='population group levels, e.g. "(COUNTY, 2)" (default COUNTY Regional and Detailed)')
    p.add_argument("--reps", type=int, default=3, help="timed runs per level (default 3; the median is quoted)")
    p.add_argument("--no-hierarchy", dest="hierarchy", action="store_false",
                   help="protect each level alone (the audit still uses the hierarchy)")
    p.add_argument(SMALL_FLAG, action="store_true",
                   help="COUNTY Regional only, one run, sex x 9 age bins (CI: checks that it works)")
    args = p.parse_args(argv)
    ages = LegacyOptions.ages
    if args.small:
        # 9 age bins: about 600 LPs and 42 withheld primaries for the audit to check, against
        # 15,000 LPs (6 s of CPU) with 23
        args.levels, args.reps, ages = ["(COUNTY, 1)"], 1, 9
    figures, underprotected = {}, 0
    print(f"Python {platform.python_version()}, {os.cpu_count()} CPUs, load average {_load()} (before)")
    t = time.perf_counter()
    prepared = prepare(args.params, args.data)
    print(f"Inputs: {prepared.table.persons:,} persons, prepared in {time.perf_counter() - t:.1f} s (not timed below)")
    for key in args.levels:
        lvl = PopulationGroupLevel.parse(key)
        opts = LegacyOptions(geo=lvl.geo, iteration_level=lvl.iteration_level, hierarchy=args.hierarchy, ages=ages)
        runs = []
        for _ in range(args.reps):
            rel = legacy_release(prepared, opts)
            runs.append(rel)
        phases = {name: [r.timings[name] for r in runs] for name in ("protect", "audit", "protect_and_audit")}
        s = runs[-1].summary()
        print(f"\n{key} (with its parent level, {args.reps} runs): {runs[-1].lps:,} LPs, "
              f"{runs[-1].parts:,} connected parts with a primary")
        for name, vals in phases.items():
            print(f"  {name:>18}: median {statistics.median(vals):6.1f} s (min {min(vals):.1f}, max {max(vals):.1f})")
        figures[key] = {"lps": runs[-1].lps, **{name: statistics.median(vals) for name, vals in phases.items()}}
        for lk, v in s.items():
            a = v["audit"]
            underprotected += a["primaries_underprotected"]
            print(f"  {lk}: {v['groups_published']:,} of {v['groups']:,} groups published; "
                  f"withheld in published tables: {v['withheld_primary']:,} primary, "
                  f"{v['withheld_complementary']:,} complementary; audit: {a['withheld_counts']:,} withheld counts, "
                  f"{a['recovered_exactly']:,} recovered exactly ({a['recovered_exactly_nonzero']:,} above 0), "
                  f"{a['primaries_underprotected']:,} primaries under-protected")
    print(f"\nload average {_load()} (after)")
    result(levels=figures, checks={"audit: no primary suppression under-protected": underprotected == 0})
    return 0


if __name__ == "__main__":
    sys.exit(main())
