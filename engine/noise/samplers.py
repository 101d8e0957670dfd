"""Exact noise samplers on a cryptographically secure random stream (SPEC section 1, "Noise").

SafeTab-P adds to every count discrete Gaussian noise with variance parameter
``sigma^2 = S / (2 rho)`` (zCDP), or two-sided geometric noise with scale
``S / epsilon`` (pure DP). Both samplers here are exact: every sampling decision is
made with integer or rational arithmetic (no floating point), so the released noise
has exactly the distribution the privacy proof assumes:

* :func:`sample_discrete_gaussian`: P(k) proportional to exp(-k^2 / (2 sigma^2)), k in Z,
  by the rejection sampler of Canonne, Kamath and Steinke (2020, Algorithms 1-3).
* :func:`sample_two_sided_geometric`: P(k) proportional to exp(-|k| / scale), k in Z,
  scale rational (CKS Algorithm 2 with scale t/s).

Randomness comes from a :class:`RandomSource`: :meth:`RandomSource.secure` (the
default, and the only one with ``for_release = True``) is the AES-256-CTR keystream
under a key and nonce from ``os.urandom`` (a standard CSPRNG construction);
:meth:`RandomSource.seeded` is the same construction keyed by SHA-256 of a seed, for
reproducible demos and tests, and is "not for release".

The samplers are defined exactly by the pure-Python reference
(:mod:`engine.noise._reference`, which also documents the exact shortcut used for
Bernoulli(exp(-1)) trials); a numba kernel (:mod:`engine.noise._kernel`) computes the
same values from the same random units in 64-bit integers and hands any draw it
cannot finish inside 64 bits back to the reference, which computes that draw from the
same units (so a large proposal is never skipped or redrawn). Large requests are cut
into blocks of ``_BLOCK`` draws, block j using the j-th child stream of
``source.spawn``, run on one thread per CPU (the kernel releases the GIL); the output
depends only on the source and the size, not on the number of threads.
"""

from __future__ import annotations

import hashlib
import math
import numbers
import os
from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal
from fractions import Fraction

import numpy as np
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from engine.noise import _kernel
from engine.noise import _reference as _ref

__all__ = [
    "MAX_SCALE",
    "MAX_SIGMA2",
    "RandomSource",
    "exact_scale",
    "exact_sigma2",
    "sample_discrete_gaussian",
    "sample_two_sided_geometric",
]

#: The supported range (ValueError above it), the same as the calculators' (a test
#: checks the numbers agree): every draw
#: then fits int64 with certainty for all practical purposes (|X| > 40 sigma, 4e16, has
#: probability below e^-800; the geometric's |X| > 90 scale below e^-90). A
#: configuration within the ranges of `calculators.config` stays below
#: MAX_NOISE_SCALE = 9e10. Large scales with large denominators (sigma^2 = p/q with
#: 2 p q t^2 beyond int64, roughly sigma^2 q^2 > 2e18) are drawn by the exact
#: big-integer path at about 30 microseconds a draw instead of the kernel's ~0.1.
MAX_SIGMA2 = 1e24  # = calculators.discrete_gaussian.MAX_SIGMA2 (engine.noise imports nothing else)
MAX_SCALE = 1e12  # = calculators.geometric.MAX_SCALE
#: calculators.config.MAX_NOISE_SCALE, for the message.
_CONFIG_MAX_SCALE = 9e10
#: Draws per block in a large request; block j uses child stream j (see module doc).
_BLOCK = 1 << 18
#: Random 32-bit units per buffer refill.
_REFILL_UNITS = 1 << 17
#: Largest keystream request handed to AES at once (bytes).
_FILL_CHUNK = 1 << 20
#: Default overflow limit of the kernel: the largest int64.
_INT64_MAX = (1 << 63) - 1
#: Largest denominator used when a float is rounded up to a rational.
_MAX_FLOAT_DENOMINATOR = 1 << 24


# ---------------------------------------------------------------------------
# Random source
# ---------------------------------------------------------------------------


