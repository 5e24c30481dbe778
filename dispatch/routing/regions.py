"""Recording a region's calls with their data flow, for the planner (``dispatch.routing.planner``).

``with regions.record() as rec: ...`` records every call dispatch routes inside the block: its
op, the target that ran it and that target's place (device), its seconds (the device waited
for before and after, so each call's time is its own), the bytes it copied between host and
device, the size of its result, and for each input array the call that made it (its producer,
found through views' bases) or, for an array made before the region, where it lived. Small host
calls are recorded too: the block turns the compiled fast path off, as a trace does.

``region_of(recordings, transfer)`` builds a ``planner.Region`` from recordings of one program
run once per target (aligned call by call): each call priced on each place at the fastest
target measured there, less what it spent copying inputs (the region's edges price those).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from dispatch.base.devices import device_of
from dispatch.base.records import Record
from dispatch.routing.live import data_of, recorded, weak
from dispatch.routing.planner import HOST, Region
from dispatch.targets import _staging, engine_of

__all__ = ["RECORDING", "Call", "Recording", "place_of", "record", "region_of"]

RECORDING: list[Recording] = []  # the open recordings: the call path hands them each call (``observe``)


class Call(Record):
    __slots__ = ("op", "target", "place", "seconds", "moved", "out_bytes", "producers")  # noqa: RUF023 - the fields, in order

    def __init__(self, op: str, target: str, place: str, seconds: float, moved: int, out_bytes: int,
                 producers: list[tuple[int, int]]) -> None:
        self.op = op
        self.target = target
        self.place = place
        self.seconds = seconds
        self.moved = moved  # bytes copied between host and device during the call
        self.out_bytes = out_bytes
        self.producers = producers  # (index of the producing call, or -1 - source index; bytes read)


class Recording(Record):
    __slots__ = ("calls", "sources", "_made", "_sources")  # noqa: RUF023 - the fields, in order

    def __init__(self, calls: list[Call] | None = None, sources: list[tuple[str, int]] | None = None) -> None:
        self.calls = [] if calls is None else calls
        self.sources = [] if sources is None else sources  # arrays made before the region: (place, bytes)
        self._made: dict[int, tuple[Any, int]] = {}  # id(native) -> (weakref, index)
        self._sources: dict[int, tuple[Any, int]] = {}

    def seconds(self) -> float:
        return sum(c.seconds for c in self.calls)


def place_of(target: Any) -> str:
    """The place a target runs on: ``"host"`` for NumPy and torch-cpu, else its device."""
    device = target.device
    return HOST if device.is_host else str(device)


def _producer(rec: Recording, native: Any, nbytes: int, place: str) -> int:
    found = recorded(native, rec._made, rec._sources)
    if found is not None:
        return found
    index = -1 - len(rec.sources)
    rec.sources.append((place, nbytes))
    rec._sources[id(native)] = (weak(native), index)
    return index


def observe(op: Any, inputs: Any, target: Any, run: Callable[[], Any]) -> Any:
    """Run one call for the open recordings, timed on its own, and record it."""
    engines = {target}
    for a in inputs.arrays:
        data = data_of(a)
        if type(data) is not np.ndarray:
            engines.add(engine_of(data))
    for e in engines:
        e.synchronize()
    before = sum(_staging.moved().values())
    start = time.perf_counter()
    result = run()
    target.synchronize()
    seconds = time.perf_counter() - start
    moved = sum(_staging.moved().values()) - before
    out = data_of(result)
    out_bytes = int(getattr(out, "nbytes", 0) or 0)
    for rec in RECORDING:
        producers = []
        for a in inputs.arrays:
            data = data_of(a)
            nbytes = int(getattr(data, "nbytes", 0) or 0)
            where = HOST if type(data) is np.ndarray else _device_place(data)
            producers.append((_producer(rec, data, nbytes, where), nbytes))
        rec.calls.append(Call(op.name, target.name, place_of(target), seconds, moved, out_bytes, producers))
        if hasattr(out, "shape"):
            rec._made[id(out)] = (weak(out), len(rec.calls) - 1)
    return result


def _device_place(native: Any) -> str:
    device = device_of(native)
    return HOST if device.is_host else str(device)


@contextmanager
def record() -> Iterator[Recording]:
    """Record the calls made inside the block (see the module's doc)."""
    from dispatch import tracing  # here: the call path loads this module, and only a recording opens a trace

    rec = Recording()
    RECORDING.append(rec)
    try:
        with tracing.trace(aggregate=True):  # (the fast path off: every call reaches the call path)
            yield rec
    finally:
        RECORDING.remove(rec)


LOOKAHEAD = 8  # calls skipped at most, on either side, to find the two runs in step again


def align(reference: list[str], other: list[str]) -> dict[int, int]:
    """Which call of ``other`` is each call of ``reference`` (by op, in order): the same program
    under another target makes a few calls more or fewer (a scalar's division made an array
    call on a device, a copy before a write), so the runs are matched greedily, skipping the
    fewest calls on either side that puts them in step again (linear in their length)."""
    matched: dict[int, int] = {}
    i = j = 0
    while i < len(reference) and j < len(other):
        if reference[i] == other[j]:
            matched[i] = j
            i, j = i + 1, j + 1
            continue
        for k in range(1, LOOKAHEAD + 1):
            if j + k < len(other) and other[j + k] == reference[i]:
                j += k
                break
            if i + k < len(reference) and reference[i + k] == other[j]:
                i += k
                break
        else:
            i, j = i + 1, j + 1
    return matched


def region_of(recordings: dict[str, Recording], transfer: Callable[[str, str, int], float],
              reference: str | None = None) -> Region:
    """The region of a program recorded once per target (``{target name: recording}``, its
    calls matched to the reference's by ``align``): each call priced on each place at the
    fastest target measured there, less the copies it made (priced by ``transfer``); a call
    another target's run did not make is not priced there. The data flow, the sources (fixed
    where they lived) and the reads on the host at the end (each result no call read) are
    ``reference``'s recording's (the first one's by default). A recording matching under half
    of the reference's calls is another program: ``ValueError``."""
    if not recordings:
        raise ValueError("no recording to make a region of")
    ref = recordings[reference] if reference is not None else next(iter(recordings.values()))
    ref_ops = [c.op for c in ref.calls]
    matches = {}
    for name, rec in recordings.items():
        matches[name] = align(ref_ops, [c.op for c in rec.calls]) if rec is not ref else None
        if matches[name] is not None and 2 * len(matches[name]) < len(ref_ops):
            raise ValueError(f"the recordings differ: {name}'s run matches {len(matches[name])} of "
                             f"{len(ref_ops)} calls")
    n = len(ref.calls)
    nsrc = len(ref.sources)
    prices: list[dict[str, float]] = [{} for _ in range(nsrc + n)]
    fixed: dict[int, str] = {}
    for s, (place, _) in enumerate(ref.sources):
        fixed[s] = place
        prices[s] = {place: 0.0}
    for name, rec in recordings.items():
        match = matches[name]
        for i in range(n):
            if match is not None and i not in match:
                continue
            c = rec.calls[i if match is None else match[i]]
            copies = transfer(HOST, c.place, c.moved) if c.moved and c.place != HOST else 0.0
            own = max(c.seconds - copies, 0.0)
            mine = prices[nsrc + i]
            mine[c.place] = min(own, mine.get(c.place, own))
    edges = []
    read = set()
    for i, c in enumerate(ref.calls):
        for producer, nbytes in c.producers:
            j = nsrc + producer if producer >= 0 else -1 - producer
            edges.append((j, nsrc + i, nbytes))
            read.add(j)
    sinks = [nsrc + i for i, c in enumerate(ref.calls) if nsrc + i not in read and c.out_bytes]
    for j in sinks:  # each result no call read: read on the host after the region
        prices.append({HOST: 0.0})
        fixed[len(prices) - 1] = HOST
        edges.append((j, len(prices) - 1, ref.calls[j - nsrc].out_bytes))
    labels = [f"source {s}" for s in range(nsrc)] + [f"{i}: {c.op}" for i, c in enumerate(ref.calls)]
    labels += ["host read"] * len(sinks)
    return Region(prices, edges, transfer, fixed, labels)
