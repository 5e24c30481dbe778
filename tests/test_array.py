"""``dispatch.ndarray`` against ``numpy.ndarray``: the protocols, operators, indexing, attributes
and methods, conversions, printing, pickling, the namespace and ``dispatch.random``.

Tests that take ``backend`` run with the array resident where that backend computes and every
call forced onto it; NumPy on host arrays is the reference.
"""

from __future__ import annotations

import copy
import operator
import pickle

import numpy
import pytest
from conftest import BACKENDS, DEVICE_BACKENDS, backend_params, require
from helpers import Outcomes, assert_same, on_backend
from xfails import lookup

import dispatch
import dispatch.targets
from converters.numpy_ops import NUMPY_CATALOG
from dispatch.arrays._array import _DeviceScalar


def pair(x: numpy.ndarray, backend: str) -> tuple[dispatch.ndarray, numpy.ndarray]:
    """The same values as a dispatch array on ``backend`` and as a NumPy array."""
    return on_backend(x.copy(), backend), x.copy()


def f64(*shape: int) -> numpy.ndarray:
    return (numpy.arange(numpy.prod(shape, dtype=int), dtype=float).reshape(shape) - 2.5) * 1.5


def i64(*shape: int) -> numpy.ndarray:
    return numpy.arange(numpy.prod(shape, dtype=int), dtype=numpy.int64).reshape(shape) - 2


# ---- __array_ufunc__ and __array_function__ --------------------------------------------------------------


SHIMMED = [
    ("mean", lambda m, a: m.mean(a)), ("sum", lambda m, a: m.sum(a, 0)),
    ("concatenate", lambda m, a: m.concatenate([a, a])), ("linalg.norm", lambda m, a: m.linalg.norm(a)),
    ("sort", lambda m, a: m.sort(a)), ("fft.fft", lambda m, a: m.fft.fft(a)),
    ("where", lambda m, a: m.where(a > 0, a, 0)), ("matmul", lambda m, a: m.matmul(a, a.T)),
]


@pytest.mark.parametrize(("name", "call"), SHIMMED, ids=[n for n, _ in SHIMMED])
def test_numpy_functions_route_through_the_shim(forced, name, call):
    """``numpy.f(dispatch array)`` returns what ``dispatch.f`` returns, and NumPy's values."""
    a, ref = pair(f64(3, 4), forced)
    via_numpy, via_dispatch = call(numpy, a), call(dispatch, a)
    assert type(via_numpy) is type(via_dispatch)
    assert_same(via_numpy, call(numpy, ref), loose=1e3, signed_zeros=False)


def test_numpy_mean_returns_what_dispatch_returns(backend):
    a, ref = pair(f64(5), backend)
    with dispatch.using(backend):
        via_numpy, via_dispatch = numpy.mean(a), dispatch.mean(a)
    assert type(via_numpy) is type(via_dispatch)
    assert_same(via_numpy, numpy.mean(ref))


def test_a_function_outside_the_catalog_runs_on_numpy_and_is_wrapped():
    a, ref = pair(f64(6), "numpy")
    got = numpy.lib.stride_tricks.sliding_window_view(a, 3)
    assert_same(got, numpy.lib.stride_tricks.sliding_window_view(ref, 3))
    assert any("not in the NumPy catalog" in why for (_, why) in dispatch.tracing.fallbacks())


def test_unknown_types_get_notimplemented():
    class Other:
        def __array_function__(self, func, types, args, kwargs):
            return NotImplemented

        def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
            return NotImplemented

    a = dispatch.arange(3.0)
    with pytest.raises(TypeError):
        numpy.concatenate([a, Other()])
    with pytest.raises(TypeError):
        numpy.add(a, Other())
    assert a.__array_function__(numpy.sum, (Other,), (a,), {}) is NotImplemented


