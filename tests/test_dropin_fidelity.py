"""``import dispatch as np`` behaves as NumPy where programs and NumPy's own tests look closely:
testing helpers, foreign ufuncs, strings, array protocols, namespaces, subclasses, object arrays,
sklearn's dtype checks and warnings. NumPy (or stock scikit-learn) is the reference throughout."""

from __future__ import annotations

import numpy
import pytest

import dispatch


def _same(got, want):
    """``got`` is what NumPy's ``want`` is under dispatch: a dispatch array for a NumPy array
    (same dtype, shape and values), else an object of NumPy's type and value."""
    if type(want) is numpy.ndarray:
        assert type(got) is dispatch.ndarray, type(got)
        host = numpy.asarray(got)
        assert host.dtype == want.dtype and host.shape == want.shape, (host.dtype, host.shape, want.dtype, want.shape)
        numpy.testing.assert_array_equal(host, want)
    else:
        assert type(got) is type(want), (type(got), type(want))
        numpy.testing.assert_array_equal(numpy.asarray(got), numpy.asarray(want))


def _torch_cpu():
    """Force torch-cpu, or skip where torch is not installed."""
    pytest.importorskip("torch")
    return dispatch.using("torch-cpu")


# ---- ufuncs that are not NumPy's ------------------------------------------------------------------

_pyadd = numpy.frompyfunc(lambda x, y: x + y, 2, 1)
_pyinc = numpy.frompyfunc(lambda x: x + 1, 1, 1)


@pytest.mark.parametrize("call", [
    pytest.param(lambda xp, a: _pyinc(a), id="frompyfunc"),
    pytest.param(lambda xp, a: _pyadd(a, a), id="frompyfunc-binary"),
    pytest.param(lambda xp, a: _pyadd.reduce(a.astype(object)), id="frompyfunc-reduce"),
    pytest.param(lambda xp, a: _pyadd.accumulate(a.astype(object)), id="frompyfunc-accumulate"),
    pytest.param(lambda xp, a: xp.strings.str_len(a.astype(str)), id="strings.str_len"),
])
def test_a_ufunc_that_is_not_numpys_runs_on_numpy(call):
    a = numpy.arange(6.0)
    _same(call(dispatch, dispatch.asarray(a)), call(numpy, a))


def test_a_third_party_ufunc_runs_on_numpy():
    special = pytest.importorskip("scipy.special")
    a = numpy.linspace(-2.0, 2.0, 7)
    _same(special.erf(dispatch.asarray(a)), special.erf(a))
    with _torch_cpu():
        _same(special.erf(dispatch.asarray(numpy.linspace(-2.0, 2.0, 100_000))),
              special.erf(numpy.linspace(-2.0, 2.0, 100_000)))


# ---- strings and bytes ------------------------------------------------------------------------------

@pytest.mark.parametrize("target", ["numpy", "torch-cpu"])
@pytest.mark.parametrize("call", [
    pytest.param(lambda xp: xp.array(["a", "b"]) == "a", id="str=="),
    pytest.param(lambda xp: "a" != xp.array(["a", "b"]), id="str!=reflected"),
    pytest.param(lambda xp: xp.array(["a", "b"]) < "b", id="str<"),
    pytest.param(lambda xp: xp.array([b"a", b"b"]) == b"a", id="bytes=="),
    pytest.param(lambda xp: xp.char.add(xp.array(["a", "c"]), "b"), id="char.add"),
    pytest.param(lambda xp: numpy.char.add(xp.array([b"a", b"c"]), b"b"), id="numpy.char.add-bytes"),
    pytest.param(lambda xp: numpy.strings.add("x", xp.array(["a", "c"])), id="numpy.strings.add"),
])
def test_string_operands_compare_and_add_element_wise(target, call):
    if target == "torch-cpu":
        pytest.importorskip("torch")
    with dispatch.using(target):
        _same(call(dispatch), call(numpy))


def test_a_mask_from_a_string_field_selects_records():
    dtype = [("name", "U5"), ("age", int)]
    rows = [("bob", 31), ("al", 40), ("bob", 7)]
    s, ref = dispatch.array(rows, dtype=dtype), numpy.array(rows, dtype=dtype)
    _same(s[s["name"] == "bob"], ref[ref["name"] == "bob"])


# ---- numpy.testing on dispatch arrays -------------------------------------------------------------

