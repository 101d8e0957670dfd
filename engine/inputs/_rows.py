"""numba kernel of the per-person race rules (SPEC section 4; production's reader).

`check_person_batch` checks every distinct value of a column once (its code index,
Null, or unknown) and hands this kernel, per QRACE column, the value index of each
row and that per-value code (`lut`). One pass over the rows then applies the rules
that depend on the order of the columns and builds what the counting needs.
"""

from __future__ import annotations

import numpy as np
from engine._jit import jit

#: per-value codes in `lut`: a code index >= 0, or
NULL, UNKNOWN = -1, -2
#: problem kinds per (row, column) in `kind`: none, a Null QRACE1, a value that is
#: neither a code nor Null, a code after a Null (reported once per row).
OK, NULL_FIRST, NOT_A_CODE, AFTER_NULL = 0, 1, 2, 3


@jit()
def _holds(race, i, m, v):
    """Whether v is among the first m codes of row i of `race`."""
    for q in range(m):
        if race[i, q] == v:
            return True
    return False


@jit()
def _race_set(vals, limit, race, i):
    """Row i of `race`: the distinct codes of the first `limit` columns of `vals`,
    ascending (insertion sort of <= 8), then -1; returns whether a later column holds a
    code that is not among them (the person's race is truncated by r)."""
    m = 0
    for j in range(limit):
        v = vals[j]
        if v < 0 or _holds(race, i, m, v):
            continue
        q = m
        while q > 0 and race[i, q - 1] > v:
            race[i, q] = race[i, q - 1]
            q -= 1
        race[i, q] = v
        m += 1
    for q in range(m, 8):
        race[i, q] = -1
    for j in range(limit, 8):
        v = vals[j]
        if v >= 0 and not _holds(race, i, m, v):
            return True
    return False


@jit()
def race_rows(i0, i1, i2, i3, i4, i5, i6, i7, l0, l1, l2, l3, l4, l5, l6, l7, limit, race, truncated, kind):
    """For each row: the problems of its 8 QRACE cells (`kind`), its distinct codes
    among QRACE1..QRACE{limit} in ascending order, -1 padded (`race`), and whether a
    later column holds a code not among them (`truncated`). Returns the number of
    problems."""
    n = i0.shape[0]
    problems = 0
    vals = np.empty(8, np.int64)
    for i in range(n):
        vals[0] = l0[i0[i]]
        vals[1] = l1[i1[i]]
        vals[2] = l2[i2[i]]
        vals[3] = l3[i3[i]]
        vals[4] = l4[i4[i]]
        vals[5] = l5[i5[i]]
        vals[6] = l6[i6[i]]
        vals[7] = l7[i7[i]]
        null_seen = False
        late_done = False
        for j in range(8):
            v = vals[j]
            k = OK
            if v == NULL:
                if j == 0:
                    k = NULL_FIRST
                else:
                    null_seen = True
            elif v == UNKNOWN:
                k = NOT_A_CODE
            elif null_seen and not late_done:
                k = AFTER_NULL
                late_done = True
            kind[i, j] = k
            if k != OK:
                problems += 1
        truncated[i] = _race_set(vals, limit, race, i)
    return problems


@jit()
def factorize(values):
    """(codes, uniques): codes[i] is the index in `uniques` of values[i] (int64), the
    uniques in order of first appearance (an open-addressing hash table)."""
    n = values.shape[0]
    size = 16
    while size < 2 * n:
        size *= 2
    mask = size - 1
    slot_value = np.empty(size, np.int64)
    slot_code = np.full(size, -1, np.int64)
    codes = np.empty(n, np.int64)
    uniques = np.empty(n, np.int64)
    m = 0
    for i in range(n):
        v = values[i]
        h = (v * np.int64(-7046029254386353131)) & mask  # Fibonacci hashing (wraps)
        h = (h ^ (h >> 17)) & mask
        while slot_code[h] >= 0 and slot_value[h] != v:
            h = (h + 1) & mask
        if slot_code[h] < 0:
            slot_code[h] = m
            slot_value[h] = v
            uniques[m] = v
            m += 1
        codes[i] = slot_code[h]
    return codes, uniques[:m]


@jit()
def encode_rows(age_i, age_v, sex_i, sex_v, hh_i, hh_ok, cen_i, cen_ok, block,
                i0, i1, i2, i3, i4, i5, i6, i7, l0, l1, l2, l3, l4, l5, l6, l7, limit,
                span_i, eth_v, age_bin, race, truncated, eth, cell):
    """The fast path of `check_person_batch` for a batch whose rows are all good: one
    pass applies every rule to every row (each column a value index per row and a table
    per distinct value) and writes the encoded persons. Returns the number of rows that
    break a rule; if any does, the caller takes the checking path that names them (and
    ignores what was written here).

    Per-value tables: age_v the age (-1: not 1 to 18 ASCII digits), sex_v 0 male / 1
    female / -1 other, hh_ok and cen_ok the HOUSEHOLDER and CENRACE rules, l0..l7 the
    QRACE codes (`race_rows`), eth_v the QSPAN code index (-1 unknown); block is the
    GRF-C block of each row (-1 unknown); age_bin the age23 bin of each age.
    """
    n = age_i.shape[0]
    bad = 0
    vals = np.empty(8, np.int64)
    max_age = age_bin.shape[0] - 1
    for i in range(n):
        a = age_v[age_i[i]]
        s = sex_v[sex_i[i]]
        e = eth_v[span_i[i]]
        if a < 0 or a > max_age or s < 0 or not hh_ok[hh_i[i]] or not cen_ok[cen_i[i]] or block[i] < 0 or e < 0:
            bad += 1
            continue
        vals[0] = l0[i0[i]]
        vals[1] = l1[i1[i]]
        vals[2] = l2[i2[i]]
        vals[3] = l3[i3[i]]
        vals[4] = l4[i4[i]]
        vals[5] = l5[i5[i]]
        vals[6] = l6[i6[i]]
        vals[7] = l7[i7[i]]
        if vals[0] < 0:  # QRACE1 Null or not a code
            bad += 1
            continue
        null_seen = False
        good = True
        for j in range(1, 8):
            v = vals[j]
            if v == NULL:
                null_seen = True
            elif v == UNKNOWN or null_seen:
                good = False
                break
        if not good:
            bad += 1
            continue
        truncated[i] = _race_set(vals, limit, race, i)
        eth[i] = e
        cell[i] = s * 23 + age_bin[a]
    return bad
