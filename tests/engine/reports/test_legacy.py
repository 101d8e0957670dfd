"""The legacy cell-suppression release (engine.reports.legacy) and `python -m engine legacy`.

The written files are attacked independently: scipy's linprog, from the published counts
and the relations a user of the tables knows (each table's margins, and a state's cell being
the sum of its counties' cells), bounds every withheld count.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from scipy.optimize import linprog

from engine.cli import main
from engine.reports.legacy import COMPLEMENTARY, WITHHELD, LegacyOptions, legacy_release, write_legacy
from engine.run import prepare
from tests.engine.conftest import BLOCKS, cli_help, person, read_part_files

#: age4 bins (0-17, 18-44, 45-64, 65+) per sex of the Albanians in each county of state 01.
COUNTY_A = {1: [1, 10, 5, 4], 2: [6, 8, 5, 3]}  # 01001: a male child alone in his cell
COUNTY_B = {1: [5, 7, 6, 4], 2: [4, 9, 7, 5]}  # 01003
AGES = [10, 30, 50, 70]
OPTIONS = dict(geo="COUNTY", iteration_level=2, min_population=20, min_cell=3, protection=3, ages=4)


def _albanians(table: dict, block) -> list:
    return [person(age=AGES[a], sex=s, block=block, races=("1010",))
            for s, counts in table.items() for a, n in enumerate(counts) for _ in range(n)]


@pytest.fixture
def two_counties(dataset):
    dataset.persons = _albanians(COUNTY_A, BLOCKS[0]) + _albanians(COUNTY_B, BLOCKS[3])
    dataset.write()
    return dataset


def _truth(code_counts: dict) -> np.ndarray:
    """cells (sex 1 ages, sex 2 ages), sex marginals, total."""
    cells = code_counts[1] + code_counts[2]
    return np.array(cells + [sum(code_counts[1]), sum(code_counts[2]), sum(cells)], float)


def _published(out, geo: str, code: str) -> dict[str, list]:
    """REGION_ID -> the 11 values of its table (age4), None where withheld."""
    t1 = read_part_files(out / "t1")
    t2 = read_part_files(out / "t2")
    res = {}
    for region in t1[(t1.REGION_TYPE == geo) & (t1.ITERATION_CODE == code)].REGION_ID:
        rows = t2[(t2.REGION_TYPE == geo) & (t2.ITERATION_CODE == code) & (t2.REGION_ID == region)]
        cells = rows[rows.AGESTART != "*"].assign(s=lambda d: d.SEX.astype(int), a=lambda d: d.AGESTART.astype(int))
        cells = cells.sort_values(["s", "a"]).COUNT.tolist()
        marg = rows[rows.AGESTART == "*"].sort_values("SEX").COUNT.tolist()
        total = t1[(t1.REGION_TYPE == geo) & (t1.ITERATION_CODE == code) & (t1.REGION_ID == region)].COUNT.item()
        res[region] = [None if v == WITHHELD else float(v) for v in cells + marg + [total]]
    return res


def _attack(tables: dict[str, list], parent: str, children: list[str]) -> dict[tuple[str, int], tuple]:
    """[min, max] of every withheld value, by linear programming over what is published:
    each table's margins and parent = sum of children, value by value, values >= 0."""
    unknown = [(r, v) for r, vals in tables.items() for v, x in enumerate(vals) if x is None]
    col = {u: i for i, u in enumerate(unknown)}
    rows, rhs = [], []

    def add(terms):  # sum of coef * value = 0
        row, const = np.zeros(len(unknown)), 0.0
        for coef, (r, v) in terms:
            if tables[r][v] is None:
                row[col[(r, v)]] += coef
            else:
                const += coef * tables[r][v]
        if row.any():
            rows.append(row)
            rhs.append(-const)

    for r in tables:
        add([(1, (r, i)) for i in range(4)] + [(-1, (r, 8))])
        add([(1, (r, 4 + i)) for i in range(4)] + [(-1, (r, 9))])
        add([(1, (r, 8)), (1, (r, 9)), (-1, (r, 10))])
    for v in range(11):
        add([(1, (c, v)) for c in children] + [(-1, (parent, v))])
    out = {}
    for k, u in enumerate(unknown):
        c = np.zeros(len(unknown))
        c[k] = 1
        lo = linprog(c, A_eq=np.array(rows), b_eq=rhs, bounds=(0, None), method="highs")
        hi = linprog(-c, A_eq=np.array(rows), b_eq=rhs, bounds=(0, None), method="highs")
        out[u] = (lo.fun, -hi.fun if hi.status == 0 else np.inf)
    return out


