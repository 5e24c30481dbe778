"""The CuPy target's plumbing, run in CI on a fake CuPy (``fakecupy.py``): conversions,
residency, device scalars, ``_match``, range-checked keys, ``assign``, the staging path for
arrays over 1 MiB, and the catalog's ops run through ``cupy_target`` end to end.

The fake computes with NumPy, so these tests prove plumbing, not CuPy's semantics: the same
suite's ``cupy`` parameters prove those on a GPU machine.
"""

from __future__ import annotations

import gc
import pickle

import fakecupy
import numpy
import pytest
from cases import Case
from conftest import record_run
from helpers import assert_same
from test_compare_ops import COMPARED, In, _dispatch_func, _numpy_func, _spec, compare_calls

import dispatch
import dispatch.targets
from dispatch.arrays._array import _DeviceScalar
from dispatch.base.devices import Device
from dispatch.base.ops import op_named
from dispatch.routing import router
from dispatch.targets import _staging

if fakecupy.real_cupy_installed():
    pytest.skip("a real CuPy is installed: the suite's cupy parameters test it, and swapping the fake into "
                "sys.modules would mix the fake with the real cupy target", allow_module_level=True)


@pytest.fixture(scope="module", autouse=True)
def cupy():
    """The fake CuPy in sys.modules, and a cupy target probed on it, for this module only."""
    restore = fakecupy.install()
    dispatch.targets.reset("cupy")
    router.clear_decisions()
    try:
        assert dispatch.targets.probe("cupy") is not None, dispatch.targets.unavailable().get("cupy")
        import cupy

        yield cupy
    finally:
        restore()
        dispatch.targets.reset("cupy")
        router.clear_decisions()


def on_gpu(x: numpy.ndarray) -> dispatch.ndarray:
    return dispatch.asarray(x).to("cupy")


def test_the_fake_is_a_device_target(cupy):
    target = dispatch.targets.get("cupy")
    assert target.cupy is cupy and target.device == Device("cuda", 0)
    assert "cupy" in dispatch.targets.available()
    a = on_gpu(numpy.arange(4.0))
    assert type(a._engine_array) is cupy.ndarray and type(a._engine_array) is not numpy.ndarray
    assert a.device == "cuda:0" and a.target == "cupy"


def test_results_stay_on_the_device(cupy):
    x = numpy.arange(12.0).reshape(3, 4)
    a = on_gpu(x)
    with dispatch.trace() as t:
        results = [a + 1, dispatch.exp(a), a @ a.T, a[1], a.T, dispatch.linalg.svd(a, compute_uv=False), a.sum(0)]
    for r in results:
        assert isinstance(r._engine_array, cupy.ndarray) and r.device == a.device
    assert {r.target for r in t.records} == {"cupy"}, [(r.op, r.target, r.reason) for r in t.records]
    assert_same(results[2], x @ x.T)
    host = a.to("cpu")
    assert type(host._engine_array) is numpy.ndarray and host.device.is_host
    assert type(dispatch.asnumpy(a)) is numpy.ndarray and type(numpy.asarray(a)) is numpy.ndarray


def test_device_scalars(cupy):
    x = numpy.arange(5.0) - 1.5
    a = on_gpu(x)
    s = a.sum()
    assert isinstance(s, _DeviceScalar) and s.device == a.device
    assert repr(s) == repr(x.sum()) and str(s) == str(x.sum()) and float(s) == x.sum()
    assert hash(s) == hash(x.sum())
    assert_same(s, x.sum())
    e = a[2]  # (one element read: more would make the host the array's home)
    assert isinstance(e, _DeviceScalar) and e.device == a.device and float(e) == x[2]
    assert not isinstance(a[..., 2], _DeviceScalar)


