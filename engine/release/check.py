"""`python -m engine check-output PARAMS_DIR OUT_DIR`: is OUT_DIR a complete, well-formed
output of SafeTab-P for these parameters?

The counterpart of production's output validation (DAS_2020_DDHCA_Production_Code:
`safetab_utils/output_validation.py` with `safetab_p/resources/config/output/t1.json`
and `t2.json`): the formats of every column, the state filter, no negative counts unless
`allow_negative_counts`, plus what this project adds:

1. completeness: `SHA256SUMS` (the completion marker, `engine.release.publish`) lists
   exactly the files of OUT_DIR and every checksum matches;
2. `manifest.json` is readable, carries no `confidential` block (the exact person
   counts belong in the operator file beside OUT_DIR), was made with PARAMS_DIR's
   config.json, and NOT-FOR-RELEASE.txt is present exactly when the manifest says the
   output is not for release; its row counts match the files;
3. `t1/`, `t2/`, `suppressed/` exist, each file starts with the exact header row
   (SPEC section 4); `suppressed/tabulation-system.csv` (`run --tabulation-suppression`)
   has a fourth column REASON, one of the Tabulation System's rules;
4. every row: REGION_TYPE one of the 10 geography levels, REGION_ID of that level's form
   (USA `1`, STATE 2 digits, COUNTY 5, TRACT 11, PLACE 7, AIANNH 4, PR-* starting with
   72; production's pattern accepts any of these lengths for any type), ITERATION_CODE
   4 digits (production: 1 to 4) of an iteration the level tabulates, COUNT an integer,
   in t2 SEX 1 or 2 and AGESTART/AGEEND a bin of age4, age9 or age23 or `*`/`*`;
5. the state filter: below USA (AIANNH excepted, as production) the region lies in a
   state of `state_filter_us` (US levels, if `run_us`) or in Puerto Rico (PR levels, if
   `run_pr`);
6. the universe: every population group (region x tabulated iteration) of every
   tabulated level appears exactly once in t1/ or suppressed/; with `data_dir` the
   regions come from GRF-C as in the run, otherwise from the output itself, checked
   against the manifest's region count per level;
7. T2: only released, non-TotalOnly groups have a table, of one binning, with 8, 18 or
   46 cells plus the two sex marginals.

Files are read in streamed batches; memory is a few bytes per population group.
"""

from __future__ import annotations

import json
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from calculators.config import ConfigError, SafeTabConfig, read_regular_file, special_file
from calculators.levels import (
    GEO_LEVELS,
    GEO_LEVELS_PR,
    STAT_LEVEL_AGE_EDGES,
    STAT_LEVEL_CELLS,
    age_bins,
)
from engine.errors import InputError, Problem, ProblemLog
from engine.release.outputs import (
    HEADERS,
    MANIFEST,
    REASON_COLUMNS,
    REASON_FILE,
    SUPPRESSED_COLUMNS,
    T1_COLUMNS,
    T2_COLUMNS,
    operator_path,
)
from engine.tabulation.postprocess import TABULATION_RULES
from engine.release.publish import MARKER, NOT_FOR_RELEASE, marker_entries, os_message, sha256_of

#: REGION_ID of each REGION_TYPE (SPEC section 4).
REGION_ID_PATTERNS = {
    "USA": r"1", "STATE": r"\d{2}", "COUNTY": r"\d{5}", "TRACT": r"\d{11}", "PLACE": r"\d{7}",
    "AIANNH": r"\d{4}", "PR-STATE": r"72", "PR-COUNTY": r"72\d{3}", "PR-TRACT": r"72\d{9}", "PR-PLACE": r"72\d{5}",
}
_TABLES = {"t1": T1_COLUMNS, "t2": T2_COLUMNS, "suppressed": SUPPRESSED_COLUMNS}
_BLOCK = 1 << 22
_ALL_BINS = 7  # age4 | age9 | age23
_SHOWN = 40


class OutputInvalid(InputError):
    """OUT_DIR fails the checks; `report()` lists the first problems."""

    def report(self, limit: int = 20) -> str:
        return super().report(limit).replace("Invalid input:", "Invalid output:", 1)


