"""Wall-clock timing of one call: warm-up, repeats, median."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable


def measure(
    fn: Callable[[], object],
    sync: Callable[[], None] | None = None,
    *,
    warmup: int = 1,
    repeats: int = 5,
    budget_s: float = 10.0,
) -> list[float]:
    """Seconds per call of ``fn``, after ``warmup`` untimed calls.

    ``sync`` runs before each clock read (a device synchronisation), so queued asynchronous
    work is inside the time it belongs to. Stops after ``repeats`` calls, or earlier once the
    timed calls exceed ``budget_s`` and at least three were made.
    """
    sync = sync or (lambda: None)
    for _ in range(warmup):
        fn()
        sync()
    times: list[float] = []
    for _ in range(repeats):
        sync()
        start = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - start)
        if len(times) >= 3 and sum(times) > budget_s:
            break
    return times


def median(times: list[float]) -> float:
    return statistics.median(times)
