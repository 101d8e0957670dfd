"""The "Invariants" page's computations (pure; no Streamlit).

Two studies, both against SafeTab-P on the same noise:

* a SafeTab-P level of the current plan on the sample data (`level_study`): the child
  regions' totals of every iteration held to their parent's true total
  (`engine.tabulation.invariants`), with each total's variance factor, its MOE with and
  without the invariant, and what becomes exact;
* a custom table (`custom_study`): any shape and any set of held margins
  (`methods.invariants` closed forms, checked against the general projector), the
  noise of one SafeTab-P cell of the plan.

Both have a seeded simulation check with the exact samplers of `engine.noise`
(`simulate_family`, `simulate_custom`). MOEs "with invariants" are normal
approximations, 1.96 sqrt(variance), and are labelled so: the projected noise is a
linear combination of discrete Gaussians, not a discrete Gaussian, so the exact MOE
of SafeTab-P's cells does not carry over; the simulation's 95th percentile of |error|
is the check.
"""

from __future__ import annotations

import itertools
import math
import re
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import pandas as pd

from calculators import budget, noise_family
from calculators.levels import PopulationGroupLevel
from engine.reports.accuracy import SIZE_LABELS, size_bin
from engine.tabulation.invariants import DESCRIPTIONS, INVARIANTS, units_of
from engine.tabulation.mechanism import TOTAL_ONLY
from methods import invariants as inv
from ui.compare import lists
from ui.core import typed

Z95 = budget.Z95
#: Most noise draws one simulation makes (replications x noisy values).
MAX_DRAWS = 2_000_000
#: Largest custom table the general projector re-checks (cells).
CHECK_CELLS = 20_000
#: Largest custom table the page accepts (cells).
MAX_TABLE_CELLS = 5_000_000

TABLE_NAMES = {TOTAL_ONLY: "total (TotalOnly)", 0: "total (stat level 0)",
               1: "total of sex x age4", 2: "total of sex x age9", 3: "total of sex x age23"}


# --------------------------------------------------------------------------- custom tables
@dataclass(frozen=True)
class Preset:
    label: str
    shape: tuple[int, ...]
    margins: tuple[tuple[int, ...], ...]
    note: str


PRESETS: tuple[Preset, ...] = (
    Preset("Paper §5.1: 102 counties, the state total held", (102,), ((),),
           "Gao, Gong and Yu's Illinois example: 102 county counts whose sum is the state's true population."),
    Preset("Paper §5.2: 14 × 24 × 20 table, two-way margins held at each of the 20 locations", (14, 24, 20),
           ((0, 2), (1, 2)),
           "The paper's spatio-temporal table: for every location (axis 3) its 14 × 24 table's row and column "
           "sums are held; rank 740."),
    Preset("One group's sex × age23 table, its total held", (2, 23), ((),),
           "What holding one population group's total T1 exact would do to its 46 SafeTab-P cells."),
    Preset("A 5 × 8 table, row and column sums held", (5, 8), ((0,), (1,)),
           "The textbook case: (1 − 1/5)(1 − 1/8) of the variance is left in each cell."),
)


#: An axis length of a custom table, and what separates the lengths ("14 x 24 x 20").
AXIS_RULE = typed.Rule(whole=True, lo=1, hi=MAX_TABLE_CELLS)
SHAPE_SEPARATORS = re.compile(r"[\sx×*,;]+", re.IGNORECASE)


def parse_shape(text: str) -> tuple[int, ...]:
    """'14 x 24 x 20' (or '14,24,20', '14×24×20') -> (14, 24, 20): each length read by
    `AXIS_RULE` exactly as typed (`ui.compare.lists.parse_list`, the shared rules of
    `ui.core.typed`: "1e3" is 1000); `typed.Refused` (a ValueError) in plain words."""
    out = lists.parse_list(text, AXIS_RULE, most=inv.MAX_AXES, example="14 x 24 x 20", separators=SHAPE_SEPARATORS,
                           what="axis lengths", unique=False)
    cells = math.prod(out)
    if cells > MAX_TABLE_CELLS:
        raise typed.Refused(f"That table has {cells:,} cells; the page takes at most {MAX_TABLE_CELLS:,}.")
    return tuple(int(v) for v in out)


def shape_text(shape: tuple[int, ...]) -> str:
    return " × ".join(str(s) for s in shape)


def margin_options(shape: tuple[int, ...]) -> list[tuple[int, ...]]:
    """Every margin of a table: the grand total, then the one-way, two-way... margins
    (the whole table itself last: holding it publishes every cell exactly)."""
    d = len(shape)
    return [s for r in range(d + 1) for s in itertools.combinations(range(d), r)]


