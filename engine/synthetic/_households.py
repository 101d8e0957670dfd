"""Synthetic households for SafeTab-H: one household per householder among the persons.

Each person with HOUSEHOLDER True heads one household in their block; the household
carries the householder's race codes, ethnicity code and CENRACE (HHRACE), and a
household type and tenure drawn from 2020-like shares that depend on the householder's
age (2020 Census DHC, rounded): nationally about 47% married couples, 6% and 13% other
families with a male / female householder, 28% householders living alone, 6% other
nonfamily households; 40% owned with a mortgage, 25% owned free and clear, 33% rented,
2% occupied without payment of rent. About 40% of the persons are householders
(`_persons._householder_share`), so about 2.5 persons per household.

The draws are a hash of (seed, the householder's number in the nation) (`_uniforms`,
splitmix64), apart from the persons' streams: the person file of a seed is the same as
without households, and the households do not depend on the chunk size.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pyarrow as pa

from engine.synthetic._persons import Persons

HOUSEHOLD_COLUMNS = ["TABBLKST", "TABBLKCOU", "TABTRACTCE", "TABBLK", "HHRACE", *[f"QRACE{i}" for i in range(1, 9)],
                     "QSPAN", "HOUSEHOLD_TYPE", "TEN"]
#: P(HOUSEHOLD_TYPE 1..5) by householder age band (<35, 35-64, 65+).
TYPE_SHARES = np.array([
    [0.36, 0.08, 0.15, 0.25, 0.16],
    [0.55, 0.06, 0.14, 0.21, 0.04],
    [0.43, 0.03, 0.10, 0.41, 0.03],
])
#: P(TEN 1..4) by householder age band.
TENURE_SHARES = np.array([
    [0.33, 0.05, 0.60, 0.02],
    [0.50, 0.15, 0.33, 0.02],
    [0.25, 0.53, 0.20, 0.02],
])


def _band(age: np.ndarray) -> np.ndarray:
    return np.where(age < 35, 0, np.where(age < 65, 1, 2))


def _draw(shares: np.ndarray, band: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Category 0..k-1 of each row from its band's shares and a uniform."""
    cum = np.cumsum(shares, axis=1)
    cum[:, -1] = 1.0
    return (u[:, None] >= cum[band]).sum(axis=1)


def _uniforms(seed: int, index: np.ndarray, stream: int) -> np.ndarray:
    """Uniforms in [0, 1) from splitmix64 of (seed, stream, index): reproducible per person."""
    with np.errstate(over="ignore"):
        z = (index.astype(np.uint64) * np.uint64(2) + np.uint64(stream)
             + np.uint64(int(seed) & 0xFFFFFFFF) * np.uint64(0x9E3779B97F4A7C15)) * np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z = z ^ (z >> np.uint64(31))
    return (z >> np.uint64(11)).astype(np.float64) / float(1 << 53)


def households_of(p: Persons, seed: int, start: int) -> dict[str, np.ndarray]:
    """The households of one chunk of persons (persons start.. of the nation): the
    householders' block, cenrace, race and ethnicity indices, and type and tenure 1-based."""
    hh = np.flatnonzero(p.householder)
    index = hh.astype(np.int64) + int(start)
    u = np.stack([_uniforms(seed, index, 0), _uniforms(seed, index, 1)], axis=1)
    band = _band(p.age[hh])
    return {"block": p.block[hh], "cenrace": p.cenrace[hh], "race": p.race[hh], "eth": p.eth[hh],
            "type": _draw(TYPE_SHARES, band, u[:, 0]) + 1, "ten": _draw(TENURE_SHARES, band, u[:, 1]) + 1}


class HouseholdWriter:
    """household-records.{txt,parquet}, chunk by chunk (text: pipe-delimited, no quotes)."""

    def __init__(self, path: Path, block_cols: dict, race_codes: list[str], eth_codes: list[str], fmt: str):
        self.path, self.fmt = path, fmt
        self.tmp = path.with_name(path.name + ".partial")
        self.block_cols = {c: pa.array(v).cast(pa.string()) for c, v in block_cols.items()}
        self.cen = pa.array([f"{c:02d}" for c in range(64)], pa.string())
        self.race = pa.array(race_codes + ["Null"], pa.string())
        self.eth = pa.array(eth_codes, pa.string())
        self.small = pa.array([str(i) for i in range(6)], pa.string())
        self.schema = pa.schema([(c, pa.string()) for c in HOUSEHOLD_COLUMNS])
        self.rows = 0
        if fmt == "parquet":
            import pyarrow.parquet as pq

            self.writer = pq.ParquetWriter(self.tmp, self.schema, compression="zstd")
        else:
            self.fh = open(self.tmp, "wb")  # noqa: SIM115 - open across write() calls
            self.fh.write(("|".join(HOUSEHOLD_COLUMNS) + "\n").encode())

    def write(self, h: dict[str, np.ndarray]) -> None:
        block = pa.array(h["block"])
        cols = [self.block_cols[c].take(block) for c in HOUSEHOLD_COLUMNS[:4]]
        cols.append(self.cen.take(pa.array(h["cenrace"])))
        cols += [self.race.take(pa.array(np.ascontiguousarray(h["race"][:, j]))) for j in range(8)]
        cols += [self.eth.take(pa.array(h["eth"])), self.small.take(pa.array(h["type"])),
                 self.small.take(pa.array(h["ten"]))]
        table = pa.table(cols, schema=self.schema)
        self.rows += table.num_rows
        if self.fmt == "parquet":
            self.writer.write_table(table)
            return
        import pyarrow.csv as pacsv

        pacsv.write_csv(table, self.fh, pacsv.WriteOptions(include_header=False, delimiter="|",
                                                           quoting_style="none"))

    def close(self) -> None:
        (self.writer if self.fmt == "parquet" else self.fh).close()
        os.replace(self.tmp, self.path)

    def abort(self) -> None:
        (self.writer if self.fmt == "parquet" else self.fh).close()
        self.tmp.unlink(missing_ok=True)
