"""Live placement: the region a program is running, planned as a whole (``planner.plan``).

On a machine with a calibrated device, the router records the calls of the region running
now: each routed call with its key, its inputs' producers (the earlier call of the region that
made them, or a source: an array made before the region, where it lives) and its price on each
place (the calibration's model, pulled toward what the history measured). A region ends where
the program reads an array on the host (``__array__``: ``item``, ``float``, ``tolist``, a NumPy
call on it), or where a loop body starts again (a call of a kind the region made before,
followed by one of the kind that came after it there: the region's first kind, or a later one's
after a prologue, ``blur``'s weighted sum of slices after its ``pad``; for a body of one call,
one of its kind on the same producers). A region
met again (a loop body) is planned once (``Planner.plan_for``, its plan cached by the region's
key) and its plan installed as the decisions of its kinds of call: each kind runs where the
plan put it, on the engine priced cheapest there. A region's key names its calls and their data
flow, not where their data is: the region the plan makes (the same calls, their data where the
plan put it) is the same region, one plan in force for it, its kinds of call as they run there
added to the plan's decisions; planned again (``REVISIONS`` times at most) where its sources
have moved since it was planned. A kind of call a plan puts on a device is kept, with what one
pass of its region saves, for the script's next run (``startup.planned``); in a script whose run
is kept, a region met once is placed for that alone (``_foresee``; one an engine's arrival cut
short, with the calls after it), as a straight-line program meets each region once a run. Once planned or
served, the recording stops: the plan's decisions serve the loop through the decision cache and
the memo, at no cost per call. A kind of call that no recorded region made, or that a plan made
with its data elsewhere, brings the recording back.

A plan is revised when measured times stray from its prices: each timing of a planned call
re-prices the plan (``Planner.strays``). The region it was made for is then planned again with
the newer prices (``_repriced``): the same placement, and the plan stands at those prices; another,
and the plan is dropped, its region recorded and planned again, from where its data is, the
next time it is met.

Copies are priced as the planner prices them, once per array and place; a host source that a
device keeps a copy of (``dispatch.arrays.mirrors``, through ``cost.mirrored``) is free to read there, and one it will
keep (large enough, the program's own) is charged its copy spread over the times the region
was met: a loop copies it once.

Regions are recorded while a device's engine is down too (unless its library failed), so
that what a plan would save there counts toward the engine's start-up
(``dispatch.routing.startup``: the engine comes up in the background once the process has
forgone that much, or at once for a region one pass of which repays it). A plan brings up no
engine its region cannot pay for: an engine that is down is left out of the region (its calls
lose the place where it would run them; calls another engine runs there keep it) unless what it
adds to one pass of the region, over the best plan without it, is priced above its start-up, as
a single call's saving must be; what it would have added is noted (``startup.note``), for the
script's later runs and toward bringing it up. So CuPy up, torch-cuda is priced for the calls
only it would run, not for what CuPy saves beside them; and with both down, a device's calls
are priced on the one cheaper to bring up (``_rank``), which is credited with what the device
saves (split by which is cheaper at each call, each would be credited only with what it adds
over the other). Where even each of its calls' whole gain,
copies left out, could not pay, no cut is made: the noted saving is that of the region run
there whole, or only its calls that gain, copies in and out included, which the best plan's is
at least. Priced one at a time, each call would count only what it saves with its own copies; a
region counts what its calls save together, their data kept on the device between them. Such
a plan is made again once the engine is up.

Calls no plan decides are priced one at a time by the cost policy: each target's price with
the copies of inputs not already there, and, for host data entering a device, the copy back.
"""

from __future__ import annotations

import weakref
from collections.abc import Hashable
from typing import Any

import numpy as np

from dispatch import targets
from dispatch.base.devices import HOST as HOST_DEVICE
from dispatch.base.devices import device_of
from dispatch.routing import cost, learned, planner, startup
from dispatch.routing.decisions import CallKey, Decision, DecisionKind
from dispatch.routing.history import settled
from dispatch.routing.planner import HOST, Plan, Planner, Region, describe

__all__ = ["MAX_CALLS", "Live", "bases", "data_of", "recorded", "region_key", "weak"]

MAX_CALLS = 512  # a region without a read or a repeat ends here (a plan over more would cost more than it saves)
REVISIONS = 3  # a region planned this many times keeps its last plan: its prices will not settle
# Timings of a plan, each of its calls measured, that found it holding: from then on its calls are
# timed no more (a timing costs a call the Python path, and a device's events or a wait for it).
HELD = 32
SEEN_MAX = 4096  # regions counted at most; a program making more distinct ones starts counting over
COMPUTED_MAX = 4096  # kinds and sizes of call whose compute is priced (``_computed_for``); more start over


class _Node:
    """One recorded call: its key, the producers of its inputs (call index, or ``-1 - source``,
    with the bytes read), its price on each place (seconds, and the engine priced there) and the
    compute its prices came from (``Live._compute``: priced again as measurements come)."""

    __slots__ = ("computed", "key", "out_bytes", "prices", "producers")

    def __init__(self, key: CallKey, producers: list[tuple[int, int]], prices: dict[str, tuple[float, str]],
                 out_bytes: int, computed: tuple | list = ()) -> None:
        self.key, self.producers, self.prices, self.out_bytes = key, producers, prices, out_bytes
        self.computed = computed


