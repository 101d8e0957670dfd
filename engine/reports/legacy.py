"""A legacy release by cell suppression on SafeTab-P's data: a study, never a release.

Before differential privacy, detailed race and ethnicity tables were protected by
suppression. For one population group level (geography level, iteration level) and the
geography level above it, this module builds that release from the exact counts:

1. **Group threshold.** A group's sex x age table and total are published only when the
   group has at least `min_population` persons (100 by default: the minimum population of
   the 2000 and 2010 detailed-group products). Smaller groups are withheld whole.
2. **Primary suppression.** Every count of 1 to `min_cell` - 1 persons (cells, sex
   marginals, totals; the frequency rule of `methods.cell_suppression`), in published
   tables and in withheld groups alike, must keep `protection` persons of uncertainty up
   and down (down no further than 0).
3. **Complementary suppression** by the seed's sequential LP
   (`methods.cell_suppression.protect`, with the seed's capacities by default: a count
   moves by at most its own value in a deviation, so a zero count is never a complement;
   `capacity="unbounded"` lets counts rise without limit) against every relation an attacker knows: in each
   table the cells of a sex add up to its marginal and the two marginals to the total; and
   across the geography hierarchy each cell of a parent region (e.g. a state) is the sum of
   the same cell of its child regions (its counties), plus the part of the parent in no
   child when the children do not cover it (e.g. persons in no place). Nesting and coverage
   come from GRF-C, which is public. With `hierarchy=False` each level is protected alone.
4. **The audit** (`methods.cell_suppression.audit`) of every withheld count, always with
   every relation, the hierarchy included: the interval an attacker derives from what is
   published, and whether the protection holds.

The output is NOT a SafeTab-P release: published counts are exact counts of the
confidential input. It exists to compare methods on synthetic or otherwise public data.
`write_legacy` writes it in the SafeTab-P layout with withheld counts marked "D".
"""

from __future__ import annotations

import hashlib
import json
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import scipy.sparse as sp

from calculators.levels import (
    GEO_LEVELS,
    ITERATION_LEVEL_NAMES,
    STAT_LEVEL_AGE_EDGES,
    PopulationGroupLevel,
    age_bins,
)
from methods import cell_suppression as cs

#: The geography level whose regions nest the regions of each level (None: no parent).
PARENT: dict[str, str | None] = {
    "USA": None, "STATE": "USA", "COUNTY": "STATE", "TRACT": "COUNTY", "PLACE": "STATE", "AIANNH": None,
    "PR-STATE": None, "PR-COUNTY": "PR-STATE", "PR-TRACT": "PR-COUNTY", "PR-PLACE": "PR-STATE",
}
#: Age bins of the legacy table -> the stat level whose bins they are.
AGES = {4: 1, 9: 2, 23: 3}

# Status of each count.
PUBLISHED, PRIMARY, COMPLEMENTARY, GROUP_THRESHOLD, FALLBACK = 0, 1, 2, 3, 4
STATUS_NAMES = {PUBLISHED: "published", PRIMARY: "primary", COMPLEMENTARY: "complementary",
                GROUP_THRESHOLD: "group below threshold", FALLBACK: "solver fallback"}
#: The mark of a withheld count in COUNT columns (as the Census Bureau's "(D)").
WITHHELD = "D"
#: Largest study (counts of the level and its parent) held in memory.
MAX_VALUES = 20_000_000

NOTE = ("NOT A SAFETAB-P RELEASE. A legacy cell-suppression study: every published count is an EXACT "
        "count of the input, without noise. Use it to compare methods on synthetic or public data; "
        "never publish it from confidential data.")


@dataclass(frozen=True)
class LegacyOptions:
    """The rules of the legacy release (command line: `python -m engine legacy --help`)."""

    geo: str = "COUNTY"
    iteration_level: int = 2
    min_population: int = 100
    min_cell: int = 3
    protection: int = 3
    ages: int = 23
    hierarchy: bool = True
    singletons: bool = True
    sliding: bool = False
    cost: str = "value"
    capacity: str = "value"  # the seed's capacity model ("value"), or "unbounded"
    refine: bool = False  # the seed's refinement run (a second pass over the first pass's complements)
    time_limit: float = cs.LP_TIME_LIMIT
    part_time_limit: float = cs.PART_TIME_LIMIT
    time_budget: float = 1800.0

    def check(self) -> None:
        """ValueError naming the option and its value when an option is out of range."""
        if self.geo not in GEO_LEVELS:
            raise ValueError(f"--geo {self.geo!r} is not a geography level ({', '.join(GEO_LEVELS)})")
        if self.iteration_level not in (1, 2):
            raise ValueError(f"--iteration-level must be 1 (Regional) or 2 (Detailed), not {self.iteration_level}")
        for name in ("min_population", "min_cell", "protection"):
            v = getattr(self, name)
            if not 0 <= v <= 1_000_000_000:
                raise ValueError(f"--{name.replace('_', '-')} must be between 0 and 1,000,000,000 (got {v})")
        if self.ages not in AGES:
            raise ValueError(f"--ages must be 4, 9 or 23 (got {self.ages})")
        if self.cost not in ("value", "count"):
            raise ValueError(f"--cost must be 'value' or 'count' (got {self.cost!r})")
        if self.capacity not in cs.CAPACITIES:
            raise ValueError(f"--capacity must be one of {', '.join(cs.CAPACITIES)} (got {self.capacity!r})")
        for name in ("time_limit", "part_time_limit", "time_budget"):
            v = getattr(self, name)
            if not 0 < v <= 86_400:
                raise ValueError(f"--{name.replace('_', '-')} must be more than 0 and at most 86,400 seconds (got {v})")

    @property
    def level(self) -> PopulationGroupLevel:
        return PopulationGroupLevel(self.geo, self.iteration_level)


