"""National projection: the expected outcome of a plan from a group-size profile (SPEC §1).

A population group's stat level, whether its total is suppressed, and the error of its
published total depend only on its true size n and on the plan (SPEC §1: stage 1
compares n + X1 with the thresholds, stage 2 draws a total or a table, suppression
compares n + X2 with T). So the expected outcome of a plan over a whole nation is an
exact sum over the histogram of group sizes of each population group level: a *profile*
(`Profile`, written by ``python -m engine profile``). Nothing here draws noise or reads
files; the engine's counting makes profiles (`engine.reports.profile`).

Per group of true size n at a level with stage-1 scale s1, stage-2 scale s2, TotalOnly
scale s0, thresholds Theta_1..3 and suppression threshold T (None: off), with
F_s(k) = P(X <= k) the CDF of the noise law at scale s (discrete Gaussian for zCDP,
two-sided geometric for pure DP), exactly as `engine.tabulation.mechanism` and
`engine.tabulation.postprocess` do it:

* stat level (stage 1, the number of thresholds <= n + X1): P_0 = F_s1(Theta_1 - n - 1),
  P_j = P(Theta_j - n <= X1 <= Theta_{j+1} - n - 1) for j = 1, 2, and
  P_3 = P(X1 >= Theta_3 - n) = F_s1(n - Theta_3) (the laws are symmetric);
* suppressed (sub-state levels, stat level 0 only): P_0 * q, q = F_s2(T - n) (released
  iff n + X2 > T);
* T1 rows: one per released total (1 - P_0 q); T2 rows: c_j + 2 per table (the cells and
  the two sex marginals: 10, 20, 48 for age4, age9, age23);
* TotalOnly (DETAILED_ONLY) groups at USA, STATE, PR-STATE: one total with scale s0,
  never suppressed;
* error of a published total: X2 (stat level 0, given release), X0 (TotalOnly), or the
  sum of the table's c_j cells' independent noises (stat level j >= 1). With
  ``allow_negative_counts: false`` a total without a table is clamped at 0 exactly
  (error max(X, -n)). The total of a table is then the sum of its clamped cells, whose
  error depends on the cells' counts, which a profile does not hold; it is bounded
  instead: with cell counts c_i >= 0 the error is sum X_i + sum max(0, -c_i - X_i), so
  |error| <= |sum X_i| + sum max(0, -X_i) and E|error| <= E|X_1 + ... + X_c| + c E|X| / 2.
  A row with such tables gives that upper bound as mean_abs_error
  (mean_abs_error_bound true) and no mean_abs_error_sd.

Columns of a level's row (`COLUMNS`): groups (all groups of the universe), total_only
(groups that publish a total only: stat level 0, suppressed or not, plus TotalOnly
groups), age4, age9, age23 (groups with each table), suppressed, t1_rows, t2_rows: the
expected numbers, sums over groups of independent indicators; each with ``_sd``, the
standard deviation sqrt(sum p (1 - p)) (for t2_rows sqrt(sum Var(rows of a group))).
mean_abs_error = E[sum of |error| over published totals] / E[number of published
totals], and mean_abs_error_sd the standard deviation of one release's mean absolute
error by the delta method (independent groups); mean_abs_error_bound says whether
mean_abs_error is exact (false) or an upper bound (true: counts clamped, see above).

The occupancy split (`OCCUPANCY_COLUMNS`, `SHARE_COLUMNS`; after the columns above, which
are unchanged): occupied (groups with n >= 1; fixed by the profile, no ``_sd``),
occupied_published (occupied groups with a T1 row: sum over n >= 1 of P(T1 row | n)),
occupied_suppressed, occupied_with_table (any sex x age table: 1 - P_0), occupied_age4 /
_age9 / _age23, empty_published (groups with n = 0 that publish a total), each with ``_sd``;
persons_published_share = sum n P(T1 row | n) / sum n (the share of the level's
person-group memberships whose group publishes a total) and persons_with_table_share
likewise, with ``_sd`` = sqrt(sum n^2 p (1 - p)) / sum n. TotalOnly groups always publish
their total and never a table. Coterminous copying (SPEC §1) is
ignored (`COTERMINOUS_NOTE`): the figures are those of ``python -m engine run ...
--no-coterminous``.

Which sizes the profile keeps, and why no plan-independent binning is used
-------------------------------------------------------------------------
Every size can matter to some valid plan: thresholds may lie anywhere in
[-1e12, 1e12] and a budget up to 1e6 gives a stage-1 noise standard deviation below
1e-3, so a group's outcome is then (to within 1e-300) a step function of n at any
threshold. Any binning that merges two different sizes n < n' fails some valid plan by
100 %: put Theta_3 = n' and take a level whose only non-empty groups are those two; the
expected age23 count is 1 exactly, and 0 or 2 once both groups carry one size. So the
profile lists every size that occurs, exactly (sparse: sizes and their numbers of
groups); the bound of exact sizes is the largest group and the binning beyond it is
empty, which changes no expected figure at all (0 % <= 0.1 %). This stays small: a
level has at most sqrt(2 S P) + 1 distinct sizes (distinct positive sizes
d_1 < ... < d_D sum to at least D (D + 1) / 2, and the sizes of one level sum to at most
S P because each of the P persons is in at most S groups of a level), i.e. at most
77,100 per level for 330 million persons and S = 9 (`max_distinct_sizes`).

How the sums are evaluated (exact and fast)
-------------------------------------------
Each figure is sum_n count(n) f(n) over the distinct sizes of a level, vectorised. The
noise law is made once per scale (`_law_table`): the discrete Gaussian with standard
deviation up to `_GRID_SD` is tabulated, P(X = k) for |k| <= 40 sd + 2 and the tail sums
of 1, k and k^2 (terms beyond are below 1e-347 and vanish in double precision); above
it, the exact tail sums of `calculators.discrete_gaussian`; the geometric law by its
closed forms (geometric series). E|sum of c cells| is the
exact Fourier (Fejer) integral (1/pi) int_0^pi (1 - phi(t)^c) / (1 - cos t) dt of the
law's characteristic function phi (`_mean_abs_sum`). No size is merged with another.
"""

from __future__ import annotations

import gzip
import itertools
import json
import math
import re
import threading
import unicodedata
import weakref
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from functools import lru_cache
from typing import Any

import numpy as np

from calculators import budget, discrete_gaussian, geometric, noise_family, suppression
from calculators.config import ConfigError, SafeTabConfig, loads_unique, to_fraction
from calculators.levels import (
    POPULATION_GROUP_LEVELS,
    STAT_LEVEL_CELLS,
    US_STATE_CODES,
    PopulationGroupLevel,
)

__all__ = [
    "COLUMNS",
    "COUNT_COLUMNS",
    "COTERMINOUS_NOTE",
    "OCCUPANCY_COLUMNS",
    "SHARE_COLUMNS",
    "PROFILE_KIND",
    "LevelProfile",
    "Profile",
    "ProfileError",
    "Projection",
    "SizeHistogram",
    "max_distinct_sizes",
    "noise_crossings",
    "profile_lines",
    "project",
]

PROFILE_KIND = "SafeTab-P Studio group-size profile"
PROFILE_FORMAT = 1
#: The largest profile accepted (bytes of JSON text, after decompression).
MAX_PROFILE_BYTES = 64 * 1024 * 1024
#: The longest name and description a profile keeps (`engine profile --name` refuses longer ones).
NAME_LIMIT, DESCRIPTION_LIMIT = 200, 1000
#: The most distinct sizes a profile may list over all its levels.
MAX_PROFILE_SIZES = 4_000_000
#: The largest group size, number of groups or persons a profile may state (the
#: universe of 2020 holds about 1e9 groups; 1e13 leaves room and stays exact in float64).
MAX_PROFILE_COUNT = 10**13
#: Counted figures of a row, in order; each also has a ``_sd`` column.
COUNT_COLUMNS = ("groups", "total_only", "age4", "age9", "age23", "suppressed", "t1_rows", "t2_rows")
#: Counted figures about groups that exist (at least one person) and empty groups (issue 40):
#: occupied is fixed by the profile (no ``_sd``), the others each have a ``_sd`` column.
OCCUPANCY_COLUMNS = ("occupied", "occupied_published", "occupied_suppressed", "occupied_with_table",
                     "occupied_age4", "occupied_age9", "occupied_age23", "empty_published")
