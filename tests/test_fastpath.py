"""The compiled fast path (``dispatch/arrays/_fastpath.c``): every kind of call it takes gives NumPy's
result, wrapped as the Python path wraps it, and every call outside its cases reaches the Python
path unchanged.

Each ``Fast`` is tried with a fallback that raises (the compiled path must take the call) or
one that returns a marker (it must hand the call over). The whole-program tests run once as
installed and once with every compiled callable replaced by its Python function, and compare.
"""

from __future__ import annotations

import operator
import os
import pickle
import shutil
import subprocess
import sys
import weakref
from pathlib import Path

import fakecupy
import numpy
import pytest
from helpers import assert_same, fake_cupy_router

import dispatch
from dispatch.arrays import _array, _compiled
from dispatch.base.ops import op_named
from dispatch.routing import router

ROOT = Path(__file__).resolve().parent.parent
compiled_only = pytest.mark.skipif(not _compiled.ACTIVE, reason=f"the compiled fast path is {_compiled.STATUS}")

HANDED = object()


def _handed(*args, **kwargs):
    return HANDED


def _must_not_run(*args, **kwargs):
    raise AssertionError("the Python path ran")


def fast(kind, name, fallback, func=None):
    """A compiled callable of ``kind`` for the op ``name`` (its floor computed, as a first
    routed call computes it) whose Python path is ``fallback``."""
    from dispatch.arrays import _fastpath

    op = None if name is None else op_named(name)
    if op is not None:
        router.host_floor(op)
        func = op.func if func is None else func
    return _fastpath.Fast(kind, op, func, fallback)


def wrapped(x):
    return dispatch.asarray(x)


def _data(dtype="float64"):
    rng = numpy.random.default_rng(0)
    return (rng.standard_normal((6, 5)) * 4).astype(dtype), (rng.standard_normal((6, 5)) * 4 + 0.5).astype(dtype)


# ---- the cases it takes: NumPy's results ---------------------------------------------------------------


@compiled_only
@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "complex128", "bool"])
@pytest.mark.parametrize("name", ["add", "subtract", "multiply", "less", "equal", "bitwise_and", "matmul"])
def test_operators_it_takes_are_numpys(name, dtype):
    a, b = _data(dtype)
    if name == "bitwise_and" and dtype in ("float64", "float32", "complex128"):
        pytest.skip("no such loop")
    ufunc = getattr(numpy, name)
    bm = b.T if name == "matmul" else b
    forward = fast("forward", name, _must_not_run)
    if name == "subtract" and dtype == "bool":  # NumPy refuses: the same error
        with pytest.raises(TypeError, match="boolean subtract"):
            forward(wrapped(a), wrapped(b))
        return
    assert_same(forward(wrapped(a), wrapped(bm)), ufunc(a, bm))
    assert_same(forward(wrapped(a), bm), ufunc(a, bm))  # a NumPy operand as it is
    if name != "matmul":
        scalar = {"bool": True, "int64": 3, "complex128": 2 - 1j}.get(dtype, 2.5)
        assert_same(forward(wrapped(a), scalar), ufunc(a, scalar))
        assert_same(fast("reflected", name, _must_not_run)(wrapped(a), scalar), ufunc(scalar, a))
        if name in ("add", "subtract", "multiply", "bitwise_and"):
            x, expected = wrapped(a.copy()), ufunc(a, b)
            same = fast("inplace", name, _must_not_run)(x, wrapped(b))
            assert same is x
            assert_same(x, expected)


@compiled_only
@pytest.mark.parametrize("scalar", [numpy.float32(3.0), numpy.float64(3.0), numpy.int64(3), numpy.complex64(3.0)])
def test_a_numpy_scalar_operand_is_taken_as_a_python_one_is(scalar):
    """``x / x.sum()``: the sum is a NumPy scalar; NumPy's promotion of it is kept."""
    a = _data("float32")[0]
    for name in ("true_divide", "subtract"):
        got = fast("forward", name, _must_not_run)(wrapped(a), scalar)
        assert_same(got, getattr(numpy, name)(a, scalar))


@compiled_only
def test_a_scalar_result_stays_a_numpy_scalar_and_pairs_are_wrapped():
    a, _ = _data()
    got = fast("forward", "divmod", _must_not_run)(wrapped(a), 3.0)
    assert type(got) is tuple and all(type(g) is dispatch.ndarray for g in got)
    for g, e in zip(got, numpy.divmod(a, 3.0), strict=True):
        assert_same(g, e)
    total = fast("method", "sum", _must_not_run, numpy.ndarray.sum)(wrapped(a))
    assert type(total) is numpy.float64 and total == a.sum()
    g = a.T @ a
    named, expected = fast("function", "linalg.eigh", _must_not_run)(wrapped(g)), numpy.linalg.eigh(g)
    assert type(named) is type(expected) and named._fields == ("eigenvalues", "eigenvectors")
    for got, want in zip(named, expected, strict=True):
        assert type(got) is dispatch.ndarray
        assert_same(got, want)
    got = fast("function", "linalg.lstsq", _must_not_run)(wrapped(a), a[:, 0], rcond=None)
    expected = numpy.linalg.lstsq(a, a[:, 0], rcond=None)  # solution, residuals, rank, singular values
    kinds = [dispatch.ndarray, dispatch.ndarray, type(expected[2]), dispatch.ndarray]
    assert type(got) is tuple and [type(x) for x in got] == kinds
    for x, want in zip(got, expected, strict=True):
        if type(x) is dispatch.ndarray:
            assert_same(x, want)
        else:
            assert x == want


@compiled_only
@pytest.mark.parametrize("key", [1, -1, slice(1, -1), (slice(1, -1), slice(None, None, 2)), (None, Ellipsis, 2),
                                 (2, 3), (Ellipsis,), (), "rows", "dispatch rows", "mask", "rows, cols"])
def test_indexing_it_takes_is_numpys(key):
    a, _ = _data()
    rows, cols = numpy.array([0, 2, 2, 5]), numpy.array([1, 0, 4, 4])
    named = {"rows": (rows, rows), "dispatch rows": (rows, wrapped(rows)), "mask": (a > 0, wrapped(a > 0)),
             "rows, cols": ((rows, cols), (wrapped(rows), cols))}
    key, ours = named[key] if isinstance(key, str) else (key, key)
    got = fast("getitem", None, _must_not_run)(wrapped(a), ours)
    assert_same(got, a[key])
    assert type(got) is (dispatch.ndarray if isinstance(a[key], numpy.ndarray) else numpy.float64)
    if isinstance(a[key], numpy.ndarray):
        assert numpy.shares_memory(numpy.asarray(got), a) == numpy.shares_memory(a[key], a)  # a view where NumPy's is


