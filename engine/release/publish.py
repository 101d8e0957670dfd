"""Writing an output folder so that nothing is lost, nothing is half-written and two
runs never mix: checks, a lock, a staging folder, a completion marker, an atomic swap.

Around OUT_DIR (parent folder P, name N) a run uses:

- ``P/.N.lock``: a lock file, locked with ``flock`` while a run writes N. The kernel
  drops the lock when the process dies, so a run killed with ``kill -9`` never blocks
  the next one; a second run while the first is alive fails at once, naming the first.
- ``P/.N.partial-XXXXXXXX/``: the staging folder. Everything is written there, each
  file fsynced; `SHA256SUMS` (the completion marker) is written last.
- publishing: the staging folder is swapped with N in one atomic step
  (``renameat2(RENAME_EXCHANGE)``), or, where the file system lacks it, N is renamed to
  ``P/.N.old-XXXXXXXX`` and the staging folder to N; then the old folder is deleted.
  A kill at any moment leaves a whole N: the old one or the new one.
- on start, under the lock, leftovers of killed runs are recovered: an N moved aside
  but not replaced is put back, and staging folders are removed; each is reported
  (logger ``engine.release.publish``, shown by the command line).

Checks before anything is computed: OUT_DIR is not a symbolic link; it is not, does not
contain and does not lie inside an input folder (symbolic links resolved); it is empty,
absent, or (with ``overwrite``) a complete earlier output of this tool of the same kind,
i.e. a folder whose `SHA256SUMS` starts with `MARKER_HEAD` and lists exactly the files
in it, and whose kind (`output_kind`: the description in that first line, and for
SafeTab-P tables the manifest's ``mode.kind``) is the kind about to be written: a
release is never replaced by ground truth, a sample or a report; its parent is
writable (the lock file is created there). The emptiness and ownership check
is repeated under the lock at the moment of publishing.
"""

from __future__ import annotations

import ctypes
import datetime as _dt
import errno
import fcntl
import hashlib
import json
import logging
import os
import re
import secrets
import shutil
import socket
import stat
from collections.abc import Iterable
from pathlib import Path

from engine.errors import OutputError, UsageError

#: The completion marker: sha256 of every other file, `sha256sum -c` format, written last.
MARKER = "SHA256SUMS"
#: First line of a marker written by this tool (how --overwrite recognises its own output).
MARKER_HEAD = "# SafeTab-P Studio output"
#: A file in every folder of an output that must not be published.
NOT_FOR_RELEASE = "NOT-FOR-RELEASE.txt"

#: The operator file of OUT_DIR sits beside it: <OUT_DIR name> + this suffix (its body's
#: "kind" is `OPERATOR_KIND`; written by `engine.release.outputs`).
OPERATOR_SUFFIX = ".CONFIDENTIAL-operator.json"
OPERATOR_KIND = "SafeTab-P Studio operator file"

_log = logging.getLogger(__name__)
_RENAME_EXCHANGE = 2
_AT_FDCWD = -100
_TOKEN = r"[A-Za-z0-9_]{8}"


def _short(path: str | Path, limit: int = 200) -> str:
    text = str(path)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _inside(child: Path, parent: Path) -> bool:
    return child != parent and parent in child.parents


def _size(n: float) -> str:
    for unit in ("bytes", "kB", "MB", "GB", "TB"):
        if n < 1000 or unit == "TB":
            return f"{n:,.0f} {unit}" if unit == "bytes" else f"{n:,.1f} {unit}"
        n /= 1000
    return f"{n} bytes"


def os_message(exc: OSError) -> str:
    """An OSError in plain words: what went wrong, and where."""
    what = {errno.ENOSPC: "the disk is full", errno.EDQUOT: "the disk quota is exhausted",
            errno.EROFS: "the file system is read-only", errno.EACCES: "permission denied",
            errno.EPERM: "operation not permitted", errno.EFBIG: "the file is too large for this file system "
                                                                  "or process limit"}.get(exc.errno)
    what = what or (exc.strerror or str(exc))
    where = exc.filename if exc.filename is not None else None
    return f"{what} ({_short(where)})" if where else what


