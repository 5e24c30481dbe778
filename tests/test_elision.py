"""Temporary elision: ``a + b + c`` on large host arrays computes in the temporary ``a + b``, as
NumPy itself does, without ever writing into an array anyone else can see."""

from __future__ import annotations

import contextlib
import tracemalloc

import numpy
import pytest

import dispatch
from dispatch.arrays import _array

N = 100_000  # 800 KB of float64: over NumPy's 256 KiB elision threshold


_nothing = contextlib.nullcontext


def _peak(chain, xp, base):
    """The most memory NumPy held while ``chain`` ran (its inputs made before), and its result."""
    a = xp.asarray(base.copy())
    chain(a)  # the floors computed and the router's decisions made
    tracemalloc.start()
    try:
        result = chain(a)
        return tracemalloc.get_traced_memory()[1], numpy.asarray(result)
    finally:
        tracemalloc.stop()


def _holds_as_numpy(data, chain, mode):
    """``chain`` through dispatch (forced onto NumPy where ``mode`` says) gives NumPy's result, of
    its dtype and shape, holding at most half an operand more than NumPy holds."""
    numpy_peak, expected = _peak(chain, numpy, data)
    with dispatch.using("numpy") if mode == "forced numpy" else _nothing():
        peak, out = _peak(chain, dispatch, data)
    assert out.dtype == expected.dtype and out.shape == expected.shape
    numpy.testing.assert_array_equal(out, expected)
    assert peak < numpy_peak + data.nbytes // 2, (peak, numpy_peak)


def test_this_python_tells_temporaries_apart():
    assert None not in (_array._temporary_refs, _array._temporary_right_refs, _array._temporary_unary_refs)
    assert _array._owned_refs > 0


def test_a_chain_reuses_its_temporaries_and_equals_numpy(operator_path):
    """``(a * 2.0 + a) - 4.0 * a + 1.5`` holds at most what NumPy holds: each temporary of 800 KB
    takes the next result, where without that it would hold one array more."""
    base = numpy.linspace(0.0, 1.0, N)

    def chain(a):
        return (a * 2.0 + a) - 4.0 * a + 1.5

    numpy_peak, expected = _peak(chain, numpy, base)
    peak, out = _peak(chain, dispatch, base)
    assert out.dtype == expected.dtype and out.shape == expected.shape
    numpy.testing.assert_array_equal(out, expected)
    assert peak < numpy_peak + base.nbytes // 2, (peak, numpy_peak)


@pytest.mark.parametrize("mode", ["forced numpy", "traced"])
def test_a_chain_reuses_its_temporaries_forced_onto_numpy_or_traced(operator_path, mode):
    """Forcing NumPy (a benchmark's baseline) or tracing turns the host shortcut off, not NumPy's
    elision: ``(a - b) ** 2`` and ``2.0 * (a + b)`` compute in their temporaries, as NumPy's do."""
    base = numpy.linspace(0.0, 1.0, N)

    def chain(a):
        return 2.0 * ((a - 0.5) ** 2 + a) + 1.0

    numpy_peak, expected = _peak(chain, numpy, base)
    with dispatch.using("numpy") if mode == "forced numpy" else dispatch.trace():
        peak, out = _peak(chain, dispatch, base)
    assert out.dtype == expected.dtype and out.shape == expected.shape
    numpy.testing.assert_array_equal(out, expected)
    assert peak < numpy_peak + base.nbytes // 2, (peak, numpy_peak)


@pytest.mark.parametrize("mode", ["auto", "forced numpy"])
def test_a_temporary_right_operand_of_a_commutative_operator_takes_the_result(operator_path, mode):
    """``a + 0.5 * b`` and ``a * (b - 1.0)``: NumPy writes ``+``, ``*``, ``&``, ``|`` and ``^`` into a
    temporary right operand too, so dispatch holds no more than NumPy does; ``-`` it does not."""
    base = numpy.linspace(0.0, 1.0, N)
    ints = numpy.arange(N, dtype=numpy.int64)
    chains = [(base, lambda a: a + 0.5 * a), (base, lambda a: a * (a - 1.0)), (ints, lambda a: a & (a + 3)),
              (ints, lambda a: a | (a * 2)), (ints, lambda a: a ^ (a + 1)), (base, lambda a: a - 0.5 * a)]
    for data, chain in chains:
        _holds_as_numpy(data, chain, mode)


