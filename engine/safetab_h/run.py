"""A whole SafeTab-H run: validate, count households, tabulate each query with noise,
post-process, write OUT_DIR atomically with its manifest.

OUT_DIR (production's layout, pipe-delimited, a header in every file):

* ``t3/T0300{1..4}/``: REGION_ID|REGION_TYPE|ITERATION_CODE|T3_DATA_CELL|COUNT, the
  groups at T3 level 0..3 (1 / 3 / 7 / 9 rows per group), one part file per geography
  and iteration level (``USA-1.csv`` ...) and ``headers.csv``;
* ``t4/T0400{1,2}/``: the same with T4_DATA_CELL (1 / 4 rows per group);
* ``manifest.json``: what was run, every budget, noise scale and MOE computed from the
  configuration, the rows written, the T1 rows not tabulated and why;
* seeded runs and the truth carry ``NOT-FOR-RELEASE.txt`` (also in t3/ and t4/);
* ``SHA256SUMS`` last; staged beside OUT_DIR and swapped in whole
  (`engine.release.publish.StagedOutput`).
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import platform
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable, Iterator

import numpy as np

from calculators import discrete_gaussian, geometric
from calculators.safetab_h import TABLE_LEVELS, TABLES, budget_key
from engine.noise import RandomSource
from engine.release import _format
from engine.release.outputs import Labels, not_for_release_text
from engine.release.publish import NOT_FOR_RELEASE, StagedOutput
from engine.safetab_h.inputs import HInputs, load_inputs
from engine.safetab_h.tabulate import LevelGroups, Pruned, QueryResult, count_households, level_groups, \
    tabulate_query

Progress = Callable[[str, float, float], None]
DESCRIPTION = "SafeTab-H tables"
TABLE_FOLDERS = {"t3": [f"T0300{k + 1}" for k in TABLE_LEVELS["t3"]], "t4": [f"T0400{k + 1}" for k in TABLE_LEVELS["t4"]]}
CELL_COLUMN = {"t3": "T3_DATA_CELL", "t4": "T4_DATA_CELL"}
_FORMAT_ROWS = 1 << 20


def columns(table: str) -> list[str]:
    return ["REGION_ID", "REGION_TYPE", "ITERATION_CODE", CELL_COLUMN[table], "COUNT"]


@dataclass
class Prepared:
    """Validated inputs, households counted and every level's groups: all before noise."""

    inputs: HInputs
    groups: list[LevelGroups]
    pruned: Pruned
    households: int
    seconds: dict


def prepare(params_dir, data_dir, t1=None, progress: Progress | None = None, config=None) -> Prepared:
    """Validate everything and count the households (InputError before any noise)."""
    t0 = time.perf_counter()
    inputs = load_inputs(params_dir, data_dir, t1, config=config)
    t1_ = time.perf_counter()
    table = count_households(inputs, progress)
    t2 = time.perf_counter()
    groups, pruned = level_groups(inputs, table, inputs.config.levels())
    if sum(len(g) for g in groups) and not any(g.cells.any() for g in groups):
        from engine.errors import InputError, Problem

        raise InputError([Problem(inputs.t1.source, None, None, None,
                                  "households in the selected population groups: none of the T1's groups has one "
                                  "(is it the T1 of these households, and of the same runs, US or PR?)")])
    t3 = time.perf_counter()
    return Prepared(inputs, groups, pruned, table.persons,
                    {"load_inputs": t1_ - t0, "read_and_count_households": t2 - t1_, "groups": t3 - t2})


def make_noise(privacy_defn: str, source: RandomSource):
    """The exact samplers of `engine.noise` (zero draws give an empty array)."""
    from engine.run import make_noise as _make

    draw = _make(privacy_defn, source)
    return lambda scale, size: np.zeros(0, np.int64) if size == 0 else draw(scale, size)


def iter_queries(prepared: Prepared, noise, truth: bool = False) -> Iterator[QueryResult]:
    """Every query with a budget > 0, tabulated (no noise with `truth`)."""
    cfg = prepared.inputs.config
    for groups in prepared.groups:
        for table in TABLES:
            if cfg.budget(table, groups.level) <= 0:
                continue
            yield tabulate_query(groups, table, cfg.thresholds(table, groups.level),
                                 cfg.budget_exact(table, groups.level), cfg.privacy_defn,
                                 None if truth else noise, cfg.allow_negative_counts or truth)


