"""SafeTab-H: the household tables (T3 household type, T4 tenure) of SafeTab-P's groups.

The exact math of the SafeTab-H plan and its configuration model, as the Census
Bureau's released code (DAS_2020_DDHCB_Production_Code, ``safetab_h``) does it:

* privacy unit: one household; a household joins at most S = max(2, r) + 1 groups per
  geography and iteration level (SafeTab-P's flat map by the householder's codes,
  `calculators.budget.stability`), so one cell gets discrete Gaussian noise with
  sigma^2 = S / (2 rho) (zCDP) or two-sided geometric noise of scale S / epsilon
  (pure DP), one query per table x geography x iteration level (budget 0: no query);
* adaptivity on SafeTab-P's *published* T1 count (no budget spent): T3 level 3 / 2 /
  1 / 0 by T1 >= theta3 / theta2 / theta1, T4 level 1 if T1 >= theta;
* direct cells per level (`T3_DIRECT`, `T4_DIRECT`); coarser cells are sums of the
  noisy direct cells (`T3_MARGINALS`), so a total over m direct cells has variance
  m sigma^2;
* groups: exactly the T1 rows of the run, so a group SafeTab-P suppressed has no
  household tables (`level_probabilities`: the mixture over SafeTab-P's stage 1).

Pure functions and a frozen configuration; no I/O except `SafeTabHConfig.read`.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from calculators import budget
from calculators.config import (
    MAX_FILE_BYTES, ConfigError, decode_utf8, echo, expected_file, loads_unique, read_regular_file, to_fraction,
)
from calculators.levels import (
    GEO_LEVELS_PR, GEO_LEVELS_US, POPULATION_GROUP_LEVELS, US_STATE_CODES, PopulationGroupLevel, CONFIG_SUFFIX,
)

TABLES: tuple[str, ...] = ("t3", "t4")
TABLE_NAMES: dict[str, str] = {"t3": "T3 household type", "t4": "T4 tenure"}
#: The stat levels of each table (T3: 0..3, T4: 0..1).
TABLE_LEVELS: dict[str, tuple[int, ...]] = {"t3": (0, 1, 2, 3), "t4": (0, 1)}
#: How many thresholds each table has per (geography, iteration level).
THRESHOLD_COUNT: dict[str, int] = {"t3": 3, "t4": 1}

#: HOUSEHOLD_TYPE (1 married couple, 2 male householder no spouse/partner, 3 female
#: ditto, 4 living alone, 5 not living alone) -> the T3 direct cell at each level.
T3_CELL_OF_TYPE: dict[int, tuple[int, ...]] = {
    0: (0, 0, 0, 0, 0),
    1: (1, 1, 1, 6, 6),
    2: (2, 3, 3, 7, 8),
    3: (2, 4, 5, 7, 8),
}
#: TEN (1 owned with a mortgage, 2 free and clear, 3 rented, 4 occupied without rent)
#: -> the T4 direct cell at each level.
T4_CELL_OF_TEN: dict[int, tuple[int, ...]] = {0: (0, 0, 0, 0), 1: (1, 2, 3, 3)}
#: The directly noised cells of each table level, ascending.
T3_DIRECT: dict[int, tuple[int, ...]] = {k: tuple(sorted(set(v))) for k, v in T3_CELL_OF_TYPE.items()}
T4_DIRECT: dict[int, tuple[int, ...]] = {k: tuple(sorted(set(v))) for k, v in T4_CELL_OF_TEN.items()}
#: Each published T3 cell -> the direct cells it sums (its marginals, production's
#: `add_marginals`): 0 total, 1 family, 3 other family, 6 nonfamily are sums.
_T3_PARENT = {1: 0, 6: 0, 2: 1, 3: 1, 4: 3, 5: 3, 7: 6, 8: 6}
_T4_PARENT = {1: 0, 2: 0, 3: 0}
T3_CELL_NAMES: dict[int, str] = {
    0: "Total households", 1: "Family households", 2: "Married couple family", 3: "Other family",
    4: "Male householder, no spouse or partner", 5: "Female householder, no spouse or partner",
    6: "Nonfamily households", 7: "Householder living alone", 8: "Householder not living alone",
}
T4_CELL_NAMES: dict[int, str] = {0: "Total occupied housing units", 1: "Owned with a mortgage or a loan",
                                 2: "Owned free and clear", 3: "Renter occupied"}


def _ancestors(cell: int, parent: dict[int, int]) -> list[int]:
    out = [cell]
    while out[-1] in parent:
        out.append(parent[out[-1]])
    return out


def published_cells(table: str, level: int) -> dict[int, tuple[int, ...]]:
    """Every published cell of a table level -> the direct cells it sums (production's
    marginals: a direct cell and all its ancestors). T3: 1 / 3 / 7 / 9 rows at levels
    0..3; T4: 1 / 4."""
    direct = (T3_DIRECT if table == "t3" else T4_DIRECT)[level]
    parent = _T3_PARENT if table == "t3" else _T4_PARENT
    out: dict[int, list[int]] = {}
    for d in direct:
        for a in _ancestors(d, parent):
            out.setdefault(a, []).append(d)
    return {c: tuple(out[c]) for c in sorted(out)}


def rows_per_group(table: str, level: int) -> int:
    """Rows a group publishes at a table level (T3: 1, 3, 7, 9; T4: 1, 4)."""
    return len(published_cells(table, level))


def budget_key(table: str, level: PopulationGroupLevel) -> str:
    """config.json key of a query's budget, e.g. ``privacy_budget_h_t3_level_2_county``."""
    return f"privacy_budget_h_{table}_level_{level.iteration_level}_{CONFIG_SUFFIX[level.geo]}"


