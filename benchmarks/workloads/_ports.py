"""Moving a workload's data to a device and back, for the hand ports to torch and CuPy.

A port is split in two so that both costs can be measured:

- ``run_<lib>_resident(lib, **device_data)`` computes on data already on the device and
  returns device arrays, without synchronising;
- ``run_<lib>(...)`` is the round trip a user pays when data starts and ends on the host:
  copy the inputs in, compute, copy the results out (the copy out synchronises).

``Port`` bundles one engine (``torch-cpu``, ``torch-cuda``, ``cupy``) with its copies and its
synchronisation, so a harness can time either form the same way for every workload.
torch and CuPy are never imported here; callers pass the module they imported.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import numpy

Data = Mapping[str, Any]


def to_torch(torch: Any, device: Any, data: Data) -> dict[str, Any]:
    """Arrays to tensors on ``device`` (on the CPU they share memory with the NumPy arrays);
    Python scalars (the size's parameters) pass through."""
    return {k: torch.as_tensor(v, device=device) if isinstance(v, numpy.ndarray) else v for k, v in data.items()}


def from_torch(torch: Any, result: Data) -> dict[str, Any]:
    return {k: v.detach().cpu().numpy() if torch.is_tensor(v) else v for k, v in result.items()}


def to_cupy(cp: Any, data: Data) -> dict[str, Any]:
    return {k: cp.asarray(v) if isinstance(v, numpy.ndarray) else v for k, v in data.items()}


def from_cupy(cp: Any, result: Data) -> dict[str, Any]:
    return {k: cp.asnumpy(v) if isinstance(v, cp.ndarray) else v for k, v in result.items()}


def torch_roundtrip(resident: Callable[..., dict[str, Any]]) -> Callable[..., dict[str, Any]]:
    """``run_torch(torch, device, **data)`` from ``run_torch_resident(torch, **device_data)``."""

    def run_torch(torch: Any, device: Any, **data: Any) -> dict[str, Any]:
        return from_torch(torch, resident(torch, **to_torch(torch, device, data)))

    run_torch.__doc__ = f"Round trip of ``{resident.__name__}``: host NumPy arrays in, host NumPy arrays out."
    return run_torch


def cupy_roundtrip(resident: Callable[..., dict[str, Any]]) -> Callable[..., dict[str, Any]]:
    """``run_cupy(cp, **data)`` from ``run_cupy_resident(cp, **device_data)``."""

    def run_cupy(cp: Any, **data: Any) -> dict[str, Any]:
        return from_cupy(cp, resident(cp, **to_cupy(cp, data)))

    run_cupy.__doc__ = f"Round trip of ``{resident.__name__}``: host NumPy arrays in, host NumPy arrays out."
    return run_cupy


@dataclass(frozen=True)
class Port:
    """One engine a hand port runs on: ``name`` as in the design notes' targets."""

    name: str
    family: str  # "torch" or "cupy": which run_<family>_resident a workload must define
    lib: Any
    device: Any = None

    def supports(self, workload: ModuleType) -> bool:
        return hasattr(workload, f"run_{self.family}_resident")

    def to_device(self, data: Data) -> dict[str, Any]:
        return to_torch(self.lib, self.device, data) if self.family == "torch" else to_cupy(self.lib, data)

    def to_host(self, result: Data) -> dict[str, Any]:
        return from_torch(self.lib, result) if self.family == "torch" else from_cupy(self.lib, result)

    def synchronize(self) -> None:
        """Wait for queued device work, so that a clock read after it is honest."""
        if self.family == "cupy":
            self.lib.cuda.Device().synchronize()  # every stream, not only the current one
        elif self.device.type == "cuda":
            self.lib.cuda.synchronize(self.device)

    def run_resident(self, workload: ModuleType, device_data: Data) -> dict[str, Any]:
        return getattr(workload, f"run_{self.family}_resident")(self.lib, **device_data)

    def run(self, workload: ModuleType, data: Data) -> dict[str, Any]:
        """Round trip: host data in, host results out."""
        return self.to_host(self.run_resident(workload, self.to_device(data)))


def available_ports() -> list[Port]:
    """The engines importable and usable on this machine, CPU first."""
    ports: list[Port] = []
    try:
        torch = importlib.import_module("torch")
    except ImportError:
        torch = None
    if torch is not None:
        ports.append(Port("torch-cpu", "torch", torch, torch.device("cpu")))
        # No torch-mps: the programs are float64, which MPS does not support.
        if torch.cuda.is_available():
            ports.append(Port("torch-cuda", "torch", torch, torch.device("cuda")))
    try:
        cp = importlib.import_module("cupy")
        if cp.cuda.runtime.getDeviceCount() > 0:
            ports.append(Port("cupy", "cupy", cp))
    except Exception:  # not installed, or installed without a usable driver/device
        pass
    return ports