def test_primaries_survive_an_independent_attack_across_the_hierarchy(two_counties, tmp_path):
    prepared = prepare(two_counties.params, two_counties.data)
    rel = legacy_release(prepared, LegacyOptions(**OPTIONS))
    out = write_legacy(rel, tmp_path / "legacy")
    truth = {"01001": _truth(COUNTY_A), "01003": _truth(COUNTY_B)}
    truth["01"] = truth["01001"] + truth["01003"]
    tables = {**_published(out, "COUNTY", "3001"), **_published(out, "STATE", "3001")}
    assert set(tables) == {"01001", "01003", "01"}
    for region, vals in tables.items():  # what is published is the exact count
        shown = np.array([np.nan if v is None else v for v in vals])
        ok = ~np.isnan(shown)
        assert np.array_equal(shown[ok], truth[region][ok]), region
    assert tables["01001"][0] is None  # the lone child is withheld
    bounds = _attack(tables, "01", ["01001", "01003"])
    for (region, v), (lo, hi) in bounds.items():
        x = truth[region][v]
        if 0 < x < 3:  # every primary keeps 3 persons of doubt up and down to 0
            assert lo <= max(0.0, x - 3) + 1e-7 and hi >= x + 3 - 1e-7, (region, v, lo, hi)
    # the module's own audit agrees
    summary = rel.summary()
    assert summary["(COUNTY, 2)"]["audit"]["primaries_underprotected"] == 0
    assert summary["(COUNTY, 2)"]["audit"]["recovered_exactly_nonzero"] == 0


def test_without_the_hierarchy_the_state_table_gives_the_child_away(two_counties, tmp_path):
    """Each level protected alone: the county's table hides the lone child, but the state's
    table (published by the same rules) minus the other county gives him away. The module's
    audit, which knows the hierarchy, says so, and so does the independent attacker."""
    prepared = prepare(two_counties.params, two_counties.data)
    rel = legacy_release(prepared, LegacyOptions(**OPTIONS, hierarchy=False))
    out = write_legacy(rel, tmp_path / "legacy")
    assert [t.level.geo for t in rel.tables] == ["COUNTY", "STATE"]
    tables = {**_published(out, "COUNTY", "3001"), **_published(out, "STATE", "3001")}
    assert tables["01001"][0] is None and tables["01"][0] == 6.0  # the state's cell is 6: not small
    bounds = _attack(tables, "01", ["01001", "01003"])
    assert bounds[("01001", 0)] == pytest.approx((1.0, 1.0))
    county = rel.tables[0]
    g = list(county.regions).index("01001") * len(county.codes) + list(county.codes).index("3001")
    assert county.exact[g, 0] and county.underprotected[g, 0]
    s = rel.summary()["(COUNTY, 2)"]["audit"]
    assert s["recovered_exactly_nonzero"] >= 1 and s["primaries_underprotected"] >= 1