def test_a_named_or_shared_right_operand_is_never_written(operator_path):
    """Only a temporary takes the result: a named right operand, one a list holds, a view, one of
    a narrower dtype than the result or broadcast to a larger shape keep their values."""
    base = numpy.arange(N, dtype=numpy.float64)
    a = dispatch.asarray(base.copy())
    for _ in range(3):  # (the first call of its kind is decided; the later ones take the fast path)
        x = a * 2.0
        y = a + x  # x is named
        numpy.testing.assert_array_equal(numpy.asarray(x), base * 2.0)
        numpy.testing.assert_array_equal(numpy.asarray(y), base * 3.0)
        held = [a * 2.0]
        z = a + held[0]
        numpy.testing.assert_array_equal(numpy.asarray(held[0]), base * 2.0)
        numpy.testing.assert_array_equal(numpy.asarray(z), base * 3.0)
        w = a + a[::-1]  # a view of a
        numpy.testing.assert_array_equal(numpy.asarray(a), base)
        numpy.testing.assert_array_equal(numpy.asarray(w), base + base[::-1])
    narrow = dispatch.asarray(numpy.ones(N, dtype=numpy.float32))
    wide = a + (narrow + narrow)  # float64 + float32: a float64 result, not written into the float32
    assert wide.dtype == numpy.float64
    numpy.testing.assert_array_equal(numpy.asarray(wide), base + 2.0)
    grid = dispatch.asarray(numpy.ones((3, N))) + (dispatch.asarray(numpy.ones((1, N))) + 1.0)
    assert grid.shape == (3, N)
    numpy.testing.assert_array_equal(numpy.asarray(grid), numpy.full((3, N), 3.0))


@pytest.mark.parametrize("mode", ["auto", "forced numpy"])
def test_a_unary_operator_computes_into_its_temporary(operator_path, mode):
    """``-(a * 2)``, ``+(a * 2)``, ``abs(a - 0.5)`` and ``~(m + 1)``: NumPy computes a unary operator
    into a temporary operand, so dispatch holds no more than NumPy does."""
    base = numpy.linspace(-1.0, 1.0, N)
    ints = numpy.arange(N, dtype=numpy.int64)
    chains = [(base, lambda a: -(a * 2.0)), (base, lambda a: +(a * 2.0)), (base, lambda a: abs(a - 0.5)),
              (ints, lambda a: ~(a + 1)), (base, lambda a: -(a * 2.0) + 1.0)]
    for data, chain in chains:
        _holds_as_numpy(data, chain, mode)


def test_a_unary_operator_writes_into_no_named_view_or_complex_operand(operator_path):
    """A named operand, one a list holds and a view keep their values; the magnitude of a complex
    temporary is a new float64 array, as NumPy's."""
    base = numpy.linspace(-1.0, 1.0, N)
    a = dispatch.asarray(base.copy())
    for _ in range(3):  # (the first call of its kind is decided; the later ones take the fast path)
        x = a * 2.0
        y = -x
        numpy.testing.assert_array_equal(numpy.asarray(x), base * 2.0)
        numpy.testing.assert_array_equal(numpy.asarray(y), -(base * 2.0))
        held = [a * 2.0]
        z = abs(held[0])
        numpy.testing.assert_array_equal(numpy.asarray(held[0]), base * 2.0)
        numpy.testing.assert_array_equal(numpy.asarray(z), abs(base * 2.0))
        w = -a[::2]
        numpy.testing.assert_array_equal(numpy.asarray(a), base)
        numpy.testing.assert_array_equal(numpy.asarray(w), -base[::2])
    c = dispatch.asarray(base + 1j * base)
    magnitude = abs(c * 2.0)
    assert magnitude.dtype == numpy.float64
    numpy.testing.assert_allclose(numpy.asarray(magnitude), abs((base + 1j * base) * 2.0), rtol=1e-15)


