"""Start-up priced, targets brought up in the background, what a script's runs learned kept.

NumPy is the reference: every result is compared with NumPy's, and the tests that run scripts
compare their printed output with the script run under NumPy."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import threading

import numpy
import pytest
from _synthetic import synthetic
from helpers import router_restored

import dispatch
from dispatch import targets
from dispatch.base import settings
from dispatch.routing import bringup, learned, router, startup
from dispatch.routing.history import HISTORY_VERSION, History

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
N = 1_000_000  # a sum of 1e6 float64: NumPy 501 µs, torch-cpu 130 µs in the synthetic calibration


def _calibrated(startup_s: dict[str, tuple[float, float, float]]):
    cal = synthetic()
    cal.extra["startup"] = {name: {"import_s": i, "context_s": c, "first_call_s": f}
                            for name, (i, c, f) in startup_s.items()}
    return cal


@pytest.fixture
def calibrated(tmp_path, monkeypatch):
    """The synthetic calibration in use; torch-cpu not brought up yet (as in a fresh process)."""
    pytest.importorskip("torch")
    monkeypatch.setenv("DISPATCH_CACHE_DIR", str(tmp_path))
    targets.probe("torch-cpu")
    # no engine but NumPy up (restored afterwards): engines earlier tests brought up are not this test's
    monkeypatch.setattr(targets.registry, "_targets", {"numpy": targets.probe("numpy")})
    monkeypatch.setattr(bringup, "_states", {})
    monkeypatch.setattr(bringup, "_threads", {})
    monkeypatch.setattr(bringup, "_began", {})
    monkeypatch.setattr(bringup, "_taken", {})
    monkeypatch.setattr(startup, "_saving", {})
    monkeypatch.setattr(startup, "_forgone", {})
    monkeypatch.setattr(startup, "_late", set())
    monkeypatch.setattr(startup, "_plans", {})
    monkeypatch.setattr(startup, "_kept_plans", None)
    with router_restored(History()):
        yield
    startup.use_calibration(None)


def _sum(a):
    got = dispatch.sum(a)
    want = numpy.sum(numpy.asarray(a))
    assert numpy.asarray(got).dtype == want.dtype and numpy.asarray(got).shape == want.shape
    assert numpy.allclose(numpy.asarray(got), want, rtol=1e-12)
    return got


# ---- start-up pricing -------------------------------------------------------------------------------


def test_a_target_is_not_brought_up_for_a_call_that_cannot_pay(calibrated):
    router.use_calibration(_calibrated({"torch-cpu": (2.0, 0.5, 0.05)}))  # its context alone: 0.55 s
    a = dispatch.asarray(numpy.random.default_rng(0).random(N))
    with dispatch.trace() as t:
        _sum(a)
    assert "torch-cpu" not in targets.registry.up()  # not even probed
    assert [r.target for r in t.records if r.op == "sum"] == ["numpy"]


def test_a_call_that_saves_more_than_the_start_up_brings_it_up(calibrated):
    router.use_calibration(_calibrated({"torch-cpu": (0.0, 0.0, 1e-5)}))  # 10 µs: one call repays it
    a = dispatch.asarray(numpy.random.default_rng(0).random(N))
    with dispatch.trace() as t:
        _sum(a)
    assert "torch-cpu" in targets.registry.up()
    assert [r.target for r in t.records if r.op == "sum"] == ["torch-cpu"]


def test_calls_that_forgo_a_targets_start_up_bring_it_up_in_the_background(calibrated):
    """Ski rental: no one call repays the start-up (50 ms against well under 1 ms saved), so NumPy
    serves; once the calls priced out have forgone that much, the target comes up, and takes them."""
    router.use_calibration(_calibrated({"torch-cpu": (0.0, 0.0, 0.05)}))
    a = dispatch.asarray(numpy.random.default_rng(0).random(N))
    calls = 0
    with dispatch.trace() as t:
        while bringup.state("torch-cpu") is None and calls < 5000:
            _sum(a)
            calls += 1
    assert 1 < calls < 5000 and {r.target for r in t.records if r.op == "sum"} == {"numpy"}
    assert startup.forgone()["torch-cpu"] >= 0.05
    assert bringup.wait("torch-cpu", 60) == "ready"
    with dispatch.trace() as t:
        for _ in range(3):
            _sum(a)
    assert "torch-cpu" in {r.target for r in t.records if r.op == "sum"}
    assert not startup.priced_out(next(iter(router.ROUTER.history.stats)))  # up: priced out no longer


def test_an_engine_coming_up_prices_the_others_against_it_again(calibrated, monkeypatch):
    """CuPy and torch-cuda both left down for calls of one kind, each having forgone half its
    start-up: once CuPy comes up, torch-cuda's count starts again, so that what CuPy now saves
    does not bring up a second engine on its device."""
    started = []
    monkeypatch.setattr(bringup, "start", lambda name, made=None: started.append(name) or True)
    startup.use_calibration(_calibrated({"cupy": (0.0, 1.0, 0.0), "torch-cuda": (0.0, 1.0, 0.0)}))
    monkeypatch.setattr(startup, "up", lambda name: name == "numpy")
    key = ("multiply", (numpy.dtype("float64"),), 22, frozenset({dispatch.base.devices.HOST}))
    assert not startup.admit("cupy", 0.5, key) and not startup.admit("torch-cuda", 0.5, key)
    startup.forgo(key, 1)
    assert startup.forgone() == {"cupy": 0.5, "torch-cuda": 0.5} and started == []
    startup.came_up("cupy")
    assert startup.forgone() == {"cupy": 0.5} and not startup.priced_out(key)
    startup.forgo(key, 10)
    assert startup.forgone() == {"cupy": 0.5} and started == []


def test_a_waiting_program_brings_up_the_target_its_calls_would_have_saved_on(calibrated):
    """A notebook's cell has ended (``startup.idle``): a target whose priced-out calls have forgone
    ``IDLE_SHARE`` of its start-up comes up in the background, long before they forgo all of it;
    below that share it stays down. The next calls run there, with NumPy's results."""
    start_up = 1.0  # seconds: a call saves well under 1 ms
    router.use_calibration(_calibrated({"torch-cpu": (0.0, start_up, 0.0)}))
    share = startup.IDLE_SHARE * start_up
    a = dispatch.asarray(numpy.random.default_rng(0).random(N))
    _sum(a)
    assert 0 < startup.forgone()["torch-cpu"] < share and startup.idle() is None
    calls = 1
    with dispatch.trace() as t:
        while startup.forgone()["torch-cpu"] < share and calls < 5000:
            _sum(a)
            calls += 1
    assert calls < 5000 and bringup.state("torch-cpu") is None  # the ski-rental rule's whole second is far off
    assert {r.target for r in t.records if r.op == "sum"} == {"numpy"}
    assert startup.idle() == "torch-cpu" and bringup.wait("torch-cpu", 60) == "ready"
    with dispatch.trace() as t:
        for _ in range(3):
            _sum(a)
    assert "torch-cpu" in {r.target for r in t.records if r.op == "sum"}
    assert startup.idle() is None  # up: nothing left to bring up


