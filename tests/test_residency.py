"""Entering a device from host data: the router prices the way back, and learns from what the
program then does with the result (used on the device again, or read back).

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
from dispatch.arrays import _compiled
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


def test_results_seen_to_stay_make_entering_cheaper():
    router.use_calibration(_slow_way_back())
    op = op_named("exp")
    inputs = Inputs([dispatch.asarray(numpy.linspace(0.0, 1.0, N))])
    key = router.call_key(op, inputs)
    assert router.history.p_return(key) == 1.0
    assert router.decide(op, inputs, (), {}).target.name == "numpy"
    for _ in range(8):
        router.settle(key, stayed=True)
    assert router.history.p_return(key) == pytest.approx(1 / 9)
    assert router.decide(op, inputs, (), {}).target.name == "cupy"
    # data already on the device is never charged a way back: it is there either way
    on_device = Inputs([dispatch.asarray(numpy.linspace(0.0, 1.0, N)).to("cupy")])
    assert router.decide(op, on_device, (), {}).target.name == "cupy"


def test_the_call_path_learns_what_becomes_of_a_result():
    router.use_calibration(synthetic(gpu=True, torch_cpu=False))  # the device wins exp's round trip
    host = numpy.linspace(0.0, 1.0, N)
    x = dispatch.asarray(host)
    y = dispatch.exp(x)
    assert y.target == "cupy"
    key = y._origin
    assert key is not None and key[0] == "exp"
    z = y * 2.0  # used on the device: it stayed
    assert z.target == "cupy" and y._origin is None
    assert router.history.outcomes[key] == [0, 1]
    w = dispatch.exp(x)
    back = numpy.asarray(w)  # read back before any device use
    assert router.history.outcomes[key] == [1, 1]
    numpy.testing.assert_allclose(back, numpy.exp(host), rtol=1e-15)
    numpy.testing.assert_allclose(numpy.asarray(z), numpy.exp(host) * 2.0, rtol=1e-15)
    assert back.dtype == numpy.float64 and back.shape == (N,)
    numpy.asarray(w)  # settled once per array
    assert router.history.outcomes[key] == [1, 1]


def test_outcomes_persist_with_the_history(tmp_path):
    h = History()
    key = ("exp", (numpy.dtype("float64"),), 20, frozenset({dispatch.base.devices.HOST}))
    h.settle(key, stayed=True)
    h.settle(key, stayed=False)
    h.settle(key, stayed=True)
    h.save(tmp_path / "history.json")
    again = History()
    again.load(tmp_path / "history.json")
    assert again.outcomes[key] == [1, 2]
    assert again.p_return(key) == pytest.approx(2 / 4)


def _weight_and_device_gradient():
    """A weight on the host and its gradient on the device, where copying to the device is
    cheap enough that each new weight sent there makes the update move (see below)."""
    cal = synthetic(gpu=True, torch_cpu=False)
    cal.targets["cupy"]["transfer"] = dict(GPU_TRANSFER, to_device_staged=2e9, to_device_pageable=2e9)
    router.use_calibration(cal)
    w0, g0 = numpy.linspace(0.0, 1.0, N), numpy.linspace(1.0, 2.0, N)
    return w0, g0, dispatch.asarray(g0).to("cupy")


def test_a_host_result_seen_sent_to_a_device_next_is_made_there():
    """A weight updated from a device's gradient: on the host the update wins alone (the
    gradient comes back faster than the weight goes in), but each new weight is then sent to
    the device; once that is seen, the host's price carries that copy and the update moves."""
    w0, g0, g = _weight_and_device_gradient()
    w = dispatch.asarray(w0) - 0.1 * g
    assert w.target == "numpy"
    key = w._hosted
    assert key is not None and key[0] == "subtract" and router.history.sends[key] == [1, 0, 1]
    assert router.history.p_send(key) == 0.0
    with dispatch.using("cupy"):
        product = w * g  # the next call runs on the device: the weight is sent there
    assert router.history.sends[key] == [1, 1, 0] and w._hosted is None
    assert router.history.p_send(key) == 1.0
    again = dispatch.asarray(w0) - 0.1 * g
    assert again.target == "cupy"
    for got, want in ((w, w0 - 0.1 * g0), (again, w0 - 0.1 * g0), (product, (w0 - 0.1 * g0) * g0)):
        got = numpy.asarray(got)
        assert got.dtype == want.dtype and got.shape == want.shape
        numpy.testing.assert_allclose(got, want, rtol=1e-15)


