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

import re
from dataclasses import dataclass, replace

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
    #: Groups of this set the Tabulation System's rules removed, per rule (None: not applied).
    removed_by_rule: dict[str, int] | None = None


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


# ------------------------------------------------------- the Tabulation System's suppression
#: The two rules of the SafeTab-P paper, Section 5.3.4, as written in suppressed/tabulation-system.csv.
NONNEGATIVITY = "nonnegativity"
ALONE_EXCEEDS_AOIC = "alone-exceeds-alone-or-in-any-combination"
TABULATION_RULES = (NONNEGATIVITY, ALONE_EXCEEDS_AOIC)
#: The file of suppressed/ that lists what the rules removed, with the rule as REASON.
TABULATION_FILE = "tabulation-system"
TABULATION_NOTE = (
    "Tabulation System suppression (SafeTab-P paper, Section 5.3.4), applied after the release was computed: "
    "outside the DAS, post-processing of the noisy counts only, so no privacy cost (the paper's Lemma 4). "
    "Removed: groups with a negative published count (total or table cell), and Alone groups whose noisy "
    "total exceeds the noisy total of the Alone-or-in-any-combination iteration of the same race and geography.")
_AOIC_PHRASE = re.compile(r" alone or in (?:any combination|combination with one or more other races)")


def alone_pairs(iterations) -> dict[str, str]:
    """Alone iteration code -> the Alone-or-in-any-combination iteration of the same race,
    read from the race iteration spec (`InputSpecs.iterations`: names, LEVEL and ALONE).

    An AOIC iteration (ALONE False) is named as its Alone partner (ALONE True, same LEVEL)
    with " alone" written " alone or in any combination" (level 0: " alone or in
    combination with one or more other races"), e.g. 1003 "Albanian alone" and 1114
    "Albanian alone or in any combination" in the 2020 files. Empty if the spec pairs none.
    """
    alone: dict[tuple[str, int], str] = {}
    aoic: dict[tuple[str, int], str] = {}
    for code, it in iterations.items():
        if it.alone is True:
            alone[(it.name.strip().casefold(), it.level)] = code
        elif it.alone is False:
            key = _AOIC_PHRASE.sub(" alone", it.name.strip(), count=1)
            if key != it.name.strip():
                aoic[(key.casefold(), it.level)] = code
    return {code: aoic[key] for key, code in alone.items() if key in aoic}


class TabulationSuppression:
    """The Tabulation System's two rules on what a set of groups publishes (`GroupRows`).

    1. Non-negativity: a released group whose published total or any published table
       cell is negative is removed.
    2. Alone > Alone or in any combination: a released Alone group whose published
       total exceeds that of its AOIC partner (`alone_pairs`), same region, both released
       and kept by rule 1, is removed.
    Removed groups become suppressed (no T1 row, no table). Both members of a pair are
    at the same iteration level and geography, so they are in the same `GroupRows`
    when every chunk holds whole regions (`engine.run` sees to it). `removed` keeps what
    was removed (part, region index, code index, rule) for suppressed/; `counts` the
    groups per rule and population group level.
    """

    def __init__(self, pairs: dict[str, str]):
        self.pairs = pairs
        self.counts: dict[str, dict[str, int]] = {}
        self._partner: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    def _partner_of(self, codes: np.ndarray) -> np.ndarray:
        key = id(codes)
        if key not in self._partner:
            pos = {str(c): i for i, c in enumerate(codes)}
            partner = np.array([pos.get(self.pairs.get(str(c), ""), -1) for c in codes], np.int64)
            self._partner[key] = (codes, partner)  # the array is kept, so its id stays its own
        return self._partner[key][1]

    def apply(self, rows: GroupRows) -> tuple[GroupRows, np.ndarray, np.ndarray]:
        """(rows with the removed groups suppressed, indices of the removed rows, their rule
        index into TABULATION_RULES)."""
        n_codes = max(len(rows.codes), 1)
        key = rows.region_idx.astype(np.int64) * n_codes + rows.code_idx
        order = np.argsort(key, kind="stable")
        skey = key[order]

        def find(k: np.ndarray) -> np.ndarray:
            """The row of each key, -1 where none."""
            if not len(skey):
                return np.full(len(k), -1, np.int64)
            pos = np.minimum(np.searchsorted(skey, k), len(skey) - 1)
            return np.where(skey[pos] == k, order[pos], -1)

        neg = rows.released & (rows.t1 < 0)
        for _k, (r, c, cells, _m, _t) in rows.tables.items():
            bad = (cells < 0).any(axis=1)
            if bad.any():
                at = find(r[bad].astype(np.int64) * n_codes + c[bad])
                neg[at[at >= 0]] = True
        kept = rows.released & ~neg
        partner = self._partner_of(rows.codes)[rows.code_idx]
        alone = np.flatnonzero(kept & (partner >= 0))
        other = find(rows.region_idx[alone].astype(np.int64) * n_codes + partner[alone])
        ok = other >= 0
        alone, other = alone[ok], other[ok]
        over = kept[other] & (rows.t1[alone] > rows.t1[other])
        exceed = np.zeros(len(key), bool)
        exceed[alone[over]] = True
        removed = np.flatnonzero(neg | exceed)
        rule = np.where(neg[removed], 0, 1).astype(np.int8)
        st = self.counts.setdefault(f"({rows.geo}, {rows.iteration_level})", dict.fromkeys(TABULATION_RULES, 0))
        by_rule = {NONNEGATIVITY: int(neg.sum()), ALONE_EXCEEDS_AOIC: int(exceed.sum())}
        for r, n in by_rule.items():
            st[r] += n
        if not len(removed):
            return replace(rows, removed_by_rule=by_rule), removed, rule
        released = rows.released.copy()
        released[removed] = False
        gone = np.zeros(len(key), bool)
        gone[removed] = True
        tables = {}
        for k, (r, c, cells, marg, true) in rows.tables.items():
            at = find(r.astype(np.int64) * n_codes + c)
            keep = ~gone[at]
            if keep.any():
                tables[k] = (r[keep], c[keep], cells[keep], marg[keep], None if true is None else true[keep])
        return replace(rows, released=released, tables=tables, removed_by_rule=by_rule), removed, rule

    def totals(self) -> dict[str, int]:
        """Groups removed by each rule, over every level."""
        return {r: sum(st[r] for st in self.counts.values()) for r in TABULATION_RULES}
