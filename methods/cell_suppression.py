"""Legacy cell suppression: primary rules, the linear-programming audit, and complementary
suppression by a sequential LP and by an exact integer model.

Before differential privacy the Census Bureau protected tables by withholding cells. The
method follows P. B. Massell, "Cell Suppression and Audit Programs used for Economic
Magnitude Data", U.S. Census Bureau, SRD Research Report RR2001/01 (the seed below).

**The model.** A table is a vector x >= 0 of cells tied by additive relations A x = 0:
each row of the sparse matrix A says "a total equals the sum of its parts" (+1 on the parts,
-1 on the total). Margins of a 2-D table, a geography hierarchy (a state's cell is the sum of
its counties' cells) and linked tables (tables sharing cells) are all more rows of A.
Publishing every cell but a suppressed set S, an attacker knows the published cells x_K, the
relations, and a-priori bounds lower <= x <= upper (default 0 and +infinity for a general
system; the seed's [0, grand total] for a 2-D table, `audit_table` and `protect_table`).

**Primary rules.** Frequency: a count below a threshold. Magnitude cells, from their
contributions x_1 >= x_2 >= ...: the (n, k) dominance rule (x_1 + ... + x_n > k% of the total)
and the p% rule (total - x_1 - x_2 < p/100 * x_1: the second largest contributor could
estimate the largest to within p%). Each comes with the protection it requires.

**Audit** (the seed's audit LP): for every suppressed cell i,
low_i = min x_i and high_i = max x_i over {x : A x = 0, x_K published, lower <= x <= upper}.
A cell is exactly disclosed when low_i = high_i. With required upper and lower protections
UPL_i and LPL_i, *full* protection asks high_i >= x_i + UPL_i and low_i <= x_i - LPL_i;
*sliding* protection asks only high_i - low_i >= UPL_i + LPL_i (the interval may slide).
A *singleton* cell has one contributor, who knows its value: with singletons given, the audit
of cell i is also run with each other suppressed singleton j known (the singleton problem of
the suppression literature, not discussed in the seed's pages we have: two suppressed
singletons in one relation disclose each other), except the singletons
whose contributor is inside cell i (its parts, through sum relations) or cell i inside theirs.

**Complementary suppression** (the seed's sequential LP): primaries in order of required
protection, largest first. For primary p and a direction, a deviation y = y+ - y- of the
whole table (two non-negative variables per cell) with A y = 0 (the shaft equations keep every
total consistent), y+_p >= UPL_p (up) or y-_p >= LPL_p (down), capacity bounds
y+_i, y-_i <= capacity_i for the other cells (the seed's capacity: the cell's value by
default, so zero cells are never complements; `capacity="unbounded"`: as far as the
bounds allow), minimising sum c_i (y+_i + y-_i) with c_i the cell value (or 1 per cell)
and 0 for cells already suppressed. Frozen cells (published for good) have capacity 0; a
refinement run repeats the LP with the first run's complements as the only candidates. The cells the deviation moves
become complementary suppressions: x + y is then a table the attacker cannot exclude, so
x_p + UPL_p (x_p - LPL_p) stays possible. The exact model (Fischetti and Salazar-Gonzalez's
formulation, solved by scipy's HiGHS MILP) takes a binary z_i per cell, one such deviation per
primary, direction and singleton attacker with |y_i| bounded by capacity * z_i, and minimises
sum c_i z_i. Every result is audited.

Every LP runs in HiGHS with a time limit. An LP that does not finish withholds the whole
connected part of the table it belongs to (the safe pattern), and the result says so.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import highspy
import numpy as np
import scipy.sparse as sp
from scipy.sparse import csgraph

from methods._highs import QuietHighs as _QuietHighs

#: Default limit of one LP solve, seconds (HiGHS time_limit).
LP_TIME_LIMIT = 10.0
#: Default limit of one connected part of a table (all its LPs), seconds.
PART_TIME_LIMIT = 60.0
#: Default limit of a whole protection, and again of a whole audit, seconds.
TIME_BUDGET = 3600.0
#: The exact model refuses parts with more variables than this (use the LP).
MILP_MAX_VARIABLES = 200_000

Progress = Callable[[int, int], None]


# --------------------------------------------------------------------------- primary rules
def _contributions(contributions) -> np.ndarray:
    c = np.asarray(contributions, dtype=np.float64).reshape(-1)
    if not np.isfinite(c).all():
        raise ValueError("contributions must be finite numbers")
    if (c < 0).any():
        raise ValueError(f"contributions must be non-negative (got {c[c < 0][0]:g})")
    return np.sort(c)[::-1]


def frequency_rule(counts, threshold: int, *, zeros: bool = False) -> np.ndarray:
    """Cells that are too small to publish: 0 < count < threshold (0 <= count with `zeros`)."""
    n = np.asarray(counts)
    if threshold < 0:
        raise ValueError(f"threshold must be >= 0 (got {threshold})")
    small = n < threshold
    return small if zeros else small & (n > 0)


def dominance_rule(contributions, n: int, k: float) -> bool:
    """(n, k) rule: the cell is sensitive when its n largest contributions exceed k% of its total.

    x_1 + ... + x_n > k/100 * T (seed, section 2). A cell with fewer than n contributors and a
    positive total is sensitive; an empty cell is not.
    """
    if int(n) != n or n < 1:
        raise ValueError(f"n must be a whole number >= 1 (got {n})")
    if not 0 < k <= 100:
        raise ValueError(f"k must be a percentage in (0, 100] (got {k})")
    c = _contributions(contributions)
    total = c.sum()
    return bool(total > 0 and c[: int(n)].sum() > k / 100.0 * total)


def dominance_protection(contributions, n: int, k: float) -> float:
    """Protection an (n, k)-sensitive cell needs: (100 / k) * (x_1 + ... + x_n) - T (0 if safe).

    The cell's interval must reach that far above its value for the n largest contributors'
    share to be uncertain below k% (seed, section 2).
    """
    if not dominance_rule(contributions, n, k):
        return 0.0
    c = _contributions(contributions)
    return float(100.0 / k * c[: int(n)].sum() - c.sum())


def p_percent_rule(contributions, p: float) -> bool:
    """p% rule: sensitive when T - x_1 - x_2 < p/100 * x_1 (seed, section 1).

    The second largest contributor, subtracting its own value from the total, would learn the
    largest one to within p percent.
    """
    if not p > 0:
        raise ValueError(f"p must be a positive percentage (got {p})")
    c = _contributions(contributions)
    if c.size == 0 or c[0] == 0:
        return False
    x1, x2 = c[0], (c[1] if c.size > 1 else 0.0)
    return bool(c.sum() - x1 - x2 < p / 100.0 * x1)


def p_percent_protection(contributions, p: float) -> float:
    """Protection a p%-sensitive cell needs: p/100 * x_1 - (T - x_1 - x_2) (0 if safe)."""
    if not p_percent_rule(contributions, p):
        return 0.0
    c = _contributions(contributions)
    x1, x2 = c[0], (c[1] if c.size > 1 else 0.0)
    return float(p / 100.0 * x1 - (c.sum() - x1 - x2))


# --------------------------------------------------------------------------- relations
def sum_relations(n_cells: int, sums: Sequence[tuple[int, Sequence[int]]]) -> sp.csr_matrix:
    """The relations "x[total] = sum of x[parts]" as rows of A (A x = 0)."""
    rows, cols, vals = [], [], []
    for r, (total, parts) in enumerate(sums):
        parts = list(parts)
        if total in parts:
            raise ValueError(f"relation {r}: cell {total} is both the total and a part")
        rows += [r] * (len(parts) + 1)
        cols += [int(total), *map(int, parts)]
        vals += [-1.0] + [1.0] * len(parts)
    cols_a = np.asarray(cols, dtype=np.int64)
    if cols_a.size and (cols_a.min() < 0 or cols_a.max() >= n_cells):
        raise ValueError(f"a relation names a cell outside 0..{n_cells - 1}")
    return sp.csr_matrix((vals, (rows, cols_a)), shape=(len(sums), n_cells))


def with_margins(interior) -> np.ndarray:
    """A 2-D table of interior cells with its totals appended: row sums in a last column,
    column sums in a last row, the grand total in the corner (the layout `audit_table`
    and `protect_table` read)."""
    a = np.asarray(interior, dtype=float)
    if a.ndim != 2:
        raise ValueError(f"the interior must be 2-D (got {a.ndim}-D)")
    t = np.zeros((a.shape[0] + 1, a.shape[1] + 1))
    t[:-1, :-1] = a
    t[:-1, -1] = a.sum(axis=1)
    t[-1, :-1] = a.sum(axis=0)
    t[-1, -1] = a.sum()
    return t


def table_relations(shape: tuple[int, int]) -> sp.csr_matrix:
    """Relations of a 2-D table whose last row and last column are its totals (cells in
    row-major order): every row sums to its last cell, every column to its last cell."""
    n_r, n_c = shape
    if n_r < 2 or n_c < 2:
        raise ValueError(f"a table with margins needs at least 2 rows and 2 columns (got {n_r} x {n_c})")
    idx = np.arange(n_r * n_c).reshape(n_r, n_c)
    sums = [(idx[i, -1], idx[i, :-1]) for i in range(n_r)] + [(idx[-1, j], idx[:-1, j]) for j in range(n_c)]
    return sum_relations(n_r * n_c, sums)


# --------------------------------------------------------------------------- HiGHS
_MS = highspy.HighsModelStatus


class _LP:
    """One HiGHS LP kept between solves, so every solve starts from the last basis.

    min/max c x  s.t.  row_lo <= M x <= row_hi,  col_lo <= x <= col_hi.
    """

    def __init__(self, matrix: sp.spmatrix, col_lo, col_hi, row_lo, row_hi, time_limit: float):
        m = sp.csc_matrix(matrix, dtype=np.float64)
        m.sort_indices()
        self.n = m.shape[1]
        h = _QuietHighs()
        h.setOptionValue("presolve", "off")  # keeps the basis from one solve to the next
        # Most solves change only the objective: the primal simplex restarts from the last
        # optimal basis, still feasible (about 3 times faster here than the default dual).
        h.setOptionValue("simplex_strategy", 4)
        lp = highspy.HighsLp()
        lp.num_col_, lp.num_row_ = m.shape[1], m.shape[0]
        lp.col_cost_ = np.zeros(self.n)
        lp.col_lower_ = _inf(col_lo)
        lp.col_upper_ = _inf(col_hi)
        lp.row_lower_ = _inf(row_lo)
        lp.row_upper_ = _inf(row_hi)
        lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
        lp.a_matrix_.start_ = m.indptr.astype(np.int32)
        lp.a_matrix_.index_ = m.indices.astype(np.int32)
        lp.a_matrix_.value_ = m.data
        h.passModel(lp)
        self.h = h
        self.time_limit = float(time_limit)
        self.lo = np.asarray(col_lo, np.float64).copy()
        self.hi = np.asarray(col_hi, np.float64).copy()
        self._cost_idx = np.zeros(0, np.int32)
        self.solves = 0

    def bounds(self, idx, lo, hi) -> None:
        idx = np.asarray(idx, np.int32).reshape(-1)
        lo = np.full(idx.size, float(lo)) if np.ndim(lo) == 0 else np.asarray(lo, np.float64).reshape(-1)
        hi = np.full(idx.size, float(hi)) if np.ndim(hi) == 0 else np.asarray(hi, np.float64).reshape(-1)
        self.lo[idx], self.hi[idx] = lo, hi
        self.h.changeColsBounds(idx.size, idx, lo, hi)

    def solve(self, idx, cost, maximize: bool = False, want_x: bool = True) -> tuple[str, float, np.ndarray | None]:
        """("optimal" | "unbounded" | "infeasible" | "time" | "error", objective, x)."""
        idx = np.asarray(idx, np.int32).reshape(-1)
        cost = np.full(idx.size, float(cost)) if np.ndim(cost) == 0 else np.asarray(cost, np.float64).reshape(-1)
        h = self.h
        if self._cost_idx.size:
            h.changeColsCost(self._cost_idx.size, self._cost_idx, np.zeros(self._cost_idx.size))
        h.changeColsCost(idx.size, idx, cost)
        self._cost_idx = idx
        h.changeObjectiveSense(highspy.ObjSense.kMaximize if maximize else highspy.ObjSense.kMinimize)
        # HiGHS measures time_limit from the object's creation, not from this call.
        h.setOptionValue("time_limit", h.getRunTime() + self.time_limit)
        h.run()
        self.solves += 1
        ms = h.getModelStatus()
        if ms == _MS.kOptimal:
            x = np.asarray(h.getSolution().col_value) if want_x else None
            return "optimal", float(h.getObjectiveValue()), x
        if ms in (_MS.kUnbounded, _MS.kUnboundedOrInfeasible):
            return "unbounded", np.inf if maximize else -np.inf, None
        if ms == _MS.kInfeasible:
            return "infeasible", np.nan, None
        if ms == _MS.kTimeLimit:
            return "time", np.nan, None
        return "error", np.nan, None


def _inf(a) -> np.ndarray:
    return np.asarray(a, np.float64)  # highspy's kHighsInf is IEEE infinity


# --------------------------------------------------------------------------- inputs
@dataclass
class _Problem:
    x: np.ndarray
    A: sp.csr_matrix
    lower: np.ndarray
    upper: np.ndarray
    upl: np.ndarray
    lpl: np.ndarray
    single: np.ndarray
    tol: np.ndarray
    _dag: sp.csr_matrix | None = None
    _dag_t: sp.csr_matrix | None = None
    _a_csc: sp.csc_matrix | None = None
    _up: dict = field(default_factory=dict)
    _related: dict = field(default_factory=dict)
    _leaves: dict = field(default_factory=dict)
    _bal: dict = field(default_factory=dict)

    def sub(self, rows: np.ndarray, cells: np.ndarray) -> sp.csc_matrix:
        """A[rows][:, cells] for the rows and cells of one connected part (every relation
        holding one of `cells` is among `rows`, which are sorted), without scanning all of A."""
        if self._a_csc is None:
            self._a_csc = self.A.tocsc()
        a = self._a_csc
        starts, ends = a.indptr[cells], a.indptr[cells + 1]
        lens = ends - starts
        idx = np.repeat(starts - np.concatenate([[0], np.cumsum(lens)[:-1]]), lens) + np.arange(lens.sum())
        local = np.searchsorted(rows, a.indices[idx])
        col = np.repeat(np.arange(cells.size), lens)
        return sp.csc_matrix((a.data[idx], (local, col)), shape=(rows.size, cells.size))

    def _graph(self) -> None:
        """total -> part edges of the relations of the sum form (one -1, the rest +1)."""
        coo = sp.coo_matrix(self.A)
        rows = self.A.shape[0]
        minus = np.bincount(coo.row, weights=coo.data == -1.0, minlength=rows)
        other = np.bincount(coo.row, weights=~np.isin(coo.data, (-1.0, 1.0)), minlength=rows)
        sel = ((minus == 1) & (other == 0))[coo.row]
        total = np.full(rows, -1, np.int64)
        is_tot = sel & (coo.data < 0)
        total[coo.row[is_tot]] = coo.col[is_tot]
        part = sel & (coo.data > 0) & (total[coo.row] >= 0)
        n = self.x.size
        self._dag = sp.csr_matrix((np.ones(part.sum()), (total[coo.row[part]], coo.col[part])), shape=(n, n))
        self._dag_t = self._dag.T.tocsr()
        if self._a_csc is None:
            self._a_csc = self.A.tocsc()

    def totals_of(self, i: int) -> np.ndarray:
        """Cell i and every total containing it, through relations of the sum form."""
        if self._dag is None:
            self._graph()
        i = int(i)
        if i not in self._up:
            ptr, idx = self._dag_t.indptr, self._dag_t.indices
            seen, todo = {i}, [i]
            while todo:  # totals are few and near: a plain walk beats a graph call
                c = todo.pop()
                for t in idx[ptr[c]:ptr[c + 1]].tolist():
                    if t not in seen:
                        seen.add(t)
                        todo.append(t)
            self._up[i] = np.array(sorted(seen), np.int64)
        return self._up[i]

    def related(self, i: int) -> np.ndarray:
        """Cells holding the same contributors as part of cell i: the totals containing it and
        the parts it contains. A singleton respondent inside cell i learns nothing about
        others from i's value."""
        i = int(i)
        if i not in self._related:
            up = self.totals_of(i)
            down = csgraph.breadth_first_order(self._dag, i, directed=True, return_predecessors=False)
            self._related[i] = np.union1d(down, up)
        return self._related[i]

    def leaves_under(self, i: int, limit: int = 4) -> list[int]:
        """Cell i if it is no total, else up to `limit` of the cells it sums that are no
        totals themselves, largest first."""
        if self._dag is None:
            self._graph()
        if int(i) in self._leaves:
            return self._leaves[int(i)]
        ptr, idx = self._dag.indptr, self._dag.indices
        seen, todo, leaves = {int(i)}, [int(i)], []
        while todo:
            c = todo.pop()
            kids = idx[ptr[c]:ptr[c + 1]].tolist()
            if not kids:
                leaves.append(c)
            for k in kids:
                if k not in seen:
                    seen.add(k)
                    todo.append(k)
        self._leaves[int(i)] = sorted(leaves, key=lambda c: -self.x[c])[:limit]
        return self._leaves[int(i)]

    def certificate(self, i: int, sup: np.ndarray) -> tuple[bool, bool, bool]:
        """(down, up, up without limit): moving a cell l that i sums (or i itself) by LPL_i
        down (UPL_i up) together with every total containing l - i among them - gives a
        table the attacker cannot exclude.

        Such a table satisfies every relation (checked), changes only suppressed cells and no
        singleton other than those holding i's own contributors, and stays within the bounds;
        with no upper bound on the cells moved, i has no upper limit at all. The same holds
        for every singleton respondent, so no LP is needed where it applies; elsewhere the
        LPs decide.
        """
        down = up = free = False
        for leaf in self.leaves_under(i):
            d = self.totals_of(leaf)
            if not sup[d].all() or not self._balanced(leaf):
                continue
            others = d[self.single[d]]
            others = others[(others != leaf) & (others != i)]  # both hold i's contributors
            if others.size and not np.isin(others, self.related(i)).all():
                continue
            x, tol = self.x[d], self.tol[d]
            down |= bool((x - self.lpl[i] >= self.lower[d] - tol).all())
            f = bool(np.isinf(self.upper[d]).all())
            free |= f
            up |= f or bool((x + self.upl[i] <= self.upper[d] + tol).all())
            if down and free:
                break
        return down, up, free

    def _balanced(self, leaf: int) -> bool:
        """A x = 0 still holds after adding 1 to the leaf and every total containing it."""
        if leaf in self._bal:
            return self._bal[leaf]
        d = self.totals_of(leaf)
        a = self._a_csc
        rows: dict[int, float] = {}
        for col in d.tolist():
            lo, hi = a.indptr[col], a.indptr[col + 1]
            for r, v in zip(a.indices[lo:hi].tolist(), a.data[lo:hi].tolist()):
                rows[r] = rows.get(r, 0.0) + v
        self._bal[leaf] = not any(abs(v) > 1e-9 for v in rows.values())
        return self._bal[leaf]


