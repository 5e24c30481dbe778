"""The router: which target runs a call, and why.

Rules, first match wins:

0. strict mode (``DISPATCH_EXACT``, ``set_config(exact=True)``): an op whose result may differ
   from NumPy's in the last bits elsewhere (``Op.differs``, from the catalog's equality
   contract) runs on NumPy, even under a forced target: asking for exactness outranks asking
   for a target                                                                    "exact: ..."
1. a forced target (``set_backend``, ``using``, ``DISPATCH_BACKEND``)            reason "forced"
2. local ops (views, casts, indexing): where their data is                        "local"
3. host-only ops (I/O, printing, random streams, functions outside the catalog): NumPy  "host op"
4. scale-out (``_scale_out``, by ``dispatch.cluster``'s sizes): data in Dask stays there; work too large for the
   memory of the device holding it, or spanning chunks of a connected cluster, goes to Dask
                                                                                   "data in dask" / "scale-out: ..."
5. the policy:
   - ``cost`` (once this machine is calibrated): every target allowed for the op is priced
     (compute + transfers of inputs not on it + read-back of a scalar result), blended with
     what calls measured (``history``); a device asked to take a call whose inputs are all
     on the host also pays the copy of its result back, times the learned chance that the
     program reads it back before using it there again (``history.p_return``): it must
     win the round trip, not the call alone; and a call making a fresh array from host data
     is priced on a device less what the later calls on that array, and on what is computed
     from it, have saved there on average (``history.placement_credit``): a loop over an
     array made once moves it once; a host target whose results of this kind a device was
     sent next pays that copy, times the learned share (``history.p_send``); a device that
     never ran this kind of call (op, dtypes, layout) pays ``FIRST_USE_S`` for host data;
     the cheapest wins, but the target holding the inputs (NumPy for host data) keeps a call
     unless another is ``KEEP_MARGIN`` cheaper, and a device's first engine (its home)
     unless another there is ``ENGINE_MARGIN`` cheaper     "cost model" / "history" / "placement"
     a device chosen for host data is then put on trial (``dispatch.routing.trials``): the program is
     timed with the call there and on NumPy, and the faster keeps it               "trial"
   - ``seed`` (cold start): data already on a device stays there; otherwise the seed's MoE
     table on the op's complexity and element count, each tier mapped to the best target
     available here (GPU: cupy, torch-cuda, torch-mps; SIMD: torch-cpu where it is known to be
     faster; SCALAR: numpy)                                                        "heuristic"
   - ``oracle`` (benchmarks only): every candidate is tried per key, then the fastest measured
     one is always taken                                                            "oracle"

Decisions are cached by (op, dtypes, size bucket, devices of the inputs, forced target, a
reduction's axis); a cache hit is one dict lookup. For calls of ``cluster.LIVE_ELEMENTS``
elements or more the scale-out rule is asked again at each hit (free memory changes). A target
that refused a kind of call is remembered for that key (at once for a lasting refusal, after
two for one that depends on the arguments). The router never synchronises a device to decide,
nor brings a target up whose start-up the call, or the script's earlier runs, cannot repay
(``dispatch.routing.startup``; a forced target always comes up).

All of this state lives on one ``Router`` object, the process's ``ROUTER``: its decision caches
and the call path's memo, pins, refusals, trials, history, policy (a ``Policy``: ``SeedPolicy``,
``CostPolicy``, ``OraclePolicy``, each with ``decide(op, inputs, key)``) and selectors. A decision
says which rule made it (``DecisionKind``) and why in words (its reason, for the trace). The
module's functions (``decide``, ``host_floor``, ``set_policy``...) are the router's methods.
The router's ``epoch`` moves whenever a decision is dropped or replaced or a trial starts or
ends: the memo, in Python and compiled, serves an entry only at the epoch it was checked at.
"""

from __future__ import annotations

import copy
import logging
import math
import os
from typing import Any

import numpy as np

from dispatch import cluster, targets
from dispatch.base import box, tuning
from dispatch.base.devices import DASK, HOST_ONLY
from dispatch.base.ops import all_ops, op_named
from dispatch.base.state import STATE
from dispatch.base.tiers import Backend
from dispatch.routing import calibration, cost, startup, trials
from dispatch.routing.calibration import INTEGER_OPS
from dispatch.routing.decisions import PRICED_KINDS, CallKey, Decision, DecisionKind, Watched
from dispatch.routing.history import HOST_TARGETS, History, call_kind
from dispatch.routing.live import Live
from dispatch.routing.selector import BackendSelector
from dispatch.targets.numpy_target import NUMPY

__all__ = ["ROUTER", "CallKey", "CostPolicy", "Decision", "DecisionKind", "OraclePolicy", "Policy", "Router",
           "SeedPolicy", "call_key", "clear_decisions", "credit", "decide", "exact", "failed", "host_floor", "made",
           "policy", "refused", "refused_this_call", "selector", "set_exact", "set_policy", "set_selector", "settle",
           "trip_floor", "use_calibration"]