BUDGET_KEYS: tuple[str, ...] = tuple(budget_key(t, lvl) for t in TABLES for lvl in POPULATION_GROUP_LEVELS)
_KEYS = ("max_race_codes", *BUDGET_KEYS, "thresholds_h_t3", "thresholds_h_t4", "allow_negative_counts", "run_us",
         "run_pr", "reader", "state_filter_us", "privacy_defn")
_BUDGET_MAX = 1e6


# ------------------------------------------------------------------------ configuration
@dataclass(frozen=True)
class SafeTabHConfig:
    """A checked SafeTab-H config.json (production's ``CONFIG_PARAMS_H`` and
    ``_validate_safetab_h_config``): 40 budgets, T3 thresholds (at least 3,
    non-decreasing, per "(GEO, LEVEL)"), T4 thresholds (exactly 1), and the keys it
    shares with SafeTab-P. Immutable; `updated` makes a checked copy."""

    max_race_codes: int
    budgets: dict[str, Any]
    thresholds_h_t3: dict[str, list[int]]
    thresholds_h_t4: dict[str, list[int]]
    allow_negative_counts: bool
    run_us: bool
    run_pr: bool
    reader: str
    state_filter_us: list[str]
    privacy_defn: str
    extra: dict[str, Any] = field(default_factory=dict)

    # ------------------------------------------------------------------ reading
    @classmethod
    def from_dict(cls, data: Any, source: str | None = None) -> "SafeTabHConfig":
        """Check every key as production does, naming each problem (ConfigError)."""
        if not isinstance(data, dict):
            raise ConfigError([f"the configuration must be a JSON object (got {type(data).__name__})"], source)
        problems: list[str] = []
        missing = sorted(set(_KEYS) - set(data))
        if missing:
            # production: "Invalid config: missing required keys {...}."
            raise ConfigError(["missing required keys {" + ", ".join(missing) + "}"], source)
        if data["privacy_defn"] not in ("zcdp", "puredp"):
            problems.append(f"privacy_defn: found {echo(data['privacy_defn'])}; expected zcdp (Rho zCDP) or puredp "
                            "(Pure DP), the supported privacy definitions")
        r = data["max_race_codes"]
        if not isinstance(r, int) or isinstance(r, bool) or not 1 <= r <= 8:
            problems.append(f"max_race_codes: found {echo(r)}; expected an int value between 1 and 8")
        for key in ("allow_negative_counts", "run_us", "run_pr"):
            if not isinstance(data[key], bool):
                problems.append(f"{key}: found {echo(data[key])}; expected true or false")
        if data["reader"] not in ("csv", "cef"):
            problems.append(f"reader: found {echo(data['reader'])}; expected csv or cef")
        states = data["state_filter_us"]
        if not isinstance(states, list) or any(s not in US_STATE_CODES for s in states):
            problems.append(f"state_filter_us: found {echo(states)}; expected a list of US state FIPS codes "
                            "(2 digits, the 50 states and DC)")
        total = 0.0
        for key in BUDGET_KEYS:
            v = data[key]
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                problems.append(f"{key}: found {echo(v)}; expected a float value, not {type(v).__name__}")
            elif not math.isfinite(v) or v < 0 or v > _BUDGET_MAX:
                problems.append(f"{key}: found {echo(v)}; expected a non-negative number (at most {_BUDGET_MAX:g})")
            else:
                total += v
        if not problems and total == 0:
            problems.append("every privacy_budget_h_* is 0; expected at least one query's privacy budget > 0")
        runs = [g for on, g in ((data["run_us"] is True, GEO_LEVELS_US), (data["run_pr"] is True, GEO_LEVELS_PR))
                if on]
        if data["run_us"] is not True and data["run_pr"] is not True:
            problems.append("run_us and run_pr are both false; expected at least one of them true")
        if data["run_us"] is True and isinstance(states, list) and not states:
            problems.append("state_filter_us is empty; expected at least one state with run_us: true")
        needed = [lvl.key for lvl in POPULATION_GROUP_LEVELS if any(lvl.geo in g for g in runs)]
        for table in TABLES:
            key = f"thresholds_h_{table}"
            th = data[key]
            if not isinstance(th, dict):
                problems.append(f"{key}: found {echo(th)}; expected an object of \"(GEO, LEVEL)\": [thresholds]")
                continue
            lacking = [k for k in needed if k not in th]
            if lacking:
                problems.append(f"missing required keys in '{key}' {{{', '.join(lacking)}}}: thresholds for each "
                                "combination of geography level and iteration level of the runs that are on")
            for k, values in th.items():
                ok_list = isinstance(values, list) and all(isinstance(x, int) and not isinstance(x, bool)
                                                           for x in values)
                if table == "t3" and (not ok_list or len(values) < 3
                                      or any(b < a for a, b in zip(values, values[1:]))):
                    problems.append(f"thresholds_h_t3 {k}: found {echo(values)}; expected at least three "
                                    "non-decreasing whole-number thresholds")
                if table == "t4" and (not ok_list or len(values) != 1):
                    problems.append(f"thresholds_h_t4 {k}: found {echo(values)}; expected one whole-number threshold")
        if problems:
            raise ConfigError(problems, source)
        extra = {k: v for k, v in data.items() if k not in _KEYS}
        return cls(data["max_race_codes"], {k: data[k] for k in BUDGET_KEYS}, dict(data["thresholds_h_t3"]),
                   dict(data["thresholds_h_t4"]), data["allow_negative_counts"], data["run_us"], data["run_pr"],
                   data["reader"], list(states), data["privacy_defn"], extra)

    @classmethod
    def from_json(cls, text: str, source: str | None = None) -> "SafeTabHConfig":
        try:
            data, changed = loads_unique(text)
        except (json.JSONDecodeError, ValueError, RecursionError) as exc:
            raise ConfigError([f"not a valid SafeTab-H config.json: {str(exc)[:120]}"], source) from None
        if changed:
            raise ConfigError(changed, source)
        return cls.from_dict(data, source)

    @classmethod
    def read(cls, path: str | Path) -> "SafeTabHConfig":
        path = Path(path)
        try:
            raw = read_regular_file(path, MAX_FILE_BYTES)
        except FileNotFoundError:
            raise ConfigError([expected_file(path)], str(path)) from None
        except (OSError, ValueError) as exc:
            raise ConfigError([f"cannot read the file ({getattr(exc, 'strerror', None) or exc})"], str(path)) from None
        return cls.from_json(decode_utf8(raw, str(path)), str(path))

    def to_dict(self) -> dict[str, Any]:
        return {"max_race_codes": self.max_race_codes, **self.budgets, "thresholds_h_t3": self.thresholds_h_t3,
                "thresholds_h_t4": self.thresholds_h_t4, "allow_negative_counts": self.allow_negative_counts,
                "run_us": self.run_us, "run_pr": self.run_pr, "reader": self.reader,
                "state_filter_us": self.state_filter_us, "privacy_defn": self.privacy_defn, **self.extra}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2) + "\n"

    def updated(self, **changes: Any) -> "SafeTabHConfig":
        data = self.to_dict()
        data.update(changes)
        return SafeTabHConfig.from_dict(data)

    # ------------------------------------------------------------------ accessors
    def budget(self, table: str, level: PopulationGroupLevel) -> float:
        """rho (zCDP) or epsilon (pure DP) of one query."""
        return float(self.budgets[budget_key(table, level)])

    def budget_exact(self, table: str, level: PopulationGroupLevel) -> Fraction:
        return to_fraction(self.budgets[budget_key(table, level)])

    def thresholds(self, table: str, level: PopulationGroupLevel) -> tuple[int, ...]:
        t = (self.thresholds_h_t3 if table == "t3" else self.thresholds_h_t4)[level.key]
        return tuple(int(x) for x in t[:THRESHOLD_COUNT[table]])

    def runs_geo(self, level: PopulationGroupLevel) -> bool:
        return self.run_pr if level.is_pr else self.run_us

    def levels(self) -> list[PopulationGroupLevel]:
        """The (geography, iteration level) pairs of the runs that are on."""
        return [lvl for lvl in POPULATION_GROUP_LEVELS if self.runs_geo(lvl)]

    def total_budget(self, table: str | None = None) -> Fraction:
        """Sum of the budgets (per household: zCDP rho or pure-DP epsilon compose by sum)."""
        return sum((self.budget_exact(t, lvl) for t in TABLES if table in (None, t) for lvl in self.levels()),
                   Fraction(0))


