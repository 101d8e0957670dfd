"""Validation of PARAMS_DIR and DATA_DIR, before any noise is drawn (SPEC section 4).

`load_inputs` reads and checks everything small (config, spec files, GRF-C) and
returns `Inputs`; `check_person_batch` checks and encodes one batch of persons and is
called by the aggregation pass, so persons are read once. `engine.run.validate` runs
both and raises `InputError` listing the problems (file, line, column, value, expected).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from calculators.config import ConfigError, SafeTabConfig, expected_folder
from calculators.levels import AGE23_EDGES, MAX_AGE
from engine.errors import ProblemLog
from engine.inputs.geography import Geography, ascii_digits, build_geography, check_grf
from engine.inputs.readers import (
    GRF_COLUMNS, GRF_STEM, PERSON_COLUMNS, PERSONS_STEM, RACE_COLUMNS, Batch, DataFile,
    as_dictionary, check_header, find_data_file, read_all,
)
from engine.inputs import _arrow, _rows
from engine.inputs.specs import Specs, load_specs

CONFIG_FILE = "config.json"
_NULL = "Null"
#: Age in whole years -> index of its age23 bin.
AGE23_BIN = np.searchsorted(np.array(AGE23_EDGES), np.arange(MAX_AGE + 1), side="right") - 1


@dataclass
class Inputs:
    """Everything public that a run needs, checked: config, spec files, geography."""

    params_dir: Path
    data_dir: Path
    config: SafeTabConfig
    specs: Specs
    geography: Geography
    persons_file: DataFile
    grf_file: DataFile
    code_names: list[str]  # index -> race/ethnicity code
    config_from_file: bool = True  # False when the caller supplied the configuration

    @property
    def codes_array(self) -> pa.Array:
        return _arrow.strings(self.code_names)


@dataclass
class EncodedPersons:
    """The good rows of a batch as integers (for aggregation)."""

    block: np.ndarray  # int64 index into GRF-C blocks
    race: np.ndarray  # int32 (n, 8): distinct code indices ascending, -1 padded
    eth: np.ndarray  # int32 code index
    cell: np.ndarray  # int8: sex (0 male, 1 female) * 23 + age23 bin
    truncated: np.ndarray  # bool: lost a distinct race code beyond QRACE{max_race_codes}

    def __len__(self) -> int:
        return len(self.block)


def load_inputs(params_dir: str | Path, data_dir: str | Path, log: ProblemLog | None = None,
                config: SafeTabConfig | None = None) -> Inputs:
    """Read and check config, spec files and GRF-C. Raises InputError unless `log` is given.

    `config` replaces PARAMS_DIR/config.json (the app runs its tuned configuration on
    the spec files and data of a folder).
    """
    params_dir, data_dir = Path(params_dir), Path(data_dir)
    own = log is None
    log = log if log is not None else ProblemLog()
    for d, name, what in ((params_dir, "PARAMS_DIR", "the folder with config.json and the 4 spec files"),
                          (data_dir, "DATA_DIR", "the folder with the person-records and GRF-C files")):
        if not d.is_dir():
            log.add(name, None, None, None, expected_folder(d, what))
    if log:
        if own:
            log.raise_if_any()
        return None  # type: ignore[return-value]

    config_from_file = config is None
    config = _read_config(SafeTabConfig, params_dir, config, log,
                          "the person-records and GRF-C files of DATA_DIR (.txt or .parquet); production's Census "
                          "Edited File reader (\"cef\") is not part of it, and running anyway would read other data "
                          "than the configuration names")
    specs = load_specs(params_dir, log)
    grf_file = find_data_file(data_dir, GRF_STEM, log)
    persons_file = find_data_file(data_dir, PERSONS_STEM, log)
    geography = _read_geography(grf_file, config, log)
    if persons_file is not None:
        # Header problems are found now so that `validate` reports them with the rest.
        check_header(persons_file, PERSON_COLUMNS, log)
    if log:
        if own:
            log.raise_if_any()
        return None  # type: ignore[return-value]
    return Inputs(params_dir, data_dir, config, specs, geography, persons_file, grf_file,
                  code_names=list(specs.codes), config_from_file=config_from_file)


def _read_config(model: type, params_dir: Path, config, log: ProblemLog, reads: str):
    """The run's configuration, checked: `config` if given, else PARAMS_DIR/config.json
    read by `model` (`SafeTabConfig`, or SafeTab-H's `SafeTabHConfig`), each problem
    logged under the file's name (None then). A ``reader`` other than "csv" is refused:
    this engine reads `reads` (each program names its own files in the message).
    Shared by `load_inputs` and `engine.safetab_h.inputs.load_inputs`."""
    if config is None:
        try:
            config = model.read(params_dir / CONFIG_FILE)
        except ConfigError as exc:
            for p in exc.problems:
                log.add(CONFIG_FILE, None, None, None, p)
    if config is not None and config.reader != "csv":
        log.add(CONFIG_FILE, None, "reader", config.reader, f'"csv": this engine reads {reads}')
    return config


def _read_geography(grf_file: DataFile | None, config, log: ProblemLog) -> Geography | None:
    """GRF-C checked (its other columns ignored, as in production) and its regions in the
    states of the runs of `config`; None if it has a problem (logged) or an earlier input
    had one. Production refuses a GRF-C left empty by its state filter. Shared by
    `load_inputs` and `engine.safetab_h.inputs.load_inputs`."""
    if grf_file is None:
        return None
    grf = read_all(grf_file, GRF_COLUMNS, log, extra_ok=True)
    if grf is None:
        return None
    ok = check_grf(grf, log, grf_file.name)
    if config is None or not ok.all() or log:
        return None
    geography = build_geography(grf.table, config)
    if not geography.regions:
        log.add(grf_file.name, None, None, None,
                "at least one block in the states of the runs (state_filter_us with run_us, 72 with "
                f"run_pr); none of the {grf.table.num_rows:,} blocks is there")
    return geography


class _Column:
    """One person column as its distinct values and, per row, the index of its value:
    checks run once per distinct value and reach the rows by indexing."""

    def __init__(self, col):
        arr = as_dictionary(col)
        values, idx = arr.dictionary, arr.indices
        if arr.null_count:  # only when a caller passes nulls; the readers report and replace them
            idx = pc.fill_null(idx, len(values))
            values = pa.concat_arrays([values, pa.array([""], values.type)])
        if not pa.types.is_string(values.type):
            values = values.cast(pa.string())
        self.values = values
        self.idx = _arrow.numpy(idx)

    def rows(self, per_value: np.ndarray) -> np.ndarray:
        """A per-value array spread over the rows."""
        return per_value[self.idx]

    def texts(self, rows: np.ndarray) -> list:
        return self.values.take(pa.array(self.idx[rows])).to_pylist()


class _Joined:
    """The text of several columns joined by '|', made only for the rows shown."""

    def __init__(self, cols: list[_Column]):
        self.cols = cols

    def texts(self, rows: np.ndarray) -> list:
        parts = [c.texts(rows) for c in self.cols]
        return ["|".join(p) for p in zip(*parts)]


def _add_rows(log: ProblemLog, file: str, batch: Batch, col: str, values, bad: np.ndarray,
              expected: str | Callable[[object], str]) -> None:
    idx = np.flatnonzero(batch.unreported(bad))
    if not len(idx):
        return
    room = max(0, log.keep - len(log.problems))
    shown = idx[:room]
    if len(shown):
        if isinstance(values, (_Column, _Joined)):
            vals = values.texts(shown)
        elif isinstance(values, (pa.Array, pa.ChunkedArray)):
            vals = values.take(pa.array(shown)).to_pylist()
        else:
            vals = [values[i].item() if hasattr(values[i], "item") else values[i] for i in shown]
        for i, v in zip(shown, vals):
            log.add(file, batch.line(i), col, v, expected(v) if callable(expected) else expected)
    log.count(len(idx) - len(shown))


def _block_index(cols: list[_Column], geography: Geography) -> tuple[np.ndarray, np.ndarray]:
    """(GRF-C block index of every row, missing) from the four block columns.

    Rows are numbered by their combination of the columns' value indices (a hash per
    row, no text); only the distinct combinations are joined and looked up in GRF-C.
    """
    code = cols[0].idx.astype(np.int64)
    span = len(cols[0].values)
    for c in cols[1:]:
        m = max(1, len(c.values))
        if span * m >= 1 << 62:  # keep the combined number inside int64
            code, uniq = _rows.factorize(code)
            span = max(1, len(uniq))
        code = code * m + c.idx
        span *= m
    inv, uniq = _rows.factorize(code)
    # factorize numbers values in order of first appearance: a value's first row is
    # where the running maximum of the numbers grows.
    first = np.flatnonzero(np.r_[True, inv[1:] > np.maximum.accumulate(inv)[:-1]]) if len(inv) else inv
    flat = pc.binary_join_element_wise(*[c.values.take(_arrow.ints(c.idx[first])) for c in cols], _arrow.string(""))
    idx, found = geography.block_index(flat)
    return idx[inv], ~found[inv]


def _person_tables(t: pa.Table, inputs: Inputs) -> dict:
    """Each person column as `_Column` and its per-value tables (the rules applied once
    per distinct value)."""
    cols = {c: _Column(t[c]) for c in PERSON_COLUMNS}
    age = cols["QAGE"].values
    v_fmt = ascii_digits(age, 1, 18)  # leading zeros allowed; 18 digits still fit int64
    v_age = np.full(len(age), -1, dtype=np.int64)
    if v_fmt.any():
        v_age[v_fmt] = _arrow.numpy(pc.cast(age.filter(_arrow.mask(v_fmt)), pa.int64()))
    sex = cols["QSEX"].values
    v_sex = np.where(_arrow.numpy(pc.equal(sex, _arrow.string("1"))), 0,
                     np.where(_arrow.numpy(pc.equal(sex, _arrow.string("2"))), 1, -1)).astype(np.int64)
    # the code index of every distinct value of the 8 QRACE columns and QSPAN, in one lookup
    names = RACE_COLUMNS + ["QSPAN"]
    values = pa.concat_arrays([cols[c].values for c in names])
    bounds = np.cumsum([0] + [len(cols[c].values) for c in names])
    all_idx, all_known = _arrow.index_in(values, inputs.codes_array)
    all_null = _arrow.numpy(pc.equal(values, _arrow.string(_NULL)))
    luts = []
    for j in range(len(RACE_COLUMNS)):
        sl = slice(bounds[j], bounds[j + 1])
        luts.append(np.where(all_null[sl], _rows.NULL, np.where(all_known[sl], all_idx[sl], _rows.UNKNOWN)))
    v_eth, v_eth_known = all_idx[bounds[-2]:], all_known[bounds[-2]:]
    return {
        "cols": cols, "v_fmt": v_fmt, "v_age": v_age, "v_sex": v_sex, "luts": luts,
        "hh_ok": _arrow.numpy(pc.is_in(cols["HOUSEHOLDER"].values, value_set=_arrow.strings(["True", "False"]))),
        "cen_ok": ascii_digits(cols["CENRACE"].values, 2, 2),
        "v_eth": np.where(v_eth_known, v_eth, -1).astype(np.int64), "v_eth_known": v_eth_known,
    }


def _encode_good_batch(batch: Batch, inputs: Inputs) -> EncodedPersons | None:
    """The encoded persons of a batch every row of which is good (`_rows.encode_rows`,
    one pass), or None if some row breaks a rule (the caller then names each problem)."""
    t = batch.table
    n = t.num_rows
    p = _person_tables(t, inputs)
    cols = p["cols"]
    block_cols = [cols[c] for c in ("TABBLKST", "TABBLKCOU", "TABTRACTCE", "TABBLK")]
    block, missing = _block_index(block_cols, inputs.geography)
    block = np.where(missing, -1, block)
    race = np.empty((n, 8), np.int32)
    truncated = np.empty(n, np.bool_)
    eth = np.empty(n, np.int32)
    cell = np.empty(n, np.int8)
    bad = _rows.encode_rows(
        cols["QAGE"].idx, p["v_age"], cols["QSEX"].idx, p["v_sex"], cols["HOUSEHOLDER"].idx, p["hh_ok"],
        cols["CENRACE"].idx, p["cen_ok"], block, *[cols[c].idx for c in RACE_COLUMNS], *p["luts"],
        inputs.config.max_race_codes, cols["QSPAN"].idx, p["v_eth"], AGE23_BIN, race, truncated, eth, cell)
    if bad:
        return None
    return EncodedPersons(block=block, race=race, eth=eth, cell=cell, truncated=truncated)


def check_codes(t: pa.Table, codes: pa.Array, limit: int, check: Callable) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The race and ethnicity columns of a batch (persons, or SafeTab-H's householders):
    QRACE1 a code, QRACE2..8 a code or Null with no code after a Null, QSPAN a code;
    each problem to `check(column, bad rows, expected, values)`. Returns the distinct
    codes among QRACE1..QRACE{limit} ascending (-1 padded), whether a later column held
    another code (truncated), and the ethnicity code index of every row."""
    n = t.num_rows
    cols, luts = [], []
    for name in RACE_COLUMNS:
        col = _Column(t[name])
        v_idx, v_known = _arrow.index_in(col.values, codes)
        v_null = pc.equal(col.values, _NULL).to_numpy(zero_copy_only=False)
        cols.append(col)
        luts.append(np.where(v_null, _rows.NULL, np.where(v_known, v_idx, _rows.UNKNOWN)).astype(np.int64))
    race = np.empty((n, 8), np.int32)
    truncated = np.empty(n, np.bool_)
    kind = np.empty((n, 8), np.int8)
    # Only QRACE1..QRACE{r} are read (production's flat map); a person is truncated if
    # a later column holds a code that is not among the first r.
    if _rows.race_rows(*[c.idx for c in cols], *luts, limit, race, truncated, kind):
        for j, (name, col) in enumerate(zip(RACE_COLUMNS, cols)):
            if j == 0:
                check(name, kind[:, j] == _rows.NULL_FIRST, "a race code (QRACE1 must not be Null)", col)
            check(name, kind[:, j] == _rows.NOT_A_CODE, "a code listed in race-and-ethnicity-codes.txt or the word Null",
                  col)
            check(name, kind[:, j] == _rows.AFTER_NULL,
                  "Null: a race code after a Null is an error (codes come first, as in production)", col)
    span = _Column(t["QSPAN"])
    v_eth, v_eth_known = _arrow.index_in(span.values, codes)
    check("QSPAN", ~span.rows(v_eth_known), "an ethnicity code listed in race-and-ethnicity-codes.txt", span)
    return race, truncated, span.rows(v_eth)


