"""What a draw of NumPy's ``Generator(PCG64)`` stream costs: NumPy's own on the host, the
stream kernels' on a CUDA device (``dispatch.streams.device``), as the router prices a call.

Seed figures, read from ``benchmarks/random_streams.py`` on an H200 machine (NumPy 2.x on its
host; the kernels through CuPy, synchronised, with the host's share): a calibration does not
measure draws. The router blends them with what the calls it times measure (its history), so
another machine's figures take over as its draws run.
"""

from __future__ import annotations

from typing import Any

# method -> (NumPy's ns per float64 output, the kernels' ns per float64 output, the kernels'
# fixed seconds per draw: their launches, the host's answers and NumPy's ``advance``)
FLOAT64 = {
    "standard_normal": (16.1, 0.13, 0.6e-3),
    "normal": (16.8, 0.14, 0.6e-3),
    "random": (4.3, 0.025, 0.3e-3),
    "uniform": (4.8, 0.032, 0.3e-3),
    "standard_exponential": (6.3, 0.125, 0.75e-3),
    "exponential": (8.5, 0.14, 0.75e-3),
    "integers": (5.3, 0.037, 0.45e-3),  # int64 outputs; narrower ones cost the host more per output
}
# float32 outputs: NumPy's and the kernels' per-output times against float64's
FLOAT32 = {
    "standard_normal": (0.91, 1.6),
    "random": (0.78, 0.85),
    "standard_exponential": (0.96, 3.0),
}


def draw_seconds(model: Any, method: str, dtype: Any, n: int) -> float | None:
    """Seconds to draw ``n`` outputs of ``method`` in ``dtype`` on ``model``'s target: NumPy on
    the host, the kernels on a CUDA device; ``None`` elsewhere (another host library, another
    device kind), where no draw of NumPy's stream is made."""
    figures = FLOAT64.get(method)
    if figures is None:
        return None
    host_ns, device_ns, fixed_s = figures
    if getattr(dtype, "kind", "f") == "f" and getattr(dtype, "itemsize", 8) == 4:
        host_scale, device_scale = FLOAT32.get(method, (1.0, 1.0))
        host_ns, device_ns = host_ns * host_scale, device_ns * device_scale
    if model.name == "numpy":
        return model.dispatch_overhead_s() + n * host_ns * 1e-9
    if model.device.kind == "cuda":
        return fixed_s + n * device_ns * 1e-9
    return None
