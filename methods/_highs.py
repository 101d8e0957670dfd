"""Small shared helpers around HiGHS (highspy) for `methods`: a silent solver and one
call that solves an LP or MILP given as sparse arrays."""

from __future__ import annotations

import highspy
import numpy as np
import scipy.sparse as sp


class QuietHighs(highspy.Highs):
    """highspy.Highs with logging off before HiGHS prints its banner."""

    def enableCallbacks(self):  # noqa: N802 - highspy's name
        self.setOptionValue("output_flag", False)
        super().enableCallbacks()


def solve(cost: np.ndarray, matrix: sp.spmatrix, row_lo: np.ndarray, row_hi: np.ndarray, col_lo: np.ndarray,
          col_hi: np.ndarray, *, integer: np.ndarray | None = None,
          time_limit: float = 60.0) -> tuple[str, np.ndarray | None]:
    """min cost x s.t. row_lo <= A x <= row_hi, col_lo <= x <= col_hi
    (x[integer] whole numbers). Returns ("optimal", x) or (status, None): "infeasible",
    "time" (the time limit was reached) or "error"."""
    a = sp.csc_matrix(matrix, dtype=np.float64)
    a.sort_indices()
    n = a.shape[1]
    h = QuietHighs()
    h.setOptionValue("time_limit", float(time_limit))
    lp = highspy.HighsLp()
    lp.num_col_, lp.num_row_ = n, a.shape[0]
    lp.col_cost_ = np.asarray(cost, np.float64)
    lp.col_lower_ = np.asarray(col_lo, np.float64)
    lp.col_upper_ = np.asarray(col_hi, np.float64)
    lp.row_lower_ = np.asarray(row_lo, np.float64)
    lp.row_upper_ = np.asarray(row_hi, np.float64)
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_ = a.indptr.astype(np.int32)
    lp.a_matrix_.index_ = a.indices.astype(np.int32)
    lp.a_matrix_.value_ = a.data
    if integer is not None:
        lp.integrality_ = [highspy.HighsVarType.kInteger if b else highspy.HighsVarType.kContinuous
                           for b in np.asarray(integer, bool)]
    h.passModel(lp)
    h.run()
    ms = h.getModelStatus()
    if ms == highspy.HighsModelStatus.kOptimal:
        return "optimal", np.asarray(h.getSolution().col_value)
    if ms == highspy.HighsModelStatus.kInfeasible:
        return "infeasible", None
    if ms == highspy.HighsModelStatus.kTimeLimit:
        return "time", None
    return "error", None
