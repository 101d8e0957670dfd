"""Command line: `python -m engine {validate,run,truth,accuracy,legacy,sample} ...`.

Exit codes: 0 success; 1 invalid input (the problems are printed, nothing is written);
2 usage error (bad arguments, OUT_DIR not empty without --overwrite).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

EXIT_OK, EXIT_INVALID, EXIT_USAGE = 0, 1, 2

_EPILOG = """exit codes:
  0  success
  1  invalid input: every problem found is printed (file, line, column, value,
     what was expected; the first 20 and the total) and nothing is written
  2  usage error: unknown option, missing argument, or OUT_DIR not empty

PARAMS_DIR holds config.json and the four spec files; DATA_DIR holds
person-records.txt and GRF-C.txt (or .parquet files with the same columns).
See ../shared/SPEC.md section 4 for the formats."""


class _Progress:
    """A tqdm progress bar per stage, on stderr; silent with --quiet."""

    def __init__(self, quiet: bool):
        self.quiet = quiet
        self.bar = None
        self.stage = None

    def __call__(self, stage: str, done: float, total: float) -> None:
        if self.quiet:
            return
        from tqdm import tqdm

        kind = stage.split(",")[0]
        if kind != self.stage:
            self.close()
            self.stage = kind
            unit = "groups" if kind.startswith("tabulating") else "rows"
            self.bar = tqdm(total=int(total), desc=kind, unit=unit, unit_scale=True, file=sys.stderr,
                            dynamic_ncols=True, leave=False)
        self.bar.total = max(int(total), int(done))
        self.bar.set_description(stage)
        self.bar.update(int(done) - self.bar.n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m engine",
        description="Run SafeTab-P (2020 Census Detailed DHC-A disclosure avoidance) on SafeTab-P input files.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def common(sp, out=True):
        sp.add_argument("params_dir", metavar="PARAMS_DIR", type=Path, help="directory with config.json and the 4 spec files")
        sp.add_argument("data_dir", metavar="DATA_DIR", type=Path, help="directory with person-records and GRF-C (.txt or .parquet)")
        if out:
            sp.add_argument("out_dir", metavar="OUT_DIR", type=Path, help="output directory (must be empty or absent)")
            sp.add_argument("--overwrite", action="store_true", help="replace OUT_DIR if it already holds files")
        sp.add_argument("--quiet", action="store_true", help="no progress bar")
        sp.formatter_class = argparse.RawDescriptionHelpFormatter
        sp.epilog = _EPILOG

    sp = sub.add_parser("validate", help="check every input file; draws no noise and writes nothing")
    common(sp, out=False)

    sp = sub.add_parser("run", help="validate, then write a release: t1/, t2/, suppressed/, manifest.json")
    common(sp)
    sp.add_argument("--seed", type=int, default=None,
                    help="reproducible noise for demos and tests; the manifest then says NOT FOR RELEASE "
                         "(default: a cryptographically secure random source)")
    sp.add_argument("--no-coterminous", dest="coterminous", action="store_false",
                    help="skip the coterminous-geography post-processing (on by default)")

    sp = sub.add_parser("truth", help="write the ground truth: the same tables without noise (NOT for release)")
    common(sp)
    sp.add_argument("--no-coterminous", dest="coterminous", action="store_false",
                    help="skip the coterminous-geography post-processing")

    sp = sub.add_parser("accuracy", help="compare releases with the truth: 95th percentile of |error| vs predicted MOE")
    common(sp)
    sp.add_argument("--trials", type=int, default=1, help="number of independent releases to draw (default 1)")
    sp.add_argument("--seed", type=int, default=None,
                    help="seed the trials (reproducible; default: secure random source)")
    sp.add_argument("--release", type=Path, default=None, metavar="RELEASE_DIR",
                    help="compare an existing release directory instead of drawing new trials")

    sp = sub.add_parser("legacy", help="a legacy cell-suppression study of one level (NOT a SafeTab-P release: "
                                       "exact counts, withheld ones marked D)")
    common(sp)
    _legacy_options(sp)

    sp = sub.add_parser("sample", help="write a synthetic nation (PARAMS_DIR + DATA_DIR layout) of any size")
    sp.add_argument("out_dir", metavar="OUT", type=Path, help="folder to create: OUT/params and OUT/data")
    sp.add_argument("--persons", type=int, required=True, help="number of persons, 1,000 to 300,000,000")
    sp.add_argument("--seed", type=int, default=0, help="random seed of the generator (default 0)")
    sp.add_argument("--spec", type=Path, default=None, metavar="DIR",
                    help="use these spec files (and config.json) instead of generated ones, e.g. the 2020 files")
    sp.add_argument("--format", choices=["txt", "parquet"], default="txt", help="data file format (default txt)")
    sp.add_argument("--overwrite", action="store_true", help="replace OUT if it already holds files")
    sp.add_argument("--quiet", action="store_true", help="no progress bar")
    sp.formatter_class = argparse.RawDescriptionHelpFormatter
    sp.epilog = ("The nation grows with N like the real one (about 4,000 persons per tract, 100,000 per\n"
                 "county, 10,000 per place); data are written in chunks, so memory stays flat up to\n"
                 "300 million persons.\n\nexit codes:\n  0  success\n  2  usage error (bad arguments, "
                 "OUT not empty without --overwrite)")
    return p


def _legacy_options(sp) -> None:
    from calculators.levels import GEO_LEVELS
    from engine.reports.legacy import LegacyOptions

    d = LegacyOptions()
    sp.add_argument("--geo", default=d.geo, choices=GEO_LEVELS, metavar="LEVEL",
                    help=f"geography level of the study: {', '.join(GEO_LEVELS)} (default {d.geo}); its "
                         "parent level (e.g. STATE for COUNTY) is released with it, linked cell by cell")
    sp.add_argument("--iteration-level", type=int, default=d.iteration_level, choices=(1, 2),
                    help=f"1 = Regional, 2 = Detailed (default {d.iteration_level})")
    sp.add_argument("--min-population", type=int, default=d.min_population, metavar="N",
                    help=f"publish a group's table and total only from N persons (default {d.min_population}, "
                         "as the 2000 and 2010 detailed-group products)")
    sp.add_argument("--min-cell", type=int, default=d.min_cell, metavar="N",
                    help=f"primary suppression of counts of 1 to N-1 persons (default {d.min_cell})")
    sp.add_argument("--protection", type=int, default=d.protection, metavar="N",
                    help=f"persons of uncertainty each primary keeps up and down, down no further than 0 "
                         f"(default {d.protection})")
    sp.add_argument("--ages", type=int, default=d.ages, choices=(4, 9, 23),
                    help=f"age bins of the sex x age table (default {d.ages})")
    sp.add_argument("--no-hierarchy", dest="hierarchy", action="store_false",
                    help="protect each level alone, as if nobody added up child cells against the parent's; "
                         "the audit still does, and shows what that gives away")
    sp.add_argument("--no-singletons", dest="singletons", action="store_false",
                    help="ignore what a person alone in a cell knows (the seed's singleton problem)")
    sp.add_argument("--sliding", action="store_true",
                    help="sliding protection: the interval must be wide enough, anywhere around the count")
    sp.add_argument("--cost", choices=("value", "count"), default=d.cost,
                    help="what complementary suppression minimises: persons withheld (value) or counts withheld")
    sp.add_argument("--time-limit", type=float, default=d.time_limit, metavar="SECONDS",
                    help=f"limit of one LP (default {d.time_limit:g})")
    sp.add_argument("--part-time-limit", type=float, default=d.part_time_limit, metavar="SECONDS",
                    help=f"limit of the LPs of one connected part of the tables; a part whose LPs do not "
                         f"finish is withheld whole (default {d.part_time_limit:g})")
    sp.add_argument("--time-budget", type=float, default=d.time_budget, metavar="SECONDS",
                    help=f"limit of the complementary suppression, and again of the audit; parts not reached "
                         f"are withheld whole, or left unaudited (default {d.time_budget:g})")
    sp.epilog = ("The output follows the SafeTab-P layout: t1/, t2/ (COUNT = D where withheld), suppressed/\n"
                 "(groups below the minimum population), audit/ (the interval an attacker derives for\n"
                 "each withheld count), manifest.json and README.txt. It is NOT a SafeTab-P release: the\n"
                 "published counts are exact counts of the input. Never publish it from confidential\n"
                 "data.\n\n" + _EPILOG)


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    from calculators.config import ConfigError
    from engine.errors import InputError

    progress = _Progress(args.quiet)
    try:
        return _dispatch(args, progress)
    except InputError as exc:
        progress.close()
        print(exc.report(), file=sys.stderr)
        print("Nothing was written.", file=sys.stderr)
        return EXIT_INVALID
    except ConfigError as exc:
        progress.close()
        print("Invalid input: " + str(exc), file=sys.stderr)
        return EXIT_INVALID
    except FileExistsError as exc:
        progress.close()
        print(f"Usage error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except ValueError as exc:
        progress.close()
        print(f"Usage error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    finally:
        progress.close()


def _dispatch(args, progress: _Progress) -> int:
    if args.command == "validate":
        from engine.run import prepare

        prepared = prepare(args.params_dir, args.data_dir, progress)
        progress.close()
        groups = sum(prepared.universe_size(lvl) for lvl in prepared.levels)
        print(f"OK: {prepared.table.persons:,} persons in the runs, {len(prepared.levels)} population group "
              f"levels, {groups:,} population groups. No noise was drawn; nothing was written.")
        return EXIT_OK

    if args.command in ("run", "truth"):
        from engine.run import run

        truth = args.command == "truth"
        res = run(args.params_dir, args.data_dir, args.out_dir, seed=None if truth else args.seed, truth=truth,
                  coterminous=args.coterminous, overwrite=args.overwrite, progress=progress)
        progress.close()
        m = res.manifest
        print(f"Wrote {res.out_dir}: {m['outputs']['rows']['t1']:,} T1 rows, {m['outputs']['rows']['t2']:,} T2 rows, "
              f"{m['outputs']['rows']['suppressed']:,} suppressed groups.")
        if not m["mode"]["for_release"]:
            print(m["mode"]["note"])
        return EXIT_OK

    if args.command == "accuracy":
        from engine.reports.accuracy import accuracy_report, format_report

        if args.trials < 1:
            raise ValueError("--trials must be at least 1")
        report = accuracy_report(args.params_dir, args.data_dir, args.out_dir, trials=args.trials, seed=args.seed,
                                 release_dir=args.release, overwrite=args.overwrite, progress=progress)
        progress.close()
        print(format_report(report))
        print(f"Wrote {args.out_dir / 'accuracy.csv'} and accuracy.json")
        return EXIT_OK

    if args.command == "legacy":
        from engine.reports.legacy import LegacyOptions, NOTE, run_legacy

        opts = LegacyOptions(geo=args.geo, iteration_level=args.iteration_level, min_population=args.min_population,
                             min_cell=args.min_cell, protection=args.protection, ages=args.ages,
                             hierarchy=args.hierarchy, singletons=args.singletons, sliding=args.sliding,
                             cost=args.cost, time_limit=args.time_limit, part_time_limit=args.part_time_limit,
                             time_budget=args.time_budget)
        rel, out = run_legacy(args.params_dir, args.data_dir, args.out_dir, opts, overwrite=args.overwrite,
                              progress=progress)
        progress.close()
        for key, s in rel.summary().items():
            a = s["audit"]
            print(f"{key}: {s['groups_published']:,} of {s['groups']:,} groups published, "
                  f"{s['counts_published']:,} counts published, {s['withheld_primary']:,} primary and "
                  f"{s['withheld_complementary']:,} complementary suppressions; audit: "
                  f"{a['recovered_exactly']:,} withheld counts recovered exactly, "
                  f"{a['primaries_underprotected']:,} primaries under-protected.")
        print(f"Wrote {out} ({rel.lps:,} LPs, {rel.timings['protect_and_audit']:.1f} s).")
        print(NOTE)
        return EXIT_OK

    if args.command == "sample":
        from engine.release.outputs import check_out_dir
        from engine.synthetic.nation import generate

        check_out_dir(args.out_dir, args.overwrite)

        def prog(done, total):
            progress("generating persons", done, total)

        summary = generate(args.out_dir, args.persons, seed=args.seed, spec_dir=args.spec, fmt=args.format,
                           progress=prog)
        progress.close()
        print(json.dumps({k: (str(v) if isinstance(v, Path) else v) for k, v in vars(summary).items()
                          if not isinstance(v, (list, dict))}, indent=2, default=str))
        return EXIT_OK
    raise AssertionError(args.command)
