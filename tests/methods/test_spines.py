"""Geographic spines (methods.spines): OSED, bypassing, spine optimisation."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from methods import spines

# A tract (node 0) of two block groups (1, 2) of four blocks each: blocks 1..8 of the
# issue are nodes 3..10.
TRACT = np.array([-1, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2])


def _blocks(*numbers: int) -> np.ndarray:
    """The issue's blocks (1..8) as a boolean per leaf."""
    out = np.zeros(8, dtype=bool)
    out[[b - 1 for b in numbers]] = True
    return out


def _leaf_sets(parents) -> np.ndarray:
    """Node x leaf 0/1 matrix: the leaves below each node."""
    parents = np.asarray(parents)
    n = len(parents)
    leaves = np.flatnonzero(np.bincount(parents[parents >= 0], minlength=n) == 0)
    sets = np.zeros((n, len(leaves)), dtype=np.int64)
    for i, v in enumerate(leaves):
        a = int(v)
        while a >= 0:
            sets[a, i] = 1
            a = int(parents[a])
    return sets


def _brute_force(parents, target, usable=None, max_units: int = 6):
    """The fewest signed nodes (each at most once) whose sum is `target` (per leaf),
    trying every signed subset of usable nodes by size."""
    sets = _leaf_sets(parents)
    cand = np.flatnonzero(np.ones(len(parents), bool) if usable is None else usable)
    target = np.asarray(target, dtype=np.int64)
    for d in range(max_units + 1):
        for comb in itertools.combinations(cand, d):
            sub = sets[list(comb)]
            for signs in itertools.product((1, -1), repeat=d):
                got = np.asarray(signs, dtype=np.int64) @ sub if d else np.zeros_like(target)
                if np.array_equal(got, target):
                    return d
    return None


def _signed_sum(parents, decomposition) -> np.ndarray:
    sets = _leaf_sets(parents)
    if len(decomposition) == 0:
        return np.zeros(sets.shape[1], dtype=np.int64)
    return decomposition[:, 1] @ sets[decomposition[:, 0]]


# ------------------------------------------------------------------------ OSED
@pytest.mark.parametrize("blocks, distance", [
    ((1, 2, 3, 4), 1),  # BG1
    ((1, 2, 3, 5), 3),  # BG1 - 4 + 5
    ((1, 2, 3, 4, 5, 6, 7), 2),  # the tract minus block 8
    ((1, 5), 2),  # two blocks
    ((1, 2, 3, 4, 5, 6, 7, 8), 1),  # the tract
    ((), 0),
])
def test_issue_example_tract_of_two_block_groups(blocks, distance):
    d, dec = spines.osed(TRACT, _blocks(*blocks))
    assert d == distance == len(dec)
    assert np.array_equal(_signed_sum(TRACT, dec), _blocks(*blocks).astype(int))


def test_issue_example_decompositions_name_the_units():
    assert spines.osed(TRACT, _blocks(1, 2, 3, 4))[1].tolist() == [[1, 1]]
    assert spines.osed(TRACT, _blocks(1, 2, 3, 4, 5, 6, 7))[1].tolist() == [[0, 1], [10, -1]]
    assert spines.osed(TRACT, _blocks(1, 2, 3, 5))[1].tolist() == [[1, 1], [6, -1], [7, 1]]
    # Ties prefer additions: {1, 2} is 1 + 2, not BG1 - 3 - 4 (which would be 3 anyway),
    # and {1, 2, 3, 5, 6, 7} = BG1 - 4 + BG2 - 8 (4) is chosen over six blocks.
    assert spines.osed(TRACT, _blocks(1, 2))[1].tolist() == [[3, 1], [4, 1]]


def test_per_node_and_per_leaf_inputs_agree():
    per_node = np.zeros(len(TRACT), dtype=bool)
    per_node[[3, 4, 5, 7]] = True
    assert spines.osed(TRACT, per_node)[0] == spines.osed(TRACT, _blocks(1, 2, 3, 5))[0] == 3


