"""Writing OUT_DIR in the SafeTab-P layout (SPEC section 4) and the manifest.

- `t1/`: REGION_ID|REGION_TYPE|ITERATION_CODE|COUNT, one part file per population
  group level (plus one for coterminous groups).
- `t2/`: REGION_ID|REGION_TYPE|ITERATION_CODE|AGESTART|AGEEND|SEX|COUNT; the two sex
  marginal rows of a table have AGESTART = AGEEND = "*".
- `suppressed/`: REGION_ID|REGION_TYPE|ITERATION_CODE of groups whose total was
  suppressed, so that every population group of the universe is accounted for; with
  `run --tabulation-suppression`, `suppressed/tabulation-system.csv` lists the groups the
  Tabulation System's rules removed, with a fourth column REASON (the rule).
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
leaves a partial release, and an earlier release is replaced only by a complete one,
and only by one of the same kind (a release by a release, ground truth by ground
truth: `publish.output_kind`). The operator file beside OUT_DIR is replaced only
together with the output it belongs to (`_check_operator_path`).
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path

from dataclasses import dataclass

import numpy as np

from calculators.levels import STAT_LEVEL_AGE_EDGES, age_bins
from engine.errors import OutputError, UsageError
from engine.release import _format
from engine.release.publish import (
    NOT_FOR_RELEASE,
    OPERATOR_KIND,
    OPERATOR_SUFFIX,
    TABLES,
    StagedOutput,
    check_name_length,
    check_target,
    fsync_dir,
    is_own_output,
    os_message,
    read_operator_body,
    sha256_of,
    tables_kind,
)

T1_COLUMNS = ["REGION_ID", "REGION_TYPE", "ITERATION_CODE", "COUNT"]
T2_COLUMNS = ["REGION_ID", "REGION_TYPE", "ITERATION_CODE", "AGESTART", "AGEEND", "SEX", "COUNT"]
SUPPRESSED_COLUMNS = ["REGION_ID", "REGION_TYPE", "ITERATION_CODE"]
#: suppressed/tabulation-system.csv: the groups the Tabulation System's rules removed
#: (`run --tabulation-suppression`), each with the rule that removed it.
REASON_FILE = "tabulation-system.csv"
REASON_COLUMNS = SUPPRESSED_COLUMNS + ["REASON"]


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
        self.rows = 0

    def write(self, data) -> None:
        """Append rows already formatted as bytes (`_format.format_rows`)."""
        self.fh.write(data)

    def close(self) -> str:
        """Close and fsync; the sha256 of the file."""
        self.fh.close()
        return self.fh.sha.hexdigest()


_COLUMNS = {"t1": T1_COLUMNS, "t2": T2_COLUMNS, "suppressed": SUPPRESSED_COLUMNS}
#: Rows formatted into one buffer at a time (about 40 MB).
_FORMAT_ROWS = 1 << 20


@dataclass(frozen=True)
class Labels:
    """Strings (region ids, iteration codes, T2 labels) as one UTF-8 byte buffer with
    offsets, so that `_format.format_rows` picks them by index."""

    data: np.ndarray  # uint8
    offsets: np.ndarray  # int64, one more than strings
    longest: int

    @classmethod
    def of(cls, strings: Iterable) -> "Labels":
        enc = [str(x).encode("utf-8") for x in strings]
        offsets = np.zeros(len(enc) + 1, np.int64)
        offsets[1:] = np.cumsum([len(e) for e in enc])
        return cls(np.frombuffer(b"".join(enc), np.uint8).copy(), offsets, max((len(e) for e in enc), default=0))


_NO_INDEX = np.zeros(0, np.int64)


def _t2_labels(stat_level: int) -> Labels:
    start, end, sex = _age_labels(stat_level)
    return Labels.of(f"|{a}|{b}|{x}" for a, b, x in zip(start, end, sex))


class _WriterThread:
    """Writes formatted rows to the part files on a second thread, so that hashing and
    writing overlap with the tabulation. An error there (a full disk) is raised again on
    the caller's thread at its next call."""

    def __init__(self):
        import queue
        import threading

        self.queue: queue.Queue = queue.Queue(maxsize=4)
        self.error: BaseException | None = None
        self.discard = False
        self.thread = threading.Thread(target=self._work, name="release-writer", daemon=True)
        self.thread.start()

    def _work(self) -> None:
        while True:
            item = self.queue.get()
            if item is None:
                return
            part, data = item
            if self.error is None and not self.discard:
                try:
                    part.write(data)
                except BaseException as exc:  # noqa: BLE001 - handed over to the caller's thread
                    self.error = exc

    def _check(self) -> None:
        if self.error is not None:
            error, self.error = self.error, None
            raise error

    def submit(self, part: "_PartWriter", data) -> None:
        import queue

        while True:
            self._check()
            try:
                self.queue.put((part, data), timeout=0.1)
                return
            except queue.Full:
                continue

    def close(self) -> None:
        """Wait until everything submitted is written; raise its error if any."""
        if self.thread.is_alive():
            self.queue.put(None)
            self.thread.join()
        self._check()


