"""Hierarchical consistency (methods.consistency): brute force, closed forms, invariants."""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import lsq_linear, minimize

from methods.consistency import (
    distribute,
    least_squares,
    relax_then_round,
    round_consistent,
    tree_dp,
    violations,
)

# ------------------------------------------------------------------ helpers


def _leaf_matrix(parents: list[int]) -> tuple[np.ndarray, list[int]]:
    """M (nodes x leaves): node value = sum of the leaves below it."""
    n = len(parents)
    leaves = [i for i in range(n) if i not in parents]
    M = np.zeros((n, len(leaves)))
    for j, leaf in enumerate(leaves):
        i = leaf
        while i != -1:
            M[i, j] = 1
            i = parents[i]
    return M, leaves


def _cost(x, y, var=None):
    var = np.ones(len(y)) if var is None else np.asarray(var, float)
    return float(np.sum((np.asarray(x, float) - np.asarray(y, float)) ** 2 / var))


def _brute_force(parents, y, var=None, nonnegative=True, fixed=None, lo=-25, hi=35):
    """Cheapest integer consistent vector: every leaf assignment in [lo, hi]^leaves."""
    M, leaves = _leaf_matrix(parents)
    rng = range(max(lo, 0) if nonnegative else lo, hi + 1)
    grid = np.array(list(itertools.product(rng, repeat=len(leaves))), dtype=float)
    X = grid @ M.T  # (candidates, nodes)
    ok = np.ones(len(X), bool)
    if fixed is not None:
        for i, f in enumerate(fixed):
            if not np.isnan(f):
                ok &= X[:, i] == f
    var = np.ones(len(y)) if var is None else np.asarray(var, float)
    costs = np.where(ok, ((X - np.asarray(y, float)) ** 2 / var).sum(axis=1), np.inf)
    best = int(np.argmin(costs))
    # The optimum must not sit on the edge of the enumerated box (else widen it).
    edge = (grid[best] == hi) | ((grid[best] == lo) & (not nonnegative or lo > 0))
    assert not edge.any(), "brute-force box too small"
    return X[best], costs[best]


def _random_tree(rng, n_nodes: int, max_leaves: int) -> list[int]:
    while True:
        parents = [-1] + [int(rng.integers(0, i)) for i in range(1, n_nodes)]
        leaves = sum(1 for i in range(n_nodes) if i not in parents)
        if leaves <= max_leaves:
            return parents


# ------------------------------------------------------------------ tree_dp vs brute force


@pytest.mark.parametrize("seed", range(40))
def test_tree_dp_matches_brute_force_on_small_random_trees(seed):
    rng = np.random.default_rng(seed)
    parents = _random_tree(rng, int(rng.integers(2, 7)), 3)
    n = len(parents)
    y = rng.integers(-6, 15, n)
    var = rng.choice([0.5, 1.0, 2.0, 5.0], n) if seed % 2 else None
    nonneg = seed % 4 != 3
    x = tree_dp(parents, y, nonnegative=nonneg, variances=var)
    _best, best_cost = _brute_force(parents, y, var, nonnegative=nonneg)
    assert x.dtype == np.int64
    assert violations(parents, x) == 0
    assert not nonneg or (x >= 0).all()
    assert _cost(x, y, var) == pytest.approx(best_cost, abs=1e-9)


@pytest.mark.parametrize("seed", range(12))
def test_tree_dp_with_root_total_and_fixed_nodes_matches_brute_force(seed):
    rng = np.random.default_rng(100 + seed)
    parents = _random_tree(rng, int(rng.integers(3, 7)), 3)
    n = len(parents)
    y = rng.integers(-4, 15, n)
    root_total = int(rng.integers(0, 30))
    fixed = np.full(n, np.nan)
    internal = [i for i in range(1, n) if i in parents]
    if internal and seed % 2:
        fixed[internal[0]] = int(rng.integers(0, root_total + 1))  # may be infeasible: then both must say so
    all_fixed = fixed.copy()
    all_fixed[0] = root_total
    try:
        _best, best_cost = _brute_force(parents, y, nonnegative=True, fixed=all_fixed)
    except AssertionError:
        pytest.skip("box too small for this draw")
    if not np.isfinite(best_cost):
        with pytest.raises(ValueError, match="fixed values cannot be met"):
            tree_dp(parents, y, root_total=root_total, fixed=fixed)
        return
    x = tree_dp(parents, y, root_total=root_total, fixed=fixed)
    assert x[0] == root_total and violations(parents, x) == 0 and (x >= 0).all()
    assert all(x[i] == fixed[i] for i in range(n) if not np.isnan(fixed[i]))
    assert _cost(x, y) == pytest.approx(best_cost)


