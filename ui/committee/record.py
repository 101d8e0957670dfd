"""The decision record as the Scenarios page shows it: the saved scenarios' plans in one
line, a scenario's history, two of its versions compared, the deleted scenarios (pandas
only; the versions are `ui.committee.scenarios.Version`)."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from calculators.config import SafeTabConfig
from calculators.levels import POPULATION_GROUP_LEVELS
from ui.committee import comparison
from ui.committee.scenarios import Scenario, Version
from ui.core import planner, typed

DIFFERS = comparison.DIFFERS


def plan_text(config: SafeTabConfig | None, delta: float, problems: Sequence[str] = ()) -> str:
    """A plan in one line: privacy definition, release budget and ε, r, γ, p, levels
    ("INVALID: ..." for a stored plan that no longer passes validation)."""
    if config is None:
        return "INVALID: " + "; ".join(problems)[:200]
    sm, u = planner.plan_summary(config, delta), planner.units(config)
    return (f"{'pure DP' if u['puredp'] else 'zCDP'}, {u['budget']} = {typed.significant(sm['rho_release'])}, "
            f"ε = {sm['eps_tight']:.3g}, r = {config.max_race_codes}, γ = {config.gamma:g}, "
            f"p = {config.zero_suppression_chance:g}, {sm['levels_tabulated']} levels")


def _when(at: str) -> str:
    return at.replace("T", " ")[:16]


def history_frame(versions: Sequence[Version], delta: float) -> pd.DataFrame:
    """One row per version, newest first: its number, the change, who, when (UTC), the
    name it had, its plan in one line and its note."""
    return pd.DataFrame([{
        "Version": v.number,
        "Change": v.what,
        "By": v.author,
        "When (UTC)": _when(v.at),
        "Name": v.scenario.name,
        "Plan": plan_text(v.scenario.config, delta, v.scenario.problems),
        "Note": v.scenario.note,
    } for v in versions], columns=["Version", "Change", "By", "When (UTC)", "Name", "Plan", "Note"])


def deleted_frame(versions: Sequence[Version]) -> pd.DataFrame:
    """The deleted scenarios (their deleting versions), most recently deleted first."""
    return pd.DataFrame([{
        "Name": v.scenario.name,
        "Deleted by": v.author,
        "Deleted (UTC)": _when(v.at),
        "Versions": v.number,
        "Note": v.scenario.note,
    } for v in versions], columns=["Name", "Deleted by", "Deleted (UTC)", "Versions", "Note"])


def version_title(v: Version) -> str:
    """A version's column title: "version 2 (bo@example.org)"."""
    return f"version {v.number} ({v.author})"


def compare_versions(a: Version, b: Version, delta: float) -> pd.DataFrame:
    """Two versions of a scenario side by side, one row per item: the name and the note,
    the settings and privacy accounting (`comparison.summary`), every config.json key
    (`comparison.config_keys`) and the MOE target of every level, with "Differs"."""
    names = comparison.unique_names([version_title(a), version_title(b)])
    rows: list[dict] = []

    def add(item: str, left, right) -> None:
        rows.append({"Item": item, names[0]: left, names[1]: right, DIFFERS: left != right})

    sa, sb = a.scenario, b.scenario
    add("Name", sa.name, sb.name)
    add("Note", sa.note or "(none)", sb.note or "(none)")
    if sa.config is None or sb.config is None:
        add("Plan", plan_text(sa.config, delta, sa.problems), plan_text(sb.config, delta, sb.problems))
        return pd.DataFrame(rows)
    plans = [comparison.Plan(n, s.config, s.targets) for n, s in zip(names, (sa, sb), strict=True)]
    for table, label in ((comparison.summary(plans, delta), "Quantity"), (comparison.config_keys(plans), "Key")):
        for r in table.to_dict("records"):
            item = r[label] if label == "Quantity" else f"config.json: {r[label]}"
            add(item, str(r[names[0]]), str(r[names[1]]))
    for lvl in POPULATION_GROUP_LEVELS:
        ta, tb = _target(sa, lvl.key), _target(sb, lvl.key)
        if ta or tb:
            add(f"MOE target {lvl.key}", ta or "(none)", tb or "(none)")
    return pd.DataFrame(rows)


def _target(s: Scenario, key: str) -> str:
    value = dict(s.targets).get(key)
    return "" if value is None else f"{value:,}"
