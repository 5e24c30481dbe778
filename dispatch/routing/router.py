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
   - ``cost`` (once this machine is calibrated): on a machine with a device, the calls of the
     region running now (since the program last read an array on the host, or since its loop
     body started again) are recorded, and a region met again is planned as a whole, transfers
     included (``dispatch.routing.live``, ``dispatch.routing.planner``): its calls' kinds are
     decided by its plan, cached, and served to the loop                          "plan ..."
     a call no plan decides is priced on every target allowed for the op (compute + copies of
     inputs not on it, a valid mirror's free + read-back of a scalar result; a device taking
     host data pays the copy of its result back too: alone, it must win the round trip; not
     where a plan of the script's last run put such calls there, its region's next calls
     reading the result there: ``startup.planned_before``),
     blended with what calls measured (``history``); the cheapest wins, but the target holding
     the inputs (NumPy for host data) keeps a call unless another is ``KEEP_MARGIN`` cheaper
                                                                       "cost model" / "history"
   - ``seed`` (cold start): data already on a device stays there; otherwise the seed's MoE
     table on the op's complexity and element count, each tier mapped to the best target
     available here (GPU: cupy, torch-cuda, torch-mps; SIMD: torch-cpu where it is known to be
     faster, on a host of ``TORCH_CPU_MIN_CORES`` cores or more; SCALAR: numpy)    "heuristic"
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
and the call path's memo, refusals, history, live regions, policy (a ``Policy``: ``SeedPolicy``,
``CostPolicy``, ``OraclePolicy``, each with ``decide(op, inputs, key)``) and selectors. A decision
says which rule made it (``DecisionKind``) and why in words (its reason, for the trace). The
module's functions (``decide``, ``host_floor``, ``set_policy``...) are the router's methods.
The router's ``epoch`` moves whenever a decision is dropped or replaced, or a region starts
being recorded: the memo, in Python and compiled, serves an entry only at the epoch it was checked at.
"""

from __future__ import annotations

import importlib.util
import math
import os
import platform
import sys
from typing import Any

from dispatch import cluster, targets
from dispatch.base import box, tuning
from dispatch.base.devices import DASK, HOST_ONLY
from dispatch.base.numpy_catalog import DEVICE_DRAWS
from dispatch.base.ops import all_ops, op_named
from dispatch.base.state import STATE
from dispatch.base.tiers import Backend
from dispatch.routing import calibration, cost, startup
from dispatch.routing.decisions import CallKey, Decision, DecisionKind, Watched, is_forced
from dispatch.routing.floors import SMALL, bounded, seed_floor
from dispatch.routing.floors import use as _give_floors
from dispatch.routing.history import HOST_TARGETS, SETTLED_EVERY, History, calls_counted, settled
from dispatch.routing.live import Live
from dispatch.routing.selector import BackendSelector
from dispatch.targets.numpy_target import NUMPY

__all__ = ["ROUTER", "SETTLED_EVERY", "CallKey", "CostPolicy", "Decision", "DecisionKind", "OraclePolicy", "Policy",
           "Router", "SeedPolicy", "call_key", "clear_decisions", "decide", "exact", "failed", "host_floor",
           "policy", "refused", "refused_this_call", "selector", "set_exact", "set_policy", "set_selector",
           "trip_floor", "use_calibration"]

# The ops torch on the CPU runs faster than NumPy on a multi-core host without a calibration
# (reductions from about 1e4 elements; it loses at sorting): the seed policy's SIMD tier uses it
# for these only, and a calibration measures the machine at hand instead.
TORCH_CPU_FASTER = frozenset({"sum", "mean", "nansum", "nanmean", "prod", "add.reduce"})
# Its edge there is its threads: on fewer cores it loses at reductions along an axis or of
# integers, and its threads, spinning after each call, take the core the NumPy calls around
# it run on. So the seed uses it only on a host with this many cores for the process.
TORCH_CPU_MIN_CORES = 4
HOST_CORES = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
GPU_TARGETS = targets.registry.gpu_names()  # each device's home first (live views of the registry)
PRICED = targets.registry.priced_names()  # the targets the cost policy weighs: those a calibration measures
_PRICED = PRICED
# The target holding a call's inputs keeps the call unless another is priced this much cheaper:
# NumPy for host data (what the program ran before), the engine holding device data. A call's
# own timing misses what a target costs the calls around it (caches, waking threads, fresh
# pages; on a device, the next call's crossing back by DLPack), and a closer call is within the
# noise of a shared machine, where the calls would go back and forth as their timings cross.
KEEP_MARGIN = 0.2
# Why a call runs where it does without being priced; a trace records calls under the floors,
# which skip the router (``dispatch.arrays._call``), with the same words.
LOCAL_REASON = "local: where the data is"
SMALL_REASON = "small: NumPy on the host"
EXACT_REASON = "exact: "  # strict mode keeps the call on NumPy (rule 0)
FLOOR_REASON = "floor: NumPy, at a size where no other target pays"


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



def _reach(name: str, saving_s: float | None, key: CallKey | None = None, on_numpy_s: float | None = None) -> Any:
    """``targets.probe(name)`` where the target is up, or may be brought up for a call priced to save
    ``saving_s`` there against the best engine up (``None``: not priced; only a library the program
    loaded may serve) and ``on_numpy_s`` against NumPy, else ``None``: the start-up pricing
    (``dispatch.routing.startup``)."""
    return targets.probe(name) if startup.admit(name, saving_s, key, on_numpy_s) else None


def _not_up(name: str) -> str:
    """Why the seed's table leaves target ``name`` down: its library is not installed, or the
    program has not imported it (the table starts no library; a calibration prices start-ups)."""
    library = startup.LIBRARY.get(name, name)
    if importlib.util.find_spec(library) is None:
        return f"{library} is not installed"
    return f"{name} is not up ({library} not imported)"


def _no_gpu_up() -> str:
    """Why no GPU target is up, for the seed's reasons: none here, or none started."""
    if not calibration._driver_gpus() and not (sys.platform == "darwin" and platform.machine() == "arm64"):
        return "no GPU here"
    installed = [n for n in GPU_TARGETS if importlib.util.find_spec(startup.LIBRARY.get(n, n)) is not None]
    return _not_up(installed[0]) if installed else "no GPU library is installed"


