"""Mirrors on a real device (cupy, torch-cuda, torch-mps): a host array read there is copied
once while unwritten, and a device array read on the host is copied back once; every write path
invalidates the copy (on the device: through a view, or another engine over the same memory),
a hand-out is the caller's own, and the budgets evict. Skips cleanly where the machine has no
device (``tests/test_mirrors.py`` and ``tests/test_mirrors_host.py`` run the same rules on the
fake CuPy)."""

from __future__ import annotations

import numpy
import pytest
from conftest import DEVICE_BACKENDS, backend_params
from mirror_writes import ewma

import dispatch
from dispatch.arrays import mirrors
from dispatch.base.devices import HOST
from dispatch.targets import _staging

N = 1 << 18  # 2 MiB of float64


@pytest.fixture(params=backend_params(tuple(sorted(DEVICE_BACKENDS))))
def device(request):
    if dispatch.targets.probe(request.param) is None:
        pytest.skip(f"{request.param} is not available here: {dispatch.targets.unavailable().get(request.param)}")
    mirrors.clear()
    yield request.param
    mirrors.clear()


def _device_sum(x, name) -> float:
    with dispatch.using(name):
        return float((x * 2.0).sum())


def _writes():
    def setitem(x, ref):
        x[3] = -1.0
        ref[3] = -1.0

    def iadd(x, ref):
        x += 1.0
        ref += 1.0

    def out(x, ref):
        dispatch.multiply(x, 0.5, out=x)
        ref *= 0.5

    def view(x, ref):
        v = x[10:20]
        v[1] = 9.0
        ref[11] = 9.0

    def handed(x, ref):
        numpy.asarray(x)[4] = 4.5
        ref[4] = 4.5

    return [setitem, iadd, out, view, handed]


@pytest.mark.gpu
def test_copied_once_then_every_write_invalidates(device):
    ref = numpy.arange(N, dtype=numpy.float64)
    x = dispatch.array(ref)
    assert _device_sum(x, device) == pytest.approx((ref * 2).sum(), rel=1e-12)
    before = _staging.moved()["to_device"]
    assert _device_sum(x, device) == pytest.approx((ref * 2).sum(), rel=1e-12)
    assert _staging.moved()["to_device"] - before < x.nbytes  # read from the kept copy
    for write in _writes():
        write(x, ref)
        assert _device_sum(x, device) == pytest.approx((ref * 2).sum(), rel=1e-12), write.__name__


@pytest.mark.gpu
def test_the_budget_evicts_least_recently_used(device):
    arrays = [dispatch.array(numpy.full(N, float(i))) for i in range(3)]
    mirrors.set_budget(2 * arrays[0].nbytes)
    try:
        for i, a in enumerate(arrays):
            assert _device_sum(a, device) == pytest.approx(2.0 * i * N)
        assert mirrors.kept() <= 2 * arrays[0].nbytes
    finally:
        mirrors.set_budget(4 << 30)


def _host_read(x) -> numpy.ndarray:
    """``x * 1`` run by NumPy on the host: the device array read there."""
    with dispatch.using("numpy"):
        y = dispatch.multiply(x, 1.0)
    assert y.device == HOST
    return numpy.asarray(y)


def _device_writes(device):
    def setitem(x, ref):
        x[3] = -1.0
        ref[3] = -1.0

    def iadd(x, ref):
        with dispatch.using(device):
            x += 1.0
        ref += 1.0

    def out(x, ref):
        with dispatch.using(device):
            dispatch.multiply(x, 0.5, out=x)
        ref *= 0.5

    def view(x, ref):
        v = x[10:20]
        v[1] = 9.0
        ref[11] = 9.0

    def on_host(x, ref):
        with dispatch.using("numpy"):
            dispatch.negative(x, x)  # NumPy writes it by position: its copy assigned back to the device
        numpy.negative(ref, ref)

    def other_engine(x, ref):  # the other engine on this device, over the same memory (DLPack)
        others = [n for n in sorted(DEVICE_BACKENDS) if n != device and dispatch.targets.probe(n) is not None
                  and dispatch.targets.probe(n).device == dispatch.targets.probe(device).device]
        if not others:
            return
        y = x.to(others[0])
        assert y.target == others[0]
        y[5] = 55.0
        ref[5] = 55.0

    return [setitem, iadd, out, view, on_host, other_engine]