def test_a_waiting_program_brings_up_the_target_that_repays_its_start_up_soonest(calibrated, monkeypatch):
    """Of the targets whose priced-out calls have forgone their share of the start-up, the one that
    has forgone the largest share comes up, not the one that has forgone the most seconds (on the
    H200 machine torch-cpu, forgoing more than CuPy but costing 3.5 times its start-up, came up
    where CuPy saved the more), and no other while it is coming (once it is up, the others are
    priced against it, ``came_up``)."""
    states: dict[str, str] = {}
    monkeypatch.setattr(bringup, "_states", states)  # (state and starting read it)
    monkeypatch.setattr(bringup, "start", lambda name, made=None: states.setdefault(name, "starting") == "starting")
    monkeypatch.setattr(startup, "up", lambda name: name == "numpy")
    startup.use_calibration(_calibrated({"cupy": (0.0, 0.4, 0.0), "torch-cpu": (0.0, 2.4, 0.0)}))
    monkeypatch.setattr(startup, "_forgone", {"cupy": 0.03, "torch-cpu": 0.15})  # 7.5% and 6.25% of each
    assert startup.idle() == "cupy" and states == {"cupy": "starting"}
    startup._forgone["torch-cpu"] = 1.0
    assert startup.idle() is None
    states["cupy"] = "ready"
    startup.came_up("cupy")
    assert startup.forgone() == {"cupy": 0.03} and startup.idle() is None


def test_a_waiting_program_brings_up_no_second_engine_for_a_device_early(calibrated, monkeypatch):
    """Once an engine besides NumPy serves a device, a waiting program brings no other up for it at
    ``IDLE_SHARE`` (a second engine there adds only what it saves over the first, and its arrival
    plans the calls afresh): only the ski-rental rule, its whole start-up forgone, brings it up.
    The same holds for the host's engine while a device's serves (it would take only what the
    device's plans leave on the host). A device's first engine still comes up early beside a host
    engine, and a host engine where no device's serves."""
    states: dict[str, str] = {}
    monkeypatch.setattr(bringup, "_states", states)
    monkeypatch.setattr(bringup, "start", lambda name, made=None: states.setdefault(name, "starting") == "starting")
    is_up = {"numpy", "cupy"}
    monkeypatch.setattr(startup, "up", lambda name: name in is_up)
    startup.use_calibration(_calibrated({"torch-cuda": (0.0, 0.6, 0.1), "torch-cpu": (0.0, 2.0, 0.0),
                                         "cupy": (0.0, 0.5, 0.1)}))
    monkeypatch.setattr(startup, "_forgone", {"torch-cuda": 0.35})  # half its start-up
    monkeypatch.setattr(targets.registry, "up", lambda: sorted(is_up))
    assert startup.idle() is None and states == {}
    startup._forgone["torch-cpu"] = 0.2  # a tenth of its start-up
    assert startup.idle() is None and states == {}
    startup._forgone["torch-cpu"] = 2.0  # its whole start-up: the ski-rental rule's, not the idle share's
    assert startup.idle() is None and states == {}
    is_up.discard("cupy")  # no device's engine up: the host's comes up at its share
    startup._forgone.update({"torch-cpu": 0.2, "torch-cuda": 0.0})
    assert startup.idle() == "torch-cpu" and states == {"torch-cpu": "starting"}
    states.clear()
    is_up.add("torch-cpu")
    startup._forgone["cupy"] = 0.3  # half its start-up: the device's first engine, beside the host's
    assert startup.idle() == "cupy" and states == {"cupy": "starting"}


def test_a_kept_scripts_run_brings_a_target_up_only_within_its_margin(calibrated, monkeypatch):
    """In a script whose run is kept for the next, calls that have forgone the start-up bring the
    target up only once the start-up is within ``KEPT_MARGIN`` of the time the run has run: a
    script run once stays within that margin of NumPy's time, and its next run starts with it."""
    router.use_calibration(_calibrated({"torch-cpu": (0.0, 0.0, 0.05)}))
    ran = [0.5]  # seconds the run has run: 5% of it is 25 ms, less than the 50 ms start-up
    monkeypatch.setattr(learned, "kept_for", lambda: ran[0])
    a = dispatch.asarray(numpy.random.default_rng(0).random(N))
    calls = 0
    with dispatch.trace() as t:
        while startup.forgone().get("torch-cpu", 0.0) < 0.1 and calls < 5000:
            _sum(a)
            calls += 1
    assert calls < 5000 and bringup.state("torch-cpu") is None
    assert {r.target for r in t.records if r.op == "sum"} == {"numpy"}
    ran[0] = 2.0  # 5% of it is twice the start-up: the next call priced out brings it up
    calls = 0
    while bringup.state("torch-cpu") is None and calls < 5000:
        _sum(a)
        calls += 1
    assert calls < 5000 and bringup.wait("torch-cpu", 60) == "ready"


def test_start_up_prices_where_no_calibration_measured_them():
    startup.use_calibration(None)
    assert startup.seconds("numpy") == 0.0
    imported, context, first = startup.SEED_S["torch-cuda"]
    expected = (0.0 if "torch" in sys.modules else imported) + context + first
    assert startup.seconds("torch-cuda") == pytest.approx(expected) or startup.up("torch-cuda")
    assert startup.SEED_S["torch-cpu"][0] >= 1.0  # torch's import: about 1.5-2 s


# ---- the background bring-up ------------------------------------------------------------------------


def test_calls_run_on_numpy_while_a_target_starts_then_switch(calibrated, monkeypatch):
    # a start-up no call repays: torch is imported in this process, so its context is priced
    router.use_calibration(_calibrated({"torch-cpu": (1.0, 1.0, 0.0)}))
    go = threading.Event()
    original = bringup._bring_up

    def slow(*args):
        go.wait(30)
        original(*args)

    monkeypatch.setattr(bringup, "_bring_up", slow)
    assert bringup.start("torch-cpu")
    rng = numpy.random.default_rng(1)
    with dispatch.trace() as t:
        for _ in range(5):
            _sum(dispatch.asarray(rng.random(N)))
    assert {r.target for r in t.records if r.op == "sum"} == {"numpy"}
    assert bringup.state("torch-cpu") == "starting"
    go.set()
    assert bringup.wait("torch-cpu", 60) == "ready"
    with dispatch.trace() as t:
        for _ in range(3):
            _sum(dispatch.asarray(rng.random(N)))
    # the next call takes it (later ones may measure NumPy again: the router's own exploration)
    assert next(r.target for r in t.records if r.op == "sum") == "torch-cpu"


def test_a_target_coming_is_one_up_and_working_or_starting(calibrated, monkeypatch):
    """What a second engine is priced against: NumPy, a target up, one starting in the background;
    not one never brought up, nor one whose probe failed (it serves nothing)."""
    assert startup.coming("numpy") and not startup.coming("torch-cpu")
    monkeypatch.setitem(bringup._states, "torch-cpu", "starting")
    assert startup.coming("torch-cpu")
    monkeypatch.setitem(targets.registry._unavailable, "torch-mps", "no device here")
    assert startup.up("torch-mps") and not startup.coming("torch-mps")


def test_a_call_that_repays_what_is_left_of_the_start_up_waits_for_the_bring_up_under_way(calibrated, monkeypatch):
    """torch-cpu is coming up in the background (held 1.5 s). A call priced to save more there than
    what is left of its start-up (the whole, 1 s, its import priced though torch is loaded here, as
    a bring-up's half-done import is; less the seconds the bring-up has run) waits for that
    bring-up, as a first run would have brought it up for it, rather than run on NumPy (on the H200
    machine a script's second run drew 150M normals on NumPy, 3 s, while CuPy came up; another
    took a sine of 41M elements there, 0.58 s, 0.12 s into CuPy's 0.43 s bring-up), but no longer
    than it would save; a call that does not repay what is left does not wait. Then calls run
    there, with NumPy's results."""
    router.use_calibration(_calibrated({"torch-cpu": (1.0, 0.0, 1e-3)}))
    waits = _held_bring_up(monkeypatch, 1.5)
    assert not startup.admit("torch-cpu", 5e-4)
    assert not startup.admit("torch-cpu", 0.5)  # over its context and first call, under the whole left
    assert waits == [] and bringup.state("torch-cpu") == "starting"
    monkeypatch.setitem(bringup._began, "torch-cpu", bringup._began["torch-cpu"] - 0.7)  # 0.7 s in: 0.3 s left
    assert not startup.admit("torch-cpu", 0.2)
    assert waits == []
    monkeypatch.setitem(bringup._began, "torch-cpu", bringup._began["torch-cpu"] - 2.0)  # overdue: nothing left
    assert not startup.admit("torch-cpu", 0.0)  # a call that saves nothing there does not wait for it
    assert waits == []
    assert startup.admit("torch-cpu", 5.0)
    assert waits == [5.0] and bringup.state("torch-cpu") == "ready"
    rng = numpy.random.default_rng(2)
    with dispatch.trace() as t:
        _sum(dispatch.asarray(rng.random(N)))
    assert [r.target for r in t.records if r.op == "sum"] == ["torch-cpu"]