@compiled_only
@pytest.mark.parametrize("value", [7.5, 3, numpy.float32(2.5), "host", "dispatch"])
def test_assignments_it_takes_write_the_data(value):
    a, b = _data()
    x, expected = wrapped(a.copy()), a.copy()
    if value == "host":
        value = b[1:3, 1:-1]
    elif value == "dispatch":
        value = wrapped(b[1:3, 1:-1])
    assert fast("setitem", None, _must_not_run)(x, (slice(1, 3), slice(1, -1)), value) is None
    expected[1:3, 1:-1] = numpy.asarray(value)
    assert_same(x, expected)
    rows = numpy.array([0, 4])
    fast("setitem", None, _must_not_run)(x, (wrapped(rows), rows), -1.0)  # index arrays, as NumPy's
    expected[rows, rows] = -1.0
    assert_same(x, expected)


@compiled_only
@pytest.mark.parametrize("method, kwargs", [("max", {}), ("sum", {"axis": 1}), ("mean", {"axis": 0, "keepdims": True}),
                                            ("argmax", {"axis": None}), ("std", {"ddof": 1, "out": None})])
def test_methods_it_takes_are_numpys(method, kwargs):
    a, _ = _data()
    got = fast("method", method, _must_not_run, getattr(numpy.ndarray, method))(wrapped(a), **kwargs)
    assert_same(got, getattr(a, method)(**kwargs))


@compiled_only
@pytest.mark.parametrize("method, args", [("dot", ("vector",)), ("clip", (-1.0, 1.0)), ("take", ("index",)),
                                          ("cumsum", (0,)), ("sum", (1, None, "out"))])
def test_methods_with_arguments_it_takes_are_numpys(method, args):
    """``X.T.dot(errors)``, ``a.clip(lo, hi)``: arguments after the array are the function's, host
    arrays among them unwrapped; an out= by position is written as NumPy's."""
    a, _ = _data()
    host = {"vector": numpy.linspace(0.0, 1.0, 5), "index": numpy.array([3, 0, 7]), "out": numpy.zeros(6)}
    want = getattr(a, method)(*(host.get(v, v) if type(v) is str else v for v in args))
    out = wrapped(numpy.zeros(6))
    given = [wrapped(host[v]) if v in ("vector", "index") else out if v == "out" else v for v in args]
    got = fast("method", method, _must_not_run, getattr(numpy.ndarray, method))(wrapped(a), *given)
    assert type(got) is dispatch.ndarray
    assert_same(got, want)
    if "out" in args:
        assert_same(out, want)
    assert type(dispatch.ndarray.dot) is _compiled._fastpath.Fast


@compiled_only
@pytest.mark.parametrize("name, call", [
    ("where", lambda f, x, y: f(x > 0, x, y)),
    ("concatenate", lambda f, x, y: f([x, y], axis=1)),
    ("stack", lambda f, x, y: f((x, y))),
    ("block", lambda f, x, y: f([[x, y], [y, x]])),
    ("argmin", lambda f, x, y: f(x, axis=1)),
    ("maximum", lambda f, x, y: f(x, 1.0)),
    ("mean", lambda f, x, y: f(x, axis=0, dtype=numpy.float32)),
    ("linalg.norm", lambda f, x, y: f(x, axis=1, keepdims=True)),
])
def test_functions_it_takes_are_numpys(name, call):
    a, b = _data()
    expected = call(op_named(name).func, a, b)
    assert_same(call(fast("function", name, _must_not_run), wrapped(a), wrapped(b)), expected)


@compiled_only
@pytest.mark.parametrize("method, args", [("transpose", ()), ("transpose", ((1, 0),)), ("transpose", (1, 0)),
                                          ("reshape", (5, 6)), ("reshape", ((-1,),)), ("reshape", (-1,)),
                                          ("astype", (numpy.float32,)), ("astype", ("int8", "C"))])
def test_views_and_casts_it_takes_are_numpys(method, args):
    a, _ = _data()
    got = fast("view", None, _must_not_run, getattr(numpy.ndarray, method))(wrapped(a), *args)
    expected = getattr(a, method)(*args)
    assert_same(got, expected)
    assert numpy.shares_memory(numpy.asarray(got), a) == numpy.shares_memory(expected, a)
    view = fast("view", None, _handed, getattr(numpy.ndarray, method))
    assert view(wrapped(a), *args, order="C") is HANDED  # keywords: the Python method's
    assert view(wrapped(a), [5, 6]) is HANDED and view(wrapped(a), (5, 6.0)) is HANDED
    assert view(wrapped(a), {"a": 1}) is HANDED


@compiled_only
def test_views_and_casts_as_functions_are_taken_at_any_size():
    """``diagonal``, ``reshape``... of host arrays run on NumPy whatever their size, as the
    Python path runs them; an argument NumPy hands back is that array itself."""
    big = numpy.arange(2 * _array._ELIDE_BYTES, dtype=numpy.float64).reshape(-1, 64)  # past every floor here
    for name, call, expected in [("diagonal", lambda f, x: f(x), numpy.diagonal(big)),
                                 ("reshape", lambda f, x: f(x, (64, -1)), big.reshape(64, -1)),
                                 ("transpose", lambda f, x: f(x, (1, 0)), big.T),
                                 ("atleast_2d", lambda f, x: f(x), big)]:
        x = wrapped(big)
        got = call(fast("local", name, _must_not_run), x)
        assert type(got) is dispatch.ndarray
        assert_same(got, expected)
        assert numpy.shares_memory(numpy.asarray(got), big)  # a view, as NumPy's
    x = wrapped(big)
    assert fast("local", "atleast_2d", _must_not_run)(x) is x  # handed back as it is
    assert type(dispatch.diagonal) is type(dispatch.reshape) is _compiled._fastpath.Fast