@dataclass
class LegacyTables:
    """One geography level of the study; arrays are (groups, values) in the universe order
    (group = region index * iterations + iteration index), values per group: the 2 x bins
    cells (sex 1 ascending ages, then sex 2), the two sex marginals, the total."""

    level: PopulationGroupLevel
    regions: np.ndarray
    codes: np.ndarray
    values: np.ndarray  # int64 true counts
    status: np.ndarray  # uint8, see STATUS_NAMES
    low: np.ndarray  # audit interval of withheld counts (NaN where published)
    high: np.ndarray
    exact: np.ndarray  # withheld counts the audit recovers exactly
    underprotected: np.ndarray  # primaries whose protection the audit does not find

    @property
    def total_published(self) -> np.ndarray:
        """THE definition of a published group, used by every count, share, chart and
        summary of the study: a group's total is published when its total count is
        released, i.e. withheld neither by the group threshold nor by primary,
        complementary or solver-fallback suppression (its COUNT in t1/ is a number, not
        "D")."""
        return self.status[:, -1] == PUBLISHED

    @property
    def table_published(self) -> np.ndarray:
        """Groups with a sex by age table: at least one sex x age cell is released (the
        others may be "D")."""
        return (self.status[:, :-3] == PUBLISHED).any(axis=1)

    @property
    def above_threshold(self) -> np.ndarray:
        """Groups that reach the minimum population: they have a row in t1/ and a table in
        t2/, but any of their counts, the total included, may still be withheld ("D");
        the others are withheld whole (suppressed/). Not the same as `total_published`."""
        return self.status[:, -1] != GROUP_THRESHOLD

    @property
    def withheld(self) -> np.ndarray:
        return self.status != PUBLISHED


@dataclass
class LegacyRelease:
    options: LegacyOptions
    tables: list[LegacyTables]  # the level, then its parent (with the hierarchy)
    bins: list[tuple[int, int]]
    lps: int = 0
    parts: int = 0
    notes: list[str] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)

    def summary(self, narrow: float = 2.0) -> dict:
        """Counts per geography level, for the manifest and the app (`narrow`: the widest
        audit interval, in persons, still called narrow)."""
        out = {}
        for t in self.tables:
            pub = t.total_published  # the groups counted as published, everywhere below
            above = t.above_threshold
            persons = t.values[:, -1]
            in_tab = np.broadcast_to(above[:, None], t.status.shape)
            total_withheld = above & ~pub
            width = t.high - t.low
            w = t.withheld
            with np.errstate(invalid="ignore"):
                narrow_m = w & ~t.exact & (width <= narrow)
            out[t.level.key] = {
                "groups": int(t.values.shape[0]),
                "groups_with_persons": int((persons > 0).sum()),
                # groups whose total is published (t.total_published), over all groups and over
                # the groups with persons: each share is over one set of groups
                "groups_published": int(pub.sum()),
                "groups_with_persons_published": int((pub & (persons > 0)).sum()),
                "groups_with_table": int(t.table_published.sum()),
                "groups_above_threshold": int(above.sum()),
                "groups_below_threshold": int((~above).sum()),
                # groups that reach the minimum population whose total is nevertheless "D", by reason
                "groups_total_withheld": {STATUS_NAMES[k]: int((total_withheld & (t.status[:, -1] == k)).sum())
                                          for k in (PRIMARY, COMPLEMENTARY, FALLBACK)},
                "groups_with_persons_total_withheld": {
                    STATUS_NAMES[k]: int((total_withheld & (persons > 0) & (t.status[:, -1] == k)).sum())
                    for k in (PRIMARY, COMPLEMENTARY, FALLBACK)},
                "persons_in_groups": int(persons.sum()),
                "persons_in_published_groups": int(persons[pub].sum()),
                "counts_in_tables_above_threshold": int(in_tab.sum()),
                "counts_published": int((t.status == PUBLISHED).sum()),
                "withheld_primary": int((t.status == PRIMARY).sum()),
                "withheld_complementary": int((t.status == COMPLEMENTARY).sum()),
                "withheld_fallback": int((t.status == FALLBACK).sum()),
                "cells_published": int((t.status[:, :-3] == PUBLISHED).sum()),
                "cells_in_tables_above_threshold": int(above.sum() * (t.values.shape[1] - 3)),
                "persons_in_withheld_cells_of_tables_above_threshold": int(
                    t.values[:, :-3][(t.status[:, :-3] != PUBLISHED) & in_tab[:, :-3]].sum()),
                "audit": {
                    "withheld_counts": int(w.sum()),
                    "recovered_exactly": int(t.exact.sum()),
                    "recovered_exactly_nonzero": int((t.exact & (t.values > 0)).sum()),
                    f"within_{narrow:g}_persons": int(narrow_m.sum()),
                    "withheld_group_totals_recovered_exactly": int((t.exact[:, -1] & ~pub).sum()),
                    "primaries_underprotected": int(t.underprotected.sum()),
                    "not_audited": int((w & (np.isnan(t.low) | np.isnan(t.high))).sum()),
                },
            }
        return out


