"""Where data lives: the host, a CUDA (or ROCm) GPU, or an Apple GPU (MPS).

A device is memory, not an engine: NumPy and torch-cpu both compute on host memory, CuPy
and torch-cuda both on a CUDA device. Moving between engines on one device copies nothing
(DLPack), though each crossing takes host time (microseconds); moving between
devices is a cost the router weighs.
"""

from __future__ import annotations

import sys
from typing import Any

from dispatch.base.records import Frozen

__all__ = ["DASK", "HOST", "HOST_ONLY", "Device", "add_library", "device_of", "is_backend_type", "library_of",
           "parse_device"]


class Device(Frozen):
    """A memory space: ``Device("cpu")``, ``Device("cuda", 0)``, ``Device("mps")``, or
    ``Device("dask")``, the chunks of a Dask cluster. Frozen and hashable (a record of
    ``dispatch.base.records``, not a dataclass: it is made at import, before the first call)."""

    __slots__ = ("kind", "index")  # noqa: RUF023 - the fields, in order

    def __init__(self, kind: str, index: int | None = None) -> None:
        self._set(kind, index)

    def __str__(self) -> str:
        return self.kind if self.index is None else f"{self.kind}:{self.index}"

    def __repr__(self) -> str:
        return f"Device({str(self)!r})"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, str):
            return str(self) == other or (self.index == 0 and self.kind == other)
        if isinstance(other, Device):
            return self.kind == other.kind and self.index == other.index
        return NotImplemented

    def __hash__(self) -> int:
        return hash((self.kind, self.index))

    @property
    def is_host(self) -> bool:
        return self.kind == "cpu"


HOST = Device("cpu")
HOST_ONLY = frozenset({HOST})  # the devices of a call whose arrays are all on the host
DASK = Device("dask")  # chunks on a Dask cluster (or in this process): dispatch.cluster


def parse_device(spec: str | Device) -> Device:
    """``"cpu"``, ``"cuda"``, ``"cuda:1"``, ``"mps"`` (or a ``Device``) to a ``Device``."""
    if isinstance(spec, Device):
        return spec
    if not isinstance(spec, str):
        raise TypeError(f"a device is a string such as 'cpu', 'cuda:0' or 'mps', not {type(spec).__name__}")
    kind, _, index = spec.partition(":")
    if kind == "cpu" and not index:
        return HOST
    if kind in ("cuda", "mps"):
        if not index:
            return Device(kind, 0)
        if index.isdigit():
            return Device(kind, int(index))
    raise ValueError(f"unknown device {spec!r}: expected 'cpu', 'cuda', 'cuda:N' or 'mps'")


def is_backend_type(t: type) -> bool:
    """Whether ``t`` is the array type of a target's library other than NumPy (CuPy, torch,
    Dask): told apart by its library, since a device array type may subclass ``numpy.ndarray``."""
    return library_of(t) != ""


def device_of(native: object) -> Device:
    """The device a native array (NumPy, CuPy, torch) lives on; the host for anything else."""
    library = library_of(type(native))
    if library == "cupy":
        index = native.device.id  # type: ignore[attr-defined]
        found = _known.get(("cuda", index))
        return found if found is not None else _known.setdefault(("cuda", index), Device("cuda", index))
    if library == "dask":
        return DASK
    if library == "torch" and "torch" in sys.modules:
        dev = native.device  # type: ignore[attr-defined]
        found = _known.get(dev)  # a torch.device is hashable: the same Device object each time
        if found is None:
            index = dev.index if dev.index is not None else 0
            found = _known[dev] = HOST if dev.type == "cpu" else Device(dev.type, index)
        return found
    return HOST


def library_of(kind: type) -> str:
    """The library of an array type whose module a target registered (``"cupy"``, ``"dask"``,
    ``"torch"``), or ``""`` (NumPy's, anything else); read from its module once per type."""
    library = _libraries.get(kind)
    if library is None:
        module = kind.__module__
        library = _libraries[kind] = next((name for prefix, name in _PREFIXES if module.startswith(prefix)), "")
    return library


def add_library(prefix: str, library: str) -> None:
    """Tell the array types whose module starts with ``prefix`` to be ``library``'s (the
    target registry calls it for each target's array module)."""
    global _PREFIXES
    if (prefix, library) not in _PREFIXES:
        _PREFIXES = (*_PREFIXES, (prefix, library))
        _libraries.clear()


# (module prefix, library) for each registered array module; an array type's library, read from
# its module once per type; the Device of each place seen.
_PREFIXES: tuple[tuple[str, str], ...] = ()
_libraries: dict[type, str] = {}
_known: dict = {}


def torch_cpu_to_numpy(tensor: Any) -> Any:
    """A torch CPU tensor's memory as a ``numpy.ndarray``, zero-copy (conjugate and negative
    views resolved, gradients detached)."""
    if tensor.requires_grad:
        tensor = tensor.detach()
    if tensor.is_conj():
        tensor = tensor.resolve_conj()
    if tensor.is_neg():
        tensor = tensor.resolve_neg()
    return tensor.numpy()
