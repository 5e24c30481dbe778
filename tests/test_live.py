"""Live placement: the router records the region a program runs, plans it once met again, and
serves the loop from the plan (``dispatch.routing.live``).

Runs the cupy target on the fake CuPy (``tests/fakecupy.py``) under a hand-made calibration
whose device wins each call with the copy in but not with the copy back: alone, no call goes
there; planned as a loop, the loop's data goes there once and stays. Values are compared
with NumPy's.
"""

from __future__ import annotations

import types
import weakref

import fakecupy
import numpy
import pytest
from _synthetic import GPU_TRANSFER, synthetic
from helpers import fake_cupy_router

import dispatch
from dispatch.arrays import mirrors
from dispatch.routing import router
from dispatch.routing.decisions import DecisionKind
from dispatch.routing.history import History
from dispatch.targets import _staging

if fakecupy.real_cupy_installed():
    pytest.skip("a real CuPy is installed: the fake would replace it in sys.modules", allow_module_level=True)

N = 1 << 20  # 8 MiB of float64: a device keeps its copy (mirrors.MIN_BYTES)


@pytest.fixture(autouse=True)
def fake_gpu(tmp_path, monkeypatch):
    with fake_cupy_router(tmp_path, monkeypatch):
        cal = synthetic(gpu=True, torch_cpu=False)
        cal.targets["cupy"]["transfer"] = dict(GPU_TRANSFER, to_host_staged=1e9, to_host_pageable=1e9)
        router.use_calibration(cal)
        mirrors.clear()
        yield
        mirrors.clear()


def _loop(u0: numpy.ndarray, v0: numpy.ndarray, steps: int, program=dispatch) -> tuple:
    u, v = program.array(u0), program.array(v0)
    for _ in range(steps):
        u = program.cos(u) + v
    return u, float(u.sum())


def _inputs() -> tuple[numpy.ndarray, numpy.ndarray]:
    rng = numpy.random.default_rng(0)
    return rng.random(N), rng.random(N)


def test_a_loop_is_planned_once_its_data_kept_on_the_device_and_read_back_once():
    live = router.ROUTER.live
    u0, v0 = _inputs()
    before = _staging.moved()
    u, total = _loop(u0, v0, 12)
    moved = {k: v - before.get(k, 0) for k, v in _staging.moved().items()}
    expected_u, expected = _loop(u0, v0, 12, numpy)
    assert u.target == "cupy"  # the loop's data ended where the plan put it
    result = numpy.asarray(u)
    assert result.dtype == expected_u.dtype and result.shape == expected_u.shape
    numpy.testing.assert_allclose(result, expected_u, rtol=1e-12)
    assert total == pytest.approx(expected, rel=1e-12)
    # the arrays went in once each (u once, v kept by the device), never once per step
    assert sum(v for k, v in moved.items() if "device" in str(k)) <= 3 * N * 8, moved
    assert mirrors.stats()["hits"] >= 1
    assert 1 <= live.planner.planned <= 2  # the region on host data, then the one on the device the plan made
    _loop(u0, v0, 12)
    planned = live.planner.planned
    _loop(u0, v0, 40)
    assert live.planner.planned == planned  # met again, the plans were served from the cache
    assert any(p.served >= 1 for _, p in live.describe())
    for planned in live.planned.values():  # the plans hold: the loop runs through the decision cache and the memo
        assert all(router.cached(k).kind is DecisionKind.PLANNED for k in planned.decisions)


def test_alone_a_call_stays_on_the_host():
    u0, v0 = _inputs()
    u, _ = _loop(u0, v0, 1)
    assert u.target == "numpy"  # neither call wins the copy back on its own: no plan yet


def test_the_trace_names_the_plan():
    u0, v0 = _inputs()
    _loop(u0, v0, 4)
    with dispatch.trace() as t:
        _loop(u0, v0, 3)
    planned = [c for c in t.records if c.reason.startswith("plan ")]
    assert planned, [c.reason for c in t.records]
    assert all(c.target == "cupy" for c in planned if c.op == "cos")
    assert "expected to save" in planned[0].reason


def test_a_plan_strayed_from_by_measurements_is_revised(monkeypatch):
    live = router.ROUTER.live
    u0, v0 = _inputs()
    _loop(u0, v0, 8)
    plans = live.describe()
    assert plans
    key, _ = plans[-1]
    planned = live.planned[key]
    history = router.ROUTER.history
    monkeypatch.setattr(history, "observe", History.observe.__get__(history))
    call_key, engine, price = planned.nodes[0]
    for _ in range(4):  # the call measured a hundred times its price: the plan's total strays
        history.observe(call_key, engine, 100 * max(price, 1e-3))
    router.ROUTER._observed(call_key, engine)
    assert key not in live.planned and live.recording
    assert router.cached(call_key) is None or router.cached(call_key).kind is not DecisionKind.PLANNED
    made = live.planner.planned
    _loop(u0, v0, 16)
    assert live.planner.planned > made  # planned again, from the newer prices


def test_a_host_array_read_again_pays_its_copy_once_and_one_made_afresh_each_time():
    """A loop over the same host array copies it once (the device keeps it): its copy is spread
    over the times the region was met. An array made afresh each time (``un = u.copy()``) is
    copied each time: no device keeps a copy for the next."""
    live = router.ROUTER.live
    data = dispatch.array(_inputs()[0])._data
    source = ("host", data.nbytes, weakref.ref(data))
    assert live._copied(source, data.nbytes, 4, {id(data)}) == data.nbytes // 4
    assert live._copied(source, data.nbytes, 4, set()) == data.nbytes


def test_a_random_draw_the_catalog_prices_is_a_node_like_any_other(monkeypatch):
    """No kind of work is left out of a region: a draw priced on the host and on the device is
    a node with both prices, as an element-wise call would be."""
    from dispatch.arrays._call import Inputs
    from dispatch.routing import cost
    from dispatch.routing.decisions import Decision

    live = router.ROUTER.live
    draw = types.SimpleNamespace(name="random.standard_normal", work="random", local=False, cataloged=True,
                                 mutates=None)
    monkeypatch.setattr(cost, "compute_seconds", lambda model, op, inputs: 1e-3 if model.device.is_host else 1e-5)
    x = dispatch.array(_inputs()[0])
    inputs = Inputs([x])
    decision = Decision(dispatch.targets.get("numpy"), DecisionKind.HOST_OP, "host op",
                        key=router.call_key(draw, inputs))
    live.resume()
    live.note(draw, inputs, decision, x)
    node = live.nodes[-1]
    assert node.key.op == "random.standard_normal"
    assert node.prices["host"] == (pytest.approx(1e-3), "numpy") and node.prices["cuda:0"][1] == "cupy"
