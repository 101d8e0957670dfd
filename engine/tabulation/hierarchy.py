"""The hierarchy stage: cross-level post-processing of nested geography levels.

SafeTab-P post-processes each population group level on its own (`postprocess`). This
stage sees several levels at once: for every characteristic iteration it gathers the
published totals (and tables) of a chain of nested geography levels, hands them to an
*adjust function* as a tree (a parent array) with the noise variance of every total,
and puts the adjusted totals back, with each group's sex x age cells made to add up to
its new total. `engine.tabulation.consistency` plugs in the `--consistency` methods; any
other cross-level post-processing (e.g. invariants) plugs in the same way. No privacy
cost: it only reads what SafeTab-P publishes (the truth is handed over for invariants
only, see `HierarchyBatch.truth`).

The rules (docs/consistency.md explains them):

- Chains: USA > STATE > COUNTY > TRACT, and PR-STATE > PR-COUNTY > PR-TRACT; only the
  levels that are on (budget > 0, regions in the run) are chained, so with COUNTY off a
  tract hangs from its state. PLACE and AIANNH do not nest and are left alone.
- Trees: one per iteration code, over the chain levels that tabulate it. Regular
  iterations get the whole chain; TotalOnly (DETAILED_ONLY) iterations, tabulated only
  at USA and STATE, get USA > STATE; COARSE_ONLY ones get COUNTY > TRACT (a forest, one
  tree per county). An iteration tabulated at a single chain level (e.g. a TotalOnly
  one in Puerto Rico, where PR-STATE is the top) is a forest of isolated nodes: nothing
  to add up, but a method may still make it integral and non-negative. Iterations with
  the same levels share one forest and are adjusted as one batch.
- Coterminous entities first: every group of a coterminous set is given the outputs of
  the highest unsuppressed member (SafeTab-P's rule) *before* the adjustment, the set's
  chain members become one node (its highest chain member), and afterwards every member
  (PLACE and AIANNH ones too) publishes that node's adjusted outputs.
- Suppression is decided before, by SafeTab-P's rule on the noisy total, and never
  changed: the same groups are suppressed with or without the stage. A suppressed
  group is an *unobserved* node (variance inf, published value 0 in the batch): its
  noisy total is never handed to the adjust function, so nothing derived from the
  adjusted release can reveal more about it than SafeTab-P's own release does. It
  stands for a non-negative unpublished remainder: a parent is at least the sum of its
  published children, and equal to it when none is suppressed.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from calculators.levels import PopulationGroupLevel
from engine.tabulation.mechanism import LevelPlan, collapse_cells
from engine.tabulation.postprocess import Published, StashedRows

#: The chains of nested geography levels, top down (US and Puerto Rico run apart).
CHAINS: tuple[tuple[str, ...], ...] = (("USA", "STATE", "COUNTY", "TRACT"), ("PR-STATE", "PR-COUNTY", "PR-TRACT"))


@dataclass(frozen=True)
class Forest:
    """The nodes of one hierarchy: the regions of a chain of levels, top down.

    `parents[i]` is node i's parent (-1: a root); `level[i]` the index in `levels` of
    its geography level and `region[i]` its region index there. `node_of[geo]` maps
    every region of a level to its node: the members of a coterminous set share the node
    of their highest chain member.
    """

    levels: tuple[str, ...]
    parents: np.ndarray
    level: np.ndarray
    region: np.ndarray
    node_of: dict[str, np.ndarray]

    @property
    def n(self) -> int:
        return len(self.parents)

    @property
    def geo(self) -> np.ndarray:
        """The geography level of each node."""
        return np.array(self.levels, dtype=object)[self.level]


@dataclass
class HierarchyBatch:
    """What an adjust function receives: m iterations sharing one forest.

    Arrays are (nodes, iterations). `published` holds SafeTab-P's published totals
    after the coterminous rule, and 0 for suppressed groups (their noisy totals are not
    handed over); `variance` the noise variance of each published total
    (`engine.tabulation.mechanism.total_variance` of the level and stat level it comes
    from), inf for suppressed groups: unobserved nodes, which `methods.consistency`
    treats as non-negative unknowns. `released` is False for suppressed groups; the
    values an adjust function gives them are not published. `truth` is the confidential
    true total: for invariants only, never for estimation.
    """

    forest: Forest
    iteration_level: int
    codes: np.ndarray
    published: np.ndarray
    variance: np.ndarray
    released: np.ndarray
    truth: np.ndarray
    allow_negative: bool

    @property
    def leaf(self) -> np.ndarray:
        """(nodes, 1): whether each node is a leaf of the forest."""
        return (np.bincount(self.forest.parents[self.forest.parents >= 0], minlength=self.forest.n) == 0)[:, None]


#: An adjust function: the batch in, adjusted integer totals (nodes, iterations) out.
AdjustFn = Callable[[HierarchyBatch], np.ndarray]


@dataclass
class HierarchyResult:
    """The chain levels as published, the coterminous rows to write, and what was done.

    `published` lists (LevelCounts, Published of the whole level) for every chain
    level, with every group's final outputs (coterminous members included; the writer
    skips them, as it writes members from `rows`). `stats` holds, per forest, the
    violations of additivity before and after (`methods.consistency.violations` with
    the released flags: what a reader can check).
    `seconds` is the whole of `finish`, `adjust_seconds` the adjust function's share
    (with the cells that follow).
    """

    published: list[tuple[object, Published]]
    rows: StashedRows | None
    stats: dict
    seconds: float
    adjust_seconds: float = 0.0


@dataclass
class _Level:
    """A collected chain level, whole: flat arrays over its groups (region * n_it + i)."""

    counts: object
    plan: LevelPlan
    n_it: int
    local: np.ndarray  # global iteration index -> index in this level (-1: not tabulated)
    t1: np.ndarray
    released: np.ndarray
    stat: np.ndarray
    truth: np.ndarray
    tables: dict[int, list[tuple[np.ndarray, np.ndarray]]] = field(default_factory=dict)


@dataclass
class _Record:
    """What a chain level publishes, being worked on (a copy per `finish`)."""

    t1: np.ndarray
    released: np.ndarray
    stat: np.ndarray
    variance: np.ndarray
    cells: dict[int, dict[int, np.ndarray]]  # stat level -> group -> cells


class HierarchyStage:
    """Collects the chain levels of a run, then adjusts them (`finish`).

    `add` keeps each post-processed chunk of a chain level (nothing of it is written
    yet); `finish` may be called several times on the same data with different adjust
    functions (the accuracy study does): it changes nothing it was given.
    """

    def __init__(self, prepared):
        self.prepared = prepared
        geo = prepared.inputs.geography
        self._codes = list(prepared.inputs.specs.iterations)
        self._on: dict[int, list[tuple[str, ...]]] = {}
        for lvl in (1, 2):
            chains = []
            for chain in CHAINS:
                on = tuple(g for g in chain if PopulationGroupLevel(g, lvl) in prepared.plans and geo.n_regions(g) > 0)
                if len(on) >= 2:
                    chains.append(on)
            self._on[lvl] = chains
        self._levels: dict[PopulationGroupLevel, _Level] = {}
        self._forest_cache: dict = {}

    def collects(self, level: PopulationGroupLevel) -> bool:
        """Whether the stage takes this level (a chain level with another chain level on)."""
        return any(level.geo in chain for chain in self._on.get(level.iteration_level, ()))

    def add(self, counts, pub: Published) -> None:
        """Keep a post-processed chunk of a chain level."""
        lvl = pub.plan.level
        if lvl not in self._levels:
            n = counts.n_groups
            codes = self.prepared.catalog.codes(lvl.geo, lvl.iteration_level).astype(str)
            local = np.full(len(self._codes), -1, np.int64)
            pos = {c: i for i, c in enumerate(self._codes)}
            local[[pos[c] for c in codes]] = np.arange(len(codes))
            self._levels[lvl] = _Level(counts, pub.plan, counts.n_iterations, local, np.zeros(n, np.int64),
                                       np.zeros(n, bool), np.zeros(n, np.int8), np.zeros(n, np.int64))
        L = self._levels[lvl]
        sl = slice(pub.g0, pub.g1)
        L.t1[sl], L.released[sl], L.stat[sl], L.truth[sl] = pub.t1, pub.released, pub.stat_level, pub.true_total
        for k, (groups, cells, _marg) in pub.tables.items():
            L.tables.setdefault(k, []).append((groups, cells))

    # ---------------------------------------------------------------- finish

    def finish(self, rows: StashedRows | None, member: dict | None, adjust: AdjustFn | None, *,
               cells_nonnegative: bool = True, with_truth: bool = False,
               progress: Callable[[str, float, float], None] | None = None,
               tiebreak: Callable[[int], np.ndarray] | None = None) -> HierarchyResult:
        """Resolve coterminous sets, adjust every forest, make cells follow their totals.

        `rows` and `member` come from the run's `CoterminousStash` (`resolve()` and
        `.member`; None without coterminous processing). With `adjust=None` nothing is
        adjusted: the result is SafeTab-P's release of the chain levels (what the
        comparisons measure "none" on). `cells_nonnegative` chooses how cells follow an
        adjusted total (`methods.consistency.distribute`). `with_truth` fills the true
        tables of the returned `Published` (for accuracy studies). `tiebreak(n)` gives n
        random 64-bit words (the release's `RandomSource.words`) that order the cells
        with equal fractional parts when an adjusted table is rounded.
        """
        from engine.tabulation.mechanism import total_variance
        from methods.consistency import violations

        t0 = time.perf_counter()
        allow_negative = self.prepared.inputs.config.allow_negative_counts
        rec = {lvl: self._record(L, total_variance) for lvl, L in self._levels.items()}
        if rows is not None and member is not None:
            self._take_sources(rows, rec, total_variance)
        stats: dict = {"forests": [], "groups_adjusted": 0, "groups_changed": 0,
                       "violations_before": 0, "violations_after": 0}
        adjusting = 0.0  # time spent in the adjust function and on the cells
        forests = self.forests(member)
        done, total = 0, sum(len(codes) for _lvl, _f, codes in forests)
        for lvl_i, forest, codes in forests:
            levels = [PopulationGroupLevel(g, lvl_i) for g in forest.levels]
            gidx = self._group_index(forest, levels, codes)
            released = _gather(forest, levels, gidx, {lv: rec[lv].released for lv in levels})
            published = np.where(released, _gather(forest, levels, gidx, {lv: rec[lv].t1 for lv in levels}), 0)
            variance = np.where(released, _gather(forest, levels, gidx, {lv: rec[lv].variance for lv in levels}),
                                np.inf)
            truth = _gather(forest, levels, gidx, {lv: self._levels[lv].truth for lv in levels})
            batch = HierarchyBatch(forest, lvl_i, codes, published, variance, released, truth, allow_negative)
            before = int(np.sum(violations(forest.parents, published, released=released)))
            entry = {"iteration_level": lvl_i, "levels": list(forest.levels), "nodes": forest.n,
                     "iterations": len(codes), "violations_before": before, "violations_after": before}
            if adjust is not None:
                ta = time.perf_counter()
                try:
                    new = np.asarray(adjust(batch))
                except ValueError as exc:
                    raise ValueError(f"adjusting {' > '.join(forest.levels)}, iteration level {lvl_i}: {exc}") from exc
                if new.shape != published.shape or not np.issubdtype(new.dtype, np.integer):
                    raise ValueError(f"the adjust function returned {new.dtype} {new.shape}, "
                                     f"expected integers {published.shape}")
                entry["violations_after"] = int(np.sum(violations(forest.parents, new, released=released)))
                entry["groups_changed"] = int(np.sum((new != published) & released))
                stats["groups_changed"] += entry["groups_changed"]
                stats["groups_adjusted"] += int(released.sum())
                try:
                    self._put_back(forest, levels, codes, new, rec, cells_nonnegative, tiebreak)
                except ValueError as exc:
                    raise ValueError(f"adjusting {' > '.join(forest.levels)}, iteration level {lvl_i}: "
                                     f"the cells cannot follow the totals: {exc}") from exc
                adjusting += time.perf_counter() - ta
            stats["violations_before"] += entry["violations_before"]
            stats["violations_after"] += entry["violations_after"]
            stats["forests"].append(entry)
            done += len(codes)
            if progress:
                progress("adjusting the hierarchy", done, total)
        if rows is not None and member is not None:
            rows = self._rewrite_rows(rows, member, rec)
        outputs = [(self._levels[lvl].counts, self._published(lvl, rec[lvl], with_truth)) for lvl in self._levels]
        secs = time.perf_counter() - t0
        stats["seconds"] = round(secs, 3)
        stats["adjust_seconds"] = round(adjusting, 3)
        return HierarchyResult(outputs, rows, stats, secs, adjusting)

    # ---------------------------------------------------------------- records

    @staticmethod
    def _record(L: _Level, total_variance) -> _Record:
        cells: dict[int, dict[int, np.ndarray]] = {1: {}, 2: {}, 3: {}}
        for k, parts in L.tables.items():
            for groups, c in parts:
                cells[k].update(zip(groups.tolist(), c))
        return _Record(L.t1.copy(), L.released.copy(), L.stat.copy(), total_variance(L.plan, L.stat), cells)

    def _chain_rows(self, rows: StashedRows, rec: dict):
        """For each chain level among the rows: (level, row indices, group indices)."""
        for gi, g in enumerate(rows.geos):
            for lv in (1, 2):
                lvl = PopulationGroupLevel(g, lv)
                if lvl not in rec:
                    continue
                r = np.flatnonzero((rows.geo == gi) & (rows.lvl == lv))
                if len(r):
                    L = self._levels[lvl]
                    yield lvl, r, rows.region[r].astype(np.int64) * L.n_it + L.local[rows.code[r]]

    def _take_sources(self, rows: StashedRows, rec: dict, total_variance) -> None:
        """Give chain members the outputs of their set's highest unsuppressed member (SPEC §1)."""
        plans = self.prepared.plans
        src_plan = [plans.get(PopulationGroupLevel(g, lv)) for g in rows.geos for lv in (1, 2)]
        for lvl, r, g in self._chain_rows(rows, rec):
            moved = rows.src[r] != r
            r, g = r[moved], g[moved]
            if not len(r):
                continue
            s = rows.src[r]
            R = rec[lvl]
            for k in (1, 2, 3):
                for gg in g[R.stat[g] == k].tolist():
                    R.cells[k].pop(gg, None)
            R.t1[g], R.released[g], R.stat[g] = rows.t1[s], rows.released[s], rows.stat[s]
            # The variance of what the source publishes, under the source level's plan.
            src_key = 2 * rows.geo[s].astype(np.int64) + rows.lvl[s] - 1
            for kk in np.unique(src_key):
                sel = src_key == kk
                R.variance[g[sel]] = total_variance(src_plan[int(kk)], rows.stat[s[sel]])
            for k in (1, 2, 3):
                sel = rows.stat[s] == k
                if sel.any():
                    tr, tc, _tm = rows.tables[k]
                    R.cells[k].update(zip(g[sel].tolist(), tc[np.searchsorted(tr, s[sel])]))

    # ---------------------------------------------------------------- forests

    def forests(self, member: dict | None) -> list[tuple[int, Forest, np.ndarray]]:
        """(iteration level, forest, iteration codes) for every chain and iteration class.

        The codes of a chain are grouped by the chain levels that tabulate them; each group
        gets one forest over its levels (isolated nodes if it has one level only).
        """
        key = id(member) if member is not None else None
        if key in self._forest_cache:
            return self._forest_cache[key][1]
        out = []
        catalog = self.prepared.catalog
        for lvl, chains in self._on.items():
            for chain in chains:
                tab = {g: catalog.codes(g, lvl).astype(str) for g in chain}
                members = {g: set(tab[g]) for g in chain}
                classes: dict[tuple[str, ...], list[str]] = {}
                seen: set[str] = set()
                for g in chain:
                    for c in tab[g]:
                        if c not in seen:
                            seen.add(c)
                            classes.setdefault(tuple(h for h in chain if c in members[h]), []).append(c)
                for cls, codes in classes.items():
                    out.append((lvl, self._forest(cls, member), np.array(codes)))
        self._forest_cache[key] = (member, out)  # keeps `member` alive, so its id stays unique
        return out

    def _forest(self, levels: tuple[str, ...], member: dict | None) -> Forest:
        from engine.inputs.geography import parent_regions

        geo = self.prepared.inputs.geography
        sizes = [geo.n_regions(g) for g in levels]
        off = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        n = int(off[-1])
        parents = np.full(n, -1, np.int64)
        for j in range(1, len(levels)):
            pr = parent_regions(geo, levels[j], levels[j - 1])
            parents[off[j]:off[j + 1]] = np.where(pr >= 0, pr + off[j - 1], -1)
        # Coterminous members: the highest chain member of a set stands for all of them.
        rep = np.arange(n)
        if member:
            best = np.full(1 + max((int(m[0].max()) for m in member.values() if len(m[0])), default=0), -1, np.int64)
            for j, g in enumerate(levels):
                if g not in member:
                    continue
                sid = member[g][0]
                r = np.flatnonzero(sid >= 0)
                nodes = off[j] + r
                s = sid[r]
                have = best[s] >= 0
                rep[nodes[have]] = best[s[have]]
                best[s[~have]] = nodes[~have]
        alias = rep != np.arange(n)
        # An alias's children hang from its representative (the same blocks, higher up).
        new_par = np.where(parents >= 0, rep[np.maximum(parents, 0)], -1)
        keep = np.flatnonzero(~alias)
        index = np.full(n, -1, np.int64)
        index[keep] = np.arange(len(keep))
        par = new_par[keep]
        par = np.where(par >= 0, index[np.maximum(par, 0)], -1)
        level = np.repeat(np.arange(len(levels)), sizes)
        region = np.concatenate([np.arange(s) for s in sizes]).astype(np.int64)
        node_of = {g: index[rep[off[j]:off[j + 1]]] for j, g in enumerate(levels)}
        return Forest(levels, par, level[keep], region[keep], node_of)

    def _code_index(self, lvl: PopulationGroupLevel, codes: np.ndarray) -> np.ndarray:
        pos = {c: i for i, c in enumerate(self._codes)}
        return self._levels[lvl].local[[pos[str(c)] for c in codes]]

    def _group_index(self, forest: Forest, levels: list[PopulationGroupLevel], codes: np.ndarray) -> np.ndarray:
        """(nodes, codes): each node's group index within its level."""
        out = np.zeros((forest.n, len(codes)), np.int64)
        for j, lvl in enumerate(levels):
            sel = forest.level == j
            out[sel] = forest.region[sel][:, None] * self._levels[lvl].n_it + self._code_index(lvl, codes)[None, :]
        return out

    # ---------------------------------------------------------------- put back

    def _put_back(self, forest: Forest, levels, codes, new: np.ndarray, rec: dict, cells_nonnegative: bool,
                  tiebreak: Callable[[int], np.ndarray] | None = None) -> None:
        """Adjusted totals to every group of the forest's levels (coterminous aliases too),
        and each table's cells adjusted to add up to its new total."""
        from methods.consistency import distribute

        for lvl in levels:
            L, R = self._levels[lvl], rec[lvl]
            nodes = forest.node_of[lvl.geo]
            groups = (np.arange(len(nodes))[:, None] * L.n_it + self._code_index(lvl, codes)[None, :]).reshape(-1)
            vals = new[nodes].reshape(-1)
            rel = R.released[groups]
            R.t1[groups[rel]] = vals[rel]
            for k in (1, 2, 3):
                tg = groups[rel & (R.stat[groups] == k)]
                if len(tg):
                    cells = np.stack([R.cells[k][g] for g in tg.tolist()])
                    tb = tiebreak(cells.size) if tiebreak is not None else None
                    R.cells[k].update(zip(tg.tolist(), distribute(cells, R.t1[tg], nonnegative=cells_nonnegative,
                                                                  tiebreak=tb)))

    # ---------------------------------------------------------------- coterminous after

    def _rewrite_rows(self, rows: StashedRows, member: dict, rec: dict) -> StashedRows:
        """The coterminous rows after the adjustment: chain members carry their final
        outputs, and every row of a set with a chain member publishes the highest one's."""
        n = len(rows.src)
        t1, released, stat, src = rows.t1.copy(), rows.released.copy(), rows.stat.copy(), rows.src.copy()
        is_chain = np.zeros(n, bool)
        new_tables: dict[int, list[tuple[np.ndarray, np.ndarray]]] = {1: [], 2: [], 3: []}
        for lvl, r, g in self._chain_rows(rows, rec):
            R = rec[lvl]
            is_chain[r] = True
            t1[r], released[r], stat[r] = R.t1[g], R.released[g], R.stat[g]
            for k in (1, 2, 3):
                sel = R.stat[g] == k
                if sel.any():
                    new_tables[k].append((r[sel], np.stack([R.cells[k][x] for x in g[sel].tolist()])))
        tables = {}
        for k in (1, 2, 3):
            parts = list(new_tables[k])
            if k in rows.tables:
                tr, tc, _tm = rows.tables[k]
                keep = ~is_chain[tr]
                parts.append((tr[keep], tc[keep]))
            parts = [p for p in parts if len(p[0])]
            if parts:
                r_all = np.concatenate([p[0] for p in parts])
                c_all = np.concatenate([p[1] for p in parts])
                o = np.argsort(r_all, kind="stable")
                c_all = c_all[o]
                tables[k] = (r_all[o], c_all, c_all.reshape(len(o), 2, -1).sum(axis=2))
        if is_chain.any():
            sid, prio = np.zeros(n, np.int64), np.zeros(n, np.int64)
            for gi, g in enumerate(rows.geos):
                sel = rows.geo == gi
                sid[sel] = member[g][0][rows.region[sel]]
                prio[sel] = member[g][1][rows.region[sel]]
            key = (sid * 3 + rows.lvl) * (len(self._codes) + 1) + rows.code
            ch = np.flatnonzero(is_chain)
            order = ch[np.lexsort((prio[ch], key[ch]))]
            first = order[np.r_[True, key[order][1:] != key[order][:-1]]]
            pos = np.minimum(np.searchsorted(key[first], key), len(first) - 1)
            hit = key[first][pos] == key
            src[hit] = first[pos[hit]]
        return StashedRows(rows.geo, rows.lvl, rows.region, rows.code, t1, released, stat, src, tables, rows.geos)

    # ---------------------------------------------------------------- outputs

    def _published(self, lvl: PopulationGroupLevel, R: _Record, with_truth: bool) -> Published:
        L = self._levels[lvl]
        tables, true_tables = {}, {}
        for k in (1, 2, 3):
            if not R.cells[k]:
                continue
            groups = np.array(sorted(R.cells[k]), np.int64)
            cells = np.stack([R.cells[k][int(g)] for g in groups])
            tables[k] = (groups, cells, cells.reshape(len(groups), 2, -1).sum(axis=2))
            if with_truth:
                true_tables[k] = collapse_cells(L.counts.cells_of(groups), k)
        return Published(L.plan, 0, len(R.t1), R.stat, R.t1, R.released, tables, L.truth, true_tables)


def _gather(forest: Forest, levels: list[PopulationGroupLevel], gidx: np.ndarray, arrays: dict) -> np.ndarray:
    """(nodes, codes) values of per-level flat arrays, each node reading its own level's."""
    out = np.zeros(gidx.shape, arrays[levels[0]].dtype)
    for j, lvl in enumerate(levels):
        sel = forest.level == j
        out[sel] = arrays[lvl][gidx[sel]]
    return out
