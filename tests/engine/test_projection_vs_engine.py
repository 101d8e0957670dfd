"""The national projection agrees with the engine: the mean over repeated seeded runs of
`python -m engine run ... --no-coterminous` equals `calculators.projection.project`
within sampling error, level by level, figure by figure.

Each run is the command line's own code path (`engine.cli.main`, in process); its
outcome is read from the files it wrote (t1/, t2/, suppressed/) and compared with the
ground truth of `python -m engine truth`. The tolerance of a mean over R runs is
5 standard deviations of that mean, sd / sqrt(R), with sd the projection's own `_sd`
column (sums of independent indicators); a figure with sd = 0 must match exactly.
With the fixed seeds the test is deterministic; 5 sd makes a false alarm over the few
hundred comparisons below about 1 in 10,000 for any seed.
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pytest

from calculators.config import SafeTabConfig
from calculators.projection import COUNT_COLUMNS, OCCUPANCY_COLUMNS, SHARE_COLUMNS, Profile, project
from engine.cli import main
from engine.reports.profile import compute_profile

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "sample_data"
Z = 5.0


#: The columns the comparison reads, as written (region and code as text, the count a number).
_TYPES = {"REGION_ID": pa.string(), "ITERATION_CODE": pa.string(), "COUNT": pa.int64()}


def _read(folder: Path, part: str) -> pa.Table:
    """One part file of a release (no rows where the release wrote none). Read with pyarrow's
    reader on one thread: the module reads about 40 releases, and pandas' reader and its
    string columns took a third of its time."""
    f = folder / f"{part}.csv"
    if not f.is_file():
        return pa.table({k: pa.array([], t) for k, t in _TYPES.items()})
    return pacsv.read_csv(f, read_options=pacsv.ReadOptions(use_threads=False),
                          parse_options=pacsv.ParseOptions(delimiter="|", quote_char=False),
                          convert_options=pacsv.ConvertOptions(column_types=_TYPES, strings_can_be_null=False))


def _keys(t: pa.Table) -> pd.Index:
    """A population group's key, REGION_ID|ITERATION_CODE (one string: a flat index is
    built several times faster than a MultiIndex of the two columns, same matching)."""
    joined = pc.binary_join_element_wise(t["REGION_ID"], t["ITERATION_CODE"], "|")
    return pd.Index(joined.to_numpy(zero_copy_only=False), dtype=object)


def truth_counts(truth: Path, level_keys) -> dict[tuple[str, int], pd.Series]:
    """The true count of every group of each level (the truth's T1 holds every group of
    the universe, empty ones with 0), read once for all the runs compared with it."""
    out = {}
    for geo, lvl in level_keys:
        t = _read(truth / "t1", f"{geo}-{lvl}")
        out[(geo, lvl)] = pd.Series(t["COUNT"].to_numpy(), index=_keys(t))
    return out


def outcome(release: Path, truths: dict[tuple[str, int], pd.Series], level_keys) \
        -> dict[tuple[str, int], dict[str, float]]:
    """What one release published, per level, in the projection's terms."""
    out = {}
    for geo, lvl in level_keys:
        part = f"{geo}-{lvl}"
        t1, t2, sup = _read(release / "t1", part), _read(release / "t2", part), _read(release / "suppressed", part)
        true = truths[(geo, lvl)]
        rows = _keys(t2).value_counts()  # rows of each group's table
        pub = pd.Series(t1["COUNT"].to_numpy(), index=_keys(t1))
        err = (pub - true.reindex(pub.index)).abs()
        assert not err.isna().any()
        tables = {k: int((rows == c).sum()) for k, c in (("age4", 10), ("age9", 20), ("age23", 48))}
        assert sum(tables.values()) == len(rows), "every table has 10, 20 or 48 rows"
        groups = len(t1) + len(sup)
        out[(geo, lvl)] = {"groups": groups, **tables, "total_only": groups - len(rows), "suppressed": len(sup),
                           "t1_rows": len(t1), "t2_rows": len(t2),
                           "mean_abs_error": float(err.mean()) if len(err) else math.nan,
                           **_occupancy(true, pub.index, _keys(sup), rows)}
    return out


def _occupancy(true: pd.Series, published: pd.Index, sup_idx: pd.Index, rows: pd.Series) -> dict[str, float]:
    """The occupancy split of one level of a release, from the true counts of its groups
    (the truth's T1 holds every group of the universe, empty ones with 0)."""
    assert len(true) == len(published) + len(sup_idx), "the truth lists every group, published or suppressed"
    n_pub, n_sup, n_tab = (true.reindex(ix) for ix in (published, sup_idx, rows.index))
    persons = float(true.sum())
    out = {"occupied": int((true > 0).sum()), "occupied_published": int((n_pub > 0).sum()),
           "occupied_suppressed": int((n_sup > 0).sum()), "occupied_with_table": int((n_tab > 0).sum()),
           "empty_published": int((n_pub == 0).sum()),
           "persons_published_share": float(n_pub.sum()) / persons if persons else math.nan,
           "persons_with_table_share": float(n_tab.sum()) / persons if persons else math.nan}
    for k, c in (("age4", 10), ("age9", 20), ("age23", 48)):
        out[f"occupied_{k}"] = int((n_tab[(rows == c).to_numpy()] > 0).sum())
    return out


