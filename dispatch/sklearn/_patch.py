"""Patching scikit-learn's estimator classes in place, and putting them back.

The classes are those ``sklearn.utils.all_estimators()`` lists, taken as their modules load:
``accelerate()`` patches the public classes of the scikit-learn modules loaded already, and an
import hook patches those of each module loaded later, once it has run (``all_estimators()``
imports every module of scikit-learn, pytest with its test helpers: seconds, more than a script
that fits one estimator runs). Each routed
method is replaced *on the class object*, so estimators created before the patch, and
classes imported before it, are routed too. A method a class inherits is installed in that
class's own ``__dict__`` and deleted again by ``unaccelerate()``; a method the class defines
itself is put back as the exact object it was. Conditional methods (``available_if``:
``Pipeline.predict_proba`` exists only if the last step has it) keep their condition: the
patch asks the original descriptor first, so ``hasattr`` answers as before.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import os
import sys
import threading
import types
import warnings
from collections.abc import Iterator
from typing import Any

from dispatch.base.import_hooks import spec_then
from dispatch.sklearn._run import Spec, call, closed_by

__all__ = ["METHODS", "accelerate", "accelerated", "all_routed", "is_accelerated", "patched", "unaccelerate"]

# method -> (changes the estimator's fitted state, output may stay on the device inside a composite)
METHODS = {
    "fit":               (True, False),
    "partial_fit":       (True, False),
    "fit_transform":     (True, True),
    "fit_predict":       (True, False),
    "transform":         (False, True),
    "inverse_transform": (False, True),
    "predict":           (False, False),
    "predict_proba":     (False, False),
    "predict_log_proba": (False, False),
    "decision_function": (False, False),
    "score":             (False, False),
    "score_samples":     (False, False),
    "kneighbors":        (False, False),
}

# Constructor parameters that hold other estimators: a class taking one is a composite, whose
# inner estimators route their own calls (with MetaEstimatorMixin, scikit-learn's own marker).
_COMPOSITE_PARAMS = frozenset({"steps", "transformers", "transformer_list", "estimator", "estimators",
                               "base_estimator", "final_estimator", "regressor", "classifier", "transformer"})

_MARK = "_dispatch_routed"
_ABSENT = object()

_lock = threading.RLock()
_originals: dict[tuple[type, str], Any] = {}  # (class, method) -> what the class's __dict__ held
_permanent = False  # accelerate() was called
_blocks = 0  # `accelerated()` blocks open


def accelerate() -> bool:
    """Route every scikit-learn estimator method through dispatch until ``unaccelerate()``.

    Idempotent; returns whether this call patched (``False``: already patched).
    """
    global _permanent
    with _lock:
        _permanent = True
        return _install()


def unaccelerate() -> bool:
    """Put every patched method back exactly as it was; returns whether anything was patched."""
    global _permanent, _blocks
    with _lock:
        _permanent, _blocks = False, 0
        return _restore()


@contextlib.contextmanager
def accelerated() -> Iterator[None]:
    """Route scikit-learn through dispatch inside a ``with`` block (nests; threads share it)."""
    global _blocks
    with _lock:
        _blocks += 1
        _install()
    try:
        yield
    finally:
        with _lock:
            _blocks = max(0, _blocks - 1)
            if _blocks == 0 and not _permanent:
                _restore()


def is_accelerated() -> bool:
    return bool(_installed)


def patched() -> dict[type, list[str]]:
    """The patched classes and their routed methods."""
    with _lock:
        out: dict[type, list[str]] = {}
        for cls, name in _originals:
            out.setdefault(cls, []).append(name)
        return out


# ---- installing -------------------------------------------------------------------------------------


def _install() -> bool:
    if _originals or _installed:
        return False
    _enable_scipy_array_api()
    _installed.append(True)
    _patch_classes(_loaded_estimator_classes())
    if not any(isinstance(f, _PatchOnImport) for f in sys.meta_path):
        sys.meta_path.insert(0, _PatchOnImport())
    return True


_installed: list[bool] = []  # one entry while the patch is on (its hook patching what loads later)


def _patch_classes(classes: list[type]) -> None:
    plan = []
    for cls in classes:
        composite = _is_composite(cls)
        for name, (changes_state, keeps_device) in METHODS.items():
            if (cls, name) in _originals:
                continue
            raw = _original(cls, name)
            if raw is None:
                continue
            spec = Spec(name, changes_state, keeps_device, _first_param(raw), composite)
            plan.append((cls, name, raw, spec))
    # Everything is resolved before anything is installed: a subclass wraps its base's original,
    # never the base's wrapper.
    for cls, name, raw, spec in plan:
        _originals[(cls, name)] = cls.__dict__.get(name, _ABSENT)
        setattr(cls, name, _routed(raw, spec))
    _routed_classes.clear()


def _original(cls: type, name: str) -> Any:
    """What ``cls.<name>`` was before the patch (``_resolve`` through the originals of the
    classes patched already: a class loaded after its base wraps the base's original too)."""
    for klass in cls.__mro__:
        kept = _originals.get((klass, name), None)
        if kept is not None:
            if kept is _ABSENT:
                continue  # the base's own entry was its wrapper over what it inherited
            return kept
        if name in vars(klass):
            raw = vars(klass)[name]
            return None if getattr(raw, _MARK, False) else raw
    return None


# The modules ``all_estimators`` skips (its ``_MODULE_TO_IGNORE``), and private ones ("._").
_SKIPPED_PARTS = frozenset({"tests", "externals", "setup", "conftest", "experimental", "estimator_checks"})


def _public(module_name: str) -> bool:
    return (module_name == "sklearn" or module_name.startswith("sklearn.")) and "._" not in module_name \
        and _SKIPPED_PARTS.isdisjoint(module_name.split("."))


def _estimators_of(module: Any) -> list[type]:
    """The estimator classes ``all_estimators`` takes from ``module``: public names of
    ``BaseEstimator`` subclasses, not abstract."""
    estimator = getattr(sys.modules.get("sklearn.base"), "BaseEstimator", None)
    if estimator is None:  # scikit-learn is still loading its base: no estimator is defined yet
        return []
    found = []
    for name, value in list(vars(module).items()):
        if (isinstance(value, type) and not name.startswith("_") and name != "BaseEstimator"
                and issubclass(value, estimator) and not inspect.isabstract(value)):
            found.append(value)
    return found


def _loaded_estimator_classes() -> list[type]:
    """The estimator classes of the scikit-learn modules loaded now, each once."""
    seen: dict[int, type] = {}
    for name, module in list(sys.modules.items()):
        if module is not None and _public(name):
            for cls in _estimators_of(module):
                seen.setdefault(id(cls), cls)
    return list(seen.values())


class _PatchOnImport:
    """Finds nothing itself: wraps the loader of each public scikit-learn module, so that its
    estimator classes are patched once it has run, while the patch is on."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if not _installed or not _public(fullname):
            return None
        return spec_then(self, fullname, path, target, _patch_loaded)


def _patch_loaded(module: Any) -> None:
    """The patch of the estimator classes a module just loaded defined or imported."""
    with _lock:
        if _installed:
            _patch_classes(_estimators_of(module))


def _restore() -> bool:
    was = bool(_installed)
    _installed.clear()
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, _PatchOnImport)]
    if not _originals:
        return was
    for (cls, name), original in _originals.items():
        if original is _ABSENT:
            if getattr(cls.__dict__.get(name), _MARK, False):
                delattr(cls, name)
        else:
            setattr(cls, name, original)
    _originals.clear()
    _routed_classes.clear()
    return True


def estimator_classes() -> list[type]:
    """scikit-learn's public estimator classes (``sklearn.utils.all_estimators``)."""
    from sklearn.utils import all_estimators

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        found = all_estimators()
    seen: dict[int, type] = {}
    for _, cls in found:
        seen.setdefault(id(cls), cls)
    return list(seen.values())


def _resolve(cls: type, name: str) -> Any:
    """What ``cls.<name>`` is, found through the MRO without running descriptors."""
    for klass in cls.__mro__:
        if name in vars(klass):
            return vars(klass)[name]
    return None


def _first_param(raw: Any) -> str:
    func = raw if isinstance(raw, types.FunctionType) else getattr(raw, "fn", None)
    try:
        params = list(inspect.signature(func).parameters)[1:]
    except (TypeError, ValueError):
        return "X"
    return params[0] if params else "X"


def _is_composite(cls: type) -> bool:
    from sklearn.base import MetaEstimatorMixin

    if issubclass(cls, MetaEstimatorMixin):
        return True
    try:
        params = inspect.signature(cls.__init__).parameters
    except (TypeError, ValueError):
        return False
    return not _COMPOSITE_PARAMS.isdisjoint(params)


def _routed(raw: Any, spec: Spec) -> Any:
    if isinstance(raw, types.FunctionType):
        def invoke(obj: Any, args: tuple, kwargs: dict) -> Any:
            return raw(obj, *args, **kwargs)

        @functools.wraps(raw)
        def routed(self: Any, *args: Any, **kwargs: Any) -> Any:
            return call(self, spec, invoke, args, kwargs)

        setattr(routed, _MARK, True)
        return routed
    return _RoutedDescriptor(raw, spec)


class _RoutedDescriptor:
    """A routed method over another descriptor (``available_if``): the original decides whether
    the method exists on an instance, the route decides where it runs."""

    _dispatch_routed = True

    def __init__(self, raw: Any, spec: Spec) -> None:
        self.raw = raw
        self.spec = spec
        self.__doc__ = getattr(raw, "__doc__", None)
        descriptor = self

        def routed(obj: Any, *args: Any, **kwargs: Any) -> Any:
            return call(obj, spec, descriptor._invoke, args, kwargs)

        fn = getattr(raw, "fn", None)
        if isinstance(fn, types.FunctionType):
            routed = functools.wraps(fn)(routed)
            self._fn = fn
        setattr(routed, _MARK, True)
        self._routed = routed

    _fn = None

    def _invoke(self, obj: Any, args: tuple, kwargs: dict) -> Any:
        if self._fn is not None:  # __get__ has run the availability check already: not twice a call
            return self._fn(obj, *args, **kwargs)
        return self.raw.__get__(obj, type(obj))(*args, **kwargs)

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        self.raw.__get__(obj, owner)  # AttributeError where the method does not exist
        return self._routed if obj is None else types.MethodType(self._routed, obj)


def all_routed(estimator: Any) -> bool:
    """Whether every estimator inside ``estimator`` (deep parameters) has routed methods only."""
    try:
        params = estimator.get_params(deep=True)
    except Exception:
        return False
    for value in params.values():
        if hasattr(value, "get_params") and hasattr(value, "fit") and not isinstance(value, type):
            if not _routed_class(type(value)):
                return False
    return True


closed_by(all_routed)

_routed_classes: dict[type, bool] = {}  # cleared whenever the patch changes


def _routed_class(cls: type) -> bool:
    known = _routed_classes.get(cls)
    if known is None:
        known = bool(_originals) and all(
            getattr(_resolve(cls, name), _MARK, False) for name in METHODS if _resolve(cls, name) is not None)
        _routed_classes[cls] = known
    return known


# ---- SciPy ------------------------------------------------------------------------------------------


def _enable_scipy_array_api() -> None:
    """scikit-learn refuses Array API dispatch unless ``SCIPY_ARRAY_API=1``; SciPy reads it
    once, when it is imported. Set it if nobody did (an explicit value is respected)."""
    if "SCIPY_ARRAY_API" in os.environ:
        return
    os.environ["SCIPY_ARRAY_API"] = "1"
    if "scipy" in sys.modules:
        import logging  # lazy: only for this note

        logging.getLogger("dispatch").info(
            "dispatch: scipy was imported before SCIPY_ARRAY_API=1 was set; scikit-learn Array API "
            "paths that call scipy fall back to NumPy where scipy refuses device arrays")