def test_osed_is_the_seeds_recursion_written_out():
    """c_k(g) = min(sum c_k, 1 + sum c_notk), c_notk(g) = min(sum c_notk, 1 + sum c_k)."""
    rng = np.random.default_rng(3)
    for _ in range(50):
        n = int(rng.integers(2, 40))
        parents = np.array([-1] + [int(rng.integers(0, i)) for i in range(1, n)])
        leaves = np.flatnonzero(np.bincount(parents[1:], minlength=n) == 0)
        inside = {int(v): bool(rng.random() < 0.5) for v in leaves}

        def c(g):
            kids = np.flatnonzero(parents == g)
            if not len(kids):
                return (1, 0) if inside[g] else (0, 1)
            sk = sum(c(k)[0] for k in kids)
            sn = sum(c(k)[1] for k in kids)
            return min(sk, 1 + sn), min(sn, 1 + sk)

        flags = np.array([inside[int(v)] for v in leaves])
        assert spines.osed(parents, flags)[0] == c(0)[0]
        assert spines.osed_distances(parents, flags[:, None]).tolist() == [c(0)[0]]


@st.composite
def _trees(draw, max_nodes=9):
    n = draw(st.integers(1, max_nodes))
    parents = [-1] + [draw(st.integers(0, i - 1)) for i in range(1, n)]
    parents = np.array(parents)
    n_leaves = int(np.sum(np.bincount(parents[parents >= 0], minlength=n) == 0))
    return parents, n_leaves


@settings(derandomize=True, max_examples=150, deadline=None)
@given(data=st.data())
def test_decomposition_sums_to_the_entity_and_nothing_cheaper_exists(data):
    parents, n_leaves = data.draw(_trees())
    inside = np.array(data.draw(st.lists(st.booleans(), min_size=n_leaves, max_size=n_leaves)))
    d, dec = spines.osed(parents, inside)
    assert np.array_equal(_signed_sum(parents, dec), inside.astype(int))
    assert set(dec[:, 1].tolist()) <= {-1, 1} and len(set(dec[:, 0].tolist())) == len(dec) == d
    assert _brute_force(parents, inside.astype(int), max_units=d) == d


@settings(derandomize=True, max_examples=150, deadline=None)
@given(data=st.data())
def test_unusable_nodes_are_avoided_and_the_result_stays_minimal(data):
    parents, n_leaves = data.draw(_trees())
    inside = np.array(data.draw(st.lists(st.booleans(), min_size=n_leaves, max_size=n_leaves)))
    usable = np.array(data.draw(st.lists(st.booleans(), min_size=len(parents), max_size=len(parents))))
    d, dec = spines.osed(parents, inside, usable=usable)
    best = _brute_force(parents, inside.astype(int), usable, max_units=len(parents))
    assert d == best
    if d is None:
        assert dec.shape == (0, 2)
    else:
        assert usable[dec[:, 0]].all()
        assert np.array_equal(_signed_sum(parents, dec), inside.astype(int))


@settings(derandomize=True, max_examples=120, deadline=None)
@given(data=st.data())
def test_signed_decomposition_of_integer_targets_is_minimal(data):
    parents, n_leaves = data.draw(_trees(max_nodes=8))
    target = np.array(data.draw(st.lists(st.integers(-1, 2), min_size=n_leaves, max_size=n_leaves)))
    usable = np.array(data.draw(st.lists(st.booleans(), min_size=len(parents), max_size=len(parents))))
    d, dec = spines.signed_decomposition(parents, target, usable=usable)
    assert d == _brute_force(parents, target, usable, max_units=len(parents))
    if d is not None:
        assert np.array_equal(_signed_sum(parents, dec), target)


