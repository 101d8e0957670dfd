"""Hierarchical consistency: make noisy counts of nested areas add up.

SafeTab-P tabulates every geography level on its own, so the published counts of a
group in the counties of a state do not add up to its state count. These functions
post-process noisy counts on a tree of areas so that every parent equals the sum of its
children (no privacy cost: they only read the noisy counts).

The tree is a parent array: ``parents[i]`` is the index of node i's parent, -1 for a
root (several roots make a forest; each tree is solved on its own). ``noisy`` holds one
value per node, shape ``(n,)``, or ``(n, m)`` for m trees that share the structure
(e.g. one per characteristic iteration); they are solved together, column by column.

Common options:

- ``variances``: the noise variance of each node (default 1: the unweighted problem).
  ``inf`` marks an *unobserved* node: its noisy value is never read. An unobserved
  leaf is a non-negative unknown (a count that was not published, e.g. a suppressed
  one), so its parent is at least the sum of its other children; an unobserved
  internal node is just the sum of its children. A variance of 0, or at most
  `EXACT_VARIANCE` (2^-64), marks an *exact* node: it is held at its noisy value.
- ``fixed``: a value per node, NaN where free: the node must take that value (an
  invariant). ``root_total`` does the same for the roots, as in the seed paper.
- ``nonnegative``: True, False, or a flag per node; it applies to the leaves, which
  makes every node non-negative when all leaves are.

Functions:

- `least_squares`: the weighted least-squares consistent estimate, real valued
  (Hay, Rastogi, Miklau, Suciu 2010 "Boosting the accuracy of differentially private
  histograms through consistency": with equal variances it is their estimate), in
  linear time; with non-negativity or unobserved leaves, the exact constrained optimum.
- `tree_dp`: the integer consistent counts closest to the noisy ones in (weighted)
  squared distance, exactly: the dynamic program of Fioretto, Van Hentenryck and Zhu,
  "Differential Privacy of Hierarchical Census Data: An Optimization Approach"
  (Artificial Intelligence 296, 2021; an earlier version by Fioretto and Van Hentenryck,
  CP 2019).
- `relax_then_round`: the baseline that paper compares against: the relaxed
  (real-valued) optimum rounded node by node, which breaks additivity.
- `round_consistent`: integers from a consistent real solution, keeping additivity
  (top-down largest-remainder rounding, as a TopDown-style release needs).
- `distribute`: integer cells of a table that add up to a given total.
- `violations`: how many parents differ from the sum of their children.

The seed paper's own problem, the privacy-preserving group size release (PGSR: per
region, how many groups - e.g. households - have each size), is here too:
`group_size_vector`, `release_group_sizes` (noise with the paper's sensitivities and
budget split, then its exact post-processing; a study, not a release) and
`fit_group_sizes` (the post-processing alone). docs/consistency.md lists what follows
the paper, what differs and what is not implemented.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from methods import _highs

#: Entries of cost tables solved at once by `tree_dp` (bounds its memory: ~50 bytes each).
_DP_BUDGET = 1 << 22
#: Variances at most this are exact values (held); see `_prepare`.
EXACT_VARIANCE = 2.0**-64
#: The largest ratio of two variances of free observed nodes of one tree: beyond it the
#: weighted solvers lose every digit of the smaller weight (double precision).
MAX_VARIANCE_RATIO = 1e12
#: The most table entries `tree_dp` builds for one tree; a tree that needs more (its
#: variances very unequal: the width grows as sqrt(max variance / min variance)) is
#: refused with a message rather than exhaust memory.
DP_MAX_ENTRIES = 1 << 26
#: Bounds standing for "none" in integer tables (far from any count, far from overflow).
_FAR = 1 << 60


# ---------------------------------------------------------------------------------------
# The tree


@dataclass(frozen=True)
class _Tree:
    """A validated parent array with its nodes grouped by depth.

    ``levels[d]`` lists the nodes at depth d; for d >= 1 they are grouped by parent, the
    parents in the order of ``levels[d - 1]``, so per-parent sums are one `reduceat`.
    """

    parents: np.ndarray
    levels: tuple[np.ndarray, ...]
    n_children: np.ndarray
    child_start: np.ndarray
    child_order: np.ndarray

    @property
    def n(self) -> int:
        return len(self.parents)

    def children(self, p: int) -> np.ndarray:
        return self.child_order[self.child_start[p]:self.child_start[p + 1]]

    def internal(self, d: int) -> np.ndarray:
        nodes = self.levels[d]
        return nodes[self.n_children[nodes] > 0]


def _tree(parents) -> _Tree:
    p = np.asarray(parents)
    if p.ndim != 1 or len(p) == 0:
        raise ValueError(f"parents must be a non-empty 1-D array of node indices, got shape {p.shape}")
    integral = np.issubdtype(p.dtype, np.integer) or (
        np.issubdtype(p.dtype, np.floating) and np.all(np.isfinite(p)) and np.all(p == np.round(p)))
    if not integral:
        raise ValueError(f"parents must hold integers, got dtype {p.dtype}")
    p = p.astype(np.int64)
    n = len(p)
    bad = np.flatnonzero((p < -1) | (p >= n) | (p == np.arange(n)))
    if len(bad):
        i = int(bad[0])
        raise ValueError(f"parents[{i}] = {int(p[i])}: a parent must be -1 (root) or another node's index in 0..{n - 1}")
    roots = np.flatnonzero(p == -1)
    if not len(roots):
        raise ValueError("parents has no root (no entry is -1)")
    nonroot = np.flatnonzero(p >= 0)
    order = nonroot[np.argsort(p[nonroot], kind="stable")]
    counts = np.bincount(p[nonroot], minlength=n)
    start = np.concatenate([[0], np.cumsum(counts)])
    levels = [roots]
    seen = len(roots)
    frontier = roots
    while seen <= n:
        sizes = counts[frontier]
        total = int(sizes.sum())
        if total == 0:
            break
        within = np.arange(total) - np.repeat(np.cumsum(sizes) - sizes, sizes)
        frontier = order[np.repeat(start[frontier], sizes) + within]
        levels.append(frontier)
        seen += total
    if seen != n:
        reached = np.zeros(n, bool)
        reached[np.concatenate(levels)] = True
        i = int(np.flatnonzero(~reached)[0])
        raise ValueError(f"parents has a cycle: node {i} is not below any root")
    return _Tree(p, tuple(levels), counts, start, order)


def _segments(tree: _Tree, d: int) -> tuple[np.ndarray, np.ndarray]:
    """For depth d >= 1: the parent of each segment of ``levels[d]`` and the segment starts."""
    par = tree.parents[tree.levels[d]]
    starts = np.flatnonzero(np.r_[True, par[1:] != par[:-1]])
    return par[starts], starts


# ---------------------------------------------------------------------------------------
# Inputs


def _batch(a, n: int, m: int, name: str, default: float) -> np.ndarray:
    """An (n, m) float array from a scalar, an (n,) or an (n, m) array."""
    if a is None:
        return np.full((n, m), default, np.float64)
    arr = np.asarray(a, dtype=np.float64)
    if arr.ndim == 0:
        return np.full((n, m), float(arr))
    if arr.shape == (n,):
        return np.repeat(arr[:, None], m, axis=1)
    if arr.shape == (n, m):
        return arr.copy()
    raise ValueError(f"{name} must be a scalar or of shape ({n},) or ({n}, {m}), got {arr.shape}")


@dataclass
class _Problem:
    """Validated inputs as (n, m) arrays, with the masks every solver reads."""

    tree: _Tree
    y: np.ndarray
    var: np.ndarray
    fixed: np.ndarray  # NaN: free
    nonneg: np.ndarray  # per node; True on every unobserved leaf
    squeeze: bool
    free: np.ndarray = field(init=False)
    w: np.ndarray = field(init=False)  # weights 1 / variance (0 for unobserved nodes)
    leaf: np.ndarray = field(init=False)  # (n, 1)

    def __post_init__(self) -> None:
        self.free = np.isnan(self.fixed)
        self.w = np.where(np.isinf(self.var), 0.0, 1.0 / self.var)
        self.leaf = (self.tree.n_children == 0)[:, None]

    def needs_bounds(self) -> bool:
        """Whether some free leaf has a lower bound (then least squares is piecewise linear)."""
        return bool((self.nonneg & self.free & self.leaf).any())

    def out(self, x: np.ndarray) -> np.ndarray:
        return x[:, 0] if self.squeeze else x

    def columns(self, cols: np.ndarray) -> _Problem:
        """The same problem for some of the trees."""
        return _Problem(self.tree, self.y[:, cols], self.var[:, cols], self.fixed[:, cols], self.nonneg[:, cols],
                        False)


def _prepare(parents, noisy, variances, fixed, root_total, nonnegative, integer: bool = False) -> _Problem:
    tree = _tree(parents)
    n = tree.n
    y = np.asarray(noisy, dtype=np.float64)
    squeeze = y.ndim == 1
    if squeeze:
        y = y[:, None]
    if y.ndim != 2 or y.shape[0] != n:
        raise ValueError(f"noisy must be of shape ({n},) or ({n}, m) to match parents, got {np.shape(noisy)}")
    if not np.all(np.isfinite(y)):
        raise ValueError("noisy values must be finite")
    m = y.shape[1]
    var = _batch(variances, n, m, "variances", 1.0)
    if not np.all((var >= 0) & ~np.isnan(var)):
        raise ValueError("variances must be >= 0 (inf marks an unobserved node; 0, or at most EXACT_VARIANCE, "
                         "an exact one)")
    fx = _batch(fixed, n, m, "fixed", np.nan)
    if np.any(np.isinf(fx)):
        raise ValueError("fixed values must be finite (NaN marks a free node)")
    # A variance of at most EXACT_VARIANCE (a discrete Gaussian at a large budget: at
    # rho = 1e6 Var = 2 exp(-1 / (2 sigma^2)) even underflows to 0) means noise that is 0
    # with probability at least 1 - 2^-64 (P(X != 0) <= E[X^2]): the value is exact, the
    # limit of a weight 1 / variance without bound, and is held. Weights of 1e40 beside
    # weights of 1e-5 would leave nothing of double precision in the solvers.
    exact = (var <= EXACT_VARIANCE) & np.isnan(fx)
    fx[exact] = y[exact]
    var = np.where(var <= EXACT_VARIANCE, 1.0, var)  # held nodes cost nothing; any variance does
    weighed = np.where(np.isnan(fx) & np.isfinite(var), var, np.nan)
    weighed = weighed[:, np.isfinite(weighed).any(axis=0)]  # the trees with a weighed node
    if weighed.size:
        ratio = np.nanmax(weighed, axis=0) / np.nanmin(weighed, axis=0)
        if np.nanmax(ratio) > MAX_VARIANCE_RATIO:
            raise ValueError(
                f"the noise variances of these counts differ by a factor of {np.nanmax(ratio):.2g} (more than "
                f"{MAX_VARIANCE_RATIO:.0e}: budgets very far apart, e.g. rho 100 beside rho 1e-6), which double "
                "precision cannot weigh against each other; choose budgets closer together")
    if root_total is not None:
        roots = tree.levels[0]
        rt = np.asarray(root_total, dtype=np.float64)
        if rt.ndim == 0:
            rt = np.full((len(roots), m), float(rt))
        elif rt.shape == (len(roots),):
            rt = np.repeat(rt[:, None], m, axis=1)
        elif len(roots) == 1 and rt.shape == (m,):
            rt = rt[None, :]
        elif rt.shape != (len(roots), m):
            raise ValueError(f"root_total must be a scalar or of shape ({len(roots)},) (one per root) "
                             f"or ({len(roots)}, {m}), got {rt.shape}")
        if not np.all(np.isfinite(rt)):
            raise ValueError("root_total must be finite")
        clash = ~np.isnan(fx[roots]) & (fx[roots] != rt)
        if clash.any():
            raise ValueError("root_total and fixed give a root two different values")
        fx[roots] = rt
    nn = np.asarray(nonnegative)
    if nn.dtype != bool:
        raise ValueError("nonnegative must be True, False or an array of booleans")
    nn = np.broadcast_to(nn[:, None] if nn.shape == (n,) else nn, (n, m)).copy() if nn.ndim else np.full((n, m), bool(nn))
    leaf = (tree.n_children == 0)[:, None]
    nn |= leaf & np.isinf(var) & np.isnan(fx)  # an unobserved leaf is a non-negative unknown
    given = ~np.isnan(fx)
    if np.any(fx[given & nn & leaf] < 0) or (np.all(nn[leaf[:, 0]]) and np.any(fx[given] < 0)):
        raise ValueError("a fixed value is negative, but the solution must be non-negative")
    if integer and np.any(fx[given] != np.round(fx[given])):
        raise ValueError("fixed values (and root_total) must be integers for an integer solution")
    return _Problem(tree, y, var, fx, nn, squeeze)


# ---------------------------------------------------------------------------------------
# Least squares


def least_squares(parents, noisy, variances=None, *, root_total=None, fixed=None,
                  nonnegative=False) -> np.ndarray:
    """The weighted least-squares consistent estimate.

    Minimises ``sum_i (x_i - noisy_i)^2 / variances_i`` over real x with
    ``x[p] = sum of x[children of p]`` for every internal node (and ``fixed`` /
    ``root_total`` nodes held at their values; unobserved nodes, variance inf, cost
    nothing). It is the best linear unbiased estimate of the true counts when the
    noise is independent with these variances; with equal variances it is Hay et al.'s
    "boosting" estimate. Exact, in linear time, with two passes over the tree (a
    Kalman-style smoother):

    - bottom-up, the estimate of each node from its subtree alone and its variance:
      leaves ``z = noisy, V = var``; an internal node combines its own noisy value with
      the sum of its children's estimates (variance ``S = sum V_c``) by inverse-variance
      weighting, ``z = (noisy/var + s/S) / (1/var + 1/S)``, ``V = 1 / (1/var + 1/S)``;
      a fixed node has ``z = fixed, V = 0``;
    - top-down, roots keep ``z``; the children of a node with final value ``x_p`` share
      the gap ``x_p - sum z_c`` in proportion to their variances,
      ``x_c = z_c + V_c / S * (x_p - sum z_c)``.

    With ``nonnegative`` leaves, or unobserved leaves (non-negative by definition), it
    returns instead the exact optimum under those bounds (the relaxation `tree_dp` and
    `relax_then_round` start from), by a dynamic program over piecewise-linear response
    functions (see `_bounded_ls`).

    Raises ValueError if the fixed values cannot be met (e.g. fixed children that do not
    add up to a fixed parent).
    """
    pb = _prepare(parents, noisy, variances, fixed, root_total, nonnegative)
    return pb.out(_relaxed(pb))


def _relaxed(pb: _Problem) -> np.ndarray:
    if not pb.needs_bounds():
        return _linear_ls(pb)
    # Trees with few bounded leaves are solved together, so their hinge lists stay short.
    hinges = (pb.free & pb.nonneg & pb.leaf & (pb.w > 0)).astype(np.int64) * len(pb.tree.levels)
    x = np.empty(pb.y.shape)
    for cols in _batches(hinges, _DP_BUDGET):
        x[:, cols] = _bounded_ls(pb.columns(cols))
    return x


def _batches(cost: np.ndarray, budget: int) -> list[np.ndarray]:
    """Groups of columns (trees) to solve together: (nodes, trees) costs in, column lists out.

    A batch costs the sum over nodes of its largest cost times its number of trees (the
    arrays are padded to the largest); trees are taken in order of total cost, and a
    batch closes when the next tree would take it over `budget`.
    """
    order = np.argsort(cost.sum(axis=0), kind="stable")
    out, cur = [], []
    top = np.zeros(cost.shape[0], cost.dtype)
    for j in order:
        new = np.maximum(top, cost[:, j])
        if cur and (int(new.sum()) + cost.shape[0]) * (len(cur) + 1) > budget:
            out.append(np.array(cur))
            cur, new = [], cost[:, j].copy()
        cur.append(j)
        top = new
    if cur:
        out.append(np.array(cur))
    return out


def _check_gap(gap: np.ndarray, scale: np.ndarray, where: np.ndarray) -> None:
    bad = where & (np.abs(gap) > 1e-7 * (1.0 + np.abs(scale)))
    if bad.any():
        raise ValueError("the fixed values cannot be met: a fixed parent differs from the sum of its children, "
                         "all of which are fixed")


def _linear_ls(pb: _Problem) -> np.ndarray:
    """The two-pass estimate (no bounds; unobserved nodes are internal ones only)."""
    tree, y, var, fx = pb.tree, pb.y, pb.var, pb.fixed
    n, m = y.shape
    is_fixed = ~np.isnan(fx)
    own = pb.w  # precision of each node's own noisy value (0: unobserved)
    z = np.empty((n, m))
    V = np.empty((n, m))
    s = np.zeros((n, m))  # sum of the children's subtree estimates
    S = np.zeros((n, m))  # sum of their variances
    depth = len(tree.levels)
    with np.errstate(divide="ignore", invalid="ignore"):
        for d in range(depth - 1, -1, -1):
            nodes = tree.levels[d]
            zi, Vi = y[nodes].copy(), var[nodes].copy()
            inner = tree.n_children[nodes] > 0
            if inner.any():
                ii = nodes[inner]
                si, Si, yi, pi = s[ii], S[ii], y[ii], own[ii]
                pos = Si > 0
                prec = pi + np.where(pos, 1 / Si, 0.0)
                zi[inner] = np.where(pos, (pi * yi + si / Si) / prec, si)
                Vi[inner] = np.where(pos, 1 / prec, 0.0)
            f = is_fixed[nodes]
            zi[f] = fx[nodes][f]
            Vi[f] = 0.0
            z[nodes], V[nodes] = zi, Vi
            if d > 0:
                par, starts = _segments(tree, d)
                s[par] = np.add.reduceat(zi, starts, axis=0)
                S[par] = np.add.reduceat(Vi, starts, axis=0)
        x = np.empty((n, m))
        roots = tree.levels[0]
        x[roots] = z[roots]
        for d in range(1, depth):
            nodes = tree.levels[d]
            p = tree.parents[nodes]
            share = np.where(S[p] > 0, V[nodes] / S[p], 0.0)
            x[nodes] = z[nodes] + share * (x[p] - s[p])
            par, _starts = _segments(tree, d)
            _check_gap(x[par] - s[par], x[par], S[par] == 0)
    return x


def _eval(rep, mu: np.ndarray) -> np.ndarray:
    """A response ``a + s0 mu + sum_k delta_k max(0, mu - lam_k)`` at prices mu (per tree)."""
    a, s0, lam, dlt = rep[:4]
    with np.errstate(invalid="ignore"):
        return a + s0 * mu + np.sum(dlt * np.maximum(mu - lam, 0.0), axis=-2)


def _bounded_ls(pb: _Problem) -> np.ndarray:
    """Exact weighted least squares with bounded leaves, by a dynamic program on the tree.

    Write f_i(v) = w_i (v - y_i)^2 with w_i = 1/var_i and F_i(v) the least cost of node
    i's subtree given x_i = v. Its *response* X_i(lam) = argmin_v F_i(v) - lam v (the
    value node i takes when its parent's constraint prices it at lam) is continuous,
    non-decreasing and piecewise linear, so it is kept as a line plus hinges,
    ``a + s0 lam + sum_k delta_k max(0, lam - lam_k)``:

    - a non-negative leaf: X(lam) = max(0, y + lam / (2w)), one hinge at -2 w y of slope
      1/(2w); an unbounded leaf: the line y + lam / (2w); a fixed node: a constant;
    - an unobserved leaf (w = 0, non-negative): 0 for lam < 0 and any value >= 0 at
      lam = 0: a response *capped* at price 0 (it absorbs whatever its parent has over);
    - an internal node: its children share one price mu, so their sum is
      G(mu) = sum_c X_c(mu) (the union of their hinges), capped at 0 if a child is;
      stationarity in x_i gives lam = mu + 2 w_i (G(mu) - y_i), so X_i(lam) = G(mu(lam)):
      the same hinges moved to lam_k = mu_k + 2 w_i (G(mu_k) - y_i), a slope S of G
      becoming S / (1 + 2 w_i S); past a cap, mu stays 0 and x_i = y_i + lam / (2 w_i),
      one more hinge. An unobserved internal node answers with G itself.

    Top-down, a free root takes X(0) (no parent prices it; the least value if capped), a
    fixed node the price mu with G(mu) = its value, every child c of a node priced mu
    takes X_c(mu), and where the children are capped the first capped one takes what
    is left over. The work is the number of (leaf, ancestor) pairs times a sort; m trees
    are done at once (hinges of fixed or unbounded leaves are padding: slope 0 at +inf).
    """
    tree, y, fx, nn = pb.tree, pb.y, pb.fixed, pb.nonneg
    n, m = y.shape
    w = pb.w
    is_fixed = ~np.isnan(fx)
    leaf = tree.n_children == 0
    xrep: dict[int, tuple] = {}
    grep: dict[int, tuple] = {}

    def leaf_rep(nodes: np.ndarray):
        f, obs, bnd = is_fixed[nodes], w[nodes] > 0, nn[nodes]
        hinge, line, cap = ~f & obs & bnd, ~f & obs & ~bnd, ~f & ~obs
        with np.errstate(divide="ignore"):
            half = np.where(obs, 0.5 / np.where(obs, w[nodes], 1.0), 0.0)
        a = np.where(f, fx[nodes], np.where(line, y[nodes], 0.0))
        s0 = np.where(line, half, 0.0)
        lam = np.where(hinge, -2.0 * w[nodes] * y[nodes], np.inf)[:, None, :]
        dlt = np.where(hinge, half, 0.0)[:, None, :]
        return a, s0, lam, dlt, cap

    for d in range(len(tree.levels) - 1, -1, -1):
        for p in tree.internal(d):
            p = int(p)
            ch = tree.children(p)
            lc = ch[leaf[ch]]
            a_g, s0_g = np.zeros(m), np.zeros(m)
            lams, dlts, cap_g = [], [], np.zeros(m, bool)
            if len(lc):
                a, s0, lam, dlt, cap = leaf_rep(lc)
                a_g += a.sum(axis=0)
                s0_g += s0.sum(axis=0)
                lams.append(lam.reshape(-1, m))
                dlts.append(dlt.reshape(-1, m))
                cap_g |= cap.any(axis=0)
            for c in ch[~leaf[ch]]:
                a, s0, lam, dlt, cap = xrep[int(c)]
                a_g += a
                s0_g += s0
                lams.append(lam)
                dlts.append(dlt)
                cap_g |= cap
            lam_all = np.concatenate(lams)
            order = np.argsort(lam_all, axis=0, kind="stable")
            b = np.take_along_axis(lam_all, order, 0)
            dl = np.take_along_axis(np.concatenate(dlts), order, 0)
            # Past a cap prices stay <= 0: hinges at or beyond 0 are never reached.
            gone = cap_g[None, :] & (b >= 0)
            b[gone], dl[gone] = np.inf, 0.0
            keep = max(1, int(np.isfinite(b).sum(axis=0).max()))  # finite hinges come first
            b, dl = b[:keep], dl[:keep]
            slope = s0_g + np.cumsum(dl, axis=0)  # slope of G just after each hinge
            fin = np.isfinite(b)
            with np.errstate(invalid="ignore"):
                inc = np.where(fin[1:], slope[:-1] * (b[1:] - b[:-1]), 0.0)
            first = a_g + s0_g * np.where(fin[0], b[0], 0.0)
            G = first + np.concatenate([np.zeros((1, m)), np.cumsum(inc, axis=0)])
            n_fin = fin.sum(axis=0)
            last = np.maximum(n_fin - 1, 0)
            cols = np.arange(m)
            s_last = np.where(n_fin > 0, slope[last, cols], s0_g)
            b_last = np.where(n_fin > 0, b[last, cols], 0.0)
            G0 = np.where(n_fin > 0, G[last, cols] + slope[last, cols] * (0.0 - b_last), a_g)  # G(0-)
            grep[p] = (a_g, s0_g, b, G, slope, cap_g, G0)
            # The response of p: fixed, unobserved (G itself) or observed (moved hinges).
            wp, yp = w[p], y[p]
            obs = wp > 0
            k2 = 2.0 * wp
            a_p = (a_g + k2 * s0_g * yp) / (1.0 + k2 * s0_g)
            s0_p = s0_g / (1.0 + k2 * s0_g)
            lam_p = b + k2 * (G - yp)
            s_p = slope / (1.0 + k2 * slope)
            dlt_p = np.diff(np.concatenate([s0_p[None, :], s_p]), axis=0)
            with np.errstate(divide="ignore", invalid="ignore"):
                extra_lam = np.where(obs & cap_g, k2 * (G0 - yp), np.inf)
                extra_dlt = np.where(obs & cap_g, 0.5 / np.where(obs, wp, 1.0) - s_last / (1.0 + k2 * s_last), 0.0)
            lam_p = np.concatenate([np.where(obs, lam_p, b), extra_lam[None, :]])
            dlt_p = np.concatenate([np.where(obs, dlt_p, dl), extra_dlt[None, :]])
            a_p = np.where(obs, a_p, a_g)
            s0_p = np.where(obs, s0_p, s0_g)
            cap_p = cap_g & ~obs
            f = is_fixed[p]
            lam_p[:, f], dlt_p[:, f] = np.inf, 0.0
            xrep[p] = (np.where(f, fx[p], a_p), np.where(f, 0.0, s0_p), lam_p, dlt_p, cap_p & ~f)

    x = np.empty((n, m))
    price = np.zeros((n, m))  # the price each node is answered at (0 for roots)
    zero = np.zeros(m)
    for rt in tree.levels[0]:
        rt = int(rt)
        rep = leaf_rep(np.array([rt])) if leaf[rt] else xrep[rt]
        val = _eval(rep, zero)
        x[rt] = val[0] if leaf[rt] else val
    for d in range(len(tree.levels)):
        for p in tree.internal(d):
            p = int(p)
            a_g, s0_g, b, G, slope, cap_g, G0 = grep.pop(p)
            xrep.pop(p)
            wp, yp = w[p], y[p]
            mu = np.where(wp > 0, price[p] - 2.0 * wp * (x[p] - yp), price[p])
            f = is_fixed[p]
            if f.any():
                g = (a_g, s0_g, b, G, slope, cap_g, G0)
                mu = np.where(f, _price_of(g, np.where(f, fx[p], np.nan)), mu)
            mu = np.where(cap_g, np.minimum(mu, 0.0), mu)
            ch = tree.children(p)
            vals = np.empty((len(ch), m))
            caps = np.zeros((len(ch), m), bool)
            lj = np.flatnonzero(leaf[ch])
            if len(lj):
                rep = leaf_rep(ch[lj])
                vals[lj] = _eval(rep[:4], mu[None, :])
                caps[lj] = rep[4]
            for j in np.flatnonzero(~leaf[ch]):
                rep = xrep[int(ch[j])]
                vals[j] = _eval(rep, mu)
                caps[j] = rep[4]
            # What the children do not take goes to the first capped child (an unpublished remainder).
            left = x[p] - vals.sum(axis=0)
            first = np.argmax(caps, axis=0)
            has = caps.any(axis=0)
            vals[first[has], np.flatnonzero(has)] += np.maximum(left[has], 0.0)
            x[ch] = vals
            price[ch] = mu
    return x


def _price_of(g: tuple, value: np.ndarray) -> np.ndarray:
    """The price mu at which the children's sum G(mu) equals `value` (per tree).

    G is the line a + s0 mu before its first hinge, then piecewise linear and
    non-decreasing; capped, any value from G(0-) up is met at mu = 0. NaN columns of
    `value` (free trees) get 0. Raises ValueError where no price meets the value.
    """
    a_g, s0_g, b, G, slope, cap_g, _g0 = g
    m = b.shape[1]
    v = np.where(np.isnan(value), a_g, value)
    fin = np.isfinite(b)
    n_fin = fin.sum(axis=0)
    tol = 1e-9 * (1.0 + np.abs(v))
    k = (fin & (G <= v + tol)).sum(axis=0) - 1
    cols = np.arange(m)
    kk = np.clip(k, 0, max(b.shape[0] - 1, 0))
    bk, Gk, sk = b[kk, cols], G[kk, cols], slope[kk, cols]
    b0 = np.where(n_fin > 0, b[0], 0.0)
    G_first = np.where(n_fin > 0, G[0], a_g)
    with np.errstate(divide="ignore", invalid="ignore"):
        after = np.where(sk > 0, bk + (v - Gk) / sk, bk)
        before = np.where(s0_g > 0, b0 - (G_first - v) / s0_g, b0)
    mu = np.where((k >= 0) & (n_fin > 0), after, before)
    mu = np.where(cap_g, np.minimum(mu, 0.0), mu)
    low = (s0_g == 0) & (v < a_g - tol)
    high = ~cap_g & (n_fin == 0) & (s0_g == 0) & (v > a_g + tol)
    if np.any((low | high) & ~np.isnan(value)):
        raise ValueError("the fixed values cannot be met: a fixed node is smaller than the fixed values below "
                         "it (or than zero for non-negative leaves), or all below it are fixed to another sum")
    return np.where(np.isnan(value), 0.0, mu)


# ---------------------------------------------------------------------------------------
# The exact integer dynamic program


def tree_dp(parents, noisy, root_total=None, nonnegative=True, *, variances=None,
            fixed=None) -> np.ndarray:
    """The integer consistent counts closest to the noisy ones, exactly.

    Returns integers x with ``x[p] = sum of x[children of p]`` for every internal node,
    ``x >= 0`` when `nonnegative`, ``x[root] = root_total`` and ``x = fixed`` where
    given, that minimise ``sum_i (x_i - noisy_i)^2 / variances_i`` (unweighted by
    default, as in the paper). The algorithm of Fioretto, Van Hentenryck and Zhu:

    - every node i keeps a *cost table* F_i(v), the least cost of its subtree when
      x_i = v, over an integer domain [lo_i, hi_i]; F_i is convex, so it is stored as
      its sorted marginal costs F_i(v + 1) - F_i(v);
    - a leaf's table is its own squared deviation, marginals w (2 (v - y) + 1);
    - a parent's table is its own squared deviation plus the min-convolution of its
      children's tables (the cheapest way to split v among them). For convex tables the
      min-convolution is a merge: starting from every child at its lowest value, each
      extra unit goes to the child whose next unit is cheapest, so its marginal costs are
      the children's marginal costs merged in sorted order;
    - a free root takes the argmin of its table (the last value whose marginal is
      negative), and top-down every parent's value is split among its children by
      taking the first (x_p - sum lo_c) entries of the merged list: each child gets its
      lowest value plus the number of its own entries taken.

    Unweighted marginals are small integers, held exactly in float64, so the result is
    exactly optimal (ties are broken by the order of the children); with variances the
    comparisons are those of float64 arithmetic.

    An unobserved node (variance inf) costs nothing: an unobserved leaf's table is 0
    everywhere from 0 up, so a parent's merged list gets an endless run of zero
    marginals after its negative ones (the leaf takes whatever the others leave); an
    unobserved internal node passes its children's merge on, capped the same way if one
    of them is. Such capped tables are stored as their negative marginals only.

    **The bound on the tables.** The tables span only
    ``[x~_i - r_i, x~_i + r_i]`` (clipped at 0 when non-negative), where x~ is the exact
    real-valued optimum of the same problem (`least_squares` with the same fixed values,
    bounds and unobserved nodes), ``r_i = sqrt(W / w_i) / 2``, ``w_i = 1 / variances_i``
    and W the sum of w over the free observed nodes of the tree (``r_i = sqrt(n) / 2``
    unweighted); unobserved nodes need no bound of their own (their values follow from
    the others'). This cannot cut off an optimum, because every integer optimum z
    satisfies ``sum_i w_i (z_i - x~_i)^2 <= W / 4``:

    1. Let F(x) = sum w_i (x_i - y_i)^2 and Phi(x) the sum of the piecewise-linear
       interpolations of each term between consecutive integers. On [k, k + 1] the chord
       exceeds the parabola by w_i (x - k)(k + 1 - x) <= w_i / 4, so
       F <= Phi <= F + W / 4, and Phi = F at integer points.
    2. The feasible set P = {x : x_p = sum x_c, bounds} has a constraint matrix in which
       each node's column has a +1 in its own row and a -1 in its parent's: a network
       matrix, totally unimodular; bounds (0, fixed values) are integers. Phi is linear
       on the unit box holding a minimiser of Phi over P, and that box intersected with
       P is a polytope with integer vertices, so Phi attains its minimum over P at an
       integer point (unobserved nodes are variables with no cost, which changes none
       of this). Hence every integer optimum z has
       F(z) = min over P of Phi <= Phi(x~) <= F(x~) + W / 4.
    3. x~ minimises the convex quadratic F over the convex set P, so
       grad F(x~) . (z - x~) >= 0, and F(z) = F(x~) + grad F(x~) . (z - x~)
       + sum w_i (z_i - x~_i)^2 >= F(x~) + sum w_i (z_i - x~_i)^2.

    Together: sum w_i (z_i - x~_i)^2 <= W / 4, so |z_i - x~_i| <= r_i for every node.
    Fixed nodes have x~_i = z_i and a single-value table. Two units of slack cover the
    rounding of x~. The seed paper likewise bounds each table around the noisy value; this
    bound is centred on the relaxed optimum, which is what makes it provable.

    **Speed.** Tables of width 2 r_i + 1 (about sqrt(n)) make the work
    O(n sqrt(n) log n) per tree at most; trees sharing one structure are solved a batch
    at a time. Most optima lie much closer to x~ than r_i, so a first pass uses tables of
    half-width ``min(r_i, 3 + r_i / 8)``, and only the trees whose solution sits on an
    edge of those narrow tables that is not also an edge of the proven ones are solved
    again. That is exact too: if the restricted optimum z_B were not optimal, a global
    optimum z* would differ from it by a sum of unit moves along tree paths (an integer
    circulation decomposes into conformal unit paths), and for a separable convex cost
    one of them alone would lower the cost; each such move changes nodes by 1 towards z*,
    so it stays feasible (non-negative, fixed nodes untouched) and inside the narrow
    tables unless z_B sits on one of their extra edges, contradicting z_B's optimality.
    """
    pb = _prepare(parents, noisy, variances, fixed, root_total, nonnegative, integer=True)
    fx, free = pb.fixed, pb.free
    w = pb.w
    relaxed = _relaxed(pb)
    obs = free & (w > 0)  # the nodes with a proven bound
    leaf = pb.leaf
    W = np.where(obs, w, 0.0).sum(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.where(obs, 0.5 * np.sqrt(W[None, :] / np.where(obs, w, 1.0)) + 2.0, 0.0)
    lo = np.where(obs, np.ceil(relaxed - r), -_FAR)
    hi = np.where(obs, np.floor(relaxed + r), _FAR)
    lo = np.where(obs & pb.nonneg & leaf, np.maximum(lo, 0.0), lo)
    unobserved_leaf = free & (w == 0) & leaf
    lo = np.where(unobserved_leaf, 0.0, np.where(free, lo, fx)).astype(np.int64)
    hi = np.where(unobserved_leaf, 0.0, np.where(free, hi, fx)).astype(np.int64)
    # First pass on narrow tables; trees whose solution touches a narrow edge that is not
    # also a proven edge are solved again on the proven tables (see above).
    r1 = np.minimum(r, 3.0 + r / 8.0)
    lo1 = np.where(obs, np.maximum(lo, np.ceil(relaxed - r1).astype(np.int64)), lo)
    hi1 = np.where(obs, np.minimum(hi, np.floor(relaxed + r1).astype(np.int64)), hi)
    need = np.where(obs, hi - lo + 1, 1).sum(axis=0)
    if need.size and need.max() > DP_MAX_ENTRIES:
        raise ValueError(f"the exact integer optimum of one tree needs tables of {int(need.max()):,} values (more than "
                         f"{DP_MAX_ENTRIES:,}): its noise variances are very unequal (budgets far apart); use "
                         "least-squares, or budgets closer together")
    x = _dp_batched(pb, w, lo1, hi1)
    edge = (obs & (((x == lo1) & (lo1 > lo)) | ((x == hi1) & (hi1 < hi)))).any(axis=0)
    if edge.any():
        redo = np.flatnonzero(edge)
        x[:, redo] = _dp_batched(pb, w, lo, hi, redo)
    return pb.out(x)


def _dp_batched(pb: _Problem, w, lo, hi, cols: np.ndarray | None = None) -> np.ndarray:
    """`_dp` over batches of trees, so the tables stay within `_DP_BUDGET` entries.

    Trees with narrow tables are batched together (`_batches`), so a tree where most
    nodes are fixed or unobserved does not pay for another tree's wide tables.
    """
    cols = np.arange(pb.y.shape[1]) if cols is None else cols
    n = pb.tree.n
    obs = pb.free & (w > 0)
    span = np.where(obs[:, cols], hi[:, cols] - lo[:, cols], 0)
    x = np.empty((n, len(cols)), np.int64)
    for part in _batches(span, _DP_BUDGET):
        sel = cols[part]
        x[:, part] = _dp(pb.tree, pb.y[:, sel], w[:, sel], pb.free[:, sel], lo[:, sel], hi[:, sel])
    return x


def _leaf_tables(nodes: np.ndarray, y, w, lo, hi) -> tuple[np.ndarray, np.ndarray]:
    """Marginal costs of leaves' tables side by side: (m, columns) and each column's leaf slot.

    Arrays are tree-major (m, n). Leaf j gets max over trees of (hi - lo) columns; column
    k holds w (2 (lo + k - y) + 1), or +inf past its own tree's top (fixed and unobserved
    leaves have lo = hi: only +inf).
    """
    K = np.max(hi[:, nodes] - lo[:, nodes], axis=0)
    cols = int(K.sum())
    slot = np.repeat(np.arange(len(nodes)), K)
    k = np.arange(cols) - np.repeat(np.cumsum(K) - K, K)
    node = nodes[slot]
    v = lo[:, node] + k[None, :]
    marg = w[:, node] * (2.0 * (v - y[:, node]) + 1.0)
    marg[v >= hi[:, node]] = np.inf
    return marg, slot


def _dp(tree: _Tree, y, w, free, lo_b, hi_b) -> np.ndarray:
    """`tree_dp` on a batch of trees: bottom-up tables, top-down argmins.

    Works tree-major: every array is (m, ...), one row per tree, so that each tree's
    tables are contiguous for the sorts (the children's marginals are sorted runs, which
    the stable sort merges). A node is *capped* in a tree when its value can grow at no
    cost (an unobserved leaf, or an unobserved node above one): its table then holds
    its negative marginals only, and zeros are understood after them.
    """
    y, w, free, lo_b, hi_b = (np.ascontiguousarray(a.T) for a in (y, w, free, lo_b, hi_b))
    m, n = y.shape
    leaf = tree.n_children == 0
    obs = free & (w > 0)
    capped = free & (w == 0) & leaf[None, :]  # unobserved leaves; internal nodes added below
    lo = lo_b.copy()  # the lowest value of each node's table (raised to its children's sum)
    tables: dict[int, np.ndarray] = {}
    merges: dict[int, tuple] = {}
    for d in range(len(tree.levels) - 1, -1, -1):
        for p in tree.internal(d):
            p = int(p)
            ch = tree.children(p)
            blocks, slots = [], []
            lc = np.flatnonzero(leaf[ch])
            if len(lc):
                marg, slot = _leaf_tables(ch[lc], y, w, lo_b, hi_b)
                blocks.append(marg)
                slots.append(lc[slot])
            for j in np.flatnonzero(~leaf[ch]):
                t = tables.pop(int(ch[j]))
                blocks.append(t)
                slots.append(np.full(t.shape[1], j))
            allm = np.concatenate(blocks, axis=1) if blocks else np.zeros((m, 0))
            slot_of_col = np.concatenate(slots).astype(np.int32) if slots else np.zeros(0, np.int32)
            cap_p = capped[:, ch].any(axis=1)  # an endless run of zero marginals joins the merge
            base = lo[:, ch].sum(axis=1)  # every child at its lowest value
            order = np.argsort(allm, axis=1, kind="stable")
            merged = np.take_along_axis(allm, order, 1)
            R = merged.shape[1]
            n_neg = (merged < 0).sum(axis=1)
            top = np.where(cap_p, _FAR, base + np.isfinite(merged).sum(axis=1))
            lo_p = np.maximum(lo_b[:, p], base)
            hi_p = np.minimum(hi_b[:, p], top)
            unobs = free[:, p] & (w[:, p] == 0)
            cap_out = unobs & cap_p  # passes the zeros on: keep its negative marginals only
            hi_p = np.where(cap_out, np.maximum(base + n_neg, lo_p), hi_p)
            if np.any(lo_p > hi_p):
                raise RuntimeError("tree_dp: empty table; the domain bound was violated (please report)")
            Kp = int(np.max(hi_p - lo_p)) if m else 0
            v = lo_p[:, None] + np.arange(Kp)[None, :]
            idx = v - base[:, None]
            if R:
                got = np.take_along_axis(merged, np.clip(idx, 0, R - 1), 1)
                got = np.where(idx < R, got, np.inf)
            else:
                got = np.full((m, Kp), np.inf)
            got = np.where(cap_p[:, None] & (idx >= n_neg[:, None]), 0.0, got)
            own = np.where(obs[:, p, None], w[:, p, None] * (2.0 * (v - y[:, p, None]) + 1.0), 0.0)
            tables[p] = np.where(v < hi_p[:, None], own + got, np.inf)
            lo[:, p] = lo_p
            capped[:, p] = cap_out
            keep = int(np.max(np.where(cap_p, n_neg, hi_p - base))) if m else 0
            merges[p] = (base, slot_of_col[order[:, :keep]], n_neg, cap_p)
    # Top-down: roots, then each parent's value split among its children.
    x = np.empty((m, n), np.int64)
    for rt in tree.levels[0]:
        rt = int(rt)
        if leaf[rt]:
            # argmin of w (v - y)^2 over [lo, hi]: the marginal at v is negative iff v < y - 1/2
            span = hi_b[:, rt] - lo_b[:, rt]
            best = lo_b[:, rt] + np.clip(np.ceil(y[:, rt] - 0.5 - lo_b[:, rt]), 0, span).astype(np.int64)
            best = np.where(obs[:, rt], best, lo_b[:, rt])
        else:
            best = lo[:, rt] + (tables.pop(rt) < 0).sum(axis=1)
        x[:, rt] = np.where(free[:, rt], best, lo_b[:, rt])
    rows = np.arange(m)
    for d in range(len(tree.levels)):
        for p in tree.internal(d):
            p = int(p)
            ch = tree.children(p)
            base, src, n_neg, cap_p = merges.pop(p)
            take = x[:, p] - base
            from_merge = np.where(cap_p, np.minimum(take, n_neg), take)
            taken = np.arange(src.shape[1])[None, :] < from_merge[:, None]
            flat = (rows[:, None] * len(ch) + src)[taken]
            got = np.bincount(flat, minlength=m * len(ch)).reshape(m, len(ch))
            vals = lo[:, ch] + got
            # The rest, past the negative marginals, goes to the first capped child.
            rest = take - from_merge
            caps = capped[:, ch]
            first = np.argmax(caps, axis=1)
            has = caps.any(axis=1)
            vals[rows[has], first[has]] += rest[has]
            x[:, ch] = vals
    return x.T


# ---------------------------------------------------------------------------------------
# Baseline, rounding, cells, checks


def relax_then_round(parents, noisy, variances=None, *, root_total=None, fixed=None,
                     nonnegative: bool = True) -> np.ndarray:
    """The seed paper's baseline: solve the relaxation, then round each node on its own.

    The relaxation is `least_squares` with the same constraints (non-negativity included),
    which is consistent; rounding every node to the nearest integer (halves to even)
    keeps it non-negative and integral but breaks additivity wherever the children's
    rounding errors do not cancel (`violations` counts them).
    """
    x = least_squares(parents, noisy, variances, root_total=root_total, fixed=fixed, nonnegative=nonnegative)
    return np.rint(x).astype(np.int64)


def _apportion(seg: np.ndarray, u: np.ndarray, totals: np.ndarray, nonnegative, tiebreak=None) -> np.ndarray:
    """Integers near the reals `u` whose sums per segment (`seg`, ids 0..len(totals)-1) are `totals`.

    Largest remainder: everybody gets floor(u) (at least 0 where `nonnegative`, a bool or
    a flag per entry), then the units still missing in a segment go to its entries with
    the largest fractional parts; units in excess (from clamping at 0 or rounding of u)
    are taken back from the smallest fractional parts, never below 0 where
    `nonnegative`. When sum(u) = total in a segment, every entry ends within 1 of u.
    Equal fractional parts are ordered by `tiebreak` (one uint64 per entry, e.g. random
    words of the release's stream), else by position, which favours the first entries
    of every segment when the parts are equal (an even spread over a table's cells).
    """
    n_seg = len(totals)
    tb = np.zeros(len(u), np.uint64) if tiebreak is None else np.asarray(tiebreak, np.uint64).reshape(-1)
    if len(tb) != len(u):
        raise ValueError(f"tiebreak must have one entry per value ({len(u)}), got {len(tb)}")
    nn = np.broadcast_to(np.asarray(nonnegative, bool), u.shape)
    fl = np.floor(u)
    fl = np.where(nn, np.maximum(fl, 0.0), fl).astype(np.int64)
    frac = u - fl
    cnt = np.bincount(seg, minlength=n_seg)
    rem = totals - np.bincount(seg, weights=fl, minlength=n_seg).astype(np.int64)
    if np.any((cnt == 0) & (rem != 0)):
        raise ValueError("a total cannot be apportioned: it has no free entries to take it")
    cnt1 = np.maximum(cnt, 1)
    q = np.floor_divide(np.maximum(rem, 0), cnt1)  # whole units for everybody (only if u was far off)
    extra = np.maximum(rem, 0) - q * cnt1
    order = np.lexsort((~tb, -frac, seg))
    first = np.concatenate([[0], np.cumsum(cnt)])[:-1]
    rank = np.empty(len(u), np.int64)
    rank[order] = np.arange(len(u)) - first[seg[order]]
    out = fl + q[seg] + (rank < extra[seg])
    short = np.minimum(rem, 0)
    if short.any():
        # Take units back, smallest fractional parts first, among entries that can give one.
        can = (out > 0) | ~nn
        order = np.lexsort((tb, frac, ~can, seg))
        rank[order] = np.arange(len(u)) - first[seg[order]]
        if np.any(np.bincount(seg, weights=can, minlength=n_seg) < -short):
            raise ValueError("a total cannot be apportioned without negative entries")
        out -= (rank < -short[seg]) & can
    return out


def round_consistent(parents, values, *, fixed=None, nonnegative=False) -> np.ndarray:
    """Integers from consistent real values (e.g. `least_squares`), keeping additivity.

    Top-down: a root is rounded to the nearest integer (or keeps its fixed value); a
    parent's integer value, less its fixed children, is split among its free children
    in proportion to their values where all of them are non-negative (so none goes below
    0), by an equal shift of the gap otherwise, then rounded by largest remainder
    (`_apportion`). `nonnegative` is a bool or a flag per node. Every node ends within 2
    of its real value when the input is consistent.
    """
    pb = _prepare(parents, values, None, fixed, None, nonnegative, integer=True)
    tree, x, fx, nn = pb.tree, pb.y, pb.fixed, pb.nonneg
    n, m = x.shape
    x = np.where(nn, np.maximum(x, 0.0), x)
    is_fixed = ~np.isnan(fx)
    a = np.empty((n, m), np.int64)
    roots = tree.levels[0]
    r0 = np.rint(x[roots])
    a[roots] = np.where(is_fixed[roots], fx[roots], r0).astype(np.int64)
    for d in range(1, len(tree.levels)):
        nodes = tree.levels[d]
        par, starts = _segments(tree, d)
        seg_of = np.repeat(np.arange(len(par)), np.diff(np.r_[starts, len(nodes)]))
        f = is_fixed[nodes]
        a_fixed = np.where(f, fx[nodes], 0.0)
        left = a[par] - np.add.reduceat(a_fixed, starts, axis=0).astype(np.int64)  # (segments, m)
        t = np.where(f, 0.0, x[nodes])
        tsum = np.add.reduceat(t, starts, axis=0)
        n_free = np.add.reduceat((~f).astype(np.int64), starts, axis=0)
        all_nn = np.add.reduceat((nn[nodes] | f).astype(np.int64), starts, axis=0) == np.diff(
            np.r_[starts, len(nodes)])[:, None]
        with np.errstate(divide="ignore", invalid="ignore"):
            prop = np.where(tsum[seg_of] > 0, t * left[seg_of] / tsum[seg_of], left[seg_of] / n_free[seg_of])
            shift = t + (left[seg_of] - tsum[seg_of]) / n_free[seg_of]
        u = np.where(all_nn[seg_of], prop, shift)
        sel = ~f
        seg = (seg_of[:, None] * m + np.arange(m)[None, :])[sel]
        vals = np.where(f, fx[nodes], 0).astype(np.int64)
        vals[sel] = _apportion(seg, u[sel], left.reshape(-1), nn[nodes][sel])
        a[nodes] = vals
    return pb.out(a)


def distribute(cells, totals, nonnegative: bool = True, tiebreak=None) -> np.ndarray:
    """Integer cells, one table per row, adjusted to add up to `totals`.

    The cells of a SafeTab-P table have equal noise variance, so the least-squares
    adjustment spreads the gap ``total - sum(cells)`` equally over them; with
    `nonnegative` it is the projection onto {cells >= 0, sum = total} instead
    (``max(0, cell + tau)``, tau found by sorting: "water filling"). The result is
    rounded by largest remainder, so each row adds up to its total exactly. Give
    `tiebreak` (one uint64 per cell, random words) so that an even spread does not
    always round the first cells of a table up (`_apportion`).
    """
    c = np.asarray(cells, dtype=np.float64)
    T = np.asarray(totals)
    if c.ndim != 2 or T.shape != (c.shape[0],):
        raise ValueError(f"cells must be (tables, cells) and totals (tables,), got {c.shape} and {T.shape}")
    if not np.all(np.isfinite(c)):
        raise ValueError("cells must be finite")
    if np.any(T != np.round(T)):
        raise ValueError("totals must be integers")
    T = T.astype(np.int64)
    g, k = c.shape
    if g == 0:
        return np.zeros((0, k), np.int64)
    if k == 0:
        if np.any(T != 0):
            raise ValueError("a table without cells cannot add up to a non-zero total")
        return np.zeros((g, 0), np.int64)
    if nonnegative:
        if np.any(T < 0):
            raise ValueError("a total is negative, but the cells must be non-negative")
        s = -np.sort(-c, axis=1)
        j = np.arange(1, k + 1)
        tau = (T[:, None] - np.cumsum(s, axis=1)) / j
        ok = s + tau > 0
        last = k - 1 - np.argmax(ok[:, ::-1], axis=1)
        tau_star = tau[np.arange(g), last]
        u = np.where(ok.any(axis=1)[:, None], np.maximum(0.0, c + tau_star[:, None]), 0.0)
    else:
        u = c + (T - c.sum(axis=1))[:, None] / k
    seg = np.repeat(np.arange(g), k)
    return _apportion(seg, u.reshape(-1), T, nonnegative, tiebreak).reshape(g, k)


def violations(parents, values, tol: float = 0.0, released=None) -> int | np.ndarray:
    """How many internal nodes differ from the sum of their children (by more than `tol`).

    With `released` (a flag per node: published or not) only what a reader can check
    counts: a published parent whose children are all published must equal their sum;
    one with unpublished children must be at least the sum of the published ones (the
    unpublished remainder cannot be negative). One count for ``(n,)`` values, one per
    tree (column) for ``(n, m)``.
    """
    tree = _tree(parents)
    v = np.asarray(values, dtype=np.float64)
    squeeze = v.ndim == 1
    if squeeze:
        v = v[:, None]
    if v.shape[0] != tree.n:
        raise ValueError(f"values must have {tree.n} rows to match parents, got {v.shape}")
    rel = None
    if released is not None:
        rel = np.broadcast_to(np.asarray(released, bool).reshape(tree.n, -1), v.shape)
    bad = np.zeros(v.shape[1], np.int64)
    for d in range(1, len(tree.levels)):
        par, starts = _segments(tree, d)
        kids = tree.levels[d]
        if rel is None:
            sums = np.add.reduceat(v[kids], starts, axis=0)
            bad += (np.abs(v[par] - sums) > tol).sum(axis=0)
            continue
        sums = np.add.reduceat(np.where(rel[kids], v[kids], 0.0), starts, axis=0)
        size = np.diff(np.r_[starts, len(kids)])[:, None]
        all_out = np.add.reduceat(rel[kids].astype(np.int64), starts, axis=0) == size
        off = np.where(all_out, np.abs(v[par] - sums) > tol, v[par] < sums - tol)
        bad += (rel[par] & off).sum(axis=0)
    return int(bad[0]) if squeeze else bad


# ---------------------------------------------------------------------------------------
# Group sizes: the seed paper's own problem (PGSR)

#: Group-size vectors' post-processing methods: the paper's exact mechanisms and the
#: relaxed-and-rounded baselines it compares them with (its Table 7).
GROUP_SIZE_METHODS = ("dp", "relax-then-round")
#: Largest hierarchy (nodes x sizes) `release_group_sizes` takes.
MAX_GROUP_SIZE_CELLS = 2_000_000
#: Largest exact cumulative program (interpolation segments) one solve may build.
_SEGMENT_BUDGET = 20_000_000


def group_size_vector(group_sizes, max_size: int, regions=None, n_regions: int | None = None) -> np.ndarray:
    """How many groups have each size: entry k - 1 counts the groups of size k.

    The seed paper's group-size vector (Fioretto, Van Hentenryck, Zhu, Section 2,
    Example 2): `group_sizes` holds one size per group (e.g. persons per household,
    whole numbers >= 1); sizes above `max_size` count in the last entry (as the 2010
    Census's "7 or more"). With `regions` (one region index per group, 0..n_regions - 1),
    one row per region: shape (n_regions, max_size). The paper's running example:
    households of sizes 3, 1, 1 in Georgia and 3, 1, 2 in New York give (2, 0, 1) and
    (1, 1, 1), and (3, 1, 2) for the United States (their sum).
    """
    if isinstance(max_size, bool) or not isinstance(max_size, (int, np.integer)) or max_size < 1:
        raise ValueError(f"max_size must be a whole number >= 1 (got {max_size!r})")
    s = np.asarray(group_sizes)
    if s.ndim != 1:
        raise ValueError(f"group_sizes must be a 1-D array (one size per group), got shape {s.shape}")
    if s.size and not (np.issubdtype(s.dtype, np.integer) or np.all(np.isfinite(s) & (s == np.round(s)))):
        raise ValueError("group sizes must be whole numbers")
    s = s.astype(np.int64)
    if s.size and s.min() < 1:
        raise ValueError(f"a group has at least one member (got a size of {int(s.min())})")
    k = np.minimum(s, max_size) - 1
    if regions is None:
        return np.bincount(k, minlength=max_size).astype(np.int64)
    r = np.asarray(regions)
    if r.shape != s.shape or not np.issubdtype(r.dtype, np.integer):
        raise ValueError("regions must hold one whole-number region index per group")
    m = int(n_regions) if n_regions is not None else (int(r.max()) + 1 if r.size else 0)
    if r.size and (r.min() < 0 or r.max() >= m):
        raise ValueError(f"region indices must lie in 0..{m - 1}")
    return np.bincount(r.astype(np.int64) * max_size + k, minlength=m * max_size).reshape(m, max_size).astype(np.int64)


@dataclass(frozen=True)
class GroupSizeRelease:
    """What `release_group_sizes` returns (a study, not a release: see its docstring).

    `counts` (nodes, sizes): the released group-size vectors, non-negative integers;
    `noisy` the noisy answers the post-processing read (group sizes, or cumulative
    counts with `cumulative`); `alpha` the geometric noise's parameter (the same on every
    level); `total` the public number of groups n.
    """

    counts: np.ndarray
    noisy: np.ndarray
    cumulative: bool
    method: str
    epsilon: float
    epsilon_per_level: float
    levels: int
    sensitivity: int
    alpha: float
    total: int


def _group_tree(parents, vectors) -> tuple[_Tree, np.ndarray]:
    """The tree (one root) and the true vectors of every node (leaves given, parents summed)."""
    tree = _tree(parents)
    if len(tree.levels[0]) != 1:
        raise ValueError(f"a group-size hierarchy has one root (the region whose groups are all n), "
                         f"got {len(tree.levels[0])}")
    v = np.asarray(vectors)
    if v.ndim != 2 or v.shape[0] != tree.n or v.shape[1] < 1:
        raise ValueError(f"vectors must be (nodes, sizes) = ({tree.n}, K) with K >= 1, got shape {v.shape}")
    if v.size > MAX_GROUP_SIZE_CELLS:
        raise ValueError(f"the hierarchy has {v.size:,} (node, size) cells; at most {MAX_GROUP_SIZE_CELLS:,}")
    if not (np.issubdtype(v.dtype, np.integer) or np.all(np.isfinite(v) & (v == np.round(v)))):
        raise ValueError("group-size vectors must hold whole numbers")
    v = v.astype(np.int64)
    if (v < 0).any():
        raise ValueError("group-size vectors cannot be negative")
    full = np.where((tree.n_children == 0)[:, None], v, 0)
    for d in range(len(tree.levels) - 1, 0, -1):
        par, starts = _segments(tree, d)
        full[par] = np.add.reduceat(full[tree.levels[d]], starts, axis=0)
    inner = tree.n_children > 0
    given = v[inner]
    if ((given != 0) & (given != full[inner])).any():
        p = int(np.flatnonzero(inner)[np.flatnonzero(((given != 0) & (given != full[inner])).any(axis=1))[0]])
        raise ValueError(f"row {p} is not the sum of its children's group sizes (give leaf rows, and internal "
                         "rows as their sums or zeros)")
    return tree, full


def release_group_sizes(parents, vectors, epsilon: float, *, cumulative: bool = False, rng=None,
                        method: str = "dp") -> GroupSizeRelease:
    """The seed paper's privacy-preserving group size release (PGSR), as a STUDY.

    Fioretto, Van Hentenryck and Zhu, Sections 4 to 9 (Lemma 4, Theorem 1, Model 1,
    Lemma 6, Model 2). `parents` is the region tree (one root), `vectors` its group-size
    vectors (`group_size_vector`; leaf rows are read, internal rows are their sums or
    zeros). The public total n is the root's number of groups.

    1. **Noise** (Section 5 / 8): each level of the tree (L levels) spends epsilon / L
       (the levels partition the groups: parallel composition within a level,
       sequential across, as Theorem 1 needs; the text we have lost eq. (3)'s parameter),
       and every entry of every node's vector gets
       independent two-sided geometric noise, P(X = x) proportional to alpha^|x|, alpha
       = exp(-(epsilon / L) / Delta), with the paper's sensitivities: Delta = 2 for
       group sizes (Lemma 4: a person joining a group of size k moves it to size k + 1)
       and Delta = 1 for cumulative counts c_k = number of groups of size <= k
       (Lemma 6; with `cumulative`, the noise is added to those). The noise comes from
       `rng` (a numpy Generator; a fresh one if None): **this is a study, not a
       release** - a release needs an exact sampler from a secure source, as
       `engine.noise` has for SafeTab-P.
    2. **Post-processing** (`fit_group_sizes`): `method="dp"` (default) the paper's
       exact mechanisms, non-negative integers, every parent row the sum of its
       children's and faithful (every level's number of groups adds up to n);
       `method="relax-then-round"` the baselines of the paper's Table 7.

    A huge epsilon (alpha = 0) adds no noise and returns the truth.
    """
    if method not in GROUP_SIZE_METHODS:
        raise ValueError(f"method must be one of {', '.join(GROUP_SIZE_METHODS)} (got {method!r})")
    eps = float(epsilon)
    if not (np.isfinite(eps) and eps > 0):
        raise ValueError(f"epsilon must be a finite number > 0 (got {epsilon!r})")
    tree, truth = _group_tree(parents, vectors)
    L = len(tree.levels)
    delta = 1 if cumulative else 2
    eps_l = eps / L
    alpha = float(np.exp(-eps_l / delta))
    if not alpha < 1.0:
        raise ValueError(f"epsilon = {epsilon!r} is too small: the noise would have no bound")
    gen = np.random.default_rng() if rng is None else rng
    if not isinstance(gen, np.random.Generator):
        raise ValueError("rng must be a numpy Generator (numpy.random.default_rng(seed))")
    query = np.cumsum(truth, axis=1) if cumulative else truth
    p = 1.0 - alpha
    noise = gen.geometric(p, size=query.shape) - gen.geometric(p, size=query.shape)  # two-sided geometric
    noisy = query + noise
    n = int(truth[tree.levels[0][0]].sum())
    counts = fit_group_sizes(parents, noisy, n, cumulative=cumulative, method=method)
    return GroupSizeRelease(counts=counts, noisy=noisy, cumulative=bool(cumulative), method=method, epsilon=eps,
                            epsilon_per_level=eps_l, levels=L, sensitivity=delta, alpha=alpha, total=n)


def fit_group_sizes(parents, noisy, total: int, *, cumulative: bool = False, method: str = "dp") -> np.ndarray:
    """Group-size vectors from noisy answers, by the seed paper's post-processing.

    `noisy` (nodes, K): noisy group sizes, or noisy cumulative counts with `cumulative`;
    `total` the public number of groups n. Returns (nodes, K) integers.

    * plain, ``method="dp"``: Model 1 solved exactly by the paper's dynamic program
      (Sections 6-7): the hierarchy H_DP, a root holding n (faithfulness) whose children
      are the region tree once per group size, solved by `tree_dp` with the root fixed
      at n: the non-negative integers closest to the noisy sizes in squared distance,
      every parent the sum of its children.
    * cumulative, ``method="dp"``: Model 2 (Section 9, C1-C5) solved exactly: the
      non-negative, non-decreasing, consistent integer cumulative counts closest to the
      noisy ones in squared distance, the root's last one n; the sizes are their
      differences. The squared distance is replaced by its linear interpolation between
      whole numbers (equal at whole numbers, convex) in a window around the real-valued
      optimum, and the linear program's solution is accepted only if it is integral and
      no window edge binds it (then it is optimal over all integers: a convex function
      minimised over a convex set where no window bound is active); otherwise the window
      grows, and a solution that is not integral is solved again as an integer program
      over the whole range 0..n. This is not the paper's chain DP of Section 9.2, which
      post-processes cumulative counts taken along each level of H_DP (see
      docs/consistency.md); it solves the same Model 2 exactly.
    * ``method="relax-then-round"`` (the paper's relaxed baselines, Section 11): the
      real-valued optimum of the same model, rounded count by count (cumulative counts
      first, then differenced); it can break consistency and faithfulness (`violations`).
    """
    if method not in GROUP_SIZE_METHODS:
        raise ValueError(f"method must be one of {', '.join(GROUP_SIZE_METHODS)} (got {method!r})")
    tree = _tree(parents)
    if len(tree.levels[0]) != 1:
        raise ValueError("a group-size hierarchy has one root")
    y = np.asarray(noisy, dtype=np.float64)
    if y.ndim != 2 or y.shape[0] != tree.n or y.shape[1] < 1:
        raise ValueError(f"noisy must be (nodes, sizes) = ({tree.n}, K), got shape {np.shape(noisy)}")
    if not np.all(np.isfinite(y)):
        raise ValueError("noisy values must be finite")
    if y.size > MAX_GROUP_SIZE_CELLS:
        raise ValueError(f"the hierarchy has {y.size:,} (node, size) cells; at most {MAX_GROUP_SIZE_CELLS:,}")
    if isinstance(total, bool) or int(total) != total or total < 0:
        raise ValueError(f"the number of groups n must be a whole number >= 0 (got {total!r})")
    n = int(total)
    if cumulative:
        return _fit_cumulative(tree, y, n, exact=method == "dp")
    par, y_dp, fixed = _dp_hierarchy(tree, y, n)
    if method == "dp":
        x = tree_dp(par, y_dp, fixed=fixed, nonnegative=True)
    else:
        x = relax_then_round(par, y_dp, fixed=fixed, nonnegative=True)
    return np.asarray(x[1:], np.int64).reshape(y.shape[1], tree.n).T


def _dp_hierarchy(tree: _Tree, y: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The paper's H_DP (Section 6): node 0 holds the total n; node 1 + k N + r is region
    r's count of groups of size k + 1, its parent the same size in r's parent region
    (the size-k copy of the root hangs from node 0)."""
    N, K = y.shape
    base = 1 + np.arange(K)[:, None] * N
    p = tree.parents[None, :]
    par = np.concatenate([[-1], np.where(p >= 0, base + p, 0).reshape(-1)])
    y_dp = np.concatenate([[float(n)], y.T.reshape(-1)])
    fixed = np.full(len(par), np.nan)
    fixed[0] = n
    return par, y_dp, fixed


def _cumulative_system(tree: _Tree, K: int):
    """Rows of Model 2 on cumulative counts y[r, k] (column r K + k): every parent the sum
    of its children (C4) and y[r, k] <= y[r, k + 1] (C3)."""
    N = tree.n
    idx = np.arange(N * K).reshape(N, K)
    rows, cols, vals = [], [], []
    r = 0
    child = np.flatnonzero(tree.parents >= 0)
    inner = np.flatnonzero(tree.n_children > 0)
    row_of = np.full(N, -1, np.int64)
    row_of[inner] = np.arange(len(inner))
    for k in range(K):  # consistency: y[p, k] - sum y[c, k] = 0
        rows += [r + row_of[inner], r + row_of[tree.parents[child]]]
        cols += [idx[inner, k], idx[child, k]]
        vals += [np.ones(len(inner)), -np.ones(len(child))]
        r += len(inner)
    n_eq = r
    if K > 1:  # monotone: y[r, k] - y[r, k + 1] <= 0
        m = np.arange(N * (K - 1))
        rr = r + m
        a = idx[:, :-1].reshape(-1)
        b = idx[:, 1:].reshape(-1)
        rows += [rr, rr]
        cols += [a, b]
        vals += [np.ones(len(m)), -np.ones(len(m))]
        r += len(m)
    A = sp.csc_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(r, N * K))
    lo = np.concatenate([np.zeros(n_eq), np.full(r - n_eq, -np.inf)])
    hi = np.zeros(r)
    return A, lo, hi


def _fit_cumulative(tree: _Tree, y: np.ndarray, n: int, exact: bool, force_integer: bool = False) -> np.ndarray:
    """Model 2: relaxed (QP) then, if `exact`, the integer optimum (see `fit_group_sizes`)."""
    N, K = y.shape
    A, row_lo, row_hi = _cumulative_system(tree, K)
    root = int(tree.levels[0][0])
    col_lo = np.zeros(N * K)
    col_hi = np.full(N * K, float(n))
    col_lo[root * K + K - 1] = col_hi[root * K + K - 1] = n  # C2: faithful to the public total
    target = y.reshape(-1)
    x = _relaxed_cumulative(A, row_lo, col_lo, col_hi, target)
    relaxed = x
    if not exact:
        c = np.rint(relaxed).reshape(N, K).astype(np.int64)
        return np.diff(c, axis=1, prepend=0)
    radius = 4.0
    while True:
        lo = np.maximum(col_lo, np.floor(relaxed - radius))
        hi = np.minimum(col_hi, np.ceil(relaxed + radius))
        whole = bool(np.all((lo == col_lo) & (hi == col_hi)))
        if force_integer and not whole:
            radius = float(n) + 1.0
            continue
        widths = (hi - lo).astype(np.int64)
        if int(widths.sum()) > _SEGMENT_BUDGET:
            raise ValueError(f"the exact cumulative program would need {int(widths.sum()):,} interpolation segments "
                             f"(limit {_SEGMENT_BUDGET:,}); use a larger epsilon or a smaller hierarchy")
        z, ok = _interpolated_solve(A, row_lo, row_hi, lo, hi, widths, target, integer=force_integer)
        if z is None:
            raise ValueError("the exact cumulative program did not solve")
        integral = bool(np.all(np.abs(z - np.rint(z)) <= 1e-6))
        if not integral and not force_integer:
            # Never seen in the tests; an integer program over the whole range is exact.
            force_integer = True
            continue
        zi = np.rint(z)
        edge = ((zi <= lo) & (lo > col_lo)) | ((zi >= hi) & (hi < col_hi))
        if ok and not edge.any():
            c = zi.reshape(N, K).astype(np.int64)
            return np.diff(c, axis=1, prepend=0)
        if whole:
            raise ValueError("the exact cumulative program did not finish")
        radius *= 4.0


def _relaxed_cumulative(A, row_lo, col_lo, col_hi, target) -> np.ndarray:
    """The real-valued optimum of Model 2 (min |y - target|^2 over the rows, equalities
    where row_lo = 0 and y_a - y_b <= 0 elsewhere, col_lo <= y <= col_hi), by Clarabel's
    interior-point method (HiGHS's active-set QP is far too slow for thousands of counts)."""
    import clarabel

    m = len(target)
    eq = row_lo == 0
    A = sp.csr_matrix(A)
    fixed = col_lo == col_hi
    blocks = [A[eq], sp.csr_matrix((np.ones(fixed.sum()), (np.arange(fixed.sum()), np.flatnonzero(fixed))),
                                   shape=(int(fixed.sum()), m)),
              A[~eq], -sp.identity(m, format="csr"), sp.identity(m, format="csr")]
    b = np.concatenate([np.zeros(int(eq.sum())), col_lo[fixed], np.zeros(int((~eq).sum())), -col_lo, col_hi])
    n_zero = int(eq.sum() + fixed.sum())
    M = sp.vstack(blocks, format="csc")
    settings = clarabel.DefaultSettings()
    settings.verbose = False
    settings.time_limit = 600.0
    solver = clarabel.DefaultSolver(sp.identity(m, format="csc") * 2.0, -2.0 * target, M, b,
                                    [clarabel.ZeroConeT(n_zero), clarabel.NonnegativeConeT(M.shape[0] - n_zero)],
                                    settings)
    sol = solver.solve()
    if str(sol.status) not in ("Solved", "AlmostSolved"):
        raise ValueError(f"the relaxed cumulative program did not solve ({sol.status})")
    return np.clip(np.asarray(sol.x), col_lo, col_hi)


def _interpolated_solve(A, row_lo, row_hi, lo, hi, widths, target, integer: bool):
    """min sum_i phi_i(y_i) over the rows and lo <= y <= hi, phi_i the interpolation of
    (y - target_i)^2 between whole numbers: y_i = lo_i + the sum of its unit segments,
    segment j costing phi_i(lo_i + j + 1) - phi_i(lo_i + j) (increasing in j, so they
    fill in order). Returns (y, finished)."""
    m = len(lo)
    n_seg = int(widths.sum())
    owner = np.repeat(np.arange(m), widths)
    j = np.arange(n_seg) - np.repeat(np.cumsum(widths) - widths, widths)
    v = lo[owner] + j
    seg_cost = 2.0 * (v - target[owner]) + 1.0
    # Columns: y (m), then the segments; rows: the model's, then y_i - sum segments = lo_i.
    link = sp.hstack([sp.identity(m, format="csc"),
                      sp.csc_matrix((-np.ones(n_seg), (owner, np.arange(n_seg))), shape=(m, n_seg))])
    M = sp.vstack([sp.hstack([A, sp.csc_matrix((A.shape[0], n_seg))]), link], format="csc")
    cost = np.concatenate([np.zeros(m), seg_cost])
    r_lo = np.concatenate([row_lo, lo])
    r_hi = np.concatenate([row_hi, lo])
    c_lo = np.concatenate([lo, np.zeros(n_seg)])
    c_hi = np.concatenate([hi, np.ones(n_seg)])
    integ = np.concatenate([np.ones(m, bool), np.zeros(n_seg, bool)]) if integer else None
    status, x = _highs.solve(cost, M, r_lo, r_hi, c_lo, c_hi, integer=integ, time_limit=600.0)
    if status != "optimal":
        return None, False
    return x[:m], True
