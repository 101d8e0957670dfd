"""Merging of per-batch counts: the k-way merge of sorted runs gives the table of one sort."""

from __future__ import annotations

import numpy as np

from engine.tabulation.aggregate import _merge


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