@pytest.mark.parametrize(("module", "name"), [
    (module, name) for module in ("numpy.testing", "dispatch.testing", "numpy.ma.testutils")
    for name in ("assert_equal", "assert_almost_equal")])
def test_numpys_asserts_compare_dispatch_arrays(module, name):
    import importlib

    check = getattr(importlib.import_module(module), name)
    a = dispatch.arange(6.0).reshape(2, 3)
    check(a, numpy.arange(6.0).reshape(2, 3))
    check(a.sum(), 15.0)
    with pytest.raises(AssertionError):
        check(a, a + 1.0)
    if name == "assert_equal":  # nested, as NumPy's own tests pass them
        check([a, {"k": a}], [a.copy(), {"k": numpy.asarray(a)}])
        with pytest.raises(AssertionError):
            check({"k": a}, {"k": a * 2.0})


def test_numpy_ma_testutils_fail_if_equal_on_dispatch_arrays():
    from numpy.ma import testutils

    a = dispatch.arange(3.0)
    testutils.fail_if_equal(a, [0.0, 1.0, 3.0])
    with pytest.raises(AssertionError):
        testutils.fail_if_equal(a, [0.0, 1.0, 2.0])


# ---- NumPy's submodules are modules of dispatch ------------------------------------------------------

@pytest.mark.parametrize("name", ["lib", "lib.stride_tricks", "ma", "polynomial", "polynomial.polynomial",
                                  "strings", "testing", "emath", "typing", "exceptions", "dtypes",
                                  "ctypeslib"])
def test_numpy_submodules_import_under_dispatch(name):
    import importlib

    module = importlib.import_module(f"dispatch.{name}")
    obj = numpy
    for part in name.split("."):
        obj = getattr(obj, part)
    assert module is obj  # NumPy's own module, as the attribute is
    attribute = dispatch
    for part in name.split("."):
        attribute = getattr(attribute, part)
    assert attribute is module


def test_from_imports_of_numpy_submodules():
    from dispatch.lib.stride_tricks import as_strided
    from dispatch.ma import masked_array

    assert as_strided is numpy.lib.stride_tricks.as_strided and masked_array is numpy.ma.masked_array
    with pytest.raises(ModuleNotFoundError):
        import dispatch.no_such_module
    import dispatch.linalg

    assert dispatch.linalg.__name__ == "dispatch.linalg"  # dispatch's own module wins


# ---- namespace functions stored on a class -------------------------------------------------------------

def _binds(f):
    """Whether a class holding ``f`` binds it as a method."""
    import types

    got = type("Holder", (), {"f": f})().f
    return isinstance(got, types.MethodType)


@pytest.mark.parametrize("name", ["array", "asarray", "asanyarray", "zeros", "empty", "arange", "ascontiguousarray"])
def test_numpys_builtins_are_not_bound_on_a_class(name):
    """``class T: array = np.array``: NumPy's builtins stay functions there."""
    args = {"zeros": (3,), "empty": (0,), "arange": (4,)}.get(name, ([1, 2],))
    holder = type("Holder", (), {"f": getattr(dispatch, name)})
    reference = type("Holder", (), {"f": getattr(numpy, name)})
    want = reference().f(*args)
    _same(holder().f(*args), want)
    _same(holder.f(*args), want)
    _same(holder().f(*args, dtype=numpy.float32), reference().f(*args, dtype=numpy.float32))


@pytest.mark.parametrize("module", ["", "linalg", "fft"])
def test_namespace_functions_bind_as_numpys_do(module):
    """Every callable of the namespace binds on a class exactly where NumPy's does (its
    Python-level functions do, its builtins and ufuncs do not)."""
    mine = _lookup(dispatch, module) if module else dispatch
    theirs = _lookup(numpy, module) if module else numpy
    names = [n for n in dir(theirs) if not n.startswith("_") and hasattr(mine, n)]
    differ = [n for n in names
              if callable(getattr(theirs, n)) and not isinstance(getattr(theirs, n), type)
              and _binds(getattr(mine, n)) != _binds(getattr(theirs, n))]
    assert not differ


def _lookup(module, dotted):
    for part in dotted.split("."):
        module = getattr(module, part)
    return module


@pytest.mark.parametrize("name", ["array", "sum", "shape"])
def test_namespace_functions_pickle_and_read_as_numpys(name):
    import pickle

    f = getattr(dispatch, name)
    assert pickle.loads(pickle.dumps(f)) is f
    assert f.__doc__ == getattr(numpy, name).__doc__  # help() shows NumPy's text
    assert f.__name__ == name


