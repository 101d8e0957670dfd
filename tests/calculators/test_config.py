"""The configuration model: as strict as production's config validation (and stricter where
docs/production-differences.md says so), exact round trips, sane ranges, short messages."""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pytest

from calculators import budget
from calculators.config import (
    BUDGET_RANGE,
    GAMMA_RANGE,
    MAX_NOISE_SCALE,
    MAX_STABILITY,
    ConfigError,
    SafeTabConfig,
    loads_unique,
)
from calculators.levels import POPULATION_GROUP_LEVELS, PopulationGroupLevel
from calculators.presets import production_2020

REFERENCE = Path(__file__).resolve().parents[3] / "shared" / "reference"
COUNTY2 = PopulationGroupLevel("COUNTY", 2)


def _base() -> dict:
    return production_2020().updated(reader="csv").to_dict()


def _problems(data) -> list[str]:
    with pytest.raises(ConfigError) as err:
        SafeTabConfig.from_dict(data)
    return err.value.problems


def _with(**changes) -> dict:
    data = _base()
    data.update(changes)
    return data


def _without(*keys) -> dict:
    data = _base()
    for k in keys:
        del data[k]
    return data


# Each case: the config, and fragments every one of which a single problem must contain.
BAD = {
    "empty object": ({}, ["29 keys are missing", "max_race_codes, privacy_budget_p_level_1_usa"]),
    "a list, not an object": ([1, 2], ["JSON object"]),
    "missing budget": (_without("privacy_budget_p_level_2_county"), ["privacy_budget_p_level_2_county is missing"]),
    "missing reader": (_without("reader"), ["reader is missing"]),
    "misspelled key": (
        {**_without("privacy_budget_p_level_2_county"), "privacy_budget_p_level_2_conty": 0.159},
        ['"privacy_budget_p_level_2_conty" is not a SafeTab-P config.json key',
         'did you mean "privacy_budget_p_level_2_county"'],
    ),
    "unknown key": (_with(comment="x"), ['"comment" is not a SafeTab-P config.json key']),
    "run_us a string": (_with(run_us="Yes"), ["run_us must be true or false", '"Yes"']),
    "run_us a number": (_with(run_us=1), ["run_us must be true or false", "(got 1)"]),
    "allow_negative_counts a string": (_with(allow_negative_counts="true"), ["allow_negative_counts", '"true"']),
    "max_race_codes a string": (_with(max_race_codes="8"), ["max_race_codes must be a whole number", '"8"']),
    "max_race_codes a float": (_with(max_race_codes=8.0), ["max_race_codes must be a whole number", "8.0"]),
    "max_race_codes true": (_with(max_race_codes=True), ["max_race_codes must be a whole number", "true"]),
    "max_race_codes 0": (_with(max_race_codes=0), ["max_race_codes", "1 to 8"]),
    "budget a string": (_with(privacy_budget_p_level_1_usa="1"), ["privacy_budget_p_level_1_usa must be a number", '"1"']),
    "budget true": (_with(privacy_budget_p_level_1_usa=True), ["privacy_budget_p_level_1_usa must be a number", "true"]),
    # a Number (int or float): one message naming the key, not one per member of the union
    "p a string": (_with(zero_suppression_chance="0.5"), ["zero_suppression_chance must be a number", '"0.5"']),
    "gamma true": (_with(privacy_budget_p_stage_1_fraction=True), ["privacy_budget_p_stage_1_fraction must be a number"]),
    "budget NaN": (_with(privacy_budget_p_level_1_usa=float("nan")), ["privacy_budget_p_level_1_usa", "NaN"]),
    "budget negative": (_with(privacy_budget_p_level_2_tract=-0.1), ["privacy_budget_p_level_2_tract", "-0.1"]),
    "budget 1e-40": (_with(privacy_budget_p_level_2_tract=1e-40), ["privacy_budget_p_level_2_tract", "1e-06", "1e-40"]),
    "budget 1e-7": (_with(privacy_budget_p_level_2_tract=1e-7), ["privacy_budget_p_level_2_tract", "1e-06", "1e-07"]),
    "budget 1e7": (_with(privacy_budget_p_level_2_tract=1e7), ["privacy_budget_p_level_2_tract", "1e+06"]),
    "budget 10**400": (_with(privacy_budget_p_level_2_tract=10**400), ["privacy_budget_p_level_2_tract", "1e+06",
                                                                      "401 characters"]),
    "gamma 10**400": (_with(privacy_budget_p_stage_1_fraction=10**400), ["privacy_budget_p_stage_1_fraction"]),
    "suppression chance 10**400": (_with(zero_suppression_chance=10**400), ["zero_suppression_chance"]),
    "gamma 0": (_with(privacy_budget_p_stage_1_fraction=0), ["privacy_budget_p_stage_1_fraction", "between 0 and 1"]),
    "gamma 1e-40": (_with(privacy_budget_p_stage_1_fraction=1e-40), ["privacy_budget_p_stage_1_fraction", "1e-40"]),
    "gamma 1e-300": (_with(privacy_budget_p_stage_1_fraction=1e-300), ["privacy_budget_p_stage_1_fraction", "1e-300"]),
    "gamma a string": (_with(privacy_budget_p_stage_1_fraction="0.1"), ["privacy_budget_p_stage_1_fraction", '"0.1"']),
    "suppression chance 1": (_with(zero_suppression_chance=1.0), ["zero_suppression_chance", "less than 1"]),
    "threshold a float": (
        _with(thresholds_p={**_base()["thresholds_p"], "(TRACT, 2)": [1.0, 2, 3]}),
        ["thresholds_p.(TRACT, 2).0 must be a whole number", "1.0"],
    ),
    "four thresholds": (
        _with(thresholds_p={**_base()["thresholds_p"], "(TRACT, 2)": [1, 2, 3, 4]}),
        ["(TRACT, 2) must list exactly 3 thresholds"],
    ),
    "threshold 1e40": (
        _with(thresholds_p={**_base()["thresholds_p"], "(TRACT, 2)": [1, 2, 10**40]}),
        ["(TRACT, 2) thresholds must lie within"],
    ),
    "misspelled threshold level": (
        _with(thresholds_p={**_base()["thresholds_p"], "(CONTY, 2)": [1, 2, 3]}),
        ['"(CONTY, 2)" is not a population group level', 'did you mean "(COUNTY, 2)"'],
    ),
    # SafeTab-P looks thresholds up by the exact text; beside "(TRACT, 2)" another spelling
    # would be a second value of which one is silently ignored
    "threshold level spelt otherwise": (
        _with(thresholds_p={**_base()["thresholds_p"], "(TRACT,2)": [1, 2, 3]}),
        ['"(TRACT,2)" must be written exactly "(TRACT, 2)"'],
    ),
    "no threshold for a budget-0 level": (
        _with(thresholds_p={k: v for k, v in _base()["thresholds_p"].items() if k != "(AIANNH, 1)"}),
        ["thresholds_p has no thresholds for (AIANNH, 1)"],
    ),
    "both runs off": (_with(run_us=False, run_pr=False), ["run_us and run_pr are both false"]),
    "empty state filter": (_with(state_filter_us=[]), ["state_filter_us is empty"]),
    "duplicate state": (_with(state_filter_us=["01", "06", "01"]), ["state_filter_us lists a state more than once", '"01"']),
    "state not a string": (_with(state_filter_us=[1]), ["state_filter_us.0 must be a string"]),
    "Puerto Rico in the US filter": (_with(state_filter_us=["72"]), ["state_filter_us", "72"]),
    "all budgets zero": (
        _with(**{lvl.budget_key: 0 for lvl in POPULATION_GROUP_LEVELS}),
        ["run_us is true but every one of its level budgets is 0"],
    ),
    "reader unknown": (_with(reader="sql"), ['reader must be "csv" or "cef"', '"sql"']),
}


