"""The resident lane (``dispatch.arrays._call._resident_run``, ``device_view``): calls on data one
device engine holds, which the router sends to that engine untimed, run without the general
call path, with NumPy's results, on that device.

Runs the cupy target on the fake CuPy (``tests/fakecupy.py``); the values are compared with
NumPy's. Each test turns the general path off (it raises) once the call's kind is decided, so
a call that does not take the lane fails the test.
"""

from __future__ import annotations

import fakecupy
import numpy
import pytest
from helpers import assert_same, fake_cupy_router

import dispatch
from dispatch import tracing
from dispatch.arrays import _call
from dispatch.base.ops import op_named
from dispatch.routing import router

if fakecupy.real_cupy_installed():
    pytest.skip("a real CuPy is installed: the fake would replace it in sys.modules", allow_module_level=True)


@pytest.fixture(autouse=True)
def fake_gpu(tmp_path, monkeypatch):
    with fake_cupy_router(tmp_path, monkeypatch) as target:
        yield target


def _data() -> tuple[numpy.ndarray, numpy.ndarray]:
    rng = numpy.random.default_rng(0)
    return rng.standard_normal((6, 5)), rng.standard_normal((6, 5))


def _fail_when_called(monkeypatch, what: str, *places: tuple) -> None:
    """Each ``(owner, name)`` in ``places`` fails the test if it is called."""
    def called(*args, **kwargs):
        raise AssertionError(f"{what} was called")

    for owner, name in places:
        monkeypatch.setattr(owner, name, called)


def _general_path_off(monkeypatch) -> None:
    _fail_when_called(monkeypatch, "the general call path", (_call, "_run_on"), (_call, "_run_numpy"))


PROGRAMS = {
    "a + b": lambda xp, a, b: a + b,
    "2.0 * a": lambda xp, a, b: 2.0 * a,
    "a ** 2": lambda xp, a, b: a ** 2,
    "xp.abs(a)": lambda xp, a, b: xp.abs(a),
    "xp.maximum(a, b)": lambda xp, a, b: xp.maximum(a, b),
    "a.sum(axis=1)": lambda xp, a, b: a.sum(axis=1),
    "a.max()": lambda xp, a, b: a.max(),
    "a < b": lambda xp, a, b: a < b,
    "a[1:-1, 1:-1]": lambda xp, a, b: a[1:-1, 1:-1],
    "a[None, ..., 2:]": lambda xp, a, b: a[None, ..., 2:],
    "a[::2]": lambda xp, a, b: a[::2],
    "a[1, 2]": lambda xp, a, b: a[1, 2],  # NumPy's scalar: a device scalar
    "a[::-1, 1]": lambda xp, a, b: a[::-1, 1],
    "a[::-1]": lambda xp, a, b: a[::-1],
    "a[None]": lambda xp, a, b: a[None],
    "a.reshape((5, 6))": lambda xp, a, b: a.reshape((5, 6)),
}


@pytest.mark.parametrize("label", PROGRAMS)
def test_a_decided_call_on_device_data_takes_the_lane(label, monkeypatch):
    program = PROGRAMS[label]
    an, bn = _data()
    first = dispatch.asarray(an).to("cupy"), dispatch.asarray(bn).to("cupy")
    program(dispatch, *first)  # the first call of its kind is decided on the general path
    # (other arrays of that kind then: one small array's elements read twice would make the host its home)
    a, b = dispatch.asarray(an).to("cupy"), dispatch.asarray(bn).to("cupy")
    _general_path_off(monkeypatch)
    got = program(dispatch, a, b)
    assert got.target == "cupy"
    assert_same(got, program(numpy, an, bn))


@pytest.mark.parametrize("label, program", [
    ("arrays in a tuple", lambda a: dispatch.concatenate((a, a))),
    ("rows by a list", lambda a: a[[0, 2]]),  # a host index: the general path brings it over
    ("a timed call", lambda a: a + a),
])
def test_other_calls_take_the_general_path(label, program, monkeypatch):
    an, _ = _data()
    a = dispatch.asarray(an).to("cupy")
    if label == "a timed call":
        a + a
        inputs = _call.Inputs([a, a])
        decision = router.decide(op_named("add"), inputs, (a, a), {})  # the cached decision
        decision.sample = True  # the router wants this one measured: the general path times it
    _general_path_off(monkeypatch)
    with pytest.raises(AssertionError, match="general call path"):
        program(a)


def test_a_failure_in_the_lane_falls_back_to_numpy_and_is_recorded(fake_gpu, monkeypatch):
    import cupy

    an, bn = _data()
    a, b = dispatch.asarray(an).to("cupy"), dispatch.asarray(bn).to("cupy")
    real = cupy.subtract
    full = []

    def subtract(*args, **kwargs):  # CuPy's own function, out of memory once the device is full
        if full:
            raise MemoryError("out of memory allocating 1,024 bytes")
        return real(*args, **kwargs)

    monkeypatch.setattr(cupy, "subtract", subtract)
    numpy.subtract(a, b)  # decided: the data's engine
    numpy.subtract(a, b)  # and run again as decided (the lane's memo keeps it)
    full.append(True)
    why = ("subtract", "cupy failed: MemoryError: out of memory allocating 1,024 bytes")
    before = tracing.fallbacks().get(why, 0)
    got = a - b
    assert_same(got, an - bn)
    assert tracing.fallbacks()[why] == before + 1


