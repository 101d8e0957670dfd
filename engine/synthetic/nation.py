"""Synthetic nations: SafeTab-P input folders of any size for demos, tests and benchmarks.

`generate(out_dir, persons)` writes ``out_dir/params/`` (config.json and the four spec
files) and ``out_dir/data/`` (person-records and GRF-C, as pipe-delimited text or
Parquet) in the formats of SPEC section 4. Everything is synthetic and deterministic
for a given seed.

* Spec files: the project's own (`write_synthetic_specs`, shaped like the 2020 ones,
  h_r = h_e = 1 so S = 9 with max_race_codes 8), or copied unchanged from `spec_dir`
  (e.g. the real 2020 files), with race codes drawn among the codes of tabulated race
  iterations and ethnicity codes among the codes of ethnicity iterations.
* Geography (`engine.synthetic._geo`): grows with N like the real nation: about 4,000
  persons per tract, 100,000 per county, 10,000 per place, 5-20 blocks per tract, one
  AIANNH area per 500,000 persons (at least 3, some crossing a state line); states by
  their 2020 population shares (all 50 + DC + Puerto Rico from 1 million persons up;
  DC and Puerto Rico always). DC is one county (11001) and one place covering exactly
  its blocks; at least one county has a single tract.
* Persons (`engine.synthetic._persons`): realistic skew (Zipf-like code weights varying by
  state, county and AIANNH area), about 13% with two or more race codes, about 80% not
  Hispanic, a 2020-like age pyramid. Generated and written in chunks of
  `chunk_persons` persons: memory does not depend on N; the output does not depend on
  the chunk size.
* config.json (`sample_config`): the 2020 production budgets with thresholds scaled to
  the synthetic nation (`sample_thresholds`).
"""

from __future__ import annotations

import math
import numbers
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from calculators.config import SafeTabConfig
from calculators.levels import (
    POPULATION_GROUP_LEVELS,
    PR_STATE_CODE,
    STATE_OR_ABOVE,
    US_STATE_CODES,
)
from engine.synthetic._geo import TOTAL_2020, Geography, build_geography
from engine.synthetic._persons import PersonModel, Persons
from engine.synthetic._specs import code_model
from engine.synthetic._specs import write_synthetic_specs as _write_synthetic_specs

MIN_PERSONS = 1_000
MAX_PERSONS = 340_000_000
FORMATS = ("txt", "parquet")
#: Persons generated and written at a time (memory is about 400 bytes per person).
DEFAULT_CHUNK_PERSONS = 1 << 18
#: The 2020 Census resident population of the 50 states, DC and Puerto Rico.
POPULATION_2020 = TOTAL_2020

PERSON_COLUMNS = [
    "QAGE",
    "QSEX",
    "HOUSEHOLDER",
    "TABBLKST",
    "TABBLKCOU",
    "TABTRACTCE",
    "TABBLK",
    "CENRACE",
    "QRACE1",
    "QRACE2",
    "QRACE3",
    "QRACE4",
    "QRACE5",
    "QRACE6",
    "QRACE7",
    "QRACE8",
    "QSPAN",
]
GRF_COLUMNS = ["TABBLKST", "TABBLKCOU", "TABTRACTCE", "TABBLK", "PLACEFP", "AIANNHCE"]
SPEC_FILES = (
    "race-characteristic-iterations.txt",
    "ethnicity-characteristic-iterations.txt",
    "race-and-ethnicity-codes.txt",
    "race-and-ethnicity-code-to-iteration.txt",
)

# 2020 production plan (SPEC section 3).
PRODUCTION_THRESHOLDS = {
    1: (4971, 19971, 149971),
    2: {"state": (471, 971, 6971), "substate": (971, 4971, 19971)},
}


