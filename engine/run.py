"""A whole SafeTab-P run: validate, count, tabulate with noise, post-process, write.

`prepare` does everything that does not draw noise (validation and aggregation);
`iter_published` tabulates every population group level chunk by chunk; `run` writes
a release (or the ground truth) to OUT_DIR with its manifest.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Iterator

import numpy as np

from calculators.config import SafeTabConfig
from calculators.levels import POPULATION_GROUP_LEVELS, PopulationGroupLevel
from engine.tabulation.aggregate import (
    Aggregator, CellCache, CountTable, KeyRecords, LevelCounts, LocalAggregator, all_totals, level_counts,
    read_persons_ahead,
)
from engine.tabulation.flatmap import IterationCatalog, geo_class
from engine.tabulation.mechanism import LevelPlan, Noise, level_plan, tabulate_level
from engine.tabulation.mechanism import TOTAL_ONLY
from engine.tabulation.postprocess import (
    TABULATION_NOTE, TABULATION_RULES, CoterminousStash, GroupRows, Published, StashedRows, TabulationSuppression,
    alone_pairs, postprocess_chunk,
)
from engine.inputs.validate import Inputs, load_inputs
from engine.timing import Phases, process_cpu

Progress = Callable[[str, float, float], None]
#: Groups tabulated at once; bounds memory independently of the universe size.
CHUNK_GROUPS = 2_000_000


@dataclass
class Prepared:
    """Validated inputs and person counts: everything a run needs before noise."""

    inputs: Inputs
    table: CountTable
    catalog: IterationCatalog
    #: S of every population group level (SPEC §1: h_r, h_e per tabulation class).
    stability: dict[PopulationGroupLevel, int]
    plans: dict[PopulationGroupLevel, LevelPlan]
    timings: dict[str, float] = field(default_factory=dict)
    #: Wall-clock and CPU seconds per phase of the work done with these inputs.
    phases: Phases = field(default_factory=Phases)
    _memberships: dict = field(default_factory=dict, repr=False)
    _records: KeyRecords | None = field(default=None, repr=False)
    _totals: dict = field(default_factory=dict, repr=False)
    #: Keep every level's table cells once counted (`CellCache`), for the trials of a
    #: study (a single run counts them once and needs no cache).
    keep_cells: bool = False
    _cells: dict = field(default_factory=dict, repr=False)

    @property
    def levels(self) -> list[PopulationGroupLevel]:
        return list(self.plans)

    def counts(self, level: PopulationGroupLevel) -> LevelCounts:
        """The counts of every population group of a level (`engine.tabulation.aggregate`):
        `.totals()` and `.cells_of(groups)`; the public counting entry point."""
        counts = level_counts(self.table, self.inputs, self.catalog, level, self.stability[level],
                              self._memberships, records=self._records)
        counts.known_totals = self._totals.get(level)
        if self.keep_cells:
            counts.cell_cache = self._cells.setdefault(level, CellCache())
        return counts

    def freeze_cells(self) -> None:
        """Keep serving the cells counted so far, and add no more (`CellCache.frozen`): a
        worker process of a parallel study shares them with the others copy-on-write."""
        for cache in self._cells.values():
            cache.frozen = True

    def compute_totals(self) -> None:
        """The totals of every tabulated level, in one pass over the count table (kept
        for the later `counts` of this run, and of every trial of a study)."""
        todo = [lvl for lvl in self.levels if lvl not in self._totals]
        if not todo:
            return
        counts = [self.counts(lvl) for lvl in todo]
        classes = sorted({(geo_class(lvl.geo), lvl.iteration_level) for lvl in self.levels})
        if self._records is None or not set(classes) <= set(self._records.classes):
            self._records = KeyRecords.build(classes, [self._memberships[c] for c in classes], self.table.charkeys)
        for c in counts:
            c.records = self._records
        self._totals.update(zip(todo, all_totals(self.table, counts)))

    def universe_size(self, level: PopulationGroupLevel) -> int:
        return self.inputs.geography.n_regions(level.geo) * len(self.catalog.iterations(level.geo, level.iteration_level))


def prepare(params_dir: str | Path, data_dir: str | Path, progress: Progress | None = None,
            aggregator: Aggregator | None = None, config: SafeTabConfig | None = None) -> Prepared:
    """Validate everything and count persons (raises InputError before any noise).

    `config`, if given, is used instead of PARAMS_DIR/config.json.
    """
    phases = Phases()
    t0 = time.perf_counter()
    local = aggregator is None or isinstance(aggregator, LocalAggregator)
    # parse the first blocks of a text person file while the spec files and GRF-C are read
    ahead = read_persons_ahead(data_dir) if local else None
    with ahead if ahead is not None else contextlib.nullcontext():
        with phases("load_inputs"):
            inputs = load_inputs(params_dir, data_dir, config=config)
        t1 = time.perf_counter()
        with phases("read_and_count_persons"):
            if local:
                table = (aggregator or LocalAggregator()).count(inputs, progress=progress, ahead=ahead)
            else:
                table = aggregator.count(inputs, progress=progress)
    t2 = time.perf_counter()
    catalog = IterationCatalog(inputs.specs)
    config = inputs.config
    stability = {lvl: inputs.specs.stability(lvl.iteration_level, config.max_race_codes, lvl.geo)
                 for lvl in POPULATION_GROUP_LEVELS}
    plans = {
        lvl: level_plan(config, lvl, stability[lvl])
        for lvl in config.tabulated_levels()
        if inputs.geography.n_regions(lvl.geo) > 0
    }
    prepared = Prepared(inputs, table, catalog, stability, plans, phases=phases)
    prepared.timings = {"load_inputs": t1 - t0, "read_and_count_persons": t2 - t1}
    return prepared


def validate(params_dir: str | Path, data_dir: str | Path, progress: Progress | None = None) -> Inputs:
    """Check every input file; raises InputError with all problems found (SPEC §4).

    The persons are checked by the aggregation pass itself (they are read once), so
    validation runs the counting and throws the counts away.
    """
    ahead = read_persons_ahead(data_dir)
    with ahead if ahead is not None else contextlib.nullcontext():
        inputs = load_inputs(params_dir, data_dir)
        LocalAggregator().count(inputs, progress=progress, ahead=ahead)
    return inputs


def iter_published(
    prepared: Prepared,
    noise: Noise,
    truth: bool = False,
    progress: Progress | None = None,
    chunk_groups: int = CHUNK_GROUPS,
    phases: Phases | None = None,
    whole_regions: bool = False,
) -> Iterator[tuple[LevelCounts, Published]]:
    """Tabulate every level, chunk by chunk, yielding post-processed results (timed
    into `phases`, by default the prepared inputs' own). `whole_regions`: every chunk
    holds all the iterations of its regions (the Tabulation System's rules compare two
    groups of one region)."""
    allow_negative = prepared.inputs.config.allow_negative_counts
    total_groups = sum(prepared.universe_size(lvl) for lvl in prepared.levels)
    done = 0
    phases = prepared.phases if phases is None else phases
    with phases("level_totals"):
        prepared.compute_totals()
    for lvl, plan in prepared.plans.items():
        if truth:
            # The ground truth publishes every group: nothing is suppressed.
            plan = replace(plan, suppression_threshold=None)
        counts = prepared.counts(lvl)
        detailed_only = prepared.catalog.detailed_only(lvl.geo, lvl.iteration_level)
        chunk = chunk_groups
        if whole_regions:
            n_it = max(counts.n_iterations, 1)
            chunk = max(n_it, chunk_groups // n_it * n_it)
        for res in tabulate_level(plan, counts, detailed_only, noise, truth=truth, chunk_groups=chunk,
                                  phases=phases):
            with phases("postprocess"):
                pub = postprocess_chunk(res, plan, allow_negative or truth)
            done += res.g1 - res.g0
            if progress:
                progress(f"tabulating {lvl.geo}, level {lvl.iteration_level}", done, total_groups)
            yield counts, pub


def publish_trial(prepared: Prepared, noise: Noise, sinks: tuple, progress: Progress | None = None,
                  coterminous: bool = True, tabulation_suppression: bool = False) -> dict:
    """One trial of a study: tabulate with `noise` and hand what every set of groups
    publishes (`GroupRows`: the counts `run` would write with the same noise, and their
    truth) to the sinks; nothing is written. Returns the run's statistics."""
    return _write_release(prepared, None, noise, False, coterminous, progress, sinks=sinks,
                          tabulation_suppression=tabulation_suppression)


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
    consistency: str = "none",
    invariant: str | None = None,
    study: str | None = None,
    sinks: tuple = (),
    tabulation_suppression: bool = False,
) -> RunResult:
    """Validate, tabulate and write a release (or, with `truth`, the noise-free tables).

    With `seed` the noise is reproducible and the manifest says "not for release".
    `consistency` ("none", "least-squares", "tree-dp") post-processes the nested levels
    so that they add up (`engine.tabulation.consistency`; the truth needs none).
    `invariant` ("USA", "STATE", "COUNTY"; NOT SafeTab-P) publishes that level's true
    totals and holds the level below to them (`engine.tabulation.invariants`).
    Nothing is written unless the whole run succeeds. OUT_DIR is checked and locked
    first, and the free disk space once the universe is known, before any noise
    (`engine.release.publish`); `RunResult.manifest` is the full manifest, the
    `confidential` block included, which manifest.json on disk leaves out.
    `study` (a description) marks the output as a trial of an accuracy study: NOT FOR
    RELEASE whatever its noise, and no operator file. `sinks` also receive what every
    set of groups publishes (`GroupRows`, with the truth), e.g. accuracy reports.
    `tabulation_suppression` applies the Decennial Tabulation System's two rules after
    the release is computed (`TabulationSuppression`; outside the DAS, no privacy cost):
    what they remove is listed in suppressed/tabulation-system.csv with the rule.
    """
    from engine import noise as _noise
    from engine.release.manifest import build_manifest
    from engine.release.outputs import ReleaseWriter, min_release_bytes

    started = time.perf_counter()
    from engine.tabulation.consistency import RUN_METHODS

    if consistency not in RUN_METHODS:
        raise ValueError(f"unknown consistency method {consistency!r}; choose one of {', '.join(RUN_METHODS)}")
    if invariant is not None and consistency != "none":
        raise ValueError("--invariant and --consistency cannot be combined (each adjusts the nested levels its own "
                         "way; see docs/invariants.md)")
    # What is written, as the manifest will say (mode.kind): --overwrite replaces only the same kind.
    mode_kind = ("accuracy study trial" if study is not None else "ground truth" if truth
                 else "seeded release" if seed is not None else "release")
    writer = ReleaseWriter(out_dir, overwrite=overwrite, inputs=(("PARAMS_DIR", params_dir), ("DATA_DIR", data_dir)),
                           operator_file=study is None, mode_kind=mode_kind,
                           not_safetab_p=invariant is not None and not truth)
    try:
        if prepared is None:
            prepared = prepare(params_dir, data_dir, progress)
            phases = prepared.phases
        else:
            phases = Phases()  # this run's own (prepared inputs may serve several runs)
        if invariant is not None and not truth:
            from engine.tabulation.invariants import check

            check(invariant, prepared)
        writer.ensure_space(min_release_bytes(prepared))
        source = None
        if not truth:
            source = _noise.RandomSource.seeded(seed) if seed is not None else _noise.RandomSource.secure()
        noise = make_noise(prepared.inputs.config.privacy_defn, source)
        t0 = time.perf_counter()
        stats = _write_release(prepared, writer, noise, truth, coterminous, progress, consistency,
                               invariant=None if truth else invariant,
                               tiebreak=source.words if source is not None else None, phases=phases, sinks=sinks,
                               tabulation_suppression=tabulation_suppression and not truth)
        t1 = time.perf_counter()
        timings = dict(prepared.timings)
        timings["tabulate_and_write"] = t1 - t0
        timings["total"] = t1 - started
        timings["process_cpu"] = process_cpu()
        manifest = build_manifest(prepared, stats, writer.rows, source=source, truth=truth,
                                  coterminous=coterminous, timings=timings)
        manifest["phases"] = phases.summary()
        if study is not None:
            manifest["mode"] = {**manifest["mode"], "kind": "accuracy study trial", "for_release": False,
                                "note": f"NOT FOR RELEASE: {study}"}
        out = writer.finish(manifest)
    except BaseException:
        writer.abort()
        raise
    return RunResult(out, manifest)


