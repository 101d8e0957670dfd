"""Tests of engine.noise: exactness of parameters, the random source, and the samplers'
distributions (SPEC section 1, "Noise").

Statistical tests use fixed seeds (deterministic) and compare with a pmf computed here
directly (normalised sums, independent of the sampler): a chi-square test with pooled
tails must give p > 1e-4, and means / variances must be within 5 standard errors.
"""

from __future__ import annotations

import math
import os
from decimal import Decimal
from fractions import Fraction

import mpmath
import numpy as np
import pytest
from scipy import stats

from engine.noise import _kernel as kernel
from engine.noise import _reference as ref
from engine.noise import samplers as noise
from engine.noise import (
    MAX_SCALE,
    MAX_SIGMA2,
    RandomSource,
    exact_scale,
    exact_sigma2,
    sample_discrete_gaussian,
    sample_two_sided_geometric,
)

P_MIN = 1e-4
GAUSS = kernel.KIND_GAUSSIAN
LAPLACE = kernel.KIND_LAPLACE


# ---------------------------------------------------------------------------
# Reference distributions computed in the test (independent of the sampler)
# ---------------------------------------------------------------------------


def gaussian_pmf(sigma2) -> tuple[np.ndarray, np.ndarray]:
    """k and P(k) of the discrete Gaussian: exp(-k^2/(2 sigma^2)) normalised by a direct sum."""
    s2 = float(Fraction(sigma2))
    kmax = int(40 * math.sqrt(s2)) + 20
    ks = np.arange(-kmax, kmax + 1)
    w = np.exp(-(ks.astype(np.float64) ** 2) / (2.0 * s2))
    return ks, w / w.sum()


def geometric_pmf(scale) -> tuple[np.ndarray, np.ndarray]:
    """k and P(k) proportional to exp(-|k| / scale), normalised by a direct sum."""
    sc = float(Fraction(scale))
    kmax = int(60 * sc) + 40
    ks = np.arange(-kmax, kmax + 1)
    w = np.exp(-np.abs(ks).astype(np.float64) / sc)
    return ks, w / w.sum()


def chi_square(samples: np.ndarray, ks: np.ndarray, probs: np.ndarray, width: int = 1,
               min_expected: float = 10.0) -> tuple[float, float, int]:
    """Chi-square goodness of fit: (statistic, p-value, number of bins).

    Bins are runs of `width` consecutive values; bins at each end are pooled until the
    pooled bin expects at least `min_expected` draws.
    """
    n = samples.shape[0]
    kmin, kmax = int(ks[0]), int(ks[-1])
    assert samples.min() >= kmin and samples.max() <= kmax, "draw far outside the support"
    starts = np.arange(0, ks.shape[0], width)
    e = np.add.reduceat(n * probs, starts)
    o = np.add.reduceat(np.bincount(samples - kmin, minlength=ks.shape[0]), starts)
    left = int(np.searchsorted(np.cumsum(e), min_expected))  # bins 0..left pooled
    right = int(np.searchsorted(np.cumsum(e[::-1]), min_expected))
    cut_hi = e.shape[0] - 1 - right
    e = np.concatenate([[e[:left + 1].sum()], e[left + 1:cut_hi], [e[cut_hi:].sum()]])
    o = np.concatenate([[o[:left + 1].sum()], o[left + 1:cut_hi], [o[cut_hi:].sum()]])
    o = o.astype(np.float64)
    stat = float(((o - e) ** 2 / e).sum())
    return stat, float(stats.chi2.sf(stat, e.shape[0] - 1)), e.shape[0]


def assert_fits(samples, ks, probs, label="", width: int = 1):
    """Chi-square p > P_MIN, per value and (width > 1) also on runs of `width` values."""
    for w in sorted({1, width}):
        stat, p, bins = chi_square(samples, ks, probs, width=w)
        assert p > P_MIN, f"{label}: chi2 {stat:.1f} on {bins - 1} df (width {w}), p = {p:.2e}"