def margin_label(axes: tuple[int, ...], shape: tuple[int, ...]) -> str:
    """A margin in a few words: 'grand total', 'axis 1: 14 sums', 'axes 1 × 3: 280 sums'."""
    if not axes:
        return "grand total"
    if len(axes) == len(shape):
        return "every cell (the whole table)"
    cells = math.prod(shape[a] for a in axes)
    word = "axis" if len(axes) == 1 else "axes"
    return f"{word} {' × '.join(str(a + 1) for a in axes)}: {cells:,} sums"


@dataclass
class CustomStudy:
    shape: tuple[int, ...]
    margins: list[tuple[int, ...]]
    cells: int
    constraints: int  # rows of C: the exact sums published
    rank: int
    factor: Fraction
    unit_variance: float
    moe_plain_exact: int
    check: dict | None  # the general projector's figures, for small tables

    @property
    def variance_with(self) -> float:
        return float(self.factor) * self.unit_variance

    @property
    def moe_plain_normal(self) -> float:
        return Z95 * math.sqrt(self.unit_variance)

    @property
    def moe_with_normal(self) -> float:
        return Z95 * math.sqrt(self.variance_with)

    @property
    def exact_cells(self) -> int:
        """Cells published exactly (the variance factor is 0: every cell is pinned)."""
        return self.cells if self.factor == 0 else 0

    def table(self) -> pd.DataFrame:
        return pd.DataFrame([
            {"Figure": "Cells in the table (n)", "Value": f"{self.cells:,}"},
            {"Figure": "Exact sums published (rows of C)", "Value": f"{self.constraints:,}"},
            {"Figure": "Independent invariants (rank n_c)", "Value": f"{self.rank:,}"},
            {"Figure": "Variance factor per cell, (n − n_c) / n", "Value": f"{self.factor} ≈ {float(self.factor):.4f}"},
            {"Figure": "Noise variance of one cell, SafeTab-P", "Value": f"{self.unit_variance:.4g}"},
            {"Figure": "Noise variance of one cell, with invariants", "Value": f"{self.variance_with:.4g}"},
            {"Figure": "Expected total squared error, SafeTab-P (n × variance)",
             "Value": f"{self.cells:,} × {self.unit_variance:.4g} = {self.cells * self.unit_variance:,.0f}"},
            {"Figure": "Expected total squared error, with invariants ((n − n_c) × variance)",
             "Value": f"{self.cells - self.rank:,} × {self.unit_variance:.4g} = "
                      f"{(self.cells - self.rank) * self.unit_variance:,.0f}"},
            {"Figure": "95% MOE of a cell, SafeTab-P (exact)", "Value": f"{self.moe_plain_exact:,}"},
            {"Figure": "95% MOE of a cell, SafeTab-P (normal approximation)", "Value": f"{self.moe_plain_normal:.2f}"},
            {"Figure": "95% MOE of a cell, with invariants (normal approximation)",
             "Value": f"{self.moe_with_normal:.2f}"},
        ])


def custom_study(shape: tuple[int, ...], margins: list[tuple[int, ...]], scale: float, noise: str) -> CustomStudy:
    """Closed-form figures of a custom table with cells of the given SafeTab-P noise
    scale (sigma^2, or the geometric b), checked against the general pivoted-QR
    projector when the table is small enough (`CHECK_CELLS`)."""
    shp, mgs = inv.normalize_margins(shape, margins)
    n = math.prod(shp)
    rows = sum(math.prod(shp[a] for a in m) for m in mgs)
    rank = inv.margin_rank(shp, mgs)
    factor = inv.margin_variance_factor(shp, mgs)
    law = noise_family.law(noise)
    u = float(law.variance(scale))
    check = None
    if mgs and n <= CHECK_CELLS and rows * n <= inv.MAX_DENSE_ENTRIES:
        C = inv.margin_constraints(shp, mgs)
        diag = inv.projector_diagonal(C)
        check = {"rank": inv.constraint_rank(C), "max_difference": float(np.max(np.abs(diag - float(factor))))}
    return CustomStudy(shp, mgs, n, rows, rank, factor, u,
                       int(budget.moe_of_sum(scale, 1, exact=True, noise=noise)), check)


def _draw(scale, size: int, noise: str, source) -> np.ndarray:
    from engine import noise as _noise

    if noise == noise_family.GEOMETRIC:
        return _noise.sample_two_sided_geometric(scale, size, source)
    return _noise.sample_discrete_gaussian(scale, size, source)