@pytest.mark.parametrize("method", ["__call__", "reduce", "accumulate", "reduceat", "outer", "at"])
def test_array_ufunc_methods(backend, method):
    a, ref = pair(f64(6), backend)
    b, ref_b = pair(f64(6)[::-1].copy(), backend)
    with dispatch.using(backend):
        if method == "__call__":
            got, want = numpy.multiply(a, b), numpy.multiply(ref, ref_b)
        elif method == "reduce":
            got, want = numpy.add.reduce(a), numpy.add.reduce(ref)
        elif method == "accumulate":
            got, want = numpy.add.accumulate(a), numpy.add.accumulate(ref)
        elif method == "reduceat":
            got, want = numpy.add.reduceat(a, [0, 2, 4]), numpy.add.reduceat(ref, [0, 2, 4])
        elif method == "outer":
            got, want = numpy.multiply.outer(a, b), numpy.multiply.outer(ref, ref_b)
        else:
            got, want = numpy.add.at(a, [0, 1, 1], 5.0), numpy.add.at(ref, [0, 1, 1], 5.0)
            assert_same(a, ref)
    assert_same(got, want)


def test_ufunc_out_argument_is_written_and_returned(backend):
    a, ref = pair(f64(5), backend)
    out, ref_out = pair(numpy.zeros(5), backend)
    with dispatch.using(backend):
        got = numpy.exp(a, out=out)
        got2 = dispatch.add(a, 1, out=(out,))
    numpy.exp(ref, out=ref_out)
    assert got is out and got2 is out
    numpy.add(ref, 1, out=ref_out)
    assert_same(out, ref_out)


def test_mixed_with_numpy_arrays_gives_dispatch_arrays():
    a, ref = dispatch.arange(3.0), numpy.arange(3.0)
    for got, want in [(ref + a, ref + ref), (a + ref, ref + ref), (ref * a, ref * ref), (ref < a, ref < ref)]:
        assert_same(got, want)


# ---- operators -------------------------------------------------------------------------------------------

BINARY = ["add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "and_", "or_", "xor", "lshift", "rshift",
          "lt", "le", "gt", "ge", "eq", "ne"]


@pytest.mark.parametrize("name", BINARY)
def test_binary_operators(backend, name):
    fn = getattr(operator, name)
    ints = name in ("and_", "or_", "xor", "lshift", "rshift")
    x = numpy.array([1, 2, 3, 5, 7]) if ints else f64(5) + 0.25
    y = numpy.array([3, 1, 2, 1, 2]) if ints else f64(5)[::-1] + 5.5
    a, ref = pair(x, backend)
    b, ref_b = pair(y, backend)
    with dispatch.using(backend):
        results = [fn(a, b), fn(a, 2), fn(3, a), fn(ref, b), fn(a, ref_b)]
    wants = [fn(ref, ref_b), fn(ref, 2), fn(3, ref), fn(ref, ref_b), fn(ref, ref_b)]
    for i, (got, want) in enumerate(zip(results, wants, strict=True)):
        assert_same(got, want, path=f"{name} #{i}")


@pytest.mark.parametrize("dtype", [numpy.float32, numpy.float64, numpy.complex128, numpy.int64])
def test_power_operator_is_numpys_operator_on_the_host(dtype):
    """``x ** 2`` is NumPy's operator, not ``np.power``: NumPy takes ``square``, ``sqrt`` and
    ``reciprocal`` for these exponents, which for complex numbers differ from ``np.power`` in
    the last bits, and ``np.power`` is twice as slow. ``np.power`` itself stays ``np.power``."""
    rng = numpy.random.default_rng(0)
    x = (rng.random(5000) * 10 + 0.5).astype(dtype)
    if x.dtype.kind == "c":
        x = x + 1j * rng.random(5000)
    a = dispatch.asarray(x)
    for e in ((2, 3) if x.dtype.kind == "i" else (2, 0.5, -1, 2.0, 3)):
        want = x ** e
        got = numpy.asarray(a ** e)
        assert got.dtype == want.dtype and numpy.array_equal(got, want), e
        assert numpy.array_equal(numpy.asarray(dispatch.power(a, e)), numpy.power(x, e)), e
    b = a.copy()
    b **= 2
    assert numpy.array_equal(numpy.asarray(b), x ** 2)


