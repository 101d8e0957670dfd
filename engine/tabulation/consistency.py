"""`--consistency`: hierarchical consistency as adjust functions of the hierarchy stage.

Each method turns the published totals of one forest (`hierarchy.HierarchyBatch`) into
integer totals, weighting every node by the noise variance of its total; suppressed
groups are unobserved non-negative remainders (their noisy totals are never read). The
stage then makes the sex x age cells follow (docs/consistency.md):

- ``none``: SafeTab-P as published (no stage at all in a release).
- ``least-squares``: the weighted least-squares consistent estimate
  (`methods.consistency.least_squares`, unbiased, may be negative unless the plan has
  ``allow_negative_counts: false``), made integral by consistent rounding
  (`round_consistent`), like the Census TopDown algorithm's L2 solve then rounder.
- ``tree-dp``: the exact non-negative integer optimum of Fioretto, Van Hentenryck and
  Zhu (`methods.consistency.tree_dp`).
- ``relax-then-round`` (studies only, not for `run`): the paper's baseline, the
  non-negative relaxation rounded node by node; it is not consistent.
"""

from __future__ import annotations

from engine.tabulation.hierarchy import AdjustFn, HierarchyBatch

#: The methods `python -m engine run --consistency` offers (none = SafeTab-P as published).
RUN_METHODS: tuple[str, ...] = ("none", "least-squares", "tree-dp")
#: The methods a comparison can put side by side.
STUDY_METHODS: tuple[str, ...] = (*RUN_METHODS, "relax-then-round")

DESCRIPTIONS: dict[str, str] = {
    "none": "SafeTab-P as published: every geography level on its own",
    "least-squares": "weighted least squares (Hay et al.), then consistent rounding (TopDown-style)",
    "tree-dp": "exact non-negative integer optimum by tree dynamic programming (Fioretto et al.)",
    "relax-then-round": "non-negative least squares rounded node by node (the paper's baseline; not additive)",
}

LABELS: dict[str, str] = {
    "none": "SafeTab-P (none)",
    "least-squares": "Least squares",
    "tree-dp": "Tree DP",
    "relax-then-round": "Relax then round",
}


def adjuster(method: str, allow_negative: bool) -> tuple[AdjustFn | None, bool]:
    """The adjust function of a method and whether cells must stay non-negative.

    Raises ValueError for an unknown method name.
    """
    from methods import consistency as mc

    if method not in STUDY_METHODS:
        raise ValueError(f"unknown consistency method {method!r}; choose one of {', '.join(STUDY_METHODS)}")
    if method == "none":
        return None, not allow_negative

    if method == "least-squares":
        nonneg = not allow_negative

        def adjust(b: HierarchyBatch):
            real = mc.least_squares(b.forest.parents, b.published, b.variance, nonnegative=nonneg)
            # Suppressed leaves stand for non-negative remainders: rounding keeps them so.
            bounded = nonneg | (b.leaf & ~b.released)
            return mc.round_consistent(b.forest.parents, real, nonnegative=bounded)

        return adjust, nonneg

    if method == "tree-dp":
        def adjust(b: HierarchyBatch):
            return mc.tree_dp(b.forest.parents, b.published, variances=b.variance, nonnegative=True)

        return adjust, True

    def adjust(b: HierarchyBatch):
        return mc.relax_then_round(b.forest.parents, b.published, b.variance, nonnegative=True)

    return adjust, True
