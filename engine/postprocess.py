"""Post-processing of noisy results (SPEC section 1; no privacy cost).

- Non-negativity: with `allow_negative_counts: false` released counts are clamped at 0.
- Marginals: a group with a sex x age table gets T1 = the sum of its (clamped) cells
  and two sex marginals in T2.
- Suppression: only stat-level-0 groups at sub-state levels; released iff the noisy
  total > T.
- Coterminous entities (same blocks, different levels) publish the counts of the
  highest unsuppressed level of their set.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from engine.mechanism import TOTAL_ONLY, ChunkResult, LevelPlan


@dataclass
class Published:
    """What a chunk of groups publishes.

    `t1[i]` is the published total of group g0 + i, `released[i]` False if suppressed.
    `tables[k]` = (group indices, cells (n, 2 * bins), sex marginals (n, 2)).
    """

    plan: LevelPlan
    g0: int
    g1: int
    stat_level: np.ndarray
    t1: np.ndarray
    released: np.ndarray
    tables: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]]
    true_total: np.ndarray

    @property
    def n(self) -> int:
        return self.g1 - self.g0


def postprocess_chunk(res: ChunkResult, plan: LevelPlan, allow_negative: bool) -> Published:
    t1 = res.total.copy()
    released = np.ones(len(t1), dtype=bool)
    if plan.suppression_threshold is not None:
        # The comparison uses the noisy total itself, before any clamping (SPEC §1).
        released = ~((res.stat_level == 0) & (res.total <= plan.suppression_threshold))
    tables = {}
    for k, (groups, cells) in res.tables.items():
        if not allow_negative:
            cells = np.maximum(cells, 0)
        n = len(groups)
        marg = cells.reshape(n, 2, -1).sum(axis=2)
        tables[k] = (groups, cells, marg)
        t1[groups - res.g0] = cells.sum(axis=1)
    if not allow_negative:
        simple = (res.stat_level == 0) | (res.stat_level == TOTAL_ONLY)
        t1[simple] = np.maximum(t1[simple], 0)
    return Published(plan, res.g0, res.g1, res.stat_level, t1, released, tables, res.true_total)


@dataclass
class GroupOutput:
    """Everything one population group publishes (used for coterminous copies)."""

    stat_level: int
    t1: int
    released: bool
    cells: np.ndarray | None  # (2 * bins,) for stat level >= 1
    marginals: np.ndarray | None


def group_output(pub: Published, g: int) -> GroupOutput:
    i = g - pub.g0
    k = int(pub.stat_level[i])
    cells = marg = None
    if k >= 1:
        groups, c, m = pub.tables[k]
        j = int(np.searchsorted(groups, g))
        cells, marg = c[j].copy(), m[j].copy()
    return GroupOutput(k, int(pub.t1[i]), bool(pub.released[i]), cells, marg)


def coterminous_copies(
    sets: list[list[tuple[str, int]]],
    outputs: dict[tuple[str, int, int, str], GroupOutput],
    iteration_levels: tuple[int, ...] = (1, 2),
) -> tuple[dict[tuple[str, int, int, str], GroupOutput], int]:
    """Copy the outputs of the highest unsuppressed member to the rest of each set.

    `sets` lists coterminous (geo, region) members in priority order (USA, STATE,
    COUNTY, TRACT, PLACE, AIANNH); `outputs` maps (geo, iteration level, region,
    iteration code) to the group's output for every tabulated group of a member.
    Returns the new outputs and the number of groups changed.
    """
    out = dict(outputs)
    changed = 0
    by_member: dict[tuple[str, int, int], list[str]] = {}
    for geo, lvl, region, code in outputs:
        by_member.setdefault((geo, lvl, region), []).append(code)
    for members in sets:
        for lvl in iteration_levels:
            codes: dict[str, list[tuple[str, int]]] = {}
            for geo, region in members:
                for code in by_member.get((geo, lvl, region), ()):
                    codes.setdefault(code, []).append((geo, region))
            for code, holders in codes.items():
                if len(holders) < 2:
                    continue
                source = next((m for m in holders if out[(m[0], lvl, m[1], code)].released), None)
                if source is None:
                    continue
                src = out[(source[0], lvl, source[1], code)]
                for geo, region in holders:
                    key = (geo, lvl, region, code)
                    if (geo, region) != source and not _same(out[key], src):
                        out[key] = replace(src)
                        changed += 1
    return out, changed


def _same(a: GroupOutput, b: GroupOutput) -> bool:
    if (a.stat_level, a.t1, a.released) != (b.stat_level, b.t1, b.released):
        return False
    if a.cells is None or b.cells is None:
        return a.cells is None and b.cells is None
    return bool(np.array_equal(a.cells, b.cells))