def test_matmul_and_divmod_operators(backend):
    a, ref = pair(f64(3, 3), backend)
    with dispatch.using(backend):
        got_mm, got_dm, got_rdm = a @ a, divmod(a, 2.0), divmod(7.0, a + 10)
    assert_same(got_mm, ref @ ref)
    assert_same(got_dm, divmod(ref, 2.0))
    assert_same(got_rdm, divmod(7.0, ref + 10))


@pytest.mark.parametrize("name", ["neg", "pos", "abs", "invert"])
def test_unary_operators(backend, name):
    fn = getattr(operator, name)
    x = numpy.array([1, -2, 3]) if name == "invert" else f64(4)
    a, ref = pair(x, backend)
    with dispatch.using(backend):
        got = fn(a)
    assert_same(got, fn(ref))


INPLACE = ["iadd", "isub", "imul", "itruediv", "ifloordiv", "imod", "ipow", "iand", "ior", "ixor", "ilshift",
           "irshift", "imatmul"]


@pytest.mark.parametrize("name", INPLACE)
def test_inplace_operators_keep_identity_and_views(backend, name):
    fn = getattr(operator, name)
    ints = name in ("iand", "ior", "ixor", "ilshift", "irshift")
    x = numpy.array([[1, 2], [5, 7]]) if ints else f64(2, 2) + 0.25
    a, ref = pair(x, backend)
    view, ref_view = a[1], ref[1]
    other = numpy.array([[3, 1], [2, 1]]) if ints else f64(2, 2)[::-1] + 5.5
    with dispatch.using(backend):
        result = fn(a, on_backend(other.copy(), backend))
        again = fn(result, 2) if name != "imatmul" else result
    ref = fn(ref, other)
    if name != "imatmul":
        ref = fn(ref, 2)
    assert result is a and again is a
    assert_same(a, ref)
    outcomes = Outcomes()
    with outcomes.case("view", lookup("view", backend)):
        assert_same(view, ref_view)
    outcomes.finish()


def test_inplace_operator_casting_errors_match_numpy(backend):
    a, ref = pair(numpy.arange(3), backend)
    with pytest.raises(TypeError) as want:
        ref += 1.5
    with dispatch.using(backend), pytest.raises(TypeError) as got:
        a += 1.5
    assert type(got.value) is type(want.value)
    assert_same(a, numpy.arange(3))


# ---- indexing --------------------------------------------------------------------------------------------

KEYS = [
    3, -1, slice(1, 4), slice(None, None, -1), slice(None, None, 2), (1, 2), (slice(None), 1), (Ellipsis, 0),
    (None, 1), (1, None, slice(None)), numpy.array([0, 2, -1]), [0, 0, 1], numpy.array([True, False, True, False]),
    (numpy.array([0, 1]), numpy.array([1, 2])), (slice(None), [0, 2]), ([0, 1], slice(1, 3)), (),
]


@pytest.mark.parametrize("key", KEYS, ids=repr)
def test_getitem(backend, key):
    a, ref = pair(f64(4, 3), backend)
    with dispatch.using(backend):
        got = a[key]
    assert_same(got, ref[key])


@pytest.mark.parametrize("key", KEYS, ids=repr)
def test_setitem(backend, key):
    a, ref = pair(f64(4, 3), backend)
    with dispatch.using(backend):
        a[key] = 9.5
    ref[key] = 9.5
    assert_same(a, ref)
    value = numpy.asarray(ref[key]) * 0 + numpy.arange(numpy.asarray(ref[key]).size).reshape(
        numpy.shape(ref[key]))
    with dispatch.using(backend):
        a[key] = on_backend(value.copy(), backend)
    ref[key] = value
    assert_same(a, ref)