def write_synthetic_specs(params_dir: str | Path, seed: int = 0) -> None:
    """Write the project's four synthetic spec files into `params_dir`.

    Shaped like the 2020 files (SPEC section 4): major races at level 0 (Null flags),
    20 Regional and about 270 Detailed race groups with an "alone" and an "alone or in
    any combination" iteration each, about a quarter of the Detailed ones
    DETAILED_ONLY, one COARSE_ONLY "not specified" group per major race; ethnicity at
    levels 0 (Not Hispanic / Hispanic), 1 (5 groups) and 2 (22 groups, 3
    DETAILED_ONLY); about 420 codes. Every race code maps to exactly one iteration per
    (level, ALONE) slice, so h_r = h_e = 1 and S = 9 with max_race_codes = 8.
    """
    _write_synthetic_specs(params_dir, seed)


# ---------------------------------------------------------------------------------
def sample_thresholds(persons: int) -> dict[str, list[int]]:
    """thresholds_p for all 20 population group levels, scaled to a nation of `persons`.

    Rule: each 2020 production threshold (SPEC section 3) times
    ``s = sqrt(persons / POPULATION_2020)`` (at most 1), rounded, at least 1, kept
    strictly increasing. Why the square root: tracts, counties and places of a
    synthetic nation have real sizes while the nation and its states shrink linearly
    with N, so the linear factor would put every sub-state group at the top stat level
    and no factor (production thresholds) would leave almost every group of a small
    nation at stat level 0; the geometric middle gives every stat level (total, sex x
    age4, age9, age23) in a nation of 50,000 persons and tends to production at 334
    million.
    """
    s = min(1.0, math.sqrt(persons / POPULATION_2020))
    out = {}
    for lvl in POPULATION_GROUP_LEVELS:
        if lvl.iteration_level == 1:
            base = PRODUCTION_THRESHOLDS[1]
        else:
            base = PRODUCTION_THRESHOLDS[2]["state" if lvl.geo in STATE_OR_ABOVE else "substate"]
        vals = []
        for b in base:
            v = max(1, round(b * s))
            if vals and v <= vals[-1]:
                v = vals[-1] + 1
            vals.append(v)
        out[lvl.key] = vals
    return out


def sample_config(persons: int, us_states: list[str]) -> SafeTabConfig:
    """The config.json of a synthetic nation: the 2020 production plan (SPEC section 3)
    with `sample_thresholds(persons)` and state_filter_us = the US states present."""
    data: dict = {
        "max_race_codes": 8,
        "privacy_budget_p_stage_1_fraction": 0.1,
        "thresholds_p": sample_thresholds(persons),
        "zero_suppression_chance": 0.9999,
        "allow_negative_counts": True,
        "run_us": True,
        "run_pr": True,
        "reader": "csv",
        "state_filter_us": sorted(us_states),
        "privacy_defn": "zcdp",
    }
    for lvl in POPULATION_GROUP_LEVELS:
        if lvl.iteration_level == 2:
            rho = 2.134 if lvl.geo in STATE_OR_ABOVE else 0.159
        else:
            rho = 0.0 if lvl.geo == "AIANNH" else 0.008
        data[lvl.budget_key] = rho
    return SafeTabConfig.from_dict(data, source="synthetic config")


def _read_data_files_as_csv(config_path: Path, spec_source: str) -> None:
    """A copied config.json naming production's CEF reader is rewritten with reader
    "csv" (the only reader of the files this generator writes); ConfigError if invalid."""
    from calculators.config import ConfigError

    try:
        cfg = SafeTabConfig.read(config_path)
    except ConfigError as exc:  # a bad input file: exit 1
        raise ConfigError(exc.problems, source=f"the config.json of {spec_source} is not valid") from None
    if cfg.reader != "csv":
        cfg.updated(reader="csv").write(config_path)


# ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class SampleSummary:
    """What `generate` wrote. `states` lists every state code present (incl. "72")."""

    persons: int
    blocks: int
    tracts: int
    counties: int
    places: int
    aiannh_areas: int
    states: list[str]
    has_pr: bool
    seed: int
    fmt: str
    out_dir: Path
    params_dir: Path
    data_dir: Path
    persons_path: Path
    grf_path: Path
    config_path: Path
    spec_source: str
    seconds: float = field(compare=False)
    #: SafeTab-H's inputs: one household per householder (`_households`), and the
    #: 2020 SafeTab-H plan scaled to the nation (`calculators.safetab_h.scaled_plan`).
    households: int = 0
    households_path: Path | None = None
    safetab_h_config_path: Path | None = None

    @property
    def us_states(self) -> list[str]:
        return [s for s in self.states if s != PR_STATE_CODE]

    @property
    def persons_per_second(self) -> float:
        return self.persons / self.seconds if self.seconds > 0 else float("inf")


def check_persons(persons) -> None:
    """ValueError unless `persons` is a whole number from MIN_PERSONS to MAX_PERSONS."""
    if isinstance(persons, bool) or not isinstance(persons, numbers.Integral):
        raise ValueError(f"persons must be a whole number (got {persons!r})")  # noqa: TRY004
    if not MIN_PERSONS <= persons <= MAX_PERSONS:
        raise ValueError(
            f"persons must be from {MIN_PERSONS:,} to {MAX_PERSONS:,} (got {persons:,})"
        )


def _check_args(out_dir, persons, seed, spec_dir, fmt, chunk_persons) -> None:
    if out_dir is None or str(out_dir) == "":
        raise ValueError("out_dir must be a folder path")
    check_persons(persons)
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise ValueError(f"seed must be a whole number >= 0 (got {seed!r})")
    if fmt not in FORMATS:
        raise ValueError(f"fmt must be one of {', '.join(FORMATS)} (got {fmt!r})")
    if (
        isinstance(chunk_persons, bool)
        or not isinstance(chunk_persons, numbers.Integral)
        or chunk_persons < 1
    ):
        raise ValueError(f"chunk_persons must be a whole number >= 1 (got {chunk_persons!r})")
    if spec_dir is not None:
        d = Path(spec_dir)
        if not d.is_dir():
            raise ValueError(f"spec_dir {d} is not a folder")
        missing = [f for f in SPEC_FILES if not (d / f).is_file()]
        if missing:
            raise ValueError(
                f"spec_dir {d} must contain the 4 spec files; missing: {', '.join(missing)}"
            )


