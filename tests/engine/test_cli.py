"""The command line: subcommands, exit codes, the toy reference end to end, accuracy reports."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.cli import main
from engine.release.outputs import read_operator_file
from tests.engine.conftest import REFERENCE, cli_help, person, read_part_files

REPO = Path(__file__).resolve().parents[2]
TOY = REFERENCE / "safetab-p-toy"


def test_help_explains_every_option_and_exit_codes():
    out = cli_help("run")  # exit code 0 asserted
    for word in ("--seed", "--overwrite", "--no-coterminous", "--quiet", "NOT FOR RELEASE", "exit codes",
                 "1  invalid input", "2  usage error", "130 interrupted", "SHA256SUMS", "CONFIDENTIAL-operator.json"):
        assert word in out, word
    top = cli_help()
    for cmd in ("validate", "run", "truth", "accuracy", "sample", "check-output", "spines"):
        assert cmd in top


def test_usage_errors_exit_2(dataset, tmp_path, capsys):
    with pytest.raises(SystemExit) as info:
        main(["run"])
    assert info.value.code == 2
    dataset.persons = [person()]
    dataset.write()
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    assert main(["run", str(dataset.params), str(dataset.data), str(out), "--quiet"]) == 2
    assert "not empty" in capsys.readouterr().err
    assert (out / "keep.txt").read_text() == "mine"
    # --overwrite replaces only an earlier output of this tool, never a folder of someone else's files
    assert main(["run", str(dataset.params), str(dataset.data), str(out), "--quiet", "--overwrite", "--seed", "1"]) == 2
    assert "did not write" in capsys.readouterr().err
    assert (out / "keep.txt").read_text() == "mine"
    (out / "keep.txt").unlink()
    assert main(["run", str(dataset.params), str(dataset.data), str(out), "--quiet", "--seed", "1"]) == 0
    first = (out / "manifest.json").read_text()
    assert main(["run", str(dataset.params), str(dataset.data), str(out), "--quiet", "--overwrite", "--seed", "2"]) == 0
    assert (out / "manifest.json").read_text() != first


def test_toy_reference_runs_end_to_end(tmp_path, capsys):
    if not TOY.is_dir():
        pytest.skip("the toy reference files are not present")
    out = tmp_path / "toy"
    # the command line's main in this process (the exit codes of the process itself are
    # tested in tests/engine/test_faults.py and tests/engine/inputs/test_bad_inputs.py)
    code = main(["run", str(TOY / "params"), str(TOY / "data"), str(out), "--seed", "42", "--quiet"])
    assert code == 0, capsys.readouterr().err
    m = json.loads((out / "manifest.json").read_text())
    # The toy config runs the US only (states 01, 02, 11): 8 persons, the 2 in Puerto Rico are not counted.
    # Exact counts are kept out of the release folder, in the operator file beside it.
    assert "confidential" not in m
    assert read_operator_file(out)["confidential"]["persons"] == {"counted": 8, "us": 8, "pr": 0}
    assert not any(k.startswith("(PR-") for k in m["levels"])
    # Production's S: code 1020 maps to two level-2 alone iterations, but one is
    # DETAILED_ONLY and the other COARSE_ONLY: h_r = 1 in each tabulation class, S = 9.
    for cls in ("state", "substate"):
        assert m["stability"][cls]["2"] == {"S": 9, "h_r": 1, "h_e": 1}
    assert {lvl["stability_S"] for lvl in m["levels"].values()} == {9}
    assert m["levels"]["(COUNTY, 2)"]["sigma2"]["stage2"]["exact"] == "5000/159"  # 9 / (2 * 0.9 * 0.159)
    t1 = read_part_files(out / "t1")
    sup = read_part_files(out / "suppressed")
    n = len(t1) + len(sup)
    assert n == sum(lvl["groups"] for lvl in m["levels"].values())
    truth = tmp_path / "truth"
    assert main(["truth", str(TOY / "params"), str(TOY / "data"), str(truth), "--quiet"]) == 0
    tt = read_part_files(truth / "t1")
    # "Albanian alone or in any combination" (codes 1010-1012): persons on lines 3, 4, 5 and 10
    # (lines 8 and 11 are in Puerto Rico, which this config does not run).
    assert tt[(tt.REGION_TYPE == "USA") & (tt.ITERATION_CODE == "1140")].COUNT.astype(int).item() == 4




# ---------------------------------------------------------------------- spines
def test_spines_study_prints_and_writes_the_osed_table(dataset, tmp_path, capsys):
    dataset.persons = [person()]
    dataset.write()
    out = tmp_path / "osed.csv"
    assert main(["spines", str(dataset.params), str(dataset.data), "--quiet", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "Spine optimisation of 5 counties" in text and "OSED of" in text
    import pandas as pd

    table = pd.read_csv(out, dtype={"region": str})
    assert set(table["level"]) == {"PLACE", "PR-PLACE", "AIANNH"}
    # Place 01-10000 is block 0001 of tract 000100 and block 0001 of tract 000200 of county
    # 01001: two blocks on the Census spine, and each block is a whole block group there.
    row = table.set_index("region").loc["0110000"]
    assert row["osed_census"] == 2 and row["osed_safetab_tree"] == -1
    # DC's place is DC: one published unit.
    assert table.set_index("region").loc["1150000", "osed_safetab_tree"] == 1


def test_spines_area_composition_and_its_errors(dataset, tmp_path, capsys):
    dataset.persons = [person(block=b) for b in dataset.blocks for _ in range(3)]
    dataset.write()
    area = tmp_path / "area.txt"
    area.write_text("county 01001\n- place 0110000  # the place's two blocks\n")
    args = ["spines", str(dataset.params), str(dataset.data), "--quiet", "--area", str(area)]
    assert main(args) == 0
    text = capsys.readouterr().out
    assert "Composable from 2 published unit(s)" in text and "COUNTY 01001" in text and "PLACE 0110000" in text
    assert main(args + ["--iteration", "3001", "--seed", "2"]) == 0
    text = capsys.readouterr().out
    assert "truth 3)" in text and "NOT a release" in text  # block 01-001-000100-0002's three persons
    area.write_text("tract 01001000100\n- tract 01001000100\n+ nonsense here\n")
    assert main(args) == 1
    err = capsys.readouterr().err
    assert "area.txt, line 3" in err and "nonsense here" in err
    assert main(args + ["--iteration", "9999"]) == 2
    assert "is not tabulated" in capsys.readouterr().err
    assert main(["spines", str(dataset.params), str(dataset.data), "--iteration", "3001"]) == 2


def test_spines_out_never_writes_over_a_file(dataset, tmp_path, capsys):
    dataset.persons = [person()]
    dataset.write()
    grf = dataset.data / "GRF-C.txt"
    before = grf.read_bytes()
    # an input file, an existing file elsewhere, a new file inside an input folder: refused, nothing written
    for target, message in ((grf, "exists"), (tmp_path / "kept.csv", "exists"),
                            (dataset.params / "osed.csv", "inside the input folder")):
        if target.name == "kept.csv":
            target.write_text("mine")
        code = main(["spines", str(dataset.params), str(dataset.data), "--quiet", "--out", str(target)])
        err = capsys.readouterr().err
        assert code == 2 and message in err and "Traceback" not in err
    assert grf.read_bytes() == before and (tmp_path / "kept.csv").read_text() == "mine"
    assert not (dataset.params / "osed.csv").exists()
    assert not [p for p in tmp_path.rglob(".*partial-*")]


@pytest.mark.parametrize("option", ["--fanout-cutoff", "--entity-threshold"])
@pytest.mark.parametrize("value", ["9223372036854775807", "1000001", "-1", "twelve"])
def test_spines_bounds_its_numeric_options_as_usage_errors(dataset, capsys, option, value):
    dataset.persons = [person()]
    dataset.write()
    with pytest.raises(SystemExit) as info:
        main(["spines", str(dataset.params), str(dataset.data), "--quiet", option, value])
    err = capsys.readouterr().err
    assert info.value.code == 2 and "Traceback" not in err
    assert f"argument {option}: expected a whole number from 0 to 1,000,000" in err
    # the largest accepted value runs (it changes nothing a smaller large value would not)
    assert main(["spines", str(dataset.params), str(dataset.data), "--quiet", option, "1000000"]) == 0
    help_text = cli_help("spines")
    assert "from 0 to 1,000,000" in " ".join(help_text.split())
    # The help states the caps the code uses (production's), not floor(sqrt(n) + N).
    flat = " ".join(help_text.split())
    assert "floor(" not in flat
    assert "int(sqrt(n) + N + 1)" in flat and "int(sqrt(T) + N)" in flat


def test_options_that_would_be_ignored_are_refused_as_usage_errors(dataset, tmp_path, capsys):
    """Each of these combinations used to exit 0 and ignore an option; now exit 2, naming
    the conflict, with nothing written."""
    dataset.persons = [person(block=b) for b in dataset.blocks for _ in range(3)]
    dataset.write()
    p, d = str(dataset.params), str(dataset.data)
    rel = tmp_path / "rel"
    assert main(["run", p, d, str(rel), "--seed", "1", "--quiet"]) == 0
    area = tmp_path / "area.txt"
    area.write_text("county 01001\n")
    out = tmp_path / "out"
    cases = [
        (["accuracy", p, d, str(out), "--consistency", "all", "--layout", "production"],
         "--layout cannot be used with --consistency"),
        (["accuracy", p, d, str(out), "--invariant", "STATE", "--layout", "production"],
         "--layout cannot be used with --invariant"),
        (["accuracy", p, d, str(out), "--release", str(rel), "--trials", "5"], "--trials cannot be used with --release"),
        (["accuracy", p, d, str(out), "--release", str(rel), "--seed", "4"], "--seed cannot be used with --release"),
        (["spines", p, d, "--area", str(area), "--out", str(tmp_path / "o.csv")], "--out cannot be used with --area"),
        (["spines", p, d, "--area", str(area), "--fanout-cutoff", "3"], "--fanout-cutoff cannot be used with --area"),
        (["spines", p, d, "--seed", "5"], "--seed seeds the study of --iteration"),
    ]
    for argv, message in cases:
        code = main(argv + ["--quiet"])
        err = capsys.readouterr().err
        assert code == 2 and message in err and "Traceback" not in err, (argv, err)
        assert sorted(x.name for x in tmp_path.iterdir()) == ["area.txt", "in", "rel", "rel.CONFIDENTIAL-operator.json"]
    # the options still work where they apply
    assert main(["accuracy", p, d, str(out), "--release", str(rel), "--layout", "both", "--quiet"]) == 0
    assert (out / "error_report.csv").is_file() and (out / "accuracy.csv").is_file()
    assert main(["spines", p, d, "--area", str(area), "--iteration", "3001", "--seed", "5", "--quiet"]) == 0


def test_sample_with_invalid_spec_files_is_invalid_input_not_a_usage_error(tmp_path, capsys):
    import shutil

    spec = tmp_path / "spec"
    shutil.copytree(REPO / "sample_data" / "params", spec)
    (spec / "race-and-ethnicity-codes.txt").write_text("garbage\n")
    out = tmp_path / "nation"
    assert main(["sample", str(out), "--persons", "1000", "--spec", str(spec), "--quiet"]) == 1
    err = capsys.readouterr().err
    assert f"Invalid input: the spec files of {spec} are not valid:" in err
    assert "race-and-ethnicity-codes.txt, line 1: found 'garbage'; expected the header" in err
    assert "Usage error" not in err and "Traceback" not in err and "Nothing was written." in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["spec"]
    # a config.json that is not valid: the same
    (spec / "race-and-ethnicity-codes.txt").write_text((REPO / "sample_data" / "params" /
                                                        "race-and-ethnicity-codes.txt").read_text())
    (spec / "config.json").write_text('{"max_race_codes": "eight"}')
    assert main(["sample", str(out), "--persons", "1000", "--spec", str(spec), "--quiet"]) == 1
    err = capsys.readouterr().err
    assert f"Invalid input: the config.json of {spec} is not valid" in err and "Usage error" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["spec"]


def test_a_missing_spec_folder_or_file_is_invalid_input_said_as_found_and_expected(tmp_path, capsys):
    out = tmp_path / "nation"
    missing = tmp_path / "nowhere"
    assert main(["sample", str(out), "--persons", "1000", "--spec", str(missing), "--quiet"]) == 1
    err = capsys.readouterr().err
    assert f"- --spec: found no folder at {missing}; expected a folder with the 4 spec files" in err
    assert "Usage error" not in err and "Nothing was written." in err
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["sample", str(out), "--persons", "1000", "--spec", str(empty), "--quiet"]) == 1
    err = capsys.readouterr().err
    assert "Invalid input: 4 problems found." in err
    assert (f"- race-and-ethnicity-codes.txt: found no file at {empty / 'race-and-ethnicity-codes.txt'}; "
            "expected this input file there") in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty"]


def test_missing_folders_and_config_are_said_as_found_and_expected(tmp_path, capsys):
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    assert main(["validate", str(tmp_path / "nowhere"), str(a_file), "--quiet"]) == 1
    err = capsys.readouterr().err
    assert (f"- PARAMS_DIR: found no folder at {tmp_path / 'nowhere'}; expected the folder with config.json "
            "and the 4 spec files there") in err
    assert f"- DATA_DIR: found a file, not a folder, at {a_file}; expected the folder with the person-records" in err
    assert "to be an existing directory" not in err
    empty = tmp_path / "params"
    empty.mkdir()
    assert main(["validate", str(empty), str(tmp_path), "--quiet"]) == 1
    err = capsys.readouterr().err
    assert f"- config.json: found no file at {empty / 'config.json'}; expected this input file there" in err
    assert "No such file" not in err


def test_unusable_input_files_and_a_non_release_are_said_as_found_and_expected(dataset, tmp_path, capsys):
    dataset.persons = [person()]
    dataset.write()
    grf = dataset.data / "GRF-C.txt"
    grf.unlink()
    assert main(["validate", str(dataset.params), str(dataset.data), "--quiet"]) == 1
    err = capsys.readouterr().err
    assert f"- GRF-C.txt: found no file at {grf} (nor GRF-C.parquet); expected this input file there" in err
    grf.mkdir()
    assert main(["validate", str(dataset.params), str(dataset.data), "--quiet"]) == 1
    err = capsys.readouterr().err
    assert f"- GRF-C.txt: found a folder at {grf} (it was not opened); expected a regular file" in err
    assert " to exist" not in err and "to be a regular file" not in err
    # a link that leads nowhere (dangling, or a loop) is said as such, not as "no file"
    grf.rmdir()
    grf.symlink_to(tmp_path / "moved-away.txt")
    codes = dataset.params / "race-and-ethnicity-codes.txt"
    kept = codes.read_bytes()
    codes.unlink()
    codes.symlink_to(codes.name)
    assert main(["validate", str(dataset.params), str(dataset.data), "--quiet"]) == 1
    err = capsys.readouterr().err
    assert (f"- GRF-C.txt: found a symbolic link at {grf} that leads to no file (No such file or directory); "
            "expected this input file there") in err
    assert (f"- race-and-ethnicity-codes.txt: found a symbolic link at {codes} that leads to no file (Too many "
            "levels of symbolic links)") in err
    assert "found no file" not in err
    codes.unlink()
    codes.write_bytes(kept)
    # check-output of a folder that is not a release says so plainly, not as a cut OS message
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["check-output", str(dataset.params), str(empty)]) == 1
    err = capsys.readouterr().err
    assert "- manifest.json: found no manifest.json: this is not a release folder" in err
    assert "No such fil" not in err and "Traceback" not in err


def test_an_area_counting_a_block_twice_names_the_block_plainly_and_its_lines(dataset, tmp_path, capsys):
    dataset.persons = [person()]
    dataset.write()
    area = tmp_path / "area.txt"
    area.write_text("# twice\ntract 01001000100\ncounty 01001\n")
    assert main(["spines", str(dataset.params), str(dataset.data), "--quiet", "--area", str(area)]) == 1
    err = capsys.readouterr().err
    # tract 01001000100 holds two blocks, both also in county 01001
    assert ("area.txt, line 2: found '010010001000001'; expected every block counted 0 or 1 times; this one is "
            "counted 2 times (lines 2 and 3 include it; 2 such blocks)") in err
    assert "np.str_" not in err and "Traceback" not in err


def test_an_out_dir_name_too_long_for_what_is_written_beside_it_is_refused_before_any_work(dataset, tmp_path, capsys):
    # A 229-byte name (allowed for a folder) used to publish the release, then fail on
    # the operator file's name (+27 bytes), exit 1, and leave the exact counts under a
    # hidden .partial name that the next run removed as a leftover; a 240-byte name
    # failed on the hidden staging folder with "cannot write in the folder".
    dataset.persons = [person()]
    dataset.write()
    p, d = str(dataset.params), str(dataset.data)
    for n, argv, most in ((229, ["run", "--seed", "1"], 228), (240, ["truth"], 228), (240, ["sample"], 237)):
        out = tmp_path / ("c" * n)
        args = [argv[0], p, d, str(out), *argv[1:]] if argv[0] != "sample" else ["sample", "--persons", "1000",
                                                                                  str(out)]
        assert main([*args, "--quiet"]) == 1
        err = capsys.readouterr().err
        assert f"OUT_DIR's name is {n} bytes long;" in err and f"choose a name of at most {most} bytes" in err, err
        assert "Traceback" not in err
        assert sorted(q.name for q in tmp_path.iterdir()) == ["in"]  # nothing written, nothing left beside
    out = tmp_path / ("c" * 228)
    assert main(["run", p, d, str(out), "--seed", "1", "--quiet"]) == 0
    assert (tmp_path / (out.name + ".CONFIDENTIAL-operator.json")).is_file()
