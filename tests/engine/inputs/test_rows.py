"""The per-person race rules kernel against the rules written out in plain Python."""

from __future__ import annotations

import numpy as np

from engine.inputs import _rows


def _plain(vals: list[int], limit: int) -> tuple[list[int], list[int], bool]:
    """(problem kind per column, distinct codes of the first `limit` columns ascending,
    truncated) of one row of per-column values (code >= 0, NULL, UNKNOWN)."""
    kinds, null_seen, late_done = [], False, False
    for j, v in enumerate(vals):
        if v == _rows.NULL:
            kinds.append(_rows.NULL_FIRST if j == 0 else _rows.OK)
            null_seen = null_seen or j > 0
        elif v == _rows.UNKNOWN:
            kinds.append(_rows.NOT_A_CODE)
        elif null_seen and not late_done:
            kinds.append(_rows.AFTER_NULL)
            late_done = True
        else:
            kinds.append(_rows.OK)
    first = sorted({v for v in vals[:limit] if v >= 0})
    truncated = any(v >= 0 and v not in first for v in vals[limit:])
    return kinds, first, truncated


def test_race_rows_follow_the_rules_for_every_limit():
    rng = np.random.default_rng(7)
    n = 4000
    # per column: a few distinct values (codes 0..5, Null, unknown), rows pick them by index
    luts = [np.array([0, 1, 2, 3, 4, 5, _rows.NULL, _rows.UNKNOWN], np.int64) for _ in range(8)]
    p = np.array([0.15, 0.1, 0.1, 0.05, 0.05, 0.05, 0.48, 0.02])
    idx = [rng.choice(8, size=n, p=p).astype(np.int64) for _ in range(8)]
    idx[0] = rng.choice(8, size=n, p=[0.2, 0.2, 0.2, 0.1, 0.1, 0.1, 0.05, 0.05]).astype(np.int64)
    for limit in range(1, 9):
        race = np.empty((n, 8), np.int32)
        truncated = np.empty(n, np.bool_)
        kind = np.empty((n, 8), np.int8)
        problems = _rows.race_rows(*idx, *luts, limit, race, truncated, kind)
        total = 0
        for i in range(n):
            vals = [int(luts[j][idx[j][i]]) for j in range(8)]
            kinds, first, trunc = _plain(vals, limit)
            assert kind[i].tolist() == kinds
            assert race[i].tolist() == first + [-1] * (8 - len(first))
            assert bool(truncated[i]) == trunc
            total += sum(k != _rows.OK for k in kinds)
        assert problems == total > 0


def test_factorize_numbers_values_in_order_of_first_appearance():
    rng = np.random.default_rng(1)
    for values in (rng.integers(-5, 5, 1000), rng.integers(0, 2**62, 300), np.zeros(0, np.int64),
                   np.array([7, 7, 7]), rng.integers(0, 10**6, 5000) * 2**20):
        values = values.astype(np.int64)
        codes, uniques = _rows.factorize(values)
        _, first = np.unique(values, return_index=True)
        assert uniques.tolist() == values[np.sort(first)].tolist()
        assert np.array_equal(uniques[codes], values)


def test_the_one_pass_encoding_equals_the_checking_path(tmp_path, monkeypatch):
    """`check_person_batch` on good batches takes `_rows.encode_rows`; the column-by-column
    path (taken when a row is bad) must encode every good row the same way, for every
    max_race_codes (persons with many race codes, truncated ones included)."""
    from engine.errors import ProblemLog
    from engine.inputs import validate
    from engine.inputs.readers import PERSON_COLUMNS, iter_batches
    from engine.synthetic.nation import generate

    s = generate(tmp_path / "n", 20_000, seed=6)
    inputs = validate.load_inputs(s.params_dir, s.data_dir)
    batches = list(iter_batches(inputs.persons_file, PERSON_COLUMNS, ProblemLog(), dictionary=True))
    assert sum(b.table.num_rows for b in batches) == 20_000
    for limit in (1, 2, 8):
        inputs.config = inputs.config.updated(max_race_codes=limit)
        for batch in batches:
            fast = validate._encode_good_batch(batch, inputs)
            assert fast is not None
            with monkeypatch.context() as m:
                m.setattr(validate, "_encode_good_batch", lambda *a: None)
                log = ProblemLog()
                slow = validate.check_person_batch(batch, inputs, log)
            assert not log
            for name in ("block", "race", "eth", "cell", "truncated"):
                assert np.array_equal(getattr(fast, name), getattr(slow, name)), (limit, name)
        if limit < 8:
            assert any(validate._encode_good_batch(b, inputs).truncated.any() for b in batches)
