"""The hierarchy stage and `run --consistency` (engine.tabulation.hierarchy, .consistency)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from calculators.levels import PopulationGroupLevel
from engine import noise as _noise
from engine.cli import main
from engine.run import iter_published, make_noise, prepare, run
from engine.tabulation.consistency import adjuster
from engine.tabulation.hierarchy import HierarchyStage
from engine.tabulation.postprocess import CoterminousStash
from methods.consistency import tree_dp
from tests.engine.conftest import base_config, read_part_files
from tests.engine.tabulation.conftest import moving_dataset, random_persons

CHAIN_PAIRS = [("USA", "STATE", lambda r: "1"), ("STATE", "COUNTY", lambda r: r[:2]),
               ("COUNTY", "TRACT", lambda r: r[:5]), ("PR-STATE", "PR-COUNTY", lambda r: r[:2]),
               ("PR-COUNTY", "PR-TRACT", lambda r: r[:5])]


@pytest.fixture
def data(dataset):
    return moving_dataset(dataset, 400)


def _release(out):
    t1 = read_part_files(out / "t1").assign(COUNT=lambda d: d.COUNT.astype(int))
    sup = read_part_files(out / "suppressed")
    t2 = read_part_files(out / "t2").assign(COUNT=lambda d: d.COUNT.astype(int))
    return t1, sup, t2


def _values(t1, sup):
    """Published totals by (level, region, code); suppressed groups are None."""
    v = {(r.REGION_TYPE, r.REGION_ID, r.ITERATION_CODE): r.COUNT for r in t1.itertuples()}
    v.update({(r.REGION_TYPE, r.REGION_ID, r.ITERATION_CODE): None for r in sup.itertuples()})
    return v


def _violations(values):
    """What a reader can check: a published parent equals the sum of its children when all
    are published, and is at least the sum of the published ones otherwise."""
    df = pd.DataFrame([(*k, v) for k, v in values.items()], columns=["geo", "region", "code", "value"])
    df["shown"] = df.value.notna()
    df["value"] = df.value.fillna(0).astype(int)
    bad = checked = 0
    for parent, child, up in CHAIN_PAIRS:
        kids = df[df.geo == child]
        kids = kids.assign(up=kids.region.map(up))
        g = kids.groupby(["up", "code"])
        sums, all_shown = g.value.sum(), g.shown.all()
        par = df[(df.geo == parent) & df.shown].set_index(["region", "code"]).value
        j = pd.concat([par.rename("p"), sums.rename("s"), all_shown.rename("all")], axis=1, join="inner")
        checked += len(j)
        bad += int((np.where(j["all"], j.p != j.s, j.p < j.s)).sum())
    return bad, checked


def _tables_add_up(t1, t2):
    body = t2[t2.AGESTART != "*"].groupby(["REGION_TYPE", "REGION_ID", "ITERATION_CODE"]).COUNT.sum()
    marg = t2[t2.AGESTART == "*"].groupby(["REGION_TYPE", "REGION_ID", "ITERATION_CODE"]).COUNT.sum()
    tot = t1.set_index(["REGION_TYPE", "REGION_ID", "ITERATION_CODE"]).COUNT
    j = pd.concat([body.rename("cells"), marg.rename("marg"), tot.rename("t1")], axis=1, join="inner")
    assert len(j) == len(body) > 0
    return bool(((j.cells == j.t1) & (j.marg == j.t1)).all())


@pytest.mark.parametrize("method", ["least-squares", "tree-dp"])
def test_a_consistent_release_adds_up_and_keeps_suppression(data, tmp_path, method):
    base = run(data.params, data.data, tmp_path / "none", seed=5).out_dir
    out = run(data.params, data.data, tmp_path / method, seed=5, consistency=method).out_dir
    t1_0, sup_0, _t2_0 = _release(base)
    t1, sup, t2 = _release(out)
    bad0, checked = _violations(_values(t1_0, sup_0))
    bad, checked2 = _violations(_values(t1, sup))
    assert checked == checked2 > 100 and bad0 > 0
    assert bad == 0
    # Every group is still accounted for, and exactly the same groups are suppressed.
    assert len(sup) > 0
    assert set(map(tuple, sup.values.tolist())) == set(map(tuple, sup_0.values.tolist()))
    assert len(t1) == len(t1_0)
    assert _tables_add_up(t1, t2)
    chain = t1.REGION_TYPE.isin(["USA", "STATE", "COUNTY", "TRACT", "PR-STATE", "PR-COUNTY", "PR-TRACT"])
    if method == "tree-dp":
        assert (t1[chain].COUNT >= 0).all()
        chain2 = t2.REGION_TYPE.isin(["USA", "STATE", "COUNTY", "TRACT", "PR-STATE", "PR-COUNTY", "PR-TRACT"])
        assert (t2[chain2].COUNT >= 0).all()
    # Places and tribal areas are not nested: published as SafeTab-P publishes them,
    # except coterminous members, which follow their set's adjusted chain member.
    v0, v = _values(t1_0, sup_0), _values(t1, sup)
    place_codes = {k for k in v0 if k[0] == "AIANNH"}
    assert place_codes and all(v[k] == v0[k] for k in place_codes)
    # With no suppressed child, a parent is exactly the sum; with some, at least the rest.
    assert any(x is None for x in v.values())
    for code in {k[2] for k in v if k[0] == "STATE" and k[1] == "11"}:
        dc = [v.get((g, r, code)) for g, r in (("STATE", "11"), ("COUNTY", "11001"), ("PLACE", "1150000"))]
        assert all(x is None or x == dc[0] for x in dc[1:])  # None: not tabulated there (TotalOnly)
        assert v.get(("COUNTY", "01003", code)) == v.get(("TRACT", "01003000100", code))
    assert sum(1 for k in v if k[:2] == ("PLACE", "1150000")) > 5
    m = json.loads((out / "manifest.json").read_text())["postprocessing"]["consistency"]
    assert m["method"] == method and m["violations_after"] == 0 and m["violations_before"] == bad0
    assert json.loads((base / "manifest.json").read_text())["postprocessing"]["consistency"] == {"method": "none"}


def _collected(dataset, seed=5):
    prepared = prepare(dataset.params, dataset.data)
    stage = HierarchyStage(prepared)
    stash = CoterminousStash(prepared.inputs.geography.coterminous_sets())
    all_codes = list(prepared.inputs.specs.iterations)
    code_id = {c: i for i, c in enumerate(all_codes)}
    for counts, pub in iter_published(prepared, make_noise("zcdp", _noise.RandomSource.seeded(seed))):
        lvl = pub.plan.level
        n_it = counts.n_iterations
        mask = stash.region_mask(lvl.geo, counts.n_regions)
        if mask is not None:
            groups = np.arange(pub.g0, pub.g1)
            codes = prepared.catalog.codes(lvl.geo, lvl.iteration_level)
            stash.add(pub, lvl.geo, groups[mask[groups // n_it]], n_it, np.array([code_id[c] for c in codes]))
        if stage.collects(lvl):
            stage.add(counts, pub)
    return prepared, stage, stash


def test_forests_follow_the_levels_that_tabulate_each_iteration(data):
    prepared, stage, stash = _collected(data)
    forests = {(lvl, tuple(f.levels)): (f, set(codes)) for lvl, f, codes in stage.forests(stash.member)}
    full, codes = forests[(2, ("USA", "STATE", "COUNTY", "TRACT"))]
    assert {"3001", "3002", "3101", "3102", "4021"} <= codes
    assert forests[(2, ("USA", "STATE"))][1] == {"3011", "3012"}  # TotalOnly (DETAILED_ONLY)
    coarse, coarse_codes = forests[(2, ("COUNTY", "TRACT"))]
    assert coarse_codes == {"3021", "3022"} and (coarse.parents == -1).sum() > 1  # COARSE_ONLY: a forest
    assert (2, ("PR-STATE", "PR-COUNTY", "PR-TRACT")) in forests
    assert forests[(2, ("PR-STATE",))][1] == {"3011", "3012"}  # no PR level above: isolated nodes
    geo = prepared.inputs.geography
    idx = {g: list(geo.regions[g].astype(str)) for g in geo.regions}
    # Coterminous members share one node: DC as state and county; a county with one tract.
    assert full.node_of["COUNTY"][idx["COUNTY"].index("11001")] == full.node_of["STATE"][idx["STATE"].index("11")]
    assert (full.node_of["TRACT"][idx["TRACT"].index("01003000100")]
            == full.node_of["COUNTY"][idx["COUNTY"].index("01003")])
    # ... and DC's tracts hang from the DC node.
    dc = full.node_of["STATE"][idx["STATE"].index("11")]
    assert full.parents[full.node_of["TRACT"][idx["TRACT"].index("11001000100")]] == dc
    # Every other node's parent is the region that contains it.
    t = full.node_of["TRACT"][idx["TRACT"].index("01001000200")]
    assert full.parents[t] == full.node_of["COUNTY"][idx["COUNTY"].index("01001")]
    assert full.parents[full.node_of["USA"][0]] == -1


def test_levels_that_are_off_are_skipped(dataset, tmp_path):
    dataset.persons = random_persons(200)
    dataset.config = base_config(privacy_budget_p_level_2_county=0.0, privacy_budget_p_level_1_county=0.0)
    dataset.write()
    _prepared, stage, stash = _collected(dataset)
    levels = {tuple(f.levels) for _lvl, f, _c in stage.forests(stash.member)}
    assert ("USA", "STATE", "TRACT") in levels and not any("COUNTY" in lv for lv in levels)
    out = run(dataset.params, dataset.data, tmp_path / "o", seed=2, consistency="tree-dp").out_dir
    t1, sup, _t2 = _release(out)
    v = _values(t1, sup)
    for code in {k[2] for k in v if k[0] == "STATE"}:
        tracts = sum(x for (g, r, c), x in v.items() if g == "TRACT" and c == code and r.startswith("01"))
        if ("TRACT", "01001000100", code) in v:
            assert v[("STATE", "01", code)] == tracts


def test_suppressed_groups_are_unobserved_remainders(data):
    prepared, stage, stash = _collected(data)
    seen = []

    def spy(batch):
        seen.append(batch)
        return tree_dp(batch.forest.parents, batch.published, variances=batch.variance)

    rows = stash.resolve()
    res = stage.finish(rows, stash.member, spy)
    assert any((~b.released).any() for b in seen)
    for b in seen:
        # A suppressed group's noisy total never reaches the adjust function.
        assert (b.published[~b.released] == 0).all() and np.isinf(b.variance[~b.released]).all()
        assert np.isfinite(b.variance[b.released]).all() and (b.variance[b.released] > 0).all()
    # County totals are the sum of their published tracts plus a non-negative remainder,
    # exactly the sum where no tract is suppressed.
    pubs = {p.plan.level: p for _c, p in res.published}
    geo = prepared.inputs.geography
    parent = np.searchsorted(geo.regions["COUNTY"], [r[:5] for r in geo.regions["TRACT"]])
    n_it = len(prepared.catalog.codes("TRACT", 2))
    tr, co = pubs[PopulationGroupLevel("TRACT", 2)], pubs[PopulationGroupLevel("COUNTY", 2)]
    strict = loose = 0
    for ci in range(n_it):
        t_rel = tr.released.reshape(-1, n_it)[:, ci]
        t_sum = np.bincount(parent, np.where(t_rel, tr.t1.reshape(-1, n_it)[:, ci], 0), minlength=len(parent))
        all_rel = np.bincount(parent, ~t_rel, minlength=len(parent)) == 0
        c_rel = co.released.reshape(-1, n_it)[:, ci]
        c_val = co.t1.reshape(-1, n_it)[:, ci]
        n_c = len(c_val)
        for k in np.flatnonzero(c_rel):
            if all_rel[k]:
                assert c_val[k] == t_sum[:n_c][k]
                strict += 1
            else:
                assert c_val[k] >= t_sum[:n_c][k]
                loose += 1
    assert strict > 0 and loose > 0
    # Whatever an adjust function says about suppressed groups is not published.
    res2 = stage.finish(rows, stash.member, lambda b: np.where(b.released, b.published, 10**6).astype(np.int64),
                        cells_nonnegative=False)
    for (_c, a), (_c2, b2) in zip(res.published, res2.published):
        assert np.array_equal(a.released, b2.released)
        assert (b2.t1[b2.released] < 10**6).all()


def test_the_stage_takes_any_adjust_function_for_example_state_invariants(data):
    # What an `--invariant STATE` option could do: hold the state totals at the truth
    # (here where the states are the leaves, USA > STATE: the TotalOnly iterations).
    prepared, stage, stash = _collected(data)
    held = []

    def invariant_states(batch):
        fixed = np.full(batch.published.shape, np.nan)
        if batch.forest.levels == ("USA", "STATE"):
            is_state = batch.forest.geo == "STATE"
            fixed[is_state] = batch.truth[is_state]
            held.extend(batch.codes)
        return tree_dp(batch.forest.parents, batch.published, variances=batch.variance, fixed=fixed)

    res = stage.finish(stash.resolve(), stash.member, invariant_states)
    assert set(held) == {"3011", "3012"}
    for _counts, pub in res.published:
        if pub.plan.level == PopulationGroupLevel("STATE", 2):
            codes = list(prepared.catalog.codes("STATE", 2))
            n_it = len(codes)
            cols = [codes.index(c) for c in held]
            t1, truth = pub.t1.reshape(-1, n_it)[:, cols], pub.true_total.reshape(-1, n_it)[:, cols]
            assert np.array_equal(t1, truth) and truth.sum() > 0
    assert res.stats["violations_after"] == 0

    def impossible(batch):
        fixed = np.full(batch.published.shape, np.nan)
        fixed[batch.forest.parents == -1] = -5
        return tree_dp(batch.forest.parents, batch.published, fixed=fixed)

    with pytest.raises(ValueError, match="iteration level .*negative"):
        stage.finish(stash.resolve(), stash.member, impossible)


def test_finish_can_be_repeated_and_none_is_the_safetab_release(data, tmp_path):
    prepared, stage, stash = _collected(data)
    rows = stash.resolve()
    none = stage.finish(rows, stash.member, None)
    fn, nonneg = adjuster("tree-dp", True)
    a = stage.finish(rows, stash.member, fn, cells_nonnegative=nonneg)
    b = stage.finish(rows, stash.member, fn, cells_nonnegative=nonneg)
    for (_c, pa_), (_c2, pb) in zip(a.published, b.published):
        assert np.array_equal(pa_.t1, pb.t1)
    assert none.stats["violations_after"] == none.stats["violations_before"] == a.stats["violations_before"] > 0
    # "none" equals what a release without the option publishes.
    t1, sup, _t2 = _release(run(data.params, data.data, tmp_path / "n", seed=5).out_dir)
    v = _values(t1, sup)
    for _counts, pub in none.published:
        lvl = pub.plan.level
        regions = prepared.inputs.geography.regions[lvl.geo].astype(str)
        codes = prepared.catalog.codes(lvl.geo, lvl.iteration_level).astype(str)
        n_it = len(codes)
        for g in np.flatnonzero(pub.released)[:200]:
            assert v[(lvl.geo, regions[g // n_it], codes[g % n_it])] == pub.t1[g]


def test_command_line_option(data, tmp_path, capsys):
    out = tmp_path / "o"
    assert main(["run", str(data.params), str(data.data), str(out), "--seed", "3", "--quiet",
                 "--consistency", "tree-dp"]) == 0
    assert json.loads((out / "manifest.json").read_text())["postprocessing"]["consistency"]["method"] == "tree-dp"
    with pytest.raises(SystemExit) as info:
        main(["run", str(data.params), str(data.data), str(tmp_path / "p"), "--consistency", "magic"])
    assert info.value.code == 2
    with pytest.raises(ValueError, match="unknown consistency method"):
        adjuster("magic", True)