# ------------------------------------------------------------------ markers
def marker_entries(folder: str | Path) -> tuple[list[str], dict[str, str]] | None:
    """(comment lines, {relative path: sha256}) of folder/SHA256SUMS, or None if absent
    or not a marker of this tool."""
    path = Path(folder) / MARKER
    try:
        with open_regular(path) as fh:
            raw = fh.read(64 * 1024 * 1024)
    except OSError:
        return None  # absent, unreadable, or a link, a FIFO, a device...: not a marker of ours
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    lines = text.splitlines()
    if not lines or not lines[0].startswith(MARKER_HEAD):
        return None
    comments, entries = [], {}
    for line in lines:
        if line.startswith("#"):
            comments.append(line)
            continue
        m = re.fullmatch(r"([0-9a-f]{64}) [ *](.+)", line)
        if not m:
            return None
        entries[m.group(2)] = m.group(1)
    return comments, entries


def _files(folder: Path) -> set[str] | None:
    """Relative paths of the regular files under folder; None if it holds anything else."""
    out = set()
    for root, dirs, names in os.walk(folder, followlinks=False):
        for d in dirs:
            if os.path.islink(os.path.join(root, d)):
                return None
        for name in names:
            p = os.path.join(root, name)
            if os.path.islink(p) or not os.path.isfile(p):
                return None
            out.add(os.path.relpath(p, folder).replace(os.sep, "/"))
    return out


def is_own_output(folder: str | Path) -> bool:
    """True if folder is a complete output of this tool: its SHA256SUMS (ours) lists
    exactly the files in it (so replacing it destroys nothing anyone else put there)."""
    folder = Path(folder)
    if folder.is_symlink() or not folder.is_dir():
        return False
    found = marker_entries(folder)
    if found is None:
        return False
    files = _files(folder)
    return files is not None and files - {MARKER} == set(found[1])


#: The description of the folders of SafeTab-P tables (`run`, `truth`); `output_kind`
#: tells them apart by their manifest's mode.
TABLES = "SafeTab-P tables"
_MANIFEST = "manifest.json"
_MANIFEST_LIMIT = 16 * 1024 * 1024


def tables_kind(mode_kind: str, not_safetab_p: bool = False) -> str:
    """The kind of a folder of SafeTab-P tables whose manifest says mode.kind (e.g.
    "release", "seeded release", "ground truth"); one with invariants is NOT SafeTab-P."""
    return f"{TABLES} ({mode_kind}{', with invariants: NOT SafeTab-P' if not_safetab_p else ''})"


def output_kind(folder: str | Path) -> str | None:
    """What kind of output of this tool `folder` holds: the description its SHA256SUMS
    starts with (e.g. "accuracy report", "synthetic sample (invented persons)"), and for
    SafeTab-P tables their manifest's mode (`tables_kind`: a release, a seeded release,
    ground truth...). None if it has no marker of this tool."""
    found = marker_entries(folder)
    if found is None:
        return None
    head = found[0][0][len(MARKER_HEAD):].lstrip(":").strip() or "output"
    if head != TABLES:
        return head
    mode = None
    try:
        with open_regular(Path(folder) / _MANIFEST) as fh:
            mode = json.loads(fh.read(_MANIFEST_LIMIT).decode("utf-8")).get("mode")
    except (OSError, ValueError, AttributeError):
        pass
    if not isinstance(mode, dict) or not isinstance(mode.get("kind"), str):
        return tables_kind("of an unknown kind: no readable manifest.json")
    return tables_kind(mode["kind"], bool(mode.get("not_safetab_p")))