def test_tree_dp_finds_optima_far_from_the_noisy_values():
    # Root says 0, six children say 50: the optimum moves every node a long way
    # (children about 7, root about 43), far outside any fixed band around the noise.
    parents = [-1] + [0] * 6
    y = np.array([0] + [50] * 6)
    x = tree_dp(parents, y)
    _best, best_cost = _brute_force(parents[:4], y[:4], lo=0, hi=60)  # 3 children: brute-forceable
    assert _cost(tree_dp(parents[:4], y[:4]), y[:4]) == pytest.approx(best_cost)
    # 6 children: the real optimum is a root of 300/7 (about 42.9) and children of 50/7
    # (about 7.1); the integer optimum is the best consistent split of a nearby root.
    real = least_squares(parents, y)
    assert real[0] == pytest.approx(300 / 7)
    assert violations(parents, x) == 0 and x.max() - x[1:].min() > 30
    for root in range(36, 50):
        base, extra = divmod(root, 6)
        cand = np.array([root] + [base + (j < extra) for j in range(6)])
        assert _cost(x, y) <= _cost(cand, y) + 1e-9


def test_tree_dp_single_nodes_and_forests():
    # A forest of a 3-node tree and two isolated roots.
    parents = [-1, 0, 0, -1, -1]
    y = np.array([10, 3, 4, -5, 7])
    x = tree_dp(parents, y)
    assert x[3] == 0 and x[4] == 7  # isolated: clamped / kept
    assert violations(parents, x) == 0
    _sub, cost = _brute_force([-1, 0, 0], y[:3])
    assert _cost(x[:3], y[:3]) == pytest.approx(cost)
    # one root total per root
    x = tree_dp(parents, y, root_total=[9, 2, 0])
    assert list(x[[0, 3, 4]]) == [9, 2, 0] and x[1] + x[2] == 9


def test_tree_dp_batches_equal_columnwise_runs():
    rng = np.random.default_rng(7)
    parents = _random_tree(rng, 25, 30)
    Y = rng.integers(-5, 40, (25, 9))
    V = rng.choice([1.0, 3.0, 30.0], (25, 9))
    X = tree_dp(parents, Y, variances=V)
    for j in range(9):
        assert np.array_equal(X[:, j], tree_dp(parents, Y[:, j], variances=V[:, j]))


# ------------------------------------------------------------------ least squares


def _dense_ls(parents, y, var):
    M, _ = _leaf_matrix(parents)
    w = 1 / np.sqrt(var)
    leaves, *_ = np.linalg.lstsq(M * w[:, None], y * w, rcond=None)
    return M @ leaves


@pytest.mark.parametrize("seed", range(15))
def test_least_squares_equals_the_dense_weighted_solution(seed):
    rng = np.random.default_rng(200 + seed)
    parents = _random_tree(rng, int(rng.integers(2, 30)), 30)
    n = len(parents)
    y = rng.normal(10, 8, n)
    var = rng.uniform(0.2, 20, n)
    x = least_squares(parents, y, var)
    assert np.allclose(x, _dense_ls(parents, y, var), atol=1e-8)
    assert violations(parents, x, tol=1e-8) == 0


