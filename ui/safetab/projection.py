"""The national projection in the app, pure (no Streamlit): the shipped and uploaded
group-size profiles, the tables the pages show, why the nation differs from the sample
(scale), and the decision memo's helper `national_outcome`.

The figures are `calculators.projection.project` (SPEC §1: the expected outcome of a plan
over a histogram of true group sizes, following the engine's rules exactly); this module
only loads profiles (cached by file, so a control change costs the projection alone)
and words and labels the results.
"""

from __future__ import annotations

import math
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd

from calculators import plan as pm
from calculators.config import SafeTabConfig
from calculators.levels import ITERATION_LEVEL_NAMES, PopulationGroupLevel
from calculators.projection import MAX_PROFILE_BYTES, Profile, ProfileError, Projection, project
from calculators.projection import profile_lines as _profile_lines
from ui.core.plaintext import plain  # names of profiles and files are the user's, never Markdown (issue 21 item 3)

ROOT = Path(__file__).resolve().parent.parent.parent
PROFILES = ROOT / "sample_data" / "profiles"

NATIONAL, SAMPLE, UPLOADED = "national", "sample", "uploaded"
#: The shipped profiles: choice -> (file in sample_data/profiles, what the app calls it).
SHIPPED = {
    NATIONAL: ("nation330.profile.json.gz", "National: synthetic nation of 330 million persons"),
    SAMPLE: ("sample.profile.json", "Sample: the shipped 50,000 persons"),
}
#: The largest profile file the app accepts from an upload.
MAX_UPLOAD_BYTES = MAX_PROFILE_BYTES

#: How a statistical agency gets its own profile (shown wherever a projection is).
HOW_TO_OWN = (
    "The national profile shipped with the app is **synthetic**: a nation of 330 million invented persons made "
    "by `python -m engine sample` on the 2020 spec files, so its figures show what a plan does at national "
    "scale, not what it did to the real 2020 data. A statistical agency computes the profile of its real data "
    "inside its secure environment with `python -m engine profile PARAMS_DIR DATA_DIR profile.json.gz` (the same "
    "counting as a run; no noise, minutes at national scale) and loads it here with **Load a profile**, in an "
    "app running inside that environment. Such a profile is **confidential**: it holds exact counts of the "
    "data, and so does every projection made from it."
)

#: The gist of HOW_TO_OWN, always in view beside the figures (HOW_TO_OWN opens on demand).
OWN_IN_SHORT = ("An agency's own profile: `python -m engine profile` inside its secure environment, then **Load a "
                "profile**; it is confidential, as every figure made from it.")

#: Display labels of the projection's columns.
LABELS = {
    "groups": "Groups", "total_only": "Total only", "total_only_published": "Total only (published)", "age4": "Sex × age4", "age9": "Sex × age9",
    "age23": "Sex × age23", "tables": "With a table", "suppressed": "Suppressed", "t1_rows": "T1 rows",
    "t2_rows": "T2 rows", "mean_abs_error": "Mean |error| of a total",
}
LEVEL = "Level"


# ------------------------------------------------------------------ profiles
def shipped_path(which: str) -> Path:
    return PROFILES / SHIPPED[which][0]


@lru_cache(maxsize=8)
def _load(path: str, mtime_ns: int, size: int) -> Profile:
    """A profile file, parsed once per version of the file (the key has its time and size)."""
    from engine.reports.profile import read_profile

    return read_profile(path)


def shipped(which: str) -> Profile | None:
    """The shipped profile `which` (NATIONAL or SAMPLE), None if the file is not there;
    ProfileError if it is there but cannot be used."""
    path = shipped_path(which)
    try:
        st = path.stat()
    except OSError:
        return None
    return _load(str(path), st.st_mtime_ns, st.st_size)


def available() -> dict[str, str]:
    """The shipped profiles that are there: choice -> label."""
    return {k: label for k, (_f, label) in SHIPPED.items() if shipped_path(k).is_file()}


def read_upload(raw: bytes, name: str) -> Profile:
    """An uploaded profile, checked (`calculators.projection.Profile.parse`: bounded, every
    number finite and whole, counts adding up); ProfileError with a plain message."""
    if len(raw) > MAX_UPLOAD_BYTES:
        raise ProfileError([f"the file is {len(raw):,} bytes; a profile may have at most {MAX_UPLOAD_BYTES:,}"],
                           name)
    if not raw:
        raise ProfileError(["the file is empty"], name)
    return Profile.parse(raw, name)