def test_every_group_is_in_t1_or_suppressed_and_the_files_are_marked(two_counties, tmp_path):
    prepared = prepare(two_counties.params, two_counties.data)
    rel = legacy_release(prepared, LegacyOptions(**OPTIONS))
    out = write_legacy(rel, tmp_path / "legacy", prepared=prepared)
    t1 = read_part_files(out / "t1")
    sup = read_part_files(out / "suppressed")
    for t in rel.tables:
        n_groups = len(t.regions) * len(t.codes)
        got = t1[t1.REGION_TYPE == t.level.geo].shape[0] + sup[sup.REGION_TYPE == t.level.geo].shape[0]
        assert got == n_groups
    assert set(t1.REGION_ID) == {"01001", "01003", "01"}  # every other group is below 20 persons
    t2 = read_part_files(out / "t2")
    man = json.loads((out / "manifest.json").read_text())
    assert man["for_release"] is False and man["exact_counts"] is True and "NOT A SAFETAB-P RELEASE" in man["note"]
    withheld = (t2.COUNT == WITHHELD).sum() + (t1.COUNT == WITHHELD).sum()
    lv = man["levels"]
    assert withheld == sum(v["withheld_primary"] + v["withheld_complementary"] for v in lv.values())
    assert "NOT A SAFETAB-P RELEASE" in (out / "README.txt").read_text()
    audit = read_part_files(out / "audit")
    assert set(audit.STATUS) <= {"primary", "complementary", "group below threshold", "solver fallback"}
    assert (audit[audit.STATUS == "primary"].PROTECTED == "True").all()


def test_places_that_do_not_cover_their_state_leave_a_remainder(dataset, tmp_path):
    """Place 0110000 holds blocks 0 and 2 of state 01; persons of blocks 1 and 3 are in no
    place, so a state cell is the places' cells plus an unpublished remainder."""
    dataset.persons = _albanians(COUNTY_A, BLOCKS[0]) + _albanians(COUNTY_B, BLOCKS[1])
    dataset.write()
    prepared = prepare(dataset.params, dataset.data)
    rel = legacy_release(prepared, LegacyOptions(**{**OPTIONS, "geo": "PLACE"}))
    assert [t.level.geo for t in rel.tables] == ["PLACE", "STATE"]
    s = rel.summary()
    assert s["(PLACE, 2)"]["groups_published"] == 2  # Albanian alone and in combination, place 0110000
    assert s["(STATE, 2)"]["groups_published"] == 2
    assert s["(PLACE, 2)"]["audit"]["primaries_underprotected"] == 0
    place = rel.tables[0]
    g = list(place.regions).index("0110000") * len(place.codes) + list(place.codes).index("3001")
    assert place.values[g].tolist() == _truth(COUNTY_A).tolist()


def test_massells_capacity_never_uses_a_zero_count_and_refinement_keeps_a_subset(two_counties):
    """The seed's capacity model (the default): a count moves by at most its value in a
    deviation, so no zero count is a complement; "unbounded" may use them. The
    refinement run's complements are a subset of the first pass's. Every primary stays
    protected under the audit in all three."""
    prepared = prepare(two_counties.params, two_counties.data)
    seed = legacy_release(prepared, LegacyOptions(**OPTIONS))
    free = legacy_release(prepared, LegacyOptions(**OPTIONS, capacity="unbounded"))
    refined = legacy_release(prepared, LegacyOptions(**OPTIONS, refine=True))
    assert seed.options.capacity == "value"
    for rel in (seed, free, refined):
        assert all(s["audit"]["primaries_underprotected"] == 0 for s in rel.summary().values())
    for t in seed.tables + refined.tables:
        assert not ((t.status == COMPLEMENTARY) & (t.values == 0)).any()
    for a, b in zip(refined.tables, seed.tables):
        assert not ((a.status == COMPLEMENTARY) & (b.status != COMPLEMENTARY)).any()
    with pytest.raises(ValueError, match="--capacity"):
        legacy_release(prepared, LegacyOptions(capacity="infinite"))


