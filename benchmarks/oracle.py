"""A true oracle for a program: the placement of its calls that minimises its total time over
its recorded call graph, from measured per-call costs and measured transfers.

The program is run once per target, that target forced for the whole run, with every call
recorded (``dispatch.routing.regions``: each call timed on its own, the device waited for, its
inputs' producers, the bytes it copied). The recordings, aligned call by call, make one region:
each call priced on each place (the host, a device) at the fastest target measured there, less
the copies it made; each array it makes an edge to the calls that read it, priced by the bus
measured here (``transfer_model``). The planner's exact cut (host against one device; a cut per
device and refinement for more) gives the cheapest placement of that graph.

The oracle's time is the plan's total plus what the program spends outside its calls (its own
Python, printing), taken as plain NumPy's run less its recorded calls (none, where the recorded
calls sum to more: timing each call on its own costs a few microseconds a call); or, where it is
less, a whole run with one target forced, as measured beside it: running every call on one
target is a placement of the graph too, and a recorded run prices a loop of small calls at what
recording each costs, over what the run itself takes. It is an optimistic bound: each call's
price is the least of single recorded runs, and reads of device results that are not calls
(``float(x)``, printing) are priced only at the end of the program.
Runs under other targets make a few calls more or fewer (a scalar's division becomes a device
call); they are matched to NumPy's call by call (``regions.align``), and a call one target's run
did not make is not priced there. On a machine without a device every place is the host, and
the oracle is the program with each call on the fastest host target.
"""

from __future__ import annotations

import contextlib
import io
import time
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from dispatch.routing import planner, regions
from dispatch.routing.planner import HOST


def _timed_copy(fn: Callable[[], Any], sync: Callable[[], None]) -> float:
    best = float("inf")
    for _ in range(5):
        sync()
        start = time.perf_counter()
        fn()
        sync()
        best = min(best, time.perf_counter() - start)
    return best


def _bus(target: Any, place: str) -> dict[tuple[str, str], tuple[float, float]]:
    """(latency, bytes per second) each way between the host and ``target``'s device."""
    small, large = np.ones(1), np.ones(4 << 20)
    t_small = _timed_copy(lambda: target.from_host(small), target.synchronize)
    t_large = _timed_copy(lambda: target.from_host(large), target.synchronize)
    d_small, d_large = target.from_host(small), target.from_host(large)
    b_small = _timed_copy(lambda: target.to_host(d_small), target.synchronize)
    b_large = _timed_copy(lambda: target.to_host(d_large), target.synchronize)
    return {(HOST, place): (t_small, max(large.nbytes / max(t_large - t_small, 1e-9), 1e6)),
            (place, HOST): (b_small, max(large.nbytes / max(b_large - b_small, 1e-9), 1e6))}


def transfer_model(target_names: list[str]) -> Callable[[str, str, int], float]:
    """Seconds to copy ``nbytes`` between places, measured here: per device, the first target
    on it copies one element and 32 MiB each way (latency + bytes / bandwidth)."""
    import dispatch

    rates: dict[tuple[str, str], tuple[float, float]] = {}
    for name in target_names:
        target = dispatch.targets.probe(name)
        if target is None or target.device.is_host:
            continue
        place = regions.place_of(target)
        if (HOST, place) not in rates:
            rates.update(_bus(target, place))

    def seconds(src: str, dst: str, nbytes: int) -> float:
        if src == dst:
            return 0.0
        if (src, dst) not in rates:  # device to device: through the host
            return seconds(src, HOST, nbytes) + seconds(HOST, dst, nbytes)
        latency, bandwidth = rates[(src, dst)]
        return latency + nbytes / bandwidth

    seconds.rates = rates  # type: ignore[attr-defined]
    return seconds


def record(routed_main: Callable[..., None], size: list[str], target_names: list[str]) -> dict[str, Any]:
    """One recorded run per target (the program's dispatch main under ``dispatch.using``)."""
    import dispatch

    recordings = {}
    for name in target_names:
        buf = io.StringIO()
        try:
            with dispatch.using(name), regions.record() as rec, contextlib.redirect_stdout(buf), \
                    warnings.catch_warnings():
                warnings.simplefilter("ignore")
                routed_main(*(int(s) for s in size))
        except Exception:
            continue
        recordings[name] = rec
    return recordings


def oracle(recordings: dict[str, Any], transfer: Callable[[str, str, int], float],
           numpy_run_seconds: float | None, whole: dict[str, float] | None = None) -> dict[str, Any]:
    """The oracle's plan over the recorded graph, and its time (see the module's doc); ``whole``:
    the measured time of the program with each target forced for the whole run."""
    if "numpy" not in recordings:
        return {"error": "no NumPy recording"}
    reference = [c.op for c in recordings["numpy"].calls]
    usable = {n: r for n, r in recordings.items()
              if n == "numpy" or 2 * len(regions.align(reference, [c.op for c in r.calls])) >= len(reference)}
    region = regions.region_of(usable, transfer, reference="numpy")
    made = planner.plan(region)
    calls = recordings["numpy"].seconds()
    # what the program spends outside its calls (its own Python, printing): NumPy's run less its calls
    outside = max((numpy_run_seconds or calls) - calls, 0.0)
    seconds = outside + made.seconds
    on: dict[str, int] = {}
    for i, place in enumerate(made.placement):
        if i not in region.fixed:
            on[place] = on.get(place, 0) + 1
    method = made.method
    if whole:
        target, forced_s = min(whole.items(), key=lambda kv: kv[1])
        if forced_s < seconds:  # the whole run on one target: its own run measured it
            seconds, method, on = forced_s, f"{target} for the whole run", {target: len(reference)}
    return {"seconds": seconds, "plan_seconds": made.seconds, "calls": len(region.prices),
            "method": method, "placed": on, "targets": sorted(usable), "numpy_calls_seconds": calls,
            "left_out": sorted(set(recordings) - set(usable)),
            "recorded_seconds": {n: r.seconds() for n, r in recordings.items()}}