def describe(profile: Profile) -> str:
    """The profile's name (as Markdown-safe text), size and nature (synthetic or CONFIDENTIAL)."""
    kind = "synthetic (invented persons)" if profile.synthetic else "CONFIDENTIAL"
    return f"{plain(profile.name)}: {profile.persons:,} persons, {kind}"


# ------------------------------------------------------------------ the memo's helper
def national_outcome(config: SafeTabConfig, profile: Profile | None = None) -> pd.DataFrame:
    """The national outcome of a plan, per population group level and in total.

    Signature: ``national_outcome(config: SafeTabConfig, profile: Profile | None = None)
    -> pandas.DataFrame``; no Streamlit. `profile` defaults to the shipped national one
    (`shipped(NATIONAL)`; ProfileError if it is missing). One row per level the plan
    tabulates, then a row with geo "TOTAL" (iteration_level missing, level "All levels").
    Columns: geo, iteration_level, level (label, e.g. "COUNTY Detailed"), groups,
    total_only, age4, age9, age23 (expected numbers of groups with only a total, or with
    each sex x age table), suppressed, t1_rows, t2_rows, each with ``_sd`` (standard
    deviation over the noise), mean_abs_error and mean_abs_error_sd (expected |published
    - true| of a published total, persons). ``df.attrs`` holds "profile" (its name),
    "persons", "synthetic", "confidential", "notice" (one sentence) and "notes" (what the
    projection assumes, e.g. that coterminous copying is ignored).
    """
    if profile is None:
        profile = shipped(NATIONAL)
        if profile is None:
            raise ProfileError([f"the shipped national profile {shipped_path(NATIONAL)} is missing"], "app")
    proj = project(config, profile)
    df = proj.frame()
    df.insert(2, "level", [_label(r) for r in proj.rows] + ["All levels"])
    df.attrs.update(profile=profile.name, persons=profile.persons, synthetic=profile.synthetic,
                    confidential=profile.confidential, notice=profile.notice, notes=list(proj.notes))
    return df


def _label(row: dict) -> str:
    return f"{row['geo']} {ITERATION_LEVEL_NAMES[int(row['iteration_level'])]}"


# ------------------------------------------------------------------ what the pages show
#: The figures whose change from the reference plan the per-level table shows (`display_table`):
#: key of LABELS -> header of the change column ("published" is the published totals, T1 rows).
CHANGE_COLUMNS = {"t1_rows": "Δ Published", "tables": "Δ With table", "suppressed": "Δ Suppressed"}


def display_table(proj: Projection, columns: tuple[str, ...] | None = None,
                  reference: Projection | None = None, changes: tuple[str, ...] | None = None) -> pd.DataFrame:
    """Per level and in total, expected figures rounded to whole groups and rows (the
    error to 0.1 person); `columns` picks and orders the figures (keys of LABELS). With a
    `reference` projection (the reference plan's), three columns more (`CHANGE_COLUMNS`):
    the signed change of published totals, groups with a table and suppressed groups,
    plan - reference, by `calculators.plan.fmt_change` ("+1,234", "−2,312,345"; a dash
    for a level one of the plans does not tabulate); `changes` picks some of them (keys of
    CHANGE_COLUMNS)."""
    columns = columns or ("groups", "tables", "age4", "age9", "age23", "total_only_published", "suppressed", "t1_rows",
                          "t2_rows", "mean_abs_error")
    ref = None if reference is None else {_row_label(r): r for r in reference.rows + [reference.total]}
    rows = []
    for r in proj.rows + [proj.total]:
        out = {LEVEL: _row_label(r)}
        for c in columns:
            v = _value(r, c)
            out[LABELS[c]] = round(v, 1) if c == "mean_abs_error" else (None if math.isnan(v) else int(round(v)))
        if ref is not None:
            base = ref.get(out[LEVEL])
            for c, head in CHANGE_COLUMNS.items():
                if changes is not None and c not in changes:
                    continue
                out[head] = pm.fmt_change(None if base is None else _value(r, c) - _value(base, c), pm.COUNT)
        rows.append(out)
    return pd.DataFrame(rows)


def _row_label(row: dict) -> str:
    return _label(row) if row["geo"] != "TOTAL" else "All levels"


def _value(row: dict, key: str) -> float:
    """A figure of a projection row, with the two the rows do not hold: "tables" (any
    sex x age table) and "total_only_published" (a total only, published: the
    suppressed are not in it)."""
    if key == "tables":
        return row["age4"] + row["age9"] + row["age23"]
    if key == "total_only_published":
        return row["total_only"] - row["suppressed"]
    return row[key]


