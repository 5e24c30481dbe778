"""Temporary elision: ``a + b + c`` on large host arrays computes in the temporary ``a + b``, as
NumPy itself does, without ever writing into an array anyone else can see."""

from __future__ import annotations

import numpy
import pytest

import dispatch
from dispatch import _array

N = 100_000  # 800 KB of float64: over NumPy's 256 KiB elision threshold


@pytest.fixture
def elided(monkeypatch):
    """Every operand ``_elides`` accepted."""
    seen = []
    real = _array._elides

    def spy(func, data, odata, data_first):
        ok = real(func, data, odata, data_first)
        if ok:
            seen.append(data.shape)
        return ok

    monkeypatch.setattr(_array, "_elides", spy)
    monkeypatch.setattr(_array, "_owned_refs", _array._owned_refs + 1)  # the spy's frame holds the array too
    return seen


def test_this_python_tells_temporaries_apart():
    assert _array._temporary_refs is not None and _array._owned_refs > 0


def test_a_chain_reuses_its_temporaries_and_equals_numpy(elided):
    base = numpy.linspace(0.0, 1.0, N)
    a = dispatch.asarray(base)
    result = (a * 2.0 + a) - 4.0 * a + 1.5
    expected = (base * 2.0 + base) - 4.0 * base + 1.5
    out = numpy.asarray(result)
    assert out.dtype == expected.dtype and out.shape == expected.shape
    numpy.testing.assert_array_equal(out, expected)
    assert len(elided) >= 2  # (a * 2.0) + a, then ... + 1.5 at least
    numpy.testing.assert_array_equal(numpy.asarray(a), numpy.linspace(0.0, 1.0, N))


def test_named_arrays_and_views_are_never_written(elided):
    base = numpy.arange(N, dtype=numpy.float64)
    a = dispatch.asarray(base.copy())
    x = a + 1.0
    y = x + 1.0  # x is named: a new array
    assert not numpy.shares_memory(numpy.asarray(x), numpy.asarray(y))
    numpy.testing.assert_array_equal(numpy.asarray(x), base + 1.0)
    z = a[1:] + 1.0  # a temporary view of a: a's memory is not the temporary's
    numpy.testing.assert_array_equal(numpy.asarray(a), base)
    numpy.testing.assert_array_equal(numpy.asarray(z), base[1:] + 1.0)
    assert elided == []


def test_a_result_of_another_dtype_or_shape_is_not_written_into_the_temporary(elided):
    ints = dispatch.asarray(numpy.arange(N, dtype=numpy.int64))
    halves = (ints + 1) / 2  # int64 + 1 may be elided; / 2 is float64: a new array
    assert halves.dtype == numpy.float64
    numpy.testing.assert_array_equal(numpy.asarray(halves), (numpy.arange(N) + 1) / 2)
    row = dispatch.asarray(numpy.ones((1, N)))
    grid = (row + 1.0) + dispatch.asarray(numpy.ones((3, 1)))  # broadcasts to (3, N): not in (1, N)
    assert grid.shape == (3, N)
    numpy.testing.assert_array_equal(numpy.asarray(grid), numpy.full((3, N), 3.0))
    assert (3, N) not in elided and all(shape == (N,) for shape in elided if shape != (1, N))


def test_divmod_and_comparisons_of_temporaries_are_numpys():
    base = numpy.arange(N, dtype=numpy.float64)
    a = dispatch.asarray(base)
    quotient, remainder = divmod(a + 1.0, 7.0)
    expected_q, expected_r = divmod(base + 1.0, 7.0)
    numpy.testing.assert_array_equal(numpy.asarray(quotient), expected_q)
    numpy.testing.assert_array_equal(numpy.asarray(remainder), expected_r)
    flags = (a + 1.0) > 5.0
    assert flags.dtype == numpy.bool_
    numpy.testing.assert_array_equal(numpy.asarray(flags), base + 1.0 > 5.0)
    masked = (a + 1.0) * True
    assert masked.dtype == numpy.float64
    numpy.testing.assert_array_equal(numpy.asarray(masked), base + 1.0)