class ReleaseWriter:
    """Writes t1/, t2/, suppressed/ and manifest.json into a staging directory.

    `inputs` are the (label, folder) pairs OUT_DIR must not be, contain or lie in
    (PARAMS_DIR and DATA_DIR). Creating the writer checks OUT_DIR and takes its lock
    (`engine.release.publish.StagedOutput`), so do it before the long work. Rows are
    formatted as bytes (`_format.format_rows`) and written by a second thread.
    """

    def __init__(self, out_dir: str | Path, overwrite: bool = False, *,
                 inputs: Iterable[tuple[str, str | Path | None]] = (), operator_file: bool = True,
                 mode_kind: str = "release", not_safetab_p: bool = False):
        """`mode_kind` (the manifest's mode.kind: "release", "seeded release", "ground
        truth"...) and `not_safetab_p` (invariants) say what is written: --overwrite
        replaces only an earlier output of the same kind (`publish.tables_kind`)."""
        self.out_dir = Path(out_dir)
        self.overwrite = overwrite
        #: False for the trials of a study: no file of exact counts is written anywhere.
        self.operator_file = operator_file
        if operator_file:  # the longest name written beside OUT_DIR: said before the other checks
            check_name_length(out_dir, len(OPERATOR_SUFFIX), f"the operator file {OPERATOR_SUFFIX}")
        # the ground truth is nothing but exact counts: owner-only, as the operator file
        self.folder = StagedOutput(out_dir, overwrite=overwrite, inputs=inputs, description=TABLES,
                                   kind=tables_kind(mode_kind, not_safetab_p), private=mode_kind == "ground truth")
        if operator_file:  # under the lock, once an interrupted run's OUT_DIR is put back
            try:
                _check_operator_path(self.out_dir, overwrite)
            except BaseException:
                self.folder.abort()
                raise
        self.stage = self.folder.stage
        for sub in _COLUMNS:
            (self.stage / sub).mkdir()
        self._parts: dict[tuple[str, str], _PartWriter] = {}
        self.rows = {"t1": 0, "t2": 0, "suppressed": 0}
        self._t2_labels = {k: _t2_labels(k) for k in STAT_LEVEL_AGE_EDGES}
        self._label_cache: dict[int, tuple[np.ndarray, Labels]] = {}
        self._thread = _WriterThread()

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
            columns = REASON_COLUMNS if f"{name}.csv" == REASON_FILE else _COLUMNS[kind]
            self._parts[key] = _PartWriter(self.stage / kind / f"{name}.csv", columns)
        return self._parts[key]

    def _write(self, kind: str, part: str, regions: Labels, region_type: str, codes: Labels, region_idx: np.ndarray,
               code_idx: np.ndarray, labels: Labels | None = None, label_idx: np.ndarray = _NO_INDEX,
               values: np.ndarray = _NO_INDEX) -> None:
        n = len(region_idx)
        if n == 0:
            return
        target = self._part(kind, part)
        middle = np.frombuffer(f"|{region_type}|".encode("utf-8"), np.uint8)
        lab = labels or Labels(np.zeros(0, np.uint8), np.zeros(1, np.int64), 0)
        bound = regions.longest + len(middle) + codes.longest + lab.longest + 22
        region_idx = np.ascontiguousarray(region_idx, np.int64)
        code_idx = np.ascontiguousarray(code_idx, np.int64)
        label_idx = np.ascontiguousarray(label_idx, np.int64)
        values = np.ascontiguousarray(values, np.int64)
        for a in range(0, n, _FORMAT_ROWS):
            b = min(n, a + _FORMAT_ROWS)
            buf = np.empty((b - a) * bound, np.uint8)
            m = _format.format_rows(regions.data, regions.offsets, region_idx[a:b], middle, codes.data, codes.offsets,
                                    code_idx[a:b], lab.data, lab.offsets, label_idx[a:b] if len(label_idx) else
                                    label_idx, values[a:b] if len(values) else values, buf)
            self._thread.submit(target, memoryview(buf)[:m])
        target.rows += n
        self.rows[kind] += n

    def _labels(self, strings: np.ndarray) -> Labels:
        """Labels of an array of region ids or codes, made once per array."""
        key = id(strings)
        if key not in self._label_cache:
            self._label_cache[key] = (strings, Labels.of(strings))  # the array is kept, so its id stays its own
        return self._label_cache[key][1]

    def write_groups(self, rows, skip: np.ndarray | None = None) -> None:
        """T1 rows (released), suppressed rows and T2 tables of a set of groups
        (`engine.tabulation.postprocess.GroupRows`; its true counts are never written).
        `skip`: unreleased groups listed elsewhere (`write_removed`), not in the part."""
        regions, codes = self._labels(rows.region_ids), self._labels(rows.codes)
        rel = rows.released
        self.write_t1(rows.part, regions, rows.geo, codes, rows.region_idx[rel], rows.code_idx[rel], rows.t1[rel])
        sup = ~rel
        if skip is not None and len(skip):
            sup = sup.copy()
            sup[skip] = False
        self.write_suppressed(rows.part, regions, rows.geo, codes, rows.region_idx[sup], rows.code_idx[sup])
        for k, (r, i, cells, marg, _true) in sorted(rows.tables.items()):
            self.write_t2(rows.part, regions, rows.geo, codes, r, i, k, cells, marg)

    def write_t1(self, part: str, regions: Labels, region_type: str, codes: Labels, region_idx: np.ndarray,
                 code_idx: np.ndarray, counts: np.ndarray) -> None:
        """T1 rows: the groups (region_idx[i], code_idx[i]) with their published totals."""
        self._write("t1", part, regions, region_type, codes, region_idx, code_idx, values=counts)

    def write_suppressed(self, part: str, regions: Labels, region_type: str, codes: Labels, region_idx: np.ndarray,
                         code_idx: np.ndarray) -> None:
        """suppressed/ rows: the groups whose totals were suppressed."""
        self._write("suppressed", part, regions, region_type, codes, region_idx, code_idx)

    def write_removed(self, rows, removed: np.ndarray, reason_idx: np.ndarray, reasons: tuple[str, ...]) -> None:
        """suppressed/tabulation-system.csv rows: the groups `removed` (indices into a
        `GroupRows`) with REASON reasons[reason_idx[i]] (`run --tabulation-suppression`)."""
        regions, codes = self._labels(rows.region_ids), self._labels(rows.codes)
        self._write("suppressed", REASON_FILE.removesuffix(".csv"), regions, rows.geo, codes,
                    rows.region_idx[removed], rows.code_idx[removed], Labels.of(f"|{r}" for r in reasons),
                    np.asarray(reason_idx, np.int64))

    def write_t2(self, part: str, regions: Labels, region_type: str, codes: Labels, region_idx: np.ndarray,
                 code_idx: np.ndarray, stat_level: int, cells: np.ndarray, marginals: np.ndarray) -> None:
        """One table per group: `cells` (n, 2 * bins) and `marginals` (n, 2)."""
        n = cells.shape[0]
        if n == 0:
            return
        width = cells.shape[1] + 2
        values = np.concatenate([cells, marginals], axis=1).reshape(-1)
        rows = np.repeat(np.arange(n), width)
        self._write("t2", part, regions, region_type, codes, np.asarray(region_idx)[rows], np.asarray(code_idx)[rows],
                    self._t2_labels[stat_level], np.tile(np.arange(width, dtype=np.int64), n), values)

    def finish(self, manifest: dict) -> Path:
        """Close the parts, write headers.csv, manifest.json (without the confidential
        block) and the NOT-FOR-RELEASE markers, publish the folder, then write the
        operator file beside it. `manifest` is the full manifest (`build_manifest`)."""
        self._thread.close()
        for part in self._parts.values():
            sha = part.close()
            self.folder.hashes[part.path.relative_to(self.stage).as_posix()] = sha
        for kind, cols in _COLUMNS.items():
            self.folder.write_file(f"{kind}/{HEADERS}", ("|".join(cols) + "\n").encode())
        public = public_manifest(manifest)
        if self.operator_file:
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
        if self.operator_file:  # again, as OUT_DIR is checked again under the lock when it is published
            _check_operator_path(self.out_dir, self.overwrite)
        staged = (_stage_operator_file(self.out_dir, manifest, hashlib.sha256(text.encode("utf-8")).hexdigest())
                  if self.operator_file else None)
        try:
            self.folder.publish(comments)
        except BaseException:
            if staged is not None:
                _discard(staged)
            raise
        try:
            if staged is not None:  # trials of a study have none (`operator_file=False`)
                _place_operator_file(staged, operator_path(self.out_dir), self.out_dir)
        finally:
            self.folder.close()
        return self.out_dir

    def abort(self) -> None:
        self._thread.discard = True  # what is still queued is thrown away with the staging folder
        try:
            self._thread.close()
        except BaseException:  # noqa: BLE001 - cleaning up after another error
            pass
        for part in self._parts.values():
            try:
                part.close()
            except Exception:  # noqa: BLE001 - cleaning up after another error
                pass
        self.folder.abort()


