"""The one configuration every page shares (st.session_state) and the URL that carries it.

* ``st.session_state["config"]`` — the current `SafeTabConfig` (immutable; changes
  replace it). Every page reads it through `config()` and changes it through
  `set_config` / `update`, so a change on one page shows on every page.
* ``st.session_state["moe_targets"]`` — the planner's MOE target per level key
  (not a config.json key; see `ui.core.planner`), met by the exact MOE unless the user
  picks the design-paper bound (``moe_method``).
* ``st.session_state["safetab_h_plan"]`` — the SafeTab-H plan planned beside it (the
  SafeTab-H page; absent: the 2020 SafeTab-H plan), changed through `set_h_plan`, or
  with SafeTab-P's by `set_config(..., h_config=...)` when a scenario, plan file or link
  brings both: either way one step of undo, and undo / redo restore both together.
* ``st.session_state["plan_change"]`` — a before/after panel the planner shows after
  a change it made or offers to make (privacy definition, r, gamma).
* The address bar carries the configuration as ``?config=<token>`` (`ui.core.urlcodec`)
  whenever it differs from the default 2020 production plan: `sync_url` runs at the
  end of every script run, `init` restores it when a session starts.

Widgets bound to the configuration use `bind(key, value)` before they are drawn (so
they always show the current configuration, whichever page changed it) and an
on_change callback that calls `update`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import streamlit as st

from calculators import presets
from calculators.config import ConfigError, SafeTabConfig
from calculators.safetab_h import SafeTabHConfig, production_2020_h
from ui.core import history, plan_names, planner, urlcodec
from ui.core.plaintext import plain

ROOT = Path(__file__).resolve().parent.parent.parent

K_CONFIG = "config"
K_TARGETS = "moe_targets"
K_SOURCE = "config_source"
K_EDITED = "config_edited"
K_METHOD = "moe_method"
K_DELTA = "delta"
K_FLASH = "flash_messages"
K_CHANGE = "plan_change"
K_SIDEBAR = "sidebar_signature"
#: The SafeTab-H plan planned beside SafeTab-P's (the SafeTab-H page; the 2020 plan until set).
K_H_PLAN = "safetab_h_plan"
#: The presenter view is on (`ui.learn.classroom`): charts are drawn at least PRESENTER_CHART_PX tall.
K_PRESENTER = "learn_presenter"
PRESENTER_CHART_PX = 600

PRODUCTION = "2020 production plan"
SAMPLE = "sample-data plan"


# ------------------------------------------------------------------ locations
def sample_dir() -> Path:
    """The shipped sample data (sample_data/, or $SAFETAB_SAMPLE_DIR if set)."""
    return Path(os.environ.get("SAFETAB_SAMPLE_DIR") or ROOT / "sample_data")


def sample_config_path() -> Path:
    return sample_dir() / "params" / "config.json"


def has_sample() -> bool:
    d = sample_dir()
    return (d / "params").is_dir() and (d / "data").is_dir()


# ------------------------------------------------------------------ init / get
def init() -> None:
    """Set up a new session: the configuration of the link, else the 2020 plan.

    Why the 2020 production plan: it is the plan the committee knows and can check
    (MOE 3 / 11 / 50, rho 2.134 / 0.159 / 0.008), and the sample-data plan has the same
    budgets; it only scales the thresholds down to a small synthetic nation, which the
    Run page offers in one click.
    """
    ss = st.session_state
    if K_CONFIG in ss:
        return
    ss[K_METHOD] = planner.DEFAULT_METHOD
    ss[K_DELTA] = planner.DEFAULT_DELTA
    ss[K_FLASH] = []
    token = st.query_params.get(urlcodec.PARAM)
    if token:
        try:
            decoded = urlcodec.decode(token)
            cfg, targets = decoded
        except ConfigError as exc:
            flash("error", "The configuration in the link could not be used, so the 2020 production "
                           "plan is loaded instead:\n" + "\n".join(f"- {p}" for p in exc.problems))
            load_production()
            return
        base = planner.default_targets(cfg, planner.DEFAULT_METHOD)
        base.update(targets)
        name = getattr(decoded, "name", None)
        load_named(cfg, name or "shared link", base, bool(getattr(decoded, "edited", False)),
                   h_config=getattr(decoded, "h_config", None))
        flash("success", f"Configuration restored from the link{f': {name}' if name else ''}.")
    else:
        load_production()


def page_setup() -> None:
    """First line of every page: make sure the page runs inside app.py.

    Streamlit runs a fresh server's first session in its old "pages/ folder" mode when
    the app has a pages/ folder, so a bookmarked deep link (e.g. /budget?config=...)
    opened first would run the page alone, without app.py's navigation and shared state.
    Streamlit leaves that mode as soon as app.py calls st.navigation; this switches it
    off and reruns, so the request is served by app.py as usual. Outside that case it
    only makes sure the shared state exists.
    """
    try:
        from streamlit.runtime.pages_manager import PagesManager
    except ImportError:  # pragma: no cover - a Streamlit without it has no such mode
        PagesManager = None
    if PagesManager is not None and getattr(PagesManager, "uses_pages_directory", False):
        PagesManager.uses_pages_directory = False
        st.rerun()
    init()


def config() -> SafeTabConfig:
    return st.session_state[K_CONFIG]


def targets() -> dict[str, int]:
    return dict(st.session_state.get(K_TARGETS, {}))


def method() -> str:
    return st.session_state.get(K_METHOD, planner.DEFAULT_METHOD)


def delta() -> float:
    return float(st.session_state.get(K_DELTA, planner.DEFAULT_DELTA))


def source_label() -> str:
    ss = st.session_state
    name = ss.get(K_SOURCE, PRODUCTION)
    return f"{name}, edited" if ss.get(K_EDITED) else name


# ------------------------------------------------------------------ the reference plan
#: The reference every change is shown against (chosen in the sidebar; issue 40 item 3):
#: the 2020 production plan (default), the plan before the last change, or a saved
#: scenario (`ui.committee.plan_controls` resolves it and keeps it in K_REFERENCE_SAVED).
K_REFERENCE = "reference_choice"
K_REFERENCE_SAVED = "reference_saved"
REF_PRODUCTION, REF_LAST = PRODUCTION, "before my last change"


def reference() -> history.Snapshot:
    """The reference plan (`K_REFERENCE`): its configuration, MOE targets and name. Before
    any change, "before my last change" is the current plan itself; a saved scenario that
    is no longer there falls back to the production plan (the sidebar says so)."""
    ss = st.session_state
    choice = ss.get(K_REFERENCE, REF_PRODUCTION)
    if choice == REF_LAST:
        snap = history.peek(ss, history.K_UNDO) or snapshot()
        name = f"{snap.source}, edited" if snap.edited else snap.source
        return snap._replace(targets=dict(snap.targets), source=f"{REF_LAST} ({name})")  # with its SafeTab-H plan
    saved = ss.get(K_REFERENCE_SAVED)
    if choice != REF_PRODUCTION and saved is not None and saved.source == choice:
        return saved
    return history.Snapshot(presets.production_2020(), planner.production_targets(), PRODUCTION, False)


# ------------------------------------------------------------------ changes
class _Keep:
    """`set_config`'s default for `h_config`: the SafeTab-H plan stays as it is."""