def solver_notes(notes: list[str]) -> list[str]:
    """The solver's notes, one per kind, each with the number of connected parts it
    concerns ("2 connected parts: an LP did not finish ..."), so that a reader knows how
    much was withheld whole and why."""
    return [f"{n} connected part{'s' if n > 1 else ''}: {note}" for note, n in sorted(Counter(notes).items())]


def reasons_in_words(by_reason: dict[str, int]) -> str:
    """Counts by the reason they are withheld, in words: {"primary": 0, "solver fallback":
    36} -> "36 by the solver fallback"."""
    words = {"primary": "as small counts", "complementary": "by complementary suppression",
             "solver fallback": "by the solver fallback"}
    return ", ".join(f"{n:,} {words[k]}" for k, n in by_reason.items() if n)


def format_summary(rel: LegacyRelease) -> list[str]:
    """What `python -m engine legacy` says about a study, line by line: per level, how
    many groups have a published total (`LegacyTables.total_published`: a total withheld
    as "D" by any suppression is not published), the counts withheld by each kind of
    suppression, the solver fallback among them, and what the fallback means."""
    lines = []
    summary = rel.summary()
    for key, s in summary.items():
        a = s["audit"]
        why = reasons_in_words(s["groups_total_withheld"])
        n = sum(s["groups_total_withheld"].values())
        above = (f"{s['groups_above_threshold']:,} reach the minimum population of {rel.options.min_population:,}"
                 + (f"; the total{'s' if n > 1 else ''} of {n:,} of those {'are' if n > 1 else 'is'} withheld "
                    f"as {WITHHELD}: {why}" if n else ""))
        lines.append(
            f"{key}: {s['groups_published']:,} of {s['groups']:,} groups have a published total ({above}); "
            f"{s['counts_published']:,} counts published; withheld: {s['withheld_primary']:,} small counts (primary), "
            f"{s['withheld_complementary']:,} complementary, {s['withheld_fallback']:,} by the solver fallback; "
            f"audit: {a['recovered_exactly']:,} withheld counts recovered exactly, "
            f"{a['primaries_underprotected']:,} primaries under-protected.")
    fallback = sum(s["withheld_fallback"] for s in summary.values())
    if fallback:
        lines.append(
            f"Solver fallback: {fallback:,} counts were withheld without being small or chosen as complements. "
            "Where the linear program that picks complementary suppressions could not protect the small counts of "
            "a connected part of the tables cell by cell, every count of that part was withheld as "
            f"{WITHHELD}, group totals included: a group whose total is {WITHHELD} keeps its row in t1/ but has no "
            "published total. The solver's notes:")
    elif rel.notes:
        lines.append("Notes from the solver:")
    return lines + [f"  {note}" for note in rel.notes]