# ------------------------------------------------------------------------ the math
def household_stability(max_race_codes: int) -> int:
    """S = max(2, r) + 1 (h_r = h_e = 1, the 2020 spec files): 9 at r = 8."""
    return budget.stability(max_race_codes)


def cell_scale(rho: Any, S: int, privacy_defn: str = "zcdp") -> Any:
    """sigma^2 = S / (2 rho) (zCDP) or the geometric scale S / epsilon (pure DP)."""
    return budget.noise_scale(rho, S, 1.0, "gaussian" if privacy_defn == "zcdp" else "geometric")


def expected_moe(rho: Any, S: int) -> Any:
    """The design MOE of one cell, 1.96 sqrt(S / (2 rho)) (unrounded): 46.4855 at rho
    0.008 and 2.6672 at rho 2.43 (r = 8, S = 9)."""
    return budget.Z95 * np.sqrt(budget.sigma2(rho, S))


def cell_moe(rho: Any, S: int, exact: bool = True, privacy_defn: str = "zcdp", cells: int = 1) -> int:
    """MOE of a published cell that sums `cells` direct cells (variance cells x sigma^2):
    exact (the 95% half-width of the discrete sum) or the bound floor(1.96 sd)."""
    noise = "gaussian" if privacy_defn == "zcdp" else "geometric"
    return int(budget.moe_of_sum(cell_scale(rho, S, privacy_defn), cells, exact=exact, noise=noise))


