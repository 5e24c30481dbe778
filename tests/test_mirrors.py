"""Device copies of host arrays (``dispatch.arrays.mirrors``): kept while neither side is written,
invalidated by every write dispatch sees, dropped for memory handed out, evicted under pressure.

Runs the cupy target on the fake CuPy (``tests/fakecupy.py``): its "device" arrays are NumPy
memory, so a stale copy would give a wrong value, which each test compares with NumPy's. The
writes run outside the forced target (where the compiled fast path takes host calls), the reads
inside it (a device call reading the host array through its copy).
"""

from __future__ import annotations

import fakecupy
import numpy
import pytest
from helpers import fake_cupy_router
from mirror_writes import (
    N,
    _copyto,
    _fill,
    _flat,
    _iadd,
    _numpy_out,
    _out,
    _put,
    _setitem,
    _setitem_slice,
    _ufunc_at,
    _ufunc_positional_out,
    _view_iadd,
    _view_setitem,
)

import dispatch
from dispatch.arrays import mirrors
from dispatch.targets import _staging

if fakecupy.real_cupy_installed():
    pytest.skip("a real CuPy is installed: the fake would replace it in sys.modules", allow_module_level=True)


@pytest.fixture(autouse=True)
def fake_gpu(tmp_path, monkeypatch, operator_path):
    with fake_cupy_router(tmp_path, monkeypatch):
        mirrors.clear()
        yield
        mirrors.clear()


def _sent() -> int:
    return _staging.moved()["to_device"]


def _device_sum(x) -> float:
    """``(x * 2).sum()`` run on the (fake) device, read back as a float."""
    with dispatch.using("cupy"):
        return float((x * 2.0).sum())


def _fresh() -> tuple:
    ref = numpy.arange(N, dtype=numpy.float64)
    return dispatch.array(ref), ref  # a copy: dispatch's own memory


def test_a_host_array_is_copied_once_while_unwritten():
    x, ref = _fresh()
    before = _sent()
    assert _device_sum(x) == (ref * 2).sum()
    first = _sent() - before
    assert first >= x.nbytes
    assert _device_sum(x) == (ref * 2).sum()
    assert _sent() - before == first  # the copy kept: nothing sent again
    assert mirrors.stats()["hits"] >= 1


def _imul_array(x, ref):
    x *= dispatch.asarray(numpy.full(N, 2.0))
    ref *= 2.0


def _sort(x, ref):
    x[:] = x[::-1]
    x.sort()
    ref[:] = ref[::-1]
    ref.sort()


def _method_positional_out(x, ref):
    dispatch.asarray(numpy.full(N, 0.25)).clip(0.0, 1.0, x)
    numpy.full(N, 0.25).clip(0.0, 1.0, ref)


def _method_keyword_out(x, ref):
    dispatch.asarray(numpy.full((2, N), 0.5)).sum(axis=0, out=x)
    numpy.full((2, N), 0.5).sum(axis=0, out=ref)


def _function_positional_out(x, ref):
    dispatch.clip(dispatch.array(ref), 0.0, 10.0, x)
    numpy.clip(ref.copy(), 0.0, 10.0, ref)


WRITES = [_method_positional_out, _method_keyword_out, _function_positional_out, _ufunc_positional_out,
          _setitem, _setitem_slice, _iadd, _imul_array, _out, _numpy_out, _view_setitem, _view_iadd, _fill,
          _sort, _copyto, _put, _ufunc_at, _flat]


@pytest.mark.parametrize("write", WRITES, ids=lambda f: f.__name__[1:])
def test_every_write_invalidates_the_copy(write):
    x, ref = _fresh()
    assert _device_sum(x) == (ref * 2).sum()  # the copy is made and kept
    write(x, ref)
    numpy.testing.assert_array_equal(numpy.asarray(x.copy()), ref)
    got = _device_sum(x)
    assert got == (ref * 2).sum()  # no stale copy read
    assert _device_sum(x) == got


