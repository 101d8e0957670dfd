"""engine.inputs._arrow: the buffer-level conversions give what pyarrow's own give, and a
run that reads and counts valid inputs does not import pandas (pyarrow would import it,
about 0.35 s, at its first conversion)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given, settings, strategies as st

from engine.inputs import _arrow

REPO = Path(__file__).resolve().parents[3]

INT_TYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint32, np.uint64]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(-(2**7), 2**7 - 1), max_size=40), st.sampled_from(INT_TYPES),
       st.integers(0, 3), st.integers(1, 3))
def test_ints_equals_pyarrows_array_even_of_a_strided_view(values, dtype, start, step):
    a = np.array(values, dtype=np.int64).astype(dtype)[start::step]
    got = _arrow.ints(a)
    assert got.equals(pa.array(a))
    assert got.type == pa.from_numpy_dtype(dtype)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.booleans(), max_size=70), st.integers(0, 9))
def test_mask_packs_bits_as_arrow_does(values, start):
    a = np.array(values, dtype=bool)[start:]
    assert _arrow.mask(a).equals(pa.array(a, pa.bool_()))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(max_size=6), max_size=20))
def test_strings_equals_pyarrows_array(values):
    assert _arrow.strings(values).equals(pa.array(values, pa.string()))


def test_scalars_equal_pyarrows_scalars():
    assert _arrow.string("Null").equals(pa.scalar("Null"))
    assert _arrow.string("").equals(pa.scalar(""))
    for t in (pa.int32(), pa.int64(), pa.uint8()):
        assert _arrow.integer(15, t).equals(pa.scalar(15, t))
    # what the checks do with them: a compute call with an Arrow scalar
    lengths = pc.utf8_length(pa.array(["12", "123", "1"]))
    assert pc.equal(lengths, _arrow.integer(2, lengths.type)).to_pylist() == [True, False, False]


@settings(max_examples=80, deadline=None)
@given(st.lists(st.integers(-1000, 1000), max_size=50), st.sampled_from(["bool", "int32", "int64", "uint8", "float64"]),
       st.integers(0, 5), st.integers(0, 5), st.integers(1, 3))
def test_numpy_equals_pyarrows_to_numpy_for_slices_and_chunks(values, kind, cut, length, chunks):
    if kind == "bool":
        arr = pa.array([v % 3 == 0 for v in values], pa.bool_())
    elif kind == "uint8":
        arr = pa.array([abs(v) % 256 for v in values], pa.uint8())
    else:
        arr = pa.array(values, pa.int64()).cast(pa.type_for_alias(kind))
    sliced = arr.slice(cut, max(0, len(arr) - cut - length))  # an offset into the buffers
    n = len(sliced)
    parts = [sliced.slice(i * n // chunks, (i + 1) * n // chunks - i * n // chunks) for i in range(chunks)]
    for x in (sliced, pa.chunked_array(parts, type=arr.type)):
        want = x.to_numpy(zero_copy_only=False)
        got = _arrow.numpy(x)
        assert got.dtype == want.dtype and np.array_equal(got, want)
        if len(got):
            got[0] = got[0]  # writable, as pyarrow's copy is
            assert got.flags.writeable


def test_numpy_with_nulls_or_other_types_is_pyarrows_own():
    with_null = pa.array([1, None, 3], pa.int64())
    np.testing.assert_array_equal(_arrow.numpy(with_null), with_null.to_numpy(zero_copy_only=False))
    words = pa.array(["a", "b"])
    assert list(_arrow.numpy(words)) == ["a", "b"]


@pytest.mark.parametrize("values", [
    ["06", "72", "11"],                 # GRF-C codes: one width, ASCII
    ["0600001", "0600002"],
    ["1", "22", "333"],                 # widths differ
    ["é1", "é2"],                       # not ASCII
    ["", ""],                           # empty strings
    [],
])
@pytest.mark.parametrize("type_", [pa.string(), pa.large_string(), pa.binary()])
def test_text_equals_pyarrows_conversion_to_str(values, type_):
    data = [v.encode() for v in values] if pa.types.is_binary(type_) else values
    arr = pa.array(data, type_)
    for x in (arr, arr.slice(1), pa.chunked_array([arr.slice(0, 1), arr.slice(1)], type=type_)):
        try:
            want = x.to_numpy(zero_copy_only=False).astype(str)
        except UnicodeDecodeError:  # bytes that are not ASCII: refused alike
            with pytest.raises(UnicodeDecodeError):
                _arrow.text(x)
            continue
        got = _arrow.text(x)
        assert got.dtype.kind == want.dtype.kind and got.tolist() == want.tolist()


def test_reading_and_counting_the_sample_does_not_import_pandas():
    code = (
        "import sys\n"
        f"sys.path.insert(0, {str(REPO)!r})\n"
        "from engine.run import prepare\n"
        f"p = prepare({str(REPO / 'sample_data' / 'params')!r}, {str(REPO / 'sample_data' / 'data')!r})\n"
        "assert p.inputs is not None\n"
        "print('pandas' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=REPO)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "False", out.stdout