@pytest.mark.parametrize("seed", range(15))
def test_nonnegative_least_squares_equals_a_bounded_solver(seed):
    rng = np.random.default_rng(300 + seed)
    parents = _random_tree(rng, int(rng.integers(2, 25)), 25)
    n = len(parents)
    y = rng.normal(2, 8, n)  # many negative values: the bound is active
    var = rng.uniform(0.5, 10, n)
    x = least_squares(parents, y, var, nonnegative=True)
    M, _ = _leaf_matrix(parents)
    w = 1 / np.sqrt(var)
    ref = lsq_linear(M * w[:, None], y * w, bounds=(0, np.inf), method="bvls", tol=1e-14)
    assert (x >= 0).all() and violations(parents, x, tol=1e-8) == 0
    assert np.allclose(x, M @ ref.x, atol=1e-6)


@pytest.mark.parametrize("nonnegative", [False, True])
def test_least_squares_with_fixed_nodes_equals_a_constrained_solver(nonnegative):
    rng = np.random.default_rng(11)
    parents = [-1, 0, 0, 1, 1, 1, 2, 2, 6, 6]
    n = len(parents)
    y = rng.normal(5, 6, n)
    var = rng.uniform(0.5, 5, n)
    fixed = np.full(n, np.nan)
    fixed[1] = 12.0
    fixed[7] = 0.0
    x = least_squares(parents, y, var, root_total=30.0, fixed=fixed, nonnegative=nonnegative)
    M, leaves = _leaf_matrix(parents)
    cons = [{"type": "eq", "fun": lambda l, i=i, v=v: M[i] @ l - v} for i, v in ((0, 30.0), (1, 12.0), (7, 0.0))]
    res = minimize(lambda l: np.sum((M @ l - y) ** 2 / var), np.full(len(leaves), 3.0), method="SLSQP",
                   constraints=cons, bounds=[(0, None) if nonnegative else (None, None)] * len(leaves),
                   options={"ftol": 1e-14, "maxiter": 500})
    assert res.success
    assert np.allclose(x, M @ res.x, atol=1e-5)
    assert x[0] == pytest.approx(30) and x[1] == pytest.approx(12) and x[7] == pytest.approx(0)


def _complete_tree(k: int, height: int) -> list[int]:
    parents = [-1]
    frontier = [0]
    for _ in range(height - 1):
        nxt = []
        for p in frontier:
            for _c in range(k):
                parents.append(p)
                nxt.append(len(parents) - 1)
        frontier = nxt
    return parents


def _hay_closed_form(parents: list[int], y: list[Fraction], k: int) -> list[Fraction]:
    """Hay et al. (2010), Theorem 3: the boosted estimate on a complete k-ary tree.

    z_v = y_v at leaves; at height l: z_v = (k^l - k^(l-1)) / (k^l - 1) y_v
    + (k^(l-1) - 1) / (k^l - 1) sum_children z; then x_root = z_root and
    x_v = z_v + (x_parent - sum over the parent's children of z) / k.
    """
    n = len(parents)
    children = {i: [j for j in range(n) if parents[j] == i] for i in range(n)}
    height = {}

    def h(v):
        if v not in height:
            height[v] = 1 if not children[v] else 1 + h(children[v][0])
        return height[v]

    z = {}
    for v in sorted(range(n), key=h):
        l = h(v)
        if l == 1:
            z[v] = y[v]
        else:
            a = Fraction(k**l - k ** (l - 1), k**l - 1)
            b = Fraction(k ** (l - 1) - 1, k**l - 1)
            z[v] = a * y[v] + b * sum(z[c] for c in children[v])
    x = {0: z[0]}
    for v in range(1, n):  # parents come before children in this numbering
        p = parents[v]
        x[v] = z[v] + (x[p] - sum(z[c] for c in children[p])) / k
    return [x[v] for v in range(n)]


