"""`python -m engine profile` and `python -m engine project`: outputs, safety, exit codes."""

from __future__ import annotations

import gzip
import os
import json
from pathlib import Path

import pandas as pd
import pytest

from calculators.config import SafeTabConfig
from calculators.projection import COLUMNS, Profile, project
from engine.cli import main
from tests.engine.conftest import cli_help
from tests.engine.test_faults import _cli_on_a_thread

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "sample_data"
PARAMS, DATA = str(SAMPLE / "params"), str(SAMPLE / "data")


def test_help_names_the_commands_and_their_columns():
    top = cli_help()
    assert "profile" in top and "project" in top
    out = cli_help("project")
    for word in ("geo, iteration_level, groups, total_only, age4, age9, age23, suppressed, t1_rows",
                 "_sd", "mean_abs_error", "Coterminous copying is ignored", "comment='#'", "occupied_published",
                 "empty_published", "persons_published_share"):
        assert word in out, word
    out = cli_help("profile")
    for word in ("CONFIDENTIAL", "--synthetic", "secure environment", ".gz"):
        assert word in out, word


def test_profile_writes_a_confidential_profile_and_never_replaces_a_file(tmp_path, capsys):
    out = tmp_path / "p.json.gz"
    assert main(["profile", PARAMS, DATA, str(out), "--quiet", "--name", "test data"]) == 0
    prof = Profile.parse(out.read_bytes())
    assert prof.confidential and prof.name == "test data" and prof.persons == 50_000
    assert json.loads(gzip.decompress(out.read_bytes()))["confidential"] is True
    assert "CONFIDENTIAL" in capsys.readouterr().out
    before = out.read_bytes()
    assert main(["profile", PARAMS, DATA, str(out), "--quiet"]) == 2
    assert out.read_bytes() == before
    assert "exists" in capsys.readouterr().err
    assert not [p for p in tmp_path.iterdir() if p.name != "p.json.gz"]  # no partial file left


@pytest.mark.parametrize("option,limit", [("--name", 200), ("--description", 1000)])
def test_a_name_or_description_longer_than_a_profile_keeps_is_refused_not_cut(tmp_path, capsys, monkeypatch,
                                                                               option, limit):
    import engine.run as er

    def never(*a, **k):
        raise AssertionError("counted before the options were checked")

    monkeypatch.setattr(er, "prepare", never)
    out = tmp_path / "p.json"
    assert main(["profile", PARAMS, DATA, str(out), "--quiet", option, "x" * (limit + 1)]) == 2
    assert f"{option} has {limit + 1:,} characters; a profile keeps at most {limit:,}" in capsys.readouterr().err
    assert not out.exists()
    monkeypatch.undo()
    assert main(["profile", PARAMS, DATA, str(out), "--quiet", option, "é" * limit]) == 0  # at the limit: kept whole
    prof = Profile.parse(out.read_bytes())
    assert (prof.name if option == "--name" else prof.description) == "é" * limit


def test_profile_refuses_a_file_inside_an_input_folder(tmp_path, capsys):
    data = tmp_path / "data"
    data.mkdir()
    for f in Path(DATA).iterdir():
        (data / f.name).symlink_to(f)
    assert main(["profile", PARAMS, str(data), str(data / "p.json"), "--quiet"]) == 2
    assert "inside the input folder" in capsys.readouterr().err
    assert not (data / "p.json").exists()


def test_an_output_in_a_missing_folder_is_refused_before_the_counting(tmp_path, capsys, monkeypatch):
    import engine.reports.profile as rp

    def never(*a, **k):
        raise AssertionError("counted before the output was checked")

    monkeypatch.setattr(rp, "compute_profile", never)
    out = tmp_path / "nowhere" / "p.json"
    assert main(["profile", PARAMS, DATA, str(out), "--quiet"]) == 1
    err = capsys.readouterr().err
    assert f"{out}: its folder {out.parent} does not exist" in err and "Nothing was written" in err
    assert not out.parent.exists()