def test_a_bring_up_that_outlasts_a_wait_is_waited_for_no_more(calibrated, monkeypatch):
    """A call's wait ended before the bring-up did (the calibration's start-up was too short for a
    bring-up beside the program's work): it runs on NumPy, and no later call of the run waits for
    that target, whatever it would save; once up, the target serves."""
    router.use_calibration(_calibrated({"torch-cpu": (0.1, 0.0, 1e-3)}))
    waits = _held_bring_up(monkeypatch, 30)
    assert not startup.admit("torch-cpu", 0.3)  # waits 0.3 s; the bring-up is held
    assert not startup.admit("torch-cpu", 50.0)
    assert waits == [0.3] and bringup.state("torch-cpu") == "starting"
    _release.set()
    assert bringup.wait("torch-cpu", 60) == "ready" and startup.admit("torch-cpu", 1e-6)


def test_a_wait_prices_the_bring_up_the_last_run_took(calibrated, monkeypatch):
    """The script's last run took 3 s to bring torch-cpu up beside its work (kept with what it
    learned), against the calibration's 1 s alone: a call priced to save 2 s does not wait, one
    priced to save 4 s does. The bring-up's seconds are kept for the next run."""
    router.use_calibration(_calibrated({"torch-cpu": (1.0, 0.0, 0.0)}))
    monkeypatch.setattr(learned, "_previous", {"bringup": {"torch-cpu": 3.0, "cupy": 0.5}})
    waits = _held_bring_up(monkeypatch, 0.5)
    assert not startup.admit("torch-cpu", 2.0)
    assert waits == []
    assert startup.admit("torch-cpu", 4.0)
    assert waits == [4.0]
    kept = startup._bringups()
    assert kept == {"torch-cpu": bringup.seconds_taken()["torch-cpu"], "cupy": 0.5}  # this run's, over the last one's


def test_a_hand_edited_bring_up_record_is_ignored(calibrated, monkeypatch):
    """What the last runs kept of their bring-ups, where it is not seconds by target, is ignored:
    a wait prices the calibration's start-up, and the next run keeps this run's figures only."""
    router.use_calibration(_calibrated({"torch-cpu": (1.0, 0.0, 0.0)}))
    for kept in ("not a record", {"torch-cpu": "slow"}, ["torch-cpu"]):
        monkeypatch.setattr(learned, "_previous", {"bringup": kept})
        assert startup._kept_bringups() == {}
        assert startup._left("torch-cpu") == pytest.approx(1.0)
        assert startup._bringups() == bringup.seconds_taken()


_release = threading.Event()


def _held_bring_up(monkeypatch, seconds: float) -> list:
    """torch-cpu's bring-up started, held ``seconds`` (or until ``_release`` is set); the waits
    calls make for it recorded."""
    _release.clear()
    original = bringup._bring_up
    monkeypatch.setattr(bringup, "_bring_up", lambda *args: _release.wait(30) and original(*args))
    waits = []
    real_wait = bringup.wait
    monkeypatch.setattr(bringup, "wait", lambda name, timeout=None: waits.append(timeout) or real_wait(name, timeout))
    assert bringup.start("torch-cpu")
    if seconds < 30:
        threading.Timer(seconds, _release.set).start()
    return waits


_ENDS_DURING_A_BRING_UP = """
import sys, time
from dispatch.routing import bringup

def slow(name, library, warm):  # a library's import or a device's context, still under way when the program ends
    time.sleep(0.5)
    bringup._states[name] = "ready"
    print("bring-up ended", flush=True)

bringup._bring_up = slow
assert bringup.start("torch-cpu")
print("program ended", bringup.state("torch-cpu"), flush=True)
"""


def test_a_bring_up_under_way_when_the_program_ends_is_waited_for():
    """The interpreter stops daemon threads abruptly at its exit, and a library's import or a
    device's context left half-made then may abort the process in native code after the script's
    output: the bring-up ends before the interpreter does."""
    done = subprocess.run([sys.executable, "-c", _ENDS_DURING_A_BRING_UP], cwd=REPO, capture_output=True, text=True,
                          timeout=60, env={**os.environ, "PYTHONPATH": REPO})
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["program ended starting", "bring-up ended"]


def test_earlier_runs_predict_the_target_to_bring_up():
    entry = {"sites": [{"site": "a.py:3", "key": ["sum"], "calls": 1000,
                        "seconds": {"numpy": 2e-3, "torch-cpu": 0.5e-3}, "saves": {}},
                       {"site": "a.py:4", "key": ["add"], "calls": 10, "seconds": {"numpy": 1e-3},
                        "saves": {"cupy": 0.5e-3}}]}
    predicted = learned.predicted(entry)
    assert predicted["torch-cpu"] == pytest.approx(1.5)
    assert predicted["cupy"] == pytest.approx(5e-3)



def test_a_last_run_the_target_made_short_still_brings_it_up(monkeypatch):
    """The last run took 0.6 s from its first call, CuPy serving it and saving 6 s there: on NumPy
    it would have taken 6.6 s, of which a 0.6 s bring-up forgoes a tenth, so the next run brings
    CuPy up at once. Priced by the last run's own 0.6 s, the bring-up would seem to take the whole
    run, and the run after a fast one would start as a first run does (the H200 machine's
    kernel_density: runs 2 and 3 took 1.0 and 3.0 s). A start-up over the saving is not paid."""
    site = {"site": "a.py:3", "key": ["exp"], "calls": 10, "seconds": {"numpy": 0.6, "cupy": 0.0},
            "samples": {"numpy": 3, "cupy": 3}, "saves": {}}
    entry = {"run_s": 0.6, "targets": ["cupy"], "sites": [site]}
    monkeypatch.setattr(learned, "_previous", entry)
    assert learned.wanted(lambda name: 0.6) == ["cupy"]
    assert learned.wanted(lambda name: 7.0) == []
    monkeypatch.setattr(learned, "_previous", {**entry, "targets": []})  # 0.6 s on NumPy, its calls the whole run
    assert learned.wanted(lambda name: 0.6) == []


