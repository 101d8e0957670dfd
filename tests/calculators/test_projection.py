"""calculators.projection: the laws, the per-size figures against the calculators' own
single-group functions, the profile format and its checks, totals and notes."""

from __future__ import annotations

import gzip
import json
import math

import numpy as np
import pandas as pd
import pytest

from calculators import adaptive, discrete_gaussian as dg, geometric, presets, suppression
from calculators import projection as P
from calculators.config import SafeTabConfig
from calculators.levels import POPULATION_GROUP_LEVELS, PopulationGroupLevel

COUNTY2 = PopulationGroupLevel("COUNTY", 2)
USA2 = PopulationGroupLevel("USA", 2)


def _pmf(scale: float, noise: str, K: int) -> tuple[np.ndarray, np.ndarray]:
    k = np.arange(-K, K + 1)
    return k, (dg if noise == "gaussian" else geometric).pmf(k, scale)


# ------------------------------------------------------------------ laws
@pytest.mark.parametrize("scale,noise", [(0.3, "gaussian"), (2.343, "gaussian"), (31.4, "gaussian"),
                                         (5625.0, "gaussian"), (2.5e8, "gaussian"), (0.7, "geometric"), (600.0, "geometric"),
                                         (18.0, "geometric")])
def test_law_tables_match_direct_sums(scale, noise):
    law = P._law_table(scale, noise)
    sd = math.sqrt(scale) if noise == "gaussian" else scale
    K = int(50 * sd) + 50 if sd < 1e3 else None
    args = np.unique(np.round(np.linspace(-6 * sd - 3, 6 * sd + 3, 41))).astype(np.int64)
    ref_cdf = (dg if noise == "gaussian" else geometric).cdf(args, scale)
    np.testing.assert_allclose(law.cdf(args), ref_cdf, rtol=1e-9, atol=1e-300)
    if K is None:
        return
    k, p = _pmf(scale, noise, K)
    for a in args[::4]:
        above = k > a
        np.testing.assert_allclose(law.abs1(np.array([a])), (np.abs(k) * p)[above].sum(), rtol=1e-9, atol=1e-300)
        np.testing.assert_allclose(law.sq(np.array([a])), (k * k * p)[above].sum(), rtol=1e-9, atol=1e-300)
    assert law.variance == pytest.approx((k * k * p).sum(), rel=1e-10)


def test_the_deep_tail_keeps_its_relative_accuracy():
    law = P._law_table(31.4, "gaussian")
    far = np.array([-150, -200])
    np.testing.assert_allclose(law.cdf(far), dg.cdf(far, 31.4), rtol=1e-9)
    assert 0 < law.cdf(far)[1] < 1e-250


@pytest.mark.parametrize("noise", ["gaussian", "geometric"])
@pytest.mark.parametrize("scale", [0.4, 3.0, 40.0])
@pytest.mark.parametrize("cells", [1, 8, 46])
def test_mean_absolute_error_of_a_sum_of_cells_is_exact(noise, scale, cells):
    """Against E|S| summed over the law of S: the pmf (cut at K, beyond 80 sd) convolved
    with itself `cells` times. The convolution power is taken through the FFT on a grid
    that holds the whole support of S (cells * (2K + 1) points, so nothing wraps round):
    equal to the repeated direct convolution within 1e-11 relative here, far inside the
    1e-9 asserted, where 45 direct convolutions of the 6,561-point geometric law (scale
    40) over the deep tail's subnormal numbers took 20 s."""
    K = int(80 * (math.sqrt(scale) if noise == "gaussian" else scale)) + 80
    _, p = _pmf(scale, noise, K)
    width = cells * (2 * K + 1) - (cells - 1)  # the support of S: -cells K .. cells K
    n = 1 << (width - 1).bit_length()
    q = np.fft.irfft(np.fft.rfft(p, n) ** cells, n)[:width]
    k = np.arange(width) - cells * K
    assert P._mean_abs_sum(scale, cells, noise) == pytest.approx(float(np.abs(k) @ q), rel=1e-9)


def test_mean_absolute_error_of_huge_scales_is_the_normal_one():
    for s2 in (1e6, 1e12):
        assert P._mean_abs_sum(s2, 46, "gaussian") == pytest.approx(math.sqrt(2 / math.pi * 46 * s2), rel=1e-8)


