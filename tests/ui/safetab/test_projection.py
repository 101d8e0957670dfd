"""ui.safetab.projection: the memo's helper, the page tables, the scale words, uploads."""

from __future__ import annotations

import gzip
import json

import pandas as pd
import pytest

from calculators import plan as pm
from calculators import projection as P
from calculators.levels import PopulationGroupLevel
from calculators.presets import production_2020
from ui.safetab import projection as pj

COUNTY2 = PopulationGroupLevel("COUNTY", 2)


def test_national_outcome_is_the_memo_helper():
    cfg = production_2020()
    df = pj.national_outcome(cfg)
    nat = pj.shipped(pj.NATIONAL)
    assert isinstance(df, pd.DataFrame)
    assert list(df.columns[:3]) == ["geo", "iteration_level", "level"]
    assert set(P.COLUMNS) <= set(df.columns)
    assert df["level"].iloc[-1] == "All levels" and df["geo"].iloc[-1] == "TOTAL"
    assert len(df) == len(cfg.tabulated_levels()) + 1
    want = P.project(cfg, nat).frame()
    pd.testing.assert_frame_equal(df.drop(columns="level"), want)
    assert df.attrs["profile"] == nat.name and df.attrs["synthetic"] and not df.attrs["confidential"]
    assert df.attrs["persons"] == nat.persons and any("Coterminous" in n for n in df.attrs["notes"])
    sample = pj.shipped(pj.SAMPLE)
    assert pj.national_outcome(cfg, sample).attrs["profile"] == sample.name


def test_shipped_profiles_are_read_once():
    a, b = pj.shipped(pj.NATIONAL), pj.shipped(pj.NATIONAL)
    assert a is b
    assert set(pj.available()) == {pj.NATIONAL, pj.SAMPLE}


def test_display_table_rounds_and_totals():
    proj = P.project(production_2020(), pj.shipped(pj.SAMPLE))
    t = pj.display_table(proj)
    r = proj.row(COUNTY2)
    row = t[t[pj.LEVEL] == "COUNTY Detailed"].iloc[0]
    assert row[pj.LABELS["tables"]] == round(r["age4"] + r["age9"] + r["age23"])
    assert row[pj.LABELS["suppressed"]] == round(r["suppressed"])
    assert row[pj.LABELS["mean_abs_error"]] == round(r["mean_abs_error"], 1)
    assert t[pj.LEVEL].iloc[-1] == "All levels"
    assert t[pj.LABELS["groups"]].iloc[-1] == round(proj.total["groups"])
    only = pj.display_table(proj, ("suppressed",))
    assert list(only.columns) == [pj.LEVEL, pj.LABELS["suppressed"]]


def test_scale_words_explain_the_difference_with_the_sample():
    cfg = production_2020()
    nat = P.project(cfg, pj.shipped(pj.NATIONAL))
    smp = P.project(cfg, pj.shipped(pj.SAMPLE))
    words = pj.scale_notes(nat, smp)
    assert words and "the plan is the same, the groups are not" in words[0] and "(scale)" in words[0]
    assert "median non-empty group" in words[1] and "nationally" in words[1] and "in the sample" in words[1]
    # the nation's groups are not simply larger: some of its levels have smaller median groups
    # (more detailed race and ethnicity groups), and the explanation says both
    assert "larger where" in words[0] and "smaller where" in words[0] and "groups are larger," not in words[0]
    assert pj.scale_notes(smp, smp) == []  # the same nation: nothing to explain


def test_compare_plans_marks_the_levels_that_differ():
    prof = pj.shipped(pj.SAMPLE)
    a = production_2020()
    b = a.with_thresholds(COUNTY2, [1, 2, 3])
    df = pj.compare_plans([("A", a), ("B", b)], prof, "age23")
    row = df[df[pj.LEVEL] == "COUNTY Detailed"].iloc[0]
    assert row["B"] > row["A"] and row["Differs"]
    assert not df[df[pj.LEVEL] == "USA Detailed"].iloc[0]["Differs"]
    c = a.updated(privacy_budget_p_level_2_county=0)
    df = pj.compare_plans([("A", a), ("C", c)], prof, "tables")
    row = df[df[pj.LEVEL] == "COUNTY Detailed"].iloc[0]
    assert pd.isna(row["C"]) and row["Differs"]  # C does not tabulate the level


def test_uploads_are_bounded_and_checked():
    good = pj.shipped(pj.SAMPLE).to_bytes(compressed=True)
    assert pj.read_upload(good, "x.json.gz").persons == 50_000
    with pytest.raises(P.ProfileError, match="empty"):
        pj.read_upload(b"", "e.json")
    with pytest.raises(P.ProfileError, match="at most"):
        pj.read_upload(b" " * (pj.MAX_UPLOAD_BYTES + 1), "big.json")
    bad = json.loads(pj.shipped(pj.SAMPLE).to_json())
    bad["data"]["persons"] = -1
    with pytest.raises(P.ProfileError, match="data.persons"):
        pj.read_upload(gzip.compress(json.dumps(bad).encode()), "bad.json.gz")


