"""How long one call takes: its work, from its operands' shapes, over a target's throughput.

A *model estimate*, not a measurement. Per call and target::

    seconds = overhead + max(flops / rate, bytes / bandwidth)   (+ the copies to and from a device)

- **Work** (``work_of``): the call's floating-point operations and the bytes it moves, from
  the shapes of its operands: ``2 m k n`` for a product of ``(m, k)`` and ``(k, n)``; LAPACK's
  counts for a factorisation (``2n³/3`` for an LU, ``2pq²`` for the QR that starts a tall
  one...); ``5 L log2 L`` per transform of length ``L``; ``n log2 n`` per sort; one per element
  for element-wise work, reductions and scans (20 for transcendental functions and random
  draws). A factorisation of a matrix narrower than LAPACK's block (``BLOCK`` columns) and too
  large for the cache runs column by column: it reads and writes the whole trailing matrix
  once per column, so its bytes, not its flops, set its time.
- **Throughput** (``Throughput``): with a calibration, the rate each target reached on the op
  that stands for that kind of work (its matmul, solve, SVD, tall lstsq, FFT, sort, add, exp,
  sum, cumsum: ``REPRESENTATIVE``), at the calibrated size nearest in work (interpolated
  between sizes, held past the ends), its memory bandwidth and its call overhead; for a device,
  the calibration's transfer rates for the inputs and the result. Without a calibration, the
  seed's defaults (``SEED_*`` below), per tier: SCALAR one core of NumPy, SIMD four times its
  flops at the same bandwidth, GPU a launch, the copies over the bus and the device's flops.

Host-only work (``random``, whose streams must equal NumPy's; files, printing) has a SCALAR
(``numpy``) estimate only.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from converters import NUMPY_CATALOG, PYTORCH_CATALOG, SKLEARN_CATALOG
from dispatch.base.tiers import Backend, OpComplexity

__all__ = ["MODEL", "REPRESENTATIVE", "Throughput", "Work", "estimate_seconds", "shapes_for", "work_of"]

SEED_HOST_BANDWIDTH = 10e9  # bytes/s
SEED_CPU_FLOPS = 50e9  # FLOP/s
SEED_SIMD_SPEEDUP = 4.0
SEED_PCIE_BANDWIDTH = 32e9  # bytes/s, the seed's BackendSelector default
SEED_GPU_FLOPS = 20e12  # FLOP/s, the seed's BackendSelector default
SEED_GPU_LAUNCH = 10e-6  # s
# A pageable copy to a device is fed from host memory: no faster than host memory.
SEED_TRANSFER_BANDWIDTH = min(SEED_PCIE_BANDWIDTH, SEED_HOST_BANDWIDTH)
ITERATIONS = 100  # passes an iterative estimator is assumed to make
BLOCK = 32  # LAPACK's panel width: narrower factorisations run column by column
CACHE_BYTES = 2**21  # a panel that fits here is reused from the cache, not from memory
TALL = 8  # a matrix this many times longer than wide is factorised by a QR first

MODEL = {
    "name": "seed-roofline",
    "kind": "model estimate",
    "note": "the call's flops and bytes over the seed's default throughputs, not a measurement of this machine",
    "host_bandwidth_bytes_per_s": SEED_HOST_BANDWIDTH,
    "cpu_flops_per_s": SEED_CPU_FLOPS,
    "simd_speedup": SEED_SIMD_SPEEDUP,
    "pcie_bandwidth_bytes_per_s": SEED_PCIE_BANDWIDTH,
    "gpu_flops_per_s": SEED_GPU_FLOPS,
    "gpu_launch_s": SEED_GPU_LAUNCH,
    "transfer_bandwidth_bytes_per_s": SEED_TRANSFER_BANDWIDTH,
}


@dataclass(frozen=True)
class Work:
    """What one call does: ``flops`` of the kind ``kind`` (a key of ``REPRESENTATIVE``, or
    ``"bytes"`` for copies), ``nbytes`` moved, ``result_bytes`` of them its result; ``host``:
    work that runs on NumPy by definition; ``grain``: the flops of one of the independent
    pieces a batch is made of (a transform of one row), whose size sets the rate."""

    kind: str
    flops: float
    nbytes: float
    result_bytes: float = 0.0
    host: bool = False
    grain: float | None = None


def _log2(n: float) -> float:
    return math.log2(n) if n > 1 else 0.0


def _lstsq_flops(p: float, q: float, extra: float = 8.0) -> float:
    """A factorisation that starts with a QR of a ``p`` x ``q`` matrix (p >= q), then works on
    its ``q`` x ``q`` triangle (``extra q³``)."""
    return 2 * p * q * q + extra * q**3


# The calibrated op that stands for each kind of work, and its flops at the size ``x`` a
# calibration stores (elements; the side of a square operand; for the tall lstsq, a
# (64 n, n) operand stored at 4 n).
REPRESENTATIVE: dict[str, tuple[str, Any]] = {
    "gemm": ("matmul", lambda x: 2 * x**3),
    "lu": ("linalg.solve", lambda x: 2 * x**3 / 3 + 2 * x * x),
    "svd": ("linalg.svd", lambda x: 26 * x**3),  # thin U, S, V of a square matrix
    "tall": ("linalg.lstsq", lambda x: _lstsq_flops(64 * (x / 4), x / 4) + 4 * 64 * (x / 4) ** 2),
    "fft": ("fft.fft", lambda x: 5 * x * _log2(x)),
    "sort": ("sort", lambda x: x * _log2(x)),
    "map": ("add", lambda x: x),
    "exp": ("exp", lambda x: 20 * x),
    "reduce": ("sum", lambda x: x),
    "scan": ("cumsum", lambda x: x),
}
# Blocked BLAS and LAPACK work runs at least as fast per flop on larger operands.
_BLOCKED = frozenset({"gemm", "lu", "svd", "tall"})
# A kind the calibration did not measure is priced as the next one here.
_FALLBACK = {"tall": "svd", "svd": "lu", "lu": "gemm", "exp": "map", "scan": "map", "reduce": "map",
             "sort": "map", "fft": "map"}  # fmt: skip

TRANSCENDENTAL = frozenset({
    "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sin", "cos", "tan", "arcsin", "arccos", "arctan",
    "arctan2", "sinh", "cosh", "tanh", "arcsinh", "arccosh", "arctanh", "power", "float_power", "logaddexp",
    "logaddexp2", "hypot", "cbrt", "sqrt", "sinc", "i0", "angle",
})
# Sorts through indices: they move indices and compare through them, where a direct sort of
# floats runs vectorised: several times its cost.
_INDIRECT_SORTS = frozenset({"argsort", "lexsort", "argpartition", "sort_complex"})
INDIRECT = 5.0
# Searches that write the coordinates of the true elements: a pass to count them, then one that
# turns each found element's position into its coordinates, a division per axis past the first
# (NumPy's n-d loop takes about five times its 1-d one per element, as the test elements first).
_COORDINATE_SEARCHES = frozenset({"nonzero", "argwhere"})
COORDINATES = 4.0  # element-wise work per element and axis past the first
_PRODUCTS_OF_ROWS = frozenset({"cov", "corrcoef"})  # (p, n) rows of variables: a p x p product
_ONE_DIMENSIONAL_FFT = frozenset({"fft.fft", "fft.ifft", "fft.rfft", "fft.irfft", "fft.hfft", "fft.ihfft"})
_REAL_FFT = frozenset({"fft.rfft", "fft.irfft", "fft.hfft", "fft.ihfft", "fft.rfft2", "fft.irfft2", "fft.rfftn",
                       "fft.irfftn"})  # fmt: skip
# Factorisations: flops of a square n x n matrix, and the kind whose rate prices them.
_SQUARE_FACTOR = {
    "linalg.solve": ("lu", 2 / 3), "linalg.tensorsolve": ("lu", 2 / 3), "linalg.det": ("lu", 2 / 3),
    "linalg.slogdet": ("lu", 2 / 3), "linalg.inv": ("lu", 2.0), "linalg.tensorinv": ("lu", 2.0),
    "linalg.cholesky": ("lu", 1 / 3), "linalg.qr": ("lu", 4 / 3),
    "linalg.svd": ("svd", 26.0), "linalg.pinv": ("svd", 28.0), "linalg.svdvals": ("svd", 8 / 3),
    "linalg.cond": ("svd", 8 / 3), "linalg.matrix_rank": ("svd", 8 / 3), "linalg.lstsq": ("svd", 8 / 3),
    "linalg.eig": ("svd", 25.0), "linalg.eigvals": ("svd", 10.0), "linalg.eigh": ("svd", 9.0),
    "linalg.eigvalsh": ("svd", 4 / 3), "roots": ("svd", 10.0), "polyfit": ("svd", 8 / 3),
}  # fmt: skip


def _batch(shape: Sequence[int], core: int) -> int:
    return max(math.prod(shape[:-core]), 1) if len(shape) > core else 1


def _matrix(shape: Sequence[int]) -> tuple[int, int]:
    if len(shape) >= 2:
        return int(shape[-2]), int(shape[-1])
    return (int(shape[-1]), 1) if shape else (1, 1)


def _product(op: str, shapes: Sequence[Sequence[int]], item: int) -> Work:
    a = shapes[0]
    if op in _PRODUCTS_OF_ROWS:  # rows are variables: a p x p product over n observations
        p, n = _matrix(a) if len(a) >= 2 else (1, int(a[0]))
        return Work("gemm", 2.0 * p * p * n, item * (2 * p * n + p * p), item * p * p)
    if op in ("convolve", "correlate", "polymul", "polydiv", "poly"):
        n, m = math.prod(a), math.prod(shapes[1]) if len(shapes) > 1 else 1
        return Work("map", 2.0 * n * m, item * (n + m + n + m), item * (n + m))
    m, k = (1, int(a[-1])) if len(a) == 1 else _matrix(a)
    if len(shapes) > 1 and len(shapes[1]) >= 1:
        b = shapes[1]
        n = 1 if len(b) == 1 else int(b[-1])
        b_elements = math.prod(b)
    else:  # a static site that shows one operand: the other (k, min(m, k)), so Z.T @ Z is a Gram matrix
        n = min(m, k)
        b_elements = k * n
    batch = max(_batch(a, 2), _batch(shapes[1], 2) if len(shapes) > 1 else 1)
    flops = 2.0 * batch * m * k * n
    out = batch * m * n
    # A skinny product (a narrow output, or a narrow inner side) runs at the rate of a small
    # square one: BLAS's blocks stay mostly empty. The two smaller sides set that square.
    low, middle, _ = sorted((m, k, n))
    side = math.sqrt(low * middle)
    return Work("gemm", flops, item * (math.prod(a) + b_elements + out), item * out, grain=2.0 * side**3)


def _factorisation(op: str, shapes: Sequence[Sequence[int]], item: int) -> Work:
    a = shapes[0]
    m, n = _matrix(a)
    if op == "polyfit":  # a Vandermonde matrix of the points, degree unknown: a few columns
        m, n = math.prod(a), 4
    batch = _batch(a, 2)
    p, q = max(m, n), min(m, n)
    kind, per_cube = _SQUARE_FACTOR.get(op, ("lu", 2 / 3))
    rhs = math.prod(shapes[1]) if len(shapes) > 1 and op in ("linalg.solve", "linalg.lstsq") else 0
    if p >= TALL * q and kind == "svd":  # a QR of the tall matrix first, then its small triangle
        kind, flops = "tall", _lstsq_flops(p, q, per_cube)
    else:
        flops = per_cube * p * q * q
    flops = batch * flops + 4.0 * rhs * q
    nbytes = item * batch * (2 * p * q + 2 * rhs)  # read it, and a working copy LAPACK overwrites
    if q < BLOCK and item * p * q > CACHE_BYTES:
        # column by column: per column, the trailing matrix read (a product with the reflector)
        # and read and written (its update), from memory, as the whole matrix outgrows the cache
        nbytes += item * batch * 2.5 * p * q * q
    return Work(kind, flops, nbytes, item * batch * (p * q + rhs))


def _transform(op: str, shapes: Sequence[Sequence[int]], item: int) -> Work:
    a = shapes[0]
    size = max(math.prod(a), 1)
    length = max(int(a[-1]), 1) if op in _ONE_DIMENSIONAL_FFT and a else size
    # a real transform does under half a complex one's work, and makes no complex copy of its input
    flops = 5.0 * size * _log2(length) * (0.25 if op in _REAL_FFT else 1.0)
    out = 2 * item * size  # complex
    return Work("fft", flops, item * size + out, out, grain=flops * length / size)


def work_of(op: str, shapes: Sequence[Sequence[int]], itemsize: int = 8) -> Work | None:
    """The work of one NumPy call with operands of these shapes (the first the largest for
    element-wise work), or ``None`` for an op in no catalog."""
    entry = NUMPY_CATALOG.get(op)
    if entry is None or not shapes:
        return None
    work, item = entry.work, itemsize
    size = max(max(math.prod(s) for s in shapes), 1)
    if op in _COORDINATE_SEARCHES:
        axes = max(len(shapes[0]), 1)
        return Work("map", size * (1 + COORDINATES * (axes - 1)), item * size + 8.0 * axes * size, 8.0 * axes * size)
    if work == "matmul":
        return _product(op, shapes, item)
    if work == "cubic":
        return _factorisation(op, shapes, item)
    if work == "fft":
        return _transform(op, shapes, item)
    if work == "sort":
        length = max(int(shapes[0][-1]), 1) if shapes[0] else 1
        flops = size * _log2(length) * (INDIRECT if op in _INDIRECT_SORTS else 1.0)
        return Work("sort", flops, 2.0 * item * size, item * size, grain=flops * length / size)
    if work == "map":
        elements = sum(math.prod(s) for s in shapes)
        kind = "exp" if op.split(".")[0] in TRANSCENDENTAL else "map"
        return Work(kind, size * (20 if kind == "exp" else 1), item * (elements + size), item * size)
    if work == "reduce":
        return Work("reduce", size, item * size)
    if work == "scan":
        return Work("scan", size, 2.0 * item * size, item * size)
    if work == "random":
        return Work("exp", 20.0 * size, item * size, item * size, host=True)
    if work == "view":
        return Work("bytes", 0.0, 0.0)
    if work == "host":
        return Work("bytes", 0.0, item * size, host=True)
    if work == "create":
        return Work("bytes", 0.0, item * size, item * size)
    return Work("bytes", 0.0, 2.0 * item * size, item * size)  # a copy: read and written


def shapes_for(op: str, n: int, shape: Sequence[int] | None = None) -> list[list[int]]:
    """Operand shapes for a static call site that shows ``n`` elements (and the first operand's
    ``shape`` where the source shows it): a product of two square matrices, a factorisation of
    one, a vector otherwise."""
    entry = NUMPY_CATALOG.get(op)
    work = entry.work if entry is not None else "map"
    if shape is not None and len(shape) >= 1 and work in ("matmul", "cubic", "fft", "sort"):
        return [[int(d) for d in shape]]
    side = max(1, round(math.sqrt(n)))
    if work in ("matmul", "cubic") and op not in _PRODUCTS_OF_ROWS:
        return [[side, side]] * (2 if work == "matmul" else 1)
    return [[int(n)]]


class Throughput:
    """One target's throughputs: FLOP/s per kind of work (as a curve over the work), memory
    bandwidth, call overhead, and for a device the copies of inputs and result.

    Parameters
    ----------
    rates : dict
        Kind of work -> ``[(flops, flop_per_s), ...]`` by increasing flops (one point: a constant).
    bandwidth : float
        Bytes per second through memory.
    overhead : float
        Seconds per call.
    copy : callable, optional
        ``copy(to_device_bytes, to_host_bytes)`` -> seconds, for a target on a device.
    """

    def __init__(self, rates: dict[str, list[tuple[float, float]]], bandwidth: float, overhead: float = 0.0,
                 copy: Any = None) -> None:
        self.rates, self.bandwidth, self.overhead, self.copy = rates, bandwidth, overhead, copy

    @classmethod
    def seed(cls, tier: Backend) -> Throughput:
        """The seed's defaults for a tier."""
        flops = {Backend.SCALAR: SEED_CPU_FLOPS, Backend.SIMD: SEED_CPU_FLOPS * SEED_SIMD_SPEEDUP,
                 Backend.GPU: SEED_GPU_FLOPS}[tier]  # fmt: skip
        rates = {kind: [(1.0, flops)] for kind in REPRESENTATIVE}
        if tier is not Backend.GPU:
            return cls(rates, SEED_HOST_BANDWIDTH)
        return cls(rates, math.inf, SEED_GPU_LAUNCH, lambda to, back: (to + back) / SEED_TRANSFER_BANDWIDTH)

    @classmethod
    def calibrated(cls, data: dict[str, Any], dtype: str = "float64") -> Throughput | None:
        """A target's throughputs from its calibration (``Calibration.targets[name]``), or
        ``None`` where it measured no curve."""
        from dispatch.routing.cost import TargetModel  # pricing reads the calibration, it imports no library

        overhead = float(data.get("call_overhead_s", 0.0))
        curves = (data.get("ops") or {}).get(dtype) or (data.get("ops") or {}).get("float64") or {}
        rates = {}
        for kind, (rep, flops_at) in REPRESENTATIVE.items():
            points = curves.get(rep) or []
            # the rate of the op itself: its time less the call's overhead, which is added once
            found = [(flops_at(x), flops_at(x) / max(t - overhead, 0.1 * t)) for x, t in points if t > 0]
            if found:
                found.sort()
                if kind in _BLOCKED:  # a disturbed larger point must not make a larger product slower per flop
                    found = [(f, max(r for _, r in found[: i + 1])) for i, (f, _) in enumerate(found)]
                rates[kind] = found
        if not rates:
            return None
        bandwidth = float(data.get("memory_bandwidth") or SEED_HOST_BANDWIDTH)
        copy = None
        if data.get("transfer"):
            model = TargetModel("", data)
            sync = float(data.get("sync_overhead_s", 0.0))

            def copy(to: float, back: float) -> float:
                return (model.to_device_seconds(to) if to else 0.0) + (model.to_host_seconds(back) + sync if back
                                                                       else 0.0)
        return cls(rates, bandwidth, overhead, copy)

    def rate(self, kind: str, flops: float) -> float | None:
        while kind not in self.rates:
            if kind not in _FALLBACK:
                return None
            kind = _FALLBACK[kind]
        points = self.rates[kind]
        if flops <= points[0][0]:
            return points[0][1]
        if flops >= points[-1][0]:
            return points[-1][1]
        for (f0, r0), (f1, r1) in itertools.pairwise(points):
            if flops <= f1:
                w = math.log(flops / f0) / math.log(f1 / f0)
                return math.exp(math.log(r0) + w * (math.log(r1) - math.log(r0)))
        return points[-1][1]

    def seconds(self, work: Work, resident: bool = False) -> float | None:
        """Seconds for one call of ``work`` (inputs on the host unless ``resident``)."""
        compute = 0.0
        if work.flops:
            rate = self.rate(work.kind, work.grain or work.flops)
            if rate is None:
                return None
            compute = work.flops / rate
        seconds = self.overhead + max(compute, work.nbytes / self.bandwidth)
        if self.copy is not None and not resident:
            seconds += self.copy(work.nbytes - work.result_bytes, work.result_bytes)
        return seconds


