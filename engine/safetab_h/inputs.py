"""SafeTab-H inputs: config.json, the four spec files, GRF-C, household-records and
SafeTab-P's published T1 (pop-group-totals), each checked with production's rules.

Reused from SafeTab-P's input layer: the spec files (`engine.inputs.specs`), GRF-C and
its regions (`engine.inputs.geography`), the readers (text or Parquet, line numbers,
`engine.inputs.readers`) and the per-distinct-value column checks of the person
records (`engine.inputs.validate`), so the race and ethnicity codes are checked with
the same rules and messages. Production's rules (``safetab_utils/input_validation.py``,
``resources/config/input/household-records.json`` and ``pop-group-totals.json``):

* household-records: TABBLKST|TABBLKCOU|TABTRACTCE|TABBLK|HHRACE|QRACE1..QRACE8|QSPAN|
  HOUSEHOLD_TYPE|TEN; a block of GRF-C, HHRACE 01..63 (checked, never used), the race
  and ethnicity codes as SafeTab-P's person records (the householder's), HOUSEHOLD_TYPE
  1..5, TEN 1..4; not empty in the runs' states ("No units data");
* pop-group-totals (SafeTab-P's T1 layout): REGION_ID|REGION_TYPE|ITERATION_CODE|COUNT,
  REGION_TYPE one of the 10 geography levels, REGION_ID of its level's width, a
  4-digit ITERATION_CODE, an integer COUNT, no group twice ("appeared more than
  once"), at least one group per run that is on ("No T1 pop groups data"). As
  production's reader, rows outside the runs' states are dropped first (USA kept,
  AIANNH areas kept when GRF-C has them in those states).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from calculators.config import expected_folder
from calculators.levels import GEO_LEVELS, GEO_LEVELS_PR, PR_STATE_CODE
from calculators.safetab_h import SafeTabHConfig
from engine.errors import ProblemLog
from engine.inputs import _arrow
from engine.inputs.geography import Geography
from engine.inputs.readers import (
    GRF_STEM, RACE_COLUMNS, Batch, DataFile, check_header, find_data_file, read_all,
)
from engine.inputs.specs import Specs, load_specs
# The person records' column checks, shared so that both programs say the same thing
# about the same race and ethnicity codes (private to engine.inputs, reused on purpose).
from engine.inputs.validate import (  # noqa: PLC2701
    EncodedPersons, Inputs, _add_rows, _block_index, _Column, _Joined, _read_config, _read_geography, check_codes,
)

HOUSEHOLDS_STEM = "household-records"
T1_STEM = "pop-group-totals"
HOUSEHOLD_COLUMNS = ["TABBLKST", "TABBLKCOU", "TABTRACTCE", "TABBLK", "HHRACE", *RACE_COLUMNS, "QSPAN",
                     "HOUSEHOLD_TYPE", "TEN"]
T1_COLUMNS = ["REGION_ID", "REGION_TYPE", "ITERATION_CODE", "COUNT"]
#: A household's count-table cell: (HOUSEHOLD_TYPE - 1) * 4 + (TEN - 1), 20 cells.
N_TYPES, N_TENURES = 5, 4
#: REGION_ID width of each REGION_TYPE (USA is "1").
REGION_WIDTH = {"USA": 1, "STATE": 2, "COUNTY": 5, "TRACT": 11, "PLACE": 7, "AIANNH": 4,
                "PR-STATE": 2, "PR-COUNTY": 5, "PR-TRACT": 11, "PR-PLACE": 7}
_HHRACE = [f"{i:02d}" for i in range(1, 64)]


@dataclass
class T1:
    """SafeTab-P's published T1 rows of the runs, checked: an Arrow table with string
    columns REGION_ID, REGION_TYPE, ITERATION_CODE and an int64 COUNT (file order)."""

    table: pa.Table
    source: str  # what was read, for the manifest
    #: Rows outside the runs' states, dropped as production's reader drops them.
    dropped: int = 0

    @property
    def rows(self) -> int:
        return self.table.num_rows

    @property
    def count(self) -> np.ndarray:
        return _arrow.numpy(self.table["COUNT"])


@dataclass
class HInputs:
    """Everything SafeTab-H reads, checked: config, spec files, geography, the
    household file (read later, batch by batch) and the T1."""

    params_dir: Path
    data_dir: Path
    config: SafeTabHConfig
    specs: Specs
    geography: Geography
    households_file: DataFile
    grf_file: DataFile
    t1: T1
    code_names: list[str]
    #: False when the caller supplied the configuration (not PARAMS_DIR/config.json).
    config_from_file: bool = True

    def counting_inputs(self) -> Inputs:
        """The SafeTab-P `Inputs` the counting pass reads (`engine.tabulation.aggregate`):
        the households stand where the persons do; the counting reads only the spec
        files, the geography, the code names and this file."""
        return Inputs(self.params_dir, self.data_dir, self.config, self.specs, self.geography,  # type: ignore[arg-type]
                      self.households_file, self.grf_file, self.code_names)


def t1_files(t1: str | Path | None, data_dir: Path, log: ProblemLog) -> list[DataFile]:
    """The T1 to read: DATA_DIR/pop-group-totals.{txt,parquet} by default; with --t1 a
    file (pop-group-totals.txt or .parquet), a folder holding one, or a release of this
    engine (its t1/ part files; also the t1/ folder itself)."""
    if t1 is None:
        found = find_data_file(data_dir, T1_STEM, log)
        return [found] if found is not None else []
    path = Path(t1)
    if path.is_file():
        return [DataFile(path, "parquet" if path.suffix == ".parquet" else "txt")]
    if path.is_dir():
        folder = path / "t1" if (path / "t1").is_dir() else path
        parts = sorted(p for p in folder.glob("*.csv") if p.name != "headers.csv" and p.is_file())
        if parts:
            return [DataFile(p, "txt") for p in parts]
        found = find_data_file(path, T1_STEM, ProblemLog())
        if found is not None:
            return [found]
    log.add("--t1", None, None, str(t1), "a pop-group-totals.txt (or .parquet) file, a folder with one, or a "
                                         "release of `python -m engine run` (its t1/ part files)")
    return []


def load_inputs(params_dir: str | Path, data_dir: str | Path, t1: str | Path | None = None,
                config: SafeTabHConfig | None = None) -> HInputs:
    """Read and check config, spec files, GRF-C, the T1 and the household file's header
    (its rows are checked as they are counted). Raises InputError with every problem."""
    params_dir, data_dir = Path(params_dir), Path(data_dir)
    log = ProblemLog()
    for d, name, what in ((params_dir, "PARAMS_DIR", "the folder with config.json and the 4 spec files"),
                          (data_dir, "DATA_DIR", "the folder with household-records, GRF-C (and pop-group-totals)")):
        if not d.is_dir():
            log.add(name, None, None, None, expected_folder(d, what))
    log.raise_if_any()
    from_file = config is None
    config = _read_config(SafeTabHConfig, params_dir, config, log,
                          "the files of DATA_DIR (.txt or .parquet); production's CEF reader is not part of it")
    specs = load_specs(params_dir, log)
    grf_file = find_data_file(data_dir, GRF_STEM, log)
    hh_file = find_data_file(data_dir, HOUSEHOLDS_STEM, log)
    sources = t1_files(t1, data_dir, log)
    geography = _read_geography(grf_file, config, log)
    if hh_file is not None:
        check_header(hh_file, HOUSEHOLD_COLUMNS, log)
    table = read_t1(sources, config, geography, log) if sources and geography is not None else None
    log.raise_if_any()
    return HInputs(params_dir, data_dir, config, specs, geography, hh_file, grf_file, table, list(specs.codes),
                   from_file)


def _run_states(config: SafeTabHConfig) -> list[str]:
    return (list(config.state_filter_us) if config.run_us else []) + ([PR_STATE_CODE] if config.run_pr else [])


def read_t1(sources: list[DataFile], config: SafeTabHConfig, geography: Geography, log: ProblemLog) -> T1 | None:
    """Read and check SafeTab-P's T1 (every part file of a release), production's rules.

    As production's reader, only the rows of the runs' states are kept: USA, regions
    whose REGION_ID starts with a state of the runs, and AIANNH areas of GRF-C's blocks
    in those states; the others are dropped before the checks (`T1.dropped`)."""
    tables, firsts = [], []
    dropped = 0
    aiannh = geography.regions.get("AIANNH", np.zeros(0, str))
    for df in sources:
        batch = read_all(df, T1_COLUMNS, log)
        if batch is None:
            return None
        keep = _t1_rows_of_runs(batch.table, config, aiannh)
        dropped += int((~keep).sum())
        lines = batch.lines()
        _check_t1_batch(df.name, batch, keep, lines, log)
        tables.append(batch.table.filter(_arrow.mask(keep)))
        firsts.append((df.name, None if lines is None else lines[keep]))
    if log:
        return None
    t = pa.concat_tables(tables).combine_chunks()
    # no group twice (production: "appeared more than once in pop-group-counts")
    keys = ["REGION_TYPE", "REGION_ID", "ITERATION_CODE"]
    dup = t.select(keys).group_by(keys).aggregate([([], "count_all")])
    dup = dup.filter(pc.greater(dup["count_all"], 1))
    if dup.num_rows:
        where = _row_places(firsts)
        first_dup = dup.slice(0, 20).to_pylist()
        for d in first_dup:
            hit = pc.and_(pc.and_(pc.equal(t["REGION_TYPE"], d["REGION_TYPE"]), pc.equal(t["REGION_ID"], d["REGION_ID"])),
                          pc.equal(t["ITERATION_CODE"], d["ITERATION_CODE"]))
            rows = np.flatnonzero(_arrow.numpy(hit))
            name, line = where(int(rows[1]))
            log.add(name, line, "REGION_TYPE|REGION_ID|ITERATION_CODE",
                    f"{d['REGION_TYPE']}|{d['REGION_ID']}|{d['ITERATION_CODE']}",
                    f"each population group once; (REGION_TYPE={d['REGION_TYPE']}, REGION_ID={d['REGION_ID']}, "
                    f"ITERATION_CODE={d['ITERATION_CODE']}) appeared more than once ({d['count_all']} rows)")
        log.count(max(0, dup.num_rows - 20))
        return None
    types = set(t["REGION_TYPE"].unique().to_pylist())
    for on, name, geos in ((config.run_us, "US", [g for g in GEO_LEVELS if g not in GEO_LEVELS_PR]),
                           (config.run_pr, "PR", list(GEO_LEVELS_PR))):
        if on and not types & set(geos):
            log.add(sources[0].name, None, "REGION_TYPE", None,
                    f"T1 population groups of the {name} run (REGION_TYPE {', '.join(geos)}); the T1 has none: is it "
                    f"the T1 of the other run? (production: \"No T1 pop groups data for the {name} run\")")
    if log:
        return None
    t = t.set_column(t.schema.get_field_index("COUNT"), "COUNT", pc.cast(t["COUNT"], pa.int64()))
    return T1(t, ", ".join(df.name for df in sources) if len(sources) <= 3 else f"{len(sources)} part files of t1/",
              dropped)


def _row_places(parts: list[tuple[str, np.ndarray | None]]):
    """Row number over all kept rows -> (file, line)."""
    starts = np.cumsum([0] + [0 if lines is None else len(lines) for _n, lines in parts])

    def where(i: int) -> tuple[str, int | None]:
        p = int(np.searchsorted(starts, i, side="right")) - 1
        name, lines = parts[p]
        return name, None if lines is None else int(lines[i - int(starts[p])]) or None
    return where


def _t1_rows_of_runs(t: pa.Table, config: SafeTabHConfig, aiannh: np.ndarray) -> np.ndarray:
    """Production's reader filter: USA rows, rows whose REGION_ID starts with a state of
    the runs (AIANNH aside), AIANNH rows of an area in the runs' blocks."""
    rtype, rid = t["REGION_TYPE"], t["REGION_ID"]
    is_usa = _arrow.numpy(pc.equal(rtype, _arrow.string("USA")))
    is_aian = _arrow.numpy(pc.equal(rtype, _arrow.string("AIANNH")))
    prefix = _arrow.numpy(pc.is_in(pc.utf8_slice_codeunits(rid, 0, 2), value_set=_arrow.strings(_run_states(config))))
    aian_ok = _arrow.numpy(pc.is_in(rid, value_set=_arrow.strings([str(a) for a in aiannh])))
    return is_usa | (~is_aian & prefix) | (is_aian & aian_ok)


