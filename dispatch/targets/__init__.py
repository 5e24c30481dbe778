"""Targets: the concrete engines a call can run on, and their registry.

A target is an engine on a device: ``numpy`` and ``torch-cpu`` on the host, ``cupy`` and
``torch-cuda`` on a CUDA (or ROCm) GPU, ``torch-mps`` on an Apple GPU, ``dask`` on the chunks of
a Dask cluster (reached by size, not priced: ``dispatch.cluster``). Each adapter module
declares what it can run identically to NumPy and refuses the rest (``Unsupported``), so the
call goes elsewhere. Targets are detected lazily, on first use: a missing or broken library
makes its targets unavailable, with the reason kept for ``dispatch info``; it never breaks a
call.
"""

from __future__ import annotations

import importlib
import threading
from typing import Any

from dispatch.base import settings
from dispatch.base.devices import HOST, Device, library_of
from dispatch.base.ops import Op
from dispatch.base.state import STATE
from dispatch.base.tiers import Backend

__all__ = ["FINITE_INPUTS", "TARGET_NAMES", "Target", "Unavailable", "Unsupported", "available", "check_finite",
           "disable", "first_call", "get", "probe"]

# Kinds of call a target has run for the first time in this process, so far. CuPy counts its
# own: it compiles a kernel for each, or loads it from its cache, on the host's clock (torch
# ships its kernels compiled). A trial leaves out the periods they fall in (``dispatch.routing.trials``).
first_calls = 0


def first_call() -> None:
    global first_calls
    first_calls += 1


class Unsupported(Exception):
    """A target cannot run this call exactly as NumPy would; the reason says why.

    ``lasting`` marks a refusal that holds for every call of the same kind (the op, the input
    dtypes, the devices: an op the target lacks, an input dtype it cannot hold); the router
    then sends that kind to NumPy straight away. Other refusals depend on this call's
    arguments (an axis out of range, ``where=``, a value NumPy rejects) and are asked again.
    """

    def __init__(self, reason: str, *, lasting: bool = False) -> None:
        super().__init__(reason)
        self.lasting = lasting


# Linear algebra that NumPy's LAPACK answers with NaNs, or with a LinAlgError, when an input
# holds a NaN or an infinity, where cuSOLVER and torch pivot around it and return finite
# numbers. A device checks these inputs first (one reduction read on the host: little next to a
# factorisation) and leaves non-finite ones to NumPy.
FINITE_INPUTS = frozenset({
    "linalg.inv", "linalg.tensorinv", "linalg.solve", "linalg.tensorsolve", "linalg.det", "linalg.slogdet",
    "linalg.matrix_power", "linalg.svd", "linalg.svdvals", "linalg.matrix_rank", "linalg.cond", "linalg.pinv",
    "linalg.lstsq", "linalg.eig", "linalg.eigvals", "linalg.eigh", "linalg.eigvalsh", "linalg.cholesky",
    "linalg.qr", "polyfit",
})


def check_finite(arrays: Any, all_finite: Any) -> None:
    """Refuse the call (NumPy decides) if ``all_finite(a)`` is false for a float or complex array."""
    for a in arrays:
        if str(a.dtype).startswith(("float", "complex", "torch.float", "torch.complex", "torch.bfloat")) \
                and not all_finite(a):
            raise Unsupported("a NaN or an infinity in a linear algebra input: NumPy's LAPACK decides "
                              "(NaN results, or LinAlgError)")


class Unavailable(Exception):
    """A target's library or device is missing or broken."""


