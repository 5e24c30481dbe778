"""Trials: a device choice for host data is kept only if the program runs faster with it
(``dispatch/trials.py``).

The verdict logic runs on a scripted clock; the router's wiring runs the cupy target on the fake
CuPy (``tests/fakecupy.py``) under a hand-made calibration, with one side slowed on purpose, and
its results are still compared with NumPy's.
"""

from __future__ import annotations

import time

import fakecupy
import numpy
import pytest
from _synthetic import synthetic
from helpers import fake_cupy_router

import dispatch
from dispatch import targets
from dispatch.arrays import _call
from dispatch.routing import router, trials


class _Side:
    def __init__(self, name: str) -> None:
        self.target = type("T", (), {"name": name})()
        self.reason = name


def _run(trial: trials.Trial, seconds: dict[str, float], pause_at: int | None = None) -> tuple[_Side, int]:
    """Call the trial on a scripted clock, each period as long as the side it ran (NumPy alone
    as long as the host's unless given); returns the verdict and how many calls it took."""
    given = list(seconds.values())
    seconds = {"numpy": seconds["host"], **seconds}
    if "all-device" not in seconds:  # the device alone: twice the slowest side, never winning unless given
        seconds["all-device"] = lambda n: 2 * max(v(n) if callable(v) else v for v in given)
    clock = [0.0]
    ran = dict.fromkeys(trials.SIDES, 0)  # calls made on each side so far (a side's period may depend on it)
    real = trials.time.perf_counter
    trials.time.perf_counter = lambda: clock[0]
    try:
        for call in range(100):
            decision, final = trial.next()
            if final:
                return decision, call
            side = trial.last[1]
            assert decision is (trial.device if side in ("device", "all-device") else trial.host)
            ran[side] += 1
            period = seconds[side](ran[side]) if callable(seconds[side]) else seconds[side]
            clock[0] += period + (10.0 if call == pause_at else 0.0)
    finally:
        trials.time.perf_counter = real
    raise AssertionError("no verdict in 100 calls")


def test_a_device_twice_as_slow_loses_once_each_side_was_timed():
    trial = trials.Trial(_Side("cupy"), _Side("numpy"))
    chosen, calls = _run(trial, {"device": 2e-3, "host": 1e-3})
    assert chosen is trial.host and calls == 8 * trials.BLOCK  # each of the 4 sides warmed up, then timed once
    assert chosen.reason.startswith("trial: the program ran faster with this call on the host (1000 µs against 2000")


def test_a_close_race_runs_the_whole_schedule_and_keeps_the_faster_side():
    trial = trials.Trial(_Side("cupy"), _Side("numpy"))
    chosen, calls = _run(trial, {"device": 1.0e-3, "host": 1.2e-3})
    assert chosen is trial.device and calls == len(trials.BLOCKS) * trials.BLOCK
    assert "on cupy (1000 µs against 1200 µs" in chosen.reason
    trial = trials.Trial(_Side("cupy"), _Side("numpy"))
    assert _run(trial, {"device": 2.0**-10, "host": 2.0**-10})[0] is trial.host  # a tie: what the program ran before


def test_a_device_must_win_by_a_margin():
    """The host keeps a call the device ran the program only slightly faster with: its side is
    what the program ran before."""
    trial = trials.Trial(_Side("cupy"), _Side("numpy"))
    host = 1.0e-3 * (1 + trials.DEVICE_MARGIN) * 0.99  # just under the margin
    chosen, calls = _run(trial, {"device": 1.0e-3, "host": host})
    assert chosen is trial.host and calls == len(trials.BLOCKS) * trials.BLOCK
    assert chosen.reason.startswith("trial: the program ran under 15% faster with this call on cupy (1000 µs against")
    assert "µs from one such call to the next): the host keeps it; 2277 µs with every call on cupy" in chosen.reason
    trial = trials.Trial(_Side("cupy"), _Side("numpy"))
    assert _run(trial, {"device": 1.0e-3, "host": 1.0e-3 * (1 + trials.DEVICE_MARGIN) * 1.01})[0] is trial.device


