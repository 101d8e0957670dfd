"""One plan model: the derived figures of a plan, per level and for the nation (pure; no Streamlit).

Every page, the memo (PDF and HTML), the sidebar and ``python -m engine project`` take a
plan's figures from here, and show them with one formatting rule (`fmt`), so that a
figure reads the same wherever it is shown.

Per population group level (`LevelFigures`, `plan_levels`; SPEC §1-§2), with S = max(2, r) + 1
and gamma the stage-1 fraction:

* budget: rho (zCDP) or epsilon (pure DP) of the level; epsilon: the level's epsilon at delta
  (tight conversion of rho, SPEC §1) or the budget itself under pure DP;
* sigma2 of stage 1 and 2 (the geometric scale b under pure DP): S / (2 share rho), or
  S / (share epsilon) (SPEC §1); sigma: the standard deviation of one stage-2 cell's noise;
* moe_exact: the smallest m with P(|X| <= m) >= 95 % for the stage-2 noise (SPEC §2);
  moe_bound: floor(1.96 sigma), the design paper's figure;
* target: the planner's MOE target (persons; kept apart from config.json); meets: the MOE of
  the chosen method is at most the target;
* thresholds Theta_1..3 and the suppression threshold T (SPEC §1: released iff the noisy
  stage-2 total exceeds T; sub-state levels only, none when p = 0).

For the nation (`national_headline`, `geography_table`): the expected outcome of
`calculators.projection.project` read as a committee reads it, about the groups that exist
(at least one person): how many publish a total, a sex x age table, only a total, are
suppressed; how many empty groups publish a total; the share of persons covered.

Formatting (`fmt`, `fmt_change`): budgets to 4 significant digits, counts whole, shares to 3
significant digits (as percentages), other figures (errors, epsilons, scales) to 4
significant digits. Level names are the planner's ("USA Regional", `level_name`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal
from fractions import Fraction
from functools import lru_cache
from typing import Any

from calculators import budget, noise_family, suppression
from calculators.config import SafeTabConfig
from calculators.levels import ITERATION_LEVEL_NAMES, POPULATION_GROUP_LEVELS, PopulationGroupLevel

__all__ = [
    "BOUND", "BUDGET", "COUNT", "DEFAULT_DELTA", "EXACT", "GEOGRAPHIES", "HEADLINE", "LevelFigures",
    "NUMBER", "SHARE", "achieved_moe", "achieved_target", "epsilon_of", "fmt", "fmt_change", "geography_table",
    "level_moe", "level_name", "national_changes", "national_headline", "noise_of", "plan_levels",
    "rho_for_target", "round_sig", "sigmas", "stability_of", "threshold_for",
]

#: The two ways from a budget to a MOE (and back): the exact 95 % half-width of the noise,
#: or the design paper's floor(1.96 sigma).
EXACT, BOUND = "exact", "bound"
DEFAULT_DELTA = 1e-10
#: Significant digits of a budget (shown, and derived from a MOE target: `rho_for_target`).
BUDGET_DIGITS = 4
#: Significant digits of a share (shown as a percentage).
SHARE_DIGITS = 3
#: The kinds of figure `fmt` knows.
BUDGET, COUNT, SHARE, NUMBER = "budget", "count", "share", "number"
_DASH = "—"
_MINUS = "−"


# ----------------------------------------------------------------- names and basics
def level_name(level: PopulationGroupLevel) -> str:
    """The level as the planner names it: "USA Regional", "PR-TRACT Detailed"."""
    return f"{level.geo} {ITERATION_LEVEL_NAMES[level.iteration_level]}"


def stability_of(config: SafeTabConfig) -> int:
    """S = max(2, r) + 1 (SPEC §1 with h_r = h_e = 1): the stability of every population
    group level on spec files production accepts (its hierarchy check allows one
    iteration per code and slice, counted per tabulation class) in which each class has
    race and ethnicity iterations, as the 2020 files do. A run reports the engine's own
    S per level in its manifest (`ui.core.files.stability_differences`)."""
    return _stability(config.max_race_codes)


@lru_cache(maxsize=16)
def _stability(max_race_codes: int) -> int:
    # a pure function of r, asked for every level of every plan a page compares
    return int(budget.stability(max_race_codes))


def noise_of(config: SafeTabConfig) -> str:
    """The noise law of the configuration: "gaussian" (zCDP) or "geometric" (pure DP)."""
    return noise_family.family_of(config.privacy_defn)


@lru_cache(maxsize=8192)
def _moe(rho: float, S: int, gamma: float, exact: bool, stage: str, noise: str) -> int:
    # the exact MOE is a bisection of exact tail sums: cache it, pages ask for the same
    # (rho, S, gamma) many times per redraw and again on every redraw
    return int(budget.moe_for_rho(rho, S, gamma, stage=stage, exact=exact, noise=noise))


def level_moe(rho: float, S: int, gamma: float, method: str, stage: str = "stage2",
              noise: str = "gaussian") -> int | None:
    """MOE of one cell of a stage at level budget rho (epsilon under pure DP; None if
    it is 0: not tabulated): `budget.moe_for_rho` (SPEC §2), exact or design bound."""
    if not rho or rho <= 0:
        return None
    return _moe(float(rho), int(S), float(gamma), method == EXACT, stage, noise)


def achieved_moe(config: SafeTabConfig, level: PopulationGroupLevel, method: str) -> int | None:
    """The stage-2 cell MOE the level's budget gives (`level_moe`)."""
    return level_moe(config.rho(level), stability_of(config), config.gamma, method, noise=noise_of(config))


