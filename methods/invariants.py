"""Exact invariants and subspace differential privacy (projected mechanisms).

Source: J. Gao, R. Gong, F.-Y. Yu, "Subspace Differential Privacy", AAAI 2022
(arXiv:2108.11527), sections 2, 3 and 5 (shared/papers/subspace-differential-privacy.txt):
neighbours are bounded (Def. 2.1: one row changed), the Gaussian multiplier is Lemma
3.4's, the projected mechanisms are Cor. 3.2 / 3.5 / 3.8 and the extended ones Cor. 3.6
/ 3.9 (Algorithm 1). The classic Dwork-Roth multiplier and add/remove neighbours are
named options (`gaussian_c(..., variant="dwork-roth")`,
`extended_sensitivity(..., neighbours="add-remove")`); docs/invariants.md lists what
is implemented, what differs and what is not (the correlated Gaussian and k-norm
mechanisms of Sec. 3.4).

The invariants are linear: C x = c, with C an m x n matrix of rank n_c (m may exceed
n_c: redundant rows are allowed). Let Pi_N = I - C^+ C be the orthogonal projector on
the null space N of C. The *projected* mechanism releases

    M(x) = x + Pi_N e,     e ~ N(0, sigma^2 I)   (or i.i.d. Laplace),

so C M(x) = C x = c exactly (the invariants hold), E M(x) = x (unbiased), and the
noise has covariance sigma^2 Pi_N: cell i has variance sigma^2 (Pi_N)_ii and the total
squared error is trace(Pi_N) sigma^2 = (n - n_c) sigma^2 instead of n sigma^2. The
*extended* mechanism releases x + Q_N e_N with Q_N an n x (n - n_c) orthonormal basis
of N and e_N of dimension n - n_c; its scale comes from the sensitivity of Q_N^T x.

What the projection does NOT protect: the invariants c themselves are released
exactly. Only the component of the data in N is differentially private.

Two ways to compute Pi_N, tested against each other:

* general (`project`, `projector_diagonal`, `constraint_rank`, `null_space_basis`):
  an orthonormal basis Q of the row space of C from a QR factorisation of C^T with
  column pivoting (rank-revealing, so redundant or dependent constraints are fine);
  Pi_N v = v - Q (Q^T v). Optional per-cell noise variances give the minimum-variance
  (generalised least squares) projection V C^T (C V C^T)^+ C, computed the same way on
  the whitened matrix C V^{1/2}.
* margins of a table (`margin_constraints`, `margin_rank`, `margin_variance_factor`,
  `project_margins`): a table of shape (I_1, ..., I_d) splits into the orthogonal
  ANOVA subspaces V_S, S a subset of the axes (V_S = tables that vary only along the
  axes in S, with zero mean along each of them). Holding the margin that keeps the
  axes M spans exactly the V_S with S inside M, so for a set of margins the row space
  of C is the sum of V_S over the family D of subsets of some held margin, and

      rank C = sum_{S in D} prod_{k in S} (I_k - 1),
      (Pi_N)_ii = 1 - sum_{S in D} prod_{k in S} (1 - 1/I_k) prod_{k not in S} 1/I_k
                 (the same for every cell),
      Pi_N v = v - sum_{T in D} c_T mean_T(v),   c_T = sum_{S in D, S >= T} (-1)^{|S|-|T|},

  where mean_T(v) averages v over the axes not in T (broadcast back). A single total
  gives 1 - 1/n; the row and column sums of an r x c table give (1 - 1/r)(1 - 1/c)
  and the familiar double centring v - row means - column means + grand mean.

Arrays and plain Python in, arrays out; no I/O. Every computation is bounded
(`MAX_CELLS`, `MAX_DENSE_ENTRIES`, `MAX_NULL_BASIS`).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import numpy as np
import scipy.linalg
import scipy.sparse
import scipy.sparse.csgraph

__all__ = [
    "MAX_AXES",
    "MAX_CELLS",
    "MAX_DENSE_ENTRIES",
    "MAX_NULL_BASIS",
    "MAX_PAIR_WORK",
    "GAUSSIAN_VARIANTS",
    "NEIGHBOURS",
    "constraint_rank",
    "extended_gaussian_scale",
    "extended_laplace_scale",
    "extended_sensitivity",
    "gaussian_c",
    "gaussian_scale",
    "hold_sums",
    "laplace_scale",
    "largest_remainder",
    "margin_constraints",
    "margin_rank",
    "margin_variance_factor",
    "normalize_margins",
    "null_space_basis",
    "project",
    "project_margins",
    "projected_variance",
    "projector_diagonal",
]

#: Largest table (number of cells) the margin functions accept.
MAX_CELLS = 20_000_000
#: Most axes of a table (the closed forms walk the 2^d subsets of the axes).
MAX_AXES = 8
#: Largest dense constraint matrix (rows x cells) the general projector factorises.
MAX_DENSE_ENTRIES = 30_000_000
#: Largest n for which a full null-space basis Q_N (n x (n - n_c)) is built.
MAX_NULL_BASIS = 4_000


# --------------------------------------------------------------------------- margins
def normalize_margins(shape: Sequence[int], margins: Sequence[Sequence[int]]) -> tuple[tuple[int, ...], list[tuple[int, ...]]]:
    """Check a table shape and a list of margins; return them as tuples.

    `shape` lists the axis lengths (1..MAX_AXES axes, each >= 1, at most MAX_CELLS cells);
    each margin is the tuple of the axes it keeps, e.g. ``(0,)`` the row sums of a 2-D
    table, ``(0, 1)`` the whole table, ``()`` the grand total. Axes inside a margin are
    sorted; a margin listed twice is kept twice (it adds redundant rows to C).
    """
    shp = tuple(shape)
    if not 1 <= len(shp) <= MAX_AXES:
        raise ValueError(f"a table needs 1 to {MAX_AXES} axes (got {len(shp)})")
    for i, s in enumerate(shp):
        if isinstance(s, bool) or not isinstance(s, (int, np.integer)) or s < 1:
            raise ValueError(f"axis {i} of the table shape must be a whole number >= 1 (got {s!r})")
    shp = tuple(int(s) for s in shp)
    if math.prod(shp) > MAX_CELLS:
        raise ValueError(f"the table has {math.prod(shp):,} cells; at most {MAX_CELLS:,} are allowed")
    out = []
    for j, m in enumerate(margins):
        try:
            axes = tuple(m)
        except TypeError:
            raise ValueError(f"margin {j} must be a tuple of axes, e.g. (0,) or () (got {m!r})") from None
        for a in axes:
            if isinstance(a, bool) or not isinstance(a, (int, np.integer)) or not 0 <= a < len(shp):
                raise ValueError(f"margin {j} names axis {a!r}; the table has axes 0..{len(shp) - 1}")
        if len(set(axes)) != len(axes):
            raise ValueError(f"margin {j} names an axis twice: {axes}")
        out.append(tuple(sorted(int(a) for a in axes)))
    return shp, out


def margin_constraints(shape: Sequence[int], margins: Sequence[Sequence[int]]) -> scipy.sparse.csr_array:
    """The 0/1 constraint matrix C that holds the given margins of a table (sparse).

    Cells are numbered in C (row-major) order of `shape`. Each margin contributes one
    row per cell of the margin table (the product of the kept axes' lengths; one row
    for ``()``), with a 1 in every cell that adds up into it. Rows are stacked in the
    order of `margins`; C x is then the concatenation of the margin tables of x.
    """
    shp, mgs = normalize_margins(shape, margins)
    n = math.prod(shp)
    cells = np.arange(n, dtype=np.int64)
    blocks = []
    for axes in mgs:
        if axes:
            idx = np.unravel_index(cells, shp)
            row = np.ravel_multi_index(tuple(idx[a] for a in axes), tuple(shp[a] for a in axes))
            rows = math.prod(shp[a] for a in axes)
        else:
            row, rows = np.zeros(n, np.int64), 1
        blocks.append(scipy.sparse.csr_array((np.ones(n), (row, cells)), shape=(rows, n)))
    if not blocks:
        return scipy.sparse.csr_array((0, n))
    return scipy.sparse.vstack(blocks, format="csr")


def _covered(shp: tuple[int, ...], mgs: list[tuple[int, ...]]) -> list[frozenset[int]]:
    """The family D: every subset of the axes that lies inside some held margin."""
    d = len(shp)
    held = [frozenset(m) for m in mgs]
    return [frozenset(s) for r in range(d + 1) for s in itertools.combinations(range(d), r)
            if any(frozenset(s) <= m for m in held)]


def margin_rank(shape: Sequence[int], margins: Sequence[Sequence[int]]) -> int:
    """rank C = sum over S in D of prod_{k in S} (I_k - 1) (module docstring).

    Two-way margins of an r x c table: 1 + (r - 1) + (c - 1) = r + c - 1; the paper's
    14 x 24 x 20 table with the (0, 2) and (1, 2) margins held: 20 (14 + 24 - 1) = 740.
    """
    shp, mgs = normalize_margins(shape, margins)
    return sum(math.prod(shp[k] - 1 for k in s) for s in _covered(shp, mgs))


def margin_variance_factor(shape: Sequence[int], margins: Sequence[Sequence[int]]) -> Fraction:
    """(Pi_N)_ii, the same for every cell, exactly (module docstring).

    It is the variance of a cell's projected noise at unit noise variance: a single
    total of n cells gives 1 - 1/n, the row and column sums of an r x c table give
    (1 - 1/r)(1 - 1/c). It equals (n - rank C) / n.
    """
    shp, mgs = normalize_margins(shape, margins)
    one = Fraction(1)
    kept = sum((math.prod((one - Fraction(1, shp[k]) if k in s else Fraction(1, shp[k])) for k in range(len(shp)))
                for s in _covered(shp, mgs)), Fraction(0))
    return one - kept


def project_margins(noise: Any, shape: Sequence[int], margins: Sequence[Sequence[int]]) -> np.ndarray:
    """Pi_N applied to noise on a table with the given margins held (exact closed form).

    `noise` is one table or a batch: its trailing axes are `shape` (or one trailing axis
    of length prod(shape), the cells in row-major order). Returns an array of the same
    shape whose margins are all zero: v - sum_{T in D} c_T mean_T(v) (module docstring).
    Cost: a few passes over the data per margin subset, no matrix.
    """
    shp, mgs = normalize_margins(shape, margins)
    v = np.asarray(noise, dtype=np.float64)
    n, d = math.prod(shp), len(shp)
    if v.shape[-d:] == shp:
        batch = v.shape[:-d]
    elif v.ndim >= 1 and v.shape[-1] == n:
        batch = v.shape[:-1]
    else:
        raise ValueError(f"noise of shape {v.shape} does not end with the table shape {shp} or {n} cells")
    t = v.reshape(batch + shp)
    fam = _covered(shp, mgs)
    fam_set = set(fam)
    out = t.copy()
    b = len(batch)
    for tset in fam:
        coef = sum((-1) ** (len(s) - len(tset)) for s in fam_set if tset <= s)
        if coef == 0:
            continue
        axes = tuple(b + k for k in range(d) if k not in tset)
        out -= coef * (t.mean(axis=axes, keepdims=True) if axes else t)
    return out.reshape(v.shape)


# --------------------------------------------------------------------------- general C
def _sparse(C: Any) -> scipy.sparse.csr_array:
    """C as a checked sparse matrix (m x n, n >= 1, finite, at most MAX_DENSE_ENTRIES)."""
    if scipy.sparse.issparse(C):
        a = scipy.sparse.csr_array(C, dtype=np.float64)
    else:
        d = np.asarray(C, dtype=np.float64)
        if d.ndim == 1:
            d = d[None, :]
        if d.ndim != 2:
            raise ValueError(f"the constraint matrix must be 2-D (got {d.ndim} dimensions)")
        a = scipy.sparse.csr_array(d)
    m, n = a.shape
    if n == 0:
        raise ValueError("the constraint matrix needs at least one column (cell)")
    if m * n > MAX_DENSE_ENTRIES:
        raise ValueError(f"the constraint matrix is {m:,} x {n:,}; at most {MAX_DENSE_ENTRIES:,} entries are "
                         "factorised (use the margin closed forms for large tables)")
    if not np.all(np.isfinite(a.data)):
        raise ValueError("the constraint matrix has an entry that is not a finite number")
    return a


def _variances(variances: Any, n: int) -> np.ndarray:
    v = np.asarray(variances, dtype=np.float64)
    if v.shape != (n,) or not np.all(np.isfinite(v) & (v > 0)):
        raise ValueError(f"variances must be {n} finite numbers > 0 (one per cell)")
    return v


def _qr_rank(block: np.ndarray, mode: str) -> tuple[np.ndarray, int]:
    """Pivoted QR of block^T (cells x rows) and its numerical rank: |R_jj| above
    max(m, n) * eps * |R_00|, the usual rank-revealing cut."""
    q, r, _p = scipy.linalg.qr(block.T, mode=mode, pivoting=True)
    diag = np.abs(np.diag(r))
    if not len(diag) or diag[0] == 0:
        return q, 0
    return q, int(np.sum(diag > max(block.shape) * np.finfo(np.float64).eps * diag[0]))


def _row_space(a: scipy.sparse.csr_array) -> np.ndarray:
    """Orthonormal basis (n x r) of the row space of a (m x n), block by block.

    Constraints that share no cell are independent, so the connected components of the
    bipartite (row, cell) graph of C are factorised separately (pivoted QR of each
    block's transpose). Per-location or per-state invariants split into many small
    blocks; a dense C is one block.
    """
    m, n = a.shape
    a = a.copy()
    a.eliminate_zeros()
    if m == 0 or a.nnz == 0:
        return np.zeros((n, 0))
    graph = scipy.sparse.bmat([[None, a], [a.T, None]], format="csr")
    _k, labels = scipy.sparse.csgraph.connected_components(graph, directed=False)
    row_lab, col_lab = labels[:m], labels[m:]
    rows_by = np.argsort(row_lab, kind="stable")
    cols_by = np.argsort(col_lab, kind="stable")
    comps = np.unique(row_lab)
    r_lo = np.searchsorted(row_lab[rows_by], comps)
    r_hi = np.searchsorted(row_lab[rows_by], comps, side="right")
    c_lo = np.searchsorted(col_lab[cols_by], comps)
    c_hi = np.searchsorted(col_lab[cols_by], comps, side="right")
    parts = []
    for i in range(len(comps)):
        rows, cols = rows_by[r_lo[i]:r_hi[i]], cols_by[c_lo[i]:c_hi[i]]
        q, rank = _qr_rank(a[rows][:, cols].toarray(), "economic")
        if rank:
            parts.append((cols, q[:, :rank]))
    out = np.zeros((n, sum(p[1].shape[1] for p in parts)))
    j = 0
    for cols, q in parts:
        out[cols, j:j + q.shape[1]] = q
        j += q.shape[1]
    return out


def constraint_rank(C: Any) -> int:
    """n_c, the rank of C (pivoted QR; redundant rows do not count)."""
    return _row_space(_sparse(C)).shape[1]


def projector_diagonal(C: Any) -> np.ndarray:
    """diag(Pi_N) = 1 - sum_j Q_ij^2: each cell's noise variance factor at unit noise.

    The projected mechanism's cell i has variance sigma^2 (Pi_N)_ii; the entries sum to
    n - rank C (trace of a projector).
    """
    q = _row_space(_sparse(C))
    return np.clip(1.0 - np.einsum("ij,ij->i", q, q), 0.0, 1.0)


def projected_variance(C: Any, variances: Any) -> np.ndarray:
    """Per-cell variance of the minimum-variance projected noise when cell i's noise has
    variance v_i: with B = C V^{1/2} and Q a basis of B's row space,
    Var_i = v_i (1 - sum_j Q_ij^2). With equal v it is v diag(Pi_N).
    """
    a = _sparse(C)
    v = _variances(variances, a.shape[1])
    q = _row_space(a @ scipy.sparse.diags_array(np.sqrt(v)))
    return v * np.clip(1.0 - np.einsum("ij,ij->i", q, q), 0.0, 1.0)


def project(noise: Any, C: Any, variances: Any = None) -> np.ndarray:
    """Pi_N e: the noise projected on the null space of C (a vector or a batch of rows).

    Without `variances` this is the paper's orthogonal projector I - C^+ C. With
    per-cell noise variances v it is the minimum-variance projection
    e - V C^T (C V C^T)^+ C e (generalised least squares), which is Pi_N again when all
    v are equal. Either way C (x + result) = C x and the result has mean zero.
    """
    a = _sparse(C)
    n = a.shape[1]
    e = np.asarray(noise, dtype=np.float64)
    if e.shape[-1] != n or e.ndim > 2:
        raise ValueError(f"noise must be a vector of {n} cells or a batch (k, {n}) (got shape {e.shape})")
    if variances is None:
        q = _row_space(a)
        return e - (e @ q) @ q.T
    s = np.sqrt(_variances(variances, n))
    q = _row_space(a @ scipy.sparse.diags_array(s))
    y = e / s
    return (y - (y @ q) @ q.T) * s


def null_space_basis(C: Any) -> np.ndarray:
    """Q_N: an n x (n - n_c) matrix with orthonormal columns spanning the null space of C.

    From the full pivoted QR of C^T: the columns after the rank. Q_N Q_N^T = Pi_N; the
    basis is not unique (any rotation of it is another), which matters for the extended
    Laplace mechanism's sensitivity. Bounded to n <= MAX_NULL_BASIS.
    """
    a = _sparse(C)
    m, n = a.shape
    if n > MAX_NULL_BASIS:
        raise ValueError(f"a full null-space basis is built for at most {MAX_NULL_BASIS:,} cells (got {n:,})")
    if m == 0 or a.nnz == 0:
        return np.eye(n)
    q, rank = _qr_rank(a.toarray(), "full")
    return q[:, rank:]


# --------------------------------------------------------------------------- scales
def _check_eps(epsilon: Any) -> float:
    e = float(epsilon)
    if not (math.isfinite(e) and e > 0):
        raise ValueError(f"epsilon must be a finite number > 0 (got {epsilon!r})")
    return e


#: Names of the Gaussian multipliers `gaussian_c` offers.
GAUSSIAN_VARIANTS = ("paper", "dwork-roth")
#: Names of the neighbouring relations `extended_sensitivity` offers.
NEIGHBOURS = ("bounded", "add-remove")


def gaussian_c(epsilon: float, delta: float, variant: str = "paper") -> float:
    """c_{eps,delta}, the Gaussian mechanism's multiplier: sigma = c Delta_2.

    * ``variant="paper"`` (default): the paper's Lemma 3.4 (after Dwork et al. 2006a),
      c = (1 + sqrt(1 + ln(1 / delta))) / eps, for every eps > 0 and 0 < delta < 1
      (eps 1, delta 1e-5: 4.5374; eps 0.5: 9.0747).
    * ``variant="dwork-roth"``: the classic multiplier sqrt(2 ln(1.25 / delta)) / eps
      (Dwork and Roth 2014, Thm 3.22), valid only for 0 < eps < 1 (eps 0.5, delta
      1e-5: 9.6896). Smaller than the paper's for small delta, but not (eps, delta)-DP
      beyond eps = 1, so it refuses eps >= 1.
    """
    e = _check_eps(epsilon)
    if variant not in GAUSSIAN_VARIANTS:
        raise ValueError(f"variant must be one of {', '.join(GAUSSIAN_VARIANTS)} (got {variant!r})")
    dl = float(delta)
    if not 0 < dl < 1:
        raise ValueError(f"delta must lie strictly between 0 and 1 (got {delta!r})")
    if variant == "paper":
        return (1.0 + math.sqrt(1.0 + math.log(1.0 / dl))) / e
    if e >= 1:
        raise ValueError(f"the classic (Dwork-Roth) Gaussian multiplier holds for epsilon < 1 (got {epsilon!r}); "
                         "the paper's (variant='paper') holds for every epsilon")
    return math.sqrt(2.0 * math.log(1.25 / dl)) / e


def gaussian_scale(epsilon: float, delta: float, l2_sensitivity: float, variant: str = "paper") -> float:
    """sigma = c_{eps,delta} Delta_2 (`gaussian_c`, the paper's Lemma 3.4 by default):
    the standard deviation of each cell's Gaussian noise before projection. The
    projected cell i then has variance sigma^2 (Pi_N)_ii."""
    d = float(l2_sensitivity)
    if not (math.isfinite(d) and d > 0):
        raise ValueError(f"the L2 sensitivity must be a finite number > 0 (got {l2_sensitivity!r})")
    return gaussian_c(epsilon, delta, variant) * d


def laplace_scale(epsilon: float, l1_sensitivity: float) -> float:
    """b = Delta_1 / eps, the Laplace mechanism's scale (variance 2 b^2 per cell before
    projection; 2 b^2 (Pi_N)_ii after)."""
    d = float(l1_sensitivity)
    if not (math.isfinite(d) and d > 0):
        raise ValueError(f"the L1 sensitivity must be a finite number > 0 (got {l1_sensitivity!r})")
    return d / _check_eps(epsilon)


#: Largest number of (pair of cells, null-space coordinate) products the bounded L1
#: sensitivity evaluates (it compares every pair of rows of Q_N).
MAX_PAIR_WORK = 200_000_000


def extended_sensitivity(QN: Any, differences: Any = None, norm: int = 2, neighbours: str = "bounded") -> float:
    """Sensitivity of Q_N^T x: max over neighbouring differences d of ||Q_N^T d||_norm.

    `neighbours` says which differences x - x' a neighbouring pair of histograms has,
    when `differences` (explicit rows) is not given:

    * ``"bounded"`` (default): the paper's Definition 2.1, databases of the same size
      differing in one row: one record moves from cell j to cell i, d = e_i - e_j
      (i != j). For norm 2 this is max_{i != j} sqrt(P_ii + P_jj - 2 P_ij) with
      P = Pi_N = Q_N Q_N^T, whatever basis Q_N is; a single total of n cells gives
      sqrt(2) (every e_i - e_j lies in its null space).
    * ``"add-remove"``: unbounded neighbours, one record added or removed: d = e_i,
      giving max_i sqrt((Pi_N)_ii) <= 1 for norm 2.

    For norm 1 the value depends on the basis chosen. The bounded L1 case compares
    every pair of rows of Q_N (at most `MAX_PAIR_WORK` products).
    """
    q = np.asarray(QN, dtype=np.float64)
    if q.ndim != 2:
        raise ValueError("Q_N must be a 2-D matrix (cells x null-space dimension)")
    if norm not in (1, 2):
        raise ValueError("norm must be 1 or 2")
    if neighbours not in NEIGHBOURS:
        raise ValueError(f"neighbours must be one of {', '.join(NEIGHBOURS)} (got {neighbours!r})")
    if q.shape[1] == 0:
        return 0.0
    if differences is not None:
        d = np.atleast_2d(np.asarray(differences, dtype=np.float64))
        if d.shape[1] != q.shape[0]:
            raise ValueError(f"each difference must have {q.shape[0]} cells (got {d.shape[1]})")
        return float(np.max(np.linalg.norm(d @ q, ord=norm, axis=1)))
    if neighbours == "add-remove":
        return float(np.max(np.linalg.norm(q, ord=norm, axis=1)))
    return _bounded_sensitivity(q, norm)


def _bounded_sensitivity(q: np.ndarray, norm: int) -> float:
    """max over i != j of ||q_i - q_j|| (rows of Q_N), block by block."""
    n, k = q.shape
    if n < 2:
        return 0.0  # one cell: a record can only "move" to where it is
    best = 0.0
    if norm == 2:
        sq = np.einsum("ij,ij->i", q, q)
        step = max(1, 4_000_000 // n)
        for a in range(0, n, step):
            b = min(n, a + step)
            d2 = sq[a:b, None] + sq[None, :] - 2.0 * (q[a:b] @ q.T)
            d2[np.arange(b - a), np.arange(a, b)] = -np.inf  # i = j is no move
            best = max(best, float(np.max(d2)))
        return math.sqrt(max(best, 0.0))
    if n * n * k > MAX_PAIR_WORK:
        raise ValueError(f"the bounded L1 sensitivity compares {n:,} x {n:,} pairs of {k:,} coordinates (limit "
                         f"{MAX_PAIR_WORK:,} products); give the differences explicitly")
    step = max(1, 2_000_000 // max(1, n * k))
    for a in range(0, n, step):
        b = min(n, a + step)
        d1 = np.abs(q[a:b, None, :] - q[None, :, :]).sum(axis=2)
        best = max(best, float(np.max(d1)))
    return best


def extended_gaussian_scale(epsilon: float, delta: float, QN: Any, differences: Any = None,
                            neighbours: str = "bounded", variant: str = "paper") -> float:
    """Standard deviation of e_N in the extended Gaussian mechanism x + Q_N e_N
    (the paper's Algorithm 1, Corollary 3.6): c_{eps,delta} (`gaussian_c`, the paper's
    Lemma 3.4 by default) times the L2 sensitivity of Q_N^T x (`extended_sensitivity`,
    bounded neighbours by default)."""
    return gaussian_c(epsilon, delta, variant) * extended_sensitivity(QN, differences, norm=2, neighbours=neighbours)


def extended_laplace_scale(epsilon: float, QN: Any, differences: Any = None, neighbours: str = "bounded") -> float:
    """Laplace scale of e_N in the extended Laplace mechanism x + Q_N e_N (Corollary
    3.9): the L1 sensitivity of Q_N^T x over eps (bounded neighbours by default)."""
    return extended_sensitivity(QN, differences, norm=1, neighbours=neighbours) / _check_eps(epsilon)


# --------------------------------------------------------------------------- rounding
def largest_remainder(numerators: Any, denominators: Any, groups: Any, tiebreak: Any = None) -> np.ndarray:
    """Round exact rationals to integers keeping every group's (integer) sum.

    Value i is numerators[i] / denominators[groups[i]] (int64; one positive denominator
    per group, `groups` labels 0..G-1). Each value becomes its floor or its floor + 1:
    the floors first, then +1 for the values of largest remainder until the group's sum
    is met exactly (Hamilton's largest-remainder method). Ties between equal remainders
    are broken by `tiebreak` (uint64, larger first; give random words from the release's
    random stream: a fixed order would favour the same cells every time and bias them).
    Each group's sum of numerators must be a multiple of its denominator. Integer
    arithmetic throughout: no rounding error decides anything.

    Because the rule is odd-symmetric (rounding -v gives minus the rounding of v, up to
    the random tie-break), symmetric noise stays unbiased after rounding.
    """
    num = np.asarray(numerators)
    g = np.asarray(groups)
    den = np.asarray(denominators)
    if num.ndim != 1 or g.shape != num.shape:
        raise ValueError("numerators and groups must be 1-D arrays of the same length")
    if not (np.issubdtype(num.dtype, np.integer) and np.issubdtype(g.dtype, np.integer)
            and np.issubdtype(den.dtype, np.integer)):
        raise ValueError("numerators, denominators and groups must be integers")
    num, g, den = num.astype(np.int64), g.astype(np.int64), den.astype(np.int64)
    if len(num) == 0:
        return np.zeros(0, np.int64)
    if den.ndim != 1 or g.min() < 0 or g.max() >= len(den):
        raise ValueError("group labels must index the denominators")
    if np.any(den <= 0):
        raise ValueError("denominators must be > 0")
    dg = den[g]
    floor = num // dg
    rem = num - floor * dg
    fsum = np.zeros(len(den), np.int64)
    nsum = np.zeros(len(den), np.int64)
    np.add.at(fsum, g, floor)
    np.add.at(nsum, g, num)
    if np.any(nsum % den != 0):
        raise ValueError("a group's values do not add up to a whole number")
    need = nsum // den - fsum
    tb = np.zeros(len(num), np.uint64) if tiebreak is None else np.asarray(tiebreak, dtype=np.uint64)
    if tb.shape != num.shape:
        raise ValueError("tiebreak must have one entry per value")
    # Within each group: largest remainder first, then largest tiebreak (~tb ascending).
    order = np.lexsort((~tb, -rem, g))
    gs = g[order]
    start = np.searchsorted(gs, np.arange(len(den)))
    rank = np.arange(len(num)) - start[gs]
    up = np.zeros(len(num), bool)
    up[order] = rank < need[gs]
    return floor + up


def hold_sums(values: Any, groups: Any, totals: Any, tiebreak: Any = None, weights: Any = None) -> np.ndarray:
    """Integer noisy values moved so that each group adds up to its exact total.

    The projected mechanism for one total per group (C = a row of ones per group):
    with E_g = sum of the group's values - totals[g] (the group's summed noise), value i
    moves by -E_g w_i / W_g (W_g = the group's sum of weights), so the group's sum
    becomes totals[g] exactly. With equal weights (the default) this is the paper's
    orthogonal Pi_N and each value's noise variance shrinks by the factor 1 - 1/U_g;
    with weights equal to the noise variances it is the minimum-variance projection
    (`project` with `variances`), variance v_i (1 - v_i / W_g).

    The moves are rounded to integers by the largest-remainder method (each move is its
    floor or one more, and the moves add up to -E_g exactly), so the outputs stay
    integers and still add up to the total; ties are broken by `tiebreak`. Equal
    weights are handled in exact integer arithmetic (every remainder of a group is then
    the same, so the tie-break alone decides); other weights in floating point, with the
    group's sum still kept exactly.

    `values`: int64 noisy values; `groups`: labels 0..G-1; `totals`: G int64 totals;
    `weights`: numbers >= 0, one per value (0: the value is exact and does not move,
    unless its whole group is). A group without values must have total 0.
    """
    v = np.asarray(values)
    g = np.asarray(groups)
    t = np.asarray(totals)
    if v.ndim != 1 or g.shape != v.shape or t.ndim != 1:
        raise ValueError("values and groups must be 1-D arrays of the same length, totals 1-D")
    if not all(np.issubdtype(a.dtype, np.integer) for a in (v, g, t)):
        raise ValueError("values, groups and totals must be integers")
    v, g, t = v.astype(np.int64), g.astype(np.int64), t.astype(np.int64)
    if len(g) and (g.min() < 0 or g.max() >= len(t)):
        raise ValueError("group labels must index the totals")
    units = np.bincount(g, minlength=len(t)).astype(np.int64)
    sums = np.zeros(len(t), np.int64)
    np.add.at(sums, g, v)
    empty = units == 0
    if np.any(t[empty] != 0):
        raise ValueError(f"group {int(np.flatnonzero(empty & (t != 0))[0])} has a total but no values to carry it")
    excess = sums - t
    if weights is None:
        return v + largest_remainder(-excess[g], np.where(empty, 1, units), g, tiebreak)
    w = np.asarray(weights, dtype=np.float64)
    if w.shape != v.shape or not np.all(np.isfinite(w) & (w >= 0)):
        raise ValueError("weights must be finite numbers >= 0, one per value")
    wsum = np.bincount(g, weights=w, minlength=len(t))
    # Weights 0 (noise variances that underflow: budgets near the top of the range) keep
    # their values; a group of only such values shares its excess equally.
    w = np.where(wsum[g] > 0, w, 1.0)
    wsum = np.bincount(g, weights=w, minlength=len(t))
    move = -excess[g] * (w / wsum[g])
    return v + _round_keeping(move, g, -excess, tiebreak)


def _round_keeping(x: np.ndarray, g: np.ndarray, sums: np.ndarray, tiebreak: Any) -> np.ndarray:
    """Floats to integers, each its floor or one more (largest fractional parts first,
    then the largest tiebreak), every group adding up to the integer sums[g] exactly.
    Float error can make the count of +1s fall just outside 0..n_g; it is then spread
    over the whole group (q = k // n to all, the remainder to the largest fractions)."""
    fl = np.floor(x)
    frac = x - fl
    fl = fl.astype(np.int64)
    n_groups = len(sums)
    fsum = np.zeros(n_groups, np.int64)
    np.add.at(fsum, g, fl)
    need = sums - fsum
    n = np.bincount(g, minlength=n_groups).astype(np.int64)
    q = np.where(n > 0, need // np.maximum(n, 1), 0)
    r = need - q * n
    tb = np.zeros(len(x), np.uint64) if tiebreak is None else np.asarray(tiebreak, dtype=np.uint64)
    if tb.shape != x.shape:
        raise ValueError("tiebreak must have one entry per value")
    order = np.lexsort((~tb, -frac, g))
    gs = g[order]
    start = np.searchsorted(gs, np.arange(n_groups))
    rank = np.arange(len(x)) - start[gs]
    up = np.zeros(len(x), np.int64)
    up[order] = rank < r[gs]
    return fl + q[g] + up