@compiled_only
def test_array_of_host_arrays_is_taken_and_copies_as_numpys():
    """``array(...)`` of host arrays, alone or in lists (``array([x[0], x[1]])``, a loop's
    stacking), is NumPy's copy without the Python path; a copy option NumPy's enum spells, or
    a trace, is the Python wrapper's."""
    a, b = _data()
    big = numpy.arange(2 * _array._ELIDE_BYTES, dtype=numpy.float64).reshape(64, -1)  # past every floor here
    for args, kwargs in [(([wrapped(a), wrapped(b)],), {}), ((wrapped(big.T),), {}),
                         ((wrapped(a),), {"dtype": "float32"}), (([[wrapped(a)], [wrapped(b)]],), {"ndmin": 4})]:
        host = [[numpy.asarray(v) for v in x] if type(x) is list else numpy.asarray(x) for x in args[0]] \
            if type(args[0]) is list else numpy.asarray(args[0])
        got = fast("local", "array", _must_not_run)(*args, **kwargs)
        want = numpy.array(host, **kwargs)
        assert type(got) is dispatch.ndarray
        assert_same(got, want)
        assert numpy.asarray(got).flags.f_contiguous == want.flags.f_contiguous  # order="K", as NumPy's
        assert not numpy.shares_memory(numpy.asarray(got), host)
    assert fast("local", "array", _handed)(wrapped(a), copy=numpy._CopyMode.ALWAYS) is HANDED
    assert type(dispatch.array) is _compiled._fastpath.Function  # a builtin in NumPy
    pair = [wrapped(a), wrapped(b)]
    with dispatch.trace() as t:
        dispatch.array(pair)
    assert [r.op for r in t.records] == ["array"]


@compiled_only
def test_asarray_of_an_array_alone_is_taken():
    """``asarray(a)``, the first call of most programs: a NumPy array wrapped as it is (no copy),
    a dispatch array itself; anything else (a dtype, a list) is the Python path's."""
    a, _ = _data()
    got = fast("asarray", "asarray", _must_not_run)(a)
    assert type(got) is dispatch.ndarray and got.__array__() is a
    x = wrapped(a)
    assert fast("asarray", "asarray", _must_not_run)(x) is x
    assert fast("asarray", "asarray", _handed)(a, numpy.float32) is HANDED
    assert fast("asarray", "asarray", _handed)(a.tolist()) is HANDED
    assert type(dispatch.asarray) is type(dispatch.asanyarray) is _compiled._fastpath.Function  # a builtin in NumPy


@compiled_only
@pytest.mark.parametrize(("name", "args", "kwargs"), [
    ("arange", (7,), {}), ("arange", (2, 9), {}), ("arange", (9, 2, -2), {}), ("arange", (0, 10, 3), {}),
    ("arange", (-3, 4, 2), {}), ("arange", (5, 5), {}), ("arange", (4,), {"dtype": "float32"}),
    ("zeros", (6,), {}), ("zeros", ((3, 4),), {"dtype": numpy.int8}), ("ones", ((2, 0, 3),), {}),
    ("empty", ((2, 3), float, "F"), {}), ("ones", ((2, 3),), {"order": "F"}), ("full", ((2, 2), 3.5), {}),
    ("full", ((3,), 7), {"dtype": "int16"}),
])
def test_a_creation_of_a_result_dask_would_not_take_is_numpys(name, args, kwargs):
    from dispatch._namespace import routed

    kind, plain = "range" if name == "arange" else "shaped", routed(name, getattr(numpy, name), "dispatch")
    got = fast(kind, name, _must_not_run, plain)(*args, **kwargs)
    assert_same(got, getattr(numpy, name)(*args, **kwargs), values=name != "empty")
    if "F" in args or kwargs.get("order") == "F":
        assert numpy.asarray(got).flags.f_contiguous


@compiled_only
def test_a_creation_the_python_wrapper_must_count_or_place_reaches_it(monkeypatch):
    from dispatch import cluster
    from dispatch._namespace import routed

    arange = fast("range", "arange", _handed, routed("arange", numpy.arange, "dispatch"))
    zeros = fast("shaped", "zeros", _handed, routed("zeros", numpy.zeros, "dispatch"))
    assert arange(0.0, 1.0, 0.25) is HANDED  # floats
    assert arange(stop=5) is HANDED and zeros(shape=3) is HANDED  # a keyword that sizes it
    assert arange(0, 5, 0) is HANDED and zeros(-1) is HANDED  # NumPy's errors, from the Python path
    assert zeros((2, 2.0)) is HANDED and zeros(numpy.int64(3)) is HANDED
    assert zeros(3, like=numpy.zeros(1)) is HANDED  # an array in a keyword
    assert arange(2**70) is HANDED
    monkeypatch.setattr(cluster, "LIVE_ELEMENTS", 16)
    assert arange(16) is HANDED and zeros((4, 4)) is HANDED  # Dask's to take, where it should
    assert_same(arange(15), numpy.arange(15))
    assert_same(zeros((3, 5)), numpy.zeros((3, 5)))
    monkeypatch.undo()
    with dispatch.using("numpy"):
        assert arange(3) is HANDED


@compiled_only
@pytest.mark.parametrize("name", ["fft.fft", "fft.rfft", "fft.irfft"])
def test_a_transform_is_taken_where_its_work_follows_its_input(name):
    """A 1-D transform's floors count its input's elements unless ``n`` pads it FFT_PADDED
    times or more (``_call.fft_sized``): then the Python path prices the points transformed."""
    a, _ = _data()  # 6 x 5
    func = getattr(numpy.fft, name.split(".")[1])
    taken = fast("transform", name, _must_not_run)
    for args, kwargs in (((), {}), ((8,), {}), ((), {"n": 8, "axis": 0}), ((19, -1), {}), ((), {"norm": "ortho"})):
        assert_same(taken(wrapped(a), *args, **kwargs), func(a, *args, **kwargs))
    handed = fast("transform", name, _handed)
    assert handed(wrapped(a), 20) is HANDED and handed(wrapped(a), n=24, axis=0) is HANDED
    with pytest.raises(ValueError):  # NumPy's own error for an axis out of range
        taken(wrapped(a), 8, 2)


@compiled_only
def test_numpy_asarray_of_host_data_is_the_data_itself():
    a, _ = _data()
    x = wrapped(a)
    assert type(dispatch.ndarray.__array__) is type(fast("array", None, _handed))
    array = fast("array", None, _must_not_run)
    assert array(x) is a and array(x, None) is a and array(x, copy=None) is a and array(x, None, False) is a
    # numpy.asarray reads the buffer first: a view of the data itself, no copy (docs/equality.md), whose
    # exporter is the dispatch array, as NumPy's memoryview names the array it was taken of
    handed_out = numpy.asarray(x)
    assert handed_out.base.obj is x and handed_out.__array_interface__["data"] == a.__array_interface__["data"]
    handed = fast("array", None, _handed)
    calls = [handed(x, "float32"), handed(x, dtype=numpy.float64), handed(x, copy=True), handed(x, None, True),
             handed(x, order="C"), handed(a)]
    assert all(c is HANDED for c in calls)
    copied = numpy.array(x, copy=True)
    assert copied is not a and copied.base is None
    numpy.testing.assert_array_equal(copied, a)
    assert numpy.asarray(x, dtype=numpy.float32).dtype == numpy.float32


