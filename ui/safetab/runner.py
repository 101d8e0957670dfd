"""One press of "Run" on the Run page (pure; no Streamlit): prepare once with the app's
configuration, write a release and the ground truth with the engine, read both back.

Progress is reported as ``progress(text, fraction)`` over the three phases.
"""

from __future__ import annotations

import re
import shutil
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from calculators.config import SafeTabConfig
from ui.core import files

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
    #: The last report over repeated releases (`accuracy`) and the accuracy of this
    #: release against the truth (`ui.safetab.run_report.release_accuracy`), once computed.
    trials: pd.DataFrame | None = field(default=None, repr=False)
    release_report: pd.DataFrame | None = field(default=None, repr=False)
    plan: str = ""  #: the name of the plan that ran, as the app shows it
    #: Held while the accuracy of this release is computed (`ui.safetab.run_report`), so that a
    #: download and the computation started after the run never do it twice.
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    @property
    def plan_slug(self) -> str:
        """The plan's name for file names ("sample-data-plan")."""
        return re.sub(r"[^a-z0-9]+", "-", self.plan.lower()).strip("-") or "plan"

    @property
    def seeded(self) -> bool:
        return self.seed is not None


def reads_as_csv(config: SafeTabConfig) -> bool:
    """Whether the plan names another reader than "csv" (production's "cef"), which the
    Run page replaces by "csv": it always reads the files chosen on the page."""
    return config.reader != "csv"


def on_files(config: SafeTabConfig) -> SafeTabConfig:
    """The plan as the app runs it on SafeTab-P files (the Run page, the method
    comparisons): reader "csv" (`reads_as_csv` says whether that changed anything)."""
    return config.updated(reader="csv") if reads_as_csv(config) else config


#: The Run page's choices of post-processing, as `python -m engine run` words them.
COTERMINOUS_LABEL = "Coterminous post-processing (the paper's step)"
COTERMINOUS_HELP = (
    "On (default): entities of different levels covering the same blocks (DC's state, county and place...) "
    "publish the counts of the highest unsuppressed one, as the SafeTab-P paper's Section 5.3.3 (Algorithm 4, a "
    "standalone program run after SafeTab-P) describes: the published tables never give two numbers for the "
    "same people. Off (`run --no-coterminous`): the output matches the Census Bureau's released SafeTab-P code "
    "(DAS_2020_DDHCA_Production_Code), which does not contain the step. See docs/production-differences.md.")
TABULATION_LABEL = "Tabulation System suppression (outside the DAS)"
TABULATION_HELP = (
    "Off (default). On (`run --tabulation-suppression`): after the release is computed, the Decennial Tabulation "
    "System's two rules of the paper's Section 5.3.4 remove groups with a negative published count, and Alone "
    "groups whose noisy total exceeds the Alone-or-in-any-combination total of the same race and geography. "
    "Post-processing of noisy counts: no privacy cost (Lemma 4). Removed groups are listed in "
    "suppressed/tabulation-system.csv with the rule.")


#: The rules of `engine.tabulation.postprocess.TABULATION_RULES`, as the page says them.
RULE_WORDS = {"nonnegativity": "non-negativity (a negative count)",
              "alone-exceeds-alone-or-in-any-combination": "Alone above Alone or in any combination"}


def postprocessing_words(coterminous: bool, tabulation_suppression: bool) -> str:
    """Which output the Run page's choices give, in one sentence."""
    which = ("the paper's coterminous step is applied (as published, not the released code's output)" if coterminous
             else "no coterminous step: the output the Census Bureau's released SafeTab-P code gives")
    return which + ("; then the Tabulation System's suppression (outside the DAS)." if tabulation_suppression
                    else ".")