class Target:
    """An engine on a device. Subclasses implement ``run`` and the two conversions."""

    name: str = ""
    device: Device = HOST
    tier: Backend = Backend.SCALAR
    library: str = ""  # the module a user would import ("numpy", "torch", "cupy")

    def run(self, op: Op, args: tuple, kwargs: dict) -> Any:
        """Run ``op`` on native arguments; raise ``Unsupported`` to refuse."""
        raise NotImplementedError

    def runner(self, op: Op, args: tuple, kwargs: dict) -> Any:
        """``run`` for calls like this one (the same op, dtypes, shapes, scalar types and
        keywords), as ``run_like(args, kwargs)``: what a target resolves per call signature, it
        may resolve here once (see the lane's memo in ``dispatch.arrays._call``)."""
        return lambda natives, kw: self.run(op, natives, kw)

    def supports(self, op: Op) -> bool:
        """A cheap, static answer: may this target run ``op`` at all (dtypes are checked later)?"""
        return True

    def events(self) -> tuple[Any, Any] | None:
        """A pair of device timing events (start, end), or ``None`` on the host."""
        return None

    def from_host(self, array: Any) -> Any:
        """A host NumPy array as this target's native array (a copy unless zero-copy is possible)."""
        raise NotImplementedError

    def to_host(self, native: Any) -> Any:
        """This target's native array as a host NumPy array."""
        raise NotImplementedError

    def adopt(self, native: Any) -> Any:
        """A native array of another engine on the same device, as this target's (zero-copy)."""
        raise NotImplementedError

    def owns(self, native: Any) -> bool:
        """Whether ``native`` is this target's own array type."""
        raise NotImplementedError

    def synchronize(self) -> None:
        """Wait for queued work (a no-op on the host)."""

    def text(self, native: Any, how: Any) -> str:
        """``how`` (``repr`` or ``str``) of the array as NumPy prints it."""
        return how(self.to_host(native))

    def item(self, native: Any, args: tuple) -> Any:
        """``a.item(*args)``: one element as a Python scalar."""
        return self.to_host(native).item(*args)

    def __repr__(self) -> str:
        return f"<target {self.name} on {self.device}>"


# target name -> (module under dispatch.targets, factory attribute)
TARGET_NAMES = {
    "numpy": ("numpy_target", "NUMPY"),
    "torch-cpu": ("torch_target", "torch_cpu"),
    "cupy": ("cupy_target", "CupyTarget"),
    "torch-cuda": ("torch_target", "torch_cuda"),
    "torch-mps": ("torch_target", "torch_mps"),
    "dask": ("dask_target", "DaskTarget"),
}

assert tuple(TARGET_NAMES) == settings.TARGET_NAMES  # one list of names, two views of it

_lock = threading.Lock()
_targets: dict[str, Target] = {}
_unavailable: dict[str, str] = {}


def probe(name: str) -> Target | None:
    """The target called ``name`` if it works on this machine, else ``None`` (reason kept)."""
    if name in _targets:
        return _targets[name]
    if name in _unavailable:
        return None
    if name not in TARGET_NAMES:
        raise ValueError(f"unknown target {name!r}; known: {', '.join(TARGET_NAMES)}")
    with _lock:
        if name in _targets or name in _unavailable:
            return _targets.get(name)
        module_name, factory = TARGET_NAMES[name]
        try:
            module = importlib.import_module(f"dispatch.targets.{module_name}")
            made = getattr(module, factory)
            _targets[name] = made if isinstance(made, Target) else made()
        except Unavailable as exc:
            _unavailable[name] = str(exc)
        except Exception as exc:  # a broken install must not break a call
            _unavailable[name] = f"{type(exc).__name__}: {exc}"
        return _targets.get(name)


def engine_of(native: Any) -> Target:
    """The target owning a native array (NumPy's for a ``numpy.ndarray``)."""
    library = library_of(type(native))
    if library == "cupy":
        return get("cupy")
    if library == "dask":
        return get("dask")
    if library == "torch":
        kind = native.device.type
        return get("torch-cpu" if kind == "cpu" else "torch-mps" if kind == "mps" else "torch-cuda")
    return get("numpy")


def host_array(native: Any) -> Any:
    """A native array's data as a ``numpy.ndarray`` on the host."""
    return engine_of(native).to_host(native)


def forced() -> Target | None:
    """The target forced here (``using``, ``set_backend``), or ``None`` while routing."""
    name = STATE.forced_name()
    return None if name is None or name == "auto" else get(name)


def get(name: str) -> Target:
    """The target called ``name``; ``RuntimeError`` naming the reason if it is unavailable."""
    target = probe(name)
    if target is None:
        raise RuntimeError(f"target {name!r} is not available here: {_unavailable[name]}")
    return target


def available() -> dict[str, Target]:
    """Every target that works on this machine, probing those not tried yet."""
    for name in TARGET_NAMES:
        probe(name)
    return {name: _targets[name] for name in TARGET_NAMES if name in _targets}


def unavailable() -> dict[str, str]:
    """Why each target that does not work here does not."""
    available()
    return dict(_unavailable)


def disable(name: str, reason: str) -> None:
    """Make the target ``name`` unavailable here, for ``reason`` (``reset`` probes it again)."""
    _targets.pop(name, None)
    _unavailable[name] = reason


def reset(name: str | None = None) -> None:
    """Forget probe results (all, or one target's) so the next use probes again."""
    with _lock:
        for table in (_targets, _unavailable):
            if name is None:
                table.clear()
            else:
                table.pop(name, None)