def test_boolean_mask_and_views(backend):
    a, ref = pair(f64(6), backend)
    view, ref_view = a[1:4], ref[1:4]
    with dispatch.using(backend):
        a[a > 0] = 0.0
        selected = a[a < -1]
    ref[ref > 0] = 0.0
    assert_same(a, ref)
    assert_same(selected, ref[ref < -1])
    outcomes = Outcomes()
    with outcomes.case("view", lookup("view", backend)):
        assert_same(view, ref_view)
    outcomes.finish()


def test_a_result_made_by_torch_cpu_owns_its_memory_as_numpys_result_does():
    """``base`` is None for a copy, a fancy index's result or a ufunc's made on torch-cpu (NumPy's
    array shares the tensor's memory, and the tensor never comes out as ``base``)."""
    require("torch-cpu")
    a, ref = dispatch.arange(10.0), numpy.arange(10.0)
    with dispatch.using("torch-cpu"):
        made = [a.copy(), a[[1, 2]], dispatch.exp(a), dispatch.zeros(3) + 1]
    expected = [ref.copy(), ref[[1, 2]], numpy.exp(ref), numpy.zeros(3) + 1]
    for got, want in zip(made, expected, strict=True):
        assert want.base is None and got.base is None
        numpy.testing.assert_allclose(numpy.asarray(got), want, rtol=1e-15)
    view = a[2:5]  # a view on the host stays one
    assert view.base is a


@pytest.mark.parametrize("key", [10, -10, (0, 5), numpy.array([0, 9]), [7], (0, 0, 0), numpy.array([True, False])],
                         ids=repr)
def test_index_errors(backend, key):
    a, ref = pair(f64(4, 3), backend)
    with pytest.raises(IndexError) as want:
        ref[key]
    with dispatch.using(backend), pytest.raises(IndexError) as got:
        a[key]
    assert type(got.value) is type(want.value)
    with dispatch.using(backend), pytest.raises(IndexError):
        a[key] = 1.0
    assert_same(a, f64(4, 3))


# ---- attributes and methods --------------------------------------------------------------------------------

ATTRIBUTES = ["shape", "dtype", "ndim", "size", "itemsize", "nbytes", "T", "mT", "real", "imag"]


@pytest.mark.parametrize("name", ATTRIBUTES)
def test_attributes(backend, name):
    a, ref = pair(f64(2, 3) + 1j * f64(2, 3)[::-1], backend)
    with dispatch.using(backend):
        got = getattr(a, name)
    assert_same(got, getattr(ref, name))


METHODS = [
    ("astype", ("float32",), {}), ("astype", ("int16",), {}), ("reshape", (3, 2), {}), ("reshape", ((-1,),), {}),
    ("ravel", (), {}), ("ravel", ("F",), {}), ("transpose", (), {}), ("transpose", (1, 0), {}), ("sum", (), {}),
    ("sum", (0,), {}), ("mean", (), {"axis": 1}), ("std", (), {}), ("var", (), {"ddof": 1}), ("min", (), {}),
    ("max", (), {"axis": 0}), ("argmin", (), {}), ("argmax", (), {"axis": 1}), ("cumsum", (), {}),
    ("cumsum", (1,), {}), ("copy", (), {}), ("flatten", (), {}), ("squeeze", (), {}), ("swapaxes", (0, 1), {}),
    ("prod", (), {}), ("any", (), {}), ("all", (), {}), ("clip", (0, 2), {}), ("round", (1,), {}),
    ("nonzero", (), {}), ("diagonal", (), {}), ("trace", (), {}), ("repeat", (2,), {}), ("take", ([0, 2],), {}),
    ("conj", (), {}), ("searchsorted", (1.0,), {}), ("argsort", (), {"kind": "stable"}),
]


