"""What each lesson shows, computed live by `calculators` (pure; no Streamlit).

Every worked example, every "Try this" result, every answer revealed on request and
every "What you learned" line is built here from the numbers of a plan (a
`SafeTabConfig`) and the lesson's own controls, so a page only lays them out and a test
can check each figure against the calculators. The formulas are SPEC §1 (stability
S = max(2, r) + 1, sigma2 = S / (2 share rho), the two stages, suppression) and §2 (the
exact 95 % MOE, the design paper's floor(1.96 sigma)).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from calculators import adaptive, budget, discrete_gaussian, suppression
from calculators.config import SafeTabConfig
from calculators.levels import PopulationGroupLevel

#: The level of the worked examples of lessons 1, 3 and 5: "a detailed group in one tract".
TRACT_DETAILED = PopulationGroupLevel("TRACT", 2)
#: The level of lesson 4's example: a county's Detailed groups (thresholds 971 / 4,971 / 19,971 in 2020).
COUNTY_DETAILED = PopulationGroupLevel("COUNTY", 2)
#: Budgets a learner can try in lesson 1 (the 2020 ones are 0.008, 0.159 and 2.134).
RHO_CHOICES = (0.002, 0.008, 0.02, 0.05, 0.1, 0.159, 0.3, 0.5, 1.0, 2.134, 5.0)
#: What the 95 % in "MOE" means.
CONFIDENCE = 0.95
TABLE_NAMES = {0: "a total only", 1: "a sex × age table with 4 age groups",
               2: "a sex × age table with 9 age groups", 3: "a sex × age table with 23 age groups"}


def num(x: float, digits: int = 4) -> str:
    """A number as a trainer reads it out: whole numbers with separators, others to
    `digits` significant digits."""
    x = float(x)
    if x.is_integer() and abs(x) < 1e15:
        return f"{int(x):,}"
    return f"{x:.{digits}g}"


def pct(p: float) -> str:
    """A probability as a percentage that never reads 0 % or 100 % when it is not."""
    v = 100 * float(p)
    if 0 < v < 0.01:
        return "under 0.01 %"
    if 99.99 < v < 100:
        return "over 99.99 %"
    return f"{v:.3g} %" if v < 10 or v > 99 else f"{v:.1f} %"


@dataclass(frozen=True)
class Answer:
    """A question and its answer: `values` are the figures (for tests), `text` says them."""

    question: str
    text: str
    values: dict[str, float] = field(default_factory=dict)


def _level_name(level: PopulationGroupLevel) -> str:
    return f"{level.geo} {'Detailed' if level.iteration_level == 2 else 'Regional'}"


def _budget(cfg: SafeTabConfig, level: PopulationGroupLevel, fallback: PopulationGroupLevel | None = None) -> float:
    """The level's budget; a level the plan does not tabulate (0) borrows another's."""
    rho = cfg.rho(level)
    if rho <= 0 and fallback is not None:
        rho = cfg.rho(fallback)
    if rho <= 0:
        rho = max((cfg.rho(lvl) for lvl in cfg.tabulated_levels()), default=0.159)
    return rho


# ------------------------------------------------------------------ lesson 1
@dataclass(frozen=True)
class Noise:
    """One published count of a group of n persons (SPEC §1 stage 2, §2)."""

    n: int
    rho: float
    gamma: float
    r: int
    S: int
    sigma2: float
    sigma: float
    moe: int
    bound: int
    coverage: float
    p_exact: float

    @property
    def low(self) -> int:
        return self.n - self.moe

    @property
    def high(self) -> int:
        return self.n + self.moe


def noise(rho: float, gamma: float, r: int, n: int) -> Noise:
    """The stage-2 noise of one count: sigma2 = S / (2 (1 - gamma) rho), its exact 95 % MOE
    (smallest m with P(|X| <= m) >= 0.95), the design bound floor(1.96 sigma), the exact
    coverage P(|X| <= MOE) and P(X = 0) (SPEC §1, §2)."""
    S = int(budget.stability(r))
    s2 = float(budget.sigma2_stage2(rho, gamma, S))
    moe = int(budget.moe_exact(s2, CONFIDENCE))
    cover = float(discrete_gaussian.cdf(moe, s2) - discrete_gaussian.cdf(-moe - 1, s2))
    return Noise(int(n), float(rho), float(gamma), int(r), S, s2, math.sqrt(s2), moe, int(budget.moe_bound(s2)),
                 cover, float(discrete_gaussian.pmf(0, s2)))


def noise_pmf(ex: Noise, width: float = 4.0) -> tuple[list[int], list[float]]:
    """The published count's distribution n + X for |X| <= `width` sigma (the chart)."""
    half = max(int(math.ceil(width * ex.sigma)), ex.moe + 1)
    ks = list(range(-half, half + 1))
    probs = [float(p) for p in discrete_gaussian.pmf(ks, ex.sigma2)]
    return [ex.n + k for k in ks], probs