def achieved_target(config: SafeTabConfig, level: PopulationGroupLevel, method: str) -> int | None:
    """The MOE target a level gets from its budget: the MOE it achieves, but at least 1
    person (a target is a whole number of persons from 1, `urlcodec.target_problem`; a
    budget so large that its MOE is 0 meets a target of 1)."""
    m = achieved_moe(config, level, method)
    return None if m is None else max(m, 1)


@lru_cache(maxsize=4096)
def _rho_for_target(moe: int, S: int, gamma: float, method: str, noise: str) -> float:
    if method == EXACT:
        return float(budget.rho_level_for_exact_moe(int(moe), S, gamma, noise=noise))
    return float(budget.rho_level_for_moe(moe, S, gamma, noise=noise))


def round_sig(value: float, up: bool, digits: int = BUDGET_DIGITS) -> float:
    """The nearest number of `digits` significant digits at or above `value` (`up`) or at
    or below it (0.12267539 -> 0.1227 or 0.1226; 0.159 stays 0.159): exact decimal
    arithmetic, so the float returned reads back as those digits."""
    if value <= 0:
        return float(value)
    d = Decimal(repr(float(value)))
    step = Decimal(1).scaleb(d.adjusted() - digits + 1)
    return float((d / step).to_integral_value(rounding=ROUND_CEILING if up else ROUND_FLOOR) * step)


def round_up(value: float) -> float:
    """`value` rounded up to BUDGET_DIGITS significant digits (`round_sig`)."""
    return round_sig(value, up=True)


def rho_for_target(moe: int, S: int, gamma: float, method: str, noise: str = "gaussian") -> float:
    """Level rho (epsilon under pure DP) whose stage-2 cells have MOE `moe` (design-paper
    or exact inversion, SPEC §2), written with BUDGET_DIGITS significant digits (the 2020
    plan's budgets have 3 decimals: 2.134, 0.159, 0.008; the inversion's 0.15874 is
    written 0.1587), so that the plan and its config.json read exactly as they are used:
    the inversion's budget rounded down if that still gives MOE `moe` (the design bound's
    inversion sits at 1.96 sigma = moe exactly, where rounding up would give moe - 1),
    else rounded up (a larger budget never gives a larger MOE)."""
    exact = _rho_for_target(int(moe), int(S), float(gamma), method, noise)
    down = round_sig(exact, up=False)
    if down > 0 and level_moe(down, S, gamma, method, noise=noise) <= moe:
        return down
    return round_sig(exact, up=True)


