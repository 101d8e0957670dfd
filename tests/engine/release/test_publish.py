"""engine.release.publish: OUT_DIR checks, the lock, the staged swap, recovery of interrupted runs."""

from __future__ import annotations

import os
import subprocess

import pytest

from engine.errors import OutputError, UsageError
from engine.release import publish
from engine.release.publish import MARKER, StagedOutput, check_target, is_own_output, marker_entries


def _publish(out, files: dict[str, bytes], overwrite=False, inputs=()):
    with StagedOutput(out, overwrite=overwrite, inputs=inputs, description="test output") as folder:
        for rel, data in files.items():
            folder.write_file(rel, data)
        folder.publish(["made by a test"])
    return folder


def _tree(folder):
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_published_folder_lists_every_file_and_sha256sum_agrees(tmp_path):
    out = tmp_path / "out"
    _publish(out, {"a.txt": b"alpha\n", "sub/b.csv": b"x|y\n"})
    comments, entries = marker_entries(out)
    assert comments[0].startswith(publish.MARKER_HEAD) and "made by a test" in "\n".join(comments)
    assert set(entries) == {"a.txt", "sub/b.csv"}
    assert is_own_output(out)
    # the standard tool agrees with the marker
    proc = subprocess.run(["sha256sum", "-c", "--strict", MARKER], cwd=out, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # no leftovers: no staging folder, no lock file
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_a_foreign_file_makes_the_folder_not_ours(tmp_path):
    out = tmp_path / "out"
    _publish(out, {"a.txt": b"alpha\n"})
    (out / "notes.md").write_text("mine")
    assert not is_own_output(out)
    with pytest.raises(UsageError, match="did not write"):
        check_target(out, overwrite=True)
    (out / "notes.md").unlink()
    (out / MARKER).write_text("not our marker\n")
    assert not is_own_output(out)


def test_overwrite_replaces_an_earlier_output_only_once_the_new_one_is_complete(tmp_path):
    out = tmp_path / "out"
    _publish(out, {"a.txt": b"old\n"})
    with pytest.raises(UsageError, match="not empty"):
        StagedOutput(out)
    folder = StagedOutput(out, overwrite=True, description="test output")
    folder.write_file("a.txt", b"new\n")
    # until published, the old output is untouched and the new one sits in a hidden staging folder
    assert (out / "a.txt").read_bytes() == b"old\n"
    assert folder.stage.name.startswith(".out.partial-") and folder.stage.parent == tmp_path
    folder.publish()
    folder.close()
    assert _tree(out)["a.txt"] == b"new\n" and is_own_output(out)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_overwrite_replaces_only_an_earlier_output_of_the_same_kind(tmp_path):
    out = tmp_path / "out"
    _publish(out, {"a.txt": b"old\n"})
    assert publish.output_kind(out) == "test output"
    # another kind: refused with both kinds named, before and at publishing; the old output stays
    with pytest.raises(OutputError, match=r"another kind: test output; this command writes other report"):
        StagedOutput(out, overwrite=True, description="other report")
    with pytest.raises(OutputError, match="another kind"):
        check_target(out, overwrite=True, kind="other report")
    assert (out / "a.txt").read_bytes() == b"old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
    # the same kind is replaced
    _publish(out, {"a.txt": b"new\n"}, overwrite=True)
    assert (out / "a.txt").read_bytes() == b"new\n"


def test_tables_are_told_apart_by_their_manifest_mode(tmp_path):
    out = tmp_path / "out"
    with StagedOutput(out, description=publish.TABLES, kind=publish.tables_kind("release")) as folder:
        folder.write_file("manifest.json", b'{"mode": {"kind": "release", "for_release": true}}')
        folder.publish()
    assert publish.output_kind(out) == "SafeTab-P tables (release)"
    with pytest.raises(OutputError, match=r"SafeTab-P tables \(release\); this command writes SafeTab-P tables "
                                          r"\(ground truth\)"):
        StagedOutput(out, overwrite=True, description=publish.TABLES, kind=publish.tables_kind("ground truth"))
    assert publish.output_kind(out) == "SafeTab-P tables (release)"


def test_the_swap_without_renameat2_leaves_no_leftover(tmp_path, monkeypatch):
    monkeypatch.setattr(publish, "_exchange", lambda a, b: False)
    out = tmp_path / "out"
    _publish(out, {"a.txt": b"old\n"})
    _publish(out, {"a.txt": b"new\n"}, overwrite=True)
    assert (out / "a.txt").read_bytes() == b"new\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_abort_removes_the_stage_and_keeps_the_old_output(tmp_path):
    out = tmp_path / "out"
    _publish(out, {"a.txt": b"old\n"})
    with pytest.raises(RuntimeError):
        with StagedOutput(out, overwrite=True, description="test output") as folder:
            folder.write_file("a.txt", b"half")
            raise RuntimeError("the run failed")
    assert _tree(out)["a.txt"] == b"old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_a_second_writer_of_the_same_folder_is_refused_while_the_first_lives(tmp_path):
    out = tmp_path / "out"
    first = StagedOutput(out, description="test output")
    with pytest.raises(OutputError, match="being written by another run") as err:
        StagedOutput(out)
    assert f"process {os.getpid()}" in str(err.value) and "test output" in str(err.value)
    assert first.stage.is_dir()  # the refused writer did not touch the first one's work
    first.write_file("a.txt", b"1")
    first.publish()
    first.close()
    _publish(out, {"a.txt": b"2"}, overwrite=True)  # the lock is free again
    assert (out / "a.txt").read_bytes() == b"2"


def test_recovery_removes_stale_staging_folders_and_restores_a_folder_moved_aside(tmp_path, caplog):
    out = tmp_path / "out"
    _publish(out, {"a.txt": b"old\n"})
    # what a kill -9 between the two renames of the fallback swap leaves behind
    os.rename(out, tmp_path / ".out.old-1a2b3c4d")
    (tmp_path / ".out.partial-deadbeef").mkdir()
    (tmp_path / ".out.partial-deadbeef" / "a.txt").write_text("new")
    (tmp_path / ".out.partial-.partial-abcdefgh").mkdir()  # not ours: another name's pattern
    with caplog.at_level("WARNING", logger="engine.release.publish"):
        with pytest.raises(UsageError, match="not empty"):
            StagedOutput(out)  # recovery first, then the (restored) folder is not empty
    assert _tree(out)["a.txt"] == b"old\n" and is_own_output(out)
    assert not (tmp_path / ".out.partial-deadbeef").exists()
    assert (tmp_path / ".out.partial-.partial-abcdefgh").exists()
    text = caplog.text
    assert "restored" in text and ".out.partial-deadbeef" in text and "interrupted run" in text


@pytest.mark.parametrize("how", ["is", "contains", "lies inside"])
def test_out_dir_over_an_input_folder_is_refused(tmp_path, how):
    data = tmp_path / "in" / "data"
    data.mkdir(parents=True)
    (data / "person-records.txt").write_text("precious")
    out = {"is": data, "contains": tmp_path / "in", "lies inside": data / "out"}[how]
    with pytest.raises(UsageError, match=f"{how} the input folder DATA_DIR"):
        StagedOutput(out, overwrite=True, inputs=[("DATA_DIR", data)])
    assert (data / "person-records.txt").read_text() == "precious"


def test_symbolic_links_are_resolved_before_comparing_with_the_inputs(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (tmp_path / "via").symlink_to(data)
    with pytest.raises(UsageError, match="lies inside the input folder"):
        check_target(tmp_path / "via" / "out", inputs=[("DATA_DIR", data)])
    (tmp_path / "link").symlink_to(data)
    with pytest.raises(OutputError, match="symbolic link"):
        check_target(tmp_path / "link", inputs=[("DATA_DIR", data)])
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    with pytest.raises(OutputError, match="points nowhere"):
        check_target(tmp_path / "dangling")


def test_free_space_is_checked_before_the_work(tmp_path, monkeypatch):
    class Tiny:
        f_bavail, f_frsize = 10, 4096

    monkeypatch.setattr(publish.os, "statvfs", lambda path: Tiny())
    with StagedOutput(tmp_path / "out") as folder:
        folder.ensure_space(40_000, "the test")
        with pytest.raises(OutputError, match=r"needs at least 50.0 kB, and 41.0 kB are free"):
            folder.ensure_space(50_000, "the test")


def test_the_lock_survives_a_finished_run_unlinking_its_file(tmp_path):
    out = tmp_path / "out"
    a = StagedOutput(out)
    a.abort()  # unlinks .out.lock
    b = StagedOutput(out)
    assert (tmp_path / ".out.lock").is_file()
    with pytest.raises(OutputError, match="another run"):
        StagedOutput(out)
    b.abort()
