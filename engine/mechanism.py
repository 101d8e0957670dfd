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
(marginals, clamping, suppression, coterminous copies) lives in `engine.postprocess`.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Protocol

import numpy as np

from calculators import budget
from calculators.config import SafeTabConfig
from calculators.levels import AGE23_EDGES, STAT_LEVEL_AGE_EDGES, STAT_LEVEL_CELLS, PopulationGroupLevel
from engine.aggregate import GroupCounts

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
        if self.privacy_defn == "puredp":
            return Fraction(self.stability) / (share * self.rho)
        return budget.sigma2_exact(self.rho, self.stability, share)

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
    from calculators import geometric, suppression

    rho = config.rho_exact(level)
    gamma = config.gamma_exact
    plan = LevelPlan(level, rho, gamma, stability, config.thresholds(level), config.privacy_defn, None)
    p = config.zero_suppression_chance
    if p > 0 and not level.is_state_or_above:
        if config.privacy_defn == "puredp":
            t = int(geometric.inverse_cdf(p, float(plan.stage2)))
        else:
            t = suppression.threshold(plan.stage2, p)  # the exact rational sigma^2
        plan = LevelPlan(level, rho, gamma, stability, plan.thresholds, config.privacy_defn, int(t))
    return plan


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
    the groups at stat level k >= 1. `true_total` is kept for accuracy reports only.
    """

    level: PopulationGroupLevel
    g0: int
    g1: int
    stat_level: np.ndarray
    total: np.ndarray
    tables: dict[int, tuple[np.ndarray, np.ndarray]]
    true_total: np.ndarray


def tabulate_chunk(
    plan: LevelPlan,
    counts: GroupCounts,
    totals: np.ndarray,
    detailed_only: np.ndarray,
    g0: int,
    g1: int,
    noise: Noise,
    truth: bool = False,
) -> ChunkResult:
    """Run both stages for the groups [g0, g1) of a level.

    `totals` are the true totals of all groups of the level; `detailed_only[i]` flags
    TotalOnly iterations. With `truth`, no noise is drawn and stat levels follow the
    true totals (ground-truth mode).
    """
    n = g1 - g0
    true = totals[g0:g1]
    groups = np.arange(g0, g1, dtype=np.int64)
    total_only = detailed_only[groups % counts.n_iterations]
    stat = np.full(n, TOTAL_ONLY, dtype=np.int8)
    noisy_total = np.zeros(n, dtype=np.int64)

    def draw(scale: Fraction, size: int) -> np.ndarray:
        if truth or size == 0:
            return np.zeros(size, dtype=np.int64)
        return noise(scale, size)

    adaptive = ~total_only
    n_ad = int(adaptive.sum())
    # Stage 1 (never published): decides the stat level.
    stage1 = true[adaptive] + draw(plan.stage1, n_ad)
    levels = np.searchsorted(np.array(plan.thresholds), stage1, side="right").astype(np.int8)
    stat[adaptive] = levels
    # TotalOnly groups: one total with the full budget.
    n_to = int(total_only.sum())
    noisy_total[total_only] = true[total_only] + draw(plan.total_only, n_to)
    # Stage 2, level 0: a new noisy total.
    lvl0 = stat == 0
    noisy_total[lvl0] = true[lvl0] + draw(plan.stage2, int(lvl0.sum()))
    tables: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    for k in (1, 2, 3):
        sel = np.flatnonzero(stat == k)
        if len(sel) == 0:
            continue
        g = groups[sel]
        cells = collapse_cells(counts.cells_of(g), k)
        cells = cells + draw(plan.stage2, cells.size).reshape(cells.shape)
        assert cells.shape[1] == STAT_LEVEL_CELLS[k]
        tables[k] = (g, cells)
        noisy_total[sel] = cells.sum(axis=1)
    return ChunkResult(plan.level, g0, g1, stat, noisy_total, tables, true)
