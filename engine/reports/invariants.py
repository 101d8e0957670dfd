"""Accuracy with invariants against the plain release, on the same noise.

`python -m engine accuracy PARAMS_DIR DATA_DIR OUT_DIR --invariant STATE --trials 20
--seed 1` draws each trial's SafeTab-P noise once and publishes the levels of the
invariant twice from it: as SafeTab-P publishes them, and with the invariant held
(`engine.tabulation.invariants`, through the hierarchy stage). Both are compared with
the truth exactly as `engine.reports.accuracy` does (95th percentile of |error| by
level, table type and true size), side by side, plus the share of counts published
exactly (error 0): the disclosure the invariant makes. Only the levels the invariant
touches are reported (the others are the same in both). Coterminous copies are left out
here, as in the plain accuracy report.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from engine.reports.accuracy import SIZE_LABELS, AccuracyCollector

KEYS = ["geo_level", "iteration_level", "table", "true_size"]


def _exact_share(collector: AccuracyCollector) -> pd.DataFrame:
    rows = []
    for (geo, lvl, kind, b), h in collector.hists.items():
        rows.append({"geo_level": geo, "iteration_level": lvl, "table": kind, "true_size": SIZE_LABELS[b],
                     "share_exact": float(h.counts[0] / h.n) if h.n and len(h.counts) else 0.0})
    return pd.DataFrame(rows, columns=[*KEYS, "share_exact"])


def compare_tables(plain: AccuracyCollector, held: AccuracyCollector) -> pd.DataFrame:
    """One row per (level, table type, true size): SafeTab-P's figures beside the
    invariant's."""
    a = plain.table().merge(_exact_share(plain), on=KEYS)
    b = held.table().merge(_exact_share(held), on=KEYS)
    cols = ["counts_compared", "p95_abs_error", "mean_error", "share_exact"]
    out = a[KEYS + cols + ["trials", "predicted_moe95_exact"]].merge(
        b[KEYS + cols], on=KEYS, suffixes=("_safetab_p", "_invariant"))
    out = out.drop(columns=["counts_compared_invariant"]).rename(columns={"counts_compared_safetab_p":
                                                                          "counts_compared"})
    order = ["geo_level", "iteration_level", "table", "true_size", "counts_compared", "trials",
             "predicted_moe95_exact", "p95_abs_error_safetab_p", "p95_abs_error_invariant", "mean_error_safetab_p",
             "mean_error_invariant", "share_exact_safetab_p", "share_exact_invariant"]
    return out[order]


def invariant_accuracy(params_dir, data_dir, out_dir, choice: str, *, trials: int = 1, seed: int | None = None,
                       overwrite: bool = False, progress=None, prepared=None) -> pd.DataFrame:
    """Run `trials` paired trials and write OUT_DIR/accuracy_invariant.csv and .json,
    through `engine.release.publish.StagedOutput` (OUT_DIR checked and locked before the
    work, published whole with SHA256SUMS and NOT-FOR-RELEASE.txt)."""
    from engine import noise as _noise
    from engine.release.outputs import not_for_release_text
    from engine.release.publish import NOT_FOR_RELEASE, StagedOutput
    from engine.run import iter_published, make_noise, prepare
    from engine.tabulation.hierarchy import HierarchyStage
    from engine.tabulation.invariants import DESCRIPTIONS, INVARIANTS, WARNING, InvariantAdjuster, check

    if trials < 1:
        raise ValueError("--trials must be at least 1")
    reason = "accuracy of a release with invariants, measured against the confidential ground truth"
    inputs = (("PARAMS_DIR", params_dir), ("DATA_DIR", data_dir))
    # owner-only, as every accuracy report: measured against the confidential truth
    with StagedOutput(out_dir, overwrite=overwrite, inputs=inputs, description="invariants comparison",
                      private=True) as folder:
        if prepared is None:
            prepared = prepare(params_dir, data_dir, progress)
        check(choice, prepared)
        involved = {g for pair in INVARIANTS[choice] for g in pair}
        plain, held = AccuracyCollector(), AccuracyCollector()
        summary = None
        for t in range(trials):
            source = _noise.RandomSource.seeded(seed + t) if seed is not None else _noise.RandomSource.secure()
            noise = make_noise(prepared.inputs.config.privacy_defn, source)
            stage = HierarchyStage(prepared)
            cb = None if progress is None else (lambda s, d, n, t=t: progress(f"trial {t + 1}/{trials}, {s}", d, n))
            for counts, pub in iter_published(prepared, noise, progress=cb):
                if stage.collects(pub.plan.level):
                    stage.add(counts, pub)
            adjust = InvariantAdjuster(choice, source.words)
            for collector, fn in ((plain, None), (held, adjust)):
                res = stage.finish(None, None, fn, cells_nonnegative=False, with_truth=True, tiebreak=source.words)
                for counts, pub in res.published:
                    if pub.plan.level.geo in involved:
                        collector.add_published(pub.plan, counts, pub)
                collector.trials += 1
            summary = adjust.summary()
        df = compare_tables(plain, held)
        folder.write_file("accuracy_invariant.csv", df.to_csv(index=False).encode("utf-8"))
        mode = {"kind": "seeded trials" if seed is not None else "secure trials", "trials": trials, "seed": seed,
                "invariant": choice, "description": DESCRIPTIONS[choice], "warning": WARNING,
                "held": summary["held"] if summary else []}
        folder.write_file("accuracy_invariant.json", (json.dumps(
            {"mode": mode, "rows": df.to_dict(orient="records")}, indent=2, default=_jsonable) + "\n").encode("utf-8"))
        folder.write_file(NOT_FOR_RELEASE, not_for_release_text(reason))
        folder.publish(["NOT FOR RELEASE: " + reason])
    return df


def _jsonable(x):
    if isinstance(x, (np.integer,)):
        return int(x)
    return float(x)


def format_comparison(df: pd.DataFrame, limit: int = 60) -> str:
    if df.empty:
        return "No published counts to compare."
    view = df.rename(columns={"geo_level": "geo", "iteration_level": "lvl", "true_size": "size",
                              "counts_compared": "counts", "predicted_moe95_exact": "MOE",
                              "p95_abs_error_safetab_p": "p95 SafeTab-P", "p95_abs_error_invariant": "p95 invariant",
                              "share_exact_safetab_p": "exact SafeTab-P", "share_exact_invariant": "exact invariant"})
    cols = ["geo", "lvl", "table", "size", "counts", "MOE", "p95 SafeTab-P", "p95 invariant", "exact SafeTab-P",
            "exact invariant"]
    text = view[cols].head(limit).to_string(index=False, float_format=lambda v: f"{v:.3f}")
    if len(df) > limit:
        text += f"\n... {len(df) - limit} more rows in accuracy_invariant.csv"
    return text
