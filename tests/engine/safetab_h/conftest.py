"""Hand-made SafeTab-H inputs: the spec files and GRF-C of tests/engine/conftest.py, a
few households and a T1 written row by row, so that every expected count is a hand count."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from calculators.levels import POPULATION_GROUP_LEVELS
from calculators.safetab_h import BUDGET_KEYS
from tests.engine.conftest import BLOCKS, Dataset, _table

HH_HEADER = ("TABBLKST|TABBLKCOU|TABTRACTCE|TABBLK|HHRACE|QRACE1|QRACE2|QRACE3|QRACE4|QRACE5|QRACE6|QRACE7|QRACE8|"
             "QSPAN|HOUSEHOLD_TYPE|TEN")
T1_HEADER = "REGION_ID|REGION_TYPE|ITERATION_CODE|COUNT"
#: (HOUSEHOLD_TYPE, TEN) of the nine Albanian (1010), Costa Rican (2010) households of county 01001.
TYPES_TENURES = [(1, 1), (1, 2), (2, 3), (3, 4), (3, 1), (4, 2), (4, 3), (4, 3), (5, 4)]
#: T1 rows: each forces a table level (T3 thresholds 10 / 20 / 30, T4 10), then rows
#: SafeTab-H must not tabulate.
T1_ROWS = [
    ("1", "USA", "2001", "5"),  # T3 level 0, T4 level 0
    ("1", "USA", "2002", "15"),  # T3 1, T4 1
    ("01", "STATE", "3001", "25"),  # T3 2
    ("01", "STATE", "4021", "35"),  # T3 3
    ("01001", "COUNTY", "2001", "35"),  # T3 3 (Regional, below the state)
    ("01001", "COUNTY", "3002", "9"),  # T3 0
    ("01001", "COUNTY", "3011", "50"),  # DETAILED_ONLY below the state: pruned
    ("1", "USA", "3021", "50"),  # COARSE_ONLY at USA: pruned
    ("1", "USA", "1001", "50"),  # a level-0 iteration: dropped
    ("1", "USA", "9999", "50"),  # not an iteration of the spec files: dropped
    ("02", "STATE", "2001", "50"),  # outside the run's states: dropped by the reader
]


def household(types_tenure=(1, 1), block=BLOCKS[0], races=("1010",), eth="2010", hhrace="01") -> tuple:
    races = list(races) + ["Null"] * (8 - len(races))
    return (*block[:4], hhrace, *races, eth, str(types_tenure[0]), str(types_tenure[1]))


def h_config(**overrides) -> dict:
    cfg = {
        "max_race_codes": 8,
        **{k: 1.0 for k in BUDGET_KEYS},
        "thresholds_h_t3": {lvl.key: [10, 20, 30] for lvl in POPULATION_GROUP_LEVELS},
        "thresholds_h_t4": {lvl.key: [10] for lvl in POPULATION_GROUP_LEVELS},
        "allow_negative_counts": True,
        "run_us": True,
        "run_pr": False,
        "reader": "csv",
        "state_filter_us": ["01"],
        "privacy_defn": "zcdp",
    }
    cfg.update(overrides)
    return cfg


class HDataset(Dataset):
    """A SafeTab-P `Dataset` (spec files, GRF-C) with households and a T1."""

    def __init__(self, root: Path):
        super().__init__(root)
        self.config = h_config()
        self.households = ([household(tt, BLOCKS[i % 2]) for i, tt in enumerate(TYPES_TENURES)]
                           + [household((1, 1), races=("1020",), eth="2000"),  # Angolan: other groups
                              household((1, 1), block=BLOCKS[4])])  # state 02: not in the run
        self.t1 = list(T1_ROWS)

    def write(self) -> "HDataset":
        super().write()
        (self.params / "config.json").write_text(json.dumps(self.config, indent=2))
        (self.data / "person-records.txt").unlink()
        _table(self.data / "household-records.txt", HH_HEADER, self.households)
        _table(self.data / "pop-group-totals.txt", T1_HEADER, self.t1)
        return self


@pytest.fixture
def hdata(tmp_path) -> HDataset:
    return HDataset(tmp_path / "in")
