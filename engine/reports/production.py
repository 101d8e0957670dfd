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

Two ways to the same files: `write_reports` reads releases from disk (`--release`,
and the reference the tests hold the other to); `ProductionCollector` takes what each
trial publishes as it is tabulated (`engine.tabulation.postprocess.GroupRows`), keeps
the first trial's rows and exact integer histograms of the errors, and never needs a
release on disk: a study of many trials costs about what the studio report costs.
"""

from __future__ import annotations

import math
from collections import defaultdict
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
    """The part files (*.csv) of one output table as text columns, COUNT as int64
    (no checks: `read_release` is the checked reader)."""
    parts = sorted(Path(folder).glob("*.csv"))
    if not parts:
        return pd.DataFrame()
    df = pd.concat([pd.read_csv(p, sep="|", dtype=str, keep_default_na=False) for p in parts], ignore_index=True)
    return df.assign(COUNT=df["COUNT"].astype(np.int64))


def read_release(prepared, release_dir: str | Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """t1 and t2 of a release of `prepared`'s inputs (`accuracy --release`), checked:
    InputError naming file, line, column and value if RELEASE_DIR is not a release
    (no t1/ or t2/ folder, no part file at all, or a manifest whose mode.kind is not
    that of a release: the ground truth, a legacy study), a part file is malformed (header,
    fields, a COUNT that is not an integer, T2 labels), its manifest names another
    GRF-C or person file than DATA_DIR's (a release of other inputs, e.g. another
    nation), or a row is not a population group of these inputs."""
    from engine.errors import InputError, Problem, ProblemLog
    from engine.inputs.readers import DataFile, iter_batches
    from engine.release.outputs import MANIFEST, T1_COLUMNS, T2_COLUMNS

    release_dir = Path(release_dir)
    name = release_dir.name or str(release_dir)
    problems = []
    if not release_dir.is_dir():
        raise InputError([Problem(str(release_dir), None, None, None, "RELEASE_DIR to be a release folder")])
    for sub in ("t1", "t2"):
        if not (release_dir / sub).is_dir():
            problems.append(Problem(f"{name}/{sub}/", None, None, None,
                                    f"a folder of {sub.upper()} part files: RELEASE_DIR must be a release written by "
                                    "`python -m engine run` (t1/, t2/, suppressed/, manifest.json)"))
    if problems:
        raise InputError(problems)
    if not any(p.name != "headers.csv" for p in (release_dir / "t1").glob("*.csv")) \
            and not any(p.name != "headers.csv" for p in (release_dir / "t2").glob("*.csv")):
        raise InputError([Problem(f"{name}/t1/", None, None, None,
                                  "at least one part file with released counts (t1/ and t2/ hold none)")])
    _check_release_inputs(prepared, release_dir, name)
    log = ProblemLog()
    tables = {}
    for sub, columns in (("t1", T1_COLUMNS), ("t2", T2_COLUMNS)):
        frames = []
        for path in sorted((release_dir / sub).glob("*.csv")):
            if path.name == "headers.csv":
                continue
            file = f"{name}/{sub}/{path.name}"
            if path.stat().st_size <= len("|".join(columns)) + 1:
                continue  # the header alone: no rows
            part = ProblemLog()
            for batch in iter_batches(DataFile(path, "txt"), columns, part):
                df = batch.table.to_pandas()
                lines = batch.lines()
                count = df["COUNT"].str.fullmatch(r"-?[0-9]{1,18}")
                bad = ~count
                checks = [("COUNT", bad, "an integer")]
                if sub == "t2":
                    for c in ("AGESTART", "AGEEND"):
                        checks.append((c, ~df[c].str.fullmatch(r"\*|[0-9]{1,3}"), "an age (0 to 115) or *"))
                    checks.append(("SEX", ~df["SEX"].isin(["1", "2"]), "1 or 2"))
                for col, mask, expected in checks:
                    for i in np.flatnonzero(mask.to_numpy())[:20]:
                        line = None if lines is None or lines[i] <= 0 else int(lines[i])
                        part.add(path.name, line, col, df[col].iat[i], expected)
                    part.count(max(0, int(mask.sum()) - 20))
                if not part:
                    frames.append(df.assign(COUNT=df["COUNT"].astype(np.int64), _file=file,
                                            _line=lines if lines is not None else np.zeros(len(df), np.int64)))
            for p in part.problems:
                log.problems.append(Problem(file, p.line, p.column, p.value, p.expected))
            log.total += part.total
        tables[sub] = (pd.concat(frames, ignore_index=True) if frames else
                       pd.DataFrame({c: pd.Series(dtype=str) for c in columns}).assign(
                           COUNT=pd.Series(dtype=np.int64), _file=pd.Series(dtype=str), _line=pd.Series(dtype=int)))
    log.raise_if_any()
    _refuse_repeated_rows_and_partial_tables(tables["t1"], tables["t2"])
    return tables["t1"], tables["t2"]


def _refuse_repeated_rows_and_partial_tables(t1: pd.DataFrame, t2: pd.DataFrame) -> None:
    """InputError naming file and line of a group given twice in t1/ (or a T2 cell twice),
    of a T2 table that is not one whole binning (4, 9 or 23 age bins per sex and the two
    sex marginals), and of a T2 table of a group with no T1 row: the reports would
    silently keep one of two counts, leave the table out, or compare a group's cells
    without its total."""
    from calculators.levels import STAT_LEVEL_AGE_EDGES, age_bins
    from engine.errors import InputError

    problems, total = [], 0

    def add(df: pd.DataFrame, rows: np.ndarray, expected) -> None:
        nonlocal total
        total += len(rows)
        for i in rows[: max(0, 20 - len(problems))]:
            row = df.iloc[int(i)]
            problems.append(_group_problem(row, expected(row) if callable(expected) else expected))

    for df, cols, what in ((t1, KEY, "each population group once in t1/"),
                           (t2, KEY + ["AGESTART", "AGEEND", "SEX"], "each T2 cell of a group once in t2/")):
        if not len(df):
            continue
        repeated = df.duplicated(cols, keep="first").to_numpy()
        if repeated.any():
            first = df[df.duplicated(cols, keep=False).to_numpy() & ~repeated].set_index(cols)
            where = {k: f"{r['_file']} line {r['_line']}" for k, r in first.iterrows()}
            add(df, np.flatnonzero(repeated),
                lambda row, cols=cols, what=what: f"{what} (already on {where[tuple(row[c] for c in cols)]})")
    if len(t2) and not problems:
        bins = {k: [f"{a}|{b}" for a, b in age_bins(e)] for k, e in STAT_LEVEL_AGE_EDGES.items()}
        body = t2["AGESTART"].to_numpy() != "*"
        pairs = t2["AGESTART"] + "|" + t2["AGEEND"]
        group = t2.groupby(KEY, sort=False).ngroup().to_numpy()
        n = group.max() + 1
        n_body = np.bincount(group[body], minlength=n)
        n_marg = np.bincount(group[~body], minlength=n)
        ok = np.zeros(n, bool)
        for k, pairs_k in bins.items():
            in_k = pairs.isin(pairs_k).to_numpy() & body
            ok |= (np.bincount(group[in_k], minlength=n) == n_body) & (n_body == 2 * len(pairs_k))
        ok &= n_marg == 2
        first_row = pd.Series(np.arange(len(t2))).groupby(group).min().to_numpy()
        bad = np.flatnonzero(~ok)
        if len(bad):
            add(t2, first_row[bad],
                lambda row: "a whole sex x age table of one binning: 8, 18 or 46 cells (age4, age9 or age23 for "
                            "each sex) and the two sex marginals (AGESTART = AGEEND = *)")
        heads = t2.iloc[first_row]
        released = pd.MultiIndex.from_frame(t1[KEY]) if len(t1) else pd.MultiIndex.from_tuples([], names=KEY)
        orphan = ~pd.MultiIndex.from_frame(heads[KEY]).isin(released)
        if orphan.any():
            add(t2, first_row[orphan], "a table of a group whose total is in t1/ (only released groups have a T2 "
                                       "table; this group has no T1 row)")
    if total:
        raise InputError(problems, total)


#: What `accuracy --release` compares: the manifest's mode.kind of a release of `run`
#: (secure or seeded) or of a trial kept by `accuracy --keep-trials`.
RELEASE_KINDS = ("release", "seeded release", "accuracy study trial")
_MANIFEST_LIMIT = 16 * 1024 * 1024


def _check_release_inputs(prepared, release_dir: Path, name: str) -> None:
    """InputError if RELEASE_DIR's manifest is not that of a release (`RELEASE_KINDS`:
    e.g. the ground truth of `truth` or a legacy study, said as such), or says it was
    made from another GRF-C or person file than DATA_DIR's (checksum of GRF-C, name and
    size of the person file)."""
    import json

    from engine.errors import InputError, Problem
    from engine.inputs.readers import sha256_file
    from engine.release.outputs import MANIFEST
    from engine.release.publish import open_regular, os_message

    path = release_dir / MANIFEST
    try:
        with open_regular(path) as fh:
            manifest = json.loads(fh.read(_MANIFEST_LIMIT).decode("utf-8"))
    except (OSError, ValueError) as exc:
        why = os_message(exc) if isinstance(exc, OSError) else "not JSON in UTF-8"
        raise InputError([Problem(f"{name}/{MANIFEST}", None, None, None,
                                  f"found no readable manifest.json ({why}); expected the manifest naming the inputs "
                                  "of the release (RELEASE_DIR must be a release written by `python -m engine run`)")]
                         ) from None
    mode = manifest.get("mode") if isinstance(manifest, dict) else None
    kind = mode.get("kind") if isinstance(mode, dict) else None
    if kind not in RELEASE_KINDS:
        # Say what the folder is: the ground truth of `truth`, a legacy study...
        what = kind if isinstance(kind, str) else manifest.get("kind") if isinstance(manifest, dict) else None
        what = str(what)[:80] if what is not None else None
        column = "mode.kind" if isinstance(kind, str) else "kind" if what is not None else "mode.kind"
        hint = {"ground truth": "the noise-free tables of `python -m engine truth`, which accuracy compares "
                                "releases against (comparing them with themselves gives zero errors)",
                "legacy cell-suppression study": "a study of `python -m engine legacy` (exact counts, some "
                                                 "withheld), not a SafeTab-P release"}.get(what, "not a release")
        raise InputError([Problem(f"{name}/{MANIFEST}", None, column, what,
                                  f"a release written by `python -m engine run` (mode.kind "
                                  f"{' or '.join(RELEASE_KINDS)}); this folder is {hint}")])
    try:
        files = manifest["inputs"]["files"]
    except (KeyError, TypeError):
        raise InputError([Problem(f"{name}/{MANIFEST}", None, "inputs.files", None,
                                  "the inputs of the release (its manifest.json names none)")]) from None
    inputs = prepared.inputs
    problems = []
    grf, persons = inputs.grf_file, inputs.persons_file
    stated = files.get(f"DATA_DIR/{grf.name}") if isinstance(files, dict) else None
    if not isinstance(stated, dict) or stated.get("sha256") != sha256_file(grf.path):
        problems.append(Problem(f"{name}/{MANIFEST}", None, "inputs.files", None,
                                f"a release of these inputs: it was made from another GRF-C than DATA_DIR's "
                                f"{grf.name} (a release of another nation?)"))
    stated = files.get(f"DATA_DIR/{persons.name}") if isinstance(files, dict) else None
    if not isinstance(stated, dict) or stated.get("bytes") != persons.path.stat().st_size:
        problems.append(Problem(f"{name}/{MANIFEST}", None, "inputs.files", None,
                                f"a release of these inputs: it was made from another person file than DATA_DIR's "
                                f"{persons.name}"))
    if problems:
        raise InputError(problems)


def augmented_tables(prepared, release_dir: str | Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """t1 and t2 of a release with NOISY (its COUNT) and GROUND_TRUTH columns (production's
    ``get_augmented_df``). The truth of a T2 row is the sum of the true age23 cells of its
    sex within [AGESTART, AGEEND] (both sexes' ages for a marginal row, '*')."""
    release_dir = Path(release_dir)
    t1, t2 = read_release(prepared, release_dir)
    gt1 = np.full(len(t1), -1, dtype=np.int64)
    gt2 = np.full(len(t2), -1, dtype=np.int64)
    geo = prepared.inputs.geography
    edges = np.array(AGE23_EDGES)
    # Each table's key columns as arrays once, its rows by geography level once: a level's
    # rows are then looked up among its own rows only (not the whole table again per level).
    keys = [_rows_by_geo(t1), _rows_by_geo(t2)]
    # T2's ages and sexes as numbers once, for all its rows (read_release has checked them: a
    # row that is not a marginal, AGESTART = *, has an age bin of whole numbers, SEX is 1 or 2)
    t2_marginal = (t2["AGESTART"] == "*").to_numpy()
    t2_start = np.where(t2_marginal, 0, pd.to_numeric(t2["AGESTART"].where(~t2_marginal, "0")).to_numpy())
    t2_end = np.where(t2_marginal, MAX_AGE, pd.to_numeric(t2["AGEEND"].where(~t2_marginal, "0")).to_numpy())
    t2_sex = t2["SEX"].astype(int).to_numpy() - 1
    for lvl in prepared.plans:
        codes = prepared.catalog.codes(lvl.geo, lvl.iteration_level).astype(str)
        regions = pd.Index(geo.regions[lvl.geo].astype(str))
        code_index = pd.Index(codes)
        counts = prepared.counts(lvl)

        rows1, g1 = _level_groups(keys[0], lvl.geo, regions, code_index)
        if len(rows1):
            gt1[rows1] = counts.totals()[g1]
        rows2, g2 = _level_groups(keys[1], lvl.geo, regions, code_index)
        if len(rows2):
            uniq, inv = np.unique(g2, return_inverse=True)
            cells = counts.cells_of(uniq).reshape(len(uniq), 2, len(AGE23_EDGES))
            cum = np.concatenate([np.zeros((len(uniq), 2, 1), np.int64), np.cumsum(cells, axis=2)], axis=2)
            lo = np.searchsorted(edges, t2_start[rows2], side="left")
            hi = np.searchsorted(edges, t2_end[rows2] + 1, side="left")
            sex = t2_sex[rows2]
            gt2[rows2] = cum[inv, sex, hi] - cum[inv, sex, lo]
    _refuse_unknown_groups([(t1, gt1), (t2, gt2)])
    t1 = t1.drop(columns=["_file", "_line"]).rename(columns={"COUNT": "NOISY"}).assign(GROUND_TRUTH=gt1)
    t2 = t2.drop(columns=["_file", "_line"]).rename(columns={"COUNT": "NOISY"}).assign(GROUND_TRUTH=gt2)
    return t1, t2


def _rows_by_geo(df: pd.DataFrame) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray]:
    """({REGION_TYPE: its rows, ascending}, REGION_ID, ITERATION_CODE) of a release table."""
    kind, names = pd.factorize(df["REGION_TYPE"], sort=False)
    order = np.argsort(kind, kind="stable")
    bounds = np.searchsorted(kind[order], np.arange(len(names) + 1))
    by_geo = {str(n): order[bounds[j]:bounds[j + 1]] for j, n in enumerate(names)}
    return by_geo, df["REGION_ID"].to_numpy(dtype=object), df["ITERATION_CODE"].to_numpy(dtype=object)