@pytest.mark.parametrize("write", [_setitem, _iadd, _out], ids=lambda f: f.__name__[1:])
def test_a_write_under_the_forced_device_invalidates_too(write):
    x, ref = _fresh()
    with dispatch.using("cupy"):
        assert float((x * 2.0).sum()) == (ref * 2).sum()
        write(x, ref)
        assert float((x * 2.0).sum()) == (ref * 2).sum()


def test_memory_handed_out_is_never_read_from_a_copy():
    x, ref = _fresh()
    assert _device_sum(x) == (ref * 2).sum()
    handed = numpy.asarray(x)  # the host memory itself: written where dispatch does not see it
    assert numpy.shares_memory(handed, x._engine_array)
    handed[0] = 1e6
    ref[0] = 1e6
    assert _device_sum(x) == (ref * 2).sum()
    handed[1] = -5.0
    ref[1] = -5.0
    assert _device_sum(x) == (ref * 2).sum()  # never mirrored again


def test_a_numpy_array_wrapped_as_it_is_stays_the_callers():
    raw = numpy.arange(N, dtype=numpy.float64)
    x = dispatch.asarray(raw)
    assert numpy.shares_memory(raw, x._engine_array)
    assert _device_sum(x) == (raw * 2).sum()
    raw[0] = 123.0  # written through the caller's own name
    assert _device_sum(x) == (raw * 2).sum()


def test_a_numpy_array_passed_to_a_function_stays_the_callers():
    raw = numpy.arange(N, dtype=numpy.float64)
    with dispatch.using("cupy"):
        assert float(dispatch.sum(raw)) == raw.sum()
        raw[0] = 1e6  # the caller's own array, written where dispatch does not see it
        assert float(dispatch.sum(raw)) == raw.sum()


def test_a_view_wrapped_from_numpy_stays_the_callers():
    raw = numpy.arange(2 * N, dtype=numpy.float64)
    x = dispatch.asarray(raw[:N])
    assert _device_sum(x) == (raw[:N] * 2).sum()
    raw[3] = -3.0
    assert _device_sum(x) == (raw[:N] * 2).sum()


def test_a_copy_handed_back_as_a_result_is_not_kept_as_the_mirror():
    x, ref = _fresh()
    assert _device_sum(x) == (ref * 2).sum()
    with dispatch.using("cupy"):
        y = dispatch.asarray(x)  # may be x itself, or the device copy
        y += 1.0
    assert _device_sum(x) == ((ref + (1.0 if numpy.shares_memory(numpy.asarray(x), numpy.asarray(y))
                                         or y is x else 0.0)) * 2).sum()


def test_small_arrays_are_not_mirrored():
    x = dispatch.asarray(numpy.arange(1000, dtype=numpy.float64))
    _device_sum(x)
    assert mirrors.stats()["mirrors"] == 0


def test_least_recently_used_mirrors_go_first_under_the_budget():
    arrays = [_fresh()[0] for _ in range(3)]
    mirrors.set_budget(2 * arrays[0].nbytes)
    try:
        for a in arrays:
            _device_sum(a)
        assert mirrors.kept() <= 2 * arrays[0].nbytes
        before = _sent()
        _device_sum(arrays[2])  # the most recent: still kept
        assert _sent() == before
        _device_sum(arrays[0])  # the least recent was evicted: sent again
        assert _sent() - before >= arrays[0].nbytes
    finally:
        mirrors.set_budget(4 << 30)


def test_out_of_memory_evicts_the_devices_mirrors(monkeypatch):
    x, ref = _fresh()
    _device_sum(x)
    assert mirrors.kept() > 0
    target = dispatch.targets.probe("cupy")

    def oom(*args, **kwargs):
        raise MemoryError("out of memory allocating 8 GiB")

    monkeypatch.setattr(target, "run", oom)
    with dispatch.using("cupy"):
        assert float((x * 2.0).sum()) == (ref * 2).sum()  # NumPy ran it
    assert mirrors.kept() == 0


def test_a_dead_host_array_takes_its_mirror_with_it():
    x, _ = _fresh()
    _device_sum(x)
    assert mirrors.stats()["mirrors"] == 1
    del x
    assert mirrors.stats()["mirrors"] == 0
