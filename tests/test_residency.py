"""Entering a device from host data, one call at a time: a call no region's plan decides must
win the round trip; data on a device stays with the engine holding it; timings are the call's own.

Runs the cupy target on the fake CuPy (``tests/fakecupy.py``) under hand-made calibrations, so
the prices are known; the values are still compared with NumPy's.
"""

from __future__ import annotations

import time

import fakecupy
import numpy
import pytest
from _synthetic import GPU_TRANSFER, synthetic
from helpers import fake_cupy_router

import dispatch
from dispatch.arrays._call import Inputs
from dispatch.base.ops import op_named
from dispatch.routing import calibration, cost, router
from dispatch.routing.history import History, call_kind

if fakecupy.real_cupy_installed():
    pytest.skip("a real CuPy is installed: the fake would replace it in sys.modules", allow_module_level=True)


@pytest.fixture(autouse=True)
def fake_gpu(tmp_path, monkeypatch):
    """The fake CuPy as the cupy target, a fresh history that neither explores nor learns from
    timed calls (the fake runs at NumPy's speed), and the router's state restored afterwards."""
    with fake_cupy_router(tmp_path, monkeypatch):
        yield


def _slow_way_back() -> calibration.Calibration:
    """The synthetic GPU (100x NumPy's speed, 10 GB/s in) with a 1 GB/s way back."""
    cal = synthetic(gpu=True, torch_cpu=False)
    cal.targets["cupy"]["transfer"] = dict(GPU_TRANSFER, to_host_staged=1e9, to_host_pageable=1e9)
    return cal


def _priced(cal: calibration.Calibration, name: str, op, inputs) -> float:
    model = cost.models_from(cal)[name]
    where = type("Priced", (), {"name": name, "device": model.device})()
    return cost.estimate(model, where, op, inputs, scalar_result=False)


N = 1_000_000


def test_a_lone_call_must_win_the_round_trip():
    cal = _slow_way_back()
    router.use_calibration(cal)
    op = op_named("exp")
    inputs = Inputs([dispatch.asarray(numpy.linspace(0.0, 1.0, N))])
    # the device wins the call with the copy in (0.9 ms against NumPy's 4 ms)...
    assert _priced(cal, "cupy", op, inputs) < _priced(cal, "numpy", op, inputs) / 3
    # ...but not with its 8 MB result copied back at 1 GB/s
    way_back = cost.return_seconds(cost.models_from(cal)["cupy"], op, inputs)
    assert way_back == pytest.approx(30e-6 + N * 8 / 1e9)
    decision = router.decide(op, inputs, (), {})
    assert decision.target.name == "numpy" and decision.reason.startswith("cost model")


def _stencil_program(u0: numpy.ndarray, steps: int):
    """A loop over an array made once, updated in place (the heat workload's shape)."""
    u = dispatch.asarray(u0).copy()
    made_on = u.target
    for _ in range(steps):
        u[1:-1] += 0.25 * (u[:-2] - 2.0 * u[1:-1] + u[2:])
    return made_on, u, u.sum()


def test_an_array_made_and_barely_used_stays_on_the_host():
    router.use_calibration(_slow_way_back())
    u0 = numpy.linspace(0.0, 1.0, N)
    for _ in range(3):
        made_on, u, _ = _stencil_program(u0, steps=0)  # the copy, then only its sum
        assert made_on == "numpy"
    numpy.testing.assert_array_equal(numpy.asarray(u), u0)


def test_a_kind_of_call_refused_twice_for_its_arguments_is_not_offered_again(monkeypatch):
    router.use_calibration(synthetic(gpu=True, torch_cpu=False))  # the device wins exp's round trip
    cupy_target = dispatch.targets.probe("cupy")
    tries = []
    real_run = type(cupy_target).run

    def refusing(self, op, args, kwargs):
        if op.name == "exp":
            tries.append(op.name)
            raise dispatch.targets.Unsupported("not these arguments")
        return real_run(self, op, args, kwargs)

    monkeypatch.setattr(type(cupy_target), "run", refusing)
    host = numpy.linspace(0.0, 1.0, N)
    for _ in range(4):
        out = dispatch.exp(dispatch.asarray(host))
        assert out.target == "numpy"
        numpy.testing.assert_array_equal(numpy.asarray(out), numpy.exp(host))
    assert tries == ["exp", "exp"]  # asked twice, then remembered


