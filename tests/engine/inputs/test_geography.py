"""Geography.block_index: the persons' block keys found in GRF-C (issue 24: one lookup
built per geography instead of a hash of every block per batch)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from engine.inputs.geography import Geography


def _geo(keys: list[str]) -> Geography:
    return Geography(block_keys=pa.array(keys, pa.string()), block_piece=np.zeros(len(keys), np.int64), n_pieces=1)


def _reference(keys: list[str], values: list[str]) -> tuple[np.ndarray, np.ndarray]:
    idx = pc.index_in(pa.array(values, pa.string()), value_set=pa.array(keys, pa.string()))
    found = pc.is_valid(idx).to_numpy(zero_copy_only=False)
    return pc.fill_null(idx, 0).to_numpy(zero_copy_only=False).astype(np.int64), found


def test_digit_keys_are_found_where_they_are_and_nowhere_else():
    keys = ["010010201001000", "720010201001000", "000000000000001", "999999999999999", "010010201001001"]
    values = ["010010201001001", "000000000000001", "1", "01001020100100", "0100102010010001", "01001020100100x",
              "٠١٠٠١٠٢٠١٠٠١٠٠٠", "", "999999999999999", "010010201001000", "999999999999998", "000000000000000"]
    idx, found = _geo(keys).block_index(pa.array(values, pa.string()))
    ref_idx, ref_found = _reference(keys, values)
    assert found.tolist() == ref_found.tolist() == [True, True] + [False] * 6 + [True, True, False, False]
    assert idx.tolist() == ref_idx.tolist() == [4, 2, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0]


def test_random_keys_agree_with_a_hash_lookup():
    rng = np.random.default_rng(7)
    keys = sorted({f"{x:015d}" for x in rng.integers(0, 10**15, 5000)})
    rng.shuffle(keys)
    values = [keys[i] for i in rng.integers(0, len(keys), 3000)] + [f"{x:015d}" for x in rng.integers(0, 10**15, 3000)]
    idx, found = _geo(keys).block_index(pa.array(values, pa.string()))
    ref_idx, ref_found = _reference(keys, values)
    assert np.array_equal(found, ref_found) and found[:3000].all()
    assert np.array_equal(idx, ref_idx)


@pytest.mark.parametrize("keys", [["01001", "0100102010010001"], ["01001020100100a", "010010201001000"], []])
def test_keys_that_are_not_15_digits_fall_back_to_exact_text(keys):
    values = ["01001", "010010201001000", "0100102010010001", "x"]
    idx, found = _geo(keys).block_index(pa.array(values, pa.string()))
    ref_idx, ref_found = _reference(keys, values)
    assert found.tolist() == ref_found.tolist() and idx.tolist() == ref_idx.tolist()