@compiled_only
def test_a_namespace_ufunc_takes_its_op_from_the_proxy():
    a, b = _data()
    call = fast("ufunc", None, _must_not_run)
    for proxy in (dispatch.abs, dispatch.hypot, dispatch.add):
        router.host_floor(proxy._op)  # as a first routed call computes it
    assert_same(call(dispatch.abs, wrapped(a)), numpy.abs(a))
    assert_same(call(dispatch.hypot, wrapped(a), b), numpy.hypot(a, b))
    assert_same(call(dispatch.add, wrapped(a), wrapped(b), dtype=numpy.float32), numpy.add(a, b, dtype=numpy.float32))


@compiled_only
def test_numpys_own_functions_given_dispatch_arrays_are_numpys():
    """Third-party code calls NumPy's functions and ufuncs on dispatch arrays: NumPy hands the
    call to ``__array_function__`` / ``__array_ufunc__``, which the compiled path takes for the
    ops in its table."""
    a, b = _data()
    table = {f: op_named(n) for f, n in ((numpy.mean, "mean"), (numpy.concatenate, "concatenate"),
                                          (numpy.exp, "exp"), (numpy.add, "add"))}
    for op in table.values():
        router.host_floor(op)
    types = (dispatch.ndarray,)
    function = fast("array_function", None, _must_not_run, table)
    x, y = wrapped(a), wrapped(b)
    assert_same(function(x, numpy.mean, types, (x,), {"axis": 0, "keepdims": True}), a.mean(axis=0, keepdims=True))
    assert_same(function(x, numpy.concatenate, (*types, numpy.ndarray), ([x, b],), {}), numpy.concatenate([a, b]))
    ufunc = fast("array_ufunc", None, _must_not_run, table)
    assert_same(ufunc(x, numpy.exp, "__call__", x), numpy.exp(a))
    assert_same(ufunc(x, numpy.add, "__call__", x, b, dtype=numpy.float32), numpy.add(a, b, dtype=numpy.float32))
    # and hands the rest to the Python methods
    function = fast("array_function", None, _handed, table)
    ufunc = fast("array_ufunc", None, _handed, table)
    assert function(x, numpy.median, types, (x,), {}) is HANDED  # not in the table yet
    assert function(x, numpy.mean, (*types, list), (x,), {}) is HANDED  # a type NumPy would defer to
    assert function(x, numpy.mean, types, (x,), {"out": numpy.empty(5)}) is HANDED
    assert ufunc(x, numpy.add, "reduce", x) is HANDED
    assert ufunc(x, numpy.add, "__call__", x, y, out=(numpy.empty_like(a),)) is HANDED
    with dispatch.trace():
        assert function(x, numpy.mean, types, (x,), {}) is HANDED and ufunc(x, numpy.exp, "__call__", x) is HANDED


@compiled_only
def test_numpys_errors_come_through_unchanged():
    a, b = _data()
    with pytest.raises(IndexError):
        fast("getitem", None, _must_not_run)(wrapped(a), 10)
    with pytest.raises(ValueError, match="broadcast"):
        fast("forward", "add", _must_not_run)(wrapped(a), wrapped(b[:2, :2]))
    with pytest.raises(numpy.exceptions.AxisError):
        fast("method", "sum", _must_not_run, numpy.ndarray.sum)(wrapped(a), axis=5)
    with pytest.raises(ValueError):
        fast("function", "concatenate", _must_not_run)([wrapped(a), wrapped(b[:, :2])], axis=0)


# ---- the cases it hands over ---------------------------------------------------------------------------


@compiled_only
def test_calls_outside_its_cases_reach_the_python_path():
    a, b = _data()
    x, y = wrapped(a), wrapped(b)
    add = fast("forward", "add", _handed)
    assert add(x, [1.0] * 5) is HANDED  # a list operand
    assert add(x, "text") is HANDED  # NotImplemented is the Python path's to say
    assert fast("reflected", "add", _handed)(x, b) is HANDED  # only a Python scalar on the left
    assert fast("getitem", None, _handed)(x, [0, 2]) is HANDED  # a list key: the Python path unwraps it
    assert fast("getitem", None, _handed)(x, True) is HANDED
    assert fast("setitem", None, _handed)(x, 0, [1.0] * 5) is HANDED
    assert fast("method", "take", _handed, numpy.ndarray.take)(x, {"not": "an index"}) is HANDED
    assert fast("method", "sum", _handed, numpy.ndarray.sum)(x, out=numpy.empty(())) is HANDED
    assert fast("function", "add", _handed)(x, y, out=numpy.empty_like(a)) is HANDED
    assert fast("function", "add", _handed)(x, y, where=a > 0) is HANDED
    assert fast("function", "sum", _handed)(x, axis=range(2)) is HANDED
    assert fast("function", "sum", _handed)({"not": "an array"}) is HANDED
    nested = [x]
    for _ in range(6):
        nested = [nested]
    assert fast("function", "concatenate", _handed)(nested) is HANDED


