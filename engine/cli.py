"""Command line: `python -m engine {validate,run,truth,accuracy,legacy,sample,check-output,spines,profile,
project,safetab-h} ...`.

Exit codes: 0 success; 1 invalid input, an output that fails check-output, or an
OUT_DIR that cannot be written (a symbolic link, no permission, a full disk, another
run writing it, --overwrite of an earlier output of another kind): the problems are
printed, nothing is written; 2 usage error (bad arguments, OUT_DIR not empty without
--overwrite, OUT_DIR over an input folder, a stray operator file beside OUT_DIR);
130 interrupted (Ctrl-C; nothing is written). Foreseeable operating-system errors are
reported in one line, never as a traceback.
"""

from __future__ import annotations

import argparse
import errno
import json
import logging
import os
import sys
from pathlib import Path

EXIT_OK, EXIT_INVALID, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130
#: Echoed error texts from libraries are cut to this many characters.
_MESSAGE_CHARS = 300

_EPILOG = """exit codes:
  0  success
  1  invalid input: every problem found is printed (file, line, column, value,
     what was expected; the first 20 and the total) and nothing is written;
     or OUT_DIR cannot be written (a symbolic link, no permission, disk full,
     another run writing it, --overwrite of an earlier output of another kind),
     checked before the computation where possible
  2  usage error: unknown option, missing argument, OUT_DIR not empty (without
     --overwrite), OUT_DIR is, contains or lies inside PARAMS_DIR or DATA_DIR,
     --overwrite of a folder that is not a complete earlier output of this tool,
     or an operator file beside OUT_DIR that is not that of the output replaced
  130 interrupted: nothing is written

OUT_DIR safety: the output is written into a hidden .OUT_DIR.partial-* folder beside
OUT_DIR and swapped in only when complete; SHA256SUMS (written last) marks a complete
output. --overwrite replaces only such an output of the same kind (a release by a
release, ground truth by ground truth, a report by the same report: never a release
by ground truth, a sample or a report), and only once the new one is complete. A
lock (.OUT_DIR.lock) stops a second run into the same OUT_DIR. The exact person
counts go to OUT_DIR.CONFIDENTIAL-operator.json beside OUT_DIR, not into it; an
existing one is replaced only with the output it belongs to, never when OUT_DIR no
longer holds that output.

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

        # No monitor thread: tqdm's would be left running at exit, only signalled, never
        # joined (our bars are updated often enough not to need its help).
        tqdm.monitor_interval = 0
        kind = stage.split(",")[0]
        if kind != self.stage:
            self.close()
            self.stage = kind
            unit = "groups" if kind.startswith("tabulating") else "trials" if kind == "trials done" else "rows"
            self.bar = tqdm(total=int(total), desc=kind, unit=unit, unit_scale=True, file=sys.stderr,
                            dynamic_ncols=True, leave=False)
        self.bar.total = max(int(total), int(done))
        self.bar.set_description(stage)
        self.bar.update(int(done) - self.bar.n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


#: Lower bounds of a sample's size, for the free-space check (a text row is at least 78 bytes).
_TXT_BYTES_PER_PERSON, _PARQUET_BYTES_PER_PERSON = 78, 2


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
            sp.add_argument("--overwrite", action="store_true",
                            help="replace OUT_DIR if it holds a complete earlier output of this tool of the "
                                 "same kind, e.g. a release by a release, never by ground truth (the old one "
                                 "stays until the new one is complete)")
        sp.add_argument("--quiet", action="store_true", help="no progress bar")
        sp.formatter_class = argparse.RawDescriptionHelpFormatter
        sp.epilog = _EPILOG

    sp = sub.add_parser("validate", help="check every input file; draws no noise and writes nothing")
    common(sp, out=False)
    sp.add_argument("--t1", type=Path, default=None, metavar="FILE_OR_RELEASE_DIR",
                    help="SafeTab-H inputs (a config.json with thresholds_h_t3): the T1 to check them with "
                         "(default DATA_DIR/pop-group-totals.txt)")

    sp = sub.add_parser("run", help="validate, then write a release: t1/, t2/, suppressed/, manifest.json")
    common(sp)
    sp.add_argument("--seed", type=int, default=None,
                    help="reproducible noise for demos and tests; the manifest then says NOT FOR RELEASE "
                         "(default: a cryptographically secure random source)")
    sp.add_argument("--no-coterminous", dest="coterminous", action="store_false",
                    help="skip the coterminous-geography post-processing. By default (on) the engine follows the "
                         "SafeTab-P paper (Section 5.3.3, Algorithm 4: a standalone program run after SafeTab-P, "
                         "so the published tables agree for entities covering the same blocks); the Census "
                         "Bureau's released SafeTab-P code (DAS_2020_DDHCA_Production_Code) does not contain it, "
                         "and it is --no-coterminous output that matches that code's output "
                         "(docs/production-differences.md)")
    sp.add_argument("--tabulation-suppression", action="store_true",
                    help="after the release is computed, apply the Decennial Tabulation System's suppression "
                         "(SafeTab-P paper, Section 5.3.4; outside the DAS, no privacy cost by Lemma 4): remove "
                         "groups with a negative published count, and Alone groups whose noisy total exceeds the "
                         "Alone-or-in-any-combination total of the same race and geography (pairs read from "
                         "race-characteristic-iterations.txt). Removed groups are listed in "
                         "suppressed/tabulation-system.csv with the rule as REASON; the manifest counts them")
    sp.add_argument("--consistency", choices=["none", "least-squares", "tree-dp"], default="none",
                    help="make nested levels add up (USA > STATE > COUNTY > TRACT, per iteration): "
                         "least-squares = weighted least squares + consistent rounding; tree-dp = exact "
                         "non-negative integer optimum (Fioretto et al.); default none = SafeTab-P as "
                         "published. Suppressed groups stay suppressed and are never read (a parent is at "
                         "least the sum of its published children); see docs/consistency.md")
    sp.add_argument("--invariant", choices=["USA", "STATE", "COUNTY"], default=None,
                    help="NOT SafeTab-P: publish this level's TRUE totals exactly (no noise) and project the noise "
                         "of the level below so it adds up to them, e.g. STATE: each state's true count of every "
                         "iteration, its counties adding up to it (PR-STATE likewise). The manifest lists what is "
                         "revealed; needs allow_negative_counts: true; see docs/invariants.md")
    sp.add_argument("--households", type=Path, default=None, metavar="H_CONFIG.json",
                    help="then run SafeTab-H (with this SafeTab-H config.json and PARAMS_DIR's spec files) on this "
                         "release's own T1 and DATA_DIR's household-records file; its tables go to "
                         "OUT_DIR-safetab-h (see `safetab-h`; with --seed S its noise is seeded with S + 1), e.g. "
                         "--households sample_data/safetab-h-config.json")

    sp = sub.add_parser("truth", help="write the ground truth: the same tables without noise (NOT for release)")
    common(sp)
    sp.add_argument("--no-coterminous", dest="coterminous", action="store_false",
                    help="skip the coterminous-geography post-processing")

    sp = sub.add_parser("accuracy", help="compare releases with the truth: 95th percentile of |error| vs predicted MOE")
    common(sp)
    sp.add_argument("--trials", type=int, default=None,
                    help="number of independent releases to draw, 1 to 10,000 (default 1; not with --release)")
    sp.add_argument("--seed", type=int, default=None,
                    help="seed the trials (reproducible; default: secure random source; not with --release)")
    sp.add_argument("--release", type=Path, default=None, metavar="RELEASE_DIR",
                    help="compare an existing release directory instead of drawing new trials")
    sp.add_argument("--layout", choices=["studio", "production", "both"], default=None,
                    help="studio: accuracy.csv (95th percentile of |error| vs predicted MOE); production: the "
                         "Census production layouts, error_report.csv (per population group, first trial) and "
                         "multi_run_error_report.csv (all trials); both: all three from the same releases "
                         "(default studio; not with --invariant or --consistency, which write their own reports)")
    sp.add_argument("--tabulation-suppression", action="store_true",
                    help="apply the Tabulation System's suppression to every trial (as `run "
                         "--tabulation-suppression`) and report how many groups each rule removed; with --release, "
                         "the release's own suppressed/tabulation-system.csv is counted without this option")
    sp.add_argument("--keep-trials", action="store_true",
                    help="also keep each trial's release under OUT_DIR/single_runs/trial_<i> (marked NOT FOR "
                         "RELEASE as trials of a study; no operator file). By default the reports are computed "
                         "from each trial as it is tabulated and no release is written")
    sp.add_argument("--jobs", type=_jobs, default=1, metavar="N",
                    help="run the trials after the first in N worker processes at once (at most TRIALS - 1; "
                         "default 1: one after another); at most the number of free cores. The same reports as "
                         "--jobs 1 (a seeded study gives the same files). Memory: the workers share the prepared "
                         "inputs, but each adds one trial's working memory (about 80 MB at 1 million persons, an "
                         "estimated 1-2 GB at 100 million). Linux only (elsewhere the trials run one after "
                         "another, with a note)")
    sp.add_argument("--invariant", choices=["USA", "STATE", "COUNTY"], default=None,
                    help="NOT SafeTab-P: compare the release with this level's true totals held exact (see run "
                         "--invariant) against the plain release, on the same noise in every trial; writes "
                         "accuracy_invariant.csv and .json")
    sp.add_argument("--consistency", default=None, metavar="METHODS",
                    help="compare hierarchical consistency methods instead: a comma-separated list of "
                         "none, least-squares, tree-dp, relax-then-round, or all. Each trial draws one "
                         "release and every method post-processes the same noisy counts; writes "
                         "consistency_by_level.csv (mean absolute error and bias by level x method, as "
                         "Fioretto et al.'s Table 7), consistency_by_size.csv, consistency_summary.csv "
                         "(negative counts, violations of additivity, run time) and consistency.json")

    sp.add_argument("--safetab-h", dest="safetab_h", nargs="?", const=True, default=None, type=Path,
                    metavar="H_CONFIG.json",
                    help="study SafeTab-H instead: its directly noised T3 / T4 cells against the truth, per table x "
                         "geography x iteration level x table level x group size (powers of ten), beside the "
                         "expected MOE; writes accuracy_h.csv and .json. PARAMS_DIR holds SafeTab-H's config.json, "
                         "or give it here (PARAMS_DIR then gives the spec files); the T1 is --t1 or "
                         "DATA_DIR/pop-group-totals.txt")
    sp.add_argument("--t1", type=Path, default=None, metavar="FILE_OR_RELEASE_DIR",
                    help="with --safetab-h: SafeTab-P's published T1 (a pop-group-totals file or a release)")

    sp = sub.add_parser("legacy", help="a legacy cell-suppression study of one level (NOT a SafeTab-P release: "
                                       "exact counts, withheld ones marked D)")
    common(sp)
    _legacy_options(sp)

    sp = sub.add_parser("sample", help="write a synthetic nation (PARAMS_DIR + DATA_DIR layout) of any size")
    sp.add_argument("out_dir", metavar="OUT", type=Path, help="folder to create: OUT/params and OUT/data")
    sp.add_argument("--persons", type=int, required=True, help="number of persons, 1,000 to 340,000,000 (the 2020 nation: 331,449,281)")
    sp.add_argument("--seed", type=int, default=0, help="random seed of the generator (default 0)")
    sp.add_argument("--spec", type=Path, default=None, metavar="DIR",
                    help="use these spec files (and config.json) instead of generated ones, e.g. the 2020 files")
    sp.add_argument("--format", choices=["txt", "parquet"], default="txt", help="data file format (default txt)")
    sp.add_argument("--overwrite", action="store_true",
                    help="replace OUT if it holds a complete earlier sample of this tool (never a "
                         "release or another kind of output)")
    sp.add_argument("--quiet", action="store_true", help="no progress bar")
    sp.formatter_class = argparse.RawDescriptionHelpFormatter
    sp.epilog = ("The nation grows with N like the real one (about 4,000 persons per tract, 100,000 per\n"
                 "county, 10,000 per place); data are written in chunks, so memory stays flat up to\n"
                 "340 million persons. OUT is written like OUT_DIR of `run`: staged beside OUT, published\n"
                 "whole with SHA256SUMS, never left half-written (a full disk leaves OUT as it was).\n\n"
                 "exit codes:\n  0  success\n  1  OUT cannot be written (a symbolic link, no permission, disk full,\n"
                 "     another run writing it, --overwrite of another kind of output)\n"
                 "  2  usage error (bad arguments, OUT not empty without --overwrite)")

    sp = sub.add_parser("check-output", help="check that OUT_DIR is a complete, well-formed output of PARAMS_DIR")
    sp.add_argument("params_dir", metavar="PARAMS_DIR", type=Path, help="directory with config.json and the 4 spec files")
    sp.add_argument("out_dir", metavar="OUT_DIR", type=Path, help="the output folder of `run` or `truth`")
    sp.add_argument("--data", dest="data_dir", type=Path, default=None, metavar="DATA_DIR",
                    help="also check the regions against GRF-C of DATA_DIR (the person records are not read)")
    sp.formatter_class = argparse.RawDescriptionHelpFormatter
    sp.epilog = ("Checks, as production's output validation does and more: SHA256SUMS (every file present and\n"
                 "unchanged), manifest.json (no confidential counts, same config.json, NOT-FOR-RELEASE.txt\n"
                 "exactly when not for release), the header of every file, the format of every column per\n"
                 "REGION_TYPE, the state filter, no negative counts unless allowed, every population group of\n"
                 "the universe once in t1/ or suppressed/, whole T2 tables only for released groups.\n\n"
                 "exit codes:\n  0  OUT_DIR passes every check\n  1  problems found (file, line, column, value,\n"
                 "     expected: the first 20 and the total), or PARAMS_DIR/DATA_DIR invalid\n  2  usage error")

    _profile_parsers(sub, common)
    _safetab_h_parser(sub, common)

    sp = sub.add_parser("spines", help="geographic spines: how far places and AIANNH areas are from a TopDown-style "
                                       "spine, before and after its optimisation; compose an area from published units")
    common(sp, out=False)
    sp.add_argument("--fanout-cutoff", type=_whole_in(0, _SPINE_OPTION_MAX), default=None, metavar="N",
                    help="as the production code: a block group holds at most int(sqrt(n) + N + 1) of its tract's n "
                         "blocks, a tract group at most int(sqrt(T) + N) of its county's T tracts (the paper's "
                         f"example: sqrt(100) = 10); N from 0 to {_SPINE_OPTION_MAX:,} (more units than any county "
                         "has; default 12; not with --area)")
    sp.add_argument("--entity-threshold", type=_whole_in(0, _SPINE_OPTION_MAX), default=None, metavar="N",
                    help=f"tract groups are optimised for entities farther than N, from 0 to {_SPINE_OPTION_MAX:,} "
                         "(default 9; not with --area)")
    sp.add_argument("--out", type=Path, default=None, metavar="FILE.csv",
                    help="write the table of places and AIANNH areas (OSED before and after) as CSV "
                         "(not with --area, whose composition is printed)")
    sp.add_argument("--area", type=Path, default=None, metavar="FILE",
                    help="compose this area from SafeTab-P's published units instead: one '[+|-] [LEVEL] ID' a "
                         "line (e.g. 'place 0600100' then '- tract 06001000100')")
    sp.add_argument("--iteration", default=None, metavar="CODE",
                    help="with --area: the population group (iteration code) whose published totals are "
                         "composed; runs a seeded study (NOT a release) for the variance and exact MOE")
    sp.add_argument("--seed", type=int, default=None, help="with --iteration: seed of that study (default 0)")
    sp.epilog = ("OSED (off-spine entity distance, Cumings-Menon et al.): the fewest units added or subtracted\n"
                 "to make an area. The spine is block > block group (first digit of TABBLK) > tract >\n"
                 "county > state; the optimisation regroups block groups and tract groups county by\n"
                 "county.\n\n" + _EPILOG)
    return p


def _safetab_h_parser(sub, common) -> None:
    """`safetab-h`: the household tables T3 and T4 (engine.safetab_h)."""
    sp = sub.add_parser("safetab-h", help="SafeTab-H: household type (T3) and tenure (T4) of the groups of "
                                          "SafeTab-P's published T1, written as t3/ and t4/")
    common(sp)
    sp.add_argument("--t1", type=Path, default=None, metavar="FILE_OR_RELEASE_DIR",
                    help="SafeTab-P's published T1: a pop-group-totals.txt (or .parquet), or a release of `run` "
                         "(its t1/); default DATA_DIR/pop-group-totals.txt")
    sp.add_argument("--seed", type=int, default=None,
                    help="reproducible noise for demos and tests; the manifest then says NOT FOR RELEASE "
                         "(default: a cryptographically secure random source)")
    sp.add_argument("--truth", action="store_true",
                    help="the same tables without noise (NOT FOR RELEASE: for accuracy studies)")
    sp.add_argument("--config", type=Path, default=None, metavar="H_CONFIG.json",
                    help="SafeTab-H's config.json, if not PARAMS_DIR/config.json (PARAMS_DIR then only gives the "
                         "spec files, e.g. SafeTab-P's PARAMS_DIR)")
    sp.epilog = ("PARAMS_DIR holds SafeTab-H's config.json (40 budgets privacy_budget_h_{t3|t4}_level_{1|2}_{geo},\n"
                 "thresholds_h_t3, thresholds_h_t4, ...) and SafeTab-P's 4 spec files; DATA_DIR holds\n"
                 "household-records.txt (or .parquet), GRF-C.txt and, unless --t1 says otherwise,\n"
                 "pop-group-totals.txt. OUT_DIR gets t3/T0300{1..4}/, t4/T0400{1,2}/, manifest.json.\n\n" + _EPILOG)


def _safetab_h(args, progress) -> int:
    from engine.safetab_h.run import run as run_h

    if args.truth and args.seed is not None:
        raise ValueError("--seed seeds the noise; --truth draws none")
    res = run_h(args.params_dir, args.data_dir, args.out_dir, t1=args.t1, seed=args.seed, truth=args.truth,
                overwrite=args.overwrite, progress=progress, config=_h_config(args.config))
    progress.close()
    _report_h(res)
    return EXIT_OK


def _accuracy_h(args, progress) -> int:
    from engine.safetab_h.accuracy import accuracy_h, format_report

    given = [o for o, v in (("--release", args.release), ("--layout", args.layout), ("--invariant", args.invariant),
                            ("--consistency", args.consistency)) if v is not None]
    given += ["--keep-trials"] if args.keep_trials else []
    given += ["--jobs"] if args.jobs != 1 else []
    if given:
        raise ValueError(f"{', '.join(given)} cannot be used with --safetab-h: the SafeTab-H study draws its own "
                         "trials in one process and writes accuracy_h.csv")
    df = accuracy_h(args.params_dir, args.data_dir, args.out_dir, t1=args.t1, trials=args.trials or 1,
                    seed=args.seed, overwrite=args.overwrite, progress=progress,
                    config=_h_config(args.safetab_h) if isinstance(args.safetab_h, Path) else None)
    progress.close()
    print(format_report(df))
    print(f"Wrote {args.out_dir / 'accuracy_h.csv'} and accuracy_h.json (NOT FOR RELEASE)")
    return EXIT_OK


def _h_config(path: Path | None):
    """A SafeTab-H config.json given apart from PARAMS_DIR (a file, or a folder with one)."""
    if path is None:
        return None
    from calculators.safetab_h import SafeTabHConfig

    return SafeTabHConfig.read(path / "config.json" if path.is_dir() else path)


def _report_h(res) -> None:
    m = res.manifest
    rows = m["outputs"]["rows"]
    t3 = sum(v for k, v in rows.items() if k.startswith("t3"))
    t4 = sum(v for k, v in rows.items() if k.startswith("t4"))
    print(f"Wrote {res.out_dir}: {m['groups']['tabulated']:,} population groups, {t3:,} T3 rows, {t4:,} T4 rows.")
    if not m["mode"]["for_release"]:
        print(m["mode"]["note"])


def _is_h_params(params_dir: Path) -> bool:
    """A SafeTab-H PARAMS_DIR: its config.json has SafeTab-H's thresholds."""
    from calculators.config import MAX_FILE_BYTES, read_regular_file

    try:
        # read as config.json is read: a FIFO or device is never opened (validate then names
        # it), a huge file is not read, a nested one is not a crash
        raw = read_regular_file(Path(params_dir) / "config.json", MAX_FILE_BYTES)
        return "thresholds_h_t3" in json.loads(raw.decode("utf-8"))
    except (OSError, ValueError, TypeError, RecursionError):
        return False


