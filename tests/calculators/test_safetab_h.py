"""The SafeTab-H plan's math: MOEs, inversions, cells and levels, the 2020 figures."""

from __future__ import annotations

from pathlib import Path

import pytest

from calculators import safetab_h as h
from calculators.config import ConfigError

REFERENCE = Path(__file__).resolve().parents[3] / "shared" / "reference"


def test_expected_moe_at_the_released_tests_budgets():
    # r = 8: S = 9, sigma^2 = 9 / (2 rho)
    assert h.household_stability(8) == 9
    assert h.expected_moe(0.008, 9) == pytest.approx(46.4855, abs=1e-4)
    assert h.expected_moe(2.43, 9) == pytest.approx(2.6672, abs=1e-4)


def test_the_2020_cell_and_total_moes():
    # 0.006915 Regional, 1.9208 Detailed at nation and state, 0.142869 below: 50 / 3 / 11
    assert [h.cell_moe(b, 9) for b in (0.006915, 1.9208, 0.142869)] == [50, 3, 11]
    # the total of a T03004 group sums 5 cells: variance 5 sigma^2
    assert h.total_moe_by_level("t3", 1.9208, 9)[3][0] == 7
    assert h.total_moe_by_level("t3", 0.142869, 9)[3][0] == 25


def test_rho_for_moe_is_the_smallest_budget_meeting_the_exact_target():
    for target in (3, 11, 50):
        rho = h.rho_for_moe(target, 9)
        assert h.cell_moe(rho, 9) <= target
        assert h.cell_moe(rho * 0.99, 9) > target


def test_the_design_inversion_gives_the_2020_budgets():
    # 1.96^2 S / (2 m^2): the 2020 Detailed budget at nation and state is that of MOE 3
    assert h.rho_for_moe(3, 9, exact=False) == pytest.approx(1.9208)
    for target in (3, 11, 50):
        assert h.expected_moe(h.rho_for_moe(target, 9, exact=False), 9) == pytest.approx(target)


def test_published_cells_and_levels():
    assert [h.rows_per_group("t3", k) for k in range(4)] == [1, 3, 7, 9]
    assert [h.rows_per_group("t4", k) for k in range(2)] == [1, 4]
    assert h.published_cells("t3", 3)[1] == (2, 4, 5)  # family = married + male + female householder
    assert h.published_cells("t4", 1)[0] == (1, 2, 3)
    assert list(h.table_level([0, 10, 19, 20, 30, 99], (10, 20, 30))) == [0, 1, 1, 2, 3, 3]
    assert h.table_level(149970, (4971, 19971, 149971)) == 2


@pytest.mark.skipif(not (REFERENCE / "safetab-h-2020").is_dir(), reason="reference files absent")
def test_the_2020_configuration_reads_and_sums():
    cfg = h.SafeTabHConfig.read(REFERENCE / "safetab-h-2020" / "config.json")
    assert cfg.thresholds("t3", cfg.levels()[4]) == (4971, 19971, 149970)  # (COUNTY, 1)
    assert cfg.budget("t3", cfg.levels()[1]) == 1.9208
    assert cfg.to_dict()["thresholds_h_t4"] == cfg.thresholds_h_t4


def test_config_problems_are_named():
    with pytest.raises(ConfigError) as exc:
        h.SafeTabHConfig.from_dict({"max_race_codes": 8})
    assert "missing required keys {allow_negative_counts" in str(exc.value)


def test_level_probabilities_match_a_simulation_of_safetab_p_then_safetab_h():
    """The mixture over SafeTab-P's stage-1 level, T1 noise and suppression against
    seeded draws of the same two-stage mechanism (engine.noise's exact sampler)."""
    import numpy as np

    from calculators import budget, suppression
    from calculators.levels import STAT_LEVEL_CELLS, PopulationGroupLevel
    from calculators.presets import production_2020
    from engine.noise import RandomSource, sample_discrete_gaussian

    lvl = PopulationGroupLevel("COUNTY", 2)
    p = production_2020().with_rho(lvl, 0.05).with_thresholds(lvl, [40, 80, 160])
    h_th = (30, 70, 150)
    s1 = budget.sigma2(0.05, 9, p.gamma)
    s2 = budget.sigma2(0.05, 9, 1 - p.gamma)
    T = suppression.threshold(s2, p.suppression_chance)
    src = RandomSource.seeded(45)
    draws = 40_000
    for n in (20, 60, 120, 200):
        stage1 = n + sample_discrete_gaussian(s1, draws, src)
        k = (stage1[:, None] >= np.array([40, 80, 160])).sum(axis=1)
        t1 = np.empty(draws, np.int64)
        for lev in range(4):
            sel = k == lev
            m = STAT_LEVEL_CELLS[lev]
            t1[sel] = n + sample_discrete_gaussian(s2, int(sel.sum()) * m, src).reshape(-1, m).sum(axis=1)
        absent = (k == 0) & (t1 <= T)
        level = (t1[:, None] >= np.array(h_th)).sum(axis=1)
        freq = [absent.mean()] + [((level == j) & ~absent).mean() for j in range(4)]
        prob = h.level_probabilities(p, h_th, lvl, n)
        assert prob.sum() == pytest.approx(1.0)
        for f, q in zip(freq, prob):
            assert abs(f - q) < 4.5 * np.sqrt(max(q * (1 - q), 1e-4) / draws) + 2e-3, (n, freq, prob.tolist())
