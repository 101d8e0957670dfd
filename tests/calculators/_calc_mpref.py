"""High-precision references for the calculator tests (not a test module).

Sums of the discrete Gaussian are computed by *direct* summation, independently of the
library's Euler-Maclaurin / theta-function shortcuts: every term exp(-i^2/(2 sigma2)) is
produced by the exact ratio recurrence t_{d+1} = t_d r_d, r_{d+1} = r_d exp(-1/sigma2)
in 240-bit fixed-point integer arithmetic, with the three exponentials taken from mpmath
at 60 digits. Summation stops when a term is below 2^-200 of the first one, so the
references are good to far more than the 50 digits the tests need.
"""

from __future__ import annotations

from functools import cache

import mpmath

DPS = 50
_BITS = 240
_STOP = 200


def _fixed(x: mpmath.mpf) -> int:
    return int(mpmath.floor(mpmath.ldexp(x, _BITS)))


@cache
def tail_sum(m: int, sigma2: float, power: int = 0) -> mpmath.mpf:
    """sum_{i >= m} i^power exp(-i^2 / (2 sigma2)), m >= 0, by direct summation."""
    with mpmath.workdps(DPS + 10):
        s2 = mpmath.mpf(sigma2)
        t = 1 << _BITS
        r = _fixed(mpmath.exp(-(2 * m + 1) / (2 * s2)))
        q2 = _fixed(mpmath.exp(-1 / s2))
        stop = 1 << (_BITS - _STOP)
        total = 0
        i = m
        if power == 0:
            while t > stop:
                total += t
                t = (t * r) >> _BITS
                r = (r * q2) >> _BITS
        else:
            # i^power grows while t decays: run past the mode of i^power t_i as well
            while t > stop or i <= 2 * (power * sigma2) ** 0.5:
                total += t * i**power
                t = (t * r) >> _BITS
                r = (r * q2) >> _BITS
                i += 1
        lead = mpmath.exp(-(mpmath.mpf(m) ** 2) / (2 * s2))
        return +(lead * mpmath.ldexp(mpmath.mpf(total), -_BITS))


@cache
def normalizer(sigma2: float) -> mpmath.mpf:
    with mpmath.workdps(DPS + 10):
        return +(2 * tail_sum(0, sigma2) - 1)


def sf(k: int, sigma2: float) -> mpmath.mpf:
    """P(X > k) for the discrete Gaussian."""
    with mpmath.workdps(DPS + 10):
        if k >= 0:
            return +(tail_sum(k + 1, sigma2) / normalizer(sigma2))
        return +(1 - tail_sum(-k, sigma2) / normalizer(sigma2))


def cdf(k: int, sigma2: float) -> mpmath.mpf:
    """P(X <= k) for the discrete Gaussian."""
    with mpmath.workdps(DPS + 10):
        if k < 0:
            return +(tail_sum(-k, sigma2) / normalizer(sigma2))
        return +(1 - tail_sum(k + 1, sigma2) / normalizer(sigma2))


def partial_mean(k: int, sigma2: float) -> mpmath.mpf:
    """E[X 1{X > k}] = sum_{i > k} i pmf(i).

    For a = k + 1 <= 0 the terms i and -i (1 <= i <= -a) cancel exactly, leaving
    sum_{i >= 1 - a} i pmf(i); subtracting the two parts numerically would lose every
    digit when the answer is tiny.
    """
    with mpmath.workdps(DPS + 10):
        a = k + 1
        m = a if a >= 1 else 1 - a
        return +(tail_sum(m, sigma2, 1) / normalizer(sigma2))


def variance(sigma2: float) -> mpmath.mpf:
    """E[X^2] = 2 sum_{i>=1} i^2 exp(-i^2/(2 sigma2)) / Z."""
    with mpmath.workdps(DPS + 10):
        return +(2 * tail_sum(1, sigma2, 2) / normalizer(sigma2))


def rel_err(x: float, ref: mpmath.mpf) -> float:
    with mpmath.workdps(DPS):
        if ref == 0:
            return abs(x)
        return float(abs((mpmath.mpf(x) - ref) / ref))
