"""The two-stage adaptive tabulation of one population group level (SPEC section 1).

For every population group of the level (every region x iteration of the public
universe, empty or not):
- a DETAILED_ONLY ("TotalOnly") iteration gets one noisy total with the full budget rho;
- otherwise stage 1 draws a noisy total with budget gamma * rho; the stat level is the
  number of thresholds Theta_1..3 at or below it; stage 2 (budget (1 - gamma) * rho)
  draws a new noisy total (level 0) or the sex x age4 / age9 / age23 cells (8 / 18 /
  46 cells). The stage-1 value is never published.

Noise per cell: discrete Gaussian with sigma^2 = S / (2 * share * rho) under zCDP, or
two-sided geometric with scale S / (share * epsilon) under pure DP. Post-processing
(marginals, clamping, suppression, coterminous copies) lives in `engine.tabulation.postprocess`.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Iterator, Protocol

import numpy as np

from calculators import budget, noise_family
from calculators.config import SafeTabConfig
from calculators.levels import AGE23_EDGES, STAT_LEVEL_AGE_EDGES, STAT_LEVEL_CELLS, PopulationGroupLevel
from engine.tabulation.aggregate import LevelCounts
from engine.timing import nothing

#: Stat level code of TotalOnly (DETAILED_ONLY) groups in results.
TOTAL_ONLY = -1


@dataclass(frozen=True)
class LevelPlan:
    """The public parameters of one population group level, all derived from config + specs."""

    level: PopulationGroupLevel
    rho: Fraction  # rho (zCDP) or epsilon (pure DP)
    gamma: Fraction
    stability: int
    thresholds: tuple[int, int, int]
    privacy_defn: str  # "zcdp" or "puredp"
    suppression_threshold: int | None  # None: no suppression at this level

    def _scale(self, share: Fraction) -> Fraction:
        """sigma^2 = S / (2 share rho) (zCDP) or geometric scale S / (share eps) (pure DP)."""
        return budget.noise_scale_exact(self.rho, self.stability, share, noise_family.family_of(self.privacy_defn))

    @property
    def stage1(self) -> Fraction:
        return self._scale(self.gamma)

    @property
    def stage2(self) -> Fraction:
        return self._scale(1 - self.gamma)

    @property
    def total_only(self) -> Fraction:
        return self._scale(Fraction(1))


def level_plan(config: SafeTabConfig, level: PopulationGroupLevel, stability: int) -> LevelPlan:
    """Derive a level's plan; the suppression threshold uses the exact stage-2 CDF (SPEC §1)."""
    from calculators import suppression

    rho = config.rho_exact(level)
    gamma = config.gamma_exact
    plan = LevelPlan(level, rho, gamma, stability, config.thresholds(level), config.privacy_defn, None)
    p = config.zero_suppression_chance
    if p > 0 and not level.is_state_or_above:
        # the exact rational stage-2 scale (the discrete Gaussian's CDF is checked with it)
        t = suppression.threshold(plan.stage2, p, noise=noise_family.family_of(config.privacy_defn))
        plan = LevelPlan(level, rho, gamma, stability, plan.thresholds, config.privacy_defn, int(t))
    return plan


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


class Noise(Protocol):
    """Draws integer noise for `size` cells at a given scale (sigma^2 or geometric scale)."""

    def __call__(self, scale: Fraction, size: int) -> np.ndarray: ...


def _bin_starts(edges: tuple[int, ...]) -> np.ndarray:
    return np.searchsorted(np.array(AGE23_EDGES), np.array(edges))


def collapse_cells(cells46: np.ndarray, stat_level: int) -> np.ndarray:
    """Sum sex x age23 cells (n, 46) into the table of a stat level (n, 2 * bins).

    Column order: sex 1 (male) bins ascending, then sex 2 (female).
    """
    n = cells46.shape[0]
    by_sex = cells46.reshape(n, 2, 23)
    starts = _bin_starts(STAT_LEVEL_AGE_EDGES[stat_level])
    return np.add.reduceat(by_sex, starts, axis=2).reshape(n, -1) if n else np.zeros((0, 2 * len(starts)), np.int64)


