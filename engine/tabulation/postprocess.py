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

from dataclasses import dataclass

import numpy as np

from engine.tabulation.mechanism import TOTAL_ONLY, ChunkResult, LevelPlan


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
    true_tables: dict[int, np.ndarray]

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
    return Published(plan, res.g0, res.g1, res.stat_level, t1, released, tables, res.true_total, res.true_tables)


@dataclass
class GroupRows:
    """What a set of population groups of one geography and iteration level publishes
    (coterminous copies resolved: the rows of the release), with their true counts,
    which serve accuracy reports only and are never written.

    Group i is (region_ids[region_idx[i]], codes[code_idx[i]]); it is published if
    released[i], with total t1[i] and stat level stat[i]. tables[k] = (region_idx,
    code_idx, cells, sex marginals, true cells) of its groups at stat level k >= 1 (all
    released).
    """

    part: str
    geo: str
    iteration_level: int
    region_ids: np.ndarray
    codes: np.ndarray
    region_idx: np.ndarray
    code_idx: np.ndarray
    t1: np.ndarray
    released: np.ndarray
    stat: np.ndarray
    true_total: np.ndarray | None
    tables: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]]


@dataclass
class StashedRows:
    """The coterminous members' groups after resolution, as parallel arrays.

    `src[i]` is the row whose outputs row i publishes (itself unless a higher member
    of its set was released). `tables[k]` = (row, cells, marginals) sorted by row.
    """

    geo: np.ndarray  # int8 index into `geos`
    lvl: np.ndarray  # int8 iteration level
    region: np.ndarray  # int32
    code: np.ndarray  # int32 global iteration index
    t1: np.ndarray
    released: np.ndarray
    stat: np.ndarray
    src: np.ndarray
    tables: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]]
    geos: list[str]
    #: True totals of the rows, and true cells of `tables` (same rows), for reports.
    true_total: np.ndarray | None = None
    true_tables: dict[int, np.ndarray] | None = None

    def __len__(self) -> int:
        return len(self.src)

    @property
    def copied(self) -> int:
        """Groups that publish another member's outputs."""
        return int((self.src != np.arange(len(self.src))).sum())


class CoterminousStash:
    """Holds the results of the coterminous members' groups until every level is done.

    SPEC §1: entities of different levels covering the same blocks publish the counts of
    the highest unsuppressed level of their set (priority USA, STATE, COUNTY, TRACT,
    PLACE, AIANNH; PR likewise). `sets` lists each set's (geo, region) members in
    priority order. Everything is kept as small integer arrays: at national scale the
    sets hold tens of millions of groups.
    """

    def __init__(self, sets: list[list[tuple[str, int]]]):
        self.sets = sets
        self.member: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        sizes: dict[str, int] = {}
        for members in sets:
            for g, r in members:
                sizes[g] = max(sizes.get(g, 0), r + 1)
        for g, n in sizes.items():
            self.member[g] = (np.full(n, -1, np.int32), np.full(n, -1, np.int8))
        for sid, members in enumerate(sets):
            for prio, (g, r) in enumerate(members):
                self.member[g][0][r] = sid
                self.member[g][1][r] = prio
        self.geos = sorted(sizes)
        self._parts: list[dict[str, np.ndarray]] = []
        self._tables: dict[int, list[tuple[np.ndarray, ...]]] = {1: [], 2: [], 3: []}
        self._rows = 0

    def region_mask(self, geo: str, n_regions: int) -> np.ndarray | None:
        """Which regions of a level belong to a coterminous set (None: none do)."""
        if geo not in self.member:
            return None
        sid = self.member[geo][0]
        mask = np.zeros(n_regions, dtype=bool)
        mask[: len(sid)] = sid >= 0
        return mask

    def add(self, pub: Published, geo: str, groups: np.ndarray, n_iterations: int, code_ids: np.ndarray) -> None:
        """Keep the outputs of `groups` (sorted indices of members' groups of `pub`).

        `code_ids[i]` is the global index of the level's i-th iteration: the same
        iteration has the same id at every level, which is what sets are matched on.
        """
        if len(groups) == 0:
            return
        i = groups - pub.g0
        region = groups // n_iterations
        sid, prio = self.member[geo]
        n = len(groups)
        self._parts.append({
            "geo": np.full(n, self.geos.index(geo), np.int8),
            "lvl": np.full(n, pub.plan.level.iteration_level, np.int8),
            "region": region.astype(np.int32), "code": code_ids[groups % n_iterations].astype(np.int32),
            "set": sid[region], "prio": prio[region],
            "t1": pub.t1[i], "released": pub.released[i], "stat": pub.stat_level[i].astype(np.int8),
            "true_total": pub.true_total[i],
        })
        rows = np.arange(self._rows, self._rows + n)
        member = np.zeros(pub.n, dtype=bool)
        member[i] = True
        for k, (tg, cells, marg) in pub.tables.items():
            sel = member[tg - pub.g0]
            if sel.any():
                self._tables[k].append((rows[np.searchsorted(groups, tg[sel])], cells[sel], marg[sel],
                                        pub.true_tables[k][sel]))
        self._rows += n

    def resolve(self) -> StashedRows | None:
        """Find, for every stashed group, the member whose outputs it publishes."""
        if not self._parts:
            return None
        cols = {k: np.concatenate([p[k] for p in self._parts]) for k in self._parts[0]}
        self._parts = []
        n_codes = int(cols["code"].max()) + 1
        key = (cols["set"].astype(np.int64) * 3 + cols["lvl"]) * n_codes + cols["code"]
        rows = np.arange(len(key))
        rel = np.flatnonzero(cols["released"])
        # Among released rows, the one of highest priority (lowest prio) for each key.
        order = rel[np.lexsort((cols["prio"][rel], key[rel]))]
        first = order[np.r_[True, key[order][1:] != key[order][:-1]]] if len(order) else order
        src = rows.copy()
        if len(first):
            pos = np.minimum(np.searchsorted(key[first], key), len(first) - 1)
            hit = key[first][pos] == key
            src[hit] = first[pos[hit]]
        tables, true_tables = {}, {}
        for k, parts in self._tables.items():
            if parts:
                r = np.concatenate([p[0] for p in parts])
                o = np.argsort(r)
                tables[k] = (r[o], np.concatenate([p[1] for p in parts])[o], np.concatenate([p[2] for p in parts])[o])
                true_tables[k] = np.concatenate([p[3] for p in parts])[o]
        return StashedRows(cols["geo"], cols["lvl"], cols["region"], cols["code"], cols["t1"], cols["released"],
                           cols["stat"], src, tables, self.geos, cols["true_total"], true_tables)
