"""The SafeTab-H page's tables: budgets and MOEs, the coupling to SafeTab-P's plan,
the accounting apart, the national outcome."""

from __future__ import annotations

import pytest

from calculators.levels import PopulationGroupLevel
from calculators.presets import production_2020
from calculators.safetab_h import production_2020_h
from ui.safetab import safetab_h as h

COUNTY2 = PopulationGroupLevel("COUNTY", 2)


def test_budget_table_has_the_2020_moes():
    df = h.budget_table(production_2020_h())
    usa2 = df[(df["Level"] == "USA Detailed") & (df["Table"] == "T3")].iloc[0]
    assert usa2["Cell MOE"] == 3 and usa2["Total MOE"] == 7
    county2 = df[(df["Level"] == "COUNTY Detailed") & (df["Table"] == "T3")].iloc[0]
    assert county2["Cell MOE"] == 11 and county2["Total MOE"] == 25
    assert len(df) == 40  # 20 levels x 2 tables (US and PR runs on)


def test_the_group_table_moves_with_safetab_ps_plan():
    p = production_2020()
    hp = production_2020_h()
    before = h.group_probabilities(p, hp, COUNTY2, 100)
    # SafeTab-P spends almost nothing on (COUNTY, 2): its T1 is so noisy that groups of 100 are mostly suppressed
    cheap = p.with_rho(COUNTY2, 0.001)
    after = h.group_probabilities(cheap, hp, COUNTY2, 100)
    assert after["Absent (no T1 row)"].iloc[0] > before["Absent (no T1 row)"].iloc[0] + 0.3
    rows = before.drop(columns="Table").fillna(0).sum(axis=1)
    assert rows.tolist() == pytest.approx([1.0, 1.0])


def test_accounting_is_apart():
    df = h.accounting(production_2020(), production_2020_h(), 1e-10)
    assert list(df["Protects"]) == ["one person", "one household"]
    assert df["Release (max)"].iloc[0] == pytest.approx(4.944)
    assert df["Release (max)"].iloc[1] == pytest.approx(2 * (0.006915 * 5 + 1.9208 * 2 + 0.142869 * 4))


def test_national_outcome_counts_every_group_once():
    from ui.safetab import projection

    if projection.shipped(projection.SAMPLE) is None:
        pytest.skip("no shipped profile")
    df = h.national(production_2020(), production_2020_h(), projection.SAMPLE)
    row = df[df["level"] == "(COUNTY, 2)"].iloc[0]
    t3 = sum(row[f"t3_level_{j}"] for j in range(4))
    t4 = row["t4_level_0"] + row["t4_level_1"]
    assert t3 + row["absent"] == pytest.approx(row["groups"]) and t4 == pytest.approx(t3)


def test_ladder_notes_name_the_2020_difference():
    notes = h.ladder_notes(production_2020(), production_2020_h())
    assert "(COUNTY, 1): T3 149,970 where SafeTab-P has 149,971" in notes
    assert not any(n.startswith("(AIANNH, 1)") for n in notes)  # neither program tabulates it