def test_not_composable_when_a_needed_unit_is_unusable():
    usable = np.ones(len(TRACT), dtype=bool)
    usable[1] = False  # BG1 unpublished: the tract minus BG2
    d, dec = spines.osed(TRACT, _blocks(1, 2, 3, 4), usable=usable)
    assert d == 2 and dec.tolist() == [[0, 1], [2, -1]]
    usable[0] = False  # ...and the tract too: BG1's four blocks
    assert spines.osed(TRACT, _blocks(1, 2, 3, 4), usable=usable)[0] == 4
    usable[3:7] = False  # ...and its blocks: BG1 cannot be made at all
    assert spines.osed(TRACT, _blocks(1, 2, 3, 4), usable=usable) == (None, pytest.approx(np.zeros((0, 2))))
    assert spines.osed_distances(TRACT, _blocks(1, 2, 3, 4)[:, None], usable=usable).tolist() == [-1]


def test_combine_costs_equals_osed_on_the_whole_tree():
    # Nation (0) > two counties (1, 2) > four tracts (3..6) > blocks (7..14).
    whole = np.array([-1, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6])
    rng = np.random.default_rng(1)
    member = rng.random((8, 20)) < 0.5
    want = spines.osed_distances(whole, member)
    # Counties one at a time, then the recursion above them.
    # c_k of a county is the OSED of the entity's part in it, c_notk the OSED of the rest.
    sub = np.array([-1, 0, 0, 1, 1, 2, 2])
    halves = (member[:4], member[4:])
    cin = np.stack([spines.osed_distances(sub, h) for h in halves])
    cout = np.stack([spines.osed_distances(sub, ~h) for h in halves])
    got, _ = spines.combine_costs(np.array([-1, 0, 0]), cin, cout)
    assert np.array_equal(got, want)


@pytest.mark.parametrize("parents, message", [
    ([0, -1, 5], "not a node index"),
    ([-1, -1], "exactly one root"),
    ([1, 2, 0], "exactly one root"),
    ([-1, 2, 1], "cycle"),
    ([[-1, 0]], "1-D"),
    ([-1, 0.5], "whole numbers"),
])
def test_bad_trees_are_rejected_with_a_clear_message(parents, message):
    with pytest.raises(ValueError, match=message):
        spines.osed(parents, [True])


def test_bad_entity_length_is_rejected():
    with pytest.raises(ValueError, match="one value per node .* or per leaf"):
        spines.osed(TRACT, [True, False, True])


def test_a_long_chain_is_linear_not_recursive():
    n = 5_000  # deeper than Python's recursion limit
    parents = np.arange(-1, n - 1)
    inside = np.zeros(n, bool)
    inside[-1] = True
    assert spines.osed(parents, inside)[0] == 1


# -------------------------------------------------------------------- bypassing
@pytest.mark.parametrize("k, laplace, gaussian", [(1, True, True), (2, True, False), (3, True, False),
                                                   (4, False, False), (10, False, False)])
def test_equal_shares_bypass_rule(k, laplace, gaussian):
    assert spines.should_bypass(k, 1, 1, "laplace") is laplace
    assert spines.should_bypass(k, 1, 1, "geometric") is laplace
    assert spines.should_bypass(k, 1, 1, "gaussian") is gaussian
    # The rule is exactly "bypassing does not increase the parent's variance" (Remark 1),
    # in exact arithmetic.
    for mech, rule in (("laplace", laplace), ("gaussian", gaussian)):
        before, after = spines.bypass_variances(k, Fraction(1), Fraction(1), mech)
        assert (after <= before) is rule


def test_bypass_variances_closed_forms():
    # Laplace, variance 2 / share^2: before 2k / (k s_p^2 + s_c^2), after 2k / (s_c + s_p)^2 (Remark 1).
    b, a = spines.bypass_variances(3, Fraction(1, 2), Fraction(1, 3), "laplace", scale=2)
    assert b == Fraction(2 * 3) / (3 * Fraction(1, 4) + Fraction(1, 9))
    assert a == Fraction(2 * 3) / (Fraction(1, 2) + Fraction(1, 3)) ** 2
    # Gaussian, variance 1 / share: before 1 / (s_p + s_c / k), after k / (s_c + s_p).
    b, a = spines.bypass_variances(2, Fraction(1, 4), Fraction(1, 2), "gaussian")
    assert b == 1 / (Fraction(1, 4) + Fraction(1, 4)) and a == 2 / Fraction(3, 4)
    # No parent share: nothing to combine, nothing moves.
    assert spines.bypass_variances(2, 0, 1, "laplace") == (2, 2)