def noise_example(cfg: SafeTabConfig, n: int = 40) -> Noise:
    """Lesson 1's worked example: a Detailed group of n persons in one tract, on the plan."""
    return noise(_budget(cfg, TRACT_DETAILED), cfg.gamma, cfg.max_race_codes, n)


def noise_sentences(ex: Noise) -> list[str]:
    return [
        f"The tract Detailed level spends ρ = {num(ex.rho)}; a share 1 − γ = {num(1 - ex.gamma)} of it goes to the "
        f"published counts, and each person can be in up to S = {ex.S} groups of the level.",
        f"So the noise of one count has σ² = S / (2 (1 − γ) ρ) = {ex.S} / (2 × {num(1 - ex.gamma)} × {num(ex.rho)}) "
        f"= **{num(ex.sigma2)}** (σ = {num(ex.sigma, 3)} persons).",
        f"Its exact 95 % MOE is **{ex.moe} persons**: P(|noise| ≤ {ex.moe}) = {pct(ex.coverage)} (the design "
        f"paper's ⌊1.96σ⌋ gives {ex.bound}).",
        f"A group of **{ex.n} persons** is published as {ex.n} + noise: 95 % of the time between **{ex.low} and "
        f"{ex.high}**, and exactly {ex.n} only {pct(ex.p_exact)} of the time.",
    ]


def noise_question(ex: Noise, factor: float = 4.0) -> Answer:
    """What the MOE becomes with `factor` times the budget (about 1/sqrt(factor) of it)."""
    other = noise(ex.rho * factor, ex.gamma, ex.r, ex.n)
    q = (f"The tract budget is multiplied by {num(factor)} (ρ = {num(ex.rho * factor)}). What is the exact 95 % MOE "
         "of one published count now?")
    text = (f"**{other.moe} persons** (σ² = {num(other.sigma2)}), against {ex.moe} at ρ = {num(ex.rho)}: "
            f"{num(factor)} times the budget divides σ by √{num(factor)} = {num(math.sqrt(factor), 3)}, so the MOE "
            f"shrinks to about {num(ex.moe / math.sqrt(factor), 3)}; the exact MOE is a whole number of persons.")
    return Answer(q, text, {"moe": other.moe, "sigma2": other.sigma2, "rho": ex.rho * factor})


def noise_learned(ex: Noise) -> list[str]:
    return [f"Every published count is the true count plus discrete Gaussian noise with σ² = S / (2 (1 − γ) ρ) "
            f"({num(ex.sigma2)} here).",
            f"The exact 95 % MOE is the smallest m with P(|noise| ≤ m) ≥ 95 %: {ex.moe} persons at ρ = {num(ex.rho)}.",
            "A larger ρ means less noise and a smaller MOE, but less privacy: 4 times the ρ halves the MOE."]


