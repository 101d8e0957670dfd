"""The characteristic-key registry: stable ids across batches, exact combos, long combos."""

from __future__ import annotations

import numpy as np

from engine.tabulation.flatmap import CharKeys


def _rows(rng, n, n_codes, max_codes=8):
    race = np.full((n, 8), -1, dtype=np.int32)
    k = rng.choice([1, 2, 3, 6, 8], size=n, p=[0.6, 0.2, 0.1, 0.05, 0.05])
    k = np.minimum(k, max_codes)
    for i in range(n):
        race[i, : k[i]] = np.sort(rng.choice(n_codes, size=k[i], replace=False))
    return race, rng.integers(0, n_codes, size=n).astype(np.int32)


def test_ids_are_consistent_across_batches_and_decode_exactly():
    rng = np.random.default_rng(0)
    n_codes = 1755  # 11 bits: 5 codes fit in a word, 6 or more take the long path
    ck = CharKeys(n_codes)
    seen: dict[tuple, int] = {}
    for _ in range(4):
        race, eth = _rows(rng, 3000, 40)  # few codes in use, so keys repeat across batches
        ids = ck.ids(race, eth)
        for r, e, i in zip(race, eth, ids):
            key = (tuple(int(x) for x in r if x >= 0), int(e))
            assert seen.setdefault(key, int(i)) == int(i)
    assert len(ck) == len(seen) == len(set(seen.values()))
    assert sorted(seen.values()) == list(range(len(seen)))
    combo_of, eth_of = ck.combo_of, ck.eth_of
    for (codes, e), i in seen.items():
        assert ck.combo(int(combo_of[i])) == codes
        assert int(eth_of[i]) == e
    offsets = ck.combo_offsets
    assert len(offsets) == ck.n_combos + 1 and offsets[-1] == len(ck.combo_codes)
    assert any(len(c) > ck.per_word for c, _ in seen)  # the long path was used


def test_same_combo_with_different_ethnicity_shares_the_combo():
    ck = CharKeys(100)
    race = np.array([[3, 7, -1, -1, -1, -1, -1, -1]] * 2, dtype=np.int32)
    ids = ck.ids(race, np.array([1, 2], dtype=np.int32))
    assert ids[0] != ids[1]
    assert ck.combo_of[ids[0]] == ck.combo_of[ids[1]] and ck.n_combos == 1
