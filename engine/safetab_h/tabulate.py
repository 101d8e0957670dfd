"""SafeTab-H's tabulation: groups from the public T1, household counts, adaptivity,
noise and post-processing (production's ``safetab_h_analytics.py``, ``preprocessing.py``,
``postprocessing.py``).

* groups (`level_groups`): exactly the T1 rows of the run's geography levels whose
  iteration SafeTab-P tabulates there: level-0 iterations dropped, DETAILED_ONLY ones
  below the state and COARSE_ONLY ones at USA / STATE / PR-STATE pruned (SafeTab-P's
  flat-map domain, `engine.tabulation.flatmap.IterationCatalog`);
* counts: households are counted once into SafeTab-P's count table (`count_households`,
  `engine.tabulation.aggregate.LocalAggregator` with the household reader), a cell per
  (HOUSEHOLD_TYPE, TEN); a group's cells come from `LevelCounts.cells_of`, the flat map
  of SafeTab-P by the householder's codes;
* adaptivity: T3 level = number of T3 thresholds <= T1 COUNT, T4 level 1 if T1 COUNT >= its
  threshold (`calculators.safetab_h.table_level`);
* noise (`tabulate_query`): every direct cell of every group, zeros included, gets exact
  discrete Gaussian noise with sigma^2 = S / (2 rho) (zCDP) or two-sided geometric noise of
  scale S / epsilon (pure DP); one query per table x geography x iteration level, none
  when its budget is 0;
* post-processing: with allow_negative_counts false the direct cells are clamped at 0,
  then every published cell is the sum of its direct cells
  (`calculators.safetab_h.published_cells`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from calculators import budget, noise_family
from calculators.levels import PopulationGroupLevel
from calculators.safetab_h import (
    T3_CELL_OF_TYPE, T3_DIRECT, T4_CELL_OF_TEN, T4_DIRECT, TABLE_LEVELS, published_cells, table_level,
)
from engine.errors import ProblemLog
from engine.inputs import _arrow
from engine.inputs.readers import iter_batches
from engine.safetab_h.inputs import HOUSEHOLD_COLUMNS, N_TENURES, N_TYPES, HInputs, check_household_batch
from engine.tabulation.aggregate import CountTable, LocalAggregator, level_counts
from engine.tabulation.flatmap import IterationCatalog

Progress = Callable[[str, float, float], None]
Noise = Callable[[object, int], np.ndarray]


@dataclass
class LevelGroups:
    """The groups SafeTab-H tabulates at one (geography, iteration level): the T1 rows
    kept, with their published T1 count and their true household cells."""

    level: PopulationGroupLevel
    stability: int
    region_ids: np.ndarray  # label array (str), indexed by region_idx
    region_idx: np.ndarray  # int64
    codes: np.ndarray  # label array (str), indexed by code_idx
    code_idx: np.ndarray  # int64
    t1: np.ndarray  # int64, SafeTab-P's published count
    #: (n, 20) true households per cell (HOUSEHOLD_TYPE - 1) * 4 + (TEN - 1).
    cells: np.ndarray

    def __len__(self) -> int:
        return len(self.t1)

    def direct_truth(self, table: str, level: int, rows: np.ndarray | None = None) -> np.ndarray:
        """(n, direct cells) true households of each direct cell of a table level."""
        cells = self.cells if rows is None else self.cells[rows]
        n = len(cells)
        cube = cells.reshape(n, N_TYPES, N_TENURES)
        by = cube.sum(axis=2) if table == "t3" else cube.sum(axis=1)
        mapping = (T3_CELL_OF_TYPE if table == "t3" else T4_CELL_OF_TEN)[level]
        direct = (T3_DIRECT if table == "t3" else T4_DIRECT)[level]
        out = np.zeros((n, len(direct)), np.int64)
        for k, d in enumerate(mapping):
            out[:, direct.index(d)] += by[:, k]
        return out


@dataclass
class Pruned:
    """T1 rows SafeTab-H does not tabulate, by reason (for the manifest)."""

    unknown_iteration: int = 0
    level_0: int = 0
    pruned_detailed_only: int = 0
    pruned_coarse_only: int = 0
    outside_runs: int = 0
    region_not_in_grf: int = 0


def count_households(inputs: HInputs, progress: Progress | None = None) -> CountTable:
    """Read, check and count every household once (SafeTab-P's count table, 20 cells)."""
    def batches(cinputs, log: ProblemLog, ahead):
        for batch in iter_batches(inputs.households_file, HOUSEHOLD_COLUMNS, log, dictionary=True):
            yield batch.table.num_rows, check_household_batch(batch, inputs, log)

    return LocalAggregator(batches=batches, unit="household").count(inputs.counting_inputs(), progress=progress)


def level_groups(inputs: HInputs, table: CountTable, levels: list[PopulationGroupLevel]
                 ) -> tuple[list[LevelGroups], Pruned]:
    """The T1 groups of every level of the runs (pruned as production), their cells."""
    t1 = inputs.t1.table
    specs, geo = inputs.specs, inputs.geography
    catalog = IterationCatalog(specs)
    cinputs = inputs.counting_inputs()
    r = inputs.config.max_race_codes
    pruned = Pruned()
    # per distinct iteration code (a few thousand), then spread over the rows by index
    code_dict = pc.dictionary_encode(t1["ITERATION_CODE"]).combine_chunks()
    code_values = code_dict.dictionary.to_pylist()
    code_row = _arrow.numpy(code_dict.indices).astype(np.int64)
    its = [specs.iterations.get(c) for c in code_values]
    v_level = np.array([-1 if it is None else it.level for it in its], np.int64)
    it_level = v_level[code_row] if len(code_row) else np.zeros(0, np.int64)
    pruned.unknown_iteration = int((it_level < 0).sum())
    pruned.level_0 = int((it_level == 0).sum())
    rtype = _arrow.text(t1["REGION_TYPE"]) if t1.num_rows else np.zeros(0, str)
    run_geos = sorted({lvl.geo for lvl in levels})
    pruned.outside_runs = int((~np.isin(rtype, run_geos) & (it_level > 0)).sum())
    memberships: dict = {}
    out = []
    for lvl in levels:
        rows = np.flatnonzero((rtype == lvl.geo) & (it_level == lvl.iteration_level))
        codes = catalog.codes(lvl.geo, lvl.iteration_level)
        pos = {c: i for i, c in enumerate(codes)}
        v_idx = np.array([pos.get(c, -1) for c in code_values], np.int64)
        code_idx = v_idx[code_row[rows]]
        off = code_idx < 0
        if off.any():
            detailed = np.array([bool(it is not None and it.detailed_only) for it in its], bool)
            d = detailed[code_row[rows][off]]
            pruned.pruned_detailed_only += int(d.sum())
            pruned.pruned_coarse_only += int((~d).sum())
        rows, code_idx = rows[~off], code_idx[~off]
        S = specs.stability(lvl.iteration_level, r, lvl.geo)
        regions = geo.regions.get(lvl.geo, np.zeros(0, str))
        ids = t1["REGION_ID"].take(pa.array(rows))
        gi, in_grf = _arrow.index_in(ids, _arrow.strings([str(x) for x in regions]) if len(regions) else
                                     _arrow.strings([]))
        pruned.region_not_in_grf += int((~in_grf).sum())
        # labels: the level's GRF-C regions, then any T1 region GRF-C does not have
        extra = np.unique(_arrow.text(ids.filter(_arrow.mask(~in_grf)))) if (~in_grf).any() else np.zeros(0, str)
        region_ids = np.concatenate([np.asarray(regions, dtype=object), extra.astype(object)])
        region_idx = gi.copy()
        if len(extra):
            region_idx[~in_grf] = len(regions) + np.searchsorted(extra, _arrow.text(ids.filter(_arrow.mask(~in_grf))))
        cells = np.zeros((len(rows), N_TYPES * N_TENURES), np.int64)
        if in_grf.any():
            counts = level_counts(table, cinputs, catalog, lvl, S, memberships)
            group = gi[in_grf] * counts.n_iterations + code_idx[in_grf]
            order = np.argsort(group, kind="stable")
            got = counts.cells_of(group[order])
            sub = np.empty_like(got)
            sub[order] = got
            cells[in_grf] = sub[:, : N_TYPES * N_TENURES]
        out.append(LevelGroups(lvl, S, region_ids, region_idx.astype(np.int64), codes, code_idx,
                               _arrow.numpy(t1["COUNT"].take(pa.array(rows))).astype(np.int64), cells))
    return out, pruned


@dataclass
class QueryResult:
    """One query (table x geography x iteration level): per table level, the groups at
    that level, their direct cells (true and noisy, after clamping) and their published
    cells (the sums)."""

    table: str
    groups: LevelGroups
    scale: object  # sigma^2 (zCDP) or the geometric scale (pure DP), exact
    levels: np.ndarray  # table level of every group
    by_level: dict[int, dict] = field(default_factory=dict)


def tabulate_query(groups: LevelGroups, table: str, thresholds: tuple[int, ...], budget_exact, privacy_defn: str,
                   noise: Noise | None, allow_negative: bool) -> QueryResult:
    """Noise and post-process one query (`noise` None: the truth, no noise)."""
    family = noise_family.family_of(privacy_defn)
    scale = budget.noise_scale_exact(budget_exact, groups.stability, 1, family)
    lv = table_level(groups.t1, thresholds) if len(groups) else np.zeros(0, np.int64)
    res = QueryResult(table, groups, scale, np.asarray(lv, np.int64))
    for level in TABLE_LEVELS[table]:
        rows = np.flatnonzero(res.levels == level)
        truth = groups.direct_truth(table, level, rows)
        if noise is None:
            noisy = truth.copy()
        else:
            noisy = truth + np.asarray(noise(scale, truth.size), np.int64).reshape(truth.shape)
            if not allow_negative:
                noisy = np.maximum(noisy, 0)
        pub = published_cells(table, level)
        direct = (T3_DIRECT if table == "t3" else T4_DIRECT)[level]
        cols = [[direct.index(d) for d in parts] for parts in pub.values()]
        published = np.stack([noisy[:, c].sum(axis=1) for c in cols], axis=1) if len(rows) else \
            np.zeros((0, len(pub)), np.int64)
        res.by_level[level] = {"rows": rows, "direct_true": truth, "direct": noisy, "cells": list(pub),
                               "published": published}
    return res
