"""--overwrite replaces only an earlier output of the same kind, and the operator file
beside OUT_DIR only together with the output it belongs to."""

from __future__ import annotations

import pytest

from engine.cli import main
from engine.release.outputs import operator_path
from tests.engine.conftest import BLOCKS, person


@pytest.fixture
def small(dataset):
    dataset.persons = [person(block=BLOCKS[i % 4], races=("1010",)) for i in range(12)]
    return dataset.write()


def _tree(folder):
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _args(small, *rest):
    return [str(small.params), str(small.data), *map(str, rest), "--quiet"]


def test_a_release_is_never_replaced_by_another_kind_of_output(small, tmp_path, capsys):
    rel = tmp_path / "rel"
    assert main(["run", *_args(small, rel)]) == 0
    capsys.readouterr()
    before, op_before = _tree(rel), operator_path(rel).read_bytes()
    attempts = [
        (["truth", *_args(small, rel), "--overwrite"], "SafeTab-P tables (ground truth)"),
        (["run", *_args(small, rel), "--overwrite", "--seed", "3"], "SafeTab-P tables (seeded release)"),
        (["sample", str(rel), "--persons", "1000", "--overwrite", "--quiet"], "synthetic sample (invented persons)"),
        (["accuracy", *_args(small, rel), "--overwrite", "--seed", "1"], "accuracy report"),
        (["accuracy", *_args(small, rel), "--overwrite", "--seed", "1", "--consistency", "none,tree-dp"],
         "consistency comparison"),
        (["legacy", *_args(small, rel), "--overwrite"], "legacy cell-suppression study"),
    ]
    for argv, writes in attempts:
        code = main(argv)
        err = capsys.readouterr().err
        assert code == 1, (argv, err)
        assert "holds an earlier output of another kind: SafeTab-P tables (release)" in err, err
        assert f"this command writes {writes}" in err and "Traceback" not in err
        # nothing written: the release, its operator file, and no leftover beside them
        assert _tree(rel) == before and operator_path(rel).read_bytes() == op_before
        assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["in", "rel", "rel.CONFIDENTIAL-operator.json"])
    # the same kind is still replaced
    assert main(["run", *_args(small, rel), "--overwrite"]) == 0
    assert _tree(rel) != before and operator_path(rel).read_bytes() != op_before


def test_accuracy_of_a_release_never_replaces_another_release(small, tmp_path, capsys):
    rel1, rel_b = tmp_path / "rel1", tmp_path / "relB"
    assert main(["run", *_args(small, rel1), "--seed", "1"]) == 0
    assert main(["run", *_args(small, rel_b), "--seed", "2"]) == 0
    before = _tree(rel_b)
    capsys.readouterr()
    assert main(["accuracy", *_args(small, rel_b), "--release", str(rel1), "--overwrite"]) == 1
    assert "SafeTab-P tables (seeded release)" in capsys.readouterr().err
    assert _tree(rel_b) == before
    # a report replaces a report
    acc = tmp_path / "acc"
    assert main(["accuracy", *_args(small, acc), "--release", str(rel1)]) == 0
    assert main(["accuracy", *_args(small, acc), "--release", str(rel_b), "--overwrite"]) == 0
    # ground truth is not replaced by a sample either
    truth = tmp_path / "truth"
    assert main(["truth", *_args(small, truth)]) == 0
    capsys.readouterr()
    assert main(["sample", str(truth), "--persons", "1000", "--overwrite", "--quiet"]) == 1
    assert "SafeTab-P tables (ground truth)" in capsys.readouterr().err


def test_a_stray_operator_file_is_never_written_over(small, tmp_path, capsys):
    """X.CONFIDENTIAL-operator.json beside a folder X that does not hold its output (moved
    away, deleted) may be the only copy of that output's exact counts."""
    rel = tmp_path / "rel"
    assert main(["run", *_args(small, rel), "--seed", "1"]) == 0
    op = operator_path(rel)
    kept = op.read_bytes()
    rel.rename(tmp_path / "moved")
    for extra in ([], ["--overwrite"]):
        for command in (["truth"], ["run", "--seed", "2"]):
            code = main([command[0], *_args(small, rel), *command[1:], *extra])
            err = capsys.readouterr().err
            assert code == 2, (command, extra, err)
            assert f"{op} exists: the operator file (the exact counts) of an earlier output named rel" in err
            assert "Traceback" not in err
            assert op.read_bytes() == kept and not rel.exists()
    # an empty OUT_DIR does not hold it either
    rel.mkdir()
    assert main(["run", *_args(small, rel), "--seed", "2", "--overwrite"]) == 2
    assert op.read_bytes() == kept and list(rel.iterdir()) == []
    # a release and the operator file that belongs to it are replaced together
    rel.rmdir()
    (tmp_path / "moved").rename(rel)
    assert main(["run", *_args(small, rel), "--seed", "2", "--overwrite"]) == 0
    assert op.read_bytes() != kept
    # an operator file of another release (its manifest differs) is not replaced with this one
    other = tmp_path / "other"
    assert main(["run", *_args(small, other), "--seed", "3"]) == 0
    op.write_bytes(operator_path(other).read_bytes())
    capsys.readouterr()
    assert main(["run", *_args(small, rel), "--seed", "4", "--overwrite"]) == 2
    assert "which OUT_DIR does not hold" in capsys.readouterr().err
    assert op.read_bytes() == operator_path(other).read_bytes()
