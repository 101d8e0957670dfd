"""Whole population group levels as arrays: the truth and a SafeTab-P release side by side.

The "Compare methods" studies run another method on the same data and plan as
SafeTab-P. They need, per population group level, every group's true total, what
SafeTab-P publishes for it, whether it was suppressed, its stat level and the noise
variance of its published total, plus how the regions of two geography levels nest
(`total_variance` and `parent_regions` live next to the plan and the geography they
read, in `engine.tabulation.mechanism` and `engine.inputs.geography`; they are
re-exported here).
Everything here holds a whole level in memory (regions x iterations), which suits
studies on sample-sized data; a release of the nation streams through `engine.run`.

Published totals are those of `engine.run.iter_published` (post-processed: marginals,
clamping, suppression) before coterminous copies (SPEC section 1), which only copy
one level's numbers onto another.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from calculators.levels import PopulationGroupLevel
from engine.inputs.geography import parent_regions  # noqa: F401  (re-exported: nesting of regions)
from engine.tabulation.mechanism import LevelPlan, total_variance


@dataclass
class LevelTables:
    """One population group level: arrays of shape (regions, iterations).

    `published` and `released` are the release (a suppressed group's `published`
    value is its noisy total, which is not published); `stat_level` is 0..3 or
    TOTAL_ONLY (-1); `variance` is the noise variance of the published total before
    clamping (`total_variance`).
    """

    level: PopulationGroupLevel
    plan: LevelPlan
    regions: np.ndarray  # region ids (str), the universe order
    codes: np.ndarray  # iteration codes (str)
    truth: np.ndarray  # int64
    published: np.ndarray  # int64
    released: np.ndarray  # bool
    stat_level: np.ndarray  # int8
    variance: np.ndarray  # float64

    @property
    def shape(self) -> tuple[int, int]:
        return self.truth.shape


def level_tables(prepared, noise, *, truth: bool = False, levels: list[PopulationGroupLevel] | None = None,
                 on_chunk=None) -> dict[PopulationGroupLevel, LevelTables]:
    """Tabulate the plan's levels (or `levels`) once and return them whole.

    `prepared` is `engine.run.prepare(...)`, `noise` is `engine.run.make_noise(...)`
    (a seeded source makes the study reproducible; it is never a release).
    `on_chunk(counts, pub)`, if given, sees every chunk of the pass (e.g. to keep the
    cells of the tables, or to time the levels).
    """
    from engine.run import iter_published

    wanted = set(levels) if levels is not None else None
    out: dict[PopulationGroupLevel, LevelTables] = {}
    geo = prepared.inputs.geography
    for counts, pub in iter_published(prepared, noise, truth=truth):
        lvl = pub.plan.level
        if on_chunk is not None:
            on_chunk(counts, pub)
        if wanted is not None and lvl not in wanted:
            continue
        if lvl not in out:
            n_r, n_i = counts.n_regions, counts.n_iterations
            out[lvl] = LevelTables(
                level=lvl, plan=pub.plan,
                regions=geo.regions[lvl.geo].astype(str),
                codes=prepared.catalog.codes(lvl.geo, lvl.iteration_level).astype(str),
                truth=np.zeros((n_r, n_i), np.int64), published=np.zeros((n_r, n_i), np.int64),
                released=np.zeros((n_r, n_i), bool), stat_level=np.zeros((n_r, n_i), np.int8),
                variance=np.zeros((n_r, n_i), np.float64))
        t = out[lvl]
        sl = slice(pub.g0, pub.g1)
        t.truth.reshape(-1)[sl] = pub.true_total
        t.published.reshape(-1)[sl] = pub.t1
        t.released.reshape(-1)[sl] = pub.released
        t.stat_level.reshape(-1)[sl] = pub.stat_level
        t.variance.reshape(-1)[sl] = total_variance(pub.plan, pub.stat_level)
    return out
