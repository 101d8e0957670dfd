"""Every validation rule: a clear message (file, line, column, value), exit 1, nothing written."""

from __future__ import annotations

import json

import pytest

from engine.cli import main
from engine.errors import InputError
from engine.run import run, validate
from tests.engine.conftest import BLOCKS, person, read_part_files


def _good(dataset):
    dataset.persons = [person(), person(races=("1020", "1010"), block=BLOCKS[4]), person(block=BLOCKS[7])]
    return dataset


def _set_config(**kw):
    def mutate(ds):
        ds.config.update(kw)
    return mutate


def _person_field(row, col, value):
    def mutate(ds):
        cols = ["QAGE", "QSEX", "HOUSEHOLDER", "TABBLKST", "TABBLKCOU", "TABTRACTCE", "TABBLK", "CENRACE",
                *[f"QRACE{i}" for i in range(1, 9)], "QSPAN"]
        p = list(ds.persons[row])
        p[cols.index(col)] = value
        ds.persons[row] = tuple(p)
    return mutate


def _drop_threshold(ds):
    del ds.config["thresholds_p"]["(COUNTY, 2)"]


CASES = {
    # name: (mutation, expected fragments of the message)
    "gamma out of range": (_set_config(privacy_budget_p_stage_1_fraction=1.5),
                           ["config.json", "privacy_budget_p_stage_1_fraction", "between 0 and 1", "1.5"]),
    "suppression chance of 1": (_set_config(zero_suppression_chance=1.0), ["zero_suppression_chance", "1.0"]),
    "negative rho": (_set_config(privacy_budget_p_level_2_tract=-0.1), ["privacy_budget_p_level_2_tract", "-0.1"]),
    "decreasing thresholds": (_set_config(thresholds_p={"(TRACT, 2)": [10, 5, 20]}), ["(TRACT, 2)", "non-decreasing"]),
    "missing thresholds": (_drop_threshold, ["thresholds_p", "(COUNTY, 2)"]),
    "unknown state": (_set_config(state_filter_us=["01", "99"]), ["state_filter_us", "99"]),
    "max race codes 9": (_set_config(max_race_codes=9), ["max_race_codes", "1 to 8"]),
    "unknown privacy definition": (_set_config(privacy_defn="dp"), ["privacy_defn", '"dp"', '"zcdp" or "puredp"']),
    "age too high": (_person_field(0, "QAGE", "116"), ["person-records.txt", "line 2", "QAGE", "'116'", "000 to 115"]),
    "age not a number": (_person_field(1, "QAGE", "4x"), ["line 3", "QAGE", "'4x'"]),
    "sex": (_person_field(2, "QSEX", "3"), ["line 4", "QSEX", "'3'", "1 (male) or 2 (female)"]),
    "block not in GRF-C": (_person_field(0, "TABBLK", "0099"), ["line 2", "TABBLK", "01|001|000100|0099", "GRF-C"]),
    "QRACE1 Null": (_person_field(0, "QRACE1", "Null"), ["line 2", "QRACE1", "must not be Null"]),
    "unknown race code": (_person_field(1, "QRACE2", "9999"), ["line 3", "QRACE2", "'9999'", "race-and-ethnicity-codes"]),
    "unknown ethnicity code": (_person_field(2, "QSPAN", "7777"), ["line 4", "QSPAN", "'7777'"]),
}


@pytest.mark.parametrize("name", list(CASES))
def test_bad_input_is_reported_and_nothing_written(name, dataset, tmp_path, capsys):
    mutate, fragments = CASES[name]
    _good(dataset)
    mutate(dataset)
    dataset.write()
    out = tmp_path / "out"
    code = main(["run", str(dataset.params), str(dataset.data), str(out), "--seed", "1", "--quiet"])
    err = capsys.readouterr().err
    assert code == 1, err
    for frag in fragments:
        assert frag in err, f"{frag!r} not in:\n{err}"
    assert "Nothing was written" in err
    assert not out.exists()
    assert [p.name for p in tmp_path.iterdir()] == ["in"]  # no partial output beside OUT_DIR either