# ------------------------------------------------------------------ lesson 2
@dataclass(frozen=True)
class Budgets:
    """The privacy accounting of a plan (SPEC §1): per level, per run, release, bounded."""

    levels: list[tuple[str, float, float]]  # (level, rho, epsilon of that level alone at delta)
    us: float
    pr: float
    release: float
    release_bounded: float
    eps_tight: float
    eps_classic: float
    eps_bounded: float
    delta: float
    us_terms: list[float]
    pr_terms: list[float]


def budgets(cfg: SafeTabConfig, delta: float) -> Budgets:
    """Sequential composition over the levels of each run (sum), the release = max(US,
    PR) (disjoint persons), bounded neighbours = 2x, and epsilon at delta (tight and
    classic conversions) (SPEC §1)."""
    t = budget.plan_totals(cfg)
    levels = [(_level_name(lvl), cfg.rho(lvl), float(budget.epsilon_tight(cfg.rho(lvl), delta)))
              for lvl in cfg.tabulated_levels()]
    us_terms = [cfg.rho(lvl) for lvl in cfg.tabulated_levels() if not lvl.is_pr]
    pr_terms = [cfg.rho(lvl) for lvl in cfg.tabulated_levels() if lvl.is_pr]
    return Budgets(levels, t.us, t.pr, t.release, t.release_bounded,
                   float(budget.epsilon_tight(t.release, delta)), float(budget.epsilon_classic(t.release, delta)),
                   float(budget.epsilon_tight(t.release_bounded, delta)), float(delta), us_terms, pr_terms)


def _sum_text(terms: list[float]) -> str:
    shown = " + ".join(num(x) for x in terms[:6])
    return shown + (f" + … ({len(terms)} levels)" if len(terms) > 6 else "")


def budget_sentences(b: Budgets) -> list[str]:
    lines = []
    if b.us_terms:
        lines.append(f"The US run spends the sum of its levels' budgets (sequential composition): ρ_US = "
                     f"{_sum_text(b.us_terms)} = **{num(b.us)}**.")
    if b.pr_terms:
        lines.append(f"Puerto Rico's run covers other persons: ρ_PR = {_sum_text(b.pr_terms)} = {num(b.pr)}, and "
                     f"the release costs the larger of the two, **ρ = {num(b.release)}**.")
    lines.append(f"At δ = {b.delta:.0e} that is **ε = {num(b.eps_tight, 3)}** (tight conversion; the classic "
                 f"ρ + 2√(ρ ln 1/δ) gives {num(b.eps_classic, 3)}).")
    lines.append(f"With bounded neighbours (one person changed rather than added or removed) the cost doubles: "
                 f"ρ = {num(b.release_bounded)}, ε = {num(b.eps_bounded, 3)}.")
    return lines


def budget_question(b: Budgets) -> Answer:
    q = (f"The committee is told the release costs ε = {num(b.eps_tight, 3)} at δ = {b.delta:.0e}. Under bounded "
         "neighbours, what are its ρ and its ε?")
    text = (f"**ρ = {num(b.release_bounded)}** (twice {num(b.release)}) and **ε = {num(b.eps_bounded, 3)}** at the "
            f"same δ: ε grows less than twice ({num(b.eps_bounded / b.eps_tight, 3)} times) because ε grows like √ρ.")
    return Answer(q, text, {"rho_bounded": b.release_bounded, "eps_bounded": b.eps_bounded})


def budget_learned(b: Budgets) -> list[str]:
    return [f"Each population group level has its own ρ; the levels of a run add up (US: {num(b.us)}).",
            f"US and Puerto Rico persons are disjoint, so the release costs max(US, PR) = {num(b.release)}.",
            f"ρ converts to ε at a chosen δ (ε = {num(b.eps_tight, 3)} here); bounded neighbours double ρ."]


