"""The lessons' figures (ui.learn.content, ui.learn.lessons) against the calculators and
against numbers worked out by hand from SPEC §1-§2."""

from __future__ import annotations

import math

import pytest

from calculators import adaptive, budget, discrete_gaussian, suppression
from calculators.presets import production_2020
from ui.core import glossary
from ui.learn import content, lessons

CFG = production_2020()


def test_six_lessons_in_an_hour_each_with_its_address_and_terms():
    assert [lesson.number for lesson in lessons.LESSONS] == [1, 2, 3, 4, 5, 6]
    assert all(lesson.url_path.startswith("learn_") for lesson in lessons.LESSONS)
    assert len({lesson.url_path for lesson in lessons.LESSONS}) == 6
    assert lessons.total_minutes() == 60
    for lesson in lessons.LESSONS:
        assert lesson.goal.endswith(".") and lesson.goal.count(". ") == 0  # one sentence
        for term in lesson.terms:
            assert glossary.find(term) is not None, term
    assert lessons.neighbours(lessons.LESSONS[0]) == (None, lessons.LESSONS[1])
    assert lessons.neighbours(lessons.LESSONS[5]) == (lessons.LESSONS[4], None)


def test_lesson_1_a_tract_group_of_40_on_the_2020_plan():
    ex = content.noise_example(CFG, 40)
    # sigma2 = S / (2 (1 - gamma) rho) = 9 / (2 * 0.9 * 0.159)
    assert ex.sigma2 == pytest.approx(9 / (2 * 0.9 * 0.159))
    assert (ex.S, ex.moe, ex.bound) == (9, 11, 10)  # the 2020 exact MOE 11, design bound 10 (README)
    # the exact MOE is the smallest m with P(|X| <= m) >= 95 %
    cover = lambda m: discrete_gaussian.cdf(m, ex.sigma2) - discrete_gaussian.cdf(-m - 1, ex.sigma2)  # noqa: E731
    assert cover(ex.moe) >= 0.95 > cover(ex.moe - 1)
    assert ex.coverage == pytest.approx(cover(ex.moe))
    assert (ex.low, ex.high) == (29, 51)
    xs, ps = content.noise_pmf(ex)
    assert xs[0] < 29 and xs[-1] > 51 and sum(ps) == pytest.approx(1, abs=1e-4)
    assert ps[xs.index(40)] == max(ps) == pytest.approx(ex.p_exact)
    text = " ".join(content.noise_sentences(ex))
    assert "between **29 and 51**" in text and "**31.45**" in text


def test_lesson_1_question_four_times_the_budget():
    ans = content.noise_question(content.noise_example(CFG))
    assert ans.values["moe"] == int(budget.moe_exact(budget.sigma2_stage2(0.636, 0.1, 9))) == 5
    assert ans.text.startswith("**5 persons**")


def test_lesson_2_composition_epsilon_and_bounded_neighbours():
    b = content.budgets(CFG, 1e-10)
    us = math.fsum(CFG.rho(lvl) for lvl in CFG.tabulated_levels() if not lvl.is_pr)
    assert b.us == pytest.approx(us) == pytest.approx(4.944)
    assert b.release == max(b.us, b.pr) and b.release_bounded == 2 * b.release
    assert b.eps_tight == pytest.approx(float(budget.epsilon_tight(4.944, 1e-10)))
    assert b.eps_classic == pytest.approx(4.944 + 2 * math.sqrt(4.944 * math.log(1e10)))
    assert len(b.levels) == 19
    ans = content.budget_question(b)
    assert ans.values["eps_bounded"] == pytest.approx(float(budget.epsilon_tight(9.888, 1e-10)))
    assert "**ρ = 9.888**" in ans.text


def test_lesson_3_stability_grows_with_r():
    rows = content.race_rows(CFG)
    assert [x.S for x in rows] == [3, 3, 4, 5, 6, 7, 8, 9]
    assert [x.moe for x in rows] == sorted(x.moe for x in rows)  # more S, more noise
    at8 = rows[7]
    assert at8.moe == 11 and at8.plan_moe == 11
    # the smallest budget that keeps MOE 11 at r = 3 meets it, and a little less does not
    r3 = rows[2]
    assert budget.moe_exact(budget.sigma2_stage2(r3.rho_same_moe, 0.1, 4)) <= 11
    assert budget.moe_exact(budget.sigma2_stage2(r3.rho_same_moe * 0.98, 0.1, 4)) > 11
    ans = content.race_question(CFG)
    assert ans.values == {"S": 4, "moe": int(budget.moe_exact(budget.sigma2_stage2(0.159, 0.1, 4))), "r": 3}


def test_lesson_4_a_county_group_through_stage_1():
    ex = content.adaptive_group(CFG, 1000)
    assert ex.thresholds == (971, 4971, 19971)
    assert ex.sigma2_1 == pytest.approx(9 / (2 * 0.1 * 0.159))
    p = adaptive.stat_level_probabilities(1000, (971, 4971, 19971), ex.sigma2_1)
    assert ex.probs == pytest.approx(tuple(p)) and sum(ex.probs) == pytest.approx(1)
    assert ex.likeliest == 1  # 1,000 persons is above 971: a sex x age4 table most often
    # one short of the threshold: a table a little less than half of the time (P(X >= 1) < 1/2)
    ans = content.adaptive_question(CFG)
    assert ans.values["n"] == 970
    assert ans.values["table_chance"] == pytest.approx(float(discrete_gaussian.sf(0, ex.sigma2_1)))
    assert 0.45 < ans.values["table_chance"] < 0.5
    # a larger gamma, less stage-1 noise
    assert content.adaptive_group(CFG, 1000, 0.3).moe_1 < ex.moe_1


def test_lesson_5_suppression_threshold_and_bias():
    ex = content.suppressed(CFG, 5)
    s2 = float(budget.sigma2_stage2(0.159, 0.1, 9))
    assert ex.T == 21 == int(suppression.threshold(s2, 0.9999))  # Table 6 of the design paper
    assert ex.suppressed == pytest.approx(float(discrete_gaussian.cdf(16, s2)))
    assert ex.suppressed_zero >= 0.9999
    assert ex.released_mean == pytest.approx(5 + ex.bias) and ex.bias > 0
    off = content.suppressed(CFG, 5, 0.0)
    assert off.T is None and off.suppressed == 0 and "off" in content.suppression_sentences(off)[0]
    ans = content.suppression_question(CFG)
    assert ans.values["suppressed"] == pytest.approx(float(discrete_gaussian.cdf(0, s2))) and ans.values["T"] == 21
    xs, ps = content.suppression_curve(ex)
    assert ps == sorted(ps, reverse=True) and xs[0] == 0


def test_try_changes_lists_only_what_differs():
    assert content.try_changes(CFG, max_race_codes=8) == {}
    assert content.try_changes(CFG, max_race_codes=3, privacy_budget_p_stage_1_fraction=0.1) == {"max_race_codes": 3}


def test_numbers_and_shares_as_read_out():
    assert content.num(1234567) == "1,234,567" and content.num(0.15874) == "0.1587"
    assert content.pct(0.99995) == "over 99.99 %" and content.pct(1e-6) == "under 0.01 %"
    assert content.pct(0.5355) == "53.5 %" and content.pct(0.0712) == "7.12 %"