def test_race_codes_beyond_r_are_read_as_production_reads_them(dataset, tmp_path):
    # SPEC §1: only QRACE1..QRACEr are read; the person is counted, with the first r codes.
    dataset.persons = [person(races=("1010", "1011", "1012")), person(races=("1010", "1010", "1011")),
                       person(races=("1020",))]
    dataset.config["max_race_codes"] = 2
    dataset.write()
    res = run(dataset.params, dataset.data, tmp_path / "out", truth=True)
    # the first person loses 1012; the second is read as 1010, 1010 and loses 1011
    conf = res.manifest["confidential"]["race_codes_truncated"]
    assert conf == {"max_race_codes": 2, "persons": 2}
    t1 = read_part_files(tmp_path / "out" / "t1")
    usa = t1[(t1["REGION_TYPE"] == "USA")].set_index("ITERATION_CODE")["COUNT"].astype(int)
    # person 1 = Albanian + Basque: both AOIC groups, neither alone group;
    # person 2 = Albanian alone (1011 beyond r is not read)
    assert usa["3002"] == 2 and usa["3012"] == 1 and usa["3001"] == 1 and usa["3011"] == 0
    # 1012 (Other European) is never read: its AOIC group 3022 is COARSE_ONLY -> check a county
    county = t1[t1["REGION_TYPE"] == "COUNTY"].groupby("ITERATION_CODE")["COUNT"].sum().astype(int)
    assert county.get("3022", 0) == 0


def test_a_repeated_race_code_counts_once(dataset, tmp_path):
    dataset.persons = [person(races=("1010", "1010"))]
    dataset.config["max_race_codes"] = 1
    dataset.write()
    res = run(dataset.params, dataset.data, tmp_path / "out", truth=True)
    assert res.manifest["confidential"]["race_codes_truncated"]["persons"] == 0
    t1 = read_part_files(tmp_path / "out" / "t1")
    usa = t1[(t1["REGION_TYPE"] == "USA")].set_index("ITERATION_CODE")["COUNT"].astype(int)
    assert usa["3001"] == 1 and usa["3002"] == 1  # still Albanian alone


@pytest.mark.parametrize("fname,content,fragments", [
    ("race-characteristic-iterations.txt", "ITERATION_CODE|NAME|LEVEL\n", ["race-characteristic-iterations.txt", "line 1", "header"]),
    ("race-characteristic-iterations.txt",
     "ITERATION_CODE|ITERATION_NAME|LEVEL|ALONE|DETAILED_ONLY|COARSE_ONLY\n3001|A|3|True|False|False\n",
     ["line 2", "LEVEL", "'3'", "0, 1 or 2"]),
    ("race-characteristic-iterations.txt",
     "ITERATION_CODE|ITERATION_NAME|LEVEL|ALONE|DETAILED_ONLY|COARSE_ONLY\n3001|A|2|Yes|False|False\n",
     ["line 2", "ALONE", "'Yes'", "True or False"]),
    ("race-characteristic-iterations.txt",
     "ITERATION_CODE|ITERATION_NAME|LEVEL|ALONE|DETAILED_ONLY|COARSE_ONLY\n3001|A|2|True|False|False\n3001|B|2|True|False|False\n",
     ["line 3", "ITERATION_CODE", "'3001'", "unique"]),
    ("race-and-ethnicity-code-to-iteration.txt", "ITERATION_CODE|RACE_ETH_CODE\n5555|1010\n",
     ["race-and-ethnicity-code-to-iteration.txt", "line 2", "ITERATION_CODE", "'5555'"]),
    ("race-and-ethnicity-code-to-iteration.txt", "ITERATION_CODE|RACE_ETH_CODE\n3001|4444\n",
     ["line 2", "RACE_ETH_CODE", "'4444'"]),
    ("race-and-ethnicity-codes.txt", "RACE_ETH_CODE|RACE_ETH_NAME\n1010|A\n1010|B\n", ["line 3", "'1010'", "unique"]),
])
def test_bad_spec_files(fname, content, fragments, dataset, tmp_path, capsys):
    _good(dataset).write()
    (dataset.params / fname).write_text(content)
    out = tmp_path / "out"
    code = main(["run", str(dataset.params), str(dataset.data), str(out), "--quiet"])
    err = capsys.readouterr().err
    assert code == 1
    for frag in fragments:
        assert frag in err, f"{frag!r} not in:\n{err}"
    assert not out.exists()