#: Shares of person-group memberships (sum n P(...) / sum n), each with a ``_sd`` column.
SHARE_COLUMNS = ("persons_published_share", "persons_with_table_share")
#: Every column of a projection row (`Projection.frame`, ``python -m engine project``): the
#: columns of before issue 40 first and unchanged, the occupancy split after them.
COLUMNS = ("geo", "iteration_level", *COUNT_COLUMNS, *(f"{c}_sd" for c in COUNT_COLUMNS),
           "mean_abs_error", "mean_abs_error_sd", "mean_abs_error_bound",
           "occupied", *(x for c in OCCUPANCY_COLUMNS[1:] for x in (c, f"{c}_sd")),
           *(x for c in SHARE_COLUMNS for x in (c, f"{c}_sd")))
#: What every projection says about coterminous geographies.
COTERMINOUS_NOTE = ("Coterminous copying is ignored: entities of different levels that cover the same blocks "
                    "(a county with one tract, DC) publish their own tabulation here, as `python -m engine run "
                    "--no-coterminous` does; with the copy (SPEC §1) such an entity publishes the outcome of the "
                    "highest unsuppressed level of its set instead, which moves some of its groups between tables, "
                    "suppressed and released.")
#: What every projection says about the Tabulation System's suppression (`run --tabulation-suppression`).
TABULATION_SUPPRESSION_NOTE = ("The Tabulation System's suppression (SafeTab-P paper, Section 5.3.4; `python -m engine "
                               "run --tabulation-suppression`) is not modelled: its Alone > Alone-or-in-any-combination "
                               "rule compares two noisy counts of different groups, which a group-size profile does "
                               "not pair; the figures are those of a release without it.")
#: T2 rows of a table at stat level j: its cells and the two sex marginals.
_T2_ROWS = np.array([0.0] + [STAT_LEVEL_CELLS[j] + 2.0 for j in (1, 2, 3)])
#: Below this standard deviation the discrete Gaussian is tabulated on a grid.
_GRID_SD = 10_000.0
#: Histograms of at most this many sizes are evaluated size by size (`_compress`).
_SMALL = 256
#: Grid half-width in standard deviations: exp(-40^2 / 2) = 1e-347 is 0 in double precision.
_GRID_WIDTH = 40.0


class ProfileError(ConfigError):
    """A profile that cannot be used; `problems` names each field and value."""


def one_line(text: str) -> str:
    """A profile's name or description as one line: every line break, tab or other control
    character (Unicode category Cc, and the line and paragraph separators U+2028/U+2029)
    becomes a space, runs of spaces one space. A name on several lines would break every
    file that names the profile in '#' lines (a CSV line that is not a comment) and the
    app's captions."""
    return " ".join("".join(" " if (unicodedata.category(ch) == "Cc" or ch in "\u2028\u2029") else ch
                            for ch in text).split())


def has_control(text: str) -> bool:
    """Whether `text` holds a line break, a tab or another control character (`one_line`)."""
    return any(unicodedata.category(ch) == "Cc" or ch in "\u2028\u2029" for ch in text)


def comment_lines(lines) -> str:
    """`lines` as '#' comment lines of a CSV: each line of each item (an item that holds a
    line break gives several lines, each a comment), so that ``pandas.read_csv(path,
    comment="#")`` reads the table after them whatever they say."""
    return "".join(f"# {part}\n" for line in lines for part in (str(line).splitlines() or [""]))


def max_distinct_sizes(persons: int, stability: int) -> int:
    """The most distinct group sizes a level can have: floor(sqrt(2 S P)) + 1 (the +1 is
    size 0). Distinct positive sizes d_1 < ... < d_D sum to at least D (D + 1) / 2 and the
    sizes of a level sum to at most S P (module docstring)."""
    return math.isqrt(2 * int(stability) * int(persons)) + 1


# ====================================================================== profiles
@dataclass(frozen=True)
class SizeHistogram:
    """Numbers of groups of each true size: `sizes` strictly increasing (>= 0), `counts`
    (>= 1) the number of groups of that size."""

    sizes: np.ndarray
    counts: np.ndarray

    @property
    def groups(self) -> int:
        return int(self.counts.sum())

    @property
    def persons(self) -> int:
        """Sum of the sizes of the groups (each person counted once per group)."""
        return int((self.sizes.astype(np.float64) * self.counts).sum())

    @classmethod
    def of(cls, sizes: Any) -> "SizeHistogram":
        """The histogram of an array of group sizes (one entry per group)."""
        a = np.asarray(sizes, dtype=np.int64).ravel()
        if len(a) == 0:
            return cls(np.zeros(0, np.int64), np.zeros(0, np.int64))
        top = int(a.max())
        if 0 <= int(a.min()) and top <= 4 * len(a) + 1_000_000:
            c = np.bincount(a, minlength=top + 1)  # O(n), no sort
            nz = np.flatnonzero(c)
            return cls(nz.astype(np.int64), c[nz].astype(np.int64))
        u, c = np.unique(a, return_counts=True)
        return cls(u.astype(np.int64), c.astype(np.int64))

    def to_dict(self) -> dict:
        steps = np.diff(self.sizes, prepend=0) if len(self.sizes) else self.sizes
        return {"size_steps": [int(x) for x in steps], "counts": [int(x) for x in self.counts]}


@dataclass(frozen=True, eq=False)
class LevelProfile:
    """The group sizes of one population group level.

    `adaptive`: the groups that go through the two stages; `total_only`: the groups of
    DETAILED_ONLY iterations (USA, STATE, PR-STATE only). `stability[r - 1]` is S at
    max_race_codes = r (SPEC §1, from the spec files the profile was made with).
    Compared and hashed by identity, so that a level's figures are cached per profile.
    """

    level: PopulationGroupLevel
    regions: int
    iterations: int
    total_only_iterations: int
    stability: tuple[int, ...]
    adaptive: SizeHistogram
    total_only: SizeHistogram

    @property
    def groups(self) -> int:
        return self.regions * self.iterations

    def to_dict(self) -> dict:
        return {"regions": self.regions, "iterations": self.iterations,
                "total_only_iterations": self.total_only_iterations, "stability_by_r": list(self.stability),
                "adaptive": self.adaptive.to_dict(), "total_only": self.total_only.to_dict()}