class RandomSource:
    """A stream of uniformly random 64-bit words: the AES-256-CTR keystream.

    Build one with :meth:`secure` (release) or :meth:`seeded` (demos and tests; never
    for release). ``for_release`` is True only for :meth:`secure` and its children;
    ``description`` says which kind it is. Not thread-safe: give each thread its own
    stream (:meth:`spawn`). A release source refuses to run in a forked child process
    (parent and child would otherwise draw the same noise): make a new one there.
    """

    __slots__ = ("_encryptor", "_pid", "_zeros", "description", "for_release")

    def __init__(self, key: bytes, nonce: bytes, *, for_release: bool, description: str):
        if len(key) != 32 or len(nonce) != 16:
            raise ValueError("a RandomSource needs a 32-byte key and a 16-byte nonce")
        self._encryptor = Cipher(algorithms.AES(key), modes.CTR(nonce)).encryptor()
        self._zeros: memoryview | None = None
        self._pid = os.getpid()
        self.for_release = bool(for_release)
        self.description = description

    @classmethod
    def secure(cls) -> RandomSource:
        """The release source: AES-256-CTR with key and nonce from os.urandom."""
        return cls(os.urandom(32), os.urandom(16), for_release=True,
                   description="AES-256-CTR keyed from os.urandom")

    @classmethod
    def seeded(cls, seed: int) -> RandomSource:
        """A reproducible source (same seed, same stream). NOT for release."""
        if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
            raise TypeError("the seed must be an integer")
        digest = hashlib.sha256(b"safetab-p-studio noise seed v1\x00" + str(int(seed)).encode())
        return cls(digest.digest(), bytes(16), for_release=False,
                   description=f"seeded (not for release): AES-256-CTR keyed from SHA-256 of "
                               f"seed {int(seed)}")

    def __repr__(self) -> str:
        return f"RandomSource({self.description!r}, for_release={self.for_release})"

    def _fill(self, out: memoryview) -> None:
        """Write the next len(out) keystream bytes into the writable byte buffer out."""
        if self.for_release and os.getpid() != self._pid:
            raise RuntimeError("a secure RandomSource was copied into another process (fork); "
                               "create a new RandomSource.secure() in each process")
        total = len(out)
        done = 0
        while done < total:
            n = min(_FILL_CHUNK, total - done)
            if self._zeros is None or len(self._zeros) < n:
                self._zeros = memoryview(bytes(max(n, 1 << 12)))
            self._encryptor.update_into(self._zeros[:n], out[done:done + n])
            done += n

    def _bytes(self, n: int) -> bytes:
        buf = bytearray(n)
        self._fill(memoryview(buf))
        return bytes(buf)

    def words(self, n: int) -> np.ndarray:
        """The next n 64-bit words of the stream (little-endian keystream), as uint64."""
        n = _check_size(n, "n")
        out = np.empty(n, dtype="<u8")
        if n:
            self._fill(memoryview(out).cast("B"))
        return out.astype(np.uint64, copy=False)

    def _units(self, out: np.ndarray) -> None:
        """Fill a uint32 array with the next 32-bit units (little-endian keystream)."""
        if out.size:
            self._fill(memoryview(out).cast("B"))
        if not np.little_endian:  # pragma: no cover - big-endian machines
            out.byteswap(inplace=True)

    def spawn(self, k: int) -> list[RandomSource]:
        """k independent child streams, keyed from this stream (same for_release)."""
        k = _check_size(k, "k")
        children = []
        for i in range(k):
            material = self._bytes(48)
            children.append(RandomSource(
                material[:32], material[32:], for_release=self.for_release,
                description=f"{self.description} / child stream {i}"))
        return children