def rho_for_moe(target: int, S: int, exact: bool = True, privacy_defn: str = "zcdp") -> float:
    """The smallest budget whose single-cell MOE is at most `target` (exact inversion,
    or the design inversion 1.96^2 S / (2 target^2))."""
    noise = "gaussian" if privacy_defn == "zcdp" else "geometric"
    # A query spends its whole budget: the stage-2 inversions of SafeTab-P with gamma =
    # 1/2 give twice that budget (halving a float is exact).
    if exact:
        return float(budget.rho_level_for_exact_moe(target, S, 0.5, noise=noise)) / 2
    return float(budget.rho_level_for_moe(target, S, 0.5, noise=noise)) / 2


def table_level(t1: Any, thresholds: tuple[int, ...]) -> Any:
    """The table level of a group from its published T1 count: the number of
    thresholds at or below it (T3: 0..3; T4: 0..1)."""
    t = np.asarray(t1)
    out = np.zeros(t.shape, np.int64)
    for th in thresholds:
        out += (t >= th)
    return out if out.ndim else int(out)


def total_moe_by_level(table: str, rho: Any, S: int, exact: bool = True, privacy_defn: str = "zcdp") -> dict:
    """{table level: {published cell: MOE}} (a cell summing m direct cells has variance
    m sigma^2)."""
    out = {}
    for lvl in TABLE_LEVELS[table]:
        out[lvl] = {c: cell_moe(rho, S, exact, privacy_defn, len(d)) for c, d in published_cells(table, lvl).items()}
    return out


