"""Synthetic nations (engine.synthetic.nation): formats, geography scaling, skew, determinism, chunking."""

from __future__ import annotations

import itertools
import json
import math
import re
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest

from calculators.config import SafeTabConfig
from calculators.levels import US_STATE_CODES
from engine.synthetic._geo import build_geography
from engine.synthetic.nation import (
    GRF_COLUMNS,
    PERSON_COLUMNS,
    POPULATION_2020,
    SPEC_FILES,
    generate,
    sample_thresholds,
    write_synthetic_specs,
)
from engine.inputs.specs import load_specs

REPO = Path(__file__).resolve().parents[3]
REFERENCE = Path(__file__).resolve().parents[4] / "shared" / "reference"
REF_2020 = REFERENCE / "safetab-p-2020"
SHIPPED = REPO / "sample_data"


def read_txt(path: Path, columns: list[str]) -> pa.Table:
    with open(path, encoding="utf-8") as fh:
        assert fh.readline().rstrip("\n").split("|") == columns
    return pacsv.read_csv(
        path,
        parse_options=pacsv.ParseOptions(delimiter="|", quote_char=False),
        convert_options=pacsv.ConvertOptions(
            column_types={c: pa.string() for c in columns}, strings_can_be_null=False
        ),
    )


def cols(table: pa.Table) -> dict[str, np.ndarray]:
    return {c: np.asarray(table[c].to_pylist(), dtype=str) for c in table.column_names}


class Nation:
    def __init__(self, summary):
        self.summary = summary
        self.p = cols(read_txt(summary.data_dir / "person-records.txt", PERSON_COLUMNS))
        self.g = cols(read_txt(summary.data_dir / "GRF-C.txt", GRF_COLUMNS))
        self.specs = load_specs(summary.params_dir)
        g = self.g
        self.block = np.char.add(
            np.char.add(np.char.add(g["TABBLKST"], g["TABBLKCOU"]), g["TABTRACTCE"]), g["TABBLK"]
        )
        self.tract = np.char.add(np.char.add(g["TABBLKST"], g["TABBLKCOU"]), g["TABTRACTCE"])
        self.county = np.char.add(g["TABBLKST"], g["TABBLKCOU"])
        self.place = np.char.add(g["TABBLKST"], g["PLACEFP"])

    @property
    def race(self) -> np.ndarray:
        return np.stack([self.p[f"QRACE{i}"] for i in range(1, 9)], axis=1)

    def person_blocks(self) -> np.ndarray:
        p = self.p
        return np.char.add(
            np.char.add(np.char.add(p["TABBLKST"], p["TABBLKCOU"]), p["TABTRACTCE"]), p["TABBLK"]
        )


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    return Nation(generate(tmp_path_factory.mktemp("s20k"), 20_000, seed=0))


@pytest.fixture(scope="module")
def large(tmp_path_factory):
    return Nation(generate(tmp_path_factory.mktemp("s400k"), 400_000, seed=3))


# ------------------------------------------------------------------ file formats
def test_person_file_headers_and_value_domains(small):
    p, specs = small.p, small.specs
    n = len(p["QAGE"])
    assert n == small.summary.persons == 20_000
    assert all(re.fullmatch(r"\d{3}", a) for a in set(p["QAGE"]))
    ages = p["QAGE"].astype(int)
    assert ages.min() == 0 and ages.max() <= 115
    assert set(p["QSEX"]) == {"1", "2"}
    assert set(p["HOUSEHOLDER"]) == {"True", "False"}
    for col, width in (
        ("TABBLKST", 2),
        ("TABBLKCOU", 3),
        ("TABTRACTCE", 6),
        ("TABBLK", 4),
        ("CENRACE", 2),
    ):
        assert all(len(v) == width and v.isdigit() for v in set(p[col])), col
    assert {int(c) for c in set(p["CENRACE"])} <= set(range(1, 64))
    race_its = {
        c
        for c, its in specs.code_to_iterations.items()
        if any(
            specs.iterations[i].kind == "race" and specs.iterations[i].level in (1, 2) for i in its
        )
    }
    eth_its = {
        c
        for c, its in specs.code_to_iterations.items()
        if any(specs.iterations[i].kind == "ethnicity" for i in its)
    }
    r = small.race
    codes = set(r.ravel()) - {"Null"}
    assert all(re.fullmatch(r"\d{4}", c) for c in codes) and codes <= race_its
    assert not (r[:, 0] == "Null").any()
    null = r == "Null"
    assert not (null[:, :-1] & ~null[:, 1:]).any(), "a code after a Null"
    for row in r[(~null).sum(axis=1) > 1]:
        got = [c for c in row if c != "Null"]
        assert len(set(got)) == len(got), row
    assert set(p["QSPAN"]) <= eth_its