@dataclass
class CheckSummary:
    out_dir: Path
    rows: dict[str, int] = field(default_factory=dict)
    groups: int = 0
    levels: int = 0
    files_verified: int = 0
    for_release: bool = True
    notes: list[str] = field(default_factory=list)


def _cut(value) -> str:
    text = str(value)
    return text if len(text) <= _SHOWN else text[:_SHOWN] + "..."


def _pairs() -> dict[tuple[str, str], int]:
    """(AGESTART, AGEEND) -> bits of the binnings it belongs to (1 age4, 2 age9, 4 age23;
    (0, 4) is a bin of age9 and age23); the marginal ('*', '*') belongs to all."""
    out: dict[tuple[str, str], int] = {("*", "*"): _ALL_BINS}
    for k, edges in STAT_LEVEL_AGE_EDGES.items():
        for a, b in age_bins(edges):
            out[(str(a), str(b))] = out.get((str(a), str(b)), 0) | (1 << (k - 1))
    return out


class _Level:
    """Group bookkeeping of one REGION_TYPE over all its tabulated iterations."""

    def __init__(self, geo: str, codes: list[str], detailed_only: np.ndarray, regions: list[str] | None):
        self.geo = geo
        self.codes = codes
        self.code_index = {c: i for i, c in enumerate(codes)}
        self.detailed_only = detailed_only
        self.fixed = regions is not None
        self.regions: dict[str, int] = {r: i for i, r in enumerate(regions or [])}
        cap = max(len(self.regions), 16)
        n = len(codes)
        self.seen = np.zeros(cap * n, np.uint8)  # rows in t1/ + suppressed/
        self.released = np.zeros(cap * n, np.uint8)  # rows in t1/
        self.t2_rows = np.zeros(cap * n, np.uint8)
        self.t2_bins = np.full(cap * n, _ALL_BINS, np.uint8)  # AND of the binnings of a group's T2 rows

    def _grow(self, need: int) -> None:
        n = len(self.codes)
        if need * n <= len(self.seen):
            return
        cap = max(need, 2 * len(self.seen) // max(n, 1))
        for name in ("seen", "released", "t2_rows", "t2_bins"):
            old = getattr(self, name)
            new = np.full(cap * n, _ALL_BINS if name == "t2_bins" else 0, np.uint8)
            new[: len(old)] = old
            setattr(self, name, new)

    def group_ids(self, region_ids: pa.Array, codes: pa.Array) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(group id or -1, region known, code known) of each row."""
        if not self.fixed:
            for r in pc.unique(region_ids).to_pylist():
                if r not in self.regions:
                    self.regions[r] = len(self.regions)
            self._grow(len(self.regions))
        r = pc.index_in(region_ids, value_set=pa.array(list(self.regions), pa.string())).to_numpy(zero_copy_only=False)
        c = pc.index_in(codes, value_set=pa.array(self.codes, pa.string())).to_numpy(zero_copy_only=False)
        r_ok = ~np.isnan(r) if r.dtype.kind == "f" else np.ones(len(r), bool)
        c_ok = ~np.isnan(c) if c.dtype.kind == "f" else np.ones(len(c), bool)
        ok = r_ok & c_ok
        gid = np.full(len(r), -1, np.int64)
        gid[ok] = np.nan_to_num(r[ok]).astype(np.int64) * len(self.codes) + np.nan_to_num(c[ok]).astype(np.int64)
        return gid, r_ok, c_ok


class _Checker:
    def __init__(self, params_dir: Path, out_dir: Path, data_dir: Path | None):
        self.params_dir, self.out_dir, self.data_dir = params_dir, out_dir, data_dir
        self.log = ProblemLog(keep=200)
        self.summary = CheckSummary(out_dir)
        self.pairs = _pairs()
        self.malformed = False  # a table file could not be read whole: the universe is not checked
        self.special: set[str] = set()  # files said to be links, FIFOs...: said once, never opened

    def add(self, file: str, line: int | None, column: str | None, value, expected: str) -> None:
        self.log.add(file, line, column, None if value is None else _cut(value), expected)

    # -------------------------------------------------------------- structure
    def marker(self) -> None:
        """SHA256SUMS lists exactly the files of OUT_DIR, each with its checksum. Only
        regular files are opened: a symbolic link (even to an identical copy elsewhere),
        a FIFO, a device or a socket is a problem of its own (a FIFO would block the
        check forever), and so is a folder that holds no listed file."""
        what = _special(self.out_dir / MARKER) if os.path.lexists(self.out_dir / MARKER) else None
        if what:
            self.add(MARKER, None, None, None, f"found {what} (it was not opened); expected a regular file")
            return
        found = marker_entries(self.out_dir)
        if found is None:
            self.add(MARKER, None, None, None, "found no readable completion marker; expected the one this tool "
                     "writes last when a run finishes (without it the output is unfinished or was not made by "
                     "SafeTab-P Studio)")
            return
        listed = found[1]
        actual, special, folders = set(), {}, []
        for root, dirs, names in os.walk(self.out_dir):
            for name in dirs + names:
                path = os.path.join(root, name)
                rel = os.path.relpath(path, self.out_dir).replace(os.sep, "/")
                what = _special(Path(path), folder_ok=name in dirs)
                if what:
                    special[rel] = what
                elif name in dirs:
                    folders.append(rel)
                else:
                    actual.add(rel)
        actual.discard(MARKER)
        for rel, what in sorted(special.items()):
            self.special.add(rel)
            self.add(rel, None, None, None, f"found {what} (it was not opened); expected a regular file of the output")
        for rel in sorted(set(listed) - actual - set(special)):
            self.add(rel, None, None, None, f"found no file; expected the file {MARKER} lists (it was removed after "
                     "the run)")
        for rel in sorted(actual - set(listed)):
            self.add(rel, None, None, None, f"found a file {MARKER} does not list; expected only the files it lists "
                     "(this one was added after the run)")
        for rel in sorted(folders):
            if not any(f.startswith(rel + "/") for f in listed):
                self.add(rel + "/", None, None, None, f"found a folder that holds no file listed in {MARKER}; expected "
                         "only the folders of listed files (this one was added after the run)")
        for rel in sorted(set(listed) & actual):
            try:
                digest = sha256_of(self.out_dir / rel)
            except OSError as exc:  # replaced since the walk (sha256_of opens regular files only)
                self.add(rel, None, None, None, f"found a file that cannot be read ({exc.strerror or exc}); expected "
                         "a readable regular file")
                continue
            if digest != listed[rel]:
                self.add(rel, None, None, None, f"found other contents than {MARKER} lists; expected the sha256 "
                         "listed there (the file was changed or truncated after the run)")
            else:
                self.summary.files_verified += 1

    def manifest(self) -> dict | None:
        path = self.out_dir / MANIFEST
        if not os.path.lexists(path):
            self.add(MANIFEST, None, None, None, f"found no {MANIFEST}: this is not a release folder (expected the "
                     "manifest every output of `run` or `truth` has)")
            return None
        if MANIFEST in self.special:
            return None  # a link, FIFO...: said once above, never opened
        try:
            man = _read_json(path)
        except (OSError, ValueError, RecursionError) as exc:
            why = ("it is nested too deeply" if isinstance(exc, RecursionError) else
                   os_message(exc) if isinstance(exc, OSError) else _cut(exc))
            self.add(MANIFEST, None, None, None, f"found a {MANIFEST} that cannot be read ({why}); expected a "
                     "readable JSON manifest")
            return None
        if not isinstance(man, dict):
            self.add(MANIFEST, None, None, None, f"found JSON that is not an object ({type(man).__name__}); expected "
                     "a JSON object")
            return None
        if "confidential" in man:
            self.add(MANIFEST, None, "confidential", "present", "no exact counts of the confidential input in the "
                     "release folder (they belong in the operator file beside it)")
        mode = man.get("mode") if isinstance(man.get("mode"), dict) else {}
        for_release = bool(mode.get("for_release", False))
        self.summary.for_release = for_release
        for where in ("", "t1/", "t2/", "suppressed/"):
            has = (self.out_dir / where / NOT_FOR_RELEASE).is_file()
            if has == for_release:
                self.add(where + NOT_FOR_RELEASE, None, None, None,
                         "absent in a release" if for_release else
                         f"present: the manifest says this output is not for release ({mode.get('kind', '?')})")
        return man

    def config(self, man: dict | None) -> SafeTabConfig | None:
        try:
            cfg = SafeTabConfig.read(self.params_dir / "config.json")
        except ConfigError as exc:
            for p in exc.problems[:10]:
                self.add("PARAMS_DIR/config.json", None, None, None, str(p))
            return None
        if man is not None and isinstance(man.get("config"), dict):
            mine, theirs = cfg.to_dict(), man["config"]
            diff = sorted(k for k in set(mine) | set(theirs) if mine.get(k) != theirs.get(k))
            if diff:
                self.add(MANIFEST, None, "config", ", ".join(diff[:5]) + (" ..." if len(diff) > 5 else ""),
                         "the configuration of PARAMS_DIR/config.json (the output was made with another one)")
        return cfg

    # -------------------------------------------------------------- tables
    def _files(self, kind: str) -> list[Path]:
        folder = self.out_dir / kind
        if not folder.is_dir():
            self.add(f"{kind}/", None, None, None, "found no such folder; expected a folder of pipe-delimited files "
                     "(SPEC section 4)")
            return []
        files = []
        if folder.is_symlink():
            self.add(f"{kind}/", None, None, None, "found a symbolic link (it was not followed); expected a folder "
                     "of the output")
            return []
        for p in sorted(folder.iterdir()):
            if p.name == NOT_FOR_RELEASE:
                continue
            rel = f"{kind}/{p.name}"
            what = _special(p)
            if what:
                self.malformed = True  # a part file not read: missing groups would only echo it
            if rel in self.special:
                continue  # said once above, never opened
            if what or p.suffix != ".csv":
                self.add(rel, None, None, None, f"found {what + ' (it was not opened)' if what else 'a file that is not a .csv part file'}; "
                         "expected only regular .csv part files")
                continue
            files.append(p)
        if not files:
            self.add(f"{kind}/", None, None, None, f"found no .csv part file; expected at least {HEADERS} with the "
                     "header row")
        return files

    def _batches(self, path: Path, columns: list[str]):
        """(line number of the first row, batch) of a table file; problems if malformed."""
        rel = path.relative_to(self.out_dir).as_posix()
        with open(path, "rb") as fh:
            first = fh.readline(4096).rstrip(b"\r\n")
        if first != "|".join(columns).encode():
            self.malformed = True
            self.add(rel, 1, None, first.decode("utf-8", "replace"), "the header " + "|".join(columns))
            return
        try:
            reader = pacsv.open_csv(
                path,
                read_options=pacsv.ReadOptions(column_names=columns, skip_rows=1, block_size=_BLOCK),
                parse_options=pacsv.ParseOptions(delimiter="|", quote_char=False, ignore_empty_lines=False),
                convert_options=pacsv.ConvertOptions(column_types={c: pa.string() for c in columns},
                                                     strings_can_be_null=False, quoted_strings_can_be_null=False),
            )
            line = 2
            for batch in reader:
                yield line, batch
                line += batch.num_rows
        except (pa.ArrowInvalid, UnicodeDecodeError) as exc:
            self.malformed = True
            line, text, what = _first_bad_line(path, len(columns))
            self.add(rel, line, None, text, what or f"UTF-8 rows of {len(columns)} pipe-separated fields"
                     + ("" if line else f" ({_cut(exc)})"))

    def _bad(self, rel: str, line0: int, batch, column: str, bad: np.ndarray, expected: str,
             values: pa.Array | None = None) -> None:
        idx = np.flatnonzero(bad)
        if not len(idx):
            return
        room = max(0, self.log.keep - len(self.log.problems))
        source = batch.column(column) if values is None else values
        values = source.take(pa.array(idx[:room])).to_pylist() if room else []
        for i, v in zip(idx[:room], values):
            self.add(rel, line0 + int(i), column, v, expected)
        self.log.count(len(idx) - len(values))

    def tables(self, cfg: SafeTabConfig, levels: dict[str, _Level], tabulated: dict[str, dict[str, int]]) -> None:
        us_states = set(cfg.state_filter_us) if cfg.run_us else set()
        for kind, columns in _TABLES.items():
            rows = 0
            for path in self._files(kind):
                rel = path.relative_to(self.out_dir).as_posix()
                # run --tabulation-suppression lists what the Tabulation System's rules removed, with a REASON
                reasons = kind == "suppressed" and path.name == REASON_FILE
                for line0, batch in self._batches(path, REASON_COLUMNS if reasons else columns):
                    rows += batch.num_rows
                    if reasons:
                        ok = pc.is_in(batch.column("REASON"),
                                      value_set=pa.array(list(TABULATION_RULES))).to_numpy(zero_copy_only=False)
                        self._bad(rel, line0, batch, "REASON", ~ok, "a rule of the Tabulation System: "
                                  + " or ".join(TABULATION_RULES))
                    self._rows(kind, rel, line0, batch, cfg, us_states, levels, tabulated)
            self.summary.rows[kind] = rows

    def _rows(self, kind, rel, line0, batch, cfg, us_states, levels, tabulated) -> None:
        n = batch.num_rows
        rtype = batch.column("REGION_TYPE")
        rid = batch.column("REGION_ID")
        code = batch.column("ITERATION_CODE")
        type_ok = pc.is_in(rtype, value_set=pa.array(list(GEO_LEVELS))).to_numpy(zero_copy_only=False)
        self._bad(rel, line0, batch, "REGION_TYPE", ~type_ok, "one of " + ", ".join(GEO_LEVELS))
        code_fmt = pc.match_substring_regex(code, r"^\d{4}$").to_numpy(zero_copy_only=False)
        self._bad(rel, line0, batch, "ITERATION_CODE", ~code_fmt, "an iteration code of 4 digits")
        if "COUNT" in batch.column_names:
            count = batch.column("COUNT")
            fmt = pc.match_substring_regex(count, r"^-?\d{1,18}$").to_numpy(zero_copy_only=False)
            self._bad(rel, line0, batch, "COUNT", ~fmt, "a whole number")
            if not cfg.allow_negative_counts:
                neg = fmt & pc.starts_with(count, "-").to_numpy(zero_copy_only=False)
                self._bad(rel, line0, batch, "COUNT", neg, "a count >= 0 (allow_negative_counts is false)")
        bits = np.full(n, _ALL_BINS, np.uint8)
        if kind == "t2":
            sex_ok = pc.is_in(batch.column("SEX"), value_set=pa.array(["1", "2"])).to_numpy(zero_copy_only=False)
            self._bad(rel, line0, batch, "SEX", ~sex_ok, "1 (male) or 2 (female)")
            pair = pc.binary_join_element_wise(batch.column("AGESTART"), batch.column("AGEEND"), "|")
            keys = [f"{a}|{b}" for a, b in self.pairs]
            pi = pc.index_in(pair, value_set=pa.array(keys)).to_numpy(zero_copy_only=False)
            pair_ok = ~np.isnan(pi) if pi.dtype.kind == "f" else np.ones(n, bool)
            self._bad(rel, line0, batch, "AGESTART|AGEEND", ~pair_ok,
                      "an age bin of age4, age9 or age23 (SPEC section 1), or * and * for a sex marginal", pair)
            table_bits = np.array(list(self.pairs.values()), np.uint8)
            bits[pair_ok] = table_bits[np.nan_to_num(pi[pair_ok]).astype(np.int64)]
        types = pc.unique(rtype.filter(pa.array(type_ok))).to_pylist() if type_ok.any() else []
        for geo in types:
            sel = type_ok & pc.equal(rtype, geo).to_numpy(zero_copy_only=False)
            fmt = pc.match_substring_regex(rid, f"^{REGION_ID_PATTERNS[geo]}$").to_numpy(zero_copy_only=False)
            self._bad(rel, line0, batch, "REGION_ID", sel & ~fmt, f"a {geo} region id ({REGION_ID_PATTERNS[geo]})")
            if geo not in ("USA", "AIANNH"):
                if geo in GEO_LEVELS_PR:
                    allowed = {"72"} if cfg.run_pr else set()
                else:
                    allowed = us_states
                in_filter = pc.is_in(pc.utf8_slice_codeunits(rid, 0, 2),
                                     value_set=pa.array(sorted(allowed), pa.string())).to_numpy(zero_copy_only=False)
                self._bad(rel, line0, batch, "REGION_ID", sel & fmt & ~in_filter,
                          "a region of the states the configuration runs (state_filter_us, run_us, run_pr)")
            lv = levels.get(geo)
            if lv is None:
                self._bad(rel, line0, batch, "REGION_TYPE", sel,
                          "a geography level this configuration tabulates (a level with rho > 0 whose run is on)")
                continue
            known = pc.is_in(code, value_set=pa.array(list(tabulated[geo]), pa.string())).to_numpy(zero_copy_only=False)
            self._bad(rel, line0, batch, "ITERATION_CODE", sel & code_fmt & ~known,
                      f"an iteration that {geo} tabulates in the spec files (level with rho > 0; USA/STATE skip "
                      "COARSE_ONLY, sub-state levels DETAILED_ONLY)")
            good = sel & fmt & known
            if not good.any():
                continue
            mask = pa.array(good)
            gid, r_ok, _c_ok = lv.group_ids(rid.filter(mask), code.filter(mask))
            idx = np.flatnonzero(good)
            if lv.fixed:
                unknown = np.zeros(n, bool)
                unknown[idx[~r_ok]] = True
                self._bad(rel, line0, batch, "REGION_ID", unknown, f"a {geo} region of GRF-C in the states of the run")
            keep = gid >= 0
            gid = gid[keep]
            if kind in ("t1", "suppressed"):
                np.add.at(lv.seen, gid, 1)
                if kind == "t1":
                    lv.released[gid] = 1
            else:
                np.add.at(lv.t2_rows, gid, 1)
                np.bitwise_and.at(lv.t2_bins, gid, bits[idx][keep])

    # -------------------------------------------------------------- universe
    def universe(self, man: dict | None, levels: dict[str, _Level], tabulated: dict[str, dict[str, int]],
                 tab_levels: set[tuple[str, int]]) -> None:
        man_levels = man.get("levels", {}) if isinstance(man, dict) and isinstance(man.get("levels"), dict) else {}
        if self.malformed:
            return  # missing groups would only echo the unreadable file
        shown = 0
        for geo, lv in levels.items():
            n_codes = len(lv.codes)
            n_reg = len(lv.regions)
            names = list(lv.regions)
            for it_level in (1, 2):
                if (geo, it_level) not in tab_levels:
                    continue
                cols = np.array([i for i, c in enumerate(lv.codes) if tabulated[geo][c] == it_level], np.int64)
                if not len(cols):
                    continue
                key = f"({geo}, {it_level})"
                stated = man_levels.get(key, {}).get("regions") if isinstance(man_levels.get(key), dict) else None
                if not lv.fixed and stated is not None and stated != n_reg:
                    self.add(MANIFEST, None, f"levels.{key}.regions", stated,
                             f"the number of {geo} regions in the output ({n_reg})")
                if n_reg == 0:
                    if lv.fixed or stated:
                        self.add("t1/ + suppressed/", None, None, key, "the groups of this level (none found)")
                    continue
                grid = (np.arange(n_reg, dtype=np.int64)[:, None] * n_codes + cols[None, :]).reshape(-1)
                seen = lv.seen[grid]
                self.summary.groups += len(grid)
                self.summary.levels += 1
                for what, bad in (("this one is missing", seen == 0), ("this one appears more than once", seen > 1)):
                    idx = np.flatnonzero(bad)
                    room = max(0, 20 - shown)
                    for g in idx[:room]:
                        r, c = divmod(int(grid[g]), n_codes)
                        self.add("t1/ + suppressed/", None, "REGION_ID|ITERATION_CODE", f"{names[r]}|{lv.codes[c]}",
                                 f"every {key} population group of the universe once in t1/ or suppressed/ ({what})")
                        shown += 1
                    self.log.count(len(idx) - min(len(idx), room))
                rows, tbits, released = lv.t2_rows[grid], lv.t2_bins[grid], lv.released[grid]
                has = rows > 0
                expected_rows = np.zeros(len(grid), np.int64)  # a group's bins must all be of one binning
                for k in (1, 2, 3):
                    expected_rows[tbits == (1 << (k - 1))] = STAT_LEVEL_CELLS[k] + 2
                only_total = lv.detailed_only[cols][np.arange(len(grid)) % len(cols)]
                for what, bad in (("a sex x age table of one binning: 8, 18 or 46 cells and 2 sex marginals",
                                   has & (rows != expected_rows)),
                                  ("no T2 rows for a suppressed total", has & (released == 0)),
                                  ("no T2 rows for a TotalOnly (DETAILED_ONLY) iteration", has & only_total)):
                    idx = np.flatnonzero(bad)
                    for g in idx[:5]:
                        r, c = divmod(int(grid[g]), n_codes)
                        self.add("t2/", None, "REGION_ID|ITERATION_CODE", f"{names[r]}|{lv.codes[c]}", what)
                    self.log.count(max(0, len(idx) - 5))

    def rows_vs_manifest(self, man: dict | None) -> None:
        stated = (man or {}).get("outputs", {}).get("rows") if isinstance((man or {}).get("outputs"), dict) else None
        if not isinstance(stated, dict) or self.malformed:
            return
        for kind, n in self.summary.rows.items():
            if kind in stated and not (type(stated[kind]) is int and stated[kind] == n):
                # as JSON: the string "18449" was shown as 18449, the count it is not
                value = stated[kind] if type(stated[kind]) is int else _json_text(stated[kind])
                self.add(MANIFEST, None, f"outputs.rows.{kind}", value, f"the rows in {kind}/ ({n:,}), a whole number")


def _json_text(value) -> str:
    try:
        return json.dumps(value)
    except (TypeError, ValueError, RecursionError):
        return repr(value)


#: manifest.json and the operator file are read only up to this size (a manifest is ~25 kB).
_MAX_JSON_BYTES = 64 << 20


def _special(path: Path, folder_ok: bool = False) -> str | None:
    """What `path` is if it is not a regular file (or, with folder_ok, a folder), by
    lstat, without opening it: "a symbolic link to ...", "a FIFO (named pipe)"..."""
    try:
        st = os.lstat(path)
    except OSError as exc:
        return f"unreadable ({exc.strerror or exc})"
    if stat.S_ISLNK(st.st_mode):
        return f"a symbolic link to {_cut(os.readlink(path))}"
    if folder_ok and stat.S_ISDIR(st.st_mode):
        return None
    return special_file(st.st_mode)


def _read_json(path: Path):
    """JSON of a regular file that is no link, read within _MAX_JSON_BYTES (ValueError
    otherwise; RecursionError if nested too deeply)."""
    what = _special(path)
    if what:
        raise ValueError(f"{path.name} is {what}")
    return json.loads(read_regular_file(path, _MAX_JSON_BYTES).decode("utf-8"))


def _first_bad_line(path: Path, fields: int) -> tuple[int | None, str | None, str | None]:
    """(line, text, what it should be) of the first line that is not UTF-8, lacks `fields`
    fields or is longer than the reader's block (`_BLOCK`; read a block at a time, never
    whole); what it should be is None for the first two."""
    with open(path, "rb") as fh:
        i = 0
        while raw := fh.readline(_BLOCK + 1):
            i += 1
            if len(raw) > _BLOCK:
                head, length = raw[:_SHOWN].decode("utf-8", "replace"), len(raw.rstrip(b"\r\n"))
                while not raw.endswith(b"\n") and (raw := fh.readline(1 << 20)):
                    length += len(raw.rstrip(b"\r\n"))
                return i, head, f"lines of at most {_BLOCK:,} bytes (this one has {length:,}; a line break missing?)"
            body = raw.rstrip(b"\r\n")
            try:
                text = body.decode("utf-8")
            except UnicodeDecodeError:
                return i, body[:_SHOWN].decode("utf-8", "replace"), None
            if text.count("|") != fields - 1:
                return i, text, None
    return None, None, None


def _regions_from_grf(params_dir: Path, data_dir: Path, cfg: SafeTabConfig) -> dict[str, list[str]]:
    from engine.inputs.geography import build_geography, check_grf
    from engine.inputs.readers import GRF_COLUMNS, GRF_STEM, find_data_file, read_all

    log = ProblemLog()
    grf_file = find_data_file(data_dir, GRF_STEM, log)
    grf = read_all(grf_file, GRF_COLUMNS, log) if grf_file is not None else None
    if grf is not None:
        check_grf(grf, log, grf_file.name)
    log.raise_if_any()
    geo = build_geography(grf.table, cfg)
    return {g: [str(r) for r in regions] for g, regions in geo.regions.items()}


def check_output(params_dir: str | Path, out_dir: str | Path, data_dir: str | Path | None = None) -> CheckSummary:
    """Check OUT_DIR against PARAMS_DIR (module doc); raises OutputInvalid listing the
    first problems (file, line, column, value, expected), InputError if PARAMS_DIR or
    DATA_DIR themselves are invalid."""
    from engine.inputs.specs import load_specs
    from engine.tabulation.flatmap import IterationCatalog

    out = Path(out_dir)
    if out.is_symlink() or not out.is_dir():
        raise OutputInvalid([Problem(str(out), None, None, None, "an output folder (not a link)")])
    ch = _Checker(Path(params_dir), out, Path(data_dir) if data_dir is not None else None)
    ch.marker()
    man = ch.manifest()
    cfg = ch.config(man)
    specs = load_specs(params_dir)  # InputError if the spec files are invalid
    if cfg is None:
        raise OutputInvalid(ch.log.problems, ch.log.total)
    catalog = IterationCatalog(specs)
    tab_levels = {(lvl.geo, lvl.iteration_level) for lvl in cfg.tabulated_levels()}
    regions = _regions_from_grf(Path(params_dir), Path(data_dir), cfg) if data_dir is not None else None
    levels: dict[str, _Level] = {}
    tabulated: dict[str, dict[str, int]] = {}
    for geo in GEO_LEVELS:
        its = {it_level: catalog.iterations(geo, it_level) for it_level in (1, 2) if (geo, it_level) in tab_levels}
        if not its:
            continue
        if regions is not None and geo not in regions:
            continue  # no region of this level in the states of the run
        codes = [it.code for lst in its.values() for it in lst]
        tabulated[geo] = {it.code: lvl for lvl, lst in its.items() for it in lst}
        detailed = np.array([it.detailed_only for lst in its.values() for it in lst], bool)
        levels[geo] = _Level(geo, codes, detailed, regions.get(geo) if regions is not None else None)
    ch.tables(cfg, levels, tabulated)
    ch.universe(man, levels, tabulated, tab_levels)
    ch.rows_vs_manifest(man)
    op = operator_path(out)
    if op.is_file() and man is not None:
        try:
            link = _read_json(op).get("manifest_sha256")
        except (OSError, ValueError, AttributeError, RecursionError):
            link = None
        try:
            actual = sha256_of(out / MANIFEST)
        except OSError:
            actual = None
        ch.summary.notes.append(
            f"operator file {op.name}: " + ("belongs to this release" if link == actual else
                                            "does NOT belong to this release (its manifest checksum differs)"))
    if ch.log:
        raise OutputInvalid(ch.log.problems, ch.log.total)
    return ch.summary


def format_summary(s: CheckSummary) -> str:
    kind = "a release" if s.for_release else "NOT FOR RELEASE (seeded or ground truth)"
    text = (f"OK: {s.out_dir} is complete and well formed, {kind}: {s.files_verified} files match {MARKER}; "
            f"{s.rows.get('t1', 0):,} T1 rows, {s.rows.get('t2', 0):,} T2 rows, {s.rows.get('suppressed', 0):,} "
            f"suppressed; all {s.groups:,} population groups of {s.levels} levels present once.")
    return "\n".join([text] + s.notes)