# ------------------------------------------------------------------------ the 2020 plan
def _production_budget(level: PopulationGroupLevel) -> float:
    """The 2020 budget of both tables at a level: 0.006915 Regional (AIANNH Regional 0),
    1.9208 Detailed at nation and state, 0.142869 Detailed below."""
    if level.iteration_level == 1:
        return 0.0 if level.geo == "AIANNH" else 0.006915
    return 1.9208 if level.is_state_or_above else 0.142869


def production_thresholds(table: str, level: PopulationGroupLevel) -> list[int]:
    """The 2020 thresholds (DDHCB configs/safetab-h/NMFv5/config.json): note the
    sub-state Regional T3 149970 where SafeTab-P's ladder has 149971."""
    if table == "t4":
        if level.iteration_level == 1:
            return [971] if level.geo == "AIANNH" else [4971]
        return [471] if level.is_state_or_above else [971]
    if level.iteration_level == 1:
        if level.geo == "AIANNH":
            return [971, 4971, 19971]
        return [4971, 19971, 149971] if level.is_state_or_above else [4971, 19971, 149970]
    return [471, 971, 6971] if level.is_state_or_above else [971, 4971, 19971]


def production_2020_h(reader: str = "csv") -> SafeTabHConfig:
    """The 2020 SafeTab-H plan (read with ``reader: "csv"``, as this engine reads files;
    the released file says "cef")."""
    data: dict[str, Any] = {
        "max_race_codes": 8,
        **{budget_key(t, lvl): _production_budget(lvl) for t in TABLES for lvl in POPULATION_GROUP_LEVELS},
        "thresholds_h_t3": {lvl.key: production_thresholds("t3", lvl) for lvl in POPULATION_GROUP_LEVELS},
        "thresholds_h_t4": {lvl.key: production_thresholds("t4", lvl) for lvl in POPULATION_GROUP_LEVELS},
        "allow_negative_counts": True, "run_us": True, "run_pr": True, "reader": reader,
        "state_filter_us": sorted(US_STATE_CODES), "privacy_defn": "zcdp",
    }
    return SafeTabHConfig.from_dict(data, source="the 2020 SafeTab-H plan")