def test_cenrace_matches_the_major_races_of_the_codes(small):
    major = {}
    for code, its in small.specs.code_to_iterations.items():
        for i in its:
            it = small.specs.iterations[i]
            if it.kind == "race" and it.level == 0 and it.alone:
                major[code] = it.name
    r = small.race
    single = r[:, 1] == "Null"
    # One major race -> CENRACE 01..06; several -> 07..63.
    assert (small.p["CENRACE"][single].astype(int) <= 6).all()
    multi_major = np.array([len({major[c] for c in row if c != "Null"}) > 1 for row in r])
    assert (small.p["CENRACE"][multi_major].astype(int) >= 7).all()
    white = np.array([major[c] == "White alone" for c in r[:, 0]]) & single
    assert set(small.p["CENRACE"][white]) == {"01"}


def test_grf_file_and_every_person_block_in_it(small):
    g = small.g
    for col, width in (
        ("TABBLKST", 2),
        ("TABBLKCOU", 3),
        ("TABTRACTCE", 6),
        ("TABBLK", 4),
        ("PLACEFP", 5),
        ("AIANNHCE", 4),
    ):
        assert all(len(v) == width and v.isdigit() for v in set(g[col])), col
    assert len(set(small.block)) == len(small.block), "a block is listed twice"
    assert set(small.person_blocks()) <= set(small.block)
    assert set(g["TABBLKST"]) <= set(US_STATE_CODES) | {"72"}


def test_params_folder_holds_config_and_specs(small):
    params = small.summary.params_dir
    assert sorted(f.name for f in params.iterdir()) == sorted(SPEC_FILES + ("config.json",))
    cfg = SafeTabConfig.read(params / "config.json")
    assert len(cfg.thresholds_p) == 20
    us_present = sorted(set(small.g["TABBLKST"]) - {"72"})
    assert cfg.state_filter_us == us_present
    assert cfg.max_race_codes == 8 and cfg.gamma == 0.1 and cfg.zero_suppression_chance == 0.9999
    assert cfg.allow_negative_counts and cfg.run_us and cfg.run_pr
    assert cfg.reader == "csv" and cfg.privacy_defn == "zcdp"
    raw = json.loads((params / "config.json").read_text())
    assert raw["privacy_budget_p_level_2_usa"] == raw["privacy_budget_p_level_2_pr_state"] == 2.134
    assert raw["privacy_budget_p_level_2_tract"] == raw["privacy_budget_p_level_2_aiannh"] == 0.159
    assert (
        raw["privacy_budget_p_level_1_county"] == 0.008
        and raw["privacy_budget_p_level_1_aiannh"] == 0
    )


def test_thresholds_rule():
    small, full = sample_thresholds(50_000), sample_thresholds(POPULATION_2020)
    assert len(small) == 20
    assert all(a < b < c for a, b, c in small.values())
    assert full["(COUNTY, 2)"] == [971, 4971, 19971] and full["(STATE, 2)"] == [471, 971, 6971]
    assert full["(TRACT, 1)"] == [4971, 19971, 149971]
    s = math.sqrt(50_000 / POPULATION_2020)
    assert small["(TRACT, 2)"] == [round(971 * s), round(4971 * s), round(19971 * s)]