def _engine_holding(a: Any) -> Any:
    engine = targets.engine_of(box.native(a))
    return NUMPY if engine.name == "torch-cpu" else engine


def _integers(dtypes: tuple) -> bool:
    """Every input is an integer or boolean array (whose sums and products are exact everywhere)."""
    return all(getattr(d, "kind", "f") in "biu" for d in dtypes)


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
        target, why = self._for_tier(tier, op)
        table = f"heuristic: seed table: {op.complexity.name} on {inputs.size:,} elements -> {tier.name}"
        return Decision(target, DecisionKind.SEED, table + why, key=key)

    @staticmethod
    def _for_tier(tier: Backend, op: Any) -> tuple[Any, str]:
        """The target that runs the table's ``tier`` for ``op`` here, and the words that end the
        reason after the tier: where the call runs, and why there when it is not the tier's."""
        lacking = ""
        if tier is Backend.GPU:
            reached = [t for t in (_reach(name, None) for name in GPU_TARGETS) if t is not None]
            for target in reached:
                if target.supports(op):
                    return target, f": {target.name}"
            lacking = f", but no GPU target here runs {op.name}" if reached else f", but {_no_gpu_up()}"
            tier = Backend.SIMD
        if tier is Backend.SIMD and op.name in TORCH_CPU_FASTER:
            if HOST_CORES < TORCH_CPU_MIN_CORES:
                return NUMPY, f"{lacking}: NumPy (torch-cpu's threads do not pay on {HOST_CORES} cores)"
            target = _reach("torch-cpu", None)
            if target is not None:
                return target, f"{lacking}: torch-cpu (faster than NumPy at {op.name})"
            return NUMPY, f"{lacking}, and {_not_up('torch-cpu')}: NumPy"
        if tier is Backend.SIMD:  # NumPy's own vectorised loops and threaded BLAS
            return NUMPY, f"{lacking}: NumPy (the seed sends only sum, mean and prod to torch-cpu)"
        return NUMPY, ": NumPy"

    def floor(self, op: Any) -> int:
        known = self.router.floors
        floor = known.get(op.complexity)
        if floor is None:
            floor = known[op.complexity] = seed_floor(self.router.seed_selector.thresholds, op.complexity)
        return floor


class _Priced:
    """A target as the calibration knows it (name and device), priced without importing it."""

    __slots__ = ("device", "name")

    def __init__(self, name: str, device: Any) -> None:
        self.name, self.device = name, device


