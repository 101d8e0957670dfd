"""Fault injection: nothing lost, nothing leaked, nothing hangs (issue 11).

Hostile or unlucky situations as a table of cases, each through the command line:
OUT_DIR a symbolic link (or a dangling one), OUT_DIR over the inputs with --overwrite,
an unwritable parent folder, a full disk (run and sample), operating-system errors and
Ctrl-C, a kill -9 during the tabulation and during the swap, two runs into one folder.
Every case ends in a clear message and exit code, without a traceback, with the inputs
and any earlier release intact and no half-written folder left behind.

Runs as root too (CI does): where chmod does not bite, the unwritable folder and the
full disk are made real in a private mount namespace (`unshare -m`: a read-only bind
mount, a tiny tmpfs), skipped where the system does not allow it; in-process injections
of the same errors always run. Subprocesses are paused at a chosen point by a wrapper
(`_PAUSED`) that signals through a file, so no test depends on timing; every wait has a
deadline.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from calculators.levels import POPULATION_GROUP_LEVELS
from engine.cli import main
from engine.release import outputs, publish
from engine.release.check import check_output
from engine.release.publish import MARKER
from tests.engine.conftest import BLOCKS, Dataset, person

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "sample_data"
DEADLINE = 120  # seconds any wait may take before the test fails

# Runs `python -m engine ARGS`, but pauses (writing its pid to FLAG) at WHERE:
# "tabulating" after the first rows are written, "swap" after the old release was
# moved aside and before the new one is moved in (the fallback swap).
_PAUSED = r"""
import os, sys, time
from pathlib import Path
flag, where, argv = Path(sys.argv[1]), sys.argv[2], sys.argv[3:]
from engine.release import outputs, publish

def pause():
    flag.write_text(str(os.getpid()))
    time.sleep(600)

if where == "tabulating":
    original = outputs._PartWriter.write
    def write(self, table):
        original(self, table)
        pause()
    outputs._PartWriter.write = write
elif where == "swap":
    publish._exchange = lambda a, b: False
    real_rename = os.rename
    def rename(a, b, *rest, **kw):
        real_rename(a, b, *rest, **kw)
        if ".old-" in os.fspath(b):
            pause()
    os.rename = rename
