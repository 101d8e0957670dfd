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

from calculators.config import ConfigError, SafeTabConfig
from calculators.levels import AGE23_EDGES, MAX_AGE
from engine.errors import ProblemLog
from engine.inputs.geography import Geography, build_geography, check_grf
from engine.inputs.readers import (
    GRF_COLUMNS, GRF_STEM, PERSON_COLUMNS, PERSONS_STEM, RACE_COLUMNS, Batch, DataFile,
    check_header, find_data_file, read_all,
)
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
        return pa.array(self.code_names, pa.string())


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
    for d, what in ((params_dir, "PARAMS_DIR"), (data_dir, "DATA_DIR")):
        if not d.is_dir():
            log.add(str(d), None, None, None, f"{what} to be an existing directory")
    if log:
        if own:
            log.raise_if_any()
        return None  # type: ignore[return-value]

    config_from_file = config is None
    if config is None:
        try:
            config = SafeTabConfig.read(params_dir / CONFIG_FILE)
        except ConfigError as exc:
            for p in exc.problems:
                log.add(CONFIG_FILE, None, None, None, p)
    if config is not None and config.reader != "csv":
        log.add(CONFIG_FILE, None, "reader", config.reader,
                '"csv": this engine reads the person-records and GRF-C files of DATA_DIR (.txt or .parquet); '
                "production's Census Edited File reader (\"cef\") is not part of it, and running anyway would "
                "read other data than the configuration names")
    specs = load_specs(params_dir, log)
    grf_file = find_data_file(data_dir, GRF_STEM, log)
    persons_file = find_data_file(data_dir, PERSONS_STEM, log)
    geography = None
    if grf_file is not None:
        # The real GRF-C has many more columns; they are ignored (as in production).
        grf = read_all(grf_file, GRF_COLUMNS, log, extra_ok=True)
        if grf is not None:
            ok = check_grf(grf, log, grf_file.name)
            if config is not None and ok.all() and not log:
                geography = build_geography(grf.table, config)
                if not geography.regions:  # production refuses a GRF-C empty after its state filter
                    log.add(grf_file.name, None, None, None,
                            "at least one block in the states of the runs (state_filter_us with run_us, 72 with "
                            f"run_pr); none of the {grf.table.num_rows:,} blocks is there")
    if persons_file is not None:
        # Header problems are found now so that `validate` reports them with the rest.
        check_header(persons_file, PERSON_COLUMNS, log)
    if log:
        if own:
            log.raise_if_any()
        return None  # type: ignore[return-value]
    return Inputs(params_dir, data_dir, config, specs, geography, persons_file, grf_file,
                  code_names=list(specs.codes), config_from_file=config_from_file)


def _add_rows(log: ProblemLog, file: str, batch: Batch, col: str, values: pa.Array | np.ndarray, bad: np.ndarray,
              expected: str | Callable[[object], str]) -> None:
    idx = np.flatnonzero(batch.unreported(bad))
    if not len(idx):
        return
    room = max(0, log.keep - len(log.problems))
    shown = idx[:room]
    if len(shown):
        if isinstance(values, (pa.Array, pa.ChunkedArray)):
            vals = values.take(pa.array(shown)).to_pylist()
        else:
            vals = [values[i].item() if hasattr(values[i], "item") else values[i] for i in shown]
        for i, v in zip(shown, vals):
            log.add(file, batch.line(i), col, v, expected(v) if callable(expected) else expected)
    log.count(len(idx) - len(shown))


def _ascii_digits(values: pa.ChunkedArray | pa.Array, min_len: int, max_len: int) -> np.ndarray:
    """Rows of min_len..max_len ASCII digits (`utf8_is_digit` alone also takes other
    scripts' digits, e.g. Arabic-Indic ones, which int64 parsing then refuses)."""
    n = pc.utf8_length(values)
    ok = pc.and_(pc.and_(pc.string_is_ascii(values), pc.utf8_is_digit(values)),
                 pc.and_(pc.greater_equal(n, min_len), pc.less_equal(n, max_len)))
    return ok.to_numpy(zero_copy_only=False)


