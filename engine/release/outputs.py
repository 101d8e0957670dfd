"""Writing OUT_DIR in the SafeTab-P layout (SPEC section 4) and the manifest.

- `t1/`: REGION_ID|REGION_TYPE|ITERATION_CODE|COUNT, one part file per population
  group level (plus one for coterminous groups).
- `t2/`: REGION_ID|REGION_TYPE|ITERATION_CODE|AGESTART|AGEEND|SEX|COUNT; the two sex
  marginal rows of a table have AGESTART = AGEEND = "*".
- `suppressed/`: REGION_ID|REGION_TYPE|ITERATION_CODE of groups whose total was
  suppressed, so that every population group of the universe is accounted for.

Everything is written into a temporary sibling directory that is renamed to OUT_DIR
only when the run has succeeded: a failed run never leaves a partial release.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv

from calculators.levels import STAT_LEVEL_AGE_EDGES, age_bins

T1_COLUMNS = ["REGION_ID", "REGION_TYPE", "ITERATION_CODE", "COUNT"]
T2_COLUMNS = ["REGION_ID", "REGION_TYPE", "ITERATION_CODE", "AGESTART", "AGEEND", "SEX", "COUNT"]
SUPPRESSED_COLUMNS = ["REGION_ID", "REGION_TYPE", "ITERATION_CODE"]
_WRITE = pacsv.WriteOptions(delimiter="|", quoting_style="none", include_header=False)


def _age_labels(stat_level: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """AGESTART, AGEEND, SEX label of each cell column of a table, then the 2 marginals."""
    bins = age_bins(STAT_LEVEL_AGE_EDGES[stat_level])
    start = [str(a) for _sex in (1, 2) for a, _ in bins] + ["*", "*"]
    end = [str(b) for _sex in (1, 2) for _, b in bins] + ["*", "*"]
    sex = [str(s) for s in (1, 2) for _ in bins] + ["1", "2"]
    return np.array(start), np.array(end), np.array(sex)


class _PartWriter:
    def __init__(self, path: Path, columns: list[str]):
        self.path = path
        self.fh = open(path, "wb")
        self.fh.write(("|".join(columns) + "\n").encode())
        self.writer: pacsv.CSVWriter | None = None
        self.rows = 0

    def write(self, table: pa.Table) -> None:
        if table.num_rows == 0:
            return
        if self.writer is None:
            self.writer = pacsv.CSVWriter(self.fh, table.schema, write_options=_WRITE)
        self.writer.write_table(table)
        self.rows += table.num_rows

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
        self.fh.close()


class ReleaseWriter:
    """Writes t1/, t2/, suppressed/ and manifest.json into a staging directory."""

    def __init__(self, out_dir: str | Path, overwrite: bool = False):
        self.out_dir = Path(out_dir)
        self.overwrite = overwrite
        check_out_dir(self.out_dir, overwrite)
        self.out_dir.parent.mkdir(parents=True, exist_ok=True)
        self.stage = Path(tempfile.mkdtemp(prefix=f".{self.out_dir.name}.partial-", dir=self.out_dir.parent))
        for sub in ("t1", "t2", "suppressed"):
            (self.stage / sub).mkdir()
        self._parts: dict[tuple[str, str], _PartWriter] = {}
        self.rows = {"t1": 0, "t2": 0, "suppressed": 0}

    def _part(self, kind: str, name: str) -> _PartWriter:
        """The part file of a kind and name, created on its first non-empty write."""
        key = (kind, name)
        if key not in self._parts:
            cols = {"t1": T1_COLUMNS, "t2": T2_COLUMNS, "suppressed": SUPPRESSED_COLUMNS}[kind]
            self._parts[key] = _PartWriter(self.stage / kind / f"{name}.csv", cols)
        return self._parts[key]

    def write_t1(self, part: str, region_ids: pa.Array, region_type: str, iteration_codes: pa.Array,
                 counts: np.ndarray) -> None:
        n = len(counts)
        table = pa.table({
            "REGION_ID": region_ids,
            "REGION_TYPE": pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, np.int32)), pa.array([region_type])),
            "ITERATION_CODE": iteration_codes,
            "COUNT": pa.array(counts, pa.int64()),
        })
        if n:
            self._part("t1", part).write(table)
        self.rows["t1"] += n

    def write_suppressed(self, part: str, region_ids: pa.Array, region_type: str, iteration_codes: pa.Array) -> None:
        n = len(region_ids)
        table = pa.table({
            "REGION_ID": region_ids,
            "REGION_TYPE": pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, np.int32)), pa.array([region_type])),
            "ITERATION_CODE": iteration_codes,
        })
        if n:
            self._part("suppressed", part).write(table)
        self.rows["suppressed"] += n

    def write_t2(self, part: str, region_ids: pa.Array, region_type: str, iteration_codes: pa.Array,
                 stat_level: int, cells: np.ndarray, marginals: np.ndarray) -> None:
        """One table per group: `cells` (n, 2 * bins) and `marginals` (n, 2)."""
        n = cells.shape[0]
        if n == 0:
            return
        start, end, sex = _age_labels(stat_level)
        width = len(start)
        values = np.concatenate([cells, marginals], axis=1).reshape(-1)
        rows = np.repeat(np.arange(n), width)
        cols = np.tile(np.arange(width, dtype=np.int32), n)
        table = pa.table({
            "REGION_ID": region_ids.take(pa.array(rows)),
            "REGION_TYPE": pa.DictionaryArray.from_arrays(pa.array(np.zeros(n * width, np.int32)), pa.array([region_type])),
            "ITERATION_CODE": iteration_codes.take(pa.array(rows)),
            "AGESTART": pa.DictionaryArray.from_arrays(pa.array(cols), pa.array(start)),
            "AGEEND": pa.DictionaryArray.from_arrays(pa.array(cols), pa.array(end)),
            "SEX": pa.DictionaryArray.from_arrays(pa.array(cols), pa.array(sex)),
            "COUNT": pa.array(values, pa.int64()),
        })
        self._part("t2", part).write(table)
        self.rows["t2"] += n * width

    def finish(self, manifest: dict) -> Path:
        """Close the parts, write the manifest and move the staging directory into place."""
        for part in self._parts.values():
            part.close()
        (self.stage / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
        if self.out_dir.exists():
            shutil.rmtree(self.out_dir)
        os.replace(self.stage, self.out_dir)
        return self.out_dir

    def abort(self) -> None:
        for part in self._parts.values():
            try:
                part.close()
            except Exception:  # noqa: BLE001 - cleaning up after another error
                pass
        shutil.rmtree(self.stage, ignore_errors=True)


def check_out_dir(out_dir: Path, overwrite: bool) -> None:
    """OUT_DIR must not hold anything unless overwriting was asked for."""
    if out_dir.exists() and not out_dir.is_dir():
        raise FileExistsError(f"OUT_DIR {out_dir} exists and is not a directory")
    if out_dir.is_dir() and any(out_dir.iterdir()) and not overwrite:
        raise FileExistsError(
            f"OUT_DIR {out_dir} is not empty; choose another directory or pass --overwrite"
        )
