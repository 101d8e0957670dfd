"""The seed paper's own problem (methods.consistency: group_size_vector,
release_group_sizes, fit_group_sizes): Fioretto, Van Hentenryck and Zhu's running
example, their sensitivities by brute force over neighbours, the PGSR constraints on
random trees, and optimality against brute force on tiny hierarchies."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from methods.consistency import (
    GroupSizeRelease,
    fit_group_sizes,
    group_size_vector,
    release_group_sizes,
    violations,
)
from methods.consistency import _fit_cumulative, _tree  # noqa: PLC2701 - the forced integer program

# The paper's Table 3 (units, i.e. households, of the users, by state) and Figure 1.
TABLE3_UNITS = {"GA": ["A", "B", "A", "A", "C"], "NY": ["D", "E", "D", "D", "F", "F"]}
US_PARENTS = [-1, 0, 0]  # US, GA, NY


def _example_vectors(max_size: int = 3) -> np.ndarray:
    sizes, regions = [], []
    for r, state in enumerate(("GA", "NY"), start=1):
        units = TABLE3_UNITS[state]
        for u in sorted(set(units)):
            sizes.append(units.count(u))
            regions.append(r)
    return group_size_vector(np.array(sizes), max_size, regions=np.array(regions), n_regions=3)


def _full(parents, leaf_rows: np.ndarray) -> np.ndarray:
    """Every node's vector from its leaves (parents listed after their children or not);
    leaf_rows is (nodes, k), or (..., nodes, k) for many hierarchies at once."""
    n = len(parents)
    out = np.zeros_like(leaf_rows)
    leaves = [i for i in range(n) if i not in parents]
    for l in leaves:
        i = l
        while i != -1:
            out[..., i, :] += leaf_rows[..., l, :]
            i = parents[i]
    return out


# ------------------------------------------------------------------ the running example
def test_example_2_table_4_group_size_vectors():
    """Example 2 / Table 4: households A (3 persons), B and C (1 each) in Georgia; D (3),
    E (1) and F (2) in New York. With sizes 1..3: GA (2, 0, 1), NY (1, 1, 1), US (3, 1, 2)
    (three groups of size 1 in the US, "represented in the first row of the table"), and
    n = 6 groups, the root of H_DP (Example 3)."""
    v = _example_vectors()
    assert v[1].tolist() == [2, 0, 1] and v[2].tolist() == [1, 1, 1]
    full = _full(US_PARENTS, v)
    assert full[0].tolist() == [3, 1, 2] and int(full[0].sum()) == 6
    assert group_size_vector([3, 1, 1], 3).tolist() == [2, 0, 1]
    # Sizes above max_size count in the last entry ("7 or more").
    assert group_size_vector([1, 2, 7, 9, 30], 7).tolist() == [1, 1, 0, 0, 0, 0, 3]
    # The exact release of the example with no noise is the example.
    r = release_group_sizes(US_PARENTS, v, 1e9, rng=np.random.default_rng(0))
    assert r.counts.tolist() == full.tolist() and r.total == 6 and r.levels == 2


def _neighbours(groups: list[int]):
    """Every dataset one person away, the number of groups (public) unchanged: a person
    joins a group, or leaves a group of two or more."""
    for i in range(len(groups)):
        yield groups[:i] + [groups[i] + 1] + groups[i + 1:]
        if groups[i] >= 2:
            yield groups[:i] + [groups[i] - 1] + groups[i + 1:]


@settings(max_examples=80, derandomize=True, deadline=None)
@given(st.lists(st.integers(1, 9), min_size=1, max_size=8), st.integers(1, 6))
def test_lemma_4_and_lemma_6_sensitivities_by_brute_force(groups, max_size):
    """Lemma 4: a group-size vector moves by at most 2 in L1 between neighbours (one
    group changes size: -1 in one entry, +1 in the next); Lemma 6: its cumulative
    version by at most 1. Checked over every neighbour of random datasets."""
    v = group_size_vector(groups, max_size)
    plain = cum = 0
    for nb in _neighbours(groups):
        w = group_size_vector(nb, max_size)
        plain = max(plain, int(np.abs(w - v).sum()))
        cum = max(cum, int(np.abs(np.cumsum(w) - np.cumsum(v)).sum()))
    assert plain <= 2 and cum <= 1
    if any(g < max_size for g in groups) and max_size > 1:
        assert plain == 2 and cum == 1  # attained as soon as a group can change bin


def test_the_running_example_attains_sensitivities_2_and_1():
    sizes = [3, 1, 1, 3, 1, 2]
    v = group_size_vector(sizes, 3)
    changes = [(int(np.abs(group_size_vector(nb, 3) - v).sum()),
                int(np.abs(np.cumsum(group_size_vector(nb, 3)) - np.cumsum(v)).sum())) for nb in _neighbours(sizes)]
    assert max(c[0] for c in changes) == 2 and max(c[1] for c in changes) == 1
    r = release_group_sizes(US_PARENTS, _example_vectors(), 1.0, rng=np.random.default_rng(1))
    rc = release_group_sizes(US_PARENTS, _example_vectors(), 1.0, cumulative=True, rng=np.random.default_rng(1))
    assert (r.sensitivity, rc.sensitivity) == (2, 1)


# ------------------------------------------------------------------ noise and budget
def test_budget_split_and_noise_law():
    """Theorem 1: each of the L levels spends epsilon / L; the noise is two-sided geometric
    with alpha = exp(-(epsilon / L) / Delta), variance 2 alpha / (1 - alpha)^2."""
    rng = np.random.default_rng(7)
    leaves = 4000
    parents = [-1] + [0] * leaves
    vec = np.zeros((leaves + 1, 3), np.int64)
    vec[1:, 0] = 5
    for cum, delta in ((False, 2), (True, 1)):
        r = release_group_sizes(parents, vec, 1.2, cumulative=cum, rng=rng)
        assert isinstance(r, GroupSizeRelease)
        assert r.levels == 2 and r.epsilon_per_level == pytest.approx(0.6) and r.sensitivity == delta
        assert r.alpha == pytest.approx(math.exp(-0.6 / delta))
        query = np.cumsum(vec, axis=1) if cum else vec
        noise = (r.noisy - _full(parents, query))[1:].reshape(-1)
        want = 2 * r.alpha / (1 - r.alpha) ** 2
        # 12,000 draws: the sample variance is within 6% of the law's (about 4.5 sd).
        assert noise.var() == pytest.approx(want, rel=0.06)
        assert abs(noise.mean()) < 4 * math.sqrt(want / noise.size)
        assert (noise == np.rint(noise)).all()


def test_huge_epsilon_returns_the_truth():
    rng = np.random.default_rng(3)
    parents = [-1, 0, 0, 1, 1, 2, 2, 2]
    leaf = np.zeros((8, 4), np.int64)
    leaf[3:] = rng.integers(0, 6, size=(5, 4))
    full = _full(parents, leaf)
    for cum in (False, True):
        for method in ("dp", "relax-then-round"):
            r = release_group_sizes(parents, leaf, 1e9, cumulative=cum, rng=rng, method=method)
            assert r.alpha == 0.0 and r.counts.tolist() == full.tolist()


# ------------------------------------------------------------------ the PGSR constraints
@st.composite
def _hierarchies(draw, max_nodes: int = 12, max_k: int = 5):
    n = draw(st.integers(2, max_nodes))
    parents = [-1] + [draw(st.integers(0, i - 1)) for i in range(1, n)]
    k = draw(st.integers(1, max_k))
    rows = np.array(draw(st.lists(st.lists(st.integers(0, 6), min_size=k, max_size=k), min_size=n, max_size=n)))
    leaf = np.where(np.isin(np.arange(n), parents)[:, None], 0, rows)
    return parents, leaf


def _levels(parents) -> list[list[int]]:
    depth = []
    for i in range(len(parents)):
        d, j = 0, i
        while parents[j] != -1:
            j, d = parents[j], d + 1
        depth.append(d)
    return [[i for i in range(len(parents)) if depth[i] == d] for d in range(max(depth) + 1)]


@settings(max_examples=60, derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_hierarchies(), st.sampled_from([0.3, 1.0, 4.0]), st.booleans(), st.integers(0, 2**31 - 1))
def test_the_exact_mechanisms_meet_every_pgsr_condition(h, eps, cum, seed):
    """Consistency (every parent row the sum of its children's), validity (non-negative
    integers) and faithfulness (the root holds the public n groups; with consistency,
    so does every level whose regions cover the leaves)."""
    parents, leaf = h
    r = release_group_sizes(parents, leaf, eps, cumulative=cum, rng=np.random.default_rng(seed))
    x = r.counts
    n = int(_full(parents, leaf)[0].sum())
    assert x.dtype == np.int64 and (x >= 0).all()
    assert violations(parents, x.astype(float)).sum() == 0
    assert int(x[0].sum()) == n == r.total
    leaves = [i for i in range(len(parents)) if i not in parents]
    assert int(x[leaves].sum()) == n


def test_relax_then_round_can_break_consistency():
    """The paper's relaxed baselines round each count on its own: consistency violations
    (its Table 7's #CV), which the exact mechanisms never have."""
    parents = [-1] + [0] * 6 + [i for i in range(1, 7) for _ in range(3)]
    rng = np.random.default_rng(11)
    leaf = np.zeros((len(parents), 4), np.int64)
    leaf[7:] = rng.integers(0, 5, size=(18, 4))
    broken = {False: 0, True: 0}
    for seed in range(6):
        for cum in (False, True):
            r = release_group_sizes(parents, leaf, 0.5, cumulative=cum, rng=np.random.default_rng(seed),
                                    method="relax-then-round")
            broken[cum] += int(violations(parents, r.counts.astype(float)).sum())
            exact = release_group_sizes(parents, leaf, 0.5, cumulative=cum, rng=np.random.default_rng(seed))
            assert violations(parents, exact.counts.astype(float)).sum() == 0
    assert broken[False] > 0 and broken[True] > 0


# ------------------------------------------------------------------ optimality
def _compositions(total: int, parts: int):
    if parts == 1:
        yield (total,)
        return
    for i in range(total + 1):
        for rest in _compositions(total - i, parts - 1):
            yield (i,) + rest


def _brute_force(parents, noisy, n, k, cumulative):
    """The least squared distance over every feasible hierarchy (all leaf vectors with n
    groups in total)."""
    leaves = [i for i in range(len(parents)) if i not in parents]
    # every composition at once (one hierarchy per row; a loop over them took seconds)
    cells = np.array(list(_compositions(n, len(leaves) * k)), np.int64)
    leaf = np.zeros((len(cells), len(parents), k), np.int64)
    leaf[:, leaves, :] = cells.reshape(len(cells), len(leaves), k)
    x = _full(parents, leaf)
    q = np.cumsum(x, axis=2) if cumulative else x
    return float(((q - noisy) ** 2).sum(axis=(1, 2)).min())


TINY = [([-1, 0, 0], 2, 3), ([-1, 0, 0], 3, 2), ([-1, 0, 1], 2, 3), ([-1, 0, 0, 0], 2, 2), ([-1, 0, 1, 1], 2, 3)]


@pytest.mark.parametrize("parents,k,n", TINY)
@pytest.mark.parametrize("cumulative", [False, True])
def test_exact_post_processing_matches_brute_force(parents, k, n, cumulative):
    rng = np.random.default_rng(len(parents) * 10 + k + n)
    for _ in range(8):
        base = rng.integers(0, n + 1, size=(len(parents), k)).astype(float)
        noisy = (np.cumsum(base, axis=1) if cumulative else base) + rng.normal(0, 1.5, size=base.shape)
        x = fit_group_sizes(parents, noisy, n, cumulative=cumulative)
        q = np.cumsum(x, axis=1) if cumulative else x
        got = float(((q - noisy) ** 2).sum())
        assert got == pytest.approx(_brute_force(parents, noisy, n, k, cumulative), abs=1e-7)
        assert int(x[0].sum()) == n and (x >= 0).all()


def test_the_integer_program_agrees_with_the_interpolated_lp():
    """The exact cumulative solve accepts an integral LP vertex; its fallback, an integer
    program over the whole range, finds an optimum of the same cost."""
    rng = np.random.default_rng(5)
    parents = [-1, 0, 0, 1, 1, 2]
    tree = _tree(parents)
    for _ in range(5):
        noisy = np.cumsum(rng.integers(0, 4, size=(6, 3)), axis=1) + rng.normal(0, 2, size=(6, 3))
        n = 9
        a = _fit_cumulative(tree, noisy, n, exact=True)
        b = _fit_cumulative(tree, noisy, n, exact=True, force_integer=True)
        cost = [float(((np.cumsum(x, axis=1) - noisy) ** 2).sum()) for x in (a, b)]
        assert cost[0] == pytest.approx(cost[1], abs=1e-7)
        assert cost[0] == pytest.approx(_brute_force(parents, noisy, n, 3, True), abs=1e-7)


# ------------------------------------------------------------------ inputs
def test_inputs_are_checked():
    v = _example_vectors()
    with pytest.raises(ValueError, match="max_size"):
        group_size_vector([1, 2], 0)
    with pytest.raises(ValueError, match="at least one member"):
        group_size_vector([0, 2], 3)
    with pytest.raises(ValueError, match="whole numbers"):
        group_size_vector([1.5], 3)
    with pytest.raises(ValueError, match="epsilon"):
        release_group_sizes(US_PARENTS, v, 0.0)
    with pytest.raises(ValueError, match="too small"):
        release_group_sizes(US_PARENTS, v, 1e-300)
    with pytest.raises(ValueError, match="one root"):
        release_group_sizes([-1, -1], v[:2], 1.0)
    with pytest.raises(ValueError, match="negative"):
        release_group_sizes(US_PARENTS, -v, 1.0)
    bad = v.copy()
    bad[0] = [9, 9, 9]
    with pytest.raises(ValueError, match="row 0"):
        release_group_sizes(US_PARENTS, bad, 1.0)
    with pytest.raises(ValueError, match="Generator"):
        release_group_sizes(US_PARENTS, v, 1.0, rng=3)
    with pytest.raises(ValueError, match="method"):
        release_group_sizes(US_PARENTS, v, 1.0, method="lsq")
    with pytest.raises(ValueError, match="whole number"):
        fit_group_sizes(US_PARENTS, v.astype(float), -1)


def test_the_noise_split_is_documented_as_the_projects_reading_of_a_lost_parameter():
    """Each of the L levels spends epsilon / L with alpha = exp(-(epsilon / L) / Delta); the
    text we have lost eq. (3)'s parameter, so docs/consistency.md says the split is the
    project's reading instead of crediting it to Theorem 1 (it did before)."""
    from pathlib import Path

    import numpy as np

    from methods.consistency import group_size_vector, release_group_sizes

    ga, ny = group_size_vector([3, 1, 1], 3), group_size_vector([3, 1, 2], 3)
    for cumulative, delta in ((False, 2), (True, 1)):
        rel = release_group_sizes([-1, 0, 0], np.array([[0, 0, 0], ga, ny]), 1.0, cumulative=cumulative,
                                  rng=np.random.default_rng(3))
        assert rel.levels == 2 and rel.epsilon_per_level == 0.5 and rel.sensitivity == delta
        assert rel.alpha == np.exp(-0.5 / delta)
    doc = (Path(__file__).resolve().parents[2] / "docs" / "consistency.md").read_text(encoding="utf-8")
    assert "(Theorem 1: parallel\ncomposition within a level, sequential across)" not in doc
    assert "eq. (3) is lost in the extraction we have" in doc
    assert "The parameter of the geometric mechanism in eq. (3)" in doc