def _level_groups(keys: tuple[dict[str, np.ndarray], np.ndarray, np.ndarray], geo: str, regions: pd.Index,
                  codes: pd.Index) -> tuple[np.ndarray, np.ndarray]:
    """The rows (positions, ascending) of a release table, split by `_rows_by_geo`, that are
    population groups of one level (geography `geo`, its `regions` and iteration `codes`; a code
    of another level of the same geography is not among them), and each one's group index
    (region index * len(codes) + code index, the engine's universe order)."""
    by_geo, region_ids, iteration_codes = keys
    sel = by_geo.get(geo, np.zeros(0, np.int64))
    r = regions.get_indexer(region_ids[sel])
    i = codes.get_indexer(iteration_codes[sel])
    ok = (r >= 0) & (i >= 0)
    return sel[ok], (r * len(codes) + i)[ok]


def _group_problem(row: pd.Series, expected: str):
    """The Problem of one release row (`read_release`'s frames: `_file`, `_line`, 0 where
    unknown), named by its population group."""
    from engine.errors import Problem

    return Problem(row["_file"], int(row["_line"]) or None, "|".join(KEY), "|".join(str(row[c]) for c in KEY),
                   expected)


def _refuse_unknown_groups(tables: list[tuple[pd.DataFrame, np.ndarray]]) -> None:
    """InputError naming file and line of rows (found < 0) that are not population
    groups of these inputs."""
    from engine.errors import InputError

    problems, total = [], 0
    for df, found in tables:
        bad = np.flatnonzero(found < 0)
        total += len(bad)
        for i in bad[:20]:
            problems.append(_group_problem(df.iloc[int(i)], "a population group of these inputs (PARAMS_DIR, "
                                           "DATA_DIR): is RELEASE_DIR a release of other inputs, e.g. another nation?"))
    if total:
        raise InputError(problems, total)


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


