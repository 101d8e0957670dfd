"""The per-session work folder of the Run page (pure; no Streamlit): uploads, generated
data, releases and truths of one browser session live in a `safetab-studio-*` folder
under the system's temporary folder, and never outlive the session for long.

* `SessionDir()` creates the folder and holds an ``flock`` on its `.lock` file for as
  long as the object lives; the page keeps it in the session's state. When Streamlit
  drops a session's state, the object's finalizer removes the folder.
* `sweep()` removes every `safetab-studio-*` folder whose lock nobody holds: folders of
  sessions of a server that stopped or crashed (the kernel drops flock locks when a
  process dies). A live session's folder is always locked, by this server or another
  one, so it is never removed; a folder without a lock file is removed only when older
  than `GRACE_SECONDS` (it may be a session being created). The Run page sweeps when a
  session creates its folder, so a restarted server cleans up after its predecessor.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import tempfile
import time
import weakref
from pathlib import Path

PREFIX = "safetab-studio-"
LOCK = ".lock"
#: A folder without a lock file is left alone this long: a session may be creating it,
#: or a server of an older version (which made no lock file) may still be using it.
GRACE_SECONDS = 24 * 3600


def _release(path: str, fd: int) -> None:
    shutil.rmtree(path, ignore_errors=True)
    try:
        os.close(fd)
    except OSError:
        pass


class SessionDir:
    """A locked temporary folder, removed when this object is closed or collected."""

    def __init__(self, root: str | Path | None = None):
        self.path = Path(tempfile.mkdtemp(prefix=PREFIX, dir=root))
        fd = os.open(self.path / LOCK, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        self._finalizer = weakref.finalize(self, _release, str(self.path), fd)

    @property
    def alive(self) -> bool:
        return self._finalizer.alive

    def close(self) -> None:
        """Remove the folder now."""
        self._finalizer()


def sweep(root: str | Path | None = None, now: float | None = None) -> list[Path]:
    """Remove the `safetab-studio-*` folders of `root` (default: the temporary folder)
    that no live session holds (module doc); the folders removed."""
    root = Path(root or tempfile.gettempdir())
    now = time.time() if now is None else now
    removed = []
    try:
        candidates = [p for p in root.iterdir() if p.name.startswith(PREFIX)]
    except OSError:
        return removed
    for folder in candidates:
        if folder.is_symlink() or not folder.is_dir():
            continue
        lock = folder / LOCK
        try:
            fd = os.open(lock, os.O_RDWR | os.O_CLOEXEC | os.O_NOFOLLOW)
        except FileNotFoundError:
            try:
                old = now - folder.stat().st_mtime > GRACE_SECONDS
            except OSError:
                continue
            if old:
                shutil.rmtree(folder, ignore_errors=True)
                removed.append(folder)
            continue
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)  # a live session
            continue
        try:
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder)
        finally:
            os.close(fd)
    return removed
