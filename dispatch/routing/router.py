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
from dispatch.routing.history import HOST_TARGETS, History, call_kind
from dispatch.routing.selector import BackendSelector
from dispatch.targets.numpy_target import NUMPY

__all__ = ["Decision", "clear_decisions", "credit", "decide", "exact", "failed", "host_floor", "made", "policy",
           "refused", "refused_this_call", "selector", "set_exact", "set_policy",
           "set_selector", "settle", "trip_floor", "use_calibration"]

# The ops torch on the CPU runs faster than NumPy on a multi-core host without a calibration
# (reductions from about 1e4 elements; it loses at sorting): the seed policy's SIMD tier uses it
# for these only, and a calibration measures the machine at hand instead.
TORCH_CPU_FASTER = frozenset({"sum", "mean", "nansum", "nanmean", "prod", "add.reduce"})
GPU_TARGETS = ("cupy", "torch-cuda", "torch-mps")
PRICED = (*HOST_TARGETS, *GPU_TARGETS)  # the targets the cost policy weighs: those a calibration measures
_PRICED = frozenset(PRICED)
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


class Decision:
    """Where one kind of call runs, why, and what it is expected to take."""

    __slots__ = ("calls", "explored", "gain", "hosted", "key", "live", "placeable", "predicted", "reason", "sample",
                 "settled", "target")

    def __init__(self, target: Any, reason: str, predicted: float | None = None, key: tuple = (),
                 sample: bool = False, explored: bool = False) -> None:
        self.target = target
        self.reason = reason
        self.predicted = predicted
        self.key = key
        self.sample = sample  # time this call and learn from it
        self.explored = explored
        self.gain = 0.0  # seconds a device holding the inputs would save on this call (placement credit)
        self.settled = False  # measured often enough: only one call in SETTLED_EVERY is timed
        self.calls = 0
        self.placeable = False  # its result, made from host data, could have been made on a device
        self.hosted = False  # a host target runs it where a device was priced: see if its result is sent there
        self.live = False  # decided for data large enough to need Dask: whether it still fits is asked each call

    def __repr__(self) -> str:
        p = f", predicted {self.predicted:.3g} s" if self.predicted is not None else ""
        return f"<decision {self.target.name}: {self.reason}{p}>"


_selector = BackendSelector()
_policy = "seed"
_models: dict[str, cost.TargetModel] = {}
# One decision cache per policy, so switching policies (benchmarks compare them) keeps each warm.
_caches: dict[str, dict[tuple, Decision]] = {"seed": {}, "cost": {}, "oracle": {}}
_decisions: dict[tuple, Decision] = _caches["seed"]
_floors: dict[Any, int] = {}
history = History()
_oracle: dict[tuple, dict[str, float]] = {}


# ---- configuration --------------------------------------------------------------------------------


def selector() -> BackendSelector:
    """The MoE table for this machine: derived from its calibration once one is loaded (what
    scikit-learn routing and ``recommend_backend`` read), else the seed policy's table."""
    _ensure_calibration()
    return _machine_selector if _machine_selector is not None and _policy != "seed" else _selector


_machine_selector: BackendSelector | None = None


def policy() -> str:
    """The policy in effect: ``"cost"`` once this machine is calibrated, else ``"seed"``."""
    _ensure_calibration()
    return _policy


def clear_decisions() -> None:
    global _lowered
    for cache in _caches.values():
        cache.clear()
    trials.clear()
    _pins.clear()
    _parked_floors.clear()
    _lowered = None
    _reset_floors()


def _reset_floors() -> None:
    _floors.clear()
    for op in all_ops():
        op.floor = op.trip_floor = -1


# The floors of the policies not in effect, like their decision caches: a policy switched back to
# keeps what it learned (``_learn_floor``), which its cached decisions would not teach it again.
_parked_floors: dict[str, tuple[dict, dict]] = {}


def _switch(name: str) -> None:
    global _policy, _decisions
    if name != _policy:
        trials.pause()
        _floors_back()
        _parked_floors[_policy] = ({op: (op.floor, op.trip_floor) for op in all_ops()}, dict(_floors))
        _policy = name
        _decisions = _caches[name]
        _reset_floors()
        parked = _parked_floors.pop(name, None)
        if parked is not None:
            ops, floors = parked
            for op, (floor, trip) in ops.items():
                op.floor, op.trip_floor = floor, trip
            _floors.update(floors)


def set_selector(new: BackendSelector) -> None:
    """Route the seed policy by another selector; clears cached decisions."""
    global _selector
    _selector = new
    clear_decisions()


def set_policy(name: str) -> None:
    """``"seed"``, ``"cost"`` (needs a calibration) or ``"oracle"`` (benchmarks)."""
    if name not in _caches:
        raise ValueError(f"unknown routing policy {name!r}: choose 'seed', 'cost' or 'oracle'")
    _ensure_calibration()
    if name == "cost" and not _models:
        raise RuntimeError("the cost policy needs a calibration: run dispatch.calibrate() first")
    _switch(name)


