"""Validated inputs -> population groups -> counts -> noisy tables -> post-processed tables.

* `flatmap` — which population groups each person belongs to (SPEC section 1).
* `aggregate` — person counts per population group and sex x age cell.
* `mechanism` — the two-stage adaptive tabulation with exact noise.
* `postprocess` — marginals, non-negativity, suppression, coterminous copies.
"""
