"""The Invariants page's computations (ui.compare.invariants), without Streamlit."""

from __future__ import annotations

import math
from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from calculators import budget, discrete_gaussian
from calculators.config import SafeTabConfig
from calculators.presets import production_2020
from ui.compare import invariants as ci

REPO = Path(__file__).resolve().parents[3]
SAMPLE = REPO / "sample_data"
needs_sample = pytest.mark.skipif(not (SAMPLE / "data" / "person-records.txt").is_file(),
                                  reason="sample_data/ is not there")


# ------------------------------------------------------------------------- custom tables
@pytest.mark.parametrize("text, want", [("14 x 24 x 20", (14, 24, 20)), ("102", (102,)), ("2×23", (2, 23)),
                                        (" 5, 8 ", (5, 8)), ("3*4*5", (3, 4, 5)), ("1e3", (1000,)),
                                        ("5 X 5", (5, 5))])
def test_parse_shape(text, want):
    assert ci.parse_shape(text) == want


@pytest.mark.parametrize("text, message", [
    ("", "The box is empty"), ("14 x a", "'a' is not a number: type a whole number from 1 to 5,000,000."),
    ("0 x 3", "'0' is below 1: type a whole number from 1 to 5,000,000."),
    ("-1", "'-1' is below 1"), ("2.5 x 3", "'2.5' is not a whole number"), ("²", "'²' is not a number"),
    ("1 x 1 x 1 x 1 x 1 x 1 x 1 x 1 x 1", "At most 8 axis lengths"), ("5000 x 5000", "at most 5,000,000"),
    ("7" * 5000, "is not a finite number")])
def test_parse_shape_errors_are_plain(text, message):
    with pytest.raises(ValueError, match=message) as err:
        ci.parse_shape(text)
    assert len(str(err.value)) < 120  # bounded, whatever was typed


def test_margin_options_and_labels():
    opts = ci.margin_options((14, 24, 20))
    assert opts[0] == () and opts[-1] == (0, 1, 2) and len(opts) == 8
    assert ci.margin_label((), (3, 4)) == "grand total"
    assert ci.margin_label((0, 2), (14, 24, 20)) == "axes 1 × 3: 280 sums"
    assert ci.margin_label((1,), (14, 24, 20)) == "axis 2: 24 sums"
    assert ci.margin_label((0, 1), (3, 4)) == "every cell (the whole table)"


def test_custom_study_paper_5_1_with_the_plan_noise():
    """The paper's 14 x 24 x 20 table with the noise of a COUNTY Detailed stage-2 cell."""
    s2 = float(budget.sigma2_stage2(0.159, 0.1, 9))
    study = ci.custom_study((14, 24, 20), [(0, 2), (1, 2)], s2, "gaussian")
    assert (study.cells, study.constraints, study.rank) == (6720, 760, 740)
    assert study.factor == Fraction(299, 336)
    assert study.check == {"rank": 740, "max_difference": pytest.approx(0, abs=1e-12)}
    u = float(discrete_gaussian.variance(s2))
    assert study.unit_variance == pytest.approx(u)
    assert study.variance_with == pytest.approx(u * 299 / 336)
    assert study.moe_with_normal == pytest.approx(1.96 * math.sqrt(u * 299 / 336))
    assert study.moe_plain_exact == int(discrete_gaussian.moe(s2)) == 11
    t = study.table()
    values = dict(zip(t["Figure"], t["Value"]))
    assert values["Expected total squared error, with invariants ((n − n_c) × variance)"].startswith("5,980 × ")
    assert values["Expected total squared error, SafeTab-P (n × variance)"].startswith("6,720 × ")
    verdict = ci.custom_verdict(study)
    assert "760 sums" in verdict and "740 independent" in verdict and "89.0%" in verdict


def test_custom_study_whole_table_pins_every_cell():
    study = ci.custom_study((3, 4), [(0, 1)], 10.0, "gaussian")
    assert study.factor == 0 and study.exact_cells == 12
    assert "whole table would be published exactly" in ci.custom_verdict(study)
    assert "Every cell is pinned" in ci.custom_disclosure(study)
    none = ci.custom_study((3, 4), [], 10.0, "gaussian")
    assert none.factor == 1 and "No invariant" in ci.custom_verdict(none)