@pytest.mark.parametrize("name", list(BAD))
def test_bad_configuration_names_key_value_and_expectation(name):
    data, fragments = BAD[name]
    problems = _problems(data)
    assert any(all(f in p for f in fragments) for p in problems), problems
    assert not any(".int " in p or ".float " in p for p in problems), problems  # the key, not a union member


def test_run_us_off_needs_neither_us_thresholds_nor_a_state_filter():
    data = _with(run_us=False, state_filter_us=[])
    data["thresholds_p"] = {k: v for k, v in data["thresholds_p"].items() if k.startswith("(PR-")}
    cfg = SafeTabConfig.from_dict(data)
    assert [lvl.geo for lvl in cfg.tabulated_levels()] == ["PR-STATE"] * 2 + ["PR-COUNTY"] * 2 + \
        ["PR-TRACT"] * 2 + ["PR-PLACE"] * 2


def test_zero_suppression_chance_is_optional_and_stays_absent():
    data = _without("zero_suppression_chance")
    cfg = SafeTabConfig.from_dict(data)
    assert cfg.suppression_chance == 0.0  # production: no key, no suppression
    assert cfg.to_dict() == data and "zero_suppression_chance" not in cfg.with_rho(COUNTY2, 0.2).to_dict()
    assert cfg.updated(zero_suppression_chance=0.5).to_dict()["zero_suppression_chance"] == 0.5


