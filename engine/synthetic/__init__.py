"""The synthetic nation generator (`python -m engine sample`): invented persons, geography
and spec files in the SafeTab-P input layout. Tooling only: no release runs it.

* `nation` — `generate(out_dir, persons, ...)`, the public entry point.
* `_geo`, `_persons`, `_specs` — the geography, person and code models it draws from.
"""
