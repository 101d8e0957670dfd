"""Legacy cell suppression (methods.cell_suppression): primary rules, the audit LP and
complementary suppression, against hand-checked tables, integer enumeration and brute force
over every suppression pattern of small tables."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from methods import cell_suppression as cs


_with_margins = cs.with_margins


# ------------------------------------------------------------------ primary rules
def test_frequency_rule_flags_small_nonzero_counts():
    counts = np.array([0, 1, 2, 3, 10])
    assert cs.frequency_rule(counts, 3).tolist() == [False, True, True, False, False]
    assert cs.frequency_rule(counts, 3, zeros=True).tolist() == [True, True, True, False, False]


def test_dominance_rule_and_its_protection():
    assert cs.dominance_rule([70, 20, 10], 1, 60)
    assert not cs.dominance_rule([50, 30, 20], 1, 60)
    assert cs.dominance_rule([10, 40, 50], 2, 85)  # order does not matter: 90 > 85
    assert cs.dominance_rule([10], 2, 90)  # fewer contributors than n
    assert not cs.dominance_rule([], 1, 50) and not cs.dominance_rule([0, 0], 1, 50)
    prot = cs.dominance_protection([70, 20, 10], 1, 60)
    assert prot == pytest.approx(100 / 60 * 70 - 100)
    # with that much added to the total, the largest contribution is exactly k% of it
    assert 70 / (100 + prot) == pytest.approx(0.60)
    assert cs.dominance_protection([50, 30, 20], 1, 60) == 0.0


def test_p_percent_rule_and_its_protection():
    assert cs.p_percent_rule([100, 5, 3], 10)  # 108 - 100 - 5 = 3 < 10
    assert cs.p_percent_protection([100, 5, 3], 10) == pytest.approx(7.0)
    assert not cs.p_percent_rule([100, 50, 30], 10)
    assert cs.p_percent_rule([7], 10) and cs.p_percent_protection([7], 10) == pytest.approx(0.7)
    assert not cs.p_percent_rule([0, 0], 10)


@settings(max_examples=60, derandomize=True, deadline=None)
@given(st.lists(st.integers(0, 1000), min_size=1, max_size=8), st.floats(1, 50))
def test_p_percent_rule_is_the_second_largest_respondents_estimate(contrib, p):
    """The respondent with the second largest value estimates the largest as T - x2; the
    cell is sensitive when that estimate is within p% of x1 (seed, section 2)."""
    c = sorted(contrib, reverse=True)
    x1 = c[0]
    x2 = c[1] if len(c) > 1 else 0
    estimate = sum(c) - x2
    expected = x1 > 0 and (estimate - x1) < p / 100 * x1
    assert cs.p_percent_rule(contrib, p) == expected
    assert cs.p_percent_rule(list(reversed(contrib)), p) == expected
    assert (cs.p_percent_protection(contrib, p) > 0) == expected


@pytest.mark.parametrize("call", [
    lambda: cs.dominance_rule([1, -2], 1, 50),
    lambda: cs.dominance_rule([1, 2], 0, 50),
    lambda: cs.dominance_rule([1, 2], 1, 0),
    lambda: cs.dominance_rule([1, 2], 1, 101),
    lambda: cs.p_percent_rule([1, 2], 0),
    lambda: cs.p_percent_rule([1, float("nan")], 10),
    lambda: cs.frequency_rule([1, 2], -1),
])
def test_rules_reject_bad_arguments(call):
    with pytest.raises(ValueError):
        call()


# ------------------------------------------------------------------ audit: by hand
def test_one_suppressed_interior_cell_is_disclosed_exactly():
    t = _with_margins([[5, 3], [2, 7]])
    sup = np.zeros(t.shape, bool)
    sup[0, 0] = True
    a = cs.audit_table(t, sup, protection=1)
    assert a.low[0, 0] == a.high[0, 0] == 5
    assert a.exact[0, 0] and a.exact.sum() == 1
    assert a.underprotected[0, 0] and a.underprotected.sum() == 1


def test_a_two_by_two_rectangle_protects_each_corner():
    """Rectangle (a b; c d) of a 3 x 3 table: x + t (+a -b -c +d) stays consistent for
    t in [-min(a, d), min(b, c)], and not beyond."""
    t = _with_margins([[4, 9, 6], [8, 3, 5], [2, 2, 2]])
    sup = np.zeros(t.shape, bool)
    sup[np.ix_([0, 1], [0, 1])] = True
    a = cs.audit_table(t, sup, protection=3)
    va, vb, vc, vd = 4, 9, 8, 3
    up, down = min(vb, vc), min(va, vd)  # t moves a and d up, b and c down
    assert (a.low[0, 0], a.high[0, 0]) == (va - down, va + up)
    assert (a.low[1, 1], a.high[1, 1]) == (vd - down, vd + up)
    assert (a.low[0, 1], a.high[0, 1]) == (vb - up, vb + down)
    assert (a.low[1, 0], a.high[1, 0]) == (vc - up, vc + down)
    assert not a.exact.any() and a.complete
    assert a.protected[0, 0] and a.protected[0, 1] and a.protected[1, 0]
    assert a.protected[1, 1]
    # Protection 4: b and c rise by only min(a, d) = 3, a falls to 1, not 0; d = 3 in [0, 11]
    # needs a fall of only 3 (a count cannot go below 0) and a rise of 4: met.
    a4 = cs.audit_table(t, sup, protection=np.where(sup, 4.0, 0.0))
    assert a4.protected[1, 1] and a4.underprotected.sum() == 3


def test_a_row_suppressed_with_its_total_is_recovered_from_the_columns():
    t = _with_margins([[5, 3, 1], [2, 7, 4]])
    sup = np.zeros(t.shape, bool)
    sup[0, :] = True
    a = cs.audit_table(t, sup)
    assert a.exact[0, :].all()
    assert np.array_equal(a.low[0, :], t[0, :])


def test_suppressed_totals_leave_a_cell_unbounded_above():
    t = _with_margins([[5, 3], [2, 7]])
    sup = np.zeros(t.shape, bool)
    sup[0, 0] = sup[0, 2] = sup[2, 0] = sup[2, 2] = True
    a = cs.audit_table(t, sup, protection=100, upper=np.inf)
    assert a.high[0, 0] == np.inf and a.low[0, 0] == 0
    assert a.protected[0, 0]  # any upper protection, and down to zero


def test_audit_table_bounds_cells_by_the_grand_total_as_the_seed():
    """The seed's audit bounds every suppressed cell by [0, grand total]. Above, x00 + 12 =
    the grand total (3 + 9 and 2 + 10 are published around it), so the bound 17 caps x00
    at its true value 5: an attacker who knows the grand total learns the upper end."""
    t = _with_margins([[5, 3], [2, 7]])
    sup = np.zeros(t.shape, bool)
    sup[0, 0] = sup[0, 2] = sup[2, 0] = sup[2, 2] = True
    a = cs.audit_table(t, sup, protection=1)
    assert (a.low[0, 0], a.high[0, 0]) == (0, 5)
    assert a.high[2, 2] == 17 and a.low[2, 2] == 12
    assert a.underprotected[0, 0]  # cannot rise by 1
    # A general system keeps [0, inf) unless told: the same table through `audit`.
    rel = cs.table_relations(t.shape)
    b = cs.audit(t.reshape(-1), sup.reshape(-1), rel)
    assert b.high[0] == np.inf


def test_sliding_protection_accepts_an_interval_that_does_not_straddle_the_value():
    """x0 + x1 = 15 with x1 known to lie in [2, 6]: x0 = 10 lies in [9, 13]. Width 4 meets a
    sliding requirement of 2 + 2, but the interval does not reach 10 - 2 = 8."""
    x = np.array([10.0, 5.0, 15.0])
    rel = cs.sum_relations(3, [(2, [0, 1])])
    sup = np.array([True, True, False])
    req = np.array([2.0, 0.0, 0.0])
    lower, upper = np.array([0.0, 2.0, 0.0]), np.array([np.inf, 6.0, np.inf])
    full = cs.audit(x, sup, rel, lower=lower, upper=upper, protection=req)
    slide = cs.audit(x, sup, rel, lower=lower, upper=upper, protection=req, sliding=True)
    assert (full.low[0], full.high[0]) == (9, 13)
    assert not full.protected[0] and slide.protected[0]


# ------------------------------------------------------------------ singletons
def test_two_singletons_in_one_relation_disclose_each_other():
    """Row [1, 1, 8 | 10]: the two 1s suppressed together lie in [0, 2] for an outsider,
    but the respondent of either one knows its own value and so the other's."""
    x = np.array([1.0, 1.0, 8.0, 10.0])
    rel = cs.sum_relations(4, [(3, [0, 1, 2])])
    sup = np.array([True, True, False, False])
    plain = cs.audit(x, sup, rel, protection=1)
    assert (plain.low[0], plain.high[0]) == (0, 2) and plain.protected[0]
    single = x == 1
    ins = cs.audit(x, sup, rel, protection=1, singletons=single)
    assert (ins.low[0], ins.high[0]) == (0, 2)  # the outsider still sees [0, 2]
    assert ins.insider_low[0] == ins.insider_high[0] == 1
    assert not ins.protected[0] and not ins.protected[1]
    # protecting the singleton primary brings in a third cell of the relation
    prim = np.array([True, False, False, False])
    for method in ("lp", "milp"):
        res = cs.protect(x, prim, rel, 1, singletons=single, method=method)
        assert res.suppressed[2] and res.audit.protected.all(), method
        assert res.audit.insider_high[0] >= 2
        naive = cs.protect(x, prim, rel, 1, method=method)  # without respondent knowledge, the other 1 is cheapest
        assert naive.complementary.tolist() == [False, True, False, False], method


