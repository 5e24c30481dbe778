"""A model estimate of how long one call takes on each tier: a roofline with the seed's defaults.

This is a *model estimate*, not a measurement, and not this machine's calibration. It is one
function, ``estimate_seconds``, so that a calibrated cost model can replace it.

The model, per call on ``n`` float64 elements (``n`` as the scanner counts it):

- the catalog entry's work shape gives the bytes moved and the floating-point operations
  (``WORK_MODEL`` below; scikit-learn and PyTorch work shapes assume a square problem, since
  only the element count is known statically);
- SCALAR (NumPy, one core): ``max(bytes / 10 GB/s, flops / 50 GFLOP/s)``;
- SIMD (a vectorised, multi-threaded CPU engine): compute four times faster, the same memory
  bandwidth (memory-bound work does not speed up with wider vectors);
- GPU, data starting and ending on the host: ``10 µs launch + bytes / transfer + flops / 20 TFLOP/s``,
  where a transfer runs at PCIe speed (32 GB/s) but no faster than host memory feeds it
  (10 GB/s): pageable copies run at host-memory speed (8.3 GB/s host-to-device measured on
  the reference H100 machine). So memory-bound work never gains from the GPU, as the seed's
  table says for LOW ops;
- work that runs on the host by definition (``host``; ``random``, whose streams must equal
  NumPy's; data loading) has a SCALAR estimate only.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from converters import NUMPY_CATALOG, PYTORCH_CATALOG, SKLEARN_CATALOG
from dispatch.base.tiers import Backend, OpComplexity

__all__ = ["MODEL", "WORK_MODEL", "estimate_seconds"]

HOST_BANDWIDTH = 10e9  # bytes/s
CPU_FLOPS = 50e9  # FLOP/s, one core
SIMD_SPEEDUP = 4.0
PCIE_BANDWIDTH = 32e9  # bytes/s, the seed's BackendSelector default
GPU_FLOPS = 20e12  # FLOP/s, the seed's BackendSelector default
GPU_LAUNCH = 10e-6  # s
TRANSFER_BANDWIDTH = min(PCIE_BANDWIDTH, HOST_BANDWIDTH)  # a copy is fed from host memory
ITEM_BYTES = 8  # float64
ITERATIONS = 100  # passes an iterative estimator is assumed to make

MODEL = {
    "name": "seed-roofline",
    "kind": "model estimate",
    "note": "a roofline with the seed's defaults, not a measurement of this machine",
    "host_bandwidth_bytes_per_s": HOST_BANDWIDTH,
    "cpu_flops_per_s": CPU_FLOPS,
    "simd_speedup": SIMD_SPEEDUP,
    "pcie_bandwidth_bytes_per_s": PCIE_BANDWIDTH,
    "gpu_flops_per_s": GPU_FLOPS,
    "gpu_launch_s": GPU_LAUNCH,
    "transfer_bandwidth_bytes_per_s": TRANSFER_BANDWIDTH,
    "item_bytes": ITEM_BYTES,
}


def _log2(n: float) -> float:
    return math.log2(n) if n > 1 else 0.0


# work shape -> (bytes moved, flops) for n elements. Square problems where dimensions are unknown.
WORK_MODEL: dict[str, Callable[[float], tuple[float, float]]] = {
    # NumPy catalog
    "map": lambda n: (3 * n * ITEM_BYTES, n),  # two inputs, one output
    "view": lambda n: (0.0, 0.0),
    "copy": lambda n: (2 * n * ITEM_BYTES, 0.0),
    "create": lambda n: (n * ITEM_BYTES, 0.0),
    "reduce": lambda n: (n * ITEM_BYTES, n),
    "scan": lambda n: (2 * n * ITEM_BYTES, n),
    "matmul": lambda n: (3 * n * ITEM_BYTES, 2 * n**1.5),  # two square operands of n elements
    "cubic": lambda n: (2 * n * ITEM_BYTES, n**1.5),  # m·n·min(m, n) for a square matrix
    "sort": lambda n: (2 * n * ITEM_BYTES, n * _log2(n)),
    "fft": lambda n: (4 * n * ITEM_BYTES, 5 * n * _log2(n)),  # complex output
    "random": lambda n: (n * ITEM_BYTES, 10 * n),
    "host": lambda n: (n * ITEM_BYTES, 0.0),
    # scikit-learn catalog (n = samples x features)
    "scale": lambda n: (3 * n * ITEM_BYTES, 3 * n),
    "gram": lambda n: (n * ITEM_BYTES, n**1.5),
    "svd": lambda n: (2 * n * ITEM_BYTES, n**1.5),
    "iterative": lambda n: (ITERATIONS * n * ITEM_BYTES, ITERATIONS * 2 * n),
    "pairwise": lambda n: (n * ITEM_BYTES, 2 * n**1.5),
    "trees": lambda n: (ITERATIONS * n * ITEM_BYTES, ITERATIONS * n * _log2(n)),
    # PyTorch catalog
    "conv": lambda n: (3 * n * ITEM_BYTES, 2 * 9 * n),  # a 3-wide kernel over 3 channels
    "attention": lambda n: (4 * n * ITEM_BYTES, 4 * n**1.5),
    "graph": lambda n: (4 * n * ITEM_BYTES, 2 * n**1.5),
}
# When an op is in no catalog: the work its complexity stands for.
_WORK_BY_COMPLEXITY = {OpComplexity.LOW: "map", OpComplexity.MEDIUM: "reduce", OpComplexity.HIGH: "matmul"}
_HOST_ONLY = frozenset({"host", "random"})
# flops of matrix work on an (m, k) matrix, where the source shows one (a tall one is far cheaper
# than the square of as many elements)
_MATRIX_FLOPS: dict[str, Callable[[float, float], float]] = {
    "matmul": lambda m, k: 2 * m * k * k,  # (m, k) @ (k, k)
    "cubic": lambda m, k: m * k * min(m, k),
    "gram": lambda m, k: m * k * min(m, k),
    "svd": lambda m, k: m * k * min(m, k),
}
_ENTRIES = {**NUMPY_CATALOG, **SKLEARN_CATALOG, **PYTORCH_CATALOG}  # names are disjoint (a test pins it)


def estimate_seconds(op_name: str, complexity: OpComplexity, n: int,
                     shape: Sequence[int] | None = None) -> dict[Backend, float]:
    """Model estimate of one call's time on each tier that can run it.

    Parameters
    ----------
    op_name : str
        A catalog name of any of the three catalogs (``"linalg.svd"``, ``"PCA"``, ``"Linear"``).
        An unknown name is modelled by its complexity alone.
    complexity : OpComplexity
        The op's complexity (used when the op is in no catalog).
    n : int
        Elements the call works on.
    shape : sequence of int, optional
        The data's shape where the source shows it: a matrix ``(m, k)`` prices a product as
        ``(m, k) @ (k, k)`` and a factorisation as ``m·k·min(m, k)``, not as square ones.

    Returns
    -------
    dict[Backend, float]
        Seconds per tier, in ``Backend`` order; host-only work has a SCALAR entry only.
    """
    entry = _ENTRIES.get(op_name)
    work = entry.work if entry is not None else _WORK_BY_COMPLEXITY[complexity]
    data_bytes, flops = WORK_MODEL[work](float(n))
    if shape is not None and len(shape) == 2 and work in _MATRIX_FLOPS:
        flops = _MATRIX_FLOPS[work](*map(float, shape))
    scalar = max(data_bytes / HOST_BANDWIDTH, flops / CPU_FLOPS)
    if work in _HOST_ONLY:
        return {Backend.SCALAR: scalar}
    return {
        Backend.SCALAR: scalar,
        Backend.SIMD: max(data_bytes / HOST_BANDWIDTH, flops / (CPU_FLOPS * SIMD_SPEEDUP)),
        Backend.GPU: GPU_LAUNCH + data_bytes / TRANSFER_BANDWIDTH + flops / GPU_FLOPS,
    }