def check_person_batch(batch: Batch, inputs: Inputs, log: ProblemLog) -> EncodedPersons:
    """Check one batch of person rows (problems to `log`) and encode its good rows.

    The rules of SPEC §4 and production's person-records.json schema: QAGE an integer
    0..115 (ASCII digits; production reads it as an integer, so 5 and 005 are both
    accepted), QSEX 1/2, HOUSEHOLDER True/False and CENRACE two digits (checked though
    unused), a block listed in GRF-C, QRACE1 a code, QRACE2..8 a code or Null with no
    code after a Null (production: "race codes after a 'Null'"), QSPAN a code. Every
    QRACE column is checked, but only QRACE1..QRACE{max_race_codes} are read (as
    production's flat map does): `EncodedPersons.truncated` marks persons who lose a
    distinct race code that way. Each rule is checked once per distinct value of a
    column (`_Column`), then spread over the rows: in one pass (`_rows.encode_rows`) when
    every row is good, else column by column, naming every problem.
    """
    if batch.reported is None:
        fast = _encode_good_batch(batch, inputs)
        if fast is not None:
            return fast
    t = batch.table
    file = inputs.persons_file.name
    n = t.num_rows
    ok = np.ones(n, dtype=bool) if batch.reported is None else ~batch.reported

    def check(col: str, bad: np.ndarray, expected, values) -> None:
        nonlocal ok
        _add_rows(log, file, batch, col, values, bad, expected)
        ok &= ~bad

    age = _Column(t["QAGE"])
    v_fmt = ascii_digits(age.values, 1, 18)  # leading zeros allowed; 18 digits still fit int64
    v_age = np.full(len(age.values), -1, dtype=np.int64)
    if v_fmt.any():
        v_age[v_fmt] = pc.cast(age.values.filter(pa.array(v_fmt)), pa.int64()).to_numpy()
    age_val = age.rows(v_age)
    check("QAGE", age.rows(~v_fmt | (v_age > MAX_AGE)),
          f"an age in whole years from 000 to {MAX_AGE:03d} (ASCII digits)", age)

    sex = _Column(t["QSEX"])
    is_m = sex.rows(pc.equal(sex.values, "1").to_numpy(zero_copy_only=False))
    is_f = sex.rows(pc.equal(sex.values, "2").to_numpy(zero_copy_only=False))
    check("QSEX", ~(is_m | is_f), "1 (male) or 2 (female)", sex)
    hh = _Column(t["HOUSEHOLDER"])
    check("HOUSEHOLDER", hh.rows(~pc.is_in(hh.values, value_set=pa.array(["True", "False"])).to_numpy(
        zero_copy_only=False)), "True or False", hh)
    cenrace = _Column(t["CENRACE"])
    check("CENRACE", cenrace.rows(~ascii_digits(cenrace.values, 2, 2)), "two digits (e.g. 01)", cenrace)

    block_cols = [_Column(t[c]) for c in ("TABBLKST", "TABBLKCOU", "TABTRACTCE", "TABBLK")]
    block_np, block_missing = _block_index(block_cols, inputs.geography)
    check("TABBLKST|TABBLKCOU|TABTRACTCE|TABBLK", block_missing, "a block listed in GRF-C", _Joined(block_cols))

    race, truncated, eth = check_codes(t, inputs.codes_array, inputs.config.max_race_codes, check)

    cell = is_f.astype(np.int64) * 23 + AGE23_BIN[np.clip(age_val, 0, MAX_AGE)]
    return EncodedPersons(
        block=block_np[ok],
        race=race[ok],
        eth=eth[ok].astype(np.int32),
        cell=cell[ok].astype(np.int8),
        truncated=truncated[ok],
    )
