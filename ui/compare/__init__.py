"""The "Compare methods" pages' logic: `layout` is the one layout every such page shares,
with `METHODS`, the list of the pages and their addresses, and each method has its own
pure module (`consistency`, `invariants`, `cell_suppression`, `spines`).

It builds on ui/core/ and ui/safetab/ and never imports ui/committee/.
"""
