"""`python -m engine check-output`: production's output validation and the completion marker.

Each damaged output is a copy of a real release with one thing changed and its
SHA256SUMS re-signed, so the check that must catch it is the one under test.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil

import numpy as np
import pytest

from engine.cli import main
from engine.release.check import OutputInvalid, check_output
from engine.release.publish import MARKER
from engine.run import run
from tests.engine.conftest import BLOCKS, person


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """A seeded release, a secure release and the truth of one small dataset (no negatives)."""
    from tests.engine.conftest import Dataset, base_config

    root = tmp_path_factory.mktemp("check")
    ds = Dataset(root / "in")
    rng = np.random.default_rng(3)
    ds.persons = [person(age=int(rng.integers(0, 116)), sex=int(rng.integers(1, 3)), block=BLOCKS[i % 3],
                         races=[("1010",), ("1020",), ("1010", "1020")][i % 3]) for i in range(90)]
    ds.config = base_config(allow_negative_counts=False)
    ds.write()
    run(ds.params, ds.data, root / "seeded", seed=5)
    run(ds.params, ds.data, root / "secure")
    run(ds.params, ds.data, root / "truth", truth=True)
    return ds, root


def _copy(made, tmp_path, name="seeded"):
    _ds, root = made
    out = tmp_path / name
    shutil.copytree(root / name, out)
    return out


def _resign(out):
    """Rewrite SHA256SUMS for the files now in the folder (as if the damage were made before the run ended)."""
    lines = [line for line in (out / MARKER).read_text().splitlines() if line.startswith("#")]
    for p in sorted(out.rglob("*")):
        rel = p.relative_to(out).as_posix()
        if p.is_file() and rel != MARKER:
            lines.append(f"{hashlib.sha256(p.read_bytes()).hexdigest()}  {rel}")
    (out / MARKER).write_text("\n".join(lines) + "\n")


def _problems(made, out, data=False) -> list[str]:
    ds, _root = made
    with pytest.raises(OutputInvalid) as err:
        check_output(ds.params, out, ds.data if data else None)
    return [str(p) for p in err.value.problems]


def _edit_line(path, match, new):
    lines = path.read_text().splitlines()
    i = next(i for i, line in enumerate(lines) if match(line))
    lines[i] = new(lines[i])
    path.write_text("\n".join(lines) + "\n")
    return i + 1


@pytest.mark.parametrize("name", ["seeded", "secure", "truth"])
def test_real_outputs_pass_with_and_without_grf(made, name):
    ds, root = made
    for data in (None, ds.data):
        s = check_output(ds.params, root / name, data)
        assert s.for_release == (name == "secure")
        manifest = json.loads((root / name / "manifest.json").read_text())
        assert s.groups == sum(lvl["groups"] for lvl in manifest["levels"].values()) > 0
        assert s.levels == len(manifest["levels"])
        assert s.rows["t1"] + s.rows["suppressed"] == s.groups
        assert s.files_verified > 5


def test_every_table_has_its_header_even_without_rows(made):
    # zero_suppression_chance 0 and no suppressed group: suppressed/ has only headers.csv
    _ds, root = made
    sup = root / "secure" / "suppressed"
    assert (sup / "headers.csv").read_text() == "REGION_ID|REGION_TYPE|ITERATION_CODE\n"
    for t in ("t1", "t2"):
        assert (root / "secure" / t / "headers.csv").read_text().count("\n") == 1


def _t1_part(out, geo):
    return next(p for p in sorted((out / "t1").glob("*.csv")) if p.name.startswith(geo + "-"))


CASES = {
    "negative count": (lambda out: _edit_line(_t1_part(out, "STATE"), lambda l: "|STATE|" in l,
                                              lambda l: l.rsplit("|", 1)[0] + "|-3"),
                       "column COUNT: found '-3'; expected a count >= 0 (allow_negative_counts is false)"),
    "county id of 4 digits": (lambda out: _edit_line(_t1_part(out, "COUNTY"), lambda l: "|COUNTY|" in l,
                                                     lambda l: "0100" + l[5:]),
                              "column REGION_ID: found '0100'; expected a COUNTY region id"),
    "state outside the filter": (lambda out: _edit_line(_t1_part(out, "STATE"), lambda l: l.startswith("01|STATE|"),
                                                        lambda l: "06" + l[2:]),
                                 "column REGION_ID: found '06'; expected a region of the states the configuration runs"),
    "iteration code": (lambda out: _edit_line(_t1_part(out, "USA"), lambda l: l.startswith("1|USA|"),
                                              lambda l: "1|USA|12A4|" + l.rsplit("|", 1)[1]),
                       "column ITERATION_CODE: found '12A4'; expected an iteration code of 4 digits"),
    "region type": (lambda out: _edit_line(_t1_part(out, "USA"), lambda l: l.startswith("1|USA|"),
                                           lambda l: l.replace("|USA|", "|COUNTRY|")),
                    "column REGION_TYPE: found 'COUNTRY'; expected one of USA"),
    "age bin": (lambda out: _edit_line(next((out / "t2").glob("USA-*.csv")), lambda l: "|USA|" in l and "*" not in l,
                                       lambda l: "|".join(l.split("|")[:3] + ["0", "3"] + l.split("|")[5:])),
                "column AGESTART|AGEEND: found '0|3'; expected an age bin of age4, age9 or age23"),
    "header": (lambda out: _edit_line(_t1_part(out, "USA"), lambda l: l.startswith("REGION_ID"),
                                      lambda l: l.lower()),
               "line 1: found 'region_id|region_type|iteration_code|cou...'; expected the header REGION_ID|"),
    "missing group": (lambda out: _edit_line(_t1_part(out, "TRACT"), lambda l: "|TRACT|" in l, lambda l: "")
                      and _drop_blank(_t1_part(out, "TRACT")),
                      "(this one is missing)"),
    "duplicate group": (lambda out: _edit_line(_t1_part(out, "USA"), lambda l: l.startswith("1|USA|"),
                                               lambda l: l + "\n" + l),
                        "(this one appears more than once)"),
    # a line longer than the reader's block (line breaks lost): its number and length, not
    # pyarrow's "straddling object straddles two block boundaries" without a line
    "line longer than a block": (lambda out: _edit_line(_t1_part(out, "USA"), lambda l: l.startswith("1|USA|"),
                                                        lambda l: l + "7" * (9 << 20)),
                                 "line 2: found '1|USA|"),
    "line longer than a block, its length": (
        lambda out: _edit_line(_t1_part(out, "USA"), lambda l: l.startswith("1|USA|"), lambda l: "9" * (9 << 20)),
        "expected lines of at most 4,194,304 bytes (this one has 9,437,184; a line break missing?)"),
    "not UTF-8": (lambda out: _t1_part(out, "USA").write_bytes(_t1_part(out, "USA").read_bytes() + b"1|USA|10\xff0|3\n"),
                  "found '1|USA|10\ufffd0|3'; expected UTF-8 rows of 4 pipe-separated fields"),
    "no t2 folder": (lambda out: shutil.rmtree(out / "t2"), "t2/: found no such folder; expected a folder of pipe-delimited files"),
    "confidential in manifest": (lambda out: _manifest(out, confidential={"persons": {"counted": 90}}),
                                 "key confidential: found 'present'; expected no exact counts"),
    "marker removed": (lambda out: (out / "NOT-FOR-RELEASE.txt").unlink(),
                       "NOT-FOR-RELEASE.txt: present: the manifest says this output is not for release"),
    "rows in manifest": (lambda out: _manifest(out, outputs={"rows": {"t1": 1, "t2": 0, "suppressed": 0}}),
                         "key outputs.rows.t1: found '1'; expected the rows in t1/"),
    # shown as JSON: the string "18449" used to be shown as 18449, the very count expected
    "rows in manifest as text": (lambda out: _manifest(out, outputs={"rows": {"t1": str(_rows(out, "t1"))}}),
                                 "key outputs.rows.t1: found '\"{n}\"'; expected the rows in t1/ ({n:,}), a whole number"),
}


def _rows(out, kind):
    return sum(len(p.read_text().splitlines()) - 1 for p in (out / kind).glob("*.csv"))


def _drop_blank(path):
    path.write_text("".join(line + "\n" for line in path.read_text().splitlines() if line))
    return True


def _manifest(out, **changes):
    m = json.loads((out / "manifest.json").read_text())
    m.update(changes)
    (out / "manifest.json").write_text(json.dumps(m))


@pytest.mark.parametrize("case", list(CASES))
def test_damaged_outputs_are_named_precisely(made, tmp_path, case):
    out = _copy(made, tmp_path)
    damage, expected = CASES[case]
    damage(out)
    _resign(out)
    problems = _problems(made, out)
    if "{n" in expected:
        expected = expected.format(n=_rows(out, "t1"))
    assert any(expected in p for p in problems), problems


def test_changed_or_added_files_fail_the_marker(made, tmp_path):
    out = _copy(made, tmp_path)
    with open(_t1_part(out, "USA"), "a") as fh:
        fh.write("1|USA|3001|5\n")
    (out / "t1" / "extra.csv").write_text("REGION_ID|REGION_TYPE|ITERATION_CODE|COUNT\n")
    problems = _problems(made, out)
    assert any("USA-" in p and "found other contents than SHA256SUMS lists; expected the sha256" in p for p in problems), problems
    assert any(p.startswith("t1/extra.csv") and "added after the run" in p for p in problems), problems
    (out / MARKER).unlink()
    assert any("completion marker" in p for p in _problems(made, out))


def test_a_release_checked_against_another_config_is_refused(made, tmp_path):
    ds, root = made
    params = tmp_path / "params"
    shutil.copytree(ds.params, params)
    cfg = json.loads((params / "config.json").read_text())
    cfg["privacy_budget_p_stage_1_fraction"] = 0.2
    (params / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(OutputInvalid) as err:
        check_output(params, root / "seeded")
    assert "privacy_budget_p_stage_1_fraction" in err.value.report()


def test_grf_regions_catch_an_invented_region(made, tmp_path):
    out = _copy(made, tmp_path)
    _edit_line(_t1_part(out, "COUNTY"), lambda l: l.startswith("01001|COUNTY|"), lambda l: "01009" + l[5:])
    _resign(out)
    problems = _problems(made, out, data=True)
    assert any("found '01009'; expected a COUNTY region of GRF-C" in p for p in problems), problems


def test_cli_exit_codes_and_messages(made, tmp_path, capsys):
    ds, root = made
    assert main(["check-output", str(ds.params), str(root / "seeded"), "--data", str(ds.data)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("OK:") and "NOT FOR RELEASE" in out and "belongs to this release" in out
    bad = _copy(made, tmp_path)
    (bad / "manifest.json").write_text("{")
    assert main(["check-output", str(ds.params), str(bad)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("Invalid output:") and "manifest.json" in err and "Traceback" not in err


def test_a_manifest_that_is_a_fifo_is_said_once_and_every_problem_says_found_and_expected(made, tmp_path):
    out = _copy(made, tmp_path)
    (out / "manifest.json").unlink()
    os.mkfifo(out / "manifest.json")
    (out / "t1" / "notes.txt").write_text("x")
    problems = _problems(made, out)
    manifest = [p for p in problems if p.startswith("manifest.json")]
    assert manifest == ["manifest.json: found a FIFO (named pipe) (it was not opened); expected a regular file of "
                        "the output"], problems
    assert "t1/notes.txt: found a file that is not a .csv part file; expected only regular .csv part files" in problems
    assert all("found" in p and "expected" in p for p in problems), problems