def _write_release(prepared: Prepared, writer, noise: Noise, truth: bool, coterminous: bool,
                   progress: Progress | None, consistency: str = "none", invariant: str | None = None,
                   tiebreak=None, phases: Phases | None = None, sinks: tuple = (),
                   tabulation_suppression: bool = False) -> dict:
    """Tabulate every level and hand what each set of groups publishes (`GroupRows`,
    coterminous copies resolved) to `writer` (a `ReleaseWriter`, or None: nothing is
    written) and to every sink (`sink.add(rows)`, e.g. accuracy reports). Returns the
    statistics of the manifest."""
    geo = prepared.inputs.geography
    sets = geo.coterminous_sets() if coterminous else []
    stash = CoterminousStash(sets)
    all_codes = np.array(list(prepared.inputs.specs.iterations), dtype=object)
    code_id = {c: i for i, c in enumerate(all_codes)}
    if phases is None:
        phases = Phases()

    tabsup = None
    if tabulation_suppression:
        tabsup = TabulationSuppression(alone_pairs(prepared.inputs.specs.iterations))

    def publish(rows: GroupRows) -> None:
        removed = None
        if tabsup is not None:
            with phases("tabulation_suppression"):
                rows, removed, rule = tabsup.apply(rows)
            if writer is not None and len(removed):
                with phases("write_rows"):
                    writer.write_removed(rows, removed, rule, TABULATION_RULES)
        if writer is not None:
            with phases("write_rows"):
                writer.write_groups(rows, skip=removed)
        for sink in sinks:
            with phases("reports"):
                sink.add(rows)

    stats: dict[str, dict] = {}
    # The hierarchy stage keeps the nested levels until all are tabulated (docs/consistency.md).
    stage = None
    if (consistency != "none" or invariant is not None) and not truth:
        from engine.tabulation.hierarchy import HierarchyStage

        stage = HierarchyStage(prepared)

    def emit(counts, pub, stash_members: bool = True, write: bool = True) -> None:
        lvl = pub.plan.level
        codes = prepared.catalog.codes(lvl.geo, lvl.iteration_level)
        n_it = counts.n_iterations
        groups = np.arange(pub.g0, pub.g1, dtype=np.int64)
        stashed = np.zeros(pub.n, dtype=bool)
        mask = stash.region_mask(lvl.geo, counts.n_regions)
        if mask is not None:
            stashed = mask[groups // n_it]
            if stash_members:
                with phases("coterminous"):
                    stash.add(pub, lvl.geo, groups[stashed], n_it, np.array([code_id[c] for c in codes], np.int32))
        if not write:
            return
        keep = ~stashed
        every = bool(keep.all())
        tables = {}
        for k, (tg, cells, marg) in pub.tables.items():
            sel = ~stashed[tg - pub.g0]
            if not sel.any():
                continue
            true_cells = pub.true_tables.get(k) if pub.true_tables else None
            tables[k] = (tg[sel] // n_it, tg[sel] % n_it, cells[sel], marg[sel],
                         None if true_cells is None else true_cells[sel])
        g = groups if every else groups[keep]
        publish(GroupRows(f"{lvl.geo}-{lvl.iteration_level}", lvl.geo, lvl.iteration_level, geo.regions[lvl.geo],
                          codes, g // n_it, g % n_it, pub.t1 if every else pub.t1[keep],
                          pub.released if every else pub.released[keep],
                          pub.stat_level if every else pub.stat_level[keep],
                          None if pub.true_total is None else pub.true_total if every else pub.true_total[keep],
                          tables))

    for counts, pub in iter_published(prepared, noise, truth=truth, progress=progress, phases=phases,
                                      whole_regions=tabsup is not None):
        lvl = pub.plan.level
        st = stats.setdefault(lvl.key, {"groups": 0, "total_only": 0, "stat_level_0": 0, "stat_level_1": 0,
                                        "stat_level_2": 0, "stat_level_3": 0, "suppressed": 0, "noise_draws": 0})
        st["groups"] += pub.n
        # Stage 1 for every adaptive group, then one total (level 0, TotalOnly) or the cells.
        st["noise_draws"] += 0 if truth else int(
            (pub.stat_level != TOTAL_ONLY).sum() + (pub.stat_level <= 0).sum()
            + sum(cells.size for _g, cells, _m in pub.tables.values()))
        st["total_only"] += int((pub.stat_level == TOTAL_ONLY).sum())
        for k in range(4):
            st[f"stat_level_{k}"] += int((pub.stat_level == k).sum())
        st["suppressed"] += int((~pub.released).sum())
        if stage is not None and stage.collects(lvl):
            stage.add(counts, pub)
            emit(counts, pub, write=False)  # members are stashed now, the rest written once adjusted
        else:
            emit(counts, pub)
    with phases("coterminous"):
        rows = stash.resolve()
    if stage is not None:
        from engine.tabulation.consistency import DESCRIPTIONS, adjuster

        if invariant is not None:
            # NOT SafeTab-P: true totals held exact (docs/invariants.md).
            from engine.tabulation.invariants import InvariantAdjuster

            adjust, cells_nonnegative = InvariantAdjuster(invariant, tiebreak), False
        else:
            adjust, cells_nonnegative = adjuster(consistency, prepared.inputs.config.allow_negative_counts)
        res = stage.finish(rows, stash.member if sets else None, adjust, cells_nonnegative=cells_nonnegative,
                           progress=progress, tiebreak=tiebreak)
        rows = res.rows
        for counts, pub in res.published:
            emit(counts, pub, stash_members=False)
        if invariant is not None:
            stats["invariant"] = adjust.summary()
        else:
            stats["consistency"] = {"method": consistency, "description": DESCRIPTIONS[consistency],
                                    **{k: v for k, v in res.stats.items() if k != "forests"},
                                    "forests": res.stats["forests"]}
    if sets:
        if rows is not None:
            with phases("coterminous"):
                for out in _coterminous_rows(rows, geo, all_codes):
                    publish(out)
        stats["coterminous"] = {"sets": len(sets), "groups": len(rows) if rows else 0,
                                "groups_copied": rows.copied if rows else 0}
    if tabsup is not None:
        stats["tabulation_suppression"] = _tabulation_summary(tabsup)
    return stats


def _tabulation_summary(tabsup: TabulationSuppression) -> dict:
    """The manifest's account of the Tabulation System's rules: computed counts."""
    out = {"note": TABULATION_NOTE, "pairs": len(tabsup.pairs), "groups_removed": tabsup.totals(),
           "by_level": tabsup.counts, "listed_in": "suppressed/tabulation-system.csv (REASON: the rule)"}
    if not tabsup.pairs:
        out["pairs_note"] = NO_PAIRS_NOTE
    return out


#: Said (CLI, manifest, Run page) when the spec files pair no Alone iteration with an AOIC one.
NO_PAIRS_NOTE = ("The spec files pair no Alone iteration with an Alone-or-in-any-combination one "
                 "(race-characteristic-iterations.txt: ALONE True 'X alone' beside ALONE False 'X alone or in any "
                 "combination' at the same LEVEL), so the Alone > Alone-or-in-any-combination rule removes nothing; "
                 "only non-negativity applies.")


def _coterminous_rows(rows: StashedRows, geo, codes: np.ndarray) -> Iterator[GroupRows]:
    """The coterminous members' groups, each with the outputs of its source row (SPEC §1)."""
    s_all = rows.src
    for gi, g in enumerate(rows.geos):
        for lvl in (1, 2):
            idx = np.flatnonzero((rows.geo == gi) & (rows.lvl == lvl))
            if not len(idx):
                continue
            s = s_all[idx]
            stat = rows.stat[s]
            t_out = {}
            for k, (trow, cells, marg) in rows.tables.items():
                sel = stat == k
                if sel.any():
                    j = np.searchsorted(trow, s[sel])
                    # members cover the same blocks: the source's true cells are theirs too
                    true = rows.true_tables[k][j] if rows.true_tables and k in rows.true_tables else None
                    t_out[k] = (rows.region[idx][sel], rows.code[idx][sel], cells[j], marg[j], true)
            yield GroupRows(f"coterminous-{g}-{lvl}", g, lvl, geo.regions[g], codes, rows.region[idx],
                            rows.code[idx], rows.t1[s], rows.released[s], stat,
                            None if rows.true_total is None else rows.true_total[idx], t_out)
