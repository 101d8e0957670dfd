"""The SafeTab-P mechanism on SafeTab-P input files (no Streamlit).

The release path, in the order data flows through it:

* `engine.inputs` — files -> validated public inputs: spec files, readers of the
  person and geography files, geography, validation.
* `engine.tabulation` — persons -> population groups (flat map) -> counts
  (aggregation) -> noisy tables (the two-stage mechanism) -> post-processing.
* `engine.noise` — the exact samplers the mechanism draws from.
* `engine.release` — OUT_DIR in the SafeTab-P layout and its manifest.
* `engine.run` — the whole run (`prepare`, `validate`, `run`); `engine.cli` is the
  command line (`python -m engine ...`).

Tooling that no release runs:

* `engine.reports` — accuracy reports (releases against the ground truth).
* `engine.synthetic` — the synthetic-nation generator (`python -m engine sample`).
"""