@settings(derandomize=True, max_examples=200, deadline=None)
@given(k=st.integers(1, 8), sp=st.integers(1, 20), sc=st.lists(st.integers(1, 20), min_size=8, max_size=8))
def test_theorem_2_rule_never_hurts_the_parent(k, sp, sc):
    children = [Fraction(c, 4) for c in sc[:k]]
    before, after = spines.bypass_variances(k, Fraction(sp, 4), children, "laplace")
    if spines.should_bypass(k, Fraction(sp, 4), children, "laplace"):
        assert after <= before
    if len(set(children)) == 1:  # equal shares: the rule is exact
        assert spines.should_bypass(k, Fraction(sp, 4), children, "laplace") == (after <= before)
    g_before, g_after = spines.bypass_variances(k, Fraction(sp, 4), children, "gaussian")
    assert (g_after <= g_before) == (k == 1) or k > 1 and len(set(children)) > 1


@pytest.mark.parametrize("args, message", [
    ((0, 1, 1, "laplace"), "whole number >= 1"),
    ((2, 1, [1], "laplace"), "1 values for k = 2"),
    ((2, -1, 1, "laplace"), "parent_share"),
    ((2, 1, 0, "laplace"), "child_share must be > 0"),
    ((2, 1, float("nan"), "laplace"), "child_share"),
    ((2, 1, 1, "uniform"), "mechanism"),
])
def test_bypass_arguments_are_checked(args, message):
    with pytest.raises(ValueError, match=message):
        spines.should_bypass(*args)


def _path_sums(parents, shares, leaves):
    out = []
    for v in leaves:
        total, a = 0, int(v)
        while a >= 0:
            total += shares[a]
            a = int(parents[a])
        out.append(total)
    return out


def test_bypass_spine_keeps_path_budgets_and_follows_the_rule():
    # Root > A (1 child) and B (3 children) and C (4 children); equal shares.
    parents = np.array([-1, 0, 0, 0, 1, 2, 2, 2, 3, 3, 3, 3])
    shares = [Fraction(1)] * len(parents)
    leaves = np.arange(4, 12)
    p, sh, gone = spines.bypass_spine(parents, shares, "laplace")
    assert gone.tolist() == [False, True, True, False] + [False] * 8  # k = 1 and k = 3 go, k = 4 stays
    assert p[4] == 0 and p[5] == 0 and p[8] == 3 and p[1] == -2
    assert _path_sums(p, sh, leaves) == _path_sums(parents, shares, leaves)
    p, sh, gone = spines.bypass_spine(parents, shares, "gaussian")
    assert np.flatnonzero(gone).tolist() == [1]  # zCDP: only the single-child parent
    assert sh[4] == 2 and _path_sums(p, sh, leaves) == _path_sums(parents, shares, leaves)
    # The production cutoff: no bypass that gives the parent more than `bypass_cutoff` children.
    _p, _sh, gone = spines.bypass_spine(parents, shares, "laplace", bypass_cutoff=4)
    assert np.flatnonzero(gone).tolist() == [1]


# --------------------------------------------------------- spine optimisation
def _county():
    """Two tracts; tract 0 has Census block groups 1 (blocks 0-7) and 2 (8-11),
    tract 1 block group 1 (12-19). Place 5 covers blocks 2-4 and 9-10 of tract 0;
    place 6 covers all of tract 1; AIANNH area 0 covers blocks 6-13."""
    tract = np.array([0] * 12 + [1] * 8)
    bg = np.array([1] * 8 + [2] * 4 + [1] * 8)
    place = np.full(20, -1)
    place[[2, 3, 4, 9, 10]] = 5
    place[12:] = 6
    aian = np.full(20, -1)
    aian[6:14] = 0
    return tract, bg, np.stack([place, aian])