def test_simulate_custom_matches_the_prediction():
    """Seeded exact discrete Gaussian noise, projected: the pooled cell variance is the
    predicted factor x Var within sampling error, and the margins are zero."""
    s2 = 31.4
    study = ci.custom_study((5, 8), [(0,), (1,)], s2, "gaussian")
    sim = ci.simulate_custom(study, s2, "gaussian", 4000, 7)
    assert sim["replications"] == 4000
    assert sim["max_margin"] < 1e-9
    # 4000 x 40 correlated draws: the mean variance is within 3% of the prediction.
    assert sim["var_plain"] == pytest.approx(study.unit_variance, rel=0.03)
    assert sim["var_with"] == pytest.approx(study.variance_with, rel=0.03)
    assert abs(sim["q95_plain"] - study.moe_plain_exact) <= 1
    assert sim["q95_with"] == pytest.approx(study.moe_with_normal, rel=0.05)
    t = ci.custom_simulation_table(study, sim)
    assert t.shape == (2, 5)
    # the same seed gives the same draws
    again = ci.simulate_custom(study, s2, "gaussian", 4000, 7)
    assert again["histogram"].equals(sim["histogram"])
    h = sim["histogram"]
    assert h["Share of cells, SafeTab-P"].sum() == pytest.approx(1)
    assert h["Share of cells, with invariants"].sum() == pytest.approx(1)
    # the projected noise is narrower: less mass beyond the plain MOE
    far = h["Error (persons, nearest whole number)"].abs() > study.moe_plain_exact
    assert h.loc[far, "Share of cells, with invariants"].sum() < h.loc[far, "Share of cells, SafeTab-P"].sum()


def test_simulate_custom_geometric_noise():
    from calculators import geometric

    study = ci.custom_study((102,), [()], 5.0, "geometric")
    assert study.unit_variance == pytest.approx(float(geometric.variance(5.0)))
    sim = ci.simulate_custom(study, 5.0, "geometric", 3000, 3)
    assert sim["var_with"] == pytest.approx(study.variance_with, rel=0.03)


def test_replications_are_bounded():
    assert ci.replications(2000, 6720) == ci.MAX_DRAWS // 6720
    assert ci.replications(2000, 3) == 2000
    assert ci.replications(10, 10**9) == 1


# ------------------------------------------------------------------------- SafeTab-P levels
@pytest.fixture(scope="module")
def sample_study():
    from engine.noise import RandomSource
    from engine.reports.levels import level_tables
    from engine.run import make_noise, prepare

    cfg = SafeTabConfig.read(SAMPLE / "params" / "config.json")
    prepared = prepare(SAMPLE / "params", SAMPLE / "data", config=cfg)
    tables = level_tables(prepared, make_noise(cfg.privacy_defn, RandomSource.seeded(5)))
    return prepared, tables


@needs_sample
def test_level_study_one_county_states_make_every_county_exact(sample_study):
    """On the sample every state holds one county: held to the state's true count, each
    county's count is the true count (factor 0), and every state total is revealed."""
    prepared, tables = sample_study
    study = ci.level_study(prepared, tables, "STATE", 2)
    g = study.groups
    assert set(g["Invariant"]) == {"COUNTY within STATE", "PR-COUNTY within PR-STATE"}
    assert (g["Regions in the parent"] == 1).all()
    assert (g["Variance factor"] == 0).all() and (g["MOE with (normal approx.)"] == 0).all()
    assert (g["True count"] == g["Parent true total"]).all()
    s = study.summary()
    # every state group of an iteration the counties tabulate (states are never suppressed)
    state = tables[next(k for k in tables if k.geo == "STATE" and k.iteration_level == 2)]
    county = tables[next(k for k in tables if k.geo == "COUNTY" and k.iteration_level == 2)]
    shared = len(set(state.codes) & set(county.codes))
    pr = tables[next(k for k in tables if k.geo == "PR-STATE" and k.iteration_level == 2)]
    prc = tables[next(k for k in tables if k.geo == "PR-COUNTY" and k.iteration_level == 2)]
    assert s["parent_totals"] == state.shape[0] * shared + pr.shape[0] * len(set(pr.codes) & set(prc.codes))
    assert s["parent_totals"] == s["child_exact"] == len(g)
    assert study.revealed()["Totals published exactly"].sum() == s["parent_totals"]
    assert "become the true counts" in ci.level_verdict(study)
    assert ci.families(study).empty