MANIFEST = "manifest.json"
HEADERS = "headers.csv"


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
    killed run leaves it as a `.N.partial-*` leftover: the next run into N puts it in
    place if its release was published (`publish._adopt_operator_file`), else removes it."""
    path = operator_path(out_dir)
    body = {
        "kind": OPERATOR_KIND,
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
                  inputs: Iterable[tuple[str, str | Path | None]] = (), kind: str | None = None) -> None:
    """The checks of OUT_DIR that need no lock (`engine.release.publish.check_target`):
    not a symbolic link, clear of the inputs, empty or (with overwrite) an earlier
    output of this tool of the same `kind`; its operator file path free or (with
    overwrite) holding that output's operator file. UsageError or OutputError."""
    check_name_length(out_dir, len(OPERATOR_SUFFIX), f"the operator file {OPERATOR_SUFFIX}")  # the longest name
    check_target(out_dir, overwrite, inputs, kind)
    _check_operator_path(out_dir, overwrite)


def _check_operator_path(out_dir: str | Path, overwrite: bool = False) -> None:
    """The operator file of OUT_DIR is written only where nothing is, or (with
    overwrite) over the operator file of the output OUT_DIR holds, which is being
    replaced: its manifest_sha256 is that of OUT_DIR/manifest.json. Anything else at its
    path is refused (UsageError): a file this tool did not write, or an operator file
    left beside a folder that does not hold its output (it may be the only copy of the
    exact counts of an earlier release), with or without overwrite."""
    op = operator_path(out_dir)
    # found before any work, not once the release is published (the operator file was
    # then left under its hidden temporary name, which the next run removed as a leftover)
    check_name_length(out_dir, len(OPERATOR_SUFFIX), f"the operator file {OPERATOR_SUFFIX}")
    if not os.path.lexists(op):
        return
    body = None if op.is_symlink() else read_operator_body(op)
    if body is None:
        raise UsageError(f"{op} exists and was not written by this tool; the operator file of OUT_DIR goes there. "
                         "Move it, or choose another OUT_DIR.")
    manifest = Path(os.path.abspath(out_dir)) / MANIFEST
    try:
        belongs = overwrite and is_own_output(manifest.parent) and body.get("manifest_sha256") == sha256_of(manifest)
    except OSError:
        belongs = False
    if not belongs:
        raise UsageError(f"{op} exists: the operator file (the exact counts) of an earlier output named "
                         f"{Path(out_dir).name}, which OUT_DIR does not hold (its manifest.json is missing or "
                         "different); it may be the only copy of those counts, so nothing is written over it, "
                         "with or without --overwrite. Move or delete it yourself, or choose another OUT_DIR.")