def test_match_casts_to_numpys_dtype(cupy, monkeypatch):
    """A CuPy function that gives another dtype (or a Python scalar) is cast to NumPy's."""
    monkeypatch.setattr(cupy, "mean", lambda *a, **k: cupy.asarray(numpy.float32(2.5)), raising=False)
    monkeypatch.setattr(cupy, "count_nonzero", lambda *a, **k: 3, raising=False)
    a = on_gpu(numpy.arange(6.0))
    target = dispatch.targets.get("cupy")
    ops = [op_named("mean"), op_named("count_nonzero")]
    try:
        for op in ops:
            op.cache.pop(target, None)  # resolve through the patched module
        m = dispatch.mean(a)
        assert isinstance(m, _DeviceScalar) and m.dtype == numpy.float64 and float(m) == 2.5
        c = dispatch.count_nonzero(a)
        assert c.dtype == numpy.intp and int(c) == 3
    finally:
        for op in ops:
            op.cache.pop(target, None)


def test_checked_keys(cupy):
    x = numpy.arange(10.0)
    a = on_gpu(x)
    index = on_gpu(numpy.array([1, -1, 3]))
    with dispatch.trace() as t:
        assert_same(a[index], x[[1, -1, 3]])
    assert [r.target for r in t.records if r.op == "__getitem__"] == ["cupy"]
    with pytest.raises(IndexError):
        a[on_gpu(numpy.array([0, 10]))]
    with pytest.raises(IndexError):
        a[on_gpu(numpy.array([0, 10]))] = 1.0
    assert_same(a, x)
    with dispatch.trace() as t:
        assert_same(a[numpy.array([2, 0])], x[[2, 0]])  # a host index array goes to the device with the call
    assert [r.target for r in t.records if r.op == "__getitem__"] == ["cupy"]
    mask = on_gpu(x > 4)
    assert_same(a[mask], x[x > 4])
    with pytest.raises(IndexError):
        a[on_gpu(numpy.array([True, False]))]  # a mask of another shape


def test_assign_and_inplace_keep_the_device_array(cupy):
    x = numpy.arange(8.0)
    a = on_gpu(x)
    data, view = a._engine_array, a[2:6]
    a[1:3] = 5.0
    a[on_gpu(x > 6)] = -1.0
    a += 1
    a *= on_gpu(numpy.full(8, 2.0))
    want = x.copy()
    want[1:3] = 5.0
    want[x > 6] = -1.0
    want = (want + 1) * 2
    assert a._engine_array is data
    assert_same(a, want)
    assert_same(view, want[2:6])
    a.sort()
    a.fill(3.0)
    a.flat[2] = 9.0
    want[:] = 3.0
    want[2] = 9.0
    assert a._engine_array is data and isinstance(a._engine_array, cupy.ndarray)
    assert_same(a, want)