def _profile_parsers(sub, common) -> None:
    """`profile` and `project`: the national projection (engine.reports.profile, calculators.projection)."""
    sp = sub.add_parser("profile", help="write a group-size profile of DATA_DIR (CONFIDENTIAL for real data): "
                                        "per population group level, the number of groups of each true size")
    common(sp, out=False)
    sp.add_argument("out", metavar="OUT.json", type=Path,
                    help="the profile to create (a new file; OUT.json.gz writes it gzip-compressed)")
    sp.add_argument("--name", default=None, help="the data's name in the profile (default: the folder names)")
    sp.add_argument("--synthetic", action="store_true",
                    help="declare the persons invented (e.g. a nation of `python -m engine sample`): the profile "
                         "is then not marked confidential")
    sp.add_argument("--description", default="", help="a sentence stored with the profile")
    sp.epilog = ("Counts the persons exactly as `run` does (PARAMS_DIR/config.json: max_race_codes, runs and\n"
                 "state filter) and lists, for every population group level of the runs that are on (any\n"
                 "budget), how many groups of the public universe have each true size: every size exactly.\n"
                 "A profile of confidential data is itself confidential (exact, noise-free counts): compute\n"
                 "it inside the secure environment, and load it in the app or `python -m engine project`\n"
                 "there. OUT is created whole or not at all and never replaces a file.\n\n" + _EPILOG)

    sp = sub.add_parser("project", help="the national projection of a plan: expected groups with each table, "
                                        "suppressed groups, T1/T2 rows and errors per level, from a profile")
    sp.add_argument("config", metavar="CONFIG.json", type=Path, help="the plan (a SafeTab-P config.json)")
    sp.add_argument("profile", metavar="PROFILE.json", type=Path, help="a profile of `python -m engine profile`")
    sp.add_argument("out", metavar="OUT.csv", type=Path,
                    help="the CSV to create (a new file; OUT.csv.gz writes it gzip-compressed)")
    sp.formatter_class = argparse.RawDescriptionHelpFormatter
    sp.epilog = ("Columns: geo, iteration_level, groups, total_only, age4, age9, age23, suppressed, t1_rows,\n"
                 "t2_rows (expected numbers over the noise), the same with _sd (standard deviations), and\n"
                 "mean_abs_error, mean_abs_error_sd (expected |published - true| of published totals) and\n"
                 "mean_abs_error_bound (true: mean_abs_error is an upper bound, counts being clamped); then\n"
                 "the groups that exist: occupied (groups with at least one person), occupied_published,\n"
                 "occupied_suppressed, occupied_with_table, occupied_age4/9/23, empty_published (groups\n"
                 "with no person that publish a total), persons_published_share and persons_with_table_share\n"
                 "(sum n P(...) / sum n), each but occupied with _sd; one\n"
                 "row per level the plan tabulates, then TOTAL. Coterminous copying is ignored (compare with\n"
                 "`run --no-coterminous`). The CSV starts with '#' lines saying so: read it with\n"
                 "pandas.read_csv(OUT, comment='#').\n\n"
                 "exit codes:\n  0  success\n  1  CONFIG.json or PROFILE.json invalid, or OUT cannot be written\n"
                 "  2  usage error (OUT exists)")