def test_optimize_spine_regroups_block_groups_by_entity_intersections():
    tract, bg, ent = _county()
    res = spines.optimize_spine(tract, bg, ent)
    assert [(int(t), int(i)) for t, i in zip(res.entity_type, res.entity_id)] == [(0, 5), (0, 6), (1, 0)]
    for parents, d in ((res.parents_before, res.osed_before), (res.parents_after, res.osed_after)):
        for e in range(3):
            inside = ent[res.entity_type[e]] == res.entity_id[e]
            assert spines.osed(parents, inside)[0] == d[e]
    # Before: place 5 is 3 blocks of BG1 and 2 of BG2 (5 units); AIANNH 0 is 2 blocks of
    # BG1, BG2 and 2 blocks of tract 1 (5 units).
    assert res.osed_before.tolist() == [5, 1, 5]
    # After, each entity is a union of whole optimised block groups in each tract.
    assert res.osed_after.tolist() == [2, 1, 3]
    assert (res.osed_after <= res.osed_before).all()
    # Optimised block groups never mix intersections and stay inside their tract.
    p = res.parents_after
    for g in np.flatnonzero(res.level_after == spines.BLOCK_GROUP):
        kids = np.flatnonzero(p == g)
        assert len({(int(ent[0][k]), int(ent[1][k]), int(tract[k])) for k in kids}) == 1
    assert res.count(spines.BLOCK_GROUP, after=False) == 3
    assert res.count(spines.TRACT) == 2 and res.count(spines.COUNTY) == 1


def _production_block_groups(n_blocks: int, fanout_cutoff: int) -> list[int]:
    """The block-group sizes of one intersection in one tract, by production's rule as
    optimize_spine.py states it: cutoff = int(sqrt(n) + fanout_cutoff); a block opens a
    new block group when the current one already holds more than cutoff blocks."""
    cutoff = int(math.sqrt(n_blocks) + fanout_cutoff)
    sizes, current = [], 0
    for _ in range(n_blocks):
        if current > cutoff:
            sizes.append(current)
            current = 0
        current += 1
    return sizes + [current]


def test_tract_group_cap_is_the_redistricting_production_codes():
    """DAS_2020_Redistricting_Production_Code, optimize_spine.py, minimize_entity_distance:
    cutoff = int(np.sqrt(num_tracts) + fanout_cutoff), no + 1 (a later public copy adds
    one; docs/spines.md says why the project does not follow it). 9 tracts, cutoff 0:
    at most 3 tracts per group (the later copy: 4); the block groups' cap keeps its + 1."""
    assert spines.group_size_cap(9, 0, "tract group") == 3 == int(math.sqrt(9) + 0)
    assert spines.group_size_cap(12, 12, "tract group") == 15
    assert spines.group_size_cap(9, 0) == 4


def test_block_groups_follow_productions_cap():
    """Production's cap is int(sqrt(n) + fanout_cutoff) + 1 blocks, not floor(sqrt(n) +
    fanout_cutoff): 40 blocks with cutoff 2 make block groups of 9 (6 + 2 + 1)."""
    assert spines.group_size_cap(40, 2) == 9 == max(_production_block_groups(40, 2))
    tract = np.zeros(40, dtype=np.int64)
    bg = np.ones(40, dtype=np.int64)
    ent = np.full((1, 40), -1)
    res = spines.optimize_spine(tract, bg, ent, fanout_cutoff=2)
    kids = np.bincount(res.parents_after[:40])
    assert kids[kids > 0].tolist() == [9, 9, 9, 9, 4] == _production_block_groups(40, 2)
    for n in (1, 2, 3, 4, 15, 16, 17, 99, 100, 101, 5000):
        for c in (0, 1, 12):
            cap = spines.group_size_cap(n, c)
            assert cap == int(math.sqrt(n) + c + 1) and max(_production_block_groups(n, c)) == min(n, cap)
            assert spines.group_size_cap(n, c, "tract group") == max(1, int(math.sqrt(n) + c))


