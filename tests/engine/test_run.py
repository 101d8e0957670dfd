"""End-to-end behaviour of the mechanism on small hand-built inputs (SPEC section 1)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from calculators import budget, discrete_gaussian
from calculators.levels import POPULATION_GROUP_LEVELS
from engine.run import prepare, run
from tests.engine.conftest import BLOCKS, base_config, person, read_part_files

HUGE = 1e6  # the largest allowed rho: the discrete Gaussian is 0 with overwhelming probability


def _huge_config(**kw):
    cfg = base_config(**{lvl.budget_key: HUGE for lvl in POPULATION_GROUP_LEVELS})
    cfg.update(kw)
    return cfg


def _key(df):
    return df[["REGION_TYPE", "REGION_ID", "ITERATION_CODE"]].apply(tuple, axis=1)


def _t1(out):
    df = read_part_files(out / "t1")
    return dict(zip(_key(df), df["COUNT"].astype(int)))


def _groups_per_stat(out):
    """Number of T2 rows without marginals per group."""
    t2 = read_part_files(out / "t2")
    if t2.empty:
        return {}
    body = t2[t2["AGESTART"] != "*"]
    return body.groupby(["REGION_TYPE", "REGION_ID", "ITERATION_CODE"]).size().to_dict()


def test_huge_rho_release_equals_truth(dataset, tmp_path):
    rng = np.random.default_rng(1)
    dataset.persons = [
        person(age=int(rng.integers(0, 116)), sex=int(rng.integers(1, 3)), block=BLOCKS[int(rng.integers(0, 8))],
               races=[("1010",), ("1011",), ("1012",), ("1020",), ("1010", "1020")][int(rng.integers(0, 5))],
               eth=["2000", "2010"][int(rng.integers(0, 2))])
        for _ in range(300)
    ]
    dataset.config = _huge_config()
    dataset.write()
    rel = run(dataset.params, dataset.data, tmp_path / "rel", seed=7).out_dir
    tru = run(dataset.params, dataset.data, tmp_path / "tru", truth=True).out_dir
    for sub in ("t1", "t2"):
        a = read_part_files(rel / sub).sort_values(list(read_part_files(rel / sub).columns)).reset_index(drop=True)
        b = read_part_files(tru / sub).sort_values(list(read_part_files(tru / sub).columns)).reset_index(drop=True)
        pd.testing.assert_frame_equal(a, b)
    # The truth itself is right: the USA total of "European alone or in any combination".
    n_eur = sum(1 for p in dataset.persons if p[8] in ("1010", "1011", "1012") and p[3] != "72")
    assert _t1(tru)[("USA", "1", "2002")] == n_eur


def test_every_group_of_the_universe_is_output_even_empty(dataset, tmp_path):
    dataset.persons = [person()]  # one person: almost every group is empty
    dataset.config = base_config(zero_suppression_chance=0.9)
    dataset.write()
    out = run(dataset.params, dataset.data, tmp_path / "out", seed=3).out_dir
    t1 = read_part_files(out / "t1")
    sup = read_part_files(out / "suppressed")
    published = set(_key(t1))
    suppressed = set(_key(sup)) if len(sup) else set()
    assert not published & suppressed
    prepared = prepare(dataset.params, dataset.data)
    expected = set()
    for lvl in prepared.levels:
        regions = prepared.inputs.geography.regions[lvl.geo]
        codes = prepared.catalog.codes(lvl.geo, lvl.iteration_level)
        expected |= {(lvl.geo, str(r), str(c)) for r in regions for c in codes}
    assert published | suppressed == expected
    # State-level groups are never suppressed, so every empty state group is in t1.
    assert ("STATE", "02", "3011") in published
    manifest = json.loads((out / "manifest.json").read_text())
    # 6 US tracts x 7 sub-state detailed iterations (6 race without DETAILED_ONLY, 1 ethnicity)
    assert manifest["levels"]["(TRACT, 2)"]["groups"] == 6 * 7


def test_stat_levels_follow_thresholds_without_noise(dataset, tmp_path):
    # Thresholds (5, 10, 20): sizes 4 / 5 / 10 / 20 give stat levels 0 / 1 / 2 / 3 (tables of 8 / 18 / 46 cells).
    sizes = {"1010": 4, "1011": 5, "1012": 10, "1020": 20}
    dataset.persons = [person(age=i % 90, sex=1 + i % 2, block=BLOCKS[0], races=(code,))
                       for code, n in sizes.items() for i in range(n)]
    dataset.write()
    out = run(dataset.params, dataset.data, tmp_path / "t", truth=True).out_dir
    cells = _groups_per_stat(out)
    t1 = _t1(out)
    # Albanians (4 < 5): stat level 0, a total only.
    assert t1[("STATE", "01", "3001")] == 4 and ("STATE", "01", "3001") not in cells
    # 20 Angolans (>= 20): sex x age23, 46 cells, at every level.
    assert cells[("STATE", "01", "3102")] == 46
    assert cells[("TRACT", "01001000100", "3101")] == 46
    # Regional "European" = 4 + 5 + 10 = 19 persons (10 <= 19 < 20): sex x age9, 18 cells.
    assert cells[("STATE", "01", "2002")] == 18
    # "Other European" (10) is COARSE_ONLY: tabulated below state only, with sex x age9 there.
    assert cells[("COUNTY", "01001", "3022")] == 18
    assert ("STATE", "01", "3022") not in t1
    # Basque (5) is DETAILED_ONLY: a single total at state level (no table), absent below.
    assert t1[("STATE", "01", "3011")] == 5 and ("STATE", "01", "3011") not in cells
    assert ("COUNTY", "01001", "3011") not in t1
    # A state with no one: every group at stat level 0 with a zero total.
    assert t1[("STATE", "02", "3101")] == 0 and ("STATE", "02", "3101") not in cells
    # 5 persons exactly at Theta_1: sex x age4 (8 cells) when not DETAILED_ONLY.
    dataset.persons = [person(age=i, block=BLOCKS[0], races=("1010",)) for i in range(5)]
    dataset.write()
    out5 = run(dataset.params, dataset.data, tmp_path / "t5", truth=True).out_dir
    assert _groups_per_stat(out5)[("STATE", "01", "3001")] == 8
    # A sex x age table with marginals: T1 equals the sum of the cells and of the marginals.
    t2 = read_part_files(out / "t2")
    g = t2[(t2.REGION_TYPE == "STATE") & (t2.REGION_ID == "01") & (t2.ITERATION_CODE == "3102")]
    body, marg = g[g.AGESTART != "*"], g[g.AGESTART == "*"]
    assert body.COUNT.astype(int).sum() == 20 == marg.COUNT.astype(int).sum()
    assert sorted(marg.SEX) == ["1", "2"]
    assert marg[marg.SEX == "1"].COUNT.astype(int).item() == body[body.SEX == "1"].COUNT.astype(int).sum() == 10


def test_suppression_only_for_substate_total_only_groups(dataset, tmp_path):
    dataset.persons = [person(block=BLOCKS[0], races=("1010",)) for _ in range(3)]
    dataset.config = _huge_config(zero_suppression_chance=0.5)
    dataset.write()
    out = run(dataset.params, dataset.data, tmp_path / "s", seed=1).out_dir
    sup = set(_key(read_part_files(out / "suppressed")))
    t1 = _t1(out)
    # With no noise the threshold is 0: empty sub-state groups are suppressed, 3 persons are not.
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["levels"]["(TRACT, 2)"]["suppression_threshold"] == 0
    assert t1[("TRACT", "01001000100", "3001")] == 3
    assert ("TRACT", "01001000200", "3001") in sup
    assert ("PLACE", "0110000", "3101") in sup
    # County 02001 is coterminous with state 02 (one block): it publishes the state's 0.
    assert t1[("COUNTY", "02001", "3002")] == 0
    # USA and STATE groups are never suppressed, even when empty.
    assert t1[("STATE", "02", "3001")] == 0 and not any(k[0] in ("USA", "STATE", "PR-STATE") for k in sup)
    assert manifest["levels"]["(STATE, 2)"]["suppression_threshold"] is None


def test_suppressed_groups_with_stat_level_tables_are_released(dataset, tmp_path):
    dataset.persons = [person(block=BLOCKS[3], races=("1020",), age=i) for i in range(30)]
    dataset.config = _huge_config(zero_suppression_chance=0.9999)
    dataset.config["thresholds_p"] = {lvl.key: [1, 2, 3] for lvl in POPULATION_GROUP_LEVELS}
    dataset.write()
    out = run(dataset.params, dataset.data, tmp_path / "s", seed=1).out_dir
    assert _t1(out)[("TRACT", "01003000100", "3101")] == 30
    assert _groups_per_stat(out)[("TRACT", "01003000100", "3101")] == 46


def test_noise_variance_per_cell_matches_sigma2(dataset, tmp_path):
    # Many empty groups: their published totals are pure noise. With thresholds far
    # above, every adaptive group is at stat level 0 and gets a stage-2 total.
    cfg = base_config(**{lvl.budget_key: 0.05 for lvl in POPULATION_GROUP_LEVELS})
    cfg["thresholds_p"] = {lvl.key: [10**9] * 3 for lvl in POPULATION_GROUP_LEVELS}
    blocks = [("01", f"{c:03d}", f"{t:06d}", "0001", "99999", "9999") for c in range(1, 41) for t in range(1, 26)]
    dataset.blocks = blocks
    dataset.persons = [person(block=blocks[0])]
    dataset.config = cfg
    dataset.write()
    out = run(dataset.params, dataset.data, tmp_path / "v", seed=2024).out_dir
    t1 = read_part_files(out / "t1")
    tracts = t1[(t1.REGION_TYPE == "TRACT") & (t1.REGION_ID != "01001000001")]
    x = tracts[tracts.ITERATION_CODE.isin(["3001", "3002", "3101", "3102", "3021", "3022"])].COUNT.astype(int).to_numpy()
    sigma2 = budget.sigma2_stage2(0.05, 0.1, 9)  # 100
    var = discrete_gaussian.variance(sigma2)
    n = len(x)
    assert n == 999 * 6
    # Sample variance of n iid draws: sd ~ var * sqrt(2 / n); allow 5 sd.
    assert abs(x.var() - var) < 5 * var * np.sqrt(2 / n)
    assert abs(x.mean()) < 5 * np.sqrt(var / n)


def test_coterminous_dc_publishes_the_same_counts(dataset, tmp_path):
    dc = [b for b in BLOCKS if b[0] == "11"]
    dataset.persons = [person(block=dc[i % 2], races=("1010",), age=20 + i) for i in range(12)]
    dataset.config = base_config(**{lvl.budget_key: 0.01 for lvl in POPULATION_GROUP_LEVELS})
    dataset.write()
    out = run(dataset.params, dataset.data, tmp_path / "c", seed=5).out_dir
    t1 = _t1(out)
    # State, county and place of DC cover the same blocks: the state's counts are copied.
    for code in ("3001", "3002", "2001", "2002", "3101"):
        assert t1[("STATE", "11", code)] == t1[("COUNTY", "11001", code)] == t1[("PLACE", "1150000", code)]
    # County 01003 has a single tract: county and tract agree too.
    for code in ("3001", "3002", "3021"):
        a = t1.get(("COUNTY", "01003", code))
        b = t1.get(("TRACT", "01003000100", code))
        assert a == b
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["postprocessing"]["coterminous_result"]["sets"] >= 2
    # Without the post-processing, independent noise makes them differ somewhere.
    out2 = run(dataset.params, dataset.data, tmp_path / "c2", seed=5, coterminous=False).out_dir
    t1b = _t1(out2)
    assert any(t1b[("STATE", "11", c)] != t1b[("COUNTY", "11001", c)] for c in ("3001", "3002", "2001", "2002", "3101"))


def test_non_negativity_clamps_released_counts(dataset, tmp_path):
    dataset.persons = [person()]
    dataset.config = base_config(allow_negative_counts=False,
                                 **{lvl.budget_key: 0.01 for lvl in POPULATION_GROUP_LEVELS})
    dataset.write()
    out = run(dataset.params, dataset.data, tmp_path / "n", seed=11).out_dir
    assert (read_part_files(out / "t1").COUNT.astype(int) >= 0).all()
    dataset.config = base_config(**{lvl.budget_key: 0.01 for lvl in POPULATION_GROUP_LEVELS})
    dataset.write()
    out = run(dataset.params, dataset.data, tmp_path / "n2", seed=11).out_dir
    assert (read_part_files(out / "t1").COUNT.astype(int) < 0).any()


def test_seeded_runs_are_reproducible(dataset, tmp_path):
    dataset.persons = [person(), person(races=("1020",))]
    dataset.write()
    a = read_part_files(run(dataset.params, dataset.data, tmp_path / "a", seed=9).out_dir / "t1")
    b = read_part_files(run(dataset.params, dataset.data, tmp_path / "b", seed=9).out_dir / "t1")
    c = read_part_files(run(dataset.params, dataset.data, tmp_path / "c", seed=10).out_dir / "t1")
    pd.testing.assert_frame_equal(a, b)
    assert not a.equals(c)


def test_pure_dp_runs_with_geometric_noise(dataset, tmp_path):
    dataset.persons = [person() for _ in range(5)]
    dataset.config = base_config(privacy_defn="puredp", zero_suppression_chance=0.9)
    dataset.write()
    out = run(dataset.params, dataset.data, tmp_path / "p", seed=4)
    m = out.manifest
    assert m["privacy"]["unit"] == "epsilon"
    lvl = m["levels"]["(TRACT, 2)"]
    assert lvl["geometric_scale"]["stage2"]["exact"] == "10"  # 9 / (0.9 * 1.0)
    from calculators import geometric

    assert lvl["suppression_threshold"] == geometric.inverse_cdf(0.9, 10.0)


def test_pr_runs_separately_with_its_own_levels(dataset, tmp_path):
    dataset.persons = [person(block=BLOCKS[7]) for _ in range(4)] + [person()]
    dataset.config = _huge_config()
    dataset.write()
    out = run(dataset.params, dataset.data, tmp_path / "pr", seed=1)
    t1 = _t1(out.out_dir)
    assert t1[("PR-STATE", "72", "3001")] == 4
    assert t1[("PR-COUNTY", "72001", "3001")] == 4
    assert t1[("USA", "1", "3001")] == 1  # Puerto Rico is not in the USA total
    assert out.manifest["confidential"]["persons"] == {"counted": 5, "us": 1, "pr": 4}
    dataset.config = _huge_config(run_pr=False)
    dataset.write()
    t1 = _t1(run(dataset.params, dataset.data, tmp_path / "nopr", seed=1).out_dir)
    assert not any(k[0].startswith("PR-") for k in t1)