@pytest.mark.parametrize(("name", "args", "kwargs"), METHODS, ids=lambda v: repr(v) if not isinstance(v, str) else v)
def test_methods(backend, name, args, kwargs):
    x = f64(2, 3) if name != "searchsorted" else f64(6)
    a, ref = pair(x, backend)
    with dispatch.using(backend):
        got = getattr(a, name)(*args, **kwargs)
    assert_same(got, getattr(ref, name)(*args, **kwargs))


def test_dot_fill_item_tolist_tobytes_view(backend):
    a, ref = pair(f64(3, 3), backend)
    with dispatch.using(backend):
        assert_same(a.dot(a), ref.dot(ref))
        assert a.item(4) == ref.item(4) and type(a.item(4)) is type(ref.item(4))
        assert a.tolist() == ref.tolist()
        assert a.tobytes() == ref.tobytes() and a.T.tobytes() == ref.T.tobytes()
        assert_same(a.view(numpy.int64), ref.view(numpy.int64))
        a.fill(2.5)
    ref.fill(2.5)
    assert_same(a, ref)


def test_flat(backend):
    a, ref = pair(f64(2, 3), backend)
    assert list(a.flat) == list(ref.flat)
    assert a.flat[4] == ref.flat[4]
    a.flat[4] = 99.0
    ref.flat[4] = 99.0
    assert_same(a, ref)


def test_item_errors_and_python_conversions(backend):
    a, _ = pair(f64(3), backend)
    one, ref_one = pair(numpy.array(2.5), backend)
    idx, _ = pair(numpy.array(3), backend)
    for conv in (float, int, complex, bool):
        assert conv(one) == conv(ref_one) and type(conv(one)) is type(conv(ref_one))
        with pytest.raises(TypeError if conv is not bool else ValueError):
            conv(a)
    assert bool(on_backend(numpy.array([0.0]), backend)) is False
    assert operator.index(idx) == 3 and [0, 1, 2, 3, 4][idx] == 3
    with pytest.raises(TypeError):
        operator.index(one)
    with pytest.raises(ValueError):
        a.item()


def test_len_iter_contains(backend):
    a, ref = pair(f64(3, 2), backend)
    assert len(a) == len(ref) == 3
    for got, want in zip(a, ref, strict=True):
        assert_same(got, want)
    assert (ref[1, 1] in a) and (1e9 not in a)
    zero_d, _ = pair(numpy.array(1.0), backend)
    with pytest.raises(TypeError):
        len(zero_d)
    with pytest.raises(TypeError):
        iter(zero_d).__next__()


def test_isinstance_and_asarray_and_namespace(backend):
    a, ref = pair(f64(3), backend)
    assert isinstance(a, dispatch.ndarray)
    host = numpy.asarray(a)
    assert type(host) is numpy.ndarray
    numpy.testing.assert_array_equal(host, ref)
    assert numpy.asarray(a, dtype=numpy.float32).dtype == numpy.float32
    assert a.__array_namespace__() is dispatch
    if a.device.is_host:
        assert numpy.shares_memory(numpy.asarray(a), a._engine_array)
    else:
        with pytest.raises(ValueError):
            a.__array__(copy=False)


def test_an_object_masked_array_keeps_the_array_assigned(backend):
    """numpy.ma's ``__setitem__`` reads ``_data`` off any value (a MaskedArray's data): an object
    masked array holds the dispatch array itself, as it holds a NumPy array, not what it wraps."""
    a, ref = pair(f64(2, 2), backend)
    got, want = numpy.ma.array([None, None]), numpy.ma.array([None, None])
    got[0], want[0] = a, ref
    assert want[0] is ref
    assert got[0] is a, type(got[0])
    assert got[0, ...][()] is a and isinstance(got[0, ...], numpy.ma.MaskedArray)
    got[1], want[1] = numpy.ma.masked, numpy.ma.masked
    assert got[0] is a and bool(got[1, ...].mask) and bool(want[1, ...].mask)