def _check_t1_batch(name: str, full: Batch, keep: np.ndarray, lines: np.ndarray | None, log: ProblemLog) -> None:
    batch = Batch(full.table.filter(_arrow.mask(keep)), None, None if full.reported is None else full.reported[keep])
    if lines is not None:
        kept_lines = lines[keep]
        batch.line = lambda i: int(kept_lines[i]) or None  # type: ignore[method-assign]
        batch.first_line = 0
    t = batch.table
    rtype = _Column(t["REGION_TYPE"])
    known = np.isin(rtype.values.to_numpy(zero_copy_only=False), list(GEO_LEVELS))
    _add_rows(log, name, batch, "REGION_TYPE", rtype, rtype.rows(~known),
              f"a geography level: {', '.join(GEO_LEVELS)}")
    width = np.array([REGION_WIDTH.get(v, 0) for v in rtype.values.to_pylist()] + [0], np.int64)
    rid = t["REGION_ID"]
    lengths = _arrow.numpy(pc.utf8_length(rid))
    digits = _arrow.numpy(pc.match_substring_regex(rid, r"^[0-9]+$"))
    row_width = width[rtype.idx]
    bad_id = rtype.rows(known) & (~digits | (lengths != row_width))
    bad_id &= ~((row_width == 1) & (_arrow.numpy(pc.equal(rid, _arrow.string("1")))))
    _add_rows(log, name, batch, "REGION_ID", rid.combine_chunks() if hasattr(rid, "combine_chunks") else rid, bad_id,
              lambda v: "the id of its REGION_TYPE: 1 for USA, 2 digits for a state, 5 for a county, 11 for a tract, "
                        "7 for a place, 4 for an AIANNH area")
    code = t["ITERATION_CODE"]
    bad_code = ~_arrow.numpy(pc.match_substring_regex(code, r"^[0-9]{4}$"))
    _add_rows(log, name, batch, "ITERATION_CODE", code.combine_chunks(), bad_code, "an iteration code of 4 digits")
    cnt = t["COUNT"]
    bad_count = ~_arrow.numpy(pc.match_substring_regex(cnt, r"^-?[0-9]{1,18}$"))
    _add_rows(log, name, batch, "COUNT", cnt.combine_chunks(), bad_count, "a whole number (e.g. 12 or -3)")


