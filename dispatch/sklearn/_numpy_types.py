"""scikit-learn's checks for NumPy's own types, given dispatch's objects.

With ``import dispatch as np`` (or under ``dispatch run``) a script's ``np.logspace(...)`` is a
``dispatch.ndarray`` and its ``np.random.RandomState(0)`` is ``dispatch.random.RandomState``,
neither of them NumPy's class; scikit-learn asks for NumPy's by ``isinstance``. ``install()``,
which ``import dispatch`` calls as scikit-learn loads (at once where it is loaded already), makes
those checks take dispatch's objects as the NumPy objects they stand for, and nothing else:

- parameter validation (``_InstancesOf``: ``classes: [np.ndarray]``, ``random_state``): a
  dispatch object passes where the NumPy object it stands for would;
- ``check_random_state`` (every random draw scikit-learn makes from a ``random_state``) hands
  scikit-learn the NumPy ``RandomState`` inside dispatch's, the same object: scikit-learn's
  draws are NumPy's, and the script's next draws from its ``RandomState`` continue where
  scikit-learn's left off, as they do under NumPy. ``np.random`` itself stands for
  ``numpy.random`` (NumPy's global ``RandomState``, which ``dispatch.random`` draws from);
- ``ParameterGrid`` (``GridSearchCV``, ``RandomizedSearchCV`` on lists) takes a grid's
  dispatch arrays as the NumPy arrays they hold, in a copy of the grid: the caller's own dict
  keeps its arrays.

NumPy objects and everything else reach scikit-learn exactly as before. ``uninstall()`` puts
back what ``install()`` replaced.
"""

from __future__ import annotations

import functools
import sys
import threading
from typing import Any

import numpy as np

from dispatch.base.box import Wrapper

# dispatch's array and random modules, read where the script has loaded them: scikit-learn loads
# this at its import, and a script whose estimators stay stock loads neither (a dispatch array or
# generator cannot exist before its module has loaded)
_ARRAY, _RANDOM = "dispatch.arrays._array", "dispatch.random"

__all__ = ["install", "installed", "uninstall"]

_GRID_MODULE = "sklearn.model_selection._search"
_lock = threading.Lock()
# (owner, name, what it held): a class's method or a module's name that ``install`` replaced
_replaced: list[tuple[Any, str, Any]] = []


def install() -> bool:
    """Make scikit-learn's checks for NumPy's types take dispatch's objects (once); whether this
    call installed it. scikit-learn must be imported."""
    with _lock:
        if _replaced:
            return False
        from sklearn.utils import _param_validation, validation  # lazy: scikit-learn is imported by now

        _replace(_param_validation._InstancesOf, "is_satisfied_by",
                 _instances_of(_param_validation._InstancesOf.is_satisfied_by))
        original = validation.check_random_state
        replacement = _check_random_state(original)
        for module, names in _holding(original):  # the modules that imported it hold it by name too
            for name in names:
                _replace(module, name, replacement)
        grids = sys.modules.get(_GRID_MODULE)
        if grids is not None:
            _patch_grid(grids)
        else:
            _grid_module_loads()
        return True


def uninstall() -> bool:
    """Put back what ``install`` replaced; whether anything was."""
    with _lock:
        was = bool(_replaced)
        for owner, name, value in reversed(_replaced):
            setattr(owner, name, value)
        _replaced.clear()
        return was


def installed() -> bool:
    return bool(_replaced)


def _replace(owner: Any, name: str, value: Any) -> None:
    _replaced.append((owner, name, vars(owner)[name]))
    setattr(owner, name, value)


def _holding(function: Any) -> list[tuple[Any, list[str]]]:
    """The loaded modules that hold ``function``, and their names for it: any name in
    scikit-learn's, its own name in the others' (a library built on scikit-learn's). Modules
    loaded later import it from one of these, and get what it holds then."""
    found = []
    for module_name, module in list(sys.modules.items()):
        try:
            namespace = vars(module)
        except TypeError:  # not a module: nothing imported into it
            continue
        if module_name == "sklearn" or module_name.startswith("sklearn."):
            names = [name for name, value in list(namespace.items()) if value is function]
        else:
            names = [function.__name__] if namespace.get(function.__name__) is function else []
        if names:
            found.append((module, names))
    return found


# ---- what dispatch's objects stand for -------------------------------------------------------------


def _numpys_class(value: Any) -> type | None:
    """NumPy's class of the object ``value`` stands for, if it is one of dispatch's; else ``None``."""
    if isinstance(value, Wrapper):
        return value.dtype.type if _is_device_scalar(value) else np.ndarray
    random = sys.modules.get(_RANDOM)
    return random._numpys_class(value) if random is not None else None


def _is_device_scalar(value: Any) -> bool:
    arrays = sys.modules.get(_ARRAY)
    return arrays is not None and isinstance(value, arrays._DeviceScalar)


def _as_numpy(value: Any) -> Any:
    """A dispatch array as the NumPy array it holds (a 0-d result standing for a scalar as NumPy's scalar)."""
    host = np.asarray(value)
    return host[()] if _is_device_scalar(value) else host


# ---- the replacements ----------------------------------------------------------------------------


def _instances_of(original: Any) -> Any:
    @functools.wraps(original)
    def is_satisfied_by(self: Any, val: Any) -> bool:
        if original(self, val):
            return True
        stands_for = _numpys_class(val)
        try:
            return stands_for is not None and issubclass(stands_for, self.type)
        except TypeError:  # a type issubclass cannot ask about: the check as it was
            return False

    return is_satisfied_by


def _check_random_state(original: Any) -> Any:
    @functools.wraps(original)
    def check_random_state(seed: Any) -> Any:
        random = sys.modules.get(_RANDOM)
        return original(random._numpys(seed) if random is not None else seed)

    return check_random_state


def _grid_init(original: Any) -> Any:
    @functools.wraps(original)
    def __init__(self: Any, param_grid: Any) -> None:
        original(self, _numpy_grid(param_grid))

    return __init__


def _numpy_grid(param_grid: Any) -> Any:
    """``param_grid`` with its dicts' dispatch arrays as NumPy arrays, in new dicts and a new
    list; as it is where it holds none (and where it is not a dict, list or tuple: an iterator
    is read once, by scikit-learn)."""
    if isinstance(param_grid, dict):
        return _numpy_values(param_grid)
    if type(param_grid) in (list, tuple):
        grids = [_numpy_values(g) if isinstance(g, dict) else g for g in param_grid]
        if any(new is not old for new, old in zip(grids, param_grid, strict=True)):
            return type(param_grid)(grids)
    return param_grid


def _numpy_values(grid: dict) -> dict:
    if not any(isinstance(v, Wrapper) for v in grid.values()):
        return grid
    return {k: _as_numpy(v) if isinstance(v, Wrapper) else v for k, v in grid.items()}


def _patch_grid(module: Any) -> None:
    grid = getattr(module, "ParameterGrid", None)
    if grid is not None and "__init__" in vars(grid):
        _replace(grid, "__init__", _grid_init(grid.__init__))


def _grid_module_loads() -> None:
    """Patch ``ParameterGrid`` once its module loads, if this is still installed then."""
    from dispatch.base.import_hooks import after_import  # lazy: only where the grid's module is not loaded yet

    def then(module: Any) -> None:
        with _lock:
            if _replaced and not any(owner is getattr(module, "ParameterGrid", None) for owner, _, _ in _replaced):
                _patch_grid(module)

    after_import((_GRID_MODULE,), then)
