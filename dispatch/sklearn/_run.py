"""Running one estimator call where ``choose`` sent it, and handing back what the caller gave.

The patched methods all land in ``call``. What happens there:

- Inside an estimator's own work (a patched method called by another patched method, e.g.
  ``fit_transform`` calling ``fit``) nothing is routed: the outer call already chose.
- Composite estimators (``Pipeline``, ``ColumnTransformer``, ``GridSearchCV``, any
  meta-estimator) are not routed themselves: the estimators inside them route each of their
  own calls. The composite only opens a scope in which a step that ran on a device hands its
  ``transform`` output to the next step as a ``dispatch.ndarray`` left on the device, and it
  converts its own result back to the type its caller gave.
- A leaf estimator call runs stock scikit-learn on NumPy, or on a target under
  ``sklearn.config_context(array_api_dispatch=True)`` on a working copy of the estimator whose
  fitted arrays were moved to that target. After the call, every array the copy holds comes
  back to the user's estimator as NumPy, so it pickles and runs as plain scikit-learn.
- A target call that raises, where stock scikit-learn then succeeds, is remembered as
  unsupported for (class, parameters, method, dtype of X); stock scikit-learn's own errors propagate.
"""

from __future__ import annotations

import contextvars
import time
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from dispatch import targets, tracing
from dispatch.base.box import Wrapper
from dispatch.base.state import STATE
from dispatch.routing import router
from dispatch.sklearn._routing import (
    STOCK,
    Choice,
    _stock_calls,
    array_kind,
    choose,
    engine_of,
    is_native,
    observe,
    remember_unsupported,
)
from dispatch.targets import Unsupported
from dispatch.targets._staging import moved

__all__ = ["CompositeScope", "Spec", "call"]


@dataclass(frozen=True)
class Spec:
    """What the patch knows about one method of one class."""

    method: str
    changes_state: bool  # fit, partial_fit...: the estimator's fitted state comes back from the copy
    keeps_device: bool  # inside a composite, an output that may stay on the device for the next step
    first: str  # the name of the data parameter ("X"; "y" for LabelEncoder)
    composite: bool  # the class holds other estimators: not routed itself


class CompositeScope:
    """Open while a composite estimator runs; knows whether every estimator inside it is
    routed (only then may step outputs stay on the device: an unrouted, user-written step
    must get the NumPy arrays it was written for), and whether any call inside it did more
    than run stock scikit-learn on NumPy (``elsewhere``)."""

    __slots__ = ("_closed", "elsewhere", "estimator")

    def __init__(self, estimator: Any) -> None:
        self.estimator = estimator
        self._closed: bool | None = None
        self.elsewhere = False

    def closed(self) -> bool:
        if self._closed is None:
            self._closed = _all_routed[0](self.estimator)
        return self._closed


# Whether every estimator inside one has routed methods only: the patch knows (``_patch.all_routed``,
# which it hands over as it loads; it imports this module to route the methods it patches).
_all_routed: list[Callable[[Any], bool]] = [lambda estimator: False]


def closed_by(all_routed: Callable[[Any], bool]) -> None:
    _all_routed[0] = all_routed


_LEAF = object()  # inside a leaf estimator's own work
_scope: contextvars.ContextVar[Any] = contextvars.ContextVar("dispatch_sklearn_scope", default=None)


class _Refused(Exception):
    """A target cannot take this call's data (found while converting, before anything ran)."""


class _NotPortable(Exception):
    """The fitted state holds something that is not plain scikit-learn (a namespace, a device)."""


def _users_array_api() -> bool:
    """Whether the caller turned on scikit-learn's Array API dispatch (``config_context`` or
    ``set_config``): then every call is stock scikit-learn's, which returns arrays of the input's
    own namespace (torch in, torch out) and raises where that namespace cannot serve."""
    import sklearn  # lazy: scikit-learn is imported by the patch, before any call lands here

    return bool(sklearn.get_config().get("array_api_dispatch"))


