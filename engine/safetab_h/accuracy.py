"""`python -m engine accuracy ... --safetab-h`: how far SafeTab-H's directly noised
cells fall from the truth, over repeated trials, beside the MOE the plan predicts.

Per table x geography x iteration level x table level x group size (the group's true
number of households, in powers of ten: 0, 1-9, 10-99, ...): the number of cells, the
empirical 95th percentile of |noisy - true| of the directly noised cells (before the
sums; after clamping when negatives are not allowed), the mean error, and the
expected MOE of one cell: exact (the 95% half-width of the discrete Gaussian or
geometric noise, `calculators.safetab_h.cell_moe`) and the design figure 1.96 sigma.
|errors| are kept as exact integer histograms, so trials merge without loss.

NOT FOR RELEASE: it compares with the true counts.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import numpy as np
import pandas as pd

from calculators import budget, discrete_gaussian, geometric
from calculators.safetab_h import TABLE_LEVELS
from engine.noise import RandomSource
from engine.release.publish import StagedOutput
from engine.safetab_h.run import iter_queries, make_noise, prepare

MAX_TRIALS = 10_000
DESCRIPTION = "SafeTab-H accuracy report"
COLUMNS = ["table", "geo", "iteration_level", "table_level", "group_size", "groups", "cells", "trials",
           "p95_abs_error", "mean_error", "expected_moe_exact", "expected_moe_design"]


def size_band(n: np.ndarray) -> np.ndarray:
    """0 for empty groups, else 1 + floor(log10 n): 1 = 1-9, 2 = 10-99, ..."""
    n = np.asarray(n, np.int64)
    out = np.zeros(n.shape, np.int64)
    pos = n > 0
    out[pos] = np.floor(np.log10(n[pos])).astype(np.int64) + 1
    return out


def band_label(b: int) -> str:
    return "0" if b == 0 else f"{10 ** (b - 1):,}-{10 ** b - 1:,}"


class _Collector:
    """Exact histograms of |error| (and sums of errors) per key, over trials."""

    def __init__(self) -> None:
        self.hist: dict[tuple, np.ndarray] = {}
        self.sum: dict[tuple, int] = defaultdict(int)
        self.groups: dict[tuple, int] = {}
        self.moe: dict[tuple, tuple[int, float]] = {}

    def add(self, res, privacy_defn: str) -> None:
        g = res.groups
        scale = float(res.scale)
        if privacy_defn == "zcdp":  # sigma^2 = S / (2 rho)
            exact, design = int(discrete_gaussian.moe(scale)), budget.Z95 * np.sqrt(scale)
        else:  # geometric scale S / epsilon; design: 1.96 sd
            exact = int(geometric.moe(scale))
            a = np.exp(-1 / scale)
            design = budget.Z95 * np.sqrt(2 * a) / (1 - a)
        for level in TABLE_LEVELS[res.table]:
            part = res.by_level[level]
            rows = part["rows"]
            if not len(rows):
                continue
            sizes = g.cells[rows].sum(axis=1)
            bands = size_band(sizes)
            err = part["direct"] - part["direct_true"]
            for b in np.unique(bands):
                sel = bands == b
                e = err[sel].ravel()
                key = (res.table, g.level.geo, g.level.iteration_level, level, int(b))
                h = np.bincount(np.abs(e))
                old = self.hist.get(key)
                if old is None:
                    self.hist[key] = h
                else:
                    if len(old) < len(h):
                        old = np.pad(old, (0, len(h) - len(old)))
                    old[: len(h)] += h
                    self.hist[key] = old
                self.sum[key] += int(e.sum())
                self.groups[key] = int(sel.sum())
                self.moe[key] = (int(exact), float(design))

    def frame(self, trials: int) -> pd.DataFrame:
        rows = []
        for key in sorted(self.hist):
            h = self.hist[key]
            n = int(h.sum())
            p95 = int(np.searchsorted(np.cumsum(h), 0.95 * n))
            table, geo, it_level, level, band = key
            rows.append([table, geo, it_level, level, band_label(band), self.groups[key], n // trials, trials, p95,
                         self.sum[key] / n, *self.moe[key]])
        return pd.DataFrame(rows, columns=COLUMNS)


def accuracy_h(params_dir, data_dir, out_dir, *, t1=None, trials: int = 1, seed: int | None = None,
               overwrite: bool = False, progress=None, config=None) -> pd.DataFrame:
    """Run `trials` SafeTab-H releases in memory and write accuracy_h.csv / .json."""
    if not 1 <= trials <= MAX_TRIALS:
        raise ValueError(f"--trials must be from 1 to {MAX_TRIALS:,} (got {trials:,})")
    inputs = [("PARAMS_DIR", params_dir), ("DATA_DIR", data_dir)]
    with StagedOutput(out_dir, overwrite=overwrite, inputs=inputs, description=DESCRIPTION) as folder:
        prep = prepare(params_dir, data_dir, t1, progress, config=config)
        defn = prep.inputs.config.privacy_defn
        col = _Collector()
        for trial in range(trials):
            source = RandomSource.seeded(seed + trial) if seed is not None else RandomSource.secure()
            for res in iter_queries(prep, make_noise(defn, source)):
                col.add(res, defn)
            if progress:
                progress("trials done", trial + 1, trials)
        df = col.frame(trials)
        folder.write_file("accuracy_h.csv", df.to_csv(index=False).encode())
        meta = {"program": "safetab-h", "note": "NOT FOR RELEASE: errors against the true counts", "trials": trials,
                "seed": seed, "privacy_defn": defn, "columns": COLUMNS, "rows": df.to_dict(orient="records")}
        folder.write_file("accuracy_h.json", (json.dumps(meta, indent=2, default=float) + "\n").encode())
        folder.write_file("NOT-FOR-RELEASE.txt", b"NOT FOR RELEASE\n\nAn accuracy study: errors against the true "
                                                 b"counts.\n")
        folder.publish([f"{trials} trials", "NOT FOR RELEASE: an accuracy study"])
    return df


def format_report(df: pd.DataFrame) -> str:
    """A short text table: per query and table level, the p95 |error| beside the MOE."""
    lines = ["table geo iteration_level table_level group_size: p95 |error| (expected MOE exact / design)"]
    for r in df.itertuples(index=False):
        lines.append(f"{r.table} {r.geo} {r.iteration_level} level {r.table_level} size {r.group_size}: "
                     f"{r.p95_abs_error} ({r.expected_moe_exact} / {r.expected_moe_design:.2f}), {r.cells:,} cells")
    return "\n".join(lines[:60] + ([f"... {len(lines) - 60} more rows in accuracy_h.csv"] if len(lines) > 60 else []))
