"""dispatch: run NumPy, scikit-learn and PyTorch code on the fastest backend for each call.

``import dispatch as np`` is a drop-in for NumPy: every public NumPy name is here with the
same meaning, and every call on a ``dispatch.ndarray`` is routed to NumPy, torch on the CPU,
CuPy, or torch on CUDA / ROCm / MPS, with NumPy's result.

Only the settings and the import hooks are imported eagerly; everything else, the selector's
names too, loads on first use: ``converters`` (which needs the selector's vocabulary) imports
without the array machinery, and a script's first call loads only what it needs.
"""

from __future__ import annotations

import importlib
import sys as _sys
import warnings as _warnings

import numpy as _np

from dispatch.base import forksafe as _forksafe  # noqa: F401 - registers the handler a forked child runs
from dispatch.base import import_hooks as _import_hooks
from dispatch.base import settings as _settings  # DISPATCH_* read now: a bad value fails at import, naming it
from dispatch.base import warning_site as _warning_site

_import_hooks.install()  # ``import dispatch.ma``; numpy.testing's asserts on dispatch arrays (base.import_hooks)
_warning_site.install()  # warnings from routed calls name the caller's line (base.warning_site)
if _settings.ENV.backend != "auto":
    importlib.import_module("dispatch.targets")  # a forced target's name is checked against the registry


def _sklearn_takes_dispatch_objects(_module: object = None) -> None:
    """scikit-learn's checks for NumPy's types take dispatch's objects as the NumPy objects they
    stand for (``dispatch.sklearn._numpy_types``): a ``RandomState`` or a parameter grid made by
    ``np`` reaches scikit-learn as NumPy's would. Never breaks the import of scikit-learn."""
    try:  # by name, as the root loads its other parts (``_OWN``): the layer above comes in at scikit-learn's load
        importlib.import_module("dispatch.sklearn._numpy_types").install()
    except Exception as exc:  # scikit-learn then checks as it does: say so once
        _warnings.warn(f"dispatch: scikit-learn may refuse dispatch's arrays and RandomState as NumPy's: "
                       f"{type(exc).__name__}: {exc}", RuntimeWarning, stacklevel=2)


if "sklearn" in _sys.modules:
    _sklearn_takes_dispatch_objects()
else:
    _import_hooks.after_import(("sklearn",), _sklearn_takes_dispatch_objects)


# NumPy's version, as code that checks ``np.__version__`` expects of a drop-in; dispatch's own is
# ``__dispatch_version__`` (and importlib.metadata.version("dispatch-accel"))
__version__ = _np.__version__
__dispatch_version__ = "0.1.0"

# dispatch's own names that live in submodules: name -> module
_OWN = {
    "ndarray": "dispatch.arrays._array",
    "ufunc": "dispatch._namespace",
    "Device": "dispatch.base.devices",
    "Trace": "dispatch.tracing",
    "get_backend": "dispatch.config",
    "set_backend": "dispatch.config",
    "using": "dispatch.config",
    "get_config": "dispatch.config",
    "set_config": "dispatch.config",
    "config_context": "dispatch.config",
    "set_memory_fraction": "dispatch.config",
    "set_chunk_bytes": "dispatch.config",
    "tune": "dispatch.config",
    "use_cluster": "dispatch.cluster",
    "compute": "dispatch.arrays.scale_out",
    "forget": "dispatch.routing.learned",
    "Backend": "dispatch.routing.selector",
    "BackendSelector": "dispatch.routing.selector",
    "MoeThresholds": "dispatch.routing.selector",
    "OpComplexity": "dispatch.routing.selector",
}
# sklearn imports scikit-learn only when used
_SUBMODULES = ("fft", "linalg", "random", "rec", "char", "config", "cluster", "sklearn")
# NumPy's private names that tests and libraries reach through ``np.``: NumPy's own objects
_NUMPY_PRIVATE = frozenset({"_core", "_NoValue", "_CopyMode", "__config__"})
_MISSING = object()


def trace(a: object = _MISSING, *args: object, **kwargs: object) -> object:
    """Two meanings, told apart by the arguments.

    ``dispatch.trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None)`` is NumPy's: the
    sum along a diagonal. ``dispatch.trace()`` with no arguments records where each call
    runs: ``with dispatch.trace() as t: ...`` then ``t.summary()``.
    """
    if a is _MISSING and not args and not kwargs:
        from dispatch.tracing import Trace  # lazy: the package loads its modules on first use

        return Trace()
    return _numpy_namespace("trace")(a, *args, **kwargs)


def asnumpy(a: object) -> _np.ndarray:
    """``a`` as a host ``numpy.ndarray`` (a copy only if it lives on a device)."""
    return _np.asarray(a)


def _numpy_namespace(name: str) -> object:
    try:
        obj = getattr(_np, name)
    except AttributeError as error:  # NumPy's message (its guidance for removed aliases: np.float), for this module
        raise AttributeError(str(error).replace("module 'numpy'", "module 'dispatch'", 1)) from None
    from dispatch._namespace import public  # lazy: the array machinery loads on the first NumPy name

    return public("", name, obj, __name__)


def load_ipython_extension(shell: object) -> None:
    """``%load_ext dispatch`` in IPython or Jupyter: see ``dispatch.notebook``."""
    # by name, as every name of ``_OWN``: the package's root sits below the tools it lends its name to
    importlib.import_module("dispatch.notebook").load_ipython_extension(shell)


def unload_ipython_extension(shell: object) -> None:
    """``%unload_ext dispatch``: see ``dispatch.notebook``."""
    importlib.import_module("dispatch.notebook").unload_ipython_extension(shell)


def __getattr__(name: str) -> object:
    if name in _NUMPY_PRIVATE:
        value = globals()[name] = getattr(_np, name)
        return value
    if name.startswith("_") and name not in _np.__all__:  # other private names are submodules
        raise AttributeError(f"module 'dispatch' has no attribute {name!r}")
    if name in _OWN:
        value = getattr(importlib.import_module(_OWN[name]), name)
    elif name in _SUBMODULES:
        value = importlib.import_module(f"dispatch.{name}")
    else:
        caught: list = []
        try:
            with _warnings.catch_warnings(record=True) as caught:
                _warnings.simplefilter("always")
                value = _numpy_namespace(name)
        finally:  # (an AttributeError passes through, held by no local: its frames are not kept in a cycle)
            # NumPy warns at each access (np.chararray's deprecation, np.str's future): so does dispatch, keeping none
            for w in caught:
                _warnings.warn(w.message, w.category, stacklevel=2)
        if caught:
            return value
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_OWN, *_SUBMODULES, *(n for n in dir(_np) if not n.startswith("_"))})


__all__ = sorted({*_np.__all__, *_OWN, "asnumpy", "trace"})


if "IPython" in _sys.modules:  # in IPython or Jupyter: engines come up while the kernel waits (dispatch.notebook)
    importlib.import_module("dispatch.notebook").watch_cells()