def scaled_plan(persons: int, population: int, us_states: list[str], run_pr: bool) -> SafeTabHConfig:
    """The 2020 plan with its thresholds scaled for a nation of `persons` as SafeTab-P's
    sample thresholds are (times sqrt(persons / population), at most 1, rounded, kept
    increasing), for the synthetic nations of `python -m engine sample`."""
    s = min(1.0, math.sqrt(persons / population))
    base = production_2020_h()

    def scale(values: list[int]) -> list[int]:
        out: list[int] = []
        for b in values:
            v = max(1, round(b * s))
            out.append(v if not out or v > out[-1] else out[-1] + 1)
        return out

    return base.updated(
        thresholds_h_t3={k: scale(v) for k, v in base.thresholds_h_t3.items()},
        thresholds_h_t4={k: scale(v) for k, v in base.thresholds_h_t4.items()},
        state_filter_us=sorted(us_states), run_pr=run_pr, run_us=bool(us_states))


# ------------------------------------------------------------------------ coupling to SafeTab-P
def _between(n: np.ndarray, lo: np.ndarray | float, hi: np.ndarray | float, s2: float, noise: str) -> np.ndarray:
    """P(lo <= n + X <= hi) for integer bounds (-inf / inf allowed), X of the noise law.

    Only sizes whose bounds lie within 40 standard deviations of n are evaluated with
    the law (beyond, the mass left out is below exp(-800)): a national profile has
    tens of thousands of distinct sizes, most of them far from every threshold."""
    from calculators import noise_family

    law = noise_family.law(noise)
    shape = np.shape(n)
    n = np.atleast_1d(np.asarray(n, float))
    a = np.broadcast_to(np.asarray(lo, float) - n, n.shape)  # X >= a
    b = np.broadcast_to(np.asarray(hi, float) - n, n.shape)  # X <= b
    sd = math.sqrt(s2) if noise == "gaussian" else s2 * math.sqrt(2)
    k = 40 * sd + 2
    out = ((a <= -k) & (b >= k)).astype(float)  # the whole mass inside
    near = (a <= b) & ~(b < -k) & ~(a > k) & ~((a <= -k) & (b >= k))
    if near.any():
        an, bn = a[near], b[near]
        with np.errstate(invalid="ignore"):
            upper = np.where(bn >= k, 0.0, law.sf(np.clip(bn, -k, k), s2))  # P(X > b)
            lower = np.where(an <= -k, 0.0, law.cdf(np.clip(an - 1, -k, k), s2))  # P(X < a)
        out[near] = np.clip(1.0 - upper - lower, 0.0, 1.0)
    return out.reshape(shape)


def t1_components(p_config: Any, level: PopulationGroupLevel, n: Any, total_only: bool = False) -> list[dict]:
    """SafeTab-P's published T1 of a group of true size n as a mixture (SPEC §1): per
    stage-1 level k, its probability, the variance parameter of the published total
    (level 0: one stage-2 draw; k >= 1: the sum of 8 / 18 / 46 stage-2 cells, taken as
    one discrete Gaussian of that variance) and the suppression threshold (level 0
    below the state, when zero_suppression_chance > 0: T1 <= T is not published).
    DETAILED_ONLY groups (`total_only`): one total at the full budget."""
    from calculators import adaptive, suppression
    from calculators.levels import STAT_LEVEL_CELLS

    n = np.asarray(n, float)
    rho = p_config.rho(level)
    S = budget.stability(p_config.max_race_codes)
    noise = "gaussian" if p_config.privacy_defn == "zcdp" else "geometric"
    if rho <= 0 or not p_config.runs_geo(level):
        return []
    if total_only:
        return [{"weight": np.ones(n.shape), "scale": float(budget.noise_scale(rho, S, 1.0, noise)), "noise": noise,
                 "suppress_at": None}]
    s1 = float(budget.noise_scale(rho, S, p_config.gamma, noise))
    s2 = float(budget.noise_scale(rho, S, 1 - p_config.gamma, noise))
    p_k = adaptive.stat_level_probabilities(n, p_config.thresholds(level), s1, noise)
    T = None
    if p_config.suppression_chance > 0 and not level.is_state_or_above:
        T = suppression.threshold(s2, p_config.suppression_chance, noise=noise)
    out = []
    for k in range(4):
        if k == 0:
            out.append({"weight": p_k[..., 0], "scale": s2, "noise": noise, "suppress_at": T})
        else:
            cells = STAT_LEVEL_CELLS[k]
            if noise == "gaussian":
                out.append({"weight": p_k[..., k], "scale": cells * s2, "noise": "gaussian", "suppress_at": None})
            else:  # a sum of geometric cells, as a discrete Gaussian of the same variance
                a = math.exp(-1 / s2)
                var = cells * 2 * a / (1 - a) ** 2
                out.append({"weight": p_k[..., k], "scale": var, "noise": "gaussian", "suppress_at": None})
    return out


