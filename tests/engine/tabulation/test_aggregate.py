"""Merging of per-batch counts: the k-way merge of sorted runs gives the table of one sort."""

from __future__ import annotations

import numpy as np

from engine.tabulation.aggregate import _CountRuns, _merge


def _plain(keys, counts):
    k = np.concatenate(keys)
    c = np.concatenate(counts).astype(np.int64)
    u, inv = np.unique(k, return_inverse=True)
    return u, np.bincount(inv, weights=c, minlength=len(u)).astype(np.int64)


def test_k_way_merge_equals_one_sort():
    rng = np.random.default_rng(4)
    keys, counts = [], []
    for _ in range(7):
        k = np.unique(rng.integers(0, 5_000, size=rng.integers(1, 900)))
        keys.append(k.astype(np.int64))
        counts.append(rng.integers(1, 50, size=len(k)).astype(np.int32))
    keys.append(np.zeros(0, np.int64))  # an empty run
    counts.append(np.zeros(0, np.int32))
    a_k, a_c = _plain(keys, counts)
    b_k, b_c = _merge(keys, counts)
    assert np.array_equal(a_k, b_k) and np.array_equal(a_c, b_c)
    assert np.all(np.diff(b_k) > 0)
    assert b_c.sum() == sum(int(c.sum()) for c in counts)


def test_merge_of_one_run_and_of_none():
    k = np.array([3, 5, 9], np.int64)
    c = np.array([1, 2, 3], np.int32)
    mk, mc = _merge([k], [c])
    assert mk.tolist() == [3, 5, 9] and mc.tolist() == [1, 2, 3]
    mk, mc = _merge([np.zeros(0, np.int64)], [np.zeros(0, np.int32)])
    assert len(mk) == len(mc) == 0


def test_count_runs_give_one_sorted_table_in_any_order():
    rng = np.random.default_rng(9)
    # runs in key order (a file sorted by geography: each overlaps the previous at one end)
    ordered = [np.unique(rng.integers(100 * i, 100 * i + 130, size=60)) for i in range(40)]
    shuffled = [np.unique(rng.integers(0, 4_000, size=rng.integers(1, 200))) for _ in range(40)]
    for runs_k in (ordered, shuffled, ordered[::-1]):
        runs_c = [rng.integers(1, 9, size=len(k)).astype(np.int32) for k in runs_k]
        for merge_rows in (1, 50, 10**9):
            runs = _CountRuns(merge_rows)
            for k, c in zip(runs_k, runs_c):
                runs.add(k.astype(np.int64), c)
                assert all(a[0][-1] < b[0][0] for a, b in zip(runs.segments, runs.segments[1:]))
            key, count = runs.table()
            want_k, want_c = _plain(runs_k, runs_c)
            assert np.array_equal(key, want_k) and np.array_equal(count, want_c)