def use_calibration(cal: Any) -> None:
    """Route by this calibration's cost models from now on (the ``cost`` policy)."""
    global _calibration_checked
    _calibration_checked = True
    _models.clear()
    _models.update(cost.models_from(cal))
    devices = {}
    for model in _models.values():  # the calibration says where each target ran: nothing is probed
        if not model.device.is_host and model.transfer:
            devices.setdefault(model.device, model)
    cost.set_device_models(devices)
    startup.use_calibration(cal)  # start-up hook: the calibration's start-up prices (dispatch.routing.startup)
    global _machine_selector
    _machine_selector = BackendSelector.from_calibration(cal)
    clear_decisions()
    _switch("cost")


_calibration_checked = False


def _ensure_calibration() -> None:
    """Cold start: route by the stored calibration if this machine has one (checked once)."""
    global _calibration_checked
    if not _calibration_checked:
        _calibration_checked = True
        tuning.routing_starts()  # the process tuning routing needs (dispatch.base.tuning)
        try:
            found = calibration.load()
        except Exception:  # a broken cache must not break routing: the seed table serves
            found = None
        if found is not None:
            try:
                use_calibration(found)
            except Exception as exc:  # checked on load; whatever still fails it leaves the seed's table serving
                global _machine_selector
                _models.clear()
                cost.set_device_models({})
                _machine_selector = None
                _switch("seed")
                import warnings

                warnings.warn(f"dispatch could not route by the stored calibration ({type(exc).__name__}: {exc}); "
                              "calls are routed by the seed's table", RuntimeWarning, stacklevel=2)
        else:
            _say_when_a_calibration_no_longer_applies()
        startup.begin(history)  # start-up hook: what earlier runs learned; background bring-up


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


# ---- the fast path's floor ---------------------------------------------------------------------------


def host_floor(op: Any) -> int:
    """Sizes at or under this always run on NumPy, without asking the router."""
    floor = op.floor
    if floor >= 0:
        return floor
    _ensure_calibration()
    if _policy == "oracle":
        floor = 0  # the oracle measures every call itself, but the smallest (SMALL)
    elif _policy == "cost":
        floor = _cost_floor(op)
    else:
        floor = _floors.get(op.complexity)
        if floor is None:
            t = _selector.thresholds
            floor = min(v for v in (t.simd[op.complexity], t.gpu[op.complexity], 2**62) if v is not None)
            _floors[op.complexity] = floor
    floor = min(max(floor, SMALL), cluster.LIVE_ELEMENTS - 1)  # larger calls may need Dask: the router decides
    op.floor = floor
    return floor


def trip_floor(op: Any) -> int:
    """Host arrays at or under this size that carry no root (``ndarray._root``) run on NumPy
    without asking the router: no device wins the round trip of data the program only reads
    there once. At least ``host_floor``; above it under the cost policy on a machine with a
    device, and wherever NumPy was measured best for the sizes above it (``_learn_floor``)."""
    trip = op.trip_floor
    if trip >= 0:
        return trip
    floor = host_floor(op)
    trip = floor
    if _policy == "cost" and any(not m.device.is_host for m in _models.values()):
        trip = min(max(_cost_floor(op, round_trip=True), floor), cluster.LIVE_ELEMENTS - 1)
    op.trip_floor = trip
    return trip


def _cost_floor(op: Any, round_trip: bool = False) -> int:
    """The largest size (a power of two) at which NumPy is still cheapest for host data, even
    against a device that already held it, by more than routing the call would cost: larger
    calls go to the router, which follows what is computed from a fresh array (its lineage)
    and may make such arrays on a device."""
    rep = cost.representative(op)
    if rep is None or op.local or not op.cataloged or op.work in ("host", "random"):
        return 2**62 if (not op.cataloged or op.work in ("host", "random")) else 1 << 12
    cached = _floors.get((rep, round_trip))
    if cached is not None:
        return cached
    numpy_model = _models.get("numpy")
    if numpy_model is None:
        return 0
    floor = 0
    for exp in range(4, 31):
        n = 1 << exp
        mine = numpy_model.seconds(rep, _side(rep, n), "float64")
        # Sorts are also measured on integers, which torch and CuPy sort by radix sorts, far faster
        # than their float sorts. (A lexsort is measured on integers alone: its floor is theirs.)
        integer = numpy_model.seconds(rep, _side(rep, n), "int64") if rep in INTEGER_OPS else None
        if (mine is None and integer is None) or _beaten(rep, n, mine, ("float64", "float32"), round_trip) \
                or _beaten(rep, n, integer, ("int64",), round_trip):
            break
        floor = n
    _floors[(rep, round_trip)] = floor
    return floor