def test_a_last_run_whose_plans_put_a_region_on_the_device_brings_it_up(monkeypatch):
    """The last run brought CuPy up inside a call and ran the region's calls there only: never
    measured on NumPy, its sites predict no saving. Its plans kept what one pass of the region
    saved there (6 s), and the run saves at least that: the next run brings CuPy up from its first
    routed call (the H200 machine's fft_denoise: each later run brought CuPy up inside a later
    call, and the region's first call, saving less than the start-up alone, stayed on NumPy).
    A start-up over that saving is not paid."""
    site = {"site": "a.py:3", "key": ["sin"], "calls": 1, "seconds": {"cupy": 0.06}, "samples": {"cupy": 3},
            "saves": {}}
    entry = {"run_s": 1.1, "targets": ["cupy"], "sites": [site]}
    monkeypatch.setattr(learned, "_previous", entry)
    monkeypatch.setattr(startup, "_kept_plans", None)
    assert learned.predicted() == {"cupy": 0.0} and learned.wanted(lambda name: 0.6, startup._planned_savings()) == []
    rows = [[["sin", ["float64"], 26, ["cpu"]], "cupy", 6.0], [["multiply", ["float64"], 26, ["cpu"]], "cupy", 6.0],
            [["cos", ["float64"], 20, ["cuda:0"]], "cupy", 0.5]]
    monkeypatch.setattr(learned, "_previous", {**entry, "plans": rows})
    monkeypatch.setattr(startup, "_kept_plans", None)
    assert startup._planned_savings() == {"cupy": 6.0}
    assert learned.wanted(lambda name: 7.0, startup._planned_savings()) == []
    started = []
    monkeypatch.setattr(learned, "begin", lambda history: None)
    monkeypatch.setattr(bringup, "start", lambda name, made=None: started.append((name, made)))
    monkeypatch.setattr(startup, "_begun", False)
    monkeypatch.setattr(startup, "_history", None)  # (put back after: ``begin`` sets it)
    monkeypatch.setattr(startup, "seconds", lambda name: 0.6)
    history = History()  # the earlier runs' measurements, as ``learned.begin`` reads them in
    history.load_data({"version": HISTORY_VERSION, "stats": [
        {"key": ["sin", ["float64"], 26, ["cpu"], None, None], "target": "numpy", "seconds": 0.1, "samples": 3},
        {"key": ["dot", ["float64"], 20, ["cpu"], None, None], "target": "cupy", "seconds": 0.01, "samples": 3}]})
    startup.begin(history)  # the router's first routed call
    assert started == [("cupy", frozenset({"sin", "dot"}))]  # the device's libraries those need loaded, no others


def test_a_saving_measured_from_first_samples_only_keeps_the_routers_price():
    """A call run once on CuPy, its one sample paying a kernel's compilation (2 s against NumPy's
    1 s), is predicted to save what the router priced (0.9 s), not to lose: the next run still
    brings CuPy up. Measured from enough samples, the measurement stands."""
    site = {"site": "a.py:9", "key": ["fft"], "calls": 1, "seconds": {"numpy": 1.0, "cupy": 2.0},
            "samples": {"numpy": 3, "cupy": 1}, "saves": {"cupy": 0.9}}
    assert learned.predicted({"sites": [site]})["cupy"] == pytest.approx(0.9)
    settled = {**site, "samples": {"numpy": 3, "cupy": 3}}
    assert learned.predicted({"sites": [settled]})["cupy"] == pytest.approx(-1.0)
    unpriced = {**site, "saves": {}}
    assert learned.predicted({"sites": [unpriced]})["cupy"] == pytest.approx(-1.0)
    faster = {**site, "seconds": {"numpy": 1.0, "cupy": 0.05}}
    assert learned.predicted({"sites": [faster]})["cupy"] == pytest.approx(0.95)


def test_a_call_is_predicted_to_save_at_most_the_time_numpy_took():
    """A price that says a call saves more than NumPy measured it take (a model that overprices
    NumPy's call) counts that measured time: a run is never predicted to save more than its calls
    took. Where NumPy measured nothing, the price stands."""
    site = {"site": "a.py:5", "key": ["sum"], "calls": 10, "seconds": {"numpy": 1e-3}, "saves": {"torch-cpu": 5e-3}}
    assert learned.predicted({"sites": [site]})["torch-cpu"] == pytest.approx(10e-3)
    assert learned.predicted({"sites": [{**site, "seconds": {}}]})["torch-cpu"] == pytest.approx(50e-3)
    assert learned.predicted({"sites": [{**site, "saves": {"torch-cpu": 0.4e-3}}]})["torch-cpu"] == pytest.approx(4e-3)

# ---- what is kept between runs ------------------------------------------------------------------------

SCRIPT = """
import dispatch as np
rng = np.random.default_rng(0)
total = 0.0
for _ in range(40):
    total += float(np.sum(rng.random(1_000_000)))
print(f"{total:.6f}")
"""


def _env(cache, **more):
    env = {k: v for k, v in os.environ.items() if not k.startswith("DISPATCH_")}
    env.update({"DISPATCH_CACHE_DIR": str(cache), "DISPATCH_LEARN": "1", "PYTHONPATH": REPO, **more})
    return env


def _run(script, cache, **more):
    return subprocess.run([sys.executable, "-W", "default", str(script)], env=_env(cache, **more), cwd=REPO,
                          capture_output=True, text=True, timeout=300)


@pytest.fixture
def script(tmp_path):
    path = tmp_path / "sums.py"
    path.write_text(SCRIPT)
    return path


def _kept(cache, script):
    path = cache / learned.FOLDER / learned.path_for(str(script)).name
    return json.loads(path.read_text()) if path.exists() else None


def test_a_run_keeps_what_it_learned_and_the_next_adds_to_it(tmp_path, script):
    cache = tmp_path / "cache"
    first = _run(script, cache)
    assert first.returncode == 0, first.stderr
    kept = _kept(cache, script)
    assert kept["version"] == learned.VERSION and kept["runs"] == 1
    assert kept["script"] == os.path.realpath(script) and kept["run_s"] > 0
    second = _run(script, cache)
    assert second.stdout == first.stdout  # what the program prints does not depend on what was kept
    assert _kept(cache, script)["runs"] == 2


# The routing machinery, which a script whose calls all stay under the floors never needs
# (``dispatch.routing.floors``).
ROUTING = ("dispatch.routing.router", "dispatch.routing.planner", "dispatch.routing.regions", "dispatch.routing.live",
           "dispatch.routing.calibration", "dispatch.routing.cost", "dispatch.routing.history",
           "dispatch.routing.startup", "dispatch.routing.bringup", "dispatch.routing.decisions",
           "dispatch.targets._staging")

_LOADED_AT_EXIT = """
import atexit, sys
atexit.register(lambda: print(sorted(m for m in {MODULES} if m in sys.modules)))  # runs after dispatch's own
import numpy
import dispatch as np
a = np.arange(1000.0)
print(float(np.sum(a * 2)))
"""