@needs_sample
def test_level_study_tracts_within_counties(sample_study):
    prepared, tables = sample_study
    study = ci.level_study(prepared, tables, "COUNTY", 2)
    g = study.groups
    t = tables[next(k for k in tables if k.geo == "TRACT" and k.iteration_level == 2)]
    c = tables[next(k for k in tables if k.geo == "COUNTY" and k.iteration_level == 2)]
    shared = [i for i, code in enumerate(t.codes) if code in set(c.codes)]
    # the touched tract groups: released (or the only tract of their county) under a released county
    tg = g[g["Invariant"] == "TRACT within COUNTY"]
    assert 0 < len(tg) <= t.truth[:, shared].size
    assert set(tg["Iteration"]) <= set(t.codes[shared])
    # factor 1 - v / W, W the family's sum of published variances
    W = tg.groupby(["Parent region", "Iteration"])["Variance without"].transform("sum")
    np.testing.assert_allclose(tg["Variance factor"], 1 - tg["Variance without"] / W)
    np.testing.assert_allclose(tg["Variance with"], tg["Variance without"] * tg["Variance factor"])
    # a family of two published tracts with equally noisy totals: factor exactly 1/2
    two = tg[W == 2 * tg["Variance without"]]
    assert len(two) and np.allclose(two["Variance factor"], 0.5)
    # parent totals are the counties' true counts
    fam = study.parents[study.parents["Invariant"] == "TRACT within COUNTY"]
    ci_ = {code: j for j, code in enumerate(c.codes)}
    regions = list(c.regions)
    want = [c.truth[regions.index(r), ci_[code]] for r, code in zip(fam["Parent region"], fam["Iteration"])]
    assert fam["Parent true total"].tolist() == want
    by_parent = study.by_parent()
    assert by_parent["Totals published exactly"].sum() == study.summary()["parent_totals"]
    assert study.by_table()["Counts"].sum() == len(g)