def test_a_call_remembered_into_its_right_operand_never_serves_one_into_its_left(operator_path):
    """Over the floors, a call remembered with its result written into the temporary right
    operand (float32 named + float64 temporary) has a key of its own: the same dtypes with the
    float32 temporary on the left get a new float64 array, never a float64 result cast into it."""
    n = 4_000_000  # over the seed's floor for ``add``
    narrow = dispatch.asarray(numpy.ones(n, dtype=numpy.float32))
    wide = dispatch.asarray(numpy.ones(n))
    for _ in range(3):
        right = narrow + wide * 2.0
        assert right.dtype == numpy.float64
        numpy.testing.assert_array_equal(numpy.asarray(right), numpy.full(n, 3.0))
    for _ in range(3):
        left = narrow * 1.5 + wide
        assert left.dtype == numpy.float64
        numpy.testing.assert_array_equal(numpy.asarray(left), numpy.full(n, 2.5))


def test_named_arrays_and_views_are_never_written(operator_path):
    base = numpy.arange(N, dtype=numpy.float64)
    a = dispatch.asarray(base.copy())
    x = a + 1.0
    y = x + 1.0  # x is named: a new array
    assert not numpy.shares_memory(numpy.asarray(x), numpy.asarray(y))
    numpy.testing.assert_array_equal(numpy.asarray(x), base + 1.0)
    z = a[1:] + 1.0  # a temporary view of a: a's memory is not the temporary's
    numpy.testing.assert_array_equal(numpy.asarray(a), base)
    numpy.testing.assert_array_equal(numpy.asarray(z), base[1:] + 1.0)


def test_an_operand_a_c_extension_holds_through_a_borrowed_reference_is_never_written(operator_path):
    """``l[4] + l[4]`` called from C: NumPy's test helper calls ``PyNumber_Add`` on a list's item,
    a borrowed reference, which shows a temporary's reference count though the list holds it."""
    helpers = pytest.importorskip("numpy._core._multiarray_tests")
    for _ in range(3):  # (the first call of its kind is decided; the later ones take the fast path)
        items = [1, 1, 1, 1, dispatch.ones(N)]
        result = helpers.incref_elide_l(items)
        numpy.testing.assert_array_equal(numpy.asarray(items[4]), numpy.ones(N))
        numpy.testing.assert_array_equal(numpy.asarray(result), numpy.full(N, 2.0))


def test_a_result_of_another_dtype_or_shape_is_not_written_into_the_temporary(operator_path):
    ints = dispatch.asarray(numpy.arange(N, dtype=numpy.int64))
    halves = (ints + 1) / 2  # int64 + 1 may be elided; / 2 is float64: a new array
    assert halves.dtype == numpy.float64
    numpy.testing.assert_array_equal(numpy.asarray(halves), (numpy.arange(N) + 1) / 2)
    row = dispatch.asarray(numpy.ones((1, N)))
    grid = (row + 1.0) + dispatch.asarray(numpy.ones((3, 1)))  # broadcasts to (3, N): not in (1, N)
    assert grid.shape == (3, N)
    numpy.testing.assert_array_equal(numpy.asarray(grid), numpy.full((3, N), 3.0))
    narrow = dispatch.asarray(numpy.ones(N, dtype=numpy.float32))
    wide = (narrow + narrow) + dispatch.asarray(numpy.ones(N))  # float32 + float64 is float64
    assert wide.dtype == numpy.float64
    numpy.testing.assert_array_equal(numpy.asarray(wide), numpy.full(N, 3.0))


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