# ------------------------------------------------------------------ per group, against the single-group calculators
def _profile(sizes_by_level: dict, total_only: dict | None = None, r: int = 8, synthetic: bool = True) -> P.Profile:
    levels = {}
    total_only = total_only or {}
    for lvl, sizes in sizes_by_level.items():
        to = total_only.get(lvl, [])
        its = len(sizes) + len(to)
        levels[lvl] = P.LevelProfile(lvl, 1, its, len(to), tuple(max(2, k) + 1 for k in range(1, 9)),
                                     P.SizeHistogram.of(sizes), P.SizeHistogram.of(to))
    persons = 10**6
    return P.Profile("test", persons, persons, 0, synthetic, r, True, False, ("06",), levels)


def _brute_force(config: SafeTabConfig, level: PopulationGroupLevel, sizes, to_sizes=()) -> dict:
    """Every figure from the calculators' single-group functions, summed group by group."""
    from calculators import budget, noise_family

    S = max(2, config.max_race_codes) + 1
    noise = noise_family.family_of(config.privacy_defn)
    rho, g = config.rho_exact(level), config.gamma_exact
    s1 = float(budget.noise_scale_exact(rho, S, g, noise))
    s2 = budget.noise_scale_exact(rho, S, 1 - g, noise)
    T = None
    if config.zero_suppression_chance > 0 and not level.is_state_or_above:
        T = suppression.threshold(s2, config.zero_suppression_chance, noise=noise)
    out = dict.fromkeys(("total_only", "age4", "age9", "age23", "suppressed", "t1_rows", "t2_rows"), 0.0)
    for n in sizes:
        p = adaptive.stat_level_probabilities(n, config.thresholds(level), s1, noise)
        q = float(suppression.suppression_probability(n, T, float(s2), noise))
        out["total_only"] += p[0]
        out["age4"] += p[1]
        out["age9"] += p[2]
        out["age23"] += p[3]
        out["suppressed"] += p[0] * q
        out["t1_rows"] += 1 - p[0] * q
        out["t2_rows"] += 10 * p[1] + 20 * p[2] + 48 * p[3]
    out["total_only"] += len(to_sizes)
    out["t1_rows"] += len(to_sizes)
    return out


@pytest.mark.parametrize("defn", ["zcdp", "puredp"])
def test_figures_equal_the_sum_of_single_group_probabilities(defn):
    rng = np.random.default_rng(5)
    sizes = np.concatenate([rng.integers(0, 60, 300), rng.integers(900, 1100, 200), rng.integers(4000, 30000, 50),
                            [971, 970, 972, 4971, 19971, 0, 0, 0]])
    config = presets.production_2020().updated(privacy_defn=defn)
    proj = P.project(config, _profile({COUNTY2: sizes}))
    row = proj.row(COUNTY2)
    ref = _brute_force(config, COUNTY2, sizes)
    for col, value in ref.items():
        assert row[col] == pytest.approx(value, rel=1e-9, abs=1e-9), col
    assert row["groups"] == len(sizes)
    assert row["total_only"] + row["age4"] + row["age9"] + row["age23"] == pytest.approx(len(sizes), rel=1e-12)


def test_total_only_groups_are_one_total_never_suppressed():
    config = presets.production_2020()
    proj = P.project(config, _profile({USA2: [5, 500, 5000]}, total_only={USA2: [0, 7, 123456]}))
    row = proj.row(USA2)
    ref = _brute_force(config, USA2, [5, 500, 5000], [0, 7, 123456])
    for col, value in ref.items():
        assert row[col] == pytest.approx(value, rel=1e-9, abs=1e-9), col
    assert row["groups"] == 6 and row["suppressed"] == 0


def test_standard_deviations_are_those_of_independent_groups():
    config = presets.production_2020()
    sizes = [965, 971, 980, 4950, 5000, 19960]
    row = P.project(config, _profile({COUNTY2: sizes})).row(COUNTY2)
    s1 = float(P._scales(config, COUNTY2, 9).stage1)
    p = np.array([adaptive.stat_level_probabilities(n, config.thresholds(COUNTY2), s1) for n in sizes])
    assert row["age9_sd"] == pytest.approx(math.sqrt((p[:, 2] * (1 - p[:, 2])).sum()), rel=1e-9)
    rows = p @ np.array([0, 10, 20, 48])
    var = (p @ np.array([0, 100, 400, 48 * 48]) - rows**2).sum()
    assert row["t2_rows_sd"] == pytest.approx(math.sqrt(var), rel=1e-9)
    assert row["groups_sd"] == 0