def test_a_release_from_the_same_counts_is_reused_under_another_plan_and_made_again_otherwise(two_counties):
    """`reuse`: the legacy release reads the counts, not the plan's budgets. Under another plan
    (other budgets) the release kept from the same counts and options is returned, with no LP
    solved; other options, or other counts, make a new one, equal to one made without `reuse`."""
    kept: dict[str, dict] = {}

    def reuse(key):
        return kept.setdefault(key, {})

    solved = []
    first = legacy_release(prepare(two_counties.params, two_counties.data), LegacyOptions(**OPTIONS),
                           progress=lambda *a: solved.append(a), reuse=reuse)
    assert first.lps > 0 and solved and len(kept) == 1
    two_counties.config["privacy_budget_p_level_2_county"] *= 4  # another plan, the same persons
    two_counties.write()
    other_plan = prepare(two_counties.params, two_counties.data)
    solved.clear()
    assert legacy_release(other_plan, LegacyOptions(**OPTIONS), progress=lambda *a: solved.append(a),
                          reuse=reuse) is first
    assert solved == [] and len(kept) == 1
    other_options = legacy_release(other_plan, LegacyOptions(**{**OPTIONS, "min_population": 5}), reuse=reuse)
    assert len(kept) == 2 and other_options is not first
    two_counties.persons = two_counties.persons[1:]  # one person fewer
    two_counties.write()
    fewer = prepare(two_counties.params, two_counties.data)
    again = legacy_release(fewer, LegacyOptions(**OPTIONS), reuse=reuse)
    fresh = legacy_release(fewer, LegacyOptions(**OPTIONS))
    assert len(kept) == 3 and again is not first
    for a, b in zip(again.tables, fresh.tables):
        assert (a.values == b.values).all() and (a.status == b.status).all()
    smaller = first.tables[0].values[:, -1] - again.tables[0].values[:, -1]  # each group's total
    assert set(smaller.tolist()) == {0, 1}  # the groups of the person taken out lost one


def test_study_options_are_checked(two_counties):
    prepared = prepare(two_counties.params, two_counties.data)
    with pytest.raises(ValueError, match="--ages"):
        legacy_release(prepared, LegacyOptions(ages=5))
    with pytest.raises(ValueError, match="--min-cell"):
        legacy_release(prepared, LegacyOptions(min_cell=-1))
    with pytest.raises(ValueError, match="no PR-COUNTY regions"):
        two_counties.config["run_pr"] = False
        two_counties.write()
        legacy_release(prepare(two_counties.params, two_counties.data), LegacyOptions(geo="PR-COUNTY"))


# ------------------------------------------------------------------ command line
def test_cli_writes_the_study_and_says_what_it_is(two_counties, tmp_path, capsys):
    out = tmp_path / "legacy"
    args = ["legacy", str(two_counties.params), str(two_counties.data), str(out), "--quiet", "--ages", "4",
            "--min-population", "20"]
    assert main(args) == 0
    text = capsys.readouterr().out
    assert "NOT A SAFETAB-P RELEASE" in text and "(COUNTY, 2)" in text
    man = json.loads((out / "manifest.json").read_text())
    assert man["options"]["min_population"] == 20 and man["options"]["ages"] == 4
    assert (out / "t2" / "COUNTY-2.csv").read_text().splitlines()[0] == "REGION_ID|REGION_TYPE|ITERATION_CODE|AGESTART|AGEEND|SEX|COUNT"
    assert main(args) == 2  # OUT_DIR is not empty
    assert "not empty" in capsys.readouterr().err


def test_cli_exit_codes(two_counties, tmp_path, capsys):
    base = [str(two_counties.params), str(two_counties.data)]
    with pytest.raises(SystemExit) as info:
        main(["legacy", *base, str(tmp_path / "a"), "--geo", "NOWHERE"])
    assert info.value.code == 2
    assert main(["legacy", *base, str(tmp_path / "b"), "--quiet", "--min-cell", "-1"]) == 2
    assert "--min-cell" in capsys.readouterr().err and not (tmp_path / "b").exists()
    two_counties.persons.append(person(age=200))
    two_counties.write()
    assert main(["legacy", *base, str(tmp_path / "c"), "--quiet"]) == 1
    err = capsys.readouterr().err
    assert "QAGE" in err and "Nothing was written" in err and not (tmp_path / "c").exists()