def test_a_device_timing_read_later_re_decides_its_kind_of_call(monkeypatch):
    monkeypatch.setattr(router.ROUTER, "history", History(explore_probability=0.0))  # one that learns
    # The fake device computes on this host: its calls' time is the host's, which a loaded machine
    # can make slower than the copy back. Each is timed at 10 µs here, as a device's would be.
    pend = History.pend
    monkeypatch.setattr(History, "pend", lambda self, start, end, host_s, *rest: pend(self, start, end, 1e-5, *rest))
    router.use_calibration(synthetic(gpu=True, torch_cpu=False))
    host = numpy.linspace(0.0, 1.0, N)
    x = dispatch.asarray(host).to("cupy")
    op = op_named("exp")
    first = router.decide(op, Inputs([x]), (), {})
    assert first.target.name == "cupy" and first.reason.startswith("cost model") and first.sample
    dispatch.exp(x)  # the kind's first call on the device loads its kernel: its timing is no price
    assert "cupy" not in router.history.stats.get(first.key, {})
    assert router.decide(op, Inputs([x]), (), {}) is first  # kept, and timed again at the next call
    out = dispatch.exp(x)  # timed with device events, folded in once the device has passed them
    assert router.history.stats[first.key]["cupy"].samples == 1
    again = router.decide(op, Inputs([x]), (), {})
    # decided afresh on what it measured: the device kept, where its timing says it wins
    assert again is not first and again.target.name == "cupy" and again.reason.startswith("history")
    got, want = numpy.asarray(out), numpy.exp(host)
    assert got.dtype == want.dtype and got.shape == want.shape
    numpy.testing.assert_allclose(got, want, rtol=1e-15)


def test_data_on_a_device_stays_there_for_an_op_the_device_never_ran():
    router.use_calibration(synthetic(gpu=True, torch_cpu=False))
    op = op_named("exp")
    host = numpy.linspace(0.0, 1.0, 1 << 14)
    x = dispatch.asarray(host).to("cupy")
    assert call_kind(router.call_key(op, Inputs([x])), "cupy") not in router.history.ran
    # Coming back to NumPy (0.14 ms with the copy) would be cheaper than a first call there
    # (21 µs plus 1 ms), but the op would then never run there: no library beside it ran it.
    assert router.decide(op, Inputs([x]), (), {}).target.name == "cupy"
    out = dispatch.exp(x)
    assert out.target == "cupy"
    got, want = numpy.asarray(out), numpy.exp(host)
    assert got.dtype == want.dtype and got.shape == want.shape
    numpy.testing.assert_allclose(got, want, rtol=1e-15)


def test_an_engine_holding_the_input_keeps_it_unless_another_is_clearly_faster(monkeypatch):
    """Two engines on one device: the input stays with the engine holding it unless the other is
    priced ``router.KEEP_MARGIN`` cheaper: timings of one call on two engines are within each
    other's noise, and a program whose calls took turns between them would pay the crossing at
    every call."""
    cal = synthetic(gpu=True, torch_cpu=False)
    cupy_target = dispatch.targets.get("cupy")
    other = type("Engine", (), {"name": "torch-cuda", "device": cupy_target.device, "supports": lambda self, op: True,
                                "events": lambda self: None})()
    real_probe = router.targets.probe
    monkeypatch.setattr(router.targets, "probe", lambda name: other if name == "torch-cuda" else real_probe(name))
    monkeypatch.setattr(router.targets, "get", lambda name: other if name == "torch-cuda" else real_probe(name))
    registry = dispatch.targets.registry  # the other engine is up: its start-up is paid, whatever ran before
    monkeypatch.setattr(registry, "tried", lambda name, tried=registry.tried: name == "torch-cuda" or tried(name))
    monkeypatch.setattr(registry, "is_up", lambda name, is_up=registry.is_up: name == "torch-cuda" or is_up(name))
    monkeypatch.setattr(router, "GPU_TARGETS", ("cupy", "torch-cuda"))
    monkeypatch.setattr(router, "_PRICED", frozenset({*router._PRICED, "torch-cuda"}))
    op = op_named("exp")
    held = dispatch.asarray(numpy.linspace(0.0, 1.0, 1_000_000)).to("cupy")
    cupy_s = _priced(cal, "cupy", op, Inputs([held]))
    # the other engine's price with the crossing, at which the holder stops keeping the call
    even = cupy_s / (1 + router.KEEP_MARGIN)
    chosen = {}
    for other_s in (cupy_s, 1.02 * even, 0.98 * even):
        faster_by = cupy_s - other_s
        base = cal.targets["cupy"]["ops"]["float64"]
        ops = {**base, "exp": [[n, t - faster_by] for n, t in base["exp"]]}
        cal.targets["torch-cuda"] = dict(cal.targets["cupy"], ops={"float64": ops, "float32": ops})
        router.use_calibration(cal)
        assert _priced(cal, "torch-cuda", op, Inputs([held])) == pytest.approx(other_s)
        chosen[round(other_s / cupy_s, 3)] = router.decide(op, Inputs([held]), (held,), {}).target.name
    assert list(chosen.values()) == ["cupy", "cupy", "torch-cuda"], chosen


