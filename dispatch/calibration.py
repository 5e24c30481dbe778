"""Calibration: what this machine measured, per target and dtype.

``dispatch.calibrate()`` (or ``python -m dispatch calibrate``) times, for every target that
works here: the per-call overhead, launch-and-sync overhead, transfers between host and
device (pageable and through pinned staging), memory bandwidth, GEMM rates for small and
large shapes, and representative ops of each complexity at a few sizes, always through
dispatch itself (so the adapters' own costs are in the numbers) on data already resident on
the target. Results are stored as JSON in the user's cache directory under a fingerprint of
the hardware and library versions; ``load_or_measure()`` reads them back on later runs.

The JSON (``version`` 1)::

    {"version": 1, "plan": "...", "fingerprint": "...", "machine": {...}, "created": "...", "quick": false,
     "seconds": 12.3, "phases": {"finding the targets": 2.1, "waiting for the first calls": 0.0},
     "targets": {"numpy": {"device": "cpu", "threads": 2, "call_overhead_s": 1.1e-06,
                           "sync_overhead_s": 0.0, "memory_bandwidth": 7.0e9,
                           "transfer": {},                  # GPU targets only, bytes/s and s
                           "gemm": {"float64": [[n, flop_per_s], ...], ...},
                           "ops": {"float64": {"add": [[x, seconds], ...], ...}, ...,
                                   "int64": {"sort": [[x, seconds], ...]}}}, ...}}

In ``ops`` the size ``x`` is elements for element-wise, reductions, scans, sorts and FFTs;
``n`` (a square ``n`` x ``n`` operand) for ``matmul`` and the factorisations; for ``linalg.lstsq``
(a ``64 n`` x ``n`` operand, which prices factorisations of tall matrices) ``4 n``, the side of
a cube of as much work. Sorts are also measured on ``int64``: torch and CuPy sort integers by
radix sorts, 5-10x faster than their float sorts, where NumPy's sorts of either compare; a
lexsort on ``int64`` alone. ``phases`` are the seconds spent on other things than measuring.
A target's ``stopped`` says where it failed an op (its points end below that size), and
``measured_again`` which points of products and factorisations ran far slower per unit of work
than the size below them and were measured again (every time taken, in seconds; the least kept).
``measured_aside`` names the targets a quick calibration measured in a child process while this
one imported torch.

With a Dask cluster connected (``dispatch.use_cluster``), the file also holds
``"dask": {"scheduler": ..., "task_overhead_s": ..., "chunk_bytes": ...}``: the cluster's
per-task overhead and the chunk size that hides it (``dask_chunk_bytes``); the dask target is
scale-out, not priced, so it has no entry under ``targets``.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
import math
import os
import platform
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["Calibration", "cache_dir", "calibrate", "dask_chunk_bytes", "dask_task_overhead", "fingerprint", "load",
           "load_or_measure", "machine"]

VERSION = 1
DTYPES = ("float32", "float64")

# Representative ops: (name, size kind, full sizes, quick sizes). Sizes are elements, or the
# side n of square operands for products and factorisations.
_VECTOR = (1_000, 10_000, 100_000, 1_000_000, 4_000_000)
_VECTOR_QUICK = (1_000, 100_000, 1_000_000)
REPRESENTATIVES = (
    ("add", _VECTOR, _VECTOR_QUICK),
    ("exp", _VECTOR, _VECTOR_QUICK),
    ("sum", _VECTOR, _VECTOR_QUICK),
    ("cumsum", _VECTOR, (1_000, 1_000_000)),
    # A quick calibration sorts 262,144 elements at most: its sorts and lexsorts of a million took
    # 0.8 of its 2.8 s on a 2-core machine (larger sorts are priced from there by n log n).
    ("sort", _VECTOR, (1_000, 262_144)),
    ("lexsort", (1_000, 100_000, 1_000_000), (1_000, 262_144)),  # three sizes: a full calibration stays short
    ("fft.fft", (1_024, 16_384, 262_144, 1_048_576), (1_024, 262_144)),
    ("matmul", (16, 64, 256, 1_024, 2_048), (32, 256, 1_024)),
    ("linalg.solve", (16, 64, 256, 1_024), (32, 256)),
    ("linalg.svd", (16, 64, 256), (32, 128)),
    ("linalg.lstsq", (16, 64, 128), (32, 128)),
)
# Sizes are the side of an equivalent cube of work (the time grows as its cube), and for these
# ops square operands of that side...
SQUARE_OPS = frozenset({"matmul", "linalg.solve", "linalg.svd", "linalg.lstsq"})
# ...but for these a tall operand, TALL times as many rows as its n columns, and the size stored
# is the side of the same work, (TALL n · n · n)^(1/3): a factorisation of a tall matrix starts
# with a QR of it, which a square SVD prices badly (NumPy's lstsq of 200000 x 100 took 0.5-0.7 s
# on a 16-core machine, 4-5x under the square curve's extrapolation; CuPy's, 29 ms, 120x under).
TALL_OPS = frozenset({"linalg.lstsq"})
TALL = 64
# Ops measured on integers too, whose keys group-bys sort: sorting 4M int64 on a 2-core machine
# took NumPy 235 ms and torch 48 ms, 4M float64 258 and 438 ms. ``lexsort`` is measured on its
# own, two keys of half the size: it is a stable sort per key, which NumPy runs far slower than
# its sort (on a 2-core machine with numpy 2.4, 400,000 int64 took 1.7 ms to sort and 28.2 to
# lexsort as 2 x 200,000, torch-cpu's lexsort 6.0), and priced from the sort's curve it stayed
# on NumPy under the sorts' floor.
INTEGER_OPS = ("sort", "lexsort")
# Ops measured on integers alone: torch and CuPy lexsort integer keys only (float keys run on
# NumPy, which the router keeps them on: none else is priced for them), so their float points timed
# NumPy's through a round trip, 0.3-0.5 s a target of an H100 machine's calibration.
INTEGER_ONLY = ("lexsort",)

# Seconds spent measuring one size of one op (about), full and quick; a size that would take
# over _SLOW_POINT_S, by its work shape from the size below it, or that took it, ends the op's
# size ladder (larger sizes are extrapolated the same way). Longer budgets bought no steadier
# points: two full calibrations of one H100 machine with the same budgets differed by 11-24 %
# a point (the median, by target), two quick ones by up to 40 % as a whole (the GPU's clocks,
# the host's memory); one with these budgets differed from ones with 0.04 s, 0.01 s and 0.2 s a
# transfer by 6-40 %, and took 17.8 s where they took 22.2 (its quick one 0.4 s less).
_POINT_BUDGET_S = {False: 0.025, True: 0.005}
_SLOW_POINT_S = 0.3
# A product or factorisation at a larger side runs at about the rate of the side below it, or a
# higher one: in 50 stored calibrations of H100 and H200 machines, 3787 of 3817 points took at most
# 1.41 times the time per unit of work of the point below. The other 30 took 1.5-15 times: one busy
# core stalls a multi-threaded BLAS at every barrier (NumPy's float32 matmul of 256 took 4 ms a call
# beside one spinning process on 16 cores, 0.07 alone; priced at 2.7-15.8 ms, it ended NumPy's ladder
# in six calibrations, pricing its larger products 50-200x too slow). So a point over _OFF_CURVE
# times is measured again after each pause, and the least kept.
_OFF_CURVE = 1.5
_RETRY_PAUSES_S = (0.1, 0.3)
# A slow point is the least of this many calls, its warm-up among them (``_timer``), full and quick.
_SLOW_CALLS = {False: 3, True: 2}
# Quick calibrations measure float64 (float32 is priced from it) and the integer sorts on int64.
# Priced from float64's, torch-cpu's integer sorts looked slower than NumPy's on a 2-core machine,
# and dataprep large stayed on NumPy after a quick calibration (1.03x NumPy's time; 0.51x after a
# full one). They time each transfer for a tenth of a full one's time, and the overheads for a
# quarter (five batches of a few hundred calls still): 0.1 s less on a GPU target, of a quick
# calibration's 4-5 s on an H100 machine.
_QUICK_DTYPES = ("float64", "int64")
_TRANSFER_BUDGET_S = {False: 0.1, True: 0.01}
_OVERHEAD_BUDGET_S = {False: 0.02, True: 0.005}
# What a calibration measures, and how: a stored one made to another plan (by an older dispatch)
# is measured again rather than priced from (a calibration from before lstsq was measured on tall
# operands priced an H100's CuPy lstsq of 200000 x 100 at 5.4 s, NumPy's at 2.1; they take 20 ms
# and 0.5 s, and the router kept NumPy). MEASURING is raised when the way something is measured
# changes; a change to the tables above changes the plan by itself.
MEASURING = 3
PLAN = hashlib.sha256(repr((MEASURING, DTYPES, REPRESENTATIVES, sorted(SQUARE_OPS), sorted(TALL_OPS), TALL,
                            INTEGER_OPS, INTEGER_ONLY, _QUICK_DTYPES)).encode()).hexdigest()[:12]


@dataclass
class Calibration:
    """Measurements of one machine; see the module docstring for the fields."""

    fingerprint: str
    machine: dict[str, Any]
    targets: dict[str, dict[str, Any]]
    quick: bool = False
    created: str = ""
    seconds: float = 0.0
    version: int = VERSION
    plan: str = PLAN  # what was measured (``PLAN``); "" for a file older than the field
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> str:
        return json.dumps(
            {
                "version": self.version,
                "plan": self.plan,
                "fingerprint": self.fingerprint,
                "machine": self.machine,
                "created": self.created,
                "quick": self.quick,
                "seconds": self.seconds,
                "targets": self.targets,
                **self.extra,
            },
            indent=1,
        )

    @classmethod
    def from_json(cls, text: str) -> Calibration:
        data = json.loads(text)
        if data.get("version") != VERSION:
            raise ValueError(f"calibration version {data.get('version')} is not {VERSION}")
        known = {"version", "plan", "fingerprint", "machine", "created", "quick", "seconds", "targets"}
        return cls(
            plan=data.get("plan", ""),
            fingerprint=data["fingerprint"],
            machine=data["machine"],
            targets=data["targets"],
            quick=data.get("quick", False),
            created=data.get("created", ""),
            seconds=data.get("seconds", 0.0),
            extra={k: v for k, v in data.items() if k not in known},
        )

    def save(self, path: str | Path | None = None) -> Path:
        path = Path(path) if path is not None else _default_path(self.fingerprint)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(self.to_json())
        tmp.replace(path)
        return path


# ---- where calibrations live ---------------------------------------------------------------------


def cache_dir() -> Path:
    """``$DISPATCH_CACHE_DIR``, else the platform's user cache directory + ``dispatch``."""
    if os.environ.get("DISPATCH_CACHE_DIR"):
        return Path(os.environ["DISPATCH_CACHE_DIR"])
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches" / "dispatch"
    if sys.platform == "win32":
        return Path(os.environ.get("LOCALAPPDATA", Path.home() / "AppData" / "Local")) / "dispatch" / "Cache"
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "dispatch"


