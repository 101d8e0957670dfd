"""Files of the Run page (pure; no Streamlit): uploads, a release's tables, zips.

* `stage_uploads` puts uploaded SafeTab-P files (or a zip of them) into the
  PARAMS_DIR / DATA_DIR layout the engine reads, and says in plain words what is
  missing or ignored.
* `read_release` reads OUT_DIR/t1, t2 and suppressed (pipe-delimited) into DataFrames;
  `t1_with_truth` / `t2_with_truth` put a release beside the ground truth.
* `zip_dir` packs folders; `release_zip` and `download_name` make the downloads of
  an output folder, marked NOT-FOR-RELEASE in the file name and inside the zip where
  the output must not be published.
"""

from __future__ import annotations

import io
import shutil
import tempfile
import zipfile
import zlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import IO

import numpy as np
import pandas as pd

from calculators.levels import GEO_LEVELS

CONFIG_NAME = "config.json"
SPEC_NAMES = (
    "race-characteristic-iterations.txt",
    "ethnicity-characteristic-iterations.txt",
    "race-and-ethnicity-codes.txt",
    "race-and-ethnicity-code-to-iteration.txt",
)
DATA_STEMS = ("person-records", "GRF-C")
DATA_SUFFIXES = (".txt", ".parquet")
#: Bounds of what uploads may unpack to (zip bombs): the total size, the number of
#: files in one zip, and the compression ratio of one member (text data compresses
#: about 10:1; a zip bomb 1000:1). Members are streamed to disk, never read whole.
MAX_UNZIPPED = 2 * 1024**3
MAX_MEMBERS = 200
MAX_RATIO = 200
_CHUNK = 1 << 20


@dataclass
class StagedUpload:
    """Where the uploaded files went and what is wrong with them."""

    params_dir: Path
    data_dir: Path
    config_text: str | None = None
    placed: list[str] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def _target(name: str) -> str | None:
    """'params' or 'data' for a recognised SafeTab-P file name, else None."""
    if name == CONFIG_NAME or name in SPEC_NAMES:
        return "params"
    p = PurePosixPath(name)
    if p.stem in DATA_STEMS and p.suffix in DATA_SUFFIXES:
        return "data"
    return None


class _Budget(Exception):
    """An upload exceeds the bounds above."""


def _copy(src: IO[bytes], dest: Path, budget: list[int]) -> None:
    """Stream src into dest, counting the bytes against budget[0] (the bytes still allowed)."""
    with open(dest, "wb") as out:
        while True:
            chunk = src.read(_CHUNK)
            if not chunk:
                return
            budget[0] -= len(chunk)
            if budget[0] < 0:
                raise _Budget(f"the files unpack to more than {MAX_UNZIPPED / 1024**3:.0f} GB")
            out.write(chunk)


def _members(name: str, data: bytes | IO[bytes], problems: list[str]):
    """(file name, opener) of an upload: itself, or the members of a zip (any folder
    depth; names by their last part; hidden files and __MACOSX skipped)."""
    base = PurePosixPath(name.replace("\\", "/")).name
    if not base.lower().endswith(".zip"):
        yield base, lambda: io.BytesIO(data) if isinstance(data, (bytes, bytearray)) else data
        return
    try:
        zf = zipfile.ZipFile(io.BytesIO(data) if isinstance(data, (bytes, bytearray)) else data)
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        problems.append(f"{base}: not a readable zip file ({str(exc)[:100]})")
        return
    with zf:
        infos = [i for i in zf.infolist() if not i.is_dir()]
        if len(infos) > MAX_MEMBERS:
            problems.append(f"{base}: holds {len(infos):,} files; at most {MAX_MEMBERS} are unpacked")
            return
        for info in infos:
            inner = PurePosixPath(info.filename.replace("\\", "/"))
            if inner.name.startswith(".") or "__MACOSX" in inner.parts:
                continue
            if _target(inner.name) is None:
                yield inner.name, None  # listed as ignored, never unpacked
                continue
            if info.file_size > MAX_RATIO * max(info.compress_size, 1) and info.file_size > _CHUNK:
                problems.append(f"{base}: {inner.name[:80]} is compressed more than {MAX_RATIO}:1, as a zip bomb is; "
                                "not unpacked")
                continue
            yield inner.name, (lambda info=info: zf.open(info))


