"""Live placement: the router records the region a program runs, plans it once met again, and
serves the loop from the plan (``dispatch.routing.live``).

Runs the cupy target on the fake CuPy (``tests/fakecupy.py``) under a hand-made calibration
whose device wins each call with the copy in but not with the copy back: alone, no call goes
there; planned as a loop, the loop's data goes there once and stays. Values are compared
with NumPy's.
"""

from __future__ import annotations

import io
import json
import threading
import types
import weakref
from typing import Any

import fakecupy
import numpy
import pytest
import random_programs
from _synthetic import GPU_TRANSFER, _target, synthetic
from helpers import fake_cupy_router

import dispatch
from dispatch.arrays import mirrors
from dispatch.routing import bringup, learned, planner, router, startup
from dispatch.routing.decisions import DecisionKind
from dispatch.routing.history import SETTLED_EVERY, History, calls_counted
from dispatch.routing.live import REVISIONS, Live, _Node
from dispatch.targets import _staging

if fakecupy.real_cupy_installed():
    pytest.skip("a real CuPy is installed: the fake would replace it in sys.modules", allow_module_level=True)

N = 1 << 20  # 8 MiB of float64: a device keeps its copy (mirrors.MIN_BYTES)


@pytest.fixture(autouse=True)
def fake_gpu(tmp_path, monkeypatch):
    dispatch.arrays._call.routing()  # the call path bound to the routing, as a first routed call binds it
    for module, name in ((startup, "_saving"), (startup, "_forgone"), (startup, "_plans"), (bringup, "_states"),
                         (bringup, "_threads")):
        monkeypatch.setattr(module, name, {})  # what the process forwent and planned, its bring-ups: this test's own
    monkeypatch.setattr(startup, "_kept_plans", None)
    monkeypatch.setattr(startup, "_history", None)  # (another test's calls are not this program's)
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


def _equal(u, total: float, expected_u: numpy.ndarray, expected: float) -> None:
    """The loop's array and sum equal NumPy's: dtype, shape and values."""
    result = numpy.asarray(u)
    assert result.dtype == expected_u.dtype and result.shape == expected_u.shape
    numpy.testing.assert_allclose(result, expected_u, rtol=1e-12)
    assert total == pytest.approx(expected, rel=1e-12)


def _inputs() -> tuple[numpy.ndarray, numpy.ndarray]:
    rng = numpy.random.default_rng(0)
    return rng.random(N), rng.random(N)


def test_a_loop_is_planned_once_its_data_kept_on_the_device_and_read_back_once():
    live = router.ROUTER.live
    planned_before = live.planner.planned  # the count is the process's: earlier tests planned too
    u0, v0 = _inputs()
    before = _staging.moved()
    u, total = _loop(u0, v0, 12)
    moved = {k: v - before.get(k, 0) for k, v in _staging.moved().items()}
    expected_u, expected = _loop(u0, v0, 12, numpy)
    assert u.target == "cupy"  # the loop's data ended where the plan put it
    _equal(u, total, expected_u, expected)
    # the arrays went in once each (u once, v kept by the device), never once per step
    assert sum(v for k, v in moved.items() if "device" in str(k)) <= 3 * N * 8, moved
    assert mirrors.stats()["hits"] >= 1
    # the region on host data, then the one on the device the plan made
    assert 1 <= live.planner.planned - planned_before <= 2
    _loop(u0, v0, 12)
    planned = live.planner.planned
    _loop(u0, v0, 40)
    assert live.planner.planned == planned  # met again, the plans were served from the cache
    assert any(p.served >= 1 for _, p in live.describe())
    for planned in live.planned.values():  # the plans hold: the loop runs through the decision cache and the memo
        assert all(router.cached(k).kind is DecisionKind.PLANNED for k in planned.decisions)


def _straight(u0: numpy.ndarray, v0: numpy.ndarray, program=dispatch) -> Any:
    """A script's body run once, as a notebook cell runs it: no loop, no host read at its end."""
    u, v = program.array(u0), program.array(v0)
    return program.cos(u) * v + program.sin(v)


def test_a_region_met_once_a_run_is_planned_at_its_second_meeting_though_an_engine_came_up_between():
    """An engine that comes up between two runs of a straight-line body (a notebook's cell run
    again, the engine brought up while the kernel waited) prices and plans afresh, but the run
    before still counts as a meeting of its region: the body is planned when the run after it
    ends (at the next run's first call), not a whole run later."""
    live = router.ROUTER.live
    u0, v0 = _inputs()
    expected = _straight(u0, v0, numpy)
    _down_with_startup(100.0)  # no run of the body repays the start-up: CuPy stays down for it
    planned = live.planner.planned
    results = [_straight(u0, v0)]  # read at the end: a host read would end its region here
    assert not dispatch.targets.registry.tried("cupy")
    assert dispatch.targets.probe("cupy") is not None  # up between the runs
    results.append(_straight(u0, v0))  # the engine's arrival clears the plans, not how often the body was met
    assert live.planner.planned == planned
    results.append(_straight(u0, v0))  # its first call ends the run before: the body's second meeting, planned
    assert live.planner.planned == planned + 1
    for got in results:
        host = numpy.asarray(got)
        assert host.dtype == expected.dtype and host.shape == expected.shape
        numpy.testing.assert_allclose(host, expected, rtol=1e-12)


def test_a_loop_after_a_prologue_is_planned_within_its_first_run():
    """A loop whose body starts after other calls (``blur``'s weighted sums after its ``pad``):
    the body is found where two of its kinds of call meet again in order, not only where the
    region's first kind does, so the loop is planned on its own while it runs the first time."""
    live = router.ROUTER.live
    planned_before = live.planner.planned
    u0, v0 = _inputs()

    def program(np, steps=12):
        u, w = np.array(u0), np.sqrt(np.array(v0))  # the prologue: a kind the loop never makes
        for _ in range(steps):
            u = np.cos(u) + w
        return u, float(u.sum())

    u, total = program(dispatch)
    expected_u, expected = program(numpy)
    assert live.planner.planned > planned_before  # planned before the run read its result
    assert u.target == "cupy"  # the loop's data ended where the plan put it
    _equal(u, total, expected_u, expected)


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


def test_a_plan_whose_measurements_stray_but_whose_placement_stands_is_kept_at_the_new_prices(monkeypatch):
    """Measured three times slower than priced on the device, ``cos`` still runs there far
    cheaper than on the host: priced again with what was measured, the plan places every call
    where it did, so it stands, expecting the new prices. It is neither dropped nor recorded
    again (which would cost the loop passes on the per-call rules only to make it again)."""
    live = router.ROUTER.live
    u0, v0 = _inputs()
    _loop(u0, v0, 8)
    key, plan = live.describe()[-1]
    planned = live.planned[key]
    history = router.ROUTER.history
    monkeypatch.setattr(history, "observe", History.observe.__get__(history))
    call_key, engine, price = next(node for node in planned.nodes if node[0].op == "cos")
    expected, placement, recording = plan.seconds, list(plan.placement), live.recording
    repriced, revised, revisions = live.repriced, live.revised, live.revisions.get(key, 0)
    for _ in range(4):
        history.observe(call_key, engine, 3 * price)
    router.ROUTER._observed(call_key, engine)
    assert live.repriced == repriced + 1 and live.revised == revised  # strayed, priced again, not dropped
    assert live.planned[key].plan is plan and plan.placement == placement and live.recording == recording
    assert plan.seconds > 1.5 * expected  # what it expects now: what was measured
    assert all(router.cached(k).kind is DecisionKind.PLANNED for k in planned.decisions)
    router.ROUTER._observed(call_key, engine)
    assert live.repriced == repriced + 1  # the same timings again: no stray now
    assert live.revisions[key] == revisions + 1  # (planned again all the same: at most REVISIONS times)
    u, total = _loop(u0, v0, 8)
    expected_u, expected_total = _loop(u0, v0, 8, numpy)
    _equal(u, total, expected_u, expected_total)


