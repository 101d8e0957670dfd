"""The seed paper's own problem on the project's data: group sizes (a study, never a release).

Fioretto, Van Hentenryck and Zhu release, for every region of a hierarchy, how many
groups (households) have each size, consistent across the hierarchy (PGSR,
`methods.consistency.release_group_sizes`). SafeTab-P does not publish household sizes
and the sample has no household records, so this study makes **synthetic households**:
each tract's persons of the sample (US runs) are split into households whose sizes
are drawn, seeded, with the shares `HOUSEHOLD_SHARES` (illustrative, about the U.S.
shares of 1- to 7-or-more-person households). The hierarchy is USA > states > counties
> tracts from GRF-C; the public total n is the number of households.

`group_size_study` releases the vectors `trials` times per epsilon with the paper's four
mechanisms on the same noise (plain sizes: relaxed-then-rounded and the exact DP;
cumulative counts: relaxed-then-rounded and the exact program) and measures the
paper's Table 7: the error at each level (the L1 distance of a region's released vector
to its true one, averaged over the level's regions and the releases) and the number of
consistency violations (a parent's count of a size differing from its children's sum),
plus the levels whose households do not add up to n (faithfulness) and the run time.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from methods import consistency as mc

#: Shares of households of 1, 2, ..., 6 and 7 or more persons drawn for the synthetic
#: households (illustrative, about the U.S. shares); a 7+ household has 7 + a geometric
#: number of further persons (mean 1).
HOUSEHOLD_SHARES = (0.28, 0.34, 0.15, 0.13, 0.06, 0.025, 0.015)
#: Levels of the hierarchy, root first.
LEVELS = ("USA", "STATE", "COUNTY", "TRACT")
#: The paper's four mechanisms: (key, label, cumulative, method of `fit_group_sizes`).
MECHANISMS = (
    ("h-relaxed", "Group sizes, relaxed then rounded", False, "relax-then-round"),
    ("h-dp", "Group sizes, exact DP", False, "dp"),
    ("c-relaxed", "Cumulative, relaxed then rounded", True, "relax-then-round"),
    ("c-exact", "Cumulative, exact", True, "dp"),
)
#: The paper's privacy budgets in its Table 7.
PAPER_EPSILONS = (0.1, 0.5, 1.0)
#: Most releases a study draws (epsilons x trials).
MAX_RELEASES = 200


@dataclass
class Hierarchy:
    """USA > states > counties > tracts: a parent array, the level of each node, its
    region id, and the true group-size vectors of every node."""

    parents: np.ndarray
    level: np.ndarray  # index into LEVELS
    region: np.ndarray  # region ids
    vectors: np.ndarray  # (nodes, max_size) true group-size vectors
    persons: int
    households: int

    @property
    def total(self) -> int:
        return self.households


def persons_per_tract(inputs) -> dict[str, int]:
    """Persons of the sample in each tract (ST+COU+TRACT), read from the person file
    with the engine's reader (txt or Parquet)."""
    from engine.errors import ProblemLog
    from engine.inputs.readers import iter_batches

    log = ProblemLog()
    cols = ["TABBLKST", "TABBLKCOU", "TABTRACTCE"]
    counts: dict[str, int] = {}
    for batch in iter_batches(inputs.persons_file, cols, log, extra_ok=True):
        t = batch.table
        keys = (pd.Series(t.column(0).to_pylist(), dtype=str) + pd.Series(t.column(1).to_pylist(), dtype=str)
                + pd.Series(t.column(2).to_pylist(), dtype=str))
        for k, v in keys.value_counts().items():
            counts[k] = counts.get(k, 0) + int(v)
    log.raise_if_any()
    return counts


def synthetic_households(persons: int, rng: np.random.Generator,
                         shares: tuple[float, ...] = HOUSEHOLD_SHARES) -> np.ndarray:
    """Household sizes holding exactly `persons` persons: sizes drawn with `shares` (the
    last share is "that many or more"), the last household cut to the persons left."""
    if persons <= 0:
        return np.zeros(0, np.int64)
    p = np.asarray(shares, float)
    mean = float(p @ np.arange(1, len(p) + 1)) + p[-1]
    out: list[np.ndarray] = []
    left = persons
    while left > 0:
        k = int(left / mean * 1.1) + 8
        s = rng.choice(np.arange(1, len(p) + 1), size=k, p=p / p.sum())
        big = s == len(p)
        s[big] += rng.geometric(0.5, size=int(big.sum())) - 1
        c = np.cumsum(s)
        take = int(np.searchsorted(c, left))  # households while the persons last
        if take < k:
            s = s[: take + 1].copy()
            s[-1] -= int(c[take] - left)  # the last one holds what is left (>= 1)
            out.append(s)
            break
        out.append(s)
        left -= int(c[-1])
    return np.concatenate(out).astype(np.int64)