def test_singleton_pair_in_a_two_way_table():
    """A suppressed 1 whose cheapest complement in its row is the other 1: with the
    singletons known, the protection must route around that pair."""
    t = _with_margins([[1, 1, 9], [6, 5, 8], [7, 8, 6]])
    prim = np.zeros(t.shape, bool)
    prim[0, 0] = True
    single = t == 1
    res = cs.protect_table(t, prim, 1, singletons=single, method="milp")
    assert res.audit.protected.all() and res.optimal
    naive = cs.protect_table(t, prim, 1, method="milp")
    assert naive.suppressed[0, 1]  # the pair is what an unaware optimiser picks
    with_ins = cs.audit_table(t, naive.suppressed, protection=np.where(prim, 1.0, 0.0), singletons=single)
    assert with_ins.underprotected[0, 0]
    lp = cs.protect_table(t, prim, 1, singletons=single)
    assert lp.audit.protected.all() and lp.cost >= res.cost


def _alone(m, i, x, lo, hi, j, lpl, upl, sliding, tol=1e-6) -> bool:
    """Does respondent j alone (x_j fixed) exclude a value cell i must keep possible?"""
    need_lo, need_hi = (lpl + upl, upl + lpl) if sliding else (lpl, upl)
    m.bounds(i, max(lo[i], x[i] - need_lo), min(hi[i], x[i] + need_hi))
    m.bounds(j, x[j], x[j])
    s1, v1, _ = m.solve(i, 1.0)
    s2, v2, _ = m.solve(i, 1.0, maximize=True)
    m.bounds(i, lo[i], hi[i])
    m.bounds(j, lo[j], hi[j])
    assert s1 == s2 == "optimal"
    return not (v2 - v1 >= upl + lpl - tol if sliding else v1 <= x[i] - lpl + tol and v2 >= x[i] + upl - tol)