def test_version_is_numpys():
    import importlib.metadata

    assert dispatch.__version__ == numpy.__version__
    assert dispatch.__dispatch_version__ == importlib.metadata.version("dispatch-accel")


# ---- subclasses of numpy.ndarray and masked arrays stay NumPy's ----------------------------------------

class _Tagged(numpy.ndarray):
    """A user's ndarray subclass."""


def _same_numpy(got, want):
    """``got`` is exactly NumPy's ``want``: its type, dtype, shape, values and, for a masked
    array, its mask (a plain NumPy array is a dispatch array, as every result)."""
    if type(want) is numpy.ndarray:
        return _same(got, want)
    assert type(got) is type(want), (type(got), type(want))
    if isinstance(want, numpy.ma.MaskedArray):
        numpy.testing.assert_array_equal(numpy.ma.getmaskarray(got), numpy.ma.getmaskarray(want))
        got, want = got.filled(0), want.filled(0)
    assert numpy.shape(got) == numpy.shape(want) and numpy.asarray(got).dtype == numpy.asarray(want).dtype
    numpy.testing.assert_allclose(numpy.asarray(got), numpy.asarray(want), rtol=1e-12)


@pytest.mark.parametrize("target", ["auto", "torch-cpu"])
@pytest.mark.parametrize("name", ["sum", "mean", "prod", "max", "min", "std", "cumsum", "sqrt", "add"])
def test_masked_arrays_keep_their_mask(target, name):
    """NumPy's functions on a ``numpy.ma.MaskedArray`` of 100,000 elements honour its mask on
    every target (the sum of the unmasked half, not of all)."""
    if target != "auto":
        pytest.importorskip("torch")
    data = numpy.linspace(0.5, 1.5, 100_000)
    masked = numpy.ma.array(data, mask=numpy.arange(data.size) % 2 == 0)
    args = (masked, 1.0) if name == "add" else (masked,)
    with dispatch.using(target) if target != "auto" else _nothing():
        got = getattr(dispatch, name)(*args)
    _same_numpy(got, getattr(numpy, name)(*args))


def _nothing():
    import contextlib

    return contextlib.nullcontext()


@pytest.mark.parametrize("name", ["sum", "mean", "sqrt", "add", "cumsum", "transpose", "concatenate"])
def test_an_ndarray_subclass_gets_numpys_result_and_type(name):
    with _torch_cpu():
        base = numpy.linspace(1.0, 2.0, 200_000).reshape(400, 500)
        sub = base.view(_Tagged)
        args = {"add": (sub, 1.0), "concatenate": ([sub, sub],)}.get(name, (sub,))
        _same_numpy(getattr(dispatch, name)(*args), getattr(numpy, name)(*args))


@pytest.mark.parametrize("name", ["linalg.inv", "linalg.det", "linalg.solve", "dot", "matmul", "linalg.qr"])
def test_linalg_of_a_matrix_or_subclass_keeps_numpys_type(name):
    with _torch_cpu():
        m = numpy.matrix(numpy.eye(3) * 2.0 + 0.5)
        args = (m, m) if name in ("linalg.solve", "dot", "matmul") else (m,)
        got, want = _lookup(dispatch, name)(*args), _lookup(numpy, name)(*args)
        if isinstance(want, tuple):
            for g, w in zip(got, want, strict=True):
                _same_numpy(g, w)
        else:
            _same_numpy(got, want)


def test_a_dispatch_array_with_a_masked_array_is_numpys_mix():
    with _torch_cpu():
        a = numpy.linspace(0.0, 1.0, 100_000)
        masked = numpy.ma.array(a, mask=a > 0.5)
        _same_numpy(dispatch.add(dispatch.asarray(a), masked), numpy.add(a, masked))
        _same_numpy(numpy.add(dispatch.asarray(a), masked), numpy.add(a, masked))  # NumPy's ufunc, dispatch's array


# ---- object arrays holding dispatch arrays ----------------------------------------------------------------

@pytest.mark.parametrize("expression", ["obj + 1.0", "1.0 - obj", "obj + obj2", "obj * 2.0", "(obj + 1.0) + 1.0",
                                        "obj ** 2"])