@pytest.mark.parametrize("k,height", [(2, 3), (3, 3), (4, 2), (2, 4)])
def test_least_squares_and_tree_dp_match_hay_closed_form_on_complete_trees(k, height):
    parents = _complete_tree(k, height)
    rng = np.random.default_rng(k * 10 + height)
    y = [Fraction(int(v)) for v in rng.integers(0, 60, len(parents))]
    exact = _hay_closed_form(parents, y, k)
    assert np.allclose(least_squares(parents, [float(v) for v in y]), [float(v) for v in exact], atol=1e-9)
    # Scale the data so that the closed form is integral: then it is also the integer optimum.
    D = int(np.lcm.reduce([v.denominator for v in exact]))
    y_int = np.array([int(v * D) for v in y])
    target = np.array([int(v * D) for v in exact])
    assert np.array_equal(tree_dp(parents, y_int, nonnegative=False), target)
    if (target >= 0).all():
        assert np.array_equal(tree_dp(parents, y_int), target)


# ------------------------------------------------------------------ relax-then-round, rounding, cells


def test_relax_then_round_is_integral_and_can_break_additivity():
    parents = [-1, 0, 0, 0]
    y = np.array([10, 3, 3, 3])  # relaxed: children 3.25 each, root 9.75
    x = relax_then_round(parents, y)
    assert list(x) == [10, 3, 3, 3]
    assert violations(parents, x) == 1
    assert violations(parents, tree_dp(parents, y)) == 0


def test_round_consistent_keeps_additivity_and_stays_close():
    rng = np.random.default_rng(3)
    parents = _random_tree(rng, 40, 40)
    y = rng.normal(20, 15, (40, 5))
    for nonneg in (False, True):
        real = least_squares(parents, y, nonnegative=nonneg)
        a = round_consistent(parents, real, nonnegative=nonneg)
        assert (violations(parents, a) == 0).all()
        assert np.abs(a - real).max() < 2
        assert not nonneg or (a >= 0).all()


def test_distribute_adds_up_and_follows_the_least_squares_split():
    cells = np.array([[5, -2, 3, 0], [10, 10, 10, 10], [0, 0, 0, 1], [1, 2, 3, 4]])
    totals = np.array([10, 36, 0, 10])
    out = distribute(cells, totals)
    assert (out.sum(axis=1) == totals).all() and (out >= 0).all()
    assert list(out[1]) == [9, 9, 9, 9] and list(out[2]) == [0, 0, 0, 0] and list(out[3]) == [1, 2, 3, 4]
    # water filling: (5, -2, 3, 0) -> tau = 2/3 on the three cells that stay positive
    assert np.abs(out[0] - np.array([5 + 2 / 3, 0, 3 + 2 / 3, 2 / 3])).max() < 1
    free = distribute(cells, totals - 50, nonnegative=False)
    assert (free.sum(axis=1) == totals - 50).all()
    with pytest.raises(ValueError, match="negative"):
        distribute(cells, -totals - 1)


@settings(derandomize=True, max_examples=60, deadline=None)
@given(st.integers(1, 4), st.lists(st.integers(-20, 60), min_size=1, max_size=46), st.integers(0, 300))
def test_distribute_properties(rows, cells, total):
    c = np.tile(np.array(cells), (rows, 1))
    out = distribute(c, np.full(rows, total))
    assert (out.sum(axis=1) == total).all() and (out >= 0).all() and out.dtype == np.int64


# ------------------------------------------------------------------ invariants (hypothesis)


@st.composite
def _problems(draw):
    n = draw(st.integers(1, 40))
    parents = [-1] + [draw(st.integers(0, i - 1)) for i in range(1, n)]
    if n > 3 and draw(st.booleans()):
        parents[draw(st.integers(1, n - 1))] = -1  # a forest
    y = draw(st.lists(st.integers(-30, 200), min_size=n, max_size=n))
    var = draw(st.one_of(st.none(), st.lists(st.sampled_from([0.5, 2.0, 31.4, 1446.0, np.inf]), min_size=n,
                                             max_size=n)))
    nonneg = draw(st.booleans())
    return parents, np.array(y), var, nonneg