@lru_cache(maxsize=4096)
def _epsilon(rho: float, delta: float, tight: bool) -> float:
    if tight:
        return float(budget.epsilon_tight(rho, delta))
    return float(budget.epsilon_classic(rho, delta))


def epsilon_of(budget_value: float, delta: float, privacy_defn: str = "zcdp", tight: bool = True) -> float:
    """The epsilon a budget gives (SPEC §1): under zCDP the (epsilon, delta)-DP
    conversion of rho at `delta` (tight Canonne-Kamath-Steinke, or classic
    rho + 2 sqrt(rho ln 1/delta)); under pure DP the budget is epsilon itself (delta 0)."""
    if privacy_defn == "puredp" or budget_value <= 0:
        return float(budget_value)
    return _epsilon(float(budget_value), float(delta), tight)


def sigmas(config: SafeTabConfig, level: PopulationGroupLevel) -> dict[str, Any]:
    """Noise scale of stage 1, stage 2 and TotalOnly groups (SPEC §1) as floats: sigma^2
    = S / (2 share rho) under zCDP, the geometric scale b = S / (share epsilon) under pure
    DP; the exact rational stage-2 scale the engine uses (for suppression thresholds);
    and "noise", the law ("gaussian" or "geometric") every calculator call needs."""
    return dict(_sigmas(config.rho(level), config.rho_exact(level), stability_of(config), config.gamma,
                        config.gamma_exact, noise_of(config)))


@lru_cache(maxsize=4096)
def _sigmas(rho: float, rho_exact: Fraction, S: int, g: float, g_exact: Fraction, nz: str) -> tuple:
    # exact rational arithmetic on every redraw is avoidable: cache by the level's numbers
    return (
        ("noise", nz),
        ("stage1", float(budget.noise_scale(rho, S, g, nz))),
        ("stage2", float(budget.noise_scale(rho, S, 1 - g, nz))),
        ("total_only", float(budget.noise_scale(rho, S, 1.0, nz))),
        ("stage2_exact", budget.noise_scale_exact(rho_exact, S, Fraction(1) - g_exact, nz)),
    )


def threshold_for(config: SafeTabConfig, level: PopulationGroupLevel, p: float | None = None) -> int | None:
    """The level's suppression threshold T (SPEC §1): `suppression.threshold` with the
    exact stage-2 sigma^2 (the geometric scale under pure DP), as the engine computes
    it; None if p = 0 (off)."""
    p = config.zero_suppression_chance if p is None else p
    s = sigmas(config, level)
    return _threshold(s["stage2_exact"], float(p), s["noise"])


@lru_cache(maxsize=1024)
def _threshold(stage2_exact: Fraction, p: float, noise: str) -> int | None:
    t = suppression.threshold(stage2_exact, p, noise=noise)
    return None if t is None else int(t)


def resolve_targets(config: SafeTabConfig, targets: Mapping[str, int], method: str) -> SafeTabConfig:
    """The plan with the budget of every tabulated level re-derived from its MOE target
    (`rho_for_target`, SPEC §2; e.g. after r or gamma changed); levels without a target
    keep their budget."""
    S, g, nz = stability_of(config), config.gamma, noise_of(config)
    changes: dict[str, float] = {}
    for lvl in POPULATION_GROUP_LEVELS:
        m = targets.get(lvl.key)
        if config.rho(lvl) > 0 and m is not None:
            changes[lvl.budget_key] = rho_for_target(int(m), S, g, method, nz)
    return config.updated(**changes) if changes else config


