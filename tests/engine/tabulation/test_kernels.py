"""The numba counting kernels against plain numpy on random inputs.

`level_totals` / `level_cells` are checked against the flat map written as array
expressions (each row expanded to its groups, then summed), `combo_groups` against
set operations per combo, `count_sorted` against np.unique.
"""

from __future__ import annotations

import numpy as np

from engine.tabulation import _kernels
from engine.tabulation.flatmap import CSR

CAP = _kernels.CK_CAP
N = _kernels.N_CELLS


def _random_table(rng, n_pieces=30, n_ck=40, rows=3000):
    piece = rng.integers(0, n_pieces, rows)
    ck = rng.integers(0, n_ck, rows)
    cell = rng.integers(0, N, rows)
    key = np.unique((piece * CAP + ck) * N + cell)
    count = rng.integers(1, 9, len(key)).astype(np.int32)
    piece_rows = np.searchsorted(key, np.arange(n_pieces + 1) * CAP * N)
    return key, count, piece_rows


def _random_csr(rng, n_rows, n_it, most=4):
    rows, members = [], []
    for r in range(n_rows):
        m = rng.choice(n_it, size=rng.integers(0, min(most, n_it) + 1), replace=False)
        rows += [r] * len(m)
        members += list(m)
    return CSR.from_pairs(np.array(rows, np.int64), np.array(members, np.int64), n_rows)


def _expand_plain(key, count, piece_region, combo_of, eth_of, race, eth, n_it):
    """(group, cell, count) of every row and group it joins, by array expressions."""
    piece, ck, cell = key // (CAP * N), (key // N) % CAP, key % N
    region = piece_region[piece]
    inside = region >= 0
    region, ck, cell, count = region[inside], ck[inside], cell[inside], count[inside]
    p1, i1 = race.expand(combo_of[ck])
    p2, i2 = eth.expand(eth_of[ck])
    pos, it = np.concatenate([p1, p2]), np.concatenate([i1, i2])
    return region[pos] * n_it + it, cell[pos], count[pos].astype(np.int64)


