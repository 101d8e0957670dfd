"""The accuracy of the Run page's last run, for its "Everything (zip)" and the decision
memo (pure; no Streamlit).

The report is `engine.reports.accuracy.accuracy_report` with ``release_dir`` = the
run's own release: every published count of that release against the truth, grouped
by geography level, iteration level, table and true size, beside the predicted 95% MOE
(SPEC §2). If the user also drew repeated releases ("Compute the accuracy report" on
the Run page), that report goes along too. Both are computed from the confidential
data: they are for the committee, never part of a release, and say so.
"""

from __future__ import annotations

import io
import tempfile
import threading
import zipfile
from pathlib import Path

import pandas as pd

from ui.core import files
from ui.safetab.runner import RunOutput

README = """Accuracy of this run (NOT FOR RELEASE)

These files compare the released counts with the true counts of the confidential input:
they are for checking the plan, never for publication.

- accuracy_of_this_release.csv: every published count of this release against the truth,
  grouped by geography level, iteration level, table and true group size; p95_abs_error is
  the 95th percentile of |released - true|, predicted_moe95_exact the 95% MOE the
  calculators predict (SPEC section 2). Small groups deviate where clamping or
  suppression acts.
- accuracy_over_trials.csv (if computed on the Run page): the same over repeated
  independent releases on the same inputs.
- error_report.csv and multi_run_error_report.csv (if computed on the Run page): the
  Census production code's two accuracy reports over those releases.
"""

#: The download name of "Everything": it holds accuracy measured against the confidential
#: truth, so it is never a release, whatever noise the run used.
EVERYTHING_DOWNLOAD = "everything-NOT-FOR-RELEASE.zip"
#: Why "Everything" is never a release (its NOT-FOR-RELEASE.txt), even of a secure run.
EVERYTHING_REASON = ("this zip holds accuracy figures measured against the confidential ground truth (accuracy/), "
                     "and accuracy/error_report.csv, if present, lists the exact size of every population group; "
                     "publish a release only from the release's own downloads")


def release_accuracy(out: RunOutput) -> pd.DataFrame:
    """The accuracy report of the run's own release against the truth (one "trial");
    computed once per run and kept on it (`out.release_report`); a call while it is
    being computed (`prepare`) waits for that computation."""
    from engine.reports.accuracy import accuracy_report

    with out.lock:
        if out.release_report is None:
            with tempfile.TemporaryDirectory(prefix="safetab-accuracy-") as tmp:
                out.release_report = accuracy_report(out.params_dir, out.data_dir, Path(tmp) / "report",
                                                     release_dir=out.release_dir, overwrite=True,
                                                     prepared=out.prepared)
    return out.release_report


def prepare(out: RunOutput) -> threading.Thread:
    """Compute `release_accuracy` in the background, right after the run: while the user
    reads the results, so that "Everything (zip)" and the memo are ready when clicked. A
    failure is left for the click, which computes it again and says why."""
    def work() -> None:
        try:
            release_accuracy(out)
        except Exception:  # noqa: BLE001 - the download that needs it reports the problem
            pass

    t = threading.Thread(target=work, name="release-accuracy", daemon=True)
    t.start()
    return t


def everything_zip(out: RunOutput, production: dict[str, bytes] | None = None) -> bytes:
    """The release folder as written (`files.release_zip`: t1/, t2/, suppressed/,
    manifest.json, SHA256SUMS; never the operator file) plus accuracy/ with the accuracy
    of this release against the truth, the report over repeated trials if one was
    computed (`out.trials`), production's reports over them (`production`, {file name:
    CSV bytes}) and a README saying they are not for release. The zip is never a release
    (accuracy/ holds exact per-group counts): NOT-FOR-RELEASE.txt is at its top, that of a
    seeded release or, for a secure one, one saying why (`EVERYTHING_REASON`), and in accuracy/."""
    from engine.release.outputs import not_for_release_text

    base = files.release_zip(out.release_dir)
    report, trials = release_accuracy(out), out.trials
    buf = io.BytesIO(base)
    marker = files.RELEASE_NOTES[1]
    with zipfile.ZipFile(buf, "a", zipfile.ZIP_DEFLATED) as zf:
        if marker not in zf.namelist():  # a seeded release has its own
            zf.writestr(marker, not_for_release_text(EVERYTHING_REASON))
        zf.writestr(f"accuracy/{marker}", not_for_release_text(EVERYTHING_REASON))
        zf.writestr("accuracy/README.txt", README)
        zf.writestr("accuracy/accuracy_of_this_release.csv", report.to_csv(index=False))
        if trials is not None and len(trials):
            zf.writestr("accuracy/accuracy_over_trials.csv", trials.to_csv(index=False))
        for name, data in (production or {}).items():
            zf.writestr(f"accuracy/{name}", data)
    return buf.getvalue()


def summary(out: RunOutput, meta: dict | None = None) -> pd.DataFrame:
    """What the run was, in a few rows (plan, data, noise, groups, rows, suppressed)."""
    meta = meta or {}
    released = out.t1[~out.t1["SUPPRESSED"]]
    rows = [
        ("Plan that ran", meta.get("plan", "")),
        ("Data", meta.get("data", "")),
        ("Noise", f"seeded (seed {out.seed}), NOT FOR RELEASE" if out.seeded else "secure random (for release)"),
        ("Privacy definition", out.config.privacy_defn),
        ("Population groups", f"{len(out.t1):,}"),
        ("T1 rows (totals released)", f"{len(released):,}"),
        ("T2 rows (sex × age)", f"{len(out.t2):,}"),
        ("Suppressed totals", f"{int(out.t1['SUPPRESSED'].sum()):,}"),
    ]
    return pd.DataFrame(rows, columns=["Quantity", "Value"])