# The ops torch on the CPU runs faster than NumPy on a multi-core host without a calibration
# (reductions from about 1e4 elements; it loses at sorting): the seed policy's SIMD tier uses it
# for these only, and a calibration measures the machine at hand instead.
TORCH_CPU_FASTER = frozenset({"sum", "mean", "nansum", "nanmean", "prod", "add.reduce"})
GPU_TARGETS = targets.registry.gpu_names()  # each device's home first (live views of the registry)
PRICED = targets.registry.priced_names()  # the targets the cost policy weighs: those a calibration measures
_PRICED = PRICED
# Host calls of at most this many elements run on NumPy under every policy, without probing any
# other target (which would import torch or CuPy): no engine's call overhead (microseconds for
# torch, a launch and a transfer for a GPU) is repaid on so little data.
SMALL = 1 << 8
# About what routing one call costs (its input summary, the decision, the bookkeeping; see
# benchmarks/overhead.py): below the size where another target beats NumPy by more than this,
# a host call runs on NumPy without asking the router.
ROUTING_S = 10e-6
# A device's first call of a kind (op, dtypes, layout: ``history.call_kind``) pays for its
# kernel (CuPy compiles one, torch loads a module, cuFFT makes a plan): milliseconds to a
# second, once. A device that never ran such a call takes host data only where it is priced to
# save more than this (data already on the device: see ``_ran_beside``).
FIRST_USE_S = 1e-3
# An array one engine holds, passed to another engine on the same device, crosses by DLPack: no
# copy, but host time of the order of a small call. Without this price, two engines measured alike
# on a device take turns call by call, and every call pays it.
ADOPT_S = 10e-6
# The target holding a call's inputs keeps the call unless another is priced this much cheaper:
# NumPy for host data (what the program ran before), the engine holding device data. A call's
# own timing misses what a target costs the calls around it (caches, waking threads, fresh
# pages; on a device, the next call's crossing back by DLPack), and a closer call is within the
# noise of a shared machine, where the calls would go back and forth as their timings cross.
KEEP_MARGIN = 0.2
# A device's calls keep to one engine, its home (``_home``), unless another is priced this much
# cheaper: a call on host data has no keeper there, nor one whose inputs two engines hold. A
# call's time on a device (its events) leaves out what crossing between engines costs the host,
# each way, and the calls around it: without the margin, a device's calls take turns between its
# engines as their timings cross, and each turn pays the crossing.
ENGINE_MARGIN = 1.0
# A kind of call whose fresh arrays the router has followed this many times and still leaves on
# the host makes no more roots: what later calls on them save on a device is learned by then
# (its decision is re-made at 1, 2, 4... arrays), and following them costs every later call on
# them the router's bookkeeping, which placements that never pay cannot repay.
ROOTS_FOLLOWED = 32
# Likewise a kind of call that a host target runs where a device was priced: once this many of
# its results in a row were followed and none was sent to a device, its results are no longer
# followed, and its calls may skip the router's bookkeeping (the memo in ``dispatch.arrays._call``);
# the share sent until then (``history.p_send``) still prices its calls. Following a small call
# costs more than the call itself.
HOSTED_FOLLOWED = 32
# Why a call runs where it does without being priced; a trace records calls under the floors,
# which skip the router (``dispatch.arrays._call``), with the same words.
LOCAL_REASON = "local: where the data is"
SMALL_REASON = "small: NumPy on the host"
EXACT_REASON = "exact: "  # strict mode keeps the call on NumPy (rule 0)
FLOOR_REASON = "floor: NumPy, at a size where no other target pays"
# Copies of host data: a local op elsewhere, but a fresh array the router may make on a device
# (``_decide_placement``).
PLACED_COPIES = frozenset({"copy", "array"})
# A call a trial runs on NumPy while it times the program so (``trials.alone``).
NUMPY_ALONE_REASON = "trial: timing the program with every call on NumPy"
# ...and on the device, while it times the program with every call the device can run there
# (``trials.all_device``; the floors are lowered meanwhile, so that calls on host data reach it).
ALL_DEVICE_REASON = "trial: timing the program with every call on the device"

# A kind of call measured this many times on the target chosen for it is timed one call in
# SETTLED_EVERY from then on: still corrected if it drifts, no longer paying a timing per call.
SETTLED_SAMPLES = 16
SETTLED_EVERY = 8

# NumPy measured this many times on a kind of host call, and nothing measured faster: host
# arrays of that size skip the router from then on.
LEARNED_FLOOR_SAMPLES = 8

# A refusal that depends on the call's arguments is asked again, but under automatic routing a
# kind of call refused this many times by a target is not offered to it any more: each try can
# cost a copy across the bus before the refusal.
REFUSALS_TO_REMEMBER = 2

FALLBACK = "fallback: "  # the reason of a remembered refusal starts with this (``DecisionKind.FALLBACK``)

_device = box.device


def call_key(op: Any, inputs: Any) -> CallKey:
    """The kind of a call, as decisions are cached and timings kept: see ``CallKey``."""
    return CallKey(op.name, inputs.dtypes, inputs.size.bit_length(), inputs.devices, STATE.forced_name(),
                   inputs.layout)



def _reach(name: str, saving_s: float | None, key: CallKey | None = None) -> Any:
    """``targets.probe(name)`` where the target is up, or may be brought up for a call priced to save
    ``saving_s`` there (``None``: not priced; only a library the program loaded may serve), else
    ``None``: the start-up pricing (``dispatch.routing.startup``)."""
    return targets.probe(name) if startup.admit(name, saving_s, key) else None


def _engine_holding(a: Any) -> Any:
    engine = targets.engine_of(box.native(a))
    return NUMPY if engine.name == "torch-cpu" else engine


def _integers(dtypes: tuple) -> bool:
    """Every input is an integer or boolean array (whose sums and products are exact everywhere)."""
    return all(getattr(d, "kind", "f") in "biu" for d in dtypes)


def _side(rep: str, elements: int) -> float:
    return math.sqrt(elements) if rep in cost.SQUARE_OPS else float(elements)


# ---- the policies ---------------------------------------------------------------------------------


class Policy:
    """How the router decides a call no earlier rule decided (rule 5): ``decide`` gives the
    decision for a kind of call (cached unless ``explored``), ``floor`` the size of host data
    at or under which an op runs on NumPy without asking."""

    name = ""

    def __init__(self, router: Router) -> None:
        self.router = router

    def decide(self, op: Any, inputs: Any, key: CallKey) -> Decision:
        raise NotImplementedError

    def floor(self, op: Any) -> int:
        raise NotImplementedError


class SeedPolicy(Policy):
    """Cold start: data already on a device stays there; otherwise the seed's MoE table on the
    op's complexity and element count, each tier mapped to the best target available here."""

    name = "seed"

    def decide(self, op: Any, inputs: Any, key: CallKey) -> Decision:
        resident = inputs.resident
        if resident is not None:
            holder = next(a for a in inputs.arrays if _device(a) == resident)
            return Decision(_engine_holding(holder), DecisionKind.SEED, f"heuristic: data on {resident}", key=key)
        tier = self.router.seed_selector.select_with_moe(op.complexity, inputs.size)
        target = self._for_tier(tier, op)
        reason = f"heuristic: seed table says {tier}"
        if target.tier is not tier:  # the reason names where the call went, never only where it did not
            reason += f"; {target.name} runs it here"
        return Decision(target, DecisionKind.SEED, reason, key=key)

    @staticmethod
    def _for_tier(tier: Backend, op: Any) -> Any:
        if tier is Backend.GPU:
            for name in GPU_TARGETS:
                target = _reach(name, None)
                if target is not None and target.supports(op):
                    return target
            tier = Backend.SIMD
        if tier is Backend.SIMD and op.name in TORCH_CPU_FASTER:
            target = _reach("torch-cpu", None)
            if target is not None:
                return target
        return NUMPY

    def floor(self, op: Any) -> int:
        floors = self.router.floors
        floor = floors.get(op.complexity)
        if floor is None:
            t = self.router.seed_selector.thresholds
            floor = min(v for v in (t.simd[op.complexity], t.gpu[op.complexity], 2**62) if v is not None)
            floors[op.complexity] = floor
        return floor


class _Priced:
    """A target as the calibration knows it (name and device), priced without importing it."""

    __slots__ = ("device", "name")

    def __init__(self, name: str, device: Any) -> None:
        self.name, self.device = name, device