def _beaten(rep: str, n: int, mine: float | None, dtypes: tuple[str, ...], round_trip: bool) -> bool:
    """Whether another priced target runs ``rep`` on ``n`` elements, in the cheapest of ``dtypes``,
    faster than NumPy's ``mine`` by more than routing a call costs (a target that cannot price the
    first of ``dtypes`` is passed over)."""
    if mine is None:
        return False
    for name, model in _models.items():  # priced from the calibration alone: nothing is probed
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


def _side(rep: str, elements: int) -> float:
    return math.sqrt(elements) if rep in cost.SQUARE_OPS else float(elements)


# ---- deciding ----------------------------------------------------------------------------------------


def _key(op: Any, inputs: Any) -> tuple:
    return (op.name, inputs.dtypes, inputs.size.bit_length(), inputs.devices, STATE.forced_name(),
            inputs.layout)


def cached(key: tuple) -> Decision | None:
    """The decision the router holds for ``key`` now, if any."""
    return _decisions.get(key)


def decide(op: Any, inputs: Any, args: tuple, kwargs: dict) -> Decision:
    """The decision for this call (cached per key)."""
    key = _key(op, inputs)
    if STATE.exact and op.differs and (op.differs == "always" or not _integers(inputs.dtypes)):
        return _exact_decision(op, key)  # before trials and cached decisions: none may send it elsewhere
    if _lowered is not None and trials.all_device() is None:
        _floors_back()  # the all-device side ended away from its trial's call (its limit, or dropped)
    if trials.running and _policy == "cost":
        kin = _on_kin_trial(key)
        if kin is not None:
            return kin
        if key[4] is None and key not in trials.running:
            trial = trials.alone()
            if trial is not None:
                return _alone(trial, op, inputs, key)
    hit = _decisions.get(key)
    if hit is None and _pins and _policy == "cost":
        hit = _pins.get(key)
        if hit is not None:
            _decisions[key] = hit
    if hit is not None:
        if hit.live:  # free memory changes: the work may no longer fit where it ran
            scaled = _scale_out(op, inputs, key)
            if scaled is not None:
                return scaled[0]
        return hit
    trial = trials.active(key) if _policy == "cost" else None
    if trial is not None:
        return _on_trial(key, trial)
    decision, cacheable = _decide(op, inputs, key)
    cacheable = startup.after_decide(key, cacheable)  # start-up hook: not cached while a target starts
    if cacheable and _trial_worthy(decision, inputs, key):
        chosen = trials.verdict(key)
        if chosen is not None:
            decision = chosen if chosen.target is NUMPY else decision  # a device verdict: as decided now
        else:
            host = Decision(NUMPY, "trial: timing the program with this call on the host", key=key)
            host.live = decision.live
            if trials.start(key, decision, host):
                return _on_trial(key, trials.active(key))
            return decision  # another trial runs: this one waits, decided afresh at each call
    if cacheable:
        _decisions[key] = decision
    return decision


def _integers(dtypes: tuple) -> bool:
    """Every input is an integer or boolean array (whose sums and products are exact everywhere)."""
    return all(getattr(d, "kind", "f") in "biu" for d in dtypes)


def _exact_decision(op: Any, key: tuple) -> Decision:
    decision = _decisions.get(key)
    if decision is None or decision.target is not NUMPY:
        decision = Decision(NUMPY, f"{EXACT_REASON}{op.name} may differ from NumPy in the last bits elsewhere",
                            key=key)
        _decisions[key] = decision  # cached: the lane's memo serves it as any host decision
    return decision


def exact() -> bool:
    """Whether strict mode is on (``set_exact``)."""
    return STATE.exact


def set_exact(on: bool) -> None:
    """Strict mode on or off: ops whose results may differ from NumPy's in the last bits on another
    target run on NumPy (``DISPATCH_EXACT``). Decisions made under the other mode are dropped, so
    neither the cache nor the lane's memo serves one."""
    if STATE.exact != on:
        STATE.exact = on
        clear_decisions()


def _trial_worthy(decision: Decision, inputs: Any, key: tuple) -> bool:
    """A GPU chosen by the cost policy for host data, no target forced (see ``dispatch.routing.trials``)."""
    return (history.trials and _policy == "cost" and decision.target.name in GPU_TARGETS and key[4] is None
            and inputs.resident is None and bool(inputs.arrays))


def _on_trial(key: tuple, trial: trials.Trial) -> Decision:
    decision, final = trial.next()
    if not final and trial.last is not None and trial.last[1] == "all-device":
        _floors_down()
    else:
        _floors_back()
    if final:
        trials.finish(key, decision)
        _decisions[key] = decision
        if trial.everything:
            _pin(trial)
    return decision


