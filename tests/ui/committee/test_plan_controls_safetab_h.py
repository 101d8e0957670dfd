"""ui.committee.plan_controls' key of plans includes each plan's SafeTab-H plan: a result
cached for plans (the comparison tables) is another entry when only a SafeTab-H plan
changes, and the plans read back from the key keep their SafeTab-H plans."""

from __future__ import annotations

from calculators.presets import production_2020
from calculators.safetab_h import production_2020_h
from ui.committee import plan_controls
from ui.committee.comparison import Plan
from ui.core import planner


def _plans(h=None) -> list[Plan]:
    prod = production_2020()
    return [Plan("2020", prod, planner.production_targets()), Plan("mine", prod.updated(max_race_codes=3), {}, h)]


def test_the_key_changes_when_only_a_safetab_h_plan_does():
    h = production_2020_h().updated(privacy_budget_h_t3_level_2_state=0.5)
    none, with_h = plan_controls.plans_key(_plans()), plan_controls.plans_key(_plans(h))
    assert none != with_h
    assert plan_controls.digest(none) != plan_controls.digest(with_h)
    other = plan_controls.plans_key(_plans(h.updated(privacy_budget_h_t3_level_2_state=0.25)))
    assert plan_controls.digest(other) != plan_controls.digest(with_h)
    assert plan_controls.plans_key(_plans(h)) == with_h  # the same plans: the same entry
    hash(with_h)  # usable as a cache key


def test_the_plans_of_a_key_keep_their_safetab_h_plans():
    h = production_2020_h().updated(privacy_budget_h_t4_level_1_county=0.01)
    back = plan_controls.plans_of(plan_controls.plans_key(_plans(h)))
    assert back[0].h_config is None
    assert back[1].h_config.to_dict() == h.to_dict()
    assert back[1].config.to_dict() == _plans()[1].config.to_dict() and back[1].name == "mine"
