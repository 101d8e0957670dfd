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
        assert specs_2020.h_r(level) == 1 and specs_2020.h_e(level) == 1
        assert specs_2020.stability(level, 8) == 9
        assert specs_2020.stability(level, 3) == 4
        assert specs_2020.stability(level, 1) == 3


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


def test_toy_reference_specs_load():
    if not REF_TOY.is_dir():
        pytest.skip("the toy reference files are not present")
    s = load_specs(REF_TOY / "params")
    assert s.h_r(2) == 2  # code 1020 maps to two level-2 alone iterations (4001 and 7000)
    assert s.stability(2, 8) == 2 * 8 + s.h_e(2)