def _default_path(fp: str) -> Path:
    return cache_dir() / f"calibration-{fp}.json"


# ---- the hardware fingerprint ------------------------------------------------------------------------


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _versions() -> dict[str, str]:
    from importlib import metadata

    found = {"python": platform.python_version(), "numpy": np.__version__}
    for dist in ("torch", "cupy-cuda13x", "cupy-cuda12x", "cupy", "scikit-learn"):
        try:
            found[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
    return found


def _identity() -> dict[str, Any]:
    """What the fingerprint is made of: CPU model and count, the GPUs the driver lists, library
    versions; read without importing torch or CuPy, since the first routed call loads the calibration."""
    return {
        "cpu": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "gpu_hardware": _gpu_hardware(),
        "libraries": _versions(),
    }


def _gpu_hardware() -> list[str]:
    """GPU models and driver as the kernel drivers list them (NVIDIA, AMD), or Apple silicon."""
    found = _driver_gpus()
    if sys.platform == "darwin" and platform.machine() == "arm64":
        found.append("apple silicon")
    visible = os.environ.get("CUDA_VISIBLE_DEVICES") or os.environ.get("HIP_VISIBLE_DEVICES")
    return [*found, f"visible {visible}"] if visible is not None else found


def _driver_gpus() -> list[str]:
    """GPU models and driver as the kernel's NVIDIA and AMD drivers list them."""
    nvidia = Path("/proc/driver/nvidia")
    found = [line.split(":", 1)[1].strip() for info in sorted(nvidia.glob("gpus/*/information"))
             for line in _lines(info) if line.startswith("Model:")]
    found += _lines(nvidia / "version")[:1]
    return found + [" ".join(_lines(p)) for p in sorted(Path("/sys/class/drm").glob("card*/device/product_name"))]


def _lines(path: Path) -> list[str]:
    try:
        return path.read_text().splitlines()
    except OSError:
        return []


def machine() -> dict[str, Any]:
    """The fingerprint's parts, and the GPUs as their libraries describe them (probes the targets)."""
    from dispatch import targets

    gpus = []
    for name in ("cupy", "torch-cuda", "torch-mps"):
        target = targets.probe(name)
        if target is None:
            continue
        gpus.append({"target": name, **_gpu_description(target)})
    return {
        "platform": platform.platform(),
        "gpus": gpus,
        **_identity(),
    }


def _gpu_description(target: Any) -> dict[str, Any]:
    try:
        if target.library == "cupy":
            cupy = target.cupy
            props = cupy.cuda.runtime.getDeviceProperties(target.device.index)
            name = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
            return {"name": name, "driver": cupy.cuda.runtime.driverGetVersion(),
                    "memory": int(props["totalGlobalMem"])}
        torch = target.torch
        if target.kind == "cuda":
            props = torch.cuda.get_device_properties(target.device.index)
            return {"name": props.name, "driver": torch.version.cuda or torch.version.hip,
                    "memory": int(props.total_memory)}
        return {"name": "mps"}
    except Exception as exc:  # a description is nice to have, never a reason to fail
        return {"name": "unknown", "error": str(exc)}


def fingerprint(info: dict[str, Any] | None = None) -> str:
    """A short hash of this machine's hardware and library versions."""
    info = info or _identity()
    key = {k: info.get(k) for k in ("cpu", "cpu_count", "gpu_hardware", "libraries")}
    return hashlib.sha256(json.dumps(key, sort_keys=True, default=str).encode()).hexdigest()[:16]


# ---- loading --------------------------------------------------------------------------------------


_loaded: dict[str, Calibration | None] = {}


def load(path: str | Path | None = None) -> Calibration | None:
    """The stored calibration of this machine (or the file at ``path``, whatever its plan);
    ``None`` if none, or if it was made to another plan than this dispatch's (``PLAN``)."""
    if path is not None:
        return Calibration.from_json(Path(path).read_text())
    fp = fingerprint()
    if fp not in _loaded:
        file = _default_path(fp)
        try:
            found = Calibration.from_json(file.read_text()) if file.exists() else None
        except (OSError, ValueError, KeyError):
            found = None  # unreadable or older: as if there were none
        _loaded[fp] = found if found is not None and found.plan == PLAN else None
    return _loaded[fp]


def load_or_measure(quick: bool = True, progress: bool = False) -> Calibration:
    """This machine's stored calibration, measured (and stored) first if there is none."""
    found = load()
    return found if found is not None else calibrate(quick=quick, progress=progress)


# ---- measuring --------------------------------------------------------------------------------------


def _timer(run: Callable[[], Any], sync: Callable[[], None], budget: float, slow_calls: int = 3) -> float:
    """Seconds per call of ``run`` (warm, synchronised), the least disturbed of a few samples
    taken within about ``budget``; for a slow op, of ``slow_calls`` calls at most."""

    def one_call() -> float:
        start = time.perf_counter()
        run()
        sync()
        return time.perf_counter() - start

    first = one_call()  # the warm-up: a first call may compile or allocate...
    once = one_call()
    if once > budget / 3:  # a slow op: the least of up to slow_calls calls within _SLOW_POINT_S, the
        # warm-up among them (...which makes it slower, never faster). One call is not enough:
        # CuPy's lstsq of 8192 x 128 measured 60 ms on one H100 machine, 15 on another.
        more = slow_calls - 2 if slow_calls * once <= _SLOW_POINT_S else 0
        return min([first, once, *(one_call() for _ in range(more))])
    calls = max(1, min(1000, int(budget / 5 / max(once, 1e-7))))  # five batches in the budget
    samples = []
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(calls):
            run()
        sync()
        samples.append((time.perf_counter() - start) / calls)
    _count_spread(samples)
    return float(min(samples))  # the least disturbed batch: these machines are shared


# How steady this process's batched measurements were: [disturbed, measured]. A measurement is
# disturbed when its median batch took over BUSY_SPREAD times its least: another process had the
# cores. Over BUSY_SHARE of them disturbed, the calibration says the machine was too busy.
_SPREAD = [0, 0]
BUSY_SPREAD = 1.5
BUSY_SHARE = 0.25


def _count_spread(samples: list[float]) -> None:
    _SPREAD[1] += 1
    _SPREAD[0] += sorted(samples)[len(samples) // 2] > BUSY_SPREAD * min(samples)  # the median far off the least


def busy_note() -> str | None:
    """One line saying that the last calibration's machine was too busy to measure steadily, or
    ``None`` when it was steady enough."""
    disturbed, measured = _SPREAD
    if not measured or disturbed <= BUSY_SHARE * measured:
        return None
    return (f"dispatch calibrate: the machine was busy: {disturbed} of {measured} measurements varied over "
            f"{BUSY_SPREAD}x between their samples; the least disturbed were kept, but calibrate again when "
            "it is quieter")


class _Inputs:
    """The operands of each measured call, drawn once and shared by every op and target that
    measures that shape and dtype (drawing them took as long as a target's measurements)."""

    def __init__(self, seed: int = 0) -> None:
        self.rng = np.random.default_rng(seed)
        self.drawn: dict[tuple, np.ndarray] = {}

    def _draw(self, shape: tuple[int, ...], dtype: str, tag: str = "") -> np.ndarray:
        key = (shape, dtype, tag)
        if key not in self.drawn:
            if np.dtype(dtype).kind == "i":  # keys with repeats, as group-bys sort
                self.drawn[key] = self.rng.integers(0, max(math.prod(shape) // 4, 1), shape, dtype=dtype)
            else:
                self.drawn[key] = self.rng.random(shape, dtype=np.dtype(dtype)) - np.asarray(0.5, dtype)
        return self.drawn[key]

    def __call__(self, op: str, size: int, dtype: str) -> tuple[np.ndarray, ...]:
        if op in TALL_OPS:
            return self._draw((TALL * size, size), dtype), self._draw((TALL * size,), dtype)
        if op in SQUARE_OPS:
            a = self._draw((size, size), dtype)
            if op == "linalg.solve":  # well conditioned: |off-diagonal| < 1/2, n on the diagonal
                return a + size * np.eye(size, dtype=dtype), self._draw((size,), dtype)
            return (a,) if op == "linalg.svd" else (a, self._draw((size, size), dtype, "b"))
        if op == "lexsort":  # keys: two rows of half the size
            return (self._draw((2, max(size // 2, 1)), dtype),)
        x = self._draw((size,), dtype)
        return (x, x) if op == "add" else (x,)


def _call_for(op: str) -> Callable[..., Any]:
    import dispatch

    fn: Any = dispatch
    for part in op.split("."):
        fn = getattr(fn, part)
    if op == "linalg.svd":
        return lambda a: fn(a, full_matrices=False)
    if op == "linalg.lstsq":
        return lambda a, b: fn(a, b, rcond=None)
    return fn


def _measure_target(target: Any, quick: bool, inputs: _Inputs, tick: Callable[[str], None],
                    which: Callable[[str], bool] = lambda op: True) -> dict:
    """The target's overheads and transfers, and the representative ops ``which`` selects (the
    rest can be added by ``_measure_ops``)."""
    import dispatch

    out: dict[str, Any] = {"device": str(target.device), "threads": _threads(target),
                           "transfer": {}, "gemm": {}, "ops": {}}
    with dispatch.using(target.name):
        one = dispatch.asarray(np.ones(1)).to(target.name)
        budget = _OVERHEAD_BUDGET_S[quick]
        out["call_overhead_s"] = _timer(lambda: one + one, lambda: None, budget)
        out["sync_overhead_s"] = 0.0 if target.device.is_host else _timer(lambda: one + one, target.synchronize, budget)
        if not target.device.is_host:
            out["transfer"] = _measure_transfers(target, quick)
    return _measure_ops(target, quick, inputs, tick, out, which)


def _measure_ops(target: Any, quick: bool, inputs: _Inputs, tick: Callable[[str], None], out: dict,
                 which: Callable[[str], bool]) -> dict:
    """Measure the representative ops ``which`` selects into ``out`` (and what follows from them)."""
    import dispatch

    budget = _POINT_BUDGET_S[quick]
    with dispatch.using(target.name):
        for dtype, representatives in _plan(target, quick):
            ops: dict[str, list[list[float]]] = out["ops"].setdefault(dtype, {})
            for op, sizes, quick_sizes in representatives:
                if not which(op):
                    continue
                tick(f"{target.name} {dtype} {op}")
                fn = _call_for(op)
                points = []
                for size in quick_sizes if quick else sizes:
                    if points and _longer_than(op, points[-1], size, _SLOW_POINT_S):
                        break
                    host = inputs(op, size, dtype)
                    args = tuple(dispatch.asarray(h).to(target.name) for h in host)
                    x = _side(op, size)
                    run = functools.partial(fn, *args)
                    try:
                        tries = [_timer(run, target.synchronize, budget, _SLOW_CALLS[quick])]
                        for pause in _RETRY_PAUSES_S:
                            if not (points and _off_curve(op, points[-1], [x, min(tries)])):
                                break
                            time.sleep(pause)
                            tries.append(_timer(run, target.synchronize, budget, _SLOW_CALLS[quick]))
                        seconds = min(tries)
                        key = f"{dtype} {op} {size}"
                        if len(tries) > 1 or key in out.get("measured_again", {}):  # or measured again later
                            out.setdefault("measured_again", {}).setdefault(key, []).extend(tries)
                    except Exception as exc:  # the target cannot run this op at this size (out of memory,
                        # a dtype it lacks): no point there or above, and why kept, so that it is not silent
                        out.setdefault("stopped", {})[f"{dtype} {op}"] = f"at {size}: {type(exc).__name__}: {exc}"[:200]
                        break
                    points.append([x, seconds])
                ops[op] = points
            if "matmul" in ops:
                out["gemm"][dtype] = [[n, 2.0 * n**3 / s] for n, s in ops["matmul"] if s > 0]
    adds = out["ops"].get("float64", out["ops"].get("float32", {})).get("add", [])
    if adds:
        n, seconds = adds[-1]
        itemsize = 8 if "float64" in out["ops"] else 4
        out["memory_bandwidth"] = 3 * n * itemsize / seconds
    return out


def _plan(target: Any, quick: bool) -> list[tuple[str, tuple]]:
    """The dtypes measured on ``target``, each with its representative ops."""
    planned = []
    for dtype in _QUICK_DTYPES if quick else (*DTYPES, "int64"):  # int64: INTEGER_OPS only
        if not _holds(target, dtype):
            continue
        integer = dtype == "int64"
        planned.append((dtype, tuple(r for r in REPRESENTATIVES
                                     if (r[0] in INTEGER_OPS if integer else r[0] not in INTEGER_ONLY))))
    return planned


def _longer_than(op: str, last: list[float], size: int, limit: float) -> bool:
    """Whether ``op`` at ``size`` would take over ``limit`` seconds, by its work shape from the
    last point measured (``[x, seconds]``): the cube of the side for products and factorisations,
    the elements otherwise."""
    x, seconds = last
    ratio = _side(op, size) / x
    return seconds > limit or seconds * ratio ** (3 if op in SQUARE_OPS else 1) > limit


def _side(op: str, size: int) -> float:
    """The size a point of ``op`` at ``size`` is stored at: for a tall operand, the side of a cube
    of as much work (the module docstring)."""
    return size * TALL ** (1 / 3) if op in TALL_OPS else size


def _off_curve(op: str, below: list[float], point: list[float]) -> bool:
    """Whether a product's or factorisation's ``point`` ran at under 1/_OFF_CURVE the rate of the
    point ``below`` it (``[x, seconds]`` each): on one target a larger side runs at the same rate or
    a higher one, so such a point was disturbed."""
    return op in SQUARE_OPS and point[1] > _OFF_CURVE * below[1] * (point[0] / below[0]) ** 3


def _off_curve_ops(out: dict) -> set[str]:
    """The ops of a target's measurements ``out`` with a point still far off its curve."""
    return {op for ops in out.get("ops", {}).values() for op, points in ops.items()
            if any(_off_curve(op, below, point) for below, point in itertools.pairwise(points))}


def _holds(target: Any, dtype: str) -> bool:
    from dispatch.targets import Unsupported

    if target.library != "torch":
        return True
    try:
        target.torch_dtype(dtype)
    except Unsupported:
        return False
    return True


def _threads(target: Any) -> int:
    if target.library == "torch" and target.device.is_host:
        return int(target.torch.get_num_threads())
    return int(os.cpu_count() or 1)


def _measure_transfers(target: Any, quick: bool) -> dict[str, float]:
    """Host <-> device bandwidth through dispatch's staging and through plain pageable copies."""
    from dispatch.targets import _staging

    nbytes = (16 if quick else 64) << 20
    host = np.ones(nbytes // 8)
    sync = target.synchronize
    budget = _TRANSFER_BUDGET_S[quick]
    with _staging.no_locking():  # the path of an array's first send (later ones may be faster)
        staged_in = _timer(lambda: target.from_host(host), sync, budget)
        native = target.from_host(host)
        staged_out = _timer(lambda: target.to_host(native), sync, budget)
        threshold = _staging.THRESHOLD
        _staging.THRESHOLD = 1 << 62  # every copy pageable, to compare
        try:
            pageable_in = _timer(lambda: target.from_host(host), sync, budget)
            pageable_out = _timer(lambda: target.to_host(native), sync, budget)
        finally:
            _staging.THRESHOLD = threshold
    small = np.ones(1)
    small_native = target.from_host(small)
    return {
        "to_device_staged": nbytes / staged_in,
        "to_host_staged": nbytes / staged_out,
        "to_device_pageable": nbytes / pageable_in,
        "to_host_pageable": nbytes / pageable_out,
        "to_host_latency_s": _timer(lambda: target.to_host(small_native), sync, _OVERHEAD_BUDGET_S[quick]),
        "to_device_latency_s": _timer(lambda: target.from_host(small), sync, _OVERHEAD_BUDGET_S[quick]),
    }


# The targets whose first calls on a machine wait for the GPU driver, or the library, to compile
# their kernels (once per machine: both cache them on disk). On fresh H200 machines CuPy's first
# solve of each size class (16, 64, 1024) and first lstsq took 3.5-5.5 s each, half of a full
# calibration, whichever dtype came first; its element-wise kernels, reductions and scans,
# compiled per dtype, made its measurements 1.5-3.5 s longer than torch-cuda's on fresh H100 and
# H200 machines, and as long on one calibrated before. Child processes make those first calls
# while the other devices are measured, so that the compiles overlap (one process's do not: from
# 8 threads they took longer than one by one); these targets are measured next, their solvers
# and the host targets once the children are done, undisturbed. The children make the solvers'
# calls in both dtypes, one size and dtype a child: on a fresh H100 machine, where they made
# float64's alone, the parent's first float32 lstsq still took 1.1 s (0.1 after both); the
# children were done in 14.2-15.8 s (17.7 for float64 alone), one per op in 19.0, one in all 26.5.
COMPILES_ON_FIRST_CALL = frozenset({"cupy"})
_FIRST_CALL_OPS = ("linalg.solve", "linalg.svd", "linalg.lstsq")
_FIRST_CALLS_WAIT_S = 60.0


def _start_first_calls(names: list[str], quick: bool) -> list[subprocess.Popen]:
    """Children making the first calls of the targets named in ``COMPILES_ON_FIRST_CALL``: of its
    solvers at every size and dtype their calibration measures, one child each where there are
    cores enough (four are left to the measurements), the largest sizes spread first; and of every
    other op at every size and dtype it measures, in one child (``others``). They start before
    the target is looked for here, where its library is installed and a GPU is present
    (``_likely``), so that their compiles overlap the parent's imports and CUDA contexts. None
    on a machine calibrated before with these libraries (it has compiled them: on an H200 machine
    the children then made a quick calibration take 10 s, of which the targets' own measurements
    5). Other versions, as after an upgrade, compile anew: with empty kernel caches and no
    children, an H100 machine's full calibration took 35 s, CuPy's measurements 23 of them. None
    either where the driver keeps no cache, or on a machine of few cores."""
    slots = (os.cpu_count() or 1) - 4
    if os.environ.get("CUDA_CACHE_DISABLE") == "1" or slots < 2 or _default_path(fingerprint()).exists():
        return []
    children = []
    dtypes = [d for d in (_QUICK_DTYPES if quick else DTYPES) if d in DTYPES]  # those its solvers are measured in
    for name in names:
        if name not in COMPILES_ON_FIRST_CALL or not _likely(name):
            continue
        calls = sorted(((size, op, dtype) for op, sizes, quick_sizes in REPRESENTATIVES if op in _FIRST_CALL_OPS
                        for size in (quick_sizes if quick else sizes) for dtype in dtypes), reverse=True)
        shares = [[f"{op}:{size}:{dtype}" for size, op, dtype in calls[i::slots - 1]] for i in range(slots - 1)]
        shares.append(["others:quick" if quick else "others:full"])
        for share in filter(None, shares):
            children.append(subprocess.Popen(
                [sys.executable, "-c", "import sys; from dispatch.calibration import _first_calls; _first_calls()",
                 name, *share], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    return children


def _likely(name: str) -> bool:
    """Whether target ``name`` will probably be found here, known without importing its library:
    the library is installed and the kernel's drivers list a GPU. (A child started in vain ends
    at its first call: its outcome does not matter.)"""
    import importlib.util

    return bool(_driver_gpus()) and importlib.util.find_spec(name.split("-")[0]) is not None


def _first_calls() -> None:
    """A child of ``_start_first_calls``: ``argv`` names the target, then ``op:size:dtype`` calls,
    or ``others:quick`` (``others:full``): every op but the solvers, at every size and dtype such a
    calibration measures on it."""
    import dispatch
    from dispatch import targets

    name, calls = sys.argv[1], [c.split(":") for c in sys.argv[2:]]
    target = targets.probe(name)
    if target is None:
        return
    if calls and calls[0][0] == "others":
        quick = calls[0][1] == "quick"
        calls = [(op, size, dtype) for dtype, representatives in _plan(target, quick)
                 for op, sizes, quick_sizes in representatives if op not in _FIRST_CALL_OPS
                 for size in (quick_sizes if quick else sizes)]
    inputs = _Inputs()
    with dispatch.using(name):
        for op, size, dtype in calls:
            _call_for(op)(*(dispatch.asarray(h).to(name) for h in inputs(op, int(size), dtype)))
            target.synchronize()


def _finish_first_calls(children: list[subprocess.Popen]) -> None:
    """Wait for the children (they only warm the driver's cache: their outcome does not matter)."""
    deadline = time.perf_counter() + _FIRST_CALLS_WAIT_S
    for child in children:
        try:
            child.wait(timeout=max(deadline - time.perf_counter(), 0.0))
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()


# Targets a quick calibration measures in a child process while this one imports torch (1.3-1.7 s
# of a quick calibration's 4-5 s on H100 machines): CuPy needs none of torch, and its measurements
# keep one core and the GPU busy, which the import leaves alone. The child is done before this
# process opens the GPU. On an H100 machine, in turns, the quick command took 4.1-5.0 s so and
# 5.0-5.5 s with CuPy measured here; CuPy's points did not lean either way. Not where the
# first-call children run (their compiles disturb it), nor where torch is imported already
# (nothing to overlap), nor on a machine of few cores.
MEASURED_ASIDE = frozenset({"cupy"})
_ASIDE_WAIT_S = 30.0


def _start_aside(names: list[str], quick: bool) -> dict[str, subprocess.Popen]:
    """A child measuring each target of ``MEASURED_ASIDE`` among ``names`` (see there), by name:
    one that a torch target comes before in ``names``, the order they are looked for in."""
    if not quick or (os.cpu_count() or 1) < 4 or not _torch_to_import():
        return {}
    return {name: subprocess.Popen(
        [sys.executable, "-c", "from dispatch.calibration import _measure_aside; _measure_aside()", name],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        for i, name in enumerate(names)
        if name in MEASURED_ASIDE and any(n.startswith("torch-") for n in names[:i]) and _likely(name)}


def _torch_to_import() -> bool:
    import importlib.util

    return "torch" not in sys.modules and importlib.util.find_spec("torch") is not None


def _measure_aside() -> None:
    """A child of ``_start_aside``: the target ``argv`` names, measured as a quick calibration
    measures it, with the seconds it took, as JSON on stdout."""
    from dispatch import targets

    target = targets.probe(sys.argv[1])
    if target is None:
        sys.exit(1)
    began = time.perf_counter()
    measured = _measure_target(target, True, _Inputs(), lambda label: None)
    json.dump({"measured": measured, "seconds": time.perf_counter() - began}, sys.stdout)


def _finish_aside(child: subprocess.Popen) -> dict[str, Any] | None:
    """What ``child`` measured, or ``None`` where it failed (then this process measures it)."""
    try:
        out, _ = child.communicate(timeout=_ASIDE_WAIT_S)
        return json.loads(out) if child.returncode == 0 else None
    except subprocess.TimeoutExpired:
        child.kill()
        child.communicate()
    except ValueError:
        pass
    return None


def _ticker(total: int, progress: bool) -> Iterator[Callable[[str], None]]:
    if not progress:
        yield lambda label: None
        return
    try:
        from rich.console import Console
        from rich.progress import Progress
    except ImportError:
        count = [0]

        def plain(label: str) -> None:
            count[0] += 1
            print(f"\r[{count[0]}/{total}] {label:<40}", end="", file=sys.stderr, flush=True)

        yield plain
        print(file=sys.stderr)
        return
    with Progress(transient=True, console=Console(stderr=True)) as bar:  # stdout stays the caller's
        task = bar.add_task("calibrating", total=total)
        yield lambda label: bar.update(task, advance=1, description=f"calibrating {label}")


def calibrate(quick: bool = False, progress: bool = True, save: bool = True,
              only: tuple[str, ...] | None = None) -> Calibration:
    """Measure every available target (or only ``only``), store the result, start routing by it.

    A full calibration takes under 30 seconds; ``quick=True`` under 5 seconds.
    """
    import contextlib

    from dispatch import router, targets

    start = time.perf_counter()
    _SPREAD[:] = [0, 0]
    phases: dict[str, float] = {}  # seconds spent on other things than measuring the targets
    wanted = [name for name in router.PRICED if only is None or name in only]
    children = _start_first_calls(wanted, quick)  # before any target is looked for
    aside = {} if children else _start_aside(wanted, quick)
    measured_aside: dict[str, dict[str, Any]] = {}
    ticker = None
    try:
        found = []
        for name in wanted:  # the host targets first: torch-cpu's probe is the import _start_aside's children overlap
            if name in aside and (done := _finish_aside(aside.pop(name))) is not None:
                measured_aside[name] = done
            if (target := targets.probe(name)) is not None:
                found.append(target)
        info = machine()
        inputs = _Inputs()
        result: dict[str, Any] = {}
        ticker = _ticker(sum(len(ops) for target in found for _, ops in _plan(target, quick)), progress)
        tick = next(ticker)
        # While the children run: every device, last and but for its solvers those whose first
        # calls the children make. Then, undisturbed, those solvers, and the host targets.
        devices = sorted((t for t in found if not t.device.is_host), key=lambda t: t.name in COMPILES_ON_FIRST_CALL) \
            if children else []
        compiling = {t.name for t in devices if t.name in COMPILES_ON_FIRST_CALL}
        seconds = dict.fromkeys((t.name for t in found), 0.0)
        phases["finding the targets"] = time.perf_counter() - start
        for target in devices:
            began = time.perf_counter()
            result[target.name] = _measure_target(target, quick, inputs, tick, (lambda op: op not in _FIRST_CALL_OPS)
                                                  if target.name in compiling else (lambda op: True))
            seconds[target.name] += time.perf_counter() - began
        began = time.perf_counter()
        _finish_first_calls(children)
        phases["waiting for the first calls"] = time.perf_counter() - began
        children = []
        for target in found:
            began = time.perf_counter()
            if target.name in compiling:
                _measure_ops(target, quick, inputs, tick, result[target.name], lambda op: op in _FIRST_CALL_OPS)
            elif target.name in measured_aside:
                result[target.name] = measured_aside[target.name]["measured"]
                seconds[target.name] = measured_aside[target.name]["seconds"]
                for dtype, representatives in _plan(target, quick):
                    for op, *_ in representatives:
                        tick(f"{target.name} {dtype} {op}")
            elif target not in devices:
                result[target.name] = _measure_target(target, quick, inputs, tick)
            seconds[target.name] += time.perf_counter() - began
        # What is still far off its curve after its retries is measured again once every target
        # was: what disturbed it has had the others' time to pass. torch-cuda's lstsq of 4096 x 64
        # read 0.13-0.38 s in 8 of the 10 points measured beside the children (five calibrations),
        # 8.3-63 ms in the 72 others stored. On the 2-core machine NumPy's float64 matmul of 256
        # read 12-16 ms in all three tries of one calibration (0.38 ms calm; its float32 one took
        # 16 ms with another process busy on a core, 0.2 measured again), ended NumPy's ladder, and
        # the router sent the float64 products of kmeans, pca, least_squares, pairwise and mlp to
        # torch-cpu: 1.09-2.63x NumPy's time. A child's figures stand (CuPy's first calls stay out
        # of here).
        for target in found:
            if target.name not in measured_aside and (disturbed := _off_curve_ops(result[target.name])):
                began = time.perf_counter()
                _measure_ops(target, quick, inputs, lambda label: None, result[target.name], disturbed.__contains__)
                seconds[target.name] += time.perf_counter() - began
            result[target.name]["seconds"] = round(seconds[target.name], 2)
    finally:
        _finish_first_calls(children)
        for child in aside.values():  # measuring failed before its target was looked for
            child.kill()
            child.communicate()
        if ticker is not None:
            with contextlib.suppress(StopIteration):
                next(ticker)
    aside_names = [t.name for t in found if t.name in measured_aside]
    cal = Calibration(
        fingerprint=fingerprint(info),
        machine=info,
        targets={t.name: result[t.name] for t in found},
        quick=quick,
        created=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        seconds=round(time.perf_counter() - start, 2),
        extra={"phases": {k: round(v, 2) for k, v in phases.items()},
               **({"measured_aside": aside_names} if aside_names else {}), **_dask_extra(result),
               "disturbed": list(_SPREAD)},
    )
    if (note := busy_note()) is not None:
        import logging

        logging.getLogger("dispatch").warning(note)
    if save:
        cal.save()
        _loaded[cal.fingerprint] = cal
    router.use_calibration(cal)
    return cal


# ---- Dask: the chunk size that hides a cluster's per-task overhead ------------------------------------

# A chunk's element-wise work should take at least this many times the per-task overhead (5 %).
DASK_WORK_PER_OVERHEAD = 20.0
DASK_CHUNK_BOUNDS = (32 << 20, 1 << 30)
_DEFAULT_BANDWIDTH = 5e9  # bytes/s of one NumPy thread streaming through memory (DESIGN.md: about 7e9)


def dask_task_overhead(client: Any, tasks: int = 200) -> float:
    """Seconds a connected Dask cluster spends per tiny task (scheduling, transport, bookkeeping),
    measured on ``tasks`` no-op tasks after a warm-up, per worker thread."""
    client.gather(client.map(abs, range(8), pure=False))  # a builtin: any worker can run it
    threads = max(1, sum(client.nthreads().values()))
    start = time.perf_counter()
    client.gather(client.map(abs, range(tasks), pure=False))
    return (time.perf_counter() - start) * threads / tasks


def dask_chunk_bytes(client: Any, bandwidth: float | None = None, overhead: float | None = None) -> int:
    """Bytes per chunk so that element-wise work on a chunk takes ``DASK_WORK_PER_OVERHEAD``
    times the cluster's per-task overhead (measured unless given), at ``bandwidth`` bytes/s
    (this machine's calibrated NumPy memory bandwidth, else 5 GB/s), within 32 MiB and 1 GiB,
    rounded to MiB."""
    if bandwidth is None:
        cal = load()
        bandwidth = (cal.targets.get("numpy", {}).get("memory_bandwidth") if cal is not None else None) \
            or _DEFAULT_BANDWIDTH
    if overhead is None:
        overhead = dask_task_overhead(client)
    want = DASK_WORK_PER_OVERHEAD * overhead * bandwidth
    lo, hi = DASK_CHUNK_BOUNDS
    return int(min(max(want, lo), hi)) >> 20 << 20


def _dask_extra(measured: dict[str, Any]) -> dict[str, Any]:
    """With a Dask cluster connected, its per-task overhead and the chunk size chosen from it
    (``"dask"`` in the calibration file); the chunk size serves this session at once."""
    from dispatch import cluster

    client = cluster.client() if cluster.connected() else None
    if client is None:
        return {}
    overhead = dask_task_overhead(client)
    chunk = dask_chunk_bytes(client, measured.get("numpy", {}).get("memory_bandwidth"), overhead)
    where = cluster.address() or ""
    cluster._measured_chunk[where] = chunk
    return {"dask": {"scheduler": where, "task_overhead_s": overhead, "chunk_bytes": chunk}}
