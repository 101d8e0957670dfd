"""`--invariant` (engine.tabulation.invariants): true totals held exact through the hierarchy stage,
its accuracy comparison (engine.reports.invariants) and the command line."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from calculators import discrete_gaussian
from engine import noise as _noise
from engine.cli import main
from engine.release.outputs import read_operator_file
from engine.reports.invariants import invariant_accuracy
from engine.run import run
from engine.tabulation.hierarchy import Forest, HierarchyBatch
from engine.tabulation.invariants import INVARIANTS, InvariantAdjuster
from tests.engine.conftest import base_config, read_part_files
from tests.engine.tabulation.conftest import moving_dataset, random_persons

UP = {"STATE": "USA", "COUNTY": "STATE", "TRACT": "COUNTY", "PR-COUNTY": "PR-STATE", "PR-TRACT": "PR-COUNTY"}


@pytest.fixture
def data(dataset):
    return moving_dataset(dataset, 500)


def _frames(out):
    t1 = read_part_files(out / "t1").assign(COUNT=lambda d: d.COUNT.astype(int))
    t2 = read_part_files(out / "t2").assign(COUNT=lambda d: d.COUNT.astype(int))
    sup = read_part_files(out / "suppressed")
    return t1, t2, sup


def _t1(t1) -> dict:
    return {(r.REGION_TYPE, r.REGION_ID, r.ITERATION_CODE): r.COUNT for r in t1.itertuples()}


def _parent_id(geo: str, region: str) -> str:
    return {"STATE": "1", "COUNTY": region[:2], "TRACT": region[:5], "PR-COUNTY": region[:2],
            "PR-TRACT": region[:5]}[geo]


@pytest.mark.parametrize("choice", ["STATE", "COUNTY"])
def test_a_release_with_invariants_holds_the_true_totals(data, tmp_path, choice):
    plain = run(data.params, data.data, tmp_path / "plain", seed=5).out_dir
    truth = run(data.params, data.data, tmp_path / "truth", truth=True).out_dir
    held = run(data.params, data.data, tmp_path / "held", seed=5, invariant=choice).out_dir
    t1_p, _t2_p, sup_p = _frames(plain)
    t1_t, _t2_t, _sup_t = _frames(truth)
    t1, t2, sup = _frames(held)
    vp, vt, v = _t1(t1_p), _t1(t1_t), _t1(t1)
    # The same groups are suppressed (decided first, by SafeTab-P's rule), none is lost.
    assert len(sup) > 0 and set(map(tuple, sup.values.tolist())) == set(map(tuple, sup_p.values.tolist()))
    assert set(v) == set(vp)
    checked_parents = checked_families = 0
    for parent, child in INVARIANTS[choice]:
        child_codes = {k[2] for k in vt if k[0] == child}
        parents = {k for k in v if k[0] == parent and k[2] in child_codes}
        # Every released parent group of an iteration tabulated at both levels is exact...
        for k in parents:
            assert v[k] == vt[k], k
            checked_parents += 1
        # ... and its released children add up to it.
        kids = pd.DataFrame([(r, c, x) for (g, r, c), x in v.items() if g == child], columns=["r", "c", "x"])
        if kids.empty:
            continue
        kids["p"] = [_parent_id(child, r) for r in kids.r]
        for (p, c), x in kids.groupby(["p", "c"]).x.sum().items():
            if (parent, p, c) in v:
                assert x == v[(parent, p, c)], (p, c)
                checked_families += 1
    assert checked_parents > 10 and checked_families > 10
    # Groups the invariant does not touch are published as SafeTab-P publishes them:
    # iterations tabulated at one level only (TotalOnly at STATE), levels outside the pair.
    untouched = {"STATE": ["TRACT", "AIANNH", "USA"], "COUNTY": ["USA", "STATE", "AIANNH"]}[choice]
    for g in untouched:
        keys = [k for k in vp if k[0] == g]
        # (coterminous members follow their set's adjusted member: skip DC, state 02 = its one county
        # = its one tract, and the one-tract county 01003)
        keys = [k for k in keys if not k[1].startswith(("11", "01003", "02"))] if g in ("TRACT", "STATE") else keys
        assert keys and all(v[k] == vp[k] for k in keys), g
    if choice == "COUNTY":
        # Puerto Rico has one county: PR-STATE is coterminous with it, so exact as well.
        pr = [k for k in v if k[0] == "PR-STATE" and ("PR-COUNTY", "72001", k[2]) in v]
        assert pr and all(v[k] == vt[k] for k in pr)
    if choice == "STATE":
        for code in ("3011", "3012"):  # TotalOnly: at STATE, not at COUNTY
            assert v[("STATE", "01", code)] == vp[("STATE", "01", code)]
        # A state with one county (02) and DC: the county is the true total (for the
        # iterations the state tabulates too: COARSE_ONLY ones are county-only, not held).
        state_codes = {k[2] for k in vt if k[0] == "STATE"}
        one = [k for k in v if k[0] == "COUNTY" and k[1] in ("02001", "11001") and k[2] in state_codes]
        assert one and all(v[k] == vt[k] for k in one)
        assert any(v[k] != vt[k] for k in v if k[0] == "COUNTY" and k[2] in ("3021", "3022"))
    # Tables still add up to their totals (cells and sex marginals).
    body = t2[t2.AGESTART != "*"].groupby(["REGION_TYPE", "REGION_ID", "ITERATION_CODE"]).COUNT.sum()
    marg = t2[t2.AGESTART == "*"].groupby(["REGION_TYPE", "REGION_ID", "ITERATION_CODE"]).COUNT.sum()
    j = pd.concat([body.rename("cells"), marg.rename("marg"), pd.Series(v).rename("t1")], axis=1, join="inner")
    assert len(j) > 10 and (j.cells == j.t1).all() and (j.marg == j.t1).all()
    # The manifest says loudly what this is and what it reveals.
    m = json.loads((held / "manifest.json").read_text())
    assert m["mode"]["not_safetab_p"] is True and m["mode"]["warning"].startswith("NOT SafeTab-P")
    inv = m["postprocessing"]["invariant"]
    assert inv["choice"] == choice and inv["held"]
    assert sum(h["totals_published_exactly"] for h in inv["held"]) == checked_parents
    assert "_confidential" not in inv and "confidential" not in m
    # What the invariant reveals about small groups sits with the exact counts, in the operator file.
    small = read_operator_file(held)["confidential"]["invariant_true_totals_by_size"]
    assert sum(s["true_totals_under_100"] for s in small) == sum(1 for k in set(v) if k[0] in dict(INVARIANTS[choice])
                                                                 and k[2] in {c[2] for c in vt if c[0] ==
                                                                              dict(INVARIANTS[choice])[k[0]]}
                                                                 and vt[k] < 100)
    assert json.loads((plain / "manifest.json").read_text())["postprocessing"]["invariant"] is None
    # Seeded: the same seed gives the same release.
    again = run(data.params, data.data, tmp_path / "again", seed=5, invariant=choice).out_dir
    assert _t1(_frames(again)[0]) == v


def test_county_invariant_leaves_families_of_suppressed_counties_alone(data, tmp_path):
    """A suppressed county is not published, so its true total must not leak through its
    tracts: those tracts are published as SafeTab-P publishes them."""
    # seed 2: two county groups are suppressed while some of their tracts are released
    plain = run(data.params, data.data, tmp_path / "plain", seed=2).out_dir
    held = run(data.params, data.data, tmp_path / "held", seed=2, invariant="COUNTY").out_dir
    vp = _t1(_frames(plain)[0])
    v = _t1(_frames(held)[0])
    sup = _frames(held)[2]
    sup_counties = {(r.REGION_ID, r.ITERATION_CODE) for r in sup.itertuples() if r.REGION_TYPE == "COUNTY"}
    assert sup_counties
    n = 0
    for (g, r, c), x in v.items():
        if g == "TRACT" and (r[:5], c) in sup_counties and not r.startswith("01003"):
            assert x == vp[(g, r, c)]
            n += 1
    assert n > 0
    m = json.loads((held / "manifest.json").read_text())["postprocessing"]["invariant"]
    assert sum(h["families_not_held_parent_suppressed"] for h in m["held"]) >= len(sup_counties)


def _batch(truth_children, variances, noise, released=None):
    """One parent with children (a forest STATE > COUNTY), m iterations as columns."""
    k, m = noise.shape
    parents = np.array([-1] + [0] * k)
    forest = Forest(("STATE", "COUNTY"), parents, np.array([0] + [1] * k), np.r_[0, np.arange(k)],
                    {"STATE": np.array([0]), "COUNTY": np.arange(1, k + 1)})
    truth = np.vstack([np.sum(truth_children), *[[t] for t in truth_children]]) * np.ones((1, m), np.int64)
    published = truth + np.vstack([np.zeros((1, m), np.int64), noise])
    rel = np.ones_like(published, bool) if released is None else released
    return HierarchyBatch(forest, 2, np.array([str(i) for i in range(m)]), np.where(rel, published, 0),
                          np.vstack([[1.0], *[[v] for v in variances]]) * np.ones((1, m)), rel,
                          truth.astype(np.int64), True)


def test_adjuster_variance_is_the_projection_s():
    """Three counties, the third with a 4-cell table (4x the variance): held to the
    state's true total, county i's error variance is v_i (1 - v_i / W) (plus at most the
    rounding's), its mean zero, and the counties always add up exactly. Exact discrete
    Gaussian noise, seeded."""
    s2, m = 40.0, 20_000
    src = _noise.RandomSource.seeded(3)
    u = float(discrete_gaussian.variance(s2))
    v = np.array([u, u, 4 * u])
    noise = np.vstack([_noise.sample_discrete_gaussian(s2, m, src), _noise.sample_discrete_gaussian(s2, m, src),
                       _noise.sample_discrete_gaussian(s2, 4 * m, src).reshape(4, m).sum(axis=0)])
    truth = [12, 0, 300]
    b = _batch(truth, v, noise)
    adj = InvariantAdjuster("STATE", src.words)
    out = adj(b)
    assert (out[0] == 312).all()
    assert (out[1:].sum(axis=0) == 312).all()
    err = out[1:] - np.array(truth)[:, None]
    want = v * (1 - v / v.sum())
    assert np.all(err.var(axis=1) > want * 0.96) and np.all(err.var(axis=1) < (want + 0.25) * 1.04)
    assert np.all(np.abs(err.mean(axis=1)) < 4 * np.sqrt(want / m))
    s = adj.summary()
    assert s["held"][0]["families_held"] == m and s["held"][0]["totals_published_exactly"] == m


def test_adjuster_suppressed_children_count_as_zero_and_parent_suppression_stops_it():
    noise = np.array([[3, 3, 3], [-2, -2, -2]])
    rel = np.array([[True, False, True], [True, True, True], [False, True, True]])
    b = _batch([10, 20], [1.0, 1.0], noise, released=rel)
    out = InvariantAdjuster("STATE")(b)
    # column 0: only child 1 released -> it carries the whole true total (30)
    assert out[0, 0] == 30 and out[1, 0] == 30 and out[2, 0] == 0
    # column 1: the parent is suppressed -> left as published (0 for the parent)
    assert out[0, 1] == 0 and out[1, 1] == 13 and out[2, 1] == 18
    # column 2: both released -> add up to 30
    assert out[0, 2] == 30 and out[1:, 2].sum() == 30
    with pytest.raises(ValueError, match="unknown invariant"):
        InvariantAdjuster("PLACE")


def test_invariant_accuracy_compares_on_the_same_noise(data, tmp_path):
    df = invariant_accuracy(data.params, data.data, tmp_path / "acc", "STATE", trials=2, seed=1)
    assert (tmp_path / "acc" / "accuracy_invariant.csv").is_file()
    meta = json.loads((tmp_path / "acc" / "accuracy_invariant.json").read_text())
    assert meta["mode"]["invariant"] == "STATE" and meta["mode"]["trials"] == 2
    assert set(df.geo_level) <= {"STATE", "COUNTY", "PR-STATE", "PR-COUNTY"}
    totals = df[df.table.str.startswith(("total", "T1"))]
    state = totals[totals.geo_level == "STATE"]
    # State totals of the iterations the counties tabulate are exact; TotalOnly ones are not held.
    assert (state[state.table != "total (TotalOnly)"].share_exact_invariant == 1).all()
    assert (state[state.table == "total (TotalOnly)"].share_exact_invariant < 1).any()
    assert (totals.share_exact_safetab_p < 1).all()
    assert (df.trials == 2).all() and (df.counts_compared > 0).all()
    # Paired trials: the plain side equals the plain accuracy report (both without the
    # coterminous post-processing, which the comparison stage does not apply).
    from engine.reports.accuracy import accuracy_report

    plain = accuracy_report(data.params, data.data, tmp_path / "p", trials=2, seed=1, coterminous=False)
    merged = df.merge(plain, on=["geo_level", "iteration_level", "table", "true_size"])
    assert len(merged) == len(df)
    assert (merged.p95_abs_error_safetab_p == merged.p95_abs_error).all()


def test_command_line(data, tmp_path, capsys):
    out = tmp_path / "o"
    assert main(["run", str(data.params), str(data.data), str(out), "--seed", "3", "--quiet",
                 "--invariant", "STATE"]) == 0
    printed = capsys.readouterr().out
    assert "NOT SafeTab-P: invariants" in printed
    assert json.loads((out / "manifest.json").read_text())["postprocessing"]["invariant"]["choice"] == "STATE"
    assert main(["run", str(data.params), str(data.data), str(tmp_path / "x"), "--invariant", "STATE",
                 "--consistency", "tree-dp", "--quiet"]) == 2
    assert "cannot be combined" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()
    with pytest.raises(SystemExit) as info:
        main(["run", str(data.params), str(data.data), str(tmp_path / "y"), "--invariant", "PLACE"])
    assert info.value.code == 2
    assert main(["accuracy", str(data.params), str(data.data), str(tmp_path / "a"), "--invariant", "COUNTY",
                 "--seed", "1", "--quiet"]) == 0
    printed = capsys.readouterr().out
    assert "p95 invariant" in printed and (tmp_path / "a" / "accuracy_invariant.csv").is_file()


def test_negative_counts_must_be_allowed(dataset, tmp_path, capsys):
    dataset.persons = random_persons(100)
    dataset.config = base_config(allow_negative_counts=False)
    dataset.write()
    assert main(["run", str(dataset.params), str(dataset.data), str(tmp_path / "o"), "--invariant", "STATE",
                 "--quiet"]) == 2
    assert "allow_negative_counts: true" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_the_plan_must_tabulate_both_levels(dataset, tmp_path):
    dataset.persons = random_persons(100)
    dataset.config = base_config(**{f"privacy_budget_p_level_{i}_{g}": 0.0 for i in (1, 2)
                                    for g in ("county", "pr_county")})
    dataset.write()
    with pytest.raises(ValueError, match="needs the plan to tabulate STATE and COUNTY"):
        run(dataset.params, dataset.data, tmp_path / "o", seed=1, invariant="STATE")


def test_an_invariant_is_never_held_for_one_run_only(dataset, tmp_path, capsys):
    """US county budgets 0, Puerto Rico's on: --invariant STATE used to hold PR-STATE and
    PR-COUNTY only and exit 0; it is refused, naming the run whose level is missing."""
    dataset.persons = random_persons(100)
    dataset.config = base_config(**{f"privacy_budget_p_level_{i}_county": 0.0 for i in (1, 2)})
    dataset.write()
    out = tmp_path / "o"
    code = main(["run", str(dataset.params), str(dataset.data), str(out), "--invariant", "STATE", "--seed", "3",
                 "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    assert "--invariant STATE would be held for one run only: the US run is on but the plan does not tabulate " \
           "its COUNTY level" in err
    assert not out.exists()
    # the accuracy study refuses it the same way, writing nothing
    assert main(["accuracy", str(dataset.params), str(dataset.data), str(out), "--invariant", "STATE", "--seed", "3",
                 "--quiet"]) == 2
    assert "the US run is on" in capsys.readouterr().err and not out.exists()
    # with the US run off, it is held for Puerto Rico, the only run
    dataset.config = base_config(run_us=False, **{f"privacy_budget_p_level_{i}_county": 0.0 for i in (1, 2)})
    dataset.write()
    assert main(["run", str(dataset.params), str(dataset.data), str(out), "--invariant", "STATE", "--seed", "3",
                 "--quiet"]) == 0
    held = json.loads((out / "manifest.json").read_text())["postprocessing"]["invariant"]["held"]
    assert "PR-STATE" in json.dumps(held) and '"STATE"' not in json.dumps(held)