def call(est: Any, spec: Spec, invoke: Any, args: tuple, kwargs: dict) -> Any:
    """Run ``est.<spec.method>(*args, **kwargs)``; ``invoke(obj, args, kwargs)`` is the original."""
    outer = _scope.get()
    if outer is _LEAF:
        return invoke(est, args, kwargs)
    X = args[0] if args else kwargs.get(spec.first)
    if STATE.plain and type(X) is np.ndarray and not spec.composite:
        key = (type(est), spec.method, X.shape, id(router.selector()))
        if key in _stock_calls and not _any_off_host(args, kwargs):  # the serving loop's next batch
            return _as_leaf(invoke, est, args, kwargs)
    if _users_array_api():  # the user asked scikit-learn itself for Array API dispatch: its namespaces, its errors
        return _as_leaf(invoke, est, args, kwargs)
    if kwargs.get("copy") is False:  # ``transform(X, copy=False)``: stock works in the caller's array
        return _as_leaf(invoke, est, args, kwargs)
    caller = array_kind(X)
    if spec.composite:
        key = None
        if STATE.plain and type(X) is np.ndarray:
            # This composite's last call of this method and shape ran stock throughout: run it
            # whole as stock scikit-learn, its estimators unrouted (the serving loop's next batch).
            key = (id(est), type(est), spec.method, X.shape, id(router.selector()))
            if key in _stock_calls and not _any_off_host(args, kwargs):
                return _as_leaf(invoke, est, args, kwargs)
        scope = CompositeScope(est)
        token = _scope.set(scope)
        try:
            result = invoke(est, args, kwargs)
        finally:
            _scope.reset(token)
        if scope.elsewhere:
            _elsewhere(outer)
        elif key is not None and STATE.plain:
            _remember_stock(key)
        if result is est:
            return result
        keep = spec.keeps_device and isinstance(outer, CompositeScope) and outer.closed()
        return _for_caller(result, caller, X, keep)
    others = _Others(args, kwargs, spec.first)
    choice = choose(est, spec.method, X, others)
    if not STATE.tracing and choice.learn is None:
        if choice.target is None and not choice.fallback and caller == "numpy" and not _any_off_host(args, kwargs):
            if type(X) is np.ndarray and STATE.plain:  # the common case, stock scikit-learn on NumPy
                _remember_stock((type(est), spec.method, X.shape, id(router.selector())))
            return _as_leaf(invoke, est, args, kwargs)
        _elsewhere(outer)
        return _execute(est, spec, invoke, args, kwargs, X, caller, choice, outer)[0]
    _elsewhere(outer)

    before = sum(moved().values())
    start = time.perf_counter()
    result, ran, reason = _execute(est, spec, invoke, args, kwargs, X, caller, choice, outer)
    if choice.learn is not None:  # a measuring call: timed to completion, the device's work included
        if ran != "numpy":

            targets.get(ran).synchronize()
        observe(choice.learn, None if ran == "numpy" else ran, time.perf_counter() - start)
        if not STATE.tracing:
            return result
    seconds = time.perf_counter() - start
    arrays = [a for a in (X, *others) if hasattr(a, "shape") and hasattr(a, "dtype")]
    tracing.record(tracing.CallRecord(
        op=f"{type(est).__name__}.{spec.method}",
        shapes=[[int(s) for s in a.shape] for a in arrays],
        dtypes=[str(_np_dtype(a)) for a in arrays],
        target=ran,
        reason=reason,
        seconds=seconds,
        bytes_moved=sum(moved().values()) - before,
        site=tracing.call_site() if tracing.SITES else None,  # a profile's site: the user's line
    ))
    return result


# Calls that ran as stock scikit-learn on host NumPy data, by (class, method, shape, MoE table),
# and composites by their instance too: the same call again skips routing (a new calibration
# makes a new table, hence new keys). A wrong skip can only run stock scikit-learn: never wrong.


def _remember_stock(key: tuple) -> None:
    if len(_stock_calls) > 4096:
        _stock_calls.clear()
    _stock_calls.add(key)


def _elsewhere(outer: Any) -> None:
    """A call inside the composite ``outer`` did more than run stock on NumPy."""
    if isinstance(outer, CompositeScope):
        outer.elsewhere = True


def _as_leaf(invoke: Any, est: Any, args: tuple, kwargs: dict) -> Any:
    """Stock scikit-learn: nothing to convert; the estimators it calls inside are not routed."""
    token = _scope.set(_LEAF)
    try:
        return invoke(est, args, kwargs)
    finally:
        _scope.reset(token)