def test_object_arrays_of_dispatch_arrays_are_never_written(operator_path, expression):
    """NumPy's loop over an object array holds each element through a borrowed reference, which
    shows a temporary's reference count: an element of 320 KB must not be taken for a temporary
    and written into."""
    n = 40_000  # 320 KB of float64: over the 256 KiB where temporaries are reused
    values = [numpy.linspace(0.0, 1.0, n), numpy.linspace(2.0, 3.0, n)]
    obj, obj2 = numpy.empty(2, dtype=object), numpy.empty(2, dtype=object)
    ref, ref2 = numpy.empty(2, dtype=object), numpy.empty(2, dtype=object)
    for i, v in enumerate(values):
        obj[i], obj2[i] = dispatch.asarray(v.copy()), dispatch.asarray(v[::-1].copy())  # held by the arrays alone
        ref[i], ref2[i] = v.copy(), v[::-1].copy()
    got = eval(expression, {"obj": obj, "obj2": obj2})
    want = eval(expression, {"obj": ref, "obj2": ref2})
    for i in range(2):
        _same(obj[i], ref[i])  # the user's data, unchanged
        _same(obj2[i], ref2[i])
        _same(got[i], want[i])
        assert got[i] is not obj[i] and got[i] is not obj2[i]


# ---- scikit-learn, accelerated, on complex data --------------------------------------------------------------

@pytest.mark.parametrize("estimator", ["StandardScaler", "Ridge", "PCA", "LinearRegression"])
def test_accelerated_sklearn_refuses_complex_data_as_stock_does(estimator):
    """Routed to torch-cpu, scikit-learn's check for complex data cannot see torch's dtype: the
    data must stay on NumPy, where stock scikit-learn raises, rather than fit on its real part."""
    pytest.importorskip("sklearn")
    import sklearn.decomposition
    import sklearn.linear_model
    import sklearn.preprocessing

    import dispatch.sklearn as ds

    make = next(getattr(m, estimator) for m in (sklearn.preprocessing, sklearn.linear_model, sklearn.decomposition)
                if hasattr(m, estimator))
    rng = numpy.random.default_rng(0)
    X = rng.standard_normal((3000, 6)) + 1j * rng.standard_normal((3000, 6))
    y = numpy.arange(3000.0)
    with pytest.raises(ValueError, match="Complex data not supported") as stock:
        make().fit(X, y)
    with ds.accelerated(), _torch_cpu(), pytest.raises(ValueError, match="Complex data not supported") as mine:
        make().fit(X, y)
    assert type(mine.value) is type(stock.value)


# ---- warnings name the caller's line ----------------------------------------------------------------------

_WARNS = {
    "log": lambda xp, n: xp.log(xp.linspace(-1.0, 1.0, n)),
    "divide": lambda xp, n: xp.ones(n) / 0.0,
    "reflected": lambda xp, n: 1.0 / xp.zeros(n),
    "nanmean": lambda xp, n: xp.nanmean(xp.full(n, numpy.nan)),
    "sqrt": lambda xp, n: xp.sqrt(-xp.ones(n)),
}


@pytest.mark.parametrize(("target", "n", "name"), [
    *(("auto", n, name) for n in (3, 300_000) for name in sorted(_WARNS)),
    ("torch-cpu", 300_000, "nanmean"),  # (torch's own arithmetic raises no floating-point warnings)
])
def test_warnings_point_at_the_callers_line(operator_path, target, n, name):
    import warnings

    if target != "auto":
        pytest.importorskip("torch")

    def caught(xp):
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            _WARNS[name](xp, n)
        return [(w.category, str(w.message), w.filename, w.lineno) for w in seen]

    want = caught(numpy)
    with dispatch.using(target) if target != "auto" else _nothing():
        got = caught(dispatch)
    assert want and {w[2] for w in want} == {__file__}  # NumPy's: the line in _WARNS
    assert got == want


def test_a_warning_shows_once_per_caller_line_as_numpys(tmp_path):
    """Under the default filter each line of the program warns once, each line on its own."""
    import os
    import pathlib
    import subprocess
    import sys

    program = "import {m} as np\na = np.ones(3)\na / 0.0\na / 0.0\nfor _ in range(3):\n    a / 0.0\n"
    out = {}
    for m in ("numpy", "dispatch"):
        path = tmp_path / f"{m}_warns.py"
        path.write_text(program.format(m=m))
        root = str(pathlib.Path(dispatch.__file__).parents[1])  # this dispatch, not an installed one
        run = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=120,
                             env={**os.environ, "PYTHONPATH": root})
        assert run.returncode == 0, run.stderr
        out[m] = run.stderr.replace(str(path), "PROGRAM")
    assert out["dispatch"] == out["numpy"] and out["numpy"].count("RuntimeWarning") == 3


