"""Small hand-built SafeTab-P inputs for engine tests.

`build_inputs` writes PARAMS_DIR and DATA_DIR into a temporary folder from Python
lists, so each test states exactly the persons and geography it relies on.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from calculators.levels import POPULATION_GROUP_LEVELS

REFERENCE = Path(__file__).resolve().parents[3] / "shared" / "reference"

RACE_ITERATIONS = [
    # code, name, level, alone, detailed_only, coarse_only
    ("1001", "White alone", "0", "True", "Null", "Null"),
    ("1002", "White alone or in any combination", "0", "False", "Null", "Null"),
    ("2001", "European alone", "1", "True", "False", "False"),
    ("2002", "European alone or in any combination", "1", "False", "False", "False"),
    ("3001", "Albanian alone", "2", "True", "False", "False"),
    ("3002", "Albanian alone or in any combination", "2", "False", "False", "False"),
    ("3011", "Basque alone", "2", "True", "True", "False"),
    ("3012", "Basque alone or in any combination", "2", "False", "True", "False"),
    ("3021", "Other European alone", "2", "True", "False", "True"),
    ("3022", "Other European alone or in any combination", "2", "False", "False", "True"),
    ("2101", "African alone", "1", "True", "False", "False"),
    ("2102", "African alone or in any combination", "1", "False", "False", "False"),
    ("3101", "Angolan alone", "2", "True", "False", "False"),
    ("3102", "Angolan alone or in any combination", "2", "False", "False", "False"),
]
ETH_ITERATIONS = [
    ("4001", "Not Hispanic or Latino", "0", "Null", "Null"),
    ("4002", "Hispanic or Latino", "0", "Null", "Null"),
    ("4011", "Central American", "1", "False", "False"),
    ("4021", "Costa Rican", "2", "False", "False"),
]
CODES = [
    ("1010", "Albanian"), ("1011", "Basque"), ("1012", "Other European"), ("1020", "Angolan"),
    ("2000", "Not Hispanic"), ("2010", "Costa Rican"),
]
MAPPING = [
    ("1001", "1010"), ("1001", "1011"), ("1001", "1012"), ("1002", "1010"), ("1002", "1011"), ("1002", "1012"),
    ("2001", "1010"), ("2001", "1011"), ("2001", "1012"), ("2002", "1010"), ("2002", "1011"), ("2002", "1012"),
    ("3001", "1010"), ("3002", "1010"), ("3011", "1011"), ("3012", "1011"), ("3021", "1012"), ("3022", "1012"),
    ("2101", "1020"), ("2102", "1020"), ("3101", "1020"), ("3102", "1020"),
    ("4001", "2000"), ("4002", "2010"), ("4011", "2010"), ("4021", "2010"),
]
#: Blocks: (state, county, tract, block, place, aiannh). DC (11) is coterminous as
#: state, county 11001 and place 1150000; county 01003 has a single tract; PR is 72.
BLOCKS = [
    ("01", "001", "000100", "0001", "10000", "0001"),
    ("01", "001", "000100", "0002", "99999", "9999"),
    ("01", "001", "000200", "0001", "10000", "9999"),
    ("01", "003", "000100", "0001", "99999", "9999"),
    ("02", "001", "000100", "0001", "20000", "0001"),
    ("11", "001", "000100", "0001", "50000", "9999"),
    ("11", "001", "000200", "0001", "50000", "9999"),
    ("72", "001", "000100", "0001", "30000", "9999"),
]


def person(age=30, sex=1, block=BLOCKS[0], races=("1010",), eth="2000") -> tuple:
    races = list(races) + ["Null"] * (8 - len(races))
    st, cou, tract, blk = block[:4]
    return (f"{age:03d}", str(sex), "True", st, cou, tract, blk, "01", *races, eth)


def base_config(**overrides) -> dict:
    cfg = {
        "max_race_codes": 8,
        **{lvl.budget_key: (1.0 if lvl.iteration_level == 2 else 0.5) for lvl in POPULATION_GROUP_LEVELS},
        "privacy_budget_p_stage_1_fraction": 0.1,
        "thresholds_p": {lvl.key: [5, 10, 20] for lvl in POPULATION_GROUP_LEVELS},
        "zero_suppression_chance": 0.0,
        "allow_negative_counts": True,
        "run_us": True,
        "run_pr": True,
        "reader": "csv",
        "state_filter_us": ["01", "02", "11"],
        "privacy_defn": "zcdp",
    }
    cfg.update(overrides)
    return cfg


@dataclass
class Dataset:
    root: Path
    persons: list = field(default_factory=list)
    blocks: list = field(default_factory=lambda: list(BLOCKS))
    config: dict = field(default_factory=base_config)
    race_iterations: list = field(default_factory=lambda: list(RACE_ITERATIONS))
    eth_iterations: list = field(default_factory=lambda: list(ETH_ITERATIONS))
    codes: list = field(default_factory=lambda: list(CODES))
    mapping: list = field(default_factory=lambda: list(MAPPING))

    @property
    def params(self) -> Path:
        return self.root / "params"

    @property
    def data(self) -> Path:
        return self.root / "data"

    def write(self) -> "Dataset":
        self.params.mkdir(parents=True, exist_ok=True)
        self.data.mkdir(parents=True, exist_ok=True)
        (self.params / "config.json").write_text(json.dumps(self.config, indent=2))
        _table(self.params / "race-characteristic-iterations.txt",
               "ITERATION_CODE|ITERATION_NAME|LEVEL|ALONE|DETAILED_ONLY|COARSE_ONLY", self.race_iterations)
        _table(self.params / "ethnicity-characteristic-iterations.txt",
               "ITERATION_CODE|ITERATION_NAME|LEVEL|DETAILED_ONLY|COARSE_ONLY", self.eth_iterations)
        _table(self.params / "race-and-ethnicity-codes.txt", "RACE_ETH_CODE|RACE_ETH_NAME", self.codes)
        _table(self.params / "race-and-ethnicity-code-to-iteration.txt", "ITERATION_CODE|RACE_ETH_CODE", self.mapping)
        _table(self.data / "GRF-C.txt", "TABBLKST|TABBLKCOU|TABTRACTCE|TABBLK|PLACEFP|AIANNHCE", self.blocks)
        _table(self.data / "person-records.txt",
               "QAGE|QSEX|HOUSEHOLDER|TABBLKST|TABBLKCOU|TABTRACTCE|TABBLK|CENRACE|"
               "QRACE1|QRACE2|QRACE3|QRACE4|QRACE5|QRACE6|QRACE7|QRACE8|QSPAN", self.persons)
        return self


def _table(path: Path, header: str, rows: list) -> None:
    path.write_text(header + "\n" + "".join("|".join(r) + "\n" for r in rows))


@pytest.fixture
def dataset(tmp_path) -> Dataset:
    return Dataset(tmp_path / "in")


def read_part_files(folder: Path):
    import pandas as pd

    parts = sorted(folder.glob("*.csv"))
    if not parts:
        return pd.DataFrame()
    return pd.concat([pd.read_csv(p, sep="|", dtype=str, keep_default_na=False) for p in parts], ignore_index=True)


def cli_help(*command: str) -> str:
    """What `python -m engine COMMAND... --help` prints, from `engine.cli.main` in this
    process (a subprocess only to print a help text cost ~2 s of CPU to start): exit code 0
    asserted, at the width a subprocess gets (COLUMNS if set, else 80 as its output is no
    terminal), so the text wraps as it does there."""
    import contextlib
    import io
    import os
    from unittest import mock

    from engine.cli import main

    out = io.StringIO()
    with mock.patch.dict(os.environ, {"COLUMNS": os.environ.get("COLUMNS", "80")}), \
            contextlib.redirect_stdout(out), pytest.raises(SystemExit) as exit_:
        main([*command, "--help"])
    assert exit_.value.code in (0, None), f"`{' '.join(command)} --help` exited {exit_.value.code}"
    return out.getvalue()
