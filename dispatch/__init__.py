"""dispatch: run NumPy, scikit-learn and PyTorch code on the fastest backend for each call.

``import dispatch as np`` is a drop-in for NumPy: every public NumPy name is here with the
same meaning, and every call on a ``dispatch.ndarray`` is routed to NumPy, torch on the CPU,
CuPy, or torch on CUDA / ROCm / MPS, with NumPy's result.

Only the selector is imported eagerly; everything else loads on first use, so that
``converters`` (which needs the selector's vocabulary) imports without the array machinery.
"""

from __future__ import annotations

import importlib

import numpy as _np

from dispatch.selector import Backend, BackendSelector, MoeThresholds, OpComplexity  # noqa: F401 - public API
from dispatch.torch_env import set_defaults as _torch_defaults

_torch_defaults()  # before torch loads, where it has not: OpenMP reads its wait policy then (dispatch.torch_env)

__version__ = "0.1.0"

# dispatch's own names that live in submodules: name -> module
_OWN = {
    "ndarray": "dispatch._array",
    "ufunc": "dispatch._namespace",
    "Device": "dispatch.devices",
    "Trace": "dispatch.tracing",
    "get_backend": "dispatch.config",
    "set_backend": "dispatch.config",
    "using": "dispatch.config",
    "use_cluster": "dispatch.cluster",
    "compute": "dispatch.cluster",
}
_SUBMODULES = ("fft", "linalg", "random", "config", "cluster", "sklearn")  # sklearn imports scikit-learn only when used
_MISSING = object()


def trace(a: object = _MISSING, *args: object, **kwargs: object) -> object:
    """Two meanings, told apart by the arguments.

    ``dispatch.trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None)`` is NumPy's: the
    sum along a diagonal. ``dispatch.trace()`` with no arguments records where each call
    runs: ``with dispatch.trace() as t: ...`` then ``t.summary()``.
    """
    if a is _MISSING and not args and not kwargs:
        from dispatch.tracing import Trace

        return Trace()
    return _numpy_namespace("trace")(a, *args, **kwargs)


def asnumpy(a: object) -> _np.ndarray:
    """``a`` as a host ``numpy.ndarray`` (a copy only if it lives on a device)."""
    return _np.asarray(a)


def _numpy_namespace(name: str) -> object:
    try:
        obj = getattr(_np, name)
    except AttributeError:
        raise AttributeError(f"module 'dispatch' has no attribute {name!r}") from None
    from dispatch._namespace import public

    return public("", name, obj, __name__)


def load_ipython_extension(shell: object) -> None:
    """``%load_ext dispatch`` in IPython or Jupyter: see ``dispatch.notebook``."""
    from dispatch.notebook import load_ipython_extension

    load_ipython_extension(shell)


def unload_ipython_extension(shell: object) -> None:
    """``%unload_ext dispatch``: see ``dispatch.notebook``."""
    from dispatch.notebook import unload_ipython_extension

    unload_ipython_extension(shell)


def __getattr__(name: str) -> object:
    if name.startswith("_") and name not in _np.__all__:  # private names are submodules
        raise AttributeError(f"module 'dispatch' has no attribute {name!r}")
    if name in _OWN:
        value = getattr(importlib.import_module(_OWN[name]), name)
    elif name in _SUBMODULES:
        value = importlib.import_module(f"dispatch.{name}")
    else:
        value = _numpy_namespace(name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_OWN, *_SUBMODULES, *(n for n in dir(_np) if not n.startswith("_"))})


__all__ = sorted({*_np.__all__, *_OWN, "Backend", "BackendSelector", "MoeThresholds", "OpComplexity", "asnumpy",
                  "trace"})