# ------------------------------------------------------------------ the study
def legacy_release(prepared, options: LegacyOptions, progress=None, reuse=None) -> LegacyRelease:
    """The legacy release of `options.level` (and its parent level) from `prepared`
    (`engine.run.prepare`); `progress(stage, done, total)` as the engine's.

    `reuse(key)`, when given, returns a dict in which the release is kept under "value",
    `key` being a digest of everything the release is made from (`_inputs_key`: the counts
    of both levels, their relations, which of them are withheld, primary or singletons, and
    the options). The release asked for again from the same inputs is taken from it, not
    solved again: a plan's budgets and thresholds, which the legacy release does not read,
    change the SafeTab-P side of a study, not this."""
    options.check()
    geo = prepared.inputs.geography
    lvl = options.level
    if geo.n_regions(lvl.geo) == 0:
        raise ValueError(f"--geo {lvl.geo}: this run has no {lvl.geo} regions (see run_us, run_pr and "
                         "state_filter_us in config.json)")
    parent = PARENT[lvl.geo]
    if parent is not None and geo.n_regions(parent) == 0:
        parent = None
    t0 = time.perf_counter()
    stat = AGES[options.ages]
    levels = [lvl] + ([PopulationGroupLevel(parent, lvl.iteration_level)] if parent else [])
    n_values = 2 * len(STAT_LEVEL_AGE_EDGES[stat]) + 3
    size = sum(prepared.inputs.geography.n_regions(v.geo) * len(prepared.catalog.codes(v.geo, v.iteration_level))
               for v in levels) * n_values
    if size > MAX_VALUES:
        raise ValueError(f"the study of {lvl.key} would hold {size:,} counts (limit {MAX_VALUES:,}); "
                         "choose a smaller input or another level")
    vals = [_values(prepared, v, stat) for v in levels]
    t1 = time.perf_counter()
    system = _system(prepared, levels, vals, options)
    box = reuse(_inputs_key(levels, vals, system, options)) if reuse is not None else {}
    if "value" in box:
        return box["value"]
    t2 = time.perf_counter()

    def prog(stage):
        return (lambda done, total: progress(stage, done, total)) if progress else None

    singles = system.singletons if options.singletons else None
    # Without the hierarchy each level is protected alone; the audit still knows that a parent
    # cell is the sum of its children's, as anyone adding up the tables does.
    rel = system.relations if options.hierarchy else system.relations[~system.hierarchy]
    res = cs.protect(system.x, system.primary, rel, options.protection, sliding=options.sliding,
                     cost=options.cost, method="lp", suppressed=system.withheld, singletons=singles,
                     capacity=options.capacity, refine=options.refine,
                     time_limit=options.time_limit, part_time_limit=options.part_time_limit,
                     time_budget=options.time_budget, progress=prog("complementary suppression"),
                     audit_progress=prog("audit"))
    audit = res.audit
    if not options.hierarchy and system.hierarchy.any():
        audit = cs.audit(system.x, res.suppressed, system.relations, protection=np.where(res.primary,
                         float(options.protection), 0.0), sliding=options.sliding, singletons=singles,
                         time_limit=options.time_limit, time_budget=options.time_budget, progress=prog("audit"))
    t3 = time.perf_counter()
    tables = []
    for k, (v, (regions, codes, values)) in enumerate(zip(levels, vals)):
        sl = slice(system.offsets[k], system.offsets[k] + values.size)
        shape = values.shape
        status = np.full(values.size, PUBLISHED, np.uint8)
        status[res.primary[sl]] = PRIMARY
        status[res.complementary[sl]] = COMPLEMENTARY
        status[res.fallback[sl]] = FALLBACK
        status[system.withheld[sl]] = GROUP_THRESHOLD
        a = audit
        tables.append(LegacyTables(
            level=v, regions=regions, codes=codes, values=values, status=status.reshape(shape),
            low=a.low[sl].reshape(shape), high=a.high[sl].reshape(shape), exact=a.exact[sl].reshape(shape),
            underprotected=a.underprotected[sl].reshape(shape)))
    box["value"] = LegacyRelease(
        options=options, tables=tables, bins=age_bins(STAT_LEVEL_AGE_EDGES[stat]),
        lps=res.lps + (audit.lps if audit is not res.audit else 0),
        parts=res.parts, notes=solver_notes(res.notes),
        timings={"counts": t1 - t0, "relations": t2 - t1, "protect_and_audit": t3 - t2,
                 "audit": audit.seconds, "protect": (t3 - t2) - audit.seconds})
    return box["value"]


def _inputs_key(levels, vals, system: _System, options: LegacyOptions) -> str:
    """A digest (SHA-256, hex) of what a legacy release is computed from: the options, the
    levels, each level's regions, codes and values, and the system of counts and relations
    built from them and the geography (`_system`). Equal keys, equal releases."""
    h = hashlib.sha256(repr(options).encode())
    for lvl, (regions, codes, values) in zip(levels, vals):
        h.update(repr((lvl.key, values.shape, str(values.dtype))).encode())
        for names in (regions, codes):
            h.update("\x1f".join(names.tolist()).encode() + b"\x1e")
        h.update(np.ascontiguousarray(values).tobytes())
    rel = system.relations.tocsr()
    h.update(repr(rel.shape).encode())
    for a in (system.x, rel.indptr, rel.indices, rel.data, system.primary, system.withheld, system.singletons,
              np.asarray(system.offsets, np.int64), system.hierarchy):
        h.update(repr((a.shape, str(a.dtype))).encode())
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()