def generate(
    out_dir: str | Path,
    persons: int,
    *,
    seed: int = 0,
    spec_dir: str | Path | None = None,
    fmt: str = "txt",
    progress: Callable[[int, int], None] | None = None,
    chunk_persons: int = DEFAULT_CHUNK_PERSONS,
) -> SampleSummary:
    """Write a synthetic nation of `persons` persons into `out_dir` (see the module doc).

    Writes out_dir/params/{config.json + the 4 spec files} and
    out_dir/data/{person-records, GRF-C}.{txt|parquet}. With `spec_dir` the 4 spec
    files (and spec_dir/config.json if present) are copied unchanged, except that a
    config.json with ``reader: "cef"`` (the 2020 file) gets ``reader: "csv"``: the
    nation is written as files, which the engine reads only as "csv"; otherwise the
    project's synthetic spec files (`write_synthetic_specs(seed=0)`, the same for every
    seed) are written. A data file of the other format left by an earlier run is
    removed (SafeTab-P readers accept only one of them). `progress(done, total)` is
    called after every chunk. Raises ValueError for bad arguments, InputError for spec
    files of `spec_dir` that are not valid and ConfigError for its config.json (invalid
    input: exit 1 on the command line).
    """
    _check_args(out_dir, persons, seed, spec_dir, fmt, chunk_persons)
    from engine.errors import InputError
    from engine.inputs.specs import load_specs

    t0 = time.perf_counter()
    persons = int(persons)
    out_dir = Path(out_dir)
    params_dir, data_dir = out_dir / "params", out_dir / "data"
    params_dir.mkdir(parents=True, exist_ok=True)
    data_dir.mkdir(parents=True, exist_ok=True)
    config_path = params_dir / "config.json"

    copied_config = False
    if spec_dir is None:
        write_synthetic_specs(params_dir, seed=0)
        spec_source = "synthetic"
    else:
        spec_dir = Path(spec_dir)
        for f in SPEC_FILES + ("config.json",):
            if (spec_dir / f).is_file() and (spec_dir / f).resolve() != (params_dir / f).resolve():
                shutil.copyfile(spec_dir / f, params_dir / f)
        copied_config = (spec_dir / "config.json").is_file()
        spec_source = str(spec_dir)
        if copied_config:
            _read_data_files_as_csv(config_path, spec_source)
    try:
        specs = load_specs(params_dir)
    except InputError as exc:  # bad input files: exit 1, as every invalid input
        raise InputError(exc.problems, exc.total, context=f"the spec files of {spec_source} are not valid") from None
    model = code_model(specs)

    # Independent random streams: (0,) geography, (1,) person model, (2, page) persons.
    geo = build_geography(
        persons, np.random.default_rng(np.random.SeedSequence(entropy=int(seed), spawn_key=(0,)))
    )
    state_codes = geo.state_codes
    if not copied_config:
        sample_config(persons, [s for s in state_codes if s in US_STATE_CODES]).write(config_path)

    pm = PersonModel(
        geo,
        model,
        int(seed),
        np.random.default_rng(np.random.SeedSequence(entropy=int(seed), spawn_key=(1,))),
    )
    persons_path = data_dir / f"person-records.{fmt}"
    grf_path = data_dir / f"GRF-C.{fmt}"
    other = "parquet" if fmt == "txt" else "txt"
    for stale in (data_dir / f"person-records.{other}", data_dir / f"GRF-C.{other}",
                  data_dir / f"household-records.{other}"):
        if stale.is_file():
            stale.unlink()

    _write_grf(geo, grf_path, fmt)
    from engine.synthetic._households import HouseholdWriter, households_of

    households_path = data_dir / f"household-records.{fmt}"
    writer = (_TxtPersonWriter if fmt == "txt" else _ParquetPersonWriter)(persons_path, geo, pm)
    cols = geo.block_table()
    hh_writer = HouseholdWriter(households_path, {c: cols[c] for c in GRF_COLUMNS[:4]}, pm.model.race_codes,
                                pm.model.hisp_codes + [pm.model.nh_code], fmt)
    try:
        done = 0
        while done < persons:
            stop = min(persons, done + int(chunk_persons))
            chunk = pm.persons(done, stop)
            writer.write(chunk)
            hh_writer.write(households_of(chunk, int(seed), done))
            done = stop
            if progress is not None:
                progress(done, persons)
    except BaseException:
        writer.abort()
        hh_writer.abort()
        raise
    writer.close()
    hh_writer.close()
    from calculators.safetab_h import scaled_plan

    h_config_path = out_dir / "safetab-h-config.json"
    h_config_path.write_text(scaled_plan(persons, POPULATION_2020, [s for s in state_codes if s in US_STATE_CODES],
                                         PR_STATE_CODE in state_codes).to_json(), encoding="utf-8")

    return SampleSummary(
        persons=persons,
        blocks=geo.n_blocks,
        tracts=len(geo.tract_county),
        counties=len(geo.county_state),
        places=geo.n_places,
        aiannh_areas=geo.n_aiannh,
        states=list(state_codes),
        has_pr=PR_STATE_CODE in state_codes,
        seed=int(seed),
        fmt=fmt,
        out_dir=out_dir,
        params_dir=params_dir,
        data_dir=data_dir,
        persons_path=persons_path,
        grf_path=grf_path,
        config_path=config_path,
        spec_source=spec_source,
        seconds=time.perf_counter() - t0,
        households=hh_writer.rows,
        households_path=households_path,
        safetab_h_config_path=h_config_path,
    )