def _params_with(config: SafeTabConfig, folder: Path) -> Path:
    params = folder / "params"
    shutil.copytree(SAMPLE / "params", params)
    (params / "config.json").write_text(config.to_json(), encoding="utf-8")
    return params


@pytest.fixture(scope="module")
def profile() -> Profile:
    """The sample's group sizes, counted once for the module. A profile depends on the data
    and on which runs the config turns on (max_race_codes, run_us, run_pr,
    state_filter_us), not on budgets or thresholds (engine.reports.profile): every plan
    here keeps the sample's runs, and `_agree` checks it."""
    return compute_profile(SAMPLE / "params", SAMPLE / "data", synthetic=True)


def _agree(tmp_path: Path, config: SafeTabConfig, profile: Profile, runs: int, check_error: bool = True) \
        -> pd.DataFrame:
    assert (profile.max_race_codes, profile.run_us, profile.run_pr, profile.state_filter_us) == (
        config.max_race_codes, config.run_us, config.run_pr,
        tuple(config.state_filter_us) if config.run_us else ()), "the plan counts other runs than the profile"
    params = _params_with(config, tmp_path)
    data = SAMPLE / "data"
    proj = project(config, profile)
    keys = [(r["geo"], r["iteration_level"]) for r in proj.rows]
    assert main(["truth", str(params), str(data), str(tmp_path / "truth"), "--no-coterminous", "--quiet"]) == 0
    truths = truth_counts(tmp_path / "truth", keys)
    seen = []
    for seed in range(runs):
        out = tmp_path / f"run{seed}"
        assert main(["run", str(params), str(data), str(out), "--seed", str(1000 + seed), "--no-coterminous",
                     "--quiet"]) == 0
        seen.append(outcome(out, truths, keys))
        manifest = json.loads((out / "manifest.json").read_text())
        shutil.rmtree(out)
    # The projection's noise scales and suppression thresholds are the engine's.
    from calculators.projection import _scales

    for row in proj.rows:
        lvl = config.tabulated_levels()[[lv.key for lv in config.tabulated_levels()].index(
            f"({row['geo']}, {row['iteration_level']})")]
        m = manifest["levels"][lvl.key]
        sc = _scales(config, lvl, m["stability_S"])
        assert sc.threshold == m["suppression_threshold"]
        scales = m["sigma2"] if "sigma2" in m else m["geometric_scale"]
        assert (sc.stage1, sc.stage2, sc.total_only) == tuple(scales[k]["value"] for k in
                                                              ("stage1", "stage2", "total_only"))
    report = []
    for row in proj.rows:
        key = (row["geo"], row["iteration_level"])
        for col in COUNT_COLUMNS + OCCUPANCY_COLUMNS + SHARE_COLUMNS + (("mean_abs_error",) if check_error else ()):
            if col in SHARE_COLUMNS and math.isnan(row[col]):
                continue  # a level without persons has no share
            values = np.array([s[key][col] for s in seen], dtype=float)
            if col == "mean_abs_error":
                values = values[~np.isnan(values)]
                if len(values) < runs or row["t1_rows"] < 30:
                    continue  # a ratio needs enough published totals in every run
            mean = float(values.mean())
            if col == "mean_abs_error" and row["mean_abs_error_bound"]:
                # an upper bound (counts clamped, tables): the runs' mean may not exceed it; the
                # tolerance from the runs' own spread
                sd = float(values.std(ddof=1))
                tol = Z * sd / math.sqrt(len(values)) + 1e-9 * max(1.0, abs(row[col]))
                report.append({"level": key, "figure": "mean_abs_error (bound)", "projected": row[col],
                               "mean of runs": mean, "sd": sd, "tolerance": tol, "ok": mean <= row[col] + tol})
                continue
            sd = row.get(f"{col}_sd", 0.0)  # occupied: fixed by the data
            tol = Z * sd / math.sqrt(len(values)) + 1e-9 * max(1.0, abs(row[col]))
            report.append({"level": key, "figure": col, "projected": row[col], "mean of runs": mean, "sd": sd,
                           "tolerance": tol, "ok": abs(mean - row[col]) <= tol})
    df = pd.DataFrame(report)
    bad = df[~df["ok"]]
    assert bad.empty, bad.to_string()
    return df