class _Planned:
    """A plan in force: its decisions, per key, and the prices it was made from."""

    __slots__ = ("decisions", "held", "made_for", "nodes", "nsrc", "plan", "region_nodes")

    def __init__(self, plan: Plan, nodes: list[tuple[CallKey, str, float]], made_for: Hashable = None) -> None:
        self.plan = plan
        self.nodes = nodes  # (key as the plan runs it, engine, price): what its timings are compared with
        self.decisions: dict[CallKey, Decision] = {}
        self.made_for = made_for  # where the region's sources were, and which call the host read
        self.held = 0  # timings, every call of it measured, that found it holding
        self.region_nodes: list[_Node] = []  # the region's calls as recorded when the plan was made
        self.nsrc = 0  # its sources (the region's first places)

    def settle(self) -> None:
        """Time its calls no more: what they measure would change nothing (but those an engine
        left down for its start-up would save on: they count toward bringing it up)."""
        for key, decision in self.decisions.items():
            decision.sample = startup.priced_out(key)


def _place(device: Any) -> str:
    return HOST if device.is_host else str(device)


def _rank(name: str, seconds: float) -> tuple[bool, float, float]:
    """Which engine a place's price is the price of (the least first): see ``Live._best``."""
    return not startup.coming(name), startup.seconds(name), seconds


def data_of(a: Any) -> Any:
    """A dispatch array's data, or ``a`` itself."""
    return getattr(a, "_engine_array", a)


def bases(native: Any) -> Any:
    """``native`` and the arrays it views (NumPy's and CuPy's ``base``, torch's ``_base``)."""
    seen = 0
    while native is not None and seen < 8:
        yield native
        base = getattr(native, "_base", None) if hasattr(native, "_base") else getattr(native, "base", None)
        native, seen = (base if hasattr(base, "shape") else None), seen + 1


def weak(native: Any) -> Any:
    """A weak reference to ``native``, or one that is always dead where it takes none."""
    try:
        return weakref.ref(native)
    except TypeError:
        return lambda: None


def recorded(native: Any, *tables: dict) -> int | None:
    """The index the first of ``tables`` that knows ``native``, or an array it views, gives it
    (each table: ``id`` -> (weak reference, index)); ``None`` where none does."""
    for table in tables:
        for n in bases(native):
            found = table.get(id(n))
            if found is not None and found[0]() is n:
                return found[1]
    return None


def _note_shares(nodes: list[_Node], name: str, saving: float, gains: dict[int, float]) -> None:
    """Note ``saving``, what one pass of a region would save on ``name``, shared over the calls
    ``gains`` names by their gains; a kind of call met several times in the pass is noted at its
    calls' mean share, so that each call of it counts its part (``startup.forgo``)."""
    total = sum(gains.values()) or 1.0
    shares: dict[CallKey, list[float]] = {}
    for i, gain in gains.items():
        shares.setdefault(nodes[i].key, []).append(saving * gain / total)
    for key, each in shares.items():
        startup.note(key, name, sum(each) / len(each))


def _gains(region: Region, nodes: list[_Node], nsrc: int, place: str, name: str | None = None) -> dict[int, float]:
    """What each call of ``region`` that can run on ``place`` (on engine ``name``, where given)
    saves there against the host, copies left out."""
    return {i: prices[HOST] - prices[place] for i in range(len(nodes))
            if HOST in (prices := region.prices[nsrc + i]) and place in prices
            and (name is None or nodes[i].prices[place][1] == name)}


def _there(region: Region, nsrc: int, place: str, gains: dict[int, float]) -> tuple[float, list[str]]:
    """``region`` placed without a cut: the calls that can run on ``place`` (``gains``, from
    ``_gains``) run there, all of them or only those that gain, whichever is cheaper, copies in
    and out included; (what that saves against every call on the host, the placement)."""
    n = len(region.prices)
    at_host = planner.cost_of(region, [region.fixed.get(j, HOST) for j in range(n)])
    placements = [[region.fixed.get(j, place if (j - nsrc) in gains and (every or gains[j - nsrc] > 0.0) else HOST)
                   for j in range(n)] for every in (True, False)]
    return max((at_host - planner.cost_of(region, p), p) for p in placements)


class _CutShort:
    """The region an engine's arrival cut short, for ``_foresee`` to place whole with the calls
    after it: its calls and sources, and, linked as the later calls read them (while they are
    alive), the later region's sources that an earlier call made (the last to make that memory)
    or that were sources of the earlier calls too."""

    __slots__ = ("links", "nodes", "sources", "tables")

    def __init__(self, nodes: list[_Node], sources: list[tuple[str, int, Any]], made: dict[int, tuple[Any, int]],
                 before: _CutShort | None = None) -> None:
        if before is not None:  # a second arrival: the calls before the first one lead
            k = len(before.nodes)
            nodes, sources, _ = before.joined(nodes, sources, None)
            made = {**before.tables[0], **{key: (ref, index + k) for key, (ref, index) in made.items()}}
        self.nodes, self.sources = nodes, sources
        by_memory: dict[int, tuple[Any, int]] = {}
        for ref, index in made.values():
            if (obj := ref()) is not None:
                *_, root = bases(obj)
                if by_memory.get(id(root), (None, -1))[1] < index:
                    by_memory[id(root)] = (weak(root), index)
        earlier = {id(data): (ref, -1 - s) for s, (_, _, ref) in enumerate(sources) if (data := ref()) is not None}
        self.tables = (by_memory, earlier)
        self.links: dict[int, int] = {}  # id of a later source's reference -> its producer in the joined region

    def link(self, ref: Any, native: Any) -> None:
        """The later region made a source of ``native``, held by ``ref``."""
        found = recorded(native, *self.tables)
        if found is not None:
            self.links[id(ref)] = found

    def joined(self, nodes: list[_Node], sources: list[tuple[str, int, Any]],
               read: int | None) -> tuple[list[_Node], list[tuple[str, int, Any]], int | None]:
        """The earlier calls and ``nodes`` after them as one region: (calls, sources, read)."""
        k = len(self.nodes)
        joined_sources = list(self.sources)
        producer: dict[int, int] = {}  # a later source -> its producer in the joined region
        for s, source in enumerate(sources):
            found = self.links.get(id(source[2]))
            if found is None:
                joined_sources.append(source)
                found = -len(joined_sources)
            producer[s] = found
        later = [_Node(n.key, [(p + k if p >= 0 else producer[-1 - p], nbytes) for p, nbytes in n.producers],
                       n.prices, n.out_bytes, n.computed) for n in nodes]
        return self.nodes + later, joined_sources, None if read is None else read + k