from engine.cli import main
sys.exit(main(argv))
"""


# ------------------------------------------------------------------ helpers
def _dataset(root: Path) -> Dataset:
    ds = Dataset(root / "in")
    ds.persons = [person(age=20 + i % 60, sex=1 + i % 2, block=BLOCKS[i % 6], races=[("1010",), ("1020",)][i % 2])
                  for i in range(60)]
    return ds.write()


@pytest.fixture
def ds(tmp_path) -> Dataset:
    return _dataset(tmp_path)


def _digest(folder: Path) -> dict[str, str]:
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def _cli(args, capsys) -> tuple[int, str]:
    code = main([str(a) for a in args])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def _leftovers(parent: Path) -> list[str]:
    return sorted(p.name for p in parent.iterdir() if ".partial-" in p.name or ".old-" in p.name)


def _release(ds: Dataset, out: Path, capsys, seed=1) -> dict[str, str]:
    code, text = _cli(["run", ds.params, ds.data, out, "--quiet", "--seed", seed], capsys)
    assert code == 0, text
    return _digest(out)


def _no_computation(monkeypatch):
    """Fail the test if the run gets as far as reading the inputs."""
    import engine.run

    def refuse(*a, **k):
        raise AssertionError("the computation started although OUT_DIR could have been refused before it")

    monkeypatch.setattr(engine.run, "prepare", refuse)


def _unshare_works() -> bool:
    if not shutil.which("unshare") or sys.platform != "linux":
        return False
    try:
        probe = "mount -t tmpfs -o size=64k tmpfs /mnt 2>/dev/null || mount -t tmpfs -o size=64k tmpfs /tmp"
        return subprocess.run(["unshare", "-m", "sh", "-c", probe], capture_output=True, timeout=30,
                              check=False).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


needs_unshare = pytest.mark.skipif(not _unshare_works(), reason="no private mount namespaces here (unshare -m)")


def _in_namespace(script: str, timeout: float = DEADLINE) -> subprocess.CompletedProcess:
    """Run a shell script in a private mount namespace (its mounts vanish with it)."""
    return subprocess.run(["unshare", "-m", "sh", "-c", script], cwd=REPO, capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, "PYTHONPATH": str(REPO)}, check=False)


def _start_paused(args, where: str, flag: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", _PAUSED, str(flag), where, *map(str, args)], cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _wait_for(flag: Path, proc: subprocess.Popen) -> None:
    end = time.monotonic() + DEADLINE
    while not flag.exists():
        if proc.poll() is not None:
            raise AssertionError(f"the run ended before the pause: {proc.communicate()}")
        if time.monotonic() > end:
            proc.kill()
            raise AssertionError("the run did not reach the pause in time")
        time.sleep(0.05)


def _kill9(proc: subprocess.Popen) -> None:
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=DEADLINE)
    assert proc.returncode == -signal.SIGKILL


@pytest.fixture
def procs():
    started: list[subprocess.Popen] = []
    yield started
    for p in started:
        if p.poll() is None:
            p.kill()
            p.communicate(timeout=DEADLINE)


# ------------------------------------------------------------------ OUT_DIR refused before the work
def _symlink_to_release(tmp, ds, capsys):
    real = tmp / "real"
    _release(ds, real, capsys)
    (tmp / "out").symlink_to(real)
    return tmp / "out", real


def _dangling(tmp, ds, capsys):
    (tmp / "out").symlink_to(tmp / "nowhere")
    return tmp / "out", None


REFUSED = {
    # case: (make OUT_DIR -> (out, folder that must stay intact), extra args, exit code, message)
    "symlinked OUT_DIR": (_symlink_to_release, ["--overwrite"], 1, "is a symbolic link"),
    "dangling symlink": (_dangling, [], 1, "which points nowhere"),
    "OUT_DIR = DATA_DIR": (lambda tmp, ds, c: (ds.data, ds.data), ["--overwrite"], 2,
                           "is the input folder DATA_DIR"),
    "OUT_DIR = parent of the inputs": (lambda tmp, ds, c: (ds.root, ds.root), ["--overwrite"], 2,
                                       "contains the input folder PARAMS_DIR"),
    "OUT_DIR inside PARAMS_DIR": (lambda tmp, ds, c: (ds.params / "out", ds.params), ["--overwrite"], 2,
                                  "lies inside the input folder PARAMS_DIR"),
    "OUT_DIR via a symlinked parent into DATA_DIR": (
        lambda tmp, ds, c: ((tmp / "via").symlink_to(ds.data) or tmp / "via" / "out", ds.data), [], 2,
        "lies inside the input folder DATA_DIR"),
    "a folder of someone else's files": (
        lambda tmp, ds, c: ((tmp / "out").mkdir() or (tmp / "out" / "thesis.tex").write_text("mine")) and
        (tmp / "out", tmp / "out"), ["--overwrite"], 2, "holds files this tool did not write"),
}


@pytest.mark.parametrize("command", ["run", "truth", "accuracy", "legacy"])
@pytest.mark.parametrize("case", list(REFUSED))
def test_out_dir_is_refused_before_the_computation(ds, tmp_path, capsys, monkeypatch, case, command):
    make, extra, code, message = REFUSED[case]
    out, keep = make(tmp_path, ds, capsys)
    inputs_before = {**_digest(ds.params), **_digest(ds.data)}
    kept_before = _digest(keep) if keep is not None else None
    _no_computation(monkeypatch)
    got, text = _cli([command, ds.params, ds.data, out, "--quiet", *extra], capsys)
    assert got == code, text
    assert message in text and "Traceback" not in text
    assert {**_digest(ds.params), **_digest(ds.data)} == inputs_before
    if keep is not None:
        assert _digest(keep) == kept_before
    assert not _leftovers(tmp_path) and not _leftovers(ds.root)


def test_sample_never_writes_over_its_spec_folder(tmp_path, capsys):
    spec = tmp_path / "spec"
    shutil.copytree(SAMPLE / "params", spec)
    before = _digest(spec)
    code, text = _cli(["sample", "--persons", 1000, "--spec", spec, "--overwrite", spec.parent, "--quiet"], capsys)
    assert code == 2 and "contains the input folder --spec" in text
    assert _digest(spec) == before


# ------------------------------------------------------------------ unwritable parent folder
def test_unwritable_parent_by_chmod(ds, tmp_path, capsys, monkeypatch):
    if os.geteuid() == 0:
        pytest.skip("root writes through chmod; see the read-only mount and the injected error")
    parent = tmp_path / "ro"
    parent.mkdir()
    parent.chmod(0o500)
    try:
        _no_computation(monkeypatch)
        code, text = _cli(["run", ds.params, ds.data, parent / "out", "--quiet"], capsys)
    finally:
        parent.chmod(0o700)
    assert code == 1 and "permission denied" in text and "Traceback" not in text


@needs_unshare
def test_unwritable_parent_by_read_only_mount(ds, tmp_path):
    parent = tmp_path / "ro"
    parent.mkdir()
    proc = _in_namespace(f"mount --bind {parent} {parent} && mount -o remount,ro,bind {parent} && "
                         f"{sys.executable} -m engine run {ds.params} {ds.data} {parent}/out --quiet")
    assert proc.returncode == 1, proc.stderr
    assert "read-only" in proc.stderr and "Traceback" not in proc.stderr
    assert not any(parent.iterdir())


def test_unwritable_parent_injected(ds, tmp_path, capsys, monkeypatch):
    real_open = os.open

    def deny(path, *a, **k):
        if str(path).startswith(str(tmp_path / "ro")):
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return real_open(path, *a, **k)

    (tmp_path / "ro").mkdir()
    monkeypatch.setattr(publish.os, "open", deny)
    _no_computation(monkeypatch)
    code, text = _cli(["run", ds.params, ds.data, tmp_path / "ro" / "out", "--quiet"], capsys)
    assert code == 1 and "cannot write in the folder" in text and "permission denied" in text
    assert "Traceback" not in text


# ------------------------------------------------------------------ full disk
def test_disk_too_small_is_found_before_the_tabulation(ds, tmp_path, capsys, monkeypatch):
    class Full:
        f_bavail, f_frsize = 1, 4096

    earlier = _release(ds, tmp_path / "out", capsys)
    monkeypatch.setattr(publish.os, "statvfs", lambda path: Full())
    drawn = []
    import engine.run

    real = engine.run.make_noise
    monkeypatch.setattr(engine.run, "make_noise", lambda *a: drawn.append(1) or real(*a))
    # (seeded like the earlier release: --overwrite replaces only an output of the same kind)
    code, text = _cli(["run", ds.params, ds.data, tmp_path / "out", "--quiet", "--overwrite", "--seed", 2], capsys)
    assert code == 1 and "not enough free disk space" in text and "Traceback" not in text
    assert not drawn  # no noise was drawn
    assert _digest(tmp_path / "out") == earlier and not _leftovers(tmp_path)


def test_disk_full_while_writing_keeps_the_earlier_release(ds, tmp_path, capsys, monkeypatch):
    earlier = _release(ds, tmp_path / "out", capsys)
    written = [0]
    real_write = outputs._HashingFile.write

    def write(self, data):
        written[0] += len(data)
        if written[0] > 2000:
            self.fh.write(b"partial")
            raise outputs.OutputError(f"could not write {self.path.name}: "
                                      f"{publish.os_message(OSError(errno.ENOSPC, 'No space left on device'))}")
        return real_write(self, data)

    monkeypatch.setattr(outputs._HashingFile, "write", write)
    code, text = _cli(["run", ds.params, ds.data, tmp_path / "out", "--quiet", "--overwrite", "--seed", 9], capsys)
    assert code == 1 and "the disk is full" in text and "Traceback" not in text
    assert _digest(tmp_path / "out") == earlier and not _leftovers(tmp_path)


def test_os_errors_of_the_file_system_are_one_line(ds, tmp_path, capsys, monkeypatch):
    import engine.run

    def enospc(*a, **k):
        raise OSError(errno.ENOSPC, "No space left on device", "/data/big.tmp")

    monkeypatch.setattr(engine.run, "prepare", enospc)
    code, text = _cli(["run", ds.params, ds.data, tmp_path / "out", "--quiet"], capsys)
    assert code == 1 and "Cannot write the output: the disk is full (/data/big.tmp)" in text
    assert not (tmp_path / "out").exists() and not _leftovers(tmp_path)


@needs_unshare
def test_real_full_disk_for_run_and_sample(ds, tmp_path):
    disk = tmp_path / "disk"
    disk.mkdir()
    py = f"{sys.executable} -m engine"
    # 1 MB: above the release's lower bound (so the run starts) but below its size (so a write fails);
    # 64 kB: below the lower bound of a sample of 20,000 persons (found before generating);
    # 128 kB: above the lower bound of 1,000 persons (78 kB) but below the sample's size
    proc = _in_namespace(
        f"mount -t tmpfs -o size=1m tmpfs {disk} && "
        f"{py} run {SAMPLE}/params {SAMPLE}/data {disk}/out --quiet --seed 1; echo rc=$?; ls -A {disk}; "
        f"umount {disk} && mount -t tmpfs -o size=64k tmpfs {disk} && "
        f"{py} sample --persons 20000 {disk}/nation --quiet; echo rc=$?; ls -A {disk}; "
        f"umount {disk} && mount -t tmpfs -o size=128k tmpfs {disk} && "
        f"{py} sample --persons 1000 {disk}/small --quiet; echo rc=$?; ls -A {disk}", timeout=300)
    out = proc.stdout.split()
    assert out.count("rc=1") == 3, proc.stdout + proc.stderr
    assert [w for w in out if not w.startswith("rc=")] == [], proc.stdout  # nothing left on the disk
    assert proc.stderr.count("the disk is full") == 2 and "not enough free disk space" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_sample_disk_full_leaves_no_folder(tmp_path, capsys, monkeypatch):
    from engine.synthetic import nation

    def full(*a, **k):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(nation, "_write_grf", full)
    code, text = _cli(["sample", "--persons", 1000, tmp_path / "nation", "--quiet"], capsys)
    assert code == 1 and "the disk is full" in text and "Traceback" not in text
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("persons", [0, 999, 340_000_001, 99_999_999_999_999])
def test_sample_of_a_size_out_of_range_is_a_usage_error_naming_the_range(tmp_path, capsys, persons):
    """Said as a size out of range, before the free-space check (which would otherwise ask
    for thousands of terabytes)."""
    code, text = _cli(["sample", "--persons", persons, tmp_path / "nation", "--quiet"], capsys)
    assert code == 2 and f"persons must be from 1,000 to 340,000,000 (got {persons:,})" in text
    assert "disk space" not in text and list(tmp_path.iterdir()) == []


# ------------------------------------------------------------------ errors and interruptions
ERRORS = {
    "unreadable input": (PermissionError(errno.EACCES, "Permission denied", "/in/person-records.txt"), 1,
                         "permission denied (/in/person-records.txt)"),
    "bytes that are not UTF-8": (UnicodeDecodeError("utf-8", b"\xff", 0, 1, "invalid start byte"), 1,
                                 "Invalid input: a file is not UTF-8 text"),
    "a Parquet parse error": ("arrow", 1, "Invalid input:"),
    "a bad argument": (ValueError("--trials must be at least 1"), 2, "Usage error: --trials must be at least 1"),
    "Ctrl-C": (KeyboardInterrupt(), 130, "Interrupted. Nothing was written"),
}


@pytest.mark.parametrize("case", list(ERRORS))
def test_errors_during_the_run_are_messages_and_leave_nothing(ds, tmp_path, capsys, monkeypatch, case):
    import pyarrow as pa

    error, code, message = ERRORS[case]
    if error == "arrow":
        error = pa.ArrowInvalid("Expected 17 columns, got 3: " + "x" * 10_000)
    earlier = _release(ds, tmp_path / "out", capsys)

    def fail(self, table):
        raise error

    monkeypatch.setattr(outputs._PartWriter, "write", fail)  # in the middle of the tabulation
    got, text = _cli(["run", ds.params, ds.data, tmp_path / "out", "--quiet", "--overwrite", "--seed", 2], capsys)
    assert got == code and message in text, text
    assert "Traceback" not in text and len(text) < 1000  # echoed library text is cut
    assert _digest(tmp_path / "out") == earlier and not _leftovers(tmp_path)


# ------------------------------------------------------------------ kill -9 and concurrent runs
def test_kill_during_tabulation_keeps_the_earlier_release_and_the_next_run_cleans_up(ds, tmp_path, capsys, procs):
    out = tmp_path / "out"
    earlier = _release(ds, out, capsys)
    flag = tmp_path / "paused"
    proc = _start_paused(["run", ds.params, ds.data, out, "--quiet", "--overwrite", "--seed", 2], "tabulating", flag)
    procs.append(proc)
    _wait_for(flag, proc)
    stale = _leftovers(tmp_path)
    assert len(stale) == 1 and stale[0].startswith(".out.partial-")
    _kill9(proc)
    assert _digest(out) == earlier  # the earlier release is whole
    check_output(ds.params, out)
    code, text = _cli(["run", ds.params, ds.data, out, "--quiet", "--overwrite", "--seed", 3], capsys)
    assert code == 0, text
    assert f"Note: removed {tmp_path / stale[0]}, left unfinished by an interrupted run" in text
    assert not _leftovers(tmp_path) and _digest(out) != earlier
    check_output(ds.params, out)


def test_kill_during_the_swap_restores_the_earlier_release(ds, tmp_path, capsys, procs):
    out = tmp_path / "out"
    earlier = _release(ds, out, capsys)
    flag = tmp_path / "paused"
    proc = _start_paused(["run", ds.params, ds.data, out, "--quiet", "--overwrite", "--seed", 2], "swap", flag)
    procs.append(proc)
    _wait_for(flag, proc)
    _kill9(proc)
    assert not out.exists()  # killed between the two renames: both folders are whole, beside it
    moved = [n for n in _leftovers(tmp_path) if ".old-" in n]
    assert len(moved) == 1 and _digest(tmp_path / moved[0]) == earlier
    # the next run, even one that writes nothing (OUT_DIR not empty), puts the earlier release back
    code, text = _cli(["run", ds.params, ds.data, out, "--quiet"], capsys)
    assert code == 2 and "restored" in text and "not empty" in text
    assert _digest(out) == earlier and not _leftovers(tmp_path)
    check_output(ds.params, out)


def test_two_runs_into_one_folder(ds, tmp_path, capsys, procs):
    out = tmp_path / "out"
    flag = tmp_path / "paused"
    first = _start_paused(["run", ds.params, ds.data, out, "--quiet", "--seed", 1], "tabulating", flag)
    procs.append(first)
    _wait_for(flag, first)
    code, text = _cli(["run", ds.params, ds.data, out, "--quiet", "--overwrite", "--seed", 2], capsys)
    assert code == 1, text
    assert f"is being written by another run (process {first.pid}" in text and "Traceback" not in text
    assert len(_leftovers(tmp_path)) == 1  # the first run's staging folder is untouched
    assert not out.exists()
    _kill9(first)  # a killed run does not hold the lock any more (flock dies with the process)
    code, text = _cli(["run", ds.params, ds.data, out, "--quiet", "--seed", 2], capsys)
    assert code == 0, text
    assert not _leftovers(tmp_path) and (out / MARKER).is_file()
    assert not (tmp_path / ".out.lock").exists()


# ------------------------------------------------------------------ issue 21, items 2, 10 (third case), 16: accuracy
@pytest.mark.parametrize("seed", [None, 4])
def test_accuracy_study_folders_hold_nothing_confidential_and_trials_are_never_a_release(ds, tmp_path, capsys, seed):
    """21.2: `accuracy --layout production|both` writes no operator file (exact counts)
    into its folder; kept trials, secure noise or seeded, are marked as a study and
    check-output never certifies one as a release."""
    for layout in ("production", "both"):
        out = tmp_path / f"acc-{layout}-{seed}"
        args = ["accuracy", ds.params, ds.data, out, "--trials", 2, "--layout", layout, "--keep-trials", "--quiet"]
        code, text = _cli(args + (["--seed", seed] if seed is not None else []), capsys)
        assert code == 0, text
        names = [p.relative_to(out).as_posix() for p in out.rglob("*")]
        assert not [n for n in names if "CONFIDENTIAL" in n or "operator" in n], names
        assert "CONFIDENTIAL" not in (out / MARKER).read_text()
        assert not list(tmp_path.glob("*CONFIDENTIAL*"))  # nor beside it
        for trial in sorted((out / "single_runs").iterdir()):
            manifest = (trial / "manifest.json").read_text()
            assert '"kind": "accuracy study trial"' in manifest and '"for_release": false' in manifest
            assert '"confidential"' not in manifest and "operator_file" not in manifest
            for where in ("", "t1/", "t2/", "suppressed/"):
                assert (trial / where / "NOT-FOR-RELEASE.txt").is_file()
            code, text = _cli(["check-output", ds.params, trial], capsys)
            assert code == 0 and "NOT FOR RELEASE" in text and ", a release:" not in text, text
            # without its markers a trial is no release either: check-output refuses it
            broken = tmp_path / "broken"
            shutil.copytree(trial, broken)
            (broken / "NOT-FOR-RELEASE.txt").unlink()
            code, text = _cli(["check-output", ds.params, broken], capsys)
            assert code == 1, text
            shutil.rmtree(broken)


def test_accuracy_release_without_t1_is_a_message(ds, tmp_path, capsys):
    """21.10, third case: `accuracy --release` on a folder without t1/ (was KeyError 'COUNT')."""
    rel = tmp_path / "rel"
    _release(ds, rel, capsys)
    shutil.rmtree(rel / "t1")
    out = tmp_path / "acc"
    for layout in ("studio", "production", "both"):
        code, text = _cli(["accuracy", ds.params, ds.data, out, "--release", rel, "--layout", layout, "--quiet"],
                          capsys)
        assert code == 1 and "rel/t1/: a folder of T1 part files" in text, text
        assert "Traceback" not in text and "KeyError" not in text and not out.exists()
    empty = tmp_path / "empty"
    empty.mkdir()
    code, text = _cli(["accuracy", ds.params, ds.data, out, "--release", empty, "--quiet"], capsys)
    assert code == 1 and "empty/t1/" in text and not out.exists(), text


def test_accuracy_options_are_refused_or_honoured(ds, tmp_path, capsys):
    """21.16: --consistency with --invariant is refused (it was silently ignored); a
    malformed --release names file and line (exit 1, was 2 without a place); a release
    of another nation is refused with a message."""
    out = tmp_path / "acc"
    code, text = _cli(["accuracy", ds.params, ds.data, out, "--invariant", "STATE", "--consistency", "all",
                       "--quiet"], capsys)
    assert code == 2 and "--invariant and --consistency cannot be combined" in text and not out.exists(), text
    rel = tmp_path / "rel"
    _release(ds, rel, capsys)
    part = next(p for p in sorted((rel / "t1").glob("*.csv")) if p.name != "headers.csv")
    lines = part.read_text().splitlines()
    for bad, where in ((lines[1].rsplit("|", 1)[0] + "|12x", "column COUNT"), (lines[1] + "|7", "fields")):
        broken = tmp_path / "broken"
        shutil.copytree(rel, broken)
        (broken / "t1" / part.name).write_text("\n".join(lines[:1] + [bad] + lines[2:]) + "\n")
        code, text = _cli(["accuracy", ds.params, ds.data, out, "--release", broken, "--quiet"], capsys)
        assert code == 1 and f"broken/t1/{part.name}, line 2" in text and where in text, text
        assert "Traceback" not in text and not out.exists()
        shutil.rmtree(broken)
    # another nation: the same layout of files, other geography and persons
    other = Dataset(tmp_path / "other")
    other.persons = [person(block=("06", "075", "010100", "1001", "67000", "9999"), races=("1010",))] * 30
    other.blocks = [("06", "075", "010100", "1001", "67000", "9999")]
    other.config = dict(ds.config, state_filter_us=["06"], run_pr=False)
    other.write()
    elsewhere = tmp_path / "elsewhere"
    code, text = _cli(["run", other.params, other.data, elsewhere, "--seed", 1, "--quiet"], capsys)
    assert code == 0, text
    code, text = _cli(["accuracy", ds.params, ds.data, out, "--release", elsewhere, "--quiet"], capsys)
    assert code == 1 and "made from another GRF-C than DATA_DIR's" in text and "another nation" in text, text
    assert not out.exists()


# ================================================================== issue 21: safe failure, round two
def _cli_on_a_thread(args, capsys, fifos, timeout: float = 60) -> subprocess.CompletedProcess:
    """`python -m engine ARGS` as `engine.cli.main(ARGS)` on a thread of this process, so
    that a hang fails the test instead of blocking it: a command that opens one of `fifos`
    and waits on it is still running after `timeout`; the test then opens and closes the
    FIFO's other end (the blocked read ends) and fails. (A subprocess per command did the
    same at ~2 s of CPU each to start Python and the engine's libraries.)"""
    result: list = []

    def call():
        try:
            result.append(main([str(a) for a in args]))
        except BaseException as exc:  # re-raised on the test's thread
            result.append(exc)

    thread = threading.Thread(target=call, name="engine-cli", daemon=True)
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        for fifo in fifos:
            try:
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
            except OSError:
                pass  # nobody has it open for reading
        thread.join(DEADLINE)
        pytest.fail(f"`{' '.join(map(str, args))}` waited on a FIFO for {timeout:g} s")
    if isinstance(result[0], BaseException):
        raise result[0]
    captured = capsys.readouterr()
    return subprocess.CompletedProcess(args, result[0], captured.out, captured.err)