def test_a_transform_padded_to_n_points_is_priced_on_its_n_points():
    """``rfft(taps, n=2**20)`` of 255 taps transforms 2**20 points: not a small call."""
    router.use_calibration(synthetic(gpu=True, torch_cpu=False))
    taps = numpy.hamming(255)
    with dispatch.trace() as t:
        padded = dispatch.fft.rfft(dispatch.asarray(taps), n=1 << 20)
        plain = dispatch.fft.rfft(dispatch.asarray(taps))
    # a signal padded to the next power of two is priced on its own length, as before
    assert dispatch.arrays._call.fft_sized((numpy.ones((8, 4096)),), {"n": 8192})
    assert not dispatch.arrays._call.fft_sized((taps,), {"n": 1 << 20})
    transforms = [r for r in t.records if r.op == "fft.rfft"]  # (asarray is recorded too)
    assert [r.target for r in transforms] == ["cupy", "numpy"]
    assert transforms[1].reason.startswith("small")
    for got, want in ((padded, numpy.fft.rfft(taps, n=1 << 20)), (plain, numpy.fft.rfft(taps))):
        got = numpy.asarray(got)
        assert got.dtype == want.dtype and got.shape == want.shape
        numpy.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_the_input_summary_names_every_device_among_the_arrays():
    """Host arrays alone, a device array alone, both together, and none: the devices the
    router's key is made of, with sizes, bytes and dtypes in the arrays' order."""
    from dispatch.base.devices import HOST, HOST_ONLY, Device

    host = dispatch.asarray(numpy.ones((3, 4), dtype=numpy.float32))
    held = dispatch.asarray(numpy.arange(20.0)).to("cupy")
    only_host = Inputs([host, numpy.zeros(5, dtype=numpy.int8)])
    assert only_host.devices == HOST_ONLY == frozenset({HOST})
    assert (only_host.size, only_host.nbytes) == (12, 12 * 4 + 5)
    assert only_host.dtypes == (numpy.dtype(numpy.float32), numpy.dtype(numpy.int8))
    assert only_host.resident is None
    assert Inputs([held]).devices == frozenset({Device("cuda", 0)})
    both = Inputs([host, held])
    assert both.devices == frozenset({HOST, Device("cuda", 0)})
    assert (both.size, both.nbytes, both.resident) == (20, 12 * 4 + 20 * 8, Device("cuda", 0))
    assert Inputs([]).devices == frozenset() and Inputs([]).size == 0


# Long beside the calls timed (a few ms), so a loaded machine cannot blur the two.
QUEUE_S = 0.5