def _alone(trial: trials.Trial, op: Any, inputs: Any, key: tuple) -> Decision:
    """A call while a trial times the program on NumPy alone, or on the device alone: there,
    each kind of call the policy prices (or a copy of host data) goes to the trial's device if
    it can run it, decided once per kind for the trial (``Trial.moved``); any other call (a
    view, a host op, one the device refused) as the router decides it. None of them is timed
    on its own: the trial times the program on this side, and each call timed with device
    events would cost the side what its verdict's program does not pay (on the fake CuPy,
    mlp small's side took 9.9 ms a run so, 7.3 ms untimed)."""
    if trial.last[1] == "numpy":
        return Decision(NUMPY, NUMPY_ALONE_REASON, key=key)
    decision = trial.moved.get(key)
    if decision is None:
        decision, _ = _decide(op, inputs, key)
        device = trial.device.target
        priced = op.name in PLACED_COPIES or decision.reason.startswith(("cost model", "history", "exploring"))
        if (priced and decision.target.name in HOST_TARGETS and device.name not in _refusals.get(key, ())
                and device.supports(op)):
            decision = Decision(device, ALL_DEVICE_REASON, key=key)
        elif decision.sample:
            decision = copy.copy(decision)
            decision.sample = decision.explored = False
        trial.moved[key] = decision
    return decision


# Kinds of call a trial's all-device verdict sent to the device (``trials.Trial.everything``):
# kept there whenever their cached decision is dropped, and their sizes of host data kept over
# the floors, so that each run of the program starts on the device as the winning side did.
# Host data only over the op's round-trip floor: a pin is never tried again, and its key is
# every program's (op, dtypes, size bucket, layout): a small pin would move other programs' calls
# of that key, which none of their own trials chose.
_pins: dict[tuple, Decision] = {}


def _pin(trial: trials.Trial) -> None:
    device = trial.device.target
    for key, moved in trial.moved.items():
        if moved.target is not device:
            continue
        if key[3] == HOST_ONLY:
            op = op_named(key[0])
            floor, trip = host_floor(op), trip_floor(op)
            if (1 << key[2]) - 1 <= trip:
                continue  # the side sent it only because it sent everything (``_floors_down``)
            under = (1 << (key[2] - 1)) - 1  # the largest size under this key's bucket
            op.floor, op.trip_floor = min(floor, under), min(trip, under)
        _pins[key] = _decisions[key] = Decision(device, trial.device.reason, key=key)


# The floors the all-device side lowered, to put back when it ends (``_floors_down``).
_lowered: dict[Any, tuple[int, int]] | None = None


def _floors_down() -> None:
    """Send every priced call over ``SMALL`` to the router while the all-device side runs: under
    the floors, host data would stay on NumPy, and the side would time the program's host calls."""
    global _lowered
    if _lowered is not None:
        return
    _lowered = {}
    for op in all_ops():
        if op.cataloged and not op.local and op.work not in ("host", "random"):
            _lowered[op] = (op.floor, op.trip_floor)
            op.floor = op.trip_floor = SMALL


def _floors_back() -> None:
    global _lowered
    if _lowered is None:
        return
    for op, (floor, trip) in _lowered.items():
        op.floor, op.trip_floor = floor, trip
    _lowered = None


def _on_kin_trial(key: tuple) -> Decision | None:
    """A call of the kind on trial with its inputs elsewhere is one of its calls: k-means'
    ``X @ C.T`` is on trial while both operands are on the host, and once the centroids live on
    the device each later iteration makes it with them there. Counted, both sides time the
    program from one iteration to the next (counting only the trial's own key, the device side
    timed whole runs and the host side single iterations, and the host won). On the host side
    such a call runs on NumPy, its device operands brought back, so that the host side times
    the program as the host would run it. ``None``: decide it as any other call."""
    for trial_key, trial in trials.running.items():
        # the same op, dtypes, size and layout; other devices (key: see ``_key``)
        if trial_key[:3] != key[:3] or trial_key[4:] != key[4:] or trial_key == key:
            continue
        decision = _on_trial(trial_key, trial)
        if decision is trial.host and trial_key in trials.running:  # the host side, not its verdict
            return Decision(NUMPY, decision.reason, key=key)
        return None
    return None


