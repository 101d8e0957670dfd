"""Synthetic households: one per householder, with the householder's block and codes,
2020-like household type and tenure shares, the same persons as without them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from calculators.safetab_h import SafeTabHConfig
from engine.synthetic.nation import generate

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def nation(tmp_path_factory):
    return generate(tmp_path_factory.mktemp("hh") / "n", 30_000, seed=5, chunk_persons=7_000)


def _read(path: Path) -> pd.DataFrame:
    return pd.read_csv(path, sep="|", dtype=str, keep_default_na=False)


def test_one_household_per_householder_with_the_householders_codes(nation):
    persons = _read(nation.persons_path)
    households = _read(nation.households_path)
    heads = persons[persons["HOUSEHOLDER"] == "True"].reset_index(drop=True)
    assert len(households) == len(heads) == nation.households
    same = ["TABBLKST", "TABBLKCOU", "TABTRACTCE", "TABBLK", *[f"QRACE{i}" for i in range(1, 9)], "QSPAN"]
    assert (households[same].to_numpy() == heads[same].to_numpy()).all()
    assert (households["HHRACE"] == heads["CENRACE"]).all()
    assert 2.2 < len(persons) / len(households) < 2.9  # about 2.5 persons per household


def test_type_and_tenure_shares_are_2020_like(nation):
    h = _read(nation.households_path)
    types = h["HOUSEHOLD_TYPE"].astype(int).value_counts(normalize=True)
    ten = h["TEN"].astype(int).value_counts(normalize=True)
    assert set(types.index) == {1, 2, 3, 4, 5} and set(ten.index) == {1, 2, 3, 4}
    assert 0.40 < types[1] < 0.55 and 0.20 < types[4] < 0.35  # married couples, living alone
    assert 0.55 < ten[1] + ten[2] < 0.75 and ten[4] < 0.05  # owners about 65%


def test_households_do_not_depend_on_the_chunk_size(nation, tmp_path):
    other = generate(tmp_path / "n", 30_000, seed=5, chunk_persons=30_000)
    assert other.households_path.read_bytes() == nation.households_path.read_bytes()
    assert other.persons_path.read_bytes() == nation.persons_path.read_bytes()


def test_the_nation_has_a_safetab_h_plan(nation):
    cfg = SafeTabHConfig.read(nation.safetab_h_config_path)
    assert cfg.budget("t3", cfg.levels()[1]) == 1.9208  # the 2020 budgets
    assert cfg.state_filter_us == sorted(s for s in nation.states if s != "72")


def test_the_shipped_sample_households_are_the_generators(tmp_path):
    s = generate(tmp_path / "s", 50_000, seed=0)
    shipped = REPO / "sample_data"
    assert s.persons_path.read_bytes() == (shipped / "data" / "person-records.txt").read_bytes()
    assert s.households_path.read_bytes() == (shipped / "data" / "household-records.txt").read_bytes()
    assert s.safetab_h_config_path.read_bytes() == (shipped / "safetab-h-config.json").read_bytes()
    h = _read(s.households_path)
    assert np.isin(h["TEN"], ["1", "2", "3", "4"]).all()
