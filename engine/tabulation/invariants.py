"""`--invariant`: hold a geography level's TRUE totals exact for the level below it.

NOT SafeTab-P. `python -m engine run --invariant STATE` publishes, for every iteration
tabulated at both levels, each state's true count, and the county counts of the state
with their noise projected so that they add up to it (subspace differential privacy,
Gao, Gong and Yu 2022; the pure algorithm is `methods.invariants`). The true totals are
published exactly: they have no protection at all. docs/invariants.md explains every
decision below.

It is an adjust function of the hierarchy stage (`engine.tabulation.hierarchy`, shared
with `--consistency`), which gathers, per iteration, the published totals of the nested
levels as a forest, resolves coterminous sets first, holds suppressed groups at 0 and
makes the sex x age cells of a group follow its adjusted total. For each chosen
(parent, child) pair of levels in a forest:

* every released parent group is set to its true total (its cells take the difference
  spread equally: the projection for one total, since its cells share one noise scale);
* the released children of each released parent are held to the parent's true total
  by the minimum-variance projection: with E = (sum of their published totals) - (the
  true total), child i moves by -E v_i / W (v_i the noise variance of its total, W their
  sum). A child's total then has variance v_i (1 - v_i / W) instead of v_i; the only
  released child of its parent carries the whole true total. Moves are rounded to
  integers keeping the sum exactly (largest remainders, ties broken by random words from
  the release's own random stream: `methods.invariants.hold_sums`).
* Suppressed children (decided first, by SafeTab-P's rule on the noisy total) are never
  read and stay unpublished: the released children add up to the parent's true total,
  i.e. the suppressed remainder is taken as 0 (a value computed from the suppressed
  noisy totals would reveal them), so they also carry the persons of suppressed
  siblings (a small upward bias where a small group is suppressed). A family whose parent is suppressed (a county
  with `--invariant COUNTY`) is left as published, so no suppressed total is revealed;
  a family whose children are all suppressed keeps them suppressed (its parent is still
  published exactly).

Negative counts cannot be clamped afterwards without breaking the totals, so the option
needs `allow_negative_counts: true`.
"""

from __future__ import annotations

from typing import Callable

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

#: The warning every release with invariants carries (manifest mode, command line).
WARNING = ("NOT SafeTab-P: invariants. True totals are published exactly, without noise; only how each is split "
           "among the areas below it is protected (see the manifest's postprocessing.invariant block).")


def units_of(stat_level: np.ndarray) -> np.ndarray:
    """Noisy values (units) behind each group's total: 1 for a stat-level-0 or TotalOnly
    total, 8 / 18 / 46 for the cells of a sex x age4 / age9 / age23 table."""
    cells = np.array([STAT_LEVEL_CELLS[k] for k in sorted(STAT_LEVEL_CELLS)], np.int64)
    st = np.asarray(stat_level)
    return cells[np.maximum(st, 0)]


def check(choice: str, prepared) -> None:
    """ValueError (a usage error) unless `choice` can be held with this plan: for every
    run that is on (US, Puerto Rico), both levels of its pair are tabulated."""
    if choice not in INVARIANTS:
        raise ValueError(f"unknown invariant {choice!r}; choose one of {', '.join(INVARIANTS)}")
    config = prepared.inputs.config
    if not config.allow_negative_counts:
        raise ValueError("--invariant needs allow_negative_counts: true in config.json: clamping negative counts "
                         "at 0 afterwards would break the totals the invariant holds (docs/invariants.md)")
    levels = {lvl.geo for lvl in prepared.plans}
    if not any(p in levels and c in levels for p, c in INVARIANTS[choice]):
        pairs = " or ".join(f"{p} and {c}" for p, c in INVARIANTS[choice])
        raise ValueError(f"--invariant {choice} needs the plan to tabulate {pairs} (with regions in the run)")
    # Held for every run that is on, or refused: never half-applied (one run's totals
    # held, the other's silently left as published).
    for parent, child in INVARIANTS[choice]:
        pr = parent.startswith("PR-")
        run_on = any(g.startswith("PR-") == pr for g in levels)
        missing = [g for g in (parent, child) if g not in levels]
        if run_on and missing:
            name = "Puerto Rico" if pr else "US"
            raise ValueError(
                f"--invariant {choice} would be held for one run only: the {name} run is on but the plan does not "
                f"tabulate its {' and '.join(missing)} level{'s' if len(missing) > 1 else ''} (zero budgets, or no "
                f"regions in the run), so {parent} and {child} could not be held; give "
                f"{' and '.join(missing)} a budget, or switch the {name} run off (run_{'pr' if pr else 'us'}: false)")


