"""numba kernel of the exact samplers (64-bit integers only, no floating point).

The kernel computes exactly the same deterministic function of the random 32-bit
units as the reference in :mod:`engine.noise._reference` (same algorithms, same
order of consumption; the tests check draw-for-draw equality). It works on one buffer
of units and stops, leaving the stream state at the START of the current draw (so
that nothing drawn for an unfinished draw is lost or skipped), when

* the buffer runs out (status EXHAUSTED): Python appends fresh units after the
  unread tail and calls again; the draw is recomputed from the same units;
* an intermediate would exceed ``limit`` (at most 2^63 - 1), or a comparison
  u < exp(-v) is not decided by the first 32 bits of u (probability < 2^-27 per draw)
  (status HANDOFF): Python computes that one draw with the big-integer reference from
  the same units, then calls again.

So the output never depends on where buffers end or which path decided a draw: a
large proposal is never skipped or redrawn.

The hot loop is one function on purpose: numba adds reference-count calls around
every call that passes an array, which halved the speed when the steps of the
algorithms were separate functions. Rare paths (Lemire rejections, uniforms on more
than 31 bits) are small helpers. The steps are marked with the names of the
reference functions they mirror.

Parameter vector ``prm`` (int64): kind (0 Gaussian, 1 Laplace), t, s, p, t*q,
den = 2 p q t^2, limit, isqrt(limit), limit // (t q), Lemire threshold 2^32 mod t
(t <= 2^31), (limit - t + 1) // t, shift. ``exp_hi[v]`` = floor(2^32 exp(-v)) >> shift
for v = 0..64. shift is 0 in production; shift > 0 compares only the top 32 - shift
bits of u with exp(-v) and hands off on a tie: a test hook that forces the fallback.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from engine.noise._reference import EXP_NEG_64, EXP_TABLE_MAX, LEMIRE_MAX

OK = 0
EXHAUSTED = 1
HANDOFF = 2

KIND_GAUSSIAN = 0
KIND_LAPLACE = 1


def exp_table(shift: int) -> np.ndarray:
    """floor(2^32 exp(-v)) >> shift for v = 0..64 (entry 0 unused), read-only int64."""
    table = np.array([(w >> 32) >> shift for w in EXP_NEG_64], dtype=np.int64)
    table[0] = 0
    table.flags.writeable = False
    return table


def _compiled(fn):
    """numba-compile `fn`, its machine code cached on disk where numba can write (the
    package's __pycache__, else the user's cache folder, or NUMBA_CACHE_DIR). A user
    who can write none of them (numba finds no cache locator and raises RuntimeError)
    gets the same kernel compiled in memory for each process (about a second more per
    run), never a traceback. No shared temporary folder is used: numba's cache files
    are pickles, which must not come from a folder other users can write."""
    try:
        return njit(cache=True, nogil=True, error_model="numpy")(fn)
    except RuntimeError:
        return njit(cache=False, nogil=True, error_model="numpy")(fn)


#: The production table (shift 0): the first 32-bit chunk of exp(-v).
EXP_HI = exp_table(0)
assert EXP_HI.shape[0] == EXP_TABLE_MAX + 1 and EXP_HI[EXP_TABLE_MAX] == 0
assert LEMIRE_MAX == 1 << 31


@_compiled
def _lemire_retry(units, pos, n, d, x):
    """Finish Lemire's method for d <= 2^31 after a first product x with low part < d.

    Accept iff (x mod 2^32) >= 2^32 mod d, else draw again: (value or -1, pos).
    """
    thr = (4294967296 - d) % d
    while (x & 0xFFFFFFFF) < thr:
        if pos >= n:
            return -1, pos
        x = np.int64(units[pos]) * d
        pos += 1
    return x >> 32, pos


@_compiled
def _uniform_big(units, pos, n, d):
    """Uniform integer in [0, d) for 2^31 < d < 2^63: bitmask rejection on 1 or 2 units."""
    nbits = 0
    m = d - 1
    while m > 0:
        nbits += 1
        m >>= 1
    if nbits <= 32:
        mask = (np.int64(1) << nbits) - 1
        while True:
            if pos >= n:
                return -1, pos
            val = np.int64(units[pos]) & mask
            pos += 1
            if val < d:
                return val, pos
    mask_hi = (np.int64(1) << (nbits - 32)) - 1
    while True:
        if pos + 1 >= n:
            return -1, pos
        val = np.int64(units[pos]) + ((np.int64(units[pos + 1]) & mask_hi) << 32)
        pos += 2
        if val < d:
            return val, pos


@_compiled
def run(units, state, out, start, stop, prm, exp_hi):
    """Fill out[start:stop] while possible; returns (next index, status).

    state = [pos, reservoir, reservoir bits] is read and written back; on a non-OK
    status it is the state at the start of draw ``next index``.
    """
    kind = prm[0]
    t = prm[1]
    s = prm[2]
    p = prm[3]
    tq = prm[4]
    den = prm[5]
    lim = prm[6]
    sqrtlim = prm[7]
    lim_ay = prm[8]
    thr_t = prm[9]
    vmax = prm[10]
    shift = prm[11]
    nexp = exp_hi.shape[0]
    room_t = lim - t  # d K + d stays <= lim iff d K <= lim - d
    room_den = lim - den
    n = units.shape[0]
    pos = state[0]
    resv = state[1]
    nres = state[2]
    i = start
    status = OK
    while i < stop:
        pos0 = pos
        resv0 = resv
        nres0 = nres
        y = np.int64(0)
        # ---- one draw: discrete_gaussian (kind 0) or discrete_laplace (kind 1) ----
        while True:
            # ---- discrete_laplace(t, s): CKS Algorithm 2 ----
            while True:
                # uniform_below(t): U
                u = np.int64(0)
                if t > 1:
                    if t <= 2147483648:
                        if pos >= n:
                            status = EXHAUSTED
                            break
                        x = np.int64(units[pos]) * t
                        pos += 1
                        if (x & 0xFFFFFFFF) < thr_t:
                            u, pos = _lemire_retry(units, pos, n, t, x)
                        else:
                            u = x >> 32
                    else:
                        u, pos = _uniform_big(units, pos, n, t)
                    if u < 0:
                        status = EXHAUSTED
                        break
                # bernoulli_exp_frac(U, t): K = 1; while Bernoulli(U / (t K)): K += 1
                acc = np.int64(1)
                if u > 0:
                    k = np.int64(1)
                    dk = t
                    while True:
                        if u < dk:
                            # bernoulli(U, dk) = uniform_below(dk) < U
                            if dk <= 2147483648:
                                if pos >= n:
                                    status = EXHAUSTED
                                    break
                                x = np.int64(units[pos]) * dk
                                pos += 1
                                if (x & 0xFFFFFFFF) < dk:
                                    w, pos = _lemire_retry(units, pos, n, dk, x)
                                else:
                                    w = x >> 32
                            else:
                                w, pos = _uniform_big(units, pos, n, dk)
                            if w < 0:
                                status = EXHAUSTED
                                break
                            if w >= u:
                                acc = k & 1
                                break
                        if dk > room_t:
                            status = HANDOFF
                            break
                        k += 1
                        dk += t
                    if status != OK:
                        break
                if acc == 0:
                    continue
                # geometric_exp1: V = largest v with u' < exp(-v), on the first 32 bits of u'
                if pos >= n:
                    status = EXHAUSTED
                    break
                c = np.int64(units[pos]) >> shift
                pos += 1
                v = np.int64(1)
                while v < nexp and c < exp_hi[v]:
                    v += 1
                if v >= nexp or c == exp_hi[v]:
                    status = HANDOFF  # undecided on 32 bits: the reference draws more
                    break
                v -= 1
                if v > vmax:
                    status = HANDOFF  # U + t V would exceed the limit
                    break
                y = u + t * v
                if s != 1:
                    y = y // s
                # sign bit B from the reservoir; reject (B = 1, Y = 0)
                if nres == 0:
                    if pos >= n:
                        status = EXHAUSTED
                        break
                    resv = np.int64(units[pos])
                    pos += 1
                    nres = 32
                b = resv & 1
                resv >>= 1
                nres -= 1
                if (b & np.int64(y == 0)) != 0:
                    continue
                y = (y ^ -b) + b  # -y when b = 1
                break
            if status != OK or kind == KIND_LAPLACE:
                break
            # ---- discrete_gaussian: accept Y with Bernoulli(exp(-a^2 / den)),
            #      a = |Y| t q - p, den = 2 p q t^2 (CKS Algorithm 3) ----
            ay = y if y >= 0 else -y
            if ay > lim_ay:
                status = HANDOFF
                break
            a = ay * tq - p
            if a < 0:
                a = -a
            if a > sqrtlim:
                status = HANDOFF
                break
            a2 = a * a
            r = a2
            if a2 >= den:
                # bernoulli_exp: k = floor(gamma) >= 1 -> bernoulli_exp_int(k): u' < exp(-k)
                kk = a2 // den
                r = a2 - kk * den
                if pos >= n:
                    status = EXHAUSTED
                    break
                c = np.int64(units[pos]) >> shift
                pos += 1
                e = exp_hi[kk] if kk < nexp else np.int64(0)
                if c == e:
                    status = HANDOFF
                    break
                if c > e:
                    continue  # rejected: next proposal
            # bernoulli_exp_frac(r, den)
            acc = np.int64(1)
            if r > 0:
                k = np.int64(1)
                dk = den
                while True:
                    if r < dk:
                        if dk <= 2147483648:
                            if pos >= n:
                                status = EXHAUSTED
                                break
                            x = np.int64(units[pos]) * dk
                            pos += 1
                            if (x & 0xFFFFFFFF) < dk:
                                w, pos = _lemire_retry(units, pos, n, dk, x)
                            else:
                                w = x >> 32
                        else:
                            w, pos = _uniform_big(units, pos, n, dk)
                        if w < 0:
                            status = EXHAUSTED
                            break
                        if w >= r:
                            acc = k & 1
                            break
                    if dk > room_den:
                        status = HANDOFF
                        break
                    k += 1
                    dk += den
                if status != OK:
                    break
            if acc == 1:
                break
        if status != OK:
            pos = pos0
            resv = resv0
            nres = nres0
            break
        out[i] = y
        i += 1
    state[0] = pos
    state[1] = resv
    state[2] = nres
    return i, status