@dataclass
class ChunkResult:
    """Noisy results of the groups [g0, g1) of a level (before post-processing).

    `stat_level`: 0..3, or TOTAL_ONLY. `total`: the noisy stage-2 / TotalOnly total
    (meaningful where no table was drawn). `tables[k]`: (group indices, noisy cells) of
    the groups at stat level k >= 1. `true_total` and `true_tables` (same shapes as
    `total` and `tables`) serve accuracy reports only; they are never written.
    """

    level: PopulationGroupLevel
    g0: int
    g1: int
    stat_level: np.ndarray
    total: np.ndarray
    tables: dict[int, tuple[np.ndarray, np.ndarray]]
    true_total: np.ndarray
    true_tables: dict[int, np.ndarray]


def tabulate_level(
    plan: LevelPlan,
    counts: LevelCounts,
    detailed_only: np.ndarray,
    noise: Noise,
    truth: bool = False,
    chunk_groups: int = 2_000_000,
    phases=nothing,
) -> Iterator[ChunkResult]:
    """Run both stages for every group of a level, yielding results chunk by chunk.

    `detailed_only[i]` flags TotalOnly iterations. Stage 1 is drawn for the whole level
    first (it only decides stat levels), so the cells of the groups that get a table
    are gathered in one pass over the counts. With `truth`, no noise is drawn and stat
    levels follow the true totals (ground-truth mode). `phases` (`engine.timing.Phases`)
    times the steps.
    """

    def draw(scale: Fraction, size: int) -> np.ndarray:
        if truth or size == 0:
            return np.zeros(size, dtype=np.int64)
        return noise(scale, size)

    n_groups = counts.n_groups
    with phases("level_totals"):
        totals = counts.totals()
    total_only = np.tile(detailed_only, counts.n_regions)
    thresholds = np.array(plan.thresholds)
    stat = np.full(n_groups, TOTAL_ONLY, dtype=np.int8)
    with phases("stage_1_noise"):
        for g0 in range(0, n_groups, chunk_groups):
            # Stage 1 (never published): decides the stat level.
            g1 = min(n_groups, g0 + chunk_groups)
            adaptive = np.flatnonzero(~total_only[g0:g1]) + g0
            stage1 = totals[adaptive] + draw(plan.stage1, len(adaptive))
            stat[adaptive] = np.searchsorted(thresholds, stage1, side="right")
    with phases("table_cells"):
        table_groups = np.flatnonzero(stat >= 1)
        true_cells46 = counts.cells_of(table_groups)

    for g0 in range(0, n_groups, chunk_groups):
        with phases("stage_2_noise"):
            res = _stage2(plan, stat, totals, table_groups, true_cells46, g0, min(n_groups, g0 + chunk_groups), draw)
        yield res


def _stage2(plan: LevelPlan, stat: np.ndarray, totals: np.ndarray, table_groups: np.ndarray,
            true_cells46: np.ndarray, g0: int, g1: int, draw) -> ChunkResult:
    """Stage 2 of the groups [g0, g1): a noisy total, or the cells of its table."""
    st = stat[g0:g1]
    true = totals[g0:g1]
    noisy_total = np.zeros(g1 - g0, dtype=np.int64)
    # TotalOnly groups: one total with the full budget.
    to = st == TOTAL_ONLY
    noisy_total[to] = true[to] + draw(plan.total_only, int(to.sum()))
    # Stage 2, level 0: a new noisy total.
    lvl0 = st == 0
    noisy_total[lvl0] = true[lvl0] + draw(plan.stage2, int(lvl0.sum()))
    tables: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    true_tables: dict[int, np.ndarray] = {}
    lo, hi = np.searchsorted(table_groups, [g0, g1])
    chunk_tables, chunk_true = table_groups[lo:hi], true_cells46[lo:hi]
    chunk_stat = stat[chunk_tables]
    for k in (1, 2, 3):
        sel = chunk_stat == k
        if not sel.any():
            continue
        g = chunk_tables[sel]
        true_k = collapse_cells(chunk_true[sel], k)
        cells = true_k + draw(plan.stage2, true_k.size).reshape(true_k.shape)
        tables[k] = (g, cells)
        true_tables[k] = true_k
        noisy_total[g - g0] = cells.sum(axis=1)
    return ChunkResult(plan.level, g0, g1, st, noisy_total, tables, true, true_tables)