def check_person_batch(batch: Batch, inputs: Inputs, log: ProblemLog) -> EncodedPersons:
    """Check one batch of person rows (problems to `log`) and encode its good rows.

    The rules of SPEC §4 and production's person-records.json schema: QAGE an integer
    0..115 (ASCII digits; production reads it as an integer, so 5 and 005 are both
    accepted), QSEX 1/2, HOUSEHOLDER True/False and CENRACE two digits (checked though
    unused), a block listed in GRF-C, QRACE1 a code, QRACE2..8 a code or Null with no
    code after a Null (production: "race codes after a 'Null'"), QSPAN a code. Every
    QRACE column is checked, but only QRACE1..QRACE{max_race_codes} are read (as
    production's flat map does): `EncodedPersons.truncated` marks persons who lose a
    distinct race code that way.
    """
    t = batch.table
    file = inputs.persons_file.name
    n = t.num_rows
    ok = np.ones(n, dtype=bool) if batch.reported is None else ~batch.reported

    def check(col: str, bad: np.ndarray, expected, values=None) -> None:
        nonlocal ok
        _add_rows(log, file, batch, col, t[col] if values is None else values, bad, expected)
        ok &= ~bad

    age = t["QAGE"]
    age_fmt = _ascii_digits(age, 1, 18)  # leading zeros allowed; 18 digits still fit int64
    age_val = np.full(n, -1, dtype=np.int64)
    if age_fmt.any():
        age_val[age_fmt] = pc.cast(age.filter(pa.array(age_fmt)), pa.int64()).to_numpy()
    check("QAGE", ~age_fmt | (age_val > MAX_AGE), f"an age in whole years from 000 to {MAX_AGE:03d} (ASCII digits)")

    sex = t["QSEX"]
    is_m = pc.equal(sex, "1").to_numpy(zero_copy_only=False)
    is_f = pc.equal(sex, "2").to_numpy(zero_copy_only=False)
    check("QSEX", ~(is_m | is_f), "1 (male) or 2 (female)")
    householder = pc.is_in(t["HOUSEHOLDER"], value_set=pa.array(["True", "False"])).to_numpy(zero_copy_only=False)
    check("HOUSEHOLDER", ~householder, "True or False")
    check("CENRACE", ~_ascii_digits(t["CENRACE"], 2, 2), "two digits (e.g. 01)")

    keys = pc.binary_join_element_wise(t["TABBLKST"], t["TABBLKCOU"], t["TABTRACTCE"], t["TABBLK"], "|")
    flat = pc.binary_join_element_wise(t["TABBLKST"], t["TABBLKCOU"], t["TABTRACTCE"], t["TABBLK"], "")
    block = pc.index_in(flat, value_set=inputs.geography.block_keys)
    block_np = block.to_numpy(zero_copy_only=False)
    block_missing = np.isnan(block_np) if block_np.dtype.kind == "f" else np.zeros(n, bool)
    check("TABBLKST|TABBLKCOU|TABTRACTCE|TABBLK", block_missing, "a block listed in GRF-C", keys)

    codes = inputs.codes_array
    limit = inputs.config.max_race_codes
    race_all = np.full((n, 8), -1, dtype=np.int32)
    null_seen = np.zeros(n, dtype=bool)
    after_null = np.zeros(n, dtype=bool)
    for j, col in enumerate(RACE_COLUMNS):
        vals = t[col]
        is_null = pc.equal(vals, _NULL).to_numpy(zero_copy_only=False)
        idx = pc.index_in(vals, value_set=codes).to_numpy(zero_copy_only=False)
        known = ~np.isnan(idx) if idx.dtype.kind == "f" else np.ones(n, bool)
        if j == 0:
            check(col, is_null, "a race code (QRACE1 must not be Null)")
        check(col, ~is_null & ~known, "a code listed in race-and-ethnicity-codes.txt or the word Null")
        late = null_seen & ~is_null & known & ~after_null
        check(col, late, "Null: a race code after a Null is an error (codes come first, as in production)")
        after_null |= late
        take = ~is_null & known
        race_all[take, j] = np.nan_to_num(idx[take]).astype(np.int32)
        if j > 0:  # a Null QRACE1 is its own error
            null_seen |= is_null

    # Only QRACE1..QRACE{r} are read (production's flat map); a person is truncated if
    # a later column holds a code that is not among the first r.
    race = np.where(np.arange(8) < limit, race_all, -1).astype(np.int32)
    truncated = np.zeros(n, dtype=bool)
    for j in range(limit, 8):
        later = race_all[:, j]
        truncated |= (later >= 0) & ~(race[:, :limit] == later[:, None]).any(axis=1)
    _distinct_ascending(race)

    eth_vals = t["QSPAN"]
    eth = pc.index_in(eth_vals, value_set=codes).to_numpy(zero_copy_only=False)
    eth_missing = np.isnan(eth) if eth.dtype.kind == "f" else np.zeros(n, bool)
    check("QSPAN", eth_missing, "an ethnicity code listed in race-and-ethnicity-codes.txt")

    cell = is_f.astype(np.int64) * 23 + AGE23_BIN[np.clip(age_val, 0, MAX_AGE)]
    return EncodedPersons(
        block=np.nan_to_num(block_np[ok]).astype(np.int64),
        race=race[ok],
        eth=np.nan_to_num(eth[ok]).astype(np.int32),
        cell=cell[ok].astype(np.int8),
        truncated=truncated[ok],
    )


def _distinct_ascending(race: np.ndarray) -> None:
    """In place: each row's distinct codes ascending, padded with -1 (a repeated code
    counts once). Most persons have one code: only rows with two or more are sorted."""
    multi = race[:, 1] >= 0
    if not multi.any():
        return
    big = np.iinfo(np.int32).max
    r = np.where(race[multi] < 0, big, race[multi])
    r.sort(axis=1)
    dup = np.zeros_like(r, dtype=bool)
    dup[:, 1:] = r[:, 1:] == r[:, :-1]
    r[dup] = big
    r.sort(axis=1)
    race[multi] = np.where(r == big, -1, r)