def synthetic_grf(persons: int, seed: int = 0):
    """The GRF-C of the nation `generate(out, persons, seed=seed)` writes (same random
    stream, same blocks), as a pyarrow table of text columns, and its config: the
    geography alone, without persons or files, for geography studies (spines)."""
    import pyarrow as pa

    _check_args(".", persons, seed, None, "txt", 1)
    geo = build_geography(
        int(persons), np.random.default_rng(np.random.SeedSequence(entropy=int(seed), spawn_key=(0,)))
    )
    cols = geo.block_table()
    table = pa.table({c: pa.array(cols[c].astype(str)) for c in GRF_COLUMNS})
    return table, sample_config(int(persons), [s for s in geo.state_codes if s in US_STATE_CODES])


# ---------------------------------------------------------------------------------
# Writing. Text rows are assembled as bytes from lookup tables: every field is a
# fixed-width token (right-padded with 0xFF, a byte that never occurs in UTF-8), rows
# are a uint8 matrix, and the padding is dropped at the end.
_PAD = 0xFF


def _token_table(tokens: list[str]) -> np.ndarray:
    raw = [t.encode("utf-8") for t in tokens]
    width = max(len(r) for r in raw)
    out = np.full((len(raw), width), _PAD, dtype=np.uint8)
    for i, r in enumerate(raw):
        out[i, : len(r)] = np.frombuffer(r, dtype=np.uint8)
    return out


def _write_grf(geo: Geography, path: Path, fmt: str) -> None:
    cols = geo.block_table()
    tmp = path.with_name(path.name + ".partial")
    if fmt == "txt":
        # Every GRF-C field has a fixed width: rows are one uint8 matrix.
        parts = []
        for i, c in enumerate(GRF_COLUMNS):
            a = cols[c]
            parts.append(a.view(np.uint8).reshape(len(a), a.dtype.itemsize))
            parts.append(
                np.full((len(a), 1), ord("|" if i < len(GRF_COLUMNS) - 1 else "\n"), dtype=np.uint8)
            )
        with open(tmp, "wb") as fh:
            fh.write(("|".join(GRF_COLUMNS) + "\n").encode())
            fh.write(memoryview(np.ascontiguousarray(np.hstack(parts))))
    else:
        import pyarrow as pa
        import pyarrow.parquet as pq

        table = pa.table({c: pa.array(cols[c]).cast(pa.string()) for c in GRF_COLUMNS})
        pq.write_table(table, tmp, compression="zstd")
    os.replace(tmp, path)