def test_dlpack_round_trip(backend):
    torch = pytest.importorskip("torch")
    a, ref = pair(f64(2, 3), backend)
    outcomes = Outcomes()
    with outcomes.case("__dlpack__", lookup("__dlpack__", backend)):
        if a.device.is_host:
            back = numpy.from_dlpack(a)
            assert type(back) is numpy.ndarray and numpy.shares_memory(back, a._engine_array)
            numpy.testing.assert_array_equal(back, ref)
        t = torch.from_dlpack(a)
        numpy.testing.assert_array_equal(t.cpu().numpy(), ref)
        again = dispatch.from_dlpack(t) if a.device.is_host else dispatch.asarray(t.cpu().numpy())
        assert_same(again, ref)
        assert a.__dlpack_device__()[0] == t.__dlpack_device__()[0]
    outcomes.finish()


# ---- printing -----------------------------------------------------------------------------------------------

PRINTED = [
    numpy.arange(6.0).reshape(2, 3), numpy.array(3.5), numpy.array([], dtype=numpy.int8), numpy.arange(5000) * 1.5,
    numpy.arange(10, dtype=numpy.uint16), numpy.array([1 + 2j, numpy.nan, -0.0]), numpy.array([True, False]),
    numpy.arange(24, dtype=numpy.float32).reshape(2, 3, 4) / 7, numpy.array(["a", "bc"]), numpy.eye(40),
]


@pytest.mark.parametrize("x", PRINTED, ids=lambda x: f"{x.dtype}{x.shape}")
def test_repr_and_str_are_numpys(backend, x):
    a = on_backend(x.copy(), backend)
    assert repr(a) == repr(x)
    assert str(a) == str(x)
    assert f"{a!r:>5}" == f"{x!r:>5}"


def test_device_scalars_print_as_numpy_scalars(backend):
    a, ref = pair(f64(4), backend)
    with dispatch.using(backend):
        s = a.sum()
    assert repr(s) == repr(ref.sum()) and str(s) == str(ref.sum())
    assert float(s) == float(ref.sum()) and hash(s) == hash(ref.sum())
    if isinstance(s, _DeviceScalar):
        assert s.device == a.device


# ---- copies and pickling --------------------------------------------------------------------------------------


@pytest.mark.parametrize("protocol", [2, pickle.HIGHEST_PROTOCOL])
def test_pickle_round_trip(backend, protocol):
    a, ref = pair(f64(2, 3), backend)
    back = pickle.loads(pickle.dumps(a, protocol=protocol))
    assert_same(back, ref)
    assert back.device == a.device


def test_copy_and_deepcopy_are_independent(backend):
    a, ref = pair(f64(4), backend)
    for c in (copy.copy(a), copy.deepcopy(a), a.copy()):
        assert c is not a
        c[0] = 100.0
        assert_same(a, ref)
        assert c.device == a.device


def test_results_stay_on_the_device_they_were_computed_on(backend):
    a, _ = pair(f64(4), backend)
    with dispatch.using(backend):
        for result in (a + 1, dispatch.exp(a), a[1:], a.reshape(2, 2)):
            assert result.device == a.device, result.device
    if backend in DEVICE_BACKENDS:
        assert a.to("cpu").device.is_host and a.to("cpu").target == "numpy"



@pytest.mark.parametrize("name", backend_params(tuple(b for b in BACKENDS if b != "dask")))  # Dask: no layout
@pytest.mark.parametrize("shape", [(512, 300), (64, 40, 60)])
def test_a_fortran_ordered_array_keeps_its_order_on_the_way_in(name, shape):
    require(name)
    x = numpy.random.default_rng(3).standard_normal(shape[::-1]).T  # a.T: Fortran order, over 1 MB
    a = dispatch.asarray(x).to(name)
    assert_same(a, x)
    native = a._engine_array  # the layout where the data lives (``a.flags`` describes a host copy)
    if hasattr(native, "flags"):  # NumPy, CuPy
        fortran, c_order = native.flags.f_contiguous, native.flags.c_contiguous
    else:  # a torch tensor
        fortran, c_order = native.permute(*reversed(range(native.dim()))).is_contiguous(), native.is_contiguous()
    assert (fortran, c_order) == (True, False)
    assert_same(a.sum(axis=0), x.sum(axis=0))