#: Columns of the compact national table (`geography_frame`): headline key -> header.
GEOGRAPHY_COLUMNS = {
    "occupied": "With a person", "published": "Published", "total_only": "Total only", "age4": "Sex×age4",
    "age9": "Sex×age9", "age23": "Sex×age23",
    "suppressed": "Suppressed", "empty_published": "Empty, published", "persons_published_share": "Persons covered",
}


#: The label of a row of changes under a geography's row (`geography_frame`).
CHANGE_ROW = "  change"


def geography_frame(proj: Projection, reference: Projection | None = None) -> pd.DataFrame:
    """The headline per geography (nation, state, county, tract, place, AIANNH, Puerto
    Rico; `calculators.plan.geography_table`) and for all levels, as text by the one
    format rule (`calculators.plan.fmt`); with a `reference` projection, a geography whose
    figures differ from the reference's has a row of signed changes under it
    (`CHANGE_ROW`: "−2,312,345", "+1.23 points"), so the table stays narrow enough for a
    laptop screen."""
    ref = {r["geography"]: r for r in pm.geography_table(reference)} if reference is not None else {}
    rows = []
    for r in pm.geography_table(proj):
        rows.append({"Geography": r["geography"],
                     **{head: pm.fmt(r[key], pm.HEADLINE[key][1]) for key, head in GEOGRAPHY_COLUMNS.items()}})
        base = ref.get(r["geography"])
        if base is None:
            continue
        change = {head: pm.fmt_change(r[key] - base[key], pm.HEADLINE[key][1]) for key, head in
                  GEOGRAPHY_COLUMNS.items()}
        if any(v not in ("0", "0 points") for v in change.values()):
            rows.append({"Geography": CHANGE_ROW, **change})
    return pd.DataFrame(rows)


def headline_changes(proj: Projection, reference: Projection) -> list[tuple[str, str, str, str]]:
    """The national headline against the reference: (name, value, change, kind) per
    figure of `calculators.plan.HEADLINE`, formatted by the one rule."""
    a, b = pm.national_headline(proj), pm.national_headline(reference)
    ch = pm.national_changes(b, a)
    return [(name, pm.fmt(a[k], kind), pm.fmt_change(ch[k], kind), kind) for k, (name, kind) in pm.HEADLINE.items()]


def level_summary(proj: Projection, level: PopulationGroupLevel) -> dict | None:
    """The expected figures of one level with their standard deviations, or None."""
    r = proj.row(level)
    if r is None:
        return None
    tables = r["age4"] + r["age9"] + r["age23"]
    return {**r, "tables": tables, "share_tables": tables / r["groups"] if r["groups"] else math.nan,
            "share_suppressed": r["suppressed"] / r["groups"] if r["groups"] else math.nan}