# ------------------------------------------------------------------ spec files
def test_synthetic_specs_have_the_2020_shape_and_stability(tmp_path):
    write_synthetic_specs(tmp_path)
    s = load_specs(tmp_path)
    for level in (1, 2):
        for geo in ("USA", "STATE", "COUNTY", "TRACT", "PLACE", "AIANNH", "PR-STATE", "PR-COUNTY"):
            assert s.h_r(level, geo) == 1 and s.h_e(level, geo) == 1
            assert s.stability(level, 8, geo) == 9
    race = [it for it in s.iterations.values() if it.kind == "race"]
    eth = [it for it in s.iterations.values() if it.kind == "ethnicity"]
    by = Counter((it.level, it.alone) for it in race)
    assert by[(0, True)] == by[(0, False)] == 6
    assert by[(1, True)] == by[(1, False)] and 15 <= by[(1, True)] <= 25
    assert by[(2, True)] == by[(2, False)] and 200 <= by[(2, True)] <= 300
    detailed = [it for it in race if it.level == 2]
    assert 0.18 <= sum(it.detailed_only for it in detailed) / len(detailed) <= 0.32
    assert any(it.coarse_only for it in detailed)
    assert {it.name for it in eth if it.level == 0} == {
        "Not Hispanic or Latino (of any race)",
        "Hispanic or Latino (of any race)",
    }
    assert (
        4 <= sum(it.level == 1 for it in eth) <= 6 and 15 <= sum(it.level == 2 for it in eth) <= 25
    )
    assert any(it.detailed_only for it in eth)
    assert all(re.fullmatch(r"\d{4}", it.code) for it in s.iterations.values())
    assert 300 <= len(s.codes) <= 600
    # Every race code maps to exactly one iteration of every (level, ALONE) slice.
    race_codes = {
        c
        for c, its in s.code_to_iterations.items()
        if any(s.iterations[i].kind == "race" for i in its)
    }
    for level in (0, 1, 2):
        for alone in (True, False):
            per_code = Counter(
                c
                for c, its in s.code_to_iterations.items()
                for i in its
                if s.iterations[i].kind == "race"
                and s.iterations[i].level == level
                and s.iterations[i].alone == alone
            )
            assert set(per_code) == race_codes and set(per_code.values()) == {1}, (level, alone)
    # Level-0 rows carry Null flags, like 2020.
    text = (tmp_path / "race-characteristic-iterations.txt").read_text().splitlines()
    assert all(line.endswith("|Null|Null") for line in text[1:] if line.split("|")[2] == "0")


# ------------------------------------------------------------------ geography
@pytest.mark.parametrize("nation", ["small", "large"])
def test_geography_scales_with_persons(nation, request):
    n = request.getfixturevalue(nation)
    s = n.summary
    states = len(s.states)
    assert 0.7 * s.persons / 4000 <= s.tracts <= 1.5 * s.persons / 4000 + states
    assert states <= s.counties <= states + s.persons / 100_000
    assert 0.5 * s.persons / 10_000 <= s.places <= s.persons / 10_000 + states
    per_tract = Counter(n.tract.tolist())
    assert min(per_tract.values()) >= 5 and max(per_tract.values()) <= 20
    assert s.blocks == len(n.block) and s.tracts == len(per_tract)
    assert s.counties == len(set(n.county)) and s.places == len(
        set(n.place[n.g["PLACEFP"] != "99999"])
    )
    assert s.aiannh_areas == len(set(n.g["AIANNHCE"]) - {"9999"}) >= 3


def test_geography_grows_with_persons(small, large):
    a, b = small.summary, large.summary
    assert b.tracts > 10 * a.tracts and b.blocks > 10 * a.blocks
    assert b.places > 3 * a.places and len(b.states) > len(a.states)
    assert {"11", "72"} <= set(a.states)


def test_full_size_geography_matches_the_real_nation():
    geo = build_geography(300_000_000, np.random.default_rng(0))
    assert len(geo.state_codes) == 52
    assert 2_500 <= len(geo.county_state) <= 3_500
    assert 65_000 <= len(geo.tract_county) <= 85_000
    assert 25_000 <= geo.n_places <= 35_000
    assert 500 <= geo.n_aiannh <= 700
    assert len(build_geography(1_000_000, np.random.default_rng(0)).state_codes) == 52