# ---- item 6: the operator file is written before the release is published
def test_a_full_disk_at_the_operator_file_leaves_out_dir_as_it_was(ds, tmp_path, capsys, monkeypatch):
    out = tmp_path / "out"
    earlier = _release(ds, out, capsys)
    op = outputs.operator_path(out)
    op_before = op.read_bytes()
    real_fdopen = outputs.os.fdopen

    class FullDisk:
        def __init__(self, fh):
            self.fh = fh

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.fh.close()

        def write(self, data):
            raise OSError(errno.ENOSPC, "No space left on device")

    def fdopen(fd, *a, **k):
        fh = real_fdopen(fd, *a, **k)
        return FullDisk(fh) if ".partial-" in os.readlink(f"/proc/self/fd/{fd}") else fh

    monkeypatch.setattr(outputs.os, "fdopen", fdopen)
    code, text = _cli(["run", ds.params, ds.data, out, "--quiet", "--overwrite", "--seed", 5], capsys)
    assert code == 1, text
    assert f"Cannot write the output: the operator file {op.name} could not be written: the disk is full" in text
    assert "Nothing was written; OUT_DIR is as it was." in text and "published" not in text
    assert _digest(out) == earlier and op.read_bytes() == op_before  # true: the earlier release and its file
    assert not _leftovers(tmp_path) and "Traceback" not in text


