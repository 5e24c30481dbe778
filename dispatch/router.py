"""The router: which target runs a call, and why.

Order of the rules, first match wins:

1. a forced target (``set_backend``, ``using``, ``DISPATCH_BACKEND``);
2. host-only ops (I/O, printing, random streams, functions outside the catalog): NumPy;
3. local ops (views, casts, indexing): where their data is;
4. data resident on a device: a target on that device (moving it back is what costs);
5. the seed's MoE table on the op's complexity and the element count, each tier mapped to the
   best target available here: SCALAR -> numpy; SIMD -> torch-cpu for ops known to be faster
   there, else numpy; GPU -> cupy, torch-cuda or torch-mps.

Decisions are cached by (op, dtypes, size bucket, devices); a target that refused a call is
remembered for that key, so the next call goes straight to NumPy.
"""

from __future__ import annotations

from typing import Any

from dispatch import targets
from dispatch._ops import all_ops
from dispatch._state import STATE
from dispatch.selector import Backend, BackendSelector, OpComplexity
from dispatch.targets.numpy_target import NUMPY

__all__ = ["clear_decisions", "decide", "failed", "host_floor", "refused", "selector", "set_selector"]

_selector = BackendSelector()

# Measured on a 2-core CPU machine and a 16-core one (DESIGN.md): torch on the CPU beats
# NumPy at reductions from about 1e4 elements, and loses badly at sorting. Calibration
# replaces this with measurements of the machine at hand.
TORCH_CPU_FASTER = frozenset({"sum", "mean", "nansum", "nanmean", "prod", "add.reduce"})

GPU_TARGETS = ("cupy", "torch-cuda", "torch-mps")

_decisions: dict[tuple, tuple[Any, str]] = {}
_floors: dict[OpComplexity, int] = {}


def selector() -> BackendSelector:
    return _selector


def set_selector(new: BackendSelector) -> None:
    """Route by another selector (e.g. one derived from calibration); clears cached decisions."""
    global _selector
    _selector = new
    _decisions.clear()
    _floors.clear()
    for op in all_ops():
        op.floor = -1


def clear_decisions() -> None:
    _decisions.clear()


def host_floor(op: Any) -> int:
    """Sizes at or under this run on NumPy without asking: the SCALAR band of the op's tier."""
    floor = op.floor
    if floor < 0:
        floor = _floors.get(op.complexity)
        if floor is None:
            t = _selector.thresholds
            floor = min(v for v in (t.simd[op.complexity], t.gpu[op.complexity], 2**62) if v is not None)
            _floors[op.complexity] = floor
        op.floor = floor
    return floor


def _key(op: Any, inputs: Any) -> tuple:
    return (op.name, inputs.dtypes, inputs.size.bit_length(), inputs.devices, STATE.forced_name())


def decide(op: Any, inputs: Any, args: tuple, kwargs: dict) -> tuple[Any, str]:
    """The target for this call and the reason, in words."""
    key = _key(op, inputs)
    hit = _decisions.get(key)
    if hit is not None:
        return hit
    decision = _decide(op, inputs)
    _decisions[key] = decision
    return decision


def _decide(op: Any, inputs: Any) -> tuple[Any, str]:
    forced = STATE.forced_name()
    if forced is not None and forced != "auto":
        target = targets.probe(forced)
        if target is None:
            return NUMPY, f"{FALLBACK}forced {forced}, which is unavailable: {targets.unavailable().get(forced)}"
        return target, f"forced {forced}"
    if op.work in ("host", "random"):  # functions outside the catalog are "host" work too
        return NUMPY, "host op"
    if op.local and inputs.arrays:
        return _engine_holding(inputs.arrays[0]), "where the data is"
    resident = inputs.resident
    if resident is not None:
        return _engine_holding(next(a for a in inputs.arrays if _device(a) == resident)), f"data on {resident}"
    tier = _selector.select_with_moe(op.complexity, inputs.size)
    return _for_tier(tier, op), f"seed table: {tier}"


def _for_tier(tier: Backend, op: Any) -> Any:
    if tier is Backend.GPU:
        for name in GPU_TARGETS:
            target = targets.probe(name)
            if target is not None:
                return target
        tier = Backend.SIMD
    if tier is Backend.SIMD and op.name in TORCH_CPU_FASTER:
        target = targets.probe("torch-cpu")
        if target is not None:
            return target
    return NUMPY


def _device(a: Any) -> Any:
    from dispatch._call import _device as device

    return device(a)


def _engine_holding(a: Any) -> Any:
    from dispatch._array import _engine_of, ndarray

    data = a._data if isinstance(a, ndarray) else a
    engine = _engine_of(data)
    return NUMPY if engine.name == "torch-cpu" else engine


FALLBACK = "fallback: "  # the reason of a remembered refusal starts with this


def refused(op: Any, inputs: Any, target: Any, why: str) -> None:
    """``target`` cannot run this kind of call exactly: send the same kind to NumPy from now on."""
    _decisions[_key(op, inputs)] = (NUMPY, FALLBACK + why)


def failed(op: Any, inputs: Any, target: Any, why: str) -> None:
    """``target`` failed at run time (out of memory, a driver error): NumPy ran this call.

    Failures can be transient (memory frees up), so the decision is kept for the next call.
    """