KEEP = _Keep()


def set_config(cfg: SafeTabConfig, source: str | None = None, targets: dict[str, int] | None = None,
               edited: bool = False, h_config: SafeTabHConfig | None | _Keep = KEEP) -> None:
    """Replace the shared configuration. With `source`, it becomes the plan's name
    (a preset, a file, a link), `edited` if the plan differs from the one of that name;
    without, the current plan is marked edited. `h_config`: the SafeTab-H plan that
    comes with it (a scenario, a plan file or a link; None: the 2020 SafeTab-H plan),
    changed in the same step of undo; by default it stays as it is."""
    ss = st.session_state
    old = ss.get(K_CONFIG)
    before = snapshot() if old is not None else None
    if targets is None:
        targets = planner.reconcile_targets(ss.get(K_TARGETS, {}), old, cfg, method())
    ss[K_CONFIG] = cfg
    ss[K_TARGETS] = dict(targets)
    if not isinstance(h_config, _Keep):
        _put_h_plan(h_config)
    if source is not None:
        ss[K_SOURCE] = source
        ss[K_EDITED] = bool(edited)
        ss.pop(K_CHANGE, None)  # a before/after panel belongs to the plan it was made for
    elif old is None or old.to_dict() != cfg.to_dict() or (before is not None and not before.same_plan(snapshot())):
        ss[K_EDITED] = True
    if before is not None:  # every change is a step of undo (ui.core.history)
        history.record(ss, before, snapshot())


