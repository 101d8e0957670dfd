"""Page logic of "Custom geographies" (ui.compare.spines), without Streamlit."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from engine import noise as _noise
from engine.reports import spines as rs
from engine.reports.levels import level_tables
from engine.run import make_noise, prepare
from methods import spines
from ui.compare import spines as cs

SAMPLE = Path(__file__).resolve().parents[3] / "sample_data"


@pytest.fixture(scope="module")
def sample():
    if not (SAMPLE / "data" / "person-records.txt").is_file():
        pytest.skip("sample_data/ is not there")
    prepared = prepare(SAMPLE / "params", SAMPLE / "data")
    tables = level_tables(prepared, make_noise("zcdp", _noise.RandomSource.seeded(1)))
    geo = prepared.inputs.geography
    return prepared, tables, geo, rs.published_units(geo), rs.census_spine(geo)


def _keys(geo):
    return np.asarray(geo.block_keys.to_numpy(zero_copy_only=False)).astype(str)


def test_area_builders_and_the_area_file_round_trip(sample):
    _p, _t, geo, _u, _s = sample
    keys = _keys(geo)
    tracts = cs.tract_options(geo)
    assert len(tracts) == 14 and tracts[-1].startswith("72")
    a = cs.area_from_tracts(geo, tracts[:2])
    assert np.array_equal(a, np.isin([k[:11] for k in keys], tracts[:2]))
    ents = cs.entity_options(geo)
    label = next(k for k, v in ents.items() if v == ("PLACE", "0600100"))
    assert label == "Place 0600100 (18 blocks)"
    assert cs.entity_tracts(geo, "PLACE", "0600100") == ["06001000100", "06001000200"]
    b = cs.area_from_entity(geo, "PLACE", "0600100", ["06001000100"])
    assert b.sum() == 7 and all(k.startswith("06001000200") for k in keys[b])
    c = cs.area_from_blocks(geo, keys[[0, 5]].tolist())
    assert np.flatnonzero(c).tolist() == [0, 5]
    # The file the command line reads gives back the same blocks (tracts where whole).
    for area in (a, b, c):
        text = cs.area_file(geo, area)
        assert np.array_equal(rs.parse_area(text, geo), area)
    assert "tract 06001000100" in cs.area_file(geo, a) and "block" not in cs.area_file(geo, a).split("\n", 1)[1]


def test_group_options_largest_first(sample):
    prepared, tables, _g, _u, _s = sample
    g = cs.group_options(tables, prepared.inputs.specs, 2)
    assert g["persons"].is_monotonic_decreasing and len(g) == len(set(g["code"]))
    assert g["label"].iloc[0].startswith(g["name"].iloc[0]) and f"({g['code'].iloc[0]})" in g["label"].iloc[0]
    assert cs.iteration_levels(tables) == [1, 2] and cs.level_label(2) == "Detailed (iteration level 2)"


def _result(sample, text, code=None, suppress=None):
    prepared, tables, geo, units, spine = sample
    code = code or cs.group_options(tables, prepared.inputs.specs, 2)["code"].iloc[0]
    av = rs.availability(units, tables, 2, code, geo.coterminous_sets())
    if suppress:
        x = int(np.flatnonzero([f"{g} {units.region_ids[g][r]}" == suppress
                                for g, r in zip(units.extra_geo, units.extra_region)])[0])
        av.extra.loc[x, "released"] = False
    res = rs.compose_area(units, av, rs.parse_area(text, geo), spine)
    direct = rs.nearest_unit(av, units, res.truth, exclude=set(res.units["unit"])) if res.composable else None
    return res, direct


def test_tables_chart_and_verdict_of_a_composed_area(sample):
    res, direct = _result(sample, "place 0600100\n- tract 06001000100")
    dec = cs.decomposition_table(res)
    assert dec["Published unit"].tolist() == ["Tract 06001000100", "Place 0600100"]
    assert dec["Sign"].tolist() == ["−", "+"] and set(dec["Available"]) == {"published"}
    summary = cs.summary_table(res, direct).set_index("Measure")
    assert summary.loc["Published units added or subtracted"].tolist() == ["2", "1"]
    assert summary.loc["95% MOE, exact law of the noise", "Custom area (composed)"] == f"{res.moe_exact:,}"
    assert summary.loc["True count (persons)", "Published unit of the same size"] == f"{direct['truth']:,}"
    fig, data = cs.variance_chart(res, direct)
    units = data[data["kind"] == "unit of the composition"]["variance"].sum()
    assert data.loc[data["kind"] == "composed count (sum)", "variance"].item() == pytest.approx(units)
    assert len(fig.data) == 3
    v = cs.area_verdict(res, direct)
    assert "2 published unit(s)" in v and f"±{res.moe_exact:,}" in v and cs.unit_label(direct["unit"]) in v
    census = cs.census_table(res)
    assert len(census) == res.census_osed


def test_not_composable_verdicts(sample):
    _p, _t, geo, _u, _s = sample
    keys = _keys(geo)
    res, direct = _result(sample, f"{keys[0]}\n{keys[1]}")
    assert direct is None and "cannot be built" in cs.area_verdict(res, None) and "2 unit(s)" in cs.area_verdict(
        res, None)
    assert cs.summary_table(res, None).set_index("Measure").loc["Published units added or subtracted"].tolist() == [
        "not composable", "—"]
    res, _d = _result(sample, "place 0600100\n- tract 06001000100", suppress="PLACE 0600100")
    v = cs.area_verdict(res, None)
    assert "Place 0600100 is suppressed" in v and "no estimate" in v
    assert cs.decomposition_table(res)["Available"].tolist() == ["published", "suppressed"]


def test_spine_study_tables_and_histogram(sample):
    _p, _t, geo, _u, _s = sample
    study = rs.spine_study(geo)
    fig, data = cs.osed_histogram(study.entities)
    per = data.groupby(["entities", "spine"])["count"].sum()
    assert per[("places", "Census spine")] == per[("places", "AIAN spine")] == per[("places", "optimised spine")] == 13
    assert per[("AIANNH areas", "Census spine")] == 3 and len(fig.data) == 6  # 3 spines x 2 kinds
    s = cs.osed_summary(study.entities).set_index(["Entities", "Spine"])
    assert s.loc[("AIANNH areas", "AIAN spine"), "Mean OSED"] == round(study.entities.loc[
        study.entities["level"] == "AIANNH", "osed_aian"].mean(), 2)
    s = cs.osed_summary(study.entities).set_index(["Entities", "Spine"])
    assert s.loc[("Places", "Census spine"), "Mean OSED"] == round(study.entities.loc[
        study.entities["level"] != "AIANNH", "osed_census"].mean(), 2)
    st = cs.safetab_summary(study.entities).set_index("Entities")
    assert st.loc["Places", "From tracts alone"] + st.loc["Places", "Not from tracts"] == 13
    table = cs.entities_table(study.entities)
    assert table["OSED, Census spine"].is_monotonic_decreasing
    assert "—" in set(table["SafeTab-P from tracts (— = not composable)"])
    assert cs.units_table(study).set_index("Level").loc["Block group"].tolist() == [32, 36, 30]
    assert "OSED, AIAN spine" in table.columns
    assert list(cs.bypass_table(study).columns) == ["Level", "Pure DP (geometric)", "zCDP (Gaussian)"]
    v = cs.spine_verdict(study)
    assert "16 places and AIANNH areas" in v and "3.2 units" in v and "AIAN spine alone" in v


def test_unit_labels():
    assert cs.unit_label("TRACT 06001000100") == "Tract 06001000100"
    assert cs.unit_label("PR-PLACE 7200100") == "PR place 7200100"
    assert cs.unit_label("") == ""
    assert cs.table_name(-1).startswith("total only") and cs.table_name(3) == "sex x age23"


def test_paper_numbers_match_the_papers_printed_values():
    """Sec. 4: a tract of 100 blocks has a lowest largest fan-out of 10 (10 block groups
    of 10, 11 units with the tract); Theorem 2: with equal shares a parent of at most 3
    children is bypassed under pure DP, only single children under zCDP."""
    t = cs.paper_numbers().set_index("The paper says")
    printed = t[t["Match"] != "—"]
    assert (printed["Match"] == "yes").all() and len(printed) == 5
    assert printed["Paper's value"].tolist() == ["10", "11", "3", "not increased (no number printed)", "1"]
    # Remark 1 states an if-and-only-if, no "(equality)" value; the equality is what is computed here.
    remark = t[t["Where"] == "§5, Remark 1"].iloc[0]
    assert "equality" not in remark["Paper's value"] and remark["Match"] == "yes"
    assert remark["Computed here"] == "before 0.75, after 0.75 (equal: the condition holds with equality)"
    # The cap row states the formula that gives its value: int(sqrt(100) + 12 + 1) = 23, not sqrt(n) + 12 = 22.
    cap = t.loc["Most blocks in an optimised block group (n = 100 blocks, fanout_cutoff = 12)"]
    assert cap["Paper's value"].startswith("lost in the text")
    assert cap["Computed here"] == "23 (production's int(√n + fanout_cutoff + 1) = int(10 + 12 + 1))"
    assert int(cap["Computed here"].split()[0]) == spines.group_size_cap(100, 12) == int(math.sqrt(100) + 12 + 1)
    assert not any("(√n + fanout_cutoff)" in s for s in t.index)


def test_the_spine_verdict_writes_counts_with_thousands_separators():
    """At national scale there are thousands of places (it printed "the 5185 places")."""
    from types import SimpleNamespace

    import pandas as pd

    n = 5185
    ent = pd.DataFrame({"level": ["PLACE"] * (n - 1200) + ["AIANNH"] * 1200, "osed_census": [3] * n,
                        "osed_aian": [2] * n, "osed_optimised": [1] * n, "osed_safetab_tree": [1] * n})
    v = cs.spine_verdict(SimpleNamespace(entities=ent, seconds=1.5))
    assert "the 5,185 places and AIANNH areas" in v and "the 1,200 AIANNH areas" in v
    assert "with 5,185 of them exactly on the spine" in v


def test_the_safetab_summary_is_shown_one_measure_per_row():
    """Six columns did not fit the page's half-width column at 1280 px ("N…" cut off):
    the page shows one row per measure and one column per kind of entity, the same values."""
    import pandas as pd

    ent = pd.DataFrame({"level": ["PLACE"] * 1500 + ["AIANNH"] * 2, "osed_safetab_tree": [1] * 1500 + [3, 2]})
    view = cs.safetab_summary_view(ent).set_index("Measure")
    assert list(view.columns) == ["Places", "AIANNH areas"]
    assert view.loc["Number", "Places"] == "1,500" and view.loc["From tracts alone", "AIANNH areas"] == "2"
    assert view.loc["Published directly", "Places"] == "all (OSED 1)"
    assert view.loc["Mean OSED from tracts", "AIANNH areas"] == "2.5"
