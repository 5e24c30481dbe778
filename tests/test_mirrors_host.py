"""Host copies of device arrays (``dispatch.arrays.mirrors``, the device-to-host half): kept while
neither side is written, invalidated by every device write dispatch sees, never handed out to be
written, bounded by a host budget; and ``valid_on``, which tells the router where an input reads
without a copy.

Runs the cupy target on the fake CuPy (``tests/fakecupy.py``): its "device" arrays are NumPy
memory, so a stale host copy would give a wrong value, which each test compares with NumPy's.
Host reads run under ``dispatch.using("numpy")`` (a host target's call on device data), or are
``tolist``, ``repr``, ``item`` and ``numpy.asarray``.
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
    ewma,
)

import dispatch
from dispatch.arrays import _call, mirrors
from dispatch.arrays._array import held
from dispatch.base import box
from dispatch.base.devices import HOST
from dispatch.targets import _staging

if fakecupy.real_cupy_installed():
    pytest.skip("a real CuPy is installed: the fake would replace it in sys.modules", allow_module_level=True)


@pytest.fixture(autouse=True)
def fake_gpu(tmp_path, monkeypatch, operator_path):
    with fake_cupy_router(tmp_path, monkeypatch):
        mirrors.clear()
        yield
        mirrors.clear()


def _copied_back() -> int:
    return _staging.moved()["to_host"]


def _on_device(ref: numpy.ndarray) -> dispatch.ndarray:
    x = dispatch.array(ref).to("cupy")
    assert x.device != HOST
    return x


def _fresh() -> tuple:
    ref = numpy.arange(N, dtype=numpy.float64)
    return _on_device(ref), ref


def _host_read(x) -> numpy.ndarray:
    """``x * 1`` run by NumPy on the host (the device array read there), as a host array."""
    with dispatch.using("numpy"):
        y = dispatch.multiply(x, 1.0)
    assert y.device == HOST
    return numpy.asarray(y)


def _check(x, ref) -> None:
    got = _host_read(x)
    assert got.dtype == ref.dtype and got.shape == ref.shape
    numpy.testing.assert_array_equal(got, ref)
    assert x.tolist() == ref.tolist()


def _counted() -> dict:
    """What ``mirrors.stats()`` counts from now on (its counts run since the process started)."""
    start = mirrors.stats()

    class Since:
        def __getitem__(self, key: str) -> int:
            return mirrors.stats()[key] - (start[key] if key in mirrors._counts else 0)

    return Since()


def test_device_data_read_on_the_host_is_copied_back_once():
    x, ref = _fresh()
    stats = _counted()
    before = _copied_back()
    numpy.testing.assert_array_equal(_host_read(x), ref)
    assert _copied_back() - before == x.nbytes
    assert mirrors.stats()["host_mirrors"] == 1
    numpy.testing.assert_array_equal(_host_read(x), ref)
    assert x.tolist() == ref.tolist()
    assert repr(x) == repr(ref)
    assert x.item(5) == ref.item(5)
    assert _copied_back() - before == x.nbytes  # every later read served by the kept copy
    assert stats["host_hits"] >= 4 and stats["host_hit_bytes"] >= 4 * x.nbytes
    assert stats["host_misses"] == 1 and stats["host_bytes"] == x.nbytes


def _method_positional_out(x, ref):
    _on_device(numpy.full(N, 0.25)).clip(0.0, 1.0, x)
    numpy.full(N, 0.25).clip(0.0, 1.0, ref)


def _other_array_same_memory(x, ref):
    y = x.view()  # another device array object over the same memory
    y[7] = -7.0
    ref[7] = -7.0


def _sort(x, ref):
    x *= -1.0
    ref *= -1.0
    _check(x, ref)  # a host copy of the unsorted values
    x.sort()
    ref.sort()


def _real(x, ref):
    x.real = numpy.ones(N)
    ref.real = numpy.ones(N)


WRITES = [_setitem, _setitem_slice, _iadd, _out, _numpy_out, _ufunc_positional_out, _method_positional_out,
          _fill, _sort, _copyto, _put, _ufunc_at, _flat, _real]
# (a view a host target makes of device data is a host copy: these write through a device view)
VIEW_WRITES = [_view_setitem, _view_iadd, _other_array_same_memory]
PLACES = {"routed": None, "on-device": "cupy", "on-host": "numpy"}


@pytest.mark.parametrize(("write", "where"), [(w, p) for w in WRITES for p in PLACES]
                         + [(w, p) for w in VIEW_WRITES for p in ("routed", "on-device")],
                         ids=lambda v: v if isinstance(v, str) else v.__name__[1:])
def test_every_device_write_invalidates_the_host_copy(write, where):
    where = PLACES[where]
    x, ref = _fresh()
    _check(x, ref)
    assert mirrors.stats()["host_mirrors"] == 1  # the copy is made and kept
    if where is None:
        write(x, ref)
    else:
        with dispatch.using(where):
            write(x, ref)
    assert x.device != HOST
    _check(x, ref)  # no stale copy read
    _check(x, ref)


def test_numpy_asarray_hands_out_a_copy_of_the_callers_own():
    x, ref = _fresh()
    _check(x, ref)
    kept = mirrors._host_mirrors[id(x._engine_array)].copy
    before = _copied_back()
    handed = numpy.asarray(x)
    assert _copied_back() == before  # copied from the kept copy, not from the device
    assert handed.flags.writeable and handed.dtype == ref.dtype and handed.shape == ref.shape
    assert not numpy.shares_memory(handed, kept)
    handed[0] = 1e6  # the caller's to write: neither the device data nor the kept copy changes
    handed += 1.0
    _check(x, ref)
    again = numpy.asarray(x)
    assert not numpy.shares_memory(again, handed)
    numpy.testing.assert_array_equal(again, ref)
    assert _copied_back() == before


def test_a_hand_out_keeps_no_copy_of_its_own():
    x, ref = _fresh()
    handed = numpy.asarray(x)  # the one read a program makes at its end: one copy, none kept
    numpy.testing.assert_array_equal(handed, ref)
    assert handed.flags.writeable
    assert mirrors.stats()["host_mirrors"] == 0


def test_the_kept_copy_cannot_be_written():
    x, ref = _fresh()
    _check(x, ref)
    kept = mirrors._host_mirrors[id(x._engine_array)].copy
    with pytest.raises(ValueError, match="read-only"):
        kept[0] = 1.0


def test_a_host_result_viewing_the_kept_copy_takes_it_over():
    x, ref = _fresh()
    _check(x, ref)
    stats = _counted()
    with dispatch.using("numpy"):
        y = dispatch.reshape(x, (512, -1))  # NumPy's reshape: a view of the host copy it read
    assert y.device == HOST
    y[0, 0] = -5.0  # the program's own array now, written as NumPy's would be
    assert float(y[0, 0]) == -5.0
    assert stats["host_claimed"] == 1
    _check(x, ref)  # x, on the device, still reads as it was


def test_a_host_calls_positional_output_on_the_device_gets_its_writes():
    x, ref = _fresh()
    z = _on_device(numpy.zeros(N))
    _check(z, numpy.zeros(N))
    with dispatch.using("numpy"):
        got = dispatch.negative(x, z)
    assert got is z and z.device != HOST
    _check(z, -ref)


def test_device_memory_shared_through_dlpack_is_never_read_from_a_copy():
    x, ref = _fresh()
    _check(x, ref)
    shared = numpy.from_dlpack(x)  # (the fake's device memory is host memory: written here unseen)
    shared[0] = 7.0
    ref[0] = 7.0
    _check(x, ref)
    shared[1] = -7.0
    ref[1] = -7.0
    _check(x, ref)  # never kept again


def test_a_callers_device_array_wrapped_as_it_is_stays_the_callers():
    import cupy  # the fake

    raw = cupy.asarray(numpy.arange(N, dtype=numpy.float64))
    # A device call given the caller's CuPy array may hand it back as its result (CuPy's asarray
    # does): the call path's conversion meets it, and the result wraps it as it is. (The fake's
    # arrays subclass NumPy's, so dispatch's functions give them to NumPy: the path is run here.)
    assert _call._native_for(dispatch.targets.probe("cupy"))(raw) is raw
    x = held(raw)
    ref = numpy.arange(N, dtype=numpy.float64)
    _check(x, ref)
    raw[0] = 123.0  # written through the caller's own name
    ref[0] = 123.0
    _check(x, ref)


def test_small_device_arrays_are_not_kept():
    x = _on_device(numpy.arange(1000, dtype=numpy.float64))
    _host_read(x)
    assert mirrors.stats()["host_mirrors"] == 0


def test_least_recently_used_host_copies_go_first_under_the_host_budget():
    arrays = [_fresh()[0] for _ in range(3)]
    stats = _counted()
    mirrors.set_host_budget(2 * arrays[0].nbytes)
    try:
        for a in arrays:
            _host_read(a)
        assert mirrors.kept(HOST) <= 2 * arrays[0].nbytes
        assert stats["host_evicted"] == 1
        before = _copied_back()
        _host_read(arrays[2])  # the most recent: still kept
        assert _copied_back() == before
        _host_read(arrays[0])  # the least recent was evicted: copied back again
        assert _copied_back() - before == arrays[0].nbytes
    finally:
        mirrors.set_host_budget(2 << 30)


def test_out_of_host_memory_gives_the_host_copies_back_first(monkeypatch):
    x, ref = _fresh()
    y, _ = _fresh()
    _host_read(x)
    assert mirrors.kept(HOST) == x.nbytes
    target = dispatch.targets.probe("cupy")
    real = target.to_host
    failed = []

    def once(native):
        if not failed:
            failed.append(True)
            raise MemoryError("cannot allocate 2 MiB")
        return real(native)

    monkeypatch.setattr(target, "to_host", once)
    stats = _counted()
    numpy.testing.assert_array_equal(_host_read(y), ref)  # read after the kept copies were given back
    assert failed and stats["host_evicted"] == 1
    assert id(x._engine_array) not in mirrors._host_mirrors


def test_a_dead_device_array_takes_its_host_copy_with_it():
    x, _ = _fresh()
    _host_read(x)
    assert mirrors.stats()["host_mirrors"] == 1
    del x
    assert mirrors.stats()["host_mirrors"] == 0


@pytest.mark.parametrize("ask", [mirrors.valid_on, box.valid_on], ids=["mirrors", "box"])
def test_valid_on_tells_where_an_input_reads_without_a_copy(ask):
    cupy_target = dispatch.targets.probe("cupy")
    h = dispatch.array(numpy.arange(N, dtype=numpy.float64))
    assert ask(h, "cpu") and ask(h, HOST) and ask(h, "numpy")
    assert not ask(h, "cupy") and not ask(h, cupy_target.device)
    with dispatch.using("cupy"):
        float((h * 2.0).sum())  # copied there, and kept
    assert ask(h, "cupy") and ask(h, cupy_target) and ask(h, cupy_target.device) and ask(h._engine_array, "cupy")
    h[0] = 1.0
    assert not ask(h, "cupy")

    d, _ = _fresh()
    assert ask(d, "cupy") and ask(d, cupy_target.device)
    assert not ask(d, "cpu") and not ask(d, "numpy")
    _host_read(d)
    assert ask(d, "cpu") and ask(d, "numpy") and ask(d._engine_array, HOST)
    with dispatch.using("cupy"):
        d += 1.0
    assert not ask(d, "cpu")
    assert ask(d, "cupy")



def test_a_small_device_array_read_element_by_element_moves_home():
    ref = numpy.random.default_rng(3).standard_normal((200, 100))
    means = _on_device(ref).mean(axis=1)  # on the device, 1.6 kB
    assert means.device != HOST
    before = mirrors.stats()["element_homes"]
    z = ewma(dispatch, means)
    assert means.device == HOST and z.device == HOST  # each moved once its reads cost about a copy
    assert mirrors.stats()["element_homes"] == before + 2
    numpy.testing.assert_allclose(numpy.asarray(z), ewma(numpy, ref.mean(axis=1)), rtol=1e-12)
    assert type(z[3]) is numpy.float64  # NumPy's scalar, read on the host


def test_a_small_device_array_moves_only_after_its_reads_cost_a_copy():
    x = _on_device(numpy.arange(1 << 16, dtype=numpy.float64))  # 512 kB: a copy costs four reads
    for i in range(3):
        assert float(x[i]) == i
    assert x.device != HOST
    assert float(x[3]) == 3.0
    assert x.device == HOST


def test_a_small_device_array_with_a_view_alive_stays_on_the_device():
    ref = numpy.arange(100.0)
    x = _on_device(ref.copy())
    view = x[10:]  # (it shares x's memory: moving x would part them)
    assert [float(x[i]) for i in range(5)] == list(ref[:5])
    assert x.device != HOST
    x[12] = -1.0
    assert float(view[2]) == -1.0


def test_a_forced_target_keeps_a_small_array_where_it_was_put():
    x = _on_device(numpy.arange(100.0))
    before = mirrors.stats()["element_homes"]
    with dispatch.using("cupy"):
        assert [float(x[i]) for i in range(5)] == [0.0, 1.0, 2.0, 3.0, 4.0]
        x[1] = 7.0
    assert x.device != HOST and mirrors.stats()["element_homes"] == before
    numpy.testing.assert_array_equal(numpy.asarray(x)[:3], [0.0, 7.0, 2.0])


def test_element_writes_alone_move_a_small_array_home():
    x = _on_device(numpy.zeros(50))
    for i in range(50):
        x[i] = i * 0.5
    assert x.device == HOST
    numpy.testing.assert_array_equal(numpy.asarray(x), numpy.arange(50) * 0.5)