def _profile_commands(args, progress) -> int:
    from engine.reports.profile import compute_profile, profile_bytes, read_profile, summary

    if args.command == "profile":
        inputs = (args.params_dir, args.data_dir)
        _check_new_file(args.out, inputs)  # before the long work
        prof = compute_profile(args.params_dir, args.data_dir, name=args.name, synthetic=args.synthetic,
                               description=args.description, progress=progress)
        progress.close()
        _write_new_file(args.out, profile_bytes(prof, args.out), inputs)
        print(summary(prof))
        print(f"Wrote {args.out}")
        return EXIT_OK
    from calculators.config import ConfigError, SafeTabConfig
    from calculators.projection import ProfileError, project

    try:
        config = SafeTabConfig.read(args.config)
    except ConfigError as exc:
        try:  # the arguments the other way round: say so, not which config keys a profile lacks
            read_profile(args.config)
        except ProfileError:
            raise exc from None
        raise ConfigError(["this is a group-size profile, not a SafeTab-P config.json (a plan); `python -m engine "
                           "project` takes CONFIG.json PROFILE.json OUT.csv, in that order"],
                          str(args.config)) from None
    prof = read_profile(args.profile)
    _check_new_file(args.out, ())
    proj = project(config, prof)
    if not proj.rows:  # an empty projection is no projection: nothing to write
        tabulated = ", ".join(lvl.key for lvl in config.tabulated_levels())
        raise ProfileError([f"it holds none of the levels the plan tabulates ({tabulated}); its levels are "
                            f"{', '.join(lvl.key for lvl in prof.levels)}: make a profile with the plan's runs on "
                            "(PARAMS_DIR/config.json run_us, run_pr)"], str(args.profile))
    data = proj.to_csv().encode("utf-8")
    if str(args.out).endswith(".gz"):  # as `profile` does: a .gz name holds gzip data (pandas reads it by its name)
        import gzip

        data = gzip.compress(data, compresslevel=9, mtime=0)
    _write_new_file(args.out, data, ())
    for line in proj.header_lines()[1:]:
        print(line)
    t = proj.total
    print(f"In total: {t['groups']:,.0f} groups; expected {t['age4'] + t['age9'] + t['age23']:,.0f} with a sex x "
          f"age table, {t['suppressed']:,.0f} suppressed, {t['t1_rows']:,.0f} T1 and {t['t2_rows']:,.0f} T2 rows.")
    print(f"Wrote {args.out}")
    return EXIT_OK


