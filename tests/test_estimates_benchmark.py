"""``benchmarks.estimates``: which profiled calls it compares, and how it counts those whose
estimate lies within 3x of the measured time (the figures themselves are the benchmark's)."""

from __future__ import annotations

import pytest

from benchmarks.estimates import ratios, within


def _call(op: str, target: str, seconds: float, estimates: dict) -> dict:
    return {"site": "app.py:1", "op": op, "target": target, "count": 2, "seconds": seconds, "estimates": estimates}


def test_ratios_compare_each_call_with_the_estimate_for_its_own_target():
    profile = {"calls": [
        _call("matmul", "numpy", 0.010, {"numpy": 0.020, "torch-cpu": 0.001}),  # x2 on its target
        _call("sum", "torch-cpu", 0.004, {"numpy": 0.004, "torch-cpu": 0.040}),  # x10
        _call("exp", "numpy", 0.0005, {"numpy": 0.0005}),  # under the 1 ms floor
        _call("zeros", "numpy", 0.002, {}),  # no estimate: creation, size unknown
    ]}
    rows = ratios(profile, min_seconds=1e-3)
    assert [(r["op"], r["target"]) for r in rows] == [("matmul", "numpy"), ("sum", "torch-cpu")]
    assert [r["ratio"] for r in rows] == pytest.approx([2.0, 10.0])
    assert within(rows) == 1
    assert within([{"ratio": 1 / 3}, {"ratio": 3.0}, {"ratio": 0.3}]) == 2  # 3x either way, inclusive
