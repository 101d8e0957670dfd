"""ui.committee.plan_controls' cached comparisons: named in the cache by a digest of the
plans, one entry for every measure, the same tables as `ui.committee.comparison`."""

from __future__ import annotations

from calculators.presets import production_2020
from ui.committee import comparison, plan_controls
from ui.committee.comparison import Plan
from ui.core import planner


def _plans(r: int = 3, name: str = "r = 3", targets: dict | None = None) -> list[Plan]:
    prod = production_2020()
    return [Plan("2020", prod, planner.production_targets()), Plan(name, prod.updated(max_race_codes=r), targets or {})]


def test_the_digest_tells_apart_plans_that_differ_in_name_settings_or_targets():
    base = plan_controls.digest(plan_controls.plans_key(_plans()))
    assert base == plan_controls.digest(plan_controls.plans_key(_plans()))  # the same plans: the same entry
    assert base != plan_controls.digest(plan_controls.plans_key(_plans(r=4)))
    assert base != plan_controls.digest(plan_controls.plans_key(_plans(name="other")))
    assert base != plan_controls.digest(plan_controls.plans_key(_plans(targets={"(COUNTY, 2)": 12})))


def test_every_measure_is_the_comparisons_own_table():
    plans = _plans()
    key = plan_controls.plans_key(plans)
    tables = plan_controls.cached_by_level(key, planner.EXACT, 1e-10)
    assert list(tables) == list(comparison.MEASURES)
    for m, df in tables.items():
        assert df.equals(comparison.by_level(plans, m, planner.EXACT, 1e-10)), m
    assert plan_controls.cached_summary(key, 1e-10).equals(comparison.summary(plans, 1e-10))
    # another plan is another entry, not the first one's tables
    other = plan_controls.cached_by_level(plan_controls.plans_key(_plans(r=5, name="r = 3")), planner.EXACT, 1e-10)
    assert not other["moe_exact"].equals(tables["moe_exact"])
