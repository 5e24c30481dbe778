"""Large slices of host memory read on a device as slices of the memory's one copy
(``mirrors.through_owner``): a stencil's shifted slices copy their array once, as a plan prices
its source, and no stale copy is read after a write through any of them.

Runs the cupy target on the fake CuPy (``tests/fakecupy.py``): its "device" arrays are NumPy
memory, so a stale or misplaced slice gives a wrong value, which each test compares with NumPy's.
"""

from __future__ import annotations

import fakecupy
import numpy
import pytest
from helpers import assert_same, fake_cupy_router

import dispatch
from dispatch.arrays import mirrors
from dispatch.targets import _staging

if fakecupy.real_cupy_installed():
    pytest.skip("a real CuPy is installed: the fake would replace it in sys.modules", allow_module_level=True)

SIDE = 512  # 2 MiB of float64: over mirrors.MIN_BYTES


@pytest.fixture(autouse=True)
def fake_gpu(tmp_path, monkeypatch, operator_path):
    with fake_cupy_router(tmp_path, monkeypatch):  # (its mirrors cleared before and after)
        yield


def _sent() -> int:
    return _staging.moved()["to_device"]


def _image() -> tuple:
    ref = numpy.arange(SIDE * SIDE, dtype=numpy.float64).reshape(SIDE, SIDE) % 7.0
    return dispatch.array(ref), ref  # a copy: dispatch's own memory


def _slices(p) -> list:
    """A Sobel-like stencil's shifted slices, taken where the data is (on the host, as indexing
    stays where its data is)."""
    return [p[:-2, 2:], p[1:-1, 2:], p[2:, 2:], p[:-2, :-2], p[1:-1, :-2], p[2:, :-2]]


def _stencil(s):
    return (s[0] + 2 * s[1] + s[2]) - (s[3] + 2 * s[4] + s[5])


def _on_device(p):
    slices = _slices(p)
    assert all(v.device.is_host for v in slices)
    with dispatch.using("cupy"):  # each slice read by a device call
        return _stencil(slices)


def test_shifted_slices_copy_their_memory_once():
    p, ref = _image()
    before, served = _sent(), mirrors.stats()["slices"]
    assert_same(_on_device(p), _stencil(_slices(ref)))
    assert _sent() - before == p.nbytes  # the array once, not each of its six slices
    assert mirrors.stats()["slices"] - served == 6
    assert_same(_on_device(p), _stencil(_slices(ref)))
    assert _sent() - before == p.nbytes  # kept: nothing sent again


def test_a_write_through_a_slice_drops_the_copy_and_the_next_read_sees_it():
    p, ref = _image()
    assert_same(_on_device(p), _stencil(_slices(ref)))
    view = p[1:-1, :]
    view += 1.0  # a write to the memory through a view, on the host
    ref[1:-1, :] += 1.0
    before = _sent()
    assert_same(_on_device(p), _stencil(_slices(ref)))
    assert _sent() - before == p.nbytes  # copied again, once
    p[5, 7] = -3.0
    ref[5, 7] = -3.0
    assert_same(_on_device(p), _stencil(_slices(ref)))


def test_slices_under_half_their_memory_or_reversed_are_copied_as_themselves():
    p, ref = _image()
    before, served = _sent(), mirrors.stats()["slices"]
    top, reversed_rows = p[:10, :], p[::-1, :]
    with dispatch.using("cupy"):
        small = top * 2.0
        reversed_rows = reversed_rows * 2.0
    assert_same(small, ref[:10, :] * 2.0)
    assert_same(reversed_rows, ref[::-1, :] * 2.0)
    assert _sent() - before == p[:10, :].nbytes + p.nbytes  # each its own bytes; the memory never whole twice
    assert mirrors.stats()["slices"] == served


def test_a_slice_handed_back_as_a_result_is_no_longer_a_copy():
    """A device call whose result is the slice it was given, or a view of it (the program may
    write that result on the device): the memory's copy is dropped, never read again."""
    from dispatch.arrays import _call

    p, ref = _image()
    target = dispatch.targets.probe("cupy")
    for result_of in (lambda s: s, lambda s: s[3:]):
        handed: list = []
        served = _call._native_for(target, handed)(p[1:, :])
        assert mirrors.valid_on(p, "cupy")
        mirrors.released(result_of(served), handed)
        assert not mirrors.valid_on(p, "cupy")
    with dispatch.using("cupy"):
        assert_same(p[2:, :] * 1.0, ref[2:, :])


def test_the_router_prices_a_slice_of_kept_memory_as_there():
    p, _ = _image()
    view = p[1:-1, 2:]
    assert not mirrors.valid_on(view, "cupy")
    _on_device(p)
    assert mirrors.valid_on(view, "cupy") and mirrors.valid_on(view, "cuda:0")
    assert not mirrors.valid_on(p[:10, :], "cupy")  # read as itself: a copy of its own
    p[0, 0] = 1.0
    assert not mirrors.valid_on(view, "cupy")