def test_import_dispatch_loads_only_its_settings_and_hooks(tmp_path):
    """``import dispatch`` loads its settings and import hooks, not the selector's names (loaded
    when first asked for: ``dispatch.Backend``) nor the array machinery."""
    code = ("import sys, numpy; before = set(sys.modules); import dispatch\n"
            "print(' '.join(m for m in set(sys.modules) - before if m.startswith('dispatch.')))\n"
            "print(dispatch.Backend.GPU.name, 'dispatch.routing.selector' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], env=_env(tmp_path), cwd=REPO, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    loaded, selector = done.stdout.split("\n")[:2]
    assert set(loaded.split()) <= {"dispatch.base", "dispatch.base.forksafe", "dispatch.base.import_hooks",
                                 "dispatch.base.records", "dispatch.base.settings", "dispatch.base.warning_site"}
    assert selector == "GPU True"


def test_a_script_on_numpy_loads_no_module_it_does_not_need(tmp_path):
    """A script whose calls all stay on NumPy, run once and its run kept in the user's cache, loads
    neither ``logging`` nor the temporary-file, thread-pool or cache-folder libraries (10-20 ms
    of a short script's time), nor ``hashlib`` (OpenSSL: its kept file is named by the
    interpreter's own SHA-256) nor the trace's module (no call fell back, no trace is open); nor
    ``threading`` (no thread is started), ``dataclasses`` (whose classes compile their methods
    when made) or any target's adapter but NumPy's; nor, its calls all under the seed's floors on
    a machine with no calibration, the routing machinery (``ROUTING``)."""
    modules = ("logging", "tempfile", "shutil", "platformdirs", "concurrent.futures", "hashlib", "dispatch.tracing",
               "threading", "dataclasses", "dispatch.targets.torch_target", "dispatch.targets.cupy_target",
               "dispatch.targets.dask_target", *ROUTING)
    path = tmp_path / "short.py"
    path.write_text(_LOADED_AT_EXIT.replace("{MODULES}", repr(modules)))
    env = {k: v for k, v in _env(tmp_path).items() if k != "DISPATCH_CACHE_DIR"}
    env["XDG_CACHE_HOME"] = str(tmp_path / "xdg")
    done = subprocess.run([sys.executable, str(path)], env=env, cwd=REPO, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:2] == ["999000.0", "[]"]
    assert list((tmp_path / "xdg" / "dispatch" / learned.FOLDER).glob("*.json"))  # its run was kept


def test_dispatch_run_loads_neither_shutil_nor_sysconfig(tmp_path):
    """``python -m dispatch run`` of a script on NumPy loads neither ``shutil`` (which argparse
    imports for the terminal's width, with the compression libraries) nor ``sysconfig`` (the
    build's configuration, read for the library folders): 10-15 ms of a short script's time;
    nor, given no option, ``argparse`` with its translations (``gettext``, ``locale``); nor
    ``threading`` or, its calls all under the floors, the routing machinery."""
    modules = ("shutil", "sysconfig", "bz2", "lzma", "argparse", "gettext", "locale", "threading", *ROUTING)
    path = tmp_path / "short.py"
    path.write_text(_LOADED_AT_EXIT.replace("{MODULES}", repr(modules)))
    done = subprocess.run([sys.executable, "-m", "dispatch", "run", str(path)], env=_env(tmp_path / "cache"),
                          cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:2] == ["999000.0", "[]"]


_ROUTED_AT_EXIT = """
import atexit, sys
atexit.register(lambda: print("dispatch.routing.router" in sys.modules))
import numpy
{ENGINE}
import dispatch as np
a = np.arange({N})
print(float(np.sum(a * 2)))
"""

_HAS_TORCH = importlib.util.find_spec("torch") is not None


def _script_lines(tmp_path, text: str, cache=None) -> list[str]:
    """The lines a script of ``text`` prints, run in a fresh process (its cache folder ``cache``,
    else an empty one); it must exit cleanly."""
    path = tmp_path / "script.py"
    path.write_text(text)
    done = subprocess.run([sys.executable, str(path)], env=_env(cache or tmp_path / "cache"), cwd=REPO,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout.split("\n")


@pytest.mark.parametrize(("n", "calibrated", "engine", "loaded"), [
    (1000, False, False, False), (50_000, False, False, False),
    pytest.param(50_000, False, True, True, marks=pytest.mark.skipif(not _HAS_TORCH, reason="torch is not installed")),
    (1000, True, False, True)])
def test_the_router_is_loaded_at_the_first_call_it_may_place(tmp_path, n, calibrated, engine, loaded):
    """With no calibration stored, the seed's table brings up no engine whose library the program
    has not loaded: a sum of 50,000 elements, over the table's floor, stays on NumPy without the
    router while neither torch nor CuPy is loaded, and loads it where the program imported torch
    itself. Under the floor (10,000 elements or fewer), no target but NumPy can be chosen either
    way. A calibration stored for another machine (the router says it no longer applies) loads
    it. NumPy's result every time."""
    cache = tmp_path / "cache"
    if calibrated:
        cache.mkdir()
        (cache / "calibration-elsewhere.json").write_text("{}")  # another machine's: the router says so
    text = _ROUTED_AT_EXIT.replace("{N}", str(n)).replace("{ENGINE}", "import torch" if engine else "")
    assert _script_lines(tmp_path, text, cache)[:2] == [repr(float(numpy.sum(numpy.arange(n) * 2))), str(loaded)]


_CALIBRATED_FLOORS = """
import sys
import dispatch as np
from dispatch.base.ops import all_ops
a = np.arange(1000.0)
print(float(np.sum(np.sin(a) * 2)), float(np.max(np.cumsum(a))))
loaded = "dispatch.routing.router" in sys.modules
given = {op.name: op.floor for op in all_ops()}
from dispatch.routing import floors, router
router.ROUTER.ensure_calibration()  # its policy's floors, given afresh
print(loaded, floors._models is not None, router.policy())
print(all(router.host_floor(op) == given[op.name] for op in all_ops() if given[op.name] >= 0),
      sum(f >= 0 for f in given.values()), sorted(n for n, f in given.items() if f >= 0)[:3])
"""


def test_a_calibrated_machine_gives_the_floors_without_the_router(tmp_path):
    """Where this machine's calibration is stored (and the script's earlier runs name no other
    target), calls under the cost policy's floors run on NumPy without loading the router: the
    floors come from the calibration's models, as the router's cost policy gives them once loaded,
    op for op. NumPy's results."""
    cache = tmp_path / "cache"
    cache.mkdir()
    synthetic().save(cache / f"calibration-{synthetic().fingerprint}.json")
    a = numpy.arange(1000.0)
    lines = _script_lines(tmp_path, _CALIBRATED_FLOORS, cache)
    assert lines[0] == f"{float(numpy.sum(numpy.sin(a) * 2))} {float(numpy.max(numpy.cumsum(a)))}"
    assert lines[1] == "False True cost"
    assert lines[2].startswith("True ") and int(lines[2].split()[1]) >= 4


_ENGINE_LATER = """
import sys
import dispatch as np
a = np.arange(50_000.0)
print(float(np.sum(a * 2)), "dispatch.routing.router" in sys.modules)
import torch
print(float(np.sum(a * 3)), "dispatch.routing.router" in sys.modules)
"""


@pytest.mark.skipif(not _HAS_TORCH, reason="torch is not installed")
def test_an_engine_loaded_later_puts_the_seed_floors_back(tmp_path):
    """The floors a call was given while no engine's library was loaded are asked again once the
    program imports one: the next sum over the seed table's floor loads the router, which may
    now place it. NumPy's results before and after."""
    a = numpy.arange(50_000.0)
    assert _script_lines(tmp_path, _ENGINE_LATER)[:2] == [f"{float(numpy.sum(a * 2))} False",
                                                        f"{float(numpy.sum(a * 3))} True"]


def test_after_import_calls_back_once_the_module_has_run(tmp_path, monkeypatch):
    """``import_hooks.after_import`` (how the floors hear that the program loaded torch or CuPy)
    calls back with the named top-level module once it has run, and only at its first import."""
    from dispatch.base import import_hooks

    (tmp_path / "dispatch_probe_engine.py").write_text("LOADED = True\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    seen = []
    import_hooks.after_import(("dispatch_probe_engine",), seen.append)
    assert seen == []
    import dispatch_probe_engine

    assert [m.__name__ for m in seen] == ["dispatch_probe_engine"] and seen[0].LOADED
    del sys.modules["dispatch_probe_engine"]
    import dispatch_probe_engine  # noqa: F401, F811 - imported afresh: no second call

    assert len(seen) == 1
    del sys.modules["dispatch_probe_engine"]


_TRACED_LATER = """
import dispatch as np
a = np.arange(50_000.0)
print(float(np.sum(a)))
with np.trace() as t:
    print(float(np.sum(a * 2)))
print([r.reason.split(":")[0] for r in t.records if r.op == "sum"])
"""


def test_the_router_once_loaded_gives_the_floors_the_idle_ones_gave(tmp_path):
    """A sum of 50,000 elements ran on NumPy under the idle floor (no engine's library loaded); a
    trace then loads the router, whose seed policy decides the next such sum (it is over that
    policy's floor) rather than the floor the router did not give. NumPy's results."""
    a = numpy.arange(50_000.0)
    assert _script_lines(tmp_path, _TRACED_LATER)[:3] == [str(float(numpy.sum(a))), str(float(numpy.sum(a * 2))),
                                                         "['heuristic']"]


_DRAWN_AT_EXIT = """
import atexit, sys
atexit.register(lambda: print("dispatch.routing.router" in sys.modules))
{ENGINE}
import dispatch as np
drawn = np.random.default_rng(42).integers(0, 1000, size={N})
print(int(drawn[-1000:].sum()), drawn.dtype, drawn.shape)  # (a sum under its floor too)
"""


@pytest.mark.parametrize(("n", "engine", "loaded"), [
    (262_144, False, False), (2_000_000, False, False),
    pytest.param(2_000_000, True, True, marks=pytest.mark.skipif(not _HAS_TORCH, reason="torch is not installed"))])
def test_a_draw_under_the_seed_floor_does_not_load_the_router(tmp_path, n, engine, loaded):
    """A large draw is a call the router may place on a device; where no calibration is stored,
    one under the seed table's floor for draws stays NumPy's without loading the routing
    machinery (about 10 ms of a short script's start), and so does one over it while no engine's
    library is loaded; with torch loaded by the program, one over it loads it. NumPy's stream
    every time."""
    want = numpy.random.default_rng(42).integers(0, 1000, size=n)
    text = _DRAWN_AT_EXIT.replace("{N}", str(n)).replace("{ENGINE}", "import torch" if engine else "")
    assert _script_lines(tmp_path, text)[:2] == [f"{int(want[-1000:].sum())} {want.dtype} {want.shape}", str(loaded)]


def test_earlier_runs_that_name_another_target_load_the_router():
    """What earlier runs kept names a target other than NumPy (used, measured or priced), or
    cannot be read as such: the router, not the seed's floors, weighs the run's calls."""
    site = {"site": "a.py:3", "key": ["sum"], "calls": 10, "seconds": {"numpy": 1e-3}, "saves": {}}
    cases = [({"targets": [], "sites": [site]}, False), ({"targets": ["torch-cpu"], "sites": []}, True),
             ({"targets": [], "sites": [{**site, "seconds": {"numpy": 1e-3, "cupy": 1e-4}}]}, True),
             ({"targets": [], "sites": [{**site, "saves": {"torch-cpu": 0.5}}]}, True),
             ({"targets": [], "sites": ["not a site"]}, True), (None, False)]
    for entry, named in cases:
        with pytest.MonkeyPatch.context() as m:
            m.setattr(learned, "_previous", entry)
            assert learned.names_others() is named, entry


def test_dispatch_run_sets_apart_the_folders_sysconfig_names(tmp_path):
    """The standard library and the installed packages, found without ``sysconfig``, are its own."""
    import sysconfig

    from dispatch.cli._script import ImportRedirect

    redirect = ImportRedirect(str(tmp_path))
    for key in ("stdlib", "purelib", "platlib"):
        folder = os.path.realpath(sysconfig.get_paths()[key]) + os.sep
        assert folder in redirect.excluded, key
        assert not redirect.is_users_file(os.path.join(folder, "mod.py"))


def test_help_wraps_at_the_width_argparse_finds(monkeypatch):
    """The help formatter reads the terminal's width as argparse's own (``shutil``) does."""
    import argparse

    from dispatch.cli._help import HelpFormatter

    for columns in ("50", "120", "0", "wide", None):
        if columns is None:
            monkeypatch.delenv("COLUMNS", raising=False)
        else:
            monkeypatch.setenv("COLUMNS", columns)
        ours, theirs = HelpFormatter("dispatch"), argparse.HelpFormatter("dispatch")
        assert (ours._width, ours._max_help_position) == (theirs._width, theirs._max_help_position), columns


def test_concurrent_runs_leave_one_whole_file(tmp_path, script):
    cache = tmp_path / "cache"
    runs = [subprocess.Popen([sys.executable, str(script)], env=_env(cache), cwd=REPO, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True) for _ in range(4)]
    outputs = [p.communicate(timeout=300) for p in runs]
    assert all(p.returncode == 0 for p in runs), [e for _, e in outputs]
    assert len({out for out, _ in outputs}) == 1
    folder = cache / learned.FOLDER
    assert [p.name for p in folder.iterdir()] == [learned.path_for(str(script)).name]  # no temporary file left
    assert _kept(cache, script)["runs"] >= 1


def test_a_corrupt_file_is_ignored_with_one_warning(tmp_path, script):
    cache = tmp_path / "cache"
    path = cache / learned.FOLDER / learned.path_for(str(script)).name
    path.parent.mkdir(parents=True)
    path.write_text('{"version": 1, "sites": [')
    done = _run(script, cache)
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("ignoring what earlier runs of this script learned") == 1
    assert _kept(cache, script)["runs"] == 1  # written afresh


def test_learning_off_keeps_nothing(tmp_path, script):
    cache = tmp_path / "cache"
    done = _run(script, cache, DISPATCH_LEARN="0")
    assert done.returncode == 0, done.stderr
    assert not (cache / learned.FOLDER).exists()


def test_forget_deletes_what_was_kept(tmp_path, script, monkeypatch):
    cache = tmp_path / "cache"
    assert _run(script, cache).returncode == 0
    assert _kept(cache, script) is not None
    env = _env(cache)
    shown = subprocess.run([sys.executable, "-m", "dispatch", "info", "--script", str(script)], env=env, cwd=REPO,
                           capture_output=True, text=True, timeout=300)
    assert shown.returncode == 0 and "1 run(s)" in shown.stdout, shown.stderr
    done = subprocess.run([sys.executable, "-m", "dispatch", "forget"], env=env, cwd=REPO, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0 and "1 file(s) deleted" in done.stdout
    assert _kept(cache, script) is None
    shown = subprocess.run([sys.executable, "-m", "dispatch", "info", "--script", str(script)], env=env, cwd=REPO,
                           capture_output=True, text=True, timeout=300)
    assert shown.returncode == 0 and f"nothing kept for {script}" in shown.stdout, shown.stderr
    again = subprocess.run([sys.executable, "-m", "dispatch", "forget", str(script)], env=env, cwd=REPO,
                           capture_output=True, text=True, timeout=300)  # a script with nothing kept says so
    assert again.returncode == 0 and "0 file(s) deleted" in again.stdout
    assert f"nothing was kept for {script}" in again.stdout
    assert _run(script, cache).returncode == 0
    monkeypatch.setenv("DISPATCH_CACHE_DIR", str(cache))
    assert dispatch.forget(str(script)) == 1 and _kept(cache, script) is None


def test_the_kept_files_over_the_limit_go_oldest_first(tmp_path, monkeypatch):
    """A folder over ``MAX_FILES`` kept files loses its oldest; one at the limit or under it is
    left as it is, no file's age read (a script's end does not stat every file kept)."""
    monkeypatch.setattr(learned, "MAX_FILES", 3)
    for i in range(5):
        path = tmp_path / f"{i}.json"
        path.write_text("{}")
        os.utime(path, (1000 + i, 1000 + i))
    learned._prune(tmp_path)
    assert sorted(p.name for p in tmp_path.glob("*.json")) == ["2.json", "3.json", "4.json"]

    def unread(*args, **kwargs):
        raise AssertionError("a file's age was read")

    monkeypatch.setattr(type(tmp_path), "stat", unread)
    learned._prune(tmp_path)
    assert len(list(os.scandir(tmp_path))) == 3


def test_learn_setting_is_checked():
    assert settings.learn({}) is True
    assert settings.learn({"DISPATCH_LEARN": "0"}) is False
    with pytest.raises(ValueError, match="DISPATCH_LEARN"):
        settings.learn({"DISPATCH_LEARN": "maybe"})


# (the real torch takes seconds to import, more than the sums: the script waits for it, then sums again)
WAIT = """
from dispatch.routing import bringup
bringup.wait("torch-cpu", 120)
"""
WAIT_THEN_SUM = WAIT + """
for _ in range(5):
    total += float(np.sum(rng.random(1_000_000)))
print(f"{total:.6f}")
"""


def test_a_later_run_brings_up_what_earlier_runs_predict(tmp_path, script):
    """Run 1 stays on NumPy: torch's start-up is priced at 1 s, more than any sum, or all 40,
    save. It keeps what each sum was priced to save there. With the start-up priced at a quarter
    of what run 1 predicts a run saves (the calibration measured again), run 2 starts bringing
    torch-cpu up in the background at its first call, from what run 1 kept. Both print NumPy's
    result."""
    pytest.importorskip("torch")
    first_call = "import sys; print('at the first call:', bringup.state('torch-cpu'), file=sys.stderr)\n"
    body = SCRIPT.replace("total = 0.0\n", "from dispatch.routing import bringup\n"
                          "total = float(np.sum(rng.random(10)))\n" + first_call)
    script.write_text(body + WAIT_THEN_SUM)
    cache = tmp_path / "cache"
    cal = _calibrated({"torch-cpu": (1.0, 0.0, 0.0)})
    cal.save(cache / f"calibration-{cal.fingerprint}.json")
    plain = (body + WAIT_THEN_SUM).replace("import dispatch as np", "import numpy as np")
    reference = subprocess.run([sys.executable, "-c", plain.replace(WAIT, "").replace(first_call, "")],
                               capture_output=True, text=True, timeout=300).stdout
    first = _run(script, cache)
    assert first.returncode == 0, first.stderr
    assert first.stdout == reference
    assert "at the first call: None" in first.stderr
    kept = _kept(cache, script)
    predicted = learned.predicted(kept)["torch-cpu"]  # what this machine measured: 3-4 ms on the 2-core one
    assert kept["targets"] == [] and 0.0 < predicted < 1.0
    # a quarter of that: more than one sum saves (a 40th of it), less than the run's 40
    cal = _calibrated({"torch-cpu": (predicted / 4, 0.0, 0.0)})
    cal.save(cache / f"calibration-{cal.fingerprint}.json")
    second = _run(script, cache)
    assert second.returncode == 0, second.stderr
    assert [float(x) for x in second.stdout.split()] == pytest.approx([float(x) for x in reference.split()],
                                                                      rel=1e-12)
    assert "at the first call: None" not in second.stderr
    assert _kept(cache, script)["targets"] == ["torch-cpu"]


def test_what_large_scikit_learn_calls_measured_is_kept_for_the_next_run(monkeypatch):
    pytest.importorskip("sklearn")
    from sklearn.discriminant_analysis import LinearDiscriminantAnalysis

    from dispatch.sklearn import _routing

    key = (LinearDiscriminantAnalysis, "fit", 21)
    monkeypatch.setattr(_routing, "_measured", {key: {None: 12.5, "cupy": 0.24}})
    monkeypatch.setattr(_routing, "_tries", {key: 2})  # the GPU measured twice
    kept = _routing._kept()
    assert kept == [{"estimator": "sklearn.discriminant_analysis.LinearDiscriminantAnalysis", "method": "fit",
                     "bucket": 21, "tries": 2, "seconds": {"stock": 12.5, "cupy": 0.24}}]
    # the next run: nothing measured yet in the process, the entry read back from the file
    monkeypatch.setattr(_routing, "_measured", {})
    monkeypatch.setattr(_routing, "_tries", {})
    monkeypatch.setattr(learned, "_previous", {"sklearn": json.loads(json.dumps(kept))})
    assert _routing._earlier(key) == {None: 12.5, "cupy": 0.24}
    assert _routing._tries == {key: 2}
    assert _routing._earlier((LinearDiscriminantAnalysis, "predict", 21)) == {}


def _watched_exp(monkeypatch):
    """A 1000 x 1000 ``exp`` call (its array, op and inputs), and the list of the targets the router
    reaches for while deciding it, each with the saving it was priced at."""
    from dispatch.arrays._call import Inputs
    from dispatch.base.ops import op_named

    a = numpy.random.default_rng(0).random((1000, 1000))
    reached = []
    real_reach = router._reach
    monkeypatch.setattr(router, "_reach", lambda name, saving, key=None, *rest: reached.append((name, saving))
                        or real_reach(name, saving, key, *rest))
    return a, op_named("exp"), Inputs([dispatch.asarray(a)]), reached


def test_a_second_engine_is_not_brought_up_to_be_the_runner_up(tmp_path, monkeypatch):
    """Two targets down, both priced to save more than their start-up over NumPy: the cheapest
    comes up and serves the call; the other is then priced against it, not against NumPy, and
    stays down (on the H200 machine, torch was imported for 2 s to be the runner-up of CuPy's
    normal draws; here torch-cpu serves and the fake CuPy stays down). The result is NumPy's.
    The script's next run, which starts with neither up, is told what CuPy would save against
    NumPy, as it is told torch-cpu's: priced against the engine up, a device would seem to save
    nothing, and each later run would bring up the first run's host engine again (as the code
    reads, what the H200 machine's kernel_density met once: torch-cpu in run 2, 3.5 s against
    1.2 s with CuPy)."""
    pytest.importorskip("torch")
    from helpers import fake_cupy_router

    monkeypatch.setattr(learned, "_script", ("program.py", "0" * 64))  # a script's run, kept for its next
    monkeypatch.setattr(learned, "_saves", {})
    with fake_cupy_router(tmp_path, monkeypatch):
        for name in ("cupy", "torch-cpu"):  # a fresh process: neither up
            targets.probe(name)
            monkeypatch.delitem(targets.registry._targets, name)
        monkeypatch.setattr(bringup, "_states", {})
        cal = synthetic(gpu=True)
        cal.extra["startup"] = {n: {"import_s": 0.0, "context_s": 0.0, "first_call_s": 1e-6}
                                for n in ("torch-cpu", "cupy")}
        router.use_calibration(cal)
        a, op, inputs, reached = _watched_exp(monkeypatch)
        decision = router.decide(op, inputs, (), {})
        assert decision.target.name == "torch-cpu", decision
        assert [n for n, _ in reached] == ["torch-cpu", "cupy"] and reached[0][1] > 0 >= reached[1][1]
        assert "cupy" not in targets.registry.up()
        kept = learned._saves[decision.key]
        assert kept["torch-cpu"] == pytest.approx(reached[0][1])  # against NumPy, the engine up before
        assert kept["cupy"] > 0 >= reached[1][1]  # against NumPy too, not against torch-cpu
        got = numpy.asarray(dispatch.exp(dispatch.asarray(a)))
        numpy.testing.assert_allclose(got, numpy.exp(a), rtol=1e-14)
        assert got.dtype == numpy.float64 and got.shape == (1000, 1000)
    startup.use_calibration(None)


def test_no_second_engine_comes_up_beside_one_coming_up(tmp_path, monkeypatch):
    """torch-cpu is coming up in the background and is priced cheaper than the fake CuPy, which is
    down: CuPy is priced against torch-cpu, not against NumPy, and stays down; the call, which does
    not repay torch-cpu's whole start-up, runs on NumPy meanwhile (on the H200 machine, a script's
    second run imported torch for 2 s beside the CuPy that its first run used and its history
    brought up). The result is NumPy's."""
    pytest.importorskip("torch")
    from helpers import fake_cupy_router

    go = threading.Event()
    original = bringup._bring_up
    with fake_cupy_router(tmp_path, monkeypatch):
        for name in ("cupy", "torch-cpu"):  # a fresh process: neither up
            targets.probe(name)
            monkeypatch.delitem(targets.registry._targets, name)
        monkeypatch.setattr(bringup, "_states", {})
        monkeypatch.setattr(bringup, "_threads", {})
        monkeypatch.setattr(bringup, "_bring_up", lambda *args: go.wait(30) and original(*args))
        cal = synthetic(gpu=True)
        cal.extra["startup"] = {"torch-cpu": {"import_s": 0.0, "context_s": 100.0, "first_call_s": 0.0},
                                "cupy": {"import_s": 0.0, "context_s": 0.0, "first_call_s": 1e-6}}
        router.use_calibration(cal)
        assert bringup.start("torch-cpu")
        a, op, inputs, reached = _watched_exp(monkeypatch)
        try:
            decision = router.decide(op, inputs, (), {})
            assert decision.target.name == "numpy", decision
            assert [n for n, _ in reached][:2] == ["torch-cpu", "cupy"] and reached[0][1] > 0 > reached[1][1]
            assert "cupy" not in targets.registry.up() and bringup.state("cupy") is None
            assert bringup.state("torch-cpu") == "starting"
            got = numpy.asarray(dispatch.exp(dispatch.asarray(a)))
            numpy.testing.assert_allclose(got, numpy.exp(a), rtol=1e-14)
            assert got.dtype == numpy.float64 and got.shape == (1000, 1000)
        finally:
            go.set()
            bringup.wait("torch-cpu", 60)
    startup.use_calibration(None)


def test_no_stored_calibration_is_known_without_the_machines_fingerprint(tmp_path, monkeypatch):
    """With no calibration in the cache folder, loading one and checking for a stale one read no
    fingerprint (the libraries' versions, found by listing every folder on ``sys.path``); with
    one stored, both read it."""
    from dispatch.routing import calibration

    monkeypatch.setenv("DISPATCH_CACHE_DIR", str(tmp_path))
    read = []
    monkeypatch.setattr(calibration, "fingerprint", lambda: read.append(1) or "here")
    monkeypatch.setattr(calibration, "_loaded", {})
    assert calibration.load() is None
    router._say_when_a_calibration_no_longer_applies()
    assert read == []
    (tmp_path / "calibration-here.json").write_text("{}")
    with pytest.warns(RuntimeWarning, match="ignores the calibration"):  # (an empty one)
        calibration.load()
    router._say_when_a_calibration_no_longer_applies()
    assert len(read) == 2


def test_a_files_real_path_is_found_through_its_folders(tmp_path):
    """``dispatch run`` tells the user's files from the libraries' by their real paths, each
    folder resolved once: the same paths ``os.path.realpath`` gives, through a linked folder,
    a linked file and ``..``."""
    from dispatch.cli._script import ImportRedirect

    (tmp_path / "user").mkdir()
    (tmp_path / "lib").mkdir()
    (tmp_path / "user" / "mine.py").write_text("")
    (tmp_path / "lib" / "theirs.py").write_text("")
    (tmp_path / "linked").symlink_to(tmp_path / "user")
    (tmp_path / "lib" / "link.py").symlink_to(tmp_path / "user" / "mine.py")
    redirect = ImportRedirect(str(tmp_path / "user"))
    names = [tmp_path / "linked" / "mine.py", tmp_path / "lib" / "link.py", tmp_path / "lib" / "theirs.py",
             tmp_path / "lib" / ".." / "user" / "mine.py", tmp_path / "linked" / "mine.py"]
    for name in map(str, names):
        assert redirect._real(name) == os.path.realpath(name)
    assert [redirect.is_users_file(str(n)) for n in names] == [True, True, False, True, True]


def test_a_kind_of_call_the_last_run_made_and_this_one_did_not_stays_kept(monkeypatch, tmp_path):
    """The last run measured a large ``exp`` on host data, on NumPy and on CuPy; this run made it
    on the device only (a kept plan put its input there first). Its site stays kept, calls and
    seconds, so the next run is still predicted to save on CuPy what NumPy took (on the H200
    machine kernel_density's prediction fell from 3.0 to 0.8 s after such a run, and the next run
    did not bring CuPy up). A hand-edited site is not carried."""
    exp = {"site": "k.py:36", "key": ["exp", ["float64"], 27, ["cpu"], None, None], "calls": 2.0,
           "seconds": {"numpy": 1.2, "cupy": 0.08}, "samples": {"numpy": 1, "cupy": 1}, "saves": {}}
    junk = {"site": "k.py:40", "key": ["add"], "calls": "many", "seconds": {"numpy": 1.0}}
    monkeypatch.setattr(learned, "_script", (str(tmp_path / "k.py"), "0" * 64))
    monkeypatch.setattr(learned, "_started_run", True)
    monkeypatch.setattr(learned, "_previous", {"sites": [exp, junk], "run_s": 1.0})
    history = History()
    key = ("exp", (numpy.dtype("float64"),), 27, frozenset({dispatch.base.devices.Device("cuda:0")}), None, None)
    history.observe(key, "cupy", 0.5)  # this run's calls: on the device (the first loaded its kernel: no price)
    history.observe(key, "cupy", 1e-4)
    monkeypatch.setattr(learned, "_history", history)
    monkeypatch.setattr(learned, "_samples_at_start", {})
    monkeypatch.setattr(learned, "_saves", {})
    monkeypatch.setattr(learned, "_sections", {})
    kept = learned.entry()
    assert [s["site"] for s in kept["sites"]] == ["k.py:36", "?"]  # the last run's site, then this run's
    assert kept["sites"][0] == exp
    assert learned.predicted(kept)["cupy"] == pytest.approx(2 * (1.2 - 0.08))


def test_info_shows_the_loops_a_script_s_runs_planned_on_a_device():
    from dispatch.cli import info

    entry = {"script": "k.py", "runs": 2, "run_s": 1.2, "targets": ["cupy"], "current": True, "sites": [],
             "plans": [[["subtract", ["float64", "float64"], 27, ["cpu"], None, None], "cupy", 0.5],
                       [["exp", ["float64"], 27, ["cpu"], None, None], "cupy", 0.25], ["hand-edited"],
                       [["exp"], "cupy", 9.0]]}
    text = "\n".join(info._render_learned({"enabled": True, "files": 1, "folder": "f", "script": entry}))
    assert "  loops planned on cupy: 2 kind(s) of call, a pass saving up to 0.500 s" in text


def test_info_says_a_predicted_loss_is_no_saving_and_counts_calls_in_words():
    from dispatch.cli import info

    site = {"site": "k.py:3", "key": ["sum"], "calls": 1.0, "seconds": {}}
    entry = {"script": "k.py", "runs": 1, "run_s": 0.2, "targets": [], "current": True, "plans": [],
             "predicted": {"torch-cpu": -0.002, "cupy": 0.25}, "sites": [site, {**site, "calls": 3.4}]}
    text = "\n".join(info._render_learned({"enabled": True, "files": 1, "folder": "f", "script": entry}))
    assert "  predicted saving on cupy: 0.250 s a run" in text
    assert "  predicted saving on torch-cpu: none (0.002 s a run lost there)" in text
    assert "  sum (first at k.py:3), about 1 call\n" in text + "\n" and "  sum (first at k.py:3), about 3 calls" in text


def test_info_on_a_script_that_is_not_there_is_a_usage_error(tmp_path):
    missing = tmp_path / "nowhere.py"
    shown = subprocess.run([sys.executable, "-m", "dispatch", "info", "--script", str(missing)], cwd=REPO,
                           env=_env(tmp_path / "cache"), capture_output=True, text=True, timeout=300)
    assert shown.returncode == 2 and shown.stdout == ""
    assert shown.stderr.strip() == f"dispatch info: error: {missing}: no such file"