def test_mean_absolute_error_of_totals_without_tables():
    """Thresholds out of reach: every group publishes a total; the error is exact sums."""
    config = presets.production_2020()
    tp = dict(config.thresholds_p)
    tp[COUNTY2.key] = [10**12] * 3
    for p_supp, clamp in ((0.0, False), (0.0, True), (0.9999, False), (0.9999, True)):
        cfg = config.updated(thresholds_p=tp, zero_suppression_chance=p_supp, allow_negative_counts=not clamp)
        sizes = [0, 3, 11, 40]
        row = P.project(cfg, _profile({COUNTY2: sizes})).row(COUNTY2)
        sc = P._scales(cfg, COUNTY2, 9)
        k, pm = _pmf(sc.stage2, "gaussian", 400)
        num = den = 0.0
        for n in sizes:
            pub = (k > sc.threshold - n) if sc.threshold is not None else np.ones(len(k), bool)
            err = np.maximum(k, -n) if clamp else k
            num += (np.abs(err) * pm)[pub].sum()
            den += pm[pub].sum()
        assert row["mean_abs_error"] == pytest.approx(num / den, rel=1e-9), (p_supp, clamp)
        assert row["t1_rows"] == pytest.approx(den, rel=1e-9)


def test_mean_absolute_error_of_tables_is_that_of_a_sum_of_cells():
    config = presets.production_2020()
    tp = dict(config.thresholds_p)
    tp[COUNTY2.key] = [-10**12] * 3  # every group gets sex x age23
    row = P.project(config.updated(thresholds_p=tp), _profile({COUNTY2: [0, 5, 100000]})).row(COUNTY2)
    s2 = P._scales(config, COUNTY2, 9).stage2
    assert row["age23"] == pytest.approx(3)
    assert row["mean_abs_error"] == pytest.approx(P._mean_abs_sum(s2, 46, "gaussian"), rel=1e-12)
    # with identical groups the spread is that of the mean of 3 independent |sums of 46 cells|
    sd1 = math.sqrt(46 * dg.variance(s2) - P._mean_abs_sum(s2, 46, "gaussian") ** 2)
    assert row["mean_abs_error_sd"] == pytest.approx(sd1 / math.sqrt(3), rel=1e-9)


def test_clamped_tables_give_an_upper_bound_of_the_error():
    """Counts clamped at 0: a table's total is the sum of clamped cells, so the level's mean
    |error| is the bound E|X_1 + ... + X_46| + 46 E|X| / 2, marked as a bound, without an SD;
    a level without tables stays exact."""
    config = presets.production_2020().updated(allow_negative_counts=False)
    tp = dict(config.thresholds_p)
    tp[COUNTY2.key] = [-10**12] * 3  # every group gets sex x age23
    row = P.project(config.updated(thresholds_p=tp), _profile({COUNTY2: [0, 5, 100000]})).row(COUNTY2)
    s2 = P._scales(config, COUNTY2, 9).stage2
    k, pm = _pmf(s2, "gaussian", 400)
    e_abs = float((np.abs(k) * pm).sum())
    assert row["mean_abs_error_bound"] is True and math.isnan(row["mean_abs_error_sd"])
    assert row["mean_abs_error"] == pytest.approx(P._mean_abs_sum(s2, 46, "gaussian") + 46 * e_abs / 2, rel=1e-9)
    # the bound holds for the worst table (all cells 0), by simulation of the clamped cells
    rng = np.random.default_rng(0)
    x = rng.choice(k, size=(20000, 46), p=pm / pm.sum())
    assert np.abs(np.maximum(x, 0).sum(axis=1)).mean() <= row["mean_abs_error"]
    tp[COUNTY2.key] = [10**12] * 3  # no tables: exact, with its SD
    row = P.project(config.updated(thresholds_p=tp), _profile({COUNTY2: [0, 5, 100000]})).row(COUNTY2)
    assert row["mean_abs_error_bound"] is False and row["mean_abs_error_sd"] > 0
    unclamped = P.project(presets.production_2020(), _profile({COUNTY2: [0, 5, 100000]})).row(COUNTY2)
    assert unclamped["mean_abs_error_bound"] is False


