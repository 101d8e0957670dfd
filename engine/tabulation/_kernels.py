"""numba kernels of the counting steps (integers only; no randomness).

These are the loops that run once per count-table row or per population group at
national scale, where array expressions would build temporaries of hundreds of
millions of elements: the flat map of count-table rows to a level's groups (SPEC
section 1: a person joins the race groups of its race combo and the ethnicity groups
of its ethnicity code), the groups of every race combo, the k-way merge of sorted
count runs, and the characteristic-key lookup of person rows. Each has a plain-numpy
twin in the tests (`tests/engine/tabulation/test_kernels.py`) it is checked against.

Count-table keys are packed as ((piece * CK_CAP) + characteristic key) * 46 + cell
(`engine.tabulation.aggregate`); rows are sorted by key, so the rows of a piece are
contiguous and `piece_rows[p]:piece_rows[p + 1]` are those of piece p.
"""

from __future__ import annotations

import numpy as np
from engine._jit import jit

N_CELLS = 46
#: Capacity of characteristic-key ids inside packed count-table keys (a constant, so
#: that the kernels decode keys with shifts and multiplications).
CK_CAP = 1 << 24


@jit()
def key_records(combo_of, eth_of, race_off, race_mem, eth_off, eth_mem):
    """The groups of every characteristic key for several memberships at once.

    Membership c (a geography class and iteration level) is race_off[c] / race_mem[c]
    (CSR by combo) and eth_off[c] / eth_mem[c] (CSR by ethnicity code), rows of 2-D
    arrays padded at the end. Returns rec (C, keys, width) int32: rec[c, k, 0] = n, the
    number of groups key k joins in membership c, rec[c, k, 1:n + 1] the groups. One
    key's groups of a membership are one fixed-size record, read with one memory access
    (the kernels below are bound by memory latency, not arithmetic).
    """
    n_keys = combo_of.shape[0]
    n_cls = race_off.shape[0]
    width = 1
    for c in range(n_cls):
        for k in range(n_keys):
            cb, e = combo_of[k], eth_of[k]
            width = max(width, 1 + race_off[c, cb + 1] - race_off[c, cb] + eth_off[c, e + 1] - eth_off[c, e])
    rec = np.zeros((n_cls, n_keys, width), np.int32)
    for c in range(n_cls):
        for k in range(n_keys):
            cb, e = combo_of[k], eth_of[k]
            m = 0
            for j in range(race_off[c, cb], race_off[c, cb + 1]):
                m += 1
                rec[c, k, m] = race_mem[c, j]
            for j in range(eth_off[c, e], eth_off[c, e + 1]):
                m += 1
                rec[c, k, m] = eth_mem[c, j]
            rec[c, k, 0] = m
    return rec