def stage_uploads(files: Iterable[tuple[str, bytes | IO[bytes]]], dest: str | Path) -> StagedUpload:
    """Write uploaded files into dest/params and dest/data.

    Expected (SPEC §4): the 4 spec files, person-records.txt (or .parquet) and
    GRF-C.txt (or .parquet); config.json is optional (the app's configuration is run;
    an uploaded config.json can be loaded into the app). A zip of them is unpacked,
    streamed to disk within `MAX_UNZIPPED`, `MAX_MEMBERS` and `MAX_RATIO`; files with
    other names are listed as ignored and never unpacked.
    """
    dest = Path(dest)
    staged = StagedUpload(dest / "params", dest / "data")
    staged.params_dir.mkdir(parents=True, exist_ok=True)
    staged.data_dir.mkdir(parents=True, exist_ok=True)
    seen: dict[str, int] = {}
    budget = [MAX_UNZIPPED]
    for upload_name, data in files:
        try:
            for name, opener in _members(upload_name, data, staged.problems):
                where = _target(name)
                if where is None or opener is None:
                    staged.ignored.append(name[:80])
                    continue
                seen[name] = seen.get(name, 0) + 1
                folder = staged.params_dir if where == "params" else staged.data_dir
                with opener() as src:
                    _copy(src, folder / name, budget)
                if name not in staged.placed:
                    staged.placed.append(name)
                if name == CONFIG_NAME:
                    raw = (folder / name).read_bytes()[: 2 * 1024**2]
                    try:
                        staged.config_text = raw.decode("utf-8")
                    except UnicodeDecodeError:
                        staged.problems.append("config.json: not UTF-8 text")
        except _Budget as exc:
            staged.problems.append(f"{upload_name[:80]}: {exc}; not unpacked further")
            break
        except (zipfile.BadZipFile, zlib.error, EOFError, ValueError) as exc:
            staged.problems.append(f"{upload_name[:80]}: a damaged zip file ({str(exc)[:100]})")
    for name, k in seen.items():
        if k > 1:
            staged.problems.append(f"{name} was given {k} times; give it once")
    missing = [n for n in SPEC_NAMES if n not in seen]
    for stem in DATA_STEMS:
        kinds = [stem + s for s in DATA_SUFFIXES if stem + s in seen]
        if not kinds:
            missing.append(f"{stem}.txt (or {stem}.parquet)")
        elif len(kinds) > 1:
            staged.problems.append(f"give only one of {' and '.join(kinds)}")
    if missing:
        staged.problems.append("missing: " + ", ".join(missing))
    return staged


#: The folders of a session's work folder that hold an upload (`stage_session_upload`).
UPLOAD_PREFIX = "upload-"


def clear_uploads(work: str | Path) -> list[Path]:
    """Remove every upload folder of a session's work folder; the folders removed."""
    removed = []
    for folder in sorted(Path(work).glob(UPLOAD_PREFIX + "*")):
        if folder.is_dir() and not folder.is_symlink():
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder)
    return removed


def stage_session_upload(files: Iterable[tuple[str, bytes | IO[bytes]]], work: str | Path) -> StagedUpload:
    """`stage_uploads` into a new upload folder of the session's work folder, after the
    earlier ones are removed: a session keeps one set of uploaded files at a time (each
    may unpack to `MAX_UNZIPPED`), never a pile of the sets it replaced."""
    clear_uploads(work)
    return stage_uploads(files, tempfile.mkdtemp(prefix=UPLOAD_PREFIX, dir=work))


# ------------------------------------------------------------------ releases
def _read_folder(folder: Path) -> pd.DataFrame:
    parts = sorted(folder.glob("*.csv")) if folder.is_dir() else []
    frames = [pd.read_csv(p, sep="|", dtype=str, keep_default_na=False) for p in parts]
    frames = [f for f in frames if len(f.columns)]
    if not frames:
        return pd.DataFrame()
    df = pd.concat(frames, ignore_index=True)
    if "COUNT" in df:
        df["COUNT"] = df["COUNT"].astype(np.int64)
    return df


def read_release(out_dir: str | Path) -> dict[str, pd.DataFrame]:
    """t1, t2 and suppressed of an OUT_DIR as DataFrames (text columns, integer COUNT)."""
    out = Path(out_dir)
    return {name: _read_folder(out / name) for name in ("t1", "t2", "suppressed")}


T1_KEY = ["REGION_ID", "REGION_TYPE", "ITERATION_CODE"]
T2_KEY = T1_KEY + ["AGESTART", "AGEEND", "SEX"]


def _named(df: pd.DataFrame, names: pd.DataFrame) -> pd.DataFrame:
    if df.empty:
        return df
    return df.merge(names, how="left", left_on="ITERATION_CODE", right_on="ITERATION_CODE")