@dataclass(frozen=True)
class Profile:
    """A group-size profile (``python -m engine profile``): per population group level, the
    number of groups of the public universe of each true size, plus the data's name and
    person counts and the parameters it was counted with.

    A profile of confidential data is itself confidential (`confidential`): it holds exact,
    noise-free counts of the data. Only a profile its maker declared synthetic (invented
    persons, ``--synthetic``) is not.
    """

    name: str
    persons: int
    persons_us: int
    persons_pr: int
    synthetic: bool
    max_race_codes: int
    run_us: bool
    run_pr: bool
    state_filter_us: tuple[str, ...]
    levels: Mapping[PopulationGroupLevel, LevelProfile]
    created: str = ""
    description: str = ""
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def confidential(self) -> bool:
        return not self.synthetic

    @property
    def notice(self) -> str:
        """What the profile is, in one sentence: confidential, or synthetic."""
        if self.synthetic:
            return ("SYNTHETIC: made from invented persons (python -m engine sample); not confidential, and not the "
                    "real nation.")
        return ("CONFIDENTIAL: exact, noise-free counts of the data it was made from; handle it like the data "
                "itself and never publish it.")

    def to_dict(self) -> dict:
        return {
            "kind": PROFILE_KIND, "format_version": PROFILE_FORMAT,
            "confidential": self.confidential, "notice": self.notice, "synthetic": self.synthetic,
            "name": self.name, "description": self.description, "created": self.created,
            "data": {"persons": self.persons, "persons_us": self.persons_us, "persons_pr": self.persons_pr},
            "params": {"max_race_codes": self.max_race_codes, "run_us": self.run_us, "run_pr": self.run_pr,
                       "state_filter_us": list(self.state_filter_us)},
            "binning": "none: every group size is listed exactly (calculators.projection explains why)",
            **dict(self.extra),
            "levels": {lvl.key: lp.to_dict() for lvl, lp in self.levels.items()},
        }

    def to_json(self) -> str:
        """Compact JSON (one line per level) that `Profile.parse` reads back."""
        d = self.to_dict()
        levels = d.pop("levels")
        head = json.dumps(d, indent=1)[:-2]
        body = ",\n".join(f"  {json.dumps(k)}: {json.dumps(v, separators=(',', ':'))}" for k, v in levels.items())
        return head + ',\n "levels": {\n' + body + "\n }\n}\n"

    def to_bytes(self, compressed: bool = False) -> bytes:
        """The JSON text as UTF-8, or gzip-compressed reproducibly (no time stamp, no name)."""
        raw = self.to_json().encode("utf-8")
        return gzip.compress(raw, compresslevel=9, mtime=0) if compressed else raw

    @classmethod
    def parse(cls, raw: bytes | str, source: str = "profile") -> "Profile":
        """Read a profile (JSON text, or gzip-compressed JSON) and check every field.

        Bounded: at most `MAX_PROFILE_BYTES` of text (decompressed in bounded steps) and
        `MAX_PROFILE_SIZES` sizes; every number finite, whole and in range; the counts of a
        level add up to its regions x iterations. Raises ProfileError naming the field.
        """
        if isinstance(raw, str):
            raw = raw.encode("utf-8")
        if raw[:2] == b"\x1f\x8b":
            raw = _gunzip_bounded(raw, source)
        if len(raw) > MAX_PROFILE_BYTES:
            raise ProfileError([f"the profile is {len(raw):,} bytes, more than the {MAX_PROFILE_BYTES:,} accepted"],
                               source)
        listed = _sizes_listed(raw)
        if listed > MAX_PROFILE_SIZES:  # said before the JSON is parsed, which would take half a minute
            raise ProfileError([_too_many_sizes(listed)], source)
        try:
            data, changed = loads_unique(raw.decode("utf-8"), parse_constant=_no_constant)
        except UnicodeDecodeError:
            raise ProfileError(["the file is not UTF-8 JSON text (nor gzip-compressed JSON)"], source) from None
        except json.JSONDecodeError as exc:
            raise ProfileError([f"not valid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"],
                               source) from None
        except RecursionError:
            raise ProfileError(["the JSON is nested too deeply (a profile is a few levels deep)"], source) from None
        except ValueError as exc:
            raise ProfileError([str(exc)[:200]], source) from None
        if changed:  # what json.loads would change silently
            raise ProfileError(changed[:20], source)
        return cls.from_dict(data, source)

    @classmethod
    def from_dict(cls, data: Any, source: str = "profile") -> "Profile":
        return _ProfileReader(source).read(data)


#: A size_steps list as written in a profile's JSON text (a flat list of numbers).
_SIZE_STEPS = re.compile(rb'"size_steps"\s*:\s*\[([^\]\[{}"]*)\]')


def _sizes_listed(raw: bytes) -> int:
    """How many sizes the size_steps lists of a profile's JSON text hold, counted on the
    text (one pass, no parsing): the entries of each list are its commas plus one."""
    n = 0
    for m in _SIZE_STEPS.finditer(raw):
        a, b = m.span(1)
        commas = raw.count(b",", a, b)
        n += commas + 1 if commas or raw[a:b].strip() else 0
    return n


def _too_many_sizes(listed: int | None = None) -> str:
    return (f"the profile lists {'more than' if listed is None else f'{listed:,} sizes,'} "
            f"{'' if listed is None else 'more than '}{MAX_PROFILE_SIZES:,}"
            f"{' sizes' if listed is None else ' accepted'} (distinct group sizes over all its levels)")


def _no_constant(name: str) -> float:
    raise ValueError(f"the number {name} is not allowed (every number must be finite)")


def _gunzip_bounded(raw: bytes, source: str) -> bytes:
    """Decompress without ever holding more than MAX_PROFILE_BYTES + 1 bytes of output."""
    import zlib

    d = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        out = d.decompress(raw, MAX_PROFILE_BYTES + 1)
    except zlib.error as exc:
        raise ProfileError([f"the gzip data is damaged ({exc})"], source) from None
    if len(out) > MAX_PROFILE_BYTES:
        raise ProfileError([f"the profile decompresses to more than {MAX_PROFILE_BYTES:,} bytes"], source)
    if not d.eof:
        raise ProfileError(["the gzip data is cut short"], source)
    return out