def test_no_margin_where_the_program_already_runs_on_a_device():
    """With every call on NumPy the program ran far slower: its other calls live on a device, and
    a call the program ran any faster with there joins them."""
    slightly_slower = 1.0e-3 * (1 + trials.DEVICE_MARGIN * 0.5)
    numpy_alone = 1.0e-3 * trials.DEVICE_BOUND * 1.1
    trial = trials.Trial(_Side("cupy"), _Side("numpy"))
    assert _run(trial, {"device": 1.0e-3, "host": slightly_slower, "numpy": numpy_alone})[0] is trial.device
    trial = trials.Trial(_Side("cupy"), _Side("numpy"))  # not that much faster than NumPy alone: the margin holds
    assert _run(trial, {"device": 1.0e-3, "host": slightly_slower, "numpy": 1.0e-3 * trials.DEVICE_BOUND * 0.9})[0] \
        is trial.host
    trial = trials.Trial(_Side("cupy"), _Side("numpy"))  # the host still wins where the program ran faster so
    assert _run(trial, {"device": 1.0e-3, "host": 0.95e-3, "numpy": numpy_alone})[0] is trial.host


def test_a_device_must_beat_numpy_alone_too():
    """A device the program runs faster with than with the call on the host, but not faster than
    with every call on NumPy (the others were left on devices by earlier moves), loses: the
    program would run slower than without dispatch."""
    trial = trials.Trial(_Side("cupy"), _Side("numpy"))
    chosen, calls = _run(trial, {"device": 1.0e-3, "host": 1.5e-3, "numpy": 0.9e-3})
    assert chosen is trial.host and calls == len(trials.BLOCKS) * trials.BLOCK
    assert chosen.reason == ("trial: the program ran faster with this call on the host (900 µs against 1000 µs "
                             "with it on cupy from one such call to the next, every call on NumPy); "
                             "3000 µs with every call on cupy")
    trial = trials.Trial(_Side("cupy"), _Side("numpy"))  # faster than NumPy alone, but within the margin
    chosen, _ = _run(trial, {"device": 1.0e-3, "host": 2e-3, "numpy": 1.1e-3})
    assert chosen is trial.host and "under 15% faster with this call on cupy (1000 µs against 1100 µs" in chosen.reason
    trial = trials.Trial(_Side("cupy"), _Side("numpy"))
    chosen, _ = _run(trial, {"device": 1.0e-3, "host": 1.3e-3, "numpy": 1.4e-3})
    assert chosen is trial.device
    assert chosen.reason == ("trial: the program ran faster with this call on cupy (1000 µs against 1300 µs with it "
                             "on the host and 1400 µs with every call on NumPy, from one such call to the next); "
                             "2800 µs with every call on cupy")


def test_numpy_alone_lasts_until_the_call_comes_again_or_its_limit():
    """While a trial times NumPy alone, every call runs there; a period longer than its limit (the
    loop ended) stops that, and counts as that limit."""
    trial = trials.Trial(_Side("cupy"), _Side("numpy"))
    clock = [0.0]
    real = trials.time.perf_counter
    trials.time.perf_counter = lambda: clock[0]
    trials.TRIALS.running[("k",)] = trial
    try:
        for _ in range(2 * trials.BLOCK):  # the device's blocks, 1 ms a period
            assert trials.alone() is None
            trial.next()
            clock[0] += 1e-3
        for _ in range(2 * trials.BLOCK):  # NumPy alone: its warm-up, then its timed block
            trial.next()
            assert trial.last[1] == "numpy" and trials.alone() is trial
            clock[0] += 2e-3
        assert trial.limit == pytest.approx(trials.CUT_RATIO * 1e-3 + trials.MAX_PERIOD_S)
        timed = list(trial.periods["numpy"])
        clock[0] += trial.limit  # the kind of call stopped coming
        assert trials.alone() is None and trial.last is None
        assert trial.periods["numpy"] == [*timed, trial.limit]
        assert trials.alone() is None  # until the trial's next call, the program runs as routed
    finally:
        trials.time.perf_counter = real
        trials.clear()


def test_the_host_is_timed_after_its_own_warm_up():
    """The calls after the one on trial meet new decisions when it moves to the host (their
    inputs live elsewhere now), which explore before they settle: the host's first block pays
    for that, untimed, as the device's first block pays for its kernels."""
    trial = trials.Trial(_Side("cupy"), _Side("numpy"))
    settling = {"device": lambda n: 5e-3 if n <= trials.BLOCK else 1.2e-3,
                "host": lambda n: 5e-3 if n <= trials.BLOCK else 1e-3}
    chosen, calls = _run(trial, settling)
    assert chosen is trial.host and calls == len(trials.BLOCKS) * trials.BLOCK
    assert "on the host (1000 µs against 1200 µs" in chosen.reason


