"""numba kernel that writes output rows as bytes (the SafeTab-P text layout).

A release has a row for every population group of the universe (hundreds of millions
at national scale, most of them in `suppressed/`); building Arrow string columns for
them and handing them to a CSV writer costs more than the tabulation. Here a row is
assembled from byte strings chosen by index (region id, iteration code, the T2 age
and sex labels) and a decimal count, straight into one buffer:

    REGION_ID|REGION_TYPE|ITERATION_CODE[|AGESTART|AGEEND|SEX][|COUNT]\n

exactly what pyarrow's CSV writer wrote before (no quoting, "\n" line ends; the
tests compare the two).
"""

from __future__ import annotations

import numpy as np
from engine._jit import jit

PIPE = 124  # "|"
NEWLINE = 10  # "\n"
MINUS = 45  # "-"
ZERO = 48  # "0"


@jit()
def format_rows(reg_bytes, reg_off, region, middle, code_bytes, code_off, code, lab_bytes, lab_off, label,
                values, out):
    """Write len(region) rows into `out` (large enough: see `row_bound`); returns the
    number of bytes written. `middle` is "|REGION_TYPE|"; `label` (empty: no label) picks
    "|AGESTART|AGEEND|SEX" strings; `values` (empty: no count) the counts."""
    pos = 0
    digits = np.empty(20, np.uint8)
    has_label = label.shape[0] > 0
    has_value = values.shape[0] > 0
    for i in range(region.shape[0]):
        r = region[i]
        for j in range(reg_off[r], reg_off[r + 1]):
            out[pos] = reg_bytes[j]
            pos += 1
        for j in range(middle.shape[0]):
            out[pos] = middle[j]
            pos += 1
        c = code[i]
        for j in range(code_off[c], code_off[c + 1]):
            out[pos] = code_bytes[j]
            pos += 1
        if has_label:
            b = label[i]
            for j in range(lab_off[b], lab_off[b + 1]):
                out[pos] = lab_bytes[j]
                pos += 1
        if has_value:
            out[pos] = PIPE
            pos += 1
            v = values[i]
            if v < 0:
                out[pos] = MINUS
                pos += 1
                v = -v
            n = 0
            while True:
                digits[n] = ZERO + v % 10
                n += 1
                v //= 10
                if v == 0:
                    break
            for j in range(n - 1, -1, -1):
                out[pos] = digits[j]
                pos += 1
        out[pos] = NEWLINE
        pos += 1
    return pos