def _decide(op: Any, inputs: Any, key: tuple) -> tuple[Decision, bool]:
    forced = STATE.forced_name()
    if forced is not None and forced != "auto":
        target = targets.probe(forced)
        if target is None:
            why = targets.unavailable().get(forced)
            return Decision(NUMPY, f"{FALLBACK}forced {forced}, which is unavailable: {why}", key=key), True
        return Decision(target, f"forced {forced}", key=key), True
    if op.name in PLACED_COPIES and _policy == "cost" and inputs.resident is None and inputs.size > SMALL:
        return _decide_placement(op, inputs, key), True
    if op.name == "__getitem__" and _policy == "cost":
        gather = _gather_on_device(inputs, key)
        if gather is not None:
            return gather, False  # decided on the bytes of these arrays, not on the key's size bucket
    if op.local and inputs.arrays:  # before host ops: indexing (outside the catalog) stays where the data is
        return Decision(_engine_holding(inputs.arrays[0]), LOCAL_REASON, key=key), True
    if not op.cataloged or op.work in ("host", "random"):
        return Decision(NUMPY, "host op", key=key), True
    if inputs.size <= SMALL and all(d.is_host for d in inputs.devices):
        return Decision(NUMPY, SMALL_REASON, key=key), True
    scaled = _scale_out(op, inputs, key)
    if scaled is not None:
        return scaled
    _ensure_calibration()
    if _policy == "oracle":
        decision, cacheable = _decide_oracle(op, inputs, key)
    elif _policy == "cost":
        decision, cacheable = _decide_cost(op, inputs, key)
    else:
        decision, cacheable = _decide_seed(op, inputs, key), True
    decision.live = inputs.size >= cluster.LIVE_ELEMENTS
    return decision, cacheable


def _decide_seed(op: Any, inputs: Any, key: tuple) -> Decision:
    resident = inputs.resident
    if resident is not None:
        holder = next(a for a in inputs.arrays if _device(a) == resident)
        return Decision(_engine_holding(holder), f"heuristic: data on {resident}", key=key)
    tier = _selector.select_with_moe(op.complexity, inputs.size)
    target = _for_tier(tier, op)
    reason = f"heuristic: seed table says {tier}"
    if target.tier is not tier:  # the reason names where the call went, never only where it did not
        reason += f"; {target.name} runs it here"
    return Decision(target, reason, key=key)


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


def _reach(name: str, saving_s: float | None, key: tuple | None = None) -> Any:
    """``targets.probe(name)`` where the target is up, or may be brought up for a call priced to save
    ``saving_s`` there (``None``: not priced; only a library the program loaded may serve), else
    ``None``: the start-up pricing (``dispatch.routing.startup``)."""
    return targets.probe(name) if startup.admit(name, saving_s, key) else None


def candidates(op: Any, key: tuple) -> list[Any]:
    """Targets available here that may run ``op`` and have not refused this kind of call."""
    refused_here = _refusals.get(key, ())
    found = []
    for name in (*HOST_TARGETS, *GPU_TARGETS):
        target = targets.probe(name)
        if target is not None and name not in refused_here and target.supports(op):
            found.append(target)
    return found


def _scalar_result(op: Any) -> bool:
    """Reductions usually end in a scalar the program reads: a device pays the read-back."""
    return op.work == "reduce"


class _Priced:
    """A target as the calibration knows it (name and device), priced without importing it."""

    __slots__ = ("device", "name")

    def __init__(self, name: str, device: Any) -> None:
        self.name, self.device = name, device


def _decide_cost(op: Any, inputs: Any, key: tuple) -> tuple[Decision, bool]:
    refused_here = _refusals.get(key, ())
    scalar = _scalar_result(op)
    entering = inputs.resident is None  # every input on the host: a device pays the way back too
    p_return = history.p_return(key) if entering else 0.0
    placement = history.placement_credit(key) if entering else 0.0
    priced = []
    modeled: dict[str, float] = {}  # each target's price on the model alone, for ``retry``
    host_compute = device_compute = math.inf
    resident = inputs.resident  # the engines holding its inputs there: another pays ADOPT_S an input
    holders = [] if entering else [_engine_holding(a).name for a in inputs.arrays if _device(a) == resident]
    devices = _transfer_models()
    p_send = history.p_send(key) if devices else 0.0
    # a host target's result that a device is sent next (the program goes on there) pays that copy
    send = p_send * min(m.to_device_seconds(cost.result_bytes(op, inputs)) for m in devices) if p_send else 0.0
    for name, model in _models.items():
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
                if call_kind(key, name) not in history.ran and (entering or _ran_beside(key, name)):
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
        cheapest = _models[priced[0][1]].device
        if not cheapest.is_host:
            _prefer(priced, _home(cheapest), ENGINE_MARGIN)
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
        return Decision(NUMPY, "cost model: nothing else can be priced", key=key), True
    best_s, best_name, samples = ranked[0]
    # Calls predicted over the threshold are timed; so is the first call of each kind on the
    # target chosen for it, so that a model wrong by orders of magnitude under the threshold
    # (a thread pool woken for one small call: milliseconds, not microseconds) is caught once.
    sample = best_s >= history.sample_threshold_s or not samples
    # Alternatives are explored where the data already is: a transfer is priced from measured
    # bandwidths, and trying a device for host data costs the copy (and its first kernels).
    here = None if entering else inputs.resident
    near = [n for _, n, _ in priced if n != best_name and (
        _models[n].device.is_host if here is None else _models[n].device == here)]
    explore = history.explore(key, [(s, n) for s, n, _ in ranked if n == best_name or n in near]) if sample else None
    if explore is None and samples:  # one that lost its only call, though the model says it wins: once more
        # NumPy too, for host data, whatever the model says: it is what the program ran before, and
        # its only call may have been the program's first, which is often several times slower
        again = history.retry(key, [n for n, m in modeled.items() if n != best_name and (
            m < best_s or (n == "numpy" and entering))])
        target = targets.probe(again) if again is not None else None
        explore = again if target is not None and target.supports(op) else None
    if explore is not None:
        seconds = next(s for s, n, _ in priced if n == explore)
        return _placed(Decision(targets.get(explore), "exploring: measuring an alternative", seconds, key, True, True),
                       gain, entering), False
    reason = "history" if samples else "cost model"
    settled = samples >= SETTLED_SAMPLES
    if placement and best_name not in HOST_TARGETS:
        reason = "placement: later calls on its result run there"
    runner_up = f" (next: {ranked[1][1]})" if len(ranked) > 1 else ""
    if send and best_name in HOST_TARGETS:
        reason += f", {p_send:.0%} of its results sent to a device next"
    decision = _placed(Decision(targets.get(best_name), reason + runner_up, best_s, key, sample), gain, entering)
    if decision.placeable and best_name in HOST_TARGETS and history.roots_made(key) >= ROOTS_FOLLOWED:
        decision.placeable = False  # followed long enough: its arrays stay on the host
    decision.settled = settled
    decision.hosted = bool(devices) and best_name in HOST_TARGETS and history.hosted_unsent(key) < HOSTED_FOLLOWED
    if best_name == "numpy" and not sample and not decision.placeable:
        _learn_floor(key)  # measured, under the threshold: this decision is final, and routing it only costs
    return decision, True