# ------------------------------------------------------------------ lesson 3
@dataclass(frozen=True)
class Race:
    """One count at race multiplicity r (SPEC §1: S = max(2, r) + 1)."""

    r: int
    S: int
    rho: float
    sigma2: float
    moe: int
    rho_same_moe: float  # the smallest budget that gives this r the MOE the plan's r has
    plan_moe: int  # the MOE at the plan's r


def race(cfg: SafeTabConfig, r: int) -> Race:
    """The tract Detailed count at the plan's ρ and γ but race multiplicity r, and the ρ
    that would keep the plan's exact MOE at that r (SPEC §1, §2)."""
    rho = _budget(cfg, TRACT_DETAILED)
    S = int(budget.stability(r))
    s2 = float(budget.sigma2_stage2(rho, cfg.gamma, S))
    base_moe = int(budget.moe_exact(budget.sigma2_stage2(rho, cfg.gamma, int(budget.stability(cfg.max_race_codes)))))
    need = float(budget.rho_level_for_exact_moe(max(base_moe, 1), S, cfg.gamma))
    return Race(int(r), S, rho, s2, int(budget.moe_exact(s2)), need, base_moe)


def race_rows(cfg: SafeTabConfig) -> list[Race]:
    return [race(cfg, r) for r in range(1, 9)]


def race_sentences(cfg: SafeTabConfig) -> list[str]:
    now = race(cfg, cfg.max_race_codes)
    return [
        f"A person may report several race codes; the plan counts up to r = **{now.r}** of them. Someone who "
        f"reports White, Black and Asian is counted in \"White alone or in combination\", \"Black alone or in "
        "combination\", \"Asian alone or in combination\" and more groups of the same level.",
        f"So one person can change up to S = max(2, r) + 1 = **{now.S}** counts of a level (the +1 is the "
        "ethnicity group). Every count's noise must hide all of them at once: σ² = S / (2 (1 − γ) ρ) grows with S.",
        f"At the tract Detailed budget ρ = {num(now.rho)}: σ² = {num(now.sigma2)}, exact MOE **{now.moe} persons**.",
    ]


def race_question(cfg: SafeTabConfig) -> Answer:
    r = 3 if cfg.max_race_codes != 3 else 8
    other, now = race(cfg, r), race(cfg, cfg.max_race_codes)
    q = (f"The plan counts up to r = {now.r} race codes. With r = {r} and the same budget, what are S and the exact "
         "MOE of a tract Detailed count?")
    text = (f"**S = {other.S}** and an exact MOE of **{other.moe} persons** (against S = {now.S}, {now.moe} persons). "
            f"To keep {now.moe} persons at r = {r}, ρ = {num(other.rho_same_moe)} would do (at r = {now.r}, the "
            f"smallest is {num(now.rho_same_moe)}; the plan spends {num(now.rho)}).")
    return Answer(q, text, {"S": other.S, "moe": other.moe, "r": r})


def race_learned(cfg: SafeTabConfig) -> list[str]:
    now = race(cfg, cfg.max_race_codes)
    return ["r is how many race codes of a person are counted; S = max(2, r) + 1 is how many counts of a level "
            "one person can change.",
            f"σ² is proportional to S: at r = {now.r}, S = {now.S} and the tract MOE is {now.moe} persons.",
            "A smaller r needs less budget for the same MOE, but counts fewer race codes of multiracial persons."]


# ------------------------------------------------------------------ lesson 4
@dataclass(frozen=True)
class Adaptive:
    """A group of n persons at a level, through stage 1 (SPEC §1)."""

    n: int
    level: str
    rho: float
    gamma: float
    S: int
    sigma2_1: float
    sigma2_2: float
    moe_1: int
    moe_2: int
    thresholds: tuple[int, int, int]
    probs: tuple[float, float, float, float]

    @property
    def likeliest(self) -> int:
        return max(range(4), key=lambda j: self.probs[j])

    @property
    def table_chance(self) -> float:
        return 1.0 - self.probs[0]