def _execute(est: Any, spec: Spec, invoke: Any, args: tuple, kwargs: dict, X: Any, caller: str,
             choice: Choice, outer: Any) -> tuple[Any, str, str]:
    """(result, target that ran it, reason)."""
    token = _scope.set(_LEAF)
    try:
        if choice.target is None:
            if choice.fallback:  # the trace's fallbacks list why, under the calls that ran stock
                tracing.fallback(_op(est, spec), choice.reason.removeprefix(f"{STOCK}: "))
            return _stock(est, invoke, args, kwargs, caller, X), "numpy", choice.reason
        keep = spec.keeps_device and isinstance(outer, CompositeScope) and outer.closed()
        learn = False
        try:
            return _on_target(est, spec, invoke, args, kwargs, choice.target, caller, X, keep), \
                choice.target, choice.reason
        except _Refused as exc:
            why = str(exc)
        except Exception as exc:  # Array API gaps, device errors: stock scikit-learn decides below
            why = f"{choice.target} failed: {type(exc).__name__}: {_first_line(exc)}"
            learn = not _transient(exc)
        result = _stock(est, invoke, args, kwargs, caller, X)  # its own errors are the user's
        if learn:
            remember_unsupported(est, spec.method, why, X)
        tracing.fallback(_op(est, spec), why)
        return result, "numpy", f"{STOCK}: fallback: {why}"
    finally:
        _scope.reset(token)


# ---- stock scikit-learn on NumPy -------------------------------------------------------------------


def _op(est: Any, spec: Spec) -> Any:
    return types.SimpleNamespace(name=f"{type(est).__name__}.{spec.method}")


def _stock(est: Any, invoke: Any, args: tuple, kwargs: dict, caller: str, X: Any) -> Any:
    if caller in ("numpy", "other") and not _any_off_host(args, kwargs):
        return invoke(est, args, kwargs)
    result = invoke(est, tuple(_host_arg(a) for a in args), {k: _host_arg(v) for k, v in kwargs.items()})
    if result is est:
        return est
    return _for_caller(result, caller, X, keep=False)


def _any_off_host(args: tuple, kwargs: dict) -> bool:
    for a in (*args, *kwargs.values()) if kwargs else args:
        if type(a) is not np.ndarray and a is not None and array_kind(a) in ("dispatch", "native"):
            return True
    return False


def _host_arg(a: Any) -> Any:
    kind = array_kind(a)
    if kind == "dispatch":
        return np.asarray(a)
    if kind == "native":
        return engine_of(a).to_host(a)
    return a


# ---- on a target ------------------------------------------------------------------------------------


def _on_target(est: Any, spec: Spec, invoke: Any, args: tuple, kwargs: dict, name: str, caller: str, X: Any,
               keep: bool) -> Any:
    import sklearn


    target = targets.get(name)
    try:
        nargs = tuple(_to_target(a, target) for a in args)
        nkwargs = {k: _to_target(v, target) for k, v in kwargs.items()}
        work, moved = _working_copy(est, spec, target)
    except Unsupported as exc:
        raise _Refused(f"{name}: {exc}") from None
    with sklearn.config_context(array_api_dispatch=True):
        result = invoke(work, nargs, nkwargs)
    _bring_back(est, work, moved, spec.changes_state)
    if result is work:
        return est
    return _for_caller(result, caller, X, keep)


def _to_target(a: Any, target: Any) -> Any:
    """An argument as ``target``'s native array, if it is array data; else unchanged."""
    if isinstance(a, np.ndarray):
        return target.from_host(a) if a.dtype.kind in "biufc" else a
    kind = array_kind(a)
    if kind == "dispatch":
        return _native_on(a._engine_array, target)
    if kind == "native":
        return _native_on(a, target)
    if isinstance(a, (list, tuple)) or (hasattr(a, "__array__") and not isinstance(a, (str, bytes))):
        try:
            host = np.asarray(a)
        except Exception:
            return a
        if host.ndim and host.dtype.kind in "biufc":
            return target.from_host(host)
    return a