def _prefer(priced: list[tuple], name: str | None, margin: float) -> bool:
    """Put ``name`` first in ``priced`` (sorted) if it is within ``margin`` of the cheapest;
    whether it is first."""
    mine = next((p for p in priced if p[1] == name), None)
    if mine is None or mine[0] > priced[0][0] * (1 + margin):
        return False
    priced.remove(mine)
    priced.insert(0, mine)
    return True


def _home(device: Any) -> str | None:
    """The engine a device's calls run on unless another is ``ENGINE_MARGIN`` cheaper: the
    first of ``GPU_TARGETS`` calibrated there."""
    return next((name for name in GPU_TARGETS if name in _models and _models[name].device == device), None)


def _transfer_models() -> list[cost.TargetModel]:
    """The calibrated devices that data can be copied to (their transfers measured)."""
    return [m for m in _models.values() if not m.device.is_host and m.transfer]


def _ran_beside(key: tuple, name: str) -> bool:
    """Whether another library on ``name``'s device has run this kind of call: data already
    on a device pays the first-use allowance only to prefer that one (torch's kernels are built,
    CuPy compiles its own), never to leave the device, where the op would then never run."""
    device = _models[name].device
    return any(other != name and call_kind(key, other) in history.ran and _models[other].device == device
               for other in GPU_TARGETS if other in _models)


def _decide_placement(op: Any, inputs: Any, key: tuple) -> Decision:
    """A copy of host data is made on a device when what later calls on it saved there, on
    average (``history.placement_credit``), repays the copy in and the chance of the way back."""
    credit = history.placement_credit(key)
    decision = Decision(NUMPY, LOCAL_REASON, key=key)
    numpy_model = _models.get("numpy")
    if credit > 0.0 and numpy_model is not None:
        here = cost.compute_seconds(numpy_model, op, inputs) or 0.0
        refused_here = _refusals.get(key, ())
        for name in GPU_TARGETS:
            model = _models.get(name)
            if model is None or name in refused_here:
                continue
            there = model.to_device_seconds(inputs.nbytes) + history.p_return(key) * cost.return_seconds(
                model, op, inputs) - credit
            target = _reach(name, here - there, key) if there < here else None
            if target is not None and target.supports(op):
                decision = Decision(target, "placement: later calls on this copy run there", there, key=key)
                break
    # no device, nothing to place; a copy that stayed on the host through ROOTS_FOLLOWED arrays, no more following
    decision.placeable = any(name in _models for name in GPU_TARGETS) and (
        decision.target is not NUMPY or history.roots_made(key) < ROOTS_FOLLOWED)
    return decision


def _placed(decision: Decision, gain: float, entering: bool) -> Decision:
    decision.gain = max(gain, 0.0)
    decision.placeable = entering and gain > 0.0
    return decision


def _decide_oracle(op: Any, inputs: Any, key: tuple) -> tuple[Decision, bool]:
    tried = _oracle.setdefault(key, {})
    for target in candidates(op, key):
        if target.name not in tried:
            return Decision(target, "oracle: trying every target", None, key, True, True), False
    if not tried:
        return Decision(NUMPY, "oracle: nothing else can run it", key=key), True
    best = min(tried, key=tried.get)
    return Decision(targets.get(best), "oracle: measured best", tried[best], key), True