@needs_sample
def test_simulate_family_matches_the_prediction(sample_study):
    """The engine's weighted integer adjustment on seeded exact noise: the regions always
    add up to the total and each region's simulated variance lies between the
    projection's prediction and that plus the rounding allowance (within sampling error)."""
    prepared, tables = sample_study
    study = ci.level_study(prepared, tables, "COUNTY", 2)
    fams = ci.families(study)
    assert len(fams) and (fams["Published regions"] >= 2).all()
    row = fams.iloc[0]
    out, info = ci.simulate_family(study, prepared, tables, row["Parent region"], row["Iteration"], 2, 6000, 11)
    assert info["sums_exact"] and len(out) == row["Published regions"]
    assert info["replications"] == min(6000, ci.MAX_DRAWS // info["units"])
    lo = out["Var. with, predicted"] * 0.93
    hi = out["Var. with, + rounding (max)"] * 1.07
    assert ((out["Var. with, simulated"] > lo) & (out["Var. with, simulated"] < hi)).all()
    np.testing.assert_allclose(out["Var. SafeTab-P, simulated"], out["Var. SafeTab-P, predicted"], rtol=0.08)
    assert (out["Var. with, simulated"] < out["Var. SafeTab-P, simulated"]).all()
    with pytest.raises(ValueError, match="no published regions"):
        ci.simulate_family(study, prepared, tables, "nowhere", "x", 2, 100, 1)


@needs_sample
def test_level_study_under_the_production_plan(sample_study):
    """The app's default plan (production thresholds) on the sample: every group is a
    stat-level-0 total, so a county's factor is 1 - 1/(tracts inside)."""
    from engine.noise import RandomSource
    from engine.reports.levels import level_tables
    from engine.run import make_noise, prepare

    cfg = production_2020().updated(reader="csv")  # the sample's files, as the app reads them
    prepared = prepare(SAMPLE / "params", SAMPLE / "data", config=cfg)
    tables = level_tables(prepared, make_noise(cfg.privacy_defn, RandomSource.seeded(5)),
                          levels=[lvl for lvl in prepared.levels if lvl.geo in ("COUNTY", "TRACT", "PR-COUNTY",
                                                                                 "PR-TRACT")])
    study = ci.level_study(prepared, tables, "COUNTY", 2)
    g = study.groups
    assert (g["Published as"] == "total (stat level 0)").all()
    tg = g[g["Invariant"] == "TRACT within COUNTY"]
    n_pub = tg.groupby(["Parent region", "Iteration"])["Region"].transform("size")
    np.testing.assert_allclose(tg["Variance factor"], 1 - 1 / n_pub)
    assert "under 100 persons" in ci.level_verdict(study)
    assert "fewer than 100 persons" in ci.level_disclosure(study, "detailed")


@needs_sample
def test_level_study_agrees_with_the_engine_release(sample_study, tmp_path):
    """The page's study and `run --invariant STATE` with the same seed reveal the same
    number of true totals, and the engine publishes each county as the study says."""
    import json

    from engine.run import run

    prepared, tables = sample_study
    out = run(SAMPLE / "params", SAMPLE / "data", tmp_path / "o", seed=5, invariant="STATE",
              prepared=prepared).out_dir
    held = json.loads((out / "manifest.json").read_text())["postprocessing"]["invariant"]["held"]
    study = ci.level_study(prepared, tables, "STATE", 2)
    assert sum(h["totals_published_exactly"] for h in held if h["iteration_level"] == 2) == \
        study.summary()["parent_totals"]
    t1 = pd.concat([pd.read_csv(p, sep="|", dtype=str) for p in sorted((out / "t1").glob("*.csv"))])
    county = t1[t1.REGION_TYPE == "COUNTY"].set_index(["REGION_ID", "ITERATION_CODE"]).COUNT.astype(int)
    g = study.groups[study.groups["Invariant"] == "COUNTY within STATE"]
    got = county.loc[list(zip(g["Region"], g["Iteration"]))].to_numpy()
    np.testing.assert_array_equal(got, g["True count"].to_numpy())


def test_paper_numbers_match_the_papers_printed_figures():
    """Each computed figure equals the paper's within its printed precision (one unit of
    the last digit): 6,720 cells, rank 740, 0.88 (0.86, 0.91) as the variance factor's
    law, epsilon 0.192; the standard-deviation reading does not match."""
    from scipy.stats import chi2

    t = ci.paper_numbers().set_index("The paper says")
    assert t.loc["Query dimension, 14 × 24 × 20", "Computed here"] == "6,720"
    assert t.loc["Invariant dimension, (24 + 14 − 1) × 20", "Computed here"] == "740 (rank of C)"
    med = chi2.median(5980) / 6720
    assert abs(med - 0.88) <= 0.01 and abs(med - 299 / 336) < 1e-3
    assert abs(chi2.ppf(0.05, 5980) / 6720 - 0.86) <= 0.01 and abs(chi2.ppf(0.95, 5980) / 6720 - 0.91) <= 0.01
    assert abs(math.sqrt(med) - 0.88) > 0.05  # as a standard deviation it is 0.943
    assert (t.loc[["Query dimension, 14 × 24 × 20", "Invariant dimension, (24 + 14 − 1) × 20",
                   "Median 'standard deviation' of the errors (50 runs)", "… its 5% quantile", "… its 95% quantile",
                   "Budget ε = 4 (total) × 0.16 (county) × 0.3 (population)"], "Match"] == "yes").all()
    assert t.loc["The same figures read as standard deviations", "Match"] == "no"
    # Figure 1: the 48 regressions are one per state or territory with more than five counties (47 states and
    # Puerto Rico, left panel); Illinois is only the right panel, not "48 states".
    fig1 = t[t["Where"].str.startswith("§1, Fig. 1")]
    assert len(fig1) == 1 and fig1["Where"].iloc[0] == "§1, Fig. 1 (left)"
    said = fig1.index[0]
    assert "47 states and Puerto Rico" in said and "48 states" not in said and "Illinois is only the right panel" in said
    # The seeded rerun agrees with the exact law.
    rerun = float(t.loc["Median 'standard deviation' of the errors (50 runs)", "Computed here"].split("; ")[1].split()[0])
    assert abs(rerun - med) < 0.01
    m = ci.gaussian_multipliers().set_index(["ε", "δ"])
    assert m.loc[(1.0, 1e-5), "c, paper (Lemma 3.4)"] == pytest.approx(4.5374, abs=5e-5)
    assert m.loc[(0.5, 1e-5), "c, paper (Lemma 3.4)"] == pytest.approx(9.0747, abs=5e-5)
    assert m.loc[(2.0, 1e-5), "σ of e_N, total of 5 cells, paper"] == pytest.approx(4.5374 / 2 * math.sqrt(2), abs=1e-3)