def snapshot() -> history.Snapshot:
    """The plan as undo / redo and scenarios see it, with its SafeTab-H plan (None: 2020's)."""
    ss = st.session_state
    return history.Snapshot(config(), targets(), ss.get(K_SOURCE, PRODUCTION), bool(ss.get(K_EDITED)),
                            changed_h_plan())


def restore(snap: history.Snapshot) -> None:
    """Make a snapshot the plan again, SafeTab-P's and SafeTab-H's together (undo / redo;
    not itself a step)."""
    ss = st.session_state
    ss[K_CONFIG], ss[K_TARGETS] = snap.config, dict(snap.targets)
    ss[K_SOURCE], ss[K_EDITED] = snap.source, snap.edited
    _put_h_plan(snap.h_config)


def update(**changes: Any) -> bool:
    """Change some keys of the shared configuration; a ConfigError becomes a message."""
    try:
        cfg = config().updated(**changes)
    except ConfigError as exc:
        flash("error", "That change was not applied:\n" + "\n".join(f"- {p}" for p in exc.problems))
        return False
    set_config(cfg)
    return True


def load_production() -> None:
    set_config(presets.production_2020(), PRODUCTION, planner.production_targets())


def load_sample() -> bool:
    """Load sample_data/params/config.json; False (with a message) if it is missing or bad."""
    path = sample_config_path()
    if not path.is_file():
        flash("warning", f"The sample data's config.json is not there ({path}).")
        return False
    try:
        cfg = SafeTabConfig.read(path)
    except ConfigError as exc:
        flash("error", "The sample data's config.json is not valid:\n" + "\n".join(f"- {p}" for p in exc.problems))
        return False
    set_config(cfg, SAMPLE, planner.reconcile_targets(planner.production_targets(), presets.production_2020(),
                                                      cfg, method()))
    return True


def load_named(cfg: SafeTabConfig, name: str, targets: dict[str, int], edited: bool = False,
               h_config: SafeTabHConfig | None | _Keep = KEEP) -> None:
    """Make `cfg` the plan under the name a link or a plan file gives it. A file or link
    may carry any name: one that is a built-in plan's ("2020 production plan", up to case
    and spelling) keeps it only with that plan's configuration, else the plan is shown as
    that plan, edited (so the sidebar, the memo and the address bar never call a changed
    plan the 2020 one); a built-in name without a configuration to compare with ("Current
    plan", or the sample's when its config.json cannot be read) gets " (copy)".
    `h_config`: the SafeTab-H plan it brings (`set_config`), in the same step of undo."""
    if plan_names.is_built_in(name):
        key = plan_names.name_key(name)
        built_in = None
        if key == plan_names.name_key(PRODUCTION):
            name, built_in = PRODUCTION, presets.production_2020()
        elif key == plan_names.name_key(SAMPLE):
            try:
                name, built_in = SAMPLE, SafeTabConfig.read(sample_config_path())
            except (ConfigError, OSError):
                pass
        if built_in is None:
            name = plan_names.suggested_name(name)
        else:
            edited = edited or built_in.to_dict() != cfg.to_dict()
    set_config(cfg, name, targets, edited, h_config)  # so undo and redo restore it as it was shown