# ---- the namespace ---------------------------------------------------------------------------------------------

# Names whose dispatch counterpart is deliberately dispatch's own, and why.
OWN = {
    "ndarray": "dispatch.ndarray holds backend data",
    "ufunc": "dispatch.ufunc routes every ufunc method",
    "array": "a dispatch array stays where it is", "asarray": "a dispatch array stays where it is",
    "asanyarray": "a dispatch array stays where it is",
    "shape": "answered from metadata", "ndim": "answered from metadata", "size": "answered from metadata",
    "trace": "also dispatch.trace() with no arguments: a call trace",
    "broadcast": "its iterators name the dispatch arrays given, as their base",
    "fft": "dispatch.fft routes numpy.fft", "linalg": "dispatch.linalg routes numpy.linalg",
    "random": "dispatch.random draws NumPy's streams into dispatch arrays",
}


@pytest.mark.parametrize(("module", "mirror", "prefix"), [
    (numpy, "dispatch", ""), (numpy.linalg, "dispatch.linalg", "linalg."), (numpy.fft, "dispatch.fft", "fft."),
    (numpy.random, "dispatch.random", "random."),
])
def test_every_public_numpy_name_is_reachable_with_its_meaning(module, mirror, prefix):
    import importlib

    mine = importlib.import_module(mirror)
    for name in (n for n in dir(module) if not n.startswith("_") and n != "test"):
        theirs, ours = getattr(module, name), getattr(mine, name)
        if not prefix and name in OWN:
            assert ours is not None, name
        elif prefix + name in NUMPY_CATALOG and callable(theirs) and not isinstance(theirs, type):
            if isinstance(theirs, numpy.ufunc):
                assert isinstance(ours, dispatch.ufunc) and ours._ufunc is theirs, name
            elif prefix != "random.":
                assert ours is not theirs and ours.__wrapped__ is theirs, name
        elif not prefix and name in ("rec", "char"):  # NumPy's names, its arrays made of a dispatch array's data
            assert ours.__name__ == f"dispatch.{name}" and set(ours.__all__) == set(theirs.__all__), name
        elif prefix == "random." and name in ("Generator", "RandomState", "default_rng"):
            assert ours is not theirs, name  # draws come back as dispatch arrays
        elif prefix == "random." and name in ("SeedSequence", "MT19937", "PCG64", "PCG64DXSM", "Philox", "SFC64"):
            assert ours.__mro__[1] is theirs, name  # NumPy's, taking seeds as dispatch arrays too
        else:
            assert ours is theirs, name


def test_dunder_all_matches_what_is_exported():
    for name in dispatch.__all__:
        assert hasattr(dispatch, name), name
    assert set(numpy.__all__) <= set(dispatch.__all__)
    assert set(dispatch.__all__) <= set(dir(dispatch))
    for sub, ref in ((dispatch.linalg, numpy.linalg), (dispatch.fft, numpy.fft), (dispatch.random, numpy.random)):
        assert set(sub.__all__) == set(ref.__all__) - {"test"}
        for name in sub.__all__:
            assert hasattr(sub, name), name


def test_dispatch_trace_keeps_both_meanings():
    a = dispatch.eye(3) * 2
    assert dispatch.trace(a) == numpy.trace(numpy.eye(3) * 2)
    with dispatch.trace() as t:
        dispatch.add(a, a)
    assert isinstance(t, dispatch.Trace)


# ---- dispatch.random reproduces NumPy's streams -------------------------------------------------------------------