class CostPolicy(Policy):
    """Once this machine is calibrated: every target allowed for the op priced (see the module's
    rule 5): a region's plan, else the cheapest within the keeper's margin."""

    name = "cost"

    def decide(self, op: Any, inputs: Any, key: CallKey) -> Decision:
        """A call no plan decides: each target's price (its compute, the copies of inputs not
        already there, a valid mirror's free; a device taking host data also pays the copy of
        its result back: alone, it must win the round trip, unless the script's last run
        planned such calls there with the calls after them), blended with what such calls
        measured; the cheapest wins, but the engine holding the inputs (NumPy for host data)
        keeps the call unless another is ``KEEP_MARGIN`` cheaper."""
        router = self.router
        models, history = router.models, router.history
        refused_here = router.refusals.get(key, ())
        scalar = op.work == "reduce"  # reductions usually end in a scalar the program reads: a device pays it
        entering = inputs.resident is None
        resident = inputs.resident
        holders = [] if entering else [_engine_holding(a).name for a in inputs.arrays if _device(a) == resident]
        priced = []
        modeled: dict[str, float] = {}  # each target's price on the model alone, for ``retry``
        followed = startup.planned_before(key) if entering else {}  # its region's next calls read the result there
        for name, model in models.items():
            if name not in _PRICED or name in refused_here:
                continue
            model_s = cost.estimate(model, _Priced(name, model.device), op, inputs, scalar)
            seconds, samples = history.blended(key, name, model_s)
            if seconds is None:
                continue
            back = cost.return_seconds(model, op, inputs) \
                if entering and not model.device.is_host and name not in followed else 0.0
            priced.append((seconds + back, name, samples))
            if model_s is not None:
                modeled[name] = model_s + back
        priced.sort()
        keeper = "numpy" if entering else holders[0] if holders and len(set(holders)) == 1 else None
        _prefer(priced, keeper, KEEP_MARGIN)
        # Probed cheapest first, and only the best and the alternatives close enough to be explored:
        # a library that cannot win this call is not imported for it.
        ranked = []
        # A target down is priced against the best one up (NumPy at least, and those just brought
        # up for this call) or coming up in the background: a second engine comes up only for what
        # it saves over the first, not over NumPy (torch's import, seconds, for a call CuPy serves).
        coming = {n for _, n, _ in priced if startup.coming(n)}
        on_numpy = next((s for s, n, _ in priced if n == "numpy"), None)
        for seconds, name, samples in priced:
            if ranked and seconds > history.explore_ratio * ranked[0][0]:
                break
            bar = min((s for s, n, _ in priced if n != name and n in coming), default=None)
            target = _reach(name, bar - seconds if bar is not None else None, key,
                            on_numpy - seconds if on_numpy is not None else None)
            if target is not None:
                coming.add(name)  # up now
                if target.supports(op):
                    ranked.append((seconds, name, samples))
        if not ranked:
            return Decision(NUMPY, DecisionKind.COST, "cost model: nothing else can be priced", key=key)
        best_s, best_name, samples = ranked[0]
        # Calls predicted over the threshold are timed; so is the first call of each kind on the
        # target chosen for it, so that a model wrong by orders of magnitude under the threshold
        # (a thread pool woken for one small call: milliseconds, not microseconds) is caught once.
        # And so are calls a target left down for its start-up was priced to save on: each counts
        # toward bringing it up (``startup.forgo``).
        sample = best_s >= history.sample_threshold_s or not samples or startup.priced_out(key)
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
                m < best_s or (n == "numpy" and entering))], best_s)
            target = _reach(again, 0.0) if again is not None else None  # only a target up already
            explore = again if target is not None and target.supports(op) else None
        if explore is not None:
            seconds = next(s for s, n, _ in priced if n == explore)
            return Decision(targets.get(explore), DecisionKind.EXPLORING, "exploring: measuring an alternative",
                            seconds, key, True, True)
        kind, reason = (DecisionKind.HISTORY, "history") if samples else (DecisionKind.COST, "cost model")
        if best_name in followed:
            reason += ", where the last run's plan put it"
        runner_up = f" (next: {ranked[1][1]})" if len(ranked) > 1 else ""
        decision = Decision(targets.get(best_name), kind, reason + runner_up, best_s, key, sample)
        decision.settled = settled(samples)
        if best_name == "numpy" and not sample:
            router.learn_floor(key)  # measured, under the threshold: this decision is final, and routing it only costs
        return decision

    def transfer_models(self) -> list[cost.TargetModel]:
        """The calibrated devices that data can be copied to (their transfers measured)."""
        return [m for m in self.router.models.values() if not m.device.is_host and m.transfer]

    def floor(self, op: Any) -> int:
        """The largest size (a power of two) at which NumPy is still cheapest for host data
        (``cost.numpy_floor``): larger calls go to the router, whose regions' plans may move
        them with the calls around them."""
        return cost.numpy_floor(self.router.models, _PRICED, op, self.router.floors)