def _native_on(data: Any, target: Any) -> Any:
    if target.owns(data):
        return data
    if isinstance(data, np.ndarray):
        return target.from_host(data)
    owner = engine_of(data)
    if owner.device == target.device:
        return target.adopt(data)
    return target.from_host(owner.to_host(data))


def _working_copy(est: Any, spec: Spec, target: Any) -> tuple[Any, dict[str, Any]]:
    """A shallow copy of ``est`` whose fitted arrays live on ``target`` (the user's estimator
    is never handed device arrays). A fresh ``fit`` needs none of the old fitted state.

    scikit-learn's own converter (``sklearn.utils._array_api._estimator_with_converted_arrays``)
    is private; whether fitted attributes should always be NumPy is open upstream:
    https://github.com/scikit-learn/scikit-learn/issues/34604
    """
    work = object.__new__(type(est))
    state = dict(vars(est))
    work.__dict__ = state
    moved: dict[str, Any] = {}
    fresh = spec.method in ("fit", "fit_transform", "fit_predict") and not getattr(est, "warm_start", False)
    if not fresh:
        # A state-changing call on a host target must not write through into the user's arrays
        # (torch-cpu shares NumPy's memory), in case it fails and stock scikit-learn reruns it.
        copy = spec.changes_state and target.device.is_host
        params = _param_names(est)
        for key, value in state.items():
            if key not in params:
                new = _fitted_to_target(value, target, copy, 0)
                if new is not value:
                    state[key] = moved[key] = new
    return work, moved


def _fitted_to_target(value: Any, target: Any, copy: bool, depth: int) -> Any:
    if isinstance(value, np.ndarray):
        if value.dtype.kind not in "biufc":
            return value  # e.g. feature_names_in_, string classes_: they stay NumPy
        return target.from_host(value.copy() if copy else value)
    if depth > 2:
        return value
    if isinstance(value, list):
        items = [_fitted_to_target(v, target, copy, depth + 1) for v in value]
        return items if any(a is not b for a, b in zip(items, value, strict=True)) else value
    if _is_estimator(value):
        params = _param_names(value)
        changes = {k: _fitted_to_target(v, target, copy, depth + 1) for k, v in vars(value).items() if k not in params}
        changes = {k: v for k, v in changes.items() if v is not vars(value)[k]}
        if not changes:
            return value
        sub = object.__new__(type(value))
        sub.__dict__ = {**vars(value), **changes}
        return sub
    return value


def _bring_back(est: Any, work: Any, moved: dict[str, Any], changes_state: bool) -> None:
    """Copy what the call changed on ``work`` back to ``est``, every array as NumPy. Raises
    ``_NotPortable`` (before touching ``est``) if the state cannot be plain scikit-learn."""
    mine, theirs = vars(est), vars(work)
    updates = {}
    for key, value in theirs.items():
        if key in moved and value is moved[key] and not changes_state:
            continue  # an attribute moved for this call, unchanged: the user's NumPy one stays
        if key not in moved and mine.get(key, _MISSING) is value:
            continue  # untouched, shared with the user's estimator
        updates[key] = _portable(value, f"{type(est).__name__}.{key}", set())
    removed = [key for key in mine if key not in theirs]
    mine.update(updates)
    for key in removed:
        del mine[key]


_MISSING = object()
_PLAIN = (np.ndarray, np.generic, str, bytes, int, float, complex, bool, type(None), type, types.FunctionType)


def _portable(value: Any, path: str, seen: set[int]) -> Any:
    """``value`` with every device array as NumPy; ``_NotPortable`` if it holds a namespace or
    a device object (scikit-learn's Array API losses keep ``xp`` and ``device``)."""
    if isinstance(value, _PLAIN):
        return value
    if is_native(value):
        host = engine_of(value).to_host(value)
        return host[()] if host.ndim == 0 else host  # a 0-d Array API result: NumPy's path stores a scalar
    if isinstance(value, types.ModuleType):
        raise _NotPortable(f"{path} is the module {value.__name__}")
    module = type(value).__module__ or ""
    if module.startswith("torch") or module.startswith("cupy"):
        raise _NotPortable(f"{path} is a {module}.{type(value).__qualname__}")
    if id(value) in seen:
        return value
    seen.add(id(value))
    if isinstance(value, list):
        items = [_portable(v, f"{path}[{i}]", seen) for i, v in enumerate(value)]
        return items if any(a is not b for a, b in zip(items, value, strict=True)) else value
    if isinstance(value, tuple):
        items = [_portable(v, f"{path}[{i}]", seen) for i, v in enumerate(value)]
        if all(a is b for a, b in zip(items, value, strict=True)):
            return value
        return type(value)(*items) if hasattr(value, "_fields") else type(value)(items)
    if isinstance(value, dict):
        changed = {k: _portable(v, f"{path}[{k!r}]", seen) for k, v in value.items()}
        return changed if any(changed[k] is not value[k] for k in value) else value
    state = getattr(value, "__dict__", None)
    if isinstance(state, dict):
        changes = {k: _portable(v, f"{path}.{k}", seen) for k, v in state.items()}
        changes = {k: v for k, v in changes.items() if v is not state[k]}
        if changes:
            clone = object.__new__(type(value))
            clone.__dict__ = {**state, **changes}
            return clone
    return value


