"""A creation function's large result made where its line's last result moved
(``dispatch.arrays.creations``): ``rows = np.zeros(shape)`` that a device then computes into is
made on that device the next time the line runs, so its constant content no longer crosses.

Runs the cupy target on the fake CuPy (``tests/fakecupy.py``), on both of the operator paths
(the compiled one hands such creations to Python while device copies are kept). Each result is
compared with NumPy's, with its dtype and shape.
"""

from __future__ import annotations

import fakecupy
import numpy
import pytest
from helpers import assert_same, fake_cupy_router

import dispatch
from dispatch.arrays import creations, mirrors
from dispatch.targets import _staging

if fakecupy.real_cupy_installed():
    pytest.skip("a real CuPy is installed: the fake would replace it in sys.modules", allow_module_level=True)

N = 1 << 18  # 2 MiB of float64: over mirrors.MIN_BYTES


@pytest.fixture(autouse=True)
def fake_gpu(tmp_path, monkeypatch, operator_path):
    with fake_cupy_router(tmp_path, monkeypatch):  # (its mirrors and lines cleared before and after)
        yield
        _KEPT.clear()


_KEPT: list = []


def _device_data() -> tuple:
    """``d`` on the (fake) device, made from dispatch's own host array, whose copy the device keeps
    while it lives (device copies kept: the compiled path hands large creations to Python); and
    NumPy's."""
    a = dispatch.arange(N, dtype=numpy.float64)
    with dispatch.using("cupy"):
        d = a * 0.5
    assert not d.device.is_host and mirrors.stats()["mirrors"] == 1
    _KEPT[:] = [a]
    return d, numpy.arange(N, dtype=numpy.float64) * 0.5


def _accumulate(d, make=dispatch.zeros):
    """One line makes the array, a device computes into it (forced there: the move, not the
    router's choice, is under test). Returns it and where it was made."""
    rows = make(N)
    made_on_host = rows.device.is_host
    with dispatch.using("cupy"):
        rows += d
    return rows, made_on_host


def test_a_line_whose_result_moved_to_a_device_makes_the_next_one_there():
    d, ref = _device_data()
    first, on_host = _accumulate(d)
    assert on_host and not first.device.is_host  # made on the host, moved at the device's write
    assert creations.stats()["sites"] == 1
    sent = _staging.moved()["to_device"]
    second, on_host = _accumulate(d)
    assert not on_host  # made on the device: nothing of it crossed
    assert _staging.moved()["to_device"] == sent
    assert creations.stats()["made"] == 1
    assert_same(first, ref)
    assert_same(second, ref)


def test_the_creation_is_traced_with_its_reason():
    d, _ = _device_data()
    _accumulate(d)
    with dispatch.trace() as t:
        rows, on_host = _accumulate(d, dispatch.ones)  # another line: made on the host
        again, _ = _accumulate(d)
    assert on_host
    made = [r for r in t.records if r.op == "zeros"]
    assert len(made) == 1 and made[0].target == "cupy" and "last result moved" in made[0].reason
    assert_same(rows, numpy.ones(N) + numpy.arange(N) * 0.5)
    assert_same(again, numpy.arange(N) * 0.5)


def test_a_forced_target_decides_the_creation_whatever_the_line_did():
    d, ref = _device_data()
    _accumulate(d)
    with dispatch.using("numpy"):
        rows = dispatch.zeros(N)  # not the learned line, but under numpy no line's history counts
    assert rows.device.is_host
    for _ in range(2):
        with dispatch.using("numpy"):
            got, on_host = _accumulate_forced_numpy(d)
        assert on_host
        assert_same(got, ref)


def _accumulate_forced_numpy(d):
    rows = dispatch.zeros(N)
    return rows + d, rows.device.is_host


def test_small_results_are_never_noted():
    d = dispatch.arange(16, dtype=numpy.float64)
    with dispatch.using("cupy"):
        d = d * 0.5
    for _ in range(2):
        rows = dispatch.zeros(16)
        assert rows.device.is_host
        with dispatch.using("cupy"):
            rows += d
    assert creations.stats()["sites"] == 0
    assert_same(rows, numpy.arange(16) * 0.5)


def test_elements_read_one_by_one_send_a_guess_home_and_the_line_makes_host_arrays_again():
    d, ref = _device_data()
    _accumulate(d)
    rows, on_host = _accumulate(d)
    assert not on_host
    expected = ref.copy()
    for i in range(2000):  # a scalar loop over it: each access a round trip, until they cost a copy
        assert rows[i] == expected[i]
        if rows.device.is_host:
            break
    assert rows.device.is_host and creations.stats()["returned"] == 1
    rows[3] = -1.0
    expected[3] = -1.0
    assert_same(rows, expected)
    _, on_host = _accumulate(d)
    assert on_host  # the line's history starts over


def test_an_engine_that_fails_the_creation_leaves_it_to_the_host_recorded(monkeypatch):
    d, ref = _device_data()
    _accumulate(d)
    target = dispatch.targets.probe("cupy")
    run = target.run

    def failing(op, args, kwargs):
        if op.name == "zeros":
            raise MemoryError("out of memory allocating 2097152 bytes")
        return run(op, args, kwargs)

    monkeypatch.setattr(target, "run", failing)
    with dispatch.trace() as t:
        rows, on_host = _accumulate(d)
    assert on_host
    assert any(op == "zeros" and "out of memory" in why for op, why in t.fallbacks)
    assert_same(rows, ref)
    assert creations.stats()["sites"] == 1  # moved again at the write: noted again


def test_bad_arguments_at_a_learned_line_raise_numpys_error():
    d, ref = _device_data()
    for dtype in (numpy.float64, numpy.float64, "float33"):
        if dtype == "float33":
            with pytest.raises(TypeError) as numpys:
                numpy.zeros(N, dtype=dtype)
            with pytest.raises(TypeError) as ours:
                _accumulate_dtype(d, dtype)
            assert str(ours.value) == str(numpys.value)
        else:
            assert_same(_accumulate_dtype(d, dtype), ref)


def _accumulate_dtype(d, dtype):
    rows = dispatch.zeros(N, dtype=dtype)
    with dispatch.using("cupy"):
        rows += d
    return rows
