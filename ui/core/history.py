"""Undo and redo of plan edits (pure; works on any mutable mapping, e.g. st.session_state).

Every change of the shared plan goes through `ui.core.state.set_config`, which calls
`record` with the plan as it was just before; `undo` / `redo` hand back the plan to
restore and move the current one onto the other stack. The history is bounded
(`LIMIT` steps each way) and kept in the mapping under `K_UNDO` / `K_REDO`, so each
browser session has its own and nothing is shared between sessions.

A `Snapshot` is what a plan edit can change: the configuration, the planner's MOE
targets, the plan's name, whether it was edited since it got that name, and the
SafeTab-H plan planned beside it (the SafeTab-H page), so that a change of either
program's plan is one step and undo restores both together.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, MutableMapping
from contextlib import contextmanager
from functools import cache
from typing import Any, NamedTuple

from calculators.config import SafeTabConfig
from calculators.safetab_h import SafeTabHConfig, production_2020_h

K_UNDO = "history_undo"
K_REDO = "history_redo"
K_BATCH = "history_batch"
#: Steps kept in each direction (a snapshot is ~3 kB: the history stays under 1 MB).
LIMIT = 100


class Snapshot(NamedTuple):
    config: SafeTabConfig
    targets: dict[str, int]
    source: str
    edited: bool
    #: The SafeTab-H plan kept with it; None: the 2020 SafeTab-H plan (the page's default).
    h_config: SafeTabHConfig | None = None

    def same_plan(self, other: Snapshot) -> bool:
        """Same configuration, MOE targets and SafeTab-H plan (the name alone is not an edit)."""
        return (self.config.to_dict() == other.config.to_dict() and dict(self.targets) == dict(other.targets)
                and h_plan_dict(self.h_config) == h_plan_dict(other.h_config))


@cache
def _production_h_json() -> str:
    return production_2020_h().to_json()  # text, not a dict: nothing cached can be changed by a caller


def h_plan_dict(h_config: SafeTabHConfig | None) -> dict[str, Any]:
    """The config.json keys of a SafeTab-H plan (None: the 2020 SafeTab-H plan), to compare."""
    return json.loads(_production_h_json()) if h_config is None else h_config.to_dict()


def changed_h_plan(h_config: SafeTabHConfig | None) -> SafeTabHConfig | None:
    """`h_config` unless it is the 2020 SafeTab-H plan (then None: a snapshot, a scenario
    and the link keep only a SafeTab-H plan other than 2020's)."""
    if h_config is None or h_config.to_dict() == json.loads(_production_h_json()):
        return None
    return h_config


def _stack(store: MutableMapping[str, Any], key: str) -> list[Snapshot]:
    st = store.get(key)
    if not isinstance(st, list):
        st = []
        store[key] = st
    return st


def record(store: MutableMapping[str, Any], before: Snapshot, after: Snapshot) -> bool:
    """Remember `before` as the step to undo when a change makes `after` the plan.
    A change that leaves the plan as it was is not a step. A new step clears redo."""
    if before.same_plan(after) and before.source == after.source:
        return False
    batch = store.get(K_BATCH)
    if batch is not None:
        if batch:  # a step of this batch is recorded already: the batch is one step
            return False
        store[K_BATCH] = True
    undo = _stack(store, K_UNDO)
    undo.append(before)
    del undo[:-LIMIT]
    store[K_REDO] = []
    return True


@contextmanager
def batch(store: MutableMapping[str, Any]) -> Iterator[None]:
    """Changes made inside are one step to undo (e.g. thresholds set on every level)."""
    outer = K_BATCH in store and store[K_BATCH] is not None
    if not outer:
        store[K_BATCH] = False
    try:
        yield
    finally:
        if not outer:
            store[K_BATCH] = None


def _step(store: MutableMapping[str, Any], current: Snapshot, source: str, dest: str) -> Snapshot | None:
    """Take the last plan of stack `source` (None if empty); `current` goes onto `dest`."""
    src = _stack(store, source)
    if not src:
        return None
    target = src.pop()
    dst = _stack(store, dest)
    dst.append(current)
    del dst[:-LIMIT]
    return target


def undo(store: MutableMapping[str, Any], current: Snapshot) -> Snapshot | None:
    """The plan before the last change (None if there is nothing to undo); `current`
    becomes the first step to redo."""
    return _step(store, current, K_UNDO, K_REDO)


def redo(store: MutableMapping[str, Any], current: Snapshot) -> Snapshot | None:
    """The plan the last undo left (None if there is nothing to redo)."""
    return _step(store, current, K_REDO, K_UNDO)


def depth(store: Mapping[str, Any]) -> tuple[int, int]:
    """(steps that can be undone, steps that can be redone)."""
    u, r = store.get(K_UNDO), store.get(K_REDO)
    return (len(u) if isinstance(u, list) else 0, len(r) if isinstance(r, list) else 0)


def peek(store: Mapping[str, Any], key: str) -> Snapshot | None:
    st = store.get(key)
    return st[-1] if isinstance(st, list) and st else None


def describe(a: Snapshot, b: Snapshot, limit: int = 4) -> str:
    """What differs from plan a to plan b, in a few words (for the buttons' help):
    the config.json keys that changed (SafeTab-H's prefixed "SafeTab-H"), MOE targets,
    the plan's name."""
    parts = _key_changes(a.config.to_dict(), b.config.to_dict(), ("thresholds_p",))
    parts += [f"SafeTab-H {p}" for p in h_changes(a.h_config, b.h_config)]
    if dict(a.targets) != dict(b.targets) and not parts:
        changed = sorted(k for k in set(a.targets) | set(b.targets) if a.targets.get(k) != b.targets.get(k))
        parts.append("MOE targets of " + ", ".join(changed))
    if a.source != b.source:
        parts.append(f"plan {a.source!r} → {b.source!r}")
    if not parts:
        return "no change"
    more = len(parts) - limit
    return "; ".join(parts[:limit]) + (f"; and {more} more" if more > 0 else "")


def h_changes(a: SafeTabHConfig | None, b: SafeTabHConfig | None) -> list[str]:
    """The SafeTab-H config.json keys that differ from plan a to plan b (None: the 2020
    SafeTab-H plan), e.g. "privacy_budget_h_t3_level_2_state: 1.9208 → 0.5"."""
    return _key_changes(h_plan_dict(a), h_plan_dict(b), ("thresholds_h_t3", "thresholds_h_t4"))


def _key_changes(da: dict[str, Any], db: dict[str, Any], per_level: tuple[str, ...]) -> list[str]:
    """"key: old → new" for each key that differs; the keys `per_level` (thresholds by
    level key) level by level."""
    parts: list[str] = []
    for key in list(da) + [k for k in db if k not in da]:
        va, vb = da.get(key), db.get(key)
        if va == vb:
            continue
        if key in per_level and isinstance(va, dict) and isinstance(vb, dict):
            for lk in list(va) + [k for k in vb if k not in va]:
                if va.get(lk) != vb.get(lk):
                    name = "thresholds" if key == "thresholds_p" else key
                    parts.append(f"{name} {lk}: {_short(va.get(lk))} → {_short(vb.get(lk))}")
        else:
            parts.append(f"{key}: {_short(va)} → {_short(vb)}")
    return parts


def _short(v: Any) -> str:
    if v is None:
        return "(absent)"
    if isinstance(v, list):
        text = ", ".join(str(x) for x in v)
    elif isinstance(v, float):
        text = f"{v:.6g}"
    else:
        text = str(v)
    return text if len(text) <= 40 else text[:37] + "…"