#: The largest --fanout-cutoff and --entity-threshold: more units than any county has, so
#: a larger value would change nothing (and an unbounded one overflows the computation).
_SPINE_OPTION_MAX = 1_000_000


def _whole_in(low: int, high: int):
    """An argparse type: a whole number from low to high (argparse reports anything else)."""
    def parse(text: str) -> int:
        try:
            n = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number from {low:,} to {high:,}, "
                                             f"got {_cut(text)[:40]!r}") from None
        if not low <= n <= high:
            raise argparse.ArgumentTypeError(f"expected a whole number from {low:,} to {high:,}, "
                                             f"got {_cut(text)[:40]}")
        return n
    return parse


def _jobs(text: str) -> int:
    """--jobs: a whole number of at least 1 (argparse reports anything else)."""
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, got {text!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, got {n}")
    return n


def _cut(text: object) -> str:
    text = str(text)
    return text if len(text) <= _MESSAGE_CHARS else text[:_MESSAGE_CHARS] + "..."


class _StderrNotes(logging.Handler):
    """Notes of the engine (e.g. leftovers of an interrupted run that were cleaned up)."""

    def emit(self, record: logging.LogRecord) -> None:
        print("Note: " + record.getMessage(), file=sys.stderr)


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
    sp.add_argument("--capacity", choices=("value", "unbounded"), default=d.capacity,
                    help="how far a count may move to protect a primary: by its value, as Massell's model "
                         "(default; a zero count is never a complement), or without limit")
    sp.add_argument("--refine", action="store_true",
                    help="Massell's refinement run: a second pass keeps only the first pass's complements it needs")
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


def _check_spec_folder(spec: Path) -> None:
    """`sample --spec DIR`: a missing folder or spec file is invalid input (exit 1), said
    as the run says a missing input file, before anything is written."""
    from calculators.config import expected_file, expected_folder
    from engine.errors import ProblemLog
    from engine.synthetic.nation import SPEC_FILES

    log = ProblemLog()
    if not spec.is_dir():
        log.add("--spec", None, None, None, expected_folder(spec, "a folder with the 4 spec files (and config.json)"))
    else:
        for name in SPEC_FILES:
            if not (spec / name).is_file():
                log.add(name, None, None, None, expected_file(spec / name))
    log.raise_if_any()


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    from calculators.config import ConfigError
    from engine.errors import InputError, OutputError, WorkerLost
    from engine.release.publish import os_message

    notes = logging.getLogger("engine")
    handler = _StderrNotes(logging.INFO)
    notes.addHandler(handler)
    notes.setLevel(logging.INFO)
    progress = _Progress(getattr(args, "quiet", True))

    def fail(code: int, *lines: str) -> int:
        progress.close()
        for line in lines:
            print(line, file=sys.stderr)
        return code

    try:
        return _dispatch(args, progress)
    except InputError as exc:
        return fail(EXIT_INVALID, exc.report(), "Nothing was written.")
    except ConfigError as exc:
        return fail(EXIT_INVALID, "Invalid input: " + str(exc), "Nothing was written.")
    except OutputError as exc:
        return fail(EXIT_INVALID, f"Cannot write the output: {exc}",
                    exc.on_disk or "Nothing was written; OUT_DIR is as it was.")
    except UnicodeDecodeError as exc:
        return fail(EXIT_INVALID, f"Invalid input: a file is not UTF-8 text ({_cut(exc)})", "Nothing was written.")
    except MemoryError:
        return fail(EXIT_INVALID, "Not enough memory for this input on this machine.", "Nothing was written.")
    except WorkerLost as exc:
        return fail(EXIT_INVALID, f"The study failed: {exc}")
    except FileExistsError as exc:
        return fail(EXIT_USAGE, f"Usage error: {_cut(exc)}")
    except OSError as exc:
        # Foreseeable system errors (unreadable file, full disk...): one line, no traceback.
        what = "Cannot write the output" if exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EFBIG) \
            else "Cannot read or write a file"
        return fail(EXIT_INVALID, f"{what}: {_cut(os_message(exc))}", "Nothing was written.")
    except ValueError as exc:
        if _is_arrow_error(exc):
            return fail(EXIT_INVALID, f"Invalid input: {_cut(exc)}", "Nothing was written.")
        return fail(EXIT_USAGE, f"Usage error: {_cut(exc)}")
    except KeyboardInterrupt:
        return fail(EXIT_INTERRUPTED, "Interrupted. Nothing was written; OUT_DIR is as it was.")
    finally:
        progress.close()
        notes.removeHandler(handler)