def _write_part(stage: Path, table: str, level: int, res: QueryResult) -> int:
    part = res.by_level[level]
    rows = part["rows"]
    g = res.groups
    folder = stage / table / TABLE_FOLDERS[table][level]
    folder.mkdir(parents=True, exist_ok=True)
    n_cells = len(part["cells"])
    n = len(rows) * n_cells
    if n == 0:
        return 0  # headers.csv holds the header of an empty table
    path = folder / f"{g.level.geo}-{g.level.iteration_level}.csv"
    with open(path, "wb") as fh:
        fh.write(("|".join(columns(table)) + "\n").encode())
        if n:
            regions, codes = Labels.of(g.region_ids), Labels.of(g.codes)
            cells = Labels.of([f"|{c}" for c in part["cells"]])
            region = np.repeat(g.region_idx[rows], n_cells)
            code = np.repeat(g.code_idx[rows], n_cells)
            label = np.tile(np.arange(n_cells, dtype=np.int64), len(rows))
            values = np.ascontiguousarray(part["published"].reshape(-1), np.int64)
            middle = np.frombuffer(f"|{g.level.geo}|".encode(), np.uint8)
            bound = regions.longest + len(middle) + codes.longest + cells.longest + 22
            for a in range(0, n, _FORMAT_ROWS):
                b = min(n, a + _FORMAT_ROWS)
                buf = np.empty((b - a) * bound, np.uint8)
                m = _format.format_rows(regions.data, regions.offsets, region[a:b], middle, codes.data, codes.offsets,
                                        code[a:b], cells.data, cells.offsets, label[a:b], values[a:b], buf)
                fh.write(memoryview(buf)[:m])
    return n


@dataclass
class RunResult:
    out_dir: Path
    manifest: dict


def run(params_dir, data_dir, out_dir, *, t1=None, seed: int | None = None, truth: bool = False,
        overwrite: bool = False, progress: Progress | None = None, prepared: Prepared | None = None,
        config=None) -> RunResult:
    """Validate, tabulate and write SafeTab-H's T3 and T4 (with `truth`, without noise).

    Nothing is written unless the whole run succeeds; OUT_DIR is checked and locked
    before any work. With `seed` the noise is reproducible and marked NOT FOR RELEASE."""
    started = time.perf_counter()
    mode_kind = "ground truth" if truth else "seeded release" if seed is not None else "release"
    t1_folder = None if t1 is None else (Path(t1) if Path(t1).is_dir() else Path(t1).parent)
    inputs_list = [("PARAMS_DIR", params_dir), ("DATA_DIR", data_dir)] + ([("--t1", t1_folder)] if t1_folder else [])
    kind = f"{DESCRIPTION} ({mode_kind})"
    with StagedOutput(out_dir, overwrite=overwrite, inputs=inputs_list, description=kind) as folder:
        if prepared is None:
            prepared = prepare(params_dir, data_dir, t1, progress, config=config)
        cfg = prepared.inputs.config
        source = None if truth else (RandomSource.seeded(seed) if seed is not None else RandomSource.secure())
        noise = make_noise(cfg.privacy_defn, source) if source is not None else None
        t0 = time.perf_counter()
        rows = {f"{t}/{name}": 0 for t in TABLES for name in TABLE_FOLDERS[t]}
        queries = {}
        draws = 0
        for res in iter_queries(prepared, noise, truth):
            for level in TABLE_LEVELS[res.table]:
                rows[f"{res.table}/{TABLE_FOLDERS[res.table][level]}"] += _write_part(folder.stage, res.table, level,
                                                                                      res)
                draws += 0 if truth else res.by_level[level]["direct"].size
            queries[budget_key(res.table, res.groups.level)] = _query_entry(res, cfg.privacy_defn)
            if progress:
                progress("tabulating queries", len(queries), 2 * len(prepared.groups))
        for t in TABLES:
            for name in TABLE_FOLDERS[t]:
                folder.write_file(f"{t}/{name}/headers.csv", ("|".join(columns(t)) + "\n").encode())
        manifest = build_manifest(prepared, queries, rows, source=source, truth=truth, draws=draws)
        manifest["timings_seconds"] = {**{k: round(v, 3) for k, v in prepared.seconds.items()},
                                       "tabulate_and_write": round(time.perf_counter() - t0, 3),
                                       "total": round(time.perf_counter() - started, 3)}
        folder.write_file("manifest.json", (json.dumps(manifest, indent=2) + "\n").encode())
        comments = [f"{mode_kind}, created {manifest['created']}"]
        if not manifest["mode"]["for_release"]:
            reason = manifest["mode"]["note"].removeprefix("NOT FOR RELEASE: ")
            for where in ("", "t3/", "t4/"):
                folder.write_file(where + NOT_FOR_RELEASE, not_for_release_text(reason))
            comments.insert(0, "NOT FOR RELEASE: " + reason)
        out = folder.publish(comments)
    return RunResult(out, manifest)