class _Stream:
    """A buffer of random 32-bit units with a read position and a bit reservoir.

    The kernel and the reference read the same units in the same order; a refill
    keeps the unread tail (from the start of an unfinished sample) in front of the new
    units, so no unit is ever skipped.
    """

    __slots__ = ("buf", "n", "nres", "pos", "refill_units", "resv", "source")

    def __init__(self, source: RandomSource, first_units: int):
        self.source = source
        self.buf = np.empty(0, dtype=np.uint32)
        self.n = 0
        self.pos = 0
        self.resv = 0
        self.nres = 0
        self.refill_units = max(64, min(_REFILL_UNITS, first_units))

    def refill(self) -> None:
        tail = self.n - self.pos
        need = tail + self.refill_units
        if self.buf.shape[0] < need:
            new = np.empty(max(need, 2 * tail), dtype=np.uint32)
            new[:tail] = self.buf[self.pos:self.n]
            self.buf = new
        elif tail:
            self.buf[:tail] = self.buf[self.pos:self.n].copy()
        self.source._units(self.buf[tail:])
        self.n = self.buf.shape[0]
        self.pos = 0
        self.refill_units = _REFILL_UNITS

    def unit(self) -> int:
        if self.pos >= self.n:
            self.refill()
        u = int(self.buf[self.pos])
        self.pos += 1
        return u

    def bit(self) -> int:
        if self.nres == 0:
            self.resv = self.unit()
            self.nres = 32
        b = self.resv & 1
        self.resv >>= 1
        self.nres -= 1
        return b


# ---------------------------------------------------------------------------
# Exact parameters
# ---------------------------------------------------------------------------


def _round_up(x: Fraction, max_den: int) -> Fraction:
    """The smallest fraction >= x with denominator <= max_den (its upper Farey neighbour)."""
    if x.denominator <= max_den:
        return x
    p0, q0, p1, q1 = 0, 1, 1, 0
    n, d = x.numerator, x.denominator
    while True:
        a = n // d
        q2 = q0 + a * q1
        if q2 > max_den:
            break
        p0, q0, p1, q1 = p1, q1, p0 + a * p1, q2
        n, d = d, n - a * d
    k = (max_den - q0) // q1
    # The semiconvergent and the last convergent bracket x (the two Farey neighbours).
    return max(Fraction(p0 + k * p1, q0 + k * q1), Fraction(p1, q1))


