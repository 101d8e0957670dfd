"""Spec files: the 2020 files load with the counts of SPEC section 3; flat-map rules of SPEC section 1."""

from __future__ import annotations

import pytest

from engine.inputs.specs import load_specs
from tests.engine.conftest import REFERENCE, Dataset

REF_2020 = REFERENCE / "safetab-p-2020"
REF_TOY = REFERENCE / "safetab-p-toy"


@pytest.fixture
def specs_2020():
    if not REF_2020.is_dir():
        pytest.skip("the 2020 reference files (../shared/reference) are not present")
    return load_specs(REF_2020)


def test_2020_spec_files_load_with_the_published_counts(specs_2020):
    s = specs_2020
    # SPEC §4 says 3,017: the file has 3,017 lines after its header, the last one blank.
    assert sum(1 for it in s.iterations.values() if it.kind == "race") == 3016
    assert sum(1 for it in s.iterations.values() if it.kind == "ethnicity") == 38
    assert len(s.codes) == 1755
    assert sum(len(v) for v in s.code_to_iterations.values()) == 14088
    # SPEC §3: 2,944 Detailed iterations at USA/STATE and 2,150 below state; 52 / 48 Regional.
    assert s.count_tabulated("USA", 2) == s.count_tabulated("STATE", 2) == s.count_tabulated("PR-STATE", 2) == 2944
    for geo in ("COUNTY", "TRACT", "PLACE", "AIANNH", "PR-COUNTY", "PR-TRACT", "PR-PLACE"):
        assert s.count_tabulated(geo, 2) == 2150
        assert s.count_tabulated(geo, 1) == 48
    assert s.count_tabulated("USA", 1) == 52


def test_2020_stability(specs_2020):
    for level in (1, 2):
        for geo in ("USA", "STATE", "COUNTY", "TRACT", "PLACE", "AIANNH", "PR-STATE", "PR-TRACT"):
            assert specs_2020.h_r(level, geo) == 1 and specs_2020.h_e(level, geo) == 1
            assert specs_2020.stability(level, 8, geo) == 9
            assert specs_2020.stability(level, 3, geo) == 4
            assert specs_2020.stability(level, 1, geo) == 3


def test_alone_is_intersection_and_aoic_is_union(tmp_path):
    ds = Dataset(tmp_path).write()
    s = load_specs(ds.params)
    # One code: its alone and AOIC iterations (and no ethnicity iteration for "Not Hispanic").
    assert s.person_iterations(frozenset({"1010"}), "2000", 2) == {"3001", "3002"}
    # Albanian + Basque: not "alone" in either detailed group; in both AOIC groups.
    assert s.person_iterations(frozenset({"1010", "1011"}), "2000", 2) == {"3002", "3012"}
    # ...but both are European, so "European alone" (level 1) holds, and its AOIC too.
    assert s.person_iterations(frozenset({"1010", "1011"}), "2000", 1) == {"2001", "2002"}
    # European + African at level 1: only the two AOIC groups; Hispanic adds the ethnicity group.
    assert s.person_iterations(frozenset({"1010", "1020"}), "2010", 1) == {"2002", "2102", "4011"}


def test_geography_filters(tmp_path):
    ds = Dataset(tmp_path).write()
    s = load_specs(ds.params)
    state = {it.code for it in s.tabulated("STATE", 2)}
    county = {it.code for it in s.tabulated("COUNTY", 2)}
    assert "3011" in state and "3011" not in county  # DETAILED_ONLY: state-or-above only
    assert "3021" in county and "3021" not in state  # COARSE_ONLY: sub-state only
    assert not any(it.level == 0 for it in s.tabulated("USA", 2))


def test_toy_reference_stability_is_counted_per_tabulation_class():
    if not REF_TOY.is_dir():
        pytest.skip("the toy reference files are not present")
    s = load_specs(REF_TOY / "params")
    # Code 1020 maps to two level-2 alone iterations, 4001 (DETAILED_ONLY) and 7000
    # (COARSE_ONLY), but no geography tabulates both: h_r = 1 in each class, so S = 9
    # at level 2, as production computes it (not 2 * 8 + h_e).
    for level in (1, 2):
        for geo in ("USA", "STATE", "COUNTY", "TRACT", "PLACE", "AIANNH"):
            assert (s.h_r(level, geo), s.h_e(level, geo)) == (1, 1)
            assert s.stability(level, 8, geo) == 9


def test_stability_follows_the_class_of_the_geography(tmp_path):
    # Hand-made spec: at level 2 the only ethnicity iteration is COARSE_ONLY (tabulated
    # below state only), and the race code 1011's only level-2 iterations are
    # DETAILED_ONLY (state and above only).
    ds = Dataset(tmp_path)
    ds.eth_iterations = [("4001", "Not Hispanic or Latino", "0", "Null", "Null"),
                         ("4002", "Hispanic or Latino", "0", "Null", "Null"),
                         ("4011", "Central American", "1", "False", "False"),
                         ("4021", "Costa Rican", "2", "False", "True")]
    ds.write()
    s = load_specs(ds.params)
    assert (s.h_r(2, "USA"), s.h_e(2, "USA")) == (1, 0)
    assert (s.h_r(2, "COUNTY"), s.h_e(2, "COUNTY")) == (1, 1)
    for r, (state_s, county_s) in {8: (8, 9), 3: (3, 4), 1: (2, 3)}.items():
        assert s.stability(2, r, "STATE") == s.stability(2, r, "PR-STATE") == state_s
        assert s.stability(2, r, "TRACT") == s.stability(2, r, "AIANNH") == county_s


def test_a_code_in_two_iterations_of_one_slice_is_rejected(tmp_path):
    # Production's hierarchy-height rule: 1010 in two level-2 ALONE=True iterations that
    # are both tabulated at sub-state geographies.
    from engine.errors import InputError

    ds = Dataset(tmp_path)
    ds.race_iterations = ds.race_iterations + [("3031", "Dummy alone", "2", "True", "False", "False")]
    ds.mapping = ds.mapping + [("3031", "1010")]
    ds.write()
    with pytest.raises(InputError) as err:
        load_specs(ds.params)
    text = err.value.report()
    assert "race-and-ethnicity-code-to-iteration.txt" in text and "'1010'" in text
    assert "3001, 3031" in text and "LEVEL=2, ALONE=True" in text
    assert "national and state" in text and "sub-state" in text
