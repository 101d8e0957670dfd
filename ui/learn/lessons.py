"""The lesson path "Learn SafeTab-P in an hour" (pure; no Streamlit): the six lessons in
order, each with its address, its goal in one sentence, the full page it leads to and
the glossary terms it uses. What each lesson computes is in `ui.learn.content`."""

from __future__ import annotations

from typing import NamedTuple


class Lesson(NamedTuple):
    number: int
    url_path: str
    title: str
    goal: str
    script: str
    full_page: str
    full_label: str
    terms: tuple[str, ...]
    minutes: int

    @property
    def nav_title(self) -> str:
        return f"{self.number}. {self.title}"


LESSONS: tuple[Lesson, ...] = (
    Lesson(1, "learn_noise", "One count and its noise",
           "See how one published count gets its noise, and read its 95 % margin of error (MOE) from the budget ρ.",
           "app_pages/learn/noise.py", "app_pages/safetab/budget.py", "Budget and MOE planner",
           ("ρ (rho), zCDP", "Discrete Gaussian noise (σ²)", "MOE (95% margin of error)",
            "Exact MOE and the ⌊1.96σ⌋ bound"), 10),
    Lesson(2, "learn_budgets", "Budgets over levels",
           "Add up the budgets of the population group levels into what the whole release costs, in ρ and in ε.",
           "app_pages/learn/budgets.py", "app_pages/safetab/overview.py", "Overview (privacy accounting)",
           ("Population group level", "Sequential composition", "ε (epsilon)", "δ (delta)",
            "Bounded and unbounded neighbours"), 10),
    Lesson(3, "learn_race", "Race multiplicity r and S",
           "See why a person who reports several races makes every count noisier, through the stability S.",
           "app_pages/learn/race.py", "app_pages/safetab/budget.py", "Budget and MOE planner (race multiplicity)",
           ("Race multiplicity r", "Stability S", "Population group"), 8),
    Lesson(4, "learn_adaptive", "Adaptive tables",
           "Follow one group through stage 1 to the table it gets: a total only, or sex × age with 4, 9 or 23 "
           "age groups.",
           "app_pages/learn/adaptive.py", "app_pages/safetab/adaptive.py", "Adaptive tables",
           ("Stage 1", "γ (gamma)", "Thresholds Θ₁ ≤ Θ₂ ≤ Θ₃ and stat level", "Stage 2"), 12),
    Lesson(5, "learn_suppression", "Suppression",
           "See which small totals are hidden (threshold T from the chance p), and why what is published is "
           "biased upward.",
           "app_pages/learn/suppression.py", "app_pages/safetab/suppression.py", "Suppression",
           ("Suppression, p and T", "T1 and T2", "Post-processing"), 10),
    Lesson(6, "learn_national", "The national trade-off",
           "Read a plan's expected national outcome, its change from the 2020 plan, and take it to the decision "
           "memo.",
           "app_pages/learn/national.py", "app_pages/committee/memo.py", "Decision memo",
           ("National outcome (projection)", "Group-size profile", "Privacy budget"), 10),
)

#: The glossary page (links open it on one term, `ui.core.glossary.link_params`).
GLOSSARY_PAGE = "app_pages/safetab/glossary.py"


def by_number(number: int) -> Lesson:
    return LESSONS[number - 1]


def neighbours(lesson: Lesson) -> tuple[Lesson | None, Lesson | None]:
    """The previous and next lessons (None at either end)."""
    i = lesson.number - 1
    return (LESSONS[i - 1] if i > 0 else None, LESSONS[i + 1] if i + 1 < len(LESSONS) else None)


def total_minutes() -> int:
    return sum(lesson.minutes for lesson in LESSONS)