def _vector(name: str, v, n: int, default: float) -> np.ndarray:
    if v is None:
        return np.full(n, default, np.float64)
    a = np.asarray(v, dtype=np.float64)
    if a.ndim == 0:
        return np.full(n, float(a))
    a = a.reshape(-1)
    if a.size != n:
        raise ValueError(f"{name} has {a.size} values for {n} cells")
    if np.isnan(a).any():
        raise ValueError(f"{name} holds NaN")
    return a.copy()


def _mask(name: str, v, n: int) -> np.ndarray:
    if v is None:
        return np.zeros(n, bool)
    a = np.asarray(v).reshape(-1)
    if a.size != n:
        raise ValueError(f"{name} has {a.size} values for {n} cells")
    return a.astype(bool)


def _problem(values, relations, lower, upper, protection, lower_protection, singletons) -> _Problem:
    x = np.asarray(values, dtype=np.float64).reshape(-1)
    n = x.size
    if not np.isfinite(x).all():
        raise ValueError("cell values must be finite numbers")
    A = sp.csr_matrix(relations, dtype=np.float64)
    if A.shape[1] != n:
        raise ValueError(f"the relations have {A.shape[1]} columns for {n} cells")
    if not np.isfinite(A.data).all():
        raise ValueError("relation coefficients must be finite")
    lo = _vector("lower", lower, n, 0.0)
    hi = _vector("upper", upper, n, np.inf)
    if not np.isfinite(lo).all():
        raise ValueError("lower bounds must be finite (cells are non-negative by default)")
    if (x < lo - 1e-9 * (1 + np.abs(x))).any() or (x > hi + 1e-9 * (1 + np.abs(x))).any():
        i = int(np.flatnonzero((x < lo) | (x > hi))[0])
        raise ValueError(f"cell {i} = {x[i]:g} lies outside its bounds [{lo[i]:g}, {hi[i]:g}]")
    scale = np.abs(A) @ np.abs(x) + 1.0
    off = np.abs(A @ x)
    if (off > 1e-9 * scale).any():
        r = int(np.argmax(off / scale))
        raise ValueError(f"the cells do not satisfy relation {r} (off by {off[r]:g})")
    upl = _vector("protection", protection, n, 0.0)
    lpl = _vector("lower_protection", lower_protection, n, np.nan) if lower_protection is not None else upl.copy()
    if (upl < 0).any() or (lpl < 0).any():
        raise ValueError("protection levels must be non-negative")
    # A cell cannot be shown below its lower bound nor above its upper bound.
    lpl = np.minimum(lpl, x - lo)
    upl = np.minimum(upl, hi - x)
    tol = 1e-6 * (1.0 + np.abs(x))
    return _Problem(x, A, lo, hi, upl, lpl, _mask("singletons", singletons, n), tol)


