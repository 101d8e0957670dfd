"""`python -m engine check-output PARAMS_DIR OUT_DIR` for a SafeTab-H output: complete
(SHA256SUMS, as `engine.release.check`), made with PARAMS_DIR's config.json, and every
table well formed as production's output validation wants it (``safetab_utils/
output_validation.py`` with the t3 / t4 output configs), plus what this project adds:

* ``t3/T0300{1..4}/`` and ``t4/T0400{1,2}/`` each with ``headers.csv`` and part files
  starting with REGION_ID|REGION_TYPE|ITERATION_CODE|T3_DATA_CELL (T4_DATA_CELL)|COUNT;
* every row: REGION_TYPE a geography level, REGION_ID of its level's form, a 4-digit
  ITERATION_CODE, a data cell of the folder's table level, an integer COUNT, not
  negative unless allow_negative_counts;
* every group of a folder has exactly the cells of its table level (1 / 3 / 7 / 9 rows
  in T3, 1 / 4 in T4), and appears in one table level only;
* NOT-FOR-RELEASE.txt present exactly when the manifest says so; row counts as the
  manifest says.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from calculators.config import ConfigError
from calculators.levels import GEO_LEVELS
from calculators.safetab_h import TABLE_LEVELS, TABLES, SafeTabHConfig, published_cells
from engine.errors import Problem
from engine.release.check import CheckSummary, OutputInvalid
from engine.release.check import _Checker, _read_json  # noqa: PLC2701 - the completion-marker check, shared
from engine.release.publish import NOT_FOR_RELEASE
from engine.safetab_h.inputs import REGION_WIDTH
from engine.safetab_h.run import TABLE_FOLDERS, columns

MANIFEST = "manifest.json"


def is_safetab_h_output(out_dir: str | Path) -> bool:
    """Whether OUT_DIR's manifest says it is a SafeTab-H output."""
    try:
        # the release checker's reader: no FIFO or device is opened, the size is bounded,
        # and a manifest nested too deeply is a RecursionError, not a crash
        man = _read_json(Path(out_dir) / MANIFEST)
    except (OSError, ValueError, RecursionError):
        return (Path(out_dir) / "t3").is_dir()
    return isinstance(man, dict) and man.get("program") == "safetab-h"