def test_a_plan_its_measurements_found_holding_is_timed_no_more(monkeypatch):
    """Once every call of a plan was measured and ``HELD`` timings found it holding, its
    decisions stop sampling: the loop runs from the memo without a timing."""
    from dispatch.routing.live import HELD

    live = router.ROUTER.live
    u0, v0 = _inputs()
    _loop(u0, v0, 8)
    key, _ = live.describe()[-1]
    planned = live.planned[key]
    assert all(d.sample for d in planned.decisions.values())
    history = router.ROUTER.history
    monkeypatch.setattr(history, "observe", History.observe.__get__(history))
    for call_key, engine, price in planned.nodes:  # each call measured at its price: the plan holds
        history.observe(call_key, engine, 1.0)  # (a device's first call of a kind, loading its kernel, is no price)
        history.observe(call_key, engine, max(price, 1e-6))
    call_key, engine, _ = planned.nodes[0]
    for _ in range(HELD - 1):
        router.ROUTER._observed(call_key, engine)
    assert all(d.sample for d in planned.decisions.values())
    router.ROUTER._observed(call_key, engine)
    router.ROUTER._observed(call_key, engine)
    assert key in live.planned and not any(d.sample for d in planned.decisions.values())
    u, total = _loop(u0, v0, 12)
    expected_u, expected = _loop(u0, v0, 12, numpy)
    numpy.testing.assert_allclose(numpy.asarray(u), expected_u, rtol=1e-12)
    assert total == pytest.approx(expected, rel=1e-12)


def test_a_host_array_read_again_pays_its_copy_once_and_one_made_afresh_each_time():
    """A loop over the same host array copies it once (the device keeps it): its copy is spread
    over the times the region was met. An array made afresh each time (``un = u.copy()``) is
    copied each time: no device keeps a copy for the next."""
    live = router.ROUTER.live
    data = dispatch.array(_inputs()[0])._engine_array
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


# ---- loops whose data the program writes in place, slices and masks ---------------------------------


def _stencil(u0: numpy.ndarray, steps: int, program=dispatch) -> tuple:
    """A loop of slices, in-place writes and a mask: ``u[1:-1] = ...`` into a host array made by
    ``zeros``, an accumulation ``acc += ...`` into another, and ``u[u > t].sum()`` read each step."""
    u = program.zeros(u0.shape)
    u[:] = program.asarray(u0) if program is not dispatch else dispatch.array(u0)
    acc = program.zeros(u0.shape[0] - 2)
    picked = []
    for _ in range(steps):
        un = u.copy()
        u[1:-1] = un[1:-1] + 0.1 * (un[2:] - 2 * un[1:-1] + un[:-2])
        acc += program.cos(u[1:-1])
        picked.append(float(u[u > 0.5].sum()))
    return u, acc, picked