def _components(A: sp.csr_matrix, cells: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    """Connected parts of the relations restricted to `cells` (bool): (cell indices, row indices).

    Cells sharing a relation are connected; a cell in no relation is a part of its own.
    """
    if not cells.any():
        return []
    sub = sp.csr_matrix(A[:, cells])
    sub.eliminate_zeros()
    idx = np.flatnonzero(cells)
    k = idx.size
    used_rows = np.flatnonzero(np.diff(sub.indptr) > 0)
    coo = sub[used_rows].tocoo()
    # Bipartite graph: cell nodes 0..k-1, row nodes k..k+len(used_rows)-1.
    g = sp.coo_matrix((np.ones(coo.nnz), (coo.col, k + coo.row)), shape=(k + len(used_rows),) * 2)
    n_comp, label = csgraph.connected_components(g, directed=False)
    out = []
    cell_lab, row_lab = label[:k], label[k:]
    order_c = np.argsort(cell_lab, kind="stable")
    order_r = np.argsort(row_lab, kind="stable")
    bc = np.searchsorted(cell_lab[order_c], np.arange(n_comp + 1))
    br = np.searchsorted(row_lab[order_r], np.arange(n_comp + 1))
    for c in range(n_comp):
        cells_c = idx[order_c[bc[c]:bc[c + 1]]]
        if cells_c.size:
            out.append((cells_c, used_rows[order_r[br[c]:br[c + 1]]]))
    return out


# --------------------------------------------------------------------------- audit
@dataclass
class Audit:
    """The audit of a suppression pattern (arrays have the shape of the table).

    `low`/`high`: the interval an outside attacker derives for each suppressed cell (NaN for
    published cells; `high` is +inf where nothing bounds the cell; NaN where an LP did not
    finish). `insider_low`/`insider_high`: for a cell whose outside interval meets its
    protection but that some singleton respondent narrows below it, the tightest bounds those
    respondents derive (`insider_width`: the narrowest interval one of them gets); elsewhere the
    outsider's interval, which every respondent then provably cannot narrow below the
    protection. `required_low`/`required_high`: LPL and UPL.
    """

    values: np.ndarray
    suppressed: np.ndarray
    low: np.ndarray
    high: np.ndarray
    insider_low: np.ndarray
    insider_high: np.ndarray
    insider_width: np.ndarray
    required_low: np.ndarray
    required_high: np.ndarray
    sliding: bool
    lps: int = 0
    seconds: float = 0.0

    @property
    def solved(self) -> np.ndarray:
        """Suppressed cells whose interval was computed (every LP finished)."""
        return self.suppressed & ~np.isnan(self.low) & ~np.isnan(self.high)

    @property
    def complete(self) -> bool:
        return bool(np.array_equal(self.solved, self.suppressed))

    @property
    def width(self) -> np.ndarray:
        return self.high - self.low

    @property
    def exact(self) -> np.ndarray:
        """Suppressed cells the attacker recovers exactly (low = high)."""
        tol = 1e-6 * (1.0 + np.abs(self.values))
        with np.errstate(invalid="ignore"):
            return self.solved & (self.width <= tol)

    @property
    def required(self) -> np.ndarray:
        return (self.required_low > 0) | (self.required_high > 0)

    @property
    def protected(self) -> np.ndarray:
        """Cells meeting their protection (cells requiring none count as protected).

        Full: high >= x + UPL and low <= x - LPL; sliding: high - low >= UPL + LPL; both for
        the outside attacker and for every singleton respondent. A published cell that
        requires protection is not protected.
        """
        tol = 1e-6 * (1.0 + np.abs(self.values))
        x = self.values
        with np.errstate(invalid="ignore"):
            if self.sliding:
                need = self.required_low + self.required_high - tol
                ok = (self.high - self.low >= need) & (self.insider_width >= need)
            else:
                ok = ((self.high >= x + self.required_high - tol) & (self.low <= x - self.required_low + tol)
                      & (self.insider_high >= x + self.required_high - tol)
                      & (self.insider_low <= x - self.required_low + tol))
        return ~self.required | (self.solved & ok)

    @property
    def underprotected(self) -> np.ndarray:
        return self.required & ~self.protected


def audit(values, suppressed, relations, *, lower=0.0, upper=np.inf, protection=None, lower_protection=None,
          sliding: bool = False, singletons=None, time_limit: float = LP_TIME_LIMIT,
          time_budget: float | None = TIME_BUDGET, progress: Progress | None = None) -> Audit:
    """The seed's audit for any set of additive relations (A x = 0, `relations` is A).

    `values` (n,) are the true cells, `suppressed` (n,) the withheld ones; `protection` the
    upper protection UPL (one number for every suppressed cell, or one per cell),
    `lower_protection` LPL (default UPL), both capped at what the bounds allow; `singletons`
    marks one-contributor cells whose respondent knows the value. Intervals are computed
    connected part by connected part of the suppressed cells (see the module docstring); parts
    not reached within `time_budget` seconds are left unaudited (NaN, `complete` is False).
    """
    t0 = time.perf_counter()
    pb = _problem(values, relations, lower, upper, protection, lower_protection, singletons)
    sup = _mask("suppressed", suppressed, pb.x.size)
    # A single number is the protection every suppressed cell needs; arrays say it per cell
    # (a published cell that needs protection is reported as under-protected).
    if np.ndim(protection) == 0:
        pb.upl[~sup] = 0.0
    if np.ndim(lower_protection if lower_protection is not None else protection) == 0:
        pb.lpl[~sup] = 0.0
    res = _empty_audit(pb, sup)
    res.sliding = bool(sliding)
    parts = _components(pb.A, sup)
    stop = np.inf if time_budget is None else t0 + time_budget
    for k, (cells, rows) in enumerate(parts):
        if time.perf_counter() < stop:
            res.lps += _audit_part(pb, sup, cells, rows, res, time_limit)
        if progress:
            progress(k + 1, len(parts))
    res.seconds = time.perf_counter() - t0
    return res


def _empty_audit(pb: _Problem, sup: np.ndarray) -> Audit:
    nan = np.full(pb.x.size, np.nan)
    return Audit(values=pb.x.copy(), suppressed=sup.copy(), low=nan.copy(), high=nan.copy(),
                 insider_low=nan.copy(), insider_high=nan.copy(), insider_width=nan.copy(),
                 required_low=pb.lpl.copy(), required_high=pb.upl.copy(), sliding=False)


def _audit_part(pb: _Problem, sup: np.ndarray, cells: np.ndarray, rows: np.ndarray, res: Audit,
                time_limit: float) -> int:
    """Intervals of the suppressed `cells` of one connected part; returns the LPs solved."""
    x, lo, hi = pb.x[cells], pb.lower[cells], pb.upper[cells]
    if rows.size == 0:  # in no relation: only the a-priori bounds
        for arr, v in ((res.low, lo), (res.high, hi), (res.insider_low, lo), (res.insider_high, hi)):
            arr[cells] = v
        res.insider_width[cells] = hi - lo
        return 0
    rhs = -(pb.A[rows] @ np.where(sup, 0.0, pb.x))
    M = pb.sub(rows, cells)
    k = cells.size
    tol = pb.tol[cells]
    required = (pb.upl[cells] > 0) | (pb.lpl[cells] > 0)
    low = np.full(k, np.nan)
    high = np.full(k, np.nan)
    # Certificates (see _Problem.certificate): a cell moved with its totals. They settle the
    # unbounded cells, and for cells required to reach their lower bound, that bound.
    cert = np.zeros((k, 3), bool)
    for i in np.flatnonzero(required):
        cert[i] = pb.certificate(cells[i], sup)
    high[cert[:, 2]] = np.inf
    # Nothing published in the relations and every lower bound 0: the table of zeros is possible.
    if np.allclose(rhs, 0.0) and (lo == 0).all():
        low[:] = 0.0
    lo_truth = x <= lo + tol  # the true table is their witness: no singleton respondent changes it
    low[lo_truth] = lo[lo_truth]
    model: _LP | None = None
    cone: _Cone | None = None

    def lp() -> _LP:
        nonlocal model
        if model is None:
            model = _LP(M, lo, hi, rhs, rhs, time_limit)
        return model

    # Unbounded above: the cells some recession direction d >= 0 (M d = 0, d = 0 on cells with
    # a finite upper bound) raises; one LP finds them all (maximise sum t, t <= d, t <= 1).
    free = ~np.isfinite(hi)
    unbounded = cert[:, 2].copy()
    # With nothing published in the relations and lower bounds 0, every multiple of the true
    # table is possible: cells above 0 in it have no upper limit.
    if np.allclose(rhs, 0.0) and (lo == 0).all():
        unbounded |= free & (x > tol)
    skip = np.zeros(k, bool)
    if (free & ~unbounded).any():
        cone = _Cone(M, free, time_limit)
        found = cone.support()
        if found is None:  # did not finish: these cells stay unknown
            skip = free & ~unbounded
        else:
            unbounded |= found
    high[unbounded] = np.inf
    # Cells at their lower bound in one feasible table minimising their sum: one LP for many.
    rest = np.isnan(low) & ~skip
    witness_lo: dict[int, np.ndarray | None] = {}
    witness_hi: dict[int, np.ndarray | None] = {}
    if rest.sum() > 1:
        status, _v, sol = lp().solve(np.flatnonzero(rest), 1.0)
        if status == "optimal":
            hit = rest & (sol <= lo + tol)
            low[hit] = lo[hit]
            for i in np.flatnonzero(hit):
                witness_lo[i] = sol
    # Witness tables are kept only where singleton respondents may need them.
    keep = required & bool(pb.single[cells].any())
    for i in np.flatnonzero(~skip):
        if np.isnan(low[i]):
            status, v, sol = lp().solve(i, 1.0, want_x=keep[i])
            if status == "optimal":
                low[i], witness_lo[i] = v, sol
        if np.isnan(high[i]):
            status, v, sol = lp().solve(i, 1.0, maximize=True, want_x=keep[i])
            if status == "optimal":
                high[i], witness_hi[i] = v, sol
            elif status == "unbounded":
                high[i] = np.inf
    res.low[cells] = low
    res.high[cells] = high
    # Singleton respondents: the protection must hold against each of them (see _respondents).
    # Where one breaks it, the interval the most informed respondent derives is computed.
    single = pb.single[cells]
    ins_lo, ins_hi, ins_w = low.copy(), high.copy(), high - low
    needs = required & ~np.isnan(low) & ~np.isnan(high)
    for i in np.flatnonzero(needs) if single.any() else ():
        gi = cells[i]
        if cert[i, 0] and cert[i, 1]:
            continue
        if sliding_ok := res.sliding:
            sliding_ok = high[i] - low[i] >= pb.upl[gi] + pb.lpl[gi] - tol[i]
        outsider_ok = sliding_ok if res.sliding else (
            high[i] >= x[i] + pb.upl[gi] - tol[i] and low[i] <= x[i] - pb.lpl[gi] + tol[i])
        if not outsider_ok:
            continue  # under-protected already; the outsider's interval is reported
        others = np.flatnonzero(single)
        others = others[~np.isin(cells[others], pb.related(gi))]
        if not others.size:
            continue
        m = lp()
        w_lo = x if lo_truth[i] else witness_lo.get(i)
        tables = (w_lo, witness_hi.get(i)) if not res.sliding else None
        verdict = _respondents(m, i, x, lo, hi, others, tol[i], pb.lpl[gi], pb.upl[gi], res.sliding, tables)
        if verdict is None:
            ins_lo[i] = ins_hi[i] = ins_w[i] = np.nan
            continue
        for j in verdict:
            m.bounds(j, x[j], x[j])
            s1, lo_j, _ = m.solve(i, 1.0, want_x=False)
            s2, hi_j, _ = m.solve(i, 1.0, maximize=True, want_x=False)
            m.bounds(j, lo[j], hi[j])
            lo_j = lo_j if s1 == "optimal" else np.nan
            hi_j = hi_j if s2 in ("optimal", "unbounded") else np.nan
            ins_lo[i] = np.fmax(ins_lo[i], lo_j) if not np.isnan(lo_j) else np.nan
            ins_hi[i] = np.fmin(ins_hi[i], hi_j) if not np.isnan(hi_j) else np.nan
            with np.errstate(invalid="ignore"):
                ins_w[i] = min(ins_w[i], hi_j - lo_j) if not (np.isnan(lo_j) or np.isnan(hi_j)) else np.nan
    res.insider_low[cells] = ins_lo
    res.insider_high[cells] = ins_hi
    res.insider_width[cells] = ins_w
    return (model.solves if model is not None else 0) + (cone.model.solves if cone is not None else 0)


def _respondents(m: _LP, i: int, x: np.ndarray, lo: np.ndarray, hi: np.ndarray, others: np.ndarray, tol: float,
                 lpl: float, upl: float, sliding: bool, tables=None) -> list[int] | None:
    """The singleton respondents among `others` (columns of `m`) who can exclude the values
    cell i must keep possible: x_i - LPL and x_i + UPL (full), or a range of UPL + LPL
    (sliding). [] when none can; None if an LP did not finish.

    Respondent j cannot when the LPs with x_j fixed (cell i held within the targets) still
    reach them. A witness table reaching a target with j unmoved proves that for j: the
    attacker knowing x_j cannot exclude it. So every table found is kept as a witness for
    each respondent it leaves unmoved, one direction at a time (full), or as the lowest and
    highest value of cell i seen with j unmoved (sliding: their distance must reach
    UPL + LPL). The respondents no witness covers yet are held at their values together;
    a group that fails is halved, and so on down to single respondents, each half solving
    only the directions its members still lack. A table beyond a target counts as
    reaching it: the truth is a table too, and the segment between the two passes the
    target with j unmoved. The result is the same as holding each respondent alone.
    `tables` (low, high witness) may give the first witness: any table the attacker cannot
    exclude with cell i at or beyond the targets (one found with fewer cells suppressed too).
    """
    need_lo = lpl + (upl if sliding else 0.0)
    need_hi = upl + (lpl if sliding else 0.0)
    lo_t, hi_t = max(lo[i], x[i] - need_lo), min(hi[i], x[i] + need_hi)
    x_o = x[others]
    slack = 1e-7 * (1 + np.abs(x_o))
    # per respondent: the lowest and highest value of cell i in a witness leaving it unmoved
    best_lo = np.full(others.size, np.inf)
    best_hi = np.full(others.size, -np.inf)

    def witness(w_lo, w_hi) -> None:
        if w_lo is not None:
            still = np.abs(w_lo[others] - x_o) <= slack
            best_lo[still] = np.minimum(best_lo[still], max(float(w_lo[i]), lo_t))
        if w_hi is not None:
            still = np.abs(w_hi[others] - x_o) <= slack
            best_hi[still] = np.maximum(best_hi[still], min(float(w_hi[i]), hi_t))

    def low_ok(k: np.ndarray) -> np.ndarray:
        return best_lo[k] <= x[i] - lpl + tol

    def high_ok(k: np.ndarray) -> np.ndarray:
        return best_hi[k] >= x[i] + upl - tol

    def covered(k: np.ndarray) -> np.ndarray:
        if sliding:
            return best_hi[k] - best_lo[k] >= upl + lpl - tol
        return low_ok(k) & high_ok(k)

    def reach(k: np.ndarray) -> bool | None:
        """Whether the targets stay reachable with the respondents `others[k]` fixed (True
        also when none are); their witnesses are kept. None if an LP did not finish."""
        known = others[k]
        want_lo = sliding or not k.size or not low_ok(k).all()
        want_hi = sliding or not k.size or not high_ok(k).all()
        m.bounds(i, lo_t, hi_t)
        if known.size:
            m.bounds(known, x[known], x[known])
        try:
            s1, v1, w1 = m.solve(i, 1.0) if want_lo else ("optimal", -np.inf, None)
            s2, v2, w2 = m.solve(i, 1.0, maximize=True) if want_hi else ("optimal", np.inf, None)
        finally:
            m.bounds(i, lo[i], hi[i])
            if known.size:
                m.bounds(known, lo[known], hi[known])
        if s1 != "optimal" or s2 != "optimal":
            return None
        witness(w1, w2)
        if sliding:
            return v2 - v1 >= upl + lpl - tol
        return v1 <= x[i] - lpl + tol and v2 >= x[i] + upl - tol

    everyone = np.arange(others.size)
    if tables is None or tables[0] is None or tables[1] is None:
        ok = reach(np.zeros(0, np.int64))
        if ok is None:
            return None
        if not ok:  # the outsider already narrows it: reported by the outsider's interval
            return []
    else:
        witness(*tables)
    failing: list[int] = []
    lacking = everyone[~covered(everyone)]
    groups = [lacking] if lacking.size else []
    while groups:  # a group held fixed together covers each of its members; halve those that fail
        g = groups.pop()
        g = g[~covered(g)]  # members a later witness has covered meanwhile
        if not g.size:
            continue
        ok_g = reach(g)
        if ok_g is None:
            return None
        if ok_g:
            continue
        if g.size == 1:
            failing.append(int(others[g[0]]))
        else:
            groups += [g[: g.size // 2], g[g.size // 2:]]
    return sorted(failing)


class _Cone:
    """Recession directions d >= 0 of the attacker's feasible set: M d = 0, d = 0 where the
    cell's upper bound is finite. max x_i is unbounded exactly when some d has d_i > 0."""

    def __init__(self, M: sp.spmatrix, free: np.ndarray, time_limit: float):
        m, k = M.shape
        self.k = k
        self.free = free
        # Columns: d (k), t (k). Rows: M d = 0; t - d <= 0.
        c = sp.coo_matrix(M)
        ar = np.arange(k)
        mat = sp.csc_matrix((np.concatenate([c.data, -np.ones(k), np.ones(k)]),
                             (np.concatenate([c.row, m + ar, m + ar]), np.concatenate([c.col, ar, k + ar]))),
                            shape=(m + k, 2 * k))
        d_hi = np.where(free, np.inf, 0.0)
        self.model = _LP(mat, np.zeros(2 * k), np.concatenate([d_hi, np.where(free, 1.0, 0.0)]),
                         np.concatenate([np.zeros(M.shape[0]), np.full(k, -np.inf)]),
                         np.zeros(M.shape[0] + k), time_limit)

    def support(self) -> np.ndarray | None:
        """Cells some direction raises: maximise sum t; at the optimum t_i = 1 exactly on the
        largest support (directions add up and scale, so all of it is reached at once)."""
        status, _v, sol = self.model.solve(np.arange(self.k, 2 * self.k), 1.0, maximize=True)
        if status != "optimal":
            return None
        return sol[self.k:] > 0.5

    def raises(self, i: int, js) -> bool | None:
        """Does a direction with d_j = 0 for every j of `js` raise cell i? (None if the LP
        did not finish.)"""
        m = self.model
        js = np.atleast_1d(np.asarray(js, np.int64))
        m.bounds(js, 0.0, 0.0)
        status, v, _s = m.solve(self.k + i, 1.0, maximize=True)
        m.bounds(js, 0.0, np.where(self.free[js], np.inf, 0.0))
        if status != "optimal":
            return None
        return v > 0.5


def audit_table(table, suppressed, **options) -> Audit:
    """`audit` for a 2-D table whose last row and last column are its totals.

    `table` (r, c) holds the cells and margins, `suppressed` (r, c) the withheld ones; options
    as in `audit` (arrays of shape (r, c) or scalars). The result's arrays have shape (r, c).
    The a-priori bounds are the seed's, [0, the table's grand total] (section 4: "bounded
    below by zero ... and above by the grand total for the table"), unless `lower` or
    `upper` are given (e.g. ``upper=np.inf``).
    """
    t = _table(table)
    options.setdefault("upper", float(t[-1, -1]))
    res = audit(t.reshape(-1), np.asarray(suppressed).reshape(-1), table_relations(t.shape),
                **{k: _flat(v) for k, v in options.items()})
    return _reshape(res, t.shape)


def _table(table) -> np.ndarray:
    t = np.asarray(table, dtype=np.float64)
    if t.ndim != 2:
        raise ValueError(f"the table must be 2-D with its totals in the last row and column (got {t.ndim}-D)")
    if t.shape[0] < 2 or t.shape[1] < 2:
        raise ValueError(f"a table with margins needs at least 2 rows and 2 columns (got {t.shape[0]} x {t.shape[1]})")
    if not np.isfinite(t).all() or (t < 0).any():
        raise ValueError("table cells must be finite and non-negative")
    tol = 1e-9 * (1 + np.abs(t).max())
    rows = np.abs(t[:, :-1].sum(axis=1) - t[:, -1])
    if (rows > tol).any():
        i = int(np.argmax(rows))
        raise ValueError(f"row {i}: its cells sum to {t[i, :-1].sum():g}, not its total {t[i, -1]:g}")
    cols = np.abs(t[:-1, :].sum(axis=0) - t[-1, :])
    if (cols > tol).any():
        j = int(np.argmax(cols))
        raise ValueError(f"column {j}: its cells sum to {t[:-1, j].sum():g}, not its total {t[-1, j]:g}")
    return t


def _flat(v):
    return np.asarray(v).reshape(-1) if np.ndim(v) > 1 else v


def _reshape(res, shape):
    for name, val in vars(res).items():
        if isinstance(val, np.ndarray) and val.size == int(np.prod(shape)):
            setattr(res, name, val.reshape(shape))
        elif isinstance(val, Audit):
            _reshape(val, shape)
    return res


# --------------------------------------------------------------------------- protection
@dataclass
class Protection:
    """A suppression pattern and its audit (arrays have the shape of the table).

    `suppressed` = `primary` | `withheld` (given as already suppressed) | `complementary` |
    `fallback` (cells of a connected part withheld whole because an LP did not finish).
    `cost` is the sum of the cost of the complementary cells (value or count); `optimal`
    says the exact model proved its pattern optimal (always False for the LP).
    `capacity` names the capacity model ("value", "unbounded" or "given"). With a
    refinement run, `first_complementary` holds the first run's complements (the second
    run's are a subset of them).
    """

    suppressed: np.ndarray
    primary: np.ndarray
    withheld: np.ndarray
    complementary: np.ndarray
    fallback: np.ndarray
    audit: Audit
    method: str
    cost_kind: str
    cost: float
    optimal: bool
    lps: int = 0
    seconds: float = 0.0
    parts: int = 0  # connected parts of the table that hold a primary
    notes: list[str] = field(default_factory=list)
    capacity: str = "value"
    frozen: np.ndarray | None = None
    refined: bool = False
    first_complementary: np.ndarray | None = None


#: Capacity models of `protect` (besides an array of capacities per cell).
CAPACITIES = ("value", "unbounded")
#: Costs of the refinement run.
REFINE_COSTS = ("reverse", "value", "count")


def _capacity(capacity, x: np.ndarray) -> tuple[np.ndarray, str]:
    """Per-cell capacity: how far a cell other than the protected primary may move."""
    if isinstance(capacity, str):
        if capacity == "value":
            return np.abs(x), "value"
        if capacity == "unbounded":
            return np.full(x.size, np.inf), "unbounded"
        raise ValueError(f"capacity must be one of {', '.join(CAPACITIES)} or one number per cell (got {capacity!r})")
    cap = _vector("capacity", capacity, x.size, 0.0)
    if (cap < 0).any():
        raise ValueError("capacities must be non-negative")
    return cap, "given"


def protect(values, primary, relations, protection, *, lower_protection=None, sliding: bool = False,
            cost: str = "value", method: str = "lp", suppressed=None, lower=0.0, upper=np.inf,
            singletons=None, capacity="value", frozen=None, refine: bool = False, refine_cost: str = "reverse",
            time_limit: float = LP_TIME_LIMIT, part_time_limit: float = PART_TIME_LIMIT,
            time_budget: float | None = TIME_BUDGET, progress: Progress | None = None,
            audit_progress: Progress | None = None) -> Protection:
    """Complementary suppression so every primary meets its protection under the audit.

    `values` (n,) true cells; `primary` (n,) the cells the primary rules withhold;
    `relations` the matrix A (A x = 0); `protection` UPL (and `lower_protection` LPL, default
    UPL) per primary; `suppressed` cells already withheld (cost 0, need no protection);
    `cost` "value" (the withheld total, ties to fewer cells) or "count" (the number of cells);
    `method` "lp" (the seed's sequential LP) or "milp" (the exact integer model, for small
    tables). Works connected part by connected part; every result is audited (with the
    a-priori bounds `lower`, `upper`). Parts not reached within `time_budget` seconds are
    withheld whole (safe, and said in `notes`); the audit then gets the same budget.

    The seed's options (Massell, sections 3 and 6):

    - `capacity`: how far each cell other than the primary being protected may move in a
      deviation. "value" (default, the seed's "in the simplest cases, the capacity of a
      cell is equal to its value"): up and down by at most its value, so a zero cell is
      never a complement; "unbounded": as far as the a-priori bounds allow (with the
      default bounds [0, inf) a zero cell can rise without limit, which the seed's model
      cannot); or one number per cell. The primary itself moves as its bounds allow.
    - `frozen`: cells that must stay published (e.g. cells already published in a linked
      table). They never move in a deviation nor join a pattern, even when a part is
      withheld whole. When they leave no full protection for a primary, the LP gives it
      the largest protection the other cells allow (the seed's partial protection: the
      primary's move is capped by its protection and given a very negative cost); the
      audit then reports it under-protected and `notes` says so.
    - `refine`: the seed's refinement run, a second sequential LP whose only candidate
      complements are the first run's, with `refine_cost`: "reverse" (default: small
      cells cost most, the order of the seed's example, which negates the first run's
      costs; the project adds the part's largest value + 1 so every cost stays positive,
      since an LP minimising negative costs would push flow round every cycle of
      candidates), "value" or "count". Its complements are a subset of the first run's
      and still protect every primary (the first pattern is one of its solutions).
    """
    if cost not in ("value", "count"):
        raise ValueError(f"cost must be 'value' or 'count' (got {cost!r})")
    if method not in ("lp", "milp"):
        raise ValueError(f"method must be 'lp' or 'milp' (got {method!r})")
    if refine_cost not in REFINE_COSTS:
        raise ValueError(f"refine_cost must be one of {', '.join(REFINE_COSTS)} (got {refine_cost!r})")
    if time_limit <= 0 or part_time_limit <= 0:
        raise ValueError("time limits must be positive")
    t0 = time.perf_counter()
    pb = _problem(values, relations, lower, upper, protection, lower_protection, singletons)
    n = pb.x.size
    prim = _mask("primary", primary, n)
    given = _mask("suppressed", suppressed, n) & ~prim
    froz = _mask("frozen", frozen, n)
    if (froz & (prim | given)).any():
        i = int(np.flatnonzero(froz & (prim | given))[0])
        raise ValueError(f"cell {i} is frozen (must stay published) but also primary or already suppressed")
    cap, cap_kind = _capacity(capacity, pb.x)
    cap = np.where(froz, 0.0, cap)
    pb.upl[~prim] = 0.0
    pb.lpl[~prim] = 0.0
    c = _costs(pb.x, cost)
    parts = [p for p in _components(pb.A, np.ones(n, bool)) if prim[p[0]].any()]
    stop = np.inf if time_budget is None else t0 + time_budget
    sup, fallback, lps, notes, optimal = _run_parts(pb, parts, prim | given, c, method, sliding, time_limit,
                                                   part_time_limit, stop, cap, froz, progress)
    first = None
    if refine:
        first = sup & ~prim & ~given & ~fallback
        keep = ~(prim | given | first | fallback)  # everything else stays published
        c2 = _refine_costs(pb.x, refine_cost)
        sup2, fb2, lps2, notes2, _opt = _run_parts(pb, parts, prim | given | fallback, c2, "lp", sliding,
                                                  time_limit, part_time_limit, stop, np.where(keep, 0.0, cap),
                                                  froz | keep, None)
        lps += lps2
        if fb2.any():  # the refinement did not finish somewhere: keep the first run's pattern
            notes.append("the refinement run did not finish; the first run's pattern is kept")
        else:
            sup, optimal = sup2, False
            notes += [f"refinement run: {x}" for x in notes2]
    res = audit(pb.x, sup, pb.A, lower=pb.lower, upper=pb.upper, protection=pb.upl, lower_protection=pb.lpl,
                sliding=sliding, singletons=pb.single, time_limit=time_limit, time_budget=time_budget,
                progress=audit_progress)
    comp = sup & ~prim & ~given & ~fallback
    return Protection(suppressed=sup, primary=prim, withheld=given, complementary=comp, fallback=fallback,
                      audit=res, method=method, cost_kind=cost, cost=float(_pattern_cost(pb.x, comp, cost)),
                      optimal=bool(optimal and not fallback.any()), lps=lps + res.lps,
                      seconds=time.perf_counter() - t0, parts=len(parts), notes=notes, capacity=cap_kind,
                      frozen=froz, refined=bool(refine), first_complementary=first)


def _run_parts(pb: _Problem, parts, start: np.ndarray, c: np.ndarray, method: str, sliding: bool,
               time_limit: float, part_time_limit: float, stop: float, cap: np.ndarray, froz: np.ndarray,
               progress) -> tuple[np.ndarray, np.ndarray, int, list[str], bool]:
    """One run of the sequential LP (or the exact model) over the connected parts.

    Returns (suppressed, fallback, LPs, notes, optimal). A part that does not finish is
    withheld whole, frozen cells excepted."""
    sup = start.copy()
    fallback = np.zeros(sup.size, bool)
    lps, notes, optimal = 0, [], method == "milp"
    for k, (cells, rows) in enumerate(parts):
        now = time.perf_counter()
        deadline = min(now + part_time_limit, stop)
        if now >= stop:
            ok, used, note, opt = False, 0, "time budget reached: the remaining parts are withheld whole", False
        elif method == "lp":
            ok, used, note = _sequential(pb, sup, c, cells, rows, sliding, time_limit, deadline, cap, froz)
            opt = False
        else:
            ok, used, note, opt = _exact(pb, sup, c, cells, rows, sliding, max(1e-3, deadline - now), cap, froz)
        lps += used
        optimal &= opt
        if not ok:
            fallback[cells] = ~sup[cells] & ~froz[cells]
            sup[cells] |= ~froz[cells]
        if note:
            notes.append(note)
        if progress:
            progress(k + 1, len(parts))
    return sup, fallback, lps, notes, optimal


def _refine_costs(x: np.ndarray, kind: str) -> np.ndarray:
    """Costs of the refinement run: "reverse" makes small cells the dearest (largest value
    + 1 - value, all positive), else as `_costs`."""
    if kind == "reverse":
        return (np.abs(x).max(initial=0.0) + 1.0) - np.abs(x) + 1.0 / (x.size + 1)
    return _costs(x, kind)


def _costs(x: np.ndarray, cost: str) -> np.ndarray:
    """Per-cell cost: the value plus a tie-break small enough never to outweigh one unit of
    value difference in integer tables (so ties go to fewer cells), or 1 per cell."""
    if cost == "count":
        return np.ones_like(x)
    return x + 1.0 / (x.size + 1)


def _pattern_cost(x: np.ndarray, cells: np.ndarray, cost: str) -> float:
    return float(cells.sum()) if cost == "count" else float(x[cells].sum())


def _order(pb: _Problem, prim_cells: np.ndarray) -> np.ndarray:
    """Primaries with the largest required protection first, then the largest value (seed)."""
    key = pb.upl[prim_cells] + pb.lpl[prim_cells]
    return prim_cells[np.lexsort((-pb.x[prim_cells], -key))]


#: Why a connected part is withheld whole when its LP is infeasible (in `Protection.notes`;
#: the Compare page looks for it to suggest another capacity model).
INFEASIBLE = "no complementary cells can protect a primary within the capacities (infeasible LP)"


class _Part:
    """The two LPs of one connected part: the audit LP (x, published cells fixed) and the
    deviation LP (y+ and y- per cell, A y = 0), both updated as cells get suppressed."""

    def __init__(self, pb: _Problem, sup: np.ndarray, cells: np.ndarray, rows: np.ndarray, c: np.ndarray,
                 sliding: bool, time_limit: float, capacity: np.ndarray):
        self.pb, self.cells, self.sliding = pb, cells, sliding
        #: the status of the last LP that did not give an answer ("infeasible", "time", ...),
        #: so that a part withheld whole says why
        self.last_failure = ""
        self.local_sup = sup[cells].copy()
        A = pb.sub(rows, cells)
        self.k = k = cells.size
        x, lo, hi = pb.x[cells], pb.lower[cells], pb.upper[cells]
        self.x, self.lo, self.hi = x, lo, hi
        self.c = c[cells]
        self.audit_lp = _LP(A, np.where(self.local_sup, lo, x), np.where(self.local_sup, hi, x),
                            np.zeros(A.shape[0]), np.zeros(A.shape[0]), time_limit)
        # The primary being protected moves as far as the bounds allow; every other cell by
        # at most its capacity (the seed's model: its value by default; 0 for frozen cells).
        self.bound_up = hi - x
        self.bound_dn = x - lo
        cap = capacity[cells]
        self.cap_up = np.minimum(self.bound_up, cap)
        self.cap_dn = np.minimum(self.bound_dn, cap)
        copies = 2 if sliding else 1
        blocks = [sp.hstack([A, -A])]
        if sliding:
            z = sp.csc_matrix(A.shape)
            blocks = [sp.hstack([A, -A, z, z]), sp.hstack([z, z, A, -A])]
        mat = sp.vstack(blocks, format="csc")
        n_rows = mat.shape[0]
        if sliding:  # one more row: (u+_p - u-_p) - (v+_p - v-_p) >= SPL, its column moves with p
            mat = sp.vstack([mat, sp.csc_matrix((1, 4 * k))], format="csc")
        self.caps = np.tile(np.concatenate([self.cap_up, self.cap_dn]), copies)
        row_lo = np.zeros(mat.shape[0])
        row_hi = np.zeros(mat.shape[0])
        if sliding:
            row_hi[-1] = np.inf
        self.dev = _LP(mat, np.zeros(2 * k * copies), self.caps, row_lo, row_hi, time_limit)
        self.n_rows = n_rows
        self.copies = copies
        self._slide_p = None

    def lo_now(self) -> np.ndarray:
        """Current lower bounds of the audit LP's columns (the value for published cells)."""
        return np.where(self.local_sup, self.lo, self.x)

    def hi_now(self) -> np.ndarray:
        return np.where(self.local_sup, self.hi, self.x)

    def cost_vector(self) -> np.ndarray:
        c = np.where(self.local_sup, 0.0, self.c)
        return np.tile(c, 2 * self.copies)

    def suppress(self, local: np.ndarray) -> None:
        new = local & ~self.local_sup
        if new.any():
            idx = np.flatnonzero(new)
            self.audit_lp.bounds(idx, self.lo[idx], self.hi[idx])
            self.local_sup |= new

    def protected(self, p: int, known=None) -> tuple[bool, bool, bool, list] | None:
        """(up ok, down ok, sliding ok, witness tables) of local primary p, against the
        outsider or with the local cells `known` (singleton respondents) fixed; None if an
        LP did not finish.

        p is held within [x - need, x + need] meanwhile: the LPs then only ask whether the
        required values are reachable (every LP is bounded, and the witnesses show how).
        """
        m, pb, gi = self.audit_lp, self.pb, self.cells[p]
        x = self.x[p]
        up_need = pb.upl[gi] + (pb.lpl[gi] if self.sliding else 0.0)
        dn_need = pb.lpl[gi] + (pb.upl[gi] if self.sliding else 0.0)
        m.bounds(p, max(self.lo[p], x - dn_need), min(self.hi[p], x + up_need))
        known = np.atleast_1d(np.asarray([] if known is None else known, np.int64))
        if known.size:
            m.bounds(known, self.x[known], self.x[known])
        try:
            s1, lo, w_lo = m.solve(p, 1.0)
            s2, hi, w_hi = m.solve(p, 1.0, maximize=True)
        finally:
            m.bounds(p, self.lo[p], self.hi[p])
            back = known[self.local_sup[known]]
            if back.size:
                m.bounds(back, self.lo[back], self.hi[back])
        if s1 != "optimal" or s2 != "optimal":
            self.last_failure = s1 if s1 != "optimal" else s2
            return None
        tol = pb.tol[gi]
        up = hi >= x + pb.upl[gi] - tol
        dn = lo <= x - pb.lpl[gi] + tol
        sl = hi - lo >= pb.upl[gi] + pb.lpl[gi] - tol
        return up, dn, sl, [w_lo, w_hi]

    def deviation(self, p: int, direction: str, known: int | None = None,
                  partial: bool = False) -> np.ndarray | None:
        """Cells moved by the cheapest deviation protecting p ("up", "down" or "slide");
        None if infeasible or unfinished.

        `partial` (up or down only): the seed's way with frozen cells, when the full
        protection cannot be found: p's move is bounded by its protection but not forced,
        and costs very much less than nothing, so the LP returns the largest protection
        the unfrozen cells allow (then the cheapest way to get it)."""
        pb, gi, k = self.pb, self.cells[p], self.k
        m = self.dev
        cols_p = [p, k + p] + ([2 * k + p, 3 * k + p] if self.sliding else [])
        cols_known = [] if known is None else [known, k + known] + (
            [2 * k + known, 3 * k + known] if self.sliding else [])
        cost = self.cost_vector()
        if direction == "up":
            need = pb.upl[gi]
            m.bounds([p, k + p], [0.0 if partial else need, 0.0], [need if partial else self.bound_up[p], 0.0])
            if partial:
                cost[p] = -(np.abs(cost).sum() + 1.0) * 1e3
        elif direction == "down":
            need = pb.lpl[gi]
            m.bounds([p, k + p], [0.0, 0.0 if partial else need], [0.0, need if partial else self.bound_dn[p]])
            if partial:
                cost[k + p] = -(np.abs(cost).sum() + 1.0) * 1e3
        else:  # sliding: u_p - v_p >= UPL + LPL in the extra row
            m.bounds([p, k + p, 2 * k + p, 3 * k + p], 0.0,
                     [self.bound_up[p], self.bound_dn[p], self.bound_up[p], self.bound_dn[p]])
            row = self.n_rows
            if self._slide_p is not None:
                q = self._slide_p
                for col in (q, k + q, 2 * k + q, 3 * k + q):
                    m.h.changeCoeff(row, col, 0.0)
            for col, v in zip((p, k + p, 2 * k + p, 3 * k + p), (1.0, -1.0, -1.0, 1.0)):
                m.h.changeCoeff(row, col, v)
            self._slide_p = p
            m.h.changeRowBounds(row, pb.upl[gi] + pb.lpl[gi], highspy.kHighsInf)
        if cols_known:
            m.bounds(cols_known, 0.0, 0.0)
        try:
            status, _v, sol = m.solve(np.arange(cost.size), cost)
        finally:
            for cols in (cols_p, cols_known):
                if cols:
                    m.bounds(cols, 0.0, self.caps[cols])
        if status != "optimal":
            self.last_failure = status
            return None
        flow = np.abs(sol).reshape(-1, k).sum(axis=0)
        return flow > 1e-7 * (1.0 + np.abs(self.x))


def _sequential(pb: _Problem, sup: np.ndarray, c: np.ndarray, cells: np.ndarray, rows: np.ndarray,
                sliding: bool, time_limit: float, deadline: float, capacity: np.ndarray,
                frozen: np.ndarray) -> tuple[bool, int, str]:
    """The seed's sequential LP over one connected part; updates `sup` in place.

    Returns (finished, LPs solved, note). With frozen cells in the part, a primary whose
    full protection the unfrozen cells cannot give gets the largest they can (the seed's
    partial protection; the audit then reports it under-protected) instead of failing.
    """
    order = _order(pb, cells[(pb.upl[cells] + pb.lpl[cells]) > 0])
    # Primaries a certificate protects (moved with their totals, all already suppressed) need
    # no LP, against the outsider and every singleton respondent alike.
    order = np.array([g for g in order if not all(pb.certificate(g, sup)[:2])], np.int64)
    if not order.size:
        return True, 0, ""
    part = _Part(pb, sup, cells, rows, c, sliding, time_limit, capacity)
    loc = {int(g): i for i, g in enumerate(cells)}
    can_freeze = bool(frozen[cells].any()) and not sliding
    partial: list[int] = []

    def lps() -> int:
        return part.audit_lp.solves + part.dev.solves

    witnesses: dict[int, list] = {}

    def fix(p: int, known) -> bool | None:
        """Protect local primary p (with the singleton respondents `known` fixed); True if it
        was already protected, False if it now is, None on failure."""
        state = part.protected(p, known)
        if state is None:
            return None
        up, dn, sl, w = state
        if known is None and (sl if sliding else (up and dn)):
            witnesses[p] = w  # stay valid as more cells are suppressed
        todo = (["slide"] if not sl else []) if sliding else ([] if up else ["up"]) + ([] if dn else ["down"])
        for d in todo:
            if time.perf_counter() > deadline:
                return None
            moved = part.deviation(p, d, known)
            if moved is None and can_freeze:
                moved = part.deviation(p, d, known, partial=True)
                if moved is not None:
                    partial.append(int(cells[p]))
            if moved is None:
                return None
            part.suppress(moved)
        return not todo

    def failed(what: str = "") -> str:
        """Why the part is withheld whole: the time limit, no protection within the
        capacities (an infeasible LP), or an LP that did not finish."""
        if time.perf_counter() > deadline or part.last_failure == "time":
            why = "time limit of a connected part reached"
        elif part.last_failure == "infeasible":
            why = INFEASIBLE
        else:
            why = "an LP did not finish"
        return f"{what}{why}: the part is withheld whole"

    for g in order:
        if time.perf_counter() > deadline:
            return False, lps(), failed()
        if fix(loc[int(g)], None) is None:
            return False, lps(), failed()
    # Singletons: a suppressed singleton's respondent knows its value. Every primary is checked
    # against each respondent (_respondents) and re-protected with each one that breaks it
    # known. One pass suffices: more suppression never helps a respondent (a cell suppressed
    # later was published, so known to all, when the check passed).
    singles = np.flatnonzero(pb.single[cells])
    for g in order if singles.size else ():
        if time.perf_counter() > deadline:
            return False, lps(), failed()
        p = loc[int(g)]
        others = singles[part.local_sup[singles] & ~np.isin(cells[singles], pb.related(cells[p]))]
        if not others.size:
            continue
        breaking = _respondents(part.audit_lp, p, part.x, part.lo_now(), part.hi_now(), others, pb.tol[g],
                                pb.lpl[g], pb.upl[g], sliding, witnesses.pop(p, None))
        if breaking is None:
            return False, lps(), failed()
        for j in breaking:
            if fix(p, int(j)) is None:
                return False, lps(), failed("against a singleton respondent, ")
    sup[cells] = part.local_sup
    note = (f"{len(set(partial))} primary cell(s) only partly protected: frozen cells leave no full protection"
            if partial else "")
    return True, lps(), note


def _exact(pb: _Problem, sup: np.ndarray, c: np.ndarray, cells: np.ndarray, rows: np.ndarray, sliding: bool,
           time_limit: float, capacity: np.ndarray, frozen: np.ndarray) -> tuple[bool, int, str, bool]:
    """The exact integer model over one connected part; updates `sup` in place.

    Returns (finished, 1, note, proven optimal).
    """
    from scipy.optimize import Bounds, LinearConstraint, milp  # only the exact model needs it
    A = pb.sub(rows, cells)
    k = cells.size
    x, lo, hi = pb.x[cells], pb.lower[cells], pb.upper[cells]
    fixed = sup[cells]
    prim = np.flatnonzero((pb.upl[cells] + pb.lpl[cells]) > 0)
    singles = np.flatnonzero(pb.single[cells])
    # A deviation never needs to move a cell by more than everything in the part plus the
    # protections (flows of additive tables decompose into cycles through the primary).
    big = float(np.abs(x).sum() + (pb.upl[cells] + pb.lpl[cells]).sum() + 1.0)
    bound_dn = x - lo
    bound_up = np.minimum(hi - x, big)
    # Every cell but the attacked primary moves by at most its capacity (0 if frozen).
    cap_dn = np.minimum(bound_dn, capacity[cells])
    cap_up = np.minimum(bound_up, capacity[cells])
    attacks = []  # (primary, kind, known singleton or -1)
    for p in prim:
        unrelated = singles[~np.isin(cells[singles], pb.related(cells[p]))]
        for j in [-1, *[int(s) for s in unrelated]]:
            if sliding:
                attacks.append((int(p), "slide", j))
            else:
                attacks += [(int(p), "up", j), (int(p), "down", j)]
    copies = 2 if sliding else 1
    per = 2 * k * copies
    n_var = k + per * len(attacks)
    if n_var > MILP_MAX_VARIABLES:
        raise ValueError(f"the exact model would need {n_var:,} variables (limit {MILP_MAX_VARIABLES:,}); "
                         "use method='lp' for a table this size")
    lb = np.zeros(n_var)
    ub = np.zeros(n_var)
    lb[:k] = fixed
    ub[:k] = np.where(frozen[cells] & ~fixed, 0.0, 1.0)
    blocks, b_lo, b_hi = [], [], []
    zero_rows = sp.csr_matrix((0, n_var))
    link_rows = []
    eye = sp.identity(k, format="csr")
    for a, (p, kind, j) in enumerate(attacks):
        off = k + a * per
        up_a, dn_a = cap_up.copy(), cap_dn.copy()
        up_a[p], dn_a[p] = bound_up[p], bound_dn[p]
        for cpy in range(copies):
            o = off + cpy * 2 * k
            ub[o:o + k] = up_a
            ub[o + k:o + 2 * k] = dn_a
            if j >= 0:
                ub[[o + j, o + k + j]] = 0.0
            # A (y+ - y-) = 0
            blocks.append(sp.hstack([sp.csr_matrix((A.shape[0], o)), A, -A,
                                     sp.csr_matrix((A.shape[0], n_var - o - 2 * k))]))
            b_lo.append(np.zeros(A.shape[0]))
            b_hi.append(np.zeros(A.shape[0]))
            # y+_i <= cap_up_i z_i and y-_i <= cap_dn_i z_i
            for side, cap in ((0, up_a), (k, dn_a)):
                link_rows.append(sp.hstack([-sp.diags(cap), sp.csr_matrix((k, o + side - k)), eye,
                                            sp.csr_matrix((k, n_var - o - side - k))]))
        gi = cells[p]
        if kind == "up":
            lb[off + p] = pb.upl[gi]
            ub[off + k + p] = 0.0
        elif kind == "down":
            lb[off + k + p] = pb.lpl[gi]
            ub[off + p] = 0.0
        else:
            row = np.zeros(n_var)
            row[[off + p, off + k + p, off + 2 * k + p, off + 3 * k + p]] = [1.0, -1.0, -1.0, 1.0]
            blocks.append(sp.csr_matrix(row))
            b_lo.append(np.array([pb.upl[gi] + pb.lpl[gi]]))
            b_hi.append(np.array([np.inf]))
    mats = blocks + link_rows
    rhs_lo = b_lo + [np.full(m.shape[0], -np.inf) for m in link_rows]
    rhs_hi = b_hi + [np.zeros(m.shape[0]) for m in link_rows]
    cons = []
    if mats:
        cons = [LinearConstraint(sp.vstack(mats, format="csr") if mats else zero_rows,
                                 np.concatenate(rhs_lo), np.concatenate(rhs_hi))]
    obj = np.zeros(n_var)
    obj[:k] = np.where(fixed, 0.0, c[cells])
    integrality = np.zeros(n_var)
    integrality[:k] = 1
    res = milp(obj, integrality=integrality, bounds=Bounds(lb, ub), constraints=cons,
               options={"time_limit": float(time_limit), "presolve": True})
    if res.x is None:
        why = "infeasible" if res.status == 2 else "did not finish"
        return False, 1, f"the exact model {why}: the part is withheld whole", False
    z = res.x[:k] > 0.5
    sup[cells] = z | fixed
    return True, 1, "" if res.status == 0 else "the exact model stopped at its time limit", res.status == 0


def protect_table(table, primary, protection, cost: str = "value", **options) -> Protection:
    """`protect` for a 2-D table whose last row and last column are its totals.

    `table`, `primary` (and any array option) have shape (r, c); so do the result's arrays.
    The a-priori bounds are the seed's [0, grand total], as in `audit_table`, unless given.
    """
    t = _table(table)
    options.setdefault("upper", float(t[-1, -1]))
    res = protect(t.reshape(-1), np.asarray(primary).reshape(-1), table_relations(t.shape), _flat(protection),
                  cost=cost, **{k: _flat(v) for k, v in options.items()})
    return _reshape(res, t.shape)