class CostPolicy(Policy):
    """Once this machine is calibrated: every target allowed for the op priced (see the module's
    rule 5), the cheapest taking the call within the keeper's and the home's margins."""

    name = "cost"

    def decide(self, op: Any, inputs: Any, key: CallKey) -> Decision:
        router = self.router
        models, history = router.models, router.history
        refused_here = router.refusals.get(key, ())
        scalar = op.work == "reduce"  # reductions usually end in a scalar the program reads: a device pays it
        entering = inputs.resident is None  # every input on the host: a device pays the way back too
        p_return = history.p_return(key) if entering else 0.0
        placement = history.placement_credit(key) if entering else 0.0
        priced = []
        modeled: dict[str, float] = {}  # each target's price on the model alone, for ``retry``
        host_compute = device_compute = math.inf
        resident = inputs.resident  # the engines holding its inputs there: another pays ADOPT_S an input
        holders = [] if entering else [_engine_holding(a).name for a in inputs.arrays if _device(a) == resident]
        devices = self.transfer_models()
        p_send = history.p_send(key) if devices else 0.0
        # a host target's result that a device is sent next (the program goes on there) pays that copy
        send = p_send * min(m.to_device_seconds(cost.result_bytes(op, inputs)) for m in devices) if p_send else 0.0
        for name, model in models.items():
            if name not in _PRICED or name in refused_here:
                continue
            model_s = cost.estimate(model, _Priced(name, model.device), op, inputs, scalar)
            seconds, samples = history.blended(key, name, model_s)
            if seconds is not None:
                compute = cost.compute_seconds(model, op, inputs) or math.inf
                extra = ADOPT_S * sum(holder != name for holder in holders) if model.device == resident else 0.0
                if model.device.is_host:  # measured, where the inputs are on the host: compute alone
                    host_compute = min(host_compute, seconds if entering else compute)
                    extra += send
                else:
                    device_compute = min(device_compute, compute)
                    if p_return:
                        extra += p_return * cost.return_seconds(model, op, inputs)
                    extra -= placement  # what the later calls on its result save there
                    if call_kind(key, name) not in history.ran and (entering or self.ran_beside(key, name)):
                        extra += FIRST_USE_S
                priced.append((seconds + extra, name, samples))
                if model_s is not None:
                    modeled[name] = model_s + extra
        gain = host_compute - device_compute if max(host_compute, device_compute) < math.inf else 0.0
        priced.sort()
        keeper = "numpy" if entering else holders[0] if holders and len(set(holders)) == 1 else None
        # The keeper is weighed against the cheapest, and only then the device's home: a home priced
        # first would bring NumPy within its margin of a device where another engine is cheaper.
        if not _prefer(priced, keeper, KEEP_MARGIN) and priced:
            cheapest = models[priced[0][1]].device
            if not cheapest.is_host:
                _prefer(priced, self.home(cheapest), ENGINE_MARGIN)
        # Probed cheapest first, and only the best and the alternatives close enough to be explored:
        # a library that cannot win this call is not imported for it.
        ranked = []
        numpy_s = next((s for s, n, _ in priced if n == "numpy"), None)
        for seconds, name, samples in priced:
            if ranked and seconds > history.explore_ratio * ranked[0][0]:
                break
            target = _reach(name, numpy_s - seconds if numpy_s is not None else None, key)
            if target is not None and target.supports(op):
                ranked.append((seconds, name, samples))
        if not ranked:
            return Decision(NUMPY, DecisionKind.COST, "cost model: nothing else can be priced", key=key)
        best_s, best_name, samples = ranked[0]
        # Calls predicted over the threshold are timed; so is the first call of each kind on the
        # target chosen for it, so that a model wrong by orders of magnitude under the threshold
        # (a thread pool woken for one small call: milliseconds, not microseconds) is caught once.
        sample = best_s >= history.sample_threshold_s or not samples
        # Alternatives are explored where the data already is: a transfer is priced from measured
        # bandwidths, and trying a device for host data costs the copy (and its first kernels).
        here = None if entering else inputs.resident
        near = [n for _, n, _ in priced if n != best_name and (
            models[n].device.is_host if here is None else models[n].device == here)]
        explore = history.explore(key, [(s, n) for s, n, _ in ranked if n == best_name or n in near]) \
            if sample else None
        if explore is None and samples:  # one that lost its only call, though the model says it wins: once more
            # NumPy too, for host data, whatever the model says: it is what the program ran before, and
            # its only call may have been the program's first, which is often several times slower
            again = history.retry(key, [n for n, m in modeled.items() if n != best_name and (
                m < best_s or (n == "numpy" and entering))])
            target = targets.probe(again) if again is not None else None
            explore = again if target is not None and target.supports(op) else None
        if explore is not None:
            seconds = next(s for s, n, _ in priced if n == explore)
            return _placed(Decision(targets.get(explore), DecisionKind.EXPLORING, "exploring: measuring an alternative",
                                    seconds, key, True, True), gain, entering)
        kind, reason = (DecisionKind.HISTORY, "history") if samples else (DecisionKind.COST, "cost model")
        settled = samples >= SETTLED_SAMPLES
        if placement and best_name not in HOST_TARGETS:
            kind, reason = DecisionKind.PLACEMENT, "placement: later calls on its result run there"
        runner_up = f" (next: {ranked[1][1]})" if len(ranked) > 1 else ""
        if send and best_name in HOST_TARGETS:
            reason += f", {p_send:.0%} of its results sent to a device next"
        decision = _placed(Decision(targets.get(best_name), kind, reason + runner_up, best_s, key, sample), gain,
                           entering)
        if decision.placeable and best_name in HOST_TARGETS and history.roots_made(key) >= ROOTS_FOLLOWED:
            decision.placeable = False  # followed long enough: its arrays stay on the host
        decision.settled = settled
        decision.hosted = bool(devices) and best_name in HOST_TARGETS and history.hosted_unsent(key) < HOSTED_FOLLOWED
        if best_name == "numpy" and not sample and not decision.placeable:
            router.learn_floor(key)  # measured, under the threshold: this decision is final, and routing it only costs
        return decision

    def home(self, device: Any) -> str | None:
        """The engine a device's calls run on unless another is ``ENGINE_MARGIN`` cheaper: the
        first of ``GPU_TARGETS`` calibrated there."""
        models = self.router.models
        return next((name for name in GPU_TARGETS if name in models and models[name].device == device), None)

    def transfer_models(self) -> list[cost.TargetModel]:
        """The calibrated devices that data can be copied to (their transfers measured)."""
        return [m for m in self.router.models.values() if not m.device.is_host and m.transfer]

    def ran_beside(self, key: CallKey, name: str) -> bool:
        """Whether another library on ``name``'s device has run this kind of call: data already
        on a device pays the first-use allowance only to prefer that one (torch's kernels are built,
        CuPy compiles its own), never to leave the device, where the op would then never run."""
        models, ran = self.router.models, self.router.history.ran
        device = models[name].device
        return any(other != name and call_kind(key, other) in ran and models[other].device == device
                   for other in GPU_TARGETS if other in models)

    def placement(self, op: Any, inputs: Any, key: CallKey) -> Decision:
        """A copy of host data is made on a device when what later calls on it saved there, on
        average (``history.placement_credit``), repays the copy in and the chance of the way back."""
        router = self.router
        models, history = router.models, router.history
        credit = history.placement_credit(key)
        decision = Decision(NUMPY, DecisionKind.LOCAL, LOCAL_REASON, key=key)
        numpy_model = models.get("numpy")
        if credit > 0.0 and numpy_model is not None:
            here = cost.compute_seconds(numpy_model, op, inputs) or 0.0
            refused_here = router.refusals.get(key, ())
            for name in GPU_TARGETS:
                model = models.get(name)
                if model is None or name in refused_here:
                    continue
                there = model.to_device_seconds(inputs.nbytes) + history.p_return(key) * cost.return_seconds(
                    model, op, inputs) - credit
                target = _reach(name, here - there, key) if there < here else None
                if target is not None and target.supports(op):
                    decision = Decision(target, DecisionKind.PLACEMENT,
                                        "placement: later calls on this copy run there", there, key=key)
                    break
        # no device, nothing to place; a copy that stayed on the host through ROOTS_FOLLOWED arrays, no more following
        decision.placeable = any(name in models for name in GPU_TARGETS) and (
            decision.target is not NUMPY or history.roots_made(key) < ROOTS_FOLLOWED)
        return decision

    def floor(self, op: Any, round_trip: bool = False) -> int:
        """The largest size (a power of two) at which NumPy is still cheapest for host data, even
        against a device that already held it, by more than routing the call would cost: larger
        calls go to the router, which follows what is computed from a fresh array (its lineage)
        and may make such arrays on a device."""
        rep = cost.representative(op)
        if rep is None or op.local or not op.cataloged or op.work in ("host", "random"):
            return 2**62 if (not op.cataloged or op.work in ("host", "random")) else 1 << 12
        floors = self.router.floors
        cached = floors.get((rep, round_trip))
        if cached is not None:
            return cached
        numpy_model = self.router.models.get("numpy")
        if numpy_model is None:
            return 0
        floor = 0
        for exp in range(4, 31):
            n = 1 << exp
            mine = numpy_model.seconds(rep, _side(rep, n), "float64")
            # Sorts are also measured on integers, which torch and CuPy sort by radix sorts, far faster
            # than their float sorts. (A lexsort is measured on integers alone: its floor is theirs.)
            integer = numpy_model.seconds(rep, _side(rep, n), "int64") if rep in INTEGER_OPS else None
            if (mine is None and integer is None) or self._beaten(rep, n, mine, ("float64", "float32"), round_trip) \
                    or self._beaten(rep, n, integer, ("int64",), round_trip):
                break
            floor = n
        floors[(rep, round_trip)] = floor
        return floor

    def _beaten(self, rep: str, n: int, mine: float | None, dtypes: tuple[str, ...], round_trip: bool) -> bool:
        """Whether another priced target runs ``rep`` on ``n`` elements, in the cheapest of ``dtypes``,
        faster than NumPy's ``mine`` by more than routing a call costs (a target that cannot price the
        first of ``dtypes`` is passed over)."""
        if mine is None:
            return False
        for name, model in self.router.models.items():  # priced from the calibration alone: nothing is probed
            if name == "numpy" or name not in _PRICED:
                continue
            t = model.seconds(rep, _side(rep, n), dtypes[0])
            if t is None:
                continue
            t = min([t, *(model.seconds(rep, _side(rep, n), d) or t for d in dtypes[1:])])
            if round_trip and not model.device.is_host:  # in, and the result (or a scalar) back
                t += model.to_device_seconds(n * 4) + cost.way_back_seconds(model, rep, n * 4)
            if t + ROUTING_S < mine:
                return True
        return False


