"""Whole population group levels as arrays: the truth and a SafeTab-P release side by side.

The "Compare methods" studies run another method on the same data and plan as
SafeTab-P. They need, per population group level, every group's true total, what
SafeTab-P publishes for it, whether it was suppressed, its stat level and the noise
variance of its published total, plus how the regions of two geography levels nest.
Everything here holds a whole level in memory (regions x iterations), which suits
studies on sample-sized data; a release of the nation streams through `engine.run`.

Published totals are those of `engine.run.iter_published` (post-processed: marginals,
clamping, suppression) before coterminous copies (SPEC section 1), which only copy
one level's numbers onto another.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from calculators import noise_family
from calculators.levels import STAT_LEVEL_CELLS, PopulationGroupLevel
from engine.inputs.geography import Geography
from engine.tabulation.mechanism import TOTAL_ONLY, LevelPlan


@dataclass
class LevelTables:
    """One population group level: arrays of shape (regions, iterations).

    `published` and `released` are the release (a suppressed group's `published`
    value is its noisy total, which is not published); `stat_level` is 0..3 or
    TOTAL_ONLY (-1); `variance` is the noise variance of the published total before
    clamping (`total_variance`).
    """

    level: PopulationGroupLevel
    plan: LevelPlan
    regions: np.ndarray  # region ids (str), the universe order
    codes: np.ndarray  # iteration codes (str)
    truth: np.ndarray  # int64
    published: np.ndarray  # int64
    released: np.ndarray  # bool
    stat_level: np.ndarray  # int8
    variance: np.ndarray  # float64

    @property
    def shape(self) -> tuple[int, int]:
        return self.truth.shape


def total_variance(plan: LevelPlan, stat_level: np.ndarray) -> np.ndarray:
    """Noise variance of each published total (SPEC section 1).

    TotalOnly: Var(X) at the full-budget scale; stat level 0: Var(X) at the stage-2
    scale; stat level k >= 1: the total is the sum of the group's c_k independent
    stage-2 cells (8, 18, 46), so c_k Var(X). Var is the exact variance of the
    discrete Gaussian (slightly below sigma^2) or of the two-sided geometric.
    """
    law = noise_family.law(noise_family.family_of(plan.privacy_defn))
    v_stage2 = float(law.variance(float(plan.stage2)))
    v_total_only = float(law.variance(float(plan.total_only)))
    cells = np.array([STAT_LEVEL_CELLS[k] for k in sorted(STAT_LEVEL_CELLS)], np.float64)
    st = np.asarray(stat_level)
    out = np.where(st == TOTAL_ONLY, v_total_only, v_stage2 * cells[np.maximum(st, 0)])
    return out.astype(np.float64)


def level_tables(prepared, noise, *, truth: bool = False,
                 levels: list[PopulationGroupLevel] | None = None) -> dict[PopulationGroupLevel, LevelTables]:
    """Tabulate the plan's levels (or `levels`) once and return them whole.

    `prepared` is `engine.run.prepare(...)`, `noise` is `engine.run.make_noise(...)`
    (a seeded source makes the study reproducible; it is never a release).
    """
    from engine.run import iter_published

    wanted = set(levels) if levels is not None else None
    out: dict[PopulationGroupLevel, LevelTables] = {}
    geo = prepared.inputs.geography
    for counts, pub in iter_published(prepared, noise, truth=truth):
        lvl = pub.plan.level
        if wanted is not None and lvl not in wanted:
            continue
        if lvl not in out:
            n_r, n_i = counts.n_regions, counts.n_iterations
            out[lvl] = LevelTables(
                level=lvl, plan=pub.plan,
                regions=geo.regions[lvl.geo].astype(str),
                codes=prepared.catalog.codes(lvl.geo, lvl.iteration_level).astype(str),
                truth=np.zeros((n_r, n_i), np.int64), published=np.zeros((n_r, n_i), np.int64),
                released=np.zeros((n_r, n_i), bool), stat_level=np.zeros((n_r, n_i), np.int8),
                variance=np.zeros((n_r, n_i), np.float64))
        t = out[lvl]
        sl = slice(pub.g0, pub.g1)
        t.truth.reshape(-1)[sl] = pub.true_total
        t.published.reshape(-1)[sl] = pub.t1
        t.released.reshape(-1)[sl] = pub.released
        t.stat_level.reshape(-1)[sl] = pub.stat_level
        t.variance.reshape(-1)[sl] = total_variance(pub.plan, pub.stat_level)
    return out


def parent_regions(geography: Geography, child: str, parent: str) -> np.ndarray:
    """For each region of level `child`, the index of the region of level `parent` that
    contains it, or -1 where the child region is not inside a single parent region
    (e.g. a place crossing county lines). Nesting is read from GRF-C's pieces, so it is
    public information.
    """
    pc, pp = geography.piece_region[child], geography.piece_region[parent]
    n = geography.n_regions(child)
    inside = (pc >= 0) & (pp >= 0)
    lo = np.full(n, np.iinfo(np.int64).max, np.int64)
    hi = np.full(n, -1, np.int64)
    np.minimum.at(lo, pc[inside], pp[inside])
    np.maximum.at(hi, pc[inside], pp[inside])
    # A child piece outside every parent region also breaks nesting.
    outside = np.zeros(n, bool)
    outside[pc[(pc >= 0) & (pp < 0)]] = True
    return np.where((lo == hi) & ~outside, hi, -1)