class _ProfileReader:
    """Checks a parsed profile field by field; every problem names its field."""

    def __init__(self, source: str):
        self.source = source
        self.problems: list[str] = []
        self.sizes_seen = 0

    def fail(self, text: str) -> None:
        if len(self.problems) < 20:
            self.problems.append(text)

    def _int(self, value: Any, where: str, lo: int = 0, hi: int = MAX_PROFILE_COUNT) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            self.fail(f"{where} must be a whole number (got {_echo(value)})")
            return lo
        if not lo <= value <= hi:
            self.fail(f"{where} must be from {lo:,} to {hi:,} (got {_echo(value)})")
            return lo
        return value

    def _bool(self, value: Any, where: str) -> bool:
        if not isinstance(value, bool):
            self.fail(f"{where} must be true or false (got {_echo(value)})")
            return False
        return value

    def _str(self, value: Any, where: str, limit: int = 500) -> str:
        """A text field, on one line (`one_line`) and at most `limit` characters."""
        if not isinstance(value, str):
            self.fail(f"{where} must be a string (got {_echo(value)})")
            return ""
        return one_line(value[: 4 * limit])[:limit]

    def _obj(self, value: Any, where: str) -> dict:
        if not isinstance(value, dict):
            self.fail(f"{where} must be an object {{...}} (got {_echo(value)})")
            return {}
        return value

    def _hist(self, value: Any, where: str) -> SizeHistogram:
        d = self._obj(value, where)
        steps, counts = d.get("size_steps"), d.get("counts")
        empty = SizeHistogram(np.zeros(0, np.int64), np.zeros(0, np.int64))
        if not isinstance(steps, list) or not isinstance(counts, list) or len(steps) != len(counts):
            self.fail(f"{where} must hold the lists size_steps and counts, of the same length")
            return empty
        self.sizes_seen += len(steps)
        if self.sizes_seen > MAX_PROFILE_SIZES:  # said once, and no more is read
            self.fail(_too_many_sizes())
            raise ProfileError(self.problems, self.source)
        arrays = []
        for name, values, lo in (("size_steps", steps, 0), ("counts", counts, 1)):
            if not all(type(v) is int for v in values):
                bad = next(v for v in values if type(v) is not int)
                self.fail(f"{where}.{name} must hold whole numbers only (got {_echo(bad)})")
                return empty
            a = np.array(values, dtype=object)
            if len(a) and (min(values) < lo or max(values) > MAX_PROFILE_COUNT):
                bad = next(v for v in values if not lo <= v <= MAX_PROFILE_COUNT)
                self.fail(f"{where}.{name} must hold numbers from {lo} to {MAX_PROFILE_COUNT:,} (got {_echo(bad)})")
                return empty
            arrays.append(a.astype(np.int64))
        steps_a, counts_a = arrays
        if len(steps_a) > 1 and (steps_a[1:] <= 0).any():
            self.fail(f"{where}.size_steps: every step after the first must be at least 1 (sizes strictly "
                      "increasing)")
            return empty
        sizes = np.cumsum(steps_a)
        if len(sizes) and sizes[-1] > MAX_PROFILE_COUNT:
            self.fail(f"{where}: a size exceeds {MAX_PROFILE_COUNT:,}")
            return empty
        return SizeHistogram(sizes, counts_a)

    def read(self, data: Any) -> Profile:
        d = self._obj(data, "the profile")
        if d and d.get("kind") != PROFILE_KIND:
            if "kind" not in d and {"thresholds_p", "privacy_defn"} & set(d):
                self.fail("this is a SafeTab-P config.json (a plan), not a group-size profile of `python -m engine "
                          "profile`; `python -m engine project` takes CONFIG.json PROFILE.json OUT.csv, in that order")
            else:
                self.fail(f"kind must be {json.dumps(PROFILE_KIND)} (got {_echo(d.get('kind'))}): this is not a "
                          "group-size profile of `python -m engine profile`")
            raise ProfileError(self.problems, self.source)
        if d.get("format_version") != PROFILE_FORMAT:
            self.fail(f"format_version must be {PROFILE_FORMAT} (got {_echo(d.get('format_version'))})")
        synthetic = self._bool(d.get("synthetic"), "synthetic")
        conf = self._bool(d.get("confidential"), "confidential")
        if conf == synthetic:
            self.fail("confidential must be the opposite of synthetic (a profile of real data is confidential)")
        data_ = self._obj(d.get("data"), "data")
        params = self._obj(d.get("params"), "params")
        persons = self._int(data_.get("persons"), "data.persons")
        persons_us = self._int(data_.get("persons_us"), "data.persons_us")
        persons_pr = self._int(data_.get("persons_pr"), "data.persons_pr")
        if persons_us + persons_pr != persons:
            self.fail("data.persons must equal data.persons_us + data.persons_pr")
        r = self._int(params.get("max_race_codes"), "params.max_race_codes", 1, 8)
        run_us = self._bool(params.get("run_us"), "params.run_us")
        run_pr = self._bool(params.get("run_pr"), "params.run_pr")
        states = params.get("state_filter_us")
        if not isinstance(states, list) or not all(isinstance(s, str) and s in US_STATE_CODES for s in states) \
                or len(set(states)) != len(states):
            self.fail("params.state_filter_us must list US state FIPS codes (2 digits, 50 states and DC), each "
                      f"once (got {_echo(states)})")
            states = []
        levels: dict[PopulationGroupLevel, LevelProfile] = {}
        raw_levels = self._obj(d.get("levels"), "levels")
        if len(raw_levels) > len(POPULATION_GROUP_LEVELS):
            # name the first keys that are not levels, so that the user can find them
            odd = [_echo(k) for k in itertools.islice(raw_levels, 1000) if not _is_level(k)][:5]
            self.fail(f"levels lists {len(raw_levels):,} entries; there are {len(POPULATION_GROUP_LEVELS)} levels"
                      + (f"; not a population group level: {', '.join(odd)}" if odd
                         else " (a level is listed twice, spelt differently)"))
            raw_levels = {}
        for key, value in raw_levels.items():
            try:
                lvl = PopulationGroupLevel.parse(key)
            except ValueError as exc:
                self.fail(f"levels: {exc}")
                continue
            if lvl in levels:
                self.fail(f"levels: {_echo(key)} is {lvl.key} again (each level is listed once)")
                continue
            lp = self._level(lvl, value, f"levels.{key}")
            if lp is not None:
                levels[lvl] = lp
        if not levels and not self.problems:
            self.fail("levels is empty: the profile holds no population group level")
        for lvl, lp in levels.items():  # a group holds each person at most once
            pr = lvl.geo.startswith("PR-")
            if not (run_pr if pr else run_us):
                self.fail(f"levels.{lvl.key}: the profile's params.run_{'pr' if pr else 'us'} is false, so it "
                          "holds no level of that run")
                continue
            most = {"USA": 1, "PR-STATE": 1, "STATE": len(states)}.get(lvl.geo)
            if most is not None and lp.regions > most:
                self.fail(f"levels.{lvl.key}: {lp.regions:,} regions; there "
                          + ("is 1" if lvl.geo != "STATE" else f"are at most {most} (params.state_filter_us)"))
                continue
            limit = persons_pr if pr else persons_us
            biggest = max([int(h.sizes[-1]) for h in (lp.adaptive, lp.total_only) if len(h.sizes)], default=0)
            if biggest > limit:
                self.fail(f"levels.{lvl.key}: a group of {biggest:,} persons is larger than the data "
                          f"(data.persons_{'pr' if pr else 'us'} = {limit:,})")
                continue
            # and each person is in at most S groups of a level (S at the r it was counted with)
            members = lp.adaptive.persons + lp.total_only.persons
            S = lp.stability[r - 1]
            if members > S * limit:
                self.fail(f"levels.{lvl.key}: its groups hold {members:,} persons in all, more than S x persons = "
                          f"{S} x {limit:,} (each person is in at most S = {S} groups of a level)")
        if self.problems:
            raise ProfileError(self.problems, self.source)
        known = {"kind", "format_version", "confidential", "notice", "synthetic", "name", "description", "created",
                 "data", "params", "binning", "levels"}
        extra = {k: v for k, v in d.items() if k not in known and isinstance(v, (str, int, float, bool))}
        return Profile(
            name=self._str(d.get("name", ""), "name", NAME_LIMIT) or "unnamed profile",
            persons=persons, persons_us=persons_us, persons_pr=persons_pr, synthetic=synthetic,
            max_race_codes=r, run_us=run_us, run_pr=run_pr, state_filter_us=tuple(states), levels=levels,
            created=self._str(d.get("created", ""), "created", 40),
            description=self._str(d.get("description", ""), "description", DESCRIPTION_LIMIT), extra=extra)

    def _level(self, lvl: PopulationGroupLevel, value: Any, where: str) -> LevelProfile | None:
        v = self._obj(value, where)
        before = len(self.problems)
        regions = self._int(v.get("regions"), f"{where}.regions", 0, 10**9)
        iterations = self._int(v.get("iterations"), f"{where}.iterations", 0, 10**6)
        to_it = self._int(v.get("total_only_iterations"), f"{where}.total_only_iterations", 0, iterations)
        stab = v.get("stability_by_r")
        if not isinstance(stab, list) or len(stab) != 8 or not all(type(s) is int and 1 <= s <= 1000 for s in stab):
            self.fail(f"{where}.stability_by_r must list S for r = 1..8, whole numbers from 1 to 1000 "
                      f"(got {_echo(stab)})")
            stab = [1] * 8
        adaptive = self._hist(v.get("adaptive"), f"{where}.adaptive")
        total_only = self._hist(v.get("total_only"), f"{where}.total_only")
        if len(self.problems) > before:
            return None
        if to_it and not lvl.is_state_or_above:
            self.fail(f"{where}: only USA, STATE and PR-STATE levels have TotalOnly iterations")
        if adaptive.groups != regions * (iterations - to_it):
            self.fail(f"{where}.adaptive: the counts add up to {adaptive.groups:,} groups, not regions x "
                      f"(iterations - total_only_iterations) = {regions * (iterations - to_it):,}")
        if total_only.groups != regions * to_it:
            self.fail(f"{where}.total_only: the counts add up to {total_only.groups:,} groups, not regions x "
                      f"total_only_iterations = {regions * to_it:,}")
        if len(self.problems) > before:
            return None
        return LevelProfile(lvl, regions, iterations, to_it, tuple(stab), adaptive, total_only)


def _is_level(key: str) -> bool:
    try:
        PopulationGroupLevel.parse(key)
    except ValueError:
        return False
    return True


def _echo(value: Any) -> str:
    try:
        text = json.dumps(value)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 60 else text[:60] + "..."


