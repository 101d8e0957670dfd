"""SafeTab-P geography for the spine studies (engine.reports.spines)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from calculators import budget
from engine import noise as _noise
from engine.errors import InputError
from engine.reports import spines as rs
from engine.reports.levels import level_tables
from engine.run import make_noise, prepare
from methods import spines

REPO = Path(__file__).resolve().parents[3]
SAMPLE = REPO / "sample_data"
needs_sample = pytest.mark.skipif(not (SAMPLE / "data" / "GRF-C.txt").is_file(), reason="sample_data/ is not there")


@pytest.fixture(scope="module")
def sample():
    if not (SAMPLE / "data" / "GRF-C.txt").is_file():
        pytest.skip("sample_data/ is not there")
    prepared = prepare(SAMPLE / "params", SAMPLE / "data")
    tables = level_tables(prepared, make_noise("zcdp", _noise.RandomSource.seeded(5)))
    geo = prepared.inputs.geography
    return prepared, tables, geo, rs.census_spine(geo), rs.published_units(geo)


def _keys(geo):
    return np.asarray(geo.block_keys.to_numpy(zero_copy_only=False)).astype(str)


# ------------------------------------------------------------------- the spine
def test_census_spine_nests_blocks_in_block_groups_tracts_counties_states(sample):
    _p, _t, geo, sp, _u = sample
    keys = _keys(geo)[sp.blocks]
    lv = {name: i for i, name in enumerate(rs.SPINE_LEVELS)}
    bg = sp.parents[: sp.n_blocks]
    tract, county = sp.parents[bg], sp.parents[sp.parents[bg]]
    state = sp.parents[county]
    assert (sp.level[bg] == lv["BLOCK GROUP"]).all() and (sp.level[tract] == lv["TRACT"]).all()
    assert (sp.level[county] == lv["COUNTY"]).all() and (sp.level[state] == lv["STATE"]).all()
    # The block group is the first digit of TABBLK (the Census convention): no GRF-C column needed.
    assert [sp.label[b] for b in bg] == [k[:12] for k in keys]
    assert [sp.label[t] for t in tract] == [k[:11] for k in keys]
    assert [sp.label[s] for s in state] == [k[:2] for k in keys]
    # Puerto Rico hangs under the nation root, the US states under USA.
    pr = np.array([k[:2] == "72" for k in keys])
    assert set(sp.level[sp.parents[state[pr]]]) == {lv["NATION"]}
    assert set(sp.level[sp.parents[state[~pr]]]) == {lv["USA"]}
    assert sp.units().set_index("level")["units"].to_dict() == {
        "NATION": 1, "USA": 1, "STATE": 9, "COUNTY": 9, "TRACT": 14, "BLOCK GROUP": 32, "BLOCK": 205}


def test_spine_study_osed_matches_the_whole_spine_and_known_cases(sample):
    _p, _t, geo, sp, _u = sample
    study = rs.spine_study(geo)
    ent = study.entities.set_index(["level", "region"])
    assert len(ent) == 12 + 1 + 3  # 12 US places, 1 in Puerto Rico, 3 AIANNH areas
    # The county-by-county costs combined above the counties equal the OSED on the whole spine.
    member = np.zeros((sp.n_blocks, len(sp.entities)), bool)
    for r in range(2):
        has = sp.entity[r] >= 0
        member[np.flatnonzero(has), sp.entity[r][has]] = True
    usable = sp.level != rs.SPINE_LEVELS.index("NATION")
    assert study.entities["osed_census"].tolist() == spines.osed_distances(sp.parents, member, usable).tolist()
    # Place 48-00200 is exactly block group 2 of tract 48001000200: one unit on the Census
    # spine, but it splits a tract, so SafeTab-P's states, counties and tracts cannot make it.
    assert ent.loc[("PLACE", "4800200"), "osed_census"] == 1
    assert ent.loc[("PLACE", "4800200"), "osed_safetab_tree"] == spines.NOT_COMPOSABLE
    # Place 06-00200 is tract 06001000300: one published tract.
    assert ent.loc[("PLACE", "0600200"), "osed_safetab_tree"] == 1
    # AIANNH area 0010 crosses a state line (Illinois and New York).
    assert ent.loc[("AIANNH", "0010"), "counties"] == 2
    # Production's AIAN spine (AIAN and non-AIAN branches under each state): the same check
    # on that whole tree, and what it does: AIANNH area 0020 (5 blocks of one county, 5
    # units on the Census spine) is the AIAN branch of its state (1 unit), while place
    # 17-00100, a whole Census unit, is cut in two by the AIAN branch.
    aian = rs.census_spine(geo, aian=True)
    usable = aian.level != rs.SPINE_LEVELS.index("NATION")
    assert study.entities["osed_aian"].tolist() == spines.osed_distances(aian.parents, member, usable).tolist()
    assert ent.loc[("AIANNH", "0020"), "osed_census"] == 5 and ent.loc[("AIANNH", "0020"), "osed_aian"] == 1
    assert ent.loc[("PLACE", "1700100"), "osed_census"] == 1 and ent.loc[("PLACE", "1700100"), "osed_aian"] == 2
    # The optimisation runs on the AIAN spine, as production's, and never worsens it here.
    assert (study.entities["osed_optimised"] <= study.entities["osed_aian"]).all()
    assert study.entities["osed_optimised"].sum() < study.entities["osed_aian"].sum()
    units = study.units.set_index("level")
    assert units.loc["TRACT GROUP", "before"] == 0 and units.loc["TRACT GROUP", "after"] >= 9
    assert units.loc["TRACT", "before"] == 14 and units.loc["TRACT", "aian"] == units.loc["TRACT", "after"] == 17
    assert units.loc["STATE", "aian"] == 12  # 9 states, 3 of them with an AIAN branch
    assert study.counties == 9 and study.county_parts == 12 and study.seconds > 0


def test_the_aian_spine_splits_every_unit_below_the_nation_by_production_categories(sample):
    _p, _t, geo, sp, _u = sample
    aian = rs.census_spine(geo, aian=True)
    lv = {name: i for i, name in enumerate(rs.SPINE_LEVELS)}
    nb = aian.n_blocks
    codes = np.where(geo.block_region["AIANNH"][aian.blocks] >= 0,
                     geo.regions["AIANNH"].astype(str)[np.maximum(geo.block_region["AIANNH"][aian.blocks], 0)], "9999")
    on = spines.aian_area(codes)
    node = np.arange(nb)
    for name in ("BLOCK GROUP", "TRACT", "COUNTY", "STATE"):
        node = aian.parents[node]
        assert (aian.level[node] == lv[name]).all()
        # every unit holds blocks of one side only, and its label says which
        side = np.array([str(aian.label[v]).endswith(" AIAN") for v in node])
        assert np.array_equal(side, on)
    assert set(aian.level[aian.parents[node]]) <= {lv["USA"], lv["NATION"]}


def test_optimised_national_osed_matches_an_assembled_optimised_spine(sample):
    """Assemble every county part's optimised tree under the AIAN spine's states and check
    the national OSED of each entity against `osed_distances` on that whole tree."""
    _p, _t, geo, _sp, _u = sample
    study = rs.spine_study(geo)
    sp = rs.census_spine(geo, aian=True)
    nb = sp.n_blocks
    county_node = sp.parents[sp.parents[sp.parents[np.arange(nb)]]]
    counties = np.unique(county_node)
    parents, member_rows, block_rows = [], [], []
    upper = np.flatnonzero(np.isin(sp.level, [0, 1, 2]))  # nation, USA, states
    up_index = {int(v): i for i, v in enumerate(upper)}
    parents = [up_index.get(int(sp.parents[v]), -1) for v in upper]
    for c in counties:
        b = np.flatnonzero(county_node == c)
        tract = np.array([int(k[5:11]) for k in sp.label[b]])
        bgd = np.array([int(k[11]) for k in sp.label[b]])
        res = spines.optimize_spine(tract, bgd, sp.entity[:, b])
        off = len(parents)
        pa = res.parents_after.copy()
        pa = np.where(pa >= 0, pa + off, up_index[int(sp.parents[c])])
        parents += pa.tolist()
        block_rows += list(range(off, off + len(b)))
        member_rows.append(b)
    parents = np.array(parents)
    member = np.zeros((len(parents), len(sp.entities)), bool)
    order = np.concatenate(member_rows)
    for r in range(2):
        e = sp.entity[r][order]
        has = e >= 0
        member[np.array(block_rows)[has], e[has]] = True
    usable = np.ones(len(parents), bool)
    usable[0] = False
    assert study.entities["osed_optimised"].tolist() == spines.osed_distances(parents, member, usable).tolist()


# ---------------------------------------------------------- published units
def test_published_units_tree_and_extras(sample):
    _p, _t, geo, _sp, u = sample
    tree = spines._tree(u.parents)
    assert not u.is_unit[0] and not u.is_unit[tree.leaves].any()
    for v in np.flatnonzero(u.geo == "TRACT"):
        parent = u.parents[v]
        assert u.geo[parent] == "COUNTY"
        assert u.region_ids["TRACT"][u.region[v]].startswith(u.region_ids["COUNTY"][u.region[parent]])
    assert u.geo[u.parents[u.node_of("PR-TRACT", 0)]] == "PR-COUNTY"
    assert sorted(set(u.extra_geo)) == ["AIANNH", "PLACE", "PR-PLACE"]
    # Each extra holds exactly its region's pieces (leaves).
    keys = _keys(geo)
    for x in range(len(u.extra_geo)):
        g, r = u.extra_geo[x], u.extra_region[x]
        blocks = np.flatnonzero(geo.block_region[g] == r)
        assert set(u.piece[u.extras[x]].tolist()) == set(geo.block_piece[blocks].tolist())
    assert len(keys) == u.piece_blocks.sum()


# --------------------------------------------------------------- custom areas
def test_parse_area_signed_lines_and_levels(sample):
    _p, _t, geo, _sp, _u = sample
    keys = _keys(geo)
    a = rs.parse_area("place 0600100   # a place\n\n- 06001000100\n", geo)
    want = (geo.block_region["PLACE"] == list(geo.regions["PLACE"]).index("0600100")) & \
        ~np.char.startswith(keys, "06001000100")
    assert np.array_equal(a, want)
    b = rs.parse_area(f"{keys[0]}\n+ block {keys[1]}\n", geo)
    assert np.flatnonzero(b).tolist() == [0, 1]
    pr = rs.parse_area("72001000100", geo)
    assert pr.sum() == np.char.startswith(keys, "72").sum()
    # a UTF-8 byte-order mark (an area list saved by a Windows editor) used to make line 1
    # "found '\ufeffplace 0600100'; expected [+|-] [LEVEL] ID"
    assert np.array_equal(rs.parse_area("\ufeffplace 0600100   # a place\r\n\r\n- 06001000100\r\n", geo), a)


@pytest.mark.parametrize("text, message", [
    ("tract 99999999999", "line 1.*a tract of GRF-C"),
    ("06\n06001", "counted 2 times"),
    ("- 06001000100", "counted -1 times"),
    ("hello world", "line 1.*\\[\\+\\|-\\] \\[LEVEL\\] ID"),
    ("123", "a level"),
    ("# nothing\n", "at least one region"),
])
def test_parse_area_errors_name_the_line_and_value(sample, text, message):
    _p, _t, geo, _sp, _u = sample
    with pytest.raises(InputError, match=message):
        rs.parse_area(text, geo, file="area.txt")


def _group(tables, geo):
    """A detailed group with many people (so most of its units are released)."""
    t = [t for lvl, t in tables.items() if lvl.geo == "TRACT" and lvl.iteration_level == 2][0]
    return str(t.codes[int(np.argmax(t.truth.sum(axis=0)))])


def test_place_minus_tract_is_two_units_with_summed_variance_and_exact_moe(sample):
    _p, tables, geo, sp, u = sample
    code = _group(tables, geo)
    av = rs.availability(u, tables, 2, code, geo.coterminous_sets())
    area = rs.parse_area("place 0600100\n- tract 06001000100", geo)
    res = rs.compose_area(u, av, area, sp)
    assert res.composable and res.count == 2 == res.count_if_all_published
    assert sorted(res.units["unit"]) == ["PLACE 0600100", "TRACT 06001000100"]
    units = res.units.set_index("unit")
    assert units.loc["PLACE 0600100", "sign"] == "+" and units.loc["TRACT 06001000100", "sign"] == "−"
    assert res.estimate == units.loc["PLACE 0600100", "published"] - units.loc["TRACT 06001000100", "published"]
    assert res.truth == units.loc["PLACE 0600100", "truth"] - units.loc["TRACT 06001000100", "truth"]
    assert res.variance == pytest.approx(units["variance"].sum())
    parts = [(s, int(c)) for s, c in zip(units["scale"], units["cells"])]
    assert (res.moe_exact, res.moe_exact_is_exact) == budget.moe_of_independent_sum(parts)
    assert res.moe_normal == budget.moe_bound(res.variance)
    # On the Census spine the same area is 2 units too (a block group and a block... or so).
    assert res.census_osed == spines.osed(sp.parents, area[sp.blocks])[0]
    assert "exact" in res.search


def test_two_tracts_of_a_county_are_the_county(sample):
    _p, tables, geo, sp, u = sample
    code = _group(tables, geo)
    av = rs.availability(u, tables, 2, code, geo.coterminous_sets())
    area = rs.parse_area("06001000100\n06001000200\n06001000300", geo)
    res = rs.compose_area(u, av, area, sp)
    assert av.node.iloc[u.node_of("COUNTY", list(geo.regions["COUNTY"]).index("06001"))]["released"]
    assert res.count == 1 and res.units["unit"].tolist() == ["COUNTY 06001"]
    t = {lvl.geo: tt for lvl, tt in tables.items() if lvl.iteration_level == 2}
    i = list(t["TRACT"].codes).index(code)
    tracts = [list(t["TRACT"].regions).index(x) for x in ("06001000100", "06001000200", "06001000300")]
    assert res.truth == int(t["TRACT"].truth[tracts, i].sum())  # the county's truth is the sum of its tracts'


def test_blocks_that_split_a_piece_are_not_composable_from_published_units(sample):
    _p, tables, geo, sp, u = sample
    keys = _keys(geo)
    av = rs.availability(u, tables, 2, _group(tables, geo), geo.coterminous_sets())
    area = rs.parse_area(f"{keys[0]}\n{keys[1]}", geo)
    res = rs.compose_area(u, av, area, sp)
    assert not res.composable and res.split_pieces == 1 and "block groups or blocks" in res.reason
    assert res.census_osed == 2 and res.census_units["level"].tolist() == ["BLOCK", "BLOCK"]


def test_a_suppressed_unit_is_avoided_or_makes_the_area_not_composable(sample):
    _p, tables, geo, sp, u = sample
    av = rs.availability(u, tables, 2, _group(tables, geo), geo.coterminous_sets())
    area = rs.parse_area("place 0600100\n- tract 06001000100", geo)
    place = int(np.flatnonzero((u.extra_geo == "PLACE") & (u.extra_region == list(geo.regions["PLACE"]).index(
        "0600100")))[0])
    av.extra.loc[place, "released"] = False
    res = rs.compose_area(u, av, area, sp)
    assert res.needed_but_suppressed == ["PLACE 0600100"] and res.count_if_all_published == 2
    # The area (place blocks of tract 06001000200) is a piece: without the place, it cannot be made.
    assert not res.composable and "suppressed" in res.reason
    assert sorted(res.units["unit"]) == ["PLACE 0600100", "TRACT 06001000100"]  # what it would take
    u = res.units.set_index("unit")["truth"]
    assert res.truth == u["PLACE 0600100"] - u["TRACT 06001000100"] and res.estimate is None  # a study knows it


def test_coterminous_members_publish_the_released_source_and_share_its_noise(sample):
    _p, tables, geo, sp, u = sample
    code = _group(tables, geo)
    sets = geo.coterminous_sets()
    dc = [s for s in sets if ("PLACE", list(geo.regions["PLACE"]).index("1150000")) in s][0]
    av = rs.availability(u, tables, 2, code, sets)
    rows = [av.node.iloc[u.node_of(g, r)] if g != "PLACE" else
            av.extra.iloc[int(np.flatnonzero((u.extra_geo == g) & (u.extra_region == r))[0])] for g, r in dc]
    # DC is state, county, tract and place: all publish the state's numbers (its noise too).
    assert [r["released"] for r in rows] == [True] * 4
    assert {r["published"] for r in rows} == {rows[0]["published"]} and {r["source"] for r in rows} == {"STATE 1"}
    assert "PLACE 1150000" in rows[2]["same_blocks_as"] and "STATE 11" in rows[2]["same_blocks_as"]
    # DC as an area: one unit; its variance is that of one published total.
    res = rs.compose_area(u, av, rs.parse_area("11", geo), sp)
    assert res.count == 1 and res.variance == pytest.approx(float(res.units["variance"].iloc[0]))


def test_nearest_unit_of_the_same_size(sample):
    _p, tables, geo, _sp, u = sample
    av = rs.availability(u, tables, 2, _group(tables, geo), geo.coterminous_sets())
    d = rs.nearest_unit(av, u, 100)
    rel = np.r_[av.node.loc[av.node["released"], "truth"], av.extra.loc[av.extra["released"], "truth"]]
    assert d["released"] and abs(d["truth"] - 100) == np.min(np.abs(rel - 100))
    assert (d["moe_exact"], d["moe_exact_is_exact"]) == budget.moe_of_independent_sum([(d["scale"], d["cells"])])


def test_pure_dp_plan_composes_with_geometric_noise(dataset):
    from tests.engine.conftest import person

    dataset.config["privacy_defn"] = "puredp"
    dataset.persons = [person(block=b) for b in dataset.blocks for _ in range(40)]
    dataset.write()
    prepared = prepare(dataset.params, dataset.data)
    tables = level_tables(prepared, make_noise("puredp", _noise.RandomSource.seeded(3)))
    geo = prepared.inputs.geography
    units = rs.published_units(geo)
    av = rs.availability(units, tables, 2, "3001", geo.coterminous_sets())
    assert av.noise == "geometric"
    res = rs.compose_area(units, av, rs.parse_area("county 01001\n- place 0110000", geo), rs.census_spine(geo))
    assert res.composable and res.count == 2 and res.truth == 40
    parts = [(s, int(c)) for s, c in zip(res.units["scale"], res.units["cells"])]
    assert (res.moe_exact, res.moe_exact_is_exact) == budget.moe_of_independent_sum(parts, noise="geometric")
    assert res.variance == pytest.approx(res.units["variance"].sum())