def _is_arrow_error(exc: BaseException) -> bool:
    """pyarrow's parse errors (ArrowInvalid is a ValueError) come from bad input bytes."""
    try:
        import pyarrow as pa
    except ImportError:  # pragma: no cover - pyarrow is a requirement
        return False
    return isinstance(exc, pa.ArrowException)


def _dispatch(args, progress: _Progress) -> int:
    if args.command == "safetab-h":
        return _safetab_h(args, progress)
    if args.command == "validate" and (args.t1 is not None or _is_h_params(args.params_dir)):
        from engine.safetab_h.run import prepare as prepare_h

        prep = prepare_h(args.params_dir, args.data_dir, args.t1, progress)
        progress.close()
        print(f"OK (SafeTab-H): {prep.households:,} households in the runs, {prep.inputs.t1.rows:,} T1 rows "
              f"of the runs, {sum(len(g) for g in prep.groups):,} population groups to tabulate. No noise was "
              "drawn; nothing was written.")
        return EXIT_OK
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
                  coterminous=args.coterminous, overwrite=args.overwrite, progress=progress,
                  consistency=getattr(args, "consistency", "none"), invariant=getattr(args, "invariant", None),
                  tabulation_suppression=getattr(args, "tabulation_suppression", False))
        progress.close()
        m = res.manifest
        print(f"Wrote {res.out_dir}: {m['outputs']['rows']['t1']:,} T1 rows, {m['outputs']['rows']['t2']:,} T2 rows, "
              f"{m['outputs']['rows']['suppressed']:,} suppressed groups.")
        tab = m["postprocessing"].get("tabulation_suppression")
        if tab:
            removed = tab["groups_removed"]
            print("Tabulation System suppression (outside the DAS, no privacy cost): "
                  + ", ".join(f"{n:,} groups removed by {rule}" for rule, n in removed.items())
                  + " (suppressed/tabulation-system.csv).")
            if tab.get("pairs_note"):
                print(tab["pairs_note"])
        if not m["mode"]["for_release"]:
            print(m["mode"]["note"])
        if m["mode"].get("warning"):
            print(m["mode"]["warning"])
        if getattr(args, "households", None) is not None:
            from engine.safetab_h.run import run as run_h

            h_out = Path(str(res.out_dir) + "-safetab-h")
            # seeded: SafeTab-H's stream is seed + 1, not a copy of SafeTab-P's draws
            res_h = run_h(args.params_dir, args.data_dir, h_out, t1=res.out_dir,
                          seed=None if args.seed is None else args.seed + 1,
                          overwrite=args.overwrite, progress=progress, config=_h_config(args.households))
            progress.close()
            _report_h(res_h)
        return EXIT_OK

    if args.command == "accuracy" and args.safetab_h is not None:
        return _accuracy_h(args, progress)
    if args.command == "accuracy" and args.t1 is not None:
        raise ValueError("--t1 is the T1 of a SafeTab-H study; use it with --safetab-h")
    if args.command == "accuracy":
        from engine.reports.accuracy import MAX_TRIALS, accuracy_report, format_report

        if args.release is not None:
            given = [o for o, v in (("--trials", args.trials), ("--seed", args.seed)) if v is not None]
            if given:
                raise ValueError(f"{' and '.join(given)} cannot be used with --release: --release compares that "
                                 "existing release and draws no trials (no noise, so no seed)")
        if args.layout is not None and (args.invariant or args.consistency is not None):
            which, files = (("--invariant", "accuracy_invariant.csv and .json") if args.invariant else
                            ("--consistency", "consistency_*.csv and consistency.json"))
            raise ValueError(f"--layout cannot be used with {which}: {which} writes its own comparison ({files}), "
                             "never accuracy.csv or production's error reports; run the plain study for those")
        args.trials = 1 if args.trials is None else args.trials
        args.layout = args.layout or "studio"
        if not 1 <= args.trials <= MAX_TRIALS:
            raise ValueError(f"--trials must be from 1 to {MAX_TRIALS:,} (got {args.trials:,})")
        if getattr(args, "invariant", None) and args.consistency is not None:
            raise ValueError("--invariant and --consistency cannot be combined: each compares its own "
                             "post-processing of the nested levels with the plain release (docs/invariants.md, "
                             "docs/consistency.md); run them as two studies")
        if args.jobs > 1 and (args.invariant or args.consistency is not None or args.release is not None):
            raise ValueError("--jobs runs the trials of a plain study in parallel; it does not apply with "
                             "--invariant, --consistency or --release")
        if args.tabulation_suppression and (args.invariant or args.consistency is not None):
            raise ValueError("--tabulation-suppression applies to the trials of a plain study; it does not apply "
                             "with --invariant or --consistency")
        if args.keep_trials and (args.invariant or args.consistency is not None or args.release is not None):
            raise ValueError("--keep-trials keeps the releases of a study's trials; it does not apply with "
                             "--invariant, --consistency or --release")
        if getattr(args, "invariant", None):
            from engine.reports.invariants import format_comparison, invariant_accuracy
            from engine.tabulation.invariants import WARNING

            if args.release is not None:
                raise ValueError("--invariant draws its own paired trials; it cannot read --release")
            df = invariant_accuracy(args.params_dir, args.data_dir, args.out_dir, args.invariant, trials=args.trials,
                                    seed=args.seed, overwrite=args.overwrite, progress=progress)
            progress.close()
            print(WARNING)
            print(format_comparison(df))
            print(f"Wrote {args.out_dir / 'accuracy_invariant.csv'} and accuracy_invariant.json")
            return EXIT_OK
        if args.consistency is not None:
            from engine.reports.consistency import consistency_report, format_comparison, parse_methods

            if args.release is not None:
                raise ValueError("--consistency draws its own releases; it cannot be used with --release")
            comp = consistency_report(args.params_dir, args.data_dir, args.out_dir,
                                      methods=parse_methods(args.consistency), trials=args.trials, seed=args.seed,
                                      overwrite=args.overwrite, progress=progress)
            progress.close()
            print(format_comparison(comp))
            print(f"Wrote {args.out_dir / 'consistency_by_level.csv'}, consistency_by_size.csv, "
                  "consistency_summary.csv and consistency.json")
            return EXIT_OK
        report = accuracy_report(args.params_dir, args.data_dir, args.out_dir, trials=args.trials, seed=args.seed,
                                 release_dir=args.release, overwrite=args.overwrite, progress=progress,
                                 layout=args.layout, keep_trials=args.keep_trials, jobs=args.jobs,
                                 tabulation_suppression=args.tabulation_suppression)
        progress.close()
        if args.layout != "production":
            print(format_report(report))
            print(f"Wrote {args.out_dir / 'accuracy.csv'} and accuracy.json")
        if args.layout != "studio":
            print(f"Wrote {args.out_dir / 'error_report.csv'} and multi_run_error_report.csv (production layouts)")
        if args.keep_trials:
            print(f"Kept the trials' releases in {args.out_dir / 'single_runs'} (NOT FOR RELEASE: trials of this study)")
        return EXIT_OK

    if args.command == "legacy":
        from engine.reports.legacy import LegacyOptions, NOTE, format_summary, run_legacy

        opts = LegacyOptions(geo=args.geo, iteration_level=args.iteration_level, min_population=args.min_population,
                             min_cell=args.min_cell, protection=args.protection, ages=args.ages,
                             hierarchy=args.hierarchy, singletons=args.singletons, sliding=args.sliding,
                             cost=args.cost, capacity=args.capacity, refine=args.refine,
                             time_limit=args.time_limit,
                             part_time_limit=args.part_time_limit,
                             time_budget=args.time_budget)
        rel, out = run_legacy(args.params_dir, args.data_dir, args.out_dir, opts, overwrite=args.overwrite,
                              progress=progress)
        progress.close()
        for line in format_summary(rel):  # groups with a published total, counts withheld by each rule
            print(line)
        print(f"Wrote {out} ({rel.lps:,} LPs, {rel.timings['protect_and_audit']:.1f} s).")
        print(NOTE)
        return EXIT_OK

    if args.command == "sample":
        from engine.release.publish import StagedOutput
        from engine.synthetic.nation import check_persons, generate

        check_persons(args.persons)  # a size out of range is said as such, not as missing disk space
        if args.spec is not None:
            _check_spec_folder(args.spec)
        with StagedOutput(args.out_dir, overwrite=args.overwrite, inputs=[("--spec", args.spec)],
                          description="synthetic sample (invented persons)") as folder:
            folder.ensure_space(args.persons * (_TXT_BYTES_PER_PERSON if args.format == "txt"
                                                else _PARQUET_BYTES_PER_PERSON), "the sample")

            def prog(done, total):
                progress("generating persons", done, total)

            summary = generate(folder.stage, args.persons, seed=args.seed, spec_dir=args.spec, fmt=args.format,
                               progress=prog)
            folder.publish([f"{summary.persons:,} persons, seed {summary.seed}, format {summary.fmt}"])
        progress.close()
        final = Path(args.out_dir)
        shown = {k: (str(final / Path(v).relative_to(folder.stage)) if isinstance(v, Path) else v)
                 for k, v in vars(summary).items() if not isinstance(v, (list, dict))}
        print(json.dumps(shown, indent=2, default=str))
        return EXIT_OK

    if args.command == "check-output":
        from engine.release.check import OutputInvalid, check_output, format_summary
        from engine.safetab_h import check as check_h

        if check_h.is_safetab_h_output(args.out_dir):
            try:
                s = check_h.check_output(args.params_dir, args.out_dir)
            except OutputInvalid as exc:
                print(exc.report(), file=sys.stderr)
                return EXIT_INVALID
            kind = "a release" if s.for_release else "NOT FOR RELEASE (seeded or ground truth)"
            print(f"OK: {s.out_dir} is a complete, well-formed SafeTab-H output, {kind}: {s.files_verified} files "
                  f"match SHA256SUMS; {sum(v for k, v in s.rows.items() if k.startswith('t3')):,} T3 rows and "
                  f"{sum(v for k, v in s.rows.items() if k.startswith('t4')):,} T4 rows; every group complete.")
            return EXIT_OK
        try:
            summary = check_output(args.params_dir, args.out_dir, data_dir=args.data_dir)
        except OutputInvalid as exc:
            print(exc.report(), file=sys.stderr)
            return EXIT_INVALID
        print(format_summary(summary))
        return EXIT_OK
    if args.command in ("profile", "project"):
        return _profile_commands(args, progress)
    if args.command == "spines":
        return _spines(args, progress)
    raise AssertionError(args.command)


