"""A whole SafeTab-P run: validate, count, tabulate with noise, post-process, write.

`prepare` does everything that does not draw noise (validation and aggregation);
`iter_published` tabulates every population group level chunk by chunk; `run` writes
a release (or the ground truth) to OUT_DIR with its manifest.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from fractions import Fraction
from pathlib import Path
from typing import Callable, Iterator

import numpy as np
import pyarrow as pa

from calculators.config import SafeTabConfig
from calculators.levels import ITERATION_LEVELS, PopulationGroupLevel
from engine.aggregate import Aggregator, CountTable, GroupCounts, LocalAggregator, group_counts
from engine.flatmap import IterationCatalog
from engine.mechanism import LevelPlan, Noise, level_plan, tabulate_chunk
from engine.postprocess import GroupOutput, Published, coterminous_copies, group_output, postprocess_chunk
from engine.validate import Inputs, load_inputs

Progress = Callable[[str, float, float], None]
#: Groups tabulated at once; bounds memory independently of the universe size.
CHUNK_GROUPS = 2_000_000


@dataclass
class Prepared:
    """Validated inputs and person counts: everything a run needs before noise."""

    inputs: Inputs
    table: CountTable
    catalog: IterationCatalog
    stability: dict[int, int]
    plans: dict[PopulationGroupLevel, LevelPlan]
    timings: dict[str, float] = field(default_factory=dict)
    _csr_cache: dict = field(default_factory=dict, repr=False)

    @property
    def levels(self) -> list[PopulationGroupLevel]:
        return list(self.plans)

    def counts(self, level: PopulationGroupLevel) -> GroupCounts:
        return group_counts(self.table, self.inputs, self.catalog, level, self.stability[level.iteration_level],
                            self._csr_cache)

    def universe_size(self, level: PopulationGroupLevel) -> int:
        return self.inputs.geography.n_regions(level.geo) * len(self.catalog.iterations(level.geo, level.iteration_level))


def prepare(params_dir: str | Path, data_dir: str | Path, progress: Progress | None = None,
            aggregator: Aggregator | None = None, config: SafeTabConfig | None = None) -> Prepared:
    """Validate everything and count persons (raises InputError before any noise).

    `config`, if given, is used instead of PARAMS_DIR/config.json.
    """
    t0 = time.perf_counter()
    inputs = load_inputs(params_dir, data_dir, config=config)
    t1 = time.perf_counter()
    table = (aggregator or LocalAggregator()).count(inputs, progress=progress)
    t2 = time.perf_counter()
    catalog = IterationCatalog(inputs.specs)
    config = inputs.config
    stability = {lvl: inputs.specs.stability(lvl, config.max_race_codes) for lvl in ITERATION_LEVELS}
    plans = {
        lvl: level_plan(config, lvl, stability[lvl.iteration_level])
        for lvl in config.tabulated_levels()
        if inputs.geography.n_regions(lvl.geo) > 0
    }
    prepared = Prepared(inputs, table, catalog, stability, plans)
    prepared.timings = {"load_inputs": t1 - t0, "read_and_count_persons": t2 - t1}
    return prepared


def iter_published(
    prepared: Prepared,
    noise: Noise,
    truth: bool = False,
    progress: Progress | None = None,
    chunk_groups: int = CHUNK_GROUPS,
) -> Iterator[tuple[GroupCounts, Published]]:
    """Tabulate every level, chunk by chunk, yielding post-processed results."""
    allow_negative = prepared.inputs.config.allow_negative_counts
    total_groups = sum(prepared.universe_size(lvl) for lvl in prepared.levels)
    done = 0
    for lvl, plan in prepared.plans.items():
        if truth:
            # The ground truth publishes every group: nothing is suppressed.
            plan = replace(plan, suppression_threshold=None)
        counts = prepared.counts(lvl)
        totals = counts.totals()
        detailed_only = prepared.catalog.detailed_only(lvl.geo, lvl.iteration_level)
        for g0 in range(0, counts.n_groups, chunk_groups):
            g1 = min(counts.n_groups, g0 + chunk_groups)
            res = tabulate_chunk(plan, counts, totals, detailed_only, g0, g1, noise, truth=truth)
            pub = postprocess_chunk(res, plan, allow_negative or truth)
            done += g1 - g0
            if progress:
                progress(f"tabulating {lvl.geo}, level {lvl.iteration_level}", done, total_groups)
            yield counts, pub


def make_noise(privacy_defn: str, source) -> Noise:
    """The release noise: exact discrete Gaussian (zCDP) or two-sided geometric (pure DP)."""
    from engine import noise as _noise

    if privacy_defn == "puredp":
        return lambda scale, size: _noise.sample_two_sided_geometric(scale, size, source)
    return lambda sigma2, size: _noise.sample_discrete_gaussian(sigma2, size, source)


@dataclass
class RunResult:
    out_dir: Path
    manifest: dict


def run(
    params_dir: str | Path,
    data_dir: str | Path,
    out_dir: str | Path,
    *,
    seed: int | None = None,
    truth: bool = False,
    coterminous: bool = True,
    overwrite: bool = False,
    progress: Progress | None = None,
    prepared: Prepared | None = None,
) -> RunResult:
    """Validate, tabulate and write a release (or, with `truth`, the noise-free tables).

    With `seed` the noise is reproducible and the manifest says "not for release".
    Nothing is written unless the whole run succeeds.
    """
    from engine import noise as _noise
    from engine.manifest import build_manifest
    from engine.outputs import ReleaseWriter, check_out_dir

    started = time.perf_counter()
    check_out_dir(Path(out_dir), overwrite)
    if prepared is None:
        prepared = prepare(params_dir, data_dir, progress)
    source = None
    if not truth:
        source = _noise.RandomSource.seeded(seed) if seed is not None else _noise.RandomSource.secure()
    noise = make_noise(prepared.inputs.config.privacy_defn, source)
    writer = ReleaseWriter(out_dir, overwrite=overwrite)
    try:
        t0 = time.perf_counter()
        stats = _write_release(prepared, writer, noise, truth, coterminous, progress)
        t1 = time.perf_counter()
        timings = dict(prepared.timings)
        timings["tabulate_and_write"] = t1 - t0
        timings["total"] = t1 - started
        manifest = build_manifest(prepared, stats, writer.rows, source=source, truth=truth,
                                  coterminous=coterminous, timings=timings)
        out = writer.finish(manifest)
    except BaseException:
        writer.abort()
        raise
    return RunResult(out, manifest)


def _write_release(prepared: Prepared, writer, noise: Noise, truth: bool, coterminous: bool,
                   progress: Progress | None) -> dict:
    geo = prepared.inputs.geography
    sets = geo.coterminous_sets() if coterminous else []
    member_mask: dict[str, np.ndarray] = {}
    for members in sets:
        for g, r in members:
            member_mask.setdefault(g, np.zeros(geo.n_regions(g), dtype=bool))[r] = True
    stash: dict[tuple[str, int, int, str], GroupOutput] = {}
    region_arrays = {g: pa.array(geo.regions[g].astype(str)) for g in geo.regions}
    stats: dict[str, dict] = {}
    for counts, pub in iter_published(prepared, noise, truth=truth, progress=progress):
        lvl = pub.plan.level
        key = f"({lvl.geo}, {lvl.iteration_level})"
        codes = prepared.catalog.codes(lvl.geo, lvl.iteration_level)
        code_arr = pa.array(codes.astype(str))
        n_it = counts.n_iterations
        st = stats.setdefault(key, {"groups": 0, "total_only": 0, "stat_level_0": 0, "stat_level_1": 0,
                                    "stat_level_2": 0, "stat_level_3": 0, "suppressed": 0})
        st["groups"] += pub.n
        st["total_only"] += int((pub.stat_level == -1).sum())
        for k in range(4):
            st[f"stat_level_{k}"] += int((pub.stat_level == k).sum())
        st["suppressed"] += int((~pub.released).sum())

        groups = np.arange(pub.g0, pub.g1, dtype=np.int64)
        stashed = np.zeros(pub.n, dtype=bool)
        if lvl.geo in member_mask:
            stashed = member_mask[lvl.geo][groups // n_it]
            for g in groups[stashed]:
                stash[(lvl.geo, lvl.iteration_level, int(g // n_it), str(codes[g % n_it]))] = group_output(pub, int(g))
        part = f"{lvl.geo}-{lvl.iteration_level}"
        regions = region_arrays[lvl.geo]
        rel = pub.released & ~stashed
        g_rel = groups[rel]
        writer.write_t1(part, regions.take(pa.array(g_rel // n_it)), lvl.geo, code_arr.take(pa.array(g_rel % n_it)),
                        pub.t1[rel])
        sup = ~pub.released & ~stashed
        g_sup = groups[sup]
        writer.write_suppressed(part, regions.take(pa.array(g_sup // n_it)), lvl.geo,
                                code_arr.take(pa.array(g_sup % n_it)))
        for k, (tg, cells, marg) in sorted(pub.tables.items()):
            keep = ~stashed[tg - pub.g0]
            tg = tg[keep]
            writer.write_t2(part, regions.take(pa.array(tg // n_it)), lvl.geo, code_arr.take(pa.array(tg % n_it)),
                            k, cells[keep], marg[keep])
    if sets:
        new, changed = coterminous_copies(sets, stash)
        _write_outputs(writer, geo, new)
        stats["coterminous"] = {"sets": len(sets), "groups": len(new), "groups_changed": changed}
    return stats


def _write_outputs(writer, geo, outputs: dict[tuple[str, int, int, str], GroupOutput]) -> None:
    """Write stashed per-group outputs (the coterminous members) into 'coterminous' parts."""
    by_level: dict[tuple[str, int], list[tuple[int, str, GroupOutput]]] = {}
    for (g, lvl, region, code), out in outputs.items():
        by_level.setdefault((g, lvl), []).append((region, code, out))
    for (g, lvl), items in sorted(by_level.items()):
        part = f"coterminous-{g}-{lvl}"
        rid = [str(geo.regions[g][r]) for r, _c, _o in items]
        codes = [c for _r, c, _o in items]
        rel = [o.released for _r, _c, o in items]
        t1 = np.array([o.t1 for _r, _c, o in items], dtype=np.int64)
        mask = np.array(rel, dtype=bool)
        writer.write_t1(part, pa.array(np.array(rid)[mask]), g, pa.array(np.array(codes)[mask]), t1[mask])
        writer.write_suppressed(part, pa.array(np.array(rid)[~mask]), g, pa.array(np.array(codes)[~mask]))
        for k in (1, 2, 3):
            sel = [i for i, (_r, _c, o) in enumerate(items) if o.stat_level == k]
            if not sel:
                continue
            cells = np.stack([items[i][2].cells for i in sel])
            marg = np.stack([items[i][2].marginals for i in sel])
            writer.write_t2(part, pa.array([rid[i] for i in sel]), g, pa.array([codes[i] for i in sel]), k, cells, marg)


def sigma2_table(prepared: Prepared) -> dict[str, dict[str, Fraction]]:
    return {
        lvl.key: {"stage1": p.stage1, "stage2": p.stage2, "total_only": p.total_only}
        for lvl, p in prepared.plans.items()
    }