def test_a_long_loop_keeps_the_device_without_trying_the_host():
    trial = trials.Trial(_Side("cupy"), _Side("numpy"))
    chosen, calls = _run(trial, {"device": 2 * trials.MAX_PERIOD_S, "host": 1e-3})
    assert chosen is trial.device and calls == 2 * trials.BLOCK
    assert "not tried on the host: 40 ms from one such call to the next" in chosen.reason


def test_a_short_loop_still_compiling_on_the_device_is_tried_on_the_host():
    """One long period of the device's first timed block (a kernel of a later call compiled in
    it) does not make a long loop: the host is tried, and wins the short one."""
    trial = trials.Trial(_Side("cupy"), _Side("numpy"))
    compiling = {"device": lambda n: 1.0 if n == trials.BLOCK + 2 else 2e-3, "host": 1.5e-3}
    chosen, calls = _run(trial, compiling)
    assert chosen is trial.host and calls > 2 * trials.BLOCK
    assert "not tried on the host" not in chosen.reason


def test_a_pause_is_left_out_and_a_policy_switch_times_no_period():
    trial = trials.Trial(_Side("cupy"), _Side("numpy"))
    # a 10 s pause in a host period would make the host lose; it is left out of the mean
    chosen, _ = _run(trial, {"device": 2e-3, "host": 1e-3}, pause_at=2 * trials.BLOCK + 1)
    assert chosen is trial.host
    trial = trials.Trial(_Side("cupy"), _Side("numpy"))
    trials.TRIALS.running[("k",)] = trial
    for _ in range(2 * trials.BLOCK + 1):  # paused before every call: no period timed when the host's turn comes
        trials.pause()
        assert not trial.next()[1]
    assert trial.periods == {"device": [], "numpy": [], "all-device": [], "host": []}
    trial.last = (0.0, "device")
    try:
        trials.pause()
        assert trial.last is None
    finally:
        trials.clear()


def test_a_period_in_which_a_kernel_was_compiled_is_left_out(monkeypatch):
    """Every other device period pays for a later call's kernel, compiled (or loaded) there once
    in the process: a cost the program's later periods never pay. Left out, the device's steady
    periods win; counted, they average to the host's loss."""
    monkeypatch.setattr(targets.protocol, "first_calls", 0)

    def device(n: int) -> float:
        if n % 2:
            targets.protocol.first_calls += 1
            return 4e-3
        return 1e-3

    trial = trials.Trial(_Side("cupy"), _Side("numpy"))
    chosen, _ = _run(trial, {"device": device, "host": 1.5e-3, "all-device": 3e-3})
    assert chosen is trial.device and "on cupy (1000 µs against 1500 µs" in chosen.reason
    assert trial.periods["device"] and all(p == pytest.approx(1e-3) for p in trial.periods["device"])
    assert len(trial.periods["host"]) == 6  # the other sides lose no period


def test_a_kind_of_call_new_to_cupy_is_a_first_call(fake_gpu):
    x = dispatch.asarray(numpy.linspace(0.0, 1.0, N))
    before = targets.protocol.first_calls
    with dispatch.using("cupy"):
        for _ in range(3):
            y = x * 2.0  # one kind of call: its plan (and its kernel) made once
        z = x * numpy.float32(3.0)  # another signature: another kernel
    assert targets.protocol.first_calls == before + 2
    numpy.testing.assert_array_equal(numpy.asarray(y), numpy.linspace(0.0, 1.0, N) * 2.0)
    numpy.testing.assert_array_equal(numpy.asarray(z), numpy.linspace(0.0, 1.0, N) * numpy.float32(3.0))


def test_one_trial_runs_at_a_time():
    device, host = _Side("cupy"), _Side("numpy")
    try:
        assert trials.start(("a",), device, host)
        assert not trials.start(("b",), device, host)  # waits
        assert trials.start(("a",), device, host)  # still the running one
        trials.finish(("a",), host)
        assert trials.verdict(("a",)) is host and not trials.start(("a",), device, host)  # judged once
        assert trials.start(("b",), device, host)
        trials.finish(("b",))  # dropped (the device refused): no verdict
        assert trials.verdict(("b",)) is None and trials.active(("b",)) is None
        assert trials.start(("c",), device, host)
        assert not trials.start(("d",), device, host)
        trials.active(("c",)).touched -= 2 * trials.STALE_S  # its loop ended long ago
        assert trials.start(("d",), device, host) and trials.active(("c",)) is None
    finally:
        trials.clear()


