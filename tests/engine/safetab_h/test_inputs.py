"""Each of SafeTab-H's input checks, with production's rule and our message (file,
line, column, found, expected); nothing is written when one fails."""

from __future__ import annotations

import pytest

from engine.cli import main
from engine.errors import InputError
from engine.safetab_h.run import prepare
from tests.engine.safetab_h.conftest import household


def _problems(ds) -> str:
    ds.write()
    with pytest.raises(InputError) as exc:
        prepare(ds.params, ds.data)
    return exc.value.report()


@pytest.mark.parametrize("row, column, found, expected", [
    (household((6, 1)), "HOUSEHOLD_TYPE", "'6'", "1 to 5"),
    (household((1, 0)), "TEN", "'0'", "1 to 4"),
    (household(hhrace="64"), "HHRACE", "'64'", "two digits from 01 to 63"),
    (household(races=("Null",)), "QRACE1", "'Null'", "QRACE1 must not be Null"),
    (household(races=("1010", "Null", "1020")), "QRACE3", "'1020'", "a race code after a Null is an error"),
    (household(races=("7777",)), "QRACE1", "'7777'", "a code listed in race-and-ethnicity-codes.txt"),
    (household(eth="9999"), "QSPAN", "'9999'", "an ethnicity code"),
    (household(block=("01", "001", "000100", "0099", "", "")), "TABBLKST|TABBLKCOU|TABTRACTCE|TABBLK",
     "'01|001|000100|0099'", "a block listed in GRF-C"),
])
def test_each_household_rule(hdata, row, column, found, expected):
    hdata.households.append(row)
    report = _problems(hdata)
    line = len(hdata.households) + 1  # the header is line 1
    assert f"household-records.txt, line {line}, column {column}: found {found}; expected" in report
    assert expected in report


def test_households_outside_the_runs_states_are_not_read(hdata):
    hdata.households.append(household((9, 9), block=("02", "001", "000100", "0001", "", "")))
    hdata.write()
    assert prepare(hdata.params, hdata.data).households == 10


@pytest.mark.parametrize("row, column, expected", [
    (("01", "STATE", "2001", "x"), "COUNT", "a whole number"),
    (("011", "STATE", "2001", "3"), "REGION_ID", "the id of its REGION_TYPE"),
    (("01", "PROVINCE", "2001", "3"), "REGION_TYPE", "a geography level"),
    (("01", "STATE", "20011", "3"), "ITERATION_CODE", "an iteration code of 4 digits"),
])
def test_each_t1_rule(hdata, row, column, expected):
    hdata.t1.append(row)
    report = _problems(hdata)
    assert f"pop-group-totals.txt, line {len(hdata.t1) + 1}, column {column}: found '{row[['REGION_ID', 'REGION_TYPE', 'ITERATION_CODE', 'COUNT'].index(column)]}'" in report
    assert expected in report


def test_a_t1_group_twice(hdata):
    hdata.t1.append(("1", "USA", "2001", "7"))
    report = _problems(hdata)
    assert "(REGION_TYPE=USA, REGION_ID=1, ITERATION_CODE=2001) appeared more than once" in report


def test_a_t1_of_the_other_run(hdata):
    hdata.t1 = [("72", "PR-STATE", "2001", "5")]  # dropped by the state filter: nothing left of the US run
    report = _problems(hdata)
    assert "No T1 pop groups data for the US run" in report


def test_a_t1_whose_groups_have_no_household(hdata):
    hdata.t1 = [("01003", "COUNTY", "2001", "5")]  # a county without households
    report = _problems(hdata)
    assert "none of the T1's groups has one" in report


@pytest.mark.parametrize("change, expected", [
    ({"thresholds_h_t3": {"(USA, 1)": [1, 2]}}, "expected at least three non-decreasing"),
    ({"thresholds_h_t3": {"(USA, 1)": [3, 2, 1]}}, "expected at least three non-decreasing"),
    ({"thresholds_h_t4": {"(USA, 1)": [1, 2]}}, "expected one whole-number threshold"),
    ({"privacy_budget_h_t3_level_1_usa": -1}, "expected a non-negative number"),
    ({"privacy_budget_h_t3_level_1_usa": "1"}, "expected a float value, not str"),
    ({"privacy_defn": "approxdp"}, "expected zcdp (Rho zCDP) or puredp"),
    ({"max_race_codes": 9}, "expected an int value between 1 and 8"),
    ({"run_us": False}, "expected at least one of them true"),
])
def test_each_config_rule(hdata, change, expected):
    cfg = hdata.config
    for k, v in change.items():
        if isinstance(v, dict):
            cfg[k] = {**cfg[k], **v}
        else:
            cfg[k] = v
    report = _problems(hdata)
    assert "config.json" in report and expected in report


def test_missing_keys_and_all_budgets_zero(hdata):
    del hdata.config["thresholds_h_t4"]
    assert "missing required keys {thresholds_h_t4}" in _problems(hdata)
    hdata.config["thresholds_h_t4"] = {}
    assert "missing required keys in 'thresholds_h_t4' {(USA, 1)" in _problems(hdata)
    hdata.config["thresholds_h_t4"] = {k: [1] for k in hdata.config["thresholds_h_t3"]}
    for k in list(hdata.config):
        if k.startswith("privacy_budget_h_"):
            hdata.config[k] = 0
    assert "expected at least one query's privacy budget > 0" in _problems(hdata)


def test_a_reader_other_than_csv_is_refused_with_safetab_hs_own_words(hdata):
    # the check is shared with SafeTab-P (engine.inputs.validate._read_config); the message names SafeTab-H's files
    hdata.config["reader"] = "cef"
    report = _problems(hdata)
    assert "config.json, key reader" in report and "found 'cef'" in report
    assert ('expected "csv": this engine reads the files of DATA_DIR (.txt or .parquet); production\'s CEF reader is '
            "not part of it") in report


def test_a_grf_c_without_a_block_in_the_runs_states(hdata):
    # the GRF-C check is shared with SafeTab-P (engine.inputs.validate._read_geography)
    hdata.config["state_filter_us"] = ["06"]
    report = _problems(hdata)
    assert "GRF-C.txt" in report and "none of the" in report and "blocks is there" in report


def test_the_command_line_exits_1_and_writes_nothing(hdata, tmp_path, capsys):
    hdata.households.append(household((6, 1)))
    hdata.write()
    out = tmp_path / "out"
    assert main(["safetab-h", str(hdata.params), str(hdata.data), str(out), "--quiet"]) == 1
    err = capsys.readouterr().err
    assert "HOUSEHOLD_TYPE: found '6'" in err and "Nothing was written" in err
    assert not out.exists()