def test_totals_of_several_levels_and_cells_equal_the_plain_flat_map():
    rng = np.random.default_rng(11)
    key, count, piece_rows = _random_table(rng)
    combo_of = rng.integers(0, 10, 40).astype(np.int64)
    eth_of = rng.integers(0, 6, 40).astype(np.int64)
    # three memberships, four levels (two share one), regions of various sizes
    shapes = [(5, 0), (12, 1), (3, 2), (12, 1)]  # (iterations, membership) of each level
    members = [(_random_csr(rng, 10, n_it), _random_csr(rng, 6, n_it, most=2)) for n_it in (5, 12, 3)]
    n_regions = [1, 7, 30, 4]
    piece_region = np.stack([rng.integers(-1, n, 30) for n in n_regions]).astype(np.int64)

    def pad(arrays):
        out = np.zeros((len(arrays), max(len(a) for a in arrays)), np.int64)
        for i, a in enumerate(arrays):
            out[i, :len(a)] = a
        return out

    rec = _kernels.key_records(combo_of, eth_of, pad([r.offsets for r, _ in members]),
                                      pad([r.members for r, _ in members]), pad([e.offsets for _, e in members]),
                                      pad([e.members for _, e in members]))
    sizes = np.array([n * it for n, (it, _) in zip(n_regions, shapes)])
    base = np.r_[0, np.cumsum(sizes)[:-1]]
    out = np.zeros(sizes.sum(), np.int64)
    level_cls, level_nit = np.array([c for _, c in shapes]), np.array([it for it, _ in shapes])
    none = np.zeros(4, np.bool_)
    _kernels.totals_all(key, count, piece_rows, 0, 30, rec, piece_region, level_cls, level_nit, base, out, none,
                        base, np.zeros(0, np.int64))
    # the same split in two piece ranges, the second adding every level into its own copy
    priv = np.zeros(sizes.sum(), np.int64)
    split = np.zeros(sizes.sum(), np.int64)
    _kernels.totals_all(key, count, piece_rows, 0, 13, rec, piece_region, level_cls, level_nit, base, split, none,
                        base, priv)
    _kernels.totals_all(key, count, piece_rows, 13, 30, rec, piece_region, level_cls, level_nit, base, split,
                        ~none, base, priv)
    assert np.array_equal(split + priv, out)
    for L, ((n_it, c), n) in enumerate(zip(shapes, n_regions)):
        race, eth = members[c]
        g, cell, cnt = _expand_plain(key, count, piece_region[L], combo_of, eth_of, race, eth, n_it)
        plain = np.bincount(g, weights=cnt, minlength=n * n_it).astype(np.int64)
        assert np.array_equal(out[base[L]:base[L] + sizes[L]], plain)
        groups = np.unique(rng.integers(0, n * n_it, max(1, n * n_it // 3)))
        slot = np.full(n * n_it, -1, np.int32)
        slot[groups] = np.arange(len(groups))
        wanted_region = np.zeros(n, np.bool_)
        wanted_region[groups // n_it] = True
        cells = np.zeros((len(groups), N), np.int64)
        _kernels.level_cells(key, count, piece_rows, 0, 30, rec, c, piece_region[L], n_it, wanted_region, slot,
                             cells)
        dense = np.bincount(g * N + cell, weights=cnt, minlength=n * n_it * N).astype(np.int64).reshape(-1, N)
        assert np.array_equal(cells, dense[groups])
    assert out.sum() > 0


def test_combo_groups_are_union_of_aoic_and_intersection_of_alone():
    rng = np.random.default_rng(3)
    n_codes, n_it = 12, 20
    aoic, alone = _random_csr(rng, n_codes, n_it), _random_csr(rng, n_codes, n_it, most=6)
    combos = [sorted(rng.choice(n_codes, size=rng.integers(1, 5), replace=False)) for _ in range(50)]
    off = np.r_[0, np.cumsum([len(c) for c in combos])].astype(np.int64)
    codes = np.concatenate([np.array(c, np.int64) for c in combos])
    out_off, members = _kernels.combo_groups(off, codes, aoic.offsets, aoic.members, alone.offsets, alone.members,
                                             n_it)
    for i, combo in enumerate(combos):
        lists = lambda csr, c: set(csr.members[csr.offsets[c]:csr.offsets[c + 1]].tolist())  # noqa: E731
        union = set().union(*(lists(aoic, c) for c in combo))
        inter = set.intersection(*(lists(alone, c) for c in combo))
        got = members[out_off[i]:out_off[i + 1]].tolist()
        assert got == sorted(got) and sorted(got) == sorted(list(union) + list(inter))


def test_count_sorted_equals_unique():
    rng = np.random.default_rng(0)
    k = np.sort(rng.integers(0, 100, 5000))
    u, c = _kernels.count_sorted(k)
    ru, rc = np.unique(k, return_counts=True)
    assert np.array_equal(u, ru) and np.array_equal(c, rc)


def test_cell_cache_serves_exactly_the_cells_counted_again():
    """A study's trials keep the cells counted (`CellCache`): every answer equals a fresh
    count, whichever groups were asked before, and only unseen groups are counted."""
    from engine.tabulation.aggregate import CellCache, N_CELLS

    rng = np.random.default_rng(3)
    truth = rng.integers(0, 50, size=(1000, N_CELLS))
    asked = []

    def count(groups):
        asked.append(groups.copy())
        return truth[groups]

    cache = CellCache()
    for _ in range(6):
        groups = np.unique(rng.integers(0, 1000, rng.integers(0, 400)))
        before = set(cache.groups.tolist())
        got = cache.cells_of(groups, count)
        assert np.array_equal(got, truth[groups])
        assert set(asked[-1].tolist()) == set(groups.tolist()) - before
        assert np.all(np.diff(cache.groups) > 0)
    assert np.array_equal(cache.cells, truth[cache.groups])
    # frozen (a worker of a parallel study): the same answers, the cache arrays untouched
    kept = cache.groups
    cache.frozen = True
    groups = np.arange(0, 1000, 3)
    assert np.array_equal(cache.cells_of(groups, count), truth[groups])
    assert len(asked[-1]) and set(asked[-1].tolist()) == set(groups.tolist()) - set(kept.tolist())
    assert cache.groups is kept
