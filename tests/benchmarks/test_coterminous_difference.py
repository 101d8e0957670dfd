"""The coterminous step is the only difference between `run` and `run --no-coterminous`
(the released code's output), and docs/production-differences.md shows the figures
`benchmarks/coterminous_difference.py` measures, not typed-in ones."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from benchmarks import coterminous_difference as cd
from engine.run import prepare
from tests.engine.conftest import BLOCKS, Dataset, base_config, person

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "production-differences.md"


def _expected_with_the_step(prepared, status: dict, tables: dict) -> tuple[dict, dict]:
    """The default output derived from the --no-coterminous one by the paper's rule alone:
    within each coterminous set, for each iteration, every member publishes the output of
    the first member (priority order) that is released; none released: its own."""
    geo = prepared.inputs.geography
    exp_s, exp_t = dict(status), dict(tables)
    codes = {k[2] for k in status}
    for members in geo.coterminous_sets():
        keys = [(g, str(geo.regions[g][r])) for g, r in members]
        for code in codes:
            have = [(g, rid, code) for g, rid in keys if (g, rid, code) in status]
            source = next((k for k in have if status[k] != "suppressed"), None)
            if source is None:
                continue
            for k in have:
                exp_s[k] = status[source]
                if source in tables:
                    exp_t[k] = tables[source]
                else:
                    exp_t.pop(k, None)
    return exp_s, exp_t


def _check_only_copies_differ(params, data, work) -> cd.Difference:
    diff, with_step, without = cd.measure(params, data, work, budget=1e4, seed=3)
    a, ta, _ = cd.outputs(with_step)
    b, tb, _ = cd.outputs(without)
    prepared = prepare(params, data, config=cd.plan_at(params, 1e4))
    exp_s, exp_t = _expected_with_the_step(prepared, b, tb)
    assert a == exp_s
    assert ta == exp_t
    return diff


def test_without_the_step_only_the_coterminous_copies_change(tmp_path):
    """Small inputs with DC (state = county 11001 = place 1150000) and a county with one
    tract: the default output is the --no-coterminous output with the copies made."""
    cfg = base_config(zero_suppression_chance=0.5)
    # sub-state levels need larger groups for a table than states: DC's county and place publish the state's
    # table with the step, a total only without it; their empty groups are suppressed without it
    for geo in ("COUNTY", "TRACT", "PLACE"):
        for lvl in (1, 2):
            cfg["thresholds_p"][f"({geo}, {lvl})"] = [50, 60, 70]
    ds = Dataset(tmp_path / "in", config=cfg)
    ds.persons = ([person(block=BLOCKS[5], races=("1010",)) for _ in range(12)]
                  + [person(block=BLOCKS[6], races=("1020",), age=50) for _ in range(3)]
                  + [person(block=BLOCKS[3]) for _ in range(7)] + [person(block=b) for b in BLOCKS[:3]])
    ds.write()
    diff = _check_only_copies_differ(ds.params, ds.data, tmp_path / "w")
    # the step acted here: suppressed groups published, and tables copied
    assert diff.published_only_by_default > 0 and diff.tables_differ > 0 and diff.groups_copied > 0


@pytest.mark.skipif(not cd.TOY.is_dir(), reason="the toy inputs of ../shared/reference are absent")
def test_on_the_toy_the_difference_is_dc_and_two_places(tmp_path):
    diff = _check_only_copies_differ(cd.TOY / "params", cd.TOY / "data", tmp_path)
    assert diff.by_region == {"COUNTY 11001": 16, "TRACT 11001000100": 9, "PLACE 0222800": 8, "PLACE 0122800": 4}
    assert diff.published_only_by_default == diff.t1_differ == 37 and diff.tables_differ == 0
    assert all(row["default"] == "0" and row["no_coterminous"] == "suppressed" for row in diff.listed)


@pytest.mark.timeout(900)
def test_the_documented_figures_are_the_measured_ones(tmp_path):
    """The table between the markers in docs/production-differences.md is what the script
    prints now (the sample, and the toy when ../shared/reference is there)."""
    text = DOC.read_text()
    table = re.search(r"<!-- coterminous-figures: begin[^\n]*-->\n(.*?)\n<!-- coterminous-figures: end -->",
                      text, re.S).group(1)
    diffs = cd.measure_all()
    measured = cd.markdown(diffs).splitlines()
    documented = table.splitlines()
    assert documented[:2] == measured[:2]
    for line in measured[2:]:
        assert line in documented
    if not cd.TOY.is_dir():  # the toy's row is checked where its inputs are
        documented = [d for d in documented if not d.startswith("| toy")]
    assert len(documented) == len(measured)
    sample = diffs[0]
    # the figures for the released code are the --no-coterminous ones
    assert (sample.groups, sample.t1_rows["no_coterminous"], sample.t2_rows["no_coterminous"]) == \
        (24_587, 18_767, 114_412)
    assert f"{sample.t1_differ:,}" in text and f"{sample.tables_differ:,}" in text
