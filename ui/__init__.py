"""Streamlit helpers of the SafeTab-P app, one subpackage per section of the app.

* `ui/core/` — what every section uses: the shared plan (state, undo history, share
  link), typed numbers, widgets, the plan's tables (planner) and charts, files, the
  work folder, the glossary. It imports no other ui subpackage.
* `ui/safetab/` — the SafeTab-P pages' helpers: adaptive tables and suppression
  (analysis), running the mechanism and its report, the paper's statements, the
  national projection and its panel.
* `ui/committee/` — whole plans for a committee: the scenario store, the sidebar plan
  controls, plans side by side, the decision memo and its HTML and PDF renderers.
* `ui/compare/` — the "Compare methods" pages: the shared layout (`layout`, with the
  list of pages) and one module per method.

Pages (`app_pages/<section>/`) lay out widgets and call these; every number comes from
`calculators` or `engine`. Allowed imports (tests/test_layout.py): core <- safetab <-
committee and compare, which never import each other. docs/architecture.md draws it.
"""