def gaussian_width(sigma2) -> int:
    """About 100 bins over +-5 sigma (more power against a wrong scale)."""
    return max(1, math.isqrt(int(Fraction(sigma2))) // 10)


def assert_moments(samples, ks, probs, label=""):
    """Mean and variance within 5 standard errors of the exact ones."""
    n = samples.shape[0]
    kf = ks.astype(np.float64)
    var = float((kf ** 2 * probs).sum())
    mu4 = float((kf ** 4 * probs).sum())
    x = samples.astype(np.float64)
    mean_se = math.sqrt(var / n)
    var_se = math.sqrt((mu4 - var ** 2) / n)
    assert abs(x.mean()) < 5 * mean_se, f"{label}: mean {x.mean()} (se {mean_se})"
    assert abs(x.var() - var) < 5 * var_se, f"{label}: variance {x.var()} vs {var} (se {var_se})"


def seeded(seed: int) -> RandomSource:
    return RandomSource.seeded(seed)


# ---------------------------------------------------------------------------
# exact_sigma2 / exact_scale
# ---------------------------------------------------------------------------


def test_exact_inputs_stay_exact():
    assert exact_sigma2(7) == 7 and isinstance(exact_sigma2(7), Fraction)
    assert exact_sigma2(np.int64(12)) == 12
    assert exact_sigma2(Fraction(5000, 159)) == Fraction(5000, 159)
    assert exact_sigma2("31.45") == Fraction(3145, 100)
    assert exact_sigma2(" 5000/159 ") == Fraction(5000, 159)
    assert exact_sigma2("1e4") == 10000
    assert exact_sigma2(Decimal("0.159")) == Fraction(159, 1000)
    assert exact_scale(Fraction(9, 2)) == Fraction(9, 2)
    assert exact_scale("4.5") == Fraction(9, 2)


def test_floats_round_up_to_small_denominators():
    assert exact_sigma2(0.3) == Fraction(3, 10)
    assert exact_sigma2(2.25) == Fraction(9, 4)
    assert exact_sigma2(1e4) == 10000
    assert exact_sigma2(31.45) == Fraction(3145, 100)
    assert exact_scale(0.5) == Fraction(1, 2)
    rng = np.random.default_rng(7)
    values = np.concatenate([rng.uniform(0, 2, 300), np.exp(rng.uniform(-10, 25, 300)),
                             [5000 / 159, 9 / (2 * 0.159 * 0.9), 1 / 3, 2 ** -30, 1e9 + 0.5]])
    for v in values:
        v = float(v)
        x = exact_sigma2(v)
        assert x >= Fraction(v), v  # never below the float
        assert x.denominator <= noise._float_denominator_bound(Fraction(v))
        assert x - Fraction(v) <= Fraction(v) * Fraction(1, 10 ** 6) + Fraction(1, 2 ** 24), v


def test_round_up_is_the_upper_farey_neighbour():
    rng = np.random.default_rng(11)
    for _ in range(200):
        x = Fraction(int(rng.integers(1, 10 ** 9)), int(rng.integers(1, 10 ** 9)))
        max_den = int(rng.integers(1, 60))
        best = min(Fraction(-(-x.numerator * q // x.denominator), q) for q in range(1, max_den + 1))
        assert noise._round_up(x, max_den) == best


@pytest.mark.parametrize("bad", [0, -1, 0.0, -2.5, "0", "-3/4", Fraction(0), float("nan"),
                                 float("inf"), "abc", "", True, None, [1]])
def test_bad_sigma2_is_refused_plainly(bad):
    with pytest.raises(ValueError, match="sigma2"):
        exact_sigma2(bad)
    with pytest.raises(ValueError, match="sigma2"):
        sample_discrete_gaussian(bad, 3, seeded(0))
    with pytest.raises(ValueError, match="scale"):
        sample_two_sided_geometric(bad, 3, seeded(0))


@pytest.mark.parametrize("bad", [-1, 2.5, "3", True])
def test_bad_size_is_refused(bad):
    with pytest.raises(ValueError, match="size"):
        sample_discrete_gaussian(1, bad, seeded(0))


def test_size_zero_and_none_source():
    out = sample_discrete_gaussian(1, 0, seeded(0))
    assert out.shape == (0,) and out.dtype == np.int64
    assert sample_two_sided_geometric(1, 0).shape == (0,)
    out = sample_discrete_gaussian(Fraction(5000, 159), 5)  # fresh secure source
    assert out.shape == (5,) and out.dtype == np.int64


# ---------------------------------------------------------------------------
# Random source
# ---------------------------------------------------------------------------


def test_sources_release_flags_and_descriptions():
    sec = RandomSource.secure()
    assert sec.for_release is True
    assert "AES-256-CTR" in sec.description and "os.urandom" in sec.description
    sd = RandomSource.seeded(3)
    assert sd.for_release is False
    assert sd.description.startswith("seeded (not for release)")
    assert all(c.for_release for c in sec.spawn(2))
    assert not any(c.for_release for c in sd.spawn(2))
    with pytest.raises(TypeError):
        RandomSource.seeded(1.5)


def test_seeded_is_reproducible_and_seeds_differ():
    a = RandomSource.seeded(42).words(1000)
    b = RandomSource.seeded(42).words(1000)
    c = RandomSource.seeded(43).words(1000)
    assert a.dtype == np.uint64 and a.shape == (1000,)
    assert np.array_equal(a, b) and not np.array_equal(a, c)
    for sigma2 in (1, Fraction(5000, 159)):
        x = sample_discrete_gaussian(sigma2, 5000, seeded(42))
        assert np.array_equal(x, sample_discrete_gaussian(sigma2, 5000, seeded(42)))
        assert not np.array_equal(x, sample_discrete_gaussian(sigma2, 5000, seeded(43)))
    g = sample_two_sided_geometric(Fraction(9, 2), 5000, seeded(42))
    assert np.array_equal(g, sample_two_sided_geometric(Fraction(9, 2), 5000, seeded(42)))
    # Consecutive calls on one source continue the stream.
    src = seeded(42)
    assert not np.array_equal(sample_discrete_gaussian(100, 1000, src),
                              sample_discrete_gaussian(100, 1000, src))


def test_secure_source_differs_between_calls():
    assert not np.array_equal(RandomSource.secure().words(64), RandomSource.secure().words(64))
    assert not np.array_equal(sample_discrete_gaussian(10000, 1000),
                              sample_discrete_gaussian(10000, 1000))
    src = RandomSource.secure()
    assert not np.array_equal(src.words(64), src.words(64))


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_secure_source_refuses_to_run_in_a_forked_child():
    src = RandomSource.secure()
    src.words(4)
    pid = os.fork()
    if pid == 0:  # child: the copied source must refuse (same key = same noise)
        try:
            src.words(4)
        except RuntimeError:
            os._exit(0)
        os._exit(1)
    _, status = os.waitpid(pid, 0)
    assert os.WEXITSTATUS(status) == 0
    src.words(4)  # the parent goes on


def test_words_are_uniform_bits():
    w = RandomSource.seeded(5).words(1 << 16)
    bits = np.unpackbits(w.view(np.uint8))
    n = bits.size
    assert abs(bits.mean() - 0.5) < 5 * math.sqrt(0.25 / n)
    # each of the 64 bit positions
    per_pos = ((w[:, None] >> np.arange(64, dtype=np.uint64)) & np.uint64(1)).mean(axis=0)
    assert np.all(np.abs(per_pos - 0.5) < 5 * math.sqrt(0.25 / w.size))


def test_spawned_streams_are_distinct_and_reproducible():
    kids = RandomSource.seeded(9).spawn(3)
    again = RandomSource.seeded(9).spawn(3)
    ws = [k.words(32) for k in kids]
    assert all(np.array_equal(w, a.words(32)) for w, a in zip(ws, again, strict=True))
    assert len({w.tobytes() for w in ws}) == 3


# ---------------------------------------------------------------------------
# Exact building blocks of the reference
# ---------------------------------------------------------------------------


def test_exp_table_matches_high_precision():
    mpmath.mp.prec = 300
    for v in range(1, ref.EXP_TABLE_MAX + 1):
        want = int(mpmath.floor(mpmath.exp(-v) * mpmath.mpf(2) ** 64))
        assert ref.EXP_NEG_64[v] == want, v
    for v, nbits in [(1, 200), (7, 96), (45, 128), (100, 256)]:
        want = int(mpmath.floor(mpmath.exp(-v) * mpmath.mpf(2) ** nbits))
        assert ref.exp_neg_floor(v, nbits) == want
        assert ref.exp_neg_chunk(v, 2) == (want >> (nbits - 96)) & 0xFFFFFFFF
    assert kernel.EXP_HI[1] == 0x5E2D58D8 and ref.EXP_NEG_64[1] & 0xFFFFFFFF == 0xB3BCDF1A  # 1/e


class _ListStream:
    """A stream of given units (for exact, hand-checked reference behaviour)."""

    def __init__(self, units):
        self.units = list(units)
        self.used = 0

    def unit(self):
        self.used += 1
        return self.units.pop(0)

    def bit(self):
        return self.unit() & 1


def test_lemire_and_bitmask_consume_as_documented():
    # Lemire, d = 3: floor(u * 3 / 2^32); u = 0 is rejected when low < (2^32 - 3) % 3 = 1.
    s = _ListStream([0, 2 ** 31])
    assert ref.uniform_below(s, 3) == 1 and s.used == 2
    assert ref.uniform_below(_ListStream([]), 1) == 0  # d = 1 uses no randomness
    # Bitmask, d = 2^40 + 1 (41 bits over 2 units, little-endian): first value rejected.
    s = _ListStream([0, 0x1FF, 5, 0])
    assert ref.uniform_below(s, 2 ** 40 + 1) == 5 and s.used == 4
    # Bernoulli(n/d) uses no randomness when n <= 0 or n >= d.
    assert ref.bernoulli(_ListStream([]), 0, 5) is False
    assert ref.bernoulli(_ListStream([]), 5, 5) is True


def test_exp_comparison_reads_more_bits_only_on_ties():
    c = [ref.exp_neg_chunk(1, j) for j in range(3)]
    s = _ListStream([c[0] - 1])
    assert ref.bernoulli_exp_int(s, 1) is True and s.used == 1
    s = _ListStream([c[0], c[1], c[2] - 1])
    assert ref.bernoulli_exp_int(s, 1) is True and s.used == 3
    s = _ListStream([c[0], c[1], c[2] + 1])
    assert ref.bernoulli_exp_int(s, 1) is False and s.used == 3
    # Geometric: u ties exp(-1) on 64 bits, is just below it, and above exp(-2): V = 1.
    s = _ListStream([c[0], c[1], c[2] - 1])
    assert ref.geometric_exp1(s) == 1 and s.used == 3
    # u = 0.000...: below exp(-v) as long as exp(-v) has a nonzero chunk before u's.
    s = _ListStream([0, 0, 0, 1 << 31])
    assert ref.geometric_exp1(s) == math.floor(-math.log(2.0 ** -97)) and s.used == 4


class _PrefixSource:
    """A RandomSource stand-in: given units first, then a seeded stream."""

    def __init__(self, prefix, seed):
        self.prefix = np.array(prefix, dtype=np.uint32)
        self.rest = seeded(seed)

    def _units(self, out):
        k = min(out.shape[0], self.prefix.shape[0])
        out[:k] = self.prefix[:k]
        self.prefix = self.prefix[k:]
        self.rest._units(out[k:])


def test_natural_tie_in_the_kernel_goes_to_the_reference():
    """First unit U = 0, then u' = exactly the first 32 bits of exp(-1): a real tie."""
    prefix = [0, int(kernel.EXP_HI[1])]
    plan = noise._Plan(GAUSS, Fraction(1), noise._INT64_MAX, 0)
    fast = np.empty(2000, np.int64)
    slow = np.empty(2000, np.int64)
    assert noise._fill_block(plan, _PrefixSource(prefix, 3), fast, True) >= 1  # a hand-off
    assert noise._fill_block(plan, _PrefixSource(prefix, 3), slow, False) == 2000
    assert np.array_equal(fast, slow)


@pytest.mark.parametrize("d", [2, 3, 7, 1000, 2 ** 31, 2 ** 31 + 5, 3 * 2 ** 40 + 1])
def test_uniform_integers_are_uniform(d):
    stream = noise._Stream(seeded(d % 1000), 1 << 12)
    n = 60_000
    x = np.array([ref.uniform_below(stream, d) for _ in range(n)], dtype=np.int64)
    assert x.min() >= 0 and x.max() < d
    bins = min(d, 20)
    # Equal-probability bins when d divides evenly, else exact bin masses.
    edges = [(d * i) // bins for i in range(bins + 1)]
    counts = np.histogram(x, bins=edges)[0] if bins < d else np.bincount(x, minlength=d)
    probs = np.diff(edges) / d if bins < d else np.full(d, 1 / d)
    _, p = stats.chisquare(counts, n * probs)
    assert p > P_MIN


@pytest.mark.parametrize("n_, d_", [(0, 1), (1, 3), (2, 3), (1, 1), (5, 2), (7, 3), (123, 10)])
def test_bernoulli_exp_frequency(n_, d_):
    stream = noise._Stream(seeded(n_ * 100 + d_), 1 << 12)
    trials = 40_000
    hits = sum(ref.bernoulli_exp(stream, n_, d_) for _ in range(trials))
    p = float(mpmath.exp(-mpmath.mpf(n_) / d_))
    se = math.sqrt(p * (1 - p) / trials) + 1e-12
    assert abs(hits / trials - p) < 5 * se + 1e-9


def test_geometric_exp1_distribution():
    stream = noise._Stream(seeded(77), 1 << 12)
    n = 100_000
    v = np.array([ref.geometric_exp1(stream) for _ in range(n)])
    ks = np.arange(0, 60)
    probs = (1 - math.exp(-1)) * np.exp(-ks.astype(float))
    assert v.max() <= 59
    _, p, _ = chi_square(v, ks, probs / probs.sum())
    assert p > P_MIN


# ---------------------------------------------------------------------------
# The fast sampler: same values as the reference, right distribution
# ---------------------------------------------------------------------------

GAUSS_SIGMA2 = [Fraction(3, 10), Fraction(1), Fraction(5000, 159), Fraction(10000),
                Fraction(10 ** 6)]
GEO_SCALES = [Fraction(1, 3), Fraction(1), Fraction(9, 2), Fraction(9, 1) / Fraction(17, 10),
              Fraction(100)]


# (10^8 + 1)/7: den = 2 p q t^2 > 2^31 (bitmask uniforms on 2 units); (2^70 + 1)/3: den
# exceeds int64, so every draw takes the big-integer path.
@pytest.mark.parametrize("sigma2", GAUSS_SIGMA2 + [Fraction(7, 2), Fraction(10 ** 8 + 1, 7),
                                                   Fraction(2 ** 70 + 1, 3)])
def test_kernel_equals_reference_gaussian(sigma2):
    n = 6000
    fast = noise._sample(GAUSS, sigma2, n, seeded(1))
    slow = noise._sample(GAUSS, sigma2, n, seeded(1), use_kernel=False)
    assert np.array_equal(fast, slow)


@pytest.mark.parametrize("scale", GEO_SCALES + [Fraction(2 ** 35 + 3, 7)])
def test_kernel_equals_reference_geometric(scale):
    n = 6000
    fast = noise._sample(LAPLACE, scale, n, seeded(2))
    slow = noise._sample(LAPLACE, scale, n, seeded(2), use_kernel=False)
    assert np.array_equal(fast, slow)


@pytest.mark.parametrize("sigma2", GAUSS_SIGMA2)
def test_discrete_gaussian_fits_pmf(sigma2):
    x = sample_discrete_gaussian(sigma2, 2_000_000, seeded(100 + int(sigma2 * 10)))
    ks, probs = gaussian_pmf(sigma2)
    assert_fits(x, ks, probs, f"sigma2={sigma2}", gaussian_width(sigma2))
    assert_moments(x, ks, probs, f"sigma2={sigma2}")


@pytest.mark.parametrize("scale", GEO_SCALES)
def test_two_sided_geometric_fits_pmf(scale):
    x = sample_two_sided_geometric(scale, 1_000_000, seeded(200 + int(scale * 10)))
    ks, probs = geometric_pmf(scale)
    assert_fits(x, ks, probs, f"scale={scale}", max(1, int(scale) // 5))
    assert_moments(x, ks, probs, f"scale={scale}")


def test_goodness_of_fit_has_power():
    """The test above does reject a 2% error in sigma^2 (so passing means something)."""
    x = sample_discrete_gaussian(Fraction(5000, 159), 2_000_000, seeded(7))
    ks, probs = gaussian_pmf(Fraction(5000, 159) * Fraction(102, 100))
    assert chi_square(x, ks, probs)[1] < 1e-10
    x = sample_discrete_gaussian(10000, 2_000_000, seeded(7))
    ks, probs = gaussian_pmf(10200)
    assert chi_square(x, ks, probs, width=gaussian_width(10000))[1] < 1e-10


def test_float_sigma2_samples_the_rounded_up_value():
    x = sample_discrete_gaussian(9 / (2 * 0.159 * 0.9), 500_000, seeded(5))
    ks, probs = gaussian_pmf(exact_sigma2(9 / (2 * 0.159 * 0.9)))
    assert_fits(x, ks, probs)


@pytest.mark.parametrize("sigma2", [Fraction(1), Fraction(5000, 159)])
def test_reference_alone_fits_pmf(sigma2):
    x = noise._sample(GAUSS, sigma2, 150_000, seeded(300), use_kernel=False)
    ks, probs = gaussian_pmf(sigma2)
    assert_fits(x, ks, probs, "reference")
    assert_moments(x, ks, probs, "reference")


def test_reference_alone_fits_geometric_pmf():
    scale = Fraction(9, 2)
    x = noise._sample(LAPLACE, scale, 150_000, seeded(301), use_kernel=False)
    ks, probs = geometric_pmf(scale)
    assert_fits(x, ks, probs, "reference")


# Forced fallback: a tiny overflow limit makes the kernel hand back many samples (large
# |Y|, long von Neumann series), and shift > 0 makes the exp(-v) comparisons tie often.
FORCED = [
    (Fraction(1), {"limit": 16}),
    (Fraction(5000, 159), {"limit": 1 << 27}),
    (Fraction(5000, 159), {"shift": 28}),
    (Fraction(10000), {"limit": 1 << 31, "shift": 26}),
]


@pytest.mark.parametrize("sigma2, knobs", FORCED)
def test_forced_fallback_is_exact(sigma2, knobs):
    info = {}
    x = noise._sample(GAUSS, sigma2, 300_000, seeded(400), stats=info, **knobs)
    assert info["handoffs"] > 3000, info  # the big-integer path really decided many draws
    ks, probs = gaussian_pmf(sigma2)
    assert_fits(x, ks, probs, f"forced {knobs}", gaussian_width(sigma2))
    assert_moments(x, ks, probs, f"forced {knobs}")
    # The output is the same function of the random stream whichever path decided a draw.
    assert np.array_equal(x, noise._sample(GAUSS, sigma2, 300_000, seeded(400)))
    # ... and the big-integer path decides them exactly as the reference does.
    small = noise._sample(GAUSS, sigma2, 20_000, seeded(401), **knobs)
    assert np.array_equal(small, noise._sample(GAUSS, sigma2, 20_000, seeded(401),
                                               use_kernel=False))


def test_forced_fallback_geometric():
    info = {}
    scale = Fraction(9, 2)
    x = noise._sample(LAPLACE, scale, 200_000, seeded(401), stats=info, limit=40, shift=27)
    assert info["handoffs"] > 2000
    ks, probs = geometric_pmf(scale)
    assert_fits(x, ks, probs, "forced geometric")


def test_kernel_rewinds_to_the_sample_start_when_the_buffer_ends():
    """A buffer that ends mid-sample: the sample is recomputed from the same units."""
    src_units = np.empty(20_000, dtype=np.uint32)
    seeded(12)._units(src_units)
    plan = noise._Plan(GAUSS, Fraction(5000, 159), noise._INT64_MAX, 0)
    full = np.empty(500, np.int64)
    st = np.zeros(3, np.int64)
    i, status = kernel.run(src_units, st, full, 0, 500, plan.prm, plan.exp_hi)
    assert (i, status) == (500, kernel.OK)
    # Now feed the same units in short pieces.
    part = np.empty(500, np.int64)
    st = np.zeros(3, np.int64)
    i, end = 0, 37
    while i < 500:
        pos0 = int(st[0])
        view = src_units[:end]
        i, status = kernel.run(view, st, part, i, 500, plan.prm, plan.exp_hi)
        assert int(st[0]) >= pos0
        if status == kernel.EXHAUSTED:
            end += 37
    assert np.array_equal(full, part)


def test_blocks_and_threads_do_not_change_the_output():
    n = 2 * noise._BLOCK + 12345
    a = noise._sample(GAUSS, Fraction(100), n, seeded(8), threads=1)
    b = noise._sample(GAUSS, Fraction(100), n, seeded(8), threads=2)
    assert np.array_equal(a, b)
    ks, probs = gaussian_pmf(100)
    assert_fits(a, ks, probs, "blocks", gaussian_width(100))
    # Blocks use independent child streams: no two blocks repeat each other.
    assert not np.array_equal(a[:1000], a[noise._BLOCK:noise._BLOCK + 1000])


@pytest.mark.slow
@pytest.mark.parametrize("sigma2", [Fraction(1), Fraction(10), Fraction(100), Fraction(1000),
                                    Fraction(10000)])
def test_discrete_gaussian_fits_pmf_ten_million(sigma2):
    # A fixed seed keeps the test deterministic; the seeded stream is the same AES-CTR
    # construction as the secure one, only keyed from the seed.
    x = sample_discrete_gaussian(sigma2, 10_000_000, RandomSource.seeded(7000 + int(sigma2)))
    ks, probs = gaussian_pmf(sigma2)
    for width in (1, gaussian_width(sigma2)):
        stat, p, bins = chi_square(x, ks, probs, width=width)
        assert p > 1e-4, (stat, bins, p)


# ------------------------------------------------------------------ supported range
@pytest.mark.timeout(30)
@pytest.mark.parametrize("sampler,value,name", [
    (sample_discrete_gaussian, Fraction(5 * 10**37), "sigma2"),
    (sample_discrete_gaussian, 1e300, "sigma2"),
    (sample_two_sided_geometric, Fraction(10**19), "scale"),
    (sample_two_sided_geometric, "1e40", "scale"),
])
def test_beyond_the_supported_range_is_a_clear_error(sampler, value, name):
    # These used to raise OverflowError (a draw beyond 64 bits) or crawl.
    with pytest.raises(ValueError, match=f"{name} = .* above the exact sampler's supported range"):
        sampler(value, 10, RandomSource.seeded(1))


@pytest.mark.timeout(60)
def test_the_largest_scales_a_valid_configuration_reaches_are_drawn():
    # calculators.config: S <= 9, budget >= 1e-6, gamma >= 1e-4: sigma2 <= 4.5e10 (zCDP)
    # and scale <= 9e10 (pure DP). Drawn exactly (the big-integer path where the kernel's
    # 64 bits do not suffice), and the spread is right.
    from calculators.config import MAX_NOISE_SCALE

    s2 = Fraction(9) / (2 * Fraction(1, 10**6) * Fraction(1, 10**4))
    assert s2 == Fraction(MAX_NOISE_SCALE) / 2
    x = sample_discrete_gaussian(s2, 4000, RandomSource.seeded(3))
    assert abs(x.std() / math.sqrt(s2) - 1) < 0.05
    y = sample_two_sided_geometric(Fraction(MAX_NOISE_SCALE), 4000, RandomSource.seeded(3))
    assert abs(np.abs(y).mean() / MAX_NOISE_SCALE - 1) < 0.06  # E|X| ~ scale for a large scale
    assert MAX_NOISE_SCALE < MAX_SCALE and MAX_NOISE_SCALE / 2 < MAX_SIGMA2


def test_the_samplers_range_is_the_calculators_range():
    # engine.noise imports nothing of the project, so the numbers are repeated there.
    from calculators import discrete_gaussian, geometric
    from calculators.config import MAX_NOISE_SCALE

    assert MAX_SIGMA2 == discrete_gaussian.MAX_SIGMA2 and MAX_SCALE == geometric.MAX_SCALE
    assert noise._CONFIG_MAX_SCALE == MAX_NOISE_SCALE