def adaptive_group(cfg: SafeTabConfig, n: int, gamma: float | None = None,
                   level: PopulationGroupLevel = COUNTY_DETAILED) -> Adaptive:
    """Stage 1 of a group of true size n: sigma2_1 = S / (2 gamma rho), P(stat level = j)
    against the plan's thresholds (`adaptive.stat_level_probabilities`), and the MOEs of
    a stage-1 total and a stage-2 cell (SPEC §1, §2)."""
    g = cfg.gamma if gamma is None else float(gamma)
    rho = _budget(cfg, level)
    S = int(budget.stability(cfg.max_race_codes))
    s1 = float(budget.sigma2_stage1(rho, g, S))
    s2 = float(budget.sigma2_stage2(rho, g, S))
    th = cfg.thresholds(level)
    p = adaptive.stat_level_probabilities(n, th, s1)
    return Adaptive(int(n), _level_name(level), rho, g, S, s1, s2, int(budget.moe_exact(s1)),
                    int(budget.moe_exact(s2)), th, tuple(float(x) for x in p))


def adaptive_sentences(ex: Adaptive) -> list[str]:
    t1, t2, t3 = (num(t) for t in ex.thresholds)
    return [
        f"Stage 1 spends a share γ = {num(ex.gamma)} of the {ex.level} budget ρ = {num(ex.rho)}: a noisy total with "
        f"σ² = S / (2 γ ρ) = **{num(ex.sigma2_1)}** (95 % MOE {ex.moe_1} persons). It is never published.",
        f"It is compared with the thresholds Θ₁ = {t1}, Θ₂ = {t2}, Θ₃ = {t3}: below Θ₁ a total only; from Θ₁ a "
        "sex × age table with 4 age groups; from Θ₂ with 9; from Θ₃ with 23.",
        f"A group of **{num(ex.n)} persons** gets {TABLE_NAMES[ex.likeliest]} most often "
        f"({pct(ex.probs[ex.likeliest])}); it gets a table of any kind {pct(ex.table_chance)} of the time.",
        f"Stage 2 then spends the rest, (1 − γ) ρ: every published cell has σ² = {num(ex.sigma2_2)} "
        f"(MOE {ex.moe_2} persons), whichever table the group got.",
    ]


def adaptive_question(cfg: SafeTabConfig) -> Answer:
    th = cfg.thresholds(COUNTY_DETAILED)
    n = max(th[0] - 1, 0)
    ex = adaptive_group(cfg, n)
    q = (f"A county Detailed group has {num(n)} persons, one short of Θ₁ = {num(th[0])}. What is the chance that it "
         "still gets a sex × age table?")
    sd = num(math.sqrt(ex.sigma2_1), 3)
    text = (f"**{pct(ex.table_chance)}**: its stage-1 total is {num(n)} + noise (σ = {sd}), "
            f"and the noise lifts it to Θ₁ or more about as often as not. Stage 1 decides on a noisy count, so "
            "groups near a threshold may land on either side.")
    return Answer(q, text, {"table_chance": ex.table_chance, "n": n})


def adaptive_learned(ex: Adaptive) -> list[str]:
    return [f"γ splits each level's ρ: γ = {num(ex.gamma)} for stage 1's unpublished total, the rest for what is "
            "published.",
            f"The noisy stage-1 total against Θ₁ ≤ Θ₂ ≤ Θ₃ ({', '.join(num(t) for t in ex.thresholds)}) picks a "
            "total only or a table of 4, 9 or 23 age groups.",
            "Bigger groups get more detail; near a threshold the choice is a matter of chance."]


# ------------------------------------------------------------------ lesson 5
@dataclass(frozen=True)
class Suppression:
    """A total-only group of n persons at a sub-state level (SPEC §1 post-processing)."""

    n: int
    p: float
    sigma2: float
    T: int | None
    suppressed: float
    suppressed_zero: float
    bias: float
    released_mean: float


