"""The SafeTab-H page in a session: it opens on the 2020 plan, a typed budget changes its
MOE, a MOE target sets the budget, and it moves with SafeTab-P's plan."""

from __future__ import annotations

from calculators.levels import PopulationGroupLevel
from tests.app.conftest import frame, open_app, texts


def _budgets(at):
    return frame(at, "Table", "Level", "Budget", "Cell MOE")


def test_opens_on_the_2020_plan_with_its_ladder_note():
    at = open_app("safetab_h", timeout=120)
    df = _budgets(at)
    assert set(df["Cell MOE"].dropna()) == {50, 3, 11}
    assert "149,970 where SafeTab-P has 149,971" in texts(at)


def test_a_typed_budget_and_a_moe_target():
    at = open_app("safetab_h", timeout=120)
    box = next(t for t in at.text_input if t.key.startswith("h_rho_t3_STATE_2"))
    box.set_value("0.5").run()
    row = _budgets(at).query("Level == 'STATE Detailed' and Table == 'T3'").iloc[0]
    assert row["Budget"] == 0.5 and row["Cell MOE"] == 6
    target = next(t for t in at.text_input if t.key.startswith("h_target_t3_STATE_2"))
    target.set_value("11").run()
    next(b for b in at.button if b.key == "h_apply").click().run()
    row = _budgets(at).query("Level == 'STATE Detailed' and Table == 'T3'").iloc[0]
    assert row["Cell MOE"] == 11 and row["Budget"] < 0.2
    assert not at.exception


def test_the_national_outcome_on_demand():
    at = open_app("safetab_h", timeout=120)
    assert not [d for d in at.dataframe if "t3_level_3" in d.value.columns]
    at.toggle(key="h_show_national").set_value(True).run()
    df = frame(at, "level", "groups", "absent", "t3_level_3")
    total = df[df["level"] == "All levels"].iloc[0]
    assert total["groups"] > 2e8 and total["t3_level_0"] > 1e6


def test_moves_with_safetab_ps_plan():
    at = open_app("safetab_h", timeout=120)
    at.selectbox(key="h_level").set_value(PopulationGroupLevel("COUNTY", 2)).run()
    at.text_input(key="h_n").set_value("100").run()
    before = frame(at, "Absent (no T1 row)")["Absent (no T1 row)"].iloc[0]
    cfg = at.session_state["config"]
    at.session_state["config"] = cfg.with_rho(PopulationGroupLevel("COUNTY", 2), 0.001)
    at.run()
    after = frame(at, "Absent (no T1 row)")["Absent (no T1 row)"].iloc[0]
    assert after > before + 0.3
