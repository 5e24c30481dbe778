"""benchmarks.trial_trace: each ended trial's periods kept as the trial measured them."""

from __future__ import annotations

import pytest
from _synthetic import synthetic
from helpers import router_restored

from benchmarks import suite, trial_trace
from dispatch.base.devices import HOST, Device
from dispatch.routing import router, trials
from dispatch.routing.history import History


class _Side:
    def __init__(self, name: str) -> None:
        self.target = type("T", (), {"name": name})()
        self.reason = name


@pytest.fixture
def restored(monkeypatch):
    yield
    vars(trials.TRIALS).pop("finish", None)  # (where a test left its capture on)
    trials.clear()


def test_an_ended_trial_is_kept_with_its_periods_per_side(restored, monkeypatch):
    ended: list[dict] = []
    finish = trials.finish
    restore = trial_trace._capture(ended)
    device, host = _Side("cupy"), _Side("numpy")
    key = ("tanh", ("float64",), 19)
    here = _Side("numpy")
    here.reason = "small"
    there = _Side("cupy")
    there.reason = "cost model"
    monkeypatch.setattr(router.ROUTER, "decisions", {
        ("exp", ("float64",), 19, frozenset({HOST}), None, None): here,  # host inputs: not kept
        ("exp", ("float64",), 19, frozenset({HOST, Device("cuda", 0)}), None, None): there})
    assert trials.start(key, device, host)
    trials.TRIALS.running[key].periods["device"] = [2.5e-3, 2.75e-3]
    trials.TRIALS.running[key].periods["host"] = [4e-3]
    trials.finish(key, device)
    assert trials.verdict(key) is device and not trials.TRIALS.running  # the real finish ran
    assert ended == [{"key": "tanh float64 under 2^19", "verdict": "cupy", "reason": "cupy", "everything": False,
                      "periods_us": {"device": [2500, 2750], "numpy": [], "all-device": [], "host": [4000]},
                      "device_input_decisions": {"exp float64 under 2^19 on cpu+cuda:0": "cupy: cost model"}}]
    trials.finish(("gone",))  # a trial that never ran: nothing to keep
    assert len(ended) == 1
    restore()
    assert trials.finish is finish


def test_a_workload_is_learned_then_timed(restored, monkeypatch):
    monkeypatch.setattr(suite, "_histories", {})
    with router_restored(History()):
        router.use_calibration(synthetic(gpu=False))
        finish = trials.finish
        result = trial_trace.trace("mlp", "small")
        assert trials.finish is finish  # put back
    assert result["learning"]["settled"] and result["trials"] == []  # no device here: nothing on trial
    assert result["learning"]["runs"] >= 1 and len(result["learning_runs_ms"]) == result["learning"]["runs"]
    assert len(result["numpy_ms"]) == 3 and len(result["router_ms"]) == 5
    assert sum(result["targets"].values()) > 0
