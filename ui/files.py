"""Files of the Run page (pure; no Streamlit): uploads, a release's tables, zips.

* `stage_uploads` puts uploaded SafeTab-P files (or a zip of them) into the
  PARAMS_DIR / DATA_DIR layout the engine reads, and says in plain words what is
  missing or ignored.
* `read_release` reads OUT_DIR/t1, t2 and suppressed (pipe-delimited) into DataFrames;
  `t1_with_truth` / `t2_with_truth` put a release beside the ground truth.
* `zip_dir` packs output folders for download.
"""

from __future__ import annotations

import io
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

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
#: Refuse zip members that would unpack to more than this (a guard, not a limit on data).
MAX_UNZIPPED = 4 * 1024**3


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


def _expand(files: Iterable[tuple[str, bytes]], problems: list[str]) -> list[tuple[str, bytes]]:
    """Unpack zips (any folder depth; names by their last part)."""
    out: list[tuple[str, bytes]] = []
    for name, data in files:
        base = PurePosixPath(name.replace("\\", "/")).name
        if base.lower().endswith(".zip"):
            try:
                with zipfile.ZipFile(io.BytesIO(data)) as zf:
                    total = sum(i.file_size for i in zf.infolist())
                    if total > MAX_UNZIPPED:
                        problems.append(f"{base}: unpacks to more than {MAX_UNZIPPED / 1024**3:.0f} GB")
                        continue
                    for info in zf.infolist():
                        inner = PurePosixPath(info.filename.replace("\\", "/"))
                        if info.is_dir() or inner.name.startswith(".") or "__MACOSX" in inner.parts:
                            continue
                        out.append((inner.name, zf.read(info)))
            except (zipfile.BadZipFile, OSError, ValueError) as exc:
                problems.append(f"{base}: not a readable zip file ({exc})")
        else:
            out.append((base, data))
    return out


def stage_uploads(files: Iterable[tuple[str, bytes]], dest: str | Path) -> StagedUpload:
    """Write uploaded files into dest/params and dest/data.

    Expected (SPEC §4): the 4 spec files, person-records.txt (or .parquet) and
    GRF-C.txt (or .parquet); config.json is optional (the app's configuration is run;
    an uploaded config.json can be loaded into the app). A zip of them is unpacked.
    """
    dest = Path(dest)
    staged = StagedUpload(dest / "params", dest / "data")
    staged.params_dir.mkdir(parents=True, exist_ok=True)
    staged.data_dir.mkdir(parents=True, exist_ok=True)
    seen: dict[str, int] = {}
    for name, data in _expand(files, staged.problems):
        where = _target(name)
        if where is None:
            staged.ignored.append(name)
            continue
        seen[name] = seen.get(name, 0) + 1
        folder = staged.params_dir if where == "params" else staged.data_dir
        (folder / name).write_bytes(data)
        if name not in staged.placed:
            staged.placed.append(name)
        if name == CONFIG_NAME:
            try:
                staged.config_text = data.decode("utf-8")
            except UnicodeDecodeError:
                staged.problems.append("config.json: not UTF-8 text")
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


def zip_dir(root: str | Path, subdirs: Iterable[str] | None = None) -> bytes:
    """A zip (in memory) of root's files, or of the given subfolders of root."""
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
    return buf.getvalue()


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
