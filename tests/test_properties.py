"""Property tests: random shapes, dtypes and values through dispatch on each backend, against
NumPy. Arithmetic, comparisons, reductions, broadcasting and indexing.

Examples are bounded (``max_examples`` small, no deadline) so the suite stays fast; each
failure hypothesis finds is shrunk to a minimal array, and fixed in dispatch or listed in
``xfails.py`` with its reason.
"""

from __future__ import annotations

import os
import warnings

import numpy
import pytest
from helpers import assert_same, on_backend
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from xfails import lookup

import dispatch

# CI runs a fixed, small sample; DISPATCH_PROPERTY_EXAMPLES=500 searches wider (random seeds).
_EXAMPLES = int(os.environ.get("DISPATCH_PROPERTY_EXAMPLES", "0"))
SETTINGS = settings(max_examples=_EXAMPLES or 30, deadline=None, derandomize=not _EXAMPLES,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])

DTYPES = [numpy.dtype(d) for d in ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                                     "uint64", "float16", "float32", "float64", "complex64", "complex128")]
NUMBERS = [d for d in DTYPES if d.kind != "b"]


def elements(dtype: numpy.dtype, special: bool = True) -> st.SearchStrategy:
    """Values that stay clear of overflow in the ops below; NaN, ±inf and -0.0 for floats."""
    if dtype.kind == "b":
        return st.booleans()
    if dtype.kind in "iu":
        info = numpy.iinfo(dtype)
        return st.integers(max(info.min, -100), min(info.max, 100))
    width = {numpy.dtype("float16"): 16, numpy.dtype("float32"): 32, numpy.dtype("complex64"): 32}.get(dtype, 64)
    real = st.floats(-1e3, 1e3, width=width)
    if special:
        real = st.one_of(real, st.sampled_from([numpy.nan, numpy.inf, -numpy.inf, -0.0]))
    if dtype.kind == "c":
        return st.builds(complex, real, real)
    return real


def arrays(dtype: numpy.dtype, shape: tuple[int, ...], special: bool = True) -> st.SearchStrategy:
    return hnp.arrays(dtype, shape, elements=elements(dtype, special))


def run(backend: str, fn, *args, **kwargs):
    """``fn`` on dispatch arrays resident on ``backend``, forced there."""
    moved = [on_backend(a, backend) if isinstance(a, numpy.ndarray) else a for a in args]
    with dispatch.using(backend), warnings.catch_warnings(), numpy.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return fn(*moved, **kwargs)


def reference(fn, *args, **kwargs):
    with warnings.catch_warnings(), numpy.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


def same_or_same_error(backend: str, name: str, mine, ref, *args, **kwargs) -> None:
    try:
        expected = reference(ref, *args, **kwargs)
    except Exception as exc:
        with pytest.raises(type(exc)):
            run(backend, mine, *args, **kwargs)
        return
    assert_same(run(backend, mine, *args, **kwargs), expected, path=name, **_tolerance(name, args))


def _tolerance(name: str, args: tuple) -> dict:
    """Reductions sum in another order: their error is relative to the sum of magnitudes.
    Which zero ``maximum(0.0, -0.0)`` gives is unspecified (NumPy's own SIMD and scalar
    loops differ), so max/min-like ops do not compare the sign of zeros."""
    if name in REDUCTIONS:
        return {"loose": 1e3, "signed_zeros": False}
    if name in ("maximum", "minimum", "fmax", "fmin"):
        return {"signed_zeros": False}
    return {}


def assume_no_listed_subnormals(op: str, backend: str, dtype: numpy.dtype, *values) -> None:
    """Reject an example holding a subnormal where ``xfails.py`` lists ``backend`` as flushing
    them to zero for ``dtype`` (the reason is in the table; other examples still run)."""
    if lookup(op, backend, str(dtype), "subnormal") is None:
        return
    tiny = numpy.finfo(dtype).smallest_normal
    for v in values:
        a = numpy.asarray(v).astype(dtype)
        parts = numpy.abs(numpy.stack([a.real, a.imag]))
        assume(not ((parts > 0) & (parts < tiny)).any())


def xfail_if_listed(op: str, backend: str, dtype: numpy.dtype) -> None:
    known = lookup(op, backend, str(dtype), "property")
    if known is not None:
        pytest.xfail(known.reason)


BINARY = ["add", "subtract", "multiply", "true_divide", "maximum", "minimum", "fmax", "fmin", "hypot",
          "arctan2", "copysign", "logical_and", "bitwise_xor", "floor_divide", "remainder", "power"]
COMPARISONS = ["less", "less_equal", "greater", "greater_equal", "equal", "not_equal"]