def _prefer(priced: list[tuple], name: str | None, margin: float) -> bool:
    """Put ``name`` first in ``priced`` (sorted) if it is within ``margin`` of the cheapest;
    whether it is first."""
    mine = next((p for p in priced if p[1] == name), None)
    if mine is None or mine[0] > priced[0][0] * (1 + margin):
        return False
    priced.remove(mine)
    priced.insert(0, mine)
    return True


def _placed(decision: Decision, gain: float, entering: bool) -> Decision:
    decision.gain = max(gain, 0.0)
    decision.placeable = entering and gain > 0.0
    return decision


class OraclePolicy(Policy):
    """Benchmarks only: every candidate is tried per key, then the fastest measured one is
    always taken."""

    name = "oracle"

    def __init__(self, router: Router) -> None:
        super().__init__(router)
        self.tried: dict[tuple, dict[str, float]] = {}

    def decide(self, op: Any, inputs: Any, key: CallKey) -> Decision:
        tried = self.tried.setdefault(key, {})
        for target in self.router.candidates(op, key):
            if target.name not in tried:
                return Decision(target, DecisionKind.ORACLE, "oracle: trying every target", None, key, True, True)
        if not tried:
            return Decision(NUMPY, DecisionKind.ORACLE, "oracle: nothing else can run it", key=key)
        best = min(tried, key=tried.get)
        return Decision(targets.get(best), DecisionKind.ORACLE, "oracle: measured best", tried[best], key)

    def observe(self, key: tuple, target: str, seconds: float) -> None:
        """Learn one measured call (timed with a full synchronisation)."""
        tried = self.tried.setdefault(key, {})
        tried[target] = min(seconds, tried.get(target, math.inf))

    def floor(self, op: Any) -> int:
        return 0  # the oracle measures every call itself, but the smallest (SMALL)


# ---- the router ----------------------------------------------------------------------------------------


