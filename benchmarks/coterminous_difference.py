"""What the coterminous post-processing changes: the same inputs, the same noise, with and
without it (docs/production-differences.md takes its figures from here).

    python -m benchmarks.coterminous_difference [PARAMS_DIR DATA_DIR] [--budget 1e4] [--seed 0]

Without arguments it measures the shipped sample and, when present, the toy inputs of
../shared/reference/safetab-p-toy. Every level the plan tabulates gets the budget
`--budget` (1e4 by default: the noise is then negligible, so what differs is the
post-processing alone); levels with budget 0 stay untabulated. Both runs draw the same
seeded noise (`engine.run.run(..., seed=...)`, NOT FOR RELEASE), one with the
coterminous step (the SafeTab-P paper, Section 5.3.3, Algorithm 4: the engine's
default) and one with `coterminous=False`, the output of the Census Bureau's released
SafeTab-P code, which does not contain the step. Printed: population groups, T1 rows,
T2 rows, the groups whose T1 row (published or suppressed, and the count) differs, the
groups whose table differs, and for a small input every such group.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

import pandas as pd

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "sample_data"
TOY = REPO.parent / "shared" / "reference" / "safetab-p-toy"
KEY = ["REGION_TYPE", "REGION_ID", "ITERATION_CODE"]
#: At most this many differing groups are listed one by one.
LISTED = 20


@dataclass
class Difference:
    """Default (coterminous step) against `--no-coterminous`, same noise."""

    inputs: str
    budget: float
    seed: int
    groups: int
    t1_rows: dict[str, int]
    t2_rows: dict[str, int]
    suppressed: dict[str, int]
    #: Groups whose T1 row differs (published in one only, or another count).
    t1_differ: int
    #: Released groups whose sex x age table differs (another binning or other counts).
    tables_differ: int
    #: Groups of a coterminous set, and those whose output is another member's.
    coterminous_groups: int
    groups_copied: int
    #: The differing groups (at most LISTED): REGION_TYPE, REGION_ID, ITERATION_CODE, default, no-coterminous.
    listed: list[dict] = field(default_factory=list)
    #: "REGION_TYPE REGION_ID" -> differing groups of that region (the 10 regions with most).
    by_region: dict[str, int] = field(default_factory=dict)
    #: Differing groups that are published by default and suppressed without the step, and the reverse.
    published_only_by_default: int = 0
    suppressed_only_by_default: int = 0


def _read(folder: Path) -> pd.DataFrame:
    """Every part file of a table folder (headers.csv gives the columns of an empty one)."""
    parts = [pd.read_csv(p, sep="|", dtype=str, keep_default_na=False) for p in sorted(folder.glob("*.csv"))]
    return pd.concat(parts, ignore_index=True)


def _tuples(frame: pd.DataFrame, columns: list[str]):
    """The rows of those columns as tuples of str (column by column: iterating over the
    rows of pandas' Arrow-backed strings costs ten times as much)."""
    return zip(*(frame[c].tolist() for c in columns))


def outputs(out_dir: Path) -> tuple[dict[tuple, str], dict[tuple, tuple], int]:
    """(group -> T1 count or "suppressed", group -> its table as sorted T2 rows, T2 rows)."""
    t1 = _read(out_dir / "t1")
    sup = _read(out_dir / "suppressed")
    t2 = _read(out_dir / "t2")
    status = {tuple(k): c for *k, c in _tuples(t1, KEY + ["COUNT"])}
    status.update({tuple(k): "suppressed" for k in _tuples(sup, KEY)})
    tables: dict[tuple, list] = {}
    for *k, a, b, s, c in _tuples(t2, KEY + ["AGESTART", "AGEEND", "SEX", "COUNT"]):
        tables.setdefault(tuple(k), []).append((a, b, s, c))
    return status, {k: tuple(sorted(v)) for k, v in tables.items()}, len(t2)


def plan_at(params_dir: Path, budget: float):
    """The inputs' plan with every tabulated level's budget set to `budget`."""
    from calculators.config import SafeTabConfig

    cfg = SafeTabConfig.read(Path(params_dir) / "config.json")
    return cfg.updated(**{lvl.budget_key: budget for lvl in cfg.tabulated_levels()})


def measure(params_dir: Path, data_dir: Path, work: Path, *, budget: float = 1e4, seed: int = 0,
            name: str = "") -> tuple[Difference, Path, Path]:
    """Both runs into `work`; the difference and the two output folders (default, no-coterminous)."""
    from engine.run import prepare, run

    prepared = prepare(params_dir, data_dir, config=plan_at(params_dir, budget))
    default = run(params_dir, data_dir, work / "coterminous", seed=seed, prepared=prepared, overwrite=True)
    plain = run(params_dir, data_dir, work / "no-coterminous", seed=seed, prepared=prepared, coterminous=False,
                overwrite=True)
    a, ta, n2a = outputs(default.out_dir)
    b, tb, n2b = outputs(plain.out_dir)
    t1_diff = sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))
    tab_diff = sorted(k for k in ta.keys() | tb.keys() if ta.get(k) != tb.get(k))
    listed = [{"REGION_TYPE": k[0], "REGION_ID": k[1], "ITERATION_CODE": k[2], "default": a.get(k),
               "no_coterminous": b.get(k)} for k in sorted(set(t1_diff) | set(tab_diff))[:LISTED]]
    every = sorted(set(t1_diff) | set(tab_diff))
    regions = pd.Series([f"{k[0]} {k[1]}" for k in every], dtype=object).value_counts().head(10)
    cot = default.manifest["postprocessing"].get("coterminous_result", {})
    m = default.manifest["outputs"]["rows"]
    mp = plain.manifest["outputs"]["rows"]
    diff = Difference(name or str(params_dir), budget, seed, sum(prepared.universe_size(l) for l in prepared.levels),
                      {"default": m["t1"], "no_coterminous": mp["t1"]}, {"default": n2a, "no_coterminous": n2b},
                      {"default": m["suppressed"], "no_coterminous": mp["suppressed"]}, len(t1_diff), len(tab_diff),
                      int(cot.get("groups", 0)), int(cot.get("groups_copied", 0)), listed,
                      {k: int(v) for k, v in regions.items()},
                      sum(a.get(k) != "suppressed" and b.get(k) == "suppressed" for k in t1_diff),
                      sum(a.get(k) == "suppressed" and b.get(k) != "suppressed" for k in t1_diff))
    return diff, default.out_dir, plain.out_dir


