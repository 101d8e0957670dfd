"""Rows written by the numba formatter are exactly what pyarrow's CSV writer writes."""

from __future__ import annotations

import io

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv

from engine.release import _format
from engine.release.outputs import Labels, _t2_labels


def _arrow(columns: dict) -> bytes:
    buf = io.BytesIO()
    pacsv.write_csv(pa.table(columns), buf, pacsv.WriteOptions(delimiter="|", quoting_style="none",
                                                               include_header=False))
    return buf.getvalue()


def _ours(regions, region_type, codes, region_idx, code_idx, labels=None, label_idx=None, values=None) -> bytes:
    reg, cod = Labels.of(regions), Labels.of(codes)
    lab = labels or Labels(np.zeros(0, np.uint8), np.zeros(1, np.int64), 0)
    none = np.zeros(0, np.int64)
    middle = np.frombuffer(f"|{region_type}|".encode(), np.uint8)
    out = np.empty(len(region_idx) * (reg.longest + len(middle) + cod.longest + lab.longest + 22), np.uint8)
    n = _format.format_rows(reg.data, reg.offsets, region_idx, middle, cod.data, cod.offsets, code_idx, lab.data,
                            lab.offsets, none if label_idx is None else label_idx, none if values is None else values,
                            out)
    return out[:n].tobytes()


def test_t1_suppressed_and_t2_rows_equal_the_csv_writer():
    rng = np.random.default_rng(2)
    regions = ["1", "01", "01001", "01001000100", "0610000", "9999"]
    codes = ["1001", "2002", "3101", "4021"]
    n = 500
    r = rng.integers(0, len(regions), n).astype(np.int64)
    c = rng.integers(0, len(codes), n).astype(np.int64)
    v = rng.integers(-10**12, 10**12, n).astype(np.int64)
    v[:5] = [0, -1, 1, 9, -10]
    cols = {"REGION_ID": [regions[i] for i in r], "REGION_TYPE": ["TRACT"] * n, "ITERATION_CODE": [codes[i] for i in c]}
    assert _ours(regions, "TRACT", codes, r, c, values=v) == _arrow({**cols, "COUNT": pa.array(v, pa.int64())})
    assert _ours(regions, "TRACT", codes, r, c) == _arrow(cols)
    labels = _t2_labels(2)
    lab = rng.integers(0, len(labels.offsets) - 1, n).astype(np.int64)
    text = [labels.data[labels.offsets[i] + 1: labels.offsets[i + 1]].tobytes().decode().split("|") for i in lab]
    t2 = {**cols, "AGESTART": [t[0] for t in text], "AGEEND": [t[1] for t in text], "SEX": [t[2] for t in text],
          "COUNT": pa.array(v, pa.int64())}
    assert _ours(regions, "TRACT", codes, r, c, labels, lab, v) == _arrow(t2)
    assert _ours(regions, "TRACT", codes, r[:0], c[:0], values=v[:0]) == b""