def _values(prepared, lvl: PopulationGroupLevel, stat: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(regions, codes, values (groups, 2 bins + 3)) of one level: the true sex x age cells,
    the sex marginals and the total of every group of the universe."""
    from engine.tabulation.mechanism import collapse_cells

    counts = prepared.counts(lvl)
    totals = counts.totals()
    nz = np.flatnonzero(totals > 0)
    cells = collapse_cells(counts.cells_of(nz), stat)
    width = cells.shape[1]
    out = np.zeros((counts.n_groups, width + 3), np.int64)
    out[nz, :width] = cells
    out[:, width:width + 2] = out[:, :width].reshape(counts.n_groups, 2, -1).sum(axis=2)
    out[:, -1] = totals
    regions = prepared.inputs.geography.regions[lvl.geo].astype(str)
    codes = prepared.catalog.codes(lvl.geo, lvl.iteration_level).astype(str)
    return regions, codes, out


@dataclass
class _System:
    x: np.ndarray
    relations: sp.csr_matrix
    primary: np.ndarray
    withheld: np.ndarray
    singletons: np.ndarray
    offsets: list[int]
    hierarchy: np.ndarray  # relations (rows) across the geography hierarchy


def _system(prepared, levels, vals, options: LegacyOptions) -> _System:
    """Every count of the study as one vector with its relations (see the module docstring).

    Layout: the level's groups, then the parent level's, then the remainders (the part of a
    parent region in no child region, one per parent group that has them), each group's
    values contiguous.
    """
    width = vals[0][2].shape[1]
    b2 = width - 3
    rows, cols, data = [], [], []
    offsets, x_parts = [], []
    n_rows = 0
    base = 0
    for _regions, _codes, values in vals:
        offsets.append(base)
        n_g = values.shape[0]
        g0 = base + np.arange(n_g, dtype=np.int64) * width
        half = b2 // 2
        for s in range(2):  # marginal of sex s = its cells
            r = n_rows + np.arange(n_g) * 3 + s
            parts = g0[:, None] + s * half + np.arange(half)[None, :]
            rows += [np.repeat(r, half), r]
            cols += [parts.reshape(-1), g0 + b2 + s]
            data += [np.ones(n_g * half), -np.ones(n_g)]
        r = n_rows + np.arange(n_g) * 3 + 2  # total = the two marginals
        rows += [r, r, r]
        cols += [g0 + b2, g0 + b2 + 1, g0 + b2 + 2]
        data += [np.ones(n_g), np.ones(n_g), -np.ones(n_g)]
        n_rows += 3 * n_g
        x_parts.append(values.reshape(-1))
        base += values.size
    n_level = base
    rem_values = np.zeros((0, width), np.int64)
    if len(levels) == 2:
        (rc, cc, vc), (rp, cp, vp) = vals
        from engine.reports.levels import parent_regions

        geo = prepared.inputs.geography
        child, par = levels[0].geo, levels[1].geo
        nest = parent_regions(geo, child, par)
        covered = _covered(geo, child, par, nest)
        code_in_parent = {c: i for i, c in enumerate(cp)}
        cmap = np.array([code_in_parent.get(c, -1) for c in cc], np.int64)
        n_ci, n_pi = len(cc), len(cp)
        r_idx, c_idx = np.divmod(np.arange(vc.shape[0]), n_ci)
        keep = (nest[r_idx] >= 0) & (cmap[c_idx] >= 0)
        pgroup = nest[r_idx[keep]] * n_pi + cmap[c_idx[keep]]  # parent group of each linked child group
        linked = np.unique(pgroup)
        row_of = {g: i for i, g in enumerate(linked.tolist())}
        prow = np.array([row_of[g] for g in pgroup.tolist()], np.int64)
        v = np.arange(width)
        child_g = np.flatnonzero(keep)
        # child values: +1
        rows.append((n_rows + prow[:, None] * width + v[None, :]).reshape(-1))
        cols.append((offsets[0] + child_g[:, None] * width + v[None, :]).reshape(-1))
        data.append(np.ones(child_g.size * width))
        # parent values: -1
        rows.append((n_rows + np.arange(linked.size)[:, None] * width + v[None, :]).reshape(-1))
        cols.append((offsets[1] + linked[:, None] * width + v[None, :]).reshape(-1))
        data.append(-np.ones(linked.size * width))
        # remainders: the part of a parent region in no child, where the children do not cover it
        need = ~covered[linked // n_pi]
        rem_groups = linked[need]
        child_sum = np.zeros((linked.size, width), np.int64)
        np.add.at(child_sum, prow, vc[child_g])
        rem_values = vp[rem_groups] - child_sum[need]
        if (rem_values < 0).any() or (vp[linked[~need]] != child_sum[~need]).any():
            raise AssertionError("child regions do not add up to their parent region")
        offsets.append(base)
        rows.append((n_rows + np.flatnonzero(need)[:, None] * width + v[None, :]).reshape(-1))
        cols.append((base + np.arange(rem_groups.size)[:, None] * width + v[None, :]).reshape(-1))
        data.append(np.ones(rem_groups.size * width))
        hier_from = n_rows
        n_rows += linked.size * width
        base += rem_values.size
        x_parts.append(rem_values.reshape(-1))
    x = np.concatenate(x_parts).astype(np.float64)
    relations = sp.csr_matrix((np.concatenate(data), (np.concatenate(rows), np.concatenate(cols))),
                              shape=(n_rows, base))
    withheld = np.zeros(base, bool)
    for k, (_r, _c, values) in enumerate(vals):
        small = values[:, -1] < options.min_population
        withheld[offsets[k]:offsets[k] + values.size] = np.repeat(small, width)
    withheld[n_level:] = True  # remainders are never published
    primary = np.zeros(base, bool)
    primary[:n_level] = cs.frequency_rule(x[:n_level], options.min_cell)
    # Singletons: a person alone in a sex x age cell of the level is taken to know that cell's
    # count (the seed's singleton respondent). Marginals, totals and the parent level's cells
    # hold the same persons as the level's cells, so they add no other respondent.
    singletons = np.zeros(base, bool)
    level_cells = np.zeros(vals[0][2].shape, bool)
    level_cells[:, :b2] = vals[0][2][:, :b2] == 1
    singletons[:vals[0][2].size] = level_cells.reshape(-1)
    hierarchy = np.zeros(n_rows, bool)
    if len(levels) == 2:
        hierarchy[hier_from:] = True
    return _System(x, relations, primary, withheld, singletons, offsets, hierarchy)


def _covered(geo, child: str, parent: str, nest: np.ndarray) -> np.ndarray:
    """Parent regions whose every piece lies in a child region nested in it."""
    pc, pp = geo.piece_region[child], geo.piece_region[parent]
    n = geo.n_regions(parent)
    bad = np.zeros(n, bool)
    inside = pp >= 0
    ok_piece = (pc >= 0) & (np.where(pc >= 0, nest[np.maximum(pc, 0)], -1) == pp)
    bad[pp[inside & ~ok_piece]] = True
    return ~bad


# ------------------------------------------------------------------ SafeTab-P on the same groups
@dataclass
class SafeTabSide:
    """SafeTab-P's release of some levels, for the side-by-side study: the whole-level arrays
    of `engine.reports.levels.LevelTables`, the noisy sex x age cells of every group that gets
    a table (group -> (stat level, cells: sex 1 bins then sex 2 bins)), and the seconds spent
    tabulating each level."""

    tables: dict
    cells: dict
    seconds: dict


def safetab_release(prepared, noise, levels: list[PopulationGroupLevel]) -> SafeTabSide:
    """One pass of `engine.run.iter_published` (`engine.reports.levels.level_tables`:
    post-processed, before coterminous copies), keeping `levels` with their tables' cells
    and the seconds spent tabulating each."""
    from engine.reports.levels import level_tables

    wanted = set(levels)
    cells: dict = {lvl: {} for lvl in wanted}
    seconds: dict = {}
    clock = {"last": time.perf_counter()}

    def keep(counts, pub) -> None:
        lvl = pub.plan.level
        if lvl in wanted:
            for k, (groups, table, _marg) in pub.tables.items():
                for g, row in zip(groups.tolist(), table):
                    cells[lvl][g] = (k, row.copy())
            seconds[lvl] = seconds.get(lvl, 0.0) + (time.perf_counter() - clock["last"])
        clock["last"] = time.perf_counter()

    tables = level_tables(prepared, noise, levels=list(wanted), on_chunk=keep)
    return SafeTabSide(tables, {lvl: c for lvl, c in cells.items() if lvl in tables}, seconds)


# ------------------------------------------------------------------ output
T1_COLUMNS = ["REGION_ID", "REGION_TYPE", "ITERATION_CODE", "COUNT"]
T2_COLUMNS = ["REGION_ID", "REGION_TYPE", "ITERATION_CODE", "AGESTART", "AGEEND", "SEX", "COUNT"]
AUDIT_COLUMNS = ["REGION_ID", "REGION_TYPE", "ITERATION_CODE", "AGESTART", "AGEEND", "SEX", "STATUS",
                 "LOWER", "UPPER", "EXACT", "PROTECTED"]
_WRITE = pacsv.WriteOptions(delimiter="|", quoting_style="none", include_header=False)

README = f"""LEGACY CELL-SUPPRESSION STUDY - {NOTE}

Layout (as SafeTab-P's, pipe-delimited):
  t1/         REGION_ID|REGION_TYPE|ITERATION_CODE|COUNT  - groups at or above the minimum population
  t2/         REGION_ID|REGION_TYPE|ITERATION_CODE|AGESTART|AGEEND|SEX|COUNT - their sex x age tables,
              with the sex marginals as AGESTART = AGEEND = *
  suppressed/ REGION_ID|REGION_TYPE|ITERATION_CODE - groups below the minimum population (withheld whole)
  audit/      one row per withheld count in t1/ and t2/, and per withheld count of a group in
              suppressed/ that the published counts bound: STATUS (primary, complementary, group below
              threshold, solver fallback), LOWER and UPPER (the interval an attacker derives; UPPER
              "inf" when unbounded), EXACT (recovered exactly), PROTECTED (the protection holds)
  manifest.json  the rules, counts by status, the audit summary and the solver time

COUNT = "{WITHHELD}" marks a withheld count (primary or complementary suppression, or the solver
fallback: where the linear program could not protect the small counts of a connected part of
the tables cell by cell, every count of that part is withheld, a group's total included).
Every population group of the level is in t1/ or suppressed/; a group's total is published
only where its t1/ COUNT is a number, not "{WITHHELD}".
"""


def _age_labels(bins) -> tuple[list[str], list[str], list[str]]:
    start = [str(a) for _s in (1, 2) for a, _ in bins] + ["*", "*", "*"]
    end = [str(e) for _s in (1, 2) for _, e in bins] + ["*", "*", "*"]
    sex = [str(s) for s in (1, 2) for _ in bins] + ["1", "2", "*"]
    return start, end, sex


def legacy_frames(rel: LegacyRelease) -> dict[str, pa.Table]:
    """The output files as tables: "t1/LEVEL.csv", "t2/...", "suppressed/...", "audit/..."."""
    start, end, sex = _age_labels(rel.bins)
    out = {}
    for t in rel.tables:
        name = f"{t.level.geo}-{t.level.iteration_level}.csv"
        n_it = len(t.codes)
        g = np.arange(t.values.shape[0])
        region, code = t.regions[g // n_it], t.codes[g % n_it]
        pub = t.above_threshold  # t1/ and t2/: groups that reach the minimum population
        count = np.where(t.status == PUBLISHED, t.values.astype(str), WITHHELD)
        out[f"t1/{name}"] = pa.table({"REGION_ID": region[pub], "REGION_TYPE": np.full(pub.sum(), t.level.geo),
                                      "ITERATION_CODE": code[pub], "COUNT": count[pub, -1]})
        width = t.values.shape[1] - 1
        gp = np.flatnonzero(pub)
        out[f"t2/{name}"] = pa.table({
            "REGION_ID": np.repeat(region[gp], width), "REGION_TYPE": np.full(gp.size * width, t.level.geo),
            "ITERATION_CODE": np.repeat(code[gp], width), "AGESTART": np.tile(start[:-1], gp.size),
            "AGEEND": np.tile(end[:-1], gp.size), "SEX": np.tile(sex[:-1], gp.size),
            "COUNT": count[gp, :-1].reshape(-1)})
        out[f"suppressed/{name}"] = pa.table({"REGION_ID": region[~pub],
                                              "REGION_TYPE": np.full((~pub).sum(), t.level.geo),
                                              "ITERATION_CODE": code[~pub]})
        with np.errstate(invalid="ignore"):
            show = t.withheld & (np.broadcast_to(pub[:, None], t.status.shape) | np.isfinite(t.high))
        gi, vi = np.nonzero(show)
        prot = ~t.underprotected[gi, vi]
        out[f"audit/{name}"] = pa.table({
            "REGION_ID": region[gi], "REGION_TYPE": np.full(gi.size, t.level.geo), "ITERATION_CODE": code[gi],
            "AGESTART": np.asarray(start)[vi], "AGEEND": np.asarray(end)[vi], "SEX": np.asarray(sex)[vi],
            "STATUS": np.asarray([STATUS_NAMES[s] for s in range(5)])[t.status[gi, vi]],
            "LOWER": _fmt(t.low[gi, vi]), "UPPER": _fmt(t.high[gi, vi]),
            "EXACT": np.where(t.exact[gi, vi], "True", "False"), "PROTECTED": np.where(prot, "True", "False")})
    return out


def _fmt(a: np.ndarray) -> np.ndarray:
    """Interval ends as text: whole numbers without decimals, "inf", "" where not audited."""
    out = np.empty(a.shape, dtype=object)
    fin = np.isfinite(a)
    r = np.round(a[fin])
    out[fin] = np.where(np.abs(a[fin] - r) < 1e-6, r.astype(np.int64).astype(str), np.char.mod("%.6g", a[fin]))
    out[np.isinf(a)] = "inf"
    out[np.isnan(a)] = ""
    return out.astype(str)


def legacy_manifest(rel: LegacyRelease, prepared=None) -> dict:
    opts = asdict(rel.options)
    man = {
        "kind": "legacy cell-suppression study",
        "for_release": False,
        "safetab_p_release": False,
        "exact_counts": True,
        "note": NOTE,
        "marking": {"COUNT": f"\"{WITHHELD}\" = withheld (primary or complementary suppression, or solver "
                             "fallback: a connected part the linear program could not protect, withheld whole)",
                    "suppressed/": "groups below the minimum population, withheld whole"},
        "method": {
            "source": "P. B. Massell, Cell Suppression and Audit Programs used for Economic Magnitude Data, "
                      "U.S. Census Bureau SRD Research Report RR2001/01",
            "primary": f"frequency rule: counts of 1 to {rel.options.min_cell - 1} persons",
            "group_threshold": f"groups of fewer than {rel.options.min_population} persons are withheld whole",
            "complementary": "sequential LP (two variables per count, relations of each table and of the "
                             "geography hierarchy, cost = " + ("count value" if rel.options.cost == "value"
                                                               else "one per count") + ")",
            "protection": ("sliding" if rel.options.sliding else "full") + f", {rel.options.protection} persons "
                          "up and down (down no further than 0)",
            "singletons": rel.options.singletons,
            "age_bins": [f"{a}-{b}" for a, b in rel.bins],
        },
        "options": opts,
        "levels": rel.summary(),
        "solver": {"lps": rel.lps, "notes": rel.notes, "seconds": {k: round(v, 4) for k, v in rel.timings.items()}},
    }
    if prepared is not None:
        man["confidential"] = {"note": "exact figures of the confidential input, for the operator's checks only",
                               "persons": int(prepared.table.persons)}
    return man


#: Why a legacy study is never a release (its NOT-FOR-RELEASE.txt and SHA256SUMS say so).
_NOT_FOR_RELEASE_REASON = ("a legacy cell-suppression study: the published counts are exact counts of the "
                           "confidential input, not a SafeTab-P release")


def _write_into(folder, rel: LegacyRelease, prepared) -> None:
    """The study's files into a staging folder (`engine.release.publish.StagedOutput`)."""
    from engine.release.outputs import not_for_release_text
    from engine.release.publish import NOT_FOR_RELEASE

    for name, table in legacy_frames(rel).items():
        path = folder.stage / name
        path.parent.mkdir(exist_ok=True)
        cols = {"t1": T1_COLUMNS, "t2": T2_COLUMNS, "suppressed": T1_COLUMNS[:3], "audit": AUDIT_COLUMNS}
        table = table.select(cols[name.split("/")[0]])
        table = pa.table({c: table[c].cast(pa.string()) for c in table.column_names})
        with open(path, "wb") as fh:  # the header unquoted, as SafeTab-P writes it
            fh.write(("|".join(table.column_names) + "\n").encode())
            if table.num_rows:
                pacsv.write_csv(table, fh, write_options=_WRITE)
    folder.write_file("manifest.json", (json.dumps(legacy_manifest(rel, prepared), indent=2) + "\n").encode())
    folder.write_file("README.txt", README.encode("utf-8"))
    folder.write_file(NOT_FOR_RELEASE, not_for_release_text(_NOT_FOR_RELEASE_REASON))


def write_legacy(rel: LegacyRelease, out_dir: str | Path, *, overwrite: bool = False, prepared=None,
                 inputs=()) -> Path:
    """Write OUT_DIR (see README above) as every output of this tool is written
    (`engine.release.publish.StagedOutput`: OUT_DIR checked and locked, staged, published
    whole with SHA256SUMS; `overwrite` replaces only an earlier output of this tool and
    never an input folder); nothing is left behind if writing fails."""
    from engine.release.publish import StagedOutput

    with StagedOutput(out_dir, overwrite=overwrite, inputs=inputs, description="legacy cell-suppression study",
                      private=True) \
            as folder:
        _write_into(folder, rel, prepared)
        return folder.publish(["NOT FOR RELEASE: " + _NOT_FOR_RELEASE_REASON])


def run_legacy(params_dir, data_dir, out_dir, options: LegacyOptions, *, overwrite: bool = False,
               progress=None, config=None) -> tuple[LegacyRelease, Path]:
    """Validate the inputs (`engine.run.prepare`), build the legacy release, write it.
    OUT_DIR is checked and locked before any work, as for `run`."""
    from engine.release.publish import StagedOutput
    from engine.run import prepare

    options.check()
    inputs = (("PARAMS_DIR", params_dir), ("DATA_DIR", data_dir))
    with StagedOutput(out_dir, overwrite=overwrite, inputs=inputs, description="legacy cell-suppression study",
                      private=True) \
            as folder:
        prepared = prepare(params_dir, data_dir, progress, config=config)
        rel = legacy_release(prepared, options, progress)
        _write_into(folder, rel, prepared)
        return rel, folder.publish(["NOT FOR RELEASE: " + _NOT_FOR_RELEASE_REASON])


def level_name(level: PopulationGroupLevel) -> str:
    return f"{level.geo} {ITERATION_LEVEL_NAMES[level.iteration_level]}"