def _prefer(priced: list[tuple], name: str | None, margin: float) -> bool:
    """Put ``name`` first in ``priced`` (sorted) if it is within ``margin`` of the cheapest;
    whether it is first."""
    mine = next((p for p in priced if p[1] == name), None)
    if mine is None or mine[0] > priced[0][0] * (1 + margin):
        return False
    priced.remove(mine)
    priced.insert(0, mine)
    return True


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
    the refusals, history and live regions. ``epoch`` counts the changes to the decisions and
    the starts of a region's recording: a memo entry holds the epoch it was checked at, and
    serves a call (from Python or the compiled path) only while the epoch is the same; a changed
    epoch sends it back to the Python path, which checks it again (``dispatch.arrays._call``).
    """

    # ``epoch`` and ``memo`` are read by the compiled path by their slots' offsets (``bind_router``
    # in dispatch/arrays/_fastpath.c): renaming either fails at import, never silently.
    __slots__ = ("__dict__", "__weakref__", "epoch", "memo")

    def __init__(self) -> None:
        self.epoch = 0
        self.memo: dict[tuple, tuple] = {}
        self.history = History()
        self.seed_selector = BackendSelector()
        self.machine_selector: BackendSelector | None = None
        self._selector_from: Any = None  # the calibration the machine's table is derived from, when first asked
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
        self.calibration_checked = False
        self.priced = _PRICED  # the targets a region's calls are priced on
        self.live = Live(self)  # the region running now, and the plans in force (``dispatch.routing.live``)
        self.came_up = False  # a target came up since the last decision: those cached were priced without it
        targets.registry.on_up(self._came_up)

    def _came_up(self, name: str) -> None:
        if name != "numpy":
            startup.came_up(name)
            self.came_up = True
            self.changed()  # the memo asks again, and ``decide`` drops what was priced without it

    def changed(self) -> None:
        """The decisions changed, or a region is recorded: what the memo served under them is checked again."""
        self.epoch += 1

    # ---- configuration -------------------------------------------------------------------------------

    def selector(self) -> BackendSelector:
        """The MoE table for this machine: derived from its calibration once one is loaded (what
        scikit-learn routing and ``recommend_backend`` read), else the seed policy's table."""
        self.ensure_calibration()
        if self._selector_from is not None:  # derived on first ask: a script's routed calls never read it
            cal, self._selector_from = self._selector_from, None
            try:
                self.machine_selector = BackendSelector.from_calibration(cal)
            except Exception as exc:  # as a calibration that cannot route: the seed's table answers
                import warnings

                warnings.warn(f"dispatch could not derive this machine's table from its calibration "
                              f"({type(exc).__name__}: {exc}); the seed's table answers", RuntimeWarning, stacklevel=2)
        machine = self.machine_selector
        return machine if machine is not None and self.policy.name != "seed" else self.seed_selector

    def policy_name(self) -> str:
        """The policy in effect: ``"cost"`` once this machine is calibrated, else ``"seed"``."""
        self.ensure_calibration()
        return self.policy.name

    def clear_decisions(self) -> None:
        for cache in self.caches.values():
            cache.clear()
        self.parked_floors.clear()
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
        self.machine_selector, self._selector_from = None, cal
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
            self.machine_selector = self._selector_from = None
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
        floor = op.floor = bounded(self.policy.floor(op))
        return floor

    def trip_floor(self, op: Any) -> int:
        """Host arrays at or under this size run on NumPy without asking the router: the op's
        floor (``host_floor``), raised wherever NumPy was measured best for the sizes above it
        (``learn_floor``). (The compiled path reads it as ``op.trip_floor``.)"""
        trip = op.trip_floor
        if trip >= 0:
            return trip
        trip = op.trip_floor = self.host_floor(op)
        return trip

    def learn_floor(self, key: CallKey) -> None:
        """Raise the op's round-trip floor over this key's size bucket: routing such calls only
        ever chose NumPy, and cost the router's time each call. The buckets between the floor and
        this one go with it unless another target was measured faster in one of them: a target
        that loses at a size loses at the smaller ones, where its fixed costs weigh more."""
        name, bucket = key.op, key.bucket
        stats = self.history.stats
        if (key.forced is not None or key.devices != HOST_ONLY or not _numpy_best(stats.get(key, {}))
                or self.live.placing  # a region's plan may move such calls with the rest: the router must see them
                or startup.priced_out(key)):  # start-up hook: a target priced cheaper may come up later in the run
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
        if self.came_up:  # calls priced while a target was down (its start-up unpaid) are priced again
            self.came_up = False
            for cache in self.caches.values():  # the floors stay (none is learned over a call priced out)
                cache.clear()
            placing = self.live.placing
            self.live.arrived()
            if self.live.placing and not placing:  # floors learned while no plan could move a call: now one may
                self._reset_floors()
            self.changed()
        key = call_key(op, inputs)
        if STATE.exact and op.differs and (op.differs == "always" or not _integers(inputs.dtypes)):
            return self._exact(op, key)  # before cached decisions: none may send it elsewhere
        decisions = self.decisions
        hit = decisions.get(key)
        if hit is not None:
            if hit.live:  # free memory changes: the work may no longer fit where it ran
                scaled = self._scale_out(op, inputs, key)
                if scaled is not None:
                    return scaled[0]
            return hit
        self.live.resume(key)  # a kind of call no region made yet: the region is recorded again
        decision, cacheable = self.rules(op, inputs, key)
        cacheable = startup.after_decide(key, cacheable)  # start-up hook: not cached while a target starts
        if cacheable:
            decisions[key] = decision
        return decision

    def rules(self, op: Any, inputs: Any, key: CallKey) -> tuple[Decision, bool]:
        """Rules 1 to 5 of the module's list: the decision, and whether it may be cached."""
        forced = key.forced
        if is_forced(forced):
            target = targets.probe(forced)
            if target is None:
                return Decision(NUMPY, DecisionKind.FALLBACK, FALLBACK + targets.forced_but_unavailable(forced),
                                key=key), True
            return Decision(target, DecisionKind.FORCED, f"forced {forced}", key=key), True
        if op.local and inputs.arrays:  # before host ops: indexing (outside the catalog) stays where the data is
            return Decision(_engine_holding(inputs.arrays[0]), DecisionKind.LOCAL, LOCAL_REASON, key=key), True
        if not op.cataloged or op.work == "host" or (op.work == "random" and op.name not in DEVICE_DRAWS):
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

    # ---- learning from refusals and measurements ---------------------------------------------------

    def refused(self, op: Any, inputs: Any, target: Any, why: str) -> None:
        """``target`` cannot run this kind of call exactly: never ask it again for this key."""
        key = call_key(op, inputs)
        self.refusals.setdefault(key, set()).add(target.name)
        self.decisions.pop(key, None)
        if self.policy.name == "seed" or is_forced(STATE.forced_name()):
            self.decisions[key] = Decision(NUMPY, DecisionKind.FALLBACK, FALLBACK + why, key=key)

    def refused_this_call(self, op: Any, inputs: Any, target: Any, why: str) -> None:
        """``target`` refused this call for its arguments (``Unsupported`` that is not lasting)."""
        if is_forced(STATE.forced_name()):
            return  # forced: every call asks the forced target
        key = (call_key(op, inputs), target.name)
        count = self.argument_refusals[key] = self.argument_refusals.get(key, 0) + 1
        if count >= REFUSALS_TO_REMEMBER:
            self.refused(op, inputs, target, why)

    def _redecide_now_and_then(self, key: tuple, count: int) -> None:
        """Drop the cached decision for ``key`` when what it learned from reaches 1, 2, 4, 8...
        samples: cheap, and it converges."""
        if count & (count - 1) == 0 and key in self.decisions and key not in self.live.by_key:
            del self.decisions[key]  # (a planned call's plan is revised as a whole: ``Live.measured``)

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
        startup.forgo(key, calls_counted(samples) - calls_counted(samples - 1))  # the calls this timing stands for
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
    names = calibration.stored()
    if not names:  # none stored: the fingerprint is not read
        return
    here = calibration._default_path(calibration.fingerprint())  # (a bad file here was warned of by load)
    stale = any(name != here.name for name in names)
    if stale:
        import logging  # here: a script's first routed call does not load it

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


def __getattr__(name: str) -> Any:
    if name == "history":  # the router's, which a test or a benchmark may replace: read it there
        return ROUTER.history
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


cluster.on_change(clear_decisions)  # decisions were made under another LIVE_ELEMENTS
_give_floors(ROUTER)  # the host shortcut's floors are the router's from now on (``floors``)
