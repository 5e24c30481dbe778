"""Targets: the concrete engines a call can run on, and their registry.

A target is an engine on a device: ``numpy`` and ``torch-cpu`` on the host, ``cupy`` and
``torch-cuda`` on a CUDA (or ROCm) GPU, ``torch-mps`` on an Apple GPU, ``dask`` on the chunks of
a Dask cluster (reached by size, not priced: ``dispatch.cluster``). Each is one module here
(``*_target.py``) that implements the ``Target`` protocol (``protocol``) and registers itself
(``registry``); importing this package imports them all, so a new target is one new module.
Each declares what it can run identically to NumPy and refuses the rest (``Unsupported``), so
the call goes elsewhere. Targets are made lazily, on first use: a missing or broken library
makes its targets unavailable, with the reason kept for ``dispatch info``; it never breaks a
call.
"""

from __future__ import annotations

import importlib
import pkgutil

from dispatch.base import settings
from dispatch.targets import protocol, registry
from dispatch.targets.protocol import FINITE_INPUTS, Target, Unavailable, Unsupported, check_finite
from dispatch.targets.registry import (
    TargetSpec,
    available,
    disable,
    engine_of,
    forced,
    get,
    host_array,
    names,
    probe,
    reset,
    unavailable,
)

__all__ = ["FINITE_INPUTS", "Target", "TargetSpec", "Unavailable", "Unsupported", "available", "check_finite",
           "disable", "engine_of", "forced", "get", "host_array", "names", "probe", "protocol", "registry", "reset",
           "unavailable"]

# Each target module registers itself as it is imported (by name: none of them is imported
# through this package, so they may import its modules).
for _module in pkgutil.iter_modules(__path__):
    if _module.name.endswith("_target"):
        importlib.import_module(f"{__name__}.{_module.name}")

settings.check_backend(settings.ENV.backend, "DISPATCH_BACKEND", names())  # every name is known now
