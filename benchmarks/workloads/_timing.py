"""Timing: warm-up, repeats, median; several contenders interleaved.

The clock is wall time (``time.perf_counter``) unless told otherwise. ``CLOCKS["cpu"]``
(``time.process_time``, the process's CPU seconds) is for one-thread runs on a shared machine:
it leaves out the time other processes hold the cores, which wall time counts (their use of
shared caches and memory bandwidth still shows). With several threads it adds their times up,
so it is no longer a duration.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Mapping

Call = Callable[[], object]
Sync = Callable[[], None]
CLOCKS: dict[str, Callable[[], float]] = {"wall": time.perf_counter, "cpu": time.process_time}


def _noop() -> None:
    pass


def turns(names: list[str], i: int) -> list[str]:
    """The order of round ``i``, from a Williams design: over ``len(names)`` rounds (twice that
    for an odd count) each contender runs equally often in each place and right after each other
    one. In a fixed order the same contender would always open a round, right after the previous
    round's last one and its synchronisation, and each would always follow the same one, which
    may leave it a warm cache or a cold one: rotating the order alone, the second of seven
    followed the first in six rounds of seven. With an odd count the first ``len(names)`` rounds
    are the design's first half: each place once, and each contender next to each other one
    twice, in either order."""
    n = len(names)
    if n == 0:
        return []
    offsets, low, high = [0], 1, n - 1  # 0, 1, n-1, 2, n-2...: each difference mod n once
    while len(offsets) < n:
        offsets.append(low)
        low += 1
        if len(offsets) < n:
            offsets.append(high)
            high -= 1
    r = i % (2 * n if n % 2 else n)
    order = [names[(k + r) % n] for k in offsets]
    return order[::-1] if r >= n else order  # an odd count: the second half mirrors the first


def _timed(fn: Call, sync: Sync, clock: Callable[[], float]) -> float:
    sync()
    start = clock()
    fn()
    sync()  # queued device work belongs to the call that queued it
    return clock() - start


def measure(
    fn: Call,
    sync: Sync | None = None,
    *,
    warmup: int = 1,
    repeats: int = 5,
    budget_s: float = 10.0,
    clock: str = "wall",
) -> list[float]:
    """Seconds per call of ``fn``, after ``warmup`` untimed calls.

    ``sync`` runs before each clock read (a device synchronisation). Stops after ``repeats``
    calls, or earlier once the timed calls exceed ``budget_s`` and at least three were made.
    """
    calls = {"fn": (fn, sync)}
    return measure_interleaved(calls, warmup=warmup, repeats=repeats, budget_s=budget_s, clock=clock)["fn"]


def measure_interleaved(
    calls: Mapping[str, tuple[Call, Sync | None]],
    *,
    warmup: int = 1,
    repeats: int = 5,
    budget_s: float = 10.0,
    clock: str = "wall",
) -> dict[str, list[float]]:
    """Like ``measure`` for several contenders, taking turns call by call.

    Round-robin repeats expose every contender to the same background load, so their ratio
    stays meaningful on a shared or throttling machine where timings drift over a run; the
    rounds' orders are balanced (``turns``).
    ``budget_s`` bounds each contender's timed total.
    """
    read = CLOCKS[clock]
    plan = {name: (fn, sync or _noop) for name, (fn, sync) in calls.items()}
    for fn, sync in plan.values():
        for _ in range(warmup):
            fn()
            sync()
    times: dict[str, list[float]] = {name: [] for name in plan}
    for i in range(repeats):
        for name in turns(list(plan), i):
            fn, sync = plan[name]
            times[name].append(_timed(fn, sync, read))
        if len(times[next(iter(plan))]) >= 3 and max(sum(t) for t in times.values()) > budget_s:
            break
    return times


def median(times: list[float]) -> float:
    return statistics.median(times)
