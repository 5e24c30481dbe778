"""The model's estimates against measured runs of the examples' calls: within 3x either way.

Estimates and measurements must see the same machine under the same load: NumPy's quick
calibration is measured first, in this process, and the calls run right after it, both on one
BLAS thread (on a busy machine a threaded BLAS stalls at every barrier, 10-100x). Where the
load average exceeds the cores, or the calibration finds the machine too busy to measure
steadily, the test skips: other processes then hold the memory bus a large call streams over,
and no estimate of this machine holds. Only calls whose best of three runs takes over
``FLOOR`` are compared, far above the timer's and the scheduler's noise;
``benchmarks/estimates.py`` reports every call with its figures.
"""

from __future__ import annotations

import os
import tempfile

import pytest
from helpers import router_restored
from threadpoolctl import threadpool_limits

from benchmarks.estimates import WITHIN, compare, recorded_calls
from dispatch import measure
from dispatch.routing import calibration
from dispatch.routing.history import History

FLOOR = 5e-3  # seconds
EXAMPLES = ("examples/least_squares.py", "examples/numpy_workload.py")

# A timing check, so not part of the default run (timed tests fail on a busy machine whatever the
# model says): DISPATCH_TIMED=1 runs it, on a quiet machine; benchmarks/estimates.py reports the figures.
pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(os.environ.get("DISPATCH_TIMED") != "1", reason="a timing check: DISPATCH_TIMED=1")]


@pytest.fixture(scope="module")
def calls() -> list[dict]:
    if _overloaded():
        pytest.skip(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores: too busy to time calls")
    with tempfile.TemporaryDirectory() as folder:
        return [call for script in EXAMPLES for call in recorded_calls(script, folder)]


def _overloaded() -> bool:
    """More runnable processes than cores, this last minute: others hold the cores and memory."""
    return hasattr(os, "getloadavg") and os.getloadavg()[0] > (os.cpu_count() or 1)


def test_estimates_are_within_3x_of_the_measured_calls(calls, tmp_path, monkeypatch):
    monkeypatch.setenv("DISPATCH_CACHE_DIR", str(tmp_path))
    with threadpool_limits(1), router_restored(History()):
        cal = measure.calibrate(quick=True, progress=False, save=False, only=("numpy",))
        if (note := calibration.busy_note()) is not None:  # its figures would not hold a minute later
            pytest.skip(f"too busy to time calls: {note}")
        rows = compare(calls, cal, FLOOR, repeat=3, targets=["numpy"])
    ops = {row["op"] for row in rows}
    assert {"linalg.lstsq", "matmul"} <= ops, f"too few calls over {FLOOR * 1e3:g} ms: {sorted(ops)}"
    off = [f"{r['op']} {r['shapes']}: estimated {r['estimate'] * 1e3:.2f} ms, measured {r['measured'] * 1e3:.2f} ms"
           for r in rows if not 1 / WITHIN <= r["ratio"] <= WITHIN]
    assert not off, "\n".join(off)