def tabulation_summary(manifest: dict) -> tuple[str, str | None] | None:
    """(what the Tabulation System's rules removed, the no-pairs note or None) from a
    release's manifest; None when the run did not apply them."""
    tab = manifest.get("postprocessing", {}).get("tabulation_suppression")
    if not tab:
        return None
    removed = tab["groups_removed"]
    text = ("Tabulation System suppression (outside the DAS, no privacy cost): "
            + ", ".join(f"**{n:,}** groups removed by {RULE_WORDS.get(rule, rule)}" for rule, n in removed.items())
            + f" ({tab['pairs']:,} Alone / Alone-or-in-any-combination pairs in the spec files); listed in "
            "suppressed/tabulation-system.csv with the rule.")
    return text, tab.get("pairs_note")


def run_with_truth(params_dir: str | Path, data_dir: str | Path, config: SafeTabConfig, work_dir: str | Path,
                   seed: int | None = None, report: Report | None = None, plan: str = "", *,
                   coterminous: bool = True, tabulation_suppression: bool = False) -> RunOutput:
    """Validate and count once (`engine.run.prepare(..., config=config)`), then write
    the release (`engine.run.run`, seeded or secure) and the truth (truth=True) under
    work_dir, and read them back with iteration names; `plan` names the plan for the
    pages and file names. `coterminous` and `tabulation_suppression` are the release's
    post-processing (`run --no-coterminous`, `--tabulation-suppression`). Raises
    InputError / ConfigError / ValueError / OSError like the engine."""
    from engine.run import prepare, run

    t0 = time.perf_counter()
    work = Path(work_dir)
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    # The page runs the files it was given, i.e. reader "csv"; a plan naming production's
    # CEF reader (the 2020 plan) is run as "csv" and the page says so (`reads_as_csv`).
    prepared = prepare(params_dir, data_dir, progress=_phase(report, "prepare"), config=on_files(config))
    # Folder names say what must not be published (the folders also carry NOT-FOR-RELEASE.txt).
    rel_name = "release" if seed is None else "release-seeded-NOT-FOR-RELEASE"
    rel = run(params_dir, data_dir, work / rel_name, seed=seed, overwrite=True,
              progress=_phase(report, "release"), prepared=prepared, coterminous=coterminous,
              tabulation_suppression=tabulation_suppression)
    tru = run(params_dir, data_dir, work / "truth-NOT-FOR-RELEASE", truth=True, overwrite=True,
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
                     prepared, Path(params_dir), Path(data_dir), time.perf_counter() - t0, plan=plan)


def accuracy(output: RunOutput, work_dir: str | Path, trials: int, report: Report | None = None) -> pd.DataFrame:
    """`engine.reports.accuracy.accuracy_report` on the run's prepared inputs: `trials` fresh
    releases (seeded from the run's seed + 1000 if the run was seeded) against the truth.
    The trials post-process as the run did (coterminous step, Tabulation System's
    suppression). Both layouts: the project's table is returned, production's two reports are written
    into work_dir (`production_reports` reads them back). The table is also kept on the
    output (`output.trials`) for the downloads and the memo."""
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

    # the trials post-process as the run did (the Run page's coterminous and Tabulation System choices)
    post = output.manifest.get("postprocessing", {})
    output.trials = accuracy_report(output.params_dir, output.data_dir, work_dir, trials=int(trials), seed=seed,
                                    overwrite=True, progress=cb if report else None, prepared=output.prepared,
                                    layout="both", coterminous=bool(post.get("coterminous", True)),
                                    tabulation_suppression=bool(post.get("tabulation_suppression")))
    return output.trials


def production_reports(work_dir: str | Path | None) -> dict[str, bytes]:
    """The production-layout reports `accuracy` wrote into work_dir ({file name: CSV bytes};
    empty if there are none): error_report.csv and multi_run_error_report.csv."""
    from engine.reports.production import ERROR_REPORT_FILE, MULTI_RUN_FILE

    if work_dir is None:
        return {}
    out = {}
    for name in (ERROR_REPORT_FILE, MULTI_RUN_FILE):
        path = Path(work_dir) / name
        if path.is_file():
            out[name] = path.read_bytes()
    return out