def _spines(args, progress: _Progress) -> int:
    from engine.inputs.validate import load_inputs
    from engine.reports import spines as rs

    if args.iteration is not None and args.area is None:
        raise ValueError("--iteration needs --area")
    if args.seed is not None and args.iteration is None:
        raise ValueError("--seed seeds the study of --iteration (with --area); without --iteration nothing is drawn")
    if args.area is not None:
        given = [o for o, v in (("--out", args.out), ("--fanout-cutoff", args.fanout_cutoff),
                                ("--entity-threshold", args.entity_threshold)) if v is not None]
        if given:
            raise ValueError(f"{', '.join(given)} cannot be used with --area: "
                             f"{'they are options' if len(given) > 1 else 'it is an option'} of the spine study "
                             "(its table of places and AIANNH areas); --area prints the composition of that area")
    args.fanout_cutoff = 12 if args.fanout_cutoff is None else args.fanout_cutoff
    args.entity_threshold = 9 if args.entity_threshold is None else args.entity_threshold
    args.seed = 0 if args.seed is None else args.seed
    if args.area is None:
        if args.out:
            _check_new_file(args.out, (args.params_dir, args.data_dir))  # before the work
        geo = load_inputs(args.params_dir, args.data_dir).geography
        study = rs.spine_study(geo, args.fanout_cutoff, args.entity_threshold, progress=progress)
        progress.close()
        print(rs.format_study(study))
        if args.out:
            _write_new_file(args.out, study.entities.to_csv(index=False).encode("utf-8"),
                            (args.params_dir, args.data_dir))
            print(f"Wrote {args.out}")
        return EXIT_OK
    if not args.area.is_file():  # False for a FIFO or a device too
        raise ValueError(f"--area {args.area}: no such file (or not a regular file)")
    text = args.area.read_text(encoding="utf-8", errors="replace")
    if args.iteration is None:
        geo = load_inputs(args.params_dir, args.data_dir).geography
        units = rs.published_units(geo)
        avail = rs.structural_availability(units)
    else:
        from engine import noise as _noise
        from engine.reports.levels import level_tables
        from engine.run import make_noise, prepare

        prepared = prepare(args.params_dir, args.data_dir, progress)
        geo = prepared.inputs.geography
        units = rs.published_units(geo)
        cfg = prepared.inputs.config
        tables = level_tables(prepared, make_noise(cfg.privacy_defn, _noise.RandomSource.seeded(args.seed)))
        levels = sorted({lvl.iteration_level for lvl, t in tables.items() if args.iteration in set(t.codes)})
        if not levels:
            raise ValueError(f"--iteration {args.iteration[:20]!r} is not tabulated by the plan")
        avail = rs.availability(units, tables, levels[0], args.iteration, geo.coterminous_sets(),
                                cfg.allow_negative_counts)
    area = rs.parse_area(text, geo, file=str(args.area))
    if not area.any():  # e.g. "tract X" then "- tract X": nothing to compose
        from engine.errors import InputError, Problem

        raise InputError([Problem(str(args.area), None, None, None,
                                  "an area of at least one block (its lines add and subtract the same blocks, "
                                  "so the area is empty)")])
    res = rs.compose_area(units, avail, area, rs.census_spine(geo))
    progress.close()
    print(rs.format_area(res, seeded=args.iteration is not None))
    return EXIT_OK