def oracle_observe(key: tuple, target: str, seconds: float) -> None:
    """The oracle policy learns one measured call (timed with a full synchronisation)."""
    tried = _oracle.setdefault(key, {})
    tried[target] = min(seconds, tried.get(target, math.inf))


def reset_oracle() -> None:
    _oracle.clear()
    _caches["oracle"].clear()


_device = box.device


def _gather_on_device(inputs: Any, key: tuple) -> Decision | None:
    """``a[order]`` of a host array by an index array a device made (the order of a sort run
    there): the indexed array goes to the index, where what follows runs, rather than the
    index coming back, when the array holds at most twice the index's bytes (gathering 4M
    int64 by a device's sort order took 10 ms a call on the host, after 32 MB came back)."""
    ndarray = box.ndarray
    base, *index = inputs.arrays
    if type(base) is not ndarray or type(base._data) is not np.ndarray:
        return None
    for a in index:
        if (type(a) is ndarray and type(a._data) is not np.ndarray and a.dtype.kind in "iub"
                and a.nbytes > 0 and base.nbytes <= 2 * a.nbytes):
            target = _engine_holding(a)
            if target is not NUMPY and target.device == a.device:
                return Decision(target, "indexing: the index lives on a device, the indexed array goes there",
                                key=key)
    return None


def _engine_holding(a: Any) -> Any:
    engine = targets.engine_of(box.native(a))
    return NUMPY if engine.name == "torch-cpu" else engine


# ---- learning from refusals and measurements -----------------------------------------------------


FALLBACK = "fallback: "  # the reason of a remembered refusal starts with this
_refusals: dict[tuple, set[str]] = {}


def refused(op: Any, inputs: Any, target: Any, why: str) -> None:
    """``target`` cannot run this kind of call exactly: never ask it again for this key."""
    key = _key(op, inputs)
    _refusals.setdefault(key, set()).add(target.name)
    _decisions.pop(key, None)
    trials.finish(key)
    if _policy == "seed" or STATE.forced_name() not in (None, "auto"):
        _decisions[key] = Decision(NUMPY, FALLBACK + why, key=key)


# A refusal that depends on the call's arguments is asked again, but under automatic routing a
# kind of call refused this many times by a target is not offered to it any more: each try can
# cost a copy across the bus before the refusal.
REFUSALS_TO_REMEMBER = 2
_argument_refusals: dict[tuple, int] = {}


def refused_this_call(op: Any, inputs: Any, target: Any, why: str) -> None:
    """``target`` refused this call for its arguments (``Unsupported`` that is not lasting)."""
    if STATE.forced_name() not in (None, "auto"):
        return  # forced: every call asks the forced target
    key = (_key(op, inputs), target.name)
    count = _argument_refusals[key] = _argument_refusals.get(key, 0) + 1
    if count >= REFUSALS_TO_REMEMBER:
        refused(op, inputs, target, why)


def failed(op: Any, inputs: Any, target: Any, why: str) -> None:
    """``target`` failed at run time (out of memory, a driver error): NumPy ran this call.

    Failures can be transient (memory frees up), so the decision stays for the next call.
    """


def made(key: tuple) -> None:
    """A call of kind ``key`` made a fresh array from host data: count it, and re-decide the key
    now and then, as what later calls on such arrays save on a device is learned."""
    _redecide_now_and_then(key, history.made(key))


def credit(roots: dict[tuple, int], gain: float) -> None:
    """A call on host arrays computed from the fresh arrays of ``roots`` (the bytes coming from
    each) would take ``gain`` seconds less on a device holding them all. One root is credited
    all of it; with several (``Q @ D.T`` of two normalised inputs), each is credited what is
    left once the others' bytes are copied in, which that root's placement alone would not
    spare: otherwise no root would ever be credited such calls, and none placed."""
    if len(roots) == 1:
        history.credit(next(iter(roots)), gain)
        return
    models = _transfer_models()
    if not models:
        return
    total = sum(roots.values())
    for root, nbytes in roots.items():
        left = gain - min(m.to_device_seconds(total - nbytes) for m in models)
        if left > 0.0:
            history.credit(root, left)


def _redecide_now_and_then(key: tuple, count: int) -> None:
    """Drop the cached decision for ``key`` when what it learned from reaches 1, 2, 4, 8...
    (samples, outcomes, arrays): cheap, and it converges."""
    if count & (count - 1) == 0:
        _decisions.pop(key, None)


def hosted(key: tuple) -> None:
    """A host target made a result of a call of kind ``key``, where a device was priced for it:
    at the last one followed (``HOSTED_FOLLOWED`` in a row not sent to a device), the key is
    decided again."""
    if history.hosted(key) == HOSTED_FOLLOWED:
        _decisions.pop(key, None)