class _TxtPersonWriter:
    """person-records.txt, written chunk by chunk from token tables.

    Each row is a record of fixed-width byte fields (a numpy structured dtype); a field
    is filled by one gather from its token table, then the padding bytes are dropped.
    """

    def __init__(self, path: Path, geo: Geography, pm: PersonModel):
        self.path = path
        self.tmp = path.with_name(path.name + ".partial")
        cols = geo.block_table()
        bar = np.full((geo.n_blocks, 1), ord("|"), dtype=np.uint8)
        geo_tokens = np.hstack(
            [
                x
                for c in GRF_COLUMNS[:4]
                for x in (cols[c].view(np.uint8).reshape(geo.n_blocks, -1), bar)
            ]
        )
        race = _token_table([f"{c}|" for c in pm.model.race_codes + ["Null"]])
        tables = {
            "age": _token_table([f"{a:03d}|" for a in range(116)]),
            "sex": _token_table(["1|", "2|"]),
            "hh": _token_table(["False|", "True|"]),
            "geo": geo_tokens,
            "cenrace": _token_table([f"{c:02d}|" for c in range(64)]),
            **{f"race{j}": race for j in range(8)},
            "eth": _token_table([f"{c}\n" for c in pm.model.hisp_codes + [pm.model.nh_code]]),
        }
        self.padded = any((t == _PAD).any() for t in tables.values())
        names, formats, offsets, pos = [], [], [], 0
        self.tokens = {}
        for name, t in tables.items():
            w = t.shape[1]
            names.append(name)
            formats.append(f"V{w}")
            offsets.append(pos)
            pos += w
            self.tokens[name] = np.ascontiguousarray(t).view(f"V{w}").ravel()
        self.dtype = np.dtype(
            {"names": names, "formats": formats, "offsets": offsets, "itemsize": pos}
        )
        self.fh = open(self.tmp, "wb")  # noqa: SIM115 - open across write() calls
        self.fh.write(("|".join(PERSON_COLUMNS) + "\n").encode())

    def write(self, p: Persons) -> None:
        rows = np.empty(len(p.block), dtype=self.dtype)
        for name, idx in (
            ("age", p.age),
            ("sex", p.sex),
            ("hh", p.householder.view(np.uint8)),
            ("geo", p.block),
            ("cenrace", p.cenrace),
            ("eth", p.eth),
        ):
            np.take(self.tokens[name], idx, out=rows[name])
        for j in range(8):
            np.take(self.tokens[f"race{j}"], p.race[:, j], out=rows[f"race{j}"])
        flat = rows.view(np.uint8)
        if self.padded:
            flat = flat[flat != _PAD]
        self.fh.write(memoryview(np.ascontiguousarray(flat)))

    def close(self) -> None:
        self.fh.close()
        os.replace(self.tmp, self.path)

    def abort(self) -> None:
        self.fh.close()
        self.tmp.unlink(missing_ok=True)


class _ParquetPersonWriter:
    """person-records.parquet (all columns strings), one row group per chunk."""

    def __init__(self, path: Path, geo: Geography, pm: PersonModel):
        import pyarrow as pa
        import pyarrow.parquet as pq

        self.pa = pa
        self.path = path
        self.tmp = path.with_name(path.name + ".partial")
        cols = geo.block_table()
        self.block_cols = {c: pa.array(cols[c]).cast(pa.string()) for c in GRF_COLUMNS[:4]}
        self.age = pa.array([f"{a:03d}" for a in range(116)], pa.string())
        self.sex = pa.array(["1", "2"], pa.string())
        self.hh = pa.array(["False", "True"], pa.string())
        self.cen = pa.array([f"{c:02d}" for c in range(64)], pa.string())
        self.race = pa.array(pm.model.race_codes + ["Null"], pa.string())
        self.eth = pa.array(pm.model.hisp_codes + [pm.model.nh_code], pa.string())
        self.schema = pa.schema([(c, pa.string()) for c in PERSON_COLUMNS])
        self.writer = pq.ParquetWriter(self.tmp, self.schema, compression="zstd")

    def write(self, p: Persons) -> None:
        pa = self.pa
        block = pa.array(p.block)
        cols = {
            "QAGE": self.age.take(pa.array(p.age)),
            "QSEX": self.sex.take(pa.array(p.sex)),
            "HOUSEHOLDER": self.hh.take(pa.array(p.householder.astype(np.int64))),
        }
        for c, arr in self.block_cols.items():
            cols[c] = arr.take(block)
        cols["CENRACE"] = self.cen.take(pa.array(p.cenrace))
        for j in range(8):
            cols[f"QRACE{j + 1}"] = self.race.take(pa.array(np.ascontiguousarray(p.race[:, j])))
        cols["QSPAN"] = self.eth.take(pa.array(p.eth))
        self.writer.write_table(pa.table([cols[c] for c in PERSON_COLUMNS], schema=self.schema))

    def close(self) -> None:
        self.writer.close()
        os.replace(self.tmp, self.path)

    def abort(self) -> None:
        self.writer.close()
        self.tmp.unlink(missing_ok=True)
