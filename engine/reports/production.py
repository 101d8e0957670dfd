"""Accuracy reports in the layouts of the Census production code.

Production's ``safetab_p/accuracy_report.py`` writes two reports; these are the same
tables, column for column, computed from this engine's releases:

* ``error_report.csv`` (`error_report`, production's ``create_error_report_p``): one row
  per population group of one release. A group's rows are its released sex x age cells
  if it has a T2 table (the T1 total and the two sex marginals are dropped: they are
  sums of the cells), else its T1 total. Columns:

  - REGION_ID, REGION_TYPE, ITERATION_CODE, DETAILED_ONLY, COARSE_ONLY (as written in the
    iteration spec files);
  - Population group size: the sum of the true values of the group's rows (its true total);
  - Workload selected: "Total", "Sex x Age(4)", "Sex x Age(9)" or "Sex x Age(23)", from
    the number of rows (1, 8, 18, 46);
  - Total absolute error: sum over the rows of |noisy - true|;
  - Total squared error: sum over the rows of (noisy - true)^2.

  Rows are sorted by (REGION_ID, REGION_TYPE, ITERATION_CODE) as text.

* ``multi_run_error_report.csv`` (`multi_run_error_report`, production's
  ``create_aggregated_error_report_p``), over several releases (trials) of the same
  inputs. The same rows per group and trial, each with its own error |noisy - true|, are
  grouped by REGION_TYPE, ITERATION_LEVEL, DETAILED_ONLY and the group size binned by
  powers of ten ("[0.0, 1.0]", "(1.0, 10.0]", "(10.0, 100.0]", ..., up to the largest
  size). For each workload W of a bin:

  - "Average proportion of pop groups with workload = W": the (group, trial) pairs of
    the bin that got W, over all (group, trial) pairs of the bin;
  - "MOE of W": the 95th percentile (linear interpolation, numpy's default) of the
    per-row errors of those pairs (per cell for a sex x age workload, per total for
    "Total"); "nan" where no pair got W.

  Values are written with two decimals ("{:.2f}"), or as "{:.2E}" when strictly between
  0 and 0.01; bins without any group are left out; rows are sorted by REGION_TYPE,
  ITERATION_LEVEL, DETAILED_ONLY (as text) and bin.

Suppressed groups have no released row and are not in either report (as in
production). The true values come from the prepared inputs at each row's own
breakdown, so a release can be reported whatever stat level each group got.
`production_reports` draws the trials with `engine.run.run` (kept under
OUT/single_runs/trial_<i>/, as production keeps them) and writes both files.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from calculators.levels import AGE23_EDGES, MAX_AGE

#: Workload names by number of rows, as production names them.
WORKLOADS = {1: "Total", 8: "Sex x Age(4)", 18: "Sex x Age(9)", 46: "Sex x Age(23)"}
KEY = ["REGION_ID", "REGION_TYPE", "ITERATION_CODE"]
ERROR_REPORT_COLUMNS = KEY + ["DETAILED_ONLY", "COARSE_ONLY", "Population group size", "Workload selected",
                              "Total absolute error", "Total squared error"]
FREQ = "Average proportion of pop groups with workload = "
MOE = "MOE of "
MULTI_RUN_INDEX = ["REGION_TYPE", "ITERATION_LEVEL", "DETAILED_ONLY", "Population group size"]
MULTI_RUN_COLUMNS = MULTI_RUN_INDEX + [c for w in WORKLOADS.values() for c in (FREQ + w, MOE + w)]
ERROR_REPORT_FILE = "error_report.csv"
MULTI_RUN_FILE = "multi_run_error_report.csv"


# ------------------------------------------------------------------ truth of a release
def read_parts(folder: Path) -> pd.DataFrame:
    """The part files (*.csv) of one output table as text columns, COUNT as int64."""
    parts = sorted(Path(folder).glob("*.csv"))
    if not parts:
        return pd.DataFrame()
    df = pd.concat([pd.read_csv(p, sep="|", dtype=str, keep_default_na=False) for p in parts], ignore_index=True)
    return df.assign(COUNT=df["COUNT"].astype(np.int64))



def augmented_tables(prepared, release_dir: str | Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """t1 and t2 of a release with NOISY (its COUNT) and GROUND_TRUTH columns (production's
    ``get_augmented_df``). The truth of a T2 row is the sum of the true age23 cells of its
    sex within [AGESTART, AGEEND] (both sexes' ages for a marginal row, '*')."""
    release_dir = Path(release_dir)
    t1, t2 = read_parts(release_dir / "t1"), read_parts(release_dir / "t2")
    t1 = t1 if len(t1) else pd.DataFrame({c: pd.Series(dtype=str) for c in KEY} | {"COUNT": pd.Series(dtype=np.int64)})
    t2 = t2 if len(t2) else pd.DataFrame({c: pd.Series(dtype=str) for c in KEY + ["AGESTART", "AGEEND", "SEX"]}
                                         | {"COUNT": pd.Series(dtype=np.int64)})
    gt1 = np.full(len(t1), -1, dtype=np.int64)
    gt2 = np.full(len(t2), -1, dtype=np.int64)
    geo = prepared.inputs.geography
    edges = np.array(AGE23_EDGES)
    for lvl in prepared.plans:
        codes = prepared.catalog.codes(lvl.geo, lvl.iteration_level).astype(str)
        regions = pd.Index(geo.regions[lvl.geo].astype(str))
        n_it = len(codes)
        code_index = pd.Index(codes)
        counts = prepared.counts(lvl)

        def groups(df: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
            sel = np.flatnonzero((df["REGION_TYPE"] == lvl.geo).to_numpy() & df["ITERATION_CODE"].isin(codes).to_numpy())
            r = regions.get_indexer(df["REGION_ID"].to_numpy()[sel])
            i = code_index.get_indexer(df["ITERATION_CODE"].to_numpy()[sel])
            ok = (r >= 0) & (i >= 0)
            return sel[ok], (r * n_it + i)[ok]

        rows1, g1 = groups(t1)
        if len(rows1):
            gt1[rows1] = counts.totals()[g1]
        rows2, g2 = groups(t2)
        if len(rows2):
            uniq, inv = np.unique(g2, return_inverse=True)
            cells = counts.cells_of(uniq).reshape(len(uniq), 2, len(AGE23_EDGES))
            cum = np.concatenate([np.zeros((len(uniq), 2, 1), np.int64), np.cumsum(cells, axis=2)], axis=2)
            sub = t2.iloc[rows2]
            marginal = (sub["AGESTART"] == "*").to_numpy()
            start = np.where(marginal, 0, pd.to_numeric(sub["AGESTART"].where(~marginal, "0")).to_numpy())
            end = np.where(marginal, MAX_AGE, pd.to_numeric(sub["AGEEND"].where(~marginal, "0")).to_numpy())
            lo = np.searchsorted(edges, start, side="left")
            hi = np.searchsorted(edges, end + 1, side="left")
            sex = sub["SEX"].astype(int).to_numpy() - 1
            gt2[rows2] = cum[inv, sex, hi] - cum[inv, sex, lo]
    for name, df, gt in (("t1", t1, gt1), ("t2", t2, gt2)):
        if (gt < 0).any():
            bad = df.iloc[int(np.flatnonzero(gt < 0)[0])]
            raise ValueError(f"{release_dir / name}: the row {'|'.join(str(v) for v in bad.to_numpy())} is not a "
                             "population group of these inputs (is it a release of other inputs?)")
    t1 = t1.rename(columns={"COUNT": "NOISY"}).assign(GROUND_TRUTH=gt1)
    t2 = t2.rename(columns={"COUNT": "NOISY"}).assign(GROUND_TRUTH=gt2)
    return t1, t2


def iteration_flags(specs) -> pd.DataFrame:
    """ITERATION_CODE, DETAILED_ONLY, COARSE_ONLY, LEVEL as the spec files write them."""
    def word(it, flag: bool) -> str:
        return "Null" if it.level == 0 else str(flag)

    return pd.DataFrame([{"ITERATION_CODE": it.code, "DETAILED_ONLY": word(it, it.detailed_only),
                          "COARSE_ONLY": word(it, it.coarse_only), "LEVEL": str(it.level)}
                         for it in specs.iterations.values()])


# ------------------------------------------------------------------ the reports
def _workload_rows(t1: pd.DataFrame, t2: pd.DataFrame) -> pd.DataFrame:
    """Each group's rows: its T2 cells if it has a T2 table, else its T1 total."""
    with_table = t2.loc[t2["AGESTART"] == "*", KEY].drop_duplicates()
    totals = t1.merge(with_table, on=KEY, how="left", indicator=True)
    totals = totals[totals["_merge"] == "left_only"].drop(columns="_merge")
    cells = t2[t2["AGESTART"] != "*"]
    out = pd.concat([cells[KEY + ["NOISY", "GROUND_TRUTH"]], totals[KEY + ["NOISY", "GROUND_TRUTH"]]],
                    ignore_index=True)
    return out.astype({"NOISY": np.int64, "GROUND_TRUTH": np.int64})


def error_report_from(t1: pd.DataFrame, t2: pd.DataFrame, iterations: pd.DataFrame) -> pd.DataFrame:
    """production's error_report.csv of one release (`augmented_tables`); see the module doc."""
    rows = _workload_rows(t1, t2)
    err = (rows["NOISY"] - rows["GROUND_TRUTH"]).abs()
    g = rows.assign(_abs=err, _sq=err * err).groupby(KEY, sort=True)
    out = pd.DataFrame({
        "Population group size": g["GROUND_TRUTH"].sum(),
        "Workload selected": g.size().map(WORKLOADS),
        "Total absolute error": g["_abs"].sum(),
        "Total squared error": g["_sq"].sum(),
    }).reset_index()
    out = out.merge(iterations[["ITERATION_CODE", "DETAILED_ONLY", "COARSE_ONLY"]], on="ITERATION_CODE", how="left")
    return out[ERROR_REPORT_COLUMNS]


def multi_run_error_report_from(trials: list[tuple[pd.DataFrame, pd.DataFrame]],
                                iterations: pd.DataFrame) -> pd.DataFrame:
    """production's multi_run_error_report.csv over several releases; see the module doc."""
    frames = []
    for trial, (t1, t2) in enumerate(trials):
        frames.append(_workload_rows(t1, t2).assign(Trial=trial))
    rows = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=KEY + ["NOISY", "GROUND_TRUTH",
                                                                                       "Trial"])
    if rows.empty:
        return pd.DataFrame(columns=MULTI_RUN_COLUMNS)
    pair = KEY + ["Trial"]
    g = rows.groupby(pair, sort=False)
    rows["size"] = g["GROUND_TRUTH"].transform("sum")
    rows["workload"] = g["GROUND_TRUTH"].transform("size").map(WORKLOADS)
    rows["Error"] = (rows["NOISY"] - rows["GROUND_TRUTH"]).abs()
    rows = rows.merge(iterations[["ITERATION_CODE", "DETAILED_ONLY", "LEVEL"]], on="ITERATION_CODE", how="left")
    rows = rows.rename(columns={"LEVEL": "ITERATION_LEVEL"})
    labels, bins = _size_bins(int(rows["size"].max()))
    rows["bin"] = np.searchsorted(np.array(bins[1:]), rows["size"].to_numpy(), side="left")

    index = ["REGION_TYPE", "ITERATION_LEVEL", "DETAILED_ONLY", "bin"]
    by = rows.groupby(index + ["workload"], sort=True)
    moe = by["Error"].quantile(0.95, interpolation="linear")
    # (group, trial) pairs per workload: rows / rows per pair
    sizes = by.size()
    per_pair = sizes.index.get_level_values("workload").map({v: k for k, v in WORKLOADS.items()})
    times = sizes / np.asarray(per_pair, dtype=float)
    table = pd.DataFrame({"moe": moe, "times": times}).reset_index()
    out = []
    for key, part in table.groupby(index, sort=True):
        total = part["times"].sum()
        if total == 0:
            continue
        rec = dict(zip(index, key))
        for w in WORKLOADS.values():
            hit = part[part["workload"] == w]
            rec[FREQ + w] = float(hit["times"].sum() / total) if len(hit) else 0.0
            rec[MOE + w] = float(hit["moe"].iloc[0]) if len(hit) else float("nan")
        out.append(rec)
    df = pd.DataFrame(out)
    df["Population group size"] = df["bin"].map(dict(enumerate(labels)))
    for c in MULTI_RUN_COLUMNS[4:]:
        df[c] = df[c].map(_fmt)
    return df[MULTI_RUN_COLUMNS].reset_index(drop=True)


def _size_bins(largest: int) -> tuple[list[str], list[float]]:
    """Edges 0, 1, 10, ..., 10^ceil(log10(largest)) and their labels, as production's
    pd.cut(include_lowest=True) prints them ("[0.0, 1.0]", "(1.0, 10.0]", ...)."""
    top = 0 if largest <= 1 else math.ceil(math.log10(largest))
    edges = [0.0] + [float(10**i) for i in range(top + 1)]
    labels = ["[0.0, 1.0]"] + [f"({edges[i]!r}, {edges[i + 1]!r}]" for i in range(1, len(edges) - 1)]
    return labels, edges


def _fmt(x: float) -> str:
    return f"{x:.2E}" if 0 < x < 0.01 else f"{x:.2f}"


# ------------------------------------------------------------------ files
def error_report(prepared, release_dir: str | Path) -> pd.DataFrame:
    """error_report.csv of one release of `prepared`'s inputs."""
    t1, t2 = augmented_tables(prepared, release_dir)
    return error_report_from(t1, t2, iteration_flags(prepared.inputs.specs))


def multi_run_error_report(prepared, release_dirs: list[str | Path]) -> pd.DataFrame:
    """multi_run_error_report.csv over releases of `prepared`'s inputs."""
    flags = iteration_flags(prepared.inputs.specs)
    return multi_run_error_report_from([augmented_tables(prepared, d) for d in release_dirs], flags)


def draw_releases(prepared, folder: Path, trials: int, seed: int | None, progress=None) -> list[Path]:
    """`trials` releases of the prepared inputs under folder/trial_<i> (seeded from seed + i,
    NOT FOR RELEASE, or from the secure source), as production's run_full_error_report_p."""
    from engine.run import run

    dirs = []
    for t in range(trials):
        out = folder / f"trial_{t}"
        cb = None if progress is None else (lambda s, d, n, t=t: progress(f"trial {t + 1}/{trials}, {s}", d, n))
        run(prepared.inputs.params_dir, prepared.inputs.data_dir, out, seed=None if seed is None else seed + t,
            progress=cb, prepared=prepared)
        dirs.append(out)
    return dirs


def write_reports(prepared, release_dirs: list[Path], out_dir: Path) -> dict[str, pd.DataFrame]:
    """Write error_report.csv (of the first release) and multi_run_error_report.csv (of
    all of them) into out_dir; returns both tables by file name."""
    out_dir.mkdir(parents=True, exist_ok=True)
    flags = iteration_flags(prepared.inputs.specs)
    augmented = [augmented_tables(prepared, d) for d in release_dirs]
    reports = {ERROR_REPORT_FILE: error_report_from(*augmented[0], flags),
               MULTI_RUN_FILE: multi_run_error_report_from(augmented, flags)}
    for name, df in reports.items():
        df.to_csv(out_dir / name, index=False)
    return reports
