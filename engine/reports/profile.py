"""Group-size profiles (``python -m engine profile``): for every population group level,
how many groups of the public universe have each true size (`calculators.projection`).

Counted in one pass with the engine's own counting, the code path of `engine.run.run`:
`engine.run.prepare` (validation, reading and counting the persons) and, per level,
`Prepared.counts(level).totals()` (the flat map to population groups, SPEC §1). Every
level of the runs that are on in PARAMS_DIR/config.json is profiled, whatever its
budget, so a plan may later give a budget to a level the counting config left at 0.
The levels' sizes are kept exactly (`calculators.projection` says why no binning).

A profile of confidential data is itself confidential (exact, noise-free counts): the
file says so (``"confidential": true`` and a notice) unless its maker declares the data
synthetic (``--synthetic``, e.g. for a nation of `python -m engine sample`).
"""

from __future__ import annotations

import datetime as _dt
from pathlib import Path
from typing import Callable

from calculators.levels import POPULATION_GROUP_LEVELS
from calculators.projection import (DESCRIPTION_LIMIT, NAME_LIMIT, LevelProfile, Profile, SizeHistogram,
                                    has_control)

Progress = Callable[[str, float, float], None]


def compute_profile(params_dir: str | Path, data_dir: str | Path, *, name: str | None = None,
                    synthetic: bool = False, description: str = "", progress: Progress | None = None) -> Profile:
    """The profile of DATA_DIR counted with PARAMS_DIR (raises InputError like `run`; a
    `name` or `description` longer than a profile keeps: ValueError, before any work)."""
    from engine.run import prepare

    for what, text, limit in (("--name", name or "", NAME_LIMIT), ("--description", description, DESCRIPTION_LIMIT)):
        if len(text) > limit:  # a profile keeps this many characters: refused, never cut
            raise ValueError(f"{what} has {len(text):,} characters; a profile keeps at most {limit:,}")
        if has_control(text):  # a name is one line: a line break would end the '#' lines that name it
            raise ValueError(f"{what} holds a line break, a tab or another control character; it must be one line "
                             "of text")

    prepared = prepare(params_dir, data_dir, progress)
    inputs = prepared.inputs
    config = inputs.config
    levels = {}
    todo = [lvl for lvl in POPULATION_GROUP_LEVELS
            if config.runs_geo(lvl) and inputs.geography.n_regions(lvl.geo) > 0]
    for i, lvl in enumerate(todo):
        if progress:
            progress(f"profiling levels, {lvl.geo} level {lvl.iteration_level}", i, len(todo))
        counts = prepared.counts(lvl)
        totals = counts.totals()
        detailed_only = prepared.catalog.detailed_only(lvl.geo, lvl.iteration_level)
        if detailed_only.any():
            # group = region * n_iterations + iteration (the universe order)
            by_group = totals.reshape(counts.n_regions, counts.n_iterations)
            adaptive = SizeHistogram.of(by_group[:, ~detailed_only])
            total_only = SizeHistogram.of(by_group[:, detailed_only])
        else:
            adaptive, total_only = SizeHistogram.of(totals), SizeHistogram.of([])
        del totals
        stability = tuple(inputs.specs.stability(lvl.iteration_level, r, lvl.geo) for r in range(1, 9))
        levels[lvl] = LevelProfile(lvl, counts.n_regions, counts.n_iterations, int(detailed_only.sum()),
                                   stability, adaptive, total_only)
    if progress:
        progress("profiling levels, done", len(todo), len(todo))
    table = prepared.table
    return Profile(
        name=name or (Path(data_dir).resolve().parent.name + "/" + Path(data_dir).name)[:NAME_LIMIT],
        persons=table.persons, persons_us=table.persons_us, persons_pr=table.persons_pr, synthetic=synthetic,
        max_race_codes=config.max_race_codes, run_us=config.run_us, run_pr=config.run_pr,
        state_filter_us=tuple(config.state_filter_us) if config.run_us else (), levels=levels,
        created=_dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat(),
        description=description,
        extra={"persons_truncated": table.persons_truncated})


def read_profile(path: str | Path) -> Profile:
    """Read and check a profile file (JSON, or gzip-compressed JSON); ProfileError if it
    cannot be used (too large, not a profile, a bad field), naming the file."""
    from calculators.config import read_regular_file
    from calculators.projection import MAX_PROFILE_BYTES, ProfileError

    path = Path(path)
    try:  # a FIFO or a device is refused before it is opened (a FIFO would block the read forever)
        raw = read_regular_file(path, MAX_PROFILE_BYTES)
    except OSError as exc:
        raise ProfileError([f"cannot read the file ({exc.strerror or exc})"], str(path)) from None
    except ValueError as exc:  # not a regular file, or larger than a profile may be
        raise ProfileError([f"the file {exc}"], str(path)) from None
    return Profile.parse(raw, str(path))


def profile_bytes(profile: Profile, out: str | Path) -> bytes:
    """The file content of a profile written to `out`: gzip-compressed if the name ends in .gz."""
    return profile.to_bytes(compressed=str(out).endswith(".gz"))


def summary(profile: Profile) -> str:
    """One paragraph about a profile, for the command line."""
    sizes = sum(len(lp.adaptive.sizes) + len(lp.total_only.sizes) for lp in profile.levels.values())
    groups = sum(lp.groups for lp in profile.levels.values())
    return (f"{profile.name}: {profile.persons:,} persons, {len(profile.levels)} population group levels, "
            f"{groups:,} population groups, {sizes:,} distinct (level, size) entries, every size exact.\n"
            f"{profile.notice}")
