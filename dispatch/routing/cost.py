"""Cost models: how long a call would take on each target, from calibration.

One model per target, with the seed's ``BackendCostModel`` protocol (GEMM rate for (m, k, n),
dispatch overhead, round-trip overhead, memory bandwidth, threads), plus the measured curves
of representative ops. An estimate is::

    compute(op on target, from the representative op's measured curve at this size)
      + transfer of every input that is not on the target's device
      + the read-back of a result NumPy returns as a scalar, when the target is a device

and, when every input is on the host and the target is a device, the router adds the copy of
the result back (``return_seconds``) times the learned chance that it is read back before
the device uses it again: a device must pay the whole round trip to win a lone call.

Curves are interpolated in log-log space between measured sizes and extrapolated past the
largest by the op's work shape (linear, n·log n, or cubic in the side of a square operand).
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from dispatch.base.box import device as _device
from dispatch.base.box import dtype as _dtype
from dispatch.base.devices import parse_device
from dispatch.base.ops import FFT_1D, op_named
from dispatch.base.tiers import MoeThresholds, OpComplexity
from dispatch.routing.calibration import INTEGER_OPS, SQUARE_OPS, Calibration
from dispatch.streams import prices
from dispatch.targets._staging import THRESHOLD

__all__ = ["ROUTING_S", "TargetModel", "estimate", "estimate_call", "models_from", "numpy_floor", "representative",
           "return_seconds", "way_back_seconds"]

# About what routing one call costs (its input summary, the decision, the bookkeeping; see
# benchmarks/overhead.py): below the size where another target beats NumPy by more than this,
# a host call runs on NumPy without asking the router.
ROUTING_S = 10e-6
# Element-wise ops that cost about what exp costs (transcendental); the rest cost what add costs.
TRANSCENDENTAL = frozenset({
    "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sin", "cos", "tan", "arcsin", "arccos", "arctan",
    "asin", "acos", "atan", "sinh", "cosh", "tanh", "arcsinh", "arccosh", "arctanh", "asinh", "acosh", "atanh",
    "arctan2", "atan2", "power", "pow", "float_power", "logaddexp", "logaddexp2", "hypot", "cbrt", "sqrt",
    "sinc", "i0", "angle",
})
# Transcendental maps priced from the calibrated sin's curve, not exp's: where NumPy computes them
# by libm per element (sin, cos, and sinc through sin; hypot too), they cost 5-10x an exp on NumPy alone.
SCALAR_LIBM = frozenset({"sin", "cos", "sinc", "hypot"})
# Factorisations that cost what an SVD costs; the others cost what a solve (an LU) costs.
SVD_LIKE = frozenset({"linalg.svd", "linalg.svdvals", "linalg.pinv", "linalg.matrix_rank", "linalg.cond",
                      "linalg.lstsq", "linalg.eig", "linalg.eigvals", "linalg.eigh", "linalg.eigvalsh",
                      "polyfit", "roots"})


# Ops calibrated on their own, priced from another's curve by a calibration that did not measure
# them (one made to an older plan, a test's synthetic one): what they were priced from before.
STAND_INS = {"lexsort": "sort", "sin": "exp"}


def representative(op: Any) -> str | None:
    """The calibrated op whose curve prices ``op``; ``None`` for bandwidth-priced work."""
    work, name = op.work, op.name
    base = name.split(".")[0] if op.method != "__call__" else name
    if work == "map":
        return "sin" if base in SCALAR_LIBM else "exp" if base in TRANSCENDENTAL else "add"
    if name in STAND_INS:
        return name
    return {
        "reduce": "sum",
        "scan": "cumsum",
        "sort": "sort",
        "fft": "fft.fft",
        "matmul": "matmul",
        "cubic": "linalg.svd" if name in SVD_LIKE else "linalg.solve",
    }.get(work)


def _growth(rep: str, ratio: float, x: float) -> float:
    """How time grows past the last measured size by ``ratio`` (= x / x_last)."""
    if rep in SQUARE_OPS:
        return ratio**3
    if rep in ("sort", "lexsort", "fft.fft"):
        return ratio * math.log2(max(x, 2.0)) / math.log2(max(x / ratio, 2.0))
    return ratio


class TargetModel:
    """The calibrated costs of one target (the seed's ``BackendCostModel``, and curves)."""

    def __init__(self, name: str, data: dict[str, Any]) -> None:
        self.name = name
        self.data = data
        self.ops: dict[str, dict[str, list[list[float]]]] = data.get("ops", {})
        # the stand-ins this calibration needs: the ops it did not measure on any dtype
        self.stand_ins = {rep: other for rep, other in STAND_INS.items()
                          if not any(rep in curves for curves in self.ops.values())}
        self.transfer: dict[str, float] = data.get("transfer", {})
        # the device the target computed on when calibrated (read from the calibration: pricing a
        # target never imports its library)
        self.device = parse_device(data.get("device", "cpu"))

    # ---- the seed's protocol -----------------------------------------------------------------------

    def gemm_flops(self, m: int, k: int, n: int, dtype: str = "float64") -> float:
        """Measured GEMM FLOP/s for an (m x k) @ (k x n) product, interpolated."""
        side = max((m * k * n) ** (1 / 3), 1.0)
        seconds = self.seconds("matmul", side, dtype)
        return 2.0 * m * k * n / seconds if seconds else 0.0

    def dispatch_overhead_s(self) -> float:
        return float(self.data.get("call_overhead_s", 0.0))

    def roundtrip_overhead_s(self) -> float:
        return float(self.data.get("sync_overhead_s", 0.0)) + float(self.transfer.get("to_host_latency_s", 0.0))

    def memory_bandwidth(self) -> float:
        return float(self.data.get("memory_bandwidth", 0.0))

    def num_threads(self) -> int:
        return int(self.data.get("threads", 1))

    # ---- curves ---------------------------------------------------------------------------------------

    def seconds(self, rep: str, x: float, dtype: str) -> float | None:
        """Time of the representative op ``rep`` at size ``x`` (resident data), or ``None``."""
        rep = self.stand_ins.get(rep, rep)
        curves = self.ops.get(dtype) or {}
        if rep not in curves:  # a dtype measured for a few ops only (int64), or not at all
            curves = self.ops.get("float64") or curves
        points = curves.get(rep)
        if not points:
            return None
        xs = [p[0] for p in points]
        if x <= xs[0]:
            return points[0][1]
        if x >= xs[-1]:
            last_x, last_t = points[-1]
            return last_t * _growth(rep, x / last_x, x)
        i = bisect.bisect_left(xs, x)
        (x0, t0), (x1, t1) = points[i - 1], points[i]
        w = math.log(x / x0) / math.log(x1 / x0)
        return math.exp(math.log(t0) + w * (math.log(t1) - math.log(t0)))

    def bytes_seconds(self, nbytes: float) -> float:
        """Moving ``nbytes`` through memory once (copies, creation)."""
        bw = self.memory_bandwidth()
        return self.dispatch_overhead_s() + (nbytes / bw if bw else 0.0)

    def to_device_seconds(self, nbytes: float) -> float:
        key = "to_device_staged" if nbytes >= THRESHOLD else "to_device_pageable"
        bw = self.transfer.get(key) or self.transfer.get("to_device_pageable")
        return float(self.transfer.get("to_device_latency_s", 0.0)) + (nbytes / bw if bw else 0.0)

    def to_host_seconds(self, nbytes: float) -> float:
        key = "to_host_staged" if nbytes >= THRESHOLD else "to_host_pageable"
        bw = self.transfer.get(key) or self.transfer.get("to_host_pageable")
        return float(self.transfer.get("to_host_latency_s", 0.0)) + (nbytes / bw if bw else 0.0)


def models_from(cal: Calibration) -> dict[str, TargetModel]:
    return {name: TargetModel(name, data) for name, data in cal.targets.items()}


# ---- the floor of the cost policy ----------------------------------------------------------------------


def numpy_floor(models: dict[str, TargetModel], priced: Any, op: Any, known: dict[str, int]) -> int:
    """The largest size (a power of two) at which NumPy is still cheapest for host data of ``op``,
    even against a device that already held it, by more than routing the call would cost, among
    the targets of ``models`` in ``priced`` (the cost policy's floor; ``known``: those found, by
    representative op). The router gives it; ``dispatch.routing.floors`` too, before it loads."""
    rep = representative(op)
    if rep is None or op.local or not op.cataloged or op.work in ("host", "random"):
        return 2**62 if (not op.cataloged or op.work in ("host", "random")) else 1 << 12
    cached = known.get(rep)
    if cached is not None:
        return cached
    numpy_model = models.get("numpy")
    if numpy_model is None:
        return 0
    floor = 0
    for exp in range(4, 31):
        n = 1 << exp
        mine = numpy_model.seconds(rep, _side_of(rep, n), "float64")
        # Sorts are also measured on integers, which torch and CuPy sort by radix sorts, far faster
        # than their float sorts. (A lexsort is measured on integers alone: its floor is theirs.)
        integer = numpy_model.seconds(rep, _side_of(rep, n), "int64") if rep in INTEGER_OPS else None
        if (mine is None and integer is None) or _beaten(models, priced, rep, n, mine, ("float64", "float32")) \
                or _beaten(models, priced, rep, n, integer, ("int64",)):
            break
        floor = n
    known[rep] = floor
    return floor


def _beaten(models: dict[str, TargetModel], priced: Any, rep: str, n: int, mine: float | None,
            dtypes: tuple[str, ...]) -> bool:
    """Whether another priced target runs ``rep`` on ``n`` elements, in the cheapest of ``dtypes``,
    faster than NumPy's ``mine`` by more than routing a call costs (a target that cannot price the
    first of ``dtypes`` is passed over)."""
    if mine is None:
        return False
    for name, model in models.items():  # priced from the calibration alone: nothing is probed
        if name == "numpy" or name not in priced:
            continue
        t = model.seconds(rep, _side_of(rep, n), dtypes[0])
        if t is None:
            continue
        t = min([t, *(model.seconds(rep, _side_of(rep, n), d) or t for d in dtypes[1:])])
        if t + ROUTING_S < mine:
            return True
    return False


def _side_of(rep: str, elements: int) -> float:
    return math.sqrt(elements) if rep in SQUARE_OPS else float(elements)


# ---- sizing a call ----------------------------------------------------------------------------------------


def _curve_dtype(dtypes: tuple[np.dtype, ...]) -> tuple[str, float]:
    """The calibrated dtype whose curves price these dtypes, and a factor for what differs."""
    widest = max((d.itemsize for d in dtypes), default=8)
    complex_ = any(d.kind == "c" for d in dtypes)
    if complex_:
        return ("float64" if widest >= 16 else "float32"), 4.0  # a complex multiply is ~4 real ones
    return ("float64" if widest >= 8 else "float32"), 1.0


def _shapes(inputs: Any) -> list[tuple[int, ...]]:
    return [tuple(a.shape) for a in inputs.arrays]


def _size(op: Any, rep: str, inputs: Any) -> float:
    """The size in the representative's units: elements, or the side of an equivalent square."""
    if rep not in SQUARE_OPS:
        return float(max(inputs.size, 1))
    shapes = [s for s in _shapes(inputs) if len(s) >= 1]
    if rep == "matmul":
        if len(shapes) >= 2 and len(shapes[0]) >= 1 and len(shapes[1]) >= 1:
            a, b = shapes[0], shapes[1]
            m = a[-2] if len(a) >= 2 else 1
            k = a[-1]
            n = b[-1] if len(b) >= 2 else 1
            batch = max(math.prod(a[:-2]), math.prod(b[:-2]), 1)
            return max((batch * m * k * n) ** (1 / 3), 1.0)
        return max(inputs.size ** 0.5, 1.0)
    a = shapes[0] if shapes else (1, 1)
    m, n = (a[-2], a[-1]) if len(a) >= 2 else (a[-1], 1)
    batch = max(math.prod(a[:-2]), 1)
    return max((batch * m * n * min(m, n)) ** (1 / 3), 1.0)


def compute_seconds(model: TargetModel, op: Any, inputs: Any) -> float | None:
    """Time to run ``op`` on this target with its inputs already there."""
    if op.local or op.work == "view":
        return model.dispatch_overhead_s()
    if op.work == "random":  # a draw: NumPy's on the host, the stream kernels' on a CUDA device
        return prices.draw_seconds(model, op.name.rpartition(".")[2], inputs.dtypes[0], inputs.size)
    dtype, factor = _curve_dtype(inputs.dtypes)
    rep = representative(op)
    if rep in INTEGER_OPS and inputs.dtypes and all(d.kind in "biu" for d in inputs.dtypes):
        dtype = "int64"  # calibrations without integer curves fall back to float64's
    if rep is None:  # copies and creation: memory bandwidth
        return model.bytes_seconds(2.0 * inputs.nbytes)
    if rep == "fft.fft" and op.name in FFT_1D and inputs.arrays:
        return _batched_fft_seconds(model, inputs, dtype, factor)
    seconds = None
    if rep == "linalg.svd" and _tall(inputs):  # calibrations before the tall curve have none
        seconds = model.seconds("linalg.lstsq", _size(op, "linalg.lstsq", inputs), dtype)
    if seconds is None:
        seconds = model.seconds(rep, _size(op, rep, inputs), dtype)
    return None if seconds is None else seconds * factor


def _tall(inputs: Any) -> bool:
    """A matrix at least 8 times longer than wide (either way): priced by the tall curve."""
    shape = tuple(inputs.arrays[0].shape) if inputs.arrays else ()
    return len(shape) >= 2 and max(shape[-2:]) >= 8 * max(min(shape[-2:]), 1)


# One-dimensional transforms (``FFT_1D``): a batch of short ones costs far less than one long one of
# as many points (the calibration times a single transform per size).
def _batched_fft_seconds(model: TargetModel, inputs: Any, dtype: str, factor: float) -> float | None:
    """Transforms along the last axis (the default): one call, ``size / length`` transforms, of
    the length ``n`` asked for where one was (the layout: see ``dispatch.arrays._call._fft_points``).

    Priced as that many short transforms one after another, or as one transform of all the
    points less its longer length's share of the work (``log n``), whichever is less: a device
    runs the batch in one launch, and its time for one short transform is mostly that launch."""
    shape = tuple(inputs.arrays[0].shape)
    layout = getattr(inputs, "layout", None)
    length = layout if type(layout) is int else (max(shape[-1], 1) if shape else 1)
    one = model.seconds("fft.fft", float(length), dtype)
    if one is None:
        return None
    overhead = model.dispatch_overhead_s()
    points = max(inputs.size, 1)
    batches = points / length
    seconds = overhead + max(one - overhead, 0.0) * batches
    whole = model.seconds("fft.fft", float(points), dtype) if batches > 1 else None
    if whole is not None:
        seconds = min(seconds, whole * math.log2(max(length, 2)) / math.log2(max(points, 2)))
    return seconds * factor


def transfer_seconds(model: TargetModel, target: Any, inputs: Any) -> tuple[float, int]:
    """Seconds and bytes to bring every input not on the target's device there (none for a
    host array the target keeps a valid copy of: ``mirrored``)."""
    seconds, moved = 0.0, 0
    for a in inputs.arrays:
        device = _device_of(a)
        if device == target.device:
            continue
        data = getattr(a, "_engine_array", a)
        if (type(data) is np.ndarray or target.device.is_host) and mirrored(data, target.name):
            continue  # (device data read on the host: from the host's copy of it, or of its base)
        nbytes = int(math.prod(a.shape)) * _itemsize(a)
        moved += nbytes
        if target.device.is_host:
            seconds += _model_for_device(device).to_host_seconds(nbytes) if _model_for_device(device) else 0.0
        else:
            seconds += model.to_device_seconds(nbytes)
            if not device.is_host:  # device to another device: through the host
                other = _model_for_device(device)
                seconds += other.to_host_seconds(nbytes) if other else 0.0
    return seconds, moved


def estimate(model: TargetModel, target: Any, op: Any, inputs: Any, scalar_result: bool) -> float | None:
    """Total seconds for this call on this target, or ``None`` if it cannot be priced."""
    compute = compute_seconds(model, op, inputs)
    if compute is None:
        return None
    transfer, _ = transfer_seconds(model, target, inputs)
    readback = model.roundtrip_overhead_s() if scalar_result and not target.device.is_host else 0.0
    return compute + transfer + readback


def result_bytes(op: Any, inputs: Any) -> int:
    """About how many bytes the result of ``op`` holds (0 for a reduction: a scalar, priced as a
    read-back already)."""
    if op.work == "reduce":
        return 0
    itemsize = max((d.itemsize for d in inputs.dtypes), default=8)
    if representative(op) == "matmul":
        shapes = [s for s in _shapes(inputs) if len(s) >= 1]
        if len(shapes) >= 2:
            a, b = shapes[0], shapes[1]
            m = a[-2] if len(a) >= 2 else 1
            n = b[-1] if len(b) >= 2 else 1
            return max(math.prod(a[:-2]), math.prod(b[:-2]), 1) * m * n * itemsize
    return inputs.size * itemsize


def return_seconds(model: TargetModel, op: Any, inputs: Any) -> float:
    """Copying the result of ``op`` from this (device) target back to the host, with its sync."""
    nbytes = result_bytes(op, inputs)
    if not nbytes:
        return 0.0
    return model.to_host_seconds(nbytes) + float(model.data.get("sync_overhead_s", 0.0))


def _never(*_: Any) -> bool:
    return False


# Whether the target ``name`` keeps a valid copy of host ``data``, or the host one of device
# ``data`` (``dispatch.arrays.mirrors.valid``, which the call path, above this layer, sets here),
# and whether one would be kept (``keepable``).
mirrored: Callable[[Any, str], bool] = _never
keepable: Callable[[Any], bool] = _never


def set_mirrors(valid: Callable[[Any, str], bool], keeps: Callable[[Any], bool]) -> None:
    """Price copies by the device copies kept (``dispatch.arrays.mirrors``)."""
    global mirrored, keepable
    mirrored, keepable = valid, keeps


# The models of the targets holding data elsewhere (set by the router with the calibration).
_device_models: dict[Any, TargetModel] = {}


def set_device_models(models: dict[Any, TargetModel]) -> None:
    _device_models.clear()
    _device_models.update(models)


def _model_for_device(device: Any) -> TargetModel | None:
    return _device_models.get(device)


def _device_of(a: Any) -> Any:
    if isinstance(a, _Shaped):
        return a.device

    return _device(a)


def _itemsize(a: Any) -> int:
    if isinstance(a, _Shaped):
        return a.dtype.itemsize

    return _dtype(a).itemsize


# ---- the MoE table for a calibrated machine ----------------------------------------------------------

_REPRESENTATIVE_BY_COMPLEXITY = ("add", "sum", "matmul")


def _host_seconds(model: TargetModel, rep: str, n: int) -> float | None:
    return model.seconds(rep, _side_of(rep, n), "float64")


def _gpu_seconds(model: TargetModel, rep: str, n: int) -> float | None:
    compute = _host_seconds(model, rep, n)
    if compute is None:
        return None
    inputs = 2 if rep in ("add", "matmul") else 1
    return compute + inputs * model.to_device_seconds(n * 8) + way_back_seconds(model, rep, n * 8)


def way_back_seconds(model: TargetModel, rep: str, nbytes: float) -> float:
    """A device's result of the representative op ``rep`` back on the host: a scalar read-back
    for the reduction, else its ``nbytes``."""
    return model.roundtrip_overhead_s() if rep == "sum" else model.to_host_seconds(nbytes)


def derive_selector(cls: type, cal: Calibration) -> Any:
    """The selector for a calibration: see ``BackendSelector.from_calibration``."""

    models = models_from(cal)
    numpy_model = models.get("numpy")
    cpu = [m for name, m in models.items() if name not in ("numpy",) and not m.transfer]
    gpu = [m for m in models.values() if m.transfer]
    sizes = [1 << e for e in range(4, 35)]
    simd, gpus = [], []
    for complexity in OpComplexity:
        rep = _REPRESENTATIVE_BY_COMPLEXITY[complexity]
        simd_at = gpu_at = None
        for n in sizes:
            base = _host_seconds(numpy_model, rep, n) if numpy_model else None
            best_cpu = min((t for m in cpu if (t := _host_seconds(m, rep, n)) is not None), default=None)
            if simd_at is None and base is not None and best_cpu is not None and best_cpu < base:
                simd_at = n // 2
            cpu_best = min(v for v in (base, best_cpu, math.inf) if v is not None)
            best_gpu = min((t for m in gpu if (t := _gpu_seconds(m, rep, n)) is not None), default=None)
            if gpu_at is None and best_gpu is not None and best_gpu < cpu_best:
                gpu_at = n // 2
        simd.append(simd_at)
        gpus.append(gpu_at)
    selector = cls().with_thresholds(MoeThresholds(simd=tuple(simd), gpu=tuple(gpus)))
    if gpu:
        bandwidth = max(m.transfer.get("to_device_staged", 0.0) or m.transfer.get("to_device_pageable", 0.0)
                        for m in gpu)
        rate = max((r for m in gpu for r in (m.gemm_flops(4096, 4096, 4096),) if r), default=0.0)
        if bandwidth > 0:
            selector = selector.with_pcie_bandwidth(bandwidth)
        if rate > 0:
            selector = selector.with_gpu_gflops(rate)
    return selector


# ---- pricing a recorded call (profiles, migration reports) -------------------------------------------


class _Shaped:
    """An input known only by shape and dtype (what a profile records)."""

    def __init__(self, shape: tuple[int, ...], dtype: np.dtype, device: Any) -> None:
        self.shape, self.dtype, self.device = shape, dtype, device
        self.size = math.prod(shape)


class _ShapedInputs:
    def __init__(self, arrays: list[_Shaped]) -> None:
        self.arrays = arrays
        self.size = max((a.size for a in arrays), default=0)
        self.nbytes = sum(a.size * a.dtype.itemsize for a in arrays)
        self.dtypes = tuple(a.dtype for a in arrays)


def estimate_call(op_name: str, shapes: list[list[int]], dtypes: list[str], cal: Calibration,
                  resident: str = "cpu") -> dict[str, float]:
    """Seconds per call on every calibrated target, for an op known by name, input shapes and
    dtypes, with the inputs on ``resident`` (a device name). Targets that cannot be priced are
    left out. This prices a call measured on one machine against another machine's calibration
    (e.g. one saved on a GPU box)."""

    op = op_named(op_name)
    where = parse_device(resident)
    inputs = _ShapedInputs([_Shaped(tuple(s), np.dtype(d), where) for s, d in zip(shapes, dtypes, strict=False)])
    models = models_from(cal)
    devices = {name: parse_device(data.get("device", "cpu")) for name, data in cal.targets.items()}
    previous = dict(_device_models)
    set_device_models({devices[n]: m for n, m in models.items() if m.transfer})
    try:
        found = {}
        for name, model in models.items():
            target = type("Priced", (), {"name": name, "device": devices[name]})()
            seconds = estimate(model, target, op, inputs, op.work == "reduce")
            if seconds is not None:
                found[name] = seconds
        return found
    finally:
        set_device_models(previous)