VIEWS = {"w.T": lambda w: w.T, "w[: N // 2]": lambda w: w[: N // 2], "w.reshape(2, -1)": lambda w: w.reshape(2, -1)}


@pytest.mark.parametrize("view", VIEWS)
def test_a_host_result_sent_to_a_device_as_a_view_is_seen_sent(view):
    """The weight sent on as a view of itself (its transpose, a slice, a reshape): the device
    is still sent that result, and the update moves there as above."""
    w0, g0, g = _weight_and_device_gradient()
    w = dispatch.asarray(w0) - 0.1 * g
    key = w._hosted
    assert key is not None and w.target == "numpy"
    part = VIEWS[view](w)
    assert part._hosted == key
    with dispatch.using("cupy"):
        part * 2.0  # the view is sent to the device
    assert router.history.sends[key][:2] == [1, 1] and part._hosted is None
    again = dispatch.asarray(w0) - 0.1 * g
    assert again.target == "cupy"
    got, want = numpy.asarray(again), w0 - 0.1 * g0
    assert got.dtype == want.dtype and got.shape == want.shape
    numpy.testing.assert_allclose(got, want, rtol=1e-15)


def test_a_small_view_or_a_copy_is_not_watched():
    w0, _, g = _weight_and_device_gradient()
    w = dispatch.asarray(w0) - 0.1 * g
    assert w._hosted is not None
    assert w[:100]._hosted is None  # too small to be worth a device
    assert w[numpy.arange(0, N, 2)]._hosted is None  # fancy indexing copies
    assert w.astype(numpy.float32)._hosted is None


def test_a_host_result_used_on_the_host_teaches_nothing():
    w0, g0, g = _weight_and_device_gradient()
    for _ in range(3):
        w = dispatch.asarray(w0) - 0.1 * g
        assert w.target == "numpy"
        total = (w * 2.0).sum()  # on the host
    dispatch.arrays._call._native_for(dispatch.targets.get("cupy"), counted=False)(w)  # an explored call's copy
    assert router.history.sends[w._hosted] == [3, 0, 3]
    assert router.history.p_send(w._hosted) == 0.0
    numpy.testing.assert_allclose(float(total), 2 * (w0 - 0.1 * g0).sum(), rtol=1e-12)


@pytest.mark.parametrize("sent_one", [False, True])
def test_host_results_are_followed_until_so_many_in_a_row_were_not_sent(sent_one):
    """A kind of call run on the host where a device was priced: its results are followed
    (``_hosted``) until HOSTED_FOLLOWED of them in a row were not sent to a device; then no
    more, and the call may skip the router's bookkeeping. One sent starts the count again, and
    the share sent is still learned and priced."""
    w0, g0, g = _weight_and_device_gradient()
    first = dispatch.asarray(w0) - 0.1 * g
    key = first._hosted
    assert key is not None and first.target == "numpy"
    for _ in range(router.HOSTED_FOLLOWED - 2):
        w = dispatch.asarray(w0) - 0.1 * g
        assert w._hosted == key and w.target == "numpy"
    if sent_one:
        with dispatch.using("cupy"):
            w * g  # one result in 32 sent: a copy too cheap to move the call, but to be learned
    w = dispatch.asarray(w0) - 0.1 * g
    assert w._hosted == key and w.target == "numpy"
    assert router.history.sends[key][:2] == [router.HOSTED_FOLLOWED, int(sent_one)]
    later = dispatch.asarray(w0) - 0.1 * g
    assert later.target == "numpy"
    assert (later._hosted == key) is sent_one
    if sent_one:  # followed through HOSTED_FOLLOWED results after the one sent, then no more
        for _ in range(router.HOSTED_FOLLOWED - 2):
            later = dispatch.asarray(w0) - 0.1 * g
            assert later._hosted == key and later.target == "numpy"
        assert router.history.sends[key] == [2 * router.HOSTED_FOLLOWED - 1, 1, router.HOSTED_FOLLOWED]
        later = dispatch.asarray(w0) - 0.1 * g
        assert later._hosted is None and later.target == "numpy"
        assert router.history.p_send(key) == pytest.approx(1 / (2 * router.HOSTED_FOLLOWED - 1))
    else:
        assert router.history.sends[key][0] == router.HOSTED_FOLLOWED
    want = w0 - 0.1 * g0
    got = numpy.asarray(later)
    assert got.dtype == want.dtype and got.shape == want.shape
    numpy.testing.assert_allclose(got, want, rtol=1e-15)


def test_sends_persist_with_the_history(tmp_path):
    h = History()
    key = ("subtract", (numpy.dtype("float64"),) * 2, 20, frozenset({dispatch.base.devices.HOST}))
    for _ in range(4):
        h.hosted(key)
    h.sent(key)
    h.save(tmp_path / "history.json")
    again = History()
    again.load(tmp_path / "history.json")
    assert again.sends[key] == [4, 1, 0]  # followed afresh
    assert again.p_send(key) == pytest.approx(0.25)


def _stencil_program(u0: numpy.ndarray, steps: int):
    """A loop over an array made once, updated in place (the heat workload's shape)."""
    u = dispatch.asarray(u0).copy()
    made_on = u.target
    for _ in range(steps):
        u[1:-1] += 0.25 * (u[:-2] - 2.0 * u[1:-1] + u[2:])
    return made_on, u, u.sum()


def _stencil_numpy(u0: numpy.ndarray, steps: int) -> numpy.ndarray:
    u = u0.copy()
    for _ in range(steps):
        u[1:-1] += 0.25 * (u[:-2] - 2.0 * u[1:-1] + u[2:])
    return u


def test_an_array_made_once_and_worked_on_in_a_loop_is_made_on_the_device():
    router.use_calibration(_slow_way_back())  # alone, neither the copy nor one step pays the device
    u0 = numpy.linspace(0.0, 1.0, N) ** 2
    made_on, u, total = _stencil_program(u0, steps=20)
    assert made_on == "numpy" and u.target == "numpy"  # nothing learned yet: all on the host
    copy_key = u._root
    assert copy_key is not None and copy_key[0] == "copy"
    assert router.history.placement_credit(copy_key) > 0.01  # 20 steps' work, seconds a device saves
    made_on, u, total = _stencil_program(u0, steps=20)
    assert made_on == "cupy" and u.target == "cupy"  # made there once, worked on there
    inputs = Inputs([dispatch.asarray(u0)])
    assert router.decide(op_named("copy"), inputs, (), {}).reason.startswith("placement")
    expected = _stencil_numpy(u0, 20)
    result = numpy.asarray(u)
    assert result.dtype == expected.dtype and result.shape == expected.shape
    numpy.testing.assert_allclose(result, expected, rtol=1e-12)
    numpy.testing.assert_allclose(float(total), expected.sum(), rtol=1e-12)


def _two_copies_program(u0: numpy.ndarray, v0: numpy.ndarray, steps: int):
    """A loop whose calls each take two arrays the program made (``Q @ D.T`` of two normalised
    inputs has that shape): the made arrays come from two roots."""
    u, v = dispatch.asarray(u0).copy(), dispatch.asarray(v0).copy()
    made_on = (u.target, v.target)
    total = 0.0
    for _ in range(steps):
        total = total + (u * v + u).sum()
    return made_on, total


def test_arrays_from_two_roots_worked_on_together_are_both_made_on_the_device():
    router.use_calibration(_slow_way_back())
    u0, v0 = numpy.linspace(0.0, 1.0, N), numpy.linspace(1.0, 2.0, 2 * N).reshape(2, N)  # two kinds of copy
    made_on, total = _two_copies_program(u0, v0, steps=20)
    assert made_on == ("numpy", "numpy")
    key = router.call_key(op_named("copy"), Inputs([dispatch.asarray(u0)]))
    assert router.history.placement_credit(key) > 0.01  # each credited what a device saves with both there
    made_on, total = _two_copies_program(u0, v0, steps=20)
    assert made_on == ("cupy", "cupy")
    expected = 20 * (u0 * v0 + u0).sum()
    assert isinstance(float(total), float)
    numpy.testing.assert_allclose(float(total), expected, rtol=1e-12)


def test_an_array_made_and_barely_used_stays_on_the_host():
    router.use_calibration(_slow_way_back())
    u0 = numpy.linspace(0.0, 1.0, N)
    for _ in range(3):
        made_on, u, _ = _stencil_program(u0, steps=0)  # the copy, then only its sum
        assert made_on == "numpy"
    numpy.testing.assert_array_equal(numpy.asarray(u), u0)


def test_placements_persist_with_the_history(tmp_path):
    h = History()
    key = ("copy", (numpy.dtype("float64"),), 20, frozenset({dispatch.base.devices.HOST}))
    h.made(key)
    h.credit(key, 0.5)
    h.made(key)
    h.save(tmp_path / "history.json")
    again = History()
    again.load(tmp_path / "history.json")
    assert again.placement_credit(key) == pytest.approx(0.25)


def test_only_arrays_a_lineage_reaches_are_routed_between_the_two_floors(monkeypatch):
    router.use_calibration(_slow_way_back())
    op = op_named("add")
    floor, trip = router.host_floor(op), router.trip_floor(op)
    assert floor < trip  # resident on the device, add wins early; its round trip, much later
    n = trip
    plain = dispatch.asarray(numpy.arange(n, dtype=numpy.float64))
    decided = []
    decide = router.decide
    monkeypatch.setattr(router, "decide", lambda op, *rest: decided.append(op.name) or decide(op, *rest))
    twice = plain + plain  # no lineage: NumPy, without asking the router
    assert decided == [] and twice.target == "numpy"
    made = plain.copy()  # a fresh array: a root, and what is computed from it is followed
    assert made._root is not None and decided == ["copy"]
    again = made + made
    assert decided == ["copy", "add"] and again._root == made._root
    expected = numpy.arange(n, dtype=numpy.float64) * 2
    for result in (twice, again):
        out = numpy.asarray(result)
        assert out.dtype == expected.dtype and out.shape == expected.shape
        numpy.testing.assert_array_equal(out, expected)


def test_methods_follow_the_two_floors_too(monkeypatch):
    router.use_calibration(_slow_way_back())
    op = op_named("sum")
    floor, trip = router.host_floor(op), router.trip_floor(op)
    assert floor < trip
    host = numpy.arange(trip, dtype=numpy.float64).reshape(-1, 8)
    plain = dispatch.asarray(host)
    calls = []
    real_call = dispatch.arrays._call.call
    monkeypatch.setattr(dispatch.arrays._call, "call",
                        lambda op, *rest, **kw: calls.append(op.name) or real_call(op, *rest, **kw))
    rows = plain.sum(axis=1)  # no lineage: NumPy's own method, without the call path
    assert calls == [] and rows.target == "numpy"
    made = plain.copy()
    made_rows = made.sum(axis=1)  # a root: the router follows it
    assert calls == ["copy", "sum"]
    for result in (rows, made_rows):
        out = numpy.asarray(result)
        assert out.dtype == numpy.float64 and out.shape == (host.shape[0],)
        numpy.testing.assert_array_equal(out, host.sum(axis=1))


def test_every_operator_form_follows_the_two_floors(monkeypatch):
    """``x + 1``, ``2.0 * x``, ``x += 1`` and ``np.abs(x)``: host arrays between the floors
    that no lineage reaches run on NumPy without the call path; a root's are followed."""
    router.use_calibration(_slow_way_back())
    ops = [op_named(n) for n in ("add", "multiply", "abs")]
    n = min(router.trip_floor(op) for op in ops)
    assert n > max(router.host_floor(op) for op in ops)
    host = -numpy.arange(n, dtype=numpy.float64)
    calls, decided = [], []
    real_call, decide = dispatch.arrays._call.call, router.decide
    monkeypatch.setattr(dispatch.arrays._call, "call",
                        lambda op, *rest, **kw: calls.append(op.name) or real_call(op, *rest, **kw))
    monkeypatch.setattr(router, "decide", lambda op, *rest: decided.append(op.name) or decide(op, *rest))

    def program(x):
        y = 2.0 * x
        y += 1.0
        return dispatch.abs(y + dispatch.reshape(x, (-1,)))

    plain = program(dispatch.asarray(host))
    viewed = [] if _compiled.ACTIVE else ["reshape"]  # views too: NumPy's, compiled where it is built
    assert calls == viewed and decided == [] and plain.target == "numpy"
    calls.clear()
    followed = program(dispatch.asarray(host).copy())
    assert calls == ["copy", "multiply", "add", "reshape", "add", "abs"]  # asarray of NumPy's array: no path
    expected = numpy.abs(2.0 * host + 1.0 + host)
    for result in (plain, followed):
        out = numpy.asarray(result)
        assert out.dtype == expected.dtype and out.shape == expected.shape
        numpy.testing.assert_array_equal(out, expected)


def test_a_host_array_indexed_by_a_device_index_goes_to_the_index():
    """``values[order]`` with ``order`` made on the device (a sort there): the values go to the
    device, unless they are much larger than the index, which then comes back."""
    router.use_calibration(synthetic(gpu=True))
    rng = numpy.random.default_rng(2)
    values, big = rng.integers(0, 100, 5000), rng.standard_normal(50_000)
    order = dispatch.asarray(numpy.argsort(values, kind="stable")).to("cupy")
    with dispatch.trace() as t:
        gathered = dispatch.asarray(values)[order]
        picked = dispatch.asarray(big)[order]  # 400 kB of values for a 40 kB index: on the host
    untraced = dispatch.asarray(values)[order]
    assert [(r.target, r.reason.split(":")[0]) for r in t.records if r.op == "__getitem__"] == [
        ("cupy", "indexing"), ("numpy", "local")]
    assert gathered.target == untraced.target == "cupy" and picked.target == "numpy"
    host_order = numpy.asarray(order)
    for got, want in ((gathered, values[host_order]), (untraced, values[host_order]), (picked, big[host_order])):
        out = numpy.asarray(got)
        assert out.dtype == want.dtype and out.shape == want.shape
        numpy.testing.assert_array_equal(out, want)


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


def test_a_device_new_to_a_kind_of_call_gets_host_data_only_where_it_saves_more_than_a_first_call_costs():
    router.use_calibration(synthetic(gpu=True, torch_cpu=False))
    op = op_named("exp")
    small = Inputs([dispatch.asarray(numpy.linspace(0.0, 1.0, 1 << 17))])  # the device saves 0.25 ms there
    large = Inputs([dispatch.asarray(numpy.linspace(0.0, 1.0, 1 << 20))])  # and 2.4 ms there
    assert router.FIRST_USE_S == pytest.approx(1e-3)
    assert router.decide(op, small, (), {}).target.name == "numpy"
    assert router.decide(op, large, (), {}).target.name == "cupy"
    router.history.ran.add(call_kind(router.call_key(op, small), "cupy"))  # it ran exp on float64 once (at any size)
    router.clear_decisions()
    assert router.decide(op, small, (), {}).target.name == "cupy"
    host = numpy.linspace(0.0, 1.0, 1 << 17)
    out = dispatch.exp(dispatch.asarray(host))
    assert out.target == "cupy"
    got, want = numpy.asarray(out), numpy.exp(host)
    assert got.dtype == want.dtype and got.shape == want.shape
    numpy.testing.assert_allclose(got, want, rtol=1e-15)


def test_a_device_timing_read_later_re_decides_its_kind_of_call(monkeypatch):
    monkeypatch.setattr(router.ROUTER, "history", History(explore_probability=0.0))  # one that learns
    router.use_calibration(synthetic(gpu=True, torch_cpu=False))
    host = numpy.linspace(0.0, 1.0, N)
    x = dispatch.asarray(host).to("cupy")
    op = op_named("exp")
    first = router.decide(op, Inputs([x]), (), {})
    assert first.target.name == "cupy" and first.reason.startswith("cost model") and first.sample
    out = dispatch.exp(x)  # timed with device events, folded in once the device has passed them
    assert router.history.stats[first.key]["cupy"].samples == 1
    again = router.decide(op, Inputs([x]), (), {})
    assert again is not first and again.reason.startswith("history")
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
    """Two engines on one device: the input stays with the engine holding it, here the device's
    home, unless the other is priced ``router.ENGINE_MARGIN`` cheaper, counting the crossing by
    DLPack it would cost (``router.ADOPT_S``): timings of one call on two engines are within each
    other's noise, and a program whose calls took turns between them would pay the crossing at
    every call."""
    cal = synthetic(gpu=True, torch_cpu=False)
    cupy_target = dispatch.targets.get("cupy")
    other = type("Engine", (), {"name": "torch-cuda", "device": cupy_target.device, "supports": lambda self, op: True,
                                "events": lambda self: None})()
    real_probe = router.targets.probe
    monkeypatch.setattr(router.targets, "probe", lambda name: other if name == "torch-cuda" else real_probe(name))
    monkeypatch.setattr(router.targets, "get", lambda name: other if name == "torch-cuda" else real_probe(name))
    monkeypatch.setattr(router, "GPU_TARGETS", ("cupy", "torch-cuda"))
    monkeypatch.setattr(router, "_PRICED", frozenset({*router._PRICED, "torch-cuda"}))
    op = op_named("exp")
    held = dispatch.asarray(numpy.linspace(0.0, 1.0, 1_000_000)).to("cupy")
    cupy_s = _priced(cal, "cupy", op, Inputs([held]))
    # the other engine's price with the crossing, at which the holder stops keeping the call
    even = cupy_s / (1 + router.ENGINE_MARGIN)
    chosen = {}
    for other_s in (cupy_s + router.ADOPT_S, 1.02 * even, 0.98 * even):
        faster_by = cupy_s + router.ADOPT_S - other_s
        base = cal.targets["cupy"]["ops"]["float64"]
        ops = {**base, "exp": [[n, t - faster_by] for n, t in base["exp"]]}
        cal.targets["torch-cuda"] = dict(cal.targets["cupy"], ops={"float64": ops, "float32": ops})
        router.use_calibration(cal)
        assert _priced(cal, "torch-cuda", op, Inputs([held])) + router.ADOPT_S == pytest.approx(other_s)
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


def test_a_mark_set_on_one_array_stays_on_that_array():
    """The router's marks (``_root``, ``_origin``, ``_hosted``) read None on arrays that carry
    none; marking one array marks no other, and an array made later starts unmarked."""
    router.use_calibration(_slow_way_back())
    a, b = dispatch.asarray(numpy.ones(4)), dispatch.asarray(numpy.ones(4))
    for mark in ("_root", "_origin", "_hosted"):
        setattr(a, mark, ("key", mark))
        assert getattr(a, mark) == ("key", mark)
        assert getattr(b, mark) is None and getattr(dispatch.ones(2), mark) is None
        setattr(a, mark, None)
        assert getattr(a, mark) is None


QUEUE_S = 0.05


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
        return numpy.exp(target.to_host(held._data))

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


@pytest.mark.parametrize("kind", ["copy", "exp"])
def test_arrays_the_host_keeps_are_followed_only_so_long(kind, monkeypatch):
    """A kind of call whose fresh arrays stayed on the host through ROOTS_FOLLOWED of them makes
    no more roots: later calls on its arrays no longer pay the router's bookkeeping."""
    router.use_calibration(_slow_way_back())
    # (no device wins exp's round trip here, so its floors keep host data off the router: lowered)
    monkeypatch.setattr(op_named("exp"), "floor", router.SMALL)
    monkeypatch.setattr(op_named("exp"), "trip_floor", router.SMALL)
    x0 = numpy.linspace(0.0, 1.0, N)
    x = dispatch.asarray(x0)

    def made():
        return x.copy() if kind == "copy" else dispatch.exp(x)

    first = made()
    key = first._root
    assert key is not None and key[0] == kind and first.target == "numpy"
    for _ in range(router.ROOTS_FOLLOWED - 1):
        assert made()._root == key  # followed: the router learns what later calls save on a device
    assert router.history.roots_made(key) == router.ROOTS_FOLLOWED
    later = made()
    assert later._root is None and later.target == "numpy"
    assert router.history.roots_made(key) == router.ROOTS_FOLLOWED  # no more counted
    expected = x0.copy() if kind == "copy" else numpy.exp(x0)
    numpy.testing.assert_array_equal(numpy.asarray(later), expected)
