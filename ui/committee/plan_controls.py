"""Streamlit controls of the plan on every page: undo / redo (`ui.core.history`) and saving
the current plan as a named scenario (`ui.committee.scenarios`), in the sidebar."""

from __future__ import annotations

import hashlib
from collections.abc import Callable

import pandas as pd
import streamlit as st

from calculators import presets
from calculators.config import SafeTabConfig
from ui.committee import comparison, scenarios
from ui.core import auth, history, planner, state

SCENARIOS_PAGE = "app_pages/committee/scenarios.py"


def store() -> scenarios.ScenarioStore:
    """The scenario store at its configured location (see `ui.committee.scenarios.data_dir`)."""
    return scenarios.ScenarioStore()


def _step(move: Callable, done: str) -> None:
    """Apply `history.undo` or `history.redo` and say what changed."""
    cur = state.snapshot()
    snap = move(st.session_state, cur)
    if snap is not None:
        state.restore(snap)
        state.flash("info", f"{done}: {history.describe(cur, snap)}.")


def undo() -> None:
    """Put the plan back as it was before the last change."""
    _step(history.undo, "Undone")


def redo() -> None:
    """Make the last undone change again."""
    _step(history.redo, "Redone")


def save_current(name: str, note: str = "", overwrite: bool = False) -> scenarios.Scenario | None:
    """Save the current plan as a scenario; the plan takes the scenario's name. A
    problem (name taken, store unusable) becomes a message and returns None."""
    try:
        saved = store().save(name, state.config(), state.targets(), note=note, overwrite=overwrite,
                             by=auth.current().who)
    except scenarios.ScenarioError as exc:
        state.flash("error", f"Not saved: {exc}.")
        return None
    ss = st.session_state
    ss[state.K_SOURCE], ss[state.K_EDITED] = saved.name, False
    remember_version(saved)
    state.flash("success", f"Saved the current plan as scenario “{saved.name}” ({store().path}).")
    return saved


#: The saved version the current plan is (set when a scenario is loaded or saved): {"name", "label"}.
K_VERSION = "plan_version"


def remember_version(s: scenarios.Scenario, label: str | None = None) -> None:
    """Note that the current plan is the saved scenario `s` (its latest version, or the
    version `label` names), for the memo."""
    st.session_state[K_VERSION] = {"name": s.name, "label": s.version_label if label is None else label}


def current_version() -> str:
    """The saved version the current plan is, with its author ("version 3 by ana@x.org,
    ..."), or "" if the plan is not a saved version as it was saved or loaded."""
    ss = st.session_state
    rec = ss.get(K_VERSION)
    if not rec or ss.get(state.K_EDITED) or ss.get(state.K_SOURCE) != rec.get("name"):
        return ""
    return rec.get("label", "")


def _on_sidebar_save() -> None:
    name = st.session_state.get("sb_save_name", "")
    if save_current(name, overwrite=bool(st.session_state.get("sb_save_replace"))):
        st.session_state["sb_save_replace"] = False


def sidebar() -> None:
    """Undo, redo and "Save as scenario" in the sidebar (call in app.py). The buttons'
    help does not name the step: page fragments (`state.fragment_done`) do not redraw
    the sidebar after each change; the message shown after undoing says what changed."""
    ss = st.session_state
    n_undo, n_redo = history.depth(ss)
    with st.sidebar:
        with st.container(horizontal=True, gap="small"):
            st.button("Undo", key="sb_undo", icon=":material/undo:", on_click=undo, disabled=not n_undo,
                      width="stretch",
                      help="Undo the last change to the plan." if n_undo
                      else "Nothing to undo: the plan has not changed in this session.")
            st.button("Redo", key="sb_redo", icon=":material/redo:", on_click=redo, disabled=not n_redo,
                      width="stretch", help="Make the last undone change again." if n_redo else "Nothing to redo.")
        with st.popover("Save as scenario", icon=":material/save:", width="stretch",
                        help="Save the current plan as a named scenario (kept on disk across restarts)."):
            if "sb_save_name" not in ss or not ss.get("sb_save_name"):
                ss["sb_save_name"] = scenarios.suggested_name(state.source_label())
            st.text_input("Scenario name", key="sb_save_name", max_chars=scenarios.MAX_NAME)
            taken = False
            try:
                taken = store().exists(ss.get("sb_save_name", "")) if ss.get("sb_save_name", "").strip() else False
            except scenarios.ScenarioError:
                taken = False
            if taken:
                st.checkbox("A scenario of this name exists: replace it", key="sb_save_replace")
            st.button("Save", key="sb_save", type="primary", on_click=_on_sidebar_save,
                      disabled=taken and not ss.get("sb_save_replace"))
            st.page_link(SCENARIOS_PAGE, label="All scenarios, compare, memo", icon=":material/folder_open:")


