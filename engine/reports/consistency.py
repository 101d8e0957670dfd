"""Consistency comparison: every `--consistency` method on the same noisy release.

For each trial one SafeTab-P release is drawn (seeded or secure noise) and every method
post-processes the same noisy counts through the hierarchy stage
(`engine.tabulation.hierarchy`). Against the truth, over the published totals of the
nested levels (USA, STATE, COUNTY, TRACT and PR-STATE, PR-COUNTY, PR-TRACT; suppressed
groups are not published and are the same for every method), it reports:

- mean absolute error and mean error (bias) by geography level x iteration level (the
  layout of Fioretto, Van Hentenryck and Zhu's Table 7: error by level x method) and by
  true size of the group;
- the share of negative published counts (totals, and the cells of sex x age tables);
- the mean absolute error of table cells;
- violations of additivity, per release: published parents that differ from the sum of
  their children although all are published, or fall below the sum of the published
  ones (a suppressed remainder cannot be negative);
- the run time of each method on one release (its adjust function and the cells that
  follow; gathering the levels is common to all and not counted).
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass

import numpy as np
import pandas as pd

from calculators.levels import GEO_LEVELS, ITERATION_LEVEL_NAMES
from engine.reports.accuracy import SIZE_LABELS, size_bin
from engine.tabulation.consistency import DESCRIPTIONS, LABELS, STUDY_METHODS, adjuster


@dataclass
class ConsistencyComparison:
    """The comparison's tables (one row per method and level / size / overall)."""

    by_level: pd.DataFrame
    by_size: pd.DataFrame
    summary: pd.DataFrame
    trials: int
    mode: dict


def parse_methods(text: str) -> list[str]:
    """"all" or a comma-separated list of method names -> the list in the usual order, "none" first.

    Raises ValueError naming an unknown method.
    """
    names = list(STUDY_METHODS) if text.strip() == "all" else [t.strip() for t in text.split(",") if t.strip()]
    bad = [n for n in names if n not in STUDY_METHODS]
    if bad or not names:
        what = f"unknown method {bad[0][:40]!r}" if bad else "no method given"
        raise ValueError(f"--consistency: {what}; choose from {', '.join(STUDY_METHODS)} (comma-separated) or all")
    return ["none"] + [n for n in STUDY_METHODS if n in names and n != "none"]


