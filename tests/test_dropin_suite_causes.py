"""Causes NumPy's own test suite found under ``import dispatch as np``: each case runs on NumPy
and on dispatch and must give the same outcome (value, dtype, shape, identity, or the same
exception type and first line)."""

from __future__ import annotations

import copy
import math
import sys
from decimal import Decimal
from fractions import Fraction
from typing import Any

import numpy
import pytest

import dispatch


def _outcome(xp, run):
    """What ``run(xp)`` gives, or the type and first line of what it raises."""
    try:
        return run(xp)
    except Exception as exc:  # the exception itself is the outcome compared
        return (type(exc), str(exc).split("\n")[0])


def _agree(run):
    """``run`` on NumPy and on dispatch: the same exception, or equal results of NumPy's kind."""
    want, got = _outcome(numpy, run), _outcome(dispatch, run)
    if isinstance(want, tuple) and want and isinstance(want[0], type) and issubclass(want[0], Exception):
        assert got == want
    elif type(want) is numpy.ndarray:
        assert type(got) is dispatch.ndarray, type(got)
        host = numpy.asarray(got)
        assert (host.dtype, host.shape) == (want.dtype, want.shape)
        numpy.testing.assert_array_equal(host, want)
    else:
        assert type(got) is type(want), (type(got), type(want))
        assert got == want


# ---- transpose with its axes in an array ------------------------------------------------------------

@pytest.mark.parametrize("axes", [
    pytest.param(lambda xp: (xp.array([3, 1, 2, 0]),), id="dispatch-array"),
    pytest.param(lambda xp: (numpy.array([3, 1, 2, 0]),), id="numpy-array"),
    pytest.param(lambda xp: ([3, 1, 2, 0],), id="list"),
    pytest.param(lambda xp: (3, 1, 2, 0), id="varargs"),
    pytest.param(lambda xp: (None,), id="None"),
    pytest.param(lambda xp: ((),), id="empty-refused"),
    pytest.param(lambda xp: (xp.array(0),), id="0-d-refused"),
])
def test_transpose_takes_axes_as_numpy_does(axes):
    _agree(lambda xp: xp.arange(120).reshape(2, 3, 4, 5).transpose(*axes(xp)).shape)


# ---- NumPy's private names that tests and libraries use ----------------------------------------------

@pytest.mark.parametrize("name", ["_core", "_NoValue", "_CopyMode", "__config__"])
def test_numpys_private_names_are_numpys_objects(name):
    assert getattr(dispatch, name) is getattr(numpy, name)


def test_numpys_ufuncs_are_ufuncs_under_dispatch():
    found = [u for u in vars(dispatch._core.umath).values() if isinstance(u, dispatch.ufunc)]
    assert found == [u for u in vars(numpy._core.umath).values() if isinstance(u, numpy.ufunc)]
    found.remove(dispatch.bitwise_count)  # found by equality: dispatch's ufunc equals NumPy's
    assert numpy.bitwise_count not in found and dispatch.sin == numpy.sin and dispatch.sin != numpy.cos
    assert {numpy.sin: 1}[dispatch.sin] == 1 and not isinstance(numpy.sum, dispatch.ufunc)


def test_other_private_names_stay_missing():
    with pytest.raises(AttributeError):
        dispatch._not_a_numpy_name  # noqa: B018 - the lookup is the test


# ---- comparisons of void and structured arrays --------------------------------------------------------