def _queue(monkeypatch) -> tuple[list[bool], list[tuple]]:
    """A device queue holding a kernel of ``QUEUE_S`` while the flag is set: a synchronisation
    or a copy in waits for it. Returns the flag and the list of timed calls."""
    target = dispatch.targets.get("cupy")
    queued = [False]

    def synchronize():
        if queued[0]:
            queued[0] = False
            time.sleep(QUEUE_S)

    real_from_host = target.from_host

    def from_host(array):  # a copy in starts once the queue is through
        synchronize()
        return real_from_host(array)

    monkeypatch.setattr(target, "synchronize", synchronize)
    monkeypatch.setattr(target, "from_host", from_host)
    timed = []
    monkeypatch.setattr(router.history, "observe",  # a device's timing, read from its events
                        lambda key, name, seconds, explored=False: timed.append((key[0], name, seconds)))
    monkeypatch.setattr(router, "observe",  # the host's
                        lambda decision, seconds: timed.append((decision.key[0], decision.target.name, seconds)))
    return queued, timed


def test_a_timed_call_crossing_the_bus_is_not_charged_for_work_queued_before_it(monkeypatch):
    """A call whose host operand goes to the device waits for the kernels queued before it (its
    copy is ordered after them). Its timing must not count that wait: it is earlier calls' work,
    and charged to whichever target crosses, it decides by chance (on an H100 machine NumPy won
    such a call that way, and the program it was part of took twice as long)."""
    router.use_calibration(synthetic(gpu=True, torch_cpu=False))
    queued, timed = _queue(monkeypatch)
    host = numpy.linspace(0.0, 1.0, N)
    held = dispatch.asarray(host).to("cupy")
    queued[0] = True
    out = held + host
    assert out.target == "cupy"
    got = numpy.asarray(out)
    assert got.dtype == numpy.float64 and got.shape == (N,)
    numpy.testing.assert_array_equal(got, host + host)
    adds = [seconds for op, name, seconds in timed if op == "add" and name == "cupy"]
    assert adds and max(adds) < QUEUE_S


def test_a_timed_call_leaving_the_device_is_not_charged_for_work_queued_before_it(monkeypatch):
    """Operands all on the device, run on the host: reading them back waits for the queue, which
    is earlier calls' work, as above. It stays off the call's clock."""
    router.use_calibration(synthetic(gpu=True, torch_cpu=False))
    queued, timed = _queue(monkeypatch)
    host = numpy.linspace(0.0, 1.0, N)
    held = dispatch.asarray(host).to("cupy")
    queued[0] = True
    op = op_named("exp")
    inputs = Inputs([held])
    decision = router.Decision(dispatch.targets.get("numpy"), router.DecisionKind.COST, "test",
                               key=router.call_key(op, inputs), sample=True)
    target = dispatch.targets.get("cupy")

    def read_back_and_run():  # the copy back is ordered after the queue
        target.synchronize()
        return numpy.exp(target.to_host(held._engine_array))

    out = dispatch.arrays._call._execute(op, inputs, decision, read_back_and_run)
    assert out.dtype == numpy.float64 and out.shape == (N,)
    numpy.testing.assert_allclose(out, numpy.exp(host), rtol=1e-15)
    assert [(op, name) for op, name, _ in timed] == [("exp", "numpy")] and timed[0][2] < QUEUE_S


def test_one_call_sends_a_host_array_once_even_with_its_transpose(monkeypatch):
    """``A.T @ A`` and ``x * x`` copy their host array to the device once; an array of the same
    shape and strides elsewhere in memory is copied for itself."""
    target = dispatch.targets.probe("cupy")
    sends = []
    real = target.from_host
    monkeypatch.setattr(target, "from_host", lambda a: sends.append(a.shape) or real(a))
    A, other, x = numpy.arange(12.0).reshape(4, 3), numpy.ones((4, 3)), numpy.linspace(0.0, 1.0, 7)
    a, at, other_t, v = dispatch.asarray(A), dispatch.asarray(A).T, dispatch.asarray(other).T, dispatch.asarray(x)
    with dispatch.using("cupy"):
        gram = at @ a
        assert sends == [(3, 4)]
        square = v * v
        assert sends == [(3, 4), (7,)]
        mixed = other_t @ a
        assert sends == [(3, 4), (7,), (3, 4), (4, 3)]
    for got, want in ((gram, A.T @ A), (square, x * x), (mixed, other.T @ A)):
        assert got.device.kind == "cuda"
        got = numpy.asarray(got)
        assert got.dtype == want.dtype and got.shape == want.shape
        numpy.testing.assert_array_equal(got, want)