def test_totals_add_the_levels_up():
    config = presets.production_2020()
    prof = _profile({COUNTY2: [0, 900, 1000, 5000], USA2: [10, 10000]}, total_only={USA2: [3]})
    proj = P.project(config, prof)
    for col in P.COUNT_COLUMNS:
        assert proj.total[col] == pytest.approx(sum(r[col] for r in proj.rows))
        assert proj.total[f"{col}_sd"] == pytest.approx(math.sqrt(sum(r[f"{col}_sd"] ** 2 for r in proj.rows)))
    w = [r["t1_rows"] for r in proj.rows]
    assert proj.total["mean_abs_error"] == pytest.approx(
        sum(r["mean_abs_error"] * x for r, x in zip(proj.rows, w)) / sum(w))
    df = proj.frame()
    assert list(df.columns) == list(P.COLUMNS)
    assert df.iloc[-1]["geo"] == "TOTAL" and df["iteration_level"].isna().iloc[-1]


def test_notes_say_what_the_projection_cannot_do():
    config = presets.production_2020()
    proj = P.project(config.updated(max_race_codes=3, allow_negative_counts=False),
                     _profile({COUNTY2: [1, 2]}, r=8))
    text = " ".join(proj.notes)
    assert "Coterminous copying is ignored" in text
    # the Tabulation System's Alone > AOIC rule compares two noisy counts: not modelled, and said
    assert P.TABULATION_SUPPRESSION_NOTE in proj.notes and "is not modelled" in P.TABULATION_SUPPRESSION_NOTE
    assert "r = 8" in text and "r = 3" in text
    assert "(USA, 2)" in text  # tabulated by the plan, absent from the profile
    assert "clamped" in text
    assert [r["geo"] for r in proj.rows] == ["COUNTY"]
    # the plan's r sets S (S = 4 at r = 3) exactly
    assert P._scales(config.updated(max_race_codes=3), COUNTY2, 4).stage2 == pytest.approx(
        4 / (2 * 0.9 * 0.159))


def test_a_profile_whose_stability_differs_from_the_planners_says_so():
    """The planner's MOEs assume S = max(2, r) + 1; a profile counted with other spec files
    may have another S, which the projection uses: a note says where."""
    import dataclasses

    config = presets.production_2020()
    prof = _profile({COUNTY2: [1, 2, 50]})
    assert not any("S = " in n for n in P.project(config, prof).notes)
    lp = prof.levels[COUNTY2]
    prof.levels[COUNTY2] = dataclasses.replace(lp, stability=tuple(s + 2 for s in lp.stability))
    text = " ".join(P.project(config, prof).notes)
    assert "S = 11 at (COUNTY, 2), where the planner's MOEs assume S = max(2, r) + 1 = 9" in text


def test_no_binning_can_serve_every_plan():
    """Why the profile keeps every size: merging two sizes moves a figure by 100 %."""
    config = presets.production_2020()
    tp = dict(config.thresholds_p)
    tp[COUNTY2.key] = [1, 2, 1001]
    cfg = config.updated(thresholds_p=tp, privacy_budget_p_level_2_county=1e6)
    exact = P.project(cfg, _profile({COUNTY2: [1000, 1001]})).row(COUNTY2)["age23"]
    merged = P.project(cfg, _profile({COUNTY2: [1000, 1000]})).row(COUNTY2)["age23"]
    assert exact == pytest.approx(1.0) and merged == pytest.approx(0.0, abs=1e-12)


def test_the_distinct_size_bound_is_tight():
    """Sizes 0, 1, ..., 100 take 5,050 person-memberships: 101 distinct sizes, the bound."""
    assert P.max_distinct_sizes(5050, 1) == 101 == len(np.unique(np.arange(101)))
    assert P.max_distinct_sizes(330_000_000, 9) == 77_072


# ------------------------------------------------------------------ the profile format
def test_profile_round_trips_and_compresses():
    prof = _profile({COUNTY2: [0, 0, 3, 1000, 5], USA2: [7]}, total_only={USA2: [2, 2]})
    text = prof.to_json()
    back = P.Profile.parse(text)
    assert back.levels[COUNTY2].adaptive.sizes.tolist() == [0, 3, 5, 1000]
    assert back.levels[COUNTY2].adaptive.counts.tolist() == [2, 1, 1, 1]
    assert back.levels[USA2].total_only.counts.tolist() == [2]
    assert P.Profile.parse(prof.to_bytes(compressed=True)).to_json() == text
    assert json.loads(text)["confidential"] is False and back.synthetic
    real = _profile({COUNTY2: [1]}, synthetic=False)
    d = json.loads(real.to_json())
    assert d["confidential"] is True and d["notice"].startswith("CONFIDENTIAL")