def region_key(nodes: list[_Node]) -> Hashable:
    """What names a region: its kinds of call, each without where its data is (``CallKey.elsewhere``),
    and their producers; the same region whatever place its data has. (Where its sources are,
    and which result the host reads, are what its plan was made for: ``Live.boundary``.)"""
    return tuple((n.key.elsewhere(), tuple(p for p, _ in n.producers)) for n in nodes)


def _sources_read(nodes: list[_Node], sources: list[tuple[str, int, Any]]) -> tuple[list[_Node], list]:
    """The region's calls and the sources they read, renumbered in order: an array made before
    the region that none of its calls reads (the base of a view read on the host) is no part of
    it. So a region met again has its sources where its plan placed them, first, then its calls."""
    read = sorted({-1 - p for n in nodes for p, _ in n.producers if p < 0})
    if len(read) == len(sources):
        return list(nodes), list(sources)
    new = {s: j for j, s in enumerate(read)}
    nodes = [_Node(n.key, [(p if p >= 0 else -1 - new[-1 - p], nbytes) for p, nbytes in n.producers],
                   n.prices, n.out_bytes, n.computed) for n in nodes]
    return nodes, [sources[s] for s in read]


class Live:
    """The router's live regions: recording, planning, the plans in force (see the module)."""

    def __init__(self, router: Any) -> None:
        self.router = router
        self.planner = Planner()
        self.on = False  # a calibrated device whose engine is up or may come up: regions are recorded and planned
        self.placing = False  # one is up: a plan may move calls there
        self.recording = False
        self.nodes: list[_Node] = []
        self._restart: tuple | None = None  # a call of a kind the region made before, just noted (``_confirm``)
        # each kind of call in the region -> the kinds that came right after it (the last two calls' pair not yet)
        self._after: dict[Hashable, set[Hashable]] = {}
        self.sources: list[tuple[str, int, Any]] = []  # arrays made before the region: (place, bytes, weakref)
        self._made: dict[int, tuple[Any, int]] = {}
        self._sources: dict[int, tuple[Any, int]] = {}
        self.seen: dict[Hashable, int] = {}
        self.planned: dict[Hashable, _Planned] = {}  # plan key -> in force
        self.by_key: dict[CallKey, Hashable] = {}  # a planned kind of call -> its plan's key
        self.revisions: dict[Hashable, int] = {}
        self.revised = 0  # plans revised in this process (``revisions`` starts over when the engines change)
        self.repriced = 0  # plans that strayed and stood, priced again as measured (``_repriced``)
        self.last_sources: dict[Hashable, set[int]] = {}  # region key -> ids of its sources when last met
        self.known: set[CallKey] = set()  # kinds of call some recorded region made
        self.planned_kinds: set[Hashable] = set()  # the kinds of call plans made, wherever their data (``elsewhere``)
        self.devices: dict[str, Any] = {HOST: HOST_DEVICE}
        self.unpaid: dict[Hashable, set[str]] = {}  # region key -> engines left down for their start-up
        self._cut_short: _CutShort | None = None  # the region an engine's arrival cut short
        # (kind, sizes and shapes of a call) -> its compute on each target: a loop's calls are priced once
        self._computed: dict[tuple, list[tuple[str, float, Any, CallKey]]] = {}

    # ---- switching ------------------------------------------------------------------------------

    def clear(self, repeats: bool = False) -> None:
        """Forget every region and plan; record from now on where the cost policy routes with a
        calibrated device whose engine is up (a place to plan for: ``placing``; the router learns
        no host floor then) or may come up (what a plan would save there counts toward it).
        ``repeats``: keep how often each region was met, and the arrays it read when last met.
        An engine that came up changes what a plan may do, not which regions repeat: a region
        met before is planned the first time it is met with the engine up (a region met once a
        run would otherwise wait a whole run more)."""
        router = self.router
        devices = router.policies["cost"].transfer_models() if router.policy.name == "cost" else []
        self.placing = any(targets.registry.is_up(model.name) for model in devices)
        self.on = self.placing or any(not startup.up(model.name) for model in devices)  # or one may come up
        self.planner.clear()
        cut_short, self._cut_short = self._cut_short, None
        if repeats and self.recording and self.nodes:  # the region recorded so far was met: an engine
            nodes, sources = _sources_read(self.nodes, self.sources)  # up between two cells finds the last one's
            self._met(nodes, sources)
            if learned.kept_for() is not None:  # a script's next run meets it whole: placed with what follows
                self._cut_short = _CutShort(nodes, sources, self._made, cut_short)
        elif repeats:  # no call since the last arrival: what came before it still leads
            self._cut_short = cut_short
        if not repeats:
            self.seen.clear()
            self.last_sources.clear()
        self.planned.clear()
        self.by_key.clear()
        self.revisions.clear()
        self.known.clear()
        self.planned_kinds.clear()
        self.unpaid.clear()
        self._computed.clear()  # (the calibration's models may be others now)
        self._reset()
        self.recording = self.on

    def arrived(self) -> None:
        """An engine came up: ``clear(repeats=True)``, but a plan whose region, priced again with
        the engines up now, is placed as it was stays in force, its decisions made again (each
        place's engine the cheapest up now): a host engine's arrival (torch-cpu beside CuPy)
        moves no call between places, and dropping every plan cost each loop a pass or more on
        the per-call rules to make the same plans again. A plan whose region left a place out
        (an engine there down for its start-up) is planned again from a recording, as before."""
        kept = []
        for key, planned in self.planned.items():
            nodes = planned.region_nodes
            region = planned.plan.region
            if region is None or not nodes or planned.made_for is None:
                continue
            fresh = [self._best(n.key, n.computed) for n in nodes]
            if any(set(f) - set(region.prices[planned.nsrc + i]) for i, f in enumerate(fresh)):
                continue  # a place the plan could not use: recorded and planned again with it
            if self._repriced(planned, fresh):
                kept.append((key, planned, [_Node(n.key, n.producers, f, n.out_bytes, n.computed)
                                            for n, f in zip(nodes, fresh, strict=True)]))
        self.clear(repeats=True)
        for key, planned, nodes in kept:
            self.planner.plans[key] = planned.plan
            sources = [(place, 0, None) for place in planned.made_for[0]]
            self._install(key, planned.plan, nodes, sources, planned.made_for)

    def _reset(self) -> None:
        self._restart = None
        self._after.clear()
        self.nodes.clear()
        self.sources.clear()
        self._made.clear()
        self._sources.clear()

    def resume(self, key: CallKey | None = None) -> None:
        """Record again (a plan dropped; or ``key``, a kind of call no decision covers, that no
        recorded region made, or that a plan in force makes with its data elsewhere: its region,
        met, is served the plan): the memo stops serving meanwhile. A kind a region made, decided
        afresh as its measurements come in, changes no region."""
        if self.on and not self.recording and (key is None or (not key.is_forced() and (
                key not in self.known or key.elsewhere() in self.planned_kinds))):
            self.recording = True
            self._reset()
            self.router.changed()

    # ---- recording ------------------------------------------------------------------------------

    def note(self, op: Any, inputs: Any, decision: Decision, result: Any) -> None:
        """A routed call ran: add it to the region (a view or a cast passes its input's producer on).
        A call under a forced target is no part of any region: the target it is forced to runs it."""
        key = decision.key
        if type(key) is CallKey and key.is_forced():
            return
        out = data_of(result)
        if op.local:
            self._local(op, inputs, decision, out)
            return
        if type(key) is not CallKey:
            return
        computed = self._computed_for(op, inputs, key) if op.cataloged and op.work != "host" else ()
        prices = self._best(key, computed)
        if self._restart is not None:
            self._confirm(key)
        kind = key.elsewhere()
        producers = self._producers(inputs.arrays)
        if len(self.nodes) == 1 and kind == self.nodes[0].key.elsewhere() and producers == self.nodes[0].producers:
            self.boundary()  # a body of one call: this call starts the next region, its inputs sources of it
            if not self.recording:  # a plan serves the region from here
                self.known.add(key)
                return
            producers = self._producers(inputs.arrays)
        self.nodes.append(_Node(key, producers, prices, int(getattr(out, "nbytes", 0) or 0), computed))
        self.known.add(key)
        if hasattr(out, "shape"):
            self._made[id(out)] = (weak(out), len(self.nodes) - 1)
        if len(self.nodes) >= MAX_CALLS:
            self.boundary()
            return
        at = len(self.nodes) - 1
        if at >= 2:  # the two calls before this one came in that order
            self._after.setdefault(self.nodes[at - 2].key.elsewhere(), set()).add(self.nodes[at - 1].key.elsewhere())
        if kind in self._after:  # a loop's body may start again here (after a prologue, too)
            self._restart = (at, [self._input(data_of(a)) for a in inputs.arrays], weak(out))

    def _producers(self, arrays: Any) -> list[tuple[int, int]]:
        """Each input's producer in the region (a source made for it where it has none) and its bytes."""
        found = []
        for a in arrays:
            data = data_of(a)
            found.append((self._producer(data, a), int(getattr(data, "nbytes", 0) or 0)))
        return found

    def _input(self, native: Any) -> tuple[Any, str, int]:
        """What the next region needs of an input, should its call start it: the array owning its
        memory (weakly), where it is, its bytes."""
        *_, root = bases(native)
        return weak(root), _place(device_of(native)), int(getattr(native, "nbytes", 0) or 0)

    def _confirm(self, key: CallKey) -> None:
        """The call after one of a kind the region made before: where it is of the kind that
        followed that one there too, the loop body started again at that one, which begins the
        next region. (A kind met twice in a body, ``2 * x`` then ``0.1 * (...)``, is followed by
        other calls.)"""
        at, inputs, out = self._restart
        self._restart = None
        if at != len(self.nodes) - 1 or key.elsewhere() not in self._after[self.nodes[at].key.elsewhere()]:
            return
        carried = self.nodes.pop()
        self.boundary()
        if not self.recording:  # a plan serves the region from here
            return
        producers = []
        for ref, place, nbytes in inputs:  # each a source of the new region, where it was
            root = ref()
            found = self._sources.get(id(root)) if root is not None else None
            if found is not None and found[0]() is root:
                index = found[1]
            else:
                index = self._source(place, nbytes, ref)
                if root is not None:
                    self._sources[id(root)] = (ref, index)
            producers.append((index, nbytes))
        self.nodes.append(_Node(carried.key, producers, carried.prices, carried.out_bytes, carried.computed))
        made = out()
        if made is not None:
            self._made[id(made)] = (out, 0)

    def _local(self, op: Any, inputs: Any, decision: Decision, out: Any) -> None:
        """A view or a cast passes its input's producer on; one that puts what the region made into
        host data (``host[i] = made``, ``host[made_mask]``) reads it on the host."""
        arrays = inputs.arrays
        if not arrays:
            return
        first = self._producer(data_of(arrays[0]), None)
        if first is not None and first >= 0 and hasattr(out, "shape") and op.mutates is None:
            self._made[id(out)] = (weak(out), first)
        if type(data_of(arrays[0])) is not np.ndarray or type(decision.key) is not CallKey:
            return
        made = [(found, int(getattr(data_of(a), "nbytes", 0) or 0)) for a in arrays[1:]
                if (found := self._producer(data_of(a), None)) is not None and found >= 0]
        if made:
            self.nodes.append(_Node(decision.key, made, {HOST: (0.0, "numpy")}, 0))

    def _producer(self, native: Any, array: Any) -> int | None:
        found = recorded(native, self._made, self._sources)
        if found is not None or array is None:
            return found
        device = device_of(native)
        place = _place(device)
        self.devices.setdefault(place, device)
        *_, root = bases(native)  # one source for the memory, whichever views of it the region reads
        ref = weak(root)
        index = self._source(place, int(getattr(native, "nbytes", 0) or 0), ref)
        self._sources[id(root)] = (ref, index)
        if self._cut_short is not None:
            self._cut_short.link(ref, native)
        return index

    def _source(self, place: str, nbytes: int, ref: Any) -> int:
        self.sources.append((place, nbytes, ref))
        return -len(self.sources)

    def _computed_for(self, op: Any, inputs: Any, key: CallKey) -> list[tuple[str, float, Any, CallKey]]:
        """``_compute``, once per kind and size of call (a loop's calls are priced once)."""
        size = (key, inputs.size, inputs.nbytes, tuple(tuple(a.shape) for a in inputs.arrays))
        computed = self._computed.get(size)
        if computed is None:
            if len(self._computed) >= COMPUTED_MAX:
                self._computed.clear()
            computed = self._computed[size] = self._compute(op, inputs, key)
        return computed

    def _best(self, key: CallKey, computed: Any) -> dict[str, tuple[float, str]]:
        """Each place's price of a call of kind ``key`` (its compute alone: the region's edges
        price the copies) and the engine cheapest there (of those up, where one is), from its
        compute on each target (``_computed_for``) with what calls of its kind measured there
        blended in."""
        router = self.router
        history, refused = router.history, router.refusals.get(key, ())
        best: dict[str, tuple[tuple[bool, float, float], str]] = {}  # place -> (its engine's rank, the engine)
        for name, compute, device, there in computed:
            if name not in router.priced or name in refused or startup.failed(name):
                continue
            seconds, _ = history.blended(there, name, compute)
            place = _place(device)
            self.devices.setdefault(place, device)
            # an engine up (or coming up) serves its place before one down, and of engines down the
            # one cheapest to bring up: a plan brings up one engine per device, and that one's prices
            # stand for the device (two down, each of a device's calls at the one cheaper for it,
            # each would be credited only with what it adds over the other: neither would come up)
            rank = _rank(name, seconds)
            if place not in best or rank < best[place][0]:
                best[place] = (rank, name)
        # a call no engine prices (a host op, outside the catalog, or refused everywhere) runs on NumPy
        return {place: (rank[2], name) for place, (rank, name) in best.items()} or {HOST: (0.0, "numpy")}

    def _compute(self, op: Any, inputs: Any, key: CallKey) -> list[tuple[str, float, Any, CallKey]]:
        """The call's compute on each target the calibration prices (its models' curves alone:
        what they measured is blended in per call), the device, and the call's kind there."""
        scalar = op.work == "reduce"
        computed = []
        for name, model in self.router.models.items():
            compute = cost.compute_seconds(model, op, inputs)
            if compute is None:
                continue
            device = model.device
            if scalar and not device.is_host:
                compute += model.roundtrip_overhead_s()
            computed.append((name, compute, device, key._replace(devices=frozenset({device}))))
        return computed

    # ---- regions ----------------------------------------------------------------------------------

    def read(self, array: Any) -> None:
        """The program reads ``array`` on the host: the region ends there."""
        if not self.recording or not (self.nodes or self._cut_short):
            return
        found = self._producer(data_of(array), None)
        self.boundary(found if found is not None and found >= 0 else None)

    def boundary(self, read: int | None = None) -> None:
        """End the region (``read``: the call whose result the host reads) and plan it if it was met before."""
        nodes, sources = _sources_read(self.nodes, self.sources)
        cut_short, self._cut_short = self._cut_short, None
        self._reset()
        if not nodes:
            if cut_short is not None:  # nothing after the arrival: what came before it, alone
                self._foresee(cut_short.nodes, cut_short.sources, None, set())
            return
        key = region_key(nodes)
        made_for = (tuple(place for place, _, _ in sources), read)
        planned = self.planned.get(key)
        if planned is not None and any(startup.up(name) for name in self.unpaid.get(key, ())):
            self._drop(key)  # an engine left down for its start-up is up now: planned again with it
            self.planner.forget(key)
            self.unpaid.pop(key, None)
            planned = None
        if planned is not None:
            if planned.made_for == made_for or self.revisions.get(key, 0) >= REVISIONS:
                self._install(key, self.planner.plan_for(key, lambda: None), nodes, sources, made_for)
                self.recording = False  # met again: served, its calls as they run now decided too
                return
            self._drop(key)  # its data has moved (or the host reads another result): planned again from there
            self.planner.forget(key)
            self._revise(key)
        count, again = self._met(nodes, sources, key)
        if count < 2:
            if cut_short is not None:  # the calls before an engine's arrival, and these after it
                nodes, sources, read = cut_short.joined(nodes, sources, read)
            self._foresee(nodes, sources, read, again)
            return
        if not any(p != HOST for n in nodes for p in n.prices):
            return
        plan = self.planner.plan_for(
            key, lambda: self._paid(key, nodes, len(sources), self._region(nodes, sources, read, count, again)))
        self._install(key, plan, nodes, sources, made_for)
        self.recording = False  # the plan serves the loop (a call it moves elsewhere, met, records again)

    def _foresee(self, nodes: list[_Node], sources: list[tuple[str, int, Any]], read: int | None,
                 again: set[int]) -> None:
        """A region met once, in a script whose run is kept: placed for the script's next run,
        which meets it again (a straight-line program meets each of its regions once a run, so
        no plan would ever serve it). Placed without a cut (whose time a short script would pay
        at each run): the calls that can run on one device run there, all of them or
        those that gain, whichever is cheaper with its copies. Where that saves, the kinds of
        call put there are kept (``startup.planned``): in the next run the first of them runs
        there without paying its result's copy back, its region's next calls following it, and
        waits for the device's bring-up where one pass repays what is left of it."""
        places = {p for n in nodes for p in n.prices} - {HOST}
        if not places or learned.kept_for() is None:  # no device, or no next run to place it for
            return
        region = self._region(nodes, sources, read, 1, again)
        nsrc = len(sources)
        saving, placement = max((_there(region, nsrc, place, _gains(region, nodes, nsrc, place)) for place in places),
                                key=lambda f: f[0])
        if not saving > 0.0:  # (nor a saving that is no number: a call no host can run)
            return
        for i, n in enumerate(nodes):
            if (place := placement[nsrc + i]) != HOST:
                startup.planned(n.key, n.prices[place][1], saving)

    def _met(self, nodes: list[_Node], sources: list[tuple[str, int, Any]],
             key: Hashable = None) -> tuple[int, set[int]]:
        """Count a meeting of the region: how often it was met, and the ids of the arrays it read
        when last met too."""
        key = region_key(nodes) if key is None else key
        if len(self.seen) >= SEEN_MAX:
            self.seen.clear()
            self.last_sources.clear()
            self.known.clear()
        count = self.seen[key] = self.seen.get(key, 0) + 1
        ids = {id(data) for _, _, ref in sources if (data := ref()) is not None}
        again = ids & self.last_sources.get(key, set())  # the arrays the region read when last met too
        self.last_sources[key] = ids
        return count, again

    def _revise(self, key: Hashable) -> None:
        self.revisions[key] = self.revisions.get(key, 0) + 1
        self.revised += 1

    def _region(self, nodes: list[_Node], sources: list[tuple[str, int, Any]], read: int | None,
                count: int, again: set[int]) -> Region:
        nsrc = len(sources)
        prices: list[dict[str, float]] = [{place: 0.0} for place, _, _ in sources]
        fixed = {s: place for s, (place, _, _) in enumerate(sources)}
        prices += [{place: s for place, (s, _) in n.prices.items()} for n in nodes]
        edges = []
        for i, n in enumerate(nodes):
            for producer, nbytes in n.producers:
                if producer >= 0:
                    edges.append((nsrc + producer, nsrc + i, nbytes))
                    continue
                s = -1 - producer
                edges.append((s, nsrc + i, self._copied(sources[s], nbytes, count, again)))
        if read is not None:
            prices.append({HOST: 0.0})
            fixed[len(prices) - 1] = HOST
            edges.append((nsrc + read, len(prices) - 1, nodes[read].out_bytes))
        labels = [f"source {s}" for s in range(nsrc)] + [f"{i}: {n.key.op}" for i, n in enumerate(nodes)]
        return Region(prices, edges, self._transfer, fixed, labels)

    def _paid(self, key: Hashable, nodes: list[_Node], nsrc: int, region: Region) -> Region:
        """``region`` without the engines that are down and not admitted for what they add to one
        pass of the region (their start-up's price): a place keeps the calls an engine up there
        runs. The calls a refused engine would have run note their share of what it adds, for
        the script's later runs and toward its start-up."""
        # First the engines no plan could pay for: each call's whole gain on one, copies left out,
        # is all a pass could save there; where that is refused, no cut is made for it (nor the
        # engine's library imported), and what running the region there would
        # save, copies included, is noted: a cheaper plan's saving is no less.
        bound: dict[str, tuple[str, float]] = {}  # engine down -> (its place, the calls' whole gain there)
        for i, n in enumerate(nodes):
            host = region.prices[nsrc + i].get(HOST)
            for place, (seconds, name) in n.prices.items():
                if place != HOST and host is not None and not startup.up(name):
                    bound[name] = (place, bound.get(name, (place, 0.0))[1] + max(host - seconds, 0.0))
        hopeless = {name for name, (_, gain) in bound.items() if not startup.admit(name, gain)}
        if hopeless:
            self.unpaid.setdefault(key, set()).update(hopeless)
            for name in hopeless:
                self._note_all_there(nodes, nsrc, region, bound[name][0], name)
            region = self._without(region, nodes, nsrc, hopeless)
        trial = planner.plan(region)
        while True:
            down: dict[str, list[int]] = {}
            for i, n in enumerate(nodes):
                place = trial.placement[nsrc + i]
                if place != HOST and not startup.up(name := n.prices[place][1]):
                    down.setdefault(name, []).append(i)
            # what each adds: the plan's saving over the best plan without it (CuPy up, torch-cuda
            # is priced for the calls only it runs there, not for what CuPy saves beside them)
            without = {name: self._without(region, nodes, nsrc, {name}) for name in down}
            rest = {name: planner.plan(each) for name, each in without.items()}
            added = {name: trial.saving - rest[name].saving for name in down}
            refused = {name: calls for name, calls in down.items() if not startup.admit(name, added[name])}
            if not refused:
                return region
            self.unpaid.setdefault(key, set()).update(refused)
            for name, calls in refused.items():
                gains = {i: max(region.prices[nsrc + i].get(HOST, 0.0) - n_s, 0.0) for i in calls
                         if (n_s := region.prices[nsrc + i].get(trial.placement[nsrc + i])) is not None}
                _note_shares(nodes, name, max(added[name], 0.0), gains)
            if len(refused) == 1:  # the plan without it is made already
                (name,) = refused
                region, trial = without[name], rest[name]
            else:
                region = self._without(region, nodes, nsrc, set(refused))
                trial = planner.plan(region)

    @staticmethod
    def _note_all_there(nodes: list[_Node], nsrc: int, region: Region, place: str, name: str) -> None:
        """Note, for ``name`` left down, what one pass of ``region`` would save with it on
        ``place``, copies in and out included, without a cut (``_there``). Noted, shared over
        the calls that gain by their gains, where it is more than those calls were priced to
        save one at a time, each with its own copies."""
        gains = _gains(region, nodes, nsrc, place, name)
        saving, _ = _there(region, nsrc, place, gains)
        gaining = {i: gain for i, gain in gains.items() if gain > 0.0}
        if gaining and saving > sum(startup.saving(nodes[i].key, name) for i in gaining):
            _note_shares(nodes, name, saving, gaining)

    @staticmethod
    def _without(region: Region, nodes: list[_Node], nsrc: int, names: set[str]) -> Region:
        """``region`` with no call on the engines ``names``: each call loses the place where one
        of them was its engine (a call another engine runs there keeps it)."""
        prices = [{p: s for p, s in each.items() if p == HOST or nodes[j - nsrc].prices[p][1] not in names}
                  if nsrc <= j < nsrc + len(nodes) else each  # (a source, or the host's read: placed already)
                  for j, each in enumerate(region.prices)]
        return Region(prices, region.edges, region.transfer, region.fixed, region.labels)

    def _copied(self, source: tuple[str, int, Any], nbytes: int, count: int, again: set[int]) -> int:
        """The bytes a region pays to copy a host source it reads: none where a device keeps a
        valid copy; its share where one will be kept and the region read the same array when
        last met (a loop over it, met ``count`` times, copies it once); all of them for an array
        made afresh each time (``un = u.copy()``), whose copy no device keeps for the next."""
        data = source[2]()
        if source[0] != HOST or type(data) is not np.ndarray:
            return nbytes
        if any(cost.mirrored(data, name) for name in self.router.models):
            return 0
        return nbytes // count if id(data) in again and cost.keepable(data) else nbytes

    def _transfer(self, src: str, dst: str, nbytes: int) -> float:
        if src == dst or nbytes <= 0:
            return 0.0
        seconds = 0.0
        if src != HOST:
            model = cost._model_for_device(self.devices.get(src))
            seconds += model.to_host_seconds(nbytes) if model is not None else 0.0
        if dst != HOST:
            model = cost._model_for_device(self.devices.get(dst))
            seconds += model.to_device_seconds(nbytes) if model is not None else 0.0
        return seconds

    # ---- plans in force -----------------------------------------------------------------------------

    def _install(self, key: Hashable, plan: Plan, nodes: list[_Node], sources: list[tuple[str, int, Any]],
                 made_for: Hashable = None) -> None:
        """The plan's decisions for its kinds of call, each keyed as the plan runs it (its inputs
        where the plan put their producers, or where this meeting's sources were); a kind the plan
        places on two places is left to the per-call rule. Added to the decisions it installed
        before, where the plan is the same."""
        found = self.planned.get(key)
        if found is not None and found.plan is not plan:
            self._drop(key)
            found = None
        nsrc = len(sources)
        placement = plan.placement
        places_by_key: dict[CallKey, set[str]] = {}
        planned_keys = []
        for i, n in enumerate(nodes):
            devices = set()
            for producer, _ in n.producers:
                place = placement[nsrc + producer] if producer >= 0 else sources[-1 - producer][0]
                devices.add(self.devices.get(place, HOST_DEVICE))
            there = n.key._replace(devices=frozenset(devices)) if devices else n.key
            planned_keys.append(there)
            places_by_key.setdefault(there, set()).add(placement[nsrc + i])
        planned = found if found is not None else _Planned(plan, [], made_for)
        if found is None:
            planned.region_nodes, planned.nsrc = nodes, nsrc
        decisions = self.router.decisions
        for i, (n, there) in enumerate(zip(nodes, planned_keys, strict=True)):
            places = places_by_key[there]
            if len(places) != 1 or there in planned.decisions:
                continue
            place = placement[nsrc + i]
            seconds, name = n.prices.get(place, (None, None))
            target = targets.probe(name) if name is not None else None
            if target is None:
                continue
            if place != HOST:  # the script's next run waits for this engine's bring-up at such a call
                startup.planned(n.key, name, plan.saving)
            decision = Decision(target, DecisionKind.PLANNED, describe(plan, nsrc + i), seconds, there, sample=True)
            # timed one call in SETTLED_EVERY once its kind has as many timings as a cost decision
            # settles on, as ``history.calls_counted`` counts them (what a call that an engine left
            # down would save counts toward its start-up per call, not per timing)
            decision.settled = settled(self._samples(there, name))
            planned.decisions[there] = decision
            self.planned_kinds.add(there.elsewhere())
            planned.nodes.append((there, name, seconds))
            decisions[there] = decision
            self.by_key[there] = key
        self.planned[key] = planned

    def _samples(self, key: CallKey, name: str) -> int:
        """The timings the history holds of calls of kind ``key`` on ``name``."""
        stat = self.router.history.stats.get(key, {}).get(name)
        return stat.samples if stat is not None else 0

    def _drop(self, key: Hashable) -> None:
        planned = self.planned.pop(key, None)
        if planned is None:
            return
        decisions = self.router.decisions
        for k, d in planned.decisions.items():
            if decisions.get(k) is d:
                del decisions[k]
            if self.by_key.get(k) == key:
                del self.by_key[k]

    def measured(self, key: CallKey) -> None:
        """A planned call was timed: re-price its plan with what its calls measured; where that
        strays (``Planner.strays``) and the plan, priced again, would place its calls elsewhere
        (``_repriced``), drop it: its region is recorded and planned again when next met. A
        plan that can be revised no more, or that ``HELD`` timings found holding once every call
        of it was measured, is timed no more (``_Planned.settle``), but for calls an engine left
        down would save on. Those are timed as a cost decision is: every call until
        ``history.SETTLED_SAMPLES`` timings, then one in ``SETTLED_EVERY`` (``history.calls_counted``
        counts each timing for the calls it stands for, toward the engine's start-up)."""
        plan_key = self.by_key.get(key)
        planned = self.planned.get(plan_key) if plan_key is not None else None
        if planned is None:
            return
        decision = planned.decisions.get(key)
        if decision is not None:
            decision.settled = settled(self._samples(key, decision.target.name))
        if self.revisions.get(plan_key, 0) >= REVISIONS or planned.held >= HELD:
            planned.settle()
            return
        stats = self.router.history.stats
        seconds = planned.plan.seconds
        measured = True
        for k, name, price in planned.nodes:
            stat = stats.get(k, {}).get(name)
            if stat is not None and price is not None:
                seconds += stat.seconds - price
            measured = measured and stat is not None
        if not self.planner.strays(plan_key, max(seconds, 0.0)):
            if measured:
                planned.held += 1
        elif self._repriced(planned):
            # planned again all the same: counted toward REVISIONS, so that timings that never
            # settle stop re-planning it (the plan is then kept and timed no more)
            self.revisions[plan_key] = self.revisions.get(plan_key, 0) + 1
        else:
            self.planner.forget(plan_key)
            self._revise(plan_key)
            self._drop(plan_key)
            self.seen[plan_key] = 1  # planned again, from the newer prices, when next met
            self.resume()

    def _repriced(self, planned: _Planned, fresh: list[dict[str, tuple[float, str]]] | None = None) -> bool:
        """A plan whose measured times strayed from its prices, planned again over its region with
        each call priced afresh, with what calls of its kind measured on each place blended in
        (as a region recorded again would be): where that places every call where the plan did,
        the plan stands, expecting those prices (kept: its loop goes on through the decision
        cache and the memo); else ``False``, and it is dropped, its region recorded again and
        planned from where its data is then. Recording again costs the loop a pass or more on
        the per-call rules, only to make the same plan where the prices were off but not the
        placement (a device slower than priced, yet faster than the host). ``fresh``: each call's
        ``_best`` now, where the caller has them already."""
        plan, stats = planned.plan, self.router.history.stats
        region, nodes, nsrc = plan.region, planned.region_nodes, planned.nsrc
        if region is None or not nodes:
            return False
        if fresh is None:
            fresh = [self._best(n.key, n.computed) for n in nodes]
        prices = list(region.prices)
        for i, best in enumerate(fresh):
            j = nsrc + i
            prices[j] = {place: best[place][0] if place in best else seconds for place, seconds in prices[j].items()}
        repriced = Region(prices, region.edges, region.transfer, region.fixed, region.labels)
        again = planner.plan(repriced)
        if again.placement != plan.placement:
            return False
        plan.seconds, plan.host_seconds, plan.region = again.seconds, again.host_seconds, repriced
        planned.nodes = [(k, name, stat.seconds if (stat := stats.get(k, {}).get(name)) is not None else price)
                         for k, name, price in planned.nodes]
        self.repriced += 1
        return True

    def describe(self) -> list[tuple[Hashable, Plan]]:
        """The plans in force, and what each expects to save."""
        return [(k, p.plan) for k, p in self.planned.items()]