def _check_new_file(path: Path, inputs, clean: bool = True) -> None:
    """A file the command is about to create: never an existing file, never in an input folder.
    `clean`: first remove the partial files killed writers of it left (`publish.clean_new_file_leftovers`)."""
    from engine.errors import OutputError, UsageError
    from engine.release.publish import clean_new_file_leftovers

    if clean:
        clean_new_file_leftovers(path)
    if os.path.lexists(path):
        raise UsageError(f"{_cut(path)} exists; choose a new file name (nothing is ever written over a file)")
    parent = Path(os.path.abspath(path)).parent
    if not parent.is_dir():  # said now, not after the work (a national profile counts for minutes)
        raise OutputError(f"{_cut(path)}: its folder {_cut(parent)} does not exist")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise OutputError(f"{_cut(path)}: its folder {_cut(parent)} is not writable")
    target = parent.resolve()
    for folder in inputs:
        f = Path(folder).resolve()
        if target == f or f in target.parents:
            raise UsageError(f"{_cut(path)} lies inside the input folder {_cut(folder)}; choose a file elsewhere")


def _write_new_file(path: Path, data: bytes, inputs) -> None:
    """Create `path` whole or not at all (`engine.release.publish.write_new_file`: a hidden
    partial file beside it, fsynced, then linked in place; a killed writer's partial file
    is removed by the next)."""
    from engine.release.publish import write_new_file

    write_new_file(path, data, check=lambda: _check_new_file(path, inputs, clean=False))