@compiled_only
def test_with_copies_kept_only_what_may_write_memory_with_copies_takes_the_python_path():
    """While a device keeps a copy of some host memory (``mirrors._versions`` names it), a write to
    that memory, through any view, or through ``out=``, goes to the Python path, which drops the
    copy; writes to other memory, and ufunc calls that write nothing, stay compiled."""
    from dispatch.arrays import _fastpath, mirrors

    table = {numpy.exp: op_named("exp")}
    for op in (op_named("add"), op_named("exp"), dispatch.abs._op):
        router.host_floor(op)
    copied, other = numpy.zeros(1 << 18), numpy.zeros(1 << 18)  # 2 MiB each: memory mirrors may copy
    small = numpy.zeros(8)
    _fastpath.set_mirrors(True, mirrors.MIN_BYTES, {id(copied): [0, None]})
    try:
        to_python = [fast("setitem", None, _handed)(wrapped(copied), 0, 1.0),
                     fast("setitem", None, _handed)(wrapped(copied[10:20]), 0, 1.0),  # a small view of it
                     fast("inplace", "add", _handed)(wrapped(copied[:4]), 1.0),
                     fast("ufunc", None, _handed)(dispatch.abs, wrapped(small), wrapped(small)),  # out by position
                     fast("ufunc", None, _handed)(dispatch.abs, wrapped(small), out=wrapped(small)),
                     fast("array_ufunc", None, _handed, table)(wrapped(small), numpy.exp, "__call__", wrapped(small),
                                                                out=(small,)),
                     fast("function", "where", _handed)(True, 1.0, [wrapped(small)])]  # (a function may write)
        assert all(c is HANDED for c in to_python)
        assert not copied.any()  # nothing was written behind the Python path's back
        fast("setitem", None, _must_not_run)(wrapped(other[10:20]), 0, 2.0)
        fast("inplace", "add", _must_not_run)(wrapped(small), 1.0)
        assert other[10] == 2.0 and (small == 1.0).all()
        assert_same(fast("ufunc", None, _must_not_run)(dispatch.abs, wrapped(-small)), numpy.ones(8))
        assert_same(fast("array_ufunc", None, _must_not_run, table)(wrapped(small), numpy.exp, "__call__",
                                                                    wrapped(small)), numpy.exp(small))
    finally:
        mirrors._live()  # the compiled path told what the mirrors hold again


@compiled_only
def test_arrays_over_the_floor_go_to_the_router(monkeypatch):
    a, _ = _data()  # 30 elements
    for op in (op_named("add"), op_named("max"), op_named("where"), dispatch.abs._op):
        monkeypatch.setattr(op, "floor", 29)
    over, under = wrapped(a), wrapped(a[:5])
    for x, expect_handed in ((over, True), (under, False)):
        calls = [fast("forward", "add", _handed)(x, 1.0), fast("forward", "add", _handed)(wrapped(a[:5, :1]), x),
                 fast("reflected", "add", _handed)(x, 1.0), fast("inplace", "add", _handed)(x, 1.0),
                 fast("method", "max", _handed, numpy.ndarray.max)(x),
                 fast("function", "where", _handed)(True, 1.0, [x]), fast("ufunc", None, _handed)(dispatch.abs, x)]
        assert [c is HANDED for c in calls] == [expect_handed] * len(calls)


@compiled_only
def test_over_the_floor_and_under_the_learned_floor_it_takes_the_call(monkeypatch):
    a, _ = _data()  # 30 elements: over a floor of 10, under a learned floor of 40 or over one of 20
    ops = (op_named("add"), op_named("max"), op_named("where"), dispatch.abs._op)
    for op in ops:
        monkeypatch.setattr(op, "floor", 10)
    for trip, expect_handed in ((40, False), (20, True)):
        for op in ops:
            monkeypatch.setattr(op, "trip_floor", trip)
        x = wrapped(a)
        calls = [fast("forward", "add", _handed)(x, 1.0), fast("forward", "add", _handed)(wrapped(a[:1]), x),
                 fast("reflected", "add", _handed)(x, 1.0), fast("inplace", "add", _handed)(wrapped(a), x),
                 fast("method", "max", _handed, numpy.ndarray.max)(x),
                 fast("function", "where", _handed)(True, 1.0, [x]), fast("ufunc", None, _handed)(dispatch.abs, x)]
        assert [c is HANDED for c in calls] == [expect_handed] * len(calls)


@compiled_only
def test_a_temporary_past_the_elision_size_is_written_into_where_numpy_would():
    """NumPy writes ``(x + 1.0) + y`` into its temporary ``x + 1.0`` (256 KiB or more), and so
    does the compiled path, under the floors: into a temporary whose data only it holds, when
    the result keeps its dtype and shape. Any other temporary goes to the Python path, which
    decides as NumPy would; a named operand is held more times than a temporary
    (``_array._measure_temporaries`` tells the compiled path the count) and is never written."""
    n = _array._ELIDE_BYTES // 8
    op = op_named("add")
    router.host_floor(op)
    if op.floor < 4 * n:
        pytest.skip("add's floor is under the elision size here: the router decides such calls anyway")
    made = []

    def temporary(x):  # a dispatch array only the caller's expression holds, its buffer noted
        made.append(x.ctypes.data)
        return wrapped(x)

    for kind in ("forward", "reflected"):
        # (outside ``assert``: pytest's rewriting of it would hold the temporary once more)
        got = fast(kind, "add", _must_not_run)(temporary(numpy.ones(n)), 1.0)
        assert got._engine_array.ctypes.data == made[-1]
        assert_same(got, numpy.ones(n) + 1.0)
    forward = fast("forward", "add", _must_not_run)(temporary(numpy.ones((2, n))), numpy.arange(n, dtype=float))
    assert forward._engine_array.ctypes.data == made[-1]  # the other operand broadcast to the temporary's shape
    assert_same(forward, numpy.ones((2, n)) + numpy.arange(n, dtype=float))
    widened = fast("forward", "add", _handed)(temporary(numpy.ones(2 * n, dtype=numpy.float32)), numpy.ones(2 * n))
    integers = fast("reflected", "add", _handed)(temporary(numpy.ones(n, dtype=numpy.int64)), 0.5)
    broadcast = fast("forward", "add", _handed)(temporary(numpy.ones((1, n))), numpy.ones((2, n)))
    assert widened is HANDED and integers is HANDED and broadcast is HANDED  # float64, float64, (2, n)
    held = numpy.ones(n)
    shared = fast("forward", "add", _handed)(wrapped(held), 1.0)  # its data is ``held`` too
    assert shared is HANDED
    a = wrapped(numpy.ones(n))
    for kind in ("forward", "reflected"):
        got = fast(kind, "add", _must_not_run)(a, 1.0)
        assert type(got) is dispatch.ndarray and got._engine_array is not a._engine_array
        assert_same(got, numpy.ones(n) + 1.0)
    assert_same(a, numpy.ones(n))


@compiled_only
def test_an_operator_on_an_array_past_the_elision_size_takes_no_python_frame():
    """``x * 2.0`` on a named array past the elision size stays compiled, and so does
    ``(x * 2.0) + 1.0``, written into its temporary as NumPy would."""
    n = _array._ELIDE_BYTES // 8
    host = numpy.linspace(0.0, 1.0, n)
    x = wrapped(host)
    for _ in range(3):  # the floors computed, the router's decisions made and remembered
        x * 2.0, (x * 2.0) + 1.0
    frames = []
    real = sys.getprofile()
    sys.setprofile(lambda frame, event, arg: frames.append(frame.f_code.co_name) if event == "call" else None)
    try:
        named = x * 2.0
        chained = (x * 2.0) + 1.0
    finally:
        sys.setprofile(real)
    assert frames == []
    assert_same(named, host * 2.0)
    assert_same(chained, host * 2.0 + 1.0)
    assert_same(x, host)


