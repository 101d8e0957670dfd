"""The "Cell suppression" comparison's pure helpers (ui.compare.cell_suppression), on a
small hand-built input whose counts are known."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from calculators.levels import PopulationGroupLevel
from engine.reports.legacy import WITHHELD, LegacyOptions
from engine.run import prepare
from tests.engine.conftest import BLOCKS, Dataset, person
from ui.compare import layout as compare
from ui.compare import cell_suppression as cmp

LEVEL = PopulationGroupLevel("COUNTY", 2)
AGES = [10, 30, 50, 70]


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    """Albanians in two counties of state 01 (42 and 47 persons), a lone boy in the first;
    every other group is empty or tiny."""
    ds = Dataset(tmp_path_factory.mktemp("in"))
    a = {1: [1, 10, 5, 4], 2: [6, 8, 5, 3]}
    b = {1: [5, 7, 6, 4], 2: [4, 9, 7, 5]}
    ds.persons = [person(age=AGES[k], sex=s, block=blk, races=("1010",))
                  for table, blk in ((a, BLOCKS[0]), (b, BLOCKS[3]))
                  for s, cnt in table.items() for k, n in enumerate(cnt) for _ in range(n)]
    ds.persons += [person(age=40, block=BLOCKS[4], races=("1020",))]  # one Angolan in state 02
    ds.config["thresholds_p"]["(COUNTY, 2)"] = [10, 30, 60]
    ds.write()
    prepared = prepare(ds.params, ds.data)
    opts = LegacyOptions(geo="COUNTY", iteration_level=2, min_population=20, ages=4)
    return cmp.run(prepared, LEVEL, opts, seed=3)


#: Angolans of county 02001, alone in state 02: a lone boy whose row holds only zeros, whom
#: nothing can protect within Massell's capacities, so the solver fallback withholds his
#: county's and state's tables whole, totals included (23 persons: above the threshold of 20).
LONE_BOY = {1: [1, 0, 0, 0], 2: [6, 8, 5, 3]}


@pytest.fixture(scope="module")
def fallback_input(tmp_path_factory):
    """The study's Albanians, and the Angolan boy's group whose total is "D"."""
    ds = Dataset(tmp_path_factory.mktemp("fallback"))
    a = {1: [1, 10, 5, 4], 2: [6, 8, 5, 3]}
    b = {1: [5, 7, 6, 4], 2: [4, 9, 7, 5]}
    ds.persons = [person(age=AGES[k], sex=s, block=blk, races=(race,))
                  for table, blk, race in ((a, BLOCKS[0], "1010"), (b, BLOCKS[3], "1010"),
                                           (LONE_BOY, BLOCKS[4], "1020"))
                  for s, cnt in table.items() for k, n in enumerate(cnt) for _ in range(n)]
    ds.config["thresholds_p"]["(COUNTY, 2)"] = [10, 30, 60]
    ds.write()
    return prepare(ds.params, ds.data)


def _fallback_study(prepared, **options):
    opts = LegacyOptions(**{**dict(geo="COUNTY", iteration_level=2, min_population=20, ages=4), **options})
    return cmp.run(prepared, LEVEL, opts, seed=3)


def _grids(study) -> list[dict]:
    """Every group of the level, read from its legacy grid alone (the page's "One table"):
    its true size, whether its total is published (the Total cell's status), whether a sex
    by age cell is, and why its total is withheld."""
    out = []
    for g in range(study.table.values.shape[0]):
        grid = cmp.legacy_grid(study, g)
        total = grid[(grid.Row == "Both sexes") & (grid.Column == "All ages")].iloc[0]
        cells = grid[grid.Column != "All ages"]
        out.append({"size": int(total["True count"]), "total": total.Published != WITHHELD, "status": total.Status,
                    "table": bool((cells.Published != WITHHELD).any())})
    return out


def test_a_group_whose_total_is_d_is_not_counted_as_published(fallback_input):
    """The summary, its shares and the metrics count a group as published only when the
    Total cell of its own table is published: a total withheld by the solver fallback
    (D, though the group reaches the threshold) is not."""
    study = _fallback_study(fallback_input)
    groups = _grids(study)
    d_total = [g for g in groups if g["size"] >= 20 and not g["total"]]
    assert d_total and {g["status"] for g in d_total} == {"solver fallback"}  # the case under test
    published = sum(g["total"] for g in groups)
    c = cmp.counts(study, 2)[cmp.LEGACY]
    assert c["groups_published"] == published
    assert c["groups_with_table"] == sum(g["table"] for g in groups)
    assert c["groups_with_persons_published"] == sum(g["total"] and g["size"] > 0 for g in groups)
    assert c["totals_withheld"]["solver fallback"] == len(d_total)
    assert (f"Among them are the totals of {len(d_total):,} groups that reach the minimum population"
            in cmp.solver_heading(c, study.legacy.notes))
    row = cmp.summary(study, 2).set_index("Measure").loc["Groups with a published total", cmp.LEGACY]
    assert row == f"{published:,} ({100 * published / len(groups):.1f}%)"
    persons = cmp.summary(study, 2).set_index("Measure").loc["Persons in groups with a published total", cmp.LEGACY]
    assert persons.startswith(f"{sum(g['size'] for g in groups if g['total']):,} of ")
    # the D-total group is still offered in "One table", where its D total shows, and the
    # audit (cell_suppression_audit.csv) lists every such total with its reason
    assert any(cmp.legacy_grid(study, g).Published.eq(WITHHELD).all() for _lab, g in cmp.table_choices(study))
    audit = cmp.audit_frame(study)
    totals = audit[(audit.Geography == "COUNTY") & (audit.Count == "Total")
                   & (audit["Why withheld"] != "group below threshold")]
    assert len(totals) == len(d_total) and set(totals["Why withheld"]) == {"solver fallback"}


def test_the_chart_by_size_counts_published_totals_and_tables(fallback_input):
    study = _fallback_study(fallback_input)
    groups = _grids(study)
    df = cmp.detail_by_size(study)
    legacy = df[df.Method == cmp.LEGACY].set_index("Group size")
    bins = cmp._size_bin(np.array([g["size"] for g in groups]))
    for k, label in enumerate(cmp.SIZE_LABELS):
        in_bin = [g for g, b in zip(groups, bins) if b == k]
        if not in_bin:
            assert label not in legacy.index
            continue
        assert legacy.loc[label, "Groups"] == len(in_bin)
        assert legacy.loc[label, "Groups with a published total (%)"] == round(
            100 * sum(g["total"] for g in in_bin) / len(in_bin), 1)
        assert legacy.loc[label, "Groups with a sex by age table (%)"] == round(
            100 * sum(g["table"] for g in in_bin) / len(in_bin), 1)
    d_bin = cmp.SIZE_LABELS[int(cmp._size_bin(np.array([23]))[0])]  # the D-total group's bin is not 100%
    assert legacy.loc[d_bin, "Groups with a published total (%)"] < 100


def _verdict_numbers(study) -> tuple[int, int]:
    groups = _grids(study)
    return sum(g["total"] and g["size"] > 0 for g in groups), sum(g["size"] > 0 for g in groups)


def test_the_verdict_counts_published_totals_among_the_groups_with_persons(fallback_input):
    """The verdict's "N of M groups with persons" counts, among the groups with persons,
    those whose total is published; it says why the other totals above the threshold are
    withheld; it follows the protection and the minimum population."""
    texts = {}
    for name, opts in (("default", {}), ("protection 1000", {"protection": 1000}),
                       ("minimum population 45", {"min_population": 45}),
                       ("minimum population 0", {"min_population": 0})):
        study = _fallback_study(fallback_input, **opts)
        published, with_persons = _verdict_numbers(study)
        assert published <= with_persons
        text = cmp.verdict(study, 2)
        assert f"publishes an exact total for {published:,} of the {with_persons:,} groups with persons" in text, name
        withheld = sum(g["size"] >= study.legacy.options.min_population and g["size"] > 0 and not g["total"]
                       for g in _grids(study))
        assert (f"the totals of {withheld:,} more groups that reach the minimum population are withheld" in text
                if withheld > 1 else "more group" not in text), name
        texts[name] = (published, text)
    assert "by the solver fallback" in texts["default"][1]
    assert texts["protection 1000"][0] < texts["default"][0]  # every part with a small count withheld whole
    assert texts["minimum population 45"][0] < texts["default"][0]  # 01001's Albanians (42 persons) withheld
    assert len({texts[n][1] for n in ("default", "protection 1000", "minimum population 45")}) == 3


def test_with_no_minimum_population_every_share_is_over_one_set_of_groups(fallback_input):
    """Minimum population 0: empty groups publish a total of 0; the summary's share is over
    all groups, the verdict's over the groups with persons, never more than their set."""
    study = _fallback_study(fallback_input, min_population=0)
    groups = _grids(study)
    c = cmp.counts(study, 2)[cmp.LEGACY]
    assert c["groups_published"] == sum(g["total"] for g in groups) > c["groups_with_persons"]
    assert c["groups_with_persons_published"] == sum(g["total"] and g["size"] > 0 for g in groups)
    assert c["groups_with_persons_published"] <= c["groups_with_persons"]
    row = cmp.summary(study, 2).set_index("Measure").loc["Groups with a published total", cmp.LEGACY]
    assert row == f"{c['groups_published']:,} ({100 * c['groups_published'] / len(groups):.1f}%)"


def test_the_page_is_registered_under_compare_methods():
    paths = [m.path for m in compare.METHODS]
    assert "app_pages/compare/cell_suppression.py" in paths
    page = compare.METHODS[paths.index("app_pages/compare/cell_suppression.py")]
    assert page.title == "Cell suppression" and "Massell" in page.source


def test_summary_counts_the_same_groups_on_both_sides(study):
    c = cmp.counts(study, 2)
    legacy, sp = c[cmp.LEGACY], c[cmp.SAFETAB]
    t = study.safetab.tables[LEVEL]
    assert legacy["groups"] == sp["groups"] == t.truth.size
    assert legacy["groups_published"] == 4  # Albanian alone and in combination, two counties
    assert sp["groups_published"] == int(t.released.sum())
    assert sp["cells_published"] == sum(cells.size for _k, cells in study.safetab.cells[LEVEL].values())
    table = cmp.summary(study, 2)
    assert list(table.columns) == ["Measure", cmp.LEGACY, cmp.SAFETAB]
    row = table.set_index("Measure").loc["Groups with a published total"]
    assert row[cmp.LEGACY].startswith("4 (") and row[cmp.SAFETAB].startswith(f"{sp['groups_published']} (")
    assert "Computing time" in set(table["Measure"])


def test_the_legacy_grid_shows_exact_counts_and_d_with_the_audit_range(study):
    choices = cmp.table_choices(study)
    assert len(choices) == 4
    labels = [lab for lab, _g in choices]
    assert labels[0].startswith("01001") or labels[0].startswith("01003")
    g = dict(choices)[[lab for lab in labels if lab.startswith("01001")][0]]
    grid = cmp.legacy_grid(study, g)
    assert len(grid) == 8 + 2 + 1
    boy = grid[(grid.Row == "Male") & (grid.Column == "0-17")].iloc[0]
    assert boy.Published == WITHHELD and boy.Status == "primary" and boy["True count"] == 1
    assert boy["Lowest possible"] <= 0 and boy["Highest possible"] >= 4
    shown = grid[grid.Published != WITHHELD]
    assert (shown.Published.astype(int) == shown["True count"]).all()
    withheld = grid[grid.Published == WITHHELD]
    assert ((withheld["Lowest possible"] <= withheld["True count"])
            & (withheld["True count"] <= withheld["Highest possible"])).all()
    fig = cmp.grid_figure(grid, "legacy")
    assert len(fig.layout.annotations) == len(grid)
    assert any("D  [" in a.text for a in fig.layout.annotations)


def test_the_safetab_grid_is_its_own_noisy_table(study):
    t = study.safetab.tables[LEVEL]
    stat = t.stat_level.reshape(-1)
    g = int(np.flatnonzero(stat >= 1)[0])
    grid, note = cmp.safetab_grid(study, g)
    k, cells = study.safetab.cells[LEVEL][g]
    assert note.startswith(f"Stat level {k}")
    body = grid[grid.Column != "All ages"]
    assert len(body) == cells.size and (grid.Status == "noisy").all()
    male = grid[(grid.Row == "Male") & (grid.Column == "All ages")].Published.astype(int).item()
    assert male == int(cells[: cells.size // 2].sum())
    total = grid[grid.Row == "Both sexes"].Published.astype(int).item()
    assert total == int(t.published.reshape(-1)[g])
    g0 = int(np.flatnonzero(stat == 0)[0])
    grid0, note0 = cmp.safetab_grid(study, g0)
    assert len(grid0) == 1 and ("total" in note0.lower())


def test_detail_by_size_and_its_chart(study):
    df = cmp.detail_by_size(study)
    assert set(df["Method"]) == {cmp.LEGACY, cmp.SAFETAB}
    for col in ("Groups with a published total (%)", "Groups with a sex by age table (%)"):
        assert df[col].between(0, 100).all()
    legacy = df[df["Method"] == cmp.LEGACY].set_index("Group size")
    assert legacy.loc["10-99 persons", "Groups with a sex by age table (%)"] == 100.0  # 42 and 47 >= 20
    assert legacy.loc["1-9 persons", "Groups with a published total (%)"] == 0.0
    fig = cmp.size_chart(df)
    assert len(fig.data) == 4 and fig.layout.yaxis.title.text == "Share of groups (%)"


def test_audit_frame_lists_withheld_counts_narrowest_first(study):
    audit = cmp.audit_frame(study)
    assert {"Geography", "Region", "Group", "Count", "Why withheld", "Lowest possible", "Highest possible",
            "Width", "Recovered exactly", "Protection met"} <= set(audit.columns)
    assert (np.diff(audit["Width"].to_numpy()) >= 0).all()
    boy = audit[(audit.Region == "01001") & (audit.Count == "Male 0-17") & (audit["Iteration code"] == "3001")]
    assert boy["Why withheld"].item() == "primary" and boy["Protection met"].item()
    assert "Albanian alone" in set(audit.Group)


def test_verdict_states_both_sides_in_numbers(study):
    text = cmp.verdict(study, 2)
    c = cmp.counts(study, 2)
    assert (f"exact total for {c[cmp.LEGACY]['groups_with_persons_published']:,} of the "
            f"{c[cmp.LEGACY]['groups_with_persons']:,} groups with persons") in text
    # both sides say of how many: SafeTab-P's total is over every group of the level (its public universe)
    assert (f"a total for {c[cmp.SAFETAB]['groups_published']:,} of the {c[cmp.SAFETAB]['groups']:,} groups "
            "of the level") in text
    assert f"±{study.moe_cell:,}" in text
    big = dataclasses.replace(study, moe_cell=3745)  # a pure-DP plan's MOE: with its thousands separator
    assert "±3,745 at 95% per cell" in cmp.verdict(big, 2)


def test_labels_and_durations():
    assert cmp.level_label(PopulationGroupLevel("COUNTY", 2)) == "COUNTY Detailed, linked to STATE"
    assert cmp.level_label(PopulationGroupLevel("AIANNH", 2)) == "AIANNH Detailed"
    assert cmp.seconds(0.0123) == "12 ms" and cmp.seconds(12.34) == "12.3 s"
    assert len(cmp.legend_frame()) == len(cmp.STATUS_COLORS)


def test_paper_numbers_check_massells_statements():
    t = cmp.paper_numbers().set_index("The paper says")
    # Massell prints no number here: 17 is this example's own grand total, said as such (not "≤ 17").
    assert t.loc["Audit bounds: each value between 0 and the grand total", "Paper's value"] == \
        "0 to the grand total (no number)"
    assert "17" not in t.loc["Audit bounds: each value between 0 and the grand total", "Paper's value"]
    assert t.loc["Audit bounds: each value between 0 and the grand total", "Computed here"].startswith(
        "this example's grand total 17: largest upper end 17")
    assert "x[0,0] in [0, 5]" in t.loc["Audit bounds: each value between 0 and the grand total", "Computed here"]
    assert t.loc["Capacity = the cell's value: zero cells protect nothing", "Computed here"] == \
        "0 (value); 2 with unbounded capacity"
    assert t.loc["Frozen cells: the largest protection they allow", "Computed here"].startswith("0 of 2")
    assert t.loc["LP-based suppression protects 3-D tables at the cell level", "Computed here"].startswith("Yes")
    assert (t.drop("Backtracking across linked tables (60 → 100 units)")["Match"] == "yes").all()
    assert t.loc["Backtracking across linked tables (60 → 100 units)", "Match"] == "—"


def test_the_solver_heading_counts_what_was_withheld_whole():
    assert cmp.solver_heading({"fallback": 1234}).startswith("1,234 counts of this level were withheld whole")
    assert cmp.solver_heading({"fallback": 0}) == "Notes from the legacy method's solver:"
    infeasible = ["3 connected parts: no complementary cells can protect a primary within the capacities "
                  "(infeasible LP): the part is withheld whole"]
    assert "to Unbounded lets it" in cmp.solver_heading({"fallback": 12}, infeasible)
    assert "Unbounded" not in cmp.solver_heading({"fallback": 12}, ["1 connected part: time limit ..."])


def test_the_summary_fits_its_columns(study):
    """Every entry of the side-by-side summary is whole in its column (fit_columns widens
    each to its longest entry), and the three columns fit a laptop's page (900 px)."""
    from ui.core import widgets

    summary = cmp.summary(study, 2.0)
    cfg = widgets.fit_columns(summary, {c: {"width": 120} for c in summary.columns})
    for col in summary.columns:
        assert cfg[col]["width"] >= max(widgets.text_px(v) for v in summary[col]) + widgets.CELL_PADDING_PX
    assert sum(cfg[c]["width"] for c in summary.columns) <= 900


def test_paper_numbers_cite_the_section_that_states_each_rule():
    """The capacity row cited §3 for "the capacity of a cell is equal to its value", which the
    seed states in §2 (History); §3 only bounds each cell's LP variables by its capacity."""
    from pathlib import Path

    where = cmp.paper_numbers().set_index("The paper says")["Where"]
    assert where["Capacity = the cell's value: zero cells protect nothing"] == "§2-3"
    paper = Path(__file__).resolve().parents[4] / "shared" / "papers" / "cell-suppression-audit.txt"
    if paper.exists():
        text = paper.read_text(encoding="utf-8")
        heads = ["\n2. History of Suppression", "\n3. Basic Features of the Optimizing",
                 "\n4. Basic Features of Audit Programs"]
        sec = {n: text.split(heads[n - 2], 1)[1].split(heads[n - 1], 1)[0] for n in (2, 3)}
        assert "In the simplest cases, the capacity of a cell is" in sec[2]
        assert "the capacity of a cell is" not in sec[3] and "ub=capacity(i)" in sec[3]
