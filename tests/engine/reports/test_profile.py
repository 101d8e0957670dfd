"""engine.reports.profile: profiles are the engine's own counts, every size exact, and the
shipped ones are what the command computes."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from calculators.config import SafeTabConfig
from calculators.levels import PopulationGroupLevel
from calculators.projection import Profile, ProfileError, max_distinct_sizes
from engine.cli import main
from engine.inputs.specs import load_specs
from engine.reports.profile import compute_profile, read_profile

REPO = Path(__file__).resolve().parents[3]
SAMPLE = REPO / "sample_data"
SHIPPED = SAMPLE / "profiles"


@pytest.fixture(scope="module")
def sample_profile() -> Profile:
    return compute_profile(SAMPLE / "params", SAMPLE / "data", synthetic=True)


def test_the_profile_is_the_histogram_of_the_ground_truth(tmp_path, sample_profile):
    """`python -m engine truth` publishes every group's true total: its histogram per level,
    DETAILED_ONLY iterations apart, is the profile."""
    assert main(["truth", str(SAMPLE / "params"), str(SAMPLE / "data"), str(tmp_path / "t"), "--no-coterminous",
                 "--quiet"]) == 0
    specs = load_specs(SAMPLE / "params")
    detailed_only = {code for code, it in specs.iterations.items() if it.detailed_only}
    tabulated = SafeTabConfig.read(SAMPLE / "params" / "config.json").tabulated_levels()
    assert len(tabulated) == 19  # (AIANNH, 1) has budget 0: not in the truth, but in the profile
    for lvl in tabulated:
        lp = sample_profile.levels[lvl]
        t1 = pd.read_csv(tmp_path / "t" / "t1" / f"{lvl.geo}-{lvl.iteration_level}.csv", sep="|",
                         dtype={"ITERATION_CODE": str, "REGION_ID": str})
        assert len(t1) == lp.groups == lp.regions * lp.iterations
        to = t1["ITERATION_CODE"].isin(detailed_only) & lvl.is_state_or_above
        for hist, counts in ((lp.adaptive, t1.loc[~to, "COUNT"]), (lp.total_only, t1.loc[to, "COUNT"])):
            u, c = np.unique(counts.to_numpy(), return_counts=True)
            assert hist.sizes.tolist() == u.tolist() and hist.counts.tolist() == c.tolist(), lvl
        S = lp.stability[sample_profile.max_race_codes - 1]
        assert len(lp.adaptive.sizes) + len(lp.total_only.sizes) <= 2 * max_distinct_sizes(sample_profile.persons, S)


def test_every_level_of_the_runs_is_profiled_whatever_its_budget(sample_profile):
    aiannh1 = PopulationGroupLevel("AIANNH", 1)
    config = json.loads((SAMPLE / "params" / "config.json").read_text())
    assert config["privacy_budget_p_level_1_aiannh"] == 0
    assert aiannh1 in sample_profile.levels and sample_profile.levels[aiannh1].groups > 0
    assert len(sample_profile.levels) == 20
    assert sample_profile.persons == 50_000 == sample_profile.persons_us + sample_profile.persons_pr


def _comparable(d: dict) -> dict:
    return {k: v for k, v in d.items() if k not in ("created", "name", "description")}


def test_the_shipped_sample_profile_is_a_fresh_one(sample_profile):
    shipped = read_profile(SHIPPED / "sample.profile.json")
    assert shipped.synthetic and not shipped.confidential
    assert _comparable(shipped.to_dict()) == _comparable(sample_profile.to_dict())


def test_the_shipped_national_profile_is_a_330_million_person_nation():
    prof = read_profile(SHIPPED / "nation330.profile.json.gz")
    assert prof.synthetic and not prof.confidential
    assert prof.persons == 330_000_000
    assert len(prof.levels) == 20 and prof.max_race_codes == 8
    assert len(prof.state_filter_us) == 51
    assert (SHIPPED / "nation330.profile.json.gz").stat().st_size < 3_000_000
    for lp in prof.levels.values():
        S = lp.stability[7]
        assert len(lp.adaptive.sizes) <= max_distinct_sizes(prof.persons, S)
    usa = prof.levels[PopulationGroupLevel("USA", 2)]
    assert usa.regions == 1 and usa.iterations == 2944 and usa.total_only_iterations > 0


def test_a_profile_of_real_data_is_confidential(tmp_path):
    prof = compute_profile(SAMPLE / "params", SAMPLE / "data")
    d = json.loads(prof.to_json())
    assert d["confidential"] is True and "CONFIDENTIAL" in d["notice"]


def test_read_profile_names_the_file(tmp_path):
    bad = tmp_path / "p.json"
    bad.write_text('{"kind": "x"}')
    with pytest.raises(ProfileError, match=r"p\.json: kind must be"):
        read_profile(bad)
    with pytest.raises(ProfileError, match="cannot read"):
        read_profile(tmp_path / "absent.json")