class Router:
    """The router of this process (``ROUTER``): its policy and what it learned.

    It owns every piece of routing state: the policies (``policies``, the one in effect
    ``policy``), the seed's table and the machine's (``seed_selector``, ``machine_selector``),
    the calibrated models, the decision caches (one per policy, ``decisions`` the current one),
    the memo of the call path (``memo``: what a repeat of a call needs, keyed by its arguments),
    the pins, refusals, trials and history. ``epoch`` counts the changes to the decisions and
    the trials: a memo entry holds the epoch it was checked at, and serves a call (from Python
    or the compiled path) only while the epoch is the same; a changed epoch sends it back to the
    Python path, which checks it again (``dispatch.arrays._call``).
    """

    # ``epoch`` and ``memo`` are read by the compiled path by their slots' offsets (``bind_router``
    # in dispatch/arrays/_fastpath.c): renaming either fails at import, never silently.
    __slots__ = ("__dict__", "epoch", "memo")

    def __init__(self) -> None:
        self.epoch = 0
        self.memo: dict[tuple, tuple] = {}
        self.history = History()
        self.seed_selector = BackendSelector()
        self.machine_selector: BackendSelector | None = None
        self.models: dict[str, cost.TargetModel] = {}
        self.policies: dict[str, Policy] = {p.name: p for p in (SeedPolicy(self), CostPolicy(self), OraclePolicy(self))}
        self.policy = self.policies["seed"]
        # One decision cache per policy, so switching policies (benchmarks compare them) keeps each warm.
        self.caches: dict[str, Watched] = {name: Watched(self.changed) for name in self.policies}
        self.decisions = self.caches["seed"]
        self.floors: dict[Any, int] = {}
        # The floors of the policies not in effect, like their decision caches: a policy switched back
        # to keeps what it learned (``learn_floor``), which its cached decisions would not teach it again.
        self.parked_floors: dict[str, tuple[dict, dict]] = {}
        self.refusals: dict[tuple, set[str]] = {}
        self.argument_refusals: dict[tuple, int] = {}
        # Kinds of call a trial's all-device verdict sent to the device (``trials.Trial.everything``):
        # kept there whenever their cached decision is dropped, and their sizes of host data kept over
        # the floors, so that each run of the program starts on the device as the winning side did.
        # Host data only over the op's round-trip floor: a pin is never tried again, and its key is
        # every program's (op, dtypes, size bucket, layout): a small pin would move other programs' calls
        # of that key, which none of their own trials chose.
        self.pins: dict[tuple, Decision] = {}
        self.trials = trials.TRIALS
        self.trials.running.changed = self.changed
        self.lowered: dict[Any, tuple[int, int]] | None = None  # the floors the all-device side lowered
        self.calibration_checked = False
        self.priced = _PRICED  # the targets a region's calls are priced on
        self.live = Live(self)  # the region running now, and the plans in force (``dispatch.routing.live``)

    def changed(self) -> None:
        """The decisions or the trials changed: what the memo served under them is checked again."""
        self.epoch += 1

    # ---- configuration -------------------------------------------------------------------------------

    def selector(self) -> BackendSelector:
        """The MoE table for this machine: derived from its calibration once one is loaded (what
        scikit-learn routing and ``recommend_backend`` read), else the seed policy's table."""
        self.ensure_calibration()
        machine = self.machine_selector
        return machine if machine is not None and self.policy.name != "seed" else self.seed_selector

    def policy_name(self) -> str:
        """The policy in effect: ``"cost"`` once this machine is calibrated, else ``"seed"``."""
        self.ensure_calibration()
        return self.policy.name

    def clear_decisions(self) -> None:
        for cache in self.caches.values():
            cache.clear()
        self.trials.clear()
        self.pins.clear()
        self.parked_floors.clear()
        self.lowered = None
        self.live.clear()
        self._reset_floors()
        self.changed()

    def _reset_floors(self) -> None:
        self.floors.clear()
        for op in all_ops():
            op.floor = op.trip_floor = -1

    def switch(self, name: str) -> None:
        if name == self.policy.name:
            return
        self.trials.pause()
        self.floors_back()
        self.parked_floors[self.policy.name] = (
            {op: (op.floor, op.trip_floor) for op in all_ops()}, dict(self.floors))
        self.policy = self.policies[name]
        self.decisions = self.caches[name]
        self._reset_floors()
        parked = self.parked_floors.pop(name, None)
        if parked is not None:
            ops, floors = parked
            for op, (floor, trip) in ops.items():
                op.floor, op.trip_floor = floor, trip
            self.floors.update(floors)
        self.live.clear()
        self.changed()

    def set_selector(self, new: BackendSelector) -> None:
        """Route the seed policy by another selector; clears cached decisions."""
        self.seed_selector = new
        self.clear_decisions()

    def set_policy(self, name: str) -> None:
        """``"seed"``, ``"cost"`` (needs a calibration) or ``"oracle"`` (benchmarks)."""
        if name not in self.policies:
            raise ValueError(f"unknown routing policy {name!r}: choose 'seed', 'cost' or 'oracle'")
        self.ensure_calibration()
        if name == "cost" and not self.models:
            raise RuntimeError("the cost policy needs a calibration: run dispatch.calibrate() first")
        self.switch(name)

    def use_calibration(self, cal: Any) -> None:
        """Route by this calibration's cost models from now on (the ``cost`` policy)."""
        self.calibration_checked = True
        self.models.clear()
        self.models.update(cost.models_from(cal))
        devices = {}
        for model in self.models.values():  # the calibration says where each target ran: nothing is probed
            if not model.device.is_host and model.transfer:
                devices.setdefault(model.device, model)
        cost.set_device_models(devices)
        startup.use_calibration(cal)  # start-up hook: the calibration's start-up prices (dispatch.routing.startup)
        self.machine_selector = BackendSelector.from_calibration(cal)
        self.clear_decisions()
        self.switch("cost")
        self.live.clear()

    def ensure_calibration(self) -> None:
        """Cold start: route by the stored calibration if this machine has one (checked once)."""
        if self.calibration_checked:
            return
        self.calibration_checked = True
        tuning.routing_starts()  # the process tuning routing needs (dispatch.base.tuning)
        try:
            found = calibration.load()
        except Exception:  # a broken cache must not break routing: the seed table serves
            found = None
        if found is None:
            _say_when_a_calibration_no_longer_applies()
        else:
            self._route_by(found)
        startup.begin(self.history)  # start-up hook: what earlier runs learned; background bring-up

    def _route_by(self, found: Any) -> None:
        """Route by a loaded calibration, or warn and keep the seed's table where it cannot serve."""
        try:
            use_calibration(found)  # (the module's name: what a caller replaced it with)
        except Exception as exc:  # checked on load; whatever still fails it leaves the seed's table serving
            self.models.clear()
            cost.set_device_models({})
            self.machine_selector = None
            self.switch("seed")
            import warnings

            warnings.warn(f"dispatch could not route by the stored calibration ({type(exc).__name__}: {exc}); "
                          "calls are routed by the seed's table", RuntimeWarning, stacklevel=4)

    def set_exact(self, on: bool) -> None:
        """Strict mode on or off (see the module's ``set_exact``)."""
        if STATE.exact != on:
            STATE.exact = on
            self.clear_decisions()

    # ---- the floors of the host shortcut ---------------------------------------------------------

    def host_floor(self, op: Any) -> int:
        """Sizes at or under this always run on NumPy, without asking the router."""
        floor = op.floor
        if floor >= 0:
            return floor
        self.ensure_calibration()
        floor = self.policy.floor(op)
        floor = min(max(floor, SMALL), cluster.LIVE_ELEMENTS - 1)  # larger calls may need Dask: the router decides
        op.floor = floor
        return floor

    def trip_floor(self, op: Any) -> int:
        """Host arrays at or under this size that carry no root (``ndarray._root``) run on NumPy
        without asking the router: no device wins the round trip of data the program only reads
        there once. At least ``host_floor``; above it under the cost policy on a machine with a
        device, and wherever NumPy was measured best for the sizes above it (``learn_floor``)."""
        trip = op.trip_floor
        if trip >= 0:
            return trip
        floor = self.host_floor(op)
        trip = floor
        if self.policy.name == "cost" and any(not m.device.is_host for m in self.models.values()):
            trip = min(max(self.policies["cost"].floor(op, round_trip=True), floor), cluster.LIVE_ELEMENTS - 1)
        op.trip_floor = trip
        return trip

    def learn_floor(self, key: CallKey) -> None:
        """Raise the op's round-trip floor over this key's size bucket: routing such calls only
        ever chose NumPy, and cost the router's time each call. The buckets between the floor and
        this one go with it unless another target was measured faster in one of them: a target
        that loses at a size loses at the smaller ones, where its fixed costs weigh more."""
        name, bucket = key.op, key.bucket
        stats = self.history.stats
        if (key.forced is not None or key.devices != HOST_ONLY or not _numpy_best(stats.get(key, {}))
                or self.history.p_send(key)  # its results go on to a device: the router must keep seeing them
                or startup.priced_out(key)  # start-up hook: a target priced cheaper may come up later in the run
                or any(k.op == name and k.devices == HOST_ONLY and k.bucket <= bucket for k in self.pins)):  # (``pin``)
            return
        try:
            op = op_named(name)
        except KeyError:
            return
        low = (self.trip_floor(op) + 1).bit_length()
        if bucket < low or any(not _numpy_best(per, measured=False) for k, per in stats.items()
                               if k.op == name and low <= k.bucket < bucket and k.devices == HOST_ONLY
                               and k.forced is None):
            return
        op.trip_floor = min((1 << bucket) - 1, cluster.LIVE_ELEMENTS - 1)

    # ---- deciding --------------------------------------------------------------------------------------

    def cached(self, key: tuple) -> Decision | None:
        """The decision the router holds for ``key`` now, if any."""
        return self.decisions.get(key)

    def decide(self, op: Any, inputs: Any, args: tuple = (), kwargs: dict | None = None) -> Decision:
        """The decision for this call (cached per key)."""
        key = call_key(op, inputs)
        if STATE.exact and op.differs and (op.differs == "always" or not _integers(inputs.dtypes)):
            return self._exact(op, key)  # before trials and cached decisions: none may send it elsewhere
        trials_ = self.trials
        if self.lowered is not None and trials_.all_device() is None:
            self.floors_back()  # the all-device side ended away from its trial's call (its limit, or dropped)
        costed = self.policy.name == "cost"
        if trials_.running and costed:
            kin = self._on_kin_trial(key)
            if kin is not None:
                return kin
            if key.forced is None and key not in trials_.running:
                trial = trials_.alone()
                if trial is not None:
                    return self._alone(trial, op, inputs, key)
        decisions = self.decisions
        hit = decisions.get(key)
        if hit is None and self.pins and costed:
            hit = self.pins.get(key)
            if hit is not None:
                decisions[key] = hit
        if hit is not None:
            if hit.live:  # free memory changes: the work may no longer fit where it ran
                scaled = self._scale_out(op, inputs, key)
                if scaled is not None:
                    return scaled[0]
            return hit
        trial = trials_.active(key) if costed else None
        if trial is not None:
            return self._on_trial(key, trial)
        self.live.resume()  # a kind of call no plan decides: the region is recorded again
        decision, cacheable = self.rules(op, inputs, key)
        cacheable = startup.after_decide(key, cacheable)  # start-up hook: not cached while a target starts
        if cacheable and self._trial_worthy(decision, inputs, key):
            chosen = trials_.verdict(key)
            if chosen is not None:
                decision = chosen if chosen.target is NUMPY else decision  # a device verdict: as decided now
            else:
                host = Decision(NUMPY, DecisionKind.TRIAL, "trial: timing the program with this call on the host",
                                key=key)
                host.live = decision.live
                if trials_.start(key, decision, host):
                    return self._on_trial(key, trials_.active(key))
                return decision  # another trial runs: this one waits, decided afresh at each call
        if cacheable:
            decisions[key] = decision
        return decision

    def rules(self, op: Any, inputs: Any, key: CallKey) -> tuple[Decision, bool]:
        """Rules 1 to 5 of the module's list: the decision, and whether it may be cached."""
        forced = key.forced
        if forced is not None and forced != "auto":
            target = targets.probe(forced)
            if target is None:
                why = targets.unavailable().get(forced)
                return Decision(NUMPY, DecisionKind.FALLBACK, f"{FALLBACK}forced {forced}, which is unavailable: {why}",
                                key=key), True
            return Decision(target, DecisionKind.FORCED, f"forced {forced}", key=key), True
        costed = self.policy.name == "cost"
        if op.name in PLACED_COPIES and costed and inputs.resident is None and inputs.size > SMALL:
            return self.policies["cost"].placement(op, inputs, key), True
        if op.name == "__getitem__" and costed:
            gather = self._gather_on_device(inputs, key)
            if gather is not None:
                return gather, False  # decided on the bytes of these arrays, not on the key's size bucket
        if op.local and inputs.arrays:  # before host ops: indexing (outside the catalog) stays where the data is
            return Decision(_engine_holding(inputs.arrays[0]), DecisionKind.LOCAL, LOCAL_REASON, key=key), True
        if not op.cataloged or op.work in ("host", "random"):
            return Decision(NUMPY, DecisionKind.HOST_OP, "host op", key=key), True
        if inputs.size <= SMALL and all(d.is_host for d in inputs.devices):
            return Decision(NUMPY, DecisionKind.SMALL, SMALL_REASON, key=key), True
        scaled = self._scale_out(op, inputs, key)
        if scaled is not None:
            return scaled
        self.ensure_calibration()
        decision = self.policy.decide(op, inputs, key)
        decision.live = inputs.size >= cluster.LIVE_ELEMENTS
        return decision, not decision.explored  # an exploration is decided for this call alone

    def _exact(self, op: Any, key: CallKey) -> Decision:
        decision = self.decisions.get(key)
        if decision is None or decision.target is not NUMPY:
            decision = Decision(NUMPY, DecisionKind.EXACT,
                                f"{EXACT_REASON}{op.name} may differ from NumPy in the last bits elsewhere", key=key)
            self.decisions[key] = decision  # cached: the lane's memo serves it as any host decision
        return decision

    def candidates(self, op: Any, key: tuple) -> list[Any]:
        """Targets available here that may run ``op`` and have not refused this kind of call."""
        refused_here = self.refusals.get(key, ())
        found = []
        for name in (*HOST_TARGETS, *GPU_TARGETS):
            target = targets.probe(name)
            if target is not None and name not in refused_here and target.supports(op):
                found.append(target)
        return found

    def _gather_on_device(self, inputs: Any, key: CallKey) -> Decision | None:
        """``a[order]`` of a host array by an index array a device made (the order of a sort run
        there): the indexed array goes to the index, where what follows runs, rather than the
        index coming back, when the array holds at most twice the index's bytes (a device's sort
        order would otherwise come back to gather on the host)."""
        ndarray = box.ndarray
        base, *index = inputs.arrays
        if type(base) is not ndarray or type(base._data) is not np.ndarray:
            return None
        for a in index:
            if (type(a) is ndarray and type(a._data) is not np.ndarray and a.dtype.kind in "iub"
                    and a.nbytes > 0 and base.nbytes <= 2 * a.nbytes):
                target = _engine_holding(a)
                if target is not NUMPY and target.device == a.device:
                    return Decision(target, DecisionKind.INDEXING,
                                    "indexing: the index lives on a device, the indexed array goes there", key=key)
        return None

    def _scale_out(self, op: Any, inputs: Any, key: CallKey) -> tuple[Decision, bool] | None:
        """The scale-out rule, asked before the routing policy: ``(decision, cacheable)`` for Dask,
        or ``None`` to let the policy decide. Data in Dask stays there; operands or a result too
        large for the device holding them go there where a connected cluster can hold them, else to
        the host where it can (``dispatch.cluster``'s sizes)."""
        if DASK in inputs.devices:
            target = cluster._dask_target()
            if target is not None:
                return Decision(target, DecisionKind.SCALE_OUT, "data in dask", key=key), True
            return None
        if inputs.size < cluster.LIVE_ELEMENTS:
            return None
        if "dask" in self.refusals.get(key, ()):
            return None
        reason = cluster._operand_reason(op, inputs)
        if reason is None:
            host = None if cluster.connected() else cluster._host_reason(inputs, cluster.result_bytes(op, inputs))
            return (Decision(NUMPY, DecisionKind.SCALE_OUT, host, key=key), False) if host is not None else None
        target = cluster._dask_target()
        return (Decision(target, DecisionKind.SCALE_OUT, reason, key=key), False) if target is not None else None

    # ---- trials ------------------------------------------------------------------------------------------

    def _trial_worthy(self, decision: Decision, inputs: Any, key: CallKey) -> bool:
        """A GPU chosen by the cost policy for host data, no target forced (see ``dispatch.routing.trials``)."""
        return (self.history.trials and self.policy.name == "cost" and decision.target.name in GPU_TARGETS
                and key.forced is None and inputs.resident is None and bool(inputs.arrays))

    def _on_trial(self, key: CallKey, trial: trials.Trial) -> Decision:
        decision, final = trial.next()
        if not final and trial.last is not None and trial.last[1] == "all-device":
            self.floors_down()
        else:
            self.floors_back()
        if final:
            self.trials.finish(key, decision)
            self.decisions[key] = decision
            if trial.everything:
                self.pin(trial)
        return decision

    def _alone(self, trial: trials.Trial, op: Any, inputs: Any, key: CallKey) -> Decision:
        """A call while a trial times the program on NumPy alone, or on the device alone: there,
        each kind of call the policy prices (or a copy of host data) goes to the trial's device if
        it can run it, decided once per kind for the trial (``Trial.moved``); any other call (a
        view, a host op, one the device refused) as the router decides it. None of them is timed
        on its own: the trial times the program on this side, and a call timed with device events
        would cost the side what its verdict's program does not pay."""
        if trial.last[1] == "numpy":
            return Decision(NUMPY, DecisionKind.TRIAL, NUMPY_ALONE_REASON, key=key)
        decision = trial.moved.get(key)
        if decision is None:
            decision, _ = self.rules(op, inputs, key)
            device = trial.device.target
            priced = op.name in PLACED_COPIES or decision.kind in PRICED_KINDS
            if (priced and decision.target.name in HOST_TARGETS and device.name not in self.refusals.get(key, ())
                    and device.supports(op)):
                decision = Decision(device, DecisionKind.TRIAL, ALL_DEVICE_REASON, key=key)
            elif decision.sample:
                decision = copy.copy(decision)
                decision.sample = decision.explored = False
            trial.moved[key] = decision
        return decision

    def pin(self, trial: trials.Trial) -> None:
        device = trial.device.target
        for key, moved in trial.moved.items():
            if moved.target is not device:
                continue
            if key.devices == HOST_ONLY:
                op = op_named(key.op)
                floor, trip = self.host_floor(op), self.trip_floor(op)
                if (1 << key.bucket) - 1 <= trip:
                    continue  # the side sent it only because it sent everything (``floors_down``)
                under = (1 << (key.bucket - 1)) - 1  # the largest size under this key's bucket
                op.floor, op.trip_floor = min(floor, under), min(trip, under)
            self.pins[key] = self.decisions[key] = Decision(device, DecisionKind.TRIAL, trial.device.reason, key=key)

    def floors_down(self) -> None:
        """Send every priced call over ``SMALL`` to the router while the all-device side runs: under
        the floors, host data would stay on NumPy, and the side would time the program's host calls."""
        if self.lowered is not None:
            return
        self.lowered = {}
        for op in all_ops():
            if op.cataloged and not op.local and op.work not in ("host", "random"):
                self.lowered[op] = (op.floor, op.trip_floor)
                op.floor = op.trip_floor = SMALL

    def floors_back(self) -> None:
        if self.lowered is None:
            return
        for op, (floor, trip) in self.lowered.items():
            op.floor, op.trip_floor = floor, trip
        self.lowered = None

    def _on_kin_trial(self, key: CallKey) -> Decision | None:
        """A call of the kind on trial with its inputs elsewhere is one of its calls: k-means'
        ``X @ C.T`` is on trial while both operands are on the host, and once the centroids live on
        the device each later iteration makes it with them there. Counted, both sides time the
        program from one iteration to the next (counting only the trial's own key, the device side
        timed whole runs and the host side single iterations, and the host won). On the host side
        such a call runs on NumPy, its device operands brought back, so that the host side times
        the program as the host would run it. ``None``: decide it as any other call."""
        running = self.trials.running
        for trial_key, trial in running.items():
            if trial_key.elsewhere() != key.elsewhere() or trial_key == key:  # the same kind, other devices
                continue
            decision = self._on_trial(trial_key, trial)
            if decision is trial.host and trial_key in running:  # the host side, not its verdict
                return Decision(NUMPY, DecisionKind.TRIAL, decision.reason, key=key)
            return None
        return None

    # ---- learning from refusals and measurements ---------------------------------------------------

    def refused(self, op: Any, inputs: Any, target: Any, why: str) -> None:
        """``target`` cannot run this kind of call exactly: never ask it again for this key."""
        key = call_key(op, inputs)
        self.refusals.setdefault(key, set()).add(target.name)
        self.decisions.pop(key, None)
        self.trials.finish(key)
        if self.policy.name == "seed" or STATE.forced_name() not in (None, "auto"):
            self.decisions[key] = Decision(NUMPY, DecisionKind.FALLBACK, FALLBACK + why, key=key)

    def refused_this_call(self, op: Any, inputs: Any, target: Any, why: str) -> None:
        """``target`` refused this call for its arguments (``Unsupported`` that is not lasting)."""
        if STATE.forced_name() not in (None, "auto"):
            return  # forced: every call asks the forced target
        key = (call_key(op, inputs), target.name)
        count = self.argument_refusals[key] = self.argument_refusals.get(key, 0) + 1
        if count >= REFUSALS_TO_REMEMBER:
            self.refused(op, inputs, target, why)

    def made(self, key: tuple) -> None:
        """A call of kind ``key`` made a fresh array from host data: count it, and re-decide the key
        now and then, as what later calls on such arrays save on a device is learned."""
        self._redecide_now_and_then(key, self.history.made(key))

    def credit(self, roots: dict[tuple, int], gain: float) -> None:
        """A call on host arrays computed from the fresh arrays of ``roots`` (the bytes coming from
        each) would take ``gain`` seconds less on a device holding them all. One root is credited
        all of it; with several (``Q @ D.T`` of two normalised inputs), each is credited what is
        left once the others' bytes are copied in, which that root's placement alone would not
        spare: otherwise no root would ever be credited such calls, and none placed."""
        history = self.history
        if len(roots) == 1:
            history.credit(next(iter(roots)), gain)
            return
        models = self.policies["cost"].transfer_models()
        if not models:
            return
        total = sum(roots.values())
        for root, nbytes in roots.items():
            left = gain - min(m.to_device_seconds(total - nbytes) for m in models)
            if left > 0.0:
                history.credit(root, left)

    def _redecide_now_and_then(self, key: tuple, count: int) -> None:
        """Drop the cached decision for ``key`` when what it learned from reaches 1, 2, 4, 8...
        (samples, outcomes, arrays): cheap, and it converges."""
        if count & (count - 1) == 0 and key in self.decisions and key not in self.live.by_key:
            del self.decisions[key]  # (a planned call's plan is revised as a whole: ``Live.measured``)

    def hosted(self, key: tuple) -> None:
        """A host target made a result of a call of kind ``key``, where a device was priced for it:
        at the last one followed (``HOSTED_FOLLOWED`` in a row not sent to a device), the key is
        decided again."""
        if self.history.hosted(key) == HOSTED_FOLLOWED and key in self.decisions and key not in self.live.by_key:
            del self.decisions[key]

    def sent(self, key: tuple) -> None:
        """Such a result was then sent to a device: learn it, and re-decide the key now and then."""
        self._redecide_now_and_then(key, self.history.sent(key))

    def settle(self, key: tuple, stayed: bool) -> None:
        """A result a device computed from host data (a call of kind ``key``) was next used on that
        device (``stayed``) or read back to the host: learn it, and re-decide the key now and then."""
        self._redecide_now_and_then(key, self.history.settle(key, stayed))

    def observe(self, decision: Decision, seconds: float) -> None:
        """A timed call: teach the history (or the oracle), and re-decide this key next time."""
        if self.policy.name == "oracle":
            self.policy.observe(decision.key, decision.target.name, seconds)
            return
        self.history.observe(decision.key, decision.target.name, seconds, decision.explored)
        self._observed(decision.key, decision.target.name)

    def pend(self, decision: Decision, events: Any, host_s: float) -> None:
        """A call timed with device events: read once the device has passed them, never waited for."""
        for key, target in self.history.pend(events[0], events[1], host_s, decision.key, decision.target.name,
                                             decision.explored):
            self._observed(key, target)

    def _observed(self, key: tuple, target: str) -> None:
        stat = self.history.stats.get(key, {}).get(target)
        if stat is None:
            return  # a history that keeps nothing (as tests make)
        samples = stat.samples
        if key in self.live.by_key:
            self.live.measured(key)  # a planned call: does its plan still hold?
        if target == "numpy" and samples == LEARNED_FLOOR_SAMPLES:
            self.learn_floor(key)
        self._redecide_now_and_then(key, samples)

    def reset_oracle(self) -> None:
        self.policies["oracle"].tried.clear()
        self.caches["oracle"].clear()