@pytest.mark.parametrize("nation", ["small", "large"])
def test_dc_is_one_county_and_one_place(nation, request):
    n = request.getfixturevalue(nation)
    dc = n.g["TABBLKST"] == "11"
    assert dc.any()
    assert set(n.county[dc]) == {"11001"}
    places = set(n.place[dc])
    assert len(places) == 1 and not places.pop().endswith("99999")
    assert np.array_equal(dc, n.place == n.place[dc][0])
    assert np.array_equal(dc, n.county == "11001")
    assert set(n.g["AIANNHCE"][dc]) == {"9999"}


@pytest.mark.parametrize("nation", ["small", "large"])
def test_a_county_with_a_single_tract(nation, request):
    n = request.getfixturevalue(nation)
    tracts = defaultdict(set)
    for c, t in zip(n.county, n.tract):
        tracts[c].add(t)
    assert any(len(v) == 1 for c, v in tracts.items() if c[:2] not in ("11", "72"))


def test_puerto_rico_has_its_own_geography_and_persons(small):
    pr = small.g["TABBLKST"] == "72"
    assert small.summary.has_pr and pr.any()
    assert len(set(small.county[pr])) >= 1 and (small.g["PLACEFP"][pr] != "99999").any()
    assert set(small.g["AIANNHCE"][pr]) == {"9999"}
    assert (small.p["TABBLKST"] == "72").sum() > 0


def test_places_cover_parts_of_counties_and_aiannh_crosses_a_state_line(large):
    g = large.g
    in_place = g["PLACEFP"] != "99999"
    assert in_place.any() and (~in_place).any()
    mixed = {c for c in set(large.county[in_place]) & set(large.county[~in_place])}
    assert mixed
    states_of = defaultdict(set)
    for a, s in zip(g["AIANNHCE"], g["TABBLKST"]):
        if a != "9999":
            states_of[a].add(s)
    assert any(len(v) > 1 for v in states_of.values())


def _crossings(block_unit: np.ndarray, block_entity: np.ndarray) -> tuple[int, int]:
    """(units partly inside an entity of the kind and partly outside all of them,
    entities spread over more than one unit)."""
    inside = block_entity >= 0
    split = len(set(block_unit[inside].tolist()) & set(block_unit[~inside].tolist()))
    spread = sum(1 for units in _group(block_entity[inside], block_unit[inside]).values() if len(units) > 1)
    return split, spread


def _group(keys: np.ndarray, values: np.ndarray) -> dict:
    out = defaultdict(set)
    for k, v in zip(keys.tolist(), values.tolist()):
        out[k].add(v)
    return out


def test_block_groups_make_the_census_hierarchy_explicit():
    """block > block group > tract > county > state: block groups are the first digit of
    TABBLK (no GRF-C column), 8 blocks each, nested in their tract; places and AIANNH
    areas cut across block groups, tracts and counties (AIANNH areas across states)."""
    from engine.synthetic._geo import BLOCKS_PER_BLOCK_GROUP

    geo = build_geography(5_000_000, np.random.default_rng(7))
    table = geo.block_table()
    assert list(table) == GRF_COLUMNS  # no block-group column
    digit = np.array([int(b[:1]) for b in table["TABBLK"].astype(str)])
    assert np.array_equal(digit, geo.block_group_code)
    bg = geo.block_group
    assert np.array_equal(geo.block_group_tract[bg], geo.block_tract)  # nested in their tract
    sizes = np.bincount(bg)
    assert sizes.max() == BLOCKS_PER_BLOCK_GROUP and sizes.min() >= 1
    per_tract = np.bincount(geo.block_group_tract)
    assert per_tract.min() == 1 and per_tract.max() == 3
    # The block group key ST+COU+TRACT+digit names each block group once.
    keys = np.char.add(np.char.add(np.char.add(table["TABBLKST"], table["TABBLKCOU"]), table["TABTRACTCE"]),
                       digit.astype("S1"))
    assert len(np.unique(keys)) == geo.n_block_groups
    county = geo.block_county
    state = geo.block_state
    for ent in (geo.block_place, geo.block_aiannh):
        for unit in (bg, geo.block_tract):
            split, spread = _crossings(unit, ent)
            assert split > 0 and spread > 0  # block groups and tracts partly inside, entities over several
    place_counties = _group(geo.block_place[geo.block_place >= 0], county[geo.block_place >= 0])
    assert any(len(v) > 1 for v in place_counties.values())  # a place across a county line
    aian_states = _group(geo.block_aiannh[geo.block_aiannh >= 0], state[geo.block_aiannh >= 0])
    assert any(len(v) > 1 for v in aian_states.values())


