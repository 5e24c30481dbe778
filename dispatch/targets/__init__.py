"""Targets: the concrete engines a call can run on, and their registry.

A target is an engine on a device: ``numpy`` and ``torch-cpu`` on the host, ``cupy`` and
``torch-cuda`` on a CUDA (or ROCm) GPU, ``torch-mps`` on an Apple GPU, ``dask`` on the chunks of
a Dask cluster (reached by size, not priced: ``dispatch.cluster``). Each is one module here
(``*_target.py``) that implements the ``Target`` protocol (``protocol``); importing this package
declares them all (``registry.declare``: name, library, device, rank) and imports none but
NumPy's, each module being imported at its target's first probe, where it completes its
registration: a new target is one new module and one line below.
Each declares what it can run identically to NumPy and refuses the rest (``Unsupported``), so
the call goes elsewhere. Targets are made lazily, on first use: a missing or broken library
makes its targets unavailable, with the reason kept for ``dispatch info``; it never breaks a
call.
"""

from __future__ import annotations

from dispatch.base import settings
from dispatch.targets import protocol, registry
from dispatch.targets.protocol import FINITE_INPUTS, Target, Unavailable, Unsupported, check_finite
from dispatch.targets.registry import (
    TargetSpec,
    available,
    disable,
    engine_of,
    forced_but_unavailable,
    get,
    host_array,
    names,
    probe,
    reset,
    unavailable,
)

__all__ = ["FINITE_INPUTS", "Target", "TargetSpec", "Unavailable", "Unsupported", "available", "check_finite",
           "disable", "engine_of", "forced_but_unavailable", "get", "host_array", "names", "probe", "protocol",
           "registry", "reset", "unavailable"]

# dispatch's targets, by rank: each device's first engine is its home. torch's and CuPy's
# threads and device state do not survive fork(); a forked child drops its Dask client and may
# connect its own (``dispatch.base.forksafe``). Dask is reached by size, not priced.
for _name, _module, _library, _device, _rank, _array_module, _fork_safe in (
        ("numpy", "numpy_target", "numpy", "cpu", 0, "", True),
        ("torch-cpu", "torch_target", "torch", "cpu", 10, "torch", False),
        ("cupy", "cupy_target", "cupy", "cuda", 20, "cupy", False),
        ("torch-cuda", "torch_target", "torch", "cuda", 30, "torch", False),
        ("torch-mps", "torch_target", "torch", "mps", 40, "torch", False),
        ("dask", "dask_target", "dask", "dask", 50, "dask.array", True)):
    registry.declare(_name, f"{__name__}.{_module}", _library, _device, _rank, _array_module, _fork_safe)

settings.check_backend(settings.ENV.backend, "DISPATCH_BACKEND", names())  # every name is known now