# ----------------------------------------------------------------- formatting
def _sig(x: float, digits: int, strip: bool = False) -> str:
    """`x` to `digits` significant digits, never in scientific notation for
    1e-6 <= |x| < 1e15 (1234.5 -> "1,235", 0.0001234 -> "0.0001234"), with thousands
    separators; `strip`: without trailing zeros after the point (0.1590 -> "0.159"), unless
    that would make a value that is not whole read as whole (29.996 -> "30.00"). A
    number between -1 and 1 never reads as ±1: digits are added until it does not
    (p = 0.99995 is "0.99995", not "1", another value)."""
    if x == 0:
        return "0"
    ax = abs(x)
    if not 1e-6 <= ax < 1e15:
        return f"{x:.{digits - 1}e}".replace("-", _MINUS)
    exp = math.floor(math.log10(ax))
    rounded = round(ax, digits - 1 - exp)
    if ax < 1 and rounded >= 1 and digits < 17:
        return _sig(x, digits + 1, strip)
    if rounded >= 10 ** (exp + 1):  # 9.9996 -> 10.00: one digit more to the left
        exp += 1
    decimals = max(digits - 1 - exp, 0)
    text = f"{rounded:,.{decimals}f}"
    if strip and "." in text:
        stripped = text.rstrip("0").rstrip(".")
        # a value that is not whole never reads as whole: 29.996 is "30.00", not "30"
        text = stripped if "." in stripped or float(x).is_integer() else text
    return (_MINUS if x < 0 else "") + text


def fmt(value: Any, kind: str = NUMBER) -> str:
    """A figure as every view shows it, by one rule: budgets (`BUDGET`) to 4 significant
    digits, counts (`COUNT`: groups, rows, persons, MOEs, thresholds) whole with thousands
    separators, shares (`SHARE`, a fraction) as a percentage to 3 significant digits, other
    figures (`NUMBER`: errors, epsilons, scales) to 4 significant digits, trailing zeros
    dropped (0.159, not 0.1590; a fraction never reads as 1). Missing values
    (None, NaN) are a dash; a budget of 0 is "0" (off); infinities are "∞"."""
    if value is None or type(value).__name__ == "NAType" or (isinstance(value, float) and math.isnan(value)):
        return _DASH
    if isinstance(value, bool):
        return "yes" if value else "no"
    if hasattr(value, "item") and not isinstance(value, str):  # numpy scalars
        return fmt(value.item(), kind)
    if not isinstance(value, int | float):
        return str(value)
    x = float(value)
    if math.isnan(x):
        return _DASH
    if math.isinf(x):
        return "∞" if x > 0 else _MINUS + "∞"
    if kind == COUNT:
        n = int(round(x))
        return f"{n:,}".replace("-", _MINUS)
    if kind == SHARE:
        return _sig(100 * x, SHARE_DIGITS) + " %"
    return _sig(x, BUDGET_DIGITS, strip=True)