# ---- results in the caller's type ------------------------------------------------------------------


def _for_caller(result: Any, caller: str, X: Any, keep: bool) -> Any:
    """NumPy in -> NumPy out; ``dispatch.ndarray`` in -> ``dispatch.ndarray`` out (left where it
    was computed); a CuPy array / torch tensor in -> the same library's arrays out. ``keep``:
    an intermediate inside a composite, left on the device as a ``dispatch.ndarray``."""
    if isinstance(result, tuple):
        items = [_for_caller(r, caller, X, keep) for r in result]
        return type(result)(*items) if hasattr(result, "_fields") else tuple(items)
    if isinstance(result, list):
        return [_for_caller(r, caller, X, keep) for r in result]
    if is_native(result):
        if caller == "native":
            return _native_on(result, engine_of(X))
        if result.ndim == 0:
            return engine_of(result).to_host(result)[()]
        if caller == "dispatch" or keep:
            from dispatch.arrays._array import ndarray  # lazy: stock calls never load the arrays

            return ndarray._from_native(result)
        return engine_of(result).to_host(result)
    if isinstance(result, Wrapper):
        if caller == "dispatch" or keep:
            return result
        return np.asarray(result) if caller != "native" else _native_on(result._engine_array, engine_of(X))
    if type(result) is np.ndarray:
        if caller == "dispatch":
            from dispatch.arrays._array import wrap_host  # lazy, as above

            return wrap_host(result)
        if caller == "native":
            return engine_of(X).from_host(result)
    return result


# ---- small helpers ---------------------------------------------------------------------------------


class _Others:
    """The array-like arguments besides the data one (y, sample_weight...), found only when
    iterated: the stock route never needs them."""

    __slots__ = ("args", "first", "kwargs")

    def __init__(self, args: tuple, kwargs: dict, first: str) -> None:
        self.args, self.kwargs, self.first = args, kwargs, first

    def __iter__(self) -> Any:
        rest = (*self.args[1:], *(v for k, v in self.kwargs.items() if self.args or k != self.first))
        return iter([a for a in rest if a is not None and (hasattr(a, "shape") or isinstance(a, (list, tuple)))])


def _param_names(est: Any) -> frozenset[str]:
    return _param_names_of(type(est), est)


_PARAMS: dict[type, frozenset[str]] = {}


def _param_names_of(cls: type, est: Any) -> frozenset[str]:
    names = _PARAMS.get(cls)
    if names is None:
        try:
            names = frozenset(est.get_params(deep=False))
        except Exception:
            names = frozenset()
        _PARAMS[cls] = names
    return names


def _is_estimator(value: Any) -> bool:
    return hasattr(value, "get_params") and hasattr(value, "fit") and hasattr(value, "__dict__") \
        and not isinstance(value, type)


def _np_dtype(a: Any) -> Any:
    kind = array_kind(a)
    if kind == "native":
        try:
            return engine_of(a).dtype_of(a)
        except Exception:
            return a.dtype
    return a.dtype


def _transient(exc: BaseException) -> bool:
    """Out of memory and the like: not a fact about the estimator, so not remembered."""
    return isinstance(exc, MemoryError) or "out of memory" in str(exc).lower()


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    line = text[0] if text else ""
    return line if len(line) <= 200 else line[:197] + "..."