def _numpy_best(per: dict, measured: bool = True) -> bool:
    """Whether NumPy keeps these calls on what was measured: no other target measured cheaper by
    the margin the router asks (``measured``: and NumPy was measured)."""
    mine = per.get("numpy")
    if mine is None:
        return not measured and not per
    return not any(s.seconds * (1 + KEEP_MARGIN) < mine.seconds for n, s in per.items() if n != "numpy")


def _say_when_a_calibration_no_longer_applies() -> None:
    """A calibration stored for other libraries (torch or CuPy added, removed or upgraded),
    hardware or dispatch is not used: say so once, naming the command, rather than route by
    the seed's table without a word."""
    here = calibration._default_path(calibration.fingerprint())  # (a bad file here was warned of by load)
    try:  # names listed, not globbed: pathlib compiles a pattern, 10-40 ms of a script's first routed call
        stale = any(name.startswith("calibration-") and name.endswith(".json") and name != here.name
                    for name in os.listdir(calibration.cache_dir()))
    except OSError:
        return
    if stale:
        logging.getLogger("dispatch").warning(
            "dispatch: this machine's calibration was measured with other libraries, hardware or dispatch; calls "
            "are routed by the seed's table until `python -m dispatch calibrate [--quick]` measures it again")


# ---- the process's router, and the module's functions as its methods ------------------------------------