# ------------------------------------------------------------------ plans to compare
CURRENT, PRODUCTION, SAMPLE = scenarios.BUILT_IN_NAMES  # no scenario may take these names
#: How a saved scenario that has a built-in plan's name (saved by an older version) is listed.
SAVED_SUFFIX = " (saved scenario)"


def choices(items: list[scenarios.Scenario] | None = None) -> dict[str, Callable[[], comparison.Plan]]:
    """The plans a user can compare or put in a memo, by the name shown: the current
    plan, the 2020 production plan, (if shipped) the sample-data plan, and every valid
    saved scenario. A built-in plan is never shadowed: a scenario of the same name
    (saved by an older version; `scenarios.is_built_in`) is listed as "<name> (saved
    scenario)". Values are zero-argument callables returning a `comparison.Plan`."""
    out: dict[str, Callable[[], comparison.Plan]] = {
        CURRENT: lambda: comparison.Plan(f"{CURRENT} ({state.source_label()})", state.config(), state.targets()),
        PRODUCTION: lambda: comparison.Plan(PRODUCTION, presets.production_2020(), planner.production_targets()),
    }
    if state.sample_config_path().is_file():
        out[SAMPLE] = lambda: comparison.Plan(SAMPLE, SafeTabConfig.read(state.sample_config_path()))
    if items is None:
        try:
            items = store().all()
        except scenarios.ScenarioError:
            items = []
    for s in items:
        label = saved_label(s.name)
        if s.ok and label not in out:
            out[label] = (lambda s=s, label=label: comparison.Plan(label, s.config, s.targets))
    return out


def saved_label(name: str) -> str:
    """How the saved scenario `name` is listed among the plans (`choices`)."""
    return name + SAVED_SUFFIX if scenarios.is_built_in(name) else name


def plans_key(plans: list[comparison.Plan]) -> tuple:
    """A hashable, cacheable description of plans: (name, config.json, targets)."""
    return tuple((p.name, p.config.to_json(), tuple(sorted(dict(p.targets).items()))) for p in plans)


def plans_of(key: tuple) -> list[comparison.Plan]:
    return [comparison.Plan(n, SafeTabConfig.from_json(c, n), dict(t)) for n, c, t in key]


def digest(key: tuple) -> str:
    """A short name of the plans `key` (`plans_key`) for Streamlit's cache: hashing the
    key itself hashes every plan's config.json text on every call (about 3 ms a call with
    5 plans; benchmarks/RESULTS.md)."""
    return hashlib.sha256(repr(key).encode("utf-8")).hexdigest()


def cached_by_level(key: tuple, method: str, delta: float) -> dict[str, pd.DataFrame]:
    """`comparison.by_level` of the plans `key` for every measure (`comparison.MEASURES`),
    computed once per plans, target rule and delta."""
    return _by_level(digest(key), key, method, delta)


@st.cache_data(max_entries=64, show_spinner=False)
def _by_level(plans_digest: str, _key: tuple, method: str, delta: float) -> dict[str, pd.DataFrame]:
    plans = plans_of(_key)  # parsed once for every measure
    return {m: comparison.by_level(plans, m, method, delta) for m in comparison.MEASURES}


def cached_summary(key: tuple, delta: float) -> pd.DataFrame:
    """`comparison.summary` of the plans `key`, computed once per plans and delta."""
    return _summary(digest(key), key, delta)


@st.cache_data(max_entries=64, show_spinner=False)
def _summary(plans_digest: str, _key: tuple, delta: float) -> pd.DataFrame:
    return comparison.summary(plans_of(_key), delta)