def _bad(mutate) -> str:
    d = json.loads(_profile({COUNTY2: [0, 4, 9]}).to_json())
    mutate(d)
    with pytest.raises(P.ProfileError) as info:
        P.Profile.parse(json.dumps(d), "x.json")
    return str(info.value)


@pytest.mark.parametrize("mutate,words", [
    (lambda d: d.update(kind="something else"), "not a group-size profile"),
    (lambda d: d["levels"]["(COUNTY, 2)"]["adaptive"].update(counts=[1, -1, 1]), "counts must hold numbers"),
    (lambda d: d["levels"]["(COUNTY, 2)"]["adaptive"].update(counts=[1, 1.5, 1]), "whole numbers"),
    (lambda d: d["levels"]["(COUNTY, 2)"]["adaptive"].update(counts=[1, True, 1]), "whole numbers"),
    (lambda d: d["levels"]["(COUNTY, 2)"]["adaptive"].update(size_steps=[0, 4, 0]), "strictly increasing"),
    (lambda d: d["levels"]["(COUNTY, 2)"]["adaptive"].update(counts=[1, 1, 2]), "add up to 4"),
    (lambda d: d["levels"]["(COUNTY, 2)"].update(regions="1"), "regions must be a whole number"),
    (lambda d: d["levels"].update({"(COUNTY, 9)": {}}), "not a population group level"),
    (lambda d: d["data"].update(persons=10**20), "data.persons must be from"),
    (lambda d: d.update(confidential=True), "opposite of synthetic"),
    (lambda d: d["levels"]["(COUNTY, 2)"].update(stability_by_r=[9] * 7), "stability_by_r"),
    (lambda d: d.update(levels={}), "levels is empty"),
    # one level twice, spelt two ways: refused, not one of them silently kept
    (lambda d: d["levels"].update({"(COUNTY,2)": d["levels"]["(COUNTY, 2)"]}),
     'levels: "(COUNTY,2)" is (COUNTY, 2) again'),
    # more entries than levels: the ones that are not levels are named
    (lambda d: d.update(levels={**{lvl.key: {} for lvl in POPULATION_GROUP_LEVELS}, "(MARS, 1)": {}}),
     'levels lists 21 entries; there are 20 levels; not a population group level: "(MARS, 1)"'),
    # a group larger than the data (a group holds each person once)
    (lambda d: d["levels"]["(COUNTY, 2)"]["adaptive"].update(size_steps=[0, 4, 10**12]),
     "levels.(COUNTY, 2): a group of 1,000,000,000,004 persons is larger than the data (data.persons_us = "),
    # groups holding more persons than S x persons (each person is in at most S groups of a level)
    (lambda d: (d["levels"]["(COUNTY, 2)"].update(iterations=12),
                d["levels"]["(COUNTY, 2)"]["adaptive"].update(size_steps=[0, 4, 999_000], counts=[1, 1, 10])),
     "levels.(COUNTY, 2): its groups hold 9,990,044 persons in all, more than S x persons = 9 x 1,000,000"),
    # the parameters it was counted with: real state codes, each once; levels of the runs that were on
    (lambda d: d["params"].update(state_filter_us=["ab", ""]), "params.state_filter_us must list US state FIPS"),
    (lambda d: d["params"].update(state_filter_us=["06", "06"]), "each once"),
    (lambda d: d["params"].update(run_us=False), "levels.(COUNTY, 2): the profile's params.run_us is false"),
    # one region at USA and PR-STATE, at most the state filter's states at STATE
    (lambda d: d["levels"].update({"(USA, 2)": {**d["levels"]["(COUNTY, 2)"], "regions": 2,
                                                 "adaptive": {"size_steps": [0, 4, 5], "counts": [2, 2, 2]}}}),
     "levels.(USA, 2): 2 regions; there is 1"),
    (lambda d: d["levels"].update({"(STATE, 2)": {**d["levels"]["(COUNTY, 2)"], "regions": 2,
                                                 "adaptive": {"size_steps": [0, 4, 5], "counts": [2, 2, 2]}}}),
     "levels.(STATE, 2): 2 regions; there are at most 1 (params.state_filter_us)"),
])
def test_bad_profiles_are_refused_naming_the_field(mutate, words):
    assert words in _bad(mutate)
    assert _bad(mutate).startswith("x.json: ")