def _records(xp, n):
    a = xp.zeros(n, dtype="i4,f8")
    a[n // 2] = (1, 2.0)
    return a


@pytest.mark.parametrize("n", [3, 100_000])
@pytest.mark.parametrize("run", [
    pytest.param(lambda xp, n: xp.zeros(n, "V4") == xp.zeros(n, "V4"), id="V4=="),
    pytest.param(lambda xp, n: xp.zeros(n, "V4") != xp.zeros(n, "V4"), id="V4!="),
    pytest.param(lambda xp, n: _records(xp, n) == xp.zeros(n, dtype="i4,f8"), id="records=="),
    pytest.param(lambda xp, n: _records(xp, n) != _records(xp, n)[n // 2], id="records!=scalar"),
])
def test_void_and_structured_arrays_compare_as_numpys(run, n):
    _agree(lambda xp: run(xp, n))


# ---- out= returns the very array it was given ---------------------------------------------------------

@pytest.mark.parametrize("n", [3, 300_000])
@pytest.mark.parametrize("call", [
    pytest.param(lambda xp, a, o: xp.add(a, 1.0, out=o), id="ufunc"),
    pytest.param(lambda xp, a, o: xp.add(a, 1.0, out=(o,)), id="ufunc-tuple"),
    pytest.param(lambda xp, a, o: xp.multiply(a, a, out=o), id="ufunc-same"),
    pytest.param(lambda xp, a, o: xp.clip(a, 1.0, 2.0, out=o), id="clip"),
    pytest.param(lambda xp, a, o: xp.cumsum(a, out=o), id="cumsum"),
    pytest.param(lambda xp, a, o: a.clip(1.0, 2.0, out=o), id="method-clip"),
])
@pytest.mark.parametrize("out_kind", ["numpy", "dispatch"])
def test_out_is_the_array_given(call, n, out_kind):
    want_out = numpy.empty(n)
    want = call(numpy, numpy.arange(float(n)), want_out)
    out = numpy.empty(n) if out_kind == "numpy" else dispatch.empty(n)
    got = call(dispatch, dispatch.arange(float(n)), out)
    assert want is want_out and got is out
    numpy.testing.assert_array_equal(numpy.asarray(out), want_out)


def test_a_reduction_method_into_a_numpy_out_returns_it():
    want_out, out = numpy.empty(3), numpy.empty(3)
    assert numpy.ones((4, 3)).sum(axis=0, out=want_out) is want_out
    assert dispatch.ones((4, 3)).sum(axis=0, out=out) is out
    numpy.testing.assert_array_equal(out, want_out)


# ---- random: out=, and seeds given as arrays ------------------------------------------------------------

@pytest.mark.parametrize("draw", [
    pytest.param(lambda g, out: g.random(out=out), id="random"),
    pytest.param(lambda g, out: g.standard_normal(out=out), id="standard_normal"),
    pytest.param(lambda g, out: g.standard_exponential(out=out), id="standard_exponential"),
    pytest.param(lambda g, out: g.standard_gamma(2.0, out=out), id="standard_gamma"),
])
def test_generator_draws_into_out_and_returns_it(draw):
    want_out, out = numpy.empty((4, 5)), dispatch.empty((4, 5))
    assert draw(numpy.random.Generator(numpy.random.PCG64(7)), want_out) is want_out
    assert draw(dispatch.random.Generator(dispatch.random.PCG64(7)), out) is out
    numpy.testing.assert_array_equal(numpy.asarray(out), want_out)


@pytest.mark.parametrize("name", ["SeedSequence", "MT19937", "PCG64", "PCG64DXSM", "Philox", "SFC64"])
def test_seeds_given_as_dispatch_arrays_are_numpys_seeds(name):
    want = getattr(numpy.random, name)(numpy.array([1, 2, 3]))
    got = getattr(dispatch.random, name)(dispatch.array([1, 2, 3]))
    assert isinstance(got, getattr(numpy.random, name))
    if name == "SeedSequence":
        numpy.testing.assert_array_equal(got.generate_state(4), want.generate_state(4))
    else:
        numpy.testing.assert_array_equal(got.random_raw(4), want.random_raw(4))


# ---- copy=False, and sizes no memory holds ---------------------------------------------------------------

@pytest.mark.parametrize("run", [
    pytest.param(lambda xp: xp.array(xp.arange(3), dtype=float, copy=False), id="cast-refused"),
    pytest.param(lambda xp: xp.asarray(xp.arange(3), dtype=xp.int8, copy=False), id="asarray-cast-refused"),
    pytest.param(lambda xp: xp.array([1, 2], copy=False), id="list-refused"),
    pytest.param(lambda xp: (lambda a: xp.array(a, copy=False) is a)(xp.arange(3)), id="same-object"),
    pytest.param(lambda xp: (lambda a: xp.shares_memory(xp.array(a, dtype=a.dtype, copy=False), a))(xp.arange(3)),
                 id="same-dtype-no-copy"),
    pytest.param(lambda xp: xp.array(xp.arange(3, dtype="<i8"), dtype="=i8", copy=False), id="equal-dtype"),
    pytest.param(lambda xp: xp.zeros([975] * 7, xp.int8), id="zeros-too-big"),
    pytest.param(lambda xp: xp.empty(2**64), id="empty-2**64"),
    pytest.param(lambda xp: xp.empty((2**20, 2**20)), id="empty-8TiB"),
])
def test_copies_and_sizes_as_numpy(run):
    _agree(run)


# ---- the buffer protocol and the array interfaces --------------------------------------------------------

_DTYPES = ["f8", "f2", ">i4", "c16", "?", "U3", "S2", "O", "M8[D]", "m8[s]", "V4", "i1,f8",
           numpy.dtype([("a", "i1"), ("b", "f8")], align=True), numpy.dtypes.StringDType()]


@pytest.mark.parametrize("dtype", _DTYPES, ids=str)
def test_numpy_reads_every_dtype_back_exactly(dtype):
    host = numpy.arange(6).astype(dtype).reshape(2, 3) if numpy.dtype(dtype).kind != "V" else numpy.zeros((2, 3), dtype)
    got = numpy.asarray(dispatch.asarray(host))
    assert got.dtype == host.dtype and got.dtype.isalignedstruct == host.dtype.isalignedstruct
    assert got.shape == host.shape and got.tobytes() == host.tobytes()
    assert numpy.shares_memory(got, host)  # the data itself, not a copy


@pytest.mark.parametrize("dtype", ["f8", "f2", ">i4", "c16", "?", "U3", "S2", "i1"])
def test_memoryview_and_interfaces_are_numpys(dtype):
    host = numpy.arange(6).astype(dtype).reshape(2, 3)
    x = dispatch.asarray(host.copy())
    view, want = memoryview(x), memoryview(host)
    assert (view.format, view.shape, view.strides, view.readonly) == (want.format, want.shape, want.strides, False)
    assert bytes(x) == bytes(host) and view.tobytes() == want.tobytes()
    mine, theirs = x.__array_interface__, host.__array_interface__
    assert {k: v for k, v in mine.items() if k != "data"} == {k: v for k, v in theirs.items() if k != "data"}
    assert mine["data"][0] == numpy.asarray(x).__array_interface__["data"][0]
    assert type(x.__array_struct__).__name__ == "PyCapsule"


def test_writes_through_a_memoryview_reach_the_array():
    x = dispatch.zeros(4)
    memoryview(x)[2] = 5.0
    numpy.testing.assert_array_equal(numpy.asarray(x), [0.0, 0.0, 5.0, 0.0])


@pytest.mark.parametrize("dtype", ["M8[D]", "V4", numpy.dtypes.StringDType()], ids=str)
def test_dtypes_read_through_array_have_no_interface(dtype):
    x = dispatch.zeros(3, dtype)
    assert not hasattr(x, "__array_interface__") and not hasattr(x, "__array_struct__")
    with pytest.raises((BufferError, ValueError)):
        memoryview(x)


def test_a_memoryview_names_the_array_and_keeps_its_memory():
    x = dispatch.arange(6.0)
    before = sys.getrefcount(x)
    view = memoryview(x)
    assert view.obj is x  # as NumPy's memoryview names its array
    assert dispatch.array(view, copy=False).base.obj is x
    assert dispatch.frombuffer(x).base is x
    del x
    assert view.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]  # the memory lives while the view does
    x = view.obj
    view.release()
    assert sys.getrefcount(x) == before


@pytest.mark.parametrize("dtype", ["M8[D]", "m8[s]", "V4", "i1,f8"], ids=str)
def test_the_bare_memory_of_dtypes_read_through_array_is_numpys(dtype):
    # NumPy hands out the bytes of any array where no format is asked: ndarray(..., buffer=x) reads them
    host = numpy.arange(4).astype(dtype) if numpy.dtype(dtype).kind != "V" else numpy.zeros(4, dtype)
    x = dispatch.asarray(host.copy())
    got = numpy.ndarray(host.shape, host.dtype, buffer=x)
    assert got.dtype == host.dtype and got.tobytes() == host.tobytes()
    assert numpy.shares_memory(got, numpy.asarray(x))


def test_data_held_elsewhere_is_never_handed_out_as_a_host_copy():
    pytest.importorskip("dask.array")
    with dispatch.using("dask"):
        x = dispatch.arange(6.0)
    assert x.device.kind == "dask"
    with pytest.raises(BufferError):
        memoryview(x)
    assert not hasattr(x, "__array_interface__")
    numpy.testing.assert_array_equal(numpy.asarray(x), numpy.arange(6.0))  # __array__: a copy, read now


# ---- NumPy's array methods for files, pickles, fields and ctypes --------------------------------------------

def _through_file(xp, tmp_path):
    a = xp.arange(5, dtype="i4")
    a.tofile(tmp_path / "a.bin")
    a.tofile(tmp_path / "a.txt", sep=",")
    return numpy.fromfile(tmp_path / "a.bin", "i4"), (tmp_path / "a.txt").read_text()


@pytest.mark.parametrize("run", [
    pytest.param(lambda xp, tmp: _through_file(xp, tmp)[0], id="tofile"),
    pytest.param(lambda xp, tmp: _through_file(xp, tmp)[1], id="tofile-text"),
    pytest.param(lambda xp, tmp: __import__("pickle").loads(xp.arange(3.0).dumps()), id="dumps"),
    pytest.param(lambda xp, tmp: xp.arange(4, dtype="i4").getfield("i2"), id="getfield"),
    pytest.param(lambda xp, tmp: (lambda a: (a.setfield(7, "i2"), a)[1])(xp.arange(4, dtype="i4")), id="setfield"),
    pytest.param(lambda xp, tmp: (lambda a: a.ctypes.data == a.__array_interface__["data"][0])(xp.arange(3.0)),
                 id="ctypes-data"),
    pytest.param(lambda xp, tmp: xp.arange(6.0).reshape(2, 3).ctypes.shape[:], id="ctypes-shape"),
])
def test_file_pickle_field_and_ctypes_methods_as_numpys(run, tmp_path):
    (tmp_path / "n").mkdir()
    (tmp_path / "d").mkdir()
    want = _outcome(numpy, lambda xp: run(xp, tmp_path / "n"))
    got = _outcome(dispatch, lambda xp: run(xp, tmp_path / "d"))
    if type(want) is numpy.ndarray:
        numpy.testing.assert_array_equal(numpy.asarray(got), want)
        assert numpy.asarray(got).dtype == want.dtype
    else:
        assert got == want


# ---- scikit-learn: the user's own Array API dispatch -----------------------------------------------------------

def _namespaces(X, make):
    import sklearn

    with sklearn.config_context(array_api_dispatch=True):
        est = make().fit(X)
        learned = est.components_ if hasattr(est, "components_") else est.mean_
        return type(learned), type(est.transform(X)), float(learned[0] if learned.ndim == 1 else learned[0, 0])


@pytest.mark.parametrize("estimator", ["StandardScaler", "PCA"])
def test_accelerated_sklearn_keeps_the_users_array_api_namespace(estimator, monkeypatch):
    """With ``array_api_dispatch=True`` set by the user, torch in gives torch out, as stock."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("sklearn")
    import sklearn.decomposition
    import sklearn.preprocessing

    import dispatch.sklearn as ds

    monkeypatch.setenv("SCIPY_ARRAY_API", "1")
    make = {"StandardScaler": sklearn.preprocessing.StandardScaler,
            "PCA": lambda: sklearn.decomposition.PCA(2, svd_solver="full")}[estimator]
    X = torch.asarray(numpy.random.default_rng(0).random((300, 5)))
    want = _namespaces(X, make)
    with ds.accelerated(), dispatch.using("torch-cpu"):
        got = _namespaces(X, make)
    assert got[:2] == want[:2] == (torch.Tensor, torch.Tensor)
    assert got[2] == pytest.approx(want[2], rel=1e-12)


@pytest.mark.parametrize("estimator", ["Binarizer", "Normalizer", "StandardScaler"])
def test_accelerated_sklearn_with_copy_false_works_in_the_callers_array(estimator):
    pytest.importorskip("torch")
    sklearn_pre = pytest.importorskip("sklearn.preprocessing")

    import dispatch.sklearn as ds

    def run():
        X = numpy.random.default_rng(0).random((3000, 6))
        out = getattr(sklearn_pre, estimator)(copy=False).fit(X).transform(X)
        return out is X, out

    want_same, want = run()
    with ds.accelerated(), dispatch.using("torch-cpu"):
        got_same, got = run()
    assert got_same == want_same and type(got) is type(want)
    numpy.testing.assert_allclose(got, want, rtol=1e-12)


@pytest.mark.parametrize("run", [
    pytest.param(lambda xp: xp.arange(xp.datetime64("2000-01-01"), xp.datetime64("2000-01-04"), 0), id="datetime"),
    pytest.param(lambda xp: xp.arange(xp.timedelta64(0), xp.timedelta64(3), xp.timedelta64(0)), id="timedelta"),
    pytest.param(lambda xp: xp.arange(xp.datetime64("2000-01-01"), xp.datetime64("2000-01-04")), id="datetime-range"),
])
def test_datetime_ranges_raise_and_warn_as_numpys(run):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # NumPy's own suite turns warnings into errors
        _agree(run)


# ---- methods show NumPy's signatures -------------------------------------------------------------------------

@pytest.mark.parametrize("name", [
    "__array_namespace__", "__copy__", "__deepcopy__", "all", "any", "argmax", "argmin", "argsort", "astype",
    "byteswap", "choose", "clip", "compress", "conj", "copy", "cumsum", "dump", "fill", "flatten", "getfield",
    "item", "max", "mean", "nonzero", "prod", "put", "ravel", "reshape", "resize", "round", "searchsorted",
    "setflags", "sort", "squeeze", "std", "sum", "swapaxes", "take", "to_device", "tobytes", "tofile", "tolist",
    "transpose", "var", "view",
])
def test_methods_show_numpys_signatures(name):
    import inspect

    assert inspect.signature(getattr(dispatch.ndarray, name)) == inspect.signature(getattr(numpy.ndarray, name))


@pytest.mark.parametrize("name", [
    "inner", "where", "lexsort", "can_cast", "result_type", "dot", "bincount", "copyto", "packbits",
    "may_share_memory", "busday_count", "datetime_as_string",  # NumPy's dispatchers carry __signature__
    "arange", "frombuffer", "fromiter", "promote_types", "nested_iters",  # builtins: __text_signature__
])
def test_functions_carry_numpys_signatures(name):
    """The attributes ``inspect`` reads first are NumPy's function's own (NumPy's tests ask for them)."""
    import inspect

    ours, theirs = getattr(dispatch, name), getattr(numpy, name)
    for attribute in ("__signature__", "__text_signature__"):
        assert getattr(ours, attribute, None) == getattr(theirs, attribute, None), attribute
    assert inspect.signature(ours) == inspect.signature(theirs)


def test_to_device_cpu_is_the_array():
    a = dispatch.arange(3.0)
    _agree(lambda xp: xp.arange(3.0).to_device("cpu"))
    assert a.to_device("cpu") is a


def test_accelerated_transform_with_copy_false_works_in_the_callers_array():
    pytest.importorskip("torch")
    sklearn_pre = pytest.importorskip("sklearn.preprocessing")

    import dispatch.sklearn as ds

    X = numpy.random.default_rng(0).random((3000, 6))
    scaler = sklearn_pre.StandardScaler().fit(X)
    want = scaler.transform(X.copy())
    with ds.accelerated(), dispatch.using("torch-cpu"):
        got = scaler.transform(X, copy=False)
    assert got is X
    numpy.testing.assert_allclose(got, want, rtol=1e-12)


# ---- a class derived from np.ndarray is NumPy's subclass ----------------------------------------------

def _info_array(xp):
    """NumPy's documented subclass example, written against ``xp.ndarray``."""

    class InfoArray(xp.ndarray):
        def __new__(cls, shape, info=None):
            obj = xp.ndarray.__new__(cls, shape, dtype=float)
            obj.fill(1.5)
            obj.info = info
            return obj

        def __array_finalize__(self, obj):
            self.info = getattr(obj, "info", "from a view")

        def __array_wrap__(self, arr, context=None, return_scalar=False):
            out = super().__array_wrap__(arr, context, return_scalar)
            if isinstance(out, numpy.ndarray):
                out.info = "wrapped"
            return out

    return InfoArray


def _described(result):
    """A result as plain values to compare across NumPy and dispatch: its type's name, its
    ``info``, its dtype, shape and values."""
    host = numpy.asarray(result)
    return (type(result).__name__, getattr(result, "info", None),
            host.dtype, host.shape, host.tolist())


@pytest.mark.parametrize("run", [
    pytest.param(lambda xp, S: S((2, 3), info="made"), id="own-new"),
    pytest.param(lambda xp, S: xp.arange(6.0).view(S), id="view-as"),
    pytest.param(lambda xp, S: xp.arange(6.0).view(S)[1:4], id="slice"),
    pytest.param(lambda xp, S: xp.arange(6.0).view(S)[[0, 2]], id="fancy-index"),
    pytest.param(lambda xp, S: S((4,), info="made") + 1.0, id="operator-wraps"),
    pytest.param(lambda xp, S: xp.sqrt(xp.arange(4.0).view(S)), id="ufunc-wraps"),
    pytest.param(lambda xp, S: xp.sum(xp.arange(4.0).view(S)), id="sum"),
    pytest.param(lambda xp, S: xp.zeros_like(S((3,), info="made")), id="zeros_like"),
    pytest.param(lambda xp, S: xp.ones_like(S((3,), info="made"), subok=False), id="ones_like-not-subok"),
    pytest.param(lambda xp, S: xp.resize(S((2,), info="made"), 5), id="resize"),
    pytest.param(lambda xp, S: xp.median(xp.arange(5.0).view(S)), id="median"),
    pytest.param(lambda xp, S: xp.unique(xp.array([3.0, 1.0, 3.0]).view(S)), id="unique"),
    pytest.param(lambda xp, S: xp.delete(xp.arange(4.0).view(S), 1), id="delete"),
    pytest.param(lambda xp, S: S((3,), info="made").view(xp.ndarray), id="viewed-as-the-modules-ndarray"),
    pytest.param(lambda xp, S: S((3,), info="made").view(type=xp.ndarray), id="viewed-as-type"),
    pytest.param(lambda xp, S: issubclass(S, numpy.ndarray), id="is-numpys-subclass"),
])
def test_a_class_derived_from_ndarray_is_numpys_subclass(run):
    """``class S(np.ndarray)`` under ``import dispatch as np`` is NumPy's subclass (docs/equality.md):
    its own ``__new__``, ``__array_finalize__`` and ``__array_wrap__`` run, and views, operators and
    functions give what NumPy gives, of its type."""
    want, got = run(numpy, _info_array(numpy)), run(dispatch, _info_array(dispatch))
    if isinstance(want, bool):
        assert got is want
    else:
        assert _described(got) == _described(want)


def test_dispatchs_own_array_types_still_derive_from_the_wrapper():
    assert issubclass(dispatch.arrays._array._DeviceScalar, dispatch.ndarray)
    assert type(dispatch.arange(3.0)) is dispatch.ndarray


@pytest.mark.parametrize("check", [
    pytest.param(lambda xp: isinstance(numpy.arange(3), xp.ndarray), id="numpys-array"),
    pytest.param(lambda xp: isinstance(numpy.linalg.inv(numpy.eye(2)), xp.ndarray), id="numpys-result"),
    pytest.param(lambda xp: isinstance(numpy.ma.masked_array([1, 2]), xp.ndarray), id="masked-array"),
    pytest.param(lambda xp: isinstance(xp.arange(3), xp.ndarray), id="own-array"),
    pytest.param(lambda xp: issubclass(numpy.ndarray, xp.ndarray), id="numpys-class"),
    pytest.param(lambda xp: issubclass(numpy.matrix, xp.ndarray), id="numpys-subclass"),
    pytest.param(lambda xp: isinstance(numpy.float64(1.0), xp.ndarray), id="numpys-scalar"),
    pytest.param(lambda xp: isinstance([1.0], xp.ndarray), id="list"),
    pytest.param(lambda xp: issubclass(list, xp.ndarray), id="list-class"),
    pytest.param(lambda xp: isinstance(xp.arange(3.0).sum(), xp.ndarray), id="reduction"),
])
def test_numpys_arrays_are_instances_of_the_modules_ndarray(check):
    """As NumPy's: an array NumPy's own functions made is ``isinstance(x, np.ndarray)`` under
    ``import dispatch as np``."""
    assert check(dispatch) is check(numpy)


@pytest.mark.parametrize("run", [
    pytest.param(lambda xp: xp.arange(3).__array_wrap__(xp.array(3, dtype=xp.int8), None, True), id="0d-scalar"),
    pytest.param(lambda xp: xp.arange(3).__array_wrap__(xp.array(3, dtype=xp.int8)), id="0d-array"),
    pytest.param(lambda xp: xp.arange(3).__array_wrap__(xp.array(3, dtype=xp.int8), None, False), id="0d-no-scalar"),
    pytest.param(lambda xp: xp.arange(3).__array_wrap__(xp.array([3], dtype=xp.int8), None, True), id="1d"),
    pytest.param(lambda xp: xp.arange(3).__array_wrap__(numpy.arange(2.0)), id="numpys-array"),
])
def test_array_wrap_is_numpys(run):
    """``a.__array_wrap__(result, context, return_scalar)`` as NumPy's: the result as the module's
    array, or NumPy's scalar for a 0-d result where ``return_scalar`` (NumPy's linalg tests call it)."""
    want, got = run(numpy), run(dispatch)
    assert type(got) is (dispatch.ndarray if type(want) is numpy.ndarray else type(want))
    host = numpy.asarray(got)
    assert (host.dtype, host.shape, host.tolist()) == (want.dtype, want.shape, want.tolist())


@pytest.mark.parametrize("name", ["device", "base", "ndim", "size", "itemsize", "nbytes", "T", "mT", "flags"])
def test_read_only_attributes_refuse_as_numpys(name):
    """Setting a read-only attribute raises NumPy's AttributeError message (NumPy's tests match it)."""
    messages = []
    for xp in (numpy, dispatch):
        with pytest.raises(AttributeError) as caught:
            setattr(xp.ones((2, 2)), name, None)
        messages.append(str(caught.value).replace("numpy.ndarray", "ndarray"))
    assert messages[1] == messages[0]


@pytest.mark.parametrize("pointer", [
    pytest.param(lambda a: a.ctypes.data_as(__import__("ctypes").c_void_p), id="data_as"),
    pytest.param(lambda a: a.ctypes._as_parameter_, id="as_parameter"),
])
@pytest.mark.parametrize("make", [lambda xp: xp.arange(6.0).reshape(2, 3), lambda xp: xp.array([None])])
def test_a_ctypes_pointer_holds_its_array(pointer, make):
    """As NumPy's: a pointer from ``a.ctypes`` keeps ``a`` alive, and lets it go when it dies."""
    import gc
    import weakref

    for xp in (numpy, dispatch):
        arr = make(xp).copy()
        ref = weakref.ref(arr)
        described = arr.ctypes
        assert (list(described.shape), list(described.strides)) == (list(arr.shape), list(arr.strides))
        assert described.data == numpy.asarray(arr).ctypes.data
        held = pointer(arr)
        del arr, described
        gc.collect()
        assert ref() is not None, xp.__name__
        del held
        assert ref() is None, xp.__name__


def test_getsizeof_counts_the_memory_an_array_owns():
    """As NumPy's: ``sys.getsizeof`` counts the data an array owns, not a view's."""
    for xp in (numpy, dispatch):
        d = xp.ones(100)
        owner = sys.getsizeof(d)
        assert owner > 100 * 8 > sys.getsizeof(d[...]), xp.__name__
        assert owner < sys.getsizeof(d.reshape(100, 1, 1).copy()), xp.__name__
        d.resize(150)
        assert sys.getsizeof(d) > owner + 50 * 8 - 1, xp.__name__


@pytest.mark.parametrize("run", [
    pytest.param(lambda xp: xp.array([0, 1, 2]).choose([5, 6, 7], [8, 9, 10], [11, 12, 13]), id="choices-as-arguments"),
    pytest.param(lambda xp: xp.array([0, 1]).choose(([5, 6], [7, 8])), id="one-sequence"),
    pytest.param(lambda xp: xp.array([0, 3]).choose([[5, 6], [7, 8]], mode="clip"), id="mode"),
    pytest.param(lambda xp: xp.array([[0, 1], [1, 0]]).choose(*xp.arange(8.0).reshape(2, 2, 2)), id="unpacked"),
])
def test_choose_method_takes_choices_as_numpys(run):
    """``a.choose(c0, c1, ...)``: NumPy's method takes several arguments as the choices."""
    want, got = run(numpy), numpy.asarray(run(dispatch))
    assert (got.dtype, got.shape, got.tolist()) == (want.dtype, want.shape, want.tolist())


@pytest.mark.parametrize("method", ["std", "var", "mean", "sum", "max"])
def test_reduction_methods_take_an_array_where(method):
    """``a.std(axis=2, where=mask)`` with the mask a dispatch array, as NumPy's method."""
    def run(xp):
        a = xp.arange(16.0).reshape((2, 2, 4))
        kwargs = {"initial": -1.0} if method == "max" else {}
        return getattr(a, method)(axis=2, where=xp.array([False, True, True, False]), **kwargs)

    want, got = run(numpy), numpy.asarray(run(dispatch))
    assert (got.dtype, got.shape) == (want.dtype, want.shape)
    numpy.testing.assert_allclose(got, want, rtol=1e-12)


@pytest.mark.filterwarnings("ignore:In the future:FutureWarning")  # NumPy's own, for np.str
@pytest.mark.parametrize("name", ["float", "complex", "int", "str", "no_such_name"])
def test_a_missing_name_gives_numpys_message(name):
    """``np.float``: NumPy's AttributeError, with its guidance for the removed aliases."""
    messages = []
    for xp in (numpy, dispatch):
        with pytest.raises(AttributeError) as caught:
            getattr(xp, name)
        messages.append(str(caught.value).replace("module 'dispatch'", "module 'numpy'"))
    assert messages[1] == messages[0]


def test_a_missing_name_keeps_none_of_its_callers_alive():
    """``from dispatch import tracing`` first asks ``dispatch.tracing``: the AttributeError of a
    name NumPy lacks holds the caller's frames, and a cycle through it kept them (and every array
    in them) until the collector ran."""
    import gc
    import weakref

    class Held:
        pass

    def looks_up(obj):
        try:
            dispatch.no_such_name_here  # noqa: B018 - the lookup is the test
        except AttributeError:
            pass

    held = Held()
    ref = weakref.ref(held)
    gc.disable()
    try:
        looks_up(held)
        del held
        assert ref() is None
    finally:
        gc.enable()


def test_strides_can_be_set_with_numpys_warning():
    """``a.strides = s``: deprecated in NumPy 2.4, which warns and sets them (or raises where
    they would leave the memory)."""
    results = []
    for xp in (numpy, dispatch):
        x = xp.arange(6.0)[:3]
        with pytest.warns(DeprecationWarning, match="Setting the strides"):
            x.strides = (16,)
        with pytest.warns(DeprecationWarning), pytest.raises(ValueError, match="not compatible"):
            xp.arange(6.0).strides = (100,)
        host = numpy.asarray(x)
        results.append((x.strides, host.dtype, host.shape, host.tolist()))
    assert results[1] == results[0]


@pytest.mark.parametrize("dtype", ["?", "b", "h", "I", "f8"])
@pytest.mark.parametrize("method", ["conj", "conjugate"])
def test_a_real_array_is_its_own_conjugate(method, dtype):
    """As NumPy's method: ``a.conj()`` of a real array is ``a`` itself; of a complex one, a new array."""
    for xp in (numpy, dispatch):
        a = xp.ones(10, dtype=dtype)
        assert getattr(a, method)() is a, xp.__name__
    c = dispatch.array([1 - 1j, 2 + 1j])
    got = numpy.asarray(getattr(c, method)())
    assert got.dtype == numpy.complex128 and got.tolist() == [1 + 1j, 2 - 1j]


@pytest.mark.parametrize("call", [
    pytest.param(lambda a, o: a.sum(1, None, o), id="sum"),
    pytest.param(lambda a, o: a.max(1, o), id="max"),
    pytest.param(lambda a, o: a.std(1, None, o, 1), id="std-ddof-after-out"),
    pytest.param(lambda a, o: a[:, 0].clip(1.0, 2.0, o), id="clip"),
    pytest.param(lambda a, o: a[:, 0].conjugate(o), id="conjugate"),
])
@pytest.mark.parametrize("out_module", ["numpy", "dispatch"])
def test_a_methods_out_given_by_position_comes_back(call, out_module):
    """As NumPy's methods: ``a.sum(1, None, out)`` writes ``out`` and returns it itself."""
    results = []
    for xp in (numpy, dispatch):
        a = xp.arange(6.0).reshape(2, 3)
        out = (numpy if out_module == "numpy" else xp).zeros(2)
        assert call(a, out) is out, xp.__name__
        results.append(numpy.asarray(out).tolist())
    assert results[1] == results[0]


@pytest.mark.parametrize(("args", "kwargs", "error"), [
    ((None,), {}, None), ((), {}, None), (("hi",), {}, TypeError), ((-1,), {}, ValueError),
    ((), {"order": 1}, TypeError), ((3, 3), {"refcheck": "hi"}, TypeError), ((3, 3), {"refcheck": None}, TypeError),
])
def test_resize_reads_its_arguments_as_numpys(args, kwargs, error):
    """``a.resize(None)`` and ``a.resize()`` change nothing; a bad shape or ``refcheck`` raises NumPy's error."""
    for xp in (numpy, dispatch):
        x = xp.eye(3)
        if error is None:
            x.resize(*args, **kwargs)
            assert numpy.asarray(x).tolist() == numpy.eye(3).tolist(), xp.__name__
        else:
            with pytest.raises(error):
                x.resize(*args, **kwargs)


@pytest.mark.parametrize("run", [
    pytest.param(lambda xp: xp.array(object=3), id="array-object"),
    pytest.param(lambda xp: xp.array(object=[1, 2], dtype=float), id="array-object-dtype"),
    pytest.param(lambda xp: xp.asarray(a=[1, 2]), id="asarray-a"),
])
def test_array_takes_its_first_argument_by_numpys_name(run):
    want, got = run(numpy), numpy.asarray(run(dispatch))
    assert (got.dtype, got.shape, got.tolist()) == (want.dtype, want.shape, want.tolist())


def test_array_without_an_object_raises_numpys_error():
    with pytest.raises(TypeError, match="missing required argument 'object'"):
        dispatch.array()


@pytest.mark.parametrize("source", [
    numpy.arange(6.0).reshape(2, 3), numpy.asfortranarray(numpy.arange(6).reshape(2, 3)), numpy.array(["a", "bc"]),
])
def test_setstate_restores_numpys_state(source):
    """``a.__setstate__(state)`` (the state ``numpy.ndarray.__reduce__`` gives) as NumPy's."""
    state = source.__reduce__()[2]
    results = []
    for xp in (numpy, dispatch):
        a = xp.zeros(1)
        assert a.__setstate__(state) is None
        host = numpy.asarray(a)
        results.append((host.dtype, host.shape, host.flags.f_contiguous, host.tolist()))
    assert results[1] == results[0]


def test_array_finalize_is_numpys_hook():
    import inspect

    assert inspect.signature(dispatch.ndarray.__array_finalize__) == inspect.signature(numpy.ndarray.__array_finalize__)
    assert dispatch.zeros(2).__array_finalize__(None) is numpy.zeros(2).__array_finalize__(None) is None


def _flat_behaviour(xp):
    it = xp.arange(10).reshape(2, 1, 5).flat
    seen = [next(it), next(it)]
    index, coords = it.index, it.coords
    rest = list(it)
    a = xp.arange(20.0).reshape(4, 5)
    a.flags.writeable = False
    writeable = [x.flat.__array__().flags.writeable for x in (a, a[::2, ::2], xp.arange(6.0))]
    refused = []
    for act in (lambda: setattr(xp.ones(3).flat, "index", 1), lambda: xp.ones(3).flat.__delitem__(1),
                lambda: xp.ones((1,) * 64).flat):
        try:
            act()
            refused.append(None)
        except (AttributeError, TypeError, RuntimeError) as error:
            refused.append(type(error))
    return [int(v) for v in seen], index, coords, [int(v) for v in rest], it.index, writeable, refused


def test_flat_iterates_as_numpys_flatiter():
    """``a.flat`` is its own iterator, with NumPy's ``index`` and ``coords``, ``__array__`` and limits."""
    assert _flat_behaviour(dispatch) == _flat_behaviour(numpy)


@pytest.mark.parametrize("call", [
    pytest.param(lambda a: a.sort(axis=None), id="sort"),
    pytest.param(lambda a: a.partition(2, axis=None), id="partition"),
])
def test_in_place_sort_refuses_axis_none_as_numpys(call):
    """NumPy's in-place methods take an integer axis: ``axis=None`` is a TypeError, the array untouched."""
    for xp in (numpy, dispatch):
        a = xp.arange(10).reshape(2, 5)[:, ::-1].copy()
        with pytest.raises(TypeError):
            call(a)
        assert numpy.asarray(a).tolist() == [[4, 3, 2, 1, 0], [9, 8, 7, 6, 5]], xp.__name__


@pytest.mark.parametrize(("a_shape", "b_shape"), [
    ((3,), (3,)), ((3,), (3, 3)), ((2, 3), (3,)), ((2, 3), (3, 3)), ((3, 3, 3), (1, 3, 1)), ((1, 3, 3), (3, 3, 3)),
])
def test_inplace_matmul_keeps_the_shape_as_numpys(a_shape, b_shape):
    """``a @= b`` writes ``a`` itself, and raises NumPy's ValueError where the product has another shape."""
    results = []
    for xp in (numpy, dispatch):
        a = xp.arange(float(numpy.prod(a_shape))).reshape(a_shape)
        b = xp.arange(numpy.prod(b_shape)).reshape(b_shape)
        before = id(a)
        try:
            a @= b
        except ValueError:
            results.append("ValueError")
            continue
        host = numpy.asarray(a)
        results.append((id(a) == before, host.dtype, host.shape, host.tolist()))
    assert results[1] == results[0]


@pytest.mark.parametrize("order", ["C", "F", "A", "K"])
@pytest.mark.parametrize("make", [
    pytest.param(lambda xp: xp.arange(10)[::2], id="strided"),
    pytest.param(lambda xp: xp.arange(6).reshape(2, 3), id="contiguous"),
    pytest.param(lambda xp: xp.arange(6).reshape(2, 3).T, id="transposed"),
])
def test_ravel_copies_where_numpys_does(make, order):
    """``a.ravel(order)``: a view where the order allows one, else a copy that owns its data, as NumPy's."""
    results = []
    for xp in (numpy, dispatch):
        flat = make(xp).ravel(order)
        host = numpy.asarray(flat)
        results.append((flat.flags.owndata, host.dtype, host.shape, host.tolist()))
    assert results[1] == results[0]


@pytest.mark.parametrize(("dtype", "copy"), [(None, None), (None, False), (None, True), (int, False),
                                           (float, None), (float, False)])
def test_dunder_array_copies_as_numpys(dtype, copy):
    """``a.__array__(dtype, copy=...)``: the data itself where it can be, a copy where asked or cast,
    and NumPy's ValueError for ``copy=False`` where a cast needs one."""
    results = []
    for xp in (numpy, dispatch):
        a = xp.ones((3, 3), dtype=int)
        try:
            host = a.__array__(dtype, copy=copy)
        except ValueError as error:
            results.append(str(error))
            continue
        results.append((numpy.shares_memory(host, numpy.asarray(a)), host.dtype, host.shape))
    assert results[1] == results[0]


def test_numpys_arrays_stay_numpys_in_dispatchs_own_calls():
    """dispatch's own code still tells its arrays from NumPy's: a NumPy subclass given to a function
    is NumPy's business (its type and mask kept), and a NumPy array out= is written in place."""
    masked = numpy.ma.masked_array([1.0, 2.0, 3.0], mask=[0, 1, 0])
    assert type(dispatch.negative(masked)) is numpy.ma.MaskedArray
    assert float(dispatch.sum(masked)) == float(numpy.sum(masked)) == 4.0
    out = numpy.zeros(3)
    assert dispatch.add(dispatch.arange(3.0), 1.0, out=out) is out
    assert out.tolist() == [1.0, 2.0, 3.0]


# ---- operators take any object NumPy's would, and defer where NumPy's do -------------------------------

class _Deferring:
    """Asks NumPy's operators to let it go first (and has no reflected method)."""

    __array_priority__ = 50.0


def _divided_in_place(xp):
    w = xp.array([Decimal(1), Decimal(3)])
    w /= w.sum()
    return w


@pytest.mark.parametrize("run", [
    pytest.param(_divided_in_place, id="object-array-in-place"),
    pytest.param(lambda xp: xp.array([1, 2]) * Fraction(1, 3), id="times-a-fraction"),
    pytest.param(lambda xp: Fraction(1, 3) - xp.array([1, 2]), id="a-fraction-minus"),
    pytest.param(lambda xp: xp.add(xp.array([Decimal(1)], dtype=object), Decimal(2)), id="ufunc-of-a-decimal"),
])
def test_operators_take_plain_objects_as_numpys_do(run):
    _agree(run)


@pytest.mark.parametrize("xp", [numpy, dispatch])
def test_operators_defer_to_an_array_priority_as_numpys_do(xp):
    with pytest.raises(TypeError):
        xp.arange(2.0) + _Deferring()


# ---- a ufunc np.frompyfunc made is not kept alive --------------------------------------------------------

@pytest.mark.parametrize("xp", [numpy, dispatch])
def test_a_frompyfunc_ufunc_called_on_dispatch_arrays_is_not_kept(xp):
    """A program may make one per object (NumPy's ``TestLeaks``): dispatch keeps no entry for it,
    which would keep its function, and the function's object, alive."""
    def plus(x, y):
        return x + y

    before = sys.getrefcount(plus)
    for _ in range(5):
        made = xp.frompyfunc(plus, 2, 1)
        assert made(dispatch.arange(3), 1).tolist() == [1, 2, 3]
        assert made.reduce(dispatch.arange(1, 4)) == 6
    del made
    assert sys.getrefcount(plus) == before


# ---- base: whether an array owns its memory, as NumPy's says --------------------------------------------

@pytest.mark.parametrize("run", [
    pytest.param(lambda xp: xp.arange(6.0).base is None, id="owns"),
    pytest.param(lambda xp: xp.arange(6.0)[1:].base is None, id="slice"),
    pytest.param(lambda xp: xp.arange(6.0).reshape(2, 3).base is None, id="reshape"),
    pytest.param(lambda xp: xp.arange(6.0)[[0, 1]].base is None, id="fancy-copy"),
    pytest.param(lambda xp: xp.arange(6.0)[1:].copy().base is None, id="copy"),
    pytest.param(lambda xp: xp.arange(6.0)[1:].base.tolist(), id="the-owners-values"),
    pytest.param(lambda xp: type(xp.frombuffer(b"abcd", dtype=xp.uint8).base).__name__, id="bytes-owner"),
    pytest.param(lambda xp: (lambda a: a[1:].base is a[::2].base)(xp.arange(6.0)), id="two-views-one-base"),
])
def test_base_says_whether_an_array_owns_its_memory(run):
    _agree(run)


# ---- a class whose __array__ gives the module's array ----------------------------------------------------

def _array_like(xp, values, copy_keyword=True):
    """A user's class written against ``xp``: its ``__array__`` gives ``xp``'s array."""
    if copy_keyword:
        class ArrayLike:
            def __array__(self, dtype=None, copy=None):
                return xp.asarray(values)
    else:
        class ArrayLike:
            def __array__(self):
                return xp.asarray(values)
    return ArrayLike()


@pytest.mark.parametrize("run", [
    pytest.param(lambda xp: xp.intersect1d(_array_like(xp, [3, 1, 2]), _array_like(xp, [2, 3])), id="intersect1d"),
    pytest.param(lambda xp: xp.bincount(_array_like(xp, [0, 1, 1, 3], copy_keyword=False)), id="bincount"),
    pytest.param(lambda xp: xp.sum(_array_like(xp, [1.5, 2.0])), id="sum"),
    pytest.param(lambda xp: xp.array(_array_like(xp, [1, 2]), dtype=float), id="array"),
    pytest.param(lambda xp: xp.zeros((2, 2))[1, _array_like(xp, 0)], id="index"),
    pytest.param(lambda xp: xp.arange(4.0)[_array_like(xp, [3, 0])], id="fancy-index"),
])
def test_an_array_like_giving_the_modules_array_is_read_as_numpys(run):
    _agree(run)


# ---- np.ndarray[...] in annotations -------------------------------------------------------------------

@pytest.mark.parametrize("item", [(Any, Any), (Any,), Any, (), (Any, Any, Any)],
                         ids=["two", "one-in-a-tuple", "one", "none-refused", "three-refused"])
def test_ndarray_subscripted_as_numpys(item):
    def run(xp):
        try:
            alias = xp.ndarray[item]
        except TypeError as exc:  # its message names the class: NumPy's or dispatch's
            return str(exc).rpartition(" for ")[0]
        return (type(alias).__name__, alias.__origin__ is xp.ndarray, alias.__args__)

    _agree(run)


# ---- a subclass's own reflected operator goes first, as Python lets a subclass's -----------------------

def _answering(xp):
    class Answering(xp.ndarray):
        def __eq__(self, other):
            return "eq"

        def __radd__(self, other):
            return "radd"

        def __gt__(self, other):
            return "gt"

    return xp.array([1, 2, 3]).view(Answering)


@pytest.mark.parametrize("run", [
    pytest.param(lambda xp: xp.array([10]) == _answering(xp), id="eq"),
    pytest.param(lambda xp: xp.array([10]) + _answering(xp), id="radd"),
    pytest.param(lambda xp: xp.array([10]) < _answering(xp), id="lt-reflected-gt"),
    pytest.param(lambda xp: type(xp.array([10]) * _answering(xp)).__name__, id="not-overridden"),
])
def test_a_subclass_reflected_operator_goes_first(run):
    _agree(run)


# ---- copy= given as NumPy's _CopyMode ---------------------------------------------------------------

@pytest.mark.parametrize("mode", list(numpy._CopyMode), ids=lambda m: m.name)
@pytest.mark.parametrize("name", ["array", "asarray"])
def test_copy_modes_as_numpys(name, mode):
    def run(xp):
        a = xp.arange(3.0)
        same = getattr(xp, name)(a, copy=mode) is a
        cast = getattr(xp, name)(a, dtype=xp.float32, copy=mode)
        return (same, cast.dtype.name)

    _agree(run)


# ---- a view's base is the array it was taken of, and holds it ------------------------------------------

_VIEWS = {
    "ellipsis": lambda a: a[...],
    "empty-tuple": lambda a: a[()],
    "slice": lambda a: a[1:],
    "slice-of-slice": lambda a: a[1:][1:],
    "view": lambda a: a.view(),
    "reshape": lambda a: a.reshape(2, 3),
    "transpose": lambda a: a.reshape(2, 3).T,
    "ravel": lambda a: a.ravel(),
    "np.reshape": lambda a: dispatch.reshape(a, (3, 2)),
    "np.transpose": lambda a: dispatch.transpose(a),
    "frombuffer": lambda a: dispatch.frombuffer(a),
}


@pytest.mark.parametrize("take", list(_VIEWS.values()), ids=list(_VIEWS))
def test_a_views_base_is_the_array_it_was_taken_of(take, operator_path):
    # NumPy: a view's base is the array that owns the memory, and the view holds it
    a = dispatch.arange(6.0)
    before = sys.getrefcount(a)
    view = take(a)
    assert view.base is a
    assert sys.getrefcount(a) == before + 1
    del view
    assert sys.getrefcount(a) == before


@pytest.mark.parametrize("take", [lambda a: a[[0, 1]], lambda a: a.copy(), lambda a: a + 1],
                         ids=["fancy", "copy", "add"])
def test_a_copy_does_not_hold_the_array_it_was_made_of(take, operator_path):
    a = dispatch.arange(6.0)
    before = sys.getrefcount(a)
    made = take(a)
    assert made.base is None
    assert sys.getrefcount(a) == before


def test_a_view_of_fields_names_the_array():
    a = dispatch.ones(3, dtype=[("a", "i4"), ("b", "f4"), ("c", "u4")])
    assert a[["a", "c"]].base is a


def test_astype_without_a_copy_gives_the_array_itself(operator_path):
    a = dispatch.arange(4, dtype="f4")
    assert a.astype("f4", copy=False) is a
    assert a.astype("f8", copy=False) is not a and a.astype("f4") is not a


def test_a_view_of_an_array_that_is_no_dispatch_arrays_view_names_its_owner():
    owner = numpy.arange(6.0)
    a = dispatch.asarray(owner[1:])  # a view of NumPy's array, wrapped
    assert a[1:].base is a.base  # one wrapper for one owner, as NumPy's one owner
    assert type(a.base) is dispatch.ndarray and a.base.tolist() == owner.tolist()


# ---- np.broadcast holds the arrays it was given ----------------------------------------------------------

def test_broadcast_iterators_name_the_arrays_given():
    shapes = [(6, 7), (5, 6, 1), (7,), (5, 1, 7)]
    arrays = [dispatch.arange(float(math.prod(s))).reshape(s) for s in shapes]  # values set: compared below
    stock = numpy.broadcast(*[numpy.asarray(a) for a in arrays])
    for made in (dispatch.broadcast(*arrays), dispatch.broadcast(dispatch.broadcast(*arrays[:2]), *arrays[2:])):
        assert isinstance(made, dispatch.broadcast)
        assert (made.shape, made.ndim, made.numiter, made.size) == (stock.shape, stock.ndim, stock.numiter, stock.size)
        assert all(it.base is a for it, a in zip(made.iters, arrays, strict=True))
        assert len(made.iters[2]) == stock.size
        assert next(made) == next(numpy.broadcast(*[numpy.asarray(a) for a in arrays]))


def test_broadcast_of_lists_and_numpys_arrays_as_numpys():
    n = numpy.arange(3)
    made, stock = dispatch.broadcast([[1], [2]], n), numpy.broadcast([[1], [2]], n)
    assert made.iters[1].base is n
    assert type(made.iters[0].base) is dispatch.ndarray
    assert list(made) == list(stock)
    assert isinstance(stock, dispatch.broadcast)
    assert made.iters[1][4] == stock.iters[1][4]
    _agree(lambda xp: xp.broadcast(1, x=1))
    _agree(lambda xp: xp.broadcast(*[xp.ones(1)] * 65))


# ---- np.array of an object read through __array__: that array itself, as NumPy trusts it -----------------

class _Handing:
    """An array-like written under ``import dispatch as np``: its ``__array__`` hands out one array
    (another where a copy is asked), and notes what it was asked."""

    def __init__(self, keeps, copies=None, copy_keyword=True):
        self.keeps, self.copies, self.asked = keeps, copies, []
        if not copy_keyword:
            self.__array__ = lambda dtype=None: (self.asked.append(None), self.keeps)[1]

    def __array__(self, dtype=None, copy=None):
        self.asked.append(copy)
        return self.copies if copy and self.copies is not None else self.keeps


@pytest.mark.parametrize("copy", [True, None, False, numpy._CopyMode.ALWAYS, numpy._CopyMode.NEVER, numpy.True_])
def test_array_of_an_array_like_is_what_its___array__gives(copy):
    keeps, copies = dispatch.arange(10), dispatch.zeros(10)
    made = _Handing(keeps, copies)
    got = dispatch.array(made, copy=copy)
    stock = _Handing(numpy.arange(10), numpy.zeros(10))
    want = numpy.array(stock, copy=copy)
    assert made.asked == stock.asked  # asked for a copy exactly where NumPy asks
    assert got is (copies if want is stock.copies else keeps)


def test_array_of_an_array_like_without_the_copy_keyword_asks_it_nothing():
    keeps = dispatch.arange(10)
    assert dispatch.array(_Handing(keeps, copy_keyword=False), copy=None) is keeps
    assert dispatch.asarray(_Handing(keeps)) is keeps


def test_an_array_like_assigned_into_an_array_is_read(operator_path):
    a = dispatch.ones((3, 3))
    a[...] = _Handing(dispatch.zeros((3, 3)))
    a[0] = _Handing(dispatch.full(3, 2.0))
    numpy.testing.assert_array_equal(numpy.asarray(a), [[2.0] * 3, [0.0] * 3, [0.0] * 3])


def test_asarray_with_an_equal_dtype_of_its_own_is_a_view_with_it():
    a = dispatch.array([1, 2, 3], dtype="i")
    assert dispatch.asarray(a, dtype="i") is a
    annotated = numpy.dtype("i", metadata={"spam": True})
    got = dispatch.asarray(a, dtype=annotated)
    assert got is not a and got.base is a and got.dtype.metadata == {"spam": True}


# ---- == and != of what no loop compares: NumPy's all-False / all-True answer -------------------------------

@pytest.mark.parametrize("run", [
    pytest.param(lambda xp: xp.array(0) == "a", id="0-d-eq-str"),
    pytest.param(lambda xp: xp.array(0) != "a", id="0-d-ne-str"),
    pytest.param(lambda xp: xp.arange(3) == "a", id="eq-str"),
    pytest.param(lambda xp: "a" != xp.arange(3), id="str-ne"),
    pytest.param(lambda xp: xp.zeros(4, "M8[s]") == numpy.zeros(4), id="datetime-eq-float"),
    pytest.param(lambda xp: xp.zeros(4, "M8[s]") != xp.zeros(4), id="datetime-ne-float"),
    pytest.param(lambda xp: xp.arange(3) < "a", id="lt-refused"),
    pytest.param(lambda xp: xp.arange(3) == xp.arange(2), id="shapes-refused"),
])
def test_equality_of_what_no_loop_compares_is_numpys(run, operator_path):
    _agree(run)
    want = _outcome(numpy, run)
    if want is numpy.False_ or want is numpy.True_:
        assert run(dispatch) is want  # NumPy's singletons


@pytest.mark.parametrize("version", ["2021.12", "2024.12", None, "2025.12", "1.0"])
def test_array_namespace_checks_the_version_asked_as_numpys(version):
    _agree(lambda xp: xp.arange(2).__array_namespace__(api_version=version) is xp)


def test_array_with_an_equal_dtype_of_its_own_copies_where_numpy_must():
    # StringDType instances with their own allocators: equal, yet a copy is made, and refused under copy=False
    strings = ["a", "bb" * 10, "ccc"]
    a, other = dispatch.array(strings, dtype=numpy.dtypes.StringDType()), numpy.array(strings[::-1], dtype="T")
    got = dispatch.array(a, copy=None, dtype=other.dtype)
    assert got.base is None and got.tolist() == strings
    _agree(lambda xp: xp.array(xp.asarray(numpy.array(strings, dtype="T")), copy=False, dtype=other.dtype))
    assert dispatch.array(a, copy=None, dtype=a.dtype) is a


# ---- copy.copy and copy.deepcopy as NumPy's: the memory order kept, object elements deep-copied ---------

def _deep_copied_objects(xp):
    a = xp.array([[{"a": 1}, {"b": 2}]] * 2, order="F")
    c = copy.deepcopy(a)
    return c[0, 1] is not a[0, 1], c[0, 1] is c[1, 1], c.flags.f_contiguous


@pytest.mark.parametrize("run", [
    pytest.param(lambda xp: copy.copy(xp.empty((2, 3), order="F")).flags.f_contiguous, id="copy-F"),
    pytest.param(lambda xp: copy.deepcopy(xp.empty((2, 3), order="F")).flags.f_contiguous, id="deepcopy-F"),
    pytest.param(_deep_copied_objects, id="deepcopy-objects"),
])
def test_copy_module_as_numpys(run):
    _agree(run)


def test_deepcopy_raises_what_an_element_raises():
    class Refuses:
        def __deepcopy__(self, memo):
            raise RuntimeError("no")

    with pytest.raises(RuntimeError):
        copy.deepcopy(dispatch.array([1, Refuses(), 3], dtype="O"))


# ---- an object array holds the dispatch arrays given, as NumPy's holds the arrays given ------------------

def _objects_kept(xp):
    items = [None, xp.array([3]), xp.float64(3), xp.array(10), xp.float64(7)]
    held = xp.array(items, dtype=object)
    zero = xp.array(0.0)
    one = xp.empty(1, dtype=object)
    one[0] = items[1]
    filled = xp.arange(1, dtype="O")
    filled[:] = [zero]
    return ([x is y for x, y in zip(held, items, strict=True)], xp.array([zero], "O")[0] is zero, one[0] is items[1],
            filled[0] is zero, xp.array([xp.zeros((2, 2))] * 2, dtype="object").shape)


def test_an_object_array_holds_the_arrays_given(operator_path):
    _agree(_objects_kept)


# ---- an out given by position comes back itself, one of a tuple's too ------------------------------------

def _outs_by_position(xp):
    a, o = xp.array(0.5), xp.empty(())
    d, o1, o2 = xp.array(5.7), xp.empty(()), xp.empty((), dtype=xp.int32)
    x = xp.arange(3.0)
    return (xp.add(a, 2, o) is o, xp.frexp(d, o1, None)[0] is o1, xp.frexp(d, None, o2)[1] is o2,
            [r is w for r, w in zip(xp.frexp(d, o1, o2), (o1, o2), strict=True)], xp.add(x, 1, x) is x,
            xp.sin(x, x) is x, xp.add(a, 2, out=(o,)) is o)


def test_an_out_by_position_comes_back_itself(operator_path):
    _agree(_outs_by_position)


def test_numpys_own_function_hands_back_the_array_it_wrote(operator_path):
    # numpy.nan_to_num(a, copy=False) writes into a and returns it: through __array_function__, a itself
    with numpy.errstate(divide="ignore", invalid="ignore"):
        a = dispatch.array((-1.0, 0.0, 1.0)) / 0.0
    assert numpy.nan_to_num(a, copy=False) is a
    assert numpy.isfinite(numpy.asarray(a)).all()


@pytest.mark.parametrize("run", [
    pytest.param(lambda xp: xp.array(type("NoArray", (), {"__array__": lambda self, dtype=None, copy=None: None})()),
                 id="__array__-gives-None"),
    pytest.param(lambda xp: (lambda o: (o.__setitem__(0, xp.array(1.2)), xp.array([o], dtype="S"))[1])(
        xp.array([None])), id="0-d-in-objects-cast-to-bytes"),
])
def test_what_an_object_array_and___array__give_stays_numpys(run, operator_path):
    _agree(run)


# ---- array-likes that are also sequences, nested in lists ------------------------------------------------

def _sequence_like(xp, values):
    """An array-like written against ``xp`` that is also a sequence NumPy must not read as one."""
    class SequenceLike:
        def __array__(self, dtype=None, copy=None):
            a = xp.asarray(values)
            return a if dtype is None else a.astype(dtype)

        def __len__(self):
            raise TypeError("not a sequence")

        def __getitem__(self, _, /):
            raise TypeError("not a sequence")
    return SequenceLike()


def _held(xp, make):
    """What an object array NumPy builds from a list holding ``obj`` keeps: the object itself."""
    obj = _sequence_like(xp, make(xp))
    a = xp.array([obj], dtype=object)
    b = xp.arange(1, dtype=object)
    b[:] = [obj]
    ragged = xp.array([obj, [obj]], dtype=object)
    return a.shape, a[0] is obj, b[0] is obj, ragged.shape, ragged[0] is obj, type(ragged[1]), ragged[1][0] is obj


@pytest.mark.parametrize("run", [
    pytest.param(lambda xp: _held(xp, lambda xp: xp.array(0.0)), id="0-d-held"),
    pytest.param(lambda xp: _held(xp, lambda xp: xp.arange(4).reshape(2, 2)), id="2-d-held"),
    pytest.param(lambda xp: xp.array([_sequence_like(xp, xp.ones((0, 0)))]), id="2-d-read-through-__array__"),
    pytest.param(lambda xp: xp.array([_sequence_like(xp, [[1, 2], [3, 4]])] * 2, dtype=float), id="float"),
    pytest.param(lambda xp: xp.array(_sequence_like(xp, [1.5, 2.0]), dtype=object), id="alone-as-objects"),
    pytest.param(lambda xp: xp.array([_sequence_like(xp, (lambda o: (o.__setitem__(0, xp.array(1.2)), o)[1])(
        xp.array([None])))], dtype="S"), id="first-level-unpacked"),
    pytest.param(lambda xp: xp.array([[[_sequence_like(xp, xp.ones((1, 1)))]]] * 2, dtype="float64"), id="deep"),
])
def test_sequence_likes_read_through___array___as_numpys(run, operator_path):
    _agree(run)


def test_too_deep_array_likes_raise_numpys_error():
    for xp in (numpy, dispatch):
        nested = _sequence_like(xp, xp.ones((1, 1)))
        for _ in range(63):  # one fewer than the most dimensions NumPy takes
            nested = [nested]
        with pytest.raises(ValueError, match="would exceed the maximum"):
            xp.array(nested, dtype="float64")


def test_a_list_holding_itself_is_numpys_object_array():
    def run(xp):
        held = []
        held.append(held)
        a = xp.array([held, held], dtype=object)
        return a.shape, a[0] is held
    _agree(run)


def _poly(p):
    return type(p).__name__, numpy.asarray(p).tolist()


@pytest.mark.parametrize("run", [
    pytest.param(lambda xp: _poly(xp.polyder(xp.poly1d([1.0, 2.0, 3.0]))), id="polyder"),
    pytest.param(lambda xp: _poly(xp.polyint(xp.poly1d([1.0, 2.0]))), id="polyint"),
    pytest.param(lambda xp: tuple(map(_poly, xp.polydiv(xp.poly1d([1.0, 2.0, 3.0]), xp.poly1d([1.0, 1.0])))),
                 id="polydiv"),
    pytest.param(lambda xp: _poly(xp.polyadd(xp.poly1d([1.0, 2.0]), xp.array([1.0, 0.0, 0.0]))), id="polyadd"),
    pytest.param(lambda xp: _poly(xp.polyval(xp.array([1.0, 2.0]), xp.poly1d([1.0, 0.0]))), id="polyval-of-poly1d"),
])
def test_numpys_own_array_likes_are_handed_as_they_are(run):
    """NumPy's functions tell a ``poly1d`` by ``isinstance`` and give one back; they get it itself."""
    _agree(run)


# ---- np.rec of dispatch arrays -------------------------------------------------------------------------

def _records(xp):
    return xp.array([(1, 0.1), (2, 0.2)], dtype=[("foo", "<i4"), ("bar", "<f8")])


def _rec_copies(xp, copy):
    a = _records(xp)
    r = xp.rec.array(a, copy=copy)
    r["foo"] = 7
    return numpy.asarray(a)["foo"].tolist()


@pytest.mark.parametrize("run", [
    pytest.param(lambda xp: (lambda r: (type(r), r.dtype.type, r.dtype, r.foo.tolist(), repr(r)))(
        xp.rec.array(_records(xp))), id="structured"),
    pytest.param(lambda xp: (lambda r: (type(r), r.dtype, repr(r)))(xp.rec.array(xp.ones(3, dtype="i4"))), id="plain"),
    pytest.param(lambda xp: xp.rec.array(_records(xp), dtype=[("x", "<i4"), ("y", "<f8")]).x.tolist(), id="dtype"),
    pytest.param(lambda xp: _rec_copies(xp, True), id="copy"),
    pytest.param(lambda xp: _rec_copies(xp, False), id="no-copy-writes-through"),
    pytest.param(lambda xp: (lambda r: (type(r), r.dtype, r.f1.tolist()))(
        xp.rec.fromarrays([xp.arange(3), xp.arange(3.0)])), id="fromarrays"),
    pytest.param(lambda xp: xp.rec.array(object()), id="unknown-refused"),
])
def test_rec_reads_dispatch_arrays_as_numpys(run):
    _agree(run)


def test_rec_is_importable_with_numpys_names():
    import dispatch.rec as rec

    assert dispatch.rec is rec
    assert sorted(rec.__all__) == sorted(numpy.rec.__all__)
    assert rec.recarray is numpy.recarray and rec.record is numpy.record


# ---- the user's function that NumPy's functions call is given the module's arrays ---------------------

def _seen(xp, kinds):
    """A function noting whether each array it is given is ``xp``'s array type."""
    def f(x, *args):
        kinds.append(type(x) is xp.ndarray and all(type(a) is xp.ndarray for a in args))
        return x
    return f


def _applied(xp, run):
    kinds = []
    result = run(xp, _seen(xp, kinds))
    return numpy.asarray(result).tolist(), result.dtype, type(result) is xp.ndarray, all(kinds) and bool(kinds)


@pytest.mark.parametrize("run", [
    pytest.param(lambda xp: _applied(xp, lambda xp, f: xp.apply_along_axis(
        lambda x: f(x)[::-1] * x[1:, None], 0, xp.arange(18).reshape(6, 3))), id="apply_along_axis"),
    pytest.param(lambda xp: xp.apply_along_axis(lambda x: (x[::-1] * x[1:, None]).view(xp.ndarray), 1,
                                                xp.arange(18).reshape(6, 3)), id="apply_along_axis-view"),
    pytest.param(lambda xp: _applied(xp, lambda xp, f: numpy.apply_along_axis(
        lambda x, y: f(x, y) * y, 1, xp.arange(6.0).reshape(2, 3), xp.arange(3.0))), id="numpys-apply_along_axis"),
    pytest.param(lambda xp: _applied(xp, lambda xp, f: xp.apply_over_axes(
        lambda a, axis: xp.sum(f(a), axis), xp.arange(24).reshape(2, 3, 4), [0, 2])), id="apply_over_axes"),
    pytest.param(lambda xp: _applied(xp, lambda xp, f: xp.piecewise(
        xp.linspace(-2.0, 2.0, 5), [xp.linspace(-2.0, 2.0, 5) < 0], [lambda v: -f(v), 7.0])), id="piecewise"),
])
def test_callbacks_are_given_the_modules_arrays(run, operator_path):
    _agree(run)


# ---- a ufunc pickles, resolves dtypes and takes a docstring as NumPy's ------------------------------------

@pytest.mark.parametrize("name", ["sin", "add", "abs", "absolute", "matmul"])
def test_a_ufunc_pickles_as_itself(name):
    import pickle

    _agree(lambda xp: [pickle.loads(pickle.dumps(getattr(xp, name), protocol=p)) is getattr(xp, name)
                       for p in range(pickle.HIGHEST_PROTOCOL + 1)])


@pytest.mark.parametrize("run", [
    pytest.param(lambda xp: xp.add.resolve_dtypes((xp.dtype("f4"), xp.dtype("i8"), None)), id="call"),
    pytest.param(lambda xp: xp.add.resolve_dtypes((xp.dtype("f4"), xp.dtype("i8"), None), casting="no"), id="casting"),
    pytest.param(lambda xp: xp.add.resolve_dtypes((None, xp.dtype("i4"), xp.dtype("i4")), reduction=True),
                 id="reduction"),
    pytest.param(lambda xp: xp.add.resolve_dtypes((xp.dtype("f4"), xp.dtype("i8"), None), signature=(None, None, "f8")),
                 id="signature"),
    pytest.param(lambda xp: xp.add.resolve_dtypes((1, 2, 3)), id="refused"),
    pytest.param(lambda xp: str(__import__("inspect").signature(xp.ufunc.resolve_dtypes)), id="signature-shown"),
])
def test_ufunc_resolve_dtypes_as_numpys(run):
    _agree(run)


def test_a_ufuncs_docstring_is_set_and_deleted_as_numpys():
    def run(xp):
        original = xp.add.__doc__
        xp.add.__doc__ = "new docs"
        seen = (xp.add.__doc__, xp.add.__dict__["__doc__"])
        del xp.add.__doc__
        return seen, xp.add.__doc__ == original, sorted(xp.add.__dict__)
    _agree(run)


@pytest.mark.parametrize("args", [(1, 2), (1, "reduce"), ("add", "foo")], ids=["not-names", "not-a-ufunc", "no-method"])
def test_a_direct___array_ufunc___call_refuses_as_numpys(args):
    _agree(lambda xp: xp.array(1).__array_ufunc__(*[getattr(xp, a) if a == "add" else a for a in args[:1]],
                                                   *args[1:], xp.array(1)))


# ---- a ufunc's result is wrapped by an operand's __array_wrap__, by priority, as NumPy's -----------------

def _wrapping_classes(xp):
    class A:
        def __array__(self, dtype=None, copy=None):
            return xp.zeros(1)

        def __array_wrap__(self, arr, context=None, return_scalar=False):
            r = type(self)()
            r.arr, r.context = arr, context
            return r

    class B(A):
        __array_priority__ = 20.0

    class C(A):
        __array_priority__ = 40.0

    return A(), B(), C()


def _wrapped_by(xp, ufunc):
    x, (a, b, c) = xp.zeros(1), _wrapping_classes(xp)
    f = ufunc(xp)
    pairs = [(x, x), (x, a), (x, b), (x, c), (a, x), (b, x), (c, x)]
    return [type(f(*p)).__name__ for p in pairs], numpy.asarray(f(x, a).arr).tolist(), f(x, c).context[2]


@pytest.mark.parametrize("ufunc", [
    pytest.param(lambda xp: xp.minimum, id="module"),
    pytest.param(lambda xp: numpy._core.umath.minimum, id="numpys"),
    pytest.param(lambda xp: lambda *args: xp.add(*args, out=None), id="out-None"),
])
def test_an_operands___array_wrap___wraps_a_ufuncs_result(ufunc, operator_path):
    _agree(lambda xp: _wrapped_by(xp, ufunc))


# ---- random: pickles by NumPy's constructors, NumPy's bit generators, the user's seed sequence ---------

def _old_style_pickles(xp):
    rs = xp.random.RandomState(xp.random.MT19937(0))
    rs.standard_normal(1)
    ctor, args, state = rs.__reduce__()
    b = ctor("MT19937")
    b.set_state(state)
    rg = xp.random.Generator(xp.random.PCG64DXSM(0))
    rg.standard_normal(1)
    gctor, (bit_gen,), _ = rg.__reduce__()
    c = gctor("PCG64DXSM")
    c.bit_generator.state = bit_gen.state
    return (args[0].__class__.__name__, bit_gen.__class__.__name__, type(b) is xp.random.RandomState,
            type(c) is xp.random.Generator, b.standard_normal(3).tolist() == rs.standard_normal(3).tolist(),
            c.random(3).tolist() == rg.random(3).tolist())


def _round_trips(xp):
    import copy
    import pickle

    rng, legacy = xp.random.default_rng(7), xp.random.RandomState(7)
    rng.random(5)
    legacy.random(5)
    out = []
    for r in (rng, legacy):
        for again in (pickle.loads(pickle.dumps(r)), copy.deepcopy(r), copy.copy(r)):
            out.append((type(again) is type(r), again.random(3).tolist() == copy.deepcopy(r).random(3).tolist()))
    return out


def _users_seed_sequence(xp):
    from numpy.random.bit_generator import ISeedSequence

    class FakeSeedSequence:
        def generate_state(self, n_words, dtype=xp.uint32):
            return xp.zeros(n_words, dtype=dtype)

    ISeedSequence.register(FakeSeedSequence)
    rngs = [xp.random.default_rng(FakeSeedSequence()), xp.random.Generator(xp.random.PCG64(FakeSeedSequence())),
            xp.random.Generator(xp.random.MT19937(seed=FakeSeedSequence()))]
    draws = [r.random(2).tolist() for r in rngs]
    refused = []
    for r in rngs:
        for spawn in (r.spawn, r.bit_generator.spawn):
            refused.append(_outcome(xp, lambda xp, spawn=spawn: spawn(2)))
    return draws, refused


@pytest.mark.parametrize("run", [
    pytest.param(_old_style_pickles, id="old-style-pickles"),
    pytest.param(_round_trips, id="round-trips"),
    pytest.param(lambda xp: [isinstance(g, getattr(xp.random, name)) for name, g in (
        ("PCG64", numpy.random.default_rng(0).bit_generator), ("PCG64", numpy.random.PCG64()),
        ("MT19937", numpy.random.PCG64()), ("SeedSequence", numpy.random.SeedSequence(1)),
        ("PCG64", xp.random.default_rng(0).bit_generator))], id="numpys-bit-generators"),
    pytest.param(_users_seed_sequence, id="users-seed-sequence"),
])
def test_random_objects_pickle_and_seed_as_numpys(run):
    _agree(run)


# ---- np.char.array and asarray of dispatch arrays ------------------------------------------------------

def _chararrays(xp, values, **kwargs):
    a = xp.array(values)
    b, c = xp.char.array(a, **kwargs), xp.char.asarray(a, **kwargs)
    c[0, 0] = "changed"
    return (type(b), b.dtype, b.shape, numpy.asarray(b).tolist(), type(c), numpy.asarray(a)[0, 0],
            numpy.asarray(b)[0, 0])


@pytest.mark.parametrize("run", [
    pytest.param(lambda xp: _chararrays(xp, [[b"abc", b"foo"], [b"long   ", b"0123456789"]]), id="bytes"),
    pytest.param(lambda xp: _chararrays(xp, [["abc", "Sigma \u03a3"], ["long   ", "0123456789"]]), id="str"),
    pytest.param(lambda xp: _chararrays(xp, [["abc", "Sigma \u03a3"], ["long   ", "0123456789"]], unicode=True),
                 id="str-unicode"),
    pytest.param(lambda xp: _chararrays(xp, [["abc", "x"], ["y", "z"]], itemsize=2), id="itemsize"),
    pytest.param(lambda xp: (lambda r: (type(r), r.dtype, r.tolist()))(xp.char.array([xp.array("ab"), "c"])),
                 id="list-of-arrays"),
])
def test_char_array_reads_dispatch_arrays_as_numpys(run):
    _agree(run)


@pytest.mark.parametrize("args", [
    pytest.param(lambda a: (a, (2, 1)), id="args-not-a-tuple"),
    pytest.param(lambda a: ((a,), (2, 1)), id="kwargs-not-a-dict"),
    pytest.param(lambda a: ((a, (2, 1)), {}), id="right"),
])
def test_a_direct___array_function___call_checks_its_arguments_as_numpys(args):
    _agree(lambda xp: (lambda a: a.__array_function__(numpy.reshape, (xp.ndarray,), *args(a)))(xp.array([1, 2])))


def test_a_deprecated_name_warns_at_each_access_as_numpys():
    import warnings

    def run(xp):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for _ in range(3):
                assert xp.chararray is numpy.char.chararray
            missing = [hasattr(xp, name) for name in ("str", "bytes", "object", "float")]
        return missing, [(w.category, str(w.message), w.filename == __file__) for w in caught]
    _agree(run)


# ---- an operand that overrides ufuncs, or asks to go first, meets NumPy's operator rules ----------------

def _operand(priority=None, array_ufunc=False):
    """NumPy's own test's operand: every operator of its own, __array__ refusing."""
    namespace = {"__array__": lambda self, dtype=None, copy=None: (_ for _ in ()).throw(LookupError("coerced"))}
    if priority is not None:
        namespace["__array_priority__"] = priority
    for op in ("add", "sub", "mul", "matmul", "divmod", "lt"):
        namespace[f"__{op}__"] = lambda self, other: "forward"
        namespace[f"__r{op}__"] = lambda self, other: "reverse"
        namespace[f"__i{op}__"] = lambda self, other: "in-place"
    if array_ufunc is not False:
        namespace["__array_ufunc__"] = array_ufunc
    return type("Operand", (), namespace)()


def _told(self, ufunc, method, *args, **kwargs):
    return "__array_ufunc__", ufunc.__name__, method, len(args), sorted(kwargs)


def _operators_on(xp, obj):
    arr = xp.arange(3.0, 7.0).reshape(2, 2)
    out = {}
    for name in ("add", "sub", "mul", "matmul", "divmod", "lt"):
        for method in (f"__{name}__", f"__r{name}__", f"__i{name}__"):
            if not hasattr(arr, method):
                continue
            got = _outcome(xp, lambda xp, m=method: getattr(arr, m)(obj))
            if isinstance(got, tuple) and len(got) == 5 and method.startswith("__i"):
                assert got[-1] == ["out"] or got[-1] == ["axes", "out"]
            out[method] = got if not isinstance(got, tuple) or got[:1] != (LookupError,) else "coerced"
    return out


@pytest.mark.parametrize("obj", [
    pytest.param(lambda: _operand(), id="plain"),
    pytest.param(lambda: _operand(priority=1), id="priority"),
    pytest.param(lambda: _operand(priority=-2.0**30), id="low-priority"),
    pytest.param(lambda: _operand(priority=1, array_ufunc=_told), id="override"),
    pytest.param(lambda: _operand(array_ufunc=None), id="override-None"),
])
def test_operators_meet_an_operand_as_numpys(obj, operator_path):
    _agree(lambda xp: _operators_on(xp, obj()))
