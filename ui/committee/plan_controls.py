"""Streamlit controls of the plan on every page: undo / redo (`ui.core.history`) and saving
the current plan as a named scenario (`ui.committee.scenarios`), in the sidebar."""

from __future__ import annotations

import hashlib
from collections.abc import Callable

import pandas as pd
import streamlit as st

from calculators import plan as pm
from calculators import presets
from calculators.config import SafeTabConfig
from calculators.safetab_h import SafeTabHConfig
from ui.committee import comparison, scenarios
from ui.core import auth, history, planner, state, widgets

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
                             by=auth.current().who, h_config=state.changed_h_plan())
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


#: The name a user asked to save under that a scenario already has: shown with a
#: second, explicit "Replace" step (issue 40 item 7).
K_SAVE_PENDING = "sb_save_pending"


def fresh_name(label: str, taken) -> str:
    """A name to suggest for saving the plan called `label` that no scenario has yet
    (`taken(name)` says whether one has): the suggested name, else with " (2)", " (3)"..."""
    base = scenarios.suggested_name(label)
    name, k = base, 2
    while taken(name) and k < 1000:
        suffix = f" ({k})"
        name, k = base[: scenarios.MAX_NAME - len(suffix)] + suffix, k + 1
    return name


def _taken(name: str) -> bool:
    try:
        return bool(name.strip()) and store().exists(name)
    except scenarios.ScenarioError:
        return False


def _saved() -> None:
    """After a save: the next opening of the popover suggests a fresh name."""
    ss = st.session_state
    ss.pop(K_SAVE_PENDING, None)
    ss["sb_save_name"] = fresh_name(state.source_label(), _taken)


def _on_sidebar_save() -> None:
    """Save under the typed name; a name already taken is not overwritten: it asks first."""
    ss = st.session_state
    name = ss.get("sb_save_name", "")
    if _taken(name):
        ss[K_SAVE_PENDING] = name
        return
    if save_current(name):
        _saved()


def _on_replace() -> None:
    name = st.session_state.get(K_SAVE_PENDING)
    if name and save_current(name, overwrite=True):
        _saved()


def _on_cancel_replace() -> None:
    st.session_state.pop(K_SAVE_PENDING, None)


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
            if not ss.get("sb_save_name"):
                ss["sb_save_name"] = fresh_name(state.source_label(), _taken)
            # a form: the typed name goes with the click, no Enter needed (and Enter alone saves nothing)
            with st.form("sb_save_form", border=False, enter_to_submit=False):
                st.text_input("Scenario name", key="sb_save_name", max_chars=scenarios.MAX_NAME)
                st.form_submit_button("Save", key="sb_save", type="primary", on_click=_on_sidebar_save)
            pending = ss.get(K_SAVE_PENDING)
            if pending:
                st.warning(f"A scenario named “{widgets.plain(pending)}” exists. Replace it with the current plan? "
                           "Its old plan is then gone.")
                with st.container(horizontal=True, gap="small"):
                    st.button("Replace it", key="sb_save_replace", on_click=_on_replace)
                    st.button("Cancel", key="sb_save_cancel", on_click=_on_cancel_replace)
            st.page_link(SCENARIOS_PAGE, label="All scenarios, compare, memo", icon=":material/folder_open:")
        reference_choice()


# ------------------------------------------------------------------ the reference plan
def _saved_scenarios() -> list[scenarios.Scenario]:
    try:
        return [s for s in store().all() if s.ok]
    except scenarios.ScenarioError:
        return []


def reference_choice() -> None:
    """The reference plan every change is shown against (issue 40 item 3), in the sidebar:
    the 2020 production plan (default), the plan before my last change, or any saved
    scenario; and the release's budget against it. The chosen scenario's plan is kept in
    the session (`state.K_REFERENCE_SAVED`) for `state.reference`."""
    ss = st.session_state
    saved = {saved_label(s.name): s for s in _saved_scenarios()}
    options = [state.REF_PRODUCTION, state.REF_LAST, *saved]
    if ss.get(state.K_REFERENCE) not in options:
        if ss.get(state.K_REFERENCE) is not None:
            state.flash("warning", f"The reference scenario “{ss[state.K_REFERENCE]}” is no longer there: changes "
                                   f"are shown against the {state.REF_PRODUCTION}.")
        ss[state.K_REFERENCE] = state.REF_PRODUCTION
    st.selectbox("Reference plan (changes are shown against it)", options, key=state.K_REFERENCE,
                 help="Every national figure, budget and MOE shows its change from this plan: the 2020 production "
                      "plan, the plan as it was before your last change, or a saved scenario.")
    choice = ss[state.K_REFERENCE]
    if choice in saved:
        sc = saved[choice]
        ss[state.K_REFERENCE_SAVED] = history.Snapshot(sc.config, dict(sc.targets), choice, False, sc.h_config)
    ref = state.reference()
    s_now, s_ref = planner.plan_summary(state.config(), state.delta()), planner.plan_summary(ref.config, state.delta())
    unit = planner.units(state.config())["budget"]
    same_law = ref.config.privacy_defn == state.config().privacy_defn
    change = (pm.fmt_change(s_now["rho_release"] - s_ref["rho_release"], pm.BUDGET) if same_law
              else "another privacy definition")
    st.caption(f"{unit} of the release: {pm.fmt(s_now['rho_release'], pm.BUDGET)}, reference "
               f"{pm.fmt(s_ref['rho_release'], pm.BUDGET)} ({change}); levels on: {s_now['levels_tabulated']} "
               f"(reference {s_ref['levels_tabulated']}).")


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
        CURRENT: lambda: comparison.Plan(f"{CURRENT} ({state.source_label()})", state.config(), state.targets(),
                                         state.changed_h_plan()),
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
            out[label] = (lambda s=s, label=label: comparison.Plan(label, s.config, s.targets, s.h_config))
    return out


def saved_label(name: str) -> str:
    """How the saved scenario `name` is listed among the plans (`choices`)."""
    return name + SAVED_SUFFIX if scenarios.is_built_in(name) else name


def plans_key(plans: list[comparison.Plan]) -> tuple:
    """A hashable, cacheable description of plans: (name, config.json, targets, SafeTab-H
    config.json or None), so that a result cached for plans changes when only a SafeTab-H
    plan does."""
    return tuple((p.name, p.config.to_json(), tuple(sorted(dict(p.targets).items())),
                  None if p.h_config is None else p.h_config.to_json()) for p in plans)


def plans_of(key: tuple) -> list[comparison.Plan]:
    """The plans `plans_key` describes, each with its SafeTab-H plan."""
    return [comparison.Plan(n, SafeTabConfig.from_json(c, n), dict(t),
                            None if h is None else SafeTabHConfig.from_json(h, f"{n} (SafeTab-H plan)"))
            for n, c, t, h in key]


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