def test_shipped_sample_crosses_block_groups_and_tracts():
    """The shipped sample (unchanged) already has places and AIANNH areas that split
    block groups and tracts and span several of them; an AIANNH area crosses a state
    line. Its places do not cross county lines: each of its states has one county."""
    if not (SHIPPED / "data" / "GRF-C.txt").is_file():
        pytest.skip("sample_data is not present")
    g = cols(read_txt(SHIPPED / "data" / "GRF-C.txt", GRF_COLUMNS))
    tract = np.char.add(np.char.add(g["TABBLKST"], g["TABBLKCOU"]), g["TABTRACTCE"])
    bg = np.unique(np.char.add(tract, np.char.ljust(g["TABBLK"], 1).astype("U1")), return_inverse=True)[1].ravel()
    tr = np.unique(tract, return_inverse=True)[1].ravel()
    place = np.unique(np.char.add(g["TABBLKST"], g["PLACEFP"]), return_inverse=True)[1].ravel()
    place = np.where(g["PLACEFP"] == "99999", -1, place)
    aian = np.where(g["AIANNHCE"] == "9999", -1, np.unique(g["AIANNHCE"], return_inverse=True)[1].ravel())
    assert _crossings(bg, place) == (12, 9)  # 12 block groups partly in a place; 9 places over several
    assert _crossings(tr, place) == (10, 1)
    assert _crossings(bg, aian) == (4, 2) and _crossings(tr, aian) == (3, 1)
    counties = _group(place[place >= 0], np.char.add(g["TABBLKST"], g["TABBLKCOU"])[place >= 0])
    assert max(len(v) for v in counties.values()) == 1


# ------------------------------------------------------------------ persons
def test_race_and_ethnicity_shares(large):
    r = large.race
    k = (r != "Null").sum(axis=1)
    assert 0.10 <= (k >= 2).mean() <= 0.16
    assert 0.01 <= (k >= 3).mean() <= 0.05 and k.max() <= 8
    nh = large.p["QSPAN"] == "2000"
    assert 0.72 <= nh.mean() <= 0.88
    pr = large.p["TABBLKST"] == "72"
    assert (~nh[pr]).mean() > 0.9


def test_age_and_sex(large):
    age = large.p["QAGE"].astype(int)
    assert 0.18 <= (age < 18).mean() <= 0.27 and 0.12 <= (age >= 65).mean() <= 0.22
    assert 0 < (age >= 100).mean() < 0.002
    assert 0.47 <= (large.p["QSEX"] == "2").mean() <= 0.53
    hh = large.p["HOUSEHOLDER"] == "True"
    assert 0.3 <= hh.mean() <= 0.45 and not hh[age < 15].any()


def test_detailed_groups_are_skewed_and_concentrate_geographically(large):
    specs = large.specs
    det = {
        c: [
            i
            for i in its
            if specs.iterations[i].level == 2
            and specs.iterations[i].kind == "race"
            and specs.iterations[i].alone is False
        ]
        for c, its in specs.code_to_iterations.items()
    }
    sizes = Counter()
    for row in large.race:
        sizes.update({i for c in row if c != "Null" for i in det[c]})
    values = np.array(sorted(sizes.values()))
    assert values[-1] >= 20 * np.median(values)
    # Some code is at least 5 times more common in one county than nationally.
    county = np.char.add(large.p["TABBLKST"], large.p["TABBLKCOU"])
    first = large.race[:, 0]
    national = Counter(first.tolist())
    n = len(first)
    found = False
    for c in set(county.tolist()):
        here = first[county == c]
        for code, cnt in Counter(here.tolist()).most_common(10):
            if cnt >= 30 and cnt / len(here) >= 5 * national[code] / n:
                found = True
    assert found


# ------------------------------------------------------------------ determinism and chunking
def _files(out: Path) -> dict[str, bytes]:
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}


