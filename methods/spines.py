"""Geographic spines: off-spine entity distance (OSED), bypassing, spine optimisation.

Source: R. Cumings-Menon, J. M. Abowd, R. Ashmead, D. Kifer, P. Leclerc, J. Ocker,
M. Ratcliffe, P. Zhuravlev, "Geographic Spines in the 2020 Census Disclosure
Avoidance System" (`shared/papers/geographic-spines.txt`; "the seed" below),
sections 4 and 5, and the facts of the Census production code
(uscensusbureau/DAS_2020_Redistricting_Production_Code,
source/programs/geographic_spines/optimize_spine.py): default fan-out cutoff 12,
entity threshold 9, bypass cutoff 150.

A *tree* is a parent array: ``parents[v]`` is the parent of node v, -1 for the one
root. Its leaves (nodes without children) are blocks, or whatever the finest units
are. A per-leaf array is given either with one value per node (values of internal
nodes ignored) or with one value per leaf, leaves in increasing node order.

* `osed` — the fewest tree nodes whose signed sum (+/-) is an entity, and those nodes,
  by the seed's recursion (equations 20-23):
  c_k(g) = min(sum_children c_k, 1 + sum_children c_notk),
  c_notk(g) = min(sum_children c_notk, 1 + sum_children c_k), c_k(leaf) = [leaf in k].
  `osed_distances` does many entities at once; `combine_costs` runs the recursion
  above a level whose (c_k, c_notk) are already known (counties optimised one at a
  time); `signed_decomposition` extends it to integer targets (an area minus a
  place...). Nodes may be marked unusable (an unpublished or suppressed unit): the
  recursion then never uses them, and an entity may not be composable at all.
* `bypass_variances`, `should_bypass` — the seed's section 5 (Theorem 2, Remark 1);
  `bypass_spine` is its Algorithm 3.
* `optimize_spine` — the seed's Algorithm 2 for one county, as the production code runs
  it: block groups regrouped by the intersections of the entities within each tract
  (at most `group_size_cap` blocks each), tract groups merged greedily while the sorted
  OSEDs of the far entities do not get worse (or packed `group_size_cap(..., "tract
  group")` at a time when no entity is far); OSED of every entity before (Census block
  groups) and after.
* `aian_area` — which AIANNHCE codes production puts on the AIAN branch of its spine
  (the seed's Section 1 and Figure 1: AIAN and non-AIAN branches under each state;
  define_spines.py, `aian_areas` of prod_default.ini).
* `lowest_max_fanout` — the seed's Section 4 fact behind the caps: splitting n units
  into groups, the smallest possible largest fan-out is ceil(sqrt(n)).

Everything is exact integer arithmetic on numpy arrays, linear in the tree size per
entity (the greedy tract grouping is polynomial and capped by `max_evaluations`).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

#: Default fan-out cutoff, entity threshold and bypass cutoff of the 2020 production
#: runs (table_reader.py defaults in the production code).
FANOUT_CUTOFF = 12
ENTITY_THRESHOLD = 9
BYPASS_CUTOFF = 150
#: AIANNHCE ranges of the AIAN area categories (production: source/etc/AIANNHCE_ranges.csv).
AIAN_AREA_RANGES = {
    "Legal_Federally_Recognized_American_Indian_Area": (1, 4799),
    "American_Indian_Joint_Use_Area": (4800, 4989),
    "Hawaiian_Home_Land": (5000, 5499),
    "Oklahoma_Tribal_Statistical_Area": (5500, 5899),
    "Joint_Use_Oklahoma_Tribal_Statistical_Area": (5900, 5999),
    "Alaska_Native_Village_Statistical_Area": (6000, 7999),
    "Tribal_Designated_Statistical_Area": (8000, 8999),
    "State_Recognized_Legal_American_Indian_Area": (9000, 9499),
    "State_Designated_Tribal_Statistical_Area": (9500, 9998),
}
#: The categories the 2020 production runs put on the AIAN branch (prod_default.ini,
#: `aian_areas`, the Geography Division's recommendation): all but the two designated
#: statistical area categories.
PRODUCTION_AIAN_AREAS = (
    "Legal_Federally_Recognized_American_Indian_Area", "American_Indian_Joint_Use_Area", "Hawaiian_Home_Land",
    "Alaska_Native_Village_Statistical_Area", "State_Recognized_Legal_American_Indian_Area",
    "Oklahoma_Tribal_Statistical_Area", "Joint_Use_Oklahoma_Tribal_Statistical_Area",
)
#: Level names of the county trees `optimize_spine` returns (index = `SpineResult.level`).
LEVELS = ("county", "tract group", "tract", "block group", "block")
COUNTY, TRACT_GROUP, TRACT, BLOCK_GROUP, BLOCK = range(5)
#: Marks "not composable" in the integer arrays of `osed_distances` / `combine_costs`.
NOT_COMPOSABLE = -1
#: Largest cost table (nodes x entities x offsets) one call may build.
MAX_TABLE = 50_000_000
_INF = 1 << 32


# ----------------------------------------------------------------------------- trees
@dataclass(frozen=True)
class _Tree:
    parents: np.ndarray
    levels: tuple[np.ndarray, ...]  # nodes by depth, root first
    n_children: np.ndarray

    @property
    def n(self) -> int:
        return len(self.parents)

    @property
    def root(self) -> int:
        return int(self.levels[0][0])

    @property
    def leaves(self) -> np.ndarray:
        return np.flatnonzero(self.n_children == 0)


def _tree(parents: Any) -> _Tree:
    """Check a parent array and order its nodes by depth (breadth first, O(n))."""
    p = np.asarray(parents)
    if p.ndim != 1 or p.size == 0:
        raise ValueError(f"parents must be a non-empty 1-D array of node indices (got shape {p.shape})")
    if not np.issubdtype(p.dtype, np.integer):
        if not (np.issubdtype(p.dtype, np.floating) and np.all(np.isfinite(p)) and np.all(p == np.floor(p))):
            raise ValueError("parents must hold whole numbers (node indices, -1 for the root)")
    p = p.astype(np.int64)
    n = len(p)
    bad = (p < -1) | (p >= n)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"parents[{i}] = {int(p[i])} is not a node index (0..{n - 1}) or -1 for the root")
    roots = np.flatnonzero(p == -1)
    if len(roots) != 1:
        raise ValueError(f"a tree has exactly one root (parent -1); found {len(roots)}")
    n_children = np.bincount(p[p >= 0], minlength=n)
    order = np.argsort(p, kind="stable")  # children of each node, contiguous
    start = np.searchsorted(p[order], np.arange(n), side="left")
    levels = [roots]
    seen = 1
    frontier = roots
    while True:
        counts = n_children[frontier]
        total = int(counts.sum())
        if total == 0:
            break
        offs = np.repeat(start[frontier] - (np.cumsum(counts) - counts), counts) + np.arange(total)
        frontier = order[offs]
        levels.append(frontier)
        seen += total
        if seen > n:
            break
    if seen != n:
        raise ValueError("parents do not form a tree: some nodes are on a cycle, not below the root")
    return _Tree(p, tuple(levels), n_children)


def _per_leaf(tree: _Tree, values: Any, name: str) -> np.ndarray:
    """A per-leaf array (one value per node, or per leaf in node order) as one per node."""
    v = np.asarray(values)
    leaves = tree.leaves
    if v.ndim >= 1 and v.shape[0] == tree.n:
        return v
    if v.ndim >= 1 and v.shape[0] == len(leaves):
        out = np.zeros((tree.n,) + v.shape[1:], dtype=v.dtype)
        out[leaves] = v
        return out
    raise ValueError(f"{name} must have one value per node ({tree.n}) or per leaf ({len(leaves)}); "
                     f"got {v.shape[0] if v.ndim else 'a scalar'}")


def _usable(tree: _Tree, usable: Any) -> np.ndarray:
    if usable is None:
        return np.ones(tree.n, dtype=bool)
    u = np.asarray(usable)
    if u.shape != (tree.n,) or u.dtype != bool:
        raise ValueError(f"usable must be a boolean array with one value per node ({tree.n})")
    return u


def _check_size(n: int, e: int, m: int) -> None:
    if n * e * m > MAX_TABLE:
        raise ValueError(f"{n:,} nodes x {e:,} entities is too large for one call (limit {MAX_TABLE:,} "
                         "table cells); split the tree (e.g. one county at a time) and use combine_costs")


# ---------------------------------------------------------------- the OSED recursion
def _leaf_cost(target: np.ndarray, offsets: np.ndarray, usable: np.ndarray) -> np.ndarray:
    """Cost for a leaf of value f to show f when its ancestors already add a: the leaf's
    own coefficient t = f - a must be 0, or +-1 if the leaf is a usable unit.
    `target` is (n, E); returns (n, E, m)."""
    t = target[:, :, None] - offsets[None, None, :]
    ok = (t == 0) | ((np.abs(t) == 1) & usable[:, None, None])
    return np.where(ok, np.abs(t), _INF)


def _cost_table(tree: _Tree, leaf_cost: np.ndarray, usable: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """C[g, e, j]: fewest usable nodes of g's subtree whose signed sum, plus the constant
    offsets[j] added by g's ancestors, shows target e on g's leaves; S[g] = sum over g's
    children of C. With offsets (0, 1) this is the seed's recursion: C[., ., 0] = c_k and
    C[., ., 1] = c_notk (showing k - 1 = -(not k)). Node g takes coefficient t in
    {-1, 0, +1} (not 0 only if usable), its children then see offset a + t:
    C[g, j] = min(S[g, j], 1 + S[g, j + 1], 1 + S[g, j - 1])."""
    C = leaf_cost.copy()
    S = np.zeros_like(C)
    p = tree.parents
    for nodes in reversed(tree.levels):
        inner = nodes[tree.n_children[nodes] > 0]
        if inner.size:
            s = S[inner]
            best = s.copy()
            u = usable[inner][:, None, None]
            best[:, :, :-1] = np.minimum(best[:, :, :-1], np.where(u, 1 + s[:, :, 1:], _INF))
            best[:, :, 1:] = np.minimum(best[:, :, 1:], np.where(u, 1 + s[:, :, :-1], _INF))
            C[inner] = np.minimum(best, _INF)
        below = nodes[p[nodes] >= 0]
        if below.size:
            np.add.at(S, p[below], C[below])
            up = np.unique(p[below])
            S[up] = np.minimum(S[up], _INF)
    return C, S


def _traceback(tree: _Tree, S: np.ndarray, target: np.ndarray, offsets: np.ndarray,
               usable: np.ndarray) -> np.ndarray:
    """Coefficients (-1, 0, +1) of one optimal decomposition of target 0 (E = 1).

    Ties prefer not using the node (t = 0: compose from its children, additions
    only), then adding it (t = +1), then subtracting it."""
    n, m = tree.n, len(offsets)
    j = np.zeros(n, dtype=np.int64)
    j[tree.root] = int(np.flatnonzero(offsets == 0)[0])
    coef = np.zeros(n, dtype=np.int64)
    p = tree.parents
    for d, nodes in enumerate(tree.levels):
        if d:
            j[nodes] = j[p[nodes]] + coef[p[nodes]]
        jj = j[nodes]
        leaf = tree.n_children[nodes] == 0
        coef[nodes[leaf]] = target[nodes[leaf]] - offsets[jj[leaf]]
        inner = nodes[~leaf]
        if inner.size:
            ji = jj[~leaf]
            s = S[inner, 0, :]
            rows = np.arange(len(inner))
            u = usable[inner]
            stay = s[rows, ji]
            plus = np.where(u & (ji + 1 < m), 1 + s[rows, np.minimum(ji + 1, m - 1)], _INF)
            minus = np.where(u & (ji >= 1), 1 + s[rows, np.maximum(ji - 1, 0)], _INF)
            choice = np.argmin(np.stack([stay, plus, minus]), axis=0)  # first minimum wins
            coef[inner] = np.array([0, 1, -1])[choice]
    return coef


def _solve(parents: Any, target: Any, usable: Any, offsets: np.ndarray | None,
           name: str) -> tuple[int | None, np.ndarray]:
    tree = _tree(parents)
    f = _per_leaf(tree, target, name)
    if f.dtype == bool:
        f = f.astype(np.int64)
    if not np.issubdtype(f.dtype, np.integer):
        if not np.all(f == np.round(f)):
            raise ValueError(f"{name} must hold whole numbers")
    f = f.astype(np.int64)
    f[tree.n_children > 0] = 0
    return _solve_tree(tree, f, _usable(tree, usable), offsets)


def _solve_tree(tree: _Tree, f: np.ndarray, u: np.ndarray, offsets: np.ndarray | None) -> tuple[int | None, np.ndarray]:
    """One optimal decomposition of the integer target f (per node, 0 on inner nodes)."""
    if offsets is None:
        lo, hi = min(0, int(f.min())) - 1, max(0, int(f.max())) + 1
        offsets = np.arange(lo, hi + 1)
    _check_size(tree.n, 1, len(offsets))
    C, S = _cost_table(tree, _leaf_cost(f[:, None], offsets, u), u)
    j0 = int(np.flatnonzero(offsets == 0)[0])
    cost = int(C[tree.root, 0, j0])
    if cost >= _INF:
        return None, np.zeros((0, 2), dtype=np.int64)
    coef = _traceback(tree, S, f, offsets, u)
    used = np.flatnonzero(coef)
    assert len(used) == cost
    return cost, np.stack([used, coef[used]], axis=1)


def osed(parents: Any, in_entity: Any, usable: Any = None) -> tuple[int | None, np.ndarray]:
    """Off-spine entity distance: the fewest nodes whose signed sum is the entity.

    `in_entity`: True for the leaves in the entity. Returns (distance, decomposition),
    decomposition an array of rows (node, sign) with sign +1 or -1, sorted by node,
    whose signed sum of leaf sets is exactly the entity. The seed's recursion
    (section 4, equations 20-23; see `_cost_table`), O(number of nodes).

    `usable` (optional, one boolean per node): nodes that may be used (e.g. published
    and not suppressed); the distance is then the fewest usable nodes, and
    (None, empty) when no signed sum of usable nodes is the entity. The offsets 0 and
    1 of the seed's recursion stay exact with unusable nodes (checked against brute
    force in the tests).
    """
    return _solve(parents, np.asarray(in_entity).astype(bool), usable, np.array([0, 1]), "in_entity")


def signed_decomposition(parents: Any, target: Any, usable: Any = None) -> tuple[int | None, np.ndarray]:
    """The fewest nodes, each used once with sign +1 or -1, whose signed sum of leaf
    indicators is the integer `target` per leaf (e.g. an area minus a place: values
    -1, 0, 1). The seed's recursion with the ancestors' running sum a as the state
    (a in [min(0, target) - 1, max(0, target) + 1]); for a 0/1 target it is `osed`.
    Returns (count, rows (node, sign)), or (None, empty) when impossible."""
    return _solve(parents, target, usable, None, "target")


def osed_distances(parents: Any, in_entities: Any, usable: Any = None) -> np.ndarray:
    """OSED of many entities at once: `in_entities` is (leaves or nodes) x entities,
    boolean. Returns one distance per entity (NOT_COMPOSABLE where impossible)."""
    return osed_costs(parents, in_entities, usable)[0]


def osed_costs(parents: Any, in_entities: Any, usable: Any = None) -> tuple[np.ndarray, np.ndarray]:
    """(c_k, c_notk) at the root for many entities: the OSED of each entity and of its
    complement (the inputs of `combine_costs` when the tree is one county of many)."""
    tree = _tree(parents)
    m = _per_leaf(tree, np.asarray(in_entities).astype(bool), "in_entities")
    if m.ndim == 1:
        m = m[:, None]
    return _root_costs(tree, m.astype(np.int64), _usable(tree, usable))


def _root_costs(tree: _Tree, member: np.ndarray, usable: np.ndarray, leaf_cost: np.ndarray | None = None,
                nodes: bool = False):
    """(c_k, c_notk) at the root (or at every node if `nodes`) for every entity;
    `member` is (leaves or nodes) x entities."""
    member = _per_leaf(tree, member, "member")
    _check_size(tree.n, member.shape[1], 2)
    if leaf_cost is None:
        leaf_cost = _leaf_cost(member, np.array([0, 1]), usable)
    C, _ = _cost_table(tree, leaf_cost, usable)
    if nodes:
        return C
    c = C[tree.root]
    c = np.where(c >= _INF, NOT_COMPOSABLE, c)
    return c[:, 0], c[:, 1]


def combine_costs(parents: Any, leaf_in: Any, leaf_out: Any, usable: Any = None) -> tuple[np.ndarray, np.ndarray]:
    """The seed's recursion above leaves whose (c_k, c_notk) are known.

    E.g. counties optimised one at a time (`optimize_spine`, `SpineResult.cost_*`)
    under states and the nation: `leaf_in[v, e]` is c_k of entity e in leaf v (0 if e
    does not meet v) and `leaf_out[v, e]` its c_notk (1 for a leaf e does not meet: the
    leaf itself). Returns (c_k, c_notk) of every entity at the root; a leaf cost of
    NOT_COMPOSABLE (-1) means impossible.
    """
    tree = _tree(parents)
    a = _per_leaf(tree, np.asarray(leaf_in, dtype=np.int64), "leaf_in")
    b = _per_leaf(tree, np.asarray(leaf_out, dtype=np.int64), "leaf_out")
    if a.shape != b.shape:
        raise ValueError("leaf_in and leaf_out must have the same shape")
    if a.ndim == 1:
        a, b = a[:, None], b[:, None]
    cost = np.stack([a, b], axis=2)
    cost = np.where(cost < 0, _INF, cost)
    return _root_costs(tree, a, _usable(tree, usable), leaf_cost=cost)


@dataclass(frozen=True)
class Composition:
    """An area as a signed sum of tree nodes and extra sets (`compose`)."""

    count: int | None  # units used; None: not composable
    nodes: np.ndarray  # rows (node, sign)
    extras: np.ndarray  # rows (extra set, sign)
    scope: int  # -1: every usable extra was a candidate; else the node whose extras were
    candidates: int  # extra sets searched
    max_extras: int  # largest number of extras tried together
    exhaustive: bool  # every signed subset of the candidates was tried


def _depths(tree: _Tree) -> np.ndarray:
    d = np.zeros(tree.n, dtype=np.int64)
    for k, nodes in enumerate(tree.levels):
        d[nodes] = k
    return d


def _ancestor_at(tree: _Tree, depth: np.ndarray, nodes: np.ndarray, level: int) -> np.ndarray:
    """The ancestor at depth `level` of each node (nodes at least that deep)."""
    a = np.asarray(nodes, dtype=np.int64).copy()
    while True:
        deep = depth[a] > level
        if not deep.any():
            return a
        a[deep] = tree.parents[a[deep]]


def _lowest_common_ancestor(tree: _Tree, depth: np.ndarray, nodes: np.ndarray) -> int:
    a = _ancestor_at(tree, depth, nodes, int(depth[nodes].min()))
    while len(np.unique(a)) > 1:
        a = tree.parents[a]
    return int(a[0])


def _below(tree: _Tree, depth: np.ndarray, node: int) -> np.ndarray:
    """Boolean per node: in the subtree of `node`."""
    inside = np.zeros(tree.n, dtype=bool)
    deep = np.flatnonzero(depth >= depth[node])
    inside[deep] = _ancestor_at(tree, depth, deep, int(depth[node])) == node
    return inside


def compose(parents: Any, target: Any, extras: Any = None, usable: Any = None, extras_usable: Any = None,
            max_solves: int = 20_000) -> Composition:
    """The fewest units, each used once with sign +1 or -1, whose signed sum is the area.

    Units are the usable tree nodes plus extra sets of leaves that do not nest in the
    tree (places and AIANNH areas crossing tracts). `target` is 0/1 per leaf (or any
    integers), `extras` is (sets, leaves or nodes), boolean. For each signed choice X
    of extras, the rest (target - sum of X) is decomposed exactly on the tree
    (`signed_decomposition`); the best total wins (ties: fewer extras).

    Which extras are tried: all usable ones when their 3^m signed subsets fit in
    `max_solves` (then the result is the exact minimum). Otherwise those inside the
    smallest subtree holding the area and every usable extra meeting it (`scope`, found
    by growing the area's lowest common ancestor until no extra sticks out), all their
    signed subsets if they fit, else all subsets up to the largest size that fits
    (`exhaustive` False). At most `max_solves` tree solves, each linear in the tree.
    """
    tree = _tree(parents)
    f = _per_leaf(tree, np.asarray(target), "target").astype(np.int64)
    f[tree.n_children > 0] = 0
    u = _usable(tree, usable)
    if extras is None:
        ex = np.zeros((0, tree.n), dtype=bool)
    else:
        e = np.asarray(extras).astype(bool)
        if e.ndim != 2:
            raise ValueError("extras must be a 2-D boolean array (sets x leaves)")
        ex = _per_leaf(tree, e.T, "extras").T.copy()
        ex[:, tree.n_children > 0] = False
    eu = np.ones(len(ex), dtype=bool) if extras_usable is None else np.asarray(extras_usable, dtype=bool)
    if eu.shape != (len(ex),):
        raise ValueError(f"extras_usable must have one value per extra set ({len(ex)})")
    if max_solves < 1:
        raise ValueError("max_solves must be >= 1")
    pool = np.flatnonzero(eu & ex.any(axis=1))
    scope = -1
    if 3 ** len(pool) > max_solves and np.any(f != 0):
        depth = _depths(tree)
        scope = _lowest_common_ancestor(tree, depth, np.flatnonzero(f != 0))
        while True:
            inside = _below(tree, depth, scope)
            meet = pool[ex[pool][:, inside].any(axis=1)]
            out = ex[meet][:, ~inside].any(axis=0)
            if not out.any():
                break
            scope = _lowest_common_ancestor(tree, depth, np.r_[scope, np.flatnonzero(out)])
        pool = meet
    m = len(pool)
    sizes, total = [], 0
    for j in range(m + 1):
        c = math.comb(m, j) * 2 ** j
        if total + c > max_solves:
            break
        sizes.append(j)
        total += c
    best: tuple[int, np.ndarray, np.ndarray] | None = None
    inner = tree.n_children > 0
    for j in sizes:
        if best is not None and best[0] <= j:
            break  # j extras alone already cost as much
        for comb in itertools.combinations(pool, j):
            for signs in itertools.product((1, -1), repeat=j):
                rest = f.copy()
                for sgn, x in zip(signs, comb):
                    rest -= sgn * ex[x]
                rest[inner] = 0
                cost, dec = _solve_tree(tree, rest, u, None)
                if cost is None or (best is not None and cost + j >= best[0]):
                    continue
                chosen = np.array([[x, sgn] for x, sgn in zip(comb, signs)], dtype=np.int64).reshape(-1, 2)
                best = (cost + j, dec, chosen)
    largest = sizes[-1] if sizes else 0
    exhaustive = len(sizes) == m + 1
    if best is None:
        empty = np.zeros((0, 2), np.int64)
        return Composition(None, empty, empty, scope, m, largest, exhaustive)
    return Composition(best[0], best[1], best[2], scope, m, largest, exhaustive)


# ------------------------------------------------------------------------ bypassing
def _mechanism(mechanism: str) -> str:
    m = str(mechanism).lower()
    if m in ("laplace", "geometric"):
        return "laplace"
    if m == "gaussian":
        return "gaussian"
    raise ValueError(f"mechanism must be 'laplace' (or 'geometric') or 'gaussian' (got {mechanism!r})")


def _check_share(name: str, v: Any) -> None:
    ok = isinstance(v, (int, float, np.integer, np.floating, Fraction)) and not isinstance(v, bool)
    if not ok or not v >= 0 or (isinstance(v, (float, np.floating)) and not math.isfinite(v)):
        raise ValueError(f"{name} must be a finite number >= 0 (got {v!r})")


def _shares(k: Any, parent_share: Any, child_share: Any) -> tuple[int, Any, list]:
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(f"k (the number of children) must be a whole number >= 1 (got {k!r})")
    k = int(k)
    children = list(child_share) if isinstance(child_share, (Sequence, np.ndarray)) else [child_share] * k
    if len(children) != k:
        raise ValueError(f"child_share has {len(children)} values for k = {k} children")
    for name, v in [("parent_share", parent_share)] + [("child_share", c) for c in children]:
        _check_share(name, v)
    if any(c == 0 for c in children):
        raise ValueError("every child_share must be > 0 (the children are measured)")
    return k, parent_share, children


def bypass_variances(k: int, parent_share: Any, child_share: Any, mechanism: str, scale: Any = 1) -> tuple[Any, Any]:
    """Variance of the best unbiased estimate of the parent's count before and after
    bypassing the parent (the seed's Remark 1).

    A unit measured with share s has variance v(s) = scale / s^2 (Laplace / geometric,
    pure DP) or scale / s (Gaussian, zCDP: precision proportional to the share).
    Before: the parent's own answer and the sum of its k children's answers, combined
    by inverse-variance weighting: 1 / (1 / v(s_p) + 1 / sum_i v(s_i)) (just the sum
    when s_p = 0). After: the parent's share moves to every child, and the estimate is
    the sum of the children: sum_i v(s_i + s_p). `child_share` is one share for all k
    children or k shares. Exact for Fractions and integers (plain arithmetic).
    """
    mech = _mechanism(mechanism)
    k, sp, children = _shares(k, parent_share, child_share)

    def v(s):
        return scale / (s * s) if mech == "laplace" else scale / s

    from_children = sum(v(c) for c in children)
    before = from_children if sp == 0 else 1 / (1 / v(sp) + 1 / from_children)
    after = sum(v(c + sp) for c in children)
    return before, after


def should_bypass(k: int, parent_share: Any, child_share: Any, mechanism: str) -> bool:
    """The seed's decision rule (Theorem 2 and section 5).

    Laplace / geometric: bypass iff (k - 1) s_parent <= 2 min_i s_child_i; with equal
    child shares this is exactly "bypassing does not increase the variance of any
    query" (Theorem 2), i.e. after <= before in `bypass_variances` (Remark 1).
    Gaussian (zCDP): only single-child parents (k = 1): with two or more children
    bypassing always increases some variance.
    """
    mech = _mechanism(mechanism)
    k, sp, children = _shares(k, parent_share, child_share)
    return _bypass_rule(k, sp, min(children), mech)


def _bypass_rule(k: int, parent_share: Any, min_child_share: Any, mech: str) -> bool:
    if mech == "gaussian":
        return k == 1
    return (k - 1) * parent_share <= 2 * min_child_share


def bypass_spine(parents: Any, shares: Any, mechanism: str, bypass_cutoff: int | None = BYPASS_CUTOFF
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The seed's Algorithm 3: bypass every parent the decision rule allows.

    `shares[v]` is the budget (pure DP) or precision (zCDP) share of node v. Units
    (internal nodes other than the root) are visited from the deepest level up; a
    bypassed unit is removed, its children attach to its parent and each gains the
    unit's share (the production code keeps uniform depth with single-child copies,
    which changes nothing in the estimates). As in production, a non-single-child
    bypass is skipped when the parent would get more than `bypass_cutoff` children.
    The share summed along every root-to-leaf path is unchanged (the seed's Theorem 3),
    so the privacy guarantee is too.

    Returns (parents, shares, bypassed): the new tree (bypassed nodes keep their index,
    have no children, no share and parent -2) and a mask of the bypassed nodes.
    """
    tree = _tree(parents)
    mech = _mechanism(mechanism)
    sh = list(shares)
    if len(sh) != tree.n:
        raise ValueError(f"shares must have one value per node ({tree.n})")
    for v in sh:
        _check_share("shares", v)
    exact = any(isinstance(s, Fraction) for s in sh)
    p = tree.parents.copy()
    children: list[set[int]] = [set() for _ in range(tree.n)]
    for v in np.flatnonzero(p >= 0):
        children[p[v]].add(int(v))
    bypassed = np.zeros(tree.n, dtype=bool)
    for nodes in reversed(tree.levels[1:]):
        for unit in sorted(int(v) for v in nodes if tree.n_children[v] > 0):
            kids = sorted(children[unit])
            parent = int(p[unit])
            if not kids:
                continue
            # A unit without a share measures nothing: removing it changes nothing.
            if sh[unit] != 0:
                siblings = len(children[parent]) - 1
                if min(sh[c] for c in kids) <= 0 or not _bypass_rule(len(kids), sh[unit],
                                                                     min(sh[c] for c in kids), mech):
                    continue
                if len(kids) > 1 and bypass_cutoff is not None and siblings + len(kids) > bypass_cutoff:
                    continue
            for c in kids:
                sh[c] = sh[c] + sh[unit]
                p[c] = parent
                children[parent].add(c)
            children[parent].discard(unit)
            children[unit] = set()
            sh[unit] = 0
            p[unit] = -2
            bypassed[unit] = True
    return p, np.array(sh, dtype=object if exact else float), bypassed


# ------------------------------------------------------------------ spine optimisation
def _whole(name: str, v: Any, low: int) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < low:
        raise ValueError(f"{name} must be a whole number >= {low} (got {v!r})")
    return int(v)


def group_size_cap(n: int, fanout_cutoff: int = FANOUT_CUTOFF, unit: str = "block group") -> int:
    """The most units a group of the optimised spine holds, as the production code builds them.

    The seed (Section 4) motivates it by the smallest largest fan-out, ceil(sqrt(n))
    (`lowest_max_fanout`), plus the user's `fanout_cutoff`; its printed formula is lost
    in the text we have. The production code (DAS_2020_Redistricting_Production_Code,
    source/programs/geographic_spines/optimize_spine.py: `call_optimize_spine` for block
    groups, `minimize_entity_distance` for tract groups) computes
    cutoff = int(sqrt(n) + fanout_cutoff) and then:

    * ``unit="block group"`` (n = blocks of the tract): starts a new block group only
      when the current one holds *more* than cutoff blocks, so a block group holds up to
      int(sqrt(n) + fanout_cutoff + 1) blocks (40 blocks, cutoff 2: 9);
    * ``unit="tract group"`` (n = tracts of the county): merges at most cutoff tracts,
      int(sqrt(n) + fanout_cutoff) (12 tracts, cutoff 12: 15).
    """
    n = _whole("n", n, 1)
    c = _whole("fanout_cutoff", fanout_cutoff, 0)
    base = math.isqrt(n) + c  # int(sqrt(n) + c) for whole c, without float rounding
    if unit == "block group":
        return base + 1
    if unit == "tract group":
        return max(1, base)
    raise ValueError(f"unit must be 'block group' or 'tract group' (got {unit!r})")


def lowest_max_fanout(n: int) -> int:
    """The smallest possible largest fan-out when n units are split into groups under a
    parent: min over g of max(g, ceil(n / g)) (g groups, the parent's fan-out, and the
    largest group). It is ceil(sqrt(n)): the seed's example, a tract of 100 blocks in 10
    block groups of 10, has 10 (Section 4)."""
    n = _whole("n", n, 1)
    r = math.isqrt(n)
    return r if r * r == n else r + 1


def aian_area(aiannhce: Any, categories: Sequence[str] = PRODUCTION_AIAN_AREAS) -> np.ndarray:
    """True where a block's AIANNHCE code lies in an AIAN area of the given categories
    (production's `geocode_mapping`: 9999 is no area; codes 4990-4999 are refused)."""
    unknown = [c for c in categories if c not in AIAN_AREA_RANGES]
    if unknown:
        raise ValueError(f"unknown AIAN area categories: {', '.join(unknown)} (known: {', '.join(AIAN_AREA_RANGES)})")
    a = np.asarray(aiannhce)
    codes = a.astype(np.int64) if np.issubdtype(a.dtype, np.integer) else np.array(
        [int(x) if str(x).strip().isdigit() else -1 for x in a.reshape(-1)], np.int64).reshape(a.shape)
    if ((codes < 0) | (codes > 9999)).any():
        raise ValueError("AIANNHCE codes must be whole numbers 0000 to 9999")
    if ((codes >= 4990) & (codes <= 4999)).any():
        raise ValueError("AIANNHCE codes cannot be between 4990 and 4999 (not in the universe of codes)")
    out = np.zeros(codes.shape, bool)
    for c in categories:
        lo, hi = AIAN_AREA_RANGES[c]
        out |= (codes >= lo) & (codes <= hi)
    return out


@dataclass
class SpineResult:
    """One county's spine before and after `optimize_spine`.

    Trees are parent arrays whose first nodes are the county's blocks (node i = block
    i, in input order), then block groups, tracts, tract groups (after only) and the
    county (the root, last). `level_*[v]` indexes LEVELS.
    """

    parents_before: np.ndarray  # county > tract > Census block group > block
    level_before: np.ndarray
    parents_after: np.ndarray  # county > tract group > tract > optimised block group > block
    level_after: np.ndarray
    entity_type: np.ndarray  # row of `entities` the entity comes from
    entity_id: np.ndarray  # its id in that row
    osed_before: np.ndarray  # OSED of the entity's part in this county
    osed_after: np.ndarray
    cost_before: np.ndarray  # (entities, 2): c_k and c_notk at the county (for combine_costs)
    cost_after: np.ndarray
    far: np.ndarray  # entities whose distance without tract groups exceeded the threshold
    evaluations: int  # merges of tract groups tested
    stopped_early: bool  # the greedy search hit max_evaluations

    def count(self, level: int, after: bool = True) -> int:
        """Number of units of a level (index into LEVELS) in the tree."""
        return int(np.sum((self.level_after if after else self.level_before) == level))


def _lex_le(a: np.ndarray, b: np.ndarray) -> bool:
    """a <= b lexicographically (both sorted in decreasing order)."""
    diff = np.flatnonzero(a != b)
    return not diff.size or a[diff[0]] < b[diff[0]]


def optimize_spine(tract: Any, block_group: Any, entities: Any, fanout_cutoff: int = FANOUT_CUTOFF,
                   entity_threshold: int = ENTITY_THRESHOLD, max_evaluations: int = 200_000) -> SpineResult:
    """The seed's Algorithm 2 for one county (block groups and tract groups redefined).

    `tract[i]`, `block_group[i]`: the tract and Census block group of block i (any
    integer codes; a block group lies in one tract). `entities` is (types, blocks):
    row r gives, for each block, the id (>= 0) of the entity of type r (e.g. places,
    AIANNH areas) containing it, -1 for none.

    1. Block groups: within each tract, blocks in the same intersection of entities
       (same id in every row) form block groups of at most
       `group_size_cap(n, fanout_cutoff)` = int(sqrt(n) + fanout_cutoff + 1) blocks, n
       the blocks of the tract, in block order (the seed, section 4; production's rule).
    2. Tract groups: tracts meeting the same set of entities (ids, "none" included)
       are grouped, at most cutoff = int(sqrt(T) + fanout_cutoff) tracts per group (T
       the county's tracts). Entities whose distance with tracts directly under the
       county exceeds `entity_threshold` are "far"; if none is, every run of cutoff
       consecutive groups is merged into one (production's rule: it counts groups, not
       tracts, so such a group may hold more than cutoff tracts). Otherwise two groups
       whose merge holds at most cutoff tracts are merged whenever the far entities'
       distances, sorted in decreasing order, do not get lexicographically worse; a
       group none of whose merges is accepted is final (production's greedy search).
    Distances are per county (the entity's part in this county); `combine_costs`
    combines counties under states and the nation.
    """
    tr = np.asarray(tract)
    bg = np.asarray(block_group)
    ent = np.asarray(entities)
    if ent.ndim == 1:
        ent = ent[None, :]
    nb = len(tr)
    if tr.ndim != 1 or nb == 0 or bg.shape != tr.shape or ent.ndim != 2 or ent.shape[1] != nb:
        raise ValueError("tract and block_group need one value per block, entities one row per entity type "
                         f"with one value per block (got {tr.shape}, {bg.shape}, {ent.shape})")
    for name, a in (("tract", tr), ("block_group", bg), ("entities", ent)):
        if not np.issubdtype(a.dtype, np.integer):
            raise ValueError(f"{name} must hold integer codes")
    if fanout_cutoff < 0 or entity_threshold < 0 or max_evaluations < 0:
        raise ValueError("fanout_cutoff, entity_threshold and max_evaluations must be >= 0")
    ent = ent.astype(np.int64)
    tract_codes, t_of = np.unique(tr, return_inverse=True)
    n_tracts = len(tract_codes)
    # A Census block group lies in one tract: number them within (tract, code).
    _bgs, bg_of = np.unique(np.stack([t_of, bg.astype(np.int64)]), axis=1, return_inverse=True)
    bg_of = bg_of.ravel()

    # Entities of the county: (type, id) pairs.
    et, eid = [], []
    for r in range(ent.shape[0]):
        ids = np.unique(ent[r][ent[r] >= 0])
        et += [r] * len(ids)
        eid += ids.tolist()
    entity_type, entity_id = np.array(et, dtype=np.int64), np.array(eid, dtype=np.int64)
    member = np.zeros((nb, len(et)), dtype=np.int64)
    for e, (r, i) in enumerate(zip(et, eid)):
        member[:, e] = ent[r] == i

    # Before: county > tract > Census block group > block.
    n_bg = len(_bgs[0])
    parents_before = np.empty(nb + n_bg + n_tracts + 1, dtype=np.int64)
    parents_before[:nb] = nb + bg_of
    parents_before[nb:nb + n_bg] = nb + n_bg + _bgs[0]
    parents_before[nb + n_bg:-1] = nb + n_bg + n_tracts
    parents_before[-1] = -1
    level_before = np.concatenate([np.full(nb, BLOCK), np.full(n_bg, BLOCK_GROUP), np.full(n_tracts, TRACT),
                                   [COUNTY]]).astype(np.int8)

    # 1. Optimised block groups: (tract, intersection of entities) runs, chunked.
    key_cols = [np.arange(nb)] + [ent[r] for r in range(ent.shape[0] - 1, -1, -1)] + [t_of]
    order = np.lexsort(key_cols)
    keys = np.column_stack([t_of[order]] + [ent[r][order] for r in range(ent.shape[0])])
    new_run = np.r_[True, np.any(keys[1:] != keys[:-1], axis=1)]
    run_id = np.cumsum(new_run) - 1
    run_start = np.flatnonzero(new_run)
    rank = np.arange(nb) - run_start[run_id]
    tract_blocks = np.bincount(t_of, minlength=n_tracts)
    cut = np.array([group_size_cap(int(b), int(fanout_cutoff)) for b in tract_blocks], np.int64)
    chunk = rank // cut[t_of[order]]
    new_bg = new_run | np.r_[True, chunk[1:] != chunk[:-1]]
    obg_sorted = np.cumsum(new_bg) - 1
    obg = np.empty(nb, dtype=np.int64)
    obg[order] = obg_sorted
    n_obg = int(obg_sorted[-1]) + 1
    obg_tract = np.empty(n_obg, dtype=np.int64)
    obg_tract[obg_sorted] = t_of[order]

    # Tree with tracts directly under the county (no tract groups): the "bound".
    flat = np.empty(nb + n_obg + n_tracts + 1, dtype=np.int64)
    flat[:nb] = nb + obg
    flat[nb:nb + n_obg] = nb + n_obg + obg_tract
    flat[nb + n_obg:-1] = nb + n_obg + n_tracts
    flat[-1] = -1
    flat_tree = _tree(flat)
    C = _root_costs(flat_tree, member, np.ones(flat_tree.n, bool), nodes=True)
    tract_cost = C[nb + n_obg:nb + n_obg + n_tracts]  # (tracts, entities, 2)
    bound = C[-1, :, 0]
    far = bound > entity_threshold

    # 2. Tract groups: tracts meeting the same entities ("none" included) together.
    cut_t = group_size_cap(n_tracts, int(fanout_cutoff), "tract group")
    signature: dict[tuple, list[int]] = {}
    for t in range(n_tracts):
        rows = ent[:, t_of == t]
        sig = tuple(tuple(np.unique(rows[r]).tolist()) for r in range(ent.shape[0]))
        signature.setdefault(sig, []).append(t)
    groups: list[list[int]] = []
    for members in signature.values():
        groups += [members[i:i + cut_t] for i in range(0, len(members), cut_t)]
    groups.sort(key=lambda g: g[0])
    evaluations, stopped = 0, False
    if not far.any():
        # Production: every cut_t consecutive tract groups become one (whatever their sizes).
        groups = [sum(groups[i:i + cut_t], []) for i in range(0, len(groups), cut_t)]
    else:
        tc = tract_cost[:, far, :]

        def group_cost(g: list[int]) -> np.ndarray:
            s = tc[g].sum(axis=0)  # (far, 2)
            return np.stack([np.minimum(s[:, 0], 1 + s[:, 1]), np.minimum(s[:, 1], 1 + s[:, 0])], axis=1)

        costs = [group_cost(g) for g in groups]
        total = np.sum(costs, axis=0)

        def objective(tot: np.ndarray) -> np.ndarray:
            return -np.sort(-np.minimum(tot[:, 0], 1 + tot[:, 1]))

        current = objective(total)
        final: set[int] = set()  # first tract of a final group
        while len(groups) > 1 and not stopped:
            merged = False
            cands = [i for i, g in enumerate(groups) if g[0] not in final]
            for x, a in enumerate(cands[:-1]):
                for b in cands[x + 1:]:
                    if len(groups[a]) + len(groups[b]) > cut_t:
                        continue
                    if evaluations >= max_evaluations:
                        stopped = True
                        break
                    evaluations += 1
                    new_cost = group_cost(groups[a] + groups[b])
                    test_total = total - costs[a] - costs[b] + new_cost
                    test = objective(test_total)
                    if _lex_le(test, current):
                        groups[a] = groups[a] + groups[b]
                        costs[a] = new_cost
                        del groups[b], costs[b]
                        total, current, merged = test_total, test, True
                        break
                if merged or stopped:
                    break
                final.add(groups[a][0])
            if not merged:
                break

    # After: county > tract group > tract > optimised block group > block.
    n_tg = len(groups)
    tg_of_tract = np.empty(n_tracts, dtype=np.int64)
    for g, members in enumerate(groups):
        tg_of_tract[members] = g
    base_t, base_tg = nb + n_obg, nb + n_obg + n_tracts
    parents_after = np.empty(base_tg + n_tg + 1, dtype=np.int64)
    parents_after[:nb] = nb + obg
    parents_after[nb:base_t] = base_t + obg_tract
    parents_after[base_t:base_tg] = base_tg + tg_of_tract
    parents_after[base_tg:-1] = base_tg + n_tg
    parents_after[-1] = -1
    level_after = np.concatenate([np.full(nb, BLOCK), np.full(n_obg, BLOCK_GROUP), np.full(n_tracts, TRACT),
                                  np.full(n_tg, TRACT_GROUP), [COUNTY]]).astype(np.int8)

    def costs_of(parents: np.ndarray) -> np.ndarray:
        t = _tree(parents)
        c = _root_costs(t, member, np.ones(t.n, bool), nodes=True)[t.root]
        return c.astype(np.int64)

    cb, ca = costs_of(parents_before), costs_of(parents_after)
    return SpineResult(parents_before, level_before, parents_after, level_after, entity_type, entity_id,
                       cb[:, 0], ca[:, 0], cb, ca, far, evaluations, stopped)
