"""Inputs shared by the tests of the cross-level post-processing (hierarchy, invariants)."""

from __future__ import annotations

import numpy as np

from tests.engine.conftest import BLOCKS, base_config, person

RACES = [("1010",), ("1011",), ("1012",), ("1020",), ("1010", "1020")]


def random_persons(n: int, seed: int = 1) -> list[tuple]:
    """n persons of random age, sex, block, races and ethnicity (seeded)."""
    rng = np.random.default_rng(seed)
    return [person(age=int(rng.integers(0, 116)), sex=int(rng.integers(1, 3)),
                   block=BLOCKS[int(rng.integers(0, len(BLOCKS)))], races=RACES[int(rng.integers(0, 5))],
                   eth=["2000", "2010"][int(rng.integers(0, 2))]) for _ in range(n)]


def moving_dataset(dataset, n: int):
    """`dataset` with n random persons, small budgets and suppression on, so that values
    move, tables and suppressed groups occur."""
    dataset.persons = random_persons(n)
    dataset.config = base_config(zero_suppression_chance=0.99, thresholds_p={
        k: [5, 20, 60] for k in base_config()["thresholds_p"]})
    dataset.config.update({k: v * 0.05 for k, v in dataset.config.items() if k.startswith("privacy_budget_p_level")})
    dataset.write()
    return dataset