def test_same_seed_same_bytes_other_seed_other_data(tmp_path):
    a = _files(generate(tmp_path / "a", 3_000, seed=5).out_dir)
    b = _files(generate(tmp_path / "b", 3_000, seed=5).out_dir)
    c = _files(generate(tmp_path / "c", 3_000, seed=6).out_dir)
    assert a == b
    assert a["data/person-records.txt"] != c["data/person-records.txt"]
    assert (
        a["params/race-characteristic-iterations.txt"]
        == c["params/race-characteristic-iterations.txt"]
    )


def test_output_does_not_depend_on_the_chunk_size(tmp_path):
    calls = []
    n = 140_000  # more than two random pages of 65,536 persons
    one = generate(tmp_path / "one", n, seed=2, chunk_persons=n)
    many = generate(
        tmp_path / "many",
        n,
        seed=2,
        chunk_persons=9_999,
        progress=lambda d, t: calls.append((d, t)),
    )
    assert one.persons_path.read_bytes() == many.persons_path.read_bytes()
    assert len(calls) == math.ceil(n / 9_999) and calls[-1] == (n, n)
    assert all(a[0] < b[0] for a, b in itertools.pairwise(calls))


def test_parquet_has_the_same_rows_as_text(tmp_path):
    txt = generate(tmp_path / "t", 12_000, seed=4, chunk_persons=5_000)
    par = generate(tmp_path / "p", 12_000, seed=4, fmt="parquet", chunk_persons=5_000)
    assert (
        par.persons_path.name == "person-records.parquet" and par.grf_path.name == "GRF-C.parquet"
    )
    for stem, columns in (("person-records", PERSON_COLUMNS), ("GRF-C", GRF_COLUMNS)):
        t = pq.read_table(par.data_dir / f"{stem}.parquet")
        assert t.column_names == columns and all(f.type == pa.string() for f in t.schema)
        assert t.equals(read_txt(txt.data_dir / f"{stem}.txt", columns))
    # Switching format in the same folder leaves one file per stem.
    generate(tmp_path / "p", 1_000, seed=4)
    assert sorted(f.name for f in (tmp_path / "p" / "data").iterdir()) == [
        "GRF-C.txt",
        "household-records.txt",
        "person-records.txt",
    ]


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"persons": 999}, "from 1,000 to 340,000,000"),
        ({"persons": 340_000_001}, "from 1,000 to 340,000,000"),
        ({"persons": 1500.0}, "whole number"),
        ({"persons": 2000, "fmt": "csv"}, "fmt must be one of txt, parquet"),
        ({"persons": 2000, "seed": -1}, "seed"),
        ({"persons": 2000, "chunk_persons": 0}, "chunk_persons"),
    ],
)
def test_bad_arguments(tmp_path, kwargs, message):
    with pytest.raises(ValueError, match=message):
        generate(tmp_path / "x", **kwargs)
    assert not (tmp_path / "x").exists()


def test_spec_dir_must_hold_the_four_spec_files(tmp_path):
    (tmp_path / "specs").mkdir()
    (tmp_path / "specs" / SPEC_FILES[0]).write_text("x")
    with pytest.raises(ValueError, match="must contain the 4 spec files; missing: ethnicity"):
        generate(tmp_path / "x", 2_000, spec_dir=tmp_path / "specs")
    with pytest.raises(ValueError, match="is not a folder"):
        generate(tmp_path / "x", 2_000, spec_dir=tmp_path / "nope")


