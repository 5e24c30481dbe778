"""Placement of a region's calls over its data flow: where each call runs, transfers included.

A region is a run of calls (a loop body, the calls since the program last read a result on the
host) as a graph: each call has a price on each place that can run it (a place is a device:
the host, ``cuda:0``...), and each array a call makes is an edge to the calls that read it. A
placement's cost is the calls' prices where they run, plus one copy of each array to each other
place that reads it (a copy made once is kept: ``dispatch.arrays.mirrors``). ``plan`` finds
the cheapest placement:

- host and one device: exactly, as a minimum s-t cut (a call on the device side pays its device
  price, on the host side its host price; an array read on the other side pays one copy, which
  an auxiliary node per array and direction makes a single cut edge however many calls read
  it). The cut is ``scipy.sparse.csgraph.maximum_flow`` (compiled, and SciPy is already
  installed wherever dispatch's scikit-learn support or its benchmarks run; networkx, also
  present with torch, is pure Python and two orders slower on regions of a few thousand calls);
- more places: the exact cut of the host against each device, the cheapest kept, then local
  refinement (each call moved to the place that lowers the total most, until none does).

``Planner`` caches a plan per region key (its calls' sites, ops and sizes) so that a loop plans
once, and drops it when measured times disagree with the prices it was made from.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Sequence

import numpy as np

from dispatch.base.records import Record

__all__ = ["HOST", "Plan", "Planner", "Region", "cost_of", "describe", "plan"]

HOST = "host"  # the host's place name in a region


class Region(Record):
    """A region's calls as a graph.

    ``prices[i]``: seconds call ``i`` takes on each place that can run it. ``edges``:
    ``(producer, consumer, nbytes)``, ``producer < consumer``, ``nbytes`` the size of the array
    the producer made (the largest given, where its edges differ). ``fixed``: calls whose place is
    given (data that lives somewhere before the region, a read on the host after it).
    ``transfer(src, dst, nbytes)``: seconds to copy ``nbytes`` from one place to another.
    """

    __slots__ = ("prices", "edges", "transfer", "fixed", "labels")  # noqa: RUF023 - the fields, in order

    def __init__(self, prices: list[dict[str, float]], edges: list[tuple[int, int, int]],
                 transfer: Callable[[str, str, int], float], fixed: dict[int, str] | None = None,
                 labels: list[str] | None = None) -> None:
        self.prices = prices
        self.edges = edges
        self.transfer = transfer
        self.fixed = {} if fixed is None else fixed
        self.labels = [] if labels is None else labels

    def places(self) -> list[str]:
        found = dict.fromkeys([HOST])
        for p in self.prices:
            found.update(dict.fromkeys(p))
        found.update(dict.fromkeys(self.fixed.values()))
        return list(found)

    def readers(self) -> dict[int, dict[int, int]]:
        """producer -> {consumer: nbytes} (one edge per pair: the largest, where a call reads an array twice)."""
        out: dict[int, dict[int, int]] = {}
        for j, i, b in self.edges:
            mine = out.setdefault(j, {})
            mine[i] = max(b, mine.get(i, 0))
        return out


class Plan(Record):
    """Where each call runs, what that costs, and what it saves against every call on the host."""

    __slots__ = ("placement", "seconds", "host_seconds", "method", "key", "number", "served", "region")  # noqa: RUF023 - the fields, in order

    def __init__(self, placement: list[str], seconds: float, host_seconds: float, method: str, key: Hashable = None,
                 number: int = 0, served: int = 0, region: Region | None = None) -> None:
        self.placement = placement
        self.seconds = seconds
        self.host_seconds = host_seconds
        self.method = method
        self.key = key
        self.number = number  # the planner's count when it was made: what a trace names it by
        self.served = served  # times the cache served it
        self.region = region  # the region it was made for (``Planner.plan_for``): priced again as measured

    @property
    def saving(self) -> float:
        return self.host_seconds - self.seconds


def _price(region: Region, i: int, place: str) -> float:
    fixed = region.fixed.get(i)
    if fixed is not None:
        return 0.0 if place == fixed else math.inf
    return region.prices[i].get(place, math.inf)


def cost_of(region: Region, placement: Sequence[str]) -> float:
    """A placement's total: each call's price where it runs, one copy of each array to each
    other place that reads it."""
    total = sum(_price(region, i, p) for i, p in enumerate(placement))
    for j, readers in region.readers().items():
        src, nbytes = placement[j], max(readers.values())  # the array j made: its size
        total += sum(region.transfer(src, dst, nbytes) for dst in {placement[i] for i in readers} - {src})
    return total


def _cut(region: Region, device: str) -> tuple[list[str], float]:
    """The exact cheapest placement of the region over the host and ``device`` (a minimum s-t cut)."""
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import breadth_first_order, maximum_flow

    n = len(region.prices)
    src, dst, cap = [], [], []  # seconds; inf where the cut must not pass

    def edge(u: int, v: int, c: float) -> None:
        if c > 0.0:
            src.append(u)
            dst.append(v)
            cap.append(c)

    s, t = n, n + 1
    nodes = n + 2
    for i in range(n):
        edge(s, i, _price(region, i, device))  # cut where i is on the device's side
        edge(i, t, _price(region, i, HOST))  # cut where i is on the host's side
    for j, readers in region.readers().items():
        nbytes = max(readers.values())
        to_device, to_host = nodes, nodes + 1
        nodes += 2
        edge(j, to_device, region.transfer(HOST, device, nbytes))  # j on the host, a reader on the device
        edge(to_host, j, region.transfer(device, HOST, nbytes))  # j on the device, a reader on the host
        for i in readers:
            edge(to_device, i, math.inf)
            edge(i, to_host, math.inf)
    finite = [c for c in cap if c != math.inf]
    unit = max(sum(finite) / 1e9, 1e-9)  # seconds per integer unit: the sum fits in int32 with room
    big = int(sum(finite) / unit) + 2
    ints = np.array([big if c == math.inf else max(round(c / unit), 0) for c in cap], dtype=np.int32)
    graph = csr_matrix((ints, (np.array(src), np.array(dst))), shape=(nodes, nodes))
    graph.sum_duplicates()
    flow = maximum_flow(graph, s, t).flow
    residual = (graph - flow).tocsr()
    residual.data[residual.data < 0] = 0
    residual.eliminate_zeros()
    host_side = set(breadth_first_order(residual, s, directed=True, return_predecessors=False).tolist())
    placement = [HOST if i in host_side else device for i in range(n)]
    return placement, cost_of(region, placement)


def _refine(region: Region, placement: list[str], places: list[str]) -> tuple[list[str], float]:
    """Move single calls to the place that lowers the total most, until no move does."""
    best = cost_of(region, placement)
    improved = True
    while improved:
        improved = False
        for i in range(len(placement)):
            if i in region.fixed:
                continue
            here = placement[i]
            for p in places:
                if p == here or _price(region, i, p) == math.inf:
                    continue
                placement[i] = p
                total = cost_of(region, placement)
                if total < best - 1e-12:
                    best, here, improved = total, p, True
                else:
                    placement[i] = here
    return placement, best


def plan(region: Region) -> Plan:
    """The cheapest placement of ``region`` (exact for the host and one device)."""
    n = len(region.prices)
    all_host = [HOST] * n
    for i, p in region.fixed.items():
        all_host[i] = p
    host_seconds = cost_of(region, all_host)
    devices = [p for p in region.places() if p != HOST]
    if not devices or n == 0:
        return Plan(all_host, host_seconds, host_seconds, "host only")
    cuts = [_cut(region, d) for d in devices]
    placement, seconds = min(cuts, key=lambda c: c[1])
    if len(devices) == 1:
        return Plan(placement, seconds, host_seconds, "exact cut")
    placement, seconds = _refine(region, list(placement), [HOST, *devices])
    return Plan(placement, seconds, host_seconds, f"cut per device ({len(devices)}) and refinement")


class Planner:
    """Plans cached per region key: a region met again is served its plan, and planned afresh
    once measured times stray from the prices by more than ``tolerance`` (a factor)."""

    def __init__(self, tolerance: float = 1.5) -> None:
        self.tolerance = tolerance
        self.plans: dict[Hashable, Plan] = {}
        self.planned = 0

    def plan_for(self, key: Hashable, region: Region | Callable[[], Region]) -> Plan:
        """The plan of the region ``key`` names: cached, else made (``region`` may be a function
        that builds it, called only then)."""
        found = self.plans.get(key)
        if found is not None:
            found.served += 1
            return found
        built = region() if callable(region) else region
        made = plan(built)
        made.key, made.region = key, built
        self.plans[key] = made
        self.planned += 1
        made.number = self.planned
        return made

    def strays(self, key: Hashable, seconds: float) -> bool:
        """Whether a run of region ``key`` that took ``seconds`` strays from what its plan expected
        by more than the tolerance."""
        found = self.plans.get(key)
        if found is None or found.seconds <= 0.0:
            return False
        ratio = seconds / found.seconds
        return ratio > self.tolerance or ratio < 1.0 / self.tolerance

    def forget(self, key: Hashable) -> None:
        """Drop the plan of region ``key``: what it was made for no longer holds."""
        self.plans.pop(key, None)

    def clear(self) -> None:
        self.plans.clear()


def describe(p: Plan, index: int) -> str:
    """What a trace says of a call the plan placed (the plan by its number, not its key: a
    region's key spells out every call of it)."""
    n = len(p.placement)
    return f"plan {p.number} ({p.method}, {n} call{'s' * (n != 1)}): call {index} on {p.placement[index]}, " \
           f"the region expected to save {p.saving * 1e3:.3g} ms"