def open_regular(path: str | Path):
    """`path` opened for reading bytes if it is a regular file and not a symbolic link;
    OSError otherwise. It is opened without blocking and checked on the open file, so a
    FIFO (whose read would wait forever) or a device is refused before anything is read."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(errno.EINVAL, "not a regular file", str(path))
    return os.fdopen(fd, "rb")


def sha256_of(path: str | Path) -> str:
    h = hashlib.sha256()
    with open_regular(path) as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


# ------------------------------------------------------------------ checks
#: The characters the staging folder's name adds to OUT_DIR's: `.N.partial-XXXXXXXX`.
STAGE_EXTRA = len("..partial-") + 8


def check_name_length(out_dir: str | Path, extra: int, what: str) -> None:
    """OutputError if OUT_DIR's name with `extra` more bytes (a name this tool writes
    beside it: `what`) is longer than the file system allows, said before any work
    instead of as an OS error on a hidden name half way."""
    path = Path(os.path.abspath(out_dir))
    folder = path.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    try:
        limit = os.pathconf(folder, "PC_NAME_MAX")
    except (OSError, ValueError):
        limit = 255
    name = len(os.fsencode(path.name))
    if limit <= 0 or name + extra <= limit:
        return
    raise OutputError(f"OUT_DIR's name is {name:,} bytes long; {what} beside it adds {extra}, and this file system "
                      f"allows names of at most {limit} bytes: choose a name of at most {limit - extra} bytes")


def check_target(out_dir: str | Path, overwrite: bool = False,
                 inputs: Iterable[tuple[str, str | Path | None]] = (), kind: str | None = None) -> Path:
    """The checks made before anything is computed (module doc); returns OUT_DIR with its
    parent's symbolic links resolved. OutputError (exit 1) or UsageError (exit 2).
    `kind` is the kind of output about to be written (`output_kind`): with overwrite, an
    earlier output of another kind is refused (OutputError); None skips that check."""
    raw = Path(out_dir)
    absolute = Path(os.path.abspath(raw))
    if absolute.name in ("", ".", ".."):
        raise UsageError(f"OUT_DIR {_short(raw)} must name a folder")
    check_name_length(absolute, STAGE_EXTRA, "the hidden folder .OUT_DIR.partial-XXXXXXXX it is written in")
    if os.path.islink(absolute):
        dest = os.readlink(absolute)
        dangling = "" if os.path.exists(absolute) else ", which points nowhere"
        raise OutputError(f"OUT_DIR {_short(raw)} is a symbolic link (to {_short(dest)}{dangling}); "
                          "give the folder itself, not a link to it")
    target = Path(os.path.realpath(absolute.parent)) / absolute.name
    for label, path in inputs:
        if path is None:
            continue
        real = Path(os.path.realpath(path))
        how = ("is" if real == target else "contains" if _inside(real, target)
               else "lies inside" if _inside(target, real) else None)
        if how:
            raise UsageError(
                f"OUT_DIR {_short(raw)} {how} the input folder {label} ({_short(path)}); writing there could "
                f"destroy or change the inputs. Choose an output folder outside the input folders.")
    if target.exists() and not target.is_dir():
        raise UsageError(f"OUT_DIR {_short(raw)} exists and is not a folder")
    if target.is_dir():
        try:
            entries = os.listdir(target)
        except OSError as exc:
            raise OutputError(f"cannot read OUT_DIR {_short(raw)}: {os_message(exc)}") from None
        if entries and not overwrite:
            raise UsageError(f"OUT_DIR {_short(raw)} is not empty; choose another folder or pass --overwrite")
        if entries and not is_own_output(target):
            raise UsageError(
                f"OUT_DIR {_short(raw)} holds files this tool did not write (or an unfinished or older output): "
                f"--overwrite replaces only a complete earlier output of this tool, a folder whose {MARKER} "
                "lists every file in it. Move or delete the folder yourself, or choose another one.")
        if entries and kind is not None:
            found = output_kind(target)
            if found != kind:
                raise OutputError(
                    f"OUT_DIR {_short(raw)} holds an earlier output of another kind: {found}; this command "
                    f"writes {kind}. --overwrite replaces only an earlier output of the same kind, so nothing "
                    "was written. Choose another folder, or move or delete this one yourself.")
    return target


# ------------------------------------------------------------------ the lock
class _FolderLock:
    """flock on P/.N.lock; the kernel releases it when the process dies."""

    def __init__(self, parent: Path, name: str, shown: str, description: str):
        self.path = parent / f".{name}.lock"
        while True:
            try:
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o644)
            except OSError as exc:
                raise OutputError(f"cannot write in the folder {_short(parent)} (for OUT_DIR {shown}): "
                                  f"{os_message(exc)}") from None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = os.pread(fd, 300, 0).decode("utf-8", "replace").strip() or "unknown"
                os.close(fd)
                raise OutputError(
                    f"OUT_DIR {shown} is being written by another run ({_short(holder, 160)}); wait for it to "
                    "finish or choose another folder") from None
            # A finishing run unlinks the lock file: lock again if ours is no longer the file at the path.
            try:
                same = os.path.samestat(os.fstat(fd), os.stat(self.path, follow_symlinks=False))
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(fd)
        self.fd = fd
        stamp = _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")
        info = f"process {os.getpid()} on {socket.gethostname()}, started {stamp}, {description}\n".encode()
        os.ftruncate(fd, 0)
        os.pwrite(fd, info, 0)

    def release(self) -> None:
        if self.fd is None:
            return
        try:
            os.unlink(self.path)
        except OSError:
            pass
        os.close(self.fd)
        self.fd = None


# ------------------------------------------------------------------ durable writes
def fsync_dir(path: str | Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_file(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_durable(path: str | Path, data: bytes) -> str:
    """Write, flush and fsync a file; its sha256."""
    with open(path, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    return hashlib.sha256(data).hexdigest()


def _exchange(a: Path, b: Path) -> bool:
    """Swap two paths atomically (Linux renameat2); False where the system lacks it."""
    try:
        fn = ctypes.CDLL(None, use_errno=True).renameat2
    except (AttributeError, OSError):
        return False
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    if fn(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
        return False
    raise OSError(err, os.strerror(err), str(b))


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        try:
            path.unlink()
        except OSError:
            pass


def _recover(parent: Path, name: str) -> list[str]:
    """Leftovers of killed runs into P/N (called under the lock, so none is live)."""
    partial = re.compile(rf"\.{re.escape(name)}\.partial-{_TOKEN}")
    old = re.compile(rf"\.{re.escape(name)}\.old-{_TOKEN}")
    try:
        names = os.listdir(parent)
    except OSError:
        return []
    olds = sorted((parent / n for n in names if old.fullmatch(n)), key=lambda p: p.stat().st_mtime, reverse=True)
    partials = [parent / n for n in names if partial.fullmatch(n)]
    notes = []
    target = parent / name
    if not os.path.lexists(target):
        for o in olds:
            if is_own_output(o):
                os.rename(o, target)
                fsync_dir(parent)
                olds.remove(o)
                notes.append(f"restored {target}: an interrupted run had moved this earlier output aside "
                             "and not replaced it")
                break
    for p in list(partials):
        # a run killed after publishing its release, before renaming its operator file
        # into place, left that file here: never removed (the exact counts), but put in place
        note = _adopt_operator_file(parent, name, p)
        if note is not None:
            partials.remove(p)
            notes.append(note)
    for p in olds + partials:
        _remove(p)
        notes.append(f"removed {p}, left unfinished by an interrupted run")
    for note in notes:
        _log.warning(note)
    return notes


def read_operator_body(path: str | Path) -> dict | None:
    """The operator file at `path` if it is one of this tool's (a regular file, not a
    link, JSON with our "kind"); None otherwise. At most 16 MB is read."""
    try:
        with open_regular(path) as fh:
            body = json.loads(fh.read(16 * 1024 * 1024).decode("utf-8"))
    except (OSError, ValueError):
        return None
    return body if isinstance(body, dict) and body.get("kind") == OPERATOR_KIND else None


def _adopt_operator_file(parent: Path, name: str, partial: Path) -> str | None:
    """If `partial` (a leftover `.N.partial-*` beside OUT_DIR N) is the operator file of
    the output N holds (its manifest_sha256 is that of N/manifest.json: the run that
    published N was killed before renaming it into place), put it in place and say so;
    where the operator file's path holds a file this tool did not write, keep `partial`
    and say which file to keep. None for any other leftover (removed as before)."""
    if partial.is_symlink() or not partial.is_file():
        return None
    body = read_operator_body(partial)
    target = parent / name
    if body is None or not is_own_output(target):
        return None
    try:
        belongs = body.get("manifest_sha256") == sha256_of(target / _MANIFEST)
    except OSError:
        belongs = False
    if not belongs:
        return None  # a release that was never published: its staging folder is gone too
    op = parent / (name + OPERATOR_SUFFIX)
    if os.path.lexists(op):
        there = None if op.is_symlink() else read_operator_body(op)
        if there is None:
            return (f"kept {partial}: it is the operator file (the exact counts) of the release in {target}, "
                    f"left there by a run killed before renaming it to {op.name}, and {op} is not an operator "
                    f"file of this tool. Keep {partial}: move {op} away, and the next run puts it in place")
        if there.get("manifest_sha256") == body.get("manifest_sha256"):
            _remove(partial)
            return f"removed {partial}, a copy of the operator file {op} of the release in {target}"
        # the operator file of the output that release replaced (`--overwrite`): the run
        # that was killed had checked it was, and was renaming its own over it
    os.replace(partial, op)
    fsync_dir(parent)
    return (f"restored {op}: the run that published the release in {target} was killed before putting its "
            "operator file (the exact counts) in place; the release and its operator file belong together again")


def _new_stage(parent: Path, name: str, private: bool = False) -> Path:
    """A new empty P/.N.partial-XXXXXXXX: owner-only (0700) for a `private` output, else
    with permissions from the umask, as any folder. A private one is owner-only from its
    creation, so nobody else can open a file inside it while it is written."""
    while True:
        path = parent / f".{name}.partial-{secrets.token_hex(4)}"
        try:
            os.mkdir(path, 0o700 if private else 0o777)
            if private:  # whatever the umask (mkdir's mode is masked by it, never widened)
                os.chmod(path, 0o700)
            return path
        except FileExistsError:
            continue


def make_private(folder: Path) -> None:
    """Every folder under `folder` (itself included) 0700 and every file 0600: what holds
    exact counts of the confidential input is owner-only, as the operator file and
    profiles are. Symbolic links are neither followed nor changed."""
    for root, _dirs, names in os.walk(folder, followlinks=False):
        os.chmod(root, 0o700)
        for n in names:
            p = os.path.join(root, n)
            if not os.path.islink(p):
                os.chmod(p, 0o600)


# ------------------------------------------------------------------ one new file
def clean_new_file_leftovers(path: str | Path) -> list[str]:
    """Remove what killed writers of the file `path` left beside it (`write_new_file`'s
    hidden ``.NAME.partial-*`` files, which may hold a whole confidential profile), under
    the lock of its name, as a run cleans the leftovers of its OUT_DIR: each is reported
    (logger ``engine.release.publish``). Nothing is done where the folder cannot be
    written (the caller says so); OutputError if another process is writing `path`."""
    path = Path(os.path.abspath(path))
    if not path.parent.is_dir() or not os.access(path.parent, os.W_OK | os.X_OK):
        return []
    lock = _FolderLock(path.parent, path.name, _short(path), "writing this file")
    try:
        return _recover(path.parent, path.name)
    finally:
        lock.release()


def write_new_file(path: str | Path, data: bytes, check=None) -> None:
    """Create the file `path` whole or not at all: under the lock of its name (so that no
    other writer's partial file is taken for a leftover), leftovers of killed writers are
    removed, `check()` is called (e.g. refusing an existing file), then `data` goes to a
    hidden owner-only ``.NAME.partial-*`` file beside it, fsynced, linked in place with
    os.link (which fails rather than replace a file that appeared meanwhile) and the
    partial name removed. A kill at any moment leaves no file or the whole one, and at
    most a partial file, which the next writer of `path` removes."""
    import tempfile

    path = Path(os.path.abspath(path))
    lock = _FolderLock(path.parent, path.name, _short(path), "writing this file")
    try:
        _recover(path.parent, path.name)
        if check is not None:
            check()
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.partial-", dir=path.parent)  # mode 0600
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            os.link(tmp, path)
            fsync_dir(path.parent)
        finally:
            os.unlink(tmp)
    finally:
        lock.release()


# ------------------------------------------------------------------ the staged output
class StagedOutput:
    """One output folder in the making (module doc): checks and lock on creation, files
    go to `stage`, `publish` puts them in place, `close` (or `abort`) releases the lock.

    `inputs` are (label, folder) pairs OUT_DIR must stay clear of. Usable as a context
    manager: leaving it with an exception aborts (the staging folder is removed).
    `private` (outputs that hold exact counts of the confidential input: ground truth,
    accuracy reports, legacy studies): the folder and everything in it owner-only
    (0700 folders, 0600 files), from the staging folder's creation on."""

    def __init__(self, out_dir: str | Path, *, overwrite: bool = False,
                 inputs: Iterable[tuple[str, str | Path | None]] = (), description: str = "output",
                 kind: str | None = None, private: bool = False):
        self.shown = _short(out_dir)
        self.private = private
        self.overwrite = overwrite
        self.inputs = list(inputs)
        self.description = description
        #: What --overwrite may replace: an earlier output of this kind (`output_kind`).
        self.kind = kind or description
        self.target = check_target(out_dir, overwrite, self.inputs, self.kind)
        parent = self.target.parent
        try:
            parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise OutputError(f"cannot create the folder {_short(parent)} for OUT_DIR {self.shown}: "
                              f"{os_message(exc)}") from None
        self._lock = _FolderLock(parent, self.target.name, self.shown, description)
        self.hashes: dict[str, str] = {}
        try:
            self.notes = _recover(parent, self.target.name)
            check_target(self.target, overwrite, self.inputs, self.kind)
            self.stage = _new_stage(parent, self.target.name, private)
        except OSError as exc:
            self._lock.release()
            raise OutputError(f"cannot write in the folder {_short(parent)}: {os_message(exc)}") from None
        except BaseException:
            self._lock.release()
            raise
        self.published = False

    def __enter__(self) -> StagedOutput:
        return self

    def __exit__(self, kind, exc, tb) -> None:
        if kind is not None:
            self.abort()
        else:
            self.close()

    def ensure_space(self, needed: int, what: str) -> None:
        """OutputError now, before any work, if the disk cannot hold `needed` bytes."""
        try:
            st = os.statvfs(self.stage)
        except OSError:
            return
        free = st.f_bavail * st.f_frsize
        if needed > free:
            raise OutputError(f"not enough free disk space for {what}: it needs at least {_size(needed)}, and "
                              f"{_size(free)} are free where OUT_DIR {self.shown} goes")

    def write_file(self, relpath: str, data: bytes) -> None:
        """A small file of the output, written durably and hashed."""
        path = self.stage / relpath
        path.parent.mkdir(parents=True, exist_ok=True)
        self.hashes[relpath] = write_durable(path, data)

    def publish(self, comments: Iterable[str] = ()) -> Path:
        """Fsync everything, write SHA256SUMS last, check OUT_DIR again, swap it in."""
        if self.private:
            make_private(self.stage)
        files = _files(self.stage) or set()
        for rel in sorted(files - set(self.hashes) - {MARKER}):
            path = self.stage / rel
            _fsync_file(path)
            self.hashes[rel] = sha256_of(path)
        head = [f"{MARKER_HEAD}: {self.description}",
                *(f"# {c}" for c in comments),
                (f"# Written last, after every file below was on disk. Check with `sha256sum -c {MARKER}` "
                 "or `python -m engine check-output`.")]
        body = [f"{self.hashes[rel]}  {rel}" for rel in sorted(self.hashes)]
        write_durable(self.stage / MARKER, ("\n".join(head + body) + "\n").encode("utf-8"))
        if self.private:
            os.chmod(self.stage / MARKER, 0o600)
        for root, _dirs, _names in os.walk(self.stage, topdown=False):
            fsync_dir(root)
        try:
            check_target(self.target, self.overwrite, self.inputs, self.kind)
        except (UsageError, OutputError) as exc:
            raise OutputError(f"OUT_DIR changed while this run was writing, so nothing was published: {exc}") \
                from None
        parent = self.target.parent
        if os.path.lexists(self.target):
            if _exchange(self.stage, self.target):
                leftover = self.stage
            else:
                leftover = parent / f".{self.target.name}.old-{secrets.token_hex(4)}"
                os.rename(self.target, leftover)
                os.rename(self.stage, self.target)
            fsync_dir(parent)
            _remove(leftover)
        else:
            os.rename(self.stage, self.target)
            fsync_dir(parent)
        self.published = True
        return self.target

    def close(self) -> None:
        """Release the lock (after `publish`; without it, the same as `abort`)."""
        if not self.published:
            self.abort()
            return
        self._lock.release()

    def abort(self) -> None:
        """Remove the staging folder and release the lock; OUT_DIR stays as it was."""
        if not self.published:
            _remove(self.stage)
        self._lock.release()
