"""Hand-made calibrations for the command-line tests: linear and cubic curves with round
numbers, so that what they predict can be checked by hand.

``numpy``: 1 µs calls, 1 ns per element; ``torch-cpu``: 5 µs calls, 4 times faster per
element; a GPU (``cupy``, optional): 20 µs calls, 100 times faster per element, transfers at
10 GB/s staged (5 GB/s pageable) to the device.
"""

from __future__ import annotations

from dispatch.routing import calibration

VECTOR = (1_000, 10_000, 100_000, 1_000_000)
SQUARE = (16, 64, 256, 1_024)


def _target(overhead: float, speed: float, device: str = "cpu", transfer: dict | None = None) -> dict:
    def linear(per_element: float) -> list[list[float]]:
        return [[n, overhead + per_element / speed * n] for n in VECTOR]

    def cubic(per_flop: float) -> list[list[float]]:
        return [[n, overhead + per_flop / speed * n**3] for n in SQUARE]

    ops = {"add": linear(1e-9), "exp": linear(4e-9), "sum": linear(0.5e-9), "cumsum": linear(2e-9),
           "sort": linear(20e-9), "fft.fft": linear(10e-9), "matmul": cubic(2e-10), "linalg.solve": cubic(1e-9),
           "linalg.svd": cubic(1e-8)}  # fmt: skip
    return {"device": device, "threads": 2, "call_overhead_s": overhead, "sync_overhead_s": 0.0,
            "memory_bandwidth": 10e9 * speed, "transfer": transfer or {},
            "gemm": {"float64": [[n, 2.0 * n**3 / t] for n, t in ops["matmul"]]},
            "ops": {"float64": ops, "float32": ops}}  # fmt: skip


GPU_TRANSFER = {"to_device_staged": 10e9, "to_device_pageable": 5e9, "to_host_staged": 10e9,
                "to_host_pageable": 3e9, "to_host_latency_s": 30e-6, "to_device_latency_s": 10e-6}  # fmt: skip


def synthetic(gpu: bool = False, fingerprint: str | None = None, torch_cpu: bool = True) -> calibration.Calibration:
    """A calibration of this machine (its fingerprint, unless another is given)."""
    targets = {"numpy": _target(1e-6, 1.0)}
    if torch_cpu:
        targets["torch-cpu"] = _target(5e-6, 4.0)
    gpus = []
    if gpu:
        targets["cupy"] = _target(20e-6, 100.0, "cuda:0", GPU_TRANSFER)
        gpus = [{"target": "cupy", "name": "Synthetic GPU", "memory": 80 * 2**30}]
    return calibration.Calibration(
        fingerprint=fingerprint or calibration.fingerprint(),
        machine={"cpu": "Synthetic CPU", "cpu_count": 16, "gpus": gpus, "libraries": {}},
        targets=targets,
        quick=False,
        created="2026-11-22T00:00:00+00:00",
        seconds=1.0,
    )