def test_help_explains_the_study_and_every_option():
    out = cli_help("legacy")  # exit code 0 asserted
    for word in ("--geo", "--iteration-level", "--min-population", "--min-cell", "--protection", "--ages",
                 "--no-hierarchy", "--no-singletons", "--sliding", "--cost", "--capacity", "--refine",
                 "--time-limit", "--time-budget",
                 "NOT a SafeTab-P release", "COUNT = D", "exit codes"):
        assert word in out, word
    assert "legacy" in cli_help()


def test_solver_notes_say_how_many_parts_each_concerns():
    from engine.reports.legacy import solver_notes

    notes = ["an LP did not finish: the part is withheld whole"] * 3 + ["time budget reached: the rest is withheld"]
    assert solver_notes(notes) == ["3 connected parts: an LP did not finish: the part is withheld whole",
                                   "1 connected part: time budget reached: the rest is withheld"]
    assert solver_notes([]) == []


# ------------------------------------------------------------------ a group's total is published only when it is not D
#: Angolans of county 02001 (alone in state 02): a lone boy whose row holds only zeros. With
#: Massell's capacity nothing can protect him (an infeasible LP), so his connected part (the
#: county's and the state's tables) is withheld whole by the solver fallback, total included,
#: although the group (23 persons) reaches the minimum population of 20.
LONE_BOY = {1: [1, 0, 0, 0], 2: [6, 8, 5, 3]}


@pytest.fixture
def with_fallback(dataset):
    dataset.persons = (_albanians(COUNTY_A, BLOCKS[0]) + _albanians(COUNTY_B, BLOCKS[3])
                       + [person(age=AGES[a], sex=s, block=BLOCKS[4], races=("1020",))
                          for s, counts in LONE_BOY.items() for a, n in enumerate(counts) for _ in range(n)])
    dataset.write()
    return dataset


def _from_files(out: Path, geo: str) -> dict:
    """Groups counted from the written files alone: a group's total is published iff its t1/
    COUNT is a number."""
    t1 = read_part_files(out / "t1")
    t1 = t1[t1.REGION_TYPE == geo]
    t2 = read_part_files(out / "t2")
    t2 = t2[(t2.REGION_TYPE == geo) & (t2.AGESTART != "*")]
    shown = t1[t1.COUNT != WITHHELD]
    tables = t2[t2.COUNT != WITHHELD].groupby(["REGION_ID", "ITERATION_CODE"]).ngroups
    return {"in_t1": len(t1), "published": len(shown), "d_totals": int((t1.COUNT == WITHHELD).sum()),
            "published_with_persons": int((shown.COUNT.astype(int) > 0).sum()),
            "persons_published": int(shown.COUNT.astype(int).sum()), "with_table": tables}


def test_a_total_withheld_as_d_is_not_a_published_group(with_fallback, tmp_path):
    """A group that reaches the minimum population but whose total the solver fallback
    withholds ("D" in t1/) is not published: the summary counts groups from the total's own
    status, as a reader of t1/ would."""
    prepared = prepare(with_fallback.params, with_fallback.data)
    rel = legacy_release(prepared, LegacyOptions(**OPTIONS))
    out = write_legacy(rel, tmp_path / "legacy")
    audit = read_part_files(out / "audit")
    fallback_totals = audit[(audit.AGESTART == "*") & (audit.SEX == "*") & (audit.STATUS == "solver fallback")]
    assert len(fallback_totals), "the case under test: a total withheld by the solver fallback"
    summary = rel.summary()
    for t in rel.tables:
        s, files = summary[t.level.key], _from_files(out, t.level.geo)
        assert files["d_totals"] > 0, t.level.key
        assert s["groups_published"] == files["published"] < files["in_t1"] == s["groups_above_threshold"]
        assert sum(s["groups_total_withheld"].values()) == files["d_totals"]
        assert s["groups_total_withheld"]["solver fallback"] == int((fallback_totals.REGION_TYPE == t.level.geo).sum())
        assert s["groups_with_persons_published"] == files["published_with_persons"]
        assert s["persons_in_published_groups"] == files["persons_published"]
        assert s["groups_with_table"] == files["with_table"]
        assert s["groups_above_threshold"] + s["groups_below_threshold"] == s["groups"]