def test_profile_of_invalid_input_exits_1_and_writes_nothing(tmp_path, capsys):
    data = tmp_path / "data"
    data.mkdir()
    (data / "GRF-C.txt").write_text((SAMPLE / "data" / "GRF-C.txt").read_text())
    lines = (SAMPLE / "data" / "person-records.txt").read_text().splitlines()[:5]
    lines[3] = lines[3].replace("|1|", "|7|", 1) if "|1|" in lines[3] else lines[3] + "|extra"
    (data / "person-records.txt").write_text("\n".join(lines) + "\n")
    out = tmp_path / "p.json"
    assert main(["profile", PARAMS, str(data), str(out), "--quiet"]) == 1
    assert "Nothing was written" in capsys.readouterr().err
    assert not out.exists()


def test_project_writes_exactly_the_named_columns(tmp_path, capsys):
    prof = tmp_path / "p.json"
    assert main(["profile", PARAMS, DATA, str(prof), "--quiet", "--synthetic"]) == 0
    out = tmp_path / "proj.csv"
    assert main(["project", str(SAMPLE / "params" / "config.json"), str(prof), str(out)]) == 0
    printed = capsys.readouterr().out
    assert "Coterminous copying is ignored" in printed and "SYNTHETIC" in printed
    text = out.read_text()
    assert text.startswith("# SafeTab-P Studio national projection")
    assert "# Coterminous copying is ignored" in text
    df = pd.read_csv(out, comment="#")
    assert list(df.columns) == list(COLUMNS)
    assert list(df.columns[:10]) == ["geo", "iteration_level", "groups", "total_only", "age4", "age9", "age23",
                                     "suppressed", "t1_rows", "t2_rows"]
    assert all(f"{c}_sd" in df.columns for c in COLUMNS[2:10])
    assert df["geo"].iloc[-1] == "TOTAL" and len(df) == 20  # 19 tabulated levels + TOTAL
    config = SafeTabConfig.read(SAMPLE / "params" / "config.json")
    expected = project(config, Profile.parse(prof.read_bytes())).frame()
    pd.testing.assert_frame_equal(df.drop(columns="iteration_level"), expected.drop(columns="iteration_level"),
                                  rtol=1e-9, check_dtype=False)
    # a confidential profile makes a confidential projection
    prof2 = tmp_path / "p2.json"
    assert main(["profile", PARAMS, DATA, str(prof2), "--quiet"]) == 0
    assert main(["project", str(SAMPLE / "params" / "config.json"), str(prof2), str(tmp_path / "c.csv")]) == 0
    assert "# CONFIDENTIAL" in (tmp_path / "c.csv").read_text()


@pytest.mark.parametrize("content,words", [
    (b'{"kind": "SafeTab-P Studio group-size profile", "format_version": 1}', "synthetic must be true or false"),
    (b"not json", "not valid JSON"),
])
def test_project_with_a_bad_profile_exits_1_naming_it(tmp_path, capsys, content, words):
    bad = tmp_path / "bad.json"
    bad.write_bytes(content)
    out = tmp_path / "o.csv"
    assert main(["project", str(SAMPLE / "params" / "config.json"), str(bad), str(out)]) == 1
    err = capsys.readouterr().err
    assert words in err and "bad.json" in err and "Traceback" not in err
    assert not out.exists()


def test_project_refuses_an_existing_output(tmp_path, capsys):
    out = tmp_path / "o.csv"
    out.write_text("mine")
    assert main(["project", str(SAMPLE / "params" / "config.json"),
                 str(SAMPLE / "profiles" / "sample.profile.json"), str(out)]) == 2
    assert out.read_text() == "mine"


def _profile_dict() -> dict:
    return json.loads((SAMPLE / "profiles" / "sample.profile.json").read_text())


def test_a_profile_name_on_several_lines_cannot_break_the_csv(tmp_path, capsys):
    """A name with line breaks (a hand-edited or hostile profile) is read as one line, so
    every '#' line stays a comment and the table is read whole; `profile --name` refuses
    one (exit 2, before any counting)."""
    d = _profile_dict()
    d["name"] = 'line1\nline2,"q"\r\n# x\u2028y\tz'
    prof = tmp_path / "p.json"
    prof.write_text(json.dumps(d))
    out = tmp_path / "o.csv"
    assert main(["project", str(SAMPLE / "params" / "config.json"), str(prof), str(out)]) == 0
    assert Profile.parse(prof.read_bytes()).name == 'line1 line2,"q" # x y z'
    text = out.read_text()
    assert all(line.startswith("# ") for line in text.split("geo,iteration_level")[0].splitlines())
    df = pd.read_csv(out, comment="#")
    assert list(df.columns) == list(COLUMNS) and df["geo"].iloc[-1] == "TOTAL"
    capsys.readouterr()
    assert main(["profile", PARAMS, DATA, str(tmp_path / "n.json"), "--quiet", "--name", "a\nb"]) == 2
    assert "--name holds a line break" in capsys.readouterr().err
    assert not (tmp_path / "n.json").exists()


