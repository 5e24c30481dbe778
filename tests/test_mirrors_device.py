"""Mirrors on a real device (cupy, torch-cuda, torch-mps): a host array read there is copied
once while unwritten, every write path invalidates the copy, and the budget evicts. Skips
cleanly where the machine has no device (``tests/test_mirrors.py`` runs the same rules on the
fake CuPy)."""

from __future__ import annotations

import numpy
import pytest
from conftest import DEVICE_BACKENDS, backend_params

import dispatch
from dispatch.arrays import mirrors
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