def sent(key: tuple) -> None:
    """Such a result was then sent to a device: learn it, and re-decide the key now and then."""
    _redecide_now_and_then(key, history.sent(key))


def settle(key: tuple, stayed: bool) -> None:
    """A result a device computed from host data (a call of kind ``key``) was next used on that
    device (``stayed``) or read back to the host: learn it, and re-decide the key now and then."""
    _redecide_now_and_then(key, history.settle(key, stayed))


def observe(decision: Decision, seconds: float) -> None:
    """A timed call: teach the history (or the oracle), and re-decide this key next time."""
    if _policy == "oracle":
        oracle_observe(decision.key, decision.target.name, seconds)
        return
    history.observe(decision.key, decision.target.name, seconds, decision.explored)
    _observed(decision.key, decision.target.name)


def pend(decision: Decision, events: Any, host_s: float) -> None:
    """A call timed with device events: read once the device has passed them, never waited for."""
    for key, target in history.pend(events[0], events[1], host_s, decision.key, decision.target.name,
                                    decision.explored):
        _observed(key, target)


def _observed(key: tuple, target: str) -> None:
    stat = history.stats.get(key, {}).get(target)
    if stat is None:
        return  # a history that keeps nothing (as tests make)
    samples = stat.samples
    if target == "numpy" and samples == LEARNED_FLOOR_SAMPLES:
        _learn_floor(key)
    _redecide_now_and_then(key, samples)


# A kind of call measured this many times on the target chosen for it is timed one call in
# SETTLED_EVERY from then on: still corrected if it drifts, no longer paying a timing per call.
SETTLED_SAMPLES = 16
SETTLED_EVERY = 8

# NumPy measured this many times on a kind of host call, and nothing measured faster: host
# arrays of that size skip the router from then on.
LEARNED_FLOOR_SAMPLES = 8


def _learn_floor(key: tuple) -> None:
    """Raise the op's round-trip floor over this key's size bucket: routing such calls only
    ever chose NumPy, and cost the router's time each call. The buckets between the floor and
    this one go with it unless another target was measured faster in one of them: a target
    that loses at a size loses at the smaller ones, where its fixed costs weigh more."""
    name, _, bucket, devices, forced = key[:5]
    if (forced is not None or devices != HOST_ONLY or not _numpy_best(history.stats.get(key, {}))
            or history.p_send(key)  # its results go on to a device: the router must keep seeing them
            or startup.priced_out(key)  # start-up hook: a target priced cheaper may come up later in the run
            or any(k[0] == name and k[3] == HOST_ONLY and k[2] <= bucket for k in _pins)):  # (``_pin``)
        return
    try:
        op = op_named(name)
    except KeyError:
        return
    low = (trip_floor(op) + 1).bit_length()
    if bucket < low or any(not _numpy_best(per, measured=False) for k, per in history.stats.items()
                           if k[0] == name and low <= k[2] < bucket and k[3] == HOST_ONLY and k[4] is None):
        return
    op.trip_floor = min((1 << bucket) - 1, cluster.LIVE_ELEMENTS - 1)


def _numpy_best(per: dict, measured: bool = True) -> bool:
    """Whether NumPy keeps these calls on what was measured: no other target measured cheaper by
    the margin the router asks (``measured``: and NumPy was measured)."""
    mine = per.get("numpy")
    if mine is None:
        return not measured and not per
    return not any(s.seconds * (1 + KEEP_MARGIN) < mine.seconds for n, s in per.items() if n != "numpy")


# ---- scale-out: asked before the policy --------------------------------------------------------------


def _scale_out(op: Any, inputs: Any, key: tuple) -> tuple[Decision, bool] | None:
    """The scale-out rule, asked before the routing policy: ``(decision, cacheable)`` for Dask,
    or ``None`` to let the policy decide. Data in Dask stays there; operands or a result too
    large for the device holding them go there where a connected cluster can hold them, else to
    the host where it can (``dispatch.cluster``'s sizes)."""
    if DASK in inputs.devices:
        target = cluster._dask_target()
        if target is not None:
            return Decision(target, "data in dask", key=key), True
        return None
    if inputs.size < cluster.LIVE_ELEMENTS:
        return None
    if "dask" in _refusals.get(key, ()):
        return None
    reason = cluster._operand_reason(op, inputs)
    if reason is None:
        host = None if cluster.connected() else cluster._host_reason(inputs, cluster.result_bytes(op, inputs))
        return (Decision(NUMPY, host, key=key), False) if host is not None else None
    target = cluster._dask_target()
    return (Decision(target, reason, key=key), False) if target is not None else None


cluster.on_change(clear_decisions)  # decisions were made under another LIVE_ELEMENTS
