"""Scale-out calls of the array layer: materialising Dask-held arrays (``compute``, ``persist``),
and running calls that have no operands (creation functions, random draws) on Dask when their
result is too large for the host (``creation``, ``run_on_dask``). The sizes, settings and the
connection are ``dispatch.cluster``'s. A creation function's large result that the host would
make is made instead on the device its line's last result moved to (``dispatch.arrays.creations``).
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from dispatch import cluster, targets
from dispatch.arrays import _call, _compiled, creations, mirrors
from dispatch.arrays._array import _DeviceScalar, device_scalar, wrap
from dispatch.base.box import Wrapper
from dispatch.base.devices import DASK
from dispatch.base.ops import op_named
from dispatch.base.state import STATE
from dispatch.targets import Unsupported

__all__ = ["compute", "creation", "persist", "run_on_dask"]


def compute(*arrays: Any) -> tuple[Any, ...]:
    """Compute several Dask-held arrays in one pass (shared work is done once); each becomes a
    ``dispatch.ndarray`` in memory (NumPy, or CuPy from GPU workers). Other values pass through."""
    lazy = [i for i, a in enumerate(arrays) if isinstance(a, Wrapper) and a.device == DASK]
    if not lazy:
        return tuple(arrays)
    import dask

    done = dask.compute(*(arrays[i]._engine_array for i in lazy), **cluster.scheduler())
    out = list(arrays)
    for i, value in zip(lazy, done, strict=True):
        out[i] = _in_memory(value, arrays[i])
    return tuple(out)


def _in_memory(value: Any, like: Any) -> Any:
    if isinstance(like, _DeviceScalar):
        value = np.asarray(value)
        return value[()] if type(value).__module__.startswith("numpy") else device_scalar(value)
    return wrap(np.asarray(value) if type(value).__module__.startswith("numpy") else value)


def persist(x: Any) -> Any:
    """``x`` with its chunks computed and kept in the cluster's (or this process's) memory, so
    later work starts from them; arrays not held by Dask are returned as they are."""
    return x.persist() if isinstance(x, Wrapper) else x


def run_on_dask(op: Any, reason: str, run: Any) -> Any:
    """Run ``run()`` (which builds a Dask array) as ``op`` decided for Dask: timed and traced
    like any routed call."""
    _call.routing()  # (the timing and trace of a routed call)
    from dispatch.routing.decisions import Decision, DecisionKind

    return _call._execute(op, _call.Inputs([]), Decision(targets.get("dask"), DecisionKind.SCALE_OUT, reason), run)


def creation(name: str, plain: Any) -> Any:
    """``dispatch.<name>`` for a creation function: a chunked Dask array when the result is too
    large for the host (or under ``using("dask")``, or spanning a connected cluster's chunks),
    else ``plain`` (the routed NumPy function)."""
    op = op_named(name)
    watched = name in creations.NAMES  # made where the line's last result moved (``creations``)

    @functools.wraps(plain)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        n = cluster.created_elements(name, args, kwargs)
        if n >= cluster.LIVE_ELEMENTS or not STATE.plain:
            reason = cluster.result_reason(n * cluster.created_itemsize(name, args, kwargs), n)
            target = cluster._dask_target() if reason is not None else None
            if target is not None:
                try:
                    return run_on_dask(op, reason, lambda: _call._run_on(target, op, args, kwargs))
                except Unsupported:
                    pass  # arguments only NumPy takes: NumPy decides
        if not watched or n * 16 < mirrors.MIN_BYTES or STATE.forced_name() is not None:
            return plain(*args, **kwargs)  # (16: the largest itemsize, complex128's; made() checks the bytes)
        where = creations.site(name)
        engine = creations.home(where)
        result = _made_on(engine, where, op, args, kwargs) if engine is not None else None
        if result is None:
            result = plain(*args, **kwargs)
            creations.made(result._engine_array if isinstance(result, Wrapper) else result, where)
        return result

    # compiled: the routed function itself where the arguments are integers that size a result
    # Dask would not take (dispatch/arrays/_fastpath.c, the kinds "shaped" and "range")
    kind = "range" if name == "arange" else "shaped" if watched else None
    if kind is not None:  # (NumPy's are builtins, which a class holding one does not bind)
        numpy_function = getattr(plain, "__wrapped__", plain)
        wrapper = _compiled.fast(kind, op, wrapper, plain, bound=hasattr(type(numpy_function), "__get__"))
    wrapper.__wrapped__ = getattr(plain, "__wrapped__", plain)  # NumPy's function, as for every routed name
    return wrapper


def _made_on(name: str, where: tuple, op: Any, args: tuple, kwargs: dict) -> Any:
    """A creation at ``where`` made on engine ``name`` (its site's last result moved to its device),
    traced as a routed call; ``None`` where that engine is not up, or fails it (the site is then
    forgotten, the failure recorded, and the host makes it)."""
    target = targets.probe(name) if targets.registry.is_up(name) else None
    if target is None:
        return None
    from dispatch.routing.decisions import Decision, DecisionKind

    reason = f"created on {target.device}, where this line's last result moved"
    try:
        result = _call._execute(op, _call.Inputs([]), Decision(target, DecisionKind.CREATED, reason),
                                lambda: _call._run_on(target, op, args, kwargs))
    except Exception as exc:  # a dtype the device lacks, out of memory, NumPy's own error for bad arguments
        creations.forget(where)
        why = f"{target.name} refused: {exc}" if isinstance(exc, Unsupported) else _call.failure(target, exc)
        _call._tracing().fallback(op, why)
        return None
    creations.made(result._engine_array, where, guessed=True)
    return result


_compiled.setup_creation(vars(cluster))
