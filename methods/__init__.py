"""The other disclosure-avoidance methods a committee weighs against SafeTab-P.

Pure algorithms: arrays and plain Python in, arrays out; no I/O, no Streamlit, no
engine. One module per method, named for it:

* `consistency` — hierarchical consistency post-processing: weighted least squares and
  the exact tree dynamic program of Fioretto, Van Hentenryck and Zhu, and their own
  problem, the group-size release (PGSR).
* `invariants` — exact invariants and subspace differential privacy (Gao, Gong, Yu):
  noise projected onto the null space of the invariant constraints.
* `cell_suppression` — primary and complementary cell suppression with the LP audit
  (Massell).
* `spines` — geographic spines: off-spine entity distance, bypassing, spine
  optimisation, production's AIAN spine (Census TDA).

docs/<method>.md says, per method, what follows the paper, what differs and why, and
what is not implemented. `_highs` is a small shared HiGHS helper.

The engine wires them in as options (`python -m engine ...`) and each has a page under
"Compare methods" in the app. `calculators/` stays the closed-form SafeTab-P math.
"""
