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
    find_data_file, read_all,
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
    specs = load_specs(params_dir, log)
    grf_file = find_data_file(data_dir, GRF_STEM, log)
    persons_file = find_data_file(data_dir, PERSONS_STEM, log)
    geography = None
    if grf_file is not None:
        grf = read_all(grf_file, GRF_COLUMNS, log)
        if grf is not None:
            ok = check_grf(grf, log, grf_file.name)
            if config is not None and ok.all():
                geography = build_geography(grf.table, config)
    if persons_file is not None:
        # Header problems are found now so that `validate` reports them with the rest.
        from engine.inputs.readers import check_header

        check_header(persons_file, PERSON_COLUMNS, log)
    if log:
        if own:
            log.raise_if_any()
        return None  # type: ignore[return-value]
    return Inputs(params_dir, data_dir, config, specs, geography, persons_file, grf_file,
                  code_names=list(specs.codes), config_from_file=config_from_file)


def _add_rows(log: ProblemLog, file: str, batch: Batch, col: str, values: pa.Array | np.ndarray, bad: np.ndarray,
              expected: str | Callable[[object], str]) -> None:
    idx = np.flatnonzero(bad)
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


def check_person_batch(batch: Batch, inputs: Inputs, log: ProblemLog) -> EncodedPersons:
    """Check one batch of person rows (problems to `log`) and encode its good rows."""
    t = batch.table
    file = inputs.persons_file.name
    n = t.num_rows
    ok = np.ones(n, dtype=bool)

    age = t["QAGE"]
    age_fmt = pc.and_(pc.equal(pc.utf8_length(age), 3), pc.utf8_is_digit(age)).to_numpy(zero_copy_only=False)
    age_val = np.full(n, -1, dtype=np.int64)
    if age_fmt.any():
        age_val[age_fmt] = pc.cast(age.filter(pa.array(age_fmt)), pa.int64()).to_numpy()
    bad = ~age_fmt | (age_val > MAX_AGE)
    _add_rows(log, file, batch, "QAGE", age, bad, f"an age of 3 digits from 000 to {MAX_AGE:03d}")
    ok &= ~bad

    sex = t["QSEX"]
    is_m = pc.equal(sex, "1").to_numpy(zero_copy_only=False)
    is_f = pc.equal(sex, "2").to_numpy(zero_copy_only=False)
    bad = ~(is_m | is_f)
    _add_rows(log, file, batch, "QSEX", sex, bad, "1 (male) or 2 (female)")
    ok &= ~bad

    keys = pc.binary_join_element_wise(t["TABBLKST"], t["TABBLKCOU"], t["TABTRACTCE"], t["TABBLK"], "|")
    flat = pc.binary_join_element_wise(t["TABBLKST"], t["TABBLKCOU"], t["TABTRACTCE"], t["TABBLK"], "")
    block = pc.index_in(flat, value_set=inputs.geography.block_keys)
    block_np = block.to_numpy(zero_copy_only=False)
    block_missing = np.isnan(block_np) if block_np.dtype.kind == "f" else np.zeros(n, bool)
    _add_rows(log, file, batch, "TABBLKST|TABBLKCOU|TABTRACTCE|TABBLK", keys, block_missing,
              "a block listed in GRF-C")
    ok &= ~block_missing

    codes = inputs.codes_array
    race = np.full((n, 8), -1, dtype=np.int32)
    ended = np.zeros(n, dtype=bool)  # a Null was seen: later columns are ignored
    for j, col in enumerate(RACE_COLUMNS):
        vals = t[col]
        is_null = pc.equal(vals, _NULL).to_numpy(zero_copy_only=False)
        idx = pc.index_in(vals, value_set=codes).to_numpy(zero_copy_only=False)
        known = ~np.isnan(idx) if idx.dtype.kind == "f" else np.ones(n, bool)
        if j == 0:
            bad = is_null
            _add_rows(log, file, batch, col, vals, bad, "a race code (QRACE1 must not be Null)")
            ok &= ~bad
        bad = ~ended & ~is_null & ~known
        _add_rows(log, file, batch, col, vals, bad, "a code listed in race-and-ethnicity-codes.txt or the word Null")
        ok &= ~bad
        take = ~ended & ~is_null & known
        race[take, j] = np.nan_to_num(idx[take]).astype(np.int32)
        ended |= is_null

    # Distinct codes, ascending, padded with -1 (a repeated code counts once). Most
    # persons have one code: only rows with two or more need sorting.
    multi = race[:, 1] >= 0
    if multi.any():
        big = np.iinfo(np.int32).max
        r = np.where(race[multi] < 0, big, race[multi])
        r.sort(axis=1)
        dup = np.zeros_like(r, dtype=bool)
        dup[:, 1:] = r[:, 1:] == r[:, :-1]
        r[dup] = big
        r.sort(axis=1)
        race[multi] = np.where(r == big, -1, r)
    n_codes = (race >= 0).sum(axis=1)
    limit = inputs.config.max_race_codes
    bad = ok & (n_codes > limit)
    _add_rows(log, file, batch, "QRACE1..QRACE8", n_codes, bad,
              lambda v: f"at most max_race_codes = {limit} distinct race codes (config.json)")
    ok &= ~bad

    eth_vals = t["QSPAN"]
    eth = pc.index_in(eth_vals, value_set=codes).to_numpy(zero_copy_only=False)
    eth_missing = np.isnan(eth) if eth.dtype.kind == "f" else np.zeros(n, bool)
    _add_rows(log, file, batch, "QSPAN", eth_vals, eth_missing, "an ethnicity code listed in race-and-ethnicity-codes.txt")
    ok &= ~eth_missing

    cell = is_f.astype(np.int64) * 23 + AGE23_BIN[np.clip(age_val, 0, MAX_AGE)]
    return EncodedPersons(
        block=np.nan_to_num(block_np[ok]).astype(np.int64),
        race=race[ok],
        eth=np.nan_to_num(eth[ok]).astype(np.int32),
        cell=cell[ok].astype(np.int8),
    )

