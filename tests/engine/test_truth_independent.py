"""The ground truth equals a plain, person-by-person count written independently here.

The engine counts per piece of geography and characteristic key with array
operations; this test loops over persons with dictionaries, straight from SPEC §1 and
§4, and compares every T1 total and every T2 cell of the truth.
"""

from __future__ import annotations

from collections import Counter

import pandas as pd

from calculators.levels import AGE23_EDGES, STAT_LEVEL_AGE_EDGES, PopulationGroupLevel
from engine.run import run
from engine.synthetic.nation import generate
from engine.inputs.specs import load_specs
from tests.engine.conftest import read_part_files


def _regions(st, cou, tract, place, aian, run_us_states, run_pr):
    if st == "72":
        if not run_pr:
            return {}
        out = {"PR-STATE": st, "PR-COUNTY": st + cou, "PR-TRACT": st + cou + tract}
        if place != "99999":
            out["PR-PLACE"] = st + place
        return out
    if st not in run_us_states:
        return {}
    out = {"USA": "1", "STATE": st, "COUNTY": st + cou, "TRACT": st + cou + tract}
    if place != "99999":
        out["PLACE"] = st + place
    if aian != "9999":
        out["AIANNH"] = aian
    return out


def test_truth_equals_a_person_by_person_count(tmp_path):
    s = generate(tmp_path / "n", 3_000, seed=11)
    out = run(s.params_dir, s.data_dir, tmp_path / "truth", truth=True, coterminous=False).out_dir
    specs = load_specs(s.params_dir)
    cfg = pd.read_json(s.params_dir / "config.json", typ="series")
    grf = pd.read_csv(s.data_dir / "GRF-C.txt", sep="|", dtype=str)
    blocks = {tuple(r[:4]): tuple(r) for r in grf.itertuples(index=False)}
    persons = pd.read_csv(s.data_dir / "person-records.txt", sep="|", dtype=str, keep_default_na=False)

    totals: Counter = Counter()
    cells: Counter = Counter()  # (geo, region, code, sex, age23 start)
    edges = list(AGE23_EDGES)
    for p in persons.itertuples(index=False):
        st, cou, tract, blk, place, aian = blocks[(p.TABBLKST, p.TABBLKCOU, p.TABTRACTCE, p.TABBLK)]
        regions = _regions(st, cou, tract, place, aian, set(cfg["state_filter_us"]), cfg["run_pr"])
        codes = []
        for c in (p.QRACE1, p.QRACE2, p.QRACE3, p.QRACE4, p.QRACE5, p.QRACE6, p.QRACE7, p.QRACE8):
            if c == "Null":
                break
            codes.append(c)
        age = int(p.QAGE)
        age23 = max(e for e in edges if e <= age)
        for level in (1, 2):
            its = specs.person_iterations(frozenset(codes), p.QSPAN, level)
            for geo, region in regions.items():
                if cfg[PopulationGroupLevel(geo, level).budget_key] == 0:
                    continue  # a level with rho = 0 is not tabulated, e.g. (AIANNH, 1)
                for code in its:
                    if specs.iterations[code].tabulated_at(geo):
                        totals[(geo, region, code)] += 1
                        cells[(geo, region, code, p.QSEX, age23)] += 1

    t1 = read_part_files(out / "t1")
    got = {(r.REGION_TYPE, r.REGION_ID, r.ITERATION_CODE): int(r.COUNT) for r in t1.itertuples(index=False)}
    assert {k: v for k, v in got.items() if v} == dict(totals)
    assert len(got) > len(totals)  # the empty groups of the universe are there too, with 0

    # Every T2 cell: the sum of the age23 cells of its bin.
    t2 = read_part_files(out / "t2")
    body = t2[t2.AGESTART != "*"]
    assert len(body) > 0
    for r in body.itertuples(index=False):
        a0, a1 = int(r.AGESTART), int(r.AGEEND)
        want = sum(cells[(r.REGION_TYPE, r.REGION_ID, r.ITERATION_CODE, r.SEX, e)] for e in edges if a0 <= e <= a1)
        assert int(r.COUNT) == want, r
    # Which table a group got follows its true size and the thresholds.
    sizes = body.groupby(["REGION_TYPE", "REGION_ID", "ITERATION_CODE"]).size()
    for (geo, region, code), n_cells in sizes.items():
        level = specs.iterations[code].level
        th = cfg["thresholds_p"][f"({geo}, {level})"]
        n = totals[(geo, region, code)]
        k = sum(t <= n for t in th)
        assert n_cells == 2 * len(STAT_LEVEL_AGE_EDGES[k])
