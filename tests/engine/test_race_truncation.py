"""Race multiplicity r (SPEC §1): only QRACE1..QRACEr are read, as production's flat map
does; the persons who lose a race code that way are counted, exactly, in the manifest."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from calculators.config import SafeTabConfig
from engine.run import prepare, run

SAMPLE = Path(__file__).resolve().parents[2] / "sample_data"


def _independent_truncated(params: Path, data: Path) -> dict[int, int]:
    """For each r = 1..8: persons of the runs with a race code beyond QRACEr that is not among
    their first r (the person file read once for every r)."""
    cfg = SafeTabConfig.read(params / "config.json")
    p = pd.read_csv(data / "person-records.txt", sep="|", dtype=str, keep_default_na=False)
    states = set(cfg.state_filter_us) if cfg.run_us else set()
    if cfg.run_pr:
        states.add("72")
    p = p[p["TABBLKST"].isin(states)]
    n = dict.fromkeys(range(1, 9), 0)
    for row in p[[f"QRACE{i}" for i in range(1, 9)]].itertuples(index=False):
        codes = [c for c in row if c != "Null"]
        for r in n:
            first = set(codes[:r])
            n[r] += any(c not in first for c in codes[r:])
    return n


@pytest.mark.timeout(300)
def test_truncated_persons_for_every_r_on_the_shipped_sample(tmp_path):
    params, data = SAMPLE / "params", SAMPLE / "data"
    base = SafeTabConfig.read(params / "config.json")
    counts, prepared_of = {}, {}  # the inputs prepared with r = 3 are run below
    independent = _independent_truncated(params, data)
    for r in range(1, 9):
        prepared = prepare(params, data, config=base.updated(max_race_codes=r))
        if r == 3:
            prepared_of[r] = prepared
        counts[r] = prepared.table.persons_truncated
        assert counts[r] == independent[r], r
        # every person is still counted (truncated, not rejected)
        assert prepared.table.persons == 50_000
        # S follows r: max(2, r) + 1 at every level (h_r = h_e = 1 in the sample's spec)
        assert set(prepared.stability.values()) == {max(2, r) + 1}
    assert counts[8] == 0 and counts[1] > counts[2] > counts[3] > 0
    assert all(counts[r] >= counts[r + 1] for r in range(1, 8))
    # the manifest's confidential block carries the count of the run's r
    res = run(params, data, tmp_path / "truth", truth=True, prepared=prepared_of[3])
    assert res.manifest["confidential"]["race_codes_truncated"] == {"max_race_codes": 3, "persons": counts[3]}
