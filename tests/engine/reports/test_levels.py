"""Whole levels as arrays (engine.reports.levels): truth, release, variances, nesting."""

from __future__ import annotations

import numpy as np
import pytest

from calculators import budget, discrete_gaussian
from calculators.levels import PopulationGroupLevel
from engine import noise as _noise
from engine.reports.levels import level_tables, parent_regions, total_variance
from engine.run import make_noise, prepare, run
from tests.engine.conftest import BLOCKS, person, read_part_files


def _persons():
    return [person(block=BLOCKS[i % 7], age=(7 * i) % 100, sex=1 + i % 2, races=(("1010",), ("1020",))[i % 3 == 0])
            for i in range(300)]


def test_level_tables_match_the_written_release(dataset, tmp_path):
    dataset.persons = _persons()
    dataset.write()
    prepared = prepare(dataset.params, dataset.data)
    tables = level_tables(prepared, make_noise("zcdp", _noise.RandomSource.seeded(4)))
    out = run(dataset.params, dataset.data, tmp_path / "rel", seed=4, coterminous=False).out_dir
    t1 = read_part_files(out / "t1")
    sup = read_part_files(out / "suppressed")
    lvl = PopulationGroupLevel.parse("(COUNTY, 2)")
    t = tables[lvl]
    assert t.shape == (len(t.regions), len(t.codes))
    for r, region in enumerate(t.regions):
        for i, code in enumerate(t.codes):
            row = t1[(t1.REGION_TYPE == "COUNTY") & (t1.REGION_ID == region) & (t1.ITERATION_CODE == code)]
            if t.released[r, i]:
                assert int(row.COUNT.item()) == t.published[r, i]
            else:
                assert row.empty and not sup[(sup.REGION_ID == region) & (sup.ITERATION_CODE == code)].empty
    # The truth: the Angolan persons (every third) of county 01001, counted independently.
    truth = tables[lvl].truth
    r, i = list(t.regions).index("01001"), list(t.codes).index("3101")
    assert truth[r, i] == sum(1 for j in range(300) if j % 3 == 0 and BLOCKS[j % 7][:2] == ("01", "001"))
    assert set(tables) == set(prepared.plans)


def test_truth_mode_publishes_the_truth(dataset):
    dataset.persons = _persons()
    dataset.write()
    prepared = prepare(dataset.params, dataset.data)
    lvl = PopulationGroupLevel.parse("(TRACT, 2)")
    t = level_tables(prepared, None, truth=True, levels=[lvl])
    assert list(t) == [lvl]
    assert np.array_equal(t[lvl].published, t[lvl].truth) and t[lvl].released.all()


def test_total_variance_by_stat_level(dataset):
    dataset.persons = [person()]
    dataset.write()
    prepared = prepare(dataset.params, dataset.data)
    plan = prepared.plans[PopulationGroupLevel.parse("(COUNTY, 2)")]
    v = total_variance(plan, np.array([-1, 0, 1, 2, 3], np.int8))
    s2 = budget.sigma2_stage2(1.0, 0.1, 9)
    v2 = discrete_gaussian.variance(s2)
    assert v[1:] == pytest.approx([v2, 8 * v2, 18 * v2, 46 * v2])
    assert v[0] == pytest.approx(discrete_gaussian.variance(budget.sigma2_total_only(1.0, 9)))
    assert v2 <= s2  # never above sigma^2 (equal to it in floating point at this scale)


def test_parent_regions_follow_grf_nesting(dataset):
    dataset.persons = [person()]
    dataset.write()
    geo = prepare(dataset.params, dataset.data).inputs.geography
    tracts = geo.regions["TRACT"].astype(str)
    counties = geo.regions["COUNTY"].astype(str)
    parent = parent_regions(geo, "TRACT", "COUNTY")
    assert [counties[p] for p in parent] == [t[:5] for t in tracts]
    # Place 0110000 lies in two tracts of county 01001: inside one county, not one tract.
    places = list(geo.regions["PLACE"].astype(str))
    assert parent_regions(geo, "PLACE", "COUNTY")[places.index("0110000")] == list(counties).index("01001")
    assert parent_regions(geo, "PLACE", "TRACT")[places.index("0110000")] == -1
    assert (parent_regions(geo, "STATE", "USA") == 0).all()
