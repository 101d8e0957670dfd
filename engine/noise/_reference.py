"""Pure-Python exact reference of the noise samplers (big integers, slow).

This module *defines* the samplers of :mod:`engine.noise` as deterministic functions
of a stream of uniformly random 32-bit units: the fast numba kernel
(:mod:`engine.noise._kernel`) consumes the stream in exactly the same order and
returns exactly the same values; whenever the kernel cannot finish a draw inside
64-bit integers (an overflow, or a comparison u < exp(-v) that the first 32 bits of u
do not decide) it rewinds to the start of that draw and the functions here compute it
from the same random units. Everything is integer or rational arithmetic: there is no
floating point anywhere.

Algorithms (Canonne, Kamath, Steinke 2020, "The Discrete Gaussian for Differential
Privacy", SPEC section 1 "Noise"):

* Algorithm 1, Bernoulli(exp(-gamma)) for rational gamma = n/d: for gamma in [0, 1]
  the von Neumann series trick (K = 1; while Bernoulli(gamma/K): K += 1; return K odd);
  for gamma > 1 first floor(gamma) Bernoulli(exp(-1)) trials must all succeed.
* Algorithm 2, discrete Laplace with scale t/s: U uniform in [0, t), accept with
  Bernoulli(exp(-U/t)), V = number of successes of Bernoulli(exp(-1)) before the first
  failure, X = U + t V, Y = floor(X / s), sign bit B, reject (B = 1, Y = 0).
* Algorithm 3, discrete Gaussian with sigma^2 = p/q: t = floor(sigma) + 1, propose
  Y ~ discrete Laplace(t), accept with Bernoulli(exp(-(|Y| - sigma^2/t)^2 / (2 sigma^2))),
  i.e. gamma = (|Y| t q - p)^2 / (2 p q t^2) over the integers.

Exact shortcut for exp(-1): "k Bernoulli(exp(-1)) trials all succeed" has probability
exp(-k), and "the number of successes before the first failure" V has
P(V >= v) = exp(-v). Both are decided by comparing ONE uniform real u in [0, 1) with
exp(-v): u < exp(-v). u is drawn lazily, 32 bits at a time, and compared with the
binary expansion of exp(-v), which is computed exactly from the Taylor series of
exp(v) with a rigorous remainder bound (:func:`exp_neg_floor`). exp(-v) is irrational
for every integer v >= 1, so the comparison always ends (after 1 unit with
probability 1 - 2^-32) and decides u < exp(-v) exactly.

Uniform integers: d = 1 -> 0 (no randomness); d <= 2^31 -> Lemire's multiply-shift
with rejection on one 32-bit unit; larger d -> bitmask rejection on ceil(bits/32)
units (little-endian). Bernoulli(n/d) = uniform in [0, d) < n, and uses no
randomness when n <= 0 or n >= d. A sign bit comes from a reservoir: one 32-bit unit
gives 32 bits, least significant first.
"""

from __future__ import annotations

import math
from typing import Protocol

UNIT_BITS = 32
UNIT_MASK = (1 << UNIT_BITS) - 1
#: Largest d for which a uniform integer in [0, d) uses Lemire's method on one unit.
LEMIRE_MAX = 1 << 31
#: exp(-v) for v > EXP_TABLE_MAX has its first 64 bits zero (exp(-45) < 2^-64).
EXP_TABLE_MAX = 64


class UnitStream(Protocol):
    """What the reference needs from a random stream."""

    def unit(self) -> int:
        """The next uniformly random 32-bit unit."""

    def bit(self) -> int:
        """The next uniformly random bit (from the reservoir)."""


def exp_neg_floor(v: int, nbits: int) -> int:
    """floor(2**nbits * exp(-v)) exactly, for an integer v >= 1.

    exp(v) lies in [S_M, S_M + 2 v^(M+1)/(M+1)!] where S_M is the Taylor partial sum
    up to v^M/M! and M + 2 >= 2v (the remainder is at most a geometric series of ratio
    1/2). Both ends are exact rationals, so 2^nbits exp(-v) is bracketed; M grows until
    the two floors agree (they always do eventually: exp(-v) is irrational).
    """
    if v < 1 or nbits < 0:
        raise ValueError("exp_neg_floor needs v >= 1 and nbits >= 0")
    m = 2 * v + nbits // 2 + 16
    while True:
        fact_m = math.factorial(m)
        # S_M * M! as an integer: sum of v^k M!/k!.
        s_num = 0
        term = fact_m  # v^0 * M!/0!
        for k in range(m + 1):
            s_num += term
            term = term * v // (k + 1) if k < m else term
        # The recurrence term_{k+1} = term_k * v / (k+1) is exact because
        # term_k = v^k M!/k! and (k+1) divides M!/k! for k < M.
        den = fact_m * (m + 1)  # (M+1)!
        lo_num = s_num * (m + 1)  # S_M (M+1)!
        hi_num = lo_num + 2 * v ** (m + 1)
        scale = den << nbits
        lo = scale // hi_num  # floor(2^nbits / upper bound of exp(v))
        hi = scale // lo_num  # floor(2^nbits / lower bound of exp(v))
        if lo == hi:
            return lo
        m *= 2


