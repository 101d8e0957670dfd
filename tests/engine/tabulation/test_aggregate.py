"""Merging of per-batch counts: range by range gives the same table as one sort."""

from __future__ import annotations

import numpy as np

from engine.tabulation.aggregate import _merge, _merge_sorted


def test_range_merge_equals_plain_merge():
    rng = np.random.default_rng(4)
    keys, counts = [], []
    for _ in range(7):
        k = np.unique(rng.integers(0, 5_000, size=rng.integers(1, 900)))
        keys.append(k.astype(np.int64))
        counts.append(rng.integers(1, 50, size=len(k)).astype(np.int32))
    a_k, a_c = _merge(keys, counts)
    b_k, b_c = _merge_sorted(keys, counts, parts=5, min_rows=0)
    assert np.array_equal(a_k, b_k) and np.array_equal(a_c, b_c)
    assert np.all(np.diff(b_k) > 0)
    assert b_c.sum() == sum(int(c.sum()) for c in counts)