def iteration_names(specs) -> pd.DataFrame:
    """ITERATION_CODE -> name and iteration level, from the spec files (engine Specs)."""
    rows = [(code, it.name, int(it.level)) for code, it in specs.iterations.items()]
    return pd.DataFrame(rows, columns=["ITERATION_CODE", "ITERATION_NAME", "ITERATION_LEVEL"])


def t1_with_truth(release: pd.DataFrame, truth: pd.DataFrame, suppressed: pd.DataFrame,
                  names: pd.DataFrame) -> pd.DataFrame:
    """Every population group of the release: released T1 (or suppressed), true T1,
    error = released - true, iteration name and level."""
    rel = release.rename(columns={"COUNT": "RELEASED"}) if len(release) else \
        pd.DataFrame(columns=T1_KEY + ["RELEASED"])
    tru = truth.rename(columns={"COUNT": "TRUE"}) if len(truth) else pd.DataFrame(columns=T1_KEY + ["TRUE"])
    df = rel.merge(tru, how="left", on=T1_KEY)
    df["SUPPRESSED"] = False
    if len(suppressed):
        sup = suppressed[T1_KEY].merge(tru, how="left", on=T1_KEY)
        sup["RELEASED"] = pd.NA
        sup["SUPPRESSED"] = True
        df = pd.concat([df, sup], ignore_index=True)
    df["RELEASED"] = df["RELEASED"].astype("Int64")
    df["TRUE"] = df["TRUE"].astype("Int64")
    df["ERROR"] = (df["RELEASED"] - df["TRUE"]).astype("Int64")
    df = _named(df, names)
    cols = ["REGION_TYPE", "REGION_ID", "ITERATION_LEVEL", "ITERATION_CODE", "ITERATION_NAME",
            "RELEASED", "TRUE", "ERROR", "SUPPRESSED"]
    return _geo_sorted(df[cols], ["REGION_ID", "ITERATION_CODE"])


def _geo_sorted(df: pd.DataFrame, then: list[str]) -> pd.DataFrame:
    """Rows in the geography order USA, STATE, COUNTY, ..., PR-PLACE, then by `then`."""
    order = {g: i for i, g in enumerate(GEO_LEVELS)}
    key = df["REGION_TYPE"].map(order).fillna(len(order))
    return df.assign(_o=key).sort_values(["_o"] + then, kind="stable").drop(columns="_o") \
        .reset_index(drop=True)


def t2_with_truth(release: pd.DataFrame, truth: pd.DataFrame, names: pd.DataFrame) -> pd.DataFrame:
    """T2 rows of the release beside the true counts of the same cells."""
    if release.empty:
        return pd.DataFrame(columns=["REGION_TYPE", "REGION_ID", "ITERATION_LEVEL", "ITERATION_CODE",
                                     "ITERATION_NAME", "SEX", "AGESTART", "AGEEND", "RELEASED", "TRUE", "ERROR"])
    rel = release.rename(columns={"COUNT": "RELEASED"})
    tru = truth.rename(columns={"COUNT": "TRUE"}) if len(truth) else pd.DataFrame(columns=T2_KEY + ["TRUE"])
    df = rel.merge(tru, how="left", on=T2_KEY)
    df["TRUE"] = df["TRUE"].astype("Int64")
    df["RELEASED"] = df["RELEASED"].astype("Int64")
    df["ERROR"] = (df["RELEASED"] - df["TRUE"]).astype("Int64")
    df = _named(df, names)
    cols = ["REGION_TYPE", "REGION_ID", "ITERATION_LEVEL", "ITERATION_CODE", "ITERATION_NAME", "SEX",
            "AGESTART", "AGEEND", "RELEASED", "TRUE", "ERROR"]
    return _geo_sorted(df[cols], ["REGION_ID", "ITERATION_CODE"])


def filter_results(df: pd.DataFrame, geo_levels: Iterable[str] | None = None,
                   iteration_levels: Iterable[int] | None = None, search: str = "") -> pd.DataFrame:
    """Rows of the chosen geography levels and iteration levels whose iteration name
    (or code) contains `search` (case-insensitive)."""
    if df.empty:
        return df
    mask = pd.Series(True, index=df.index)
    if geo_levels is not None:
        mask &= df["REGION_TYPE"].isin(list(geo_levels))
    if iteration_levels is not None:
        mask &= df["ITERATION_LEVEL"].isin([int(x) for x in iteration_levels])
    s = (search or "").strip().lower()
    if s:
        mask &= (df["ITERATION_NAME"].fillna("").str.lower().str.contains(s, regex=False)
                 | df["ITERATION_CODE"].str.lower().str.contains(s, regex=False))
    return df[mask]