@pytest.mark.parametrize("row,fragments", [
    ("01|001|000100|001|10000|0001", ["GRF-C.txt", "line 2", "TABBLK", "'001'", "4 digits"]),
    ("98|001|000100|0001|10000|0001", ["line 2", "TABBLKST", "'98'", "state FIPS"]),
    ("01|001|000100|0001|10000", ["line 2", "6 fields"]),
])
def test_bad_geography(row, fragments, dataset, tmp_path, capsys):
    _good(dataset)
    dataset.blocks = [tuple(row.split("|"))] + dataset.blocks
    dataset.write()
    code = main(["validate", str(dataset.params), str(dataset.data), "--quiet"])
    err = capsys.readouterr().err
    assert code == 1
    for frag in fragments:
        assert frag in err, f"{frag!r} not in:\n{err}"


def test_duplicate_block_in_grf(dataset, capsys):
    _good(dataset)
    dataset.blocks = dataset.blocks + [dataset.blocks[0]]
    dataset.write()
    assert main(["validate", str(dataset.params), str(dataset.data), "--quiet"]) == 1
    err = capsys.readouterr().err
    assert f"line {len(dataset.blocks) + 1}" in err and "listed once" in err


def test_person_file_header_and_field_count(dataset, capsys):
    _good(dataset).write()
    path = dataset.data / "person-records.txt"
    lines = path.read_text().splitlines()
    path.write_text("\n".join(lines[:2] + ["030|1|True|01"] + lines[2:]) + "\n")
    assert main(["validate", str(dataset.params), str(dataset.data), "--quiet"]) == 1
    err = capsys.readouterr().err
    assert "line 3" in err and "17 fields" in err
    path.write_text("AGE|SEX\n030|1\n")
    assert main(["validate", str(dataset.params), str(dataset.data), "--quiet"]) == 1
    err = capsys.readouterr().err
    assert "person-records.txt, line 1" in err and "QAGE|QSEX|HOUSEHOLDER" in err


def test_many_problems_show_the_first_20_and_the_total(dataset, capsys):
    dataset.persons = [person(age=200)] * 57
    dataset.write()
    with pytest.raises(InputError) as info:
        validate(dataset.params, dataset.data)
    assert info.value.total == 57
    text = info.value.report()
    assert "57 problems" in text and "... and 37 more" in text
    assert text.count("QAGE") == 20


def test_missing_files_and_directories(dataset, tmp_path, capsys):
    _good(dataset).write()
    (dataset.data / "GRF-C.txt").unlink()
    (dataset.params / "config.json").write_text("{not json")
    assert main(["validate", str(dataset.params), str(dataset.data), "--quiet"]) == 1
    err = capsys.readouterr().err
    assert "GRF-C.txt" in err and "config.json" in err and "not valid JSON" in err
    assert main(["validate", str(tmp_path / "nope"), str(dataset.data), "--quiet"]) == 1
    assert "PARAMS_DIR" in capsys.readouterr().err


def test_valid_inputs_pass(dataset, capsys):
    _good(dataset).write()
    assert main(["validate", str(dataset.params), str(dataset.data), "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "OK: 3 persons" in out and "nothing was written" in out


def test_config_round_trip_is_exact(dataset):
    _good(dataset).write()
    inputs = validate(dataset.params, dataset.data)
    assert inputs.config.to_dict() == dataset.config
    assert json.loads(inputs.config.to_json()) == dataset.config