def _median_size(profile: Profile, level: PopulationGroupLevel) -> float:
    """Median true size of the level's non-empty adaptive groups (nan if none)."""
    lp = profile.levels.get(level)
    if lp is None:
        return math.nan
    h = lp.adaptive
    keep = h.sizes > 0
    sizes, counts = h.sizes[keep], h.counts[keep]
    if not counts.sum():
        return math.nan
    cum = np.cumsum(counts)
    return float(sizes[np.searchsorted(cum, (cum[-1] + 1) // 2)])


def scale_notes(national: Projection, sample: Projection, limit: int = 4) -> list[str]:
    """Where the national outcome differs from what the sample shows (its expected run) by
    10 points or more (share of groups with a table, or suppressed), why, in words: the
    same plan, groups of other sizes (scale). The first item is the explanation; one item
    per level follows, the largest differences first (at most `limit`)."""
    diffs = []
    for r in national.rows:
        lvl = PopulationGroupLevel(r["geo"], int(r["iteration_level"]))
        s = sample.row(lvl)
        if s is None or not r["groups"] or not s["groups"]:
            continue
        nat = (r["age4"] + r["age9"] + r["age23"]) / r["groups"]
        smp = (s["age4"] + s["age9"] + s["age23"]) / s["groups"]
        nat_sup, smp_sup = r["suppressed"] / r["groups"], s["suppressed"] / s["groups"]
        gap = max(abs(nat - smp), abs(nat_sup - smp_sup))
        if gap >= 0.10:
            diffs.append((gap, lvl, nat, smp, nat_sup, smp_sup))
    if not diffs:
        return []
    diffs.sort(key=lambda d: -d[0])
    out = [f"Why the nation differs from the {sample.profile.persons:,}-person sample: the plan is the same, the "
           f"groups are not. A group's table and suppression depend only on its size and the plan. With "
           f"{national.profile.persons:,} persons, and its own lists of areas and of race and ethnicity groups, "
           "the nation's groups have other sizes: larger where its areas hold more persons, smaller where it "
           "splits persons into more detailed groups. So the same thresholds Θ and suppression threshold T fall "
           "elsewhere in the distribution of sizes (scale)."]
    for _gap, lvl, nat, smp, nat_sup, smp_sup in diffs[:limit]:
        m_nat, m_smp = _median_size(national.profile, lvl), _median_size(sample.profile, lvl)
        text = (f"{lvl.geo} {ITERATION_LEVEL_NAMES[lvl.iteration_level]}: {_pct(nat)} of groups get a sex × age "
                f"table nationally, {_pct(smp)} in the sample"
                + (f"; {_pct(nat_sup)} are suppressed, {_pct(smp_sup)} in the sample" if max(nat_sup, smp_sup) > 0
                   else ""))
        if not (math.isnan(m_nat) or math.isnan(m_smp)):
            text += f" (median non-empty group: {m_nat:,.0f} persons nationally, {m_smp:,.0f} in the sample)"
        out.append(text + ".")
    if len(diffs) > limit:
        out.append(f"{len(diffs) - limit} more level(s) differ by 10 points or more, for the same reason.")
    return out


def profile_lines(profile: Profile, what: str) -> list[str]:
    """The lines a download of projected figures starts with: what they are, the profile
    they come from, and CONFIDENTIAL for a confidential profile (as `Projection.header_lines`)."""
    return [f"SafeTab-P Studio national projection: {what} Expected over the noise (no noise drawn).",
            *_profile_lines(profile)]


def _pct(x: float) -> str:
    if x == 0:
        return "0 %"
    if x < 0.001:
        return "under 0.1 %"
    return f"{100 * x:.1f} %" if x < 0.1 else f"{100 * x:.0f} %"


# ------------------------------------------------------------------ plans side by side
#: Figures the Scenarios page compares plans on: key -> (title, help).
MEASURES = {
    "occupied_suppressed": ("Groups with a person, suppressed", "Expected groups with at least one person whose "
                            "total is suppressed."),
    "occupied_published": ("Groups with a person, published", "Expected groups with at least one person that "
                           "publish a total."),
    "occupied_with_table": ("Groups with a person and a table", "Expected groups with at least one person that get "
                            "a sex × age table."),
    "empty_published": ("Empty groups, published", "Expected groups with no person that publish a total."),
    "tables": ("Groups with a table", "Expected groups that get a sex × age table (age4, age9 or age23)."),
    "age23": ("Groups with sex × age23", "Expected groups that get the most detailed table."),
    "suppressed": ("Suppressed groups", "Expected groups whose total is suppressed (sub-state levels)."),
    "t1_rows": ("T1 rows", "Expected published totals."),
    "t2_rows": ("T2 rows", "Expected published sex × age rows (cells and sex marginals)."),
    "mean_abs_error": ("Mean |error| of a total", "Expected |published − true| of a published total (persons)."),
}


def most_different(plans, profile: Profile) -> list[str]:
    """The MEASURES ordered by how much the plans differ on them over all levels: the
    largest relative spread (max - min) / max of the "All levels" figure first, so that a
    comparison opens on the figures that differ most."""
    projs = [project(cfg, profile) for _name, cfg in plans]
    return sorted(MEASURES, key=lambda m: -_spread([_value(p.total, m) for p in projs]))


#: The columns of `plans_headline`: fewer than per geography, so that a long plan name fits beside them.
PLAN_COLUMNS = {"occupied": "With a person", "published": "Published", "with_table": "With a table",
                "suppressed": "Suppressed", "empty_published": "Empty, published",
                "persons_published_share": "Persons covered"}


def plans_headline(plans, profile: Profile) -> pd.DataFrame:
    """Per plan (rows), the national headline about the groups that exist (the columns of
    `geography_frame`, for all levels) as text by the one format rule, and under each plan
    after the first that differs from it, a row of its changes from the first plan
    (`CHANGE_ROW`): narrow enough for a laptop screen."""
    heads = [(name, pm.national_headline(project(cfg, profile))) for name, cfg in plans]
    rows = []
    for k, (name, h) in enumerate(heads):
        rows.append({"Plan": name, **{head: pm.fmt(h[key], pm.HEADLINE[key][1])
                                      for key, head in PLAN_COLUMNS.items()}})
        if k:
            first = heads[0][1]
            change = {head: pm.fmt_change(h[key] - first[key], pm.HEADLINE[key][1])
                      for key, head in PLAN_COLUMNS.items()}
            if any(v not in ("0", "0 points") for v in change.values()):
                rows.append({"Plan": CHANGE_ROW, **change})
    return pd.DataFrame(rows)


#: Figures of the groups that exist the Scenarios page compares per geography
#: (`plans_by_geography`): key of `calculators.plan.HEADLINE` -> title.
GEOGRAPHY_MEASURES = {
    "suppressed": "Suppressed", "published": "Publish a total", "with_table": "With a sex × age table",
    "total_only": "Total only (not suppressed)", "empty_published": "Empty groups, published",
    "persons_published_share": "Persons covered",
}


def _spread(values: list[float]) -> float:
    """(max - min) / max |value| of the values that are numbers (0 if none or all 0)."""
    vals = [v for v in values if not math.isnan(v)]
    top = max((abs(v) for v in vals), default=0.0)
    return (max(vals) - min(vals)) / top if vals and top > 0 else 0.0


def geography_most_different(plans, profile: Profile) -> list[str]:
    """The GEOGRAPHY_MEASURES ordered by how much the plans differ on them for the groups
    that exist, over all levels (`calculators.plan.national_headline`): the largest
    relative spread (max - min) / max first, ties in the order of GEOGRAPHY_MEASURES."""
    heads = [pm.national_headline(project(cfg, profile)) for _name, cfg in plans]
    return sorted(GEOGRAPHY_MEASURES, key=lambda m: -_spread([h[m] for h in heads]))


def plans_by_geography(plans, profile: Profile, measure: str) -> pd.DataFrame:
    """One row per geography (nation, state, county, tract, place, AIANNH, Puerto Rico;
    `calculators.plan.geography_table`) and "All levels"; one column per plan: the
    measure (a key of GEOGRAPHY_MEASURES) for the groups with at least one person, as text
    by the one format rule; after each plan but the first, "Δ <plan>": its signed change
    from the first plan (`calculators.plan.fmt_change`). A geography a plan does not
    tabulate is a dash. `plans` are (name, SafeTabConfig) pairs."""
    kind = pm.HEADLINE[measure][1]
    tables = [(name, {r["geography"]: r[measure] for r in pm.geography_table(project(cfg, profile))})
              for name, cfg in plans]
    geos = [g for g in [*pm.GEOGRAPHIES, "All levels"] if any(g in t for _n, t in tables)]
    rows = []
    for g in geos:
        row = {"Geography": g}
        first = tables[0][1].get(g)
        for k, (name, t) in enumerate(tables):
            v = t.get(g)
            row[name] = pm.fmt(v, kind)
            if k:
                row[f"Δ {name}"] = pm.fmt_change(None if v is None or first is None else v - first, kind)
        rows.append(row)
    return pd.DataFrame(rows)


def compare_plans(plans, profile: Profile, measure: str) -> pd.DataFrame:
    """One row per level (and All levels), one column per plan: the measure's expected
    national value (rounded as shown); "Differs" when the shown values do not all agree.
    `plans` are (name, SafeTabConfig) pairs; a level a plan does not tabulate is empty.
    ``df.attrs["notes"]``: the projections' notes (what they assume), each once."""
    projs = [(name, project(cfg, profile)) for name, cfg in plans]
    labels: list[str] = []
    values: dict[str, dict[str, float]] = {}
    for name, proj in projs:
        values[name] = {}
        for r in proj.rows + [proj.total]:
            lab = _row_label(r)
            if lab not in labels and lab != "All levels":
                labels.append(lab)
            v = _value(r, measure)
            values[name][lab] = v
    labels.append("All levels")
    rows = []
    for lab in labels:
        row = {LEVEL: lab}
        vals = []
        for name, _p in projs:
            v = values[name].get(lab)
            if v is not None and not math.isnan(v):
                v = round(v, 1) if measure == "mean_abs_error" else int(round(v))
            row[name] = v
            vals.append(v)
        present = [v for v in vals if v is not None and not (isinstance(v, float) and math.isnan(v))]
        row["Differs"] = len(present) != len(vals) or (len(set(present)) > 1)
        rows.append(row)
    df = pd.DataFrame(rows)
    df.attrs["notes"] = list(dict.fromkeys(n for _name, proj in projs for n in proj.notes))
    return df