def test_plain_shows_names_as_typed():
    assert pj.plain("a*b_[x](y) :tada:") == r"a\*b\_\[x\]\(y\) \:tada\:"
    assert "\\" not in pj.plain("Agency 2030")


def test_display_table_shows_the_change_from_the_reference():
    prof = pj.shipped(pj.SAMPLE)
    ref_cfg = production_2020()
    cfg = ref_cfg.with_thresholds(COUNTY2, [1, 2, 3])  # lower thresholds: more tables at COUNTY Detailed
    proj, ref = P.project(cfg, prof), P.project(ref_cfg, prof)
    t = pj.display_table(proj, ("tables", "suppressed"), ref)
    assert list(t.columns) == [pj.LEVEL, pj.LABELS["tables"], pj.LABELS["suppressed"], *pj.CHANGE_COLUMNS.values()]
    row = t[t[pj.LEVEL] == "COUNTY Detailed"].iloc[0]
    a, b = proj.row(COUNTY2), ref.row(COUNTY2)
    more = (a["age4"] + a["age9"] + a["age23"]) - (b["age4"] + b["age9"] + b["age23"])
    assert round(more) > 0 and row["Δ With table"] == "+" + f"{round(more):,}"
    published = a["t1_rows"] - b["t1_rows"]
    assert row["Δ Published"] == pm.fmt_change(published, pm.COUNT)
    # a level the thresholds did not touch has no change
    usa = t[t[pj.LEVEL] == "USA Detailed"].iloc[0]
    assert (usa["Δ With table"], usa["Δ Published"], usa["Δ Suppressed"]) == ("0", "0", "0")
    total = t[t[pj.LEVEL] == "All levels"].iloc[0]
    assert total["Δ With table"] == row["Δ With table"]
    # a level the plan tabulates and the reference does not: a dash
    off = P.project(ref_cfg.updated(privacy_budget_p_level_2_county=0), prof)
    t = pj.display_table(proj, ("suppressed",), off)
    assert t[t[pj.LEVEL] == "COUNTY Detailed"].iloc[0]["Δ Suppressed"] == "—"
    assert pj.CHANGE_COLUMNS["t1_rows"] not in pj.display_table(proj, ("suppressed",)).columns


def test_plans_by_geography_shows_each_plan_and_its_change_per_geography():
    prof = pj.shipped(pj.SAMPLE)
    a = production_2020()
    b = a.with_thresholds(COUNTY2, [1, 2, 3])  # more county tables, nothing else
    plans = [("A", a), ("B", b)]
    df = pj.plans_by_geography(plans, prof, "with_table")
    assert list(df.columns) == ["Geography", "A", "B", "Δ B"]
    geo_a = {r["geography"]: r for r in pm.geography_table(P.project(a, prof))}
    geo_b = {r["geography"]: r for r in pm.geography_table(P.project(b, prof))}
    assert list(df["Geography"]) == list(geo_a)  # nation ... Puerto Rico, then all levels
    assert df["Geography"].iloc[0] == "Nation" and df["Geography"].iloc[-1] == "All levels"
    county = df[df["Geography"] == "County"].iloc[0]
    more = geo_b["County"]["with_table"] - geo_a["County"]["with_table"]
    assert round(more) > 0
    assert county["A"] == pm.fmt(geo_a["County"]["with_table"], pm.COUNT)
    assert county["Δ B"] == pm.fmt_change(more, pm.COUNT) and county["Δ B"].startswith("+")
    assert df[df["Geography"] == "Tract"].iloc[0]["Δ B"] == "0"  # thresholds of another level
    share = pj.plans_by_geography(plans, prof, "persons_published_share")
    assert share.iloc[0]["A"].endswith(" %")
    # the figure the plans differ on most comes first: only tables moved here, so a table
    # figure leads and the persons covered (unchanged) does not
    order = pj.geography_most_different(plans, prof)
    assert sorted(order) == sorted(pj.GEOGRAPHY_MEASURES)
    assert order[0] in ("with_table", "total_only") and order[-1] != "with_table"
    # a plan without a level: the geography is a dash for it
    c = a.updated(privacy_budget_p_level_1_county=0, privacy_budget_p_level_2_county=0)
    df = pj.plans_by_geography([("A", a), ("C", c)], prof, "suppressed")
    row = df[df["Geography"] == "County"].iloc[0]
    assert row["C"] == "—" and row["Δ C"] == "—"


def test_display_table_shows_the_changes_asked_for():
    prof = pj.shipped(pj.SAMPLE)
    proj = P.project(production_2020().with_thresholds(COUNTY2, [1, 2, 3]), prof)
    t = pj.display_table(proj, ("suppressed",), P.project(production_2020(), prof), ("tables", "suppressed"))
    assert list(t.columns) == [pj.LEVEL, pj.LABELS["suppressed"], pj.CHANGE_COLUMNS["tables"],
                               pj.CHANGE_COLUMNS["suppressed"]]