# ---- the seed roofline of a static call site (any of the three catalogs) ----------------------------

ITEM_BYTES = 8
# scikit-learn and PyTorch work shapes, for ``n`` elements of a square problem: (bytes, flops)
_OTHER_WORK = {
    "scale": lambda n: (3 * n * ITEM_BYTES, 3 * n),
    "gram": lambda n: (n * ITEM_BYTES, n**1.5),
    "svd": lambda n: (2 * n * ITEM_BYTES, n**1.5),
    "iterative": lambda n: (ITERATIONS * n * ITEM_BYTES, ITERATIONS * 2 * n),
    "pairwise": lambda n: (n * ITEM_BYTES, 2 * n**1.5),
    "trees": lambda n: (ITERATIONS * n * ITEM_BYTES, ITERATIONS * n * _log2(n)),
    "conv": lambda n: (3 * n * ITEM_BYTES, 2 * 9 * n),  # a 3-wide kernel over 3 channels
    "attention": lambda n: (4 * n * ITEM_BYTES, 4 * n**1.5),
    "graph": lambda n: (4 * n * ITEM_BYTES, 2 * n**1.5),
    "host": lambda n: (n * ITEM_BYTES, 0.0),
}
_OP_BY_COMPLEXITY = {OpComplexity.LOW: "add", OpComplexity.MEDIUM: "sum", OpComplexity.HIGH: "matmul"}
_OTHERS = {**SKLEARN_CATALOG, **PYTORCH_CATALOG}