def test_with_no_minimum_population_published_groups_with_persons_are_among_them(with_fallback, tmp_path):
    """Minimum population 0: every group, empty ones included, has a row in t1/; the groups
    with persons that are published are counted among the groups with persons, never more."""
    prepared = prepare(with_fallback.params, with_fallback.data)
    rel = legacy_release(prepared, LegacyOptions(**{**OPTIONS, "min_population": 0}))
    out = write_legacy(rel, tmp_path / "legacy")
    summary = rel.summary()
    for t in rel.tables:
        s, files = summary[t.level.key], _from_files(out, t.level.geo)
        assert files["in_t1"] == s["groups"] and files["d_totals"] > 0
        assert s["groups_published"] == files["published"]
        assert s["groups_with_persons_published"] == files["published_with_persons"]
        assert s["groups_with_persons_published"] <= s["groups_with_persons"] < s["groups_published"]


def test_a_larger_protection_publishes_fewer_totals_and_says_so(with_fallback, tmp_path):
    """Protection 1000 persons: no small count can be protected within the capacities, so
    every part with one is withheld whole; fewer totals are published, and the count
    follows the files."""
    prepared = prepare(with_fallback.params, with_fallback.data)
    counted = []
    for k, prot in enumerate((3, 1000)):
        rel = legacy_release(prepared, LegacyOptions(**{**OPTIONS, "protection": prot}))
        out = write_legacy(rel, tmp_path / f"legacy{k}")
        s = rel.summary()["(COUNTY, 2)"]
        assert s["groups_published"] == _from_files(out, "COUNTY")["published"]
        counted.append(s["groups_published"])
    assert counted[1] < counted[0]


def test_cli_says_how_many_groups_have_a_published_total_and_what_the_fallback_withheld(with_fallback, tmp_path,
                                                                                      capsys):
    out = tmp_path / "legacy"
    args = ["legacy", str(with_fallback.params), str(with_fallback.data), str(out), "--quiet", "--ages", "4",
            "--min-population", "20"]
    assert main(args) == 0
    text = capsys.readouterr().out
    man = json.loads((out / "manifest.json").read_text())
    for key, geo in (("(COUNTY, 2)", "COUNTY"), ("(STATE, 2)", "STATE")):
        files, s = _from_files(out, geo), man["levels"][key]
        line = next(ln for ln in text.splitlines() if ln.startswith(key))
        assert f"{key}: {files['published']:,} of {s['groups']:,} groups have a published total" in line
        assert f"{files['in_t1']:,} reach the minimum population of 20" in line
        assert re.search(rf"the totals? of {files['d_totals']:,} of those (is|are) withheld as D: ", line), line
        assert f"{s['withheld_fallback']:,} by the solver fallback" in line and s["withheld_fallback"] > 0
    fallback = sum(v["withheld_fallback"] for v in man["levels"].values())
    assert f"Solver fallback: {fallback:,} counts were withheld" in text
    assert "a group whose total is D keeps its row in t1/ but has no published total" in text
    assert "infeasible LP" in text  # the solver's own reason, with the number of parts it concerns
    assert "solver fallback" in man["marking"]["COUNT"] and "solver" in (out / "README.txt").read_text()