ROUTER = Router()

selector = ROUTER.selector
policy = ROUTER.policy_name
clear_decisions = ROUTER.clear_decisions
set_selector = ROUTER.set_selector
set_policy = ROUTER.set_policy
use_calibration = ROUTER.use_calibration
host_floor = ROUTER.host_floor
trip_floor = ROUTER.trip_floor
cached = ROUTER.cached
decide = ROUTER.decide
candidates = ROUTER.candidates
refused = ROUTER.refused
refused_this_call = ROUTER.refused_this_call
made = ROUTER.made
credit = ROUTER.credit
hosted = ROUTER.hosted
sent = ROUTER.sent
settle = ROUTER.settle
observe = ROUTER.observe
pend = ROUTER.pend
reset_oracle = ROUTER.reset_oracle
set_exact = ROUTER.set_exact


def failed(op: Any, inputs: Any, target: Any, why: str) -> None:
    """``target`` failed at run time (out of memory, a driver error): NumPy ran this call.

    Failures can be transient (memory frees up), so the decision stays for the next call.
    """


def exact() -> bool:
    """Whether strict mode is on (``set_exact``): ops whose results may differ from NumPy's in the
    last bits on another target run on NumPy (``DISPATCH_EXACT``). Setting it drops the decisions
    made under the other mode, so neither the cache nor the memo serves one."""
    return STATE.exact


def oracle_observe(key: tuple, target: str, seconds: float) -> None:
    """The oracle policy learns one measured call (timed with a full synchronisation)."""
    ROUTER.policies["oracle"].observe(key, target, seconds)


def __getattr__(name: str) -> Any:
    if name == "history":  # the router's, which a test or a benchmark may replace: read it there
        return ROUTER.history
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


cluster.on_change(clear_decisions)  # decisions were made under another LIVE_ELEMENTS