@pytest.mark.parametrize("name", BINARY + COMPARISONS)
@SETTINGS
@given(data=st.data())
def test_binary_with_broadcasting(backend, name, data):
    dtype = data.draw(st.sampled_from(DTYPES), label="dtype")
    shapes = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=3, max_side=4), label="shapes")
    x = data.draw(arrays(dtype, shapes.input_shapes[0]), label="x")
    y = data.draw(arrays(dtype, shapes.input_shapes[1]), label="y")
    if dtype.kind in "fc":
        assume_no_listed_subnormals(name, backend, dtype, x, y)
    same_or_same_error(backend, name, getattr(dispatch, name), getattr(numpy, name), x, y)


@pytest.mark.parametrize("name", BINARY[:8])
@SETTINGS
@given(data=st.data())
def test_binary_with_python_scalars(backend, name, data):
    dtype = data.draw(st.sampled_from(NUMBERS), label="dtype")
    shape = data.draw(hnp.array_shapes(min_dims=0, max_dims=2, max_side=4), label="shape")
    x = data.draw(arrays(dtype, shape), label="x")
    scalar = data.draw(st.one_of(st.integers(-50, 50), st.floats(-50, 50), st.booleans()), label="scalar")
    if dtype.kind in "fc":
        assume_no_listed_subnormals(name, backend, dtype, x, scalar)
    same_or_same_error(backend, name, getattr(dispatch, name), getattr(numpy, name), x, scalar)
    same_or_same_error(backend, name, getattr(dispatch, name), getattr(numpy, name), scalar, x)


REDUCTIONS = ["sum", "prod", "max", "min", "mean", "std", "var", "argmax", "argmin", "all", "any", "cumsum"]


@pytest.mark.parametrize("name", REDUCTIONS)
@SETTINGS
@given(data=st.data())
def test_reductions(backend, name, data):
    dtype = data.draw(st.sampled_from(DTYPES), label="dtype")
    xfail_if_listed(name, backend, dtype)
    shape = data.draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4), label="shape")
    x = data.draw(arrays(dtype, shape, special=name not in ("sum", "prod", "mean", "std", "var", "cumsum")),
                  label="x")
    kwargs = {}
    if x.ndim and data.draw(st.booleans(), label="with axis"):
        kwargs["axis"] = data.draw(st.integers(-x.ndim, x.ndim - 1), label="axis")
        if name not in ("argmax", "argmin", "cumsum"):
            kwargs["keepdims"] = data.draw(st.booleans(), label="keepdims")
    same_or_same_error(backend, name, getattr(dispatch, name), getattr(numpy, name), x, **kwargs)


@st.composite
def basic_keys(draw, shape: tuple[int, ...]):
    key = []
    for n in shape[: draw(st.integers(0, len(shape)))]:
        if draw(st.booleans()) and n:
            key.append(draw(st.integers(-n, n - 1)))
        else:
            start = draw(st.one_of(st.none(), st.integers(-n - 1, n + 1)))
            stop = draw(st.one_of(st.none(), st.integers(-n - 1, n + 1)))
            step = draw(st.one_of(st.none(), st.integers(1, 3), st.integers(-3, -1)))
            key.append(slice(start, stop, step))
    if draw(st.booleans()):
        key.insert(draw(st.integers(0, len(key))), None)
    return tuple(key)


@SETTINGS
@given(data=st.data())
def test_basic_indexing_and_assignment(backend, data):
    dtype = data.draw(st.sampled_from(DTYPES), label="dtype")
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=3, max_side=5), label="shape")
    x = data.draw(arrays(dtype, shape), label="x")
    key = data.draw(basic_keys(shape), label="key")
    a = on_backend(x.copy(), backend)
    with dispatch.using(backend):
        got = a[key]
    assert_same(got, x[key])
    value = data.draw(elements(dtype), label="value")
    with dispatch.using(backend), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a[key] = value
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        x[key] = value
    assert_same(a, x)


@SETTINGS
@given(data=st.data())
def test_advanced_indexing(backend, data):
    dtype = data.draw(st.sampled_from(DTYPES), label="dtype")
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=2, max_side=5), label="shape")
    x = data.draw(arrays(dtype, shape), label="x")
    if data.draw(st.booleans(), label="boolean"):
        key = data.draw(hnp.arrays(numpy.bool_, shape[:1]), label="mask")
    else:
        key = data.draw(hnp.arrays(numpy.int64, data.draw(st.integers(0, 4)), elements=st.integers(-8, 7)),
                        label="indices")
    same_or_same_error(backend, "getitem", lambda a, k: a[k], lambda a, k: a[k], x, key)
    a = on_backend(x.copy(), backend)
    try:
        x[key] = x[key][::-1] if x[key].size else x[key]
    except IndexError:
        return
    with dispatch.using(backend):
        moved = a[key]
        a[key] = moved[::-1] if moved.size else moved
    assert_same(a, x)