def test_not_json_not_finite_and_too_large_are_refused():
    with pytest.raises(P.ProfileError, match="not valid JSON"):
        P.Profile.parse(b"{nope", "x")
    text = _profile({COUNTY2: [0, 4]}).to_json().replace('"persons": 1000000', '"persons": NaN')
    with pytest.raises(P.ProfileError, match="finite"):
        P.Profile.parse(text, "x")
    with pytest.raises(P.ProfileError, match="not UTF-8"):
        P.Profile.parse(b"\xff\xfe\x00", "x")
    bomb = gzip.compress(b" " * (P.MAX_PROFILE_BYTES + 10))
    with pytest.raises(P.ProfileError, match="decompresses to more than"):
        P.Profile.parse(bomb, "x")
    twice = _profile({COUNTY2: [0, 4]}).to_json().replace('"persons": 1000000,', '"persons": 1000000, "persons": 7,', 1)
    assert '"persons": 7' in twice
    with pytest.raises(P.ProfileError, match='the key "persons" appears more than once'):  # not the last one kept
        P.Profile.parse(twice, "x")
    with pytest.raises(P.ProfileError, match="nested too deeply"):
        P.Profile.parse("[" * 100_000 + "]" * 100_000, "x")
    with pytest.raises(P.ProfileError, match="damaged|cut short"):
        P.Profile.parse(gzip.compress(b"{}")[:-6], "x")


def test_every_level_of_a_profile_is_projected_when_the_plan_tabulates_it():
    config = presets.production_2020()
    prof = _profile({lvl: [0, 5, 50] for lvl in POPULATION_GROUP_LEVELS})
    proj = P.project(config, prof)
    assert [(r["geo"], r["iteration_level"]) for r in proj.rows] == [tuple(lvl) for lvl in config.tabulated_levels()]


def test_sizes_beyond_every_reach_share_one_evaluation_exactly(monkeypatch):
    """`_compress` is not a binning: on the national profile every figure is the same
    (to rounding) as with every size evaluated alone, for plans of every kind."""
    from pathlib import Path

    raw = (Path(__file__).resolve().parents[2] / "sample_data" / "profiles" / "nation330.profile.json.gz").read_bytes()
    nat = P.Profile.parse(raw)
    base = presets.production_2020()
    plans = [base, base.updated(privacy_defn="puredp"),
             base.updated(allow_negative_counts=False, zero_suppression_chance=0.3),
             base.updated(privacy_budget_p_stage_1_fraction=0.5, max_race_codes=2)]
    compressed = []
    for cfg in plans:
        P._level_figures_cached.cache_clear()
        compressed.append(P.project(cfg, nat).frame())
    monkeypatch.setattr(P, "_compress", lambda sizes, counts, windows: (sizes, counts))
    for cfg, a in zip(plans, compressed):
        P._level_figures_cached.cache_clear()
        b = P.project(cfg, nat).frame()
        num = [c for c in P.COLUMNS[2:]]
        np.testing.assert_allclose(a[num].to_numpy(float), b[num].to_numpy(float), rtol=1e-11, atol=1e-9)
    P._level_figures_cached.cache_clear()


def test_compress_keeps_the_windows_and_one_size_per_stretch():
    n, c = P._compress(np.arange(0, 100000, 7), np.ones(14286, np.int64), [(990, 1010)])
    assert n.tolist() == [0, 994, 1001, 1008, 1015] and c.sum() == 14286 and c[0] == 142


def test_a_profile_no_longer_held_is_freed_with_its_figures():
    """The figures kept so that a control change recomputes only the levels it changes are
    kept with each level: a profile nobody holds any more (an upload replaced, a session
    closed) is freed, however many plans were projected on it; a profile still held keeps
    them (the same figures, not recomputed)."""
    import gc
    import weakref

    config = presets.production_2020()
    kept = _profile({COUNTY2: [0, 5, 50, 5000]})
    first = P.project(config, kept).frame()
    refs = []
    for k in range(5):
        prof = _profile({COUNTY2: [0, 5, 50, 5000 + k]})
        for rho in (0.1, 0.2, 0.3):
            P.project(config.with_rho(COUNTY2, rho), prof)
        refs.append(weakref.ref(prof.levels[COUNTY2]))
        del prof
    gc.collect()
    assert [r() for r in refs] == [None] * 5
    calls = []
    real = P._level_figures_of
    try:
        P._level_figures_of = lambda *a: calls.append(a) or real(*a)
        again = P.project(config, kept).frame()
    finally:
        P._level_figures_of = real
    assert not calls  # still held: its figures were kept
    pd.testing.assert_frame_equal(first, again)


