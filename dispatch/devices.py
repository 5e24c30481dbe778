"""Where data lives: the host, a CUDA (or ROCm) GPU, or an Apple GPU (MPS).

A device is memory, not an engine: NumPy and torch-cpu both compute on host memory, CuPy
and torch-cuda both on a CUDA device. Moving between engines on one device is free (zero-copy
through DLPack); moving between devices is a cost the router weighs.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

__all__ = ["DASK", "HOST", "Device", "device_of", "is_backend_type", "parse_device"]


@dataclass(frozen=True)
class Device:
    """A memory space: ``Device("cpu")``, ``Device("cuda", 0)``, ``Device("mps")``, or
    ``Device("dask")``, the chunks of a Dask cluster."""

    kind: str
    index: int | None = None

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
    """Whether ``t`` is a CuPy, torch or Dask array type: told apart by its library, since a
    device array type may subclass ``numpy.ndarray``."""
    module = t.__module__
    return module.startswith("cupy") or module.startswith("torch") or module.startswith("dask.array")


def device_of(native: object) -> Device:
    """The device a native array (NumPy, CuPy, torch) lives on; the host for anything else."""
    module = type(native).__module__
    if module.startswith("cupy"):
        return Device("cuda", native.device.id)  # type: ignore[attr-defined]
    if module.startswith("dask.array"):
        return DASK
    if module.startswith("torch") and "torch" in sys.modules:
        dev = native.device  # type: ignore[attr-defined]
        if dev.type == "cpu":
            return HOST
        return Device(dev.type, dev.index if dev.index is not None else 0)
    return HOST
