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
  it). The cut is a maximum flow by Dinic's algorithm (``_source_side``), on capacities in whole
  units so that it is exact;
- more places: the exact cut of the host against each device, the cheapest kept, then local
  refinement (each call moved to the place that lowers the total most, until none does).

``Planner`` caches a plan per region key (its calls' sites, ops and sizes) so that a loop plans
once, and drops it when measured times disagree with the prices it was made from.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Sequence

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
    host_side = _source_side(*_graph(region, device))
    placement = [HOST if i in host_side else device for i in range(len(region.prices))]
    return placement, cost_of(region, placement)


def _graph(region: Region, device: str) -> tuple[int, list[tuple[int, int, int]], int, int]:
    """The region as an s-t graph whose minimum cut is its cheapest placement over the host (the
    source's side) and ``device``: ``(nodes, edges (u, v, capacity), s, t)``, nodes ``0..n-1`` the
    calls. Capacities are whole units, a billionth of the finite total each, so that the flow is
    exact, as a float sum is not; an edge the cut must not pass is larger than all of them."""
    n = len(region.prices)
    edges: list[tuple[int, int, float]] = []  # seconds; inf where the cut must not pass

    def edge(u: int, v: int, c: float) -> None:
        if c > 0.0:
            edges.append((u, v, c))

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
    finite = sum(c for _, _, c in edges if c != math.inf)
    unit = max(finite / 1e9, 1e-18)
    big = int(finite / unit) + 2
    return nodes, [(u, v, big if c == math.inf else round(c / unit)) for u, v, c in edges], s, t


def _source_side(nodes: int, edges: list[tuple[int, int, int]], s: int, t: int) -> set[int]:
    """The nodes on the source's side of a minimum s-t cut: those the residual graph of a maximum
    flow (Dinic's algorithm) reaches from ``s``. Written here rather than taken from
    ``scipy.sparse.csgraph``, whose import costs a fresh process 0.07-0.33 s (a region of 50 calls
    plans in about 2 ms here, a chain of ``live.MAX_CALLS`` in about 70 ms, on the 2-core machine),
    and which a GPU install without scikit-learn lacks."""
    out: list[list[int]] = [[] for _ in range(nodes)]  # arcs leaving each node; arc a ^ 1 is a's reverse
    head: list[int] = []
    cap: list[int] = []
    for u, v, c in edges:
        if c > 0:
            out[u].append(len(head))
            head.append(v)
            cap.append(c)
            out[v].append(len(head))
            head.append(u)
            cap.append(0)
    while True:
        level = [-1] * nodes  # breadth-first levels over arcs with room left
        level[s] = 0
        queue = [s]
        for u in queue:
            below = level[u] + 1
            for a in out[u]:
                v = head[a]
                if level[v] < 0 and cap[a]:
                    level[v] = below
                    queue.append(v)
        if level[t] < 0:
            return {v for v in range(nodes) if level[v] >= 0}
        nxt = [0] * nodes  # each node's next arc to try in this phase
        path: list[int] = []  # arcs from s to u, each one level down
        u = s
        while True:  # a blocking flow, by paths found depth first (no recursion: paths may be long)
            if u == t:
                pushed = min([cap[a] for a in path])
                first = len(path)
                for k, a in enumerate(path):
                    cap[a] -= pushed
                    cap[a ^ 1] += pushed
                    if k < first and not cap[a]:
                        first = k
                del path[first:]  # on from the first arc it filled
                u = head[path[-1]] if path else s
                continue
            arcs, i, below = out[u], nxt[u], level[u] + 1
            end = len(arcs)
            while i < end:
                a = arcs[i]
                if cap[a] and level[head[a]] == below:
                    break
                i += 1
            nxt[u] = i
            if i < end:
                path.append(a)
                u = head[a]
            elif u == s:
                break
            else:  # a dead end: back one arc, and that arc is not tried again in this phase
                u = head[path.pop() ^ 1]
                nxt[u] += 1


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