@pytest.mark.parametrize("name", ["safetab-p-2020", "safetab-p-toy"])
def test_reference_config_round_trips_exactly(name):
    path = REFERENCE / name / "params" / "config.json"
    if name == "safetab-p-2020":
        path = REFERENCE / name / "config.json"
    if not path.is_file():
        pytest.skip("../shared/reference is not there")
    raw = json.loads(path.read_text())
    cfg = SafeTabConfig.read(path)
    assert cfg.to_dict() == raw
    # types too: 0 stays an int, 0.159 a float
    assert [type(v) for v in cfg.to_dict().values()] == [type(raw[k]) for k in cfg.to_dict()]
    assert SafeTabConfig.from_json(cfg.to_json()).to_dict() == raw


def test_edits_accept_numpy_numbers_and_keep_strict_types():
    cfg = production_2020()
    assert cfg.with_rho(COUNTY2, np.float64(0.25)).rho(COUNTY2) == 0.25
    assert cfg.updated(max_race_codes=np.int64(3)).max_race_codes == 3
    with pytest.raises(ConfigError):
        cfg.updated(max_race_codes=np.float64(3.0))


def test_duplicate_json_key_is_an_error():
    text = json.dumps(_base())[:-1] + ', "run_us": false}'
    with pytest.raises(ConfigError) as err:
        SafeTabConfig.from_json(text)
    assert err.value.problems == ['the key "run_us" appears more than once']


@pytest.mark.parametrize("literal, read_as", [("1e-400", "0.0"), ("2.1340000000000000001", "2.134")])
def test_a_number_a_float_cannot_hold_is_refused_not_read_as_another(literal, read_as):
    """1e-400 would be read as 0.0 (the level switched off) and 2.1340000000000000001 as
    2.134, silently: refused by key, as the planner's boxes refuse them."""
    text = json.dumps(_base()).replace('"privacy_budget_p_level_2_usa": 2.134',
                                       f'"privacy_budget_p_level_2_usa": {literal}', 1)
    assert literal in text
    with pytest.raises(ConfigError) as err:
        SafeTabConfig.from_json(text)
    assert err.value.problems == [f'"privacy_budget_p_level_2_usa": {literal} cannot be used exactly (a number here '
                                  f'holds about 17 significant digits) and would be read as {read_as}']


@pytest.mark.parametrize("key, old, new, message", [
    # Python's own words used to be the message, with no key: "not a SafeTab-P config.json:
    # Exceeds the limit (4300 digits) for integer string conversion ... sys.set_int_max_str_digits()"
    ("max_race_codes", "8", "9" * 5000, "is a whole number of 5,000 digits; at most 4,300 digits are read"),
    ("(USA, 1)", "4971", "-" + "1" * 4301, "is a whole number of 4,301 digits; at most 4,300 digits are read"),
    # 1e999 used to be named as "Infinity", which the file does not say
    ("privacy_budget_p_level_2_usa", "2.134", "1e999",
     "1e999 is beyond the largest number a value can hold (about 1.8e308) and would be read as inf"),
])
def test_a_number_beyond_what_python_reads_is_named_by_its_key(key, old, new, message):
    text = json.dumps(_base()).replace(f'"{key}": {old}' if key[0] != "(" else f'"{key}": [{old}',
                                       f'"{key}": {new}' if key[0] != "(" else f'"{key}": [{new}', 1)
    assert new in text
    with pytest.raises(ConfigError) as err:
        SafeTabConfig.from_json(text)
    assert len(err.value.problems) == 1
    problem = err.value.problems[0]
    assert problem.startswith(f'"{key}": ') and problem.endswith(message), problem
    assert len(problem) < 300 and "set_int_max_str_digits" not in problem