def replications(requested: int, values: int) -> int:
    """How many replications a simulation makes: as requested, within MAX_DRAWS draws."""
    return int(max(1, min(requested, MAX_DRAWS // max(values, 1))))


def simulate_custom(study: CustomStudy, scale, noise: str, reps: int, seed: int) -> dict:
    """Seeded simulation: exact noise on every cell, projected with the closed form.

    Returns the pooled empirical variance and 95th percentile of |error| per cell with
    and without the projection, the largest |held margin| of the projected noise (0 up
    to float rounding) and the pooled errors' histogram (unit bins).
    """
    from engine.noise import RandomSource

    k = replications(reps, study.cells)
    e = _draw(scale, k * study.cells, noise, RandomSource.seeded(seed)).reshape(k, study.cells).astype(np.float64)
    p = inv.project_margins(e, study.shape, study.margins)
    worst = 0.0
    if study.margins:
        for m in study.margins:
            axes = tuple(1 + a for a in range(len(study.shape)) if a not in m)
            worst = max(worst, float(np.max(np.abs(p.reshape((k, *study.shape)).sum(axis=axes)))) if axes
                        else float(np.max(np.abs(p))))
    lim = int(np.ceil(max(np.abs(e).max(), np.abs(p).max()))) if e.size else 0
    bins = np.arange(-lim, lim + 1)
    plain_counts = np.bincount((np.rint(e).astype(np.int64) + lim).reshape(-1), minlength=2 * lim + 1)
    with_counts = np.bincount((np.rint(p).astype(np.int64) + lim).reshape(-1), minlength=2 * lim + 1)
    hist = pd.DataFrame({"Error (persons, nearest whole number)": bins,
                         "Share of cells, SafeTab-P": plain_counts / e.size,
                         "Share of cells, with invariants": with_counts / p.size})
    return {
        "replications": k,
        "histogram": hist,
        "var_plain": float(e.var(axis=0).mean()),
        "var_with": float(p.var(axis=0).mean()),
        "q95_plain": float(np.quantile(np.abs(e), 0.95)),
        "q95_with": float(np.quantile(np.abs(p), 0.95)),
        "max_margin": worst,
    }


def custom_simulation_table(study: CustomStudy, sim: dict) -> pd.DataFrame:
    return pd.DataFrame([
        {"Figure": "Noise variance per cell", "Predicted, SafeTab-P": study.unit_variance,
         "Simulated, SafeTab-P": sim["var_plain"], "Predicted, with invariants": study.variance_with,
         "Simulated, with invariants": sim["var_with"]},
        {"Figure": "95% of |errors| within", "Predicted, SafeTab-P": float(study.moe_plain_exact),
         "Simulated, SafeTab-P": sim["q95_plain"], "Predicted, with invariants": study.moe_with_normal,
         "Simulated, with invariants": sim["q95_with"]},
    ])


# --------------------------------------------------------------------------- SafeTab-P levels
@dataclass(frozen=True)
class Chain:
    key: str  # the --invariant value
    label: str
    pairs: tuple[tuple[str, str], ...]


#: First the one with several regions per parent in the shipped sample (its states have
#: one county each, so holding states exact there makes every county exact as well).
CHAINS: tuple[Chain, ...] = (
    Chain("COUNTY", "Tracts add up to their county's true count", INVARIANTS["COUNTY"]),
    Chain("STATE", "Counties add up to their state's true count", INVARIANTS["STATE"]),
    Chain("USA", "States add up to the nation's true count", INVARIANTS["USA"]),
)


def chain(key: str) -> Chain:
    return next(c for c in CHAINS if c.key == key)


@dataclass
class LevelStudy:
    """The published child groups an invariant touches (one row each) and the parent
    groups it publishes exactly (`parents`: one row per released parent group)."""

    groups: pd.DataFrame
    parents: pd.DataFrame
    description: str
    not_held: int = 0  # families left as published because their parent group is suppressed

    @property
    def empty(self) -> bool:
        return self.parents.empty

    def by_table(self) -> pd.DataFrame:
        g = self.groups
        if g.empty:
            return pd.DataFrame(columns=["Published as", "Counts"])
        return g.groupby("Published as", sort=False).agg(**{
            "Counts": ("Region", "size"),
            "Variance left (median)": ("Variance factor", "median"),
            "Variance left (smallest)": ("Variance factor", "min"),
            "MOE, SafeTab-P (exact)": ("MOE without (exact)", "median"),
            "MOE, SafeTab-P (normal approx.)": ("MOE without (normal approx.)", "median"),
            "MOE with invariants (normal approx.)": ("MOE with (normal approx.)", "median"),
        }).reset_index()

    def by_parent(self) -> pd.DataFrame:
        rows = []
        for parent, f in self.parents.groupby("Parent region", sort=True):
            sub = self.groups[self.groups["Parent region"] == parent]
            rows.append({
                "Parent region": parent,
                "Regions inside": int(f["Regions in the parent"].iloc[0]),
                "Totals published exactly": len(f),
                "… of fewer than 10 persons": int((f["Parent true total"] < 10).sum()),
                "… of fewer than 100 persons": int((f["Parent true total"] < 100).sum()),
                "Region counts made exact (only region published)": int((sub["Variance factor"] == 0).sum()),
                "Variance factor of a region's total (median)":
                    float(sub["Variance factor"].median()) if len(sub) else float("nan"),
            })
        return pd.DataFrame(rows).sort_values("Variance factor of a region's total (median)", kind="stable")

    def revealed(self) -> pd.DataFrame:
        """Parent true totals the invariant publishes exactly, by size."""
        bins = size_bin(self.parents["Parent true total"].to_numpy())
        counts = np.bincount(bins, minlength=len(SIZE_LABELS))
        return pd.DataFrame({"True total (persons)": SIZE_LABELS, "Totals published exactly": counts})

    def summary(self) -> dict:
        g, f = self.groups, self.parents
        return {
            "parent_totals": len(f),
            "small_totals": int((f["Parent true total"] < 100).sum()),
            "tiny_totals": int(((f["Parent true total"] > 0) & (f["Parent true total"] < 10)).sum()),
            "child_exact": int((g["Variance factor"] == 0).sum()) if len(g) else 0,
            "child_groups": len(g),
            "median_factor": float(g["Variance factor"].median()) if len(g) else float("nan"),
            "moe_plain": float(g["MOE without (exact)"].median()) if len(g) else float("nan"),
            "moe_with": float(g["MOE with (normal approx.)"].median()) if len(g) else float("nan"),
            "not_held": self.not_held,
        }


def level_study(prepared, tables: dict, chain_key: str, iteration_level: int) -> LevelStudy:
    """The groups `python -m engine run --invariant CHAIN` touches at one iteration level.

    `tables` is `engine.reports.levels.level_tables(...)` (a seeded study: stat levels and
    suppression as SafeTab-P drew them). As in the engine (`engine.tabulation.invariants`):
    a family is a released parent group and an iteration both levels tabulate; its
    released children (suppressed ones are not read) are held to the parent's true total by
    the minimum-variance projection, so child i's total, of noise variance v_i, keeps
    v_i (1 - v_i / W), W the family's sum (factor 1 - v_i / W). A region that is the only
    one inside its parent is coterminous with it and publishes its outputs (SPEC §1), so
    it counts as published. Families of a suppressed parent are left as published.
    """
    from engine.reports.levels import parent_regions

    geo = prepared.inputs.geography
    frames, parent_frames, not_held = [], [], 0
    for parent, child in chain(chain_key).pairs:
        lvl, plvl = PopulationGroupLevel(child, iteration_level), PopulationGroupLevel(parent, iteration_level)
        if lvl not in tables or plvl not in tables:
            continue
        t, tp = tables[lvl], tables[plvl]
        fam_noise = noise_family.family_of(t.plan.privacy_defn)
        pidx = parent_regions(geo, child, parent)
        # iterations both levels tabulate: child column -> parent column
        pcol = {c: j for j, c in enumerate(tp.codes)}
        cols = np.array([i for i, c in enumerate(t.codes) if c in pcol], np.int64)
        if not len(cols) or not np.any(pidx >= 0):
            continue
        to_p = np.array([pcol[c] for c in t.codes[cols]], np.int64)
        n_i = len(cols)
        kids = np.bincount(pidx[pidx >= 0], minlength=geo.n_regions(parent))
        inside = np.flatnonzero(pidx >= 0)
        p = pidx[inside]
        p_rel = tp.released[p][:, to_p]
        only = (kids[p] == 1)[:, None]
        rel = (t.released[inside][:, cols] | only) & p_rel
        v = t.variance[inside][:, cols]
        fam = p[:, None] * n_i + np.arange(n_i)[None, :]
        W = np.bincount(fam[rel], weights=v[rel], minlength=geo.n_regions(parent) * n_i)
        factor = np.where(rel, 1 - v / np.where(rel, W[fam], 1.0), 1.0)
        stat = t.stat_level[inside][:, cols]
        moe_exact = np.zeros(stat.shape, np.int64)
        for k in np.unique(stat):
            scale = t.plan.total_only if k == TOTAL_ONLY else t.plan.stage2
            moe_exact[stat == k] = int(budget.moe_of_sum(float(scale), int(units_of(np.array([k]))[0]), exact=True,
                                                         noise=fam_noise))
        names = geo.regions[parent].astype(str)
        rr, ii = np.nonzero(rel)
        vw = v * factor
        frames.append(pd.DataFrame({
            "Invariant": f"{child} within {parent}",
            "Parent region": names[p[rr]],
            "Region": t.regions[inside[rr]],
            "Iteration": t.codes[cols[ii]],
            "True count": t.truth[inside[rr], cols[ii]],
            "Published as": [TABLE_NAMES[int(k)] for k in stat[rr, ii]],
            "Noisy values behind the total": units_of(stat[rr, ii]),
            "Regions in the parent": kids[p[rr]],
            "Variance factor": factor[rr, ii],
            "Variance without": v[rr, ii],
            "Variance with": vw[rr, ii],
            "MOE without (exact)": moe_exact[rr, ii],
            "MOE without (normal approx.)": Z95 * np.sqrt(v[rr, ii]),
            "MOE with (normal approx.)": Z95 * np.sqrt(vw[rr, ii]),
            "Parent true total": tp.truth[p[rr], to_p[ii]],
        }))
        # the parent groups published exactly: released, of a shared iteration, with regions inside
        has_kids = np.flatnonzero(kids > 0)
        pr = tp.released[has_kids][:, to_p]
        not_held += int((~pr).sum())
        ri, ci = np.nonzero(pr)
        parent_frames.append(pd.DataFrame({
            "Invariant": f"{child} within {parent}",
            "Parent region": names[has_kids[ri]],
            "Iteration": tp.codes[to_p[ci]],
            "Parent true total": tp.truth[has_kids[ri], to_p[ci]],
            "Regions in the parent": kids[has_kids[ri]],
            "Published regions": np.bincount(fam[rel], minlength=geo.n_regions(parent) * n_i)[
                has_kids[ri] * n_i + ci],
        }))
    groups = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=["Region", "Variance factor"])
    parents = (pd.concat(parent_frames, ignore_index=True) if parent_frames
               else pd.DataFrame(columns=["Parent region", "Iteration", "Parent true total"]))
    return LevelStudy(groups, parents, DESCRIPTIONS[chain_key], not_held)


def families(study: LevelStudy) -> pd.DataFrame:
    """The families a simulation can be run on (two published regions or more), largest
    true total first."""
    f = study.parents
    if f.empty:
        return f
    f = f[f["Published regions"] >= 2]
    return f.sort_values(["Parent true total", "Parent region"], ascending=[False, True])[
        ["Invariant", "Parent region", "Iteration", "Parent true total", "Published regions"]]


def simulate_family(study: LevelStudy, prepared, tables: dict, parent: str, iteration: str,
                    iteration_level: int, reps: int, seed: int) -> tuple[pd.DataFrame, dict]:
    """Seeded simulation of one family with the engine's own adjustment.

    Every replication draws exact noise for each published child total (the sum of its
    1, 8, 18 or 46 cells' noise, at its stat level in the study) and holds the family to
    its total with `methods.invariants.hold_sums` weighted by the totals' variances, as
    `engine.tabulation.invariants` does (integer moves, largest remainders, random
    tie-breaks from the same seeded stream). Only the noise matters for the errors, so
    the truth is not needed. Integer rounding adds at most 1/4 to each variance.
    """
    from engine.noise import RandomSource

    g = study.groups
    rows = g[(g["Parent region"] == parent) & (g["Iteration"] == iteration)]
    if rows.empty:
        raise ValueError(f"no published regions of {parent} for iteration {iteration}")
    child = rows["Invariant"].iloc[0].split(" within ")[0]
    plan = tables[PopulationGroupLevel(child, iteration_level)].plan
    noise = noise_family.family_of(plan.privacy_defn)
    total_only = (rows["Published as"] == TABLE_NAMES[TOTAL_ONLY]).any()
    scale = plan.total_only if total_only else plan.stage2
    units = rows["Noisy values behind the total"].to_numpy(np.int64)
    U, n = int(units.sum()), len(units)
    k = replications(reps, U)
    src = RandomSource.seeded(seed)
    e = _draw(scale, k * U, noise, src).reshape(k, U)
    err_plain = np.add.reduceat(e, np.r_[0, np.cumsum(units)[:-1]], axis=1)
    v = rows["Variance without"].to_numpy(np.float64)
    held = inv.hold_sums(err_plain.reshape(-1), np.repeat(np.arange(k), n), np.zeros(k, np.int64),
                         src.words(k * n), weights=np.tile(v, k))
    err_with = held.reshape(k, n)
    out = pd.DataFrame({
        "Region": rows["Region"].to_numpy(),
        "Published as": rows["Published as"].to_numpy(),
        "Var. SafeTab-P, predicted": v,
        "Var. SafeTab-P, simulated": err_plain.var(axis=0),
        "Var. with, predicted": rows["Variance with"].to_numpy(),
        "Var. with, + rounding (max)": rows["Variance with"].to_numpy() + 0.25,
        "Var. with, simulated": err_with.var(axis=0),
        "MOE SafeTab-P (exact)": rows["MOE without (exact)"].to_numpy(),
        "95% |error| SafeTab-P, simulated": np.quantile(np.abs(err_plain), 0.95, axis=0),
        "MOE with (normal approx.)": rows["MOE with (normal approx.)"].to_numpy(),
        "95% |error| with, simulated": np.quantile(np.abs(err_with), 0.95, axis=0),
    })
    info = {"replications": k, "units": U, "sums_exact": bool(np.all(err_with.sum(axis=1) == 0)),
            "scale": float(scale), "noise": noise}
    return out, info


# --------------------------------------------------------------------------- verdicts
def _plural(n: int, one: str, many: str) -> str:
    return f"{n:,} {one if n == 1 else many}"


def level_disclosure(study: LevelStudy, iteration_name: str) -> str:
    """What the invariant gives away, in plain words (markdown bullets)."""
    s = study.summary()
    return (
        f"- **{_plural(s['parent_totals'], 'true total is', 'true totals are')} published exactly**: the count "
        f"of every {iteration_name} group in every parent region, because {study.description}.\n"
        f"- {s['small_totals']:,} of them count fewer than 100 persons and {s['tiny_totals']:,} between 1 and 9: "
        "exact counts of small detailed groups, **the disclosure SafeTab-P exists to prevent**.\n"
        f"- {_plural(s['child_exact'], 'region count is', 'region counts are')} exact as well: where a parent "
        "has one published region only (a one-county state, a county with one tract), that region's count *is* "
        "the true total.\n"
        "- Only how each total is split among the regions below it stays protected (the noise in the directions "
        "the invariant leaves free); the totals have no protection at all."
        + (f"\n- {_plural(s['not_held'], 'family is', 'families are')} left as SafeTab-P publishes them because "
           "the parent's own count is suppressed (holding them would reveal it)." if s["not_held"] else ""))


def custom_disclosure(study: CustomStudy) -> str:
    """What the held margins give away, in plain words (markdown bullets)."""
    if not study.margins:
        return "Nothing: no margin is held, every cell keeps SafeTab-P's noise."
    held = "; ".join(margin_label(m, study.shape) for m in study.margins)
    lines = [f"- **{_plural(study.constraints, 'sum is', 'sums are')} published exactly** ({held}): "
             f"{_plural(study.rank, 'independent fact', 'independent facts')} about the confidential data."]
    if study.factor == 0:
        lines.append("- **Every cell is pinned by them: the whole table is published exactly.**")
    else:
        lines.append("- If a held sum counts a small detailed group (a handful of persons of one race in one area), "
                     "its exact size is public: **the disclosure SafeTab-P exists to prevent**.")
    lines.append("- Only the directions the invariants leave free keep their noise (subspace differential privacy).")
    return "\n".join(lines)


def level_verdict(study: LevelStudy) -> str:
    s = study.summary()
    if not s["child_groups"]:
        return "This plan tabulates neither level of this invariant, so there is nothing to compare."
    if s["median_factor"] == 0:
        text = (f"Holding the totals exact ({study.description}) does not just shrink the noise here: most region "
                "counts become the true counts, because their region is the only one inside its parent. ")
    else:
        gain = 1 - math.sqrt(s["median_factor"])
        text = (f"Holding the totals exact ({study.description}) shrinks the typical MOE of a region's count by "
                f"{gain:.0%} (median variance factor {s['median_factor']:.2f}). ")
    text += (f"It publishes {_plural(s['parent_totals'], 'true total', 'true totals')} exactly, "
             f"{s['small_totals']:,} under 100 persons")
    if s["tiny_totals"]:
        text += f" and {s['tiny_totals']:,} between 1 and 9 persons"
    text += "."
    if s["child_exact"]:
        text += f" {_plural(s['child_exact'], 'region count is', 'region counts are')} exact as well."
    text += (" Exact counts of small detailed groups are precisely the disclosure SafeTab-P exists to prevent; "
             "SafeTab-P publishes no count without noise.")
    return text


def custom_verdict(study: CustomStudy) -> str:
    if not study.margins:
        return "No invariant is held: the release is SafeTab-P's, with the same noise in every cell."
    if study.factor == 0:
        return ("The held margins pin every cell: the whole table would be published exactly, without any "
                "protection. SafeTab-P publishes no count without noise.")
    gain = 1 - math.sqrt(float(study.factor))
    return (f"Holding {_plural(study.constraints, 'sum', 'sums')} exact ({study.rank:,} independent) leaves "
            f"{float(study.factor):.1%} of each cell's noise variance, so the MOE of a cell shrinks by {gain:.1%} "
            f"(from {study.moe_plain_normal:.1f} to {study.moe_with_normal:.1f}, normal approximation). In exchange, "
            "those sums are published without any noise: if one of them counts a small detailed group, its exact "
            "size is out, which SafeTab-P never allows.")


# --------------------------------------------------------------------------- charts
def factor_chart(by_parent: pd.DataFrame):
    """Share of a region total's noise variance left by the invariant, by parent region
    (sorted, smallest first: 0 means the region's count is published exactly)."""
    import plotly.graph_objects as go

    from ui.core.charts import COLORS, style

    d = by_parent.sort_values("Variance factor of a region's total (median)", kind="stable")
    y = [f"{p} ({n} inside)" for p, n in zip(d["Parent region"], d["Regions inside"])]
    x = d["Variance factor of a region's total (median)"]
    fig = go.Figure(go.Bar(
        x=x, y=y, orientation="h", marker_color=[COLORS[3] if v == 0 else COLORS[0] for v in x],
        text=["exact" if v == 0 else f"{v:.2f}" for v in x], textposition="outside",
        customdata=d[["Totals published exactly"]],
        hovertemplate="%{y}<br>variance factor %{x:.3f}<br>%{customdata[0]:,} totals published exactly"
                      "<extra></extra>"))
    style(fig, "Noise variance left in a region's count (1 = SafeTab-P, 0 = exact)",
            "variance factor (median over the region's counts)", "parent region",
            height=max(300, 28 * len(d) + 140), legend_room=60)
    fig.update_xaxes(range=[0, 1.1])
    fig.update_yaxes(autorange="reversed")
    return fig


def histogram_chart(hist: pd.DataFrame, moe_plain: float, moe_with: float):
    """The simulated errors of every cell, with and without the invariants (unit bins)."""
    import plotly.graph_objects as go

    from ui.core.charts import COLORS, style

    x = hist["Error (persons, nearest whole number)"]
    fig = go.Figure()
    for col, name, color in (("Share of cells, SafeTab-P", "SafeTab-P (exact noise)", COLORS[1]),
                             ("Share of cells, with invariants", "with invariants (projected, nearest whole "
                                                                 "number)", COLORS[0])):
        fig.add_trace(go.Bar(x=x, y=hist[col], name=name, marker_color=color, opacity=0.55,
                             hovertemplate="error %{x}<br>share %{y:.4f}<extra></extra>"))
    for m, color, name, pos in ((moe_plain, COLORS[1], "SafeTab-P MOE", "top right"),
                                (moe_with, COLORS[0], "MOE with invariants", "top left")):
        fig.add_vline(x=m, line=dict(color=color, dash="dash"), annotation_text=f"{name} {m:.1f}",
                      annotation_position=pos, annotation_font=dict(color=color, size=11))
        fig.add_vline(x=-m, line=dict(color=color, dash="dash"))
    fig.update_layout(barmode="overlay", bargap=0)
    style(fig, "Simulated noise of a cell, all cells pooled", "error (persons)", "share of cells", height=420)
    return fig


# --------------------------------------------------------------------------- the paper's own numbers
#: The paper's Section 5.2 table and held margins (14 groups x 24 hours x 20 buildings;
#: at every building the group and hour sums).
PAPER_TABLE = ((14, 24, 20), ((0, 2), (1, 2)))


def _close(value: float, printed: float, unit: float) -> str:
    """ "yes" when `value` is within one unit of the printed figure's last digit."""
    return "yes" if abs(value - printed) <= unit + 1e-12 else "no"


def paper_numbers(seed: int = 0, repetitions: int = 50) -> pd.DataFrame:
    """The numbers Gao, Gong and Yu print that the project can compute, each beside the
    value computed now by `methods.invariants` (and, for Sec. 5.2's simulation, by its
    exact law and a seeded rerun with numpy's Gaussian noise, as the paper's).

    Sec. 5.2's "median standard deviation of the elementwise additive errors over 50
    repetitions is 0.88, with 5% and 95% quantiles (0.86, 0.91)": with unit noise the
    projected errors of one repetition have mean square chi^2_{n - n_c} / n (n = 6,720
    cells, n - n_c = 5,980), whose median and 5%/95% quantiles are 0.890, 0.863 and
    0.917: the paper's figures to two digits (they look truncated). Read as standard
    deviations (square roots: 0.943, 0.929, 0.957) they do not match: the paper's
    "standard deviation" is the variance factor 299/336.
    """
    from scipy.stats import chi2

    shape, margins = PAPER_TABLE
    C = inv.margin_constraints(shape, margins)
    n = C.shape[1]
    rank = inv.margin_rank(shape, margins)
    dof = n - rank
    med, q05, q95 = (chi2.median(dof) / n, chi2.ppf(0.05, dof) / n, chi2.ppf(0.95, dof) / n)
    e = np.random.default_rng(seed).normal(size=(repetitions, *shape))
    per_rep = (inv.project_margins(e, shape, margins) ** 2).reshape(repetitions, -1).mean(axis=1)
    sim_med, sim_q05, sim_q95 = np.median(per_rep), *np.quantile(per_rep, [0.05, 0.95])
    eps = 4 * 0.16 * 0.3
    rows = [
        ("§5.2", "Query dimension, 14 × 24 × 20", "6720", f"{n:,}", "yes" if n == 6720 else "no"),
        ("§5.2", "Invariant dimension, (24 + 14 − 1) × 20", "740", f"{rank:,} (rank of C)",
         "yes" if rank == 740 else "no"),
        ("§5.2", "Median 'standard deviation' of the errors (50 runs)", "0.88",
         f"{med:.4f} variance (exact); {sim_med:.4f} rerun", _close(med, 0.88, 0.01)),
        ("§5.2", "… its 5% quantile", "0.86", f"{q05:.4f} variance (exact); {sim_q05:.4f} rerun",
         _close(q05, 0.86, 0.01)),
        ("§5.2", "… its 95% quantile", "0.91", f"{q95:.4f} variance (exact); {sim_q95:.4f} rerun",
         _close(q95, 0.91, 0.01)),
        ("§5.2", "The same figures read as standard deviations", "0.88 (0.86, 0.91)",
         f"{np.sqrt(med):.4f} ({np.sqrt(q05):.4f}, {np.sqrt(q95):.4f})",
         "no" if abs(np.sqrt(med) - 0.88) > 0.01 else "yes"),
        ("§5.2", "Variance factor of a cell, (n − n_c) / n", "not printed",
         f"{inv.margin_variance_factor(shape, margins)} = {float(inv.margin_variance_factor(shape, margins)):.4f}",
         "—"),
        ("§5.1", "Budget ε = 4 (total) × 0.16 (county) × 0.3 (population)", "0.192", f"{eps:.3f}",
         _close(eps, 0.192, 0.0005)),
        ("Lemma 3.4", "Gaussian multiplier c_ε,δ", "formula only", "see the table below", "—"),
        ("§1, Fig. 1 (left)", "County regressions, one per state or territory with more than five counties "
         "(47 states and Puerto Rico; Illinois is only the right panel): 48, 37 negative, 11 significant",
         "48, 37, 11",
         "not computable (the 2010 data)", "—"),
    ]
    return pd.DataFrame(rows, columns=["Where", "The paper says", "Paper's value", "Computed here", "Match"])


def gaussian_multipliers(settings=((1.0, 1e-5), (0.5, 1e-5), (0.5, 1e-10), (2.0, 1e-5))) -> pd.DataFrame:
    """c_ε,δ by the paper's Lemma 3.4 (the project's default) and by Dwork and Roth's
    classic bound (`variant="dwork-roth"`, defined for ε < 1 only), with the scale of the
    extended Gaussian mechanism for a total of 5 cells under bounded neighbours (Δ2 = √2)."""
    rows = []
    Q = inv.null_space_basis(np.ones((1, 5)))
    s2 = inv.extended_sensitivity(Q)
    for eps, delta in settings:
        paper = inv.gaussian_c(eps, delta)
        classic = inv.gaussian_c(eps, delta, variant="dwork-roth") if eps < 1 else None
        rows.append({"ε": eps, "δ": delta, "c, paper (Lemma 3.4)": round(paper, 4),
                     "c, Dwork–Roth": None if classic is None else round(classic, 4),
                     "σ of e_N, total of 5 cells, paper": round(paper * s2, 4)})
    return pd.DataFrame(rows)
