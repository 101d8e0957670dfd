"""Undo and redo of plan edits (ui.core.history), on a plain dict as the session state."""

from __future__ import annotations

import pytest

from calculators.levels import PopulationGroupLevel
from calculators.presets import production_2020
from ui.core import history
from ui.core.history import Snapshot


def _snap(r: int, name: str = "plan", targets=None, edited: bool = True) -> Snapshot:
    return Snapshot(production_2020().updated(max_race_codes=r), dict(targets or {}), name, edited)


def test_undo_and_redo_walk_the_changes_both_ways():
    store: dict = {}
    a, b, c = _snap(8), _snap(3), _snap(1)
    assert history.record(store, a, b) and history.record(store, b, c)
    assert history.depth(store) == (2, 0)
    assert history.undo(store, c) == b
    assert history.undo(store, b) == a
    assert history.undo(store, a) is None  # nothing left
    assert history.depth(store) == (0, 2)
    assert history.redo(store, a) == b
    assert history.redo(store, b) == c
    assert history.redo(store, c) is None


def test_a_new_change_after_undo_clears_redo():
    store: dict = {}
    a, b, c = _snap(8), _snap(3), _snap(5)
    history.record(store, a, b)
    assert history.undo(store, b) == a
    history.record(store, a, c)
    assert history.depth(store) == (1, 0)
    assert history.undo(store, c) == a


def test_a_change_that_changes_nothing_is_not_a_step():
    store: dict = {}
    assert not history.record(store, _snap(8), _snap(8))
    assert history.depth(store) == (0, 0)
    # a new name alone (e.g. the plan saved as a scenario) is a step
    assert history.record(store, _snap(8, "plan"), _snap(8, "Committee plan"))


def test_targets_count_as_part_of_the_plan():
    store: dict = {}
    assert history.record(store, _snap(8, targets={"(COUNTY, 2)": 11}), _snap(8, targets={"(COUNTY, 2)": 8}))
    assert "MOE targets of (COUNTY, 2)" in history.describe(_snap(8, targets={"(COUNTY, 2)": 11}),
                                                              _snap(8, targets={"(COUNTY, 2)": 8}))


def test_the_history_is_bounded(monkeypatch):
    monkeypatch.setattr(history, "LIMIT", 3)
    store: dict = {}
    snaps = [_snap(r) for r in (1, 2, 3, 4, 5, 6)]
    for x, y in zip(snaps, snaps[1:]):
        history.record(store, x, y)
    assert history.depth(store) == (3, 0)
    cur = snaps[-1]
    got = []
    while (prev := history.undo(store, cur)) is not None:
        got.append(prev.config.max_race_codes)
        cur = prev
    assert got == [5, 4, 3]  # the oldest steps were dropped


def test_a_batch_is_one_step():
    store: dict = {}
    a, b, c, d = _snap(8), _snap(7), _snap(6), _snap(5)
    with history.batch(store):
        history.record(store, a, b)
        history.record(store, b, c)
        with history.batch(store):  # nested: still the same step
            history.record(store, c, d)
    assert history.depth(store) == (1, 0)
    assert history.undo(store, d) == a
    history.record(store, a, b)  # after the batch, steps are separate again
    history.record(store, b, c)
    assert history.depth(store) == (2, 0)


def test_describe_names_the_keys_that_changed():
    a = Snapshot(production_2020(), {}, "2020 production plan", False)
    b = Snapshot(production_2020().updated(max_race_codes=3).with_thresholds(PopulationGroupLevel("COUNTY", 2),
                                                                            (1, 2, 3)), {}, "2020 production plan", True)
    text = history.describe(a, b)
    assert "max_race_codes: 8 → 3" in text and "thresholds (COUNTY, 2): 971, 4971, 19971 → 1, 2, 3" in text
    assert history.describe(a, a) == "no change"


@pytest.mark.parametrize("bad", [None, "x", 3])
def test_a_damaged_history_is_treated_as_empty(bad):
    store = {history.K_UNDO: bad, history.K_REDO: bad}
    assert history.depth(store) == (0, 0)
    assert history.undo(store, _snap(8)) is None


# ------------------------------------------------------------------ the SafeTab-H plan in a step
def _h(**budgets):
    from calculators.safetab_h import production_2020_h

    return production_2020_h().updated(**budgets)


def test_a_change_of_the_safetab_h_plan_alone_is_a_step_and_comes_back_with_safetab_ps():
    store: dict = {}
    a = _snap(8)
    b = a._replace(h_config=_h(privacy_budget_h_t3_level_2_state=0.5))
    assert not a.same_plan(b)
    assert history.record(store, a, b)
    back = history.undo(store, b)
    assert back == a and back.h_config is None  # None: the 2020 SafeTab-H plan
    assert history.redo(store, back).h_config.budgets["privacy_budget_h_t3_level_2_state"] == 0.5


def test_the_2020_safetab_h_plan_spelt_out_is_the_same_plan_as_none():
    from calculators.safetab_h import production_2020_h

    a = _snap(8)
    assert a.same_plan(a._replace(h_config=production_2020_h()))
    assert not history.record({}, a, a._replace(h_config=production_2020_h()))
    assert history.changed_h_plan(production_2020_h()) is None
    changed = _h(privacy_budget_h_t4_level_1_usa=0.1)
    assert history.changed_h_plan(changed) is changed


def test_describe_names_the_safetab_h_keys_that_changed():
    a = _snap(8)
    th = dict(_h().thresholds_h_t3)
    th["(COUNTY, 2)"] = [10, 20, 30]
    b = a._replace(h_config=_h(privacy_budget_h_t3_level_2_state=0.5, thresholds_h_t3=th))
    text = history.describe(a, b)
    assert "SafeTab-H privacy_budget_h_t3_level_2_state: 1.9208 → 0.5" in text
    assert "SafeTab-H thresholds_h_t3 (COUNTY, 2): 971, 4971, 19971 → 10, 20, 30" in text
    assert "max_race_codes" not in text  # SafeTab-P's plan did not change
    assert history.h_changes(None, None) == []