def _other_work(op: str, n: int) -> Work:
    entry = _OTHERS[op]
    nbytes, flops = _OTHER_WORK.get(entry.work, _OTHER_WORK["gram"])(float(n))
    return Work("gemm", flops, nbytes, host=entry.work == "host")


def static_work(op: str, complexity: OpComplexity, n: int, shape: Sequence[int] | None = None) -> Work:
    """The work of a static call site of any catalog (an op in none priced as its complexity's
    representative)."""
    if op in _OTHERS and op not in NUMPY_CATALOG:
        return _other_work(op, n)
    name = op if op in NUMPY_CATALOG else _OP_BY_COMPLEXITY[complexity]
    found = work_of(name, shapes_for(name, n, shape))
    assert found is not None
    return found


def estimate_seconds(op_name: str, complexity: OpComplexity, n: int,
                     shape: Sequence[int] | None = None) -> dict[Backend, float]:
    """Model estimate of one call's time on each tier, with the seed's default throughputs.

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
        The first operand's shape where the source shows it: a matrix ``(m, k)`` prices a
        product as ``(m, k) @ (k, min(m, k))`` and a factorisation of ``(m, k)``, not square ones.

    Returns
    -------
    dict[Backend, float]
        Seconds per tier, in ``Backend`` order; host-only work has a SCALAR entry only.
    """
    work = static_work(op_name, complexity, n, shape)
    tiers = (Backend.SCALAR,) if work.host else tuple(Backend)
    return {tier: Throughput.seed(tier).seconds(work) or 0.0 for tier in tiers}