def test_a_view_in_the_lane_shares_the_device_memory():
    an, _ = _data()
    a = dispatch.asarray(an).to("cupy")
    view = a[1:3, :]
    view[...] = 0.0
    expected = an.copy()
    expected[1:3, :] = 0.0
    assert a.target == "cupy"
    assert_same(a, expected)


def test_forced_and_traced_calls_take_the_lane_and_are_recorded(monkeypatch):
    an, bn = _data()
    a, b = dispatch.asarray(an).to("cupy"), dispatch.asarray(bn).to("cupy")
    _general_path_off(monkeypatch)
    with dispatch.using("cupy"), dispatch.trace() as t:
        got = a * b
        view = got[1:, :2]
    assert_same(view, (an * bn)[1:, :2])
    assert [(r.op, r.target, r.reason) for r in t.records] == [
        ("multiply", "cupy", "forced cupy"), ("__getitem__", "cupy", "forced cupy")]


# ---- the lane's memo: a repeated call runs its remembered decision and engine call ----


def _router_off(monkeypatch) -> None:
    """The router and the lane's own engine call fail the test if a call reaches them."""
    _fail_when_called(monkeypatch, "the router", (router, "decide"), (_call, "_resident_run"))


MEMO_PROGRAMS = {
    "a + b": lambda xp, a, b: a + b,
    "2.0 * a": lambda xp, a, b: 2.0 * a,
    "xp.abs(a)": lambda xp, a, b: xp.abs(a),
    "a.sum(axis=1)": lambda xp, a, b: a.sum(axis=1),
    "a.max()": lambda xp, a, b: a.max(),  # NumPy's scalar: a device scalar
    "a < b": lambda xp, a, b: a < b,
    "a.T": lambda xp, a, b: a.T,
}


@pytest.mark.parametrize("label", MEMO_PROGRAMS)
def test_a_repeated_lane_call_runs_from_the_memo(label, monkeypatch):
    program = MEMO_PROGRAMS[label]
    an, bn = _data()
    a, b = dispatch.asarray(an).to("cupy"), dispatch.asarray(bn).to("cupy")
    program(dispatch, a, b)  # decided on the general path
    program(dispatch, a, b)  # run on the lane, and remembered
    _router_off(monkeypatch)
    got = program(dispatch, a, b)
    assert got.device == a.device
    assert_same(got, program(numpy, an, bn))


def test_scalars_of_each_type_have_their_own_memo_entry(monkeypatch):
    an = numpy.arange(6, dtype=numpy.int32).reshape(2, 3)
    a = dispatch.asarray(an).to("cupy")
    for _ in range(2):
        a + 1, a + 1.5, a + (1 + 2j), a + True
    _router_off(monkeypatch)
    for scalar in (1, 1.5, 1 + 2j, True):
        assert_same(a + scalar, an + scalar)  # int32, float64, complex128, int32: NumPy's dtypes


def test_the_memo_follows_the_routers_decision(monkeypatch):
    an, bn = _data()
    a, b = dispatch.asarray(an).to("cupy"), dispatch.asarray(bn).to("cupy")
    a + b
    a + b
    asked = []
    decide = router.decide

    def counting(*args, **kwargs):
        asked.append(1)
        return decide(*args, **kwargs)

    monkeypatch.setattr(router, "decide", counting)
    a + b
    assert asked == []  # remembered
    router.ROUTER.decisions.clear()  # the router drops its decision (it learned something)
    assert_same(a + b, an + bn)
    assert asked == [1]  # asked again, since the remembered decision is no longer the router's


def test_a_settled_decision_still_times_one_call_in_every_few(monkeypatch):
    an, bn = _data()
    a, b = dispatch.asarray(an).to("cupy"), dispatch.asarray(bn).to("cupy")
    a + b
    a + b
    decision = router.cached(router.ROUTER.memo[_call._memo_key(op_named("add"), (a, b), {})][0].key)
    decision.sample, decision.settled, decision.calls = True, True, 0
    timed = []
    execute = _call._execute

    def spying(op, inputs, d, run):
        if d.sample and (d.calls + 1) % router.SETTLED_EVERY == 0:
            timed.append(d.calls + 1)
        return execute(op, inputs, d, run)

    monkeypatch.setattr(_call, "_execute", spying)
    for _ in range(2 * router.SETTLED_EVERY):
        assert_same(a + b, an + bn)
    assert timed == [router.SETTLED_EVERY, 2 * router.SETTLED_EVERY]
    assert decision.calls == 2 * router.SETTLED_EVERY


def test_traced_calls_leave_the_memo_and_are_recorded():
    an, bn = _data()
    a, b = dispatch.asarray(an).to("cupy"), dispatch.asarray(bn).to("cupy")
    a + b
    a + b
    with dispatch.trace() as t:
        got = a + b
    assert_same(got, an + bn)
    assert [(r.op, r.target) for r in t.records] == [("add", "cupy")]
