"""Session folders of the Run page: removed when the session ends or its server is gone,
never while a session lives."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import time

from ui.core import workdir


def test_a_session_folder_is_locked_while_it_lives_and_removed_with_it(tmp_path):
    d = workdir.SessionDir(tmp_path)
    path = d.path
    assert path.name.startswith(workdir.PREFIX) and (path / workdir.LOCK).is_file()
    (path / "release").mkdir()
    assert workdir.sweep(tmp_path) == [] and path.is_dir()  # live: never swept
    del d
    gc.collect()
    assert not path.exists()  # the session's state was dropped: the folder went with it


def test_sweep_removes_folders_no_live_session_holds(tmp_path):
    live = workdir.SessionDir(tmp_path)
    dead = tmp_path / (workdir.PREFIX + "dead")
    dead.mkdir()
    (dead / workdir.LOCK).write_text("")  # a session of a server that crashed: nobody holds its lock
    (dead / "run").mkdir()
    young = tmp_path / (workdir.PREFIX + "young")  # no lock file yet: being created
    young.mkdir()
    old = tmp_path / (workdir.PREFIX + "old")
    old.mkdir()
    os.utime(old, (time.time() - 2 * workdir.GRACE_SECONDS,) * 2)
    other = tmp_path / "someone-else"
    other.mkdir()
    # a session of another server process, alive: it holds the lock of its folder
    held = tmp_path / (workdir.PREFIX + "held")
    held.mkdir()
    holder = subprocess.Popen([sys.executable, "-c", (
        "import fcntl, os, sys, time\n"
        f"fd = os.open({str(held / workdir.LOCK)!r}, os.O_RDWR | os.O_CREAT)\n"
        "fcntl.flock(fd, fcntl.LOCK_EX); print('locked', flush=True); time.sleep(600)")],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        removed = workdir.sweep(tmp_path)
        assert sorted(p.name for p in removed) == sorted([dead.name, old.name])
        assert live.path.is_dir() and young.is_dir() and held.is_dir() and other.is_dir()
    finally:
        holder.kill()
        holder.wait(timeout=60)
    # once that server is gone, its folder is swept too
    assert [p.name for p in workdir.sweep(tmp_path)] == [held.name]
    live.close()
    assert not live.path.exists()