@settings(max_examples=60, derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_the_respondents_found_are_those_who_alone_break_the_protection(data):
    """`_respondents` proves most respondents harmless with witness tables, one direction at
    a time, and holds the rest in groups: its answer must be exactly the respondents who,
    each holding only their own cell fixed, exclude a value the cell must keep possible,
    with or without a first pair of witnesses (tables beyond the targets count)."""
    shape = data.draw(st.sampled_from([(2, 3), (3, 3), (3, 4)]))
    interior = np.array(data.draw(st.lists(st.integers(0, 5), min_size=shape[0] * shape[1],
                                           max_size=shape[0] * shape[1]))).reshape(shape)
    t = _with_margins(interior)
    x = t.reshape(-1)
    sup = np.array(data.draw(st.lists(st.booleans(), min_size=x.size, max_size=x.size)))
    if sup.sum() < 3:
        return
    lo = np.zeros(x.size)
    hi = np.full(x.size, float(x[-1]))
    m = cs._LP(cs.table_relations(t.shape), np.where(sup, lo, x), np.where(sup, hi, x), np.zeros(t.shape[0] + t.shape[1]),
               np.zeros(t.shape[0] + t.shape[1]), 10.0)
    cells = np.flatnonzero(sup)
    i = int(data.draw(st.sampled_from(list(cells))))
    others = cells[cells != i]
    lpl, upl = data.draw(st.integers(0, 2)), data.draw(st.integers(1, 2))
    for sliding in (False, True):
        need_lo, need_hi = (lpl + upl, upl + lpl) if sliding else (lpl, upl)
        m.bounds(i, max(lo[i], x[i] - need_lo), min(hi[i], x[i] + need_hi))
        s1, v1, w_lo = m.solve(i, 1.0)
        s2, v2, w_hi = m.solve(i, 1.0, maximize=True)
        m.bounds(i, lo[i], hi[i])
        outsider = v2 - v1 >= upl + lpl - 1e-6 if sliding else v1 <= x[i] - lpl + 1e-6 and v2 >= x[i] + upl - 1e-6
        expected = sorted(int(j) for j in others if _alone(m, i, x, lo, hi, j, lpl, upl, sliding)) if outsider else []
        assert cs._respondents(m, i, x, lo, hi, others, 1e-6, lpl, upl, sliding) == expected
        if outsider and not sliding:  # witnesses beyond the targets: the outsider's interval's ends
            _s, _v, beyond_lo = m.solve(i, 1.0)
            _s, _v, beyond_hi = m.solve(i, 1.0, maximize=True)
            got = cs._respondents(m, i, x, lo, hi, others, 1e-6, lpl, upl, sliding, (beyond_lo, beyond_hi))
            assert got == expected
        # the model is left as it was found: every bound restored
        assert (m.lo == np.where(sup, lo, x)).all() and (m.hi == np.where(sup, hi, x)).all()


# ------------------------------------------------------------------ audit against enumeration
def _enumerate_intervals(t: np.ndarray, sup: np.ndarray, bound: int, every_cell: bool = True
                         ) -> tuple[np.ndarray, np.ndarray]:
    """Integer min and max of every suppressed cell over all fillings of the suppressed
    interior cells in 0..bound consistent with the published cells; with `every_cell`, the
    margins too at most `bound` (the seed's a-priori bounds [0, grand total] when bound is
    the grand total)."""
    r, c = t.shape
    free = [(i, j) for i in range(r - 1) for j in range(c - 1) if sup[i, j]]
    grids = np.meshgrid(*[np.arange(bound + 1)] * len(free), indexing="ij") if free else []
    n = grids[0].size if free else 1
    inner = np.broadcast_to(t[:-1, :-1], (n, r - 1, c - 1)).copy()
    for (i, j), g in zip(free, grids):
        inner[:, i, j] = g.reshape(-1)
    full = np.zeros((n, r, c))
    full[:, :-1, :-1] = inner
    full[:, :-1, -1] = inner.sum(axis=2)
    full[:, -1, :-1] = inner.sum(axis=1)
    full[:, -1, -1] = inner.sum(axis=(1, 2))
    ok = np.all((full == t) | sup, axis=(1, 2))
    if every_cell:
        ok &= np.all(full <= bound, axis=(1, 2))
    sel = full[ok]
    return sel.min(axis=0), sel.max(axis=0)


@settings(max_examples=40, derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_audit_intervals_equal_integer_enumeration(data):
    """Two-way tables with margins have totally unimodular relations, so the LP interval of
    every suppressed cell has integer ends equal to the enumeration's."""
    shape = data.draw(st.sampled_from([(2, 2), (2, 3), (3, 2)]))
    interior = np.array(data.draw(st.lists(st.integers(0, 4), min_size=shape[0] * shape[1],
                                           max_size=shape[0] * shape[1]))).reshape(shape)
    t = _with_margins(interior)
    cells = [(i, j) for i in range(t.shape[0]) for j in range(t.shape[1])]
    picks = data.draw(st.lists(st.sampled_from(cells), min_size=1, max_size=6, unique=True))
    sup = np.zeros(t.shape, bool)
    for ij in picks:
        sup[ij] = True
    if sum(sup[i, j] for i in range(shape[0]) for j in range(shape[1])) > 4:
        return  # keeps the enumeration small
    # The seed's bounds [0, grand total]: every interval is finite and equals the enumeration's.
    lo, hi = _enumerate_intervals(t, sup, int(t[-1, -1]))
    a = cs.audit_table(t, sup)
    assert a.complete
    for i, j in zip(*np.nonzero(sup)):
        assert a.low[i, j] == pytest.approx(lo[i, j])
        assert a.high[i, j] == pytest.approx(hi[i, j])
    # Without an upper bound: infinite ends only where the enumeration's cap stops it.
    bound = int(t[-1, -1]) + 6
    lo, hi = _enumerate_intervals(t, sup, bound, every_cell=False)
    a = cs.audit_table(t, sup, upper=np.inf)
    for i, j in zip(*np.nonzero(sup)):
        assert a.low[i, j] == pytest.approx(lo[i, j])
        if np.isinf(a.high[i, j]):
            assert hi[i, j] >= bound
        else:
            assert a.high[i, j] == pytest.approx(hi[i, j])


# ------------------------------------------------------------------ protection against brute force
def _brute_force(t, prim, protection, cost, singletons=None):
    """The cheapest pattern (cost, then number of cells) whose audit protects every primary."""
    flat = t.reshape(-1)
    cand = np.flatnonzero(~prim.reshape(-1))
    patterns = []
    for r in range(len(cand) + 1):
        for combo in itertools.combinations(cand, r):
            combo = list(combo)
            value = float(flat[combo].sum()) if cost == "value" else float(len(combo))
            patterns.append((value, len(combo), combo))
    patterns.sort(key=lambda p: (p[0], p[1]))
    req = np.where(prim, float(protection), 0.0)
    assert protection > 0
    rows, cols = np.nonzero(prim)
    for value, count, combo in patterns:
        sup = prim.reshape(-1).copy()
        sup[combo] = True
        sup = sup.reshape(t.shape)
        # A primary that is the only suppressed cell of its row or column (margins included)
        # is that relation's total minus published cells: exact, so unprotected. Such
        # patterns would fail the audit; they are passed over without solving it.
        if (sup[rows].sum(axis=1) < 2).any() or (sup[:, cols].sum(axis=0) < 2).any():
            continue
        a = cs.audit_table(t, sup, protection=req, singletons=singletons)
        if a.protected.all():
            return value, count
    raise AssertionError("no pattern protects")


TABLES = [
    ([[1, 20, 30], [10, 2, 40]], [(0, 0), (1, 1)], 3),
    ([[2, 5, 9], [4, 1, 3]], [(1, 1)], 2),
    ([[3, 8], [6, 1], [5, 5]], [(1, 1)], 2),
    ([[1, 4, 2], [3, 3, 6]], [(0, 0), (0, 2)], 1),
    ([[0, 7], [2, 9]], [(1, 0)], 2),
]


@pytest.mark.parametrize("interior,primaries,protection", TABLES)
@pytest.mark.parametrize("cost", ["value", "count"])
def test_exact_model_matches_brute_force_and_the_lp_never_beats_it(interior, primaries, protection, cost):
    t = _with_margins(interior)
    prim = np.zeros(t.shape, bool)
    for ij in primaries:
        prim[ij] = True
    best_value, best_count = _brute_force(t, prim, protection, cost)
    # The audit's optimum is the exact model's when cells may move as far as the bounds allow.
    exact = cs.protect_table(t, prim, protection, cost=cost, method="milp", capacity="unbounded")
    assert exact.optimal and exact.audit.protected.all()
    assert exact.cost == pytest.approx(best_value)
    if cost == "value":
        assert exact.complementary.sum() == best_count  # ties go to fewer cells
    lp = cs.protect_table(t, prim, protection, cost=cost, capacity="unbounded")
    assert lp.audit.protected.all() and not lp.fallback.any()
    assert lp.cost >= best_value - 1e-9
    assert (lp.suppressed & prim).sum() == prim.sum() and not (lp.complementary & prim).any()
    # The seed's capacities (the default) restrict the deviations: never cheaper, still audited.
    seed = cs.protect_table(t, prim, protection, cost=cost, method="milp")
    assert seed.capacity == "value" and seed.audit.protected.all() and seed.cost >= best_value - 1e-9


def test_exact_model_with_singletons_matches_brute_force():
    t = _with_margins([[1, 1, 4], [1, 6, 2]])
    prim = np.zeros(t.shape, bool)
    prim[0, 0] = True
    single = t == 1
    value, _count = _brute_force(t, prim, 1, "value", singletons=single)
    exact = cs.protect_table(t, prim, 1, method="milp", singletons=single)
    assert exact.cost == pytest.approx(value) and exact.audit.protected.all()


def test_sliding_optimum_never_costs_more_than_full():
    t = _with_margins([[1, 20, 30], [10, 2, 40], [25, 35, 5]])
    prim = np.zeros(t.shape, bool)
    prim[0, 0] = prim[1, 1] = True
    full = cs.protect_table(t, prim, 3, method="milp")
    slide = cs.protect_table(t, prim, 3, method="milp", sliding=True)
    assert slide.audit.sliding and slide.audit.protected.all()
    assert slide.cost <= full.cost
    lp = cs.protect_table(t, prim, 3, sliding=True)
    assert lp.audit.protected.all() and lp.cost >= slide.cost - 1e-9


@settings(max_examples=15, derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_every_lp_pattern_passes_its_audit(data):
    shape = data.draw(st.sampled_from([(2, 3), (3, 3), (3, 4)]))
    interior = np.array(data.draw(st.lists(st.integers(0, 30), min_size=shape[0] * shape[1],
                                           max_size=shape[0] * shape[1]))).reshape(shape)
    t = _with_margins(interior)
    prim = cs.frequency_rule(t, 3)
    prim[-1, :] = prim[:, -1] = False  # margins are not primaries here
    if not prim.any():
        return
    res = cs.protect_table(t, prim, 2, singletons=t == 1)
    assert res.audit.protected.all() and res.audit.complete
    assert np.array_equal(res.suppressed, prim | res.complementary | res.fallback)
    exact = cs.protect_table(t, prim, 2, singletons=t == 1, method="milp")
    assert exact.audit.protected.all() and exact.cost <= res.cost + 1e-9


# ------------------------------------------------------------------ the seed's capacities, frozen cells, refinement
def test_the_seeds_capacity_model_never_uses_a_zero_cell_as_a_complement():
    """Massell, section 3: a cell other than the primary moves by at most its capacity,
    "in the simplest cases ... equal to its value", so a zero cell protects nothing.
    Letting cells rise as far as the bounds allow ("unbounded", the project's earlier
    model) finds a cheaper pattern here that relies on the two zero cells."""
    t = _with_margins([[6, 0, 8], [2, 9, 0]])
    prim = np.zeros(t.shape, bool)
    prim[1, 0] = True
    free = cs.protect_table(t, prim, 1, method="milp", capacity="unbounded")
    seed = cs.protect_table(t, prim, 1, method="milp")
    assert seed.capacity == "value" and free.capacity == "unbounded"
    assert (free.complementary & (t == 0)).sum() == 2
    assert not (seed.complementary & (t == 0)).any()
    assert seed.audit.protected.all() and free.audit.protected.all()
    assert seed.optimal and free.optimal and seed.cost > free.cost
    lp = cs.protect_table(t, prim, 1)  # the sequential LP, same model
    assert not (lp.complementary & (t == 0)).any() and lp.audit.protected.all()
    # One capacity per cell: zero everywhere but the primary's row and column margins.
    cap = np.zeros(t.shape)
    cap[1, :] = cap[:, 0] = cap[-1, :] = cap[:, -1] = t[1, :].max() + t[:, 0].max() + 100
    given = cs.protect_table(t, prim, 1, method="milp", capacity=cap)
    assert given.capacity == "given" and given.audit.protected.all()
    assert not (given.complementary & (cap == 0)).any()


def test_frozen_cells_stay_published_and_leave_partial_protection():
    """Section 6: frozen cells keep their status; when they leave no full protection, the
    LP gives the most the other cells can (a very negative cost on the primary's move)."""
    t = _with_margins([[15, 14, 10, 16], [7, 15, 20, 3], [11, 16, 2, 16]])
    prim = np.zeros(t.shape, bool)
    prim[1, 3] = prim[2, 2] = True
    base = cs.protect_table(t, prim, 2)
    first = tuple(np.argwhere(base.complementary)[0])  # freeze a cell the free run withholds
    frozen = np.zeros(t.shape, bool)
    frozen[first] = True
    res = cs.protect_table(t, prim, 2, frozen=frozen)
    assert not res.suppressed[first] and res.audit.protected.all() and not res.notes
    # Freeze the rest of the primary's row: x[2, 2] + the published cells = the frozen total.
    frozen = np.zeros(t.shape, bool)
    frozen[2, [0, 1, 3, 4]] = True
    part = cs.protect_table(t, prim, 2, frozen=frozen)
    assert not (part.suppressed & frozen).any()
    assert part.audit.exact[2, 2] and part.audit.underprotected[2, 2]
    assert any("partly protected" in n for n in part.notes)
    assert not part.fallback.any()
    # A part that cannot finish is withheld whole, frozen cells excepted.
    gone = cs.protect_table(t, prim, 2, frozen=frozen, time_limit=1e-12)
    assert not (gone.suppressed & frozen).any() and gone.fallback.any()
    with pytest.raises(ValueError, match="frozen"):
        cs.protect_table(t, prim, 2, frozen=prim)


def test_the_refinement_run_keeps_a_subset_that_still_protects():
    """Section 6, refinement runs: the first run's complements are the only candidates of
    a second run whose costs make small cells dear; here two of the four go."""
    t = _with_margins([[15, 14, 10, 16], [7, 15, 20, 3], [11, 16, 2, 16]])
    prim = np.zeros(t.shape, bool)
    prim[1, 3] = prim[2, 2] = True
    first = cs.protect_table(t, prim, 2)
    ref = cs.protect_table(t, prim, 2, refine=True)
    assert ref.refined and np.array_equal(ref.first_complementary, first.complementary)
    assert not (ref.complementary & ~first.complementary).any()
    assert ref.complementary.sum() == 2 < first.complementary.sum() == 4
    assert ref.audit.protected.all() and ref.cost < first.cost
    for kind in ("value", "count"):
        other = cs.protect_table(t, prim, 2, refine=True, refine_cost=kind)
        assert not (other.complementary & ~first.complementary).any() and other.audit.protected.all()


@settings(max_examples=12, derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_refinement_never_adds_a_cell_and_never_breaks_protection(data):
    shape = data.draw(st.sampled_from([(2, 3), (3, 3), (3, 4)]))
    interior = np.array(data.draw(st.lists(st.integers(0, 25), min_size=shape[0] * shape[1],
                                           max_size=shape[0] * shape[1]))).reshape(shape)
    t = _with_margins(interior)
    prim = cs.frequency_rule(t, 4)
    prim[-1, :] = prim[:, -1] = False
    if not prim.any():
        return
    ref = cs.protect_table(t, prim, 2, refine=True)
    assert not (ref.complementary & ~ref.first_complementary).any()
    if not ref.fallback.any():
        assert ref.audit.protected.all()


def test_capacity_and_refinement_options_are_checked():
    t = _with_margins([[1, 5], [4, 6]])
    prim = np.zeros(t.shape, bool)
    prim[0, 0] = True
    with pytest.raises(ValueError, match="capacity"):
        cs.protect_table(t, prim, 1, capacity="infinite")
    with pytest.raises(ValueError, match="non-negative"):
        cs.protect_table(t, prim, 1, capacity=-np.ones(t.shape))
    with pytest.raises(ValueError, match="refine_cost"):
        cs.protect_table(t, prim, 1, refine=True, refine_cost="area")


# ------------------------------------------------------------------ general relations
def test_hierarchy_a_county_cell_against_its_state():
    """State = county A + county B, cell by cell (3 cells and a total each). A small cell of
    county A, suppressed with a complement in its own table, is still disclosed by the state
    and county B unless the protection also crosses the hierarchy."""
    a = np.array([2, 10, 8, 20.0])
    b = np.array([5, 6, 9, 20.0])
    x = np.concatenate([a, b, a + b])  # cells 0-3 county A, 4-7 county B, 8-11 the state
    sums = [(3, [0, 1, 2]), (7, [4, 5, 6]), (11, [8, 9, 10])] + [(8 + i, [i, 4 + i]) for i in range(4)]
    rel = cs.sum_relations(12, sums)
    sup = np.zeros(12, bool)
    sup[[0, 1]] = True
    audit = cs.audit(x, sup, rel, protection=2)
    assert audit.exact[0] and audit.exact[1]  # state minus county B
    prim = np.zeros(12, bool)
    prim[0] = True
    for method in ("lp", "milp"):
        res = cs.protect(x, prim, rel, 2, method=method)
        assert res.audit.protected.all(), method
        assert res.suppressed[[4, 8]].any() or res.suppressed[[5, 9]].any(), method  # crosses the hierarchy


def test_linked_tables_share_a_margin():
    """Two 2 x 2 tables (with margins) whose column totals are the same cells."""
    t1 = _with_margins([[3, 4], [5, 6]])
    t2 = _with_margins([[1, 7], [7, 3]])
    assert np.array_equal(t1[-1], t2[-1])
    # cells: t1 (9, row-major), then t2 without its total row (6); t2's total row is t1's
    idx1 = np.arange(9).reshape(3, 3)
    idx2 = np.vstack([np.arange(9, 15).reshape(2, 3), idx1[-1]])
    sums = [(idx[i, -1], idx[i, :-1]) for idx in (idx1, idx2) for i in range(3)]
    sums += [(idx[-1, j], idx[:-1, j]) for idx in (idx1, idx2) for j in range(3)]
    x = np.concatenate([t1.reshape(-1), t2[:-1].reshape(-1)])
    rel = cs.sum_relations(15, sums)
    prim = np.zeros(15, bool)
    prim[9] = True  # t2's 1
    res = cs.protect(x, prim, rel, 1, method="milp")
    assert res.audit.protected.all() and res.optimal
    lp = cs.protect(x, prim, rel, 1)
    assert lp.audit.protected.all() and lp.cost >= res.cost - 1e-9


# ------------------------------------------------------------------ limits and errors
def test_an_lp_that_cannot_finish_withholds_its_part_whole():
    t = _with_margins([[1, 20, 30], [10, 2, 40], [25, 35, 5]])
    prim = np.zeros(t.shape, bool)
    prim[0, 0] = True
    res = cs.protect_table(t, prim, 3, time_limit=1e-12)
    assert res.fallback.any() and res.notes and "withheld whole" in res.notes[0]
    assert res.suppressed.all()
    assert not res.complementary.any()


def test_a_part_withheld_whole_says_why():
    """Massell's capacity: a primary whose row and column hold only zeros cannot be
    protected (a zero never moves), so the LP is infeasible and the note says so, not
    "did not finish"; with unbounded capacity the same primary is protected. A time limit
    is named as such."""
    t = _with_margins([[1, 0], [0, 5]])
    prim = np.zeros(t.shape, bool)
    prim[0, 0] = True
    res = cs.protect_table(t, prim, 3)
    assert res.fallback.any() and len(res.notes) == 1
    assert res.notes[0].startswith("no complementary cells can protect a primary within the capacities")
    free = cs.protect_table(t, prim, 3, capacity="unbounded")
    assert not free.fallback.any() and not free.notes and free.audit.protected.all()
    t = _with_margins([[1, 20, 30], [10, 2, 40], [25, 35, 5]])
    prim = np.zeros(t.shape, bool)
    prim[0, 0] = True
    slow = cs.protect_table(t, prim, 3, time_limit=1e-12)
    assert slow.notes and slow.notes[0].startswith("time limit")


def test_a_spent_time_budget_withholds_the_remaining_parts_and_leaves_them_unaudited():
    t = _with_margins([[1, 20, 30], [10, 2, 40], [25, 35, 5]])
    prim = np.zeros(t.shape, bool)
    prim[0, 0] = True
    res = cs.protect_table(t, prim, 3, time_budget=0.0)
    assert res.suppressed.all() and res.fallback.sum() == t.size - 1
    assert any("time budget" in n for n in res.notes)
    assert not res.audit.complete and np.isnan(res.audit.low[0, 0])
    a = cs.audit_table(t, prim, protection=3, time_budget=0.0)
    assert not a.complete and not a.protected[0, 0]


def test_the_exact_model_refuses_tables_too_large_for_it():
    t = _with_margins(np.arange(1, 401).reshape(20, 20) % 7 + 1)
    prim = cs.frequency_rule(t, 3)
    prim[-1, :] = prim[:, -1] = False
    with pytest.raises(ValueError, match="use method='lp'"):
        cs.protect_table(t, prim, 2, method="milp", singletons=t == 1)


@pytest.mark.parametrize("table,match", [
    (np.ones((3,)), "2-D"),
    (np.ones((1, 3)), "at least 2 rows"),
    (np.array([[1, 2, 4], [4, 5, 9], [5, 7, 13]]), "row 0"),
    (np.array([[1, 2, 3], [4, 5, 9], [5, 8, 13]]), "column 1"),
    (np.array([[-1, 2, 1], [4, 5, 9], [3, 7, 10]]), "non-negative"),
])
def test_tables_are_checked(table, match):
    with pytest.raises(ValueError, match=match):
        cs.audit_table(table, np.zeros(np.shape(table), bool))


def test_general_inputs_are_checked():
    rel = cs.sum_relations(3, [(2, [0, 1])])
    with pytest.raises(ValueError, match="relation 0"):
        cs.audit([1, 1, 3], [True, False, False], rel)
    with pytest.raises(ValueError, match="3 columns for 2 cells"):
        cs.audit([1, 1], [True, False], rel)
    with pytest.raises(ValueError, match="outside its bounds"):
        cs.audit([1, 2, 3], [True, False, False], rel, upper=[0.5, 5, 5])
    with pytest.raises(ValueError, match="both the total and a part"):
        cs.sum_relations(3, [(2, [2, 1])])
    with pytest.raises(ValueError, match="cost"):
        cs.protect([1, 2, 3], [True, False, False], rel, 1, cost="area")
    with pytest.raises(ValueError, match="method"):
        cs.protect([1, 2, 3], [True, False, False], rel, 1, method="simplex")


def test_with_margins_appends_the_totals():
    t = cs.with_margins([[1, 2, 3], [4, 5, 6]])
    assert t.tolist() == [[1, 2, 3, 6], [4, 5, 6, 15], [5, 7, 9, 21]]
    with pytest.raises(ValueError, match="2-D"):
        cs.with_margins([1, 2])


def test_the_docs_quote_only_words_the_seed_uses_in_the_sections_they_cite():
    """docs/cell-suppression.md's "Implemented" table cited '§4 "singleton" problem', a term the
    seed's pages (shared/papers/cell-suppression-audit.txt) never use; every quoted term of the
    table's seed column must occur in the seed's text."""
    import re
    from pathlib import Path

    repo = Path(__file__).resolve().parents[2]
    doc = (repo / "docs" / "cell-suppression.md").read_text(encoding="utf-8")
    table = doc.split("## Implemented", 1)[1].split("\n\n", 2)[1]
    seed_cells = [line.split("|")[1] for line in table.splitlines() if line.startswith("| ") and "---" not in line]
    quoted = [q for cell in seed_cells for q in re.findall(r'"([^"]+)"', cell)]
    assert "capacity" in quoted and "singleton" not in quoted
    assert not any("singleton" in cell for cell in seed_cells if "§" in cell)
    paper = repo.parent / "shared" / "papers" / "cell-suppression-audit.txt"
    if paper.exists():
        text = paper.read_text(encoding="utf-8").lower()
        assert "singleton" not in text  # so no row may cite the seed for it
        for q in quoted:
            assert q.lower() in text, q