@jit()
def totals_all(key, count, piece_rows, p0, p1, rec, piece_region, level_cls, level_nit, out_base, out,
               use_priv, priv_base, priv):
    """True totals of several levels in one pass over the pieces p0..p1-1 of the table.

    Level L (rows of `piece_region`, region of each piece or -1) uses membership
    level_cls[L] of the records (`key_records`); its totals are
    out[out_base[L] + region * level_nit[L] + iteration], or, where use_priv[L], the
    same in priv from priv_base[L] (a second thread's own copy of levels whose regions
    it shares with the first). Rows of one piece and key (consecutive: keys are sorted)
    are summed over their cells first, so each (piece, key) is flat-mapped once for all
    levels.
    """
    n_levels = level_cls.shape[0]
    base = np.empty(n_levels, np.int64)
    for p in range(p0, p1):
        inside = False
        for L in range(n_levels):
            r = piece_region[L, p]
            base[L] = -1 if r < 0 else out_base[L] + r * level_nit[L]
            inside = inside or r >= 0
        if not inside:
            continue
        i = piece_rows[p]
        end = piece_rows[p + 1]
        while i < end:
            ck = (key[i] // N_CELLS) % CK_CAP
            c = np.int64(0)
            while i < end and (key[i] // N_CELLS) % CK_CAP == ck:
                c += count[i]
                i += 1
            for L in range(n_levels):
                b = base[L]
                if b >= 0:
                    cls = level_cls[L]
                    if use_priv[L]:
                        b = b - out_base[L] + priv_base[L]
                        for j in range(1, rec[cls, ck, 0] + 1):
                            priv[b + rec[cls, ck, j]] += c
                    else:
                        for j in range(1, rec[cls, ck, 0] + 1):
                            out[b + rec[cls, ck, j]] += c


@jit()
def level_cells(key, count, piece_rows, p0, p1, rec, cls, piece_region, n_it, wanted_region, slot, out):
    """out[slot[g], cell] += count for the wanted groups g of one level (membership `cls`
    of the records), from the pieces p0..p1-1; slot[g] is -1 for the others. Pieces of
    regions without a wanted group (`wanted_region`) are skipped."""
    for p in range(p0, p1):
        r = piece_region[p]
        if r < 0 or not wanted_region[r]:
            continue
        base = r * n_it
        i = piece_rows[p]
        end = piece_rows[p + 1]
        while i < end:
            # the rows of one (piece, key) are consecutive, one per cell
            ck = (key[i] // N_CELLS) % CK_CAP
            j_end = i + 1
            while j_end < end and (key[j_end] // N_CELLS) % CK_CAP == ck:
                j_end += 1
            for j in range(1, rec[cls, ck, 0] + 1):
                k = slot[base + rec[cls, ck, j]]
                if k >= 0:
                    for q in range(i, j_end):
                        out[k, key[q] % N_CELLS] += count[q]
            i = j_end


@jit()
def _sort_small(a, n):
    for i in range(1, n):
        v = a[i]
        j = i - 1
        while j >= 0 and a[j] > v:
            a[j + 1] = a[j]
            j -= 1
        a[j + 1] = v


@jit()
def combo_groups(c_off, c_codes, aoic_off, aoic_mem, alone_off, alone_mem, n_it):
    """The race groups of every combo (CSR offsets, members ascending): the union of
    its codes' alone-or-in-any-combination iterations and the iterations that every
    one of its codes lists as alone (SPEC section 1)."""
    n = c_off.shape[0] - 1
    stamp = np.full(n_it, -1, np.int64)
    hits = np.zeros(n_it, np.int64)
    sizes = np.zeros(n, np.int64)
    buf = np.empty(n_it, np.int64)
    out_off = np.zeros(n + 1, np.int64)
    members = np.empty(0, np.int64)
    for rnd in range(2):
        if rnd == 1:
            for cb in range(n):  # element by element: a slice assignment compiles numba's shape-error text
                out_off[cb + 1] = out_off[cb] + sizes[cb]
            members = np.empty(out_off[n], np.int64)
            stamp[:] = -1
        for cb in range(n):
            m = 0
            n_codes = c_off[cb + 1] - c_off[cb]
            for q in range(c_off[cb], c_off[cb + 1]):
                code = c_codes[q]
                for j in range(aoic_off[code], aoic_off[code + 1]):
                    it = aoic_mem[j]
                    if stamp[it] != 2 * cb:
                        stamp[it] = 2 * cb
                        buf[m] = it
                        m += 1
            for q in range(c_off[cb], c_off[cb + 1]):
                code = c_codes[q]
                for j in range(alone_off[code], alone_off[code + 1]):
                    it = alone_mem[j]
                    if stamp[it] != 2 * cb + 1:
                        stamp[it] = 2 * cb + 1
                        hits[it] = 0
                    hits[it] += 1
                    if hits[it] == n_codes:
                        buf[m] = it
                        m += 1
            if rnd == 0:
                sizes[cb] = m
            else:
                _sort_small(buf, m)
                for j in range(m):
                    members[out_off[cb] + j] = buf[j]
    return out_off, members


@jit()
def merge_runs(keys, counts, starts):
    """Merge sorted runs keys[starts[i]:starts[i + 1]] into one sorted run of distinct
    keys with summed counts (a binary heap over the runs' heads)."""
    n_runs = starts.shape[0] - 1
    total = starts[n_runs]
    out_k = np.empty(total, np.int64)
    out_c = np.empty(total, np.int64)
    pos = starts[:-1].copy()
    heap = np.empty(n_runs, np.int64)  # run indices ordered by their head key
    h = 0
    for r in range(n_runs):
        if pos[r] < starts[r + 1]:
            heap[h] = r
            h += 1
            j = h - 1
            while j > 0:
                parent = (j - 1) // 2
                if keys[pos[heap[parent]]] <= keys[pos[heap[j]]]:
                    break
                heap[parent], heap[j] = heap[j], heap[parent]
                j = parent
    m = 0
    while h > 0:
        r = heap[0]
        k = keys[pos[r]]
        if m > 0 and out_k[m - 1] == k:
            out_c[m - 1] += counts[pos[r]]
        else:
            out_k[m] = k
            out_c[m] = counts[pos[r]]
            m += 1
        pos[r] += 1
        if pos[r] == starts[r + 1]:
            h -= 1
            heap[0] = heap[h]
        # sift down
        j = 0
        while True:
            a = 2 * j + 1
            if a >= h:
                break
            b = a + 1
            if b < h and keys[pos[heap[b]]] < keys[pos[heap[a]]]:
                a = b
            if keys[pos[heap[j]]] <= keys[pos[heap[a]]]:
                break
            heap[j], heap[a] = heap[a], heap[j]
            j = a
    return out_k[:m], out_c[:m]


@jit()
def count_sorted(keys):
    """Distinct values of a SORTED array and how often each occurs."""
    n = keys.shape[0]
    out_k = np.empty(n, np.int64)
    out_c = np.empty(n, np.int64)
    m = 0
    for i in range(n):
        if m > 0 and out_k[m - 1] == keys[i]:
            out_c[m - 1] += 1
        else:
            out_k[m] = keys[i]
            out_c[m] = 1
            m += 1
    return out_k[:m], out_c[:m]


# ---------------------------------------------------------------- characteristic keys
#: counters of `charkey_ids`: keys, combos, new keys this call, new combos this call,
#: filled slots of the key table, of the combo table.
N_KEYS, N_COMBOS, NEW_KEYS, NEW_COMBOS, FILL_KEYS, FILL_COMBOS = range(6)
EMPTY = -1


@jit(inline="always")
def _mix(a, b):
    # MurmurHash3's 64-bit finaliser of the two words combined
    x = np.uint64(a) ^ (np.uint64(b) * np.uint64(0x9E3779B97F4A7C15))
    x ^= x >> np.uint64(33)
    x *= np.uint64(0xFF51AFD7ED558CCD)
    x ^= x >> np.uint64(33)
    x *= np.uint64(0xC4CEB9FE1A85EC53)
    x ^= x >> np.uint64(33)
    return x


@jit()
def charkey_ids(race, eth, start, bits, per_word, single, n_single, keys, combos, counters,
                out, new_key_rows, new_key_combo, new_combo_rows):
    """Characteristic-key id of rows start.. of `race` (n, 8 ascending code indices, -1
    padded) and `eth` (code index); -1 for rows with more than `per_word` codes (the
    caller's long path).

    A combo of up to `per_word` codes is one word (the codes + 1 packed in `bits`-bit
    fields). Two open-addressing hash tables (linear probing, word EMPTY = free slot)
    map (word, ethnicity) -> key id (`keys` rows: word, ethnicity, id) and word -> combo
    id (`combos` rows: word, id); one table row is one memory access. Persons with one
    race code, most of them, are looked up in `single` first (a dense table indexed
    ethnicity * n_single + code, -1 unknown; n_single = 0: not used). New keys and combos get
    the next ids, in order of first appearance; their first rows are recorded. Stops
    before a table would be more than half full and returns the row to resume from
    (the caller grows the tables with `rehash`); returns len(race) when done.
    """
    k_mask = np.uint64(keys.shape[0] - 1)
    c_mask = np.uint64(combos.shape[0] - 1)
    k_limit = keys.shape[0] // 2
    c_limit = combos.shape[0] // 2
    n_codes = np.int64(n_single)
    width = race.shape[1]
    for i in range(start, race.shape[0]):
        if counters[FILL_KEYS] >= k_limit or counters[FILL_COMBOS] >= c_limit:
            return i
        e = np.int64(eth[i])
        one = width == 1 or race[i, 1] < 0
        if one and n_codes > 0:
            d = single[e * n_codes + race[i, 0]]
            if d >= 0:
                out[i] = d
                continue
        if per_word < width and race[i, per_word] >= 0:
            out[i] = -1
            continue
        w = np.int64(0)
        for j in range(per_word if per_word < width else width):
            w = (w << bits) | (np.int64(race[i, j]) + 1)
        h = np.int64(_mix(w, e) & k_mask)
        while keys[h, 0] != EMPTY and not (keys[h, 0] == w and keys[h, 1] == e):
            h = np.int64((np.uint64(h) + np.uint64(1)) & k_mask)
        if keys[h, 0] != EMPTY:
            ck = keys[h, 2]
        else:
            g = np.int64(_mix(w, 0) & c_mask)
            while combos[g, 0] != EMPTY and combos[g, 0] != w:
                g = np.int64((np.uint64(g) + np.uint64(1)) & c_mask)
            if combos[g, 0] == EMPTY:
                combos[g, 0] = w
                combos[g, 1] = counters[N_COMBOS]
                counters[N_COMBOS] += 1
                counters[FILL_COMBOS] += 1
                new_combo_rows[counters[NEW_COMBOS]] = i
                counters[NEW_COMBOS] += 1
            ck = counters[N_KEYS]
            counters[N_KEYS] += 1
            counters[FILL_KEYS] += 1
            keys[h, 0] = w
            keys[h, 1] = e
            keys[h, 2] = ck
            new_key_rows[counters[NEW_KEYS]] = i
            new_key_combo[counters[NEW_KEYS]] = combos[g, 1]
            counters[NEW_KEYS] += 1
        if one and n_codes > 0:
            single[e * n_codes + race[i, 0]] = ck
        out[i] = ck
    return race.shape[0]


@jit()
def rehash(keys, combos, new_keys, new_combos):
    """Move both tables into larger (empty, power-of-two sized) ones."""
    k_mask = np.uint64(new_keys.shape[0] - 1)
    for h in range(keys.shape[0]):
        w = keys[h, 0]
        if w == EMPTY:
            continue
        g = np.int64(_mix(w, keys[h, 1]) & k_mask)
        while new_keys[g, 0] != EMPTY:
            g = np.int64((np.uint64(g) + np.uint64(1)) & k_mask)
        new_keys[g, :] = keys[h, :]
    c_mask = np.uint64(new_combos.shape[0] - 1)
    for h in range(combos.shape[0]):
        w = combos[h, 0]
        if w == EMPTY:
            continue
        g = np.int64(_mix(w, 0) & c_mask)
        while new_combos[g, 0] != EMPTY:
            g = np.int64((np.uint64(g) + np.uint64(1)) & c_mask)
        new_combos[g, :] = combos[h, :]
