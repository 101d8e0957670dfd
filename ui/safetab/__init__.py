"""Helpers of the SafeTab-P pages (budget planner, adaptive tables, suppression, run): the
tables and curves of adaptive tables and suppression (`analysis`), running the mechanism
from the app and its accuracy report (`runner`, `run_report`), the paper's statements
checked (`paper_statements`), and the national projection with its panel (`projection`,
`projection_panel`).

They build on ui/core/ only; the one exception is the projection panel's Scenarios view,
which borrows the committee's comparison styler (listed in tests/test_layout.py).
"""