def test_a_release_that_cannot_take_its_operator_file_says_exactly_what_is_on_disk(ds, tmp_path, capsys,
                                                                                   monkeypatch):
    out = tmp_path / "out"
    real_replace = outputs.os.replace

    def replace(a, b, *rest, **kw):
        if str(b).endswith(outputs.OPERATOR_SUFFIX):
            raise OSError(errno.EIO, "Input/output error", str(b))
        return real_replace(a, b, *rest, **kw)

    monkeypatch.setattr(outputs.os, "replace", replace)
    code, text = _cli(["run", ds.params, ds.data, out, "--quiet", "--seed", 5], capsys)
    assert code == 1 and "the release was published, but its operator file could not be renamed" in text
    assert "Nothing was written" not in text
    staged = [p for p in tmp_path.iterdir() if p.name.startswith(".out.partial-")]
    assert len(staged) == 1 and staged[0].is_file()
    assert f"On disk: the complete release in {out}; its operator file (the exact counts) is {staged[0]}." in text
    check_output(ds.params, out)  # the release is complete
    assert "confidential" in json.loads(staged[0].read_text())


# ---- item 7: a user who can write neither $HOME nor the project folder
@needs_unshare
def test_run_without_any_writable_numba_cache_folder(ds, tmp_path):
    """The project copy and $HOME are read-only mounts (root cannot write through them),
    so numba finds no cache folder: the kernel is compiled in memory, no traceback."""
    copy, home = tmp_path / "project", tmp_path / "home"
    home.mkdir()
    shutil.copytree(REPO / "engine", copy / "engine", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(REPO / "calculators", copy / "calculators", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(REPO / "methods", copy / "methods", ignore=shutil.ignore_patterns("__pycache__"))
    ro = " && ".join(f"mount --bind {d} {d} && mount -o remount,ro,bind {d}" for d in (copy, home))
    # One process says where numba keeps the kernel, then runs the command line's main
    # (`python -m engine run ...`), so that Python, numba and the engine start once.
    probe_and_run = ("import sys, numba.core.caching, engine.noise._kernel as k; "
                     "print('cached' if k.run._cache.__class__.__name__ != 'NullCache' else 'in memory', flush=True); "
                     "from engine.cli import main; sys.exit(main(sys.argv[1:]))")
    script = (f"{ro} && cd {copy} && env -u NUMBA_CACHE_DIR -u XDG_CACHE_HOME HOME={home} PYTHONPATH={copy} "
              f"PYTHONDONTWRITEBYTECODE=1 {sys.executable} -c \"{probe_and_run}\" "
              f"run {ds.params} {ds.data} {tmp_path}/out --seed 1 --quiet")
    proc = subprocess.run(["unshare", "-m", "sh", "-c", script], capture_output=True, text=True, timeout=300,
                          check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("in memory") and "Traceback" not in proc.stderr
    assert not list(copy.rglob("*.nbi")) and not list(home.rglob("*"))  # nothing could be cached
    check_output(ds.params, tmp_path / "out")


def test_run_as_a_user_without_write_access():
    """The same as an unprivileged user whose $HOME does not exist and who cannot write the
    project folder, where this process can drop its privileges (root with setpriv)."""
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        pytest.skip("needs root and setpriv to drop privileges")
    drop = ["setpriv", "--reuid=54321", "--regid=54321", "--clear-groups"]
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", "XDG_CACHE_HOME")}
    env.update(HOME="/nonexistent", PYTHONPATH=str(REPO), PYTHONDONTWRITEBYTECODE="1")
    probe = subprocess.run([*drop, sys.executable, "-c", "import numba, engine"], capture_output=True, env=env,
                           cwd="/", timeout=120, check=False)
    if probe.returncode != 0:
        pytest.skip("an unprivileged user cannot run this Python or read the project here")
    work = Path(tempfile.mkdtemp(prefix="safetab-h21-"))  # the pytest folder is private to root
    try:
        work.chmod(0o777)
        # the small hand-built inputs (readable by anyone, beside the output): the point is the
        # user's rights and numba's missing cache, not the size of the data
        ds = _dataset(work)
        for path in [work / "in", *(work / "in").rglob("*")]:
            path.chmod(0o755 if path.is_dir() else 0o644)
        proc = subprocess.run([*drop, sys.executable, "-m", "engine", "run", ds.params, ds.data,
                               work / "rel", "--seed", "1", "--quiet"], cwd="/", env=env, capture_output=True,
                              text=True, timeout=300, check=False)
        assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
        check_output(ds.params, work / "rel")
    finally:
        shutil.rmtree(work, ignore_errors=True)


# ---- item 10: tracebacks of spines --area and check-output
def test_spines_area_whose_lines_cancel_is_a_message(tmp_path, capsys):
    area = tmp_path / "area.txt"
    area.write_text("tract 06001000100\n- tract 06001000100\n")
    code, text = _cli(["spines", SAMPLE / "params", SAMPLE / "data", "--area", area], capsys)
    assert code == 1 and "Traceback" not in text, text
    assert f"{area}: an area of at least one block (its lines add and subtract the same blocks" in text


def test_check_output_on_a_deeply_nested_manifest(ds, tmp_path, capsys):
    out = tmp_path / "out"
    _release(ds, out, capsys)
    (out / "manifest.json").write_text("[" * 100_000 + "]" * 100_000)
    code, text = _cli(["check-output", ds.params, out], capsys)
    assert code == 1 and "Traceback" not in text
    assert ("manifest.json: found a manifest.json that cannot be read (it is nested too deeply); expected a "
            "readable JSON manifest") in text


# ---- item 11: FIFOs and other special files are refused before they are opened
@pytest.mark.parametrize("command", ["validate", "run"])
def test_a_fifo_config_json_is_refused_not_waited_on(ds, tmp_path, capsys, command):
    cfg = ds.params / "config.json"
    cfg.unlink()
    os.mkfifo(cfg)
    args = [command, ds.params, ds.data] + ([tmp_path / "out"] if command == "run" else [])
    proc = _cli_on_a_thread([*args, "--quiet"], capsys, [cfg])  # a read of the FIFO would block until the timeout
    assert proc.returncode == 1, proc.stderr
    assert "- config.json: is a FIFO (named pipe), not a regular file; nothing was read from it" in proc.stderr
    assert "Traceback" not in proc.stderr and not (tmp_path / "out").exists() and not _leftovers(tmp_path)


@pytest.mark.parametrize("where, name", [("data", "person-records.txt"), ("data", "GRF-C.txt"),
                                         ("params", "race-characteristic-iterations.txt")])
def test_a_fifo_data_or_spec_file_is_named_not_waited_on(ds, tmp_path, capsys, where, name):
    path = getattr(ds, where) / name
    path.unlink()
    os.mkfifo(path)
    proc = _cli_on_a_thread(["validate", ds.params, ds.data, "--quiet"], capsys, [path])  # a read would block
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert f"- {name}: found a FIFO (named pipe) at {path} (it was not opened); expected a regular file" \
        in proc.stderr


def test_a_device_as_config_json_is_refused(ds, capsys):
    cfg = ds.params / "config.json"
    cfg.unlink()
    cfg.symlink_to("/dev/zero")  # reading it would never end
    code, text = _cli(["validate", ds.params, ds.data, "--quiet"], capsys)
    assert code == 1 and "is a character device, not a regular file" in text


def test_check_output_does_not_open_a_fifo_listed_in_sha256sums(ds, tmp_path, capsys):
    out = tmp_path / "out"
    _release(ds, out, capsys)
    part = sorted((out / "t1").glob("*-1.csv"))[0]
    part.unlink()
    os.mkfifo(part)
    proc = _cli_on_a_thread(["check-output", ds.params, out], capsys, [part])
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    rel = part.relative_to(out).as_posix()
    assert f"{rel}: found a FIFO (named pipe) (it was not opened); expected a regular file of the output" in proc.stderr
    assert proc.stderr.count(f"{rel}:") == 1  # said once, not again as a part file
    assert "Invalid output: 1 problem found." in proc.stderr  # not every group of the file as missing
    (out / "SHA256SUMS").rename(tmp_path / "sums")
    os.mkfifo(out / "SHA256SUMS")
    proc = _cli_on_a_thread(["check-output", ds.params, out], capsys, [out / "SHA256SUMS"])
    assert proc.returncode == 1 and "SHA256SUMS: found a FIFO (named pipe) (it was not opened); expected a regular " \
        "file" in proc.stderr


# ---- item 12: no thread is left running when the command line returns
# ---- item 15: the whole documented range of budgets
@pytest.mark.parametrize("option", [["--consistency", "tree-dp"], ["--consistency", "least-squares"],
                                    ["--invariant", "COUNTY"]])
def test_every_level_at_the_largest_budget(ds, tmp_path, capsys, option):
    """At rho = 1e6 the discrete Gaussian's variance underflows to 0: the values are exact
    and the post-processing holds them (it said "variances must be positive", exit 2)."""
    ds.config.update({lvl.budget_key: 1e6 for lvl in POPULATION_GROUP_LEVELS})
    ds.write()
    out = tmp_path / "out"
    code, text = _cli(["run", ds.params, ds.data, out, "--quiet", "--seed", 3, *option], capsys)
    assert code == 0, text
    check_output(ds.params, out)
    truth = tmp_path / "truth"
    assert _cli(["truth", ds.params, ds.data, truth, "--quiet"], capsys)[0] == 0
    if option[0] == "--consistency":  # the noise is 0: the release is the truth
        for kind in ("t1", "t2", "suppressed"):
            assert _tables(out / kind) == _tables(truth / kind)


def _tables(folder: Path) -> list[str]:
    return sorted(line for p in folder.glob("*.csv") for line in p.read_text().splitlines()[1:])


def test_budgets_too_far_apart_for_the_consistency_methods_are_a_message(ds, tmp_path, capsys):
    """rho 200 at USA and STATE beside 1e-6 below: the noise variances differ by about
    1e17, more than double precision can weigh; refused at once (not a 4 GB, endless
    tree DP, not a traceback)."""
    ds.config.update({lvl.budget_key: (200 if lvl.geo in ("USA", "STATE", "PR-STATE") else 1e-6)
                      for lvl in POPULATION_GROUP_LEVELS})
    ds.write()
    for method in ("tree-dp", "least-squares"):
        code, text = _cli(["run", ds.params, ds.data, tmp_path / method, "--quiet", "--seed", 3, "--consistency",
                           method], capsys)
        assert code == 2 and "Traceback" not in text, text
        assert "noise variances of these counts differ by a factor of" in text
        assert "choose budgets closer together" in text and not (tmp_path / method).exists()


# ---- item 17: check-output gaps
def test_check_output_refuses_a_part_file_that_links_to_an_identical_copy(ds, tmp_path, capsys):
    out = tmp_path / "out"
    _release(ds, out, capsys)
    part = sorted((out / "t1").glob("*.csv"))[0]
    copy = tmp_path / "copy.csv"
    shutil.copy(part, copy)
    part.unlink()
    part.symlink_to(copy)  # same bytes, so the checksum matches
    code, text = _cli(["check-output", ds.params, out], capsys)
    assert code == 1
    rel = part.relative_to(out).as_posix()
    assert f"{rel}: found a symbolic link to " in text  # the target, cut short
    assert "(it was not opened); expected a regular file of the output" in text


def test_check_output_reports_an_extra_empty_folder(ds, tmp_path, capsys):
    out = tmp_path / "out"
    _release(ds, out, capsys)
    (out / "t1" / "extra").mkdir()
    code, text = _cli(["check-output", ds.params, out], capsys)
    assert code == 1
    assert "t1/extra/: found a folder that holds no file listed in SHA256SUMS; expected only the folders" in text


# ---- item 5: bounded work and messages for an area list
def test_an_area_list_is_bounded_in_lines_and_in_problems_listed():
    from engine.errors import InputError
    from engine.inputs.validate import load_inputs
    from engine.reports import spines as rs

    geo = load_inputs(SAMPLE / "params", SAMPLE / "data").geography
    with pytest.raises(InputError) as err:
        rs.parse_area("x\n" * 200_000, geo, file="area.txt")
    assert err.value.total == 1 and "at most 50,000 lines (the list has 200,000)" in err.value.report()
    with pytest.raises(InputError) as err:
        rs.parse_area("bogus\n" * 50_000, geo, file="area.txt")
    assert err.value.total == 50_000 and len(err.value.problems) == 20 and len(err.value.report()) < 3000


# ---- item 12: nothing of pyarrow (or tqdm) is left running when a command returns
def test_pyarrow_gets_no_python_callback_on_its_threads_unless_a_row_is_malformed(ds, monkeypatch):
    """The abort at exit came from a Python object held by pyarrow's worker threads (the
    malformed-row handler), released by a worker while the interpreter was exiting. Well
    formed files are read with no Python callback; a malformed row makes the reader read
    the file again on the calling thread, with the handler, and every row is reported."""
    from engine.errors import ProblemLog
    from engine.inputs import readers

    made = []
    real = readers.pacsv.open_csv

    def open_csv(path, read_options=None, parse_options=None, **kw):
        made.append((parse_options.invalid_row_handler is not None, read_options.use_threads))
        return real(path, read_options=read_options, parse_options=parse_options, **kw)

    monkeypatch.setattr(readers.pacsv, "open_csv", open_csv)
    df = readers.DataFile(ds.data / "person-records.txt", "txt")
    log = ProblemLog()
    rows = sum(b.table.num_rows for b in readers.iter_batches(df, readers.PERSON_COLUMNS, log))
    assert rows == 60 and not log and made == [(False, True)]  # threads, no callback
    lines = (ds.data / "person-records.txt").read_text().splitlines(keepends=True)
    lines[5] = lines[5].rstrip("\n") + "|extra\n"
    lines[40] = "1|2\n"
    (ds.data / "person-records.txt").write_text("".join(lines))
    made.clear()
    batches = list(readers.iter_batches(df, readers.PERSON_COLUMNS, log))
    assert made == [(False, True), (True, False)]  # then the calling thread only, with the handler
    assert sum(b.table.num_rows for b in batches) == 58
    assert [(p.line, p.expected) for p in log.problems] == [
        (6, "17 fields separated by '|' (found 18)"), (41, "17 fields separated by '|' (found 2)")]


def test_prefetch_ends_its_thread_however_the_consumer_stops():
    import threading

    from engine.inputs.readers import prefetch

    closed = []

    def source():
        try:
            yield from range(1000)
        finally:
            closed.append(threading.current_thread().name)

    it = prefetch(source(), depth=2)
    assert next(it) == 0
    it.close()  # the consumer stops early (an error, Ctrl-C...)
    assert closed == ["safetab-prefetch"]  # the source was closed by the worker, which was joined
    assert not [t for t in threading.enumerate() if t.name == "safetab-prefetch"]

    def failing():
        yield 1
        raise ValueError("broken input")

    with pytest.raises(ValueError, match="broken input"):
        list(prefetch(failing()))
    assert not [t for t in threading.enumerate() if t.name == "safetab-prefetch"]


def test_validate_leaves_no_thread_running(ds, capsys):
    import threading

    before = set(threading.enumerate())
    (ds.data / "person-records.txt").write_text((ds.data / "person-records.txt").read_text() + "1|2\n")
    code, text = _cli(["validate", ds.params, ds.data], capsys)  # with progress bars (no --quiet)
    assert code == 1 and "found 2" in text
    assert [t.name for t in set(threading.enumerate()) - before if t.is_alive()] == []