def test_project_refuses_a_fifo_or_a_device_as_the_profile_without_blocking(tmp_path, capsys):
    fifo = tmp_path / "p.json"
    os.mkfifo(fifo)
    out = tmp_path / "o.csv"
    for what, path in (("a FIFO (named pipe)", fifo), ("a character device", Path("/dev/zero")),
                       ("a folder", tmp_path)):
        # on a thread of its own: opening the FIFO to read it would block until the timeout
        proc = _cli_on_a_thread(["project", SAMPLE / "params" / "config.json", path, out], capsys, [fifo])
        assert proc.returncode == 1, proc.stderr
        assert f"the file is {what}, not a regular file" in proc.stderr and "Traceback" not in proc.stderr
        assert not out.exists()


def test_project_says_when_the_config_and_the_profile_are_swapped(tmp_path, capsys):
    config, prof = str(SAMPLE / "params" / "config.json"), str(SAMPLE / "profiles" / "sample.profile.json")
    out = tmp_path / "o.csv"
    for args in ((prof, config), (str(SAMPLE / "profiles" / "nation330.profile.json.gz"), prof), (config, config)):
        assert main(["project", *args, str(out)]) == 1
        err = capsys.readouterr().err
        assert "takes CONFIG.json PROFILE.json OUT.csv, in that order" in err, err
        assert "keys are missing" not in err and not out.exists()


def test_project_refuses_a_profile_without_any_level_of_the_plan(tmp_path, capsys):
    """A plan that tabulates only Puerto Rico on a profile of the US run: no figure to give,
    so nothing is written (exit 1), instead of a CSV of zeros."""
    d = _profile_dict()
    d["levels"] = {k: v for k, v in d["levels"].items() if not k.startswith("(PR-")}
    prof = tmp_path / "us.json"
    prof.write_text(json.dumps(d))
    config = tmp_path / "pr.json"
    config.write_text(SafeTabConfig.read(SAMPLE / "params" / "config.json").updated(run_us=False).to_json())
    out = tmp_path / "o.csv"
    assert main(["project", str(config), str(prof), str(out)]) == 1
    err = capsys.readouterr().err
    assert "holds none of the levels the plan tabulates ((PR-STATE, 1)" in err and not out.exists()


def test_a_number_of_thousands_of_digits_is_named_in_plain_words(tmp_path, capsys):
    text = (SAMPLE / "profiles" / "sample.profile.json").read_text()
    text = text.replace('"persons": 50000', '"persons": ' + "9" * 5000)
    prof = tmp_path / "p.json"
    prof.write_text(text)
    assert main(["project", str(SAMPLE / "params" / "config.json"), str(prof), str(tmp_path / "o.csv")]) == 1
    err = capsys.readouterr().err
    assert '"persons": 9999' in err and "is a whole number of 5,000 digits; at most 4,300 digits are read" in err
    assert "set_int_max_str_digits" not in err


def test_project_writes_gzip_to_a_gz_name(tmp_path):
    """OUT.csv.gz holds gzip data, as `profile` writes OUT.json.gz (pandas reads a .gz name as
    gzip: plain text under that name could not be read)."""
    out = tmp_path / "o.csv.gz"
    assert main(["project", str(SAMPLE / "params" / "config.json"), str(SAMPLE / "profiles" / "sample.profile.json"),
                 str(out)]) == 0
    assert gzip.decompress(out.read_bytes()).startswith(b"# SafeTab-P Studio national projection")
    df = pd.read_csv(out, comment="#")
    assert list(df.columns) == list(COLUMNS) and df["geo"].iloc[-1] == "TOTAL"