def test_a_whole_number_of_4300_digits_is_read_and_refused_by_range():
    text = json.dumps(_base()).replace('"max_race_codes": 8', '"max_race_codes": -' + "9" * 4300, 1)
    with pytest.raises(ConfigError) as err:
        SafeTabConfig.from_json(text)
    assert "max_race_codes must be a whole number from 1 to 8" in err.value.problems[0]


def test_numbers_as_written_in_a_config_json_are_read_unchanged():
    text = json.dumps(_base()).replace('"privacy_budget_p_level_2_usa": 2.134',
                                       '"privacy_budget_p_level_2_usa": 2.1340', 1)
    text = text.replace('"privacy_budget_p_level_1_aiannh": 0.0', '"privacy_budget_p_level_1_aiannh": 0.0e5', 1)
    assert "2.1340," in text and "0.0e5" in text
    cfg = SafeTabConfig.from_json(text)
    assert cfg.privacy_budget_p_level_2_usa == 2.134 and cfg.privacy_budget_p_level_1_aiannh == 0


def test_a_number_cut_short_is_named_inside_a_list():
    data, problems = loads_unique('{"a": [1.5, 1e-999], "b": {"c": 0.30000000000000000001}}')
    assert data == {"a": [1.5, 0.0], "b": {"c": 0.3}} and type(data["a"][0]) is float
    assert sorted(p.split(":")[0] for p in problems) == ['"a"', '"c"']


def test_deeply_nested_json_is_a_config_error():
    with pytest.raises(ConfigError):
        SafeTabConfig.from_json("[" * 100_000 + "]" * 100_000)


@pytest.mark.timeout(10)
def test_a_huge_value_gives_a_short_message():
    start = time.perf_counter()
    problems = _problems(_with(reader="x" * 10_000_000))
    assert time.perf_counter() - start < 5
    assert all(len(p) < 300 for p in problems) and "10,000,002 characters" in problems[0]


def test_non_utf8_config_file_names_the_line(tmp_path):
    path = tmp_path / "config.json"
    path.write_bytes(json.dumps(_base(), indent=2).replace('"csv"', '"c\u00e9v"').encode("latin-1"))
    with pytest.raises(ConfigError) as err:
        SafeTabConfig.read(path)
    line = next(i for i, ln in enumerate(path.read_bytes().split(b"\n"), 1) if b"\xe9" in ln)
    assert err.value.problems == [f"line {line}: the byte 0xe9 is not UTF-8 text (SPEC §4: files are UTF-8)"]


def test_messages_of_engine_and_config_cut_values_alike():
    from calculators.config import ECHO_LIMIT
    from engine import errors

    assert errors.ECHO_LIMIT == ECHO_LIMIT  # engine.errors imports nothing of the project


def test_the_ranges_bound_every_noise_scale():
    # The largest noise scale of a valid configuration: the smallest budget and share,
    # the largest stability; both the zCDP sigma2 and the pure-DP scale stay below it.
    lo, g = BUDGET_RANGE[0], GAMMA_RANGE[0]
    assert budget.sigma2_stage1(lo, g, MAX_STABILITY) == pytest.approx(MAX_NOISE_SCALE / 2)
    assert budget.geometric_scale(lo, MAX_STABILITY, g) == pytest.approx(MAX_NOISE_SCALE)
    assert GAMMA_RANGE[1] == 1 - GAMMA_RANGE[0]
    smallest = _with(**{lvl.budget_key: (lo if lvl.budget_key.endswith("county") else 0)
                        for lvl in POPULATION_GROUP_LEVELS}, privacy_budget_p_stage_1_fraction=g)
    cfg = SafeTabConfig.from_dict(smallest)
    assert cfg.rho(COUNTY2) == lo and cfg.gamma == g