def test_lowest_max_fanout_is_the_ceiling_of_the_square_root():
    """The seed, section 4: n units in g groups have largest fan-out max(g, ceil(n/g)),
    smallest at ceil(sqrt(n)); a tract of 100 blocks: 10 groups of 10."""
    assert spines.lowest_max_fanout(100) == 10
    for n in range(1, 400):
        brute = min(max(g, -(-n // g)) for g in range(1, n + 1))
        assert spines.lowest_max_fanout(n) == brute == math.ceil(math.sqrt(n) - 1e-12)
    with pytest.raises(ValueError, match="whole number"):
        spines.group_size_cap(0, 12)
    with pytest.raises(ValueError, match="unit"):
        spines.group_size_cap(10, 12, "county")


def test_tract_groups_without_far_entities_are_packed_as_production_does():
    """No far entity: production merges every cutoff consecutive tract groups into one,
    counting groups, not tracts. 20 tracts, pairs of alike tracts (10 groups of 2), cutoff
    int(sqrt(20) + 0) = 4: groups of 4, 4 and 2 initial groups, i.e. 8, 8 and 4 tracts."""
    tract = np.repeat(np.arange(20), 2)
    bg = np.ones(40, dtype=np.int64)
    place = (tract // 2)[None, :]  # tracts 0-1 in place 0, 2-3 in place 1, ...
    res = spines.optimize_spine(tract, bg, place, fanout_cutoff=0, entity_threshold=100)
    assert not res.far.any()
    tg = np.flatnonzero(res.level_after == spines.TRACT_GROUP)
    tracts = np.flatnonzero(res.level_after == spines.TRACT)
    sizes = np.bincount(res.parents_after[tracts] - tg[0]).tolist()
    assert sizes == [8, 8, 4]


def test_aian_areas_are_productions_categories():
    codes = np.array([1, 4799, 4800, 5000, 5500, 5999, 6000, 7999, 8000, 8999, 9000, 9499, 9500, 9998, 9999])
    on = spines.aian_area(codes)
    # Tribal designated (8000-8999) and state designated (9500-9998) statistical areas are
    # not on the AIAN branch; 9999 is no area.
    assert on.tolist() == [True] * 8 + [False, False, True, True, False, False, False]
    assert spines.aian_area(["0010", "9999", "8001"]).tolist() == [True, False, False]
    every = spines.aian_area(codes, categories=tuple(spines.AIAN_AREA_RANGES))
    assert every.tolist() == [True] * 14 + [False]
    with pytest.raises(ValueError, match="4990"):
        spines.aian_area([4995])
    with pytest.raises(ValueError, match="unknown"):
        spines.aian_area([1], categories=("Reservations",))


def test_tract_groups_bring_a_far_entity_closer():
    """A place covering 10 of 12 tracts (each of 3 blocks, in one block group) is 3
    units away without tract groups (county - 2 tracts); tract groups make it 1."""
    tract = np.repeat(np.arange(12), 3)
    bg = np.ones(36, dtype=np.int64)
    place = np.where(tract < 10, 1, -1)[None, :]
    res = spines.optimize_spine(tract, bg, place, entity_threshold=1)
    assert res.far.tolist() == [True]
    assert res.osed_before.tolist() == [3] and res.osed_after.tolist() == [1]
    tg = np.flatnonzero(res.level_after == spines.TRACT_GROUP)
    sizes = sorted(np.bincount(res.parents_after[np.isin(res.parents_after, tg)] - tg[0]).tolist())
    assert sizes == [2, 10]  # the place's tracts in one group (cutoff floor(sqrt(12) + 12) = 15)
    assert res.evaluations >= 1 and not res.stopped_early


def test_tract_grouping_is_bounded():
    # 30 tracts, each its own place (so no two are alike), and one far area over
    # random blocks: many candidate merges.
    tract = np.repeat(np.arange(30), 2)
    bg = np.ones(60, dtype=np.int64)
    rng = np.random.default_rng(0)
    ent = np.stack([tract, np.where(rng.random(60) < 0.5, 0, -1)])
    full = spines.optimize_spine(tract, bg, ent, fanout_cutoff=0, entity_threshold=0)
    assert full.evaluations > 5 and not full.stopped_early
    res = spines.optimize_spine(tract, bg, ent, fanout_cutoff=0, entity_threshold=0, max_evaluations=5)
    assert res.evaluations == 5 and res.stopped_early
    # The spine is still a valid tree with every block under the county.
    area = ent[1] == 0
    assert spines.osed(res.parents_after, area)[0] == res.osed_after[-1] >= full.osed_after[-1]


def test_optimize_spine_checks_its_inputs():
    with pytest.raises(ValueError, match="one value per block"):
        spines.optimize_spine([0, 0], [1], [[-1, -1]])
    with pytest.raises(ValueError, match="integer codes"):
        spines.optimize_spine([0.5], [1], [[-1]])


@settings(derandomize=True, max_examples=60, deadline=None)
@given(data=st.data())
def test_optimised_spines_are_valid_trees_within_the_fanout_bounds(data):
    nb = data.draw(st.integers(1, 60))
    tract = np.sort(np.array(data.draw(st.lists(st.integers(0, 6), min_size=nb, max_size=nb))))
    bg = np.array(data.draw(st.lists(st.integers(1, 3), min_size=nb, max_size=nb)))
    ent = np.array(data.draw(st.lists(st.lists(st.integers(-1, 3), min_size=nb, max_size=nb),
                                      min_size=1, max_size=2)))
    cutoff = data.draw(st.integers(0, 3))
    res = spines.optimize_spine(tract, bg, ent, fanout_cutoff=cutoff, entity_threshold=data.draw(st.integers(0, 4)))
    n_tracts = len(np.unique(tract))
    for parents, level in ((res.parents_before, res.level_before), (res.parents_after, res.level_after)):
        tree = spines._tree(parents)  # one root, no cycle
        assert np.array_equal(tree.leaves, np.arange(nb)) and (level[:nb] == spines.BLOCK).all()
        # Every edge goes one level down (county > [tract group >] tract > block group > block).
        child = np.flatnonzero(parents >= 0)
        steps = {(int(level[parents[c]]), int(level[c])) for c in child}
        assert steps <= {(0, 1), (0, 2), (1, 2), (2, 3), (3, 4)}
    kids = np.bincount(res.parents_after[res.parents_after >= 0], minlength=len(res.parents_after))
    bgs = np.flatnonzero(res.level_after == spines.BLOCK_GROUP)
    blocks_of_tract = np.bincount(np.unique(tract, return_inverse=True)[1].ravel())
    assert kids[bgs].max() <= int(np.sqrt(blocks_of_tract.max()) + cutoff + 1)
    tgs = np.flatnonzero(res.level_after == spines.TRACT_GROUP)
    cut_t = max(1, int(np.sqrt(n_tracts) + cutoff))
    if res.far.any():
        assert kids[tgs].max() <= cut_t
    else:  # production packs cut_t groups at a time
        assert len(tgs) <= -(-n_tracts // cut_t)
    for e in range(len(res.entity_id)):
        inside = ent[res.entity_type[e]] == res.entity_id[e]
        assert spines.osed(res.parents_after, inside)[0] == res.osed_after[e]
        assert spines.osed(res.parents_before, inside)[0] == res.osed_before[e]
        assert spines.osed(res.parents_after, ~inside)[0] == res.cost_after[e, 1]


# ------------------------------------------------------------------ composition
def _brute_force_with_extras(parents, target, extras, usable, extras_usable, max_units):
    sets = np.vstack([_leaf_sets(parents)[usable], np.asarray(extras, dtype=np.int64)[extras_usable]])
    for d in range(max_units + 1):
        for comb in itertools.combinations(range(len(sets)), d):
            sub = sets[list(comb)]
            for signs in itertools.product((1, -1), repeat=d):
                got = np.asarray(signs, dtype=np.int64) @ sub if d else np.zeros(sets.shape[1], np.int64)
                if np.array_equal(got, target):
                    return d
    return None


@settings(derandomize=True, max_examples=120, deadline=None)
@given(data=st.data())
def test_compose_with_extra_sets_is_minimal(data):
    parents, n_leaves = data.draw(_trees(max_nodes=8))
    target = np.array(data.draw(st.lists(st.integers(0, 1), min_size=n_leaves, max_size=n_leaves)))
    k = data.draw(st.integers(0, 3))
    extras = np.array(data.draw(st.lists(st.lists(st.booleans(), min_size=n_leaves, max_size=n_leaves),
                                         min_size=k, max_size=k)), dtype=bool).reshape(k, n_leaves)
    usable = np.array(data.draw(st.lists(st.booleans(), min_size=len(parents), max_size=len(parents))))
    eu = np.array(data.draw(st.lists(st.booleans(), min_size=k, max_size=k)), dtype=bool)
    res = spines.compose(parents, target, extras, usable=usable, extras_usable=eu)
    assert res.exhaustive
    want = _brute_force_with_extras(parents, target, extras, usable, eu, max_units=6)
    assert res.count == want
    if res.count is not None:
        got = _signed_sum(parents, res.nodes) + (res.extras[:, 1] @ extras[res.extras[:, 0]].astype(int)
                                                 if len(res.extras) else 0)
        assert np.array_equal(got, target)
        assert usable[res.nodes[:, 0]].all() and eu[res.extras[:, 0]].all()


def _two_counties():
    """Nation (0, not a unit) > counties 1, 2 > ten tracts each (3..22) > one piece each
    (23..42, not units). Pieces 23..32 are county 1's."""
    parents = np.array([-1, 0, 0] + [1] * 10 + [2] * 10 + list(range(3, 23)))
    usable = np.ones(len(parents), bool)
    usable[[0]] = False
    usable[23:] = False
    return parents, usable


def test_compose_finds_a_place_of_whole_tracts_outside_the_area():
    parents, usable = _two_counties()
    area = np.zeros(20, dtype=np.int64)
    area[:5] = 1  # county 1's first five tracts
    q = np.zeros(20, bool)
    q[5:10] = True  # a place made of county 1's other five tracts
    others = np.zeros((12, 20), bool)
    for i in range(12):  # places in county 2
        others[i, 10 + i % 10] = True
    extras = np.vstack([others, q])
    res = spines.compose(parents, area, extras, usable=usable, max_solves=100)
    assert res.count == 2 and res.nodes.tolist() == [[1, 1]] and res.extras.tolist() == [[12, -1]]
    assert res.scope == 1 and res.candidates == 1 and res.exhaustive
    # Without the place: the five tracts.
    assert spines.compose(parents, area, usable=usable).count == 5


def test_compose_says_when_the_search_was_capped():
    parents, usable = _two_counties()
    area = np.zeros(20, dtype=np.int64)
    area[:3] = 1
    extras = np.zeros((8, 20), bool)
    for i in range(8):
        extras[i, i] = True
    res = spines.compose(parents, area, extras, usable=usable, max_solves=40)
    assert not res.exhaustive and res.candidates == 8 and res.max_extras == 1
    assert res.count == 3  # three tracts either way
    usable[3] = False  # the first tract is suppressed: county 1 minus its other seven tracts
    assert spines.compose(parents, area, usable=usable).count == 8
    usable[1] = False  # ...and county 1 too: nothing else covers the first tract's piece
    assert spines.compose(parents, area, usable=usable).count is None


def test_bypass_spine_checks_shares():
    with pytest.raises(ValueError, match="one value per node"):
        spines.bypass_spine(TRACT, [1] * 3, "laplace")
    with pytest.raises(ValueError, match="finite number >= 0"):
        spines.bypass_spine(TRACT, [1] * 10 + [-1], "laplace")
    with pytest.raises(ValueError, match="mechanism"):
        spines.bypass_spine(TRACT, [1] * 11, "exponential")