def _float_denominator_bound(x: Fraction) -> int:
    """Denominator bound for rounding a float: 2^26 / ceil(x), within [1, 2^24].

    With sigma^2 = p/q and q below this bound, the acceptance test of the discrete
    Gaussian stays inside int64 for |Y| up to about 40 sigma (probability < e^-800 to
    go beyond), so the exact big-integer fallback is astronomically rare.
    """
    return max(1, min(_MAX_FLOAT_DENOMINATOR, (1 << 26) // max(1, math.ceil(x))))


def _exact_positive(value, name: str) -> Fraction:
    if isinstance(value, bool):
        raise ValueError(f"{name} must be a number, not {value!r}")  # noqa: TRY004 - one error type for bad parameters
    if isinstance(value, Fraction):
        x = value
    elif isinstance(value, numbers.Integral):
        x = Fraction(int(value))
    elif isinstance(value, Decimal):
        if not value.is_finite():
            raise ValueError(f"{name} must be a finite number, got {value}")
        x = Fraction(value)
    elif isinstance(value, str):
        try:
            x = Fraction(value.strip())
        except (ValueError, ZeroDivisionError):
            raise ValueError(f"{name} must be a number such as 31.45 or 5000/159, "
                             f"got {value!r}") from None
    elif isinstance(value, numbers.Real):
        f = float(value)
        if not math.isfinite(f):
            raise ValueError(f"{name} must be a finite number, got {f}")
        x = Fraction(f)
        if x > 0:
            x = _round_up(x, _float_denominator_bound(x))
    else:
        raise ValueError(  # noqa: TRY004 - one error type for bad parameters
            f"{name} must be an int, a Fraction, a decimal string or a float, "
            f"got {type(value).__name__}")
    if x <= 0:
        raise ValueError(f"{name} must be greater than 0, got {value!r}")
    return x


def exact_sigma2(sigma2) -> Fraction:
    """sigma^2 as an exact positive Fraction (SPEC section 1: sigma^2 = S / (2 rho)).

    int, Fraction, Decimal and decimal strings ("31.45", "5000/159", "1e4") are exact.
    A float is rounded UP (never below the float's value) to the smallest fraction
    with denominator <= ``2^26 / ceil(sigma2)`` (at most 2^24), e.g. 0.3 -> 3/10, which
    only adds privacy and keeps the sampler's integers small. ValueError if not > 0.
    """
    return _exact_positive(sigma2, "sigma2")


def exact_scale(scale) -> Fraction:
    """The two-sided geometric scale (S / epsilon) as an exact positive Fraction.

    Same rules as :func:`exact_sigma2` (a float is rounded up: more noise, never less).
    """
    return _exact_positive(scale, "scale")


def _check_size(size, name: str = "size") -> int:
    if isinstance(size, bool) or not isinstance(size, numbers.Integral):
        raise ValueError(f"{name} must be a whole number, got {size!r}")  # noqa: TRY004
    size = int(size)
    if size < 0:
        raise ValueError(f"{name} must be 0 or more, got {size}")
    return size


# ---------------------------------------------------------------------------
# Drivers
# ---------------------------------------------------------------------------


class _Plan:
    """Integer parameters of one sampler call (shared by the kernel and the reference)."""

    __slots__ = ("exp_hi", "kernel_ok", "kind", "p", "prm", "q", "s", "t", "units_per_draw")

    def __init__(self, kind: int, x: Fraction, limit: int, shift: int):
        self.kind = kind
        if kind == _kernel.KIND_GAUSSIAN:
            p, q = x.numerator, x.denominator
            t = _ref.gaussian_t(p, q)
            s = 1
            tq = t * q
            den = 2 * p * q * t * t
            self.units_per_draw = 16
        else:
            p, q = 0, 1
            t, s = x.numerator, x.denominator
            tq = den = 1
            self.units_per_draw = 12
        self.t, self.s, self.p, self.q = t, s, p, q
        if not 1 <= limit <= _INT64_MAX:
            raise ValueError("the overflow limit must be in [1, 2^63 - 1]")
        if not 0 <= shift < 32:
            raise ValueError("shift must be in [0, 32)")
        # The kernel needs its fixed parameters (and the first product) inside the limit.
        self.kernel_ok = max(t, s, p, tq, den) <= limit
        self.prm = self.exp_hi = None
        if self.kernel_ok:
            thr_t = ((1 << 32) - t) % t if t <= _ref.LEMIRE_MAX else 0
            self.prm = np.array([kind, t, s, p, tq, den, limit, math.isqrt(limit), limit // tq,
                                 thr_t, (limit - t + 1) // t, shift], dtype=np.int64)
            self.exp_hi = _kernel.EXP_HI if shift == 0 else _kernel.exp_table(shift)

    def reference_draw(self, stream: _Stream) -> int:
        if self.kind == _kernel.KIND_GAUSSIAN:
            return _ref.discrete_gaussian(stream, self.p, self.q)
        return _ref.discrete_laplace(stream, self.t, self.s)


def _fill_block(plan: _Plan, source: RandomSource, out: np.ndarray, use_kernel: bool) -> int:
    """Fill out from one stream; returns how many draws the big-integer path made."""
    size = out.shape[0]
    stream = _Stream(source, size * plan.units_per_draw + 64)
    handoffs = 0
    if not (use_kernel and plan.kernel_ok):
        for i in range(size):
            out[i] = plan.reference_draw(stream)
        return size
    state = np.zeros(3, dtype=np.int64)
    i = 0
    while i < size:
        state[0], state[1], state[2] = stream.pos, stream.resv, stream.nres
        i, status = _kernel.run(stream.buf[:stream.n], state, out, i, size, plan.prm,
                                plan.exp_hi)
        stream.pos, stream.resv, stream.nres = int(state[0]), int(state[1]), int(state[2])
        if status == _kernel.EXHAUSTED:
            stream.refill()
        elif status == _kernel.HANDOFF:
            out[i] = plan.reference_draw(stream)
            handoffs += 1
            i += 1
    return handoffs


def _default_threads() -> int:
    """Worker threads for large requests: the usable CPUs, at most 8."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not on Linux
        cpus = os.cpu_count() or 1
    return max(1, min(8, cpus))


def _sample(kind: int, x: Fraction, size: int, source: RandomSource | None, *,
            limit: int = _INT64_MAX, shift: int = 0, threads: int | None = None,
            use_kernel: bool = True, stats: dict | None = None) -> np.ndarray:
    """Shared driver. Private knobs (tests only): limit (kernel overflow limit), shift
    (coarse exp(-v) comparisons), use_kernel=False (pure reference), stats (gets the
    number of draws made by the big-integer path under "handoffs")."""
    size = _check_size(size)
    if source is None:
        source = RandomSource.secure()
    plan = _Plan(kind, x, limit, shift)
    out = np.empty(size, dtype=np.int64)
    if size <= _BLOCK:
        handoffs = _fill_block(plan, source, out, use_kernel)
    else:
        nblocks = -(-size // _BLOCK)
        children = source.spawn(nblocks)
        jobs = [(children[j], out[j * _BLOCK:(j + 1) * _BLOCK]) for j in range(nblocks)]
        nthreads = _default_threads() if threads is None else max(1, int(threads))
        if nthreads == 1:
            handoffs = sum(_fill_block(plan, src, part, use_kernel) for src, part in jobs)
        else:
            with ThreadPoolExecutor(max_workers=nthreads) as pool:
                futures = [pool.submit(_fill_block, plan, src, part, use_kernel)
                           for src, part in jobs]
                handoffs = sum(f.result() for f in futures)
    if stats is not None:
        stats["handoffs"] = handoffs
    return out


def _in_range(x: Fraction, limit: float, name: str) -> Fraction:
    """x if it is at most `limit`, else a ValueError saying why (see MAX_SIGMA2)."""
    if x > Fraction(limit):
        raise ValueError(
            f"{name} = {float(x):.4g} is above the exact sampler's supported range (at most {limit:g}); "
            f"a configuration within the documented ranges never goes beyond {_CONFIG_MAX_SCALE:g} "
            "(README, \"Configuration ranges\")")
    return x


def sample_discrete_gaussian(sigma2, size, source: RandomSource | None = None) -> np.ndarray:
    """``size`` independent exact discrete Gaussian draws (int64), SPEC section 1 "Noise".

    P(k) = exp(-k^2 / (2 sigma^2)) / sum_j exp(-j^2 / (2 sigma^2)) for every integer k,
    with sigma^2 = :func:`exact_sigma2` (sigma2) > 0 (SafeTab-P: sigma^2 = S / (2 rho)).
    Sampler: Canonne-Kamath-Steinke 2020 Algorithm 3 in exact integer arithmetic.
    ``source=None`` means a fresh :meth:`RandomSource.secure` stream. ValueError above
    ``MAX_SIGMA2``.
    """
    return _sample(_kernel.KIND_GAUSSIAN, _in_range(exact_sigma2(sigma2), MAX_SIGMA2, "sigma2"), size, source)


def sample_two_sided_geometric(scale, size, source: RandomSource | None = None) -> np.ndarray:
    """``size`` independent exact two-sided geometric draws (int64), SPEC section 1 "Noise".

    P(k) = (1 - a) / (1 + a) * a^|k| with a = exp(-1 / scale), i.e. proportional to
    exp(-|k| / scale), scale = :func:`exact_scale` (scale) > 0 (pure DP: S / epsilon).
    Sampler: Canonne-Kamath-Steinke 2020 Algorithm 2 (discrete Laplace, scale t/s).
    ``source=None`` means a fresh :meth:`RandomSource.secure` stream. ValueError above
    ``MAX_SCALE``.
    """
    return _sample(_kernel.KIND_LAPLACE, _in_range(exact_scale(scale), MAX_SCALE, "scale"), size, source)