def zip_dir(root: str | Path, subdirs: Iterable[str] | None = None, extra: Iterable[str] = ()) -> bytes:
    """A zip (in memory) of root's files, or of the given subfolders of root plus the
    `extra` files of root's top level that exist."""
    root = Path(root)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        folders = [root / s for s in subdirs] if subdirs is not None else [root]
        for folder in folders:
            if not folder.exists():
                continue
            for p in sorted(folder.rglob("*")):
                if p.is_file():
                    zf.write(p, p.relative_to(root).as_posix())
        if subdirs is not None:
            for name in extra:
                if (root / name).is_file():
                    zf.write(root / name, name)
    return buf.getvalue()


#: Files of an output folder that go into every zip of a part of it: what the tables
#: are (the published manifest) and, for seeded runs and the truth, the marker.
RELEASE_NOTES = ("manifest.json", "NOT-FOR-RELEASE.txt")
NOT_FOR_RELEASE_TAG = "NOT-FOR-RELEASE"


def for_release(out_dir: str | Path) -> bool:
    """False if the output folder carries the NOT-FOR-RELEASE marker (seeded, truth)."""
    return not (Path(out_dir) / "NOT-FOR-RELEASE.txt").is_file()


def download_name(stem: str, out_dir: str | Path, suffix: str) -> str:
    """A download's file name: `stem.suffix`, or `stem-NOT-FOR-RELEASE.suffix` for an
    output that must not be published (the marker of `engine.release.outputs`)."""
    return f"{stem}{'' if for_release(out_dir) else '-' + NOT_FOR_RELEASE_TAG}.{suffix}"


OPERATOR_DOWNLOAD = "operator-CONFIDENTIAL-never-publish.json"


def operator_file(out_dir: str | Path) -> bytes:
    """The operator file of an output folder (exact counts of the confidential input,
    `engine.release.outputs.operator_path`), offered apart from every zip."""
    from engine.release.outputs import operator_path

    return operator_path(out_dir).read_bytes()


def release_zip(out_dir: str | Path, subdirs: Iterable[str] | None = None) -> bytes:
    """A zip of an output folder for download: the whole folder (SHA256SUMS included),
    or the given subfolders plus manifest.json and NOT-FOR-RELEASE.txt, so that no part
    loses what it is. The operator file with the exact counts lies outside the folder
    and is never in these zips."""
    return zip_dir(out_dir, subdirs, extra=RELEASE_NOTES)


def stat_level_counts(manifest: dict) -> pd.DataFrame:
    """Groups per stat level and suppressed groups per level, from a run's manifest."""
    stats = _find_stats(manifest)
    rows = []
    for key, st in stats.items():
        if not isinstance(st, dict) or "groups" not in st:
            continue
        rows.append({
            "Level": key,
            "Groups": st.get("groups", 0),
            "TotalOnly": st.get("total_only", 0),
            "Total only (stat 0)": st.get("stat_level_0", 0),
            "sex × age4": st.get("stat_level_1", 0),
            "sex × age9": st.get("stat_level_2", 0),
            "sex × age23": st.get("stat_level_3", 0),
            "Suppressed": st.get("suppressed", 0),
            "Suppression threshold T": st.get("suppression_threshold"),
        })
    df = pd.DataFrame(rows)
    if "Suppression threshold T" in df:
        df["Suppression threshold T"] = df["Suppression threshold T"].astype("Int64")
    return df


def stability_differences(manifest: dict, planned_s: int) -> dict[str, int]:
    """Levels whose stability S in a run's manifest (computed by the engine from the spec
    files: S = h_r max(2, r) + h_e with h_r, h_e counted in the tabulation class of the
    level's geography, SPEC §1) differs from the planner's S, which takes h_r = h_e = 1
    as in the 2020 spec files; on spec files production accepts the run's S can only be
    smaller (a class with no race or no ethnicity iteration at a level has h = 0).
    {level key: S of the run}."""
    out = {}
    for key, st in _find_stats(manifest).items():
        if isinstance(st, dict) and st.get("stability_S") is not None and int(st["stability_S"]) != planned_s:
            out[key] = int(st["stability_S"])
    return out


def _find_stats(manifest: dict) -> dict:
    """The per-level statistics block of a manifest, wherever the engine put it."""
    for key in ("levels", "stats", "population_group_levels", "results"):
        block = manifest.get(key)
        if isinstance(block, dict) and any(isinstance(v, dict) and "groups" in v for v in block.values()):
            return block
    for value in manifest.values():
        if isinstance(value, dict):
            found = _find_stats(value)
            if found:
                return found
    return {}