def household_hierarchy(geography, tract_persons: dict[str, int], seed: int, max_size: int = 7) -> Hierarchy:
    """The US tracts of `geography` under their counties, states and the USA, each
    tract's persons split into synthetic households (seeded)."""
    if "TRACT" not in geography.regions or not len(geography.regions["TRACT"]):
        raise ValueError("this geography has no US tracts (the study needs the US runs)")
    tracts = geography.regions["TRACT"].astype(str)
    counties = np.unique([t[:5] for t in tracts])
    states = np.unique([t[:2] for t in tracts])
    n_s, n_c, n_t = len(states), len(counties), len(tracts)
    parents = np.concatenate([[-1], np.zeros(n_s, np.int64), 1 + np.searchsorted(states, [c[:2] for c in counties]),
                              1 + n_s + np.searchsorted(counties, [t[:5] for t in tracts])]).astype(np.int64)
    level = np.concatenate([[0], np.full(n_s, 1), np.full(n_c, 2), np.full(n_t, 3)]).astype(np.int8)
    region = np.concatenate([["1"], states, counties, tracts]).astype(object)
    rng = np.random.default_rng(seed)
    vectors = np.zeros((len(parents), max_size), np.int64)
    persons = households = 0
    for i, t in enumerate(tracts):
        sizes = synthetic_households(int(tract_persons.get(t, 0)), rng)
        vectors[1 + n_s + n_c + i] = mc.group_size_vector(sizes, max_size)
        persons += int(sizes.sum())
        households += len(sizes)
    for lvl in (2, 1, 0):  # parents from their children
        kids = np.flatnonzero(level == lvl + 1)
        np.add.at(vectors, parents[kids], vectors[kids])
    return Hierarchy(parents, level, region, vectors, persons, households)


@dataclass
class GroupSizeStudy:
    """`group_size_study`: per (epsilon, mechanism), Table 7's measures (averaged over the
    releases) and per release."""

    table7: pd.DataFrame  # epsilon, mechanism, label, error at each level, violations, unfaithful levels, seconds
    releases: pd.DataFrame  # the same per release (trial)
    by_size: pd.DataFrame  # epsilon, mechanism, size, mean |error| of a region's count of that size (all levels)
    hierarchy: Hierarchy
    epsilons: tuple[float, ...]
    trials: int
    seed: int
    max_size: int
    settings: dict = field(default_factory=dict)


def group_size_study(hierarchy: Hierarchy, epsilons=PAPER_EPSILONS, trials: int = 5, seed: int = 1,
                     progress: Callable[[str, float, float], None] | None = None) -> GroupSizeStudy:
    """The paper's four mechanisms on the same noise, `trials` releases per epsilon.

    Plain and cumulative releases draw their own noise (their sensitivities differ: 2
    and 1); within each, the relaxed and the exact post-processing read the same noisy
    answers. Seeded numpy noise: a study, NOT FOR RELEASE.
    """
    eps = tuple(float(e) for e in epsilons)
    if not eps or any(not (np.isfinite(e) and e > 0) for e in eps):
        raise ValueError("every epsilon must be a number > 0")
    if not 1 <= trials or len(eps) * trials > MAX_RELEASES:
        raise ValueError(f"at most {MAX_RELEASES} releases (epsilons x trials) per study")
    h = hierarchy
    parents = h.parents
    tree_levels = [np.flatnonzero(h.level == i) for i in range(len(LEVELS))]
    rng = np.random.default_rng(seed)
    rows, size_rows = [], []
    total = len(eps) * trials
    done = 0
    for e in eps:
        for t in range(trials):
            for cumulative in (False, True):
                t0 = time.perf_counter()
                rel = mc.release_group_sizes(parents, h.vectors, e, cumulative=cumulative, rng=rng, method="dp")
                dp_seconds = time.perf_counter() - t0  # the noise and the exact post-processing
                for key, label, cum, method in MECHANISMS:
                    if cum != cumulative:
                        continue
                    t0 = time.perf_counter()
                    x = rel.counts if method == "dp" else mc.fit_group_sizes(parents, rel.noisy, rel.total,
                                                                           cumulative=cum, method=method)
                    secs = dp_seconds if method == "dp" else time.perf_counter() - t0
                    err = np.abs(x - h.vectors)
                    row = {"epsilon": e, "trial": t, "mechanism": key, "label": label}
                    for i, name in enumerate(LEVELS):
                        row[f"error_{name}"] = float(err[tree_levels[i]].sum(axis=1).mean())
                    row["violations"] = int(mc.violations(parents, x.astype(float)).sum())
                    row["unfaithful_levels"] = int(sum(int(x[nodes].sum()) != h.total for nodes in tree_levels))
                    row["negative"] = int((x < 0).sum())
                    row["seconds"] = secs
                    rows.append(row)
                    for k in range(x.shape[1]):
                        size_rows.append({"epsilon": e, "trial": t, "mechanism": key, "size": k + 1,
                                          "abs_error": float(err[:, k].mean())})
            done += 1
            if progress:
                progress("releasing group sizes", done, total)
    releases = pd.DataFrame(rows)
    measures = [f"error_{n}" for n in LEVELS] + ["violations", "unfaithful_levels", "negative", "seconds"]
    t7 = releases.groupby(["epsilon", "mechanism"], sort=False).agg(
        label=("label", "first"), **{m: (m, "mean") for m in measures}).reset_index()
    by_size = (pd.DataFrame(size_rows).groupby(["epsilon", "mechanism", "size"], sort=False)["abs_error"].mean()
               .reset_index())
    return GroupSizeStudy(t7, releases, by_size, h, eps, int(trials), int(seed), h.vectors.shape[1],
                          settings={"shares": HOUSEHOLD_SHARES})


def sample_study(params_dir: str | Path, data_dir: str | Path, epsilons=PAPER_EPSILONS, trials: int = 5,
                 seed: int = 1, max_size: int = 7, progress=None) -> GroupSizeStudy:
    """`group_size_study` on synthetic households placed in a data set's tracts (the
    households are drawn with `seed`, the noise with seed + 1)."""
    from engine.inputs.validate import load_inputs

    inputs = load_inputs(params_dir, data_dir)
    h = household_hierarchy(inputs.geography, persons_per_tract(inputs), seed, max_size)
    return group_size_study(h, epsilons, trials, seed + 1, progress)