# ====================================================================== noise laws
class _Law:
    """The functions of one noise law at one scale that the projection needs, for integer
    arrays: cdf(k) = P(X <= k), abs1(a) = E[|X| 1{X > a}], sq(a) = E[X^2 1{X > a}], and
    `variance`. `reach`: beyond it every probability and partial moment is 0 in double
    precision (P(|X| > reach) < 1e-323), so the functions are constant there."""

    variance: float
    reach: int

    def cdf(self, k: np.ndarray) -> np.ndarray: ...

    def cdf_pair(self, k: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(P(X <= k), P(X <= -k - 1) = P(X > k)), each from its small side."""
        return self.cdf(k), self.cdf(-k - 1)

    def abs1(self, a: np.ndarray) -> np.ndarray: ...

    def sq(self, a: np.ndarray) -> np.ndarray: ...


class _GridLaw(_Law):
    """A symmetric integer law tabulated on |k| <= K: p[k] = P(X = k) for k = 0..K and the
    tail sums t0[m] = sum_{i >= m} p[i], t1[m] = sum_{i >= m} i p[i], t2[m] = sum i^2 p[i]
    (summed from the far end, so small tails keep their relative accuracy)."""

    def __init__(self, p: np.ndarray):
        k = np.arange(len(p), dtype=np.float64)
        self.K = len(p) - 1
        self.reach = self.K
        self.t0 = np.append(np.cumsum(p[::-1])[::-1], 0.0)
        self.t1 = np.append(np.cumsum((k * p)[::-1])[::-1], 0.0)
        self.t2 = np.append(np.cumsum((k * k * p)[::-1])[::-1], 0.0)
        self.variance = float(2 * self.t2[1])

    def _at(self, table: np.ndarray, m: np.ndarray) -> np.ndarray:
        return np.take(table, m, mode="clip")  # below 0 -> t[0], beyond K + 1 -> t[K + 1] = 0

    def cdf(self, k: np.ndarray) -> np.ndarray:
        return self.cdf_pair(k)[0]

    def cdf_pair(self, k: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        # P(X <= k) = t0[-k] for k <= -1 (symmetry), 1 - t0[k + 1] for k >= 0; P(X > k) the other one
        k = np.asarray(k, dtype=np.int64)
        neg = k < 0
        v = self._at(self.t0, np.where(neg, -k, k + 1))
        return np.where(neg, v, 1.0 - v), np.where(neg, 1.0 - v, v)

    def abs1(self, a: np.ndarray) -> np.ndarray:
        # a >= 0: sum_{i > a} i p; a < 0: E|X| - sum_{i <= a} |i| p = 2 t1[1] - t1[-a]
        a = np.asarray(a, dtype=np.int64)
        pos = a >= 0
        v = self._at(self.t1, np.where(pos, a + 1, -a))
        return np.where(pos, v, 2 * self.t1[1] - v)

    def sq(self, a: np.ndarray) -> np.ndarray:
        a = np.asarray(a, dtype=np.int64)
        pos = a >= 0
        v = self._at(self.t2, np.where(pos, a + 1, -a))
        return np.where(pos, v, self.variance - v)


class _ClosedLaw(_Law):
    """The discrete Gaussian beyond `_GRID_SD`, evaluated with `calculators.discrete_gaussian`
    (exact tail sums); its second moments are the continuous normal's (only standard
    deviations use them)."""

    def __init__(self, scale: float, noise: str):
        self.scale, self.noise = scale, noise
        self.mod = noise_family.law(noise)
        self.variance = float(self.mod.variance(scale))
        self.reach = int(math.ceil(_GRID_WIDTH * math.sqrt(scale))) + 2

    def cdf(self, k: np.ndarray) -> np.ndarray:
        return np.asarray(self.mod.cdf(np.asarray(k, dtype=np.float64), self.scale), dtype=np.float64)

    def abs1(self, a: np.ndarray) -> np.ndarray:
        a = np.asarray(a, dtype=np.float64)
        pm = self.mod.partial_mean
        return np.where(a >= 0, pm(np.maximum(a, 0), self.scale),
                        2 * pm(0.0, self.scale) - pm(np.maximum(-a - 1, 0), self.scale))

    def _sq_upper(self, a: np.ndarray) -> np.ndarray:
        """E[X^2 1{X > a}] for a >= 0, the continuous normal's with a continuity correction
        (only standard deviations use it; sd > `_GRID_SD`)."""
        from scipy.special import ndtr

        sd = math.sqrt(self.variance)
        z = (a + 0.5) / sd
        phi = np.exp(-z * z / 2) / math.sqrt(2 * math.pi)
        return self.variance * (ndtr(-z) + z * phi)

    def sq(self, a: np.ndarray) -> np.ndarray:
        a = np.asarray(a, dtype=np.float64)
        up = self._sq_upper(np.maximum(a, 0))
        down = self._sq_upper(np.maximum(-a - 1, 0))
        return np.where(a >= 0, up, self.variance - down)


class _GeometricLaw(_Law):
    """The two-sided geometric, P(X = k) = (1 - a) / (1 + a) a^|k|, a = exp(-1/b), by its
    closed forms (geometric series), vectorised; a^m is exp(-m / b), so no power of a
    number near 1 loses precision. For m >= 1:

    P(X >= m) = a^m / (1 + a);  sum_{i>=m} i P(i) = a^m (m (1 - a) + a) / ((1 + a)(1 - a));
    sum_{i>=m} i^2 P(i) = a^m / (1 + a) (a (1 + a) / (1 - a)^2 + 2 m a / (1 - a) + m^2).
    """

    def __init__(self, scale: float):
        self.b = scale
        self.reach = int(math.ceil(750 * scale)) + 2  # exp(-750) is 0 in double precision
        self.a = math.exp(-1 / scale)
        self.om = -math.expm1(-1 / scale)  # 1 - a
        self.variance = 2 * self.a / self.om**2

    def _pow(self, m: np.ndarray) -> np.ndarray:
        with np.errstate(under="ignore", over="ignore"):
            return np.exp(-np.asarray(m, dtype=np.float64) / self.b)

    def _tail0(self, m: np.ndarray) -> np.ndarray:  # P(X >= m), m >= 1
        return self._pow(m) / (1 + self.a)

    def _tail1(self, m: np.ndarray) -> np.ndarray:  # sum_{i >= m} i P(i), m >= 1
        return self._pow(m) * (m * self.om + self.a) / ((1 + self.a) * self.om)

    def _tail2(self, m: np.ndarray) -> np.ndarray:  # sum_{i >= m} i^2 P(i), m >= 1
        a, om = self.a, self.om
        return self._pow(m) / (1 + a) * (a * (1 + a) / om**2 + 2 * m * a / om + m * m)

    def cdf(self, k: np.ndarray) -> np.ndarray:
        return self.cdf_pair(k)[0]

    def cdf_pair(self, k: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        k = np.asarray(k, dtype=np.float64)
        neg = k < 0
        v = self._tail0(np.where(neg, -k, k + 1))
        return np.where(neg, v, 1.0 - v), np.where(neg, 1.0 - v, v)

    def abs1(self, a: np.ndarray) -> np.ndarray:
        a = np.asarray(a, dtype=np.float64)
        pos = a >= 0
        v = self._tail1(np.where(pos, a + 1, -a))
        return np.where(pos, v, 2 * float(self._tail1(np.array(1.0))) - v)

    def sq(self, a: np.ndarray) -> np.ndarray:
        a = np.asarray(a, dtype=np.float64)
        pos = a >= 0
        v = self._tail2(np.where(pos, a + 1, -a))
        return np.where(pos, v, self.variance - v)


@lru_cache(maxsize=256)
def _law_table(scale: float, noise: str) -> _Law:
    """The law at a scale, made once: the discrete Gaussian tabulated (`_GridLaw`) up to a
    standard deviation of `_GRID_SD` (|k| <= 40 sd + 2), the library's sums beyond
    (`_ClosedLaw`); the geometric by its closed forms (`_GeometricLaw`)."""
    if noise == noise_family.GAUSSIAN and math.sqrt(scale) <= _GRID_SD:
        K = int(math.ceil(_GRID_WIDTH * math.sqrt(scale))) + 2
        k = np.arange(K + 1, dtype=np.float64)
        log_z = float(discrete_gaussian.log_normalizer(scale))
        with np.errstate(under="ignore"):
            p = np.exp(-k * k / (2 * scale) - log_z)
        return _GridLaw(p)
    if noise == noise_family.GEOMETRIC:
        return _GeometricLaw(scale)
    return _ClosedLaw(scale, noise)


def _log_phi(t: np.ndarray, scale: float, noise: str) -> np.ndarray:
    """log of the characteristic function of one noise draw at t in [0, pi] (`_mean_abs_sum`)."""
    if noise == noise_family.GEOMETRIC:
        alpha = math.exp(-1 / scale)
        return -np.log1p(4 * alpha * np.sin(t / 2) ** 2 / math.expm1(-1 / scale) ** 2)
    if scale >= 0.5:
        ms = np.arange(-3, 4, dtype=np.float64)[:, None]
        e = -scale * (t[None, :] - 2 * math.pi * ms) ** 2 / 2
        top = e.max(axis=0)
        log_norm = math.log(sum(math.exp(-scale * (2 * math.pi * m) ** 2 / 2) for m in range(-3, 4)))
        return top + np.log(np.exp(e - top).sum(axis=0)) - log_norm
    ks = np.arange(1, 40, dtype=np.float64)[:, None]
    with np.errstate(under="ignore"):
        w = np.exp(-ks * ks / (2 * scale))
    return np.log((1 + 2 * (w * np.cos(ks * t[None, :])).sum(axis=0)) / (1 + 2 * w.sum()))


_GL_NODES, _GL_WEIGHTS = np.polynomial.legendre.leggauss(32)


@lru_cache(maxsize=1024)
def _mean_abs_sum(scale: float, cells: int, noise: str) -> float:
    """E|X_1 + ... + X_c| for c independent copies of the law (the error of a table's total).

    For an integer-valued S, |k| = (1/2 pi) int_{-pi}^{pi} (1 - cos k t) / (1 - cos t) dt
    (Fejer), so E|S| = (1/pi) int_0^pi (1 - phi(t)^c) / (1 - cos t) dt with phi the
    characteristic function of one copy (real: the laws are symmetric):
    discrete Gaussian phi(t) = sum_m exp(-s (t - 2 pi m)^2 / 2) / sum_m exp(-s (2 pi m)^2 / 2)
    (Poisson summation), geometric phi(t) = 1 / (1 + 4 alpha sin^2(t/2) / (1 - alpha)^2).
    The integrand is analytic on [0, pi]; it is flat up to about t = 1 / sd(S) and falls
    like 2 / t^2 beyond, so it is integrated by 32-point Gauss-Legendre on 4 equal panels
    up to that knee and on panels doubling in width after it (relative error below
    1e-12, checked against direct sums in the tests).
    """
    # the knee is only where the panels change size: the variance parameter is near enough
    var = cells * (2 * math.exp(-1 / scale) / math.expm1(-1 / scale) ** 2 if noise == noise_family.GEOMETRIC
                   else scale)
    knee = min(math.pi, 4.0 / math.sqrt(var)) if var > 1e-12 else math.pi
    edges = list(np.linspace(0.0, knee, 5))
    while edges[-1] < math.pi:
        edges.append(min(math.pi, 2 * edges[-1]))
    a, b = np.array(edges[:-1]), np.array(edges[1:])
    t = ((b - a)[:, None] * (_GL_NODES[None, :] + 1) / 2 + a[:, None]).ravel()
    w = ((b - a)[:, None] / 2 * _GL_WEIGHTS[None, :]).ravel()
    f = -np.expm1(cells * _log_phi(t, scale, noise)) / (2 * np.sin(t / 2) ** 2)
    return float(w @ f) / math.pi


# ====================================================================== projection
@dataclass(frozen=True)
class _Scales:
    stage1: float
    stage2: float
    total_only: float
    threshold: int | None
    noise: str


@lru_cache(maxsize=4096)
def _suppression_threshold(stage2: Fraction, p: float, noise: str) -> int | None:
    t = suppression.threshold(stage2, p, noise=noise)
    return None if t is None else int(t)


@lru_cache(maxsize=4096)
def _scales_of(rho: float | int, gamma: float | int, S: int, p: float, noise: str, state_or_above: bool) -> _Scales:
    """Cached on the budget and gamma as written in the configuration (`to_fraction` makes
    them exact, as `SafeTabConfig.rho_exact` does)."""
    rho_x, gamma_x = to_fraction(rho), to_fraction(gamma)
    s1 = budget.noise_scale_exact(rho_x, S, gamma_x, noise)
    s2 = budget.noise_scale_exact(rho_x, S, 1 - gamma_x, noise)
    s0 = budget.noise_scale_exact(rho_x, S, Fraction(1), noise)
    t = None
    if p > 0 and not state_or_above:
        t = _suppression_threshold(s2, p, noise)
    return _Scales(float(s1), float(s2), float(s0), t, noise)


def _scales(config: SafeTabConfig, level: PopulationGroupLevel, S: int) -> _Scales:
    """The level's noise scales and suppression threshold, as `engine.tabulation.mechanism.level_plan`
    derives them (exact rational scales; T from the exact stage-2 CDF)."""
    return _scales_of(getattr(config, level.budget_key), config.privacy_budget_p_stage_1_fraction, int(S),
                      float(config.zero_suppression_chance), noise_family.family_of(config.privacy_defn),
                      level.is_state_or_above)


#: Sums kept per level so that totals over levels (and the delta-method SD of the mean
#: absolute error at any ratio R) can be formed: a = |error| 1{published}, b = 1{published}.
_SUMS = ("A", "A2", "B", "AA", "AB", "BB")


def _published_error(law: _Law, n: np.ndarray, d: np.ndarray | None, clamp: bool
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(P(published), E[|e| 1{pub}], E[e^2 1{pub}]) of a total n + X, published iff X > d
    (d None: always), e = X or, clamped at 0, max(X, -n)."""
    if d is None:
        d = np.full(n.shape, np.iinfo(np.int64).min // 4, dtype=np.int64)
    pub = law.cdf(-d - 1)  # P(X > d) = P(X <= -d - 1)
    if not clamp:
        return pub, law.abs1(d), law.sq(d)
    a = np.maximum(d, -n - 1)
    below = np.where(d < -n - 1, law.cdf(-n - 1) - law.cdf(d), 0.0)  # P(d < X <= -n - 1): clamped to 0
    nf = n.astype(np.float64)
    return pub, law.abs1(a) + nf * below, law.sq(a) + nf * nf * below


def _level_figures(lp: LevelProfile, config: SafeTabConfig, sc: _Scales) -> dict[str, float]:
    """Expected figures, variances and error sums of one level (module docstring); cached
    per level of a profile and the level's part of the plan, so that a control change
    recomputes only the levels it changes."""
    return dict(_level_figures_cached(lp, config.thresholds(lp.level), sc, not config.allow_negative_counts))


def _compress(sizes: np.ndarray, counts: np.ndarray, windows: list[tuple[int, int]]
              ) -> tuple[np.ndarray, np.ndarray]:
    """The sizes that need their own evaluation, and one size for each stretch of the
    others, with the summed counts: exact, not a binning.

    Every per-group value of a level depends on n only through F(c - n) for a few
    constants c (the thresholds, T, 0) and laws whose functions are constant beyond their
    `reach` (0 and 1 exactly in double precision). So outside the windows [c - reach,
    c + reach] the values are the same for all sizes between two consecutive windows; those
    sizes are replaced by one of them carrying their total count. Sizes inside a window
    are kept as they are."""
    if len(sizes) <= _SMALL or not windows:
        return sizes, counts  # a few sizes: evaluating them all is cheaper than sorting them out
    # `counts` may be a matrix of weights, one row per size (summed alike)
    lo = np.sort(np.array([a for a, _ in windows], dtype=np.int64))
    hi = np.sort(np.array([b for _, b in windows], dtype=np.int64))
    started = np.searchsorted(lo, sizes, side="right")  # windows with lo <= n
    ended = np.searchsorted(hi, sizes, side="left")     # windows with hi < n
    active = started > ended
    if active.all():
        return sizes, counts
    out = np.flatnonzero(~active)
    key = started[out]
    first = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
    rep_sizes = sizes[out[first]]
    rep_counts = np.add.reduceat(counts[out], first, axis=0)
    n = np.concatenate([sizes[active], rep_sizes])
    c = np.concatenate([counts[active], rep_counts])
    order = np.argsort(n, kind="stable")
    return n[order], c[order]


#: The per-group values `_level_figures_cached` sums, in the columns of one matrix.
_PER_GROUP = ("total_only", "age4", "age9", "age23", "suppressed", "total_only_var", "age4_var", "age9_var",
              "age23_var", "suppressed_var", "t2_rows", "t2_rows_var", *_SUMS)


#: The figures of each level of each profile still in use, per part of a plan: kept with
#: the level (a weak key), so that a profile nobody holds any more (an upload replaced, a
#: session closed) is freed with its figures. A process-wide LRU keyed on the level would
#: keep up to its size of levels alive, each with its sizes (up to 64 MB of them).
_FIGURES: "weakref.WeakKeyDictionary[LevelProfile, OrderedDict]" = weakref.WeakKeyDictionary()
_FIGURES_LOCK = threading.Lock()
#: Parts of a plan (thresholds, scales, clamping) whose figures are kept per level.
_FIGURES_PER_LEVEL = 256


def _level_figures_cached(lp: LevelProfile, thresholds: tuple[int, int, int], sc: _Scales,
                          clamp: bool) -> dict[str, float]:
    """`_level_figures_of`, kept per level (`_FIGURES`): the same dict for the same level
    and part of a plan (callers copy it)."""
    key = (thresholds, sc, clamp)
    with _FIGURES_LOCK:
        kept = _FIGURES.get(lp)
        if kept is not None and key in kept:
            kept.move_to_end(key)
            return kept[key]
    out = _level_figures_of(lp, thresholds, sc, clamp)
    with _FIGURES_LOCK:
        kept = _FIGURES.setdefault(lp, OrderedDict())
        kept[key] = out
        while len(kept) > _FIGURES_PER_LEVEL:
            kept.popitem(last=False)
    return out


def _clear_level_figures() -> None:
    with _FIGURES_LOCK:
        _FIGURES.clear()


_level_figures_cached.cache_clear = _clear_level_figures  # type: ignore[attr-defined]  # as an lru_cache's


def _level_figures_of(lp: LevelProfile, thresholds: tuple[int, int, int], sc: _Scales,
                      clamp: bool) -> dict[str, float]:
    out = dict.fromkeys(COUNT_COLUMNS + tuple(f"{c}_var" for c in COUNT_COLUMNS) + _SUMS + ("bound",)
                        + _OCC_KEYS, 0.0)
    out["groups"] = float(lp.groups)
    h = lp.adaptive
    if len(h.sizes):
        l1, l2 = _law_table(sc.stage1, sc.noise), _law_table(sc.stage2, sc.noise)
        windows = [(t - l1.reach - 1, t + l1.reach + 1) for t in thresholds]
        if sc.threshold is not None:
            windows.append((sc.threshold - l2.reach - 1, sc.threshold + l2.reach + 1))
        if clamp:  # max(X, -n): n within the reach of 0 (or of T < 0)
            windows.append((-1, l2.reach + abs(sc.threshold or 0) + 2))
        n, W = _compress(h.sizes, _weights(h), windows)
        W = np.ascontiguousarray(W.T)  # one row per weight: contiguous vectors for BLAS (a strided one is 30x slower)
        w = W[0]
        # Stage 1: level = #{j : Theta_j <= n + X1}. up[j] = P(X1 >= Theta_j - n) = F(n - Theta_j) (symmetry),
        # down[j] = 1 - up[j] = F(Theta_j - n - 1), each from its small side; differences likewise.
        up, down = l1.cdf_pair(n[None, :] - np.array(thresholds, dtype=np.int64)[:, None])
        p = np.empty((len(n), 4))
        p[:, 0] = down[0]
        p[:, 3] = up[2]
        for j in (1, 2):
            p[:, j] = np.maximum(np.where(up[j - 1] <= 0.5, up[j - 1] - up[j], down[j] - down[j - 1]), 0.0)
        d = None if sc.threshold is None else sc.threshold - n
        rel0, abs0, sq0 = _published_error(l2, n, d, clamp)
        supp = p[:, 0] * (1.0 - rel0)
        rows = p @ _T2_ROWS
        cells = np.array([STAT_LEVEL_CELLS[j] for j in (1, 2, 3)], dtype=np.float64)
        tables = np.array([_mean_abs_sum(sc.stage2, int(c), sc.noise) for c in cells])
        if clamp:  # the upper bound of a table of clamped cells (module docstring): + c E|X| / 2
            tables = tables + cells * float(l2.abs1(np.array([-l2.reach - 2]))[0]) / 2
        A = p[:, 0] * abs0 + p[:, 1:] @ tables
        A2 = p[:, 0] * sq0 + p[:, 1:] @ (cells * l2.variance)
        B = 1.0 - supp
        pt = p.T
        x = np.vstack([pt, supp, pt * (1 - pt), supp * (1 - supp), rows, (_T2_ROWS**2) @ pt - rows * rows,
                       A, A2, B, A * A, A * B, B * B])
        out.update(zip(_PER_GROUP, (x @ w.astype(np.float64)).tolist()))
        out["t1_rows"] = out["B"]
        out["bound"] = float(clamp and out["age4"] + out["age9"] + out["age23"] > 0)
        out["t1_rows_var"] = out["suppressed_var"]
        _add_occupancy(out, W, p, supp)
    h = lp.total_only
    if len(h.sizes):
        l0 = _law_table(sc.total_only, sc.noise)
        n, W = _compress(h.sizes, _weights(h), [(-1, l0.reach + 2)] if clamp else [(-1, -1)])
        W = np.ascontiguousarray(W.T)
        w = W[0]
        _, abs_, sq_ = _published_error(l0, n, None, clamp)
        g = float(w.sum())
        occ, nsum = float(W[1].sum()), float(W[2].sum())  # a TotalOnly group always publishes its total
        out["occupied"] += occ
        out["occupied_published"] += occ
        out["empty_published"] += g - occ
        out["persons"] += nsum
        out["persons_published"] += nsum
        out["total_only"] += g
        out["t1_rows"] += g
        A_, A2_, AA_ = (w @ np.column_stack([abs_, sq_, abs_ * abs_])).tolist()
        for k, v in (("A", A_), ("A2", A2_), ("B", g), ("AA", AA_), ("AB", A_), ("BB", g)):
            out[k] += v
    return out


#: Sums of the occupancy split kept per level (`_add_occupancy`): expected numbers, their
#: variances, and the persons (sum of n) of all groups, of published ones, of ones with a table.
_OCC_KEYS = ("occupied", *(x for c in OCCUPANCY_COLUMNS[1:] for x in (c, f"{c}_var")),
             "persons", "persons_published", "persons_published_var", "persons_with_table",
             "persons_with_table_var")


def _weights(h: SizeHistogram) -> np.ndarray:
    """Per size: the number of groups, of groups with at least one person, and the sums of
    n and n^2 over the groups (float64 columns, summed alike when sizes are merged)."""
    c = h.counts.astype(np.float64)
    n = h.sizes.astype(np.float64)
    return np.column_stack([c, np.where(h.sizes > 0, c, 0.0), n * c, n * n * c])


def _add_occupancy(out: dict[str, float], W: np.ndarray, p: np.ndarray, supp: np.ndarray) -> None:
    """The occupancy split of the adaptive groups (issue 40): per size, P(T1 row) = 1 - P(suppressed),
    P(table) = 1 - P_0 and P(table j) = P_j, weighted by the groups with a person (occupied_*),
    without one (empty_published), and by n (persons_*; the variance of sum n 1{...} is
    sum n^2 p (1 - p)). `W`: the weights of `_weights`, one row each; all sums in one product."""
    pub, tab = 1.0 - supp, 1.0 - p[:, 0]
    pj = p[:, 1:].T
    probs = np.vstack([pub, supp, tab, pj, pub * (1.0 - pub), tab * p[:, 0], pj * (1.0 - pj)])
    weights = np.vstack([W[1], W[0] - W[1], W[2], W[3]])  # occupied, empty, n, n^2
    R = probs @ weights.T  # R[figure, weight]
    PUB, SUP, TAB, P1, VPUB, VTAB, V1 = 0, 1, 2, 3, 6, 7, 8
    OCC, EMP, N, N2 = 0, 1, 2, 3
    sums = {"occupied_published": (R[PUB, OCC], R[VPUB, OCC]), "occupied_suppressed": (R[SUP, OCC], R[VPUB, OCC]),
            "occupied_with_table": (R[TAB, OCC], R[VTAB, OCC]), "empty_published": (R[PUB, EMP], R[VPUB, EMP]),
            "persons_published": (R[PUB, N], R[VPUB, N2]), "persons_with_table": (R[TAB, N], R[VTAB, N2]),
            **{f"occupied_age{a}": (R[P1 + k, OCC], R[V1 + k, OCC]) for k, a in enumerate((4, 9, 23))}}
    for key, (value, var) in sums.items():
        out[key] += float(value)
        out[f"{key}_var"] += float(var)
    out["occupied"] += float(W[1].sum())
    out["persons"] += float(W[2].sum())


def _mae(sums: Mapping[str, float]) -> tuple[float, float]:
    """(E[sum |e|] / E[published], delta-method SD of one release's mean absolute error).

    With R the ratio, Var(sum a - R sum b) = sum_g E[(a - R b)^2] - (E a - R E b)^2 and
    E[(a - R b)^2] = E[a^2] - 2 R E[a] + R^2 E[b] (b is 0/1 and a = 0 where b = 0)."""
    B = sums["B"]
    if B <= 0:
        return math.nan, math.nan
    R = sums["A"] / B
    var = (sums["A2"] - 2 * R * sums["A"] + R * R * sums["B"]
           - (sums["AA"] - 2 * R * sums["AB"] + R * R * sums["BB"]))
    return R, math.sqrt(max(var, 0.0)) / B


@dataclass(frozen=True)
class Projection:
    """The expected national outcome of a plan: one row per population group level the
    plan tabulates and the profile holds (`rows`, keys `COLUMNS`), `total` (the same
    figures over all those levels; geo "TOTAL"), the profile it came from, and `notes`
    (what the projection assumes or could not do, in words)."""

    rows: list[dict[str, Any]]
    total: dict[str, Any]
    profile: Profile
    notes: list[str]
    confidential: bool

    def frame(self, with_total: bool = True):
        """pandas DataFrame with `COLUMNS` (iteration_level empty in the TOTAL row)."""
        import pandas as pd

        df = pd.DataFrame(self.rows + ([self.total] if with_total else []), columns=list(COLUMNS))
        df["iteration_level"] = df["iteration_level"].astype("Int64")
        return df

    def header_lines(self) -> list[str]:
        """What the projection is, from which profile, and its notes, as sentences."""
        lines = ["SafeTab-P Studio national projection: the expected outcome of a plan on the nation of a group-size "
                 "profile (calculators.projection; no noise drawn).", *profile_lines(self.profile)]
        lines += self.notes
        lines.append("Columns: expected numbers of groups (total_only: a total only, suppressed or not, TotalOnly "
                     "groups included; age4/age9/age23: groups with that sex x age table), of suppressed groups, of "
                     "T1 and T2 rows; *_sd their standard deviations; mean_abs_error: expected |published - true| "
                     "of published totals (T1; an upper bound where mean_abs_error_bound is true), "
                     "mean_abs_error_sd its standard deviation in one release. Occupancy: occupied = groups with at least "
                     "one person; occupied_published / occupied_suppressed / occupied_with_table / occupied_age4-23 "
                     "= expected occupied groups with a total, suppressed, with any or each sex x age table; "
                     "empty_published = expected groups with no person that publish a total; "
                     "persons_published_share / persons_with_table_share = sum n P(total | n) / sum n "
                     "(and with a table), n the group's persons.")
        return lines

    def to_csv(self) -> str:
        """CSV of `frame` (per level and TOTAL) after `#` comment lines (`header_lines`);
        read it with ``pandas.read_csv(path, comment="#")``."""
        table = self.frame().to_csv(index=False, float_format="%.10g", lineterminator="\n")
        return comment_lines(self.header_lines()) + table

    def row(self, level: PopulationGroupLevel) -> dict[str, Any] | None:
        return next((r for r in self.rows if (r["geo"], r["iteration_level"]) == level), None)


def profile_lines(profile: Profile) -> list[str]:
    """Where projected figures come from, as lines a file of them starts with: the profile,
    its notice, and CONFIDENTIAL for a profile of confidential data."""
    lines = [f"Profile: {profile.name} ({profile.persons:,} persons). {profile.notice}"]
    if profile.confidential:
        lines.append("CONFIDENTIAL: computed without noise from a confidential profile; never publish it.")
    return lines


def _row(geo: str, iteration_level: int | None, fig: Mapping[str, float]) -> dict[str, Any]:
    row: dict[str, Any] = {"geo": geo, "iteration_level": iteration_level}
    for c in COUNT_COLUMNS:
        row[c] = fig[c]
        row[f"{c}_sd"] = math.sqrt(max(fig[f"{c}_var"], 0.0))
    row["mean_abs_error"], row["mean_abs_error_sd"] = _mae(fig)
    row["mean_abs_error_bound"] = bool(fig.get("bound", 0.0) > 0)
    if row["mean_abs_error_bound"]:
        row["mean_abs_error_sd"] = math.nan  # the spread of a bound is not the spread of the error
    row["occupied"] = fig["occupied"]
    for c in OCCUPANCY_COLUMNS[1:]:
        row[c] = fig[c]
        row[f"{c}_sd"] = math.sqrt(max(fig[f"{c}_var"], 0.0))
    persons = fig["persons"]
    for c, key in zip(SHARE_COLUMNS, ("persons_published", "persons_with_table")):
        row[c] = fig[key] / persons if persons > 0 else math.nan
        row[f"{c}_sd"] = math.sqrt(max(fig[f"{key}_var"], 0.0)) / persons if persons > 0 else math.nan
    return row


def project(config: SafeTabConfig, profile: Profile) -> Projection:
    """The expected outcome of `config` on the nation of `profile`, per level and in total.

    Follows the engine's rules exactly (module docstring): the level's S is the profile's
    S at the plan's max_race_codes, its scales and suppression threshold those of
    `engine.tabulation.mechanism.level_plan`. Levels the plan tabulates but the profile
    lacks, and differences between the plan and the parameters the profile was counted
    with, are named in `notes`.
    """
    notes = [COTERMINOUS_NOTE, TABULATION_SUPPRESSION_NOTE]
    rows, figs = [], []
    missing = []
    other_s: dict[int, list[str]] = {}
    planner_s = int(budget.stability(config.max_race_codes))
    for lvl in config.tabulated_levels():
        lp = profile.levels.get(lvl)
        if lp is None:
            missing.append(lvl.key)
            continue
        S = lp.stability[config.max_race_codes - 1]
        if S != planner_s:
            other_s.setdefault(int(S), []).append(lvl.key)
        fig = _level_figures(lp, config, _scales(config, lvl, S))
        figs.append(fig)
        rows.append(_row(lvl.geo, lvl.iteration_level, fig))
    total_fig = {k: sum(f[k] for f in figs) for k in figs[0]} if figs else {
        **{c: 0.0 for c in COUNT_COLUMNS}, **{f"{c}_var": 0.0 for c in COUNT_COLUMNS}, **{k: 0.0 for k in _SUMS}, "bound": 0.0,
        **dict.fromkeys(_OCC_KEYS, 0.0)}
    total = _row("TOTAL", None, total_fig)
    if missing:
        notes.append(f"The profile has no groups of {', '.join(missing)} (its run was off or the data had no "
                     "such areas); those levels are left out.")
    for S, keys in sorted(other_s.items()):
        notes.append(f"The profile's spec files give S = {S} at {', '.join(keys)}, where the planner's MOEs assume "
                     f"S = max(2, r) + 1 = {planner_s} (SPEC §1, as with the 2020 files): the projection uses the "
                     "profile's S, so its noise and errors at those levels are not those of the planner's MOE.")
    if config.max_race_codes != profile.max_race_codes:
        notes.append(f"The profile counted persons with up to r = {profile.max_race_codes} race codes; the plan's "
                     f"r = {config.max_race_codes} is used for the noise (S) exactly, but the group sizes are "
                     f"those of r = {profile.max_race_codes} (a person with more than {config.max_race_codes} "
                     "codes would count with the first ones only).")
    if config.run_us and profile.run_us and set(config.state_filter_us) != set(profile.state_filter_us):
        notes.append(f"The profile covers {len(profile.state_filter_us)} US states, the plan's state filter "
                     f"{len(config.state_filter_us)}: the projection is for the profile's states.")
    if not config.allow_negative_counts:
        notes.append("Counts are clamped at 0 (allow_negative_counts: false). The error of a total without a table "
                     "is exact; the total of a table is the sum of its clamped cells, whose error depends on the "
                     "cells' counts, which a profile does not hold, so a level with tables gives an upper bound of "
                     "the mean |error| (mean_abs_error_bound).")
    return Projection(rows, total, profile, notes, profile.confidential)


def noise_crossings(config: SafeTabConfig, profile: Profile) -> dict[PopulationGroupLevel, dict[str, float]]:
    """Per level the plan tabulates and the profile holds, how stage-1 noise moves groups
    across Theta_1 (the threshold of the first table, fixed in persons; SPEC §1): `below`
    (groups with n < Theta_1, which get a table only by noise) and `lifted` (expected
    groups among them that get one: sum count(n) P(X1 >= Theta_1 - n)), `lifted_empty` (of
    those, groups with no person), `above` (n >= Theta_1) and `dropped` (expected groups
    among them that get no table: sum count(n) P(X1 < Theta_1 - n)). Adaptive groups only
    (TotalOnly groups never get a table). Exact sums, as `project`."""
    out = {}
    for lvl in config.tabulated_levels():
        lp = profile.levels.get(lvl)
        if lp is None:
            continue
        sc = _scales(config, lvl, lp.stability[config.max_race_codes - 1])
        theta = int(config.thresholds(lvl)[0])
        n, c = lp.adaptive.sizes, lp.adaptive.counts.astype(np.float64)
        up, down = _law_table(sc.stage1, sc.noise).cdf_pair(n - theta)  # P(X1 >= theta - n), P(X1 < theta - n)
        below = n < theta
        out[lvl] = {"theta1": float(theta), "below": float(c[below].sum()), "above": float(c[~below].sum()),
                    "lifted": float(c[below] @ up[below]), "lifted_empty": float(c[n == 0] @ up[n == 0]),
                    "dropped": float(c[~below] @ down[~below])}
    return out