@pytest.mark.parametrize("defn", ["zcdp", "puredp"])
def test_occupancy_split_equals_group_by_group_sums(defn):
    """Issue 40 item 1: the figures about groups that exist, and the persons' shares, are the
    sums over groups of the single-group probabilities, weighted by n >= 1, n = 0 or n."""
    from calculators import budget, noise_family

    sizes = np.array([0, 0, 0, 0, 1, 2, 3, 5, 8, 13, 40, 90, 200, 971, 4000, 30000])
    config = presets.production_2020().updated(privacy_defn=defn)
    row = P.project(config, _profile({COUNTY2: sizes})).row(COUNTY2)
    noise = noise_family.family_of(defn)
    S = max(2, config.max_race_codes) + 1
    s1 = float(budget.noise_scale_exact(config.rho_exact(COUNTY2), S, config.gamma_exact, noise))
    s2 = budget.noise_scale_exact(config.rho_exact(COUNTY2), S, 1 - config.gamma_exact, noise)
    T = suppression.threshold(s2, config.zero_suppression_chance, noise=noise)
    want = dict.fromkeys(("occupied_published", "occupied_suppressed", "occupied_with_table", "occupied_age4",
                          "occupied_age9", "occupied_age23", "empty_published", "pp", "pt"), 0.0)
    for n in sizes:
        p = adaptive.stat_level_probabilities(int(n), config.thresholds(COUNTY2), s1, noise)
        sup = p[0] * float(suppression.suppression_probability(int(n), T, float(s2), noise))
        if n == 0:
            want["empty_published"] += 1 - sup
            continue
        want["occupied_published"] += 1 - sup
        want["occupied_suppressed"] += sup
        want["occupied_with_table"] += 1 - p[0]
        for j, a in ((1, 4), (2, 9), (3, 23)):
            want[f"occupied_age{a}"] += p[j]
        want["pp"] += n * (1 - sup)
        want["pt"] += n * (1 - p[0])
    assert row["occupied"] == 12
    for col in ("occupied_published", "occupied_suppressed", "occupied_with_table", "occupied_age4",
                "occupied_age9", "occupied_age23", "empty_published"):
        assert row[col] == pytest.approx(want[col], rel=1e-9, abs=1e-9), col
    assert row["persons_published_share"] == pytest.approx(want["pp"] / sizes.sum(), rel=1e-9)
    assert row["persons_with_table_share"] == pytest.approx(want["pt"] / sizes.sum(), rel=1e-9)
    # the split adds up: published + suppressed = occupied; empty + occupied published = T1 rows
    assert row["occupied_published"] + row["occupied_suppressed"] == pytest.approx(12)
    assert row["occupied_published"] + row["empty_published"] == pytest.approx(row["t1_rows"])
    assert row["occupied_suppressed"] < row["suppressed"]  # the empty groups' suppressions are not counted


def test_total_only_groups_publish_and_count_as_occupied_or_empty():
    config = presets.production_2020()
    proj = P.project(config, _profile({USA2: [5, 500, 5000]}, total_only={USA2: [0, 7, 123456]}))
    row = proj.row(USA2)
    assert row["occupied"] == 5 and row["empty_published"] == pytest.approx(0 + 1)
    assert row["occupied_published"] == pytest.approx(5) and row["persons_published_share"] == pytest.approx(1.0)
    tot = proj.total
    assert tot["occupied"] == 5 and tot["persons_published_share"] == pytest.approx(1.0)
    # the columns of before come first, unchanged (a CSV reader by position keeps working)
    assert P.COLUMNS[:21] == ("geo", "iteration_level", *P.COUNT_COLUMNS, *(f"{c}_sd" for c in P.COUNT_COLUMNS),
                              "mean_abs_error", "mean_abs_error_sd", "mean_abs_error_bound")
    assert P.COLUMNS[21:] == ("occupied", *(x for c in P.OCCUPANCY_COLUMNS[1:] for x in (c, f"{c}_sd")),
                              "persons_published_share", "persons_published_share_sd",
                              "persons_with_table_share", "persons_with_table_share_sd")
