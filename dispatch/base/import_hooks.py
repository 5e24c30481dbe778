"""Import hooks that keep ``import dispatch as np`` a drop-in at the import statement too.

- ``import dispatch.ma``, ``from dispatch.lib.stride_tricks import as_strided``: a NumPy
  submodule that dispatch has no module of its own for is importable under ``dispatch.`` and is
  NumPy's own module (what the attribute ``dispatch.ma`` is).
- ``numpy.testing.assert_equal`` and ``assert_almost_equal`` (and ``numpy.ma.testutils``'
  asserts of the same kind) compare dispatch arrays as the NumPy arrays they hold: NumPy tells
  arrays apart by ``isinstance(x, numpy.ndarray)``, and otherwise asks
  ``bool(desired == actual)``, which an array of several elements refuses.
"""

from __future__ import annotations

import functools
import importlib
import importlib.machinery
import sys
from types import ModuleType
from typing import Any

__all__ = ["after_import", "install", "spec_then"]

_PREFIX = "dispatch."
_TESTING_UTILS = "numpy.testing._private.utils"
# NumPy's testing modules, and their asserts that fall back on bool(a == b) for what is not a
# numpy.ndarray; numpy.testing re-exports the first module's names.
_HOSTED_ASSERTS = {
    _TESTING_UTILS: ("assert_equal", "assert_almost_equal"),
    "numpy.ma.testutils": ("assert_equal", "fail_if_equal", "assert_not_equal", "assert_almost_equal", "assert_close"),
}


# A finder and loader by protocol: ``importlib.abc`` would import ``importlib.resources`` and
# ``tempfile`` with ``import dispatch`` (8 ms), for default methods these classes define themselves.
class _NumpyMirror:
    """Finds ``dispatch.X`` as ``numpy.X`` where dispatch has no ``X`` of its own, and patches
    NumPy's testing helpers as they load."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if fullname in _HOSTED_ASSERTS:
            return self._patched_spec(fullname, path, target)
        if fullname in _after:
            return spec_then(self, fullname, path, target, _after.pop(fullname))
        if not fullname.startswith(_PREFIX):
            return None
        rest = fullname[len(_PREFIX):]
        if any(part.startswith("_") for part in rest.split(".")):
            return None
        parent = sys.modules.get(fullname.rpartition(".")[0])
        if parent is None or getattr(parent, "__name__", "").startswith("dispatch"):
            # under dispatch's own package: its own module wins, found here once (not again after us)
            own = importlib.machinery.PathFinder.find_spec(fullname, getattr(parent, "__path__", None))
            if own is not None:
                return own
        if _numpy_module(rest) is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, self, is_package=True)

    def create_module(self, spec: Any) -> None:
        return None

    def exec_module(self, module: Any) -> None:
        # the import system returns what sys.modules holds after this: NumPy's module itself
        sys.modules[module.__name__] = _numpy_module(module.__name__[len(_PREFIX):])

    def _patched_spec(self, fullname: str, path: Any, target: Any) -> Any:
        return spec_then(self, fullname, path, target, _patch_testing)


_after: dict[str, Any] = {}  # module (a dotted name too) -> called once it has loaded (``after_import``)


def after_import(names: tuple[str, ...], then: Any) -> None:
    """Call ``then(module)`` once any of ``names`` (modules not loaded yet, a submodule by its dotted name) loads."""
    for name in names:
        _after[name] = then


def _numpy_module(dotted: str) -> ModuleType | None:
    """NumPy's submodule ``numpy.<dotted>``, imported, or an alias NumPy keeps as an attribute
    (``numpy.emath`` is ``numpy.lib.scimath``); ``None`` if there is none."""
    try:
        return importlib.import_module("numpy." + dotted)
    except ImportError:
        pass
    obj: Any = sys.modules["numpy"]
    for part in dotted.split("."):
        obj = getattr(obj, part, None)
    return obj if isinstance(obj, ModuleType) else None


def spec_then(finder: Any, fullname: str, path: Any, target: Any, then: Any) -> Any:
    """The spec the finders after ``finder`` give ``fullname``, its loader followed by
    ``then(module)`` once the module has run (``None`` where none finds it)."""
    for other in sys.meta_path:
        if other is finder or not hasattr(other, "find_spec"):
            continue
        spec = other.find_spec(fullname, path, target)
        if spec is not None:
            if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                spec.loader = _Then(spec.loader, then)
            return spec
    return None


class _Then:
    """A loader that runs ``loader``, then ``then(module)``."""

    def __init__(self, loader: Any, then: Any) -> None:
        self._loader, self._then = loader, then

    def create_module(self, spec: Any) -> Any:
        return self._loader.create_module(spec)

    def exec_module(self, module: Any) -> None:
        self._loader.exec_module(module)
        self._then(module)

    def __getattr__(self, name: str) -> Any:  # get_source, get_filename...: the real loader's
        return getattr(self._loader, name)


def _as_numpy(x: Any) -> Any:
    """A dispatch array as NumPy's (a 0-d result that stands for a scalar as NumPy's scalar)."""
    arrays = sys.modules.get("dispatch.arrays._array")
    if arrays is None or not isinstance(x, arrays.Wrapper):
        return x
    host = x.__array__()
    return host[()] if isinstance(x, arrays._DeviceScalar) else host


def _hosting(check: Any) -> Any:
    @functools.wraps(check)
    def hosted(actual: Any, desired: Any, *args: Any, **kwargs: Any) -> Any:
        __tracebackhide__ = True  # pytest shows the caller's line, as for NumPy's own
        return check(_as_numpy(actual), _as_numpy(desired), *args, **kwargs)

    hosted._dispatch_hosted = True
    return hosted


def _patch_testing(utils: Any) -> None:
    names = _HOSTED_ASSERTS[utils.__name__]
    for name in names:
        check = getattr(utils, name, None)
        if check is not None and not getattr(check, "_dispatch_hosted", False):
            setattr(utils, name, _hosting(check))  # NumPy's recursion (lists, dicts) calls the module's name
    testing = sys.modules.get("numpy.testing")
    if utils.__name__ == _TESTING_UTILS and testing is not None:  # loaded before dispatch: names copied already
        for name in names:
            if hasattr(testing, name):
                setattr(testing, name, getattr(utils, name))


def install() -> None:
    """Put the hook first on ``sys.meta_path`` (once); patch NumPy's testing helpers if loaded."""
    if not any(isinstance(f, _NumpyMirror) for f in sys.meta_path):
        sys.meta_path.insert(0, _NumpyMirror())
    for name in _HOSTED_ASSERTS:
        utils = sys.modules.get(name)
        if utils is not None:
            _patch_testing(utils)