def collect(prepared, noise, progress=None):
    """Tabulate one release and keep what the hierarchy stage and the coterminous rule need.

    Returns (stage, stash): `HierarchyStage` with the nested levels, `CoterminousStash`
    with every coterminous member's group.
    """
    from engine.run import iter_published
    from engine.tabulation.hierarchy import HierarchyStage
    from engine.tabulation.postprocess import CoterminousStash

    stage = HierarchyStage(prepared)
    stash = CoterminousStash(prepared.inputs.geography.coterminous_sets())
    code_id = {c: i for i, c in enumerate(prepared.inputs.specs.iterations)}
    for counts, pub in iter_published(prepared, noise, progress=progress):
        lvl = pub.plan.level
        mask = stash.region_mask(lvl.geo, counts.n_regions)
        if mask is not None:
            groups = np.arange(pub.g0, pub.g1, dtype=np.int64)
            codes = prepared.catalog.codes(lvl.geo, lvl.iteration_level)
            stash.add(pub, lvl.geo, groups[mask[groups // counts.n_iterations]], counts.n_iterations,
                      np.array([code_id[c] for c in codes], np.int32))
        if stage.collects(lvl):
            stage.add(counts, pub)
    return stage, stash


def compare(prepared, methods: list[str] | tuple[str, ...] = STUDY_METHODS, *, trials: int = 1,
            seed: int | None = None, progress=None) -> ConsistencyComparison:
    """Every method on the same `trials` releases of the prepared inputs.

    With `seed` the noise of trial t comes from `RandomSource.seeded(seed + t)`: a
    reproducible study, never a release.
    """
    from engine import noise as _noise
    from engine.run import make_noise

    if trials < 1:
        raise ValueError("trials must be at least 1")
    methods = list(dict.fromkeys(["none", *methods]))
    allow_negative = prepared.inputs.config.allow_negative_counts
    level_acc: dict[tuple, np.ndarray] = defaultdict(lambda: np.zeros(4))
    size_acc: dict[tuple, np.ndarray] = defaultdict(lambda: np.zeros(4))
    cell_acc: dict[str, np.ndarray] = defaultdict(lambda: np.zeros(4))
    extra: dict[str, dict] = {m: {"violations": 0, "seconds": [], "parents": 0} for m in methods}
    for t in range(trials):
        source = _noise.RandomSource.seeded(seed + t) if seed is not None else _noise.RandomSource.secure()
        stage, stash = collect(prepared, make_noise(prepared.inputs.config.privacy_defn, source),
                               progress=_stage_progress(progress, f"trial {t + 1}/{trials}: tabulating"))
        rows, member = stash.resolve(), stash.member
        parents = sum(int((np.bincount(f.parents[f.parents >= 0], minlength=f.n) > 0).sum()) * len(codes)
                      for _lvl, f, codes in stage.forests(member))
        for mi, method in enumerate(methods):
            if progress:
                progress(f"trial {t + 1}/{trials}: {LABELS[method]}", mi, len(methods))
            fn, cells_nonneg = adjuster(method, allow_negative)
            res = stage.finish(rows, member, fn, cells_nonnegative=cells_nonneg, with_truth=True,
                               tiebreak=source.words)
            extra[method]["violations"] += res.stats["violations_after"]
            extra[method]["seconds"].append(res.adjust_seconds)
            extra[method]["parents"] += parents
            for _counts, pub in res.published:
                _accumulate(method, pub, level_acc, size_acc, cell_acc)
        if progress:
            progress(f"trial {t + 1}/{trials}: done", len(methods), len(methods))
    return _tables(methods, level_acc, size_acc, cell_acc, extra, trials, seed)


def _stage_progress(progress, prefix: str):
    if progress is None:
        return None
    return lambda stage, done, total: progress(f"{prefix} ({stage})", done, total)


def _accumulate(method: str, pub, level_acc, size_acc, cell_acc) -> None:
    lvl = pub.plan.level
    rel = pub.released
    err = (pub.t1 - pub.true_total)[rel]
    neg = (pub.t1[rel] < 0).astype(np.float64)
    acc = level_acc[(method, lvl.geo, lvl.iteration_level)]
    acc += [len(err), np.abs(err).sum(), err.sum(), neg.sum()]
    bins = size_bin(pub.true_total[rel])
    for b in np.unique(bins):
        sel = bins == b
        size_acc[(method, int(b))] += [sel.sum(), np.abs(err[sel]).sum(), err[sel].sum(), neg[sel].sum()]
    for k, (groups, cells, _marg) in pub.tables.items():
        keep = rel[groups - pub.g0]
        c = cells[keep]
        e = (c - pub.true_tables[k][keep]).reshape(-1)
        cell_acc[method] += [e.size, np.abs(e).sum(), e.sum(), (c < 0).sum()]


def _tables(methods, level_acc, size_acc, cell_acc, extra, trials, seed) -> ConsistencyComparison:
    order = {g: i for i, g in enumerate(GEO_LEVELS)}
    rows = []
    for (m, geo, lvl), (n, sa, se, neg) in level_acc.items():
        rows.append({"method": m, "geo_level": geo, "iteration_level": lvl, "counts": int(n),
                     "mean_abs_error": sa / n if n else np.nan, "bias": se / n if n else np.nan,
                     "share_negative": neg / n if n else np.nan})
    by_level = pd.DataFrame(rows)
    if len(by_level):
        by_level = by_level.assign(_g=by_level.geo_level.map(order), _m=by_level.method.map(methods.index)).sort_values(
            ["iteration_level", "_g", "_m"]).drop(columns=["_g", "_m"]).reset_index(drop=True)
    rows = []
    for (m, b), (n, sa, se, neg) in sorted(size_acc.items(), key=lambda kv: (kv[0][1], methods.index(kv[0][0]))):
        rows.append({"method": m, "true_size": SIZE_LABELS[b], "counts": int(n), "mean_abs_error": sa / n,
                     "bias": se / n, "share_negative": neg / n})
    by_size = pd.DataFrame(rows)
    rows = []
    for m in methods:
        tot = sum((v for (mm, _g, _l), v in level_acc.items() if mm == m), np.zeros(4))
        n, sa, se, neg = tot
        cn, csa, _cse, cneg = cell_acc[m]
        ex = extra[m]
        rows.append({"method": m, "counts": int(n), "mean_abs_error": sa / n if n else np.nan,
                     "bias": se / n if n else np.nan, "share_negative": neg / n if n else np.nan,
                     "cells": int(cn), "cells_mean_abs_error": csa / cn if cn else np.nan,
                     "cells_share_negative": cneg / cn if cn else np.nan,
                     "violations_per_release": ex["violations"] / trials,
                     "parents_per_release": ex["parents"] / trials,
                     "seconds_per_release": float(np.median(ex["seconds"])) if ex["seconds"] else np.nan,
                     "description": DESCRIPTIONS[m]})
    mode = {"trials": trials, "seed": seed, "kind": "seeded study (not a release)" if seed is not None
            else "secure noise (not a release)"}
    return ConsistencyComparison(by_level, by_size, pd.DataFrame(rows), trials, mode)


def table7(comp: ConsistencyComparison, iteration_level: int | None = None, value: str = "mean_abs_error"
           ) -> pd.DataFrame:
    """Error by geography level x method, the layout of the seed paper's Table 7.

    One row per geography level (and iteration level, unless one is chosen), one column
    per method, `value` in the cells (mean absolute error by default).
    """
    df = comp.by_level
    if iteration_level is not None:
        df = df[df.iteration_level == iteration_level]
    if df.empty:
        return pd.DataFrame()
    methods = list(dict.fromkeys(comp.summary.method))
    keys = ["geo_level"] if iteration_level is not None else ["geo_level", "iteration_level"]
    wide = df.pivot_table(index=keys, columns="method", values=value, sort=False).reset_index()
    wide.columns.name = None
    return wide[keys + [m for m in methods if m in wide.columns]]


def consistency_report(params_dir, data_dir, out_dir, *, methods: list[str], trials: int = 1,
                       seed: int | None = None, overwrite: bool = False, progress=None,
                       prepared=None) -> ConsistencyComparison:
    """Run `compare` and write OUT_DIR/consistency_{by_level,by_size,summary}.csv and
    consistency.json, through `engine.release.publish.StagedOutput` (OUT_DIR checked and
    locked before the work, published whole with SHA256SUMS and NOT-FOR-RELEASE.txt: the
    errors are measured against the confidential truth)."""
    from engine.release.outputs import not_for_release_text
    from engine.release.publish import NOT_FOR_RELEASE, StagedOutput
    from engine.run import prepare

    reason = "consistency methods compared with the confidential ground truth, without noise"
    inputs = (("PARAMS_DIR", params_dir), ("DATA_DIR", data_dir))
    # owner-only, as every accuracy report: measured against the confidential truth
    with StagedOutput(out_dir, overwrite=overwrite, inputs=inputs, description="consistency comparison",
                      private=True) as folder:
        if prepared is None:
            prepared = prepare(params_dir, data_dir, progress)
        comp = compare(prepared, methods, trials=trials, seed=seed, progress=progress)
        for name, df in (("consistency_by_level.csv", comp.by_level), ("consistency_by_size.csv", comp.by_size),
                         ("consistency_summary.csv", comp.summary)):
            folder.write_file(name, df.to_csv(index=False).encode("utf-8"))
        folder.write_file("consistency.json", (json.dumps({
            "mode": comp.mode, "summary": comp.summary.to_dict(orient="records"),
            "by_level": comp.by_level.to_dict(orient="records"), "by_size": comp.by_size.to_dict(orient="records"),
        }, indent=2, default=float) + "\n").encode("utf-8"))
        folder.write_file(NOT_FOR_RELEASE, not_for_release_text(reason))
        folder.publish(["NOT FOR RELEASE: " + reason])
    return comp


def format_comparison(comp: ConsistencyComparison) -> str:
    """Table 7 (mean absolute error by level x method) per iteration level, then the summary."""
    parts = []
    for lvl in sorted(comp.by_level.iteration_level.unique()) if len(comp.by_level) else []:
        t = table7(comp, int(lvl)).rename(columns=LABELS | {"geo_level": "level"})
        parts.append(f"Mean absolute error of published totals, {ITERATION_LEVEL_NAMES[int(lvl)]} groups "
                     f"({comp.trials} release{'s' if comp.trials > 1 else ''}):\n"
                     + t.to_string(index=False, float_format=lambda x: f"{x:.2f}"))
    s = comp.summary.assign(method=comp.summary.method.map(LABELS),
                            violations_per_release=comp.summary.violations_per_release.round().astype(int))[
        ["method", "mean_abs_error", "bias", "share_negative", "cells_share_negative", "violations_per_release",
         "seconds_per_release"]]
    parts.append("All nested levels:\n" + s.to_string(index=False, float_format=lambda x: f"{x:.3g}"))
    return "\n\n".join(parts)