def test_a_loop_of_slices_in_place_writes_and_a_mask_runs_on_the_device_as_one_plan():
    live = router.ROUTER.live
    u0 = _inputs()[0]
    before = live.planner.planned
    u, acc, picked = _stencil(u0, 10)
    expected_u, expected_acc, expected_picked = _stencil(u0, 10, numpy)
    for got, want in ((u, expected_u), (acc, expected_acc)):
        result = numpy.asarray(got)
        assert result.dtype == want.dtype and result.shape == want.shape
        numpy.testing.assert_allclose(result, want, rtol=1e-12)
    numpy.testing.assert_allclose(picked, expected_picked, rtol=1e-12)
    # the host arrays written from the device moved there, with the loop over them
    assert u.target == "cupy" and acc.target == "cupy"
    # one region, one plan in force: planned when met twice, and again as its data moved there (at
    # most REVISIONS times); run again from data on the host, it is recorded again from where that
    # run's calls first missed the plan's decisions (the same body, begun elsewhere: one more region)
    assert len(live.planned) == 1 and live.planner.planned - before <= 1 + REVISIONS
    _stencil(u0, 3)
    assert len(live.planned) <= 2
    with dispatch.trace() as t:
        _stencil(u0, 3)
    assert live.planner.planned - before <= 2 * (1 + REVISIONS)
    placed = [c for c in t.records if c.op in ("cos", "subtract", "multiply", "add")][len(t.records) // 3:]
    assert placed and all(c.target == "cupy" for c in placed), [(c.op, c.target, c.reason) for c in placed]


def test_a_region_has_one_key_wherever_its_data_is():
    from dispatch.routing.live import _Node, region_key

    rec = router.ROUTER.live
    u0, v0 = _inputs()
    _loop(u0, v0, 6)
    node = rec.planned and next(iter(rec.planned.values()))
    keys = list(node.decisions) if node else []
    assert keys
    key = keys[0]
    on_host = [_Node(key._replace(devices=frozenset({dispatch.base.devices.HOST})), [(-1, 8)], {}, 8)]
    on_device = [_Node(key._replace(devices=frozenset({fakecupy_device()})), [(-1, 8)], {}, 8)]
    assert region_key(on_host) == region_key(on_device)
    loop_keys = set(rec.planned)
    u, v = dispatch.array(u0).to("cupy"), dispatch.array(v0).to("cupy")
    for _ in range(6):  # the same loop over data that starts on the device: the same region, one plan
        u = dispatch.cos(u) + v
    float(u.sum())
    assert set(rec.planned) == loop_keys


def test_a_region_met_with_a_source_none_of_its_calls_reads_is_served_its_plan(monkeypatch):
    """A plan places its region's sources first, then its calls. A meeting of the same calls with
    one more array made before them that no call reads (a view's base) is the same region: served
    the plan with the places read where the plan put them, not one off and past its end."""
    from dispatch.routing.live import region_key

    rec = router.ROUTER.live
    met = []
    boundary = type(rec).boundary

    def spy(self, read=None):
        met.append((list(self.nodes), list(self.sources)))
        return boundary(self, read)

    monkeypatch.setattr(type(rec), "boundary", spy)
    u0, v0 = _inputs()
    _loop(u0, v0, 6)
    nodes, sources = next((n, s) for n, s in met if region_key(n) in rec.planned)
    key = region_key(nodes)
    rec.revisions[key] = REVISIONS  # (a plan revised that often is served wherever its sources are)
    extra = numpy.ones(4)
    rec.recording = True
    rec.nodes[:] = nodes
    rec.sources[:] = [*sources, ("host", extra.nbytes, weakref.ref(extra))]
    rec.boundary()
    assert not rec.recording and key in rec.planned  # served
    u, total = _loop(u0, v0, 6)
    ref_u, ref_total = _loop(u0, v0, 6, numpy)
    numpy.testing.assert_allclose(numpy.asarray(u), ref_u, rtol=1e-12)
    assert total == pytest.approx(ref_total, rel=1e-12)


def fakecupy_device():
    return dispatch.targets.get("cupy").device


def test_the_trace_shows_the_host_data_read_from_the_devices_copy():
    u0, v0 = _inputs()
    _loop(u0, v0, 4)
    u, v = dispatch.array(u0), dispatch.array(v0)
    with dispatch.trace() as t:
        for _ in range(3):
            u = dispatch.cos(u) + v  # v, a host array, is read from the copy the device keeps
        float(u.sum())
    kept = [c for c in t.records if c.bytes_kept]
    assert kept and all(c.target == "cupy" for c in kept), [(c.op, c.target, c.bytes_kept) for c in t.records]
    assert sum(c.bytes_kept for c in kept) >= 2 * v0.nbytes
    assert all(c.bytes_moved == 0 for c in kept if c.op == "add")  # the copy kept, not sent again
    out = io.StringIO()
    t.summary(file=out)
    assert "kept" in out.getvalue().splitlines()[1].split()


# ---- a host array a device computes into ---------------------------------------------------------------


def test_a_host_array_written_whole_by_the_device_moves_there_and_keeps_numpys_values():
    d0 = _inputs()[0]
    d = dispatch.array(d0).to("cupy")
    acc = dispatch.zeros(N)
    acc += d
    dispatch.add(acc, d, out=acc)
    assert acc.target == "cupy"
    result = numpy.asarray(acc)
    assert result.dtype == numpy.float64 and result.shape == (N,)
    numpy.testing.assert_allclose(result, 2 * d0, rtol=0)


@pytest.mark.parametrize("held", ["view", "handed out"])
def test_a_host_array_something_else_holds_stays_and_every_holder_sees_the_write(held):
    d0 = _inputs()[0]
    d = dispatch.array(d0).to("cupy")
    acc = dispatch.zeros(N)
    other = acc[: N // 2] if held == "view" else numpy.asarray(acc)
    acc += d
    acc[1:] = d[1:]
    assert acc.target == "numpy"
    numpy.testing.assert_array_equal(numpy.asarray(other), d0[: len(numpy.asarray(other))])
    numpy.testing.assert_array_equal(numpy.asarray(acc), d0)


def test_a_small_write_into_a_large_host_array_leaves_it_on_the_host():
    d = dispatch.array(_inputs()[0]).to("cupy")
    u = dispatch.zeros(N)
    u[: N // 4] = d[: N // 4]  # a quarter of it: the value crosses, not the array
    assert u.target == "numpy"
    numpy.testing.assert_array_equal(numpy.asarray(u)[: N // 4], numpy.asarray(d)[: N // 4])


def test_an_element_wise_call_is_sized_by_its_arrays_broadcast_together():
    """``x[:, None] - y[None, :]`` of two small arrays makes a large one: priced at that size
    (here where a device wins it), never run under the floors by its inputs' sizes."""
    from dispatch.arrays import _call

    rng = numpy.random.default_rng(1)
    x0, y0 = rng.random(1000), rng.random(2000)
    x, y = dispatch.array(x0), dispatch.array(y0)
    assert _call.broadcast_size([(1000, 1), (1, 2000)], 2000) == 2_000_000
    assert _call.broadcast_size([(3, 4), (5,)], 12) == 12  # no broadcast: NumPy raises its own error
    with dispatch.trace() as t:
        z = x[:, None] - y[None, :]
    (rec,) = [c for c in t.records if c.op == "subtract"]
    assert rec.reason not in (router.FLOOR_REASON, router.SMALL_REASON), rec.reason
    result = numpy.asarray(z)
    expected = x0[:, None] - y0[None, :]
    assert result.dtype == expected.dtype and result.shape == expected.shape
    numpy.testing.assert_array_equal(result, expected)


def test_a_kind_and_size_of_call_is_priced_once_on_each_target_and_priced_again_under_a_new_calibration(monkeypatch):
    """Recording prices each call on every target: a loop's calls, of one kind and size, are
    priced from the curves once (what calls of the kind measured is still blended in at each),
    at what pricing each call afresh gives; another size is priced apart, and a calibration
    loaded since prices by its own curves."""
    from dispatch.arrays._call import Inputs
    from dispatch.base.ops import op_named
    from dispatch.routing import cost

    live, op = router.ROUTER.live, op_named("cos")
    priced = []
    real = cost.compute_seconds
    monkeypatch.setattr(cost, "compute_seconds",
                        lambda model, o, inputs: priced.append(model.name) or real(model, o, inputs))

    def prices(x):
        inputs = Inputs([x])
        key = router.call_key(op, inputs)
        return live._best(key, live._computed_for(op, inputs, key))

    def afresh(x):  # each target's curve, blended, its place's cheapest
        inputs = Inputs([x])
        key = router.call_key(op, inputs)
        return {("host" if m.device.is_host else str(m.device)): (router.ROUTER.history.blended(
            key._replace(devices=frozenset({m.device})), name, real(m, op, inputs))[0], name)
            for name, m in router.ROUTER.models.items()}

    x, y = numpy.ones(N), numpy.ones(N + 7)  # one bucket, two sizes
    first = prices(x)
    assert sorted(priced) == ["cupy", "numpy"] and first == afresh(x)
    assert all(prices(x) == first for _ in range(5)) and len(priced) == 2
    assert prices(y) == afresh(y) and len(priced) == 4  # another size: priced apart
    faster = synthetic(gpu=True, torch_cpu=False)
    faster.targets["cupy"] = _target(20e-6, 1000.0, "cuda:0", GPU_TRANSFER)
    router.use_calibration(faster)
    assert prices(x) == afresh(x) and prices(x)["cuda:0"][0] < first["cuda:0"][0] and len(priced) == 6


def test_a_plan_in_force_is_not_revised_from_the_part_of_its_loop_the_router_still_sees():
    """Once planned, a loop whose host half runs under the floors (unseen) is not recorded again
    in pieces: a piece alone (``c * noise[t]`` without the host sum that reads it) would be planned
    onto the device, its result sent back at every step."""
    live = router.ROUTER.live
    rng = numpy.random.default_rng(3)
    noise0 = rng.standard_normal((2000, 32))
    noise = dispatch.array(noise0).to("cupy")
    y, expected = dispatch.empty((2000, 32)), numpy.empty((2000, 32))
    y[0], expected[0] = noise[0], noise0[0]
    before = live.planner.planned
    for t in range(1, 2000):
        y[t] = 0.9 * y[t - 1] + 0.5 * noise[t]
        expected[t] = 0.9 * expected[t - 1] + 0.5 * noise0[t]
    assert live.planner.planned - before <= 1
    result = numpy.asarray(y)
    assert result.dtype == expected.dtype and result.shape == expected.shape
    numpy.testing.assert_allclose(result, expected, rtol=1e-12)


def _down_with_startup(seconds: float) -> None:
    """CuPy down again, its start-up (the device's context: the fake's module is imported) priced at ``seconds``."""
    cal = synthetic(gpu=True, torch_cpu=False)
    cal.targets["cupy"]["transfer"] = dict(GPU_TRANSFER, to_host_staged=1e9, to_host_pageable=1e9)
    cal.extra["startup"] = {"cupy": {"import_s": 0.0, "context_s": seconds, "first_call_s": 0.0}}
    dispatch.targets.reset("cupy")
    router.use_calibration(cal)


def test_a_loop_is_recorded_while_no_device_is_up_its_saving_there_noted_and_planned_once_it_is(monkeypatch):
    """With CuPy down, its start-up more than a pass of the loop could save, the loop runs on
    NumPy, CuPy is neither brought up nor probed, and no cut is made (SciPy stays unimported);
    what one pass would save there, copies included, is noted toward its start-up: more than
    its calls, priced one at a time with their own copies, were (``cos`` alone would not even
    win its copy back: ``test_alone_a_call_stays_on_the_host``)."""
    live = router.ROUTER.live
    u0, v0 = _inputs()
    expected_u, expected = _loop(u0, v0, 12, numpy)
    _down_with_startup(100.0)  # no pass of this loop saves 100 s, nor does the whole loop
    assert live.on  # a calibrated device that may come up: regions are recorded
    planned = live.planner.planned
    with monkeypatch.context() as m:
        m.setattr(planner, "_cut", lambda *args: pytest.fail("a cut was made for a device no plan could pay for"))
        u, total = _loop(u0, v0, 12)
    assert not dispatch.targets.registry.tried("cupy")  # never brought up, not even probed
    assert u.target == "numpy" and live.planner.planned == planned + 1
    numpy.testing.assert_allclose(numpy.asarray(u), expected_u, rtol=1e-12)
    assert total == pytest.approx(expected, rel=1e-12)
    noted = {key.op: per["cupy"] for key, per in startup._saving.items() if "cupy" in per}
    assert set(noted) == {"cos", "add"} and min(noted.values()) > 0.0
    assert dispatch.targets.probe("cupy") is not None  # brought up by something else: planned again with it
    u, total = _loop(u0, v0, 12)
    assert u.target == "cupy"
    _equal(u, total, expected_u, expected)


def _steps(u: Any, v: Any, steps: int, program=dispatch) -> Any:
    for _ in range(steps):
        u = program.cos(u) + v
    return u


def test_an_engine_coming_up_keeps_the_plans_it_does_not_move():
    """An engine coming up (torch-cpu beside CuPy, as between two cells) re-prices what was
    decided without it, but a loop's plan that places its calls as before stays in force: the
    loop is not recorded and planned again (a pass or more on the per-call rules), its data
    stays on the device, and its results are NumPy's."""
    live = router.ROUTER.live
    u0, v0 = _inputs()
    u, v = dispatch.array(u0), dispatch.array(v0)
    for _ in range(2):  # planned, then served: the loop's data on the device
        u = _steps(u, v, 12)
    assert u.target == "cupy"
    plans = {k: p.number for k, p in live.describe()}
    planned, repriced = live.planner.planned, live.repriced
    dispatch.targets.reset("torch-cpu")
    assert dispatch.targets.probe("torch-cpu") is not None  # it comes up (again)
    u = _steps(u, v, 12)
    assert u.target == "cupy"
    assert live.planner.planned == planned  # no region planned again
    assert live.repriced > repriced  # priced again with the engines up now
    assert {k: p.number for k, p in live.describe()} == plans
    expected = _steps(u0, v0, 36, numpy)
    result = numpy.asarray(u)
    assert result.dtype == expected.dtype and result.shape == expected.shape
    numpy.testing.assert_allclose(result, expected, rtol=1e-12)


def test_an_engine_coming_up_keeps_a_plan_whose_loop_calls_a_function_outside_the_catalog():
    """A loop calling a ufunc the catalog lacks (``scipy.special.expit``: NumPy runs it) keeps
    its plan when an engine comes up, that call priced on the host again as when recorded: the
    plan goes on placing each of the loop's calls, that one too, and the trace says so."""
    special = pytest.importorskip("scipy.special")
    u0, v0 = _inputs()

    def steps(u: Any, v: Any, n: int, program=dispatch) -> Any:
        for _ in range(n):
            u = special.expit(program.cos(u) + v)
        return u

    u, v = dispatch.array(u0), dispatch.array(v0)
    for _ in range(2):
        u = steps(u, v, 12)
    dispatch.targets.reset("torch-cpu")
    assert dispatch.targets.probe("torch-cpu") is not None
    with dispatch.trace() as t:
        u = steps(u, v, 12)
    first = [(r.op, str(r.reason).split(" (")[0]) for r in t.records[:3]]
    assert [op for op, _ in first] == ["cos", "add", "numpy.<ufunc 'expit'>"]
    assert len({reason for _, reason in first}) == 1 and first[0][1].startswith("plan "), first
    expected = steps(u0, v0, 36, numpy)
    result = numpy.asarray(u)
    assert result.dtype == expected.dtype and result.shape == expected.shape
    numpy.testing.assert_allclose(result, expected, rtol=1e-12)


def test_two_engines_down_on_a_device_the_one_cheaper_to_bring_up_is_credited_with_its_whole_saving(monkeypatch):
    """CuPy and a second engine of the same device both down, the second faster at each call but
    slower to bring up: the loop's saving there is noted for CuPy, the engine a plan would bring
    up for the device, whole; not split between the two by which is cheaper at each call, each
    then credited only with what it adds over the other. A second engine whose probe failed
    serves nothing, and is priced for nothing."""
    live = router.ROUTER.live
    u0, v0 = _inputs()
    cal = synthetic(gpu=True, torch_cpu=False)
    cal.targets["cupy"]["transfer"] = dict(GPU_TRANSFER, to_host_staged=1e9, to_host_pageable=1e9)
    cal.targets["torch-cuda"] = _target(10e-6, 200.0, "cuda:0", cal.targets["cupy"]["transfer"])
    cal.extra["startup"] = {"cupy": {"import_s": 0.0, "context_s": 50.0, "first_call_s": 0.0},
                            "torch-cuda": {"import_s": 0.0, "context_s": 100.0, "first_call_s": 0.0}}
    for name in ("cupy", "torch-cuda"):
        dispatch.targets.reset(name)
    monkeypatch.setattr(dispatch.targets.registry, "tried", lambda name: False)  # neither probed: both down
    router.use_calibration(cal)
    assert live.on and "torch-cuda" in router.ROUTER.priced
    expected_u, expected = _loop(u0, v0, 12, numpy)
    u, total = _loop(u0, v0, 12)
    assert u.target == "numpy"
    _equal(u, total, expected_u, expected)
    noted = {(key.op, name) for key, per in startup._saving.items() for name in per}
    assert {("cos", "cupy"), ("add", "cupy")} <= noted and not any(name == "torch-cuda" for _, name in noted)
    assert min(per["cupy"] for key, per in startup._saving.items() if key.op in ("cos", "add")) > 0.0

    # the second engine brought up, its probe failed: it is no place's engine, and CuPy stays priced
    monkeypatch.setattr(dispatch.targets.registry, "tried", lambda name: name == "torch-cuda")
    monkeypatch.setattr(dispatch.targets.registry, "is_up", lambda name: False)
    key = router.call_key(op := dispatch.base.ops.op_named("cos"), inputs := dispatch.arrays._call.Inputs([u0]))
    assert live._best(key, live._computed_for(op, inputs, key))["cuda:0"][1] == "cupy"


def test_a_devices_bring_up_loads_its_libraries_before_it_serves_a_call(monkeypatch):
    """A device's bring-up runs one small call of each kind that loads one of its libraries
    (cuBLAS, cuSOLVER, cuFFT) on its own thread, before it is ready: the program's first such call
    finds them loaded. A kind the device refuses or fails there leaves it up all the same."""
    from dispatch.targets.cupy_target import CupyTarget

    ran, original = [], CupyTarget.run

    def run(self, op, args, kwargs):
        ran.append((op.name, threading.current_thread().name, bringup.state("cupy")))
        if op.name == "linalg.qr":
            raise RuntimeError("a library the device lacks")
        return original(self, op, args, kwargs)

    monkeypatch.setattr(CupyTarget, "run", run)
    dispatch.targets.reset("cupy")
    assert bringup.start("cupy") and bringup.wait("cupy", 60) == "ready"
    assert [name for name, _, _ in ran] == ["add", *bringup.WARM]
    assert {(thread, state) for _, thread, state in ran} == {("dispatch-bringup-cupy", "starting")}
    x = numpy.random.default_rng(0).random((64, 64))
    with dispatch.trace() as t:
        result = dispatch.linalg.svd(dispatch.array(x).to("cupy"), compute_uv=False)
    assert t.records[-1].target == "cupy"
    expected = numpy.linalg.svd(x, compute_uv=False)
    assert numpy.asarray(result).dtype == expected.dtype and numpy.asarray(result).shape == expected.shape
    numpy.testing.assert_allclose(numpy.asarray(result), expected, rtol=1e-10)


@pytest.mark.parametrize(("made", "warmed"), [
    ({"exp", "sum", "true_divide"}, []),
    ({"exp", "dot"}, ["matmul"]),
    ({"fft.irfft", "linalg.lstsq", "fft.fftfreq"}, ["linalg.svd", "fft.rfft"]),
])
def test_a_devices_bring_up_loads_only_the_libraries_the_programs_calls_need(monkeypatch, made, warmed):
    """Told the kinds of call the program made, a bring-up runs only the warm-up calls whose
    libraries those need: a program of element-wise calls does not wait for cuBLAS, cuSOLVER and
    cuFFT to load (0.3-0.5 s with CuPy), and one that made a dot product loads cuBLAS alone."""
    from dispatch.targets.cupy_target import CupyTarget

    ran, original = [], CupyTarget.run

    def run(self, op, args, kwargs):
        ran.append(op.name)
        return original(self, op, args, kwargs)

    monkeypatch.setattr(CupyTarget, "run", run)
    dispatch.targets.reset("cupy")
    assert bringup.start("cupy", frozenset(made)) and bringup.wait("cupy", 60) == "ready"
    assert ran == ["add", *warmed]


def test_a_loop_whose_passes_forgo_a_devices_start_up_brings_it_up_in_the_background(monkeypatch):
    """A pass of the loop saves less than CuPy's start-up; its passes, counted as the region
    noted them (copies included), forgo it after a few, and CuPy comes up in the background while
    NumPy runs the loop: a long-lived process pays no more than twice what knowing its future
    would have cost, counted by what the loop, not each call alone, would save."""
    u0, v0 = _inputs()
    expected_u, expected = _loop(u0, v0, 12, numpy)
    _down_with_startup(100.0)
    _loop(u0, v0, 3)
    per_pass = sum(per["cupy"] for per in startup._saving.values() if "cupy" in per)
    assert per_pass > 0.0
    startup.use_calibration(types.SimpleNamespace(extra={"startup": {"cupy": {  # about 5 passes' saving
        "import_s": 0.0, "context_s": 5 * per_pass, "first_call_s": 0.0}}}))
    monkeypatch.setattr(startup, "_forgone", {})
    history = router.ROUTER.history  # NumPy's calls timed, as outside these tests
    monkeypatch.setattr(history, "observe", types.MethodType(History.observe, history))
    monkeypatch.setattr(router, "observe", router.ROUTER.observe)
    from dispatch.targets.cupy_target import CupyTarget

    warmed, original = [], CupyTarget.run

    def run(self, op, args, kwargs):
        if threading.current_thread().name == "dispatch-bringup-cupy":
            warmed.append(op.name)
        return original(self, op, args, kwargs)

    monkeypatch.setattr(CupyTarget, "run", run)
    u, total = _loop(u0, v0, 12)  # each planned call counted, not each timing (one in SETTLED_EVERY, once settled)
    numpy.testing.assert_allclose(numpy.asarray(u), expected_u, rtol=1e-12)
    assert total == pytest.approx(expected, rel=1e-12)
    assert startup.forgone()["cupy"] >= 5 * per_pass
    assert bringup.state("cupy") is not None and bringup.wait("cupy", 60) == "ready"
    assert warmed == ["add"]  # the loop's element-wise calls need none of the device's libraries
    monkeypatch.setattr(history, "observe", lambda *args, **kwargs: None)  # priced by the model again, as
    history.stats.clear()  # the other tests are: this machine's NumPy times, noisy, are not the fake's point
    with dispatch.trace() as t:
        u, total = _loop(u0, v0, 12)
    assert u.target == "cupy", [(r.op, r.target, r.reason) for r in t.records][:8]
    _equal(u, total, expected_u, expected)


def test_a_planned_call_left_down_for_a_start_up_is_timed_one_in_eight_once_settled(monkeypatch):
    """With CuPy down, the loop's plan keeps it on the host and its calls count toward CuPy's
    start-up (their kinds priced out). Such a call is timed as a cost decision is: every call
    until ``SETTLED_SAMPLES`` timings, then one in ``SETTLED_EVERY``; each timing counts as the
    calls it stands for (``calls_counted``), so the calls counted toward the start-up are the
    calls made, not eight times as many once the first timings are in."""
    u0, v0 = _inputs()
    expected_u, expected = _loop(u0, v0, 120, numpy)
    _down_with_startup(100.0)
    history = router.ROUTER.history  # NumPy's calls timed, as outside these tests
    monkeypatch.setattr(history, "observe", types.MethodType(History.observe, history))
    monkeypatch.setattr(router, "observe", router.ROUTER.observe)
    u, total = _loop(u0, v0, 120)
    _equal(u, total, expected_u, expected)
    planned = [d for p in router.ROUTER.live.planned.values() for k, d in p.decisions.items() if k.op == "cos"]
    assert planned and all(startup.priced_out(d.key) for d in planned)
    for d in planned:  # 120 calls of the kind, timed before the plan was made and since
        samples = history.stats[d.key]["numpy"].samples
        assert d.settled and samples < 40, samples
        assert abs(calls_counted(samples) - 120) <= SETTLED_EVERY, (samples, calls_counted(samples))


def _pass(u0: numpy.ndarray, v0: numpy.ndarray, program=dispatch, ops=("cos", "sin")) -> float:
    """One pass of straight-line calls whose result the host reads: a region met once a pass."""
    first, second = (getattr(program, op) for op in ops)
    u, v = program.asarray(u0), program.asarray(v0)
    w = first(u) + v
    return float((second(w) * v - u).sum())


def _first_planned_pass(u0: numpy.ndarray, v0: numpy.ndarray, ops: tuple, passes: int = 6) -> int:
    """The first of ``passes`` passes whose calls a plan placed, each pass's sum equal to NumPy's."""
    expected = _pass(u0, v0, numpy, ops)
    served = []
    for _ in range(passes):
        with dispatch.trace() as t:
            assert _pass(u0, v0, ops=ops) == pytest.approx(expected, rel=1e-12)
        routed = [r for r in t.records if r.op in (*ops, "add", "multiply", "subtract")]
        assert len(routed) == 5
        served.append(all(r.reason.startswith("plan ") for r in routed))
    assert any(served), "no pass was planned"
    return served.index(True)


def test_a_region_met_while_the_engine_was_down_is_planned_as_one_that_repeats_once_it_is_up():
    """A pass is met twice with CuPy down (recorded, its saving noted), then CuPy comes up:
    what was planned is dropped, but not that the region repeats. Its passes are served by a
    plan one pass sooner than those of a region first met with CuPy up (each pass is a region
    met once: in a warm process, a run)."""
    u0, v0 = _inputs()
    _down_with_startup(100.0)
    for _ in range(2):
        _pass(u0, v0)
    assert not dispatch.targets.registry.tried("cupy")
    assert dispatch.targets.probe("cupy") is not None  # brought up by something else
    met_before = _first_planned_pass(u0, v0, ("cos", "sin"))
    met_up = _first_planned_pass(u0, v0, ("exp", "tan"))
    assert met_before == met_up - 1, (met_before, met_up)


def _cupy_up_torch_cuda_down(monkeypatch, start_up: float = 1.0) -> tuple:
    """A bare ``Live`` (for ``_paid``) with CuPy up and torch-cuda down, its start-up ``start_up``
    seconds: what it was priced for and what was noted for it, recorded."""
    admitted, noted = [], {}
    monkeypatch.setattr(startup, "up", lambda name: name in ("numpy", "cupy"))
    monkeypatch.setattr(startup, "admit", lambda name, saving, key=None: bool(admitted.append((name, saving)))
                        or saving > start_up)
    monkeypatch.setattr(startup, "note", lambda k, name, saving: noted.__setitem__((k.op, name), saving))
    live = Live.__new__(Live)
    live.unpaid = {}
    return live, admitted, noted


def test_an_engine_down_is_priced_for_what_it_adds_and_refusing_it_keeps_the_engine_up_there(monkeypatch):
    """Three calls in a chain, 1 s each on the host, 0.1 s on the device: the first two CuPy's
    (up), the third one only torch-cuda runs there (down, its start-up 1 s). The plan over all
    three saves about 2.7 s a pass, torch-cuda's call 0.9 s of it: torch-cuda is refused for
    what it adds, not brought up for what CuPy saves, and CuPy keeps its calls on the device."""
    key = ("region",)
    kinds = [dispatch.routing.decisions.CallKey(op, (numpy.dtype("float64"),), 20,
                                                frozenset({dispatch.base.devices.HOST}), None, None)
             for op in ("cos", "sin", "erf")]
    engines = ("cupy", "cupy", "torch-cuda")
    nodes = [_Node(k, [(i - 1, 8 << 20)] if i else [(-1, 8 << 20)], {"host": (1.0, "numpy"), "cuda:0": (0.1, e)},
                   8 << 20) for i, (k, e) in enumerate(zip(kinds, engines, strict=True))]
    region = planner.Region([{"host": 0.0}] + [{p: s for p, (s, _) in n.prices.items()} for n in nodes],
                            [(0, 1, 8 << 20), (1, 2, 8 << 20), (2, 3, 8 << 20)], lambda src, dst, nbytes: 0.001,
                            {0: "host"})
    live, admitted, noted = _cupy_up_torch_cuda_down(monkeypatch)
    paid = live._paid(key, nodes, 1, region)
    plan = planner.plan(paid)
    assert plan.placement == ["host", "cuda:0", "cuda:0", "host"]  # CuPy's calls stay there
    assert [name for name, _ in admitted] == ["torch-cuda"] and admitted[0][1] == pytest.approx(0.9, abs=0.01)
    assert list(noted) == [("erf", "torch-cuda")] and noted[("erf", "torch-cuda")] == pytest.approx(0.9, abs=0.01)
    assert live.unpaid == {key: {"torch-cuda"}}


def test_an_engine_whose_calls_could_pay_is_still_refused_for_what_it_adds_to_the_plan(monkeypatch):
    """As above, but torch-cuda's call (on an array of its own) gains 1.2 s there, more than its
    start-up: a cut is made, and torch-cuda adds 0.95 s to the plan (its input's copy paid), less
    than its start-up, though the plan saves 2.25 s a pass. Refused; what it adds is noted."""
    key = ("region",)
    kinds = [dispatch.routing.decisions.CallKey(op, (numpy.dtype("float64"),), 20,
                                                frozenset({dispatch.base.devices.HOST}), None, None)
             for op in ("cos", "sin", "erf")]
    b = 8 << 20
    nodes = [_Node(kinds[0], [(-1, b)], {"host": (1.0, "numpy"), "cuda:0": (0.1, "cupy")}, b),
             _Node(kinds[1], [(0, b)], {"host": (1.0, "numpy"), "cuda:0": (0.1, "cupy")}, b),
             _Node(kinds[2], [(-2, b)], {"host": (1.3, "numpy"), "cuda:0": (0.1, "torch-cuda")}, b)]
    region = planner.Region([{"host": 0.0}, {"host": 0.0}] + [{p: s for p, (s, _) in n.prices.items()} for n in nodes]
                            + [{"host": 0.0}], [(0, 2, b), (2, 3, b), (1, 4, b), (3, 5, b)],
                            lambda src, dst, nbytes: 0.25, {0: "host", 1: "host", 5: "host"})
    live, admitted, noted = _cupy_up_torch_cuda_down(monkeypatch)
    assert planner.plan(region).saving == pytest.approx(2.25)
    paid = live._paid(key, nodes, 2, region)
    assert planner.plan(paid).placement == ["host", "host", "cuda:0", "cuda:0", "host", "host"]
    assert [name for name, _ in admitted] == ["torch-cuda", "torch-cuda"]
    assert admitted[0][1] == pytest.approx(1.2) and admitted[1][1] == pytest.approx(0.95)  # bound, then added
    assert list(noted) == [("erf", "torch-cuda")] and noted[("erf", "torch-cuda")] == pytest.approx(0.95)


def test_a_kind_of_call_met_twice_in_a_pass_is_noted_at_its_calls_mean_share(monkeypatch):
    """Two calls of one kind on arrays of their own, gaining 0.9 and 1.9 s on torch-cuda (down,
    its start-up more than both): each call counts half of what the pass would save, so that the
    two together count all of it, not twice the last one's share."""
    kind = dispatch.routing.decisions.CallKey("erf", (numpy.dtype("float64"),), 20,
                                              frozenset({dispatch.base.devices.HOST}), None, None)
    b = 8 << 20
    nodes = [_Node(kind, [(-1, b)], {"host": (1.0, "numpy"), "cuda:0": (0.1, "torch-cuda")}, b),
             _Node(kind, [(-2, b)], {"host": (2.0, "numpy"), "cuda:0": (0.1, "torch-cuda")}, b)]
    region = planner.Region([{"host": 0.0}, {"host": 0.0}] + [{p: s for p, (s, _) in n.prices.items()} for n in nodes],
                            [(0, 2, b), (1, 3, b)], lambda src, dst, nbytes: 0.05, {0: "host", 1: "host"})
    live, admitted, noted = _cupy_up_torch_cuda_down(monkeypatch, start_up=10.0)
    paid = live._paid(("region",), nodes, 2, region)
    assert planner.plan(paid).placement == ["host"] * 4 and admitted == [("torch-cuda", pytest.approx(2.8))]
    assert noted == {("erf", "torch-cuda"): pytest.approx((2.8 - 0.1) / 2)}  # the pass's saving, copies in paid


def test_the_last_runs_plan_places_the_first_pass_and_its_first_call_waits_for_the_bring_up(monkeypatch):
    """A script's last run planned its loop onto the device; each kind of call the plan put there
    is kept with what one pass of the loop saved. In the next run, while CuPy comes up in the
    background, the loop's first call, which alone saves less than what is left of the bring-up
    (alone it would not even win the copy back: ``test_alone_a_call_stays_on_the_host``), waits
    for it as one pass repays that, and runs there without the copy back, which its region's next
    calls do not need: the loop runs on the device from its first pass, with NumPy's results."""
    monkeypatch.setattr(startup, "_late", set())
    monkeypatch.setattr(bringup, "_began", {})
    u0, v0 = _inputs()
    expected_u, expected = _loop(u0, v0, 12, numpy)
    _loop(u0, v0, 12)  # the last run: its loop planned onto the device
    kept = json.loads(json.dumps(startup._plans_kept()))  # as the learned file holds it
    assert kept and {name for _, name, _ in kept} == {"cupy"} and min(s for _, _, s in kept) > 0
    # the next run: a fresh process (no plan, no copy on the device), CuPy's bring-up under way,
    # 5 s left of it, more than the loop's first call saves there (milliseconds), and less than
    # a pass saved (made 10 s here, as a larger loop's would be: the figures scale together)
    saving = 10.0
    monkeypatch.setattr(learned, "_previous", {"plans": [[raw, name, saving] for raw, name, _ in kept]})
    monkeypatch.setattr(startup, "_plans", {})
    monkeypatch.setattr(startup, "_kept_plans", None)  # read at the next run's first decision
    mirrors.clear()
    _down_with_startup(5.0)
    release = threading.Event()
    original = bringup._bring_up
    monkeypatch.setattr(bringup, "_bring_up", lambda *args: release.wait(30) and original(*args))
    waits = []
    real_wait = bringup.wait
    monkeypatch.setattr(bringup, "wait", lambda name, timeout=None: (
        waits.append((name, timeout)), release.set(), real_wait(name, 30))[-1])
    assert bringup.start("cupy")
    with dispatch.trace() as t:
        u, total = _loop(u0, v0, 12)
    assert waits == [("cupy", saving)]  # once, no longer than the pass saves
    first = next(r for r in t.records if r.op == "cos")
    assert first.target == "cupy" and "the last run's plan" in first.reason  # the first pass's first call
    assert u.target == "cupy"
    _equal(u, total, expected_u, expected)


def _script_body(u0: numpy.ndarray, v0: numpy.ndarray, program=dispatch, between=lambda: None) -> tuple:
    """A straight-line script: calls on the same data, then a read on the host (``between``
    runs after its first two calls)."""
    u, v = program.array(u0), program.array(v0)
    w = program.sin(u) + v
    between()
    w = program.cos(w) * v
    return w, float(w.sum())


@pytest.mark.parametrize("arrival", [False, True], ids=["whole", "an engine's arrival between"])
def test_a_straight_line_region_met_once_is_planned_for_the_scripts_next_run(monkeypatch, arrival):
    """A script meets each region of a straight-line program once a run: no plan serves it, and
    alone no call wins its copy back, so every call stays on NumPy. Its run kept, the region's
    placement is kept for the next run, whose first call then runs on the device, where the last
    run's plan put it, and the calls after it follow: NumPy's results, one copy in each way. An
    engine that comes up in the middle of the region (it prices and plans afresh) ends it there;
    what it recorded so far is placed with the calls after it, as one region."""
    u0, v0 = _inputs()
    expected_w, expected = _script_body(u0, v0, numpy)
    monkeypatch.setattr(learned, "_script", None)  # not a script: nothing is kept
    w, _ = _script_body(u0, v0)
    assert w.target == "numpy" and startup._plans_kept() == []
    monkeypatch.setattr(learned, "_script", ("program.py", "0" * 64))  # a script's run, kept for its next
    router.ROUTER.live.clear()
    with monkeypatch.context() as m:  # placed without a cut: a short script never pays SciPy's import for it
        m.setattr(planner, "_cut", lambda *a: pytest.fail("a cut for a region met once"))
        # (an engine up: the router is told so, and its next decision prices and plans afresh)
        w, total = _script_body(u0, v0, between=lambda: router.ROUTER._came_up("cupy") if arrival else None)
    assert w.target == "numpy"  # this run: still NumPy's, the plan serves only the next
    _equal(w, total, expected_w, expected)
    kept = json.loads(json.dumps(startup._plans_kept()))  # as the learned file holds it
    assert {name for _, name, _ in kept} == {"cupy"} and min(s for _, _, s in kept) > 0
    assert {raw[0] for raw, _, _ in kept} >= {"sin", "cos"}
    assert len({s for _, _, s in kept}) == 1  # one region's saving: the calls before the arrival joined to it
    # the next run: a fresh process, no copy on the device
    monkeypatch.setattr(learned, "_previous", {"plans": kept})
    monkeypatch.setattr(startup, "_plans", {})
    monkeypatch.setattr(startup, "_kept_plans", None)
    router.ROUTER.clear_decisions()  # (its history, as the learned file keeps it, stays)
    router.ROUTER.live.clear()
    mirrors.clear()
    with dispatch.trace() as t:
        w, total = _script_body(u0, v0)
    first = next(r for r in t.records if r.op == "sin")
    assert first.target == "cupy" and "the last run's plan" in first.reason
    assert w.target == "cupy"
    assert sum(r.bytes_moved for r in t.records) <= 3 * u0.nbytes  # u and v in, nothing large back
    _equal(w, total, expected_w, expected)


def _arrival_after_sin_add(monkeypatch) -> tuple:
    """A kept script's first calls, ``sin(u) + v``, then an engine's arrival (seen at the router's
    next decision): (u's and v's host data, v, the sum)."""
    u0, v0 = _inputs()
    monkeypatch.setattr(learned, "_script", ("program.py", "0" * 64))
    router.ROUTER.live.clear()
    u, v = dispatch.array(u0), dispatch.array(v0)
    w = dispatch.sin(u) + v
    router.ROUTER._came_up("cupy")
    return u0, v0, v, w


def test_a_region_cut_short_by_an_arrival_just_before_its_read_is_placed_alone(monkeypatch):
    """An engine's arrival after the region's last call, then a forced call and a read: no call
    that a region counts comes after the arrival, and what came before it is placed for the next
    run on its own."""
    u0, v0, v, w = _arrival_after_sin_add(monkeypatch)
    with dispatch.using("cupy"):  # the router's first decision since the arrival, in no region
        dispatch.cos(v)
    host = numpy.asarray(w)  # the read: it ends a region that holds no call
    numpy.testing.assert_allclose(host, numpy.sin(u0) + v0, rtol=1e-12)
    assert {raw[0] for raw, _, _ in startup._plans_kept()} == {"sin", "add"}


@pytest.mark.parametrize("between", ["calls", "no call"])
def test_a_region_two_arrivals_cut_is_placed_whole_for_the_next_run(monkeypatch, between):
    """Two engines' arrivals in one region of a script (each prices and plans afresh, seen at
    the router's next decision): the calls before the first, between the two (if any) and after
    the second are placed as one region."""
    u0, v0, v, w = _arrival_after_sin_add(monkeypatch)
    if between == "calls":
        w = dispatch.cos(w) * v
    else:
        with dispatch.using("cupy"):  # decided, so the arrival is seen; in no region
            dispatch.negative(v)
    router.ROUTER._came_up("cupy")
    if between != "calls":
        with dispatch.using("cupy"):
            dispatch.negative(v)
        w = dispatch.cos(w) * v
    w = dispatch.exp(w) - v
    host = numpy.asarray(w)  # the read that ends the region
    numpy.testing.assert_allclose(host, numpy.exp(numpy.cos(numpy.sin(u0) + v0) * v0) - v0, rtol=1e-12)
    kept = startup._plans_kept()
    assert {raw[0] for raw, _, _ in kept} >= {"sin", "cos", "exp"}
    assert len({s for _, _, s in kept}) == 1  # one region's saving


def test_a_hand_edited_record_of_plans_is_ignored(monkeypatch):
    for kept in ("not a record", [["cos"]], [[["cos", ["float64"], 20, ["cpu"]], 3, 1.0]],
                 [[["cos", ["float64"], 20, ["cpu"]], "cupy", "nan"]],
                 [[["cos", ["no such dtype"], 20, []], "cupy", 1.0]]):
        monkeypatch.setattr(learned, "_previous", {"plans": kept})
        monkeypatch.setattr(startup, "_kept_plans", None)
        assert startup._earlier_plans() == {} and startup._plans_kept() == []
    monkeypatch.setattr(learned, "_previous", {"plans": [[["cos", ["float64"], 20, ["cpu"]], "cupy", 1.0]]})
    monkeypatch.setattr(startup, "_kept_plans", None)
    key = ("cos", (numpy.dtype("float64"),), 20, frozenset({dispatch.base.devices.HOST}))
    assert startup.planned_before(key) == {"cupy": 1.0}
    startup.planned(key, "cupy", 2.0)
    assert startup._plans_kept() == [[["cos", ["float64"], 20, ["cpu"]], "cupy", 2.0]]  # this run's over the last's


def test_calls_that_forgo_a_devices_start_up_bring_it_up_in_the_background(monkeypatch):
    """Each product saves less than CuPy's start-up, copies included; once they have forgone it
    together, CuPy comes up in the background and takes the next ones."""
    a = numpy.random.default_rng(0).random((1024, 1024))
    want = a @ a
    _down_with_startup(100.0)
    history = router.ROUTER.history
    # NumPy's calls timed, as they are outside these tests, each at 0.5 s: a slow host, which the
    # device beats by far once up (the real time, 20-70 ms here, is near the fake device's copies)
    timed = types.MethodType(History.observe, history)
    with monkeypatch.context() as m:
        m.setattr(router, "observe", router.ROUTER.observe)
        m.setattr(history, "observe", lambda key, target, seconds, explored=False: timed(key, target, 0.5, explored))
        numpy.asarray(dispatch.matmul(dispatch.asarray(a), a))
        (key, per), = startup._saving.items()
        saving = per["cupy"]
        startup.use_calibration(types.SimpleNamespace(extra={"startup": {"cupy": {  # about 2.5 products' saving
            "import_s": 0.0, "context_s": 2.5 * saving, "first_call_s": 0.0}}}))
        calls = 0
        with dispatch.trace() as t:
            while bringup.state("cupy") is None and calls < 40:
                got = numpy.asarray(dispatch.matmul(dispatch.asarray(a), a))
                calls += 1
                assert got.dtype == want.dtype and got.shape == want.shape
                numpy.testing.assert_allclose(got, want, rtol=1e-12)
    assert key.op == "matmul" and calls < 40 and {r.target for r in t.records if r.op == "matmul"} == {"numpy"}
    assert startup.forgone()["cupy"] >= 2.5 * saving
    assert bringup.wait("cupy", 60) == "ready"
    assert not startup.priced_out(key)  # up: no call is priced out for it
    with dispatch.trace() as t:
        got = numpy.asarray(dispatch.matmul(dispatch.asarray(a), a))
    assert [r.target for r in t.records if r.op == "matmul"] == ["cupy"]
    numpy.testing.assert_allclose(got, want, rtol=1e-12)


def test_a_second_engine_is_priced_against_the_best_one_up_not_against_numpy(monkeypatch):
    pytest.importorskip("torch")
    cal = synthetic(gpu=True)
    cal.targets["torch-cpu"] = _target(5e-6, 1000.0)  # cheaper still than CuPy, which is cheaper than NumPy
    # torch-cpu's start-up (0.1 s) is less than it saves over NumPy on this product (about 0.2 s),
    # more than it saves over CuPy, which is up (a few ms): it stays down
    cal.extra["startup"] = {"torch-cpu": {"import_s": 0.0, "context_s": 0.1, "first_call_s": 0.0}}
    router.use_calibration(cal)
    monkeypatch.delitem(dispatch.targets.registry._targets, "torch-cpu", raising=False)  # down, as in a fresh process
    a = numpy.random.default_rng(0).random((1024, 1024))
    with dispatch.trace() as t:
        got = numpy.asarray(dispatch.matmul(dispatch.asarray(a), a))
    want = a @ a
    assert got.dtype == want.dtype and got.shape == want.shape
    numpy.testing.assert_allclose(got, want, rtol=1e-12)
    assert [r.target for r in t.records if r.op == "matmul"] == ["cupy"]
    assert not dispatch.targets.registry.tried("torch-cpu")


def test_a_forced_target_runs_every_call_and_no_region_is_planned_for_it():
    """Under a forced target rule 1 decides every call: its calls are in no region, no plan moves
    one elsewhere, and the memo serves their repeats while a region of routed calls is recorded."""
    live = router.ROUTER.live
    u0, v0 = _inputs()
    assert live.recording  # for the routed calls to come
    with dispatch.using("numpy"):
        _loop(u0, v0, 12)
        u, total = _loop(u0, v0, 12)  # a loop met again: what a routed one is planned at
    expected_u, expected = _loop(u0, v0, 12, numpy)
    assert u.target == "numpy"
    _equal(u, total, expected_u, expected)
    forced = {k: d for k, d in router.ROUTER.decisions.items() if k.forced == "numpy"}
    assert forced and all(d.kind is DecisionKind.FORCED for d in forced.values())
    assert not live.planned and not any(n.key.forced for n in live.nodes)
    assert any(k[1] == "numpy" for k in router.ROUTER.memo)  # served from the memo, the region still recorded



def test_a_call_made_twice_on_one_input_then_read_starts_a_region_of_its_own():
    """The same kind of call on the same input twice is a loop body of one call: its second call
    ends the region and starts the next, its input a source of that one; reading its result on
    the host then ends that region."""
    live = router.ROUTER.live
    x0 = _inputs()[0]
    x = dispatch.asarray(x0).to("cupy")
    dispatch.exp(x)
    assert live.recording and len(live.nodes) == 1
    out = dispatch.exp(x)
    assert len(live.nodes) == 1 and len(live.sources) == 1  # the second call's region: its input a source of it
    got, want = numpy.asarray(out), numpy.exp(x0)
    assert got.dtype == want.dtype and got.shape == want.shape
    numpy.testing.assert_allclose(got, want, rtol=1e-15)
    assert not live.nodes  # the host read it: the region ended



@pytest.mark.parametrize("learning", [False, True], ids=["priced", "learning"])
@pytest.mark.parametrize("seed", range(64))
def test_random_programs_recorded_and_planned_equal_numpy(seed, learning, monkeypatch):
    """Programs drawn at random, run routed (regions recorded, loops planned, data moved between
    the host and the fake device) and on NumPy (``random_programs.equal_to_numpy``)."""
    random_programs.equal_to_numpy(lambda seed, program: random_programs.vectors(seed, program, N // 4, "cupy"),
                                   seed, learning, monkeypatch, 1e-12)


@pytest.mark.parametrize("learning", [False, True], ids=["priced", "learning"])
@pytest.mark.parametrize("seed", range(32))
def test_random_matrix_programs_recorded_and_planned_equal_numpy(seed, learning, monkeypatch):
    """``test_random_programs_recorded_and_planned_equal_numpy`` over square matrices."""
    random_programs.equal_to_numpy(lambda seed, program: random_programs.matrices(seed, program, 512, "cupy"),
                                   seed, learning, monkeypatch, 1e-9, 1e-12)


@pytest.mark.parametrize("name, size", [("gaussian_blur", 512)])
def test_converge_shows_each_runs_plans_and_outputs_numpys(name, size):
    """``benchmarks.route_trace.converge``, the tool that shows what auto does over a warm
    process's runs: each run's output is NumPy's, and the plans that placed its calls are named,
    the ones made in that run counted as new."""
    from benchmarks import programs, programs_bench, route_trace

    lines: list[str] = []
    records = route_trace.converge(name, 3, size=[str(size)], show=lines.append)
    expected = programs_bench._call(programs.load_with(name, numpy).main, [str(size)])
    assert [r["output"] for r in records] == [expected] * 3
    assert all(r["routed"] == sum(r["kinds"].values()) for r in records)
    assert records[0]["plans"] and records[0]["new_plans"] == len(records[0]["plans"])
    assert "PLANNED" in records[-1]["kinds"]
    assert sum(r["new_plans"] for r in records) == len({p for r in records for p in r["plans"]})
    assert records[0]["made"] >= records[0]["new_plans"] and all(r["revised"] >= 0 for r in records)
    assert [line.split(":")[0] for line in lines if line.startswith("run ")] == ["run 0", "run 1", "run 2"]
    assert any(line.startswith("-- traced") for line in lines)