LEGACY = [("rand", (3,), {}), ("normal", (1.0, 2.0), {"size": 4}), ("randint", (0, 10), {"size": 5}),
          ("choice", (10, 3), {"replace": False}), ("permutation", (8,), {}), ("standard_normal", (), {"size": 2}),
          ("uniform", (), {"size": (2, 2)})]


@pytest.mark.parametrize(("name", "args", "kwargs"), LEGACY, ids=[n for n, _, _ in LEGACY])
def test_legacy_streams(name, args, kwargs):
    dispatch.random.seed(42)
    got = getattr(dispatch.random, name)(*args, **kwargs)
    numpy.random.seed(42)
    want = getattr(numpy.random, name)(*args, **kwargs)
    assert_same(got, want)


def test_legacy_shuffle_in_place(backend):
    a, ref = pair(f64(8), backend)
    dispatch.random.seed(3)
    dispatch.random.shuffle(a)
    numpy.random.seed(3)
    numpy.random.shuffle(ref)
    assert_same(a, ref)


GENERATOR = [("integers", (0, 10), {"size": 5}), ("normal", (), {"size": 3}), ("random", (4,), {}),
             ("choice", (numpy.arange(10.0), 4), {}), ("permutation", (6,), {}), ("standard_normal", ((2, 2),), {}),
             ("integers", (5,), {"endpoint": True})]


@pytest.mark.parametrize(("name", "args", "kwargs"), GENERATOR, ids=[n for n, _, _ in GENERATOR])
def test_default_rng_streams(name, args, kwargs):
    got = getattr(dispatch.random.default_rng(7), name)(*args, **kwargs)
    want = getattr(numpy.random.default_rng(7), name)(*args, **kwargs)
    assert_same(got, want)


def test_default_rng_shuffle_spawn_and_state(backend):
    a, ref = pair(f64(9), backend)
    dispatch.random.default_rng(5).shuffle(a)
    numpy.random.default_rng(5).shuffle(ref)
    assert_same(a, ref)
    kids, ref_kids = dispatch.random.default_rng(5).spawn(2), numpy.random.default_rng(5).spawn(2)
    for kid, ref_kid in zip(kids, ref_kids, strict=True):
        assert_same(kid.normal(size=3), ref_kid.normal(size=3))
    g = dispatch.random.default_rng(11)
    g.normal()
    assert pickle.loads(pickle.dumps(g)).normal() == g.normal()


def test_random_draws_move_to_a_forced_device(backend):
    with dispatch.using(backend):
        x = dispatch.random.default_rng(0).normal(size=3)
    expected = dispatch.targets.get(backend).device
    assert x.device == expected


def test_a_draw_a_forced_device_cannot_hold_stays_on_the_host(backend):
    labels = ["north", "south", "east"]
    with dispatch.using(backend):
        drawn = dispatch.random.RandomState(0).choice(labels, size=5)
    assert_same(drawn, numpy.random.RandomState(0).choice(labels, size=5))


@pytest.mark.parametrize("name", BACKENDS)
def test_every_backend_has_an_id(name):
    assert name in [p.id for p in backend_params()]
    if name in DEVICE_BACKENDS:
        assert any(m.name == "gpu" for p in backend_params() if p.id == name for m in p.marks)
    else:
        require(name)


def test_the_power_operator_floors_follow_the_routing_policy():
    """``**`` has an op of its own (NumPy's operator); like every op, its floors are reset
    and parked when the policy changes, or one policy's floors would serve another."""
    from dispatch.base.ops import POWER_OPERATOR, all_ops
    from dispatch.routing import router

    assert POWER_OPERATOR in all_ops()
    before = router.policy()
    try:
        router.set_policy("seed")
        router.host_floor(POWER_OPERATOR)
        assert POWER_OPERATOR.floor >= 0
        router.set_policy("oracle")
        assert POWER_OPERATOR.floor == -1  # computed afresh for this policy
    finally:
        router.set_policy(before)
