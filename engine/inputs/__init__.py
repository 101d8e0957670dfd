"""Files -> validated public inputs (SPEC section 4).

* `specs` — the four spec files: iterations, codes, what each geography tabulates, stability.
* `tables` — small pipe-delimited files with line numbers.
* `readers` — person and GRF-C files (.txt or .parquet), streamed in batches.
* `geography` — regions of every geography level from GRF-C, coterminous sets.
* `validate` — `load_inputs` (config, spec files, GRF-C) and the per-batch person checks.
"""