def _frac(x) -> dict:
    return {"value": float(x), "exact": str(x)}


def _query_entry(res: QueryResult, privacy_defn: str) -> dict:
    g = res.groups
    cfg_levels = {str(k): int((res.levels == k).sum()) for k in TABLE_LEVELS[res.table]}
    scale = float(res.scale)
    moe = int(discrete_gaussian.moe(scale)) if privacy_defn == "zcdp" else int(geometric.moe(scale))
    return {"table": res.table, "geo": g.level.geo, "iteration_level": g.level.iteration_level,
            "stability_S": g.stability, ("sigma2" if privacy_defn == "zcdp" else "geometric_scale"): _frac(res.scale),
            "cell_moe_95": moe, "groups": len(g), "groups_by_table_level": cfg_levels}


def build_manifest(prepared: Prepared, queries: dict, rows: dict, *, source, truth: bool, draws: int) -> dict:
    """What the run did, with every privacy figure computed from the configuration (and
    no exact count of the confidential households)."""
    from engine.release.manifest import ENGINE_VERSION, release_mode
    from engine.inputs.readers import sha256_file

    inputs = prepared.inputs
    cfg = inputs.config
    puredp = cfg.privacy_defn == "puredp"
    mode = release_mode(truth, source, puredp)
    files = {}
    if not inputs.config_from_file:
        text = cfg.to_json().encode()
        files["config (supplied by the caller, not PARAMS_DIR/config.json)"] = {
            "sha256": hashlib.sha256(text).hexdigest(), "bytes": len(text)}
    for name, p in [(f"PARAMS_DIR/{n}", inputs.params_dir / n) for n in
                    ("config.json", "race-and-ethnicity-codes.txt", "race-characteristic-iterations.txt",
                     "ethnicity-characteristic-iterations.txt", "race-and-ethnicity-code-to-iteration.txt")] + \
            [(f"DATA_DIR/{df.name}", df.path) for df in (inputs.households_file, inputs.grf_file)]:
        if p.is_file() and (inputs.config_from_file or not name.endswith("config.json")):
            files[name] = {"sha256": sha256_file(p), "bytes": p.stat().st_size}
    us = sum(cfg.budget_exact(t, lvl) for t in TABLES for lvl in cfg.levels() if not lvl.is_pr)
    pr = sum(cfg.budget_exact(t, lvl) for t in TABLES for lvl in cfg.levels() if lvl.is_pr)
    return {
        "engine": {"name": "SafeTab-P studio engine: SafeTab-H", "version": ENGINE_VERSION,
                   "python": platform.python_version()},
        "program": "safetab-h",
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "mode": mode,
        "inputs": {"params_dir": str(inputs.params_dir), "data_dir": str(inputs.data_dir), "t1": inputs.t1.source,
                   "files": files},
        "config": cfg.to_dict(),
        "privacy": {"definition": cfg.privacy_defn, "unit": "epsilon" if puredp else "rho (zCDP)",
                    "protected_unit": "one household",
                    "us": _frac(us), "pr": _frac(pr), "release": _frac(max(us, pr)),
                    "note": "Per household, composed over the queries of a run by sum; US and Puerto Rico "
                            "households are disjoint, so the release costs max(US, PR). Never added to "
                            "SafeTab-P's per-person budget: the two protect different units."},
        "queries": queries,
        "groups": {"tabulated": sum(len(g) for g in prepared.groups),
                   "t1_rows_read": inputs.t1.rows + inputs.t1.dropped,
                   "t1_rows_not_tabulated": {"outside_the_runs_states": inputs.t1.dropped,
                                             **asdict(prepared.pruned)}},
        "postprocessing": {"allow_negative_counts": cfg.allow_negative_counts,
                           "marginals": "sums of the noisy direct cells (after clamping when negatives are not "
                                        "allowed)"},
        "noise_draws": draws,
        "outputs": {"rows": rows},
    }