def level_probabilities(p_config: Any, h_thresholds: tuple[int, ...], level: PopulationGroupLevel, n: Any,
                        total_only: bool = False) -> np.ndarray:
    """For a group of n persons: P(absent), then P(table level j), j = 0..len(thresholds),
    shape n.shape + (len + 2,). Absent: SafeTab-P does not tabulate the level, or
    suppresses the group (no T1 row, so SafeTab-H has no group); else the table level is
    the number of thresholds at or below the published T1 (a mixture over SafeTab-P's
    stage-1 level and its T1 noise, `t1_components`)."""
    n = np.asarray(n, float)
    th = [-math.inf, *[float(t) for t in h_thresholds], math.inf]
    out = np.zeros(n.shape + (len(h_thresholds) + 2,))
    comps = t1_components(p_config, level, n, total_only)
    if not comps:
        out[..., 0] = 1.0
        return out
    for c in comps:
        w, s2, noise, T = c["weight"], c["scale"], c["noise"], c["suppress_at"]
        floor = -math.inf if T is None else float(T) + 1  # published only above T
        if T is not None:
            out[..., 0] += w * _between(n, -math.inf, float(T), s2, noise)
        for j in range(len(h_thresholds) + 1):
            lo, hi = max(th[j], floor), th[j + 1] - 1
            out[..., j + 1] += w * _between(n, lo, hi, s2, noise)
    return out


def national_outcome(p_config: Any, h_config: SafeTabHConfig, profile: Any) -> list[dict]:
    """Expected numbers of SafeTab-H groups per level from a group-size profile
    (`calculators.projection.Profile`, persons per SafeTab-P group): absent (not in the
    T1), and with each T3 and T4 table level (a query with budget 0 publishes nothing)."""
    rows = []
    for lvl, lp in profile.levels.items():
        if not h_config.runs_geo(lvl):
            continue
        row: dict[str, Any] = {"level": lvl.key, "groups": lp.groups}
        for table in TABLES:
            th = h_config.thresholds(table, lvl)
            acc = np.zeros(len(th) + 2)
            for hist, total_only in ((lp.adaptive, False), (lp.total_only, True)):
                if hist.groups:
                    p = level_probabilities(p_config, th, lvl, hist.sizes, total_only)
                    acc += (p * np.asarray(hist.counts, float)[:, None]).sum(axis=0)
            on = h_config.budget(table, lvl) > 0
            row["absent"] = float(acc[0])
            for j in range(len(th) + 1):
                row[f"{table}_level_{j}"] = float(acc[j + 1]) if on else 0.0
        rows.append(row)
    return rows


def ladder_differences(p_config: Any, h_config: SafeTabHConfig) -> list[str]:
    """Where SafeTab-H's T3 ladder differs from SafeTab-P's (the 2020 files: 149970
    against 149971 below the state), in plain words."""
    out = []
    for lvl in h_config.levels():
        if p_config.rho(lvl) <= 0 or h_config.budget("t3", lvl) <= 0:
            continue  # one of the two publishes nothing here
        try:
            p = list(p_config.thresholds(lvl))
        except KeyError:
            continue
        h = list(h_config.thresholds("t3", lvl))
        if p != h:
            diffs = [f"{b:,} where SafeTab-P has {a:,}" for a, b in zip(p, h) if a != b]
            out.append(f"{lvl.key}: T3 {'; '.join(diffs)}")
    return out