@settings(derandomize=True, max_examples=120, deadline=None)
@given(_problems())
def test_tree_dp_invariants_and_bounds(problem):
    parents, y, var, nonneg = problem
    x = tree_dp(parents, y, nonnegative=nonneg, variances=var)
    assert x.dtype == np.int64 and x.shape == y.shape
    assert violations(parents, x) == 0
    assert not nonneg or (x >= 0).all()
    relaxed = least_squares(parents, y, var, nonnegative=nonneg)
    w = 1 / (np.ones(len(y)) if var is None else np.asarray(var))
    leaf = np.array([i not in parents for i in range(len(y))])
    bounded = (np.full(len(y), nonneg) | (leaf & (w == 0)))  # unobserved leaves are non-negative
    assert (x[bounded & leaf] >= 0).all()
    # the relaxation is a lower bound, any consistent rounding an upper bound
    assert _cost(relaxed, y, var) <= _cost(x, y, var) + 1e-6
    assert _cost(x, y, var) <= _cost(round_consistent(parents, relaxed, nonnegative=bounded), y, var) + 1e-6
    # the proximity theorem the table bounds rest on: sum w (z - x~)^2 <= W / 4
    assert np.sum(w * (x - relaxed) ** 2) <= w.sum() / 4 + 1e-6


@settings(derandomize=True, max_examples=60, deadline=None)
@given(_problems(), st.integers(0, 500))
def test_tree_dp_root_total_invariants(problem, total):
    parents, y, var, _nonneg = problem
    roots = [i for i, p in enumerate(parents) if p == -1]
    x = tree_dp(parents, y, root_total=total, variances=var)
    assert all(x[r] == total for r in roots)
    assert violations(parents, x) == 0 and (x >= 0).all()


# ------------------------------------------------------------------ bad input


@pytest.mark.parametrize("parents,match", [
    ([0, 0], "parents\\[0\\] = 0"),
    ([1, 0], "no root"),
    ([-1, 2, 1], "cycle"),
    ([-1, 5], "parents\\[1\\] = 5"),
    ([[-1, 0]], "1-D"),
    ([-1, 0.5], "integers"),
])
def test_bad_trees_are_refused_with_a_clear_message(parents, match):
    with pytest.raises(ValueError, match=match):
        tree_dp(parents, np.zeros(np.size(parents)))


def test_bad_values_are_refused():
    with pytest.raises(ValueError, match="shape"):
        least_squares([-1, 0], [1, 2, 3])
    with pytest.raises(ValueError, match=">= 0"):
        least_squares([-1, 0], [1, 2], variances=[1, -1])
    with pytest.raises(ValueError, match="integers"):
        tree_dp([-1, 0], [1, 2], root_total=2.5)
    with pytest.raises(ValueError, match="negative"):
        tree_dp([-1, 0], [1, 2], root_total=-1)
    with pytest.raises(ValueError, match="cannot be met"):
        least_squares([-1, 0, 0], [5, 1, 1], fixed=[5, 1, 1])
    with pytest.raises(ValueError, match="finite"):
        least_squares([-1, 0], [np.nan, 1])


def test_tree_dp_second_pass_when_a_cheap_node_absorbs_many_roundings(monkeypatch):
    # 400 children at 5.4 (each rounds down), one child with a huge variance: in the
    # integer optimum the cheap child absorbs the 400 * 0.4 = 160 units the others drop,
    # far outside the narrow first-pass tables; the second pass must find it.
    import methods.consistency as mc

    passes = []
    real = mc._dp_batched
    monkeypatch.setattr(mc, "_dp_batched", lambda tree, y, *a: passes.append(y.shape[1]) or real(tree, y, *a))
    k = 400
    parents = [-1] + [0] * (k + 1)
    y = np.array([5.4 * k + 20] + [5.4] * k + [20.0])
    var = np.array([1.0] * (k + 1) + [10000.0])
    x = tree_dp(parents, y, variances=var)
    assert x[0] == 2180 and (x[1:k + 1] == 5).all() and x[-1] == 180
    assert passes == [1, 1]


# ------------------------------------------------------------------ unobserved nodes (variance inf)