def _exp_neg_table() -> tuple[int, ...]:
    """floor(2^64 exp(-v)) for v = 0..EXP_TABLE_MAX (entry 0 is unused)."""
    return (0,) + tuple(exp_neg_floor(v, 64) for v in range(1, EXP_TABLE_MAX + 1))


#: floor(2^64 exp(-v)), v = 0..64 (0 for v = 0, unused). An immutable constant.
EXP_NEG_64: tuple[int, ...] = _exp_neg_table()


def exp_neg_chunk(v: int, j: int) -> int:
    """The j-th 32-bit chunk (j = 0 is the most significant) of the binary expansion of exp(-v)."""
    if j <= 1:
        word = EXP_NEG_64[v] if v <= EXP_TABLE_MAX else 0
        return (word >> (32 * (1 - j))) & UNIT_MASK
    return exp_neg_floor(v, 32 * (j + 1)) & UNIT_MASK


def uniform_below(stream: UnitStream, d: int) -> int:
    """An exactly uniform integer in [0, d), d >= 1 (Lemire for d <= 2^31, else bitmask)."""
    if d == 1:
        return 0
    if d <= LEMIRE_MAX:
        x = stream.unit() * d
        low = x & UNIT_MASK
        if low < d:
            threshold = ((1 << UNIT_BITS) - d) % d
            while low < threshold:
                x = stream.unit() * d
                low = x & UNIT_MASK
        return x >> UNIT_BITS
    nbits = (d - 1).bit_length()
    nunits = -(-nbits // UNIT_BITS)
    mask = (1 << nbits) - 1
    while True:
        value = 0
        for i in range(nunits):
            value |= stream.unit() << (UNIT_BITS * i)
        value &= mask
        if value < d:
            return value


def bernoulli(stream: UnitStream, n: int, d: int) -> bool:
    """Bernoulli(n/d) for integers d >= 1: uniform integer in [0, d) < n."""
    if n <= 0:
        return False
    if n >= d:
        return True
    return uniform_below(stream, d) < n


def bernoulli_exp_frac(stream: UnitStream, n: int, d: int) -> bool:
    """Bernoulli(exp(-n/d)) for 0 <= n <= d (CKS Algorithm 1, von Neumann series)."""
    k = 1
    while bernoulli(stream, n, d * k):
        k += 1
    return k % 2 == 1


def less_than_exp_neg(stream: UnitStream, chunks: list[int], v: int) -> bool:
    """Whether the lazy uniform real u (its 32-bit chunks so far in `chunks`) is < exp(-v).

    Draws further chunks of u only while they equal those of exp(-v); `chunks` is
    extended in place so that several comparisons can share one u.
    """
    j = 0
    while True:
        if j == len(chunks):
            chunks.append(stream.unit())
        c = chunks[j]
        e = exp_neg_chunk(v, j)
        if c != e:
            return c < e
        j += 1


def bernoulli_exp_int(stream: UnitStream, k: int) -> bool:
    """Bernoulli(exp(-k)) for an integer k >= 1 (= k Bernoulli(exp(-1)) trials all succeed)."""
    return less_than_exp_neg(stream, [], k)


def geometric_exp1(stream: UnitStream) -> int:
    """V = successes of Bernoulli(exp(-1)) before the first failure: P(V >= v) = exp(-v)."""
    chunks: list[int] = []
    v = 1
    while less_than_exp_neg(stream, chunks, v):
        v += 1
    return v - 1


def bernoulli_exp(stream: UnitStream, n: int, d: int) -> bool:
    """Bernoulli(exp(-n/d)) for n >= 0, d >= 1 (CKS Algorithm 1 with the floor(gamma) part)."""
    k, r = divmod(n, d)
    if k and not bernoulli_exp_int(stream, k):
        return False
    return bernoulli_exp_frac(stream, r, d)


def discrete_laplace(stream: UnitStream, t: int, s: int) -> int:
    """One draw with P(y) proportional to exp(-|y| s / t) (CKS Algorithm 2), t, s >= 1."""
    while True:
        u = uniform_below(stream, t)
        if not bernoulli_exp_frac(stream, u, t):
            continue
        v = geometric_exp1(stream)
        y = (u + t * v) // s
        b = stream.bit()
        if b and y == 0:
            continue
        return -y if b else y


def gaussian_t(p: int, q: int) -> int:
    """t = floor(sigma) + 1 for sigma^2 = p/q (floor(sqrt(x)) = isqrt(floor(x)))."""
    return math.isqrt(p // q) + 1


def discrete_gaussian(stream: UnitStream, p: int, q: int) -> int:
    """One draw, P(y) proportional to exp(-y^2 / (2 sigma^2)), sigma^2 = p/q (CKS Algorithm 3)."""
    t = gaussian_t(p, q)
    den = 2 * p * q * t * t
    tq = t * q
    while True:
        y = discrete_laplace(stream, t, 1)
        a = abs(y) * tq - p
        if bernoulli_exp(stream, a * a, den):
            return y
