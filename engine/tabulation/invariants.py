"""Invariants: hold a geography level's TRUE totals exact for the level below it.

NOT SafeTab-P. `python -m engine run --invariant STATE` releases, for every iteration,
the county counts of each state with their noise projected so that they add up to the
state's true count (subspace differential privacy, Gao, Gong and Yu 2022; the pure
algorithm is `methods.invariants`). The true totals are then published exactly: they
are not protected at all. See docs/invariants.md for every decision below.

How one family (a parent region and an iteration) is adjusted:

* Its *units* are the noisy values SafeTab-P drew for the children: a stat-level-0 or
  TotalOnly total, or each cell of a sex x age table (8, 18 or 46). Within a family
  every unit has the same noise scale (an iteration is TotalOnly at every region or at
  none), so the minimum-variance projection is the paper's Pi_N for one total: each of
  the U units moves by -E / U, E = the family's summed noise (sum of units minus the
  parent's true count, which is the sum of the children's true counts: the children
  partition the parent).
* The moves are rounded to integers by the largest-remainder method with ties broken
  by random words from the release's own random stream (`methods.invariants.hold_sums`):
  every unit stays an integer and the family adds up to the true total exactly. A
  child's T1 and sex marginals are then the sums of its adjusted cells, as in SafeTab-P.
* A child's total thus has variance c u (1 - c / U) (c its units, u the unit variance)
  instead of c u; the only child of its parent is published exactly.
* The parent level's own group of that iteration (if the parent level tabulates it) is
  held to its true total the same way (its units move by -E / U), so the published
  parent count equals the sum of its children: the true total, published exactly.

Suppression is decided by SafeTab-P's rule on the noisy total *before* the adjustment,
so a true zero is still suppressed with probability >= p; suppressed children take part
in the projection (they are part of the parent), so the published children add up to
the true total minus the adjusted counts of the suppressed ones. Clamping negative
counts (`allow_negative_counts: false`) would break the totals, so the two options are
refused together.
"""

from __future__ import annotations

import numpy as np

from calculators.levels import STAT_LEVEL_CELLS

#: `--invariant` choices: the (parent, child) geography levels each holds. Children
#: partition their parent (every block of a state lies in exactly one of its counties).
INVARIANTS: dict[str, tuple[tuple[str, str], ...]] = {
    "USA": (("USA", "STATE"),),
    "STATE": (("STATE", "COUNTY"), ("PR-STATE", "PR-COUNTY")),
    "COUNTY": (("COUNTY", "TRACT"), ("PR-COUNTY", "PR-TRACT")),
}

#: Plain-words name of each choice (the option's help, the manifest, the app).
DESCRIPTIONS: dict[str, str] = {
    "USA": "the states of the nation add up to the nation's true count",
    "STATE": "the counties of each state add up to the state's true count",
    "COUNTY": "the tracts of each county add up to the county's true count",
}


def units_of(stat_level: np.ndarray) -> np.ndarray:
    """Noisy values (units) behind each group's total: 1 for a stat-level-0 or TotalOnly
    total, 8 / 18 / 46 for the cells of a sex x age4 / age9 / age23 table."""
    cells = np.array([STAT_LEVEL_CELLS[k] for k in sorted(STAT_LEVEL_CELLS)], np.int64)
    st = np.asarray(stat_level)
    return cells[np.maximum(st, 0)]