@compiled_only
def test_past_the_elision_size_a_view_or_a_product_is_still_taken(monkeypatch):
    """NumPy elides neither into a view nor for a matrix product (``_array._elides``): the
    compiled path computes those itself, whatever their size."""
    n = _array._ELIDE_BYTES // 8
    rng = numpy.random.default_rng(0)
    base, matrix, weights = rng.standard_normal(2 * n), rng.standard_normal((n // 16, 16)), rng.standard_normal((16, 3))
    for name in ("add", "matmul"):
        monkeypatch.setattr(op_named(name), "floor", 2 * n)
    cases = [(fast("forward", "add", _must_not_run)(wrapped(base)[::2], 1.0), base[::2] + 1.0),
             (fast("reflected", "add", _must_not_run)(wrapped(base)[1::2], 1.0), 1.0 + base[1::2]),
             (fast("forward", "matmul", _must_not_run)(wrapped(matrix), weights), matrix @ weights),
             (fast("forward", "matmul", _must_not_run)(wrapped(matrix).T, wrapped(matrix)), matrix.T @ matrix)]
    for got, expected in cases:
        assert type(got) is dispatch.ndarray and got.dtype == expected.dtype and got.shape == expected.shape
        numpy.testing.assert_array_equal(numpy.asarray(got), expected)
    handed = fast("forward", "add", _handed)(wrapped(matrix), 1.0)  # a temporary owning its data: NumPy may elide
    assert handed is HANDED


@compiled_only
@pytest.mark.parametrize("switch", ["trace", "using"])
def test_tracing_or_a_forced_backend_turns_it_off(switch):
    a, b = _data()
    router.host_floor(dispatch.abs._op)
    calls = {
        "forward": lambda: fast("forward", "add", _handed)(wrapped(a), b),
        "getitem": lambda: fast("getitem", None, _handed)(wrapped(a), 1),
        "method": lambda: fast("method", "max", _handed, numpy.ndarray.max)(wrapped(a)),
        "function": lambda: fast("function", "where", _handed)(a > 0, wrapped(a), b),
        "ufunc": lambda: fast("ufunc", None, _handed)(dispatch.abs, wrapped(a)),
    }
    context = dispatch.trace() if switch == "trace" else dispatch.using("numpy")
    with context:
        for name, call in calls.items():
            assert call() is HANDED, name
    for name, call in calls.items():
        assert call() is not HANDED, name


@compiled_only
def test_a_traced_program_records_every_call():
    a, b = _data()
    with dispatch.trace() as t:
        x = wrapped(a)
        _ = (x + b)[1:] * 2.0
        _ = dispatch.abs(x).max()
    assert [r.op for r in t.records] == ["asarray", "add", "__getitem__", "multiply", "abs", "max"]


def test_device_data_goes_to_the_python_path(tmp_path, monkeypatch):
    if fakecupy.real_cupy_installed():
        pytest.skip("a real CuPy is installed: the fake would replace it in sys.modules")
    if not _compiled.ACTIVE:
        pytest.skip(f"the compiled fast path is {_compiled.STATUS}")
    a, b = _data()
    with fake_cupy_router(tmp_path, monkeypatch):
        x = wrapped(a).to("cuda:0")  # the fake's arrays subclass numpy.ndarray: an exact type check tells them apart
        assert fast("forward", "add", _handed)(x, b) is HANDED
        assert fast("forward", "add", _handed)(wrapped(a), x) is HANDED
        assert fast("inplace", "add", _handed)(wrapped(a), x) is HANDED
        assert fast("getitem", None, _handed)(x, 1) is HANDED
        assert fast("setitem", None, _handed)(wrapped(a), 1, x[1]) is HANDED
        assert fast("method", "max", _handed, numpy.ndarray.max)(x) is HANDED
        assert fast("function", "stack", _handed)([wrapped(a), x]) is HANDED
        assert_same(x + b, a + b)  # and the installed operator gets NumPy's result there


@pytest.fixture
def pure_python():
    with _compiled.python_path() as replaced:
        yield replaced


def _program(xp, u0, v0):
    u, v = xp.asarray(u0).copy(), xp.asarray(v0)
    steps = []
    for _ in range(3):
        inner = u[1:-1, 1:-1]
        lap = u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:] - 4.0 * inner
        u[1:-1, 1:-1] += 0.2 * lap
        u[0] = v[0]
        steps.append(xp.abs(lap).max())
    scores = xp.where(u > 0.5, u, -u) @ v.T
    best = xp.argmin(scores, axis=1)
    rows = xp.arange(12)
    picked = u[rows, best]
    u[rows, best] -= 1.0
    return {"u": u, "steps": xp.stack(steps), "best": best, "norm": xp.linalg.norm(scores, axis=0),
            "neg": -u, "pairs": divmod(u, 0.25), "mean": u.mean(axis=0, keepdims=True), "cmp": u >= v,
            "picked": picked, "powers": (u ** 2, abs(u) ** 0.5, u ** -1, v ** u, 2.0 ** u, u ** 3, (u + 1j) ** 2),
            "views": (u.T, u.reshape(-1), u.reshape(4, 36), u.transpose((1, 0)), u.astype(numpy.float32)),
            # NumPy's own functions on these arrays, as third-party code calls them (twice: the
            # first call of each fills the compiled path's table)
            "numpy's": tuple(f() for f in (lambda: numpy.mean(u, axis=0), lambda: numpy.exp(u),
                                           lambda: numpy.concatenate([u, v]), lambda: numpy.add(u, v))
                             for _ in range(2))}


def identical(got, expected):
    """NumPy's result, to the bit: both paths make the same NumPy calls."""
    assert_same(got, expected)
    if isinstance(expected, tuple):
        for g, e in zip(got, expected, strict=True):
            identical(g, e)
    else:
        assert numpy.array_equal(numpy.asarray(got), expected, equal_nan=True)


def test_the_same_program_compiled_and_in_python_is_numpys(pure_python):
    rng = numpy.random.default_rng(3)
    u0, v0 = rng.random((12, 12)), rng.random((12, 12))
    expected = _program(numpy, u0, v0)
    in_python = _program(dispatch, u0, v0)
    assert type(dispatch.ndarray.__add__).__name__ == "function"  # the fixture took the compiled path away
    for key, value in expected.items():
        identical(in_python[key], value)
    if _compiled.ACTIVE:
        assert pure_python > 40  # operators, methods, indexing and the namespace's functions


@compiled_only
def test_the_same_program_compiled_is_numpys():
    assert type(dispatch.ndarray.__add__).__name__ == "Fast"
    rng = numpy.random.default_rng(3)
    u0, v0 = rng.random((12, 12)), rng.random((12, 12))
    expected, got = _program(numpy, u0, v0), _program(dispatch, u0, v0)
    for key, value in expected.items():
        identical(got[key], value)


class _Sub(dispatch.ndarray, wrapper=True):
    """A subclass of the wrapper itself (as dispatch's own are; a user's class derives from
    NumPy's ndarray): its type keeps CPython's generic slots, which call its methods."""

    __slots__ = ()


def _sub(x):
    obj = object.__new__(_Sub)
    obj._engine_array = x
    return obj


_BINARY = [operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv, operator.mod, operator.pow,
           divmod, operator.lt, operator.le, operator.eq, operator.ne, operator.gt, operator.ge]
_BITWISE = [operator.and_, operator.or_, operator.xor, operator.lshift, operator.rshift]
_INPLACE = [operator.iadd, operator.isub, operator.imul, operator.itruediv, operator.ifloordiv, operator.imod,
            operator.ipow]


@compiled_only
def test_the_types_slots_call_its_compiled_callables_with_numpys_operands():
    """install_slots: each operator, comparison and index gives NumPy's result whichever side the
    dispatch array is on, next to a Python scalar, a NumPy scalar, a NumPy array or a subclass's
    array, with the operands in NumPy's order."""
    # 14 binary, 12 in-place (``a @= b`` is a Python method: NumPy's rule for it), 4 unary, compare, get, set
    assert _compiled._fastpath.installed_slots() == 33
    a, b = _data()
    b = numpy.where(b == 0, 1.0, b)
    i, j = numpy.arange(1, 31).reshape(6, 5), numpy.arange(30).reshape(6, 5) % 5
    cases = [(f, a, b, 2.5) for f in _BINARY] + [(f, i, j, 3) for f in _BITWISE]
    for f, x, y, scalar in cases:
        name, s = f.__name__, numpy.asarray(scalar)[()]  # a Python scalar, and NumPy's of its kind
        forms = [(wrapped(x), wrapped(y), x, y), (wrapped(x), scalar, x, scalar), (scalar, wrapped(x), scalar, x),
                 (s, wrapped(x), s, x), (y, wrapped(x), y, x), (_sub(x), wrapped(y), x, y), (wrapped(x), _sub(y), x, y),
                 (scalar, _sub(x), scalar, x)]
        for left, right, p, q in forms:
            with numpy.errstate(invalid="ignore"):  # a negative number to a fractional power
                got, expected = f(left, right), f(p, q)
            assert_same(got, expected, path=f"{name}({type(left).__name__}, {type(right).__name__})")
    assert_same(wrapped(a) @ wrapped(b.T), a @ b.T)
    assert_same(b.T @ wrapped(a), b.T @ a)
    for f in _INPLACE:
        x = wrapped(a.copy())
        assert f(x, wrapped(b)) is x
        assert_same(x, f(a.copy(), b))
    for f in (operator.neg, operator.pos, abs):
        assert_same(f(wrapped(a)), f(a))
    assert_same(~wrapped(i), ~i)
    x = wrapped(a.copy())
    assert_same(x[1:, ::2], a[1:, ::2])
    x[0] = 7.0
    assert_same(x, numpy.concatenate([numpy.full((1, 5), 7.0), a[1:]]))
    with pytest.raises(ValueError, match="cannot delete array elements"):
        del x[0]
    with pytest.raises(TypeError, match="unsupported operand"):  # NumPy's ndarray declines a modulus
        pow(wrapped(i), 2, 3)


@compiled_only
def test_a_method_set_on_the_class_again_is_what_its_operator_calls(monkeypatch):
    x = wrapped(numpy.arange(3.0))
    try:
        monkeypatch.setattr(dispatch.ndarray, "__add__", lambda self, other: "set again")
        assert x + 1.0 == "set again"
        assert _compiled._fastpath.installed_slots() == 32  # CPython's generic slot for + again, no other
        assert_same(1.0 - x, 1.0 - numpy.arange(3.0))
    finally:
        monkeypatch.undo()
        assert _compiled.install_slots() == 33
    assert_same(x + 1.0, numpy.arange(3.0) + 1.0)


@compiled_only
def test_the_python_path_for_a_block_gives_the_slots_back_after_it():
    with _compiled.python_path():
        assert _compiled._fastpath.installed_slots() == 0
        assert type(dispatch.ndarray.__add__).__name__ == "function"
    assert _compiled._fastpath.installed_slots() == 33


@compiled_only
def test_a_compiled_array_has_numpys_attributes_alone():
    """No __dict__, as NumPy's array has none: the router's marks are slots that read None until
    set; weak references still work."""
    x = wrapped(numpy.arange(3.0))
    with pytest.raises(AttributeError):
        x.color = "red"
    with pytest.raises(AttributeError):
        numpy.arange(3.0).color = "red"
    assert weakref.ref(x)() is x


@compiled_only
def test_a_compiled_array_is_freed_by_the_compiled_deallocation():
    """dispatch.ndarray's own deallocation releases its data and tells its weak references; a
    subclass's (CPython's) clears its own slots and then calls it."""
    assert _compiled._fastpath.installed_lean()[0]

    for cls in (dispatch.ndarray, _array._DeviceScalar):
        data, told = numpy.arange(3.0), []
        x = object.__new__(cls)
        x._engine_array = data
        held = sys.getrefcount(data)
        watch = weakref.ref(x, told.append)
        del x
        assert watch() is None and len(told) == 1
        assert sys.getrefcount(data) == held - 1
    y = wrapped(numpy.arange(4.0)) + 1.0  # a result the compiled path made
    watch = weakref.ref(y)
    del y
    assert watch() is None


@compiled_only
def test_arrays_made_from_freed_ones_are_new_arrays():
    """The compiled path reuses the memory of freed arrays: each result made there holds its own
    data, has no weak reference of a freed one, and is tracked by the collector as a new array."""
    import gc

    x = wrapped(numpy.arange(8.0))
    told, watches = [], []
    for i in range(200):  # more than are kept for reuse
        y = x[i % 6:i % 6 + 2]
        watches.append(weakref.ref(y, told.append))
        del y
    assert len(told) == 200 and all(w() is None for w in watches)
    made = [x[i:i + 2] * 2.0 for i in range(6)]
    for i, m in enumerate(made):
        assert type(m) is dispatch.ndarray
        assert weakref.getweakrefcount(m) == 0
        assert gc.is_tracked(m)
        numpy.testing.assert_array_equal(numpy.asarray(m), 2.0 * numpy.arange(i, i + 2.0))
    assert len({id(m) for m in made}) == len(made)


@compiled_only
@pytest.mark.parametrize("host", [numpy.arange(24.0).reshape(2, 3, 4)[:, ::2], numpy.float32(2.5) * numpy.ones(()),
                                  numpy.arange(5, dtype=numpy.int8), numpy.zeros((0, 3), dtype=complex)],
                         ids=["strided", "0-d", "int8", "empty"])
def test_array_attributes_read_numpys(host):
    """shape, dtype, ndim and size are compiled for NumPy data: NumPy's own values and types."""
    x = wrapped(host)
    for name in ("shape", "dtype", "ndim", "size"):
        got, want = getattr(x, name), getattr(host, name)
        assert got == want and type(got) is type(want), name
        assert type(vars(dispatch.ndarray)[name]) is _compiled._fastpath.Attr
        assert isinstance(getattr(dispatch.ndarray, name), property)  # on the class: the property, as in Python


@compiled_only
def test_array_attributes_fall_back_to_the_properties():
    """A reshape through ``shape`` and data that is not a NumPy array go to the Python property."""
    x = wrapped(numpy.arange(6.0))
    x.shape = (2, 3)
    assert x.shape == (2, 3) and numpy.asarray(x).shape == (2, 3)
    with pytest.raises(type(_shape_error())):
        wrapped(numpy.arange(6.0)[::2]).shape = (3, 1, 1, 2)
    lazy = object.__new__(dispatch.ndarray)
    lazy._engine_array = numpy.ma.masked_array(numpy.arange(4.0))  # not exactly a NumPy array: the property reads it
    assert (lazy.shape, lazy.dtype, lazy.ndim, lazy.size) == ((4,), numpy.dtype(float), 1, 4)
    with _compiled.python_path():
        assert type(vars(dispatch.ndarray)["shape"]) is property
        assert wrapped(numpy.ones((2, 5))).shape == (2, 5)
    assert type(vars(dispatch.ndarray)["shape"]) is _compiled._fastpath.Attr


def _shape_error():
    try:
        numpy.arange(6.0)[::2].shape = (3, 1, 1, 2)
    except Exception as exc:  # NumPy's, whatever its type
        return exc
    raise AssertionError("NumPy took the shape")


@compiled_only
def test_a_ufunc_is_called_through_its_compiled_slot():
    """dispatch.abs(x) and its kin reach the compiled __call__ past CPython's generic slot, with
    keywords and with more arguments than the compiled path takes, as NumPy's ufunc."""
    assert _compiled._fastpath.installed_lean()[1]
    a, b = _data()
    x, y = wrapped(a), wrapped(b)
    assert_same(dispatch.abs(x), numpy.abs(a))
    assert_same(dispatch.add(x, y, dtype=numpy.float32), numpy.add(a, b, dtype=numpy.float32))
    out = dispatch.zeros(a.shape)
    assert dispatch.multiply(x, y, out=out) is out
    assert_same(out, a * b)
    with pytest.raises(TypeError) as caught:
        dispatch.add(*[x] * 20)
    with pytest.raises(type(caught.value)):
        numpy.add(*[a] * 20)
    with _compiled.python_path():
        assert not _compiled._fastpath.installed_lean()[1]  # __call__ set again: CPython's slot
        assert_same(dispatch.abs(x), numpy.abs(a))
    assert _compiled._fastpath.installed_lean()[1]


@compiled_only
def test_it_names_pickles_and_documents_itself_as_the_function_does():
    assert dispatch.mean.__name__ == "mean" and dispatch.mean.__module__ == "dispatch"
    assert dispatch.mean.__wrapped__ is numpy.mean
    assert dispatch.mean.__doc__ == numpy.mean.__doc__
    assert pickle.loads(pickle.dumps(dispatch.mean)) is dispatch.mean
    assert pickle.loads(pickle.dumps(dispatch.linalg.norm)) is dispatch.linalg.norm
    import inspect

    assert "axis" in inspect.signature(dispatch.mean).parameters
    a = wrapped(numpy.arange(4.0))
    assert a.max.__self__ is a and dispatch.ndarray.max.__name__ == "max"
    assert repr(dispatch.mean) == "<function mean>"


def test_dispatch_pure_python_turns_it_off():
    env = {**os.environ, "PYTHONPATH": str(ROOT), "DISPATCH_PURE_PYTHON": "1"}
    code = ("import dispatch, numpy; from dispatch.arrays import _compiled; a = dispatch.arange(5.0);"
            "print(_compiled.ACTIVE, type(dispatch.ndarray.__add__).__name__, numpy.asarray(a + a).tolist())")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.split(maxsplit=2) == ["False", "function", "[0.0, 2.0, 4.0, 6.0, 8.0]\n"]


@pytest.mark.skipif(not (shutil.which("cc") or shutil.which("gcc")), reason="no C compiler here")
@pytest.mark.skipif(os.environ.get("DISPATCH_PURE_PYTHON", "") not in ("", "0"), reason="DISPATCH_PURE_PYTHON is set")
def test_an_install_with_a_c_compiler_has_it():
    assert _compiled.ACTIVE, _compiled.STATUS


@pytest.mark.slow
@compiled_only
def test_the_python_path_alone_passes_the_array_tests():
    """The Python path stands in wherever the extension is not built: the tests of the array
    and the call path, run again in a process where it serves every call."""
    files = ["test_array.py", "test_elision.py", "test_call_path.py", "test_numpy_program.py", "test_resident_lane.py"]
    env = {**os.environ, "DISPATCH_PURE_PYTHON": "1"}
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-x", *(f"tests/{f}" for f in files)]
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=ROOT)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert " passed" in done.stdout.splitlines()[-1]