def test_sample_plan_agrees_with_repeated_runs(tmp_path, profile):
    config = SafeTabConfig.read(SAMPLE / "params" / "config.json")
    df = _agree(tmp_path, config, profile, runs=12)
    # The comparison has power: many figures are random, and each stat level occurs.
    assert (df["sd"] > 0).sum() >= 100
    for col in ("total_only", "age4", "age9", "age23", "suppressed"):
        assert df.loc[df["figure"] == col, "projected"].sum() > 50, col


def _quantile_plan(config: SafeTabConfig, profile: Profile, budget: float | None = None) -> SafeTabConfig:
    """Thresholds at the 50 %, 75 % and 90 % quantiles of each level's non-empty group
    sizes (sizes that occur), and small budgets (or `budget` everywhere), so every stat
    level occurs at every level and stage-1 noise moves many groups between levels;
    p = 0.99."""
    tp = dict(config.thresholds_p)
    for lvl, lp in profile.levels.items():
        sizes = np.repeat(lp.adaptive.sizes, lp.adaptive.counts)
        sizes = np.unique(np.quantile(sizes[sizes > 0], [0.5, 0.75, 0.9], method="nearest"))
        tp[lvl.key] = [int(x) for x in np.resize(sizes, 3)] if len(sizes) == 3 else [int(sizes[0])] * 2 + [
            int(sizes[-1])]
    budgets = {lvl.budget_key: budget or (0.02 if lvl.iteration_level == 2 else 0.01) for lvl in profile.levels}
    return config.updated(thresholds_p=tp, zero_suppression_chance=0.99, **budgets)


def test_a_plan_without_noise_agrees_exactly(tmp_path, profile):
    """With the largest budget (1e6) the noise is below 1e-4 standard deviations: every
    group's stat level and suppression are certain, thresholds lie on sizes that occur,
    so one run must match the projection exactly (an off-by-one at a threshold, or in T,
    would show here although sampling error hides it in the tests above)."""
    config = _quantile_plan(SafeTabConfig.read(SAMPLE / "params" / "config.json"), profile, budget=1e6)
    df = _agree(tmp_path, config, profile, runs=1)
    counts = df[(df["figure"] != "mean_abs_error") & ~df["figure"].isin(SHARE_COLUMNS)]
    assert (counts["sd"] < 1e-9).all()
    assert (counts["projected"] - counts["projected"].round()).abs().max() < 1e-9
    assert (counts["projected"] == counts["mean of runs"]).all()


def test_plan_with_every_stat_level_agrees(tmp_path, profile):
    config = _quantile_plan(SafeTabConfig.read(SAMPLE / "params" / "config.json"), profile)
    df = _agree(tmp_path, config, profile, runs=10)
    per_level = df[df["figure"].isin(["age4", "age9", "age23"])].groupby("level")["projected"].min()
    assert (per_level > 0.5).all(), per_level  # every table occurs at every level


def _clamped_errors_checked(df: pd.DataFrame) -> None:
    """The clamped plans' error figures were compared: bounds where a level has tables."""
    bounds = df[df["figure"] == "mean_abs_error (bound)"]
    assert len(bounds) >= 5, df["figure"].value_counts()
    # a bound, not the unclamped figure it replaces: the runs' errors exceed that figure here
    assert (bounds["mean of runs"] > 0).all()


def test_pure_dp_plan_with_clamping_agrees(tmp_path, profile):
    """Geometric noise and counts clamped at 0: every count agrees, the mean |error| of
    totals without a table exactly, and the observed mean |error| of a level with tables
    stays under its bound (clamping a table's cells depends on more than the group's size)."""
    base = _quantile_plan(SafeTabConfig.read(SAMPLE / "params" / "config.json"), profile)
    config = base.updated(privacy_defn="puredp", allow_negative_counts=False,
                          **{lvl.budget_key: 0.5 for lvl in base.tabulated_levels()})
    _clamped_errors_checked(_agree(tmp_path, config, profile, runs=8))


def test_zcdp_plan_with_clamping_stays_under_its_error_bound(tmp_path, profile):
    """The quantile plan (small budgets, tables at every level) with counts clamped at 0:
    clamped cells make a table's total err 2 to 3 times the unclamped figure; the
    projection's bound holds and every count agrees."""
    config = _quantile_plan(SafeTabConfig.read(SAMPLE / "params" / "config.json"), profile).updated(
        allow_negative_counts=False)
    df = _agree(tmp_path, config, profile, runs=8)
    _clamped_errors_checked(df)
    proj = project(config, profile)
    unclamped = project(config.updated(allow_negative_counts=True), proj.profile)
    bounds = df[df["figure"] == "mean_abs_error (bound)"]
    worse = [r for _, r in bounds.iterrows()
             if r["mean of runs"] > unclamped.row(tuple(r["level"]))["mean_abs_error"] * 1.2]
    assert worse, "the clamped runs should err more than the unclamped figure at some level"