# ---- attributes and methods of NumPy's arrays -------------------------------------------------------------

def _outcome(xp, run):
    """What ``run(xp)`` gives, or the type and message of what it raises."""
    try:
        return run(xp)
    except Exception as exc:  # the exception itself is the outcome compared
        return (type(exc), str(exc).split("\n")[0])


def _set_dtype(xp, dtype):
    a = xp.zeros(4)
    a.dtype = dtype
    return a


def _setflags(xp):
    a = xp.arange(4.0)
    a.setflags(write=False)
    assert not a.flags.writeable
    a[0] = 1.0


def _resize(xp, how):
    a = xp.zeros(4)
    if how == "alias":
        b = a  # noqa: F841 - a second name for the array: NumPy refuses
    elif how == "view":
        v = a[1:]  # noqa: F841 - a view of the data: NumPy refuses
    a.resize(8, refcheck=how != "unchecked")
    return a


def _flat_set(xp, key):
    a = xp.arange(6)
    a.flat[key(xp)] = 9
    return a


@pytest.mark.parametrize("run", [
    pytest.param(lambda xp: bytes(xp.arange(5, dtype=xp.int16).data), id="data"),
    pytest.param(lambda xp: memoryview(xp.arange(5.0).data).tolist(), id="memoryview-of-data"),
    pytest.param(lambda xp: _set_dtype(xp, xp.int32), id="dtype=int32"),
    pytest.param(lambda xp: _set_dtype(xp, xp.complex128), id="dtype=complex128"),
    pytest.param(lambda xp: _set_dtype(xp, "V7"), id="dtype-refused"),
    pytest.param(_setflags, id="setflags"),
    pytest.param(lambda xp: xp.arange(4, dtype=xp.int16).byteswap(), id="byteswap"),
    pytest.param(lambda xp: xp.arange(4, dtype=">f8").byteswap().view("<f8"), id="byteswap-view"),
    pytest.param(lambda xp: _resize(xp, "alone"), id="resize"),
    pytest.param(lambda xp: _resize(xp, "alias"), id="resize-referenced"),
    pytest.param(lambda xp: _resize(xp, "view"), id="resize-viewed"),
    pytest.param(lambda xp: _resize(xp, "unchecked"), id="resize-refcheck-false"),
    pytest.param(lambda xp: xp.arange(6).flat[xp.arange(6) % 2 == 0], id="flat[bool]"),
    pytest.param(lambda xp: xp.arange(6).flat[[0, 4]], id="flat[list]"),
    pytest.param(lambda xp: xp.arange(6).flat[xp.array([5, 1])], id="flat[array]"),
    pytest.param(lambda xp: xp.arange(6).flat[2:5], id="flat[slice]"),
    pytest.param(lambda xp: xp.arange(6).flat[3], id="flat[int]"),
    pytest.param(lambda xp: _flat_set(xp, lambda m: m.arange(6) > 3), id="flat[bool]="),
    pytest.param(lambda xp: _flat_set(xp, lambda m: m.array([0, 2])), id="flat[array]="),
    pytest.param(lambda xp: (lambda a: (setattr(a, "flat", [7, 8]), a)[1])(xp.zeros((2, 3))), id="flat=list"),
    pytest.param(lambda xp: (lambda a: (setattr(a, "flat", xp.arange(6)), a)[1])(xp.zeros((2, 3))), id="flat=array"),
])
def test_array_attributes_and_methods_as_numpys(run):
    want = _outcome(numpy, run)
    got = _outcome(dispatch, run)
    if isinstance(want, tuple) and want and isinstance(want[0], type) and issubclass(want[0], Exception):
        assert got == want
    elif isinstance(want, (numpy.ndarray, numpy.generic)):
        _same(got, want)
    else:
        assert got == want


def test_byteswap_in_place_returns_the_array():
    a = dispatch.arange(3, dtype=numpy.int16)
    ref = numpy.arange(3, dtype=numpy.int16)
    assert a.byteswap(inplace=True) is a
    ref.byteswap(inplace=True)
    _same(a, ref)