def _brute_force_unobserved(parents, y, var, nonneg_leaf, lo=-12, hi=30):
    """Cheapest integer consistent vector; unobserved nodes cost nothing, unobserved leaves >= 0."""
    M, leaves = _leaf_matrix(parents)
    ranges = [range(0 if (nonneg_leaf or np.isinf(var[leaf])) else lo, hi + 1) for leaf in leaves]
    grid = np.array(list(itertools.product(*ranges)), dtype=float)
    X = grid @ M.T
    w = np.where(np.isinf(var), 0.0, 1 / np.where(np.isinf(var), 1, var))
    costs = ((X - y) ** 2 * w).sum(axis=1)
    return costs.min()


@pytest.mark.parametrize("seed", range(40))
def test_tree_dp_with_unobserved_nodes_matches_brute_force(seed):
    rng = np.random.default_rng(500 + seed)
    parents = _random_tree(rng, int(rng.integers(3, 8)), 3)
    n = len(parents)
    y = rng.integers(-4, 25, n).astype(float)
    var = rng.choice([1.0, 2.0, 5.0], n)
    hidden = rng.random(n) < 0.4
    hidden[0] = hidden[0] and seed % 3 == 0  # sometimes the root too
    var[hidden] = np.inf
    y[hidden] = 999.0  # never read
    nonneg = seed % 2 == 0
    x = tree_dp(parents, y, nonnegative=nonneg, variances=var)
    best = _brute_force_unobserved(parents, y, var, nonneg)
    assert violations(parents, x) == 0
    leaves = [i for i in range(n) if i not in parents]
    assert all(x[i] >= 0 for i in leaves if np.isinf(var[i]) or nonneg)
    w = np.where(np.isinf(var), 0.0, 1 / np.where(np.isinf(var), 1, var))
    assert float(np.sum((x - y) ** 2 * w)) == pytest.approx(best, abs=1e-9)


@pytest.mark.parametrize("seed", range(12))
def test_least_squares_with_unobserved_nodes_equals_a_bounded_solver(seed):
    rng = np.random.default_rng(700 + seed)
    parents = _random_tree(rng, int(rng.integers(3, 20)), 20)
    n = len(parents)
    y = rng.normal(4, 8, n)
    var = rng.uniform(0.5, 6, n)
    hidden = rng.random(n) < 0.3
    var[hidden] = np.inf
    y[hidden] = -1e6  # never read
    nonneg = bool(seed % 2)
    x = least_squares(parents, y, var, nonnegative=nonneg)
    M, leaves = _leaf_matrix(parents)
    w = np.where(np.isinf(var), 0.0, 1 / np.where(np.isinf(var), 1, var))
    bounds = [(0, None) if (nonneg or np.isinf(var[leaf])) else (None, None) for leaf in leaves]
    res = minimize(lambda l: np.sum((M @ l - y) ** 2 * w), np.full(len(leaves), 1.0), method="SLSQP",
                   jac=lambda l: 2 * M.T @ ((M @ l - y) * w), bounds=bounds, options={"ftol": 1e-15, "maxiter": 1000})
    assert violations(parents, x, tol=1e-6) == 0
    assert np.sum((x - y) ** 2 * w) == pytest.approx(res.fun, rel=1e-7, abs=1e-7)
    observed = ~hidden
    assert np.allclose(x[observed], (M @ res.x)[observed], atol=1e-3)
    assert all(x[leaf] >= -1e-9 for leaf in leaves if np.isinf(var[leaf]))


def test_unobserved_internal_nodes_use_the_two_pass_estimate():
    rng = np.random.default_rng(5)
    parents = _random_tree(rng, 30, 30)
    n = len(parents)
    y = rng.normal(10, 5, n)
    var = rng.uniform(0.5, 5, n)
    internal = sorted({p for p in parents if p >= 0})
    var[internal[::2]] = np.inf
    M, _ = _leaf_matrix(parents)
    w = np.where(np.isinf(var), 0.0, 1 / np.where(np.isinf(var), 1, var))
    leaves, *_ = np.linalg.lstsq(M * np.sqrt(w)[:, None], y * np.sqrt(w), rcond=None)
    assert np.allclose(least_squares(parents, y, var), M @ leaves, atol=1e-8)


