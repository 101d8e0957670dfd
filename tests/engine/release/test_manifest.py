"""manifest.json: budgets, stability and thresholds computed from the configuration (SPEC section 1)."""

from __future__ import annotations

import numpy as np
import pytest

from calculators import budget, suppression
from engine.run import run
from tests.engine.conftest import base_config, person


def test_manifest_budgets_are_computed_from_the_config(dataset, tmp_path):
    dataset.persons = [person()]
    cfg = base_config()
    cfg["privacy_budget_p_level_2_tract"] = 0.25
    cfg["privacy_budget_p_level_1_aiannh"] = 0
    cfg["privacy_budget_p_level_2_pr_place"] = 3.5
    dataset.config = cfg
    dataset.write()
    m = run(dataset.params, dataset.data, tmp_path / "m", seed=1).manifest
    us = sum(v for k, v in cfg.items() if k.startswith("privacy_budget_p_level_") and "_pr_" not in k)
    pr = sum(v for k, v in cfg.items() if k.startswith("privacy_budget_p_level_") and "_pr_" in k)
    assert m["privacy"]["us"]["budget"] == pytest.approx(us)
    assert m["privacy"]["pr"]["budget"] == pytest.approx(pr)
    assert m["privacy"]["release"]["budget"] == pytest.approx(max(us, pr))
    assert m["privacy"]["release_bounded"]["budget"] == pytest.approx(2 * max(us, pr))
    eps = m["privacy"]["release"]["epsilon_at_delta_1e-10"]
    assert eps["classic"] == pytest.approx(max(us, pr) + 2 * np.sqrt(max(us, pr) * np.log(1e10)))
    assert eps["tight"] <= eps["classic"]
    # (AIANNH, 1) has rho 0: not tabulated at all.
    assert "(AIANNH, 1)" not in m["levels"]
    lvl = m["levels"]["(TRACT, 2)"]
    assert lvl["stability_S"] == 9
    assert lvl["sigma2"]["stage2"]["exact"] == "20"  # 9 / (2 * 0.9 * 0.25)
    assert lvl["sigma2"]["stage1"]["exact"] == "180"  # 9 / (2 * 0.1 * 0.25)
    assert m["mode"]["for_release"] is False and "NOT FOR RELEASE" in m["mode"]["note"]
    assert len(m["inputs"]["files"]) == 7 and all(len(f["sha256"]) == 64 for f in m["inputs"]["files"].values())


def test_secure_run_is_marked_for_release(dataset, tmp_path):
    dataset.persons = [person()]
    dataset.write()
    m = run(dataset.params, dataset.data, tmp_path / "m").manifest
    assert m["mode"]["for_release"] is True and m["mode"]["kind"] == "release"


def test_threshold_in_manifest_is_the_calculators(dataset, tmp_path):
    dataset.persons = [person()]
    dataset.config = base_config(zero_suppression_chance=0.9999)
    dataset.write()
    m = run(dataset.params, dataset.data, tmp_path / "t", seed=1).manifest
    sigma2 = budget.sigma2_stage2(1.0, 0.1, 9)
    assert m["levels"]["(COUNTY, 2)"]["suppression_threshold"] == suppression.threshold(sigma2, 0.9999)


def test_manifest_stability_is_per_tabulation_class(dataset, tmp_path):
    # Hand-made spec: the only level-2 ethnicity iteration is COARSE_ONLY, so USA, STATE
    # and PR-STATE have h_e = 0 at level 2 (S = 8 with r = 8) and the others h_e = 1 (S = 9).
    dataset.eth_iterations = [("4001", "Not Hispanic or Latino", "0", "Null", "Null"),
                              ("4002", "Hispanic or Latino", "0", "Null", "Null"),
                              ("4011", "Central American", "1", "False", "False"),
                              ("4021", "Costa Rican", "2", "False", "True")]
    dataset.persons = [person(), person(races=("1010", "1011", "1012"), eth="2010")]
    dataset.config = base_config(max_race_codes=2)
    dataset.write()
    m = run(dataset.params, dataset.data, tmp_path / "m", seed=1).manifest
    st = m["stability"]
    assert st["max_race_codes"] == 2
    assert st["state"]["geographies"] == ["USA", "STATE", "PR-STATE"]
    assert st["state"]["2"] == {"S": 2, "h_r": 1, "h_e": 0}  # 1 * max(2, 2) + 0
    assert st["substate"]["2"] == {"S": 3, "h_r": 1, "h_e": 1}
    assert st["state"]["1"] == st["substate"]["1"] == {"S": 3, "h_r": 1, "h_e": 1}
    levels = m["levels"]
    assert levels["(USA, 2)"]["stability_S"] == levels["(PR-STATE, 2)"]["stability_S"] == 2
    assert levels["(COUNTY, 2)"]["stability_S"] == levels["(PR-TRACT, 2)"]["stability_S"] == 3
    # the noise follows: sigma2 = S / (2 (1 - gamma) rho) with rho = 1 at level 2
    assert levels["(USA, 2)"]["sigma2"]["stage2"]["exact"] == "10/9"
    assert levels["(COUNTY, 2)"]["sigma2"]["stage2"]["exact"] == "5/3"
    # the second person is read with codes 1010, 1011 only (r = 2): one truncated person
    assert m["confidential"]["race_codes_truncated"] == {"max_race_codes": 2, "persons": 1}