def test_a_trial_whose_calls_stopped_gives_way_to_one_that_waits(monkeypatch):
    """The program it timed moved on: once another kind of call has waited for it
    ``PASSED_OVER`` times since it last came, it gives way; a loop that still makes it does not."""
    # No early verdict from this loop's microsecond periods: a trial that reached one stops
    # counting its calls (the router finishes it), and this test is about one still running.
    monkeypatch.setattr(trials, "EARLY_RATIO", float("inf"))
    device, host = _Side("cupy"), _Side("numpy")
    try:
        assert trials.start(("a",), device, host)
        for _ in range(3 * trials.PASSED_OVER):  # "a" and "b" take turns in one loop: "b" waits
            assert not trials.start(("b",), device, host)
            trials.active(("a",)).next()
        for _ in range(trials.PASSED_OVER - 1):  # "a" stopped coming
            assert not trials.start(("b",), device, host)
        assert trials.start(("b",), device, host) and trials.active(("a",)) is None
        assert trials.verdict(("a",)) is None  # dropped, not judged: tried again when it comes back
    finally:
        trials.clear()


N = 1_000_000  # exp on the synthetic machine: NumPy 4 ms, the device 1.7 ms with the way back


@pytest.fixture
def fake_gpu(tmp_path, monkeypatch):
    if fakecupy.real_cupy_installed():
        pytest.skip("a real CuPy is installed: the fake would replace it in sys.modules")
    with fake_cupy_router(tmp_path, monkeypatch) as cupy_target:
        router.use_calibration(synthetic(gpu=True, torch_cpu=False))
        monkeypatch.setattr(trials, "MAX_PERIOD_S", 1.0)  # a loop of a shared CI machine's pace
        yield cupy_target


def _program(host: numpy.ndarray, steps: int) -> list[tuple[str, str]]:
    """A loop whose result comes back to the host each step; (target, reason) of each exp."""
    x, expected = dispatch.asarray(host), numpy.exp(host)
    seen = []
    for _ in range(steps):
        with dispatch.trace() as t:
            y = dispatch.exp(x)
        seen.append((t.records[0].target, t.records[0].reason))
        got = numpy.asarray(y)
        assert got.dtype == numpy.float64 and got.shape == host.shape
        numpy.testing.assert_allclose(got, expected, rtol=1e-15)
    return seen


def _slowed(monkeypatch, cls: type, name: str, seconds: float) -> None:
    real = getattr(cls, name)

    def slow(*args, **kwargs):
        time.sleep(seconds)
        return real(*args, **kwargs)

    monkeypatch.setattr(cls, name, slow)


STEPS = len(trials.BLOCKS) * trials.BLOCK + 4  # the whole schedule, and a few calls after


def _verdict(seen: list[tuple[str, str]], where: str) -> int:
    """The first call decided by the trial's verdict for ``where``. In a program of one kind of
    call, the device's side with that call alone there and the side with every call there time
    the same program: either may win, by the clock's noise, and either keeps the device."""
    verdicts = (f"ran faster with this call on {where}", f"ran faster with every call on {where}")
    return next(i for i, (_, reason) in enumerate(seen) if any(v in reason for v in verdicts))


def test_a_device_that_makes_the_program_slower_is_dropped_for_numpy(fake_gpu, monkeypatch):
    _slowed(monkeypatch, type(fake_gpu), "run", 0.04)  # each device call: 40 ms more, over any noise
    seen = _program(numpy.linspace(0.0, 1.0, N), steps=STEPS)
    assert [t for t, _ in seen[: trials.BLOCK]] == ["cupy"] * trials.BLOCK  # the model's choice first
    assert seen[2 * trials.BLOCK][0] == "numpy"  # the host side of the trial
    assert {t for t, _ in seen[_verdict(seen, "the host"):]} == {"numpy"}


def test_a_device_that_makes_the_program_faster_is_kept(fake_gpu, monkeypatch):
    _slowed(monkeypatch, _call, "_run_numpy", 0.04)  # each host call: 40 ms more, over any noise
    seen = _program(numpy.linspace(0.0, 1.0, N), steps=STEPS)
    assert seen[2 * trials.BLOCK][0] == "numpy"  # the host side was tried...
    assert {t for t, _ in seen[_verdict(seen, "cupy"):]} == {"cupy"}  # ...and lost