def test_a_suppressed_child_is_a_non_negative_remainder():
    # Parent 100; published children 40 and 45; child 3 unobserved (suppressed).
    parents = [-1, 0, 0, 0]
    y = np.array([100, 40, 45, 0])
    var = np.array([1.0, 1.0, 1.0, np.inf])
    x = tree_dp(parents, y, variances=var)
    assert list(x) == [100, 40, 45, 15]  # nothing forces the published ones to move
    y2 = np.array([80, 40, 45, 0])  # published children above the parent: they meet it, remainder 0
    x2 = tree_dp(parents, y2, variances=var)
    assert x2[3] == 0 and x2[0] == x2[1] + x2[2] and 80 < x2[0] < 85
    rel = ~np.isinf(var)
    assert violations(parents, y2, released=rel) == 1 and violations(parents, x2, released=rel) == 0
    assert violations(parents, y, released=rel) == 0  # 100 >= 40 + 45: nothing to check further
    ls = least_squares(parents, y2, var)
    assert ls[3] == pytest.approx(0) and ls[0] == pytest.approx(ls[1] + ls[2])


def test_violations_with_released_flags():
    parents = [-1, 0, 0, 1, 1]
    v = np.array([10, 6, 4, 3, 3])
    rel = np.array([True, True, True, True, True])
    assert violations(parents, v, released=rel) == 0
    v2 = np.array([10, 7, 4, 3, 3])
    assert violations(parents, v2, released=rel) == 2  # 10 != 11 and 7 != 6
    rel2 = np.array([True, True, False, True, True])
    assert violations(parents, v2, released=rel2) == 1  # 10 >= 7 is fine; 7 != 6 is not
    rel3 = np.array([True, False, True, True, True])
    assert violations(parents, v2, released=rel3) == 0  # node 1 is not published: nothing to check


def test_round_consistent_respects_per_node_non_negativity():
    parents = [-1, 0, 0, 0]
    real = np.array([10.0, 5.3, 4.6, 0.1])
    nn = np.array([False, False, False, True])
    for _ in range(3):
        a = round_consistent(parents, real, nonnegative=nn)
        assert a[0] == 10 and a[1:].sum() == 10 and a[3] >= 0


def test_distribute_tiebreak_spreads_an_even_adjustment_without_favouring_first_cells():
    """Raising 8 zero cells to a total of 4 is an even spread (equal fractional parts):
    without a tie-break the first four cells always get the units; with random words
    every cell gets one half of the time (the adjustment is unbiased cell by cell)."""
    from engine.noise import RandomSource

    n = 20_000
    cells = np.zeros((n, 8))
    totals = np.full(n, 4)
    plain = distribute(cells, totals)
    assert (plain[:, :4] == 1).all() and (plain[:, 4:] == 0).all()
    words = RandomSource.seeded(11).words(cells.size)
    fair = distribute(cells, totals, tiebreak=words)
    assert (fair.sum(axis=1) == 4).all() and set(np.unique(fair)) == {0, 1}
    # each cell's mean is 0.5; its sd over n tables is 0.5/sqrt(n) = 0.0035: 6 sd is 0.021
    assert np.abs(fair.mean(axis=0) - 0.5).max() < 0.021


def test_a_variance_of_zero_holds_an_exact_value_and_extreme_ratios_are_refused():
    """Issue 21 item 15: at rho = 1e6 the discrete Gaussian's variance underflows to 0;
    such a value is exact and held, and the others absorb the difference."""
    parents, noisy = [-1, 0, 0], [10, 4, 5]
    for solve in (least_squares, lambda *a, **k: tree_dp(*a, nonnegative=False, **k)):
        x = solve(parents, noisy, variances=[0.0, 1.0, 1.0])
        assert x[0] == 10 and x[1] + x[2] == 10 and abs(x[1] - x[2]) <= 1
        assert list(solve(parents, noisy, variances=[1e-30, 1.0, 1.0])) == list(x)  # below EXACT_VARIANCE too
    with pytest.raises(ValueError, match="differ by a factor of 1e\\+20"):
        least_squares(parents, noisy, variances=[1e-10, 1e10, 1.0])