@pytest.mark.parametrize("nbytes", [64, 3 << 20])
def test_staging_round_trip(cupy, nbytes):
    x = numpy.random.default_rng(0).standard_normal(nbytes // 8)
    before = _staging.moved()
    a = on_gpu(x)
    back = numpy.asarray(a)
    after = _staging.moved()
    assert after["to_device"] - before["to_device"] == x.nbytes
    assert after["to_host"] - before["to_host"] == x.nbytes
    numpy.testing.assert_array_equal(back, x)
    if nbytes > _staging.THRESHOLD:
        assert any(key[0] is cupy for key in _staging._cupy_stagers), "the staging path was not taken"
    strided = on_gpu(x[::2].reshape(-1, 2).T)  # non-contiguous sources are made contiguous first
    numpy.testing.assert_array_equal(numpy.asarray(strided), x[::2].reshape(-1, 2).T)
    fortran = x.reshape(-1, 4).T  # moved as the bytes of its C-ordered transpose, in Fortran order there
    moved = on_gpu(fortran)
    assert moved.shape == fortran.shape and moved._engine_array.flags.f_contiguous
    numpy.testing.assert_array_equal(numpy.asarray(moved), fortran)
    numpy.testing.assert_array_equal(numpy.asarray(moved @ moved.T), fortran @ fortran.T)


# Elements of a float64 array large enough to be read from locked pages, its views of 3 MiB less too.
_LOCKABLE = (_staging.LOCK_MIN + (3 << 20)) // 8


def _staged_copies(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The pinned buffer of each staged copy to the device from now on."""
    buffers: list[int] = []
    real = _staging._CupyEngine.copy_in
    monkeypatch.setattr(_staging._CupyEngine, "copy_in",
                        lambda self, dst, start, b, size: buffers.append(b) or real(self, dst, start, b, size))
    return buffers


def test_small_copies_are_staged_even_from_locked_memory_while_work_is_queued(cupy, monkeypatch):
    """A copy from locked pages is waited for, after every kernel queued before it: while the
    stream is busy, a slice under ``LOCK_MIN`` (a minibatch of a large input) is staged, never
    waited for, and does not count as a send of its owner; the owner sent whole is locked as
    before."""
    runtime = cupy.cuda.runtime
    x = numpy.random.default_rng(2).standard_normal(_LOCKABLE)
    staged = _staged_copies(monkeypatch)
    monkeypatch.setattr(cupy.cuda.get_current_stream(), "done", False)
    rows = x[: 3 << 17]  # 3 MiB: over the staging threshold, under LOCK_MIN
    for _ in range(3):
        assert_same(on_gpu(rows), rows)
    assert x.ctypes.data not in runtime.locked and len(staged) == 3
    on_gpu(x)
    on_gpu(x)  # the second send of the whole array: locked
    assert runtime.locked == {x.ctypes.data: x.nbytes}
    copies = len(staged)
    assert_same(on_gpu(x[1:]), x[1:])  # large: read from the locked pages, not staged
    assert len(staged) == copies
    assert_same(on_gpu(rows[1:]), rows[1:])  # small: staged though its memory is locked
    assert len(staged) == copies + 1


def test_small_copies_are_read_from_locked_memory_when_the_stream_is_idle(cupy, monkeypatch):
    """With nothing queued, the wait is the copy's alone: k-means' points, sent at each
    iteration's start, are locked on their second send though under ``LOCK_MIN``."""
    runtime = cupy.cuda.runtime
    points = numpy.random.default_rng(3).standard_normal(3 << 17)  # 3 MiB
    staged = _staged_copies(monkeypatch)
    for _ in range(3):
        assert_same(on_gpu(points), points)
    assert runtime.locked == {points.ctypes.data: points.nbytes} and len(staged) == 1
    monkeypatch.setattr(cupy.cuda.get_current_stream(), "done", False)
    assert_same(on_gpu(points[1:]), points[1:])  # work queued: staged, though locked
    assert len(staged) == 2


def test_a_swapped_out_cupy_module_leaves_no_pinned_buffers_behind(cupy):
    """The staging buffers (pinned, two of ``CHUNK`` each) are kept per CuPy module and device;
    one that is no longer the module in use (a test's fake replaced by the next) drops its own."""
    def sent(module):
        x = numpy.arange(_staging.THRESHOLD // 8 + 1, dtype=numpy.float64)  # staged: large, and sent once
        got = module.asnumpy(_staging.to_device_cupy(module, x))
        assert got.dtype == x.dtype and got.shape == x.shape and numpy.array_equal(got, x)

    sent(cupy)
    assert any(key[0] is cupy for key in _staging._cupy_stagers)
    other = fakecupy._module()["cupy"]  # another module, as the next test's fake would be
    sent(other)
    assert [key[0] for key in _staging._cupy_stagers] == [other]
    sent(cupy)  # the module in use again: its own made afresh
    assert [key[0] for key in _staging._cupy_stagers] == [cupy]


def test_staged_copies_take_turns_in_the_two_buffers(cupy, monkeypatch):
    """Each small copy waits only for the copy before the last to leave its buffer."""
    staged = _staged_copies(monkeypatch)
    parts = [numpy.full(3 << 17, float(i)) for i in range(4)]
    for part in parts:
        assert_same(on_gpu(part), part)
    assert staged[-4:] in ([0, 1, 0, 1], [1, 0, 1, 0])


def test_index_arrays_are_range_checked_with_one_read_back(cupy, monkeypatch):
    """Each read of a device value back to the host waits for every kernel queued before it: the
    bounds of every index array of one key come back together (``p[rows, y]`` read four)."""
    reads = []
    real_get = cupy.ndarray.get
    monkeypatch.setattr(cupy.ndarray, "get", lambda self: reads.append("get") or real_get(self), raising=False)
    monkeypatch.setattr(cupy.ndarray, "__int__", lambda self: reads.append("int") or int(self.view(numpy.ndarray)),
                        raising=False)
    x = numpy.arange(12.0).reshape(3, 4)
    a = on_gpu(x)
    rows, cols = on_gpu(numpy.array([0, 2, -1])), on_gpu(numpy.array([3, 0, 1], dtype=numpy.uint8))
    reads.clear()
    got = a[rows, cols]
    assert len(reads) == 1
    assert_same(got, x[[0, 2, -1], numpy.array([3, 0, 1], dtype=numpy.uint8)])
    for bad in (on_gpu(numpy.array([0, 4])), on_gpu(numpy.array([-5, 0]))):  # past either end of the 2nd axis
        with pytest.raises(IndexError):
            a[rows[:2], bad]
    huge = numpy.array([1, 2**64 - 1], dtype=numpy.uint64)  # NumPy reads the last as -1; CuPy need not
    with dispatch.trace() as t:
        got = a[rows[:2], on_gpu(huge)]
    assert_same(got, x[numpy.array([0, 2]), huge])
    assert (t.records[-1].target, t.records[-1].reason) == (
        "numpy", "fallback: cupy refused: an index out of range: NumPy raises IndexError")  # NumPy decides


def test_a_host_array_sent_again_is_page_locked_in_place_until_it_is_freed(cupy):
    runtime = cupy.cuda.runtime
    x = numpy.random.default_rng(1).standard_normal(_LOCKABLE)
    ptr = x.ctypes.data
    first = on_gpu(x)
    assert ptr not in runtime.locked and _staging.locked_bytes() == 0  # one send may be its only one
    again = on_gpu(x)
    assert runtime.locked == {ptr: x.nbytes} and _staging.locked_bytes() == x.nbytes
    part = on_gpu(x[1000:])  # a view: its owner's memory is locked already
    column = on_gpu(x.reshape(-1, 4).T)  # Fortran order: the same memory
    assert runtime.locked == {ptr: x.nbytes}
    for got, want in ((first, x), (again, x), (part, x[1000:]), (column, x.reshape(-1, 4).T)):
        assert_same(got, want)
    x[:] = 0.0  # the caller may write as soon as a copy returns: the next one reads the new values
    assert_same(on_gpu(x), numpy.zeros_like(x))
    del x, want  # the last view of x the loop held
    gc.collect()
    assert ptr not in runtime.locked and _staging.locked_bytes() == 0  # unlocked before NumPy frees it


def test_memory_not_locked_where_numpy_does_not_own_it_or_the_driver_refuses(cupy, monkeypatch):
    runtime = cupy.cuda.runtime
    buffer = bytearray(_LOCKABLE * 8)
    foreign = numpy.frombuffer(buffer, dtype=numpy.float64)  # another object's memory
    for _ in range(3):
        assert_same(on_gpu(foreign), numpy.zeros(len(buffer) // 8))
    assert foreign.ctypes.data not in runtime.locked
    owned = numpy.ones(_LOCKABLE)
    with _staging.no_locking():  # calibration times a first send's path
        for _ in range(3):
            assert_same(on_gpu(owned), numpy.ones(_LOCKABLE))
    assert owned.ctypes.data not in runtime.locked
    refused = []
    monkeypatch.setattr(runtime, "hostRegister", lambda ptr, size, flags: refused.append(ptr) or 1 / 0)
    y = numpy.ones(_LOCKABLE)
    for _ in range(4):
        assert_same(on_gpu(y), numpy.ones(_LOCKABLE))  # staged instead, and the lock is not tried again
    assert refused == [y.ctypes.data] and y.ctypes.data not in runtime.locked


def test_a_loop_learns_numpys_answer_once_per_signature(cupy, monkeypatch):
    """The CuPy target asks NumPy's stand-ins (``_oracle.expected``) once per call signature:
    a loop's later calls reuse the plan; another dtype or a length-one axis is a new one, and
    each result still has NumPy's dtype."""
    from dispatch.targets import cupy_target

    asked = []
    real = cupy_target.expected
    monkeypatch.setattr(cupy_target, "expected", lambda func, *rest: asked.append(func) or real(func, *rest))
    target = dispatch.targets.get("cupy")
    target._plans.clear()
    x, y = numpy.arange(12.0).reshape(3, 4), numpy.arange(4, dtype=numpy.int32)
    a, b = on_gpu(x), on_gpu(y)
    with dispatch.using("cupy"):
        results = [a + b for _ in range(5)]
        assert len(asked) == 1
        results += [a + on_gpu(y.astype(numpy.float32)), a[:1] + b, a + 1.5]
    assert len(asked) == 4
    for got, want in zip(results, [x + y] * 5 + [x + y.astype(numpy.float32), x[:1] + y, x + 1.5], strict=True):
        assert type(got._engine_array) is cupy.ndarray
        assert_same(got, want)


def test_a_host_result_written_into_a_device_array(cupy):
    """torch-cpu's result (a host tensor) for a call whose ``out=`` lives on the device is
    copied there; CuPy cannot adopt host memory by DLPack, as it adopts a device tensor."""
    x = numpy.arange(6.0)
    a, out = dispatch.asarray(x), on_gpu(numpy.zeros(6))
    with dispatch.using("torch-cpu"), dispatch.trace() as t:
        got = dispatch.add(a, a, out=out)
    assert got is out and type(out._engine_array) is cupy.ndarray
    assert [r.target for r in t.records] == ["torch-cpu"], [r.reason for r in t.records]
    assert_same(out, x + x)


def test_pickle_and_copies_stay_on_the_device(cupy):
    a = on_gpu(numpy.arange(6.0).reshape(2, 3))
    for b in (pickle.loads(pickle.dumps(a)), a.copy()):
        assert isinstance(b._engine_array, cupy.ndarray) and b._engine_array is not a._engine_array
        assert_same(b, numpy.arange(6.0).reshape(2, 3))


def test_numpy_fallback_results_are_host_arrays(cupy):
    a = on_gpu(numpy.arange(6.0))
    with dispatch.trace() as t:
        r = dispatch.unique(a)  # refused by the cupy target: NumPy runs it on the host
    assert r.device.is_host and type(r._engine_array) is numpy.ndarray
    assert any(name == "unique" for (name, _) in t.fallbacks)


# ---- the catalog through cupy_target, end to end -------------------------------------------------------------


@pytest.mark.parametrize("name", [n for n in COMPARED if not _spec(n).seeded])
def test_every_op_through_the_cupy_plumbing(cupy, name, request):
    spec = _spec(name)
    native = []
    for case in (Case(dt, "contig") for dt in ("bool", "int64", "float32", "float64", "complex128")
                 if dt in spec.dtypes):
        x = In(case, spec.kind)
        native += compare_calls(name, _numpy_func(name), _dispatch_func(name), lambda x=x: spec.make(x), "cupy",
                                spec)
    if native:
        record_run(request, "cupy (fake)", name, native)
    if spec.errors is not None:
        x = In(Case("float64", "errors"), spec.kind)
        compare_calls(name, _numpy_func(name), _dispatch_func(name), lambda: spec.errors(x), "cupy", spec,
                      errors=True)