def check_household_batch(batch: Batch, inputs: HInputs, log: ProblemLog) -> EncodedPersons:
    """Check one batch of households (problems to `log`) and encode its good rows as
    the counting pass wants them: block, the householder's race codes and ethnicity,
    and the cell (HOUSEHOLD_TYPE - 1) * 4 + (TEN - 1)."""
    t = batch.table
    file = inputs.households_file.name
    n = t.num_rows
    ok = np.ones(n, dtype=bool) if batch.reported is None else ~batch.reported
    # As production's reader: only the households of the runs' states are read (and checked).
    st = _Column(t["TABBLKST"])
    inrun = st.rows(np.isin(st.values.to_numpy(zero_copy_only=False), _run_states(inputs.config)))
    ok &= inrun

    def check(col: str, bad: np.ndarray, expected, values) -> None:
        nonlocal ok
        bad = bad & inrun
        _add_rows(log, file, batch, col, values, bad, expected)
        ok &= ~bad

    block_cols = [_Column(t[c]) for c in ("TABBLKST", "TABBLKCOU", "TABTRACTCE", "TABBLK")]
    block, missing = _block_index(block_cols, inputs.geography)
    check("TABBLKST|TABBLKCOU|TABTRACTCE|TABBLK", missing, "a block listed in GRF-C", _Joined(block_cols))
    hhrace = _Column(t["HHRACE"])
    check("HHRACE", hhrace.rows(~np.isin(hhrace.values.to_numpy(zero_copy_only=False), _HHRACE)),
          "two digits from 01 to 63", hhrace)
    race, truncated, eth = check_codes(t, _arrow.strings(inputs.code_names), inputs.config.max_race_codes, check)
    cell = np.zeros(n, np.int64)
    for col_name, count, stride, what in (("HOUSEHOLD_TYPE", N_TYPES, N_TENURES,
                                           "1 to 5 (1 married couple, 2 male householder, 3 female householder, "
                                           "both without spouse or partner, 4 living alone, 5 not living alone)"),
                                          ("TEN", N_TENURES, 1, "1 to 4 (1 owned with a mortgage or loan, 2 owned "
                                                                "free and clear, 3 rented, 4 occupied without rent)")):
        col = _Column(t[col_name])
        v = col.values.to_numpy(zero_copy_only=False)
        lut = np.full(len(v), -1, np.int64)
        for k in range(1, count + 1):
            lut[v == str(k)] = k - 1
        val = col.rows(lut)
        check(col_name, val < 0, what, col)
        cell += np.maximum(val, 0) * stride
    return EncodedPersons(block=block[ok], race=race[ok], eth=eth[ok].astype(np.int32),
                          cell=cell[ok].astype(np.int8), truncated=truncated[ok])
