"""Writing OUT_DIR in the SafeTab-P layout (SPEC section 4) and the manifest.

- `t1/`: REGION_ID|REGION_TYPE|ITERATION_CODE|COUNT, one part file per population
  group level (plus one for coterminous groups).
- `t2/`: REGION_ID|REGION_TYPE|ITERATION_CODE|AGESTART|AGEEND|SEX|COUNT; the two sex
  marginal rows of a table have AGESTART = AGEEND = "*".
- `suppressed/`: REGION_ID|REGION_TYPE|ITERATION_CODE of groups whose total was
  suppressed, so that every population group of the universe is accounted for.
- each of the three also holds `headers.csv`, the header row alone, so a table with no
  rows still has its header (as production's t1/headers.csv and t2/headers.csv).
- `manifest.json`: what the run did (`engine.release.manifest`), WITHOUT the exact
  person counts of the confidential input: those go to the operator file
  `<OUT_DIR>.CONFIDENTIAL-operator.json` beside OUT_DIR, never inside it, so the
  folder and any zip of it can be handed on.
- seeded releases and the ground truth carry `NOT-FOR-RELEASE.txt` in the folder and in
  each of t1/, t2/, suppressed/.
- `SHA256SUMS`, the completion marker, written last (`engine.release.publish`).

Everything is written into a hidden staging folder beside OUT_DIR and swapped in only
when the run has succeeded (`engine.release.publish`): a failed or killed run never
leaves a partial release, and an earlier release is replaced only by a complete one.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv

from calculators.levels import STAT_LEVEL_AGE_EDGES, age_bins
from engine.errors import OutputError, UsageError
from engine.release.publish import (
    NOT_FOR_RELEASE,
    StagedOutput,
    check_target,
    fsync_dir,
    os_message,
)

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


class _HashingFile:
    """A binary file that hashes what is written and is fsynced on close. An OSError
    (a full disk, a quota) becomes an OutputError naming the file."""

    def __init__(self, path: Path):
        self.path = path
        self.sha = hashlib.sha256()
        try:
            self.fh = open(path, "wb")
        except OSError as exc:
            raise OutputError(f"could not write {path.name}: {os_message(exc)}") from None
        self.closed = False

    def write(self, data) -> int:
        try:
            n = self.fh.write(data)
        except OSError as exc:
            raise OutputError(f"could not write {self.path.name}: {os_message(exc)}") from None
        self.sha.update(data)
        return n

    def flush(self) -> None:
        self.fh.flush()

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        try:
            self.fh.flush()
            os.fsync(self.fh.fileno())
        except OSError as exc:
            raise OutputError(f"could not write {self.path.name}: {os_message(exc)}") from None
        finally:
            self.fh.close()


class _PartWriter:
    def __init__(self, path: Path, columns: list[str]):
        self.path = path
        self.fh = _HashingFile(path)
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

    def close(self) -> str:
        """Close and fsync; the sha256 of the file."""
        if self.writer is not None:
            self.writer.close()
            self.writer = None
        self.fh.close()
        return self.fh.sha.hexdigest()


_COLUMNS = {"t1": T1_COLUMNS, "t2": T2_COLUMNS, "suppressed": SUPPRESSED_COLUMNS}


class ReleaseWriter:
    """Writes t1/, t2/, suppressed/ and manifest.json into a staging directory.

    `inputs` are the (label, folder) pairs OUT_DIR must not be, contain or lie in
    (PARAMS_DIR and DATA_DIR). Creating the writer checks OUT_DIR and takes its lock
    (`engine.release.publish.StagedOutput`), so do it before the long work.
    """

    def __init__(self, out_dir: str | Path, overwrite: bool = False, *,
                 inputs: Iterable[tuple[str, str | Path | None]] = ()):
        self.out_dir = Path(out_dir)
        self.overwrite = overwrite
        _check_operator_path(self.out_dir)
        self.folder = StagedOutput(out_dir, overwrite=overwrite, inputs=inputs, description="SafeTab-P tables")
        self.stage = self.folder.stage
        for sub in _COLUMNS:
            (self.stage / sub).mkdir()
        self._parts: dict[tuple[str, str], _PartWriter] = {}
        self.rows = {"t1": 0, "t2": 0, "suppressed": 0}

    @property
    def notes(self) -> list[str]:
        """What was recovered or cleaned up from interrupted runs before this one."""
        return self.folder.notes

    def ensure_space(self, needed: int) -> None:
        """OutputError before the tabulation if the disk cannot hold `needed` bytes
        (`min_release_bytes`)."""
        self.folder.ensure_space(needed, "the release")

    def _part(self, kind: str, name: str) -> _PartWriter:
        """The part file of a kind and name, created on its first non-empty write."""
        key = (kind, name)
        if key not in self._parts:
            self._parts[key] = _PartWriter(self.stage / kind / f"{name}.csv", _COLUMNS[kind])
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
        """Close the parts, write headers.csv, manifest.json (without the confidential
        block) and the NOT-FOR-RELEASE markers, publish the folder, then write the
        operator file beside it. `manifest` is the full manifest (`build_manifest`)."""
        for part in self._parts.values():
            sha = part.close()
            self.folder.hashes[part.path.relative_to(self.stage).as_posix()] = sha
        for kind, cols in _COLUMNS.items():
            self.folder.write_file(f"{kind}/{HEADERS}", ("|".join(cols) + "\n").encode())
        public = public_manifest(manifest)
        public["operator_file"] = {
            "name": operator_path(self.out_dir).name,
            "note": "The exact person counts of the confidential input are in this file beside the release "
                    "folder, for the operator only; it is not part of the release.",
        }
        text = json.dumps(public, indent=2) + "\n"
        self.folder.write_file(MANIFEST, text.encode("utf-8"))
        mode = manifest.get("mode", {})
        comments = [f"{mode.get('kind', 'release')}, created {manifest.get('created', '')}"]
        if not mode.get("for_release", False):
            reason = str(mode.get("note") or "this output is not a release").removeprefix("NOT FOR RELEASE: ")
            for where in ("", "t1/", "t2/", "suppressed/"):
                self.folder.write_file(where + NOT_FOR_RELEASE, not_for_release_text(reason))
            comments.insert(0, "NOT FOR RELEASE: " + reason)
        # The operator file is written (beside OUT_DIR, under a hidden temporary name)
        # before the release is published, so that a full disk stops the run with
        # OUT_DIR as it was; once published, the file only has to be renamed into place.
        staged = _stage_operator_file(self.out_dir, manifest, hashlib.sha256(text.encode("utf-8")).hexdigest())
        try:
            self.folder.publish(comments)
        except BaseException:
            _discard(staged)
            raise
        try:
            _place_operator_file(staged, operator_path(self.out_dir), self.out_dir)
        finally:
            self.folder.close()
        return self.out_dir

    def abort(self) -> None:
        for part in self._parts.values():
            try:
                part.close()
            except Exception:  # noqa: BLE001 - cleaning up after another error
                pass
        self.folder.abort()


MANIFEST = "manifest.json"
HEADERS = "headers.csv"
#: The operator file sits beside OUT_DIR: <OUT_DIR name> + this suffix.
OPERATOR_SUFFIX = ".CONFIDENTIAL-operator.json"
_OPERATOR_KIND = "SafeTab-P Studio operator file"


def public_manifest(manifest: dict) -> dict:
    """The manifest as published: without the `confidential` block."""
    return {k: v for k, v in manifest.items() if k != "confidential"}


def not_for_release_text(reason: str) -> bytes:
    return ("NOT FOR RELEASE\n\n"
            f"These tables must not be published: {reason}.\n"
            "They were made by SafeTab-P Studio for demonstrations, tests or accuracy studies; see manifest.json.\n"
            ).encode()


def operator_path(out_dir: str | Path) -> Path:
    """Where the operator file of OUT_DIR is: beside it, `<name>.CONFIDENTIAL-operator.json`."""
    out = Path(os.path.abspath(out_dir))
    return out.parent / (out.name + OPERATOR_SUFFIX)


def read_operator_file(out_dir: str | Path) -> dict:
    """The operator file of OUT_DIR: {"confidential": {...}, "manifest_sha256": ...}."""
    return json.loads(operator_path(out_dir).read_text(encoding="utf-8"))


def _stage_operator_file(out_dir: Path, manifest: dict, manifest_sha: str) -> Path:
    """Write the operator file under a hidden temporary name beside OUT_DIR (fsynced);
    its path. OutputError if it cannot be written (then nothing is left of it). A
    killed run leaves it as a `.N.partial-*` leftover, which the next run removes."""
    path = operator_path(out_dir)
    body = {
        "kind": _OPERATOR_KIND,
        "note": "CONFIDENTIAL, for the operator only, NEVER to be published: exact figures of the confidential "
                "input, without noise.",
        "release_folder": path.name[: -len(OPERATOR_SUFFIX)],
        "manifest_sha256": manifest_sha,
        "created": manifest.get("created"),
        "confidential": manifest.get("confidential", {}),
    }
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{out_dir.name}.partial-", dir=path.parent)
    except OSError as exc:
        raise OutputError(f"the operator file {path.name} could not be written: {os_message(exc)}") from None
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write((json.dumps(body, indent=2) + "\n").encode("utf-8"))
            fh.flush()
            os.fsync(fh.fileno())
    except OSError as exc:
        _discard(Path(tmp))
        raise OutputError(f"the operator file {path.name} could not be written: {os_message(exc)}") from None
    return Path(tmp)


def _place_operator_file(staged: Path, path: Path, out_dir: Path) -> None:
    """Rename the staged operator file into place (after the release was published)."""
    try:
        os.replace(staged, path)
        fsync_dir(path.parent)
    except OSError as exc:
        raise OutputError(
            f"the release was published, but its operator file could not be renamed to {path.name}: "
            f"{os_message(exc)}",
            on_disk=f"On disk: the complete release in {out_dir}; its operator file (the exact counts) is "
                    f"{staged if staged.exists() else 'missing'}.") from None


def _discard(path: Path) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def _operator_file_is_ours(path: Path) -> bool:
    try:
        return json.loads(path.read_text(encoding="utf-8")).get("kind") == _OPERATOR_KIND
    except (OSError, ValueError, AttributeError):
        return False


def min_release_bytes(prepared) -> int:
    """A lower bound of the release's size: every population group of the universe gets
    at least one row `REGION_ID|REGION_TYPE|ITERATION_CODE` in t1/ or suppressed/."""
    total = 0
    geo = prepared.inputs.geography
    for lvl in prepared.levels:
        regions = np.asarray(geo.regions[lvl.geo]).astype(str)
        n_it = len(prepared.catalog.iterations(lvl.geo, lvl.iteration_level))
        id_chars = int(np.char.str_len(regions).sum()) if len(regions) else 0
        total += n_it * (id_chars + len(regions) * (len(lvl.geo) + 4 + 3))
    return total


def check_out_dir(out_dir: str | Path, overwrite: bool,
                  inputs: Iterable[tuple[str, str | Path | None]] = ()) -> None:
    """The checks of OUT_DIR that need no lock (`engine.release.publish.check_target`):
    not a symbolic link, clear of the inputs, empty or (with overwrite) an earlier
    output of this tool. UsageError or OutputError."""
    check_target(out_dir, overwrite, inputs)
    _check_operator_path(out_dir)


def _check_operator_path(out_dir: str | Path) -> None:
    op = operator_path(out_dir)
    if os.path.lexists(op) and (op.is_symlink() or not _operator_file_is_ours(op)):
        raise UsageError(f"{op} exists and was not written by this tool; the operator file of OUT_DIR goes there. "
                         "Move it, or choose another OUT_DIR.")
