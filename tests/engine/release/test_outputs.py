"""What a run leaves on disk: the layout, the confidential counts beside the folder, the
NOT-FOR-RELEASE markers, headers of empty tables, the completion marker."""

from __future__ import annotations

import hashlib
import json

import pytest

from engine.release.outputs import OPERATOR_SUFFIX, operator_path, read_operator_file
from engine.release.publish import MARKER, NOT_FOR_RELEASE, is_own_output
from engine.reports.accuracy import accuracy_report
from engine.run import run
from tests.engine.conftest import BLOCKS, person


@pytest.fixture
def small(dataset):
    dataset.persons = [person(block=BLOCKS[i % 4], races=("1010",)) for i in range(12)]
    return dataset.write()


def test_confidential_counts_live_beside_the_release_never_in_it(small, tmp_path):
    res = run(small.params, small.data, tmp_path / "rel")
    out = res.out_dir
    manifest_text = (out / "manifest.json").read_text()
    manifest = json.loads(manifest_text)
    assert "confidential" not in manifest and manifest["operator_file"]["name"] == "rel" + OPERATOR_SUFFIX
    # no file in the folder carries the confidential block
    assert not [p for p in out.rglob("*") if p.is_file() and '"confidential"' in p.read_text(errors="replace")]
    op = read_operator_file(out)
    assert operator_path(out) == tmp_path / ("rel" + OPERATOR_SUFFIX)
    assert op["confidential"]["persons"]["counted"] == 12 == res.manifest["confidential"]["persons"]["counted"]
    assert op["manifest_sha256"] == hashlib.sha256(manifest_text.encode()).hexdigest()
    assert "NEVER" in op["note"] and (operator_path(out).stat().st_mode & 0o077) == 0  # owner-only
    assert is_own_output(out)
    assert sorted(p.name for p in tmp_path.iterdir() if p.name != "in") == ["rel", "rel" + OPERATOR_SUFFIX]


@pytest.mark.parametrize("kind", ["secure", "seeded", "truth"])
def test_not_for_release_outputs_say_so_in_every_folder(small, tmp_path, kind):
    out = tmp_path / kind
    run(small.params, small.data, out, seed=4 if kind == "seeded" else None, truth=kind == "truth")
    markers = sorted(p.relative_to(out).as_posix() for p in out.rglob(NOT_FOR_RELEASE))
    if kind == "secure":
        assert markers == []
        assert "NOT FOR RELEASE" not in (out / MARKER).read_text()
    else:
        assert markers == [NOT_FOR_RELEASE, f"suppressed/{NOT_FOR_RELEASE}", f"t1/{NOT_FOR_RELEASE}",
                           f"t2/{NOT_FOR_RELEASE}"]
        text = (out / NOT_FOR_RELEASE).read_text()
        assert text.startswith("NOT FOR RELEASE") and ("seeded" in text if kind == "seeded" else "true counts" in text)
        assert "NOT FOR RELEASE" in (out / MARKER).read_text().splitlines()[1]


def test_an_empty_table_still_has_its_header(small, tmp_path):
    # thresholds no noisy total reaches: no group gets a sex x age table, so T2 has no rows
    cfg = json.loads((small.params / "config.json").read_text())
    cfg["thresholds_p"] = {k: [10**9, 10**9, 10**9] for k in cfg["thresholds_p"]}
    (small.params / "config.json").write_text(json.dumps(cfg))
    out = run(small.params, small.data, tmp_path / "rel", seed=1).out_dir
    assert [p.name for p in (out / "t2").glob("*.csv")] == ["headers.csv"]
    assert (out / "t2" / "headers.csv").read_text() == "REGION_ID|REGION_TYPE|ITERATION_CODE|AGESTART|AGEEND|SEX|COUNT\n"


def test_the_accuracy_report_is_marked_and_complete(small, tmp_path):
    df = accuracy_report(small.params, small.data, tmp_path / "acc", trials=1, seed=3)
    out = tmp_path / "acc"
    assert sorted(p.name for p in out.iterdir()) == sorted([MARKER, NOT_FOR_RELEASE, "accuracy.csv", "accuracy.json"])
    assert is_own_output(out) and len(df) > 0
    assert json.loads((out / "accuracy.json").read_text())["mode"]["note"].startswith("NOT FOR RELEASE")