def test_a_forced_target_and_the_other_policies_are_never_on_trial(fake_gpu):
    x = dispatch.asarray(numpy.linspace(0.0, 1.0, N))
    with dispatch.using("cupy"):
        for _ in range(3 * trials.BLOCK):
            assert dispatch.exp(x).target == "cupy"
    assert not trials.TRIALS.running
    dispatch.exp(x)  # the cost policy's trial of exp starts
    assert len(trials.TRIALS.running) == 1
    router.set_policy("seed")
    try:
        with dispatch.trace() as t:
            for _ in range(3 * trials.BLOCK):
                dispatch.exp(x)
        reasons = {r.reason.split(":")[0] for r in t.records}  # (under the seed table's floor, or by it)
        assert len(t.records) == 3 * trials.BLOCK and reasons <= {"heuristic", "floor"}
    finally:
        router.set_policy("cost")


def test_a_call_of_its_kind_with_device_inputs_counts_and_runs_on_the_host_side(fake_gpu, monkeypatch):
    """k-means' pattern: each run's first call has its input on the host (on trial), the later
    iterations' calls have it where the call before left it. Counting only the first, the device
    side would time whole runs and the host side single iterations, and the host would win; the
    iterations' calls count too, and on the host side run there, their input brought back."""
    _slowed(monkeypatch, _call, "_run_numpy", 0.04)  # each host call: 40 ms more
    _slowed(monkeypatch, type(fake_gpu), "run", 0.016)  # each device call: 16 ms more
    iterations, start = 3, numpy.linspace(-50.0, -10.0, N)  # blocks of 4 calls begin mid-run
    seen = []  # (target, reason, input on the host) of each call
    for _ in range(len(trials.BLOCKS) * trials.BLOCK // iterations + 2):
        c, expected = dispatch.asarray(start), start
        for _ in range(iterations):
            on_host = c.device.is_host
            with dispatch.trace() as t:
                c = dispatch.exp(c)
            expected = numpy.exp(expected)
            seen.append((t.records[0].target, t.records[0].reason, on_host))
        got = numpy.asarray(c)
        assert got.dtype == numpy.float64 and got.shape == start.shape
        numpy.testing.assert_allclose(got, expected, rtol=1e-14)
    host_side = [i for i, (_, reason, _) in enumerate(seen) if reason.startswith("trial: timing")]
    assert any(not seen[i][2] for i in host_side)  # one with its input on the device, brought back...
    assert {seen[i][0] for i in host_side} == {"numpy"}  # ...ran on NumPy as the host side's calls did
    verdict = _verdict([(t, reason) for t, reason, _ in seen], "cupy")
    assert verdict <= len(trials.BLOCKS) * trials.BLOCK  # every iteration's call counted (or an early verdict)
    assert {t for t, _, _ in seen[verdict:]} == {"cupy"}


def test_a_hopeless_host_side_is_cut_short():
    """Two host periods in a row many times the device's, and longer by more than
    ``MAX_PERIOD_S``, end the trial at once, in the host's warm-up: its other blocks would only
    cost the program. One alone is a pause (``test_a_pause_is_left_out...``)."""
    trial = trials.Trial(_Side("cupy"), _Side("numpy"))
    device = 10e-3
    chosen, calls = _run(trial, {"device": device, "host": trials.CUT_RATIO * device + 2 * trials.MAX_PERIOD_S})
    assert chosen is trial.device and calls == 2 * trials.BLOCK + 2  # the periods after the host's first two calls
    assert chosen.reason.endswith("host's side cut short, every call on NumPy)")  # NumPy alone comes first
    trial = trials.Trial(_Side("cupy"), _Side("numpy"))  # one such period each side of a device block: not in a row
    slow, tick = trials.CUT_RATIO * device + 2 * trials.MAX_PERIOD_S, 2.0**-10  # (exact sums: a true tie)
    host_calls = 2 * trials.BLOCK  # the last of the second host block, then the first of the third
    chosen, _ = _run(trial, {"device": tick, "host": lambda n: slow if n in (host_calls, host_calls + 1) else tick})
    assert chosen is trial.host and "cut short" not in chosen.reason  # a tie once the pauses are left out
    trial = trials.Trial(_Side("cupy"), _Side("numpy"))  # as slow by ratio, but by little time: timed, not cut
    chosen, calls = _run(trial, {"device": 1e-3, "host": 2 * trials.CUT_RATIO * 1e-3})
    assert chosen is trial.device and calls == 8 * trials.BLOCK  # the early verdict once each side was timed


def test_host_periods_in_which_a_kernel_was_compiled_do_not_cut_the_host_short(monkeypatch):
    """The first periods off the device pay for the kernels of the calls after the one on trial,
    which meet host data there: monte_carlo small kept `negative` on torch-cuda by two such
    periods of 160 ms on an H100 machine (CuPy compiling), and ran at 1.28x NumPy's time. Left out,
    the host's steady periods win."""
    monkeypatch.setattr(targets.protocol, "first_calls", 0)
    compiling = trials.CUT_RATIO * 1e-3 + 2 * trials.MAX_PERIOD_S

    def host(n: int) -> float:  # NumPy alone, then the host: each side's first two periods compile
        if n <= 2:
            targets.protocol.first_calls += 1
            return compiling
        return 0.5e-3

    trial = trials.Trial(_Side("cupy"), _Side("numpy"))
    chosen, _ = _run(trial, {"device": 1e-3, "host": host})
    assert chosen is trial.host and "cut short" not in chosen.reason
    assert chosen.reason.startswith("trial: the program ran faster with this call on the host (500 µs against 1000")


def test_while_numpy_alone_is_timed_every_call_runs_on_numpy(fake_gpu):
    """A call the router keeps on the device (its input lives there) runs on NumPy while the trial
    times NumPy alone, its input brought back, and on the device again after; a forced call stays
    where it was forced. Every result is NumPy's."""
    host = numpy.linspace(0.0, 1.0, N)
    x = dispatch.asarray(host)
    with dispatch.using("cupy"):
        d = dispatch.exp(x)  # lives on the device
    expected = {"sqrt": numpy.sqrt(numpy.exp(host)), "sin": numpy.sin(numpy.exp(host))}
    sides = []
    for _ in range(STEPS):
        with dispatch.trace() as t:
            dispatch.exp(x)  # on trial
            trial = next(iter(trials.TRIALS.running.values()), None)
            side = trial.last[1] if trial is not None and trial.last is not None else None
            got = {"sqrt": dispatch.sqrt(d)}
            with dispatch.using("cupy"):
                got["sin"] = dispatch.sin(d)
        records = {r.op: r for r in t.records}
        sides.append(side)
        if side == "numpy":
            assert (records["sqrt"].target, records["sqrt"].reason) == ("numpy", router.NUMPY_ALONE_REASON)
        else:
            assert records["sqrt"].target == "cupy"
        assert records["sin"].target == "cupy"
        for name, value in got.items():
            value = numpy.asarray(value)
            assert value.dtype == numpy.float64 and value.shape == host.shape
            numpy.testing.assert_allclose(value, expected[name], rtol=1e-15)
    assert sides.count("numpy") >= 2 * trials.BLOCK and {"device", "host"} <= set(sides)


def test_the_program_on_the_device_alone_wins_where_it_is_clearly_faster():
    """A fourth side runs every call the device can run there: where the program ran faster so
    than on every other side by the margin, the verdict moves them all (``everything``); at once
    once each side was timed, if by ``EARLY_RATIO``, else after the whole schedule; under the
    margin, the other sides decide as before."""
    trial = trials.Trial(_Side("cupy"), _Side("numpy"))
    chosen, calls = _run(trial, {"device": 3e-3, "host": 2e-3, "numpy": 2.5e-3, "all-device": 1e-3})
    assert chosen is trial.device and trial.everything and calls == 8 * trials.BLOCK
    assert chosen.reason == ("trial: the program ran faster with every call on cupy (1000 µs against 3000 µs with "
                             "this call alone there, 2000 µs with it on the host and 2500 µs with every call on "
                             "NumPy, from one such call to the next)")
    trial = trials.Trial(_Side("cupy"), _Side("numpy"))  # by the margin, not by EARLY_RATIO: the whole schedule
    chosen, calls = _run(trial, {"device": 3e-3, "host": 2e-3, "all-device": 1.6e-3})
    assert chosen is trial.device and trial.everything and calls == len(trials.BLOCKS) * trials.BLOCK
    trial = trials.Trial(_Side("cupy"), _Side("numpy"))  # faster, but under the margin: the host keeps it
    chosen, _ = _run(trial, {"device": 3e-3, "host": 2e-3, "all-device": 2e-3 / (1 + trials.DEVICE_MARGIN) * 1.01})
    assert chosen is trial.host and not trial.everything
    trial = trials.Trial(_Side("cupy"), _Side("numpy"))  # the device won early: every call there, by the margin
    chosen, calls = _run(trial, {"device": 3e-3, "host": 7e-3, "numpy": 6e-3, "all-device": 2.4e-3})
    assert chosen is trial.device and trial.everything and calls == 8 * trials.BLOCK
    trial = trials.Trial(_Side("cupy"), _Side("numpy"))  # ...and under the margin, this call alone
    chosen, calls = _run(trial, {"device": 3e-3, "host": 7e-3, "numpy": 6e-3, "all-device": 2.7e-3})
    assert chosen is trial.device and not trial.everything and calls == 8 * trials.BLOCK
    trial = trials.Trial(_Side("cupy"), _Side("numpy"))  # the call alone on the device is faster still
    chosen, _ = _run(trial, {"device": 1e-3, "host": 2e-3, "all-device": 1.1e-3})
    assert chosen is trial.device and not trial.everything and "with this call on cupy" in chosen.reason


def _to_side(trial: trials.Trial, side: str) -> None:
    """Make the trial's next call the first of ``side``'s warm-up block."""
    trial.seen, trial.last = trials.BLOCKS.index((side, False)) * trials.BLOCK, None


def test_while_the_device_alone_is_timed_every_call_it_can_run_goes_there(fake_gpu):
    """On the all-device side every priced call over ``SMALL`` goes to the device, even host data
    under its floor (the floors are lowered meanwhile, and put back after); a view stays where its
    data is. On an all-device verdict the kinds of call it moved stay on the device: decided so
    again when their cached decision is dropped, their host sizes kept over the floors; but not
    host data under the op's round-trip floor. Every result is NumPy's."""
    big, small = numpy.linspace(0.0, 1.0, N), numpy.linspace(0.0, 1.0, 4096)
    x, s = dispatch.asarray(big), dispatch.asarray(small)
    sqrt_op = dispatch.base.ops.op_named("sqrt")
    dispatch.exp(x)  # the cost policy's trial of exp starts
    trial = next(iter(trials.TRIALS.running.values()))
    with dispatch.trace() as t:
        dispatch.sqrt(s)
    assert t.records[0].target == "numpy" and t.records[0].reason.startswith("floor")  # as the router has it
    floors = (router.host_floor(sqrt_op), router.trip_floor(sqrt_op))
    assert floors[1] >= small.size
    _to_side(trial, "all-device")
    dispatch.exp(x)
    assert trials.all_device() is trial and sqrt_op.trip_floor == router.SMALL
    with dispatch.trace() as t:
        got = {"sqrt": dispatch.sqrt(s), "sin": dispatch.sin(x), "view": x[:10]}
    records = {r.op: r for r in t.records}
    assert (records["sqrt"].target, records["sqrt"].reason) == ("cupy", router.ALL_DEVICE_REASON)
    assert records["sin"].target == "cupy"  # (the cost model's choice already)
    assert (records["__getitem__"].target, records["__getitem__"].reason) == ("numpy", router.LOCAL_REASON)
    expected = {"sqrt": numpy.sqrt(small), "sin": numpy.sin(big), "view": big[:10]}
    for name, value in got.items():
        value = numpy.asarray(value)
        assert value.dtype == numpy.float64 and value.shape == expected[name].shape
        numpy.testing.assert_allclose(value, expected[name], rtol=1e-15)
    _to_side(trial, "host")
    dispatch.exp(x)
    assert trials.all_device() is None and (sqrt_op.floor, sqrt_op.trip_floor) == floors  # put back
    trial.everything = True
    sin_op = dispatch.base.ops.op_named("sin")
    assert router.trip_floor(sin_op) < big.size
    router.ROUTER.pin(trial)
    trials.finish(next(iter(trials.TRIALS.running)), trial.device)
    router.ROUTER.decisions.clear()  # dropped, as the router does now and then
    with dispatch.trace() as t:
        got = {"sqrt": dispatch.sqrt(s), "sin": dispatch.sin(x)}
    records = {r.op: r for r in t.records}
    assert (records["sin"].target, records["sin"].reason) == ("cupy", trial.device.reason)
    assert sin_op.trip_floor < (1 << (big.size.bit_length() - 1))  # its bucket's sizes kept over the floors
    # host data under its round-trip floor, on the device only because the side sent everything, is
    # not pinned: its key is any program's sqrt of 4096 float64
    assert (records["sqrt"].target, records["sqrt"].reason[:5]) == ("numpy", "floor")
    assert (sqrt_op.floor, sqrt_op.trip_floor) == floors
    for name, expected in (("sqrt", numpy.sqrt(small)), ("sin", numpy.sin(big))):
        numpy.testing.assert_allclose(numpy.asarray(got[name]), expected, rtol=1e-15)


def test_no_call_is_timed_on_its_own_while_the_device_alone_is_timed(fake_gpu):
    """The side times the program; a call timed with device events meanwhile (as the router
    times a new kind of call) would cost that side what its verdict's program does not pay."""
    x = dispatch.asarray(numpy.linspace(0.0, 1.0, N))
    dispatch.exp(x)
    trial = next(iter(trials.TRIALS.running.values()))
    _to_side(trial, "all-device")
    dispatch.exp(x)
    on_device = dispatch.sin(x)  # moved there, or the cost model's choice already
    inputs = dispatch.arrays._call.Inputs([on_device])
    key = router.call_key(dispatch.base.ops.op_named("sqrt"), inputs)
    assert router.ROUTER.rules(dispatch.base.ops.op_named("sqrt"), inputs, key)[0].sample  # the router would time it
    got = dispatch.sqrt(on_device)
    assert key in trial.moved and trial.moved[key].target.name == "cupy"
    assert not any(d.sample or d.explored for d in trial.moved.values())
    numpy.testing.assert_allclose(numpy.asarray(got), numpy.sqrt(numpy.sin(numpy.linspace(0.0, 1.0, N))), rtol=1e-15)


def test_the_floors_come_back_when_the_device_alone_ends_away_from_its_call(fake_gpu, monkeypatch):
    """The trial's kind of call stopped coming while every call ran on the device: past the
    side's limit the program runs as routed again, and the floors are put back at the next call
    that reaches the router; so they are at a policy switch."""
    x = dispatch.asarray(numpy.linspace(0.0, 1.0, N))
    sqrt_op = dispatch.base.ops.op_named("sqrt")
    dispatch.exp(x)
    trial = next(iter(trials.TRIALS.running.values()))
    floors = (router.host_floor(sqrt_op), router.trip_floor(sqrt_op))
    _to_side(trial, "all-device")
    dispatch.exp(x)
    assert sqrt_op.trip_floor == router.SMALL
    trial.last = (trial.last[0] - 2 * trial.limit, "all-device")  # the loop ended long ago
    dispatch.sin(x)
    assert trials.all_device() is None and (sqrt_op.floor, sqrt_op.trip_floor) == floors
    _to_side(trial, "all-device")
    dispatch.exp(x)
    assert sqrt_op.trip_floor == router.SMALL
    router.set_policy("seed")  # the cost policy's floors are parked as they were before the side
    router.set_policy("cost")
    assert (sqrt_op.floor, sqrt_op.trip_floor) == floors


def test_an_all_device_verdict_keeps_the_calls_it_moved_over_their_floors_on_the_device(fake_gpu, monkeypatch):
    """The router's side of the verdict, on a scripted clock: a loop of ``exp`` on host data (on
    trial) and ``sqrt`` of a small host array (under its floor, on NumPy) runs faster with both on
    the device; once the all-device side wins, ``exp`` runs there each step, and ``sqrt``, host
    data under its round-trip floor, on NumPy again: a pin holds for every program's calls of its
    kind, and is never tried again. Every result is NumPy's."""
    clock = [0.0]
    monkeypatch.setattr(trials.time, "perf_counter", lambda: clock[0])
    big, small = numpy.linspace(0.0, 1.0, N), numpy.linspace(0.0, 1.0, 4096)
    seen = []
    for _ in range(len(trials.BLOCKS) * trials.BLOCK + 2):
        x, s = dispatch.asarray(big), dispatch.asarray(small)
        with dispatch.trace() as t:
            got = {"exp": dispatch.exp(x), "sqrt": dispatch.sqrt(s)}
        trial = next(iter(trials.TRIALS.running.values()), None)
        side = trial.last[1] if trial is not None and trial.last is not None else None
        clock[0] += 1e-3 if side == "all-device" else 3e-3
        seen.append({r.op: (r.target, r.reason) for r in t.records})
        for name, value in got.items():
            value, expected = numpy.asarray(value), getattr(numpy, name)(big if name == "exp" else small)
            assert value.dtype == numpy.float64 and value.shape == expected.shape
            numpy.testing.assert_allclose(value, expected, rtol=1e-15)
    assert seen[0]["sqrt"] == ("numpy", router.FLOOR_REASON)
    verdict = next(i for i, calls in enumerate(seen) if "with every call on cupy" in calls["exp"][1])
    assert verdict == 8 * trials.BLOCK  # at once, once each side was timed (by over EARLY_RATIO)
    assert any(calls["sqrt"][0] == "cupy" for calls in seen[:verdict])  # on the all-device side
    for calls in seen[verdict + 1:]:
        assert calls["sqrt"] == ("numpy", router.FLOOR_REASON)
        assert calls["exp"][0] == "cupy"