# ------------------------------------------------------------------ 2020 spec files, engine
def test_generate_with_the_2020_spec_files(tmp_path):
    if not REF_2020.is_dir():
        pytest.skip("the 2020 reference files (../shared/reference) are not present")
    from engine.run import validate

    s = generate(tmp_path, 5_000, seed=1, spec_dir=REF_2020)
    for name in SPEC_FILES:
        assert (s.params_dir / name).read_bytes() == (REF_2020 / name).read_bytes(), name
    # The 2020 config.json as it is, but for reader "cef" -> "csv": the nation is files.
    ref = json.loads((REF_2020 / "config.json").read_text())
    assert ref["reader"] == "cef"
    assert json.loads((s.params_dir / "config.json").read_text()) == {**ref, "reader": "csv"}
    n = Nation(s)
    specs = n.specs
    tab_race = {
        c
        for c, its in specs.code_to_iterations.items()
        if any(
            specs.iterations[i].kind == "race" and specs.iterations[i].level in (1, 2) for i in its
        )
    }
    assert set(n.race.ravel()) - {"Null"} <= tab_race
    not_hisp = next(
        it.code
        for it in specs.iterations.values()
        if it.kind == "ethnicity" and it.level == 0 and it.name.startswith("Not")
    )
    nh = np.array([not_hisp in specs.code_to_iterations[c] for c in n.p["QSPAN"]])
    assert 0.4 <= nh.mean() <= 0.95  # 5,000 persons: California, DC and Puerto Rico only
    hisp_codes = set(n.p["QSPAN"][~nh])
    assert len(hisp_codes) > 5
    assert all(
        any(
            specs.iterations[i].kind == "ethnicity" and i != not_hisp
            for i in specs.code_to_iterations[c]
        )
        for c in hisp_codes
    )
    validate(s.params_dir, s.data_dir)  # raises InputError on any problem


def test_synthetic_nation_passes_engine_validation(small):
    from engine.run import validate

    validate(small.summary.params_dir, small.summary.data_dir)


# ------------------------------------------------------------------ the shipped sample
def _true_stat_levels(params: Path, data: Path) -> dict[str, set[int]]:
    """Noise-free stat level (0..3) of every nonempty non-TotalOnly group, per level key."""
    specs = load_specs(params)
    cfg = SafeTabConfig.read(params / "config.json")
    p = cols(read_txt(data / "person-records.txt", PERSON_COLUMNS))
    race = np.stack([p[f"QRACE{i}"] for i in range(1, 9)], axis=1)
    keys = [(frozenset(c for c in row if c != "Null"), e) for row, e in zip(race, p["QSPAN"])]
    uniq = {k: i for i, k in enumerate(dict.fromkeys(keys))}
    kid = np.array([uniq[k] for k in keys])
    is_pr = p["TABBLKST"] == "72"
    regions = {
        "STATE": np.where(is_pr, "", p["TABBLKST"]),
        "COUNTY": np.where(is_pr, "", np.char.add(p["TABBLKST"], p["TABBLKCOU"])),
        "TRACT": np.where(
            is_pr, "", np.char.add(np.char.add(p["TABBLKST"], p["TABBLKCOU"]), p["TABTRACTCE"])
        ),
    }
    regions["USA"] = np.where(is_pr, "", "1")
    out = {}
    for lvl in cfg.tabulated_levels():
        if lvl.geo not in regions:
            continue
        tab = {
            it.code for it in specs.tabulated(lvl.geo, lvl.iteration_level) if not it.detailed_only
        }
        members = [
            [c for c in specs.person_iterations(k[0], k[1], lvl.iteration_level) if c in tab]
            for k in uniq
        ]
        counts: Counter = Counter()
        for (reg, k), cnt in Counter(zip(regions[lvl.geo].tolist(), kid.tolist())).items():
            if reg:
                for it in members[k]:
                    counts[(reg, it)] += cnt
        th = cfg.thresholds(lvl)
        out[lvl.key] = {int(np.searchsorted(th, v, side="right")) for v in counts.values()}
    return out


def test_shipped_sample_is_reproducible_and_has_every_stat_level(tmp_path):
    if not (SHIPPED / "data" / "person-records.txt").is_file():
        pytest.skip("sample_data is not present")
    s = generate(tmp_path, 50_000, seed=0)
    # sample_data/profiles/ holds group-size profiles (issue 23), not the generator's output
    assert _files(tmp_path) == {k: v for k, v in _files(SHIPPED).items()
                                if not k.endswith(".md") and not k.startswith("profiles/")}
    # (the household file of SafeTab-H adds 1.2 MB to the 4.2 MB of persons and the rest)
    assert sum(len(v) for v in _files(SHIPPED).values()) < 6_000_000
    levels = _true_stat_levels(s.params_dir, s.data_dir)
    for key in ("(USA, 2)", "(STATE, 2)", "(COUNTY, 2)", "(TRACT, 2)", "(USA, 1)"):
        assert levels[key] == {0, 1, 2, 3}, key
