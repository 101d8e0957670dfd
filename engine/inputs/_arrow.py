"""Arrow <-> numpy for the reading path, without pyarrow's pandas check.

pyarrow asks its pandas shim whether a value is a pandas object in `pa.array`,
`pa.scalar`, a compute call given a Python value (`pc.equal(x, 5)`) and `to_numpy`, and
the first such question in a process imports pandas: about 0.35 s, most of what a cold
run of 1 million persons still pays once (benchmarks/RESULTS.md, "Tumult Analytics").
Reading, checking and counting valid inputs convert through these helpers instead, which
go straight from and to Arrow buffers, so a run that reads and counts does not import
pandas. (Error paths, which name rows and values, may still use pyarrow's conversions.)
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

#: numpy dtypes of the fixed-width Arrow types converted here
_NUMPY = {pa.int8(): np.int8, pa.int16(): np.int16, pa.int32(): np.int32, pa.int64(): np.int64,
          pa.uint8(): np.uint8, pa.uint16(): np.uint16, pa.uint32(): np.uint32, pa.uint64(): np.uint64,
          pa.float32(): np.float32, pa.float64(): np.float64}


def ints(values: np.ndarray) -> pa.Array:
    """An Arrow integer array of the same type as a 1-d numpy integer array (no nulls)."""
    a = np.ascontiguousarray(values)
    if a.ndim != 1 or a.dtype.kind not in "iu":
        raise TypeError(f"expected a 1-d integer array, got {a.dtype} with {a.ndim} dimensions")
    return pa.Array.from_buffers(pa.from_numpy_dtype(a.dtype), len(a), [None, pa.py_buffer(a)])


def mask(values: np.ndarray) -> pa.BooleanArray:
    """An Arrow boolean array of a 1-d numpy mask (no nulls): Arrow packs bits, lowest first."""
    a = np.asarray(values, dtype=bool)
    if a.ndim != 1:
        raise TypeError(f"expected a 1-d mask, got {a.ndim} dimensions")
    return pa.Array.from_buffers(pa.bool_(), len(a), [None, pa.py_buffer(np.packbits(a, bitorder="little"))])


def strings(values: list[str]) -> pa.StringArray:
    """An Arrow string array of Python strings (no None)."""
    data = [v.encode("utf-8") for v in values]
    offsets = np.zeros(len(data) + 1, dtype=np.int32)
    np.cumsum([len(d) for d in data], out=offsets[1:])
    return pa.Array.from_buffers(pa.string(), len(data), [None, pa.py_buffer(offsets), pa.py_buffer(b"".join(data))])


def string(value: str) -> pa.StringScalar:
    """The Arrow string scalar of `value` (what `pa.scalar(value)` gives)."""
    return strings([value])[0]


def integer(value: int, type: pa.DataType = pa.int64()) -> pa.Scalar:
    """The Arrow integer scalar of `value` as `type` (what `pa.scalar(value, type)` gives)."""
    return ints(np.array([value], dtype=np.int64))[0].cast(type)


def numpy(arr: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """`arr.to_numpy(zero_copy_only=False)` for a boolean or fixed-width numeric array
    without nulls, read from its buffers (a fresh, writable array). Anything else (nulls,
    other types) goes through pyarrow's own conversion."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.chunk(0) if arr.num_chunks == 1 else arr.combine_chunks()
    if arr.null_count or not (pa.types.is_boolean(arr.type) or arr.type in _NUMPY):
        return arr.to_numpy(zero_copy_only=False)
    n, off = len(arr), arr.offset
    data = arr.buffers()[1]
    if pa.types.is_boolean(arr.type):
        if n == 0:
            return np.zeros(0, dtype=bool)
        bits = np.frombuffer(data, dtype=np.uint8)
        return np.unpackbits(bits, count=off + n, bitorder="little")[off:].astype(bool)
    dt = np.dtype(_NUMPY[arr.type])
    if n == 0:
        return np.zeros(0, dtype=dt)
    return np.frombuffer(data, dtype=dt, count=off + n)[off:].copy()


def text(arr: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """`arr.to_numpy(zero_copy_only=False).astype(str)` for a string or binary array:
    read from its buffers when every value is ASCII of one length (GRF-C's codes), through
    pyarrow's own conversion otherwise."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.chunk(0) if arr.num_chunks == 1 else arr.combine_chunks()
    t = arr.type
    wide = pa.types.is_large_string(t) or pa.types.is_large_binary(t)
    if not (pa.types.is_string(t) or pa.types.is_binary(t) or wide) or arr.null_count or len(arr) == 0:
        return arr.to_numpy(zero_copy_only=False).astype(str)
    _, offsets_buf, data = arr.buffers()
    offsets = np.frombuffer(offsets_buf, dtype=np.int64 if wide else np.int32,
                            count=arr.offset + len(arr) + 1)[arr.offset:]
    width = int(offsets[1] - offsets[0])
    if width == 0 or data is None or not (np.diff(offsets) == width).all():
        return arr.to_numpy(zero_copy_only=False).astype(str)
    raw = np.frombuffer(data, dtype=np.uint8, count=int(offsets[-1]))[int(offsets[0]):]
    if (raw >= 0x80).any():
        return arr.to_numpy(zero_copy_only=False).astype(str)
    return raw.view(f"S{width}").astype(f"U{width}")


def index_in(values: pa.Array | pa.ChunkedArray, value_set: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(index of each value in `value_set` (0 where absent), found), as int64 and bool."""
    idx = pc.index_in(values, value_set=value_set)
    found = numpy(pc.is_valid(idx))
    return numpy(pc.fill_null(idx, integer(0, idx.type))).astype(np.int64), found
