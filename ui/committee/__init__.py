"""A committee's work on whole plans: the scenario store (`scenarios`), the sidebar's plan
controls (`plan_controls`), any number of plans side by side (`comparison`,
`scenario_charts`), and the decision memo (`memo`) with its HTML and PDF renderers and
chart pictures (`memo_html`, `memo_pdf`, `images`).

It builds on ui/core/ and ui/safetab/ and never imports ui/compare/.
"""