def bind(key: str, value: Any) -> None:
    """Show `value` in the widget `key` (call before drawing the widget)."""
    st.session_state[key] = value


def is_default_plan() -> bool:
    """True while the plan is the untouched 2020 production plan (the app's default)."""
    ss = st.session_state
    return ss.get(K_SOURCE) == PRODUCTION and not ss.get(K_EDITED)


# ------------------------------------------------------------------ fragments
def sidebar_signature() -> tuple:
    """What the sidebar shows, as a comparable value (`widgets.sidebar_summary` records
    it each time it draws): the plan's name, its privacy accounting and whether undo and
    redo are possible. r and gamma are not in it: a change of either redraws only the
    page's fragment."""
    cfg = config()
    n_undo, n_redo = history.depth(st.session_state)
    return (source_label(), delta(), cfg.privacy_defn, cfg.run_us, cfg.run_pr,
            tuple(sorted((lvl.key, v) for lvl, v in cfg.budgets().items())), n_undo > 0, n_redo > 0)


def fragment_done() -> None:
    """Last line of a page fragment (`st.fragment`) that may change the plan: keep the
    address bar in step, and redraw the whole app if the sidebar summary is out of date
    (a fragment run redraws only itself)."""
    sync_url()
    if st.session_state.get(K_SIDEBAR) != sidebar_signature():
        st.rerun(scope="app")


# ------------------------------------------------------------------ messages
def flash(kind: str, text: str) -> None:
    """A message shown once, at the top of the next page drawn."""
    st.session_state.setdefault(K_FLASH, []).append((kind, text))


def show_flashes() -> None:
    """The flashed messages, as plain text: they echo names and values a user gave
    (`widgets.plain`; issue 21 item 3)."""
    msgs = st.session_state.get(K_FLASH) or []
    st.session_state[K_FLASH] = []
    for kind, text in msgs:
        {"error": st.error, "warning": st.warning, "success": st.success}.get(kind, st.info)(plain(text))


# ------------------------------------------------------------------ the URL
def current_token() -> str:
    ss = st.session_state
    return urlcodec.encode(config(), targets(), name=ss.get(K_SOURCE), edited=bool(ss.get(K_EDITED)),
                           h_config=changed_h_plan())


def set_h_plan(h_config: SafeTabHConfig | None) -> None:
    """Make `h_config` the session's SafeTab-H plan (None: the 2020 SafeTab-H plan): one
    step of undo, as any change of SafeTab-P's plan; the plan is then edited. (A scenario,
    plan file or link that brings both plans: `set_config(..., h_config=...)`, one step.)"""
    ss = st.session_state
    before = snapshot() if K_CONFIG in ss else None
    _put_h_plan(h_config)
    if before is None:
        return
    after = snapshot()
    if not before.same_plan(after):
        ss[K_EDITED] = True
        history.record(ss, before, snapshot())


def _put_h_plan(h_config: SafeTabHConfig | None) -> None:
    if h_config is None:
        st.session_state.pop(K_H_PLAN, None)
    else:
        st.session_state[K_H_PLAN] = h_config


def h_plan() -> SafeTabHConfig:
    """The session's SafeTab-H plan (the 2020 SafeTab-H plan until one is set)."""
    h = st.session_state.get(K_H_PLAN)
    return production_2020_h() if h is None else h


def changed_h_plan() -> SafeTabHConfig | None:
    """The session's SafeTab-H plan if it differs from the 2020 SafeTab-H plan, else None
    (the link, a scenario and the memo carry it only then)."""
    return history.changed_h_plan(st.session_state.get(K_H_PLAN))


def sync_url() -> None:
    """Keep ?config=<token> in the address bar in step with the configuration (none
    for the untouched 2020 production plan, the default)."""
    token = None if is_default_plan() and changed_h_plan() is None else current_token()
    have = st.query_params.get(urlcodec.PARAM)
    if token is None:
        if have is not None:
            del st.query_params[urlcodec.PARAM]
    elif have != token:
        st.query_params[urlcodec.PARAM] = token
