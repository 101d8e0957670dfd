"""One press of "Run" on the Run page (pure; no Streamlit): prepare once with the app's
configuration, write a release and the ground truth with the engine, read both back.

Progress is reported as ``progress(text, fraction)`` over the three phases.
"""

from __future__ import annotations

import re
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from calculators.config import SafeTabConfig
from ui import files

Report = Callable[[str, float], None]

PHASES = {
    "prepare": (0.0, 0.25, "Checking the inputs and counting persons"),
    "release": (0.25, 0.65, "Drawing the noisy release"),
    "truth": (0.65, 0.95, "Tabulating the truth (for comparison only)"),
}


def _phase(report: Report | None, name: str):
    if report is None:
        return None
    lo, hi, label = PHASES[name]

    def cb(stage: str, done: float, total: float) -> None:
        frac = min(1.0, max(0.0, done / total)) if total else 0.0
        report(f"{label}: {stage} ({int(done):,} of {int(total):,})", lo + (hi - lo) * frac)

    return cb


@dataclass
class RunOutput:
    """A release, its truth, and what the app shows and offers for download."""

    release_dir: Path
    truth_dir: Path
    manifest: dict
    config: SafeTabConfig
    seed: int | None
    t1: pd.DataFrame
    t2: pd.DataFrame
    names: pd.DataFrame
    prepared: Any = field(repr=False)
    params_dir: Path | None = None
    data_dir: Path | None = None
    seconds: float = 0.0
    plan: str = ""  #: the name of the plan that ran, as the app shows it

    @property
    def plan_slug(self) -> str:
        """The plan's name for file names ("sample-data-plan")."""
        return re.sub(r"[^a-z0-9]+", "-", self.plan.lower()).strip("-") or "plan"

    @property
    def seeded(self) -> bool:
        return self.seed is not None


def run_with_truth(params_dir: str | Path, data_dir: str | Path, config: SafeTabConfig, work_dir: str | Path,
                   seed: int | None = None, report: Report | None = None, plan: str = "") -> RunOutput:
    """Validate and count once (`engine.run.prepare(..., config=config)`), then write
    the release (`engine.run.run`, seeded or secure) and the truth (truth=True) under
    work_dir, and read them back with iteration names; `plan` names the plan for the
    pages and file names. Raises InputError / ConfigError / ValueError / OSError like
    the engine."""
    from engine.run import prepare, run

    t0 = time.perf_counter()
    work = Path(work_dir)
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    prepared = prepare(params_dir, data_dir, progress=_phase(report, "prepare"), config=config)
    rel = run(params_dir, data_dir, work / "release", seed=seed, overwrite=True,
              progress=_phase(report, "release"), prepared=prepared)
    tru = run(params_dir, data_dir, work / "truth", truth=True, overwrite=True,
              progress=_phase(report, "truth"), prepared=prepared)
    if report:
        report("Reading the results", 0.97)
    r, t = files.read_release(rel.out_dir), files.read_release(tru.out_dir)
    names = files.iteration_names(prepared.inputs.specs)
    t1 = files.t1_with_truth(r["t1"], t["t1"], r["suppressed"], names)
    t2 = files.t2_with_truth(r["t2"], t["t2"], names)
    if report:
        report("Done", 1.0)
    return RunOutput(Path(rel.out_dir), Path(tru.out_dir), rel.manifest, config, seed, t1, t2, names,
                     prepared, Path(params_dir), Path(data_dir), time.perf_counter() - t0, plan)


def accuracy(output: RunOutput, work_dir: str | Path, trials: int, report: Report | None = None) -> pd.DataFrame:
    """`engine.reports.accuracy.accuracy_report` on the run's prepared inputs: `trials` fresh
    releases (seeded from the run's seed + 1000 if the run was seeded) against the truth."""
    from engine.reports.accuracy import accuracy_report

    seed = None if output.seed is None else output.seed + 1000

    def cb(stage: str, done: float, total: float) -> None:
        if not report:
            return
        frac = min(1.0, done / total) if total else 0.0
        m = re.match(r"trial (\d+)/(\d+)", stage)
        if m:  # the engine reports each trial from 0 to 1
            k, n = int(m.group(1)), int(m.group(2))
            frac = (k - 1 + frac) / n
        report(f"{stage} ({int(done):,} of {int(total):,})", frac)

    return accuracy_report(output.params_dir, output.data_dir, work_dir, trials=int(trials), seed=seed,
                           overwrite=True, progress=cb if report else None, prepared=output.prepared)