def check_output(params_dir: str | Path, out_dir: str | Path) -> CheckSummary:
    """Check a SafeTab-H OUT_DIR (module doc); OutputInvalid lists the problems."""
    out = Path(out_dir)
    if out.is_symlink() or not out.is_dir():
        raise OutputInvalid([Problem(str(out), None, None, None, "an output folder (not a link)")])
    ch = _Checker(Path(params_dir), out, None)
    ch.marker()
    config_file = Path(params_dir) / "config.json" if Path(params_dir).is_dir() else Path(params_dir)
    try:
        cfg = SafeTabHConfig.read(config_file)
    except ConfigError as exc:
        for p in exc.problems:
            ch.add("config.json", None, None, None, p)
        raise OutputInvalid(ch.log.problems, ch.log.total) from None
    man = None
    try:
        man = json.loads((out / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        ch.add(MANIFEST, None, None, None, f"found no readable {MANIFEST} ({exc}); expected the manifest of the run")
    mode = (man or {}).get("mode") or {}
    for_release = bool(mode.get("for_release", False))
    ch.summary.for_release = for_release
    if man is not None:
        if man.get("program") != "safetab-h":
            ch.add(MANIFEST, None, "program", man.get("program"), "safetab-h")
        if man.get("config") != cfg.to_dict():
            ch.add(MANIFEST, None, "config", "another configuration",
                   f"the configuration of {config_file} (the output was made with other parameters)")
        for where in ("", "t3/", "t4/"):
            if (out / where / NOT_FOR_RELEASE).is_file() == for_release:
                ch.add(where + NOT_FOR_RELEASE, None, None, None, "absent in a release" if for_release else
                       f"present: the manifest says this output is not for release ({mode.get('kind', '?')})")
    rows_found: dict[str, int] = {}
    groups = 0
    for table in TABLES:
        seen: dict[str, int] = {}
        for level in TABLE_LEVELS[table]:
            name = TABLE_FOLDERS[table][level]
            rel = f"{table}/{name}"
            folder = out / rel
            head = "|".join(columns(table))
            if not (folder / "headers.csv").is_file():
                ch.add(rel + "/headers.csv", None, None, None, f"found no file; expected the header {head}")
            rows_found[rel] = 0
            for path in sorted(folder.glob("*.csv")) if folder.is_dir() else []:
                if path.name == "headers.csv":
                    continue
                n, keys = _check_part(ch, f"{rel}/{path.name}", path, table, level, cfg.allow_negative_counts)
                rows_found[rel] += n
                for k in keys:
                    if k in seen:
                        ch.add(f"{rel}/{path.name}", None, "REGION_ID|REGION_TYPE|ITERATION_CODE", k,
                               f"each group at one {table.upper()} level only (it is also in {seen[k]})")
                    seen[k] = name
        groups += len(seen)
    if man is not None:
        want = (man.get("outputs") or {}).get("rows") or {}
        for rel, n in rows_found.items():
            if rel in want and want[rel] != n:
                ch.add(rel, None, None, f"{n:,} rows", f"{want[rel]:,} rows, as manifest.json says")
    ch.summary.rows = rows_found
    ch.summary.groups = groups
    if ch.log:
        raise OutputInvalid(ch.log.problems, ch.log.total)
    return ch.summary


def _check_part(ch, rel: str, path: Path, table: str, level: int, allow_negative: bool) -> tuple[int, list[str]]:
    cols = columns(table)
    with open(path, encoding="utf-8", errors="replace") as fh:
        first = fh.readline().rstrip("\r\n")
    if first != "|".join(cols):
        ch.add(rel, 1, None, first, f"the header {'|'.join(cols)}")
        return 0, []
    df = pd.read_csv(path, sep="|", dtype=str, keep_default_na=False)
    if len(df.columns) != len(cols):
        ch.add(rel, None, None, None, f"{len(cols)} fields on every line")
        return 0, []
    line = np.arange(len(df)) + 2
    rt = df["REGION_TYPE"].to_numpy(str)
    rid = df["REGION_ID"].to_numpy(str)
    width = np.array([REGION_WIDTH.get(t, -1) for t in rt])
    cell_col = cols[3]
    cells = set(published_cells(table, level))

    def bad(mask: np.ndarray, column: str, values: np.ndarray, expected: str) -> None:
        for i in np.flatnonzero(mask)[:20]:
            ch.add(rel, int(line[i]), column, values[i], expected)
        ch.log.count(max(0, int(mask.sum()) - 20))

    bad(~np.isin(rt, list(GEO_LEVELS)), "REGION_TYPE", rt, "a geography level")
    digits = df["REGION_ID"].str.fullmatch(r"[0-9]+").to_numpy(bool)
    bad(~digits | (np.char.str_len(rid) != width), "REGION_ID", rid, "the id of its REGION_TYPE (USA 1, STATE 2 "
        "digits, COUNTY 5, TRACT 11, PLACE 7, AIANNH 4)")
    code = df["ITERATION_CODE"].to_numpy(str)
    bad(~df["ITERATION_CODE"].str.fullmatch(r"[0-9]{4}").to_numpy(bool), "ITERATION_CODE", code, "4 digits")
    cell = df[cell_col].to_numpy(str)
    bad(~np.isin(cell, [str(c) for c in cells]), cell_col, cell,
        f"a cell of {table.upper()} level {level}: {', '.join(str(c) for c in sorted(cells))}")
    cnt = df["COUNT"].to_numpy(str)
    is_int = df["COUNT"].str.fullmatch(r"-?[0-9]+").to_numpy(bool)
    bad(~is_int, "COUNT", cnt, "a whole number")
    if not allow_negative:
        bad(is_int & np.char.startswith(cnt, "-"), "COUNT", cnt, "a count of at least 0 (allow_negative_counts "
            "is false)")
    key = pd.Series(rid).str.cat([pd.Series(rt), pd.Series(code)], sep="|")
    per = pd.DataFrame({"key": key, "cell": cell}).groupby("key")["cell"].agg(["count", "nunique"])
    wrong = per[(per["count"] != len(cells)) | (per["nunique"] != len(cells))]
    for k, r in wrong.head(20).iterrows():
        ch.add(rel, None, "REGION_ID|REGION_TYPE|ITERATION_CODE", k,
               f"each of the {len(cells)} cells of {table.upper()} level {level} once (found {int(r['count'])} rows)")
    ch.log.count(max(0, len(wrong) - 20))
    return len(df), list(per.index)
