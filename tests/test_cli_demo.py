"""``dispatch demo``: a speed-up is shown only where a call moved, and always with its spread
across the alternating turns."""

from __future__ import annotations

import re

from helpers import router_restored

from dispatch.cli import demo
from dispatch.routing.history import History
from dispatch.tracing import CallRecord, Trace


def _trace(*targets: str) -> Trace:
    t = Trace()
    for target in targets:
        t.add(CallRecord("sum", [[10]], ["float64"], target, "cost model", 1e-3))
    return t


def test_speedup_is_the_median_of_the_turns_with_its_spread():
    plain, routed = [1.0, 2.0, 3.0, 1.2, 1.5], [1.0, 1.0, 2.0, 1.0, 1.0]  # ratios 1, 2, 1.5, 1.2, 1.5
    assert demo.speedup(plain, routed) == "1.50x (1.00-2.00x over 5 turns)"


def test_a_spread_across_one_is_called_noise():
    assert demo.speedup([1.0, 1.0], [0.8, 1.25]) == "1.02x (0.80-1.25x over 2 turns), within this machine's noise"
    slower = "0.85x (0.80-0.91x over 2 turns): slower than plain NumPy in every turn"
    assert demo.speedup([1.0, 1.0], [1.1, 1.25]) == slower


def test_no_speedup_is_shown_when_no_call_moved():
    line = demo._comparison(_trace("numpy", "numpy"), "plain NumPy", [2.0] * 5, "through dispatch", [1.0] * 5)
    assert line.startswith("no call moved") and not re.search(r"\d\.\d+x", line)


def test_a_speedup_is_shown_when_a_call_moved():
    line = demo._comparison(_trace("numpy", "torch-cpu"), "plain NumPy", [2.0] * 5, "through dispatch", [1.0] * 5)
    assert line == ("plain NumPy 2000.0 ms, through dispatch 1000.0 ms (medians); "
                    "speed-up 2.00x (2.00-2.00x over 5 turns)")


def test_a_machine_with_numpy_alone_is_told_what_to_install(monkeypatch, capsys, tmp_path):
    import argparse

    from dispatch import targets

    monkeypatch.setenv("DISPATCH_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(targets, "available", lambda: {"numpy": object()})
    monkeypatch.setattr(demo, "_numpy_part", lambda size: print("numpy part"))
    monkeypatch.setattr(demo, "_sklearn_part", lambda: print("sklearn part"))
    with router_restored(History()):  # the demo asks the router's policy: leave it as it was
        assert demo.run(argparse.Namespace(size=10, no_calibrate=True)) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "dispatch demo: targets here: numpy"
    assert out[1].startswith("only NumPy can run these calls here, so every call stays on NumPy: install torch")