@pytest.mark.gpu
def test_host_copy_read_once_then_every_device_write_invalidates(device):
    ref = numpy.arange(N, dtype=numpy.float64)
    x = dispatch.array(ref).to(device)
    numpy.testing.assert_array_equal(_host_read(x), ref)
    before = _staging.moved()["to_host"]
    numpy.testing.assert_array_equal(_host_read(x), ref)
    assert x.tolist() == ref.tolist()
    assert _staging.moved()["to_host"] - before < x.nbytes  # read from the kept host copy
    for write in _device_writes(device):
        write(x, ref)
        assert x.device != HOST, write.__name__
        got = _host_read(x)
        assert got.dtype == ref.dtype and got.shape == ref.shape
        numpy.testing.assert_array_equal(got, ref, err_msg=write.__name__)
        assert x.tolist() == ref.tolist(), write.__name__


@pytest.mark.gpu
def test_a_handed_out_host_array_is_the_callers_own(device):
    ref = numpy.arange(N, dtype=numpy.float64)
    x = dispatch.array(ref).to(device)
    _host_read(x)
    before = _staging.moved()["to_host"]
    handed = numpy.asarray(x)
    assert _staging.moved()["to_host"] == before  # copied from the kept host copy
    assert handed.flags.writeable
    handed[:] = -1.0
    numpy.testing.assert_array_equal(_host_read(x), ref)
    numpy.testing.assert_array_equal(numpy.asarray(x), ref)


@pytest.mark.gpu
def test_the_host_budget_evicts_least_recently_used(device):
    arrays = [dispatch.array(numpy.full(N, float(i))).to(device) for i in range(3)]
    mirrors.set_host_budget(2 * arrays[0].nbytes)
    try:
        for i, a in enumerate(arrays):
            numpy.testing.assert_array_equal(_host_read(a), numpy.full(N, float(i)))
        assert mirrors.kept(HOST) <= 2 * arrays[0].nbytes
    finally:
        mirrors.set_host_budget(2 << 30)


@pytest.mark.gpu
def test_rows_of_device_data_read_in_a_loop_come_from_one_host_copy(device, monkeypatch):
    monkeypatch.setattr(mirrors, "HOME_VIEWS", 1 << 40)  # (kept on the device: its writes are the point)
    ref = numpy.arange(N, dtype=numpy.float64).reshape(-1, 32)
    x = dispatch.array(ref).to(device)
    before = _staging.moved()["to_host"]
    for t in range(40):
        got = _host_read(x[t])
        assert got.dtype == ref.dtype and got.shape == ref[t].shape
        numpy.testing.assert_array_equal(got, ref[t])
        numpy.testing.assert_array_equal(_host_read(x[:, t % 32]), ref[:, t % 32])
    reads = x.nbytes // mirrors.READ_BYTES + 1  # (rows and columns read one by one until then)
    assert _staging.moved()["to_host"] - before < x.nbytes + reads * ref[:, 0].nbytes
    for write in _device_writes(device):
        write(x.reshape(-1), ref.reshape(-1))
        for t in (0, 1, 2, 3, 5, 11):  # no stale row, before the copy is made again and after
            numpy.testing.assert_array_equal(_host_read(x[t]), ref[t], err_msg=write.__name__)


@pytest.mark.gpu
def test_a_cupy_array_read_row_by_row_on_the_host_moves_home(device):
    ref = numpy.arange(N, dtype=numpy.float64).reshape(-1, 32)
    x = dispatch.array(ref).to(device)
    y = dispatch.zeros((200, 32))
    for t in range(200):
        row = x[t]  # (indexed as routed: under ``using`` every call takes the general path)
        with dispatch.using("numpy"):
            y[t] = 0.5 * row
        del row
    numpy.testing.assert_array_equal(numpy.asarray(y), 0.5 * ref[:200])
    assert (x.device == HOST) == (device == "cupy")  # (torch's views keep no count of their holders)
    with dispatch.using(device):
        assert float((x * 2.0).sum()) == (ref * 2.0).sum()
    x[3] = -1.0
    ref[3] = -1.0
    with dispatch.using(device):
        numpy.testing.assert_array_equal(numpy.asarray(x * 2.0), ref * 2.0)



def test_a_small_device_array_read_element_by_element_moves_home(device):
    ref = numpy.random.default_rng(3).standard_normal((200, 100))
    with dispatch.using(device):
        means = dispatch.array(ref).mean(axis=1)  # on the device, 1.6 kB
    assert means.device != HOST
    z = ewma(dispatch, means)
    assert means.device == HOST and z.device == HOST  # each moved once its reads cost about a copy
    numpy.testing.assert_allclose(numpy.asarray(z), ewma(numpy, ref.mean(axis=1)), rtol=1e-12)


def test_a_small_device_array_with_a_view_alive_stays_on_the_device(device):
    ref = numpy.arange(100.0)
    x = dispatch.array(ref).to(device)
    view = x[10:]  # (it shares x's memory: moving x would part them)
    assert [float(x[i]) for i in range(5)] == list(ref[:5])
    assert x.device != HOST
    x[12] = -1.0
    assert float(view[2]) == -1.0