def suppressed(cfg: SafeTabConfig, n: int, p: float | None = None) -> Suppression:
    """T = smallest k with CDF_stage2(k) >= p, P(suppressed) = CDF(T - n), the bias of a
    released count E[X | n + X > T] (`calculators.suppression`; SPEC §1)."""
    pp = cfg.suppression_chance if p is None else float(p)
    rho = _budget(cfg, TRACT_DETAILED)
    s2 = float(budget.sigma2_stage2(rho, cfg.gamma, int(budget.stability(cfg.max_race_codes))))
    T = suppression.threshold(s2, pp)
    T = None if T is None else int(T)
    return Suppression(int(n), pp, s2, T, float(suppression.suppression_probability(n, T, s2)),
                       float(suppression.suppression_probability(0, T, s2)),
                       float(suppression.release_bias(n, T, s2)),
                       float(suppression.expected_released_value(n, T, s2)))


def suppression_curve(ex: Suppression, points: int = 121) -> tuple[list[int], list[float]]:
    """P(suppressed) against the true count n (the chart)."""
    if ex.T is None:
        return [0, max(ex.n, 1)], [0.0, 0.0]
    c = suppression.curves(ex.T, ex.sigma2, points=points)
    return [int(v) for v in c["n"]], [float(v) for v in c["suppression_probability"]]


def suppression_sentences(ex: Suppression) -> list[str]:
    if ex.T is None:
        return ["Suppression is off in this plan (p = 0): every total is published, however small. Try p = 0.9999, "
                "the 2020 value, below."]
    return [
        f"In a tract, a Detailed group that only gets a total has it hidden unless its noisy value is above T. "
        f"With p = {num(ex.p, 6)}, T is the smallest count with P(noise ≤ T) ≥ p: **T = {ex.T}** (σ² = "
        f"{num(ex.sigma2)}).",
        f"So a group with nobody in it is hidden {pct(ex.suppressed_zero)} of the time: the release never says "
        "which groups are empty.",
        f"A group of **{ex.n} persons** is hidden {pct(ex.suppressed)} of the time. When it does get through, its "
        f"count averages **{num(ex.released_mean, 3)}**, not {ex.n}: only the draws with large noise pass, so "
        f"released small counts are biased upward by {num(ex.bias, 3)} persons on average.",
    ]


def suppression_question(cfg: SafeTabConfig) -> Answer:
    base = suppressed(cfg, 0)
    if base.T is None:
        base = suppressed(cfg, 0, 0.9999)
    ex = suppressed(cfg, base.T, base.p)
    q = (f"A tract group that gets a total only has exactly T = {base.T} persons. What is the chance that its total "
         "is hidden?")
    text = (f"**{pct(ex.suppressed)}**: it is hidden when its noise is 0 or less, P(X ≤ 0) = {pct(ex.suppressed)} "
            "(a little over a half, since the noise is 0 with some chance). Even a group as large as T is hidden "
            "about half the time.")
    return Answer(q, text, {"suppressed": ex.suppressed, "T": float(base.T)})


def suppression_learned(ex: Suppression) -> list[str]:
    t = "no threshold (suppression off)" if ex.T is None else f"T = {ex.T}"
    return [f"Only totals without a table at sub-state levels can be suppressed; p = {num(ex.p, 6)} gives {t}.",
            "A true zero is hidden with probability at least p, so no one can tell which groups are empty.",
            "Suppression costs no budget, but what is published of small groups is biased upward."]


# ------------------------------------------------------------------ what the planner would get
def try_changes(cfg: SafeTabConfig, **changes: Any) -> dict[str, Any]:
    """The config.json keys that a lesson's tried values change (empty: the plan already
    has them); what "Use this in the planner" would apply."""
    current = cfg.to_dict()
    return {k: v for k, v in changes.items() if current.get(k) != v}