def measure_all(budget: float = 1e4, seed: int = 0) -> list[Difference]:
    """The shipped sample, and the toy when ../shared/reference is there."""
    found = [("shipped sample (sample_data/)", SAMPLE / "params", SAMPLE / "data")]
    if TOY.is_dir():
        found.append(("toy (shared/reference/safetab-p-toy)", TOY / "params", TOY / "data"))
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        for i, (name, params, data) in enumerate(found):
            out.append(measure(params, data, Path(tmp) / str(i), budget=budget, seed=seed, name=name)[0])
    return out


def markdown(diffs: list[Difference]) -> str:
    """The table docs/production-differences.md shows."""
    lines = ["| inputs | population groups | T1 rows (default / no-coterminous) | T2 rows | groups whose T1 row "
             "differs (of them published only with the step) | groups whose table differs | coterminous groups "
             "(copied) |",
             "|---|---|---|---|---|---|---|"]
    for d in diffs:
        lines.append(f"| {d.inputs} | {d.groups:,} | {d.t1_rows['default']:,} / {d.t1_rows['no_coterminous']:,} | "
                     f"{d.t2_rows['default']:,} / {d.t2_rows['no_coterminous']:,} | {d.t1_differ:,} "
                     f"({d.published_only_by_default:,}) | {d.tables_differ:,} | {d.coterminous_groups:,} "
                     f"({d.groups_copied:,}) |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dirs", nargs="*", metavar="DIR", help="PARAMS_DIR DATA_DIR (default: the sample and the toy)")
    ap.add_argument("--budget", type=float, default=1e4)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    if args.dirs and len(args.dirs) != 2:
        ap.error("give PARAMS_DIR and DATA_DIR, or nothing")
    if args.dirs:
        with tempfile.TemporaryDirectory() as tmp:
            diffs = [measure(Path(args.dirs[0]), Path(args.dirs[1]), Path(tmp), budget=args.budget,
                             seed=args.seed)[0]]
    else:
        diffs = measure_all(args.budget, args.seed)
    print(markdown(diffs))
    for d in diffs:
        if d.listed and d.groups < 10_000:
            print(f"\n{d.inputs}: the groups that differ")
            print(pd.DataFrame(d.listed).to_string(index=False))
        print(f"\n{d.inputs}: differing groups by region (the 10 with most): {d.by_region}; published only with the "
              f"step: {d.published_only_by_default:,}; suppressed only with it: {d.suppressed_only_by_default:,}")
    print("RESULT " + json.dumps([asdict(d) for d in diffs]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