# ------------------------------------------------------------------ from the groups published
#: Workload names by stat level (TotalOnly and level 0 publish a total).
_WORKLOAD_OF_STAT = {-1: "Total", 0: "Total", 1: "Sex x Age(4)", 2: "Sex x Age(9)", 3: "Sex x Age(23)"}
_ROWS_OF = {w: n for n, w in WORKLOADS.items()}
#: Powers of ten for the size bins (bin b holds sizes in (10^(b-1), 10^b]; bin 0 is [0, 1]).
_POWERS = np.array([10**i for i in range(19)], dtype=np.int64)


def _quantile(hist: np.ndarray, q: float) -> float:
    """The q-quantile (linear interpolation, as pandas' and numpy's default) of the
    values whose counts are hist[v], v = 0, 1, ..."""
    cum = np.cumsum(hist)
    n = int(cum[-1])
    pos = q * (n - 1)
    lo = int(pos)
    frac = pos % 1
    v_lo = int(np.searchsorted(cum, lo, side="right"))
    if frac == 0.0:
        return float(v_lo)
    v_hi = int(np.searchsorted(cum, lo + 1, side="right"))
    return v_lo + (v_hi - v_lo) * frac


class ProductionCollector:
    """production's two reports from the groups each trial publishes (`add`), with
    `end_trial` after each trial. error_report.csv is the first trial's; the
    multi-run report keeps, per (REGION_TYPE, ITERATION_LEVEL, DETAILED_ONLY, size
    bin, workload), an exact histogram of the per-row |error| and the number of (group,
    trial) pairs, so memory does not grow with the trials."""

    def __init__(self, prepared, keep_first: bool = True):
        flags = iteration_flags(prepared.inputs.specs).set_index("ITERATION_CODE")
        self._flags = flags
        self._by_codes: dict[int, tuple] = {}
        self.trial = 0
        #: Whether this collector keeps its first trial for error_report.csv (a worker of
        #: a parallel study, which never runs the study's first trial, does not).
        self.keep_first = keep_first
        self.first: list[dict] = []
        self.hists: dict[tuple, np.ndarray] = {}
        self.pairs: dict[tuple, int] = defaultdict(int)
        self.largest = 0

    def _code_flags(self, codes: np.ndarray) -> tuple:
        """(DETAILED_ONLY, COARSE_ONLY, LEVEL) of each code of an array, as text, and the
        (LEVEL, DETAILED_ONLY) pair as one small integer."""
        key = id(codes)
        if key not in self._by_codes:
            f = self._flags.reindex(np.asarray(codes).astype(str))
            detailed, coarse, level = (f[c].to_numpy(dtype=object) for c in ("DETAILED_ONLY", "COARSE_ONLY", "LEVEL"))
            pair = pd.MultiIndex.from_arrays([level, detailed])
            ids, uniq = pd.factorize(pair)
            self._by_codes[key] = (codes, detailed, coarse, ids.astype(np.int64), list(uniq))
        return self._by_codes[key][1:]

    def _count(self, geo: str, pair_id: np.ndarray, pairs: list, size: np.ndarray, workload: str,
               err: np.ndarray, per_pair: int) -> None:
        """Add per-row errors (per_pair rows for each (group, trial) pair)."""
        if not len(size):
            return
        bins = np.searchsorted(_POWERS, size, side="left")
        composite = pair_id * len(_POWERS) + bins
        n_comp = len(pairs) * len(_POWERS)
        width = int(err.max()) + 1 if len(err) else 1
        if n_comp * width <= max(1 << 22, 2 * len(err)):
            # one histogram per composite in one pass (no sort of the groups, no mask per key)
            rows = np.repeat(composite, per_pair) if per_pair > 1 else composite
            hists = np.bincount(rows * width + err, minlength=n_comp * width).reshape(n_comp, width)
            groups = np.bincount(composite, minlength=n_comp)
            for comp in np.flatnonzero(groups).tolist():
                h = hists[comp]
                self._merge((geo, *map(str, pairs[comp // len(_POWERS)]), comp % len(_POWERS), workload),
                            h[: np.flatnonzero(h)[-1] + 1], int(groups[comp]))
            return
        uniq, inv = np.unique(composite, return_inverse=True)
        err_rows = np.repeat(inv, per_pair) if per_pair > 1 else inv
        for u, comp in enumerate(uniq.tolist()):
            level, detailed = pairs[comp // len(_POWERS)]
            key = (geo, str(level), str(detailed), comp % len(_POWERS), workload)
            e = err if len(uniq) == 1 else err[err_rows == u]
            self._merge(key, np.bincount(e), len(e) // per_pair)

    def _merge(self, key: tuple, h: np.ndarray, pairs: int) -> None:
        """Add a histogram of |error| and its (group, trial) pairs to a key's."""
        old = self.hists.get(key)
        if old is None:
            self.hists[key] = h.copy()
        else:
            if len(h) > len(old):
                old = np.pad(old, (0, len(h) - len(old)))
            old[: len(h)] += h
            self.hists[key] = old
        self.pairs[key] += pairs

    def add(self, rows) -> None:
        """What one set of groups of this trial publishes (`GroupRows`)."""
        detailed, coarse, pair_id, pairs = self._code_flags(rows.codes)
        rel = rows.released & (rows.stat <= 0)
        total_err = np.abs(rows.t1[rel] - rows.true_total[rel])
        size = rows.true_total[rel]
        c = rows.code_idx[rel]
        parts = [(rows.region_idx[rel], c, size, "Total", total_err, total_err * total_err)]
        self._count(rows.geo, pair_id[c], pairs, size, "Total", total_err, 1)
        for k, (r, ci, cells, _marg, true_cells) in sorted(rows.tables.items()):
            err = np.abs(cells - true_cells)
            size_k = true_cells.sum(axis=1)
            w = _WORKLOAD_OF_STAT[k]
            parts.append((r, ci, size_k, w, err.sum(axis=1), (err * err).sum(axis=1)))
            self._count(rows.geo, pair_id[ci], pairs, size_k, w, err.reshape(-1), err.shape[1])
        for _r, _c, sz, *_ in parts:
            if len(sz):
                self.largest = max(self.largest, int(sz.max()))
        if self.trial == 0 and self.keep_first:
            for r, ci, sz, w, abs_err, sq_err in parts:
                if len(r):
                    self.first.append({"geo": rows.geo, "region_ids": rows.region_ids, "region_idx": r,
                                       "codes": rows.codes, "code_idx": ci, "size": sz, "workload": w,
                                       "abs": abs_err, "sq": sq_err, "detailed": detailed[ci], "coarse": coarse[ci]})

    def end_trial(self) -> None:
        self.trial += 1

    def merge(self, other: ProductionCollector) -> None:
        """Add the multi-run histograms and trials of another collector (e.g. a worker's
        of a parallel study); exact integer counts, so the multi-run report is the one a
        single collector of all the trials writes. error_report.csv stays this one's."""
        for key, h in other.hists.items():
            self._merge(key, h, other.pairs[key])
        self.largest = max(self.largest, other.largest)
        self.trial += other.trial

    def __getstate__(self) -> dict:
        # What a worker of a parallel study sends back: the mergeable state only (no
        # flags table, no per-level caches, no first trial).
        return {"hists": self.hists, "pairs": dict(self.pairs), "largest": self.largest, "trial": self.trial}

    def __setstate__(self, state: dict) -> None:
        self._flags, self._by_codes, self.keep_first, self.first = None, {}, False, []
        self.hists, self.largest, self.trial = state["hists"], state["largest"], state["trial"]
        self.pairs = defaultdict(int, state["pairs"])

    def error_report(self) -> pd.DataFrame:
        """error_report.csv of the first trial, rows sorted by (REGION_ID, REGION_TYPE,
        ITERATION_CODE) as text."""
        if not self.first:
            return pd.DataFrame({c: pd.Series(dtype=object) for c in ERROR_REPORT_COLUMNS})
        # Text order from the ranks of the distinct strings: millions of rows are sorted
        # as integers, only the few thousand region ids and codes as text.
        def ranks(field: str) -> tuple[np.ndarray, np.ndarray]:
            arrays = {id(p[field]): np.asarray(p[field]).astype(str) for p in self.first}
            ordered = np.unique(np.concatenate(list(arrays.values())))
            rank = {k: np.searchsorted(ordered, a) for k, a in arrays.items()}
            strings = {k: a.astype(object) for k, a in arrays.items()}
            idx = "region_idx" if field == "region_ids" else "code_idx"
            return (np.concatenate([rank[id(p[field])][p[idx]] for p in self.first]),
                    np.concatenate([strings[id(p[field])][p[idx]] for p in self.first]))

        region_rank, region = ranks("region_ids")
        code_rank, code = ranks("codes")
        kind = np.concatenate([np.full(len(p["region_idx"]), p["geo"], dtype=object) for p in self.first])
        kinds = sorted({p["geo"] for p in self.first})
        kind_rank = np.concatenate([np.full(len(p["region_idx"]), kinds.index(p["geo"])) for p in self.first])
        order = np.lexsort((code_rank, kind_rank, region_rank))
        cat = {k: np.concatenate([p[k] for p in self.first]) for k in ("size", "abs", "sq", "detailed", "coarse")}
        workload = np.concatenate([np.full(len(p["region_idx"]), p["workload"], dtype=object) for p in self.first])
        df = pd.DataFrame({
            "REGION_ID": region[order], "REGION_TYPE": kind[order], "ITERATION_CODE": code[order],
            "DETAILED_ONLY": cat["detailed"][order], "COARSE_ONLY": cat["coarse"][order],
            "Population group size": cat["size"][order].astype(np.int64), "Workload selected": workload[order],
            "Total absolute error": cat["abs"][order].astype(np.int64),
            "Total squared error": cat["sq"][order].astype(np.int64),
        })
        return df[ERROR_REPORT_COLUMNS]

    def multi_run_error_report(self) -> pd.DataFrame:
        """multi_run_error_report.csv over every trial added."""
        if not self.pairs:
            return pd.DataFrame(columns=MULTI_RUN_COLUMNS)
        labels, _edges = _size_bins(self.largest)
        cells: dict[tuple, dict[str, tuple[float, float]]] = defaultdict(dict)
        for key, pairs in self.pairs.items():
            geo, level, detailed, b, w = key
            times = float(pairs * _ROWS_OF[w]) / _ROWS_OF[w]
            cells[(geo, level, detailed, b)][w] = (times, _quantile(self.hists[key], 0.95))
        out = []
        for (geo, level, detailed, b) in sorted(cells):
            part = cells[(geo, level, detailed, b)]
            total = sum(t for t, _ in part.values())
            if total == 0:
                continue
            rec = {"REGION_TYPE": geo, "ITERATION_LEVEL": level, "DETAILED_ONLY": detailed,
                   "Population group size": labels[b]}
            for w in WORKLOADS.values():
                rec[FREQ + w] = _fmt(float(part[w][0] / total)) if w in part else _fmt(0.0)
                rec[MOE + w] = _fmt(float(part[w][1])) if w in part else _fmt(float("nan"))
            out.append(rec)
        return pd.DataFrame(out)[MULTI_RUN_COLUMNS]

    def write(self, out_dir: Path) -> dict[str, pd.DataFrame]:
        """Write both files into out_dir (as `write_reports` does); returns them by name."""
        reports = {ERROR_REPORT_FILE: self.error_report(), MULTI_RUN_FILE: self.multi_run_error_report()}
        for name, df in reports.items():
            df.to_csv(Path(out_dir) / name, index=False)
        return reports


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