def fmt_change(value: Any, kind: str = NUMBER) -> str:
    """A change from the reference by the rule of `fmt`, signed: "+1,234", "−2,312,345",
    "+1.23 points" (a share's change, in percentage points), "0" for no change, a dash
    when either side is missing."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return _DASH
    x = float(value)
    if kind == COUNT:
        x = float(round(x))
    if x == 0:
        return "0" if kind != SHARE else "0 points"
    sign = "+" if x > 0 else _MINUS
    if kind == SHARE:
        return sign + _sig(abs(100 * x), SHARE_DIGITS) + " points"
    return sign + fmt(abs(x), kind)


# ----------------------------------------------------------------- per level
@dataclass(frozen=True)
class LevelFigures:
    """The derived figures of one population group level of a plan (module docstring).
    Everything but `budget` and `target` is None for a level that is not tabulated."""

    level: PopulationGroupLevel
    name: str
    on: bool
    budget: float
    epsilon: float | None
    sigma2_stage1: float | None
    sigma2_stage2: float | None
    sigma: float | None
    moe_exact: int | None
    moe_bound: int | None
    target: int | None
    meets: bool | None
    thresholds: tuple[int, int, int] | None
    suppression_threshold: int | None

    def as_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


#: How the views name each figure of `LevelFigures`, and how `fmt` shows it.
LEVEL_FIGURES: dict[str, tuple[str, str]] = {
    "budget": ("Budget ρ / ε", BUDGET),
    "epsilon": ("ε of the level", NUMBER),
    "sigma": ("σ of a cell", NUMBER),
    "moe_exact": ("MOE (exact)", COUNT),
    "moe_bound": ("⌊1.96σ⌋", COUNT),
    "target": ("MOE target", COUNT),
    "suppression_threshold": ("Suppression T", COUNT),
}


def level_figures(config: SafeTabConfig, level: PopulationGroupLevel, targets: Mapping[str, int] | None = None,
                  method: str = EXACT, delta: float = DEFAULT_DELTA) -> LevelFigures:
    """The derived figures of one level (module docstring). A level is on when its budget
    is positive and its run (US or PR) is on."""
    rho = float(config.rho(level))
    target = (targets or {}).get(level.key)
    target = None if target is None else int(target)
    on = rho > 0 and config.runs_geo(level)
    if not on:
        return LevelFigures(level, level_name(level), False, rho if config.runs_geo(level) else 0.0, None, None,
                            None, None, None, None, target, None, None, None)
    S, g, nz = stability_of(config), config.gamma, noise_of(config)
    s = sigmas(config, level)
    m_exact = level_moe(rho, S, g, EXACT, noise=nz)
    m_bound = level_moe(rho, S, g, BOUND, noise=nz)
    achieved = m_exact if method == EXACT else m_bound
    T = None
    if not level.is_state_or_above and config.zero_suppression_chance > 0:
        T = threshold_for(config, level)
    return LevelFigures(
        level, level_name(level), True, rho, epsilon_of(rho, delta, config.privacy_defn), s["stage1"], s["stage2"],
        math.sqrt(float(noise_family.variance_parameter(s["stage2"], nz))), m_exact, m_bound, target,
        None if target is None else achieved <= target, tuple(int(t) for t in config.thresholds(level)), T)


def plan_levels(config: SafeTabConfig, targets: Mapping[str, int] | None = None, method: str = EXACT,
                delta: float = DEFAULT_DELTA, levels: Iterable[PopulationGroupLevel] | None = None
                ) -> list[LevelFigures]:
    """`level_figures` of every population group level (or of `levels`), in config order."""
    return [level_figures(config, lvl, targets, method, delta) for lvl in (levels or POPULATION_GROUP_LEVELS)]


def level_changes(reference: Sequence[LevelFigures], plan: Sequence[LevelFigures]) -> list[dict[str, Any]]:
    """Per level, each numeric figure of `LEVEL_FIGURES` of the plan, its reference value and
    the change (plan - reference; None where either is missing)."""
    ref = {f.level: f for f in reference}
    out = []
    for f in plan:
        r = ref.get(f.level)
        row: dict[str, Any] = {"level": f.level, "name": f.name}
        for key in LEVEL_FIGURES:
            a, b = getattr(f, key), None if r is None else getattr(r, key)
            row[key], row[f"{key}_reference"] = a, b
            row[f"{key}_change"] = None if a is None or b is None else a - b
        out.append(row)
    return out


# ----------------------------------------------------------------- the nation
#: Geographies of the compact national table: name -> the level geographies it gathers.
GEOGRAPHIES: dict[str, tuple[str, ...]] = {
    "Nation": ("USA",), "State": ("STATE",), "County": ("COUNTY",), "Tract": ("TRACT",), "Place": ("PLACE",),
    "AIANNH": ("AIANNH",), "Puerto Rico": ("PR-STATE", "PR-COUNTY", "PR-TRACT", "PR-PLACE"),
}

#: The national headline figures (`national_headline`): key -> (name, kind of `fmt`).
HEADLINE: dict[str, tuple[str, str]] = {
    "occupied": ("Groups with at least one person", COUNT),
    "published": ("publish a total", COUNT),
    "published_share": ("share that publish a total", SHARE),
    "with_table": ("publish a sex × age table", COUNT),
    "with_table_share": ("share with a sex × age table", SHARE),
    "age4": ("sex × age4 table", COUNT),
    "age9": ("sex × age9 table", COUNT),
    "age23": ("sex × age23 table", COUNT),
    "total_only": ("publish a total only (not suppressed)", COUNT),
    "suppressed": ("suppressed", COUNT),
    "suppressed_share": ("share suppressed", SHARE),
    "empty_published": ("groups with no person that publish a total", COUNT),
    "empty_published_share": ("share of published totals that belong to empty groups", SHARE),
    "persons_published_share": ("share of persons whose group publishes a total", SHARE),
    "persons_with_table_share": ("share of persons whose group has a table", SHARE),
}


def _headline_of(rows: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """The headline figures (`HEADLINE`) of projection rows added up (one level, one
    geography or the nation); persons' shares weighted by each row's persons."""
    def total(key: str) -> float:
        return float(sum(r[key] for r in rows))

    occ = total("occupied")
    pub, tab, sup, emp = (total(k) for k in ("occupied_published", "occupied_with_table", "occupied_suppressed",
                                              "empty_published"))
    out = {"occupied": occ, "published": pub, "with_table": tab, "suppressed": sup, "total_only": pub - tab,
           "age4": total("occupied_age4"), "age9": total("occupied_age9"), "age23": total("occupied_age23"),
           "empty_published": emp}
    out["published_share"] = pub / occ if occ else math.nan
    out["with_table_share"] = tab / occ if occ else math.nan
    out["suppressed_share"] = sup / occ if occ else math.nan
    out["empty_published_share"] = emp / (pub + emp) if pub + emp else math.nan
    for share in ("persons_published_share", "persons_with_table_share"):
        weights = [r.get("_persons", 1.0) for r in rows if not math.isnan(r[share])]
        values = [r[share] for r in rows if not math.isnan(r[share])]
        out[share] = sum(w * v for w, v in zip(weights, values)) / sum(weights) if sum(weights) else math.nan
    return {k: out[k] for k in HEADLINE}


def national_headline(projection: Any) -> dict[str, float]:
    """What the plan does to the groups that exist, over every level the projection holds
    (`calculators.projection.Projection`): the `HEADLINE` figures, expected over the noise.
    The persons' shares are those of the projection's TOTAL row (exact)."""
    out = _headline_of(list(projection.rows)) if projection.rows else {k: math.nan for k in HEADLINE}
    for share in ("persons_published_share", "persons_with_table_share"):
        out[share] = projection.total[share]
    return out


def geography_table(projection: Any) -> list[dict[str, Any]]:
    """The headline per geography (`GEOGRAPHIES`, those the projection holds) and for the
    nation as a whole ("All levels"): one dict per row, key "geography" and the `HEADLINE`
    figures. A geography's persons' shares weight its levels by their persons."""
    persons = _level_persons(projection)
    out = []
    for name, geos in GEOGRAPHIES.items():
        rows = [{**r, "_persons": persons.get((r["geo"], r["iteration_level"]), 1.0)}
                for r in projection.rows if r["geo"] in geos]
        if rows:
            out.append({"geography": name, **_headline_of(rows)})
    if projection.rows:
        out.append({"geography": "All levels", **national_headline(projection)})
    return out


def _level_persons(projection: Any) -> dict[tuple[str, int], float]:
    """Persons (sum of group sizes) of each level of the projection's profile."""
    out = {}
    for lvl, lp in projection.profile.levels.items():
        out[(lvl.geo, lvl.iteration_level)] = float(lp.adaptive.persons + lp.total_only.persons)
    return out


def national_changes(reference: Mapping[str, float], plan: Mapping[str, float]) -> dict[str, float]:
    """The change of each headline figure from the reference (plan - reference)."""
    return {k: plan[k] - reference[k] for k in HEADLINE if k in plan and k in reference}


def largest_changes(reference: Mapping[str, float], plan: Mapping[str, float], limit: int = 3) -> list[str]:
    """The headline counts that changed most from the reference, largest first, as
    phrases ("−2,312,345 suppressed"); shares are left out (their counts carry them)."""
    ch = [(abs(v), k, v) for k, v in national_changes(reference, plan).items()
          if HEADLINE[k][1] == COUNT and round(v) != 0]
    ch.sort(key=lambda t: -t[0])
    return [f"{fmt_change(v, COUNT)} {HEADLINE[k][0]}" for _a, k, v in ch[:limit]]