class InvariantAdjuster:
    """The adjust function of `--invariant CHOICE` for the hierarchy stage.

    `tiebreak(n)` gives n random 64-bit words (the release's `RandomSource.words`).
    After the stage's `finish`, `summary()` tells what the release reveals exactly.
    """

    def __init__(self, choice: str, tiebreak: Callable[[int], np.ndarray] | None = None):
        if choice not in INVARIANTS:
            raise ValueError(f"unknown invariant {choice!r}; choose one of {', '.join(INVARIANTS)}")
        self.choice = choice
        self.tiebreak = tiebreak
        self._rows: dict[tuple[str, str, int], dict] = {}

    def __call__(self, b) -> np.ndarray:
        from methods.invariants import hold_sums

        f = b.forest
        out = np.array(b.published, dtype=np.int64, copy=True)
        m = out.shape[1]
        for parent, child in INVARIANTS[self.choice]:
            if parent not in f.levels or child not in f.levels:
                continue
            # Nodes standing for the parent level's regions (a coterminous member is merged
            # into its set's highest chain member: DC's county is the DC state node), and
            # the child level's nodes directly below them.
            P = np.unique(f.node_of[parent])
            slot = np.full(f.n, -1, np.int64)
            slot[P] = np.arange(len(P))
            C = np.setdiff1d(np.unique(f.node_of[child]), P)
            C = C[(f.parents[C] >= 0) & (slot[np.maximum(f.parents[C], 0)] >= 0)]
            p_rel = b.released[P]  # (parents, m)
            truth_p = b.truth[P].astype(np.int64)
            out[P] = np.where(p_rel, truth_p, out[P])
            # Families (parent, iteration) of released parents; their released children.
            fam_of_child = slot[f.parents[C]][:, None] * m + np.arange(m)[None, :]
            held_child = b.released[C] & p_rel[slot[f.parents[C]]]
            ci, cj_ = np.nonzero(held_child)
            fam = fam_of_child[ci, cj_]
            kids = np.bincount(fam, minlength=len(P) * m)
            has = (kids > 0).reshape(len(P), m)
            # A parent without child nodes: its only child is coterminous with it and
            # was merged into its node by the stage (it publishes the parent's outputs).
            merged = (np.bincount(slot[f.parents[C]], minlength=len(P)) == 0)[:, None] & p_rel
            # Dense family ids for those with at least one released child.
            dense = np.full(len(P) * m, -1, np.int64)
            dense[np.flatnonzero(kids)] = np.arange(int((kids > 0).sum()))
            values = out[C][ci, cj_]
            if len(values):
                tb = self.tiebreak(len(values)) if self.tiebreak is not None else None
                totals = truth_p.reshape(-1)[kids > 0]
                new = hold_sums(values, dense[fam], totals, tb, weights=b.variance[C][ci, cj_])
                sub = out[C]
                sub[ci, cj_] = new
                out[C] = sub
            key = (parent, child, int(b.iteration_level))
            r = self._rows.setdefault(key, {"parent": parent, "child": child, "iteration_level": key[2],
                                            "iterations": 0, "totals_published_exactly": 0,
                                            "families_held": 0, "children_adjusted": 0,
                                            "children_published_as_the_true_total": 0,
                                            "families_not_held_parent_suppressed": 0,
                                            "families_with_every_child_suppressed": 0,
                                            "true_totals_under_10": 0, "true_totals_under_100": 0})
            r["iterations"] += m
            r["totals_published_exactly"] += int(p_rel.sum())
            r["families_held"] += int(has.sum())
            r["children_adjusted"] += int(len(values))
            r["children_published_as_the_true_total"] += int((kids == 1).sum()) + int(merged.sum())
            r["families_not_held_parent_suppressed"] += int((~p_rel).sum())
            r["families_with_every_child_suppressed"] += int((p_rel & ~has & ~merged).sum())
            exact = truth_p[p_rel]
            r["true_totals_under_10"] += int((exact < 10).sum())
            r["true_totals_under_100"] += int((exact < 100).sum())
        return out

    def summary(self) -> dict:
        """What the release reveals exactly (for the manifest). The counts of small true
        totals describe the confidential data and go to the manifest's confidential block."""
        public, confidential = [], []
        for key in sorted(self._rows):
            r = dict(self._rows[key])
            confidential.append({k: r.pop(k) for k in ("true_totals_under_10", "true_totals_under_100")}
                                | {k: r[k] for k in ("parent", "child", "iteration_level")})
            public.append(r)
        return {
            "choice": self.choice,
            "description": DESCRIPTIONS[self.choice],
            "warning": WARNING,
            "revealed_exactly": (
                "the true count of every released group of "
                + " and ".join(f"{p}" for p, _c in INVARIANTS[self.choice])
                + " for each iteration tabulated at both levels of its pair; the only released child of such a "
                  "group publishes the same true total; coterminous copies of these groups carry them too"),
            "held": public,
            "rounding": "largest remainder, ties broken by random words from the release's random stream",
            "_confidential": confidential,
        }
