"""Calibration: what this machine measured, per target and dtype.

``dispatch.measure.calibrate()`` (or ``python -m dispatch calibrate``) times, for every target that
works here: the per-call overhead, launch-and-sync overhead, transfers between host and
device (pageable and through pinned staging), memory bandwidth (on operands beyond the
last-level cache: ``stream_bytes``), GEMM rates for small and
large shapes, and representative ops of each complexity at a few sizes, always through
dispatch itself (so the adapters' own costs are in the numbers) on data already resident on
the target. Results are stored as JSON in the user's cache directory under a fingerprint of
the hardware and library versions; ``load()`` reads them back on later runs.

The JSON (``version`` 1)::

    {"version": 1, "plan": "...", "fingerprint": "...", "machine": {...}, "created": "...", "quick": false,
     "seconds": 12.3, "phases": {"finding the targets": 2.1, "waiting for the first calls": 0.0},
     "targets": {"numpy": {"device": "cpu", "threads": 2, "call_overhead_s": 1.1e-06,
                           "sync_overhead_s": 0.0, "memory_bandwidth": 7.0e9,
                           "memory_bandwidth_bytes": 67108864,  # each operand's bytes
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
import itertools
import json
import math
import os
import platform
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from dispatch import cluster, targets
from dispatch.base import cachefiles
from dispatch.base.cachefiles import cache_dir, listed
from dispatch.base.cachefiles import calibrations as stored
from dispatch.base.devices import parse_device
from dispatch.base.records import Record
from dispatch.targets import Unsupported, _staging

__all__ = ["Calibration", "cache_dir", "dask_chunk_bytes", "dask_task_overhead", "fingerprint", "load", "machine"]

VERSION = 1
DTYPES = ("float32", "float64")

# Representative ops: (name, size kind, full sizes, quick sizes). Sizes are elements, or the
# side n of square operands for products and factorisations.
_VECTOR = (1_000, 10_000, 100_000, 1_000_000, 4_000_000)
_VECTOR_QUICK = (1_000, 100_000, 1_000_000)
REPRESENTATIVES = (
    ("add", _VECTOR, _VECTOR_QUICK),
    ("exp", _VECTOR, _VECTOR_QUICK),
    # NumPy's float64 sin and cos have no SIMD loop on some CPUs (libm per element: 5-10x an exp),
    # where torch's do: priced from exp's curve, a host call of them looked cheap on NumPy.
    ("sin", _VECTOR, _VECTOR_QUICK),
    ("sum", _VECTOR, _VECTOR_QUICK),
    ("cumsum", _VECTOR, (1_000, 1_000_000)),
    # A quick calibration sorts 262,144 elements at most: larger sorts would take most of its time
    # (they are priced from there by n log n).
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
# with a QR of it, which a square curve extrapolated prices several times (on a GPU, a hundred
# times) too slow.
TALL_OPS = frozenset({"linalg.lstsq"})
TALL = 64
# Ops measured on integers too, whose keys group-bys sort: torch and CuPy sort integers by radix
# sorts, far faster than their float sorts. ``lexsort`` is measured on its own, two keys of half
# the size: a stable sort per key, which NumPy runs far slower than its sort, so that priced from
# the sort's curve it would stay on NumPy where another target wins.
INTEGER_OPS = ("sort", "lexsort")
# Ops measured on integers alone: torch and CuPy lexsort integer keys only (float keys run on
# NumPy, which the router keeps them on), so their float points would only time NumPy's through a
# round trip.
INTEGER_ONLY = ("lexsort",)

# Seconds spent measuring one size of one op (about), full and quick; a size that would take
# over _SLOW_POINT_S, by its work shape from the size below it, or that took it, ends the op's
# size ladder (larger sizes are extrapolated the same way). Longer budgets bought no steadier
# points: a point moves more between two calibrations (the GPU's clocks, the host's memory) than
# between budgets.
_POINT_BUDGET_S = {False: 0.025, True: 0.005}
_SLOW_POINT_S = 0.3
# A product or factorisation at a larger side runs at about the rate of the side below it, or a
# higher one; a point far slower per unit of work was disturbed (one busy core stalls a
# multi-threaded BLAS at every barrier), and would end the ladder and price the larger sizes far
# too slow. So a point over _OFF_CURVE times is measured again after each pause, and the least kept.
_OFF_CURVE = 1.5
_RETRY_PAUSES_S = (0.1, 0.3)
# Seconds a target may spend measuring such points again, full and quick: on a machine whose
# cores other processes hold, a factorisation stays 50x slow through every retry (a quick
# calibration of a 2-core machine at load 8 spent 40 of its 70 s retrying), so retries stop there.
RETRY_BUDGET_S = {False: 10.0, True: 2.0}
_retried_s: dict[str, float] = {}  # seconds each target spent retrying, this calibration


def _may_retry(name: str, quick: bool) -> bool:
    """Whether target ``name`` has retry time left in this calibration (``RETRY_BUDGET_S``)."""
    return _retried_s.get(name, 0.0) < RETRY_BUDGET_S[quick]
# A slow point is the least of this many calls, its warm-up among them (``_timer``), full and quick.
_SLOW_CALLS = {False: 3, True: 2}
# Quick calibrations measure float64 (float32 is priced from it) and the integer sorts on int64
# (priced from float64's, torch-cpu's integer sorts would look slower than NumPy's). They time each
# transfer for a tenth of a full one's time, and the overheads for a quarter (five batches of a few
# hundred calls still).
_QUICK_DTYPES = ("float64", "int64")
_TRANSFER_BUDGET_S = {False: 0.1, True: 0.01}
_OVERHEAD_BUDGET_S = {False: 0.02, True: 0.005}
# What a calibration measures, and how: a stored one made to another plan (by an older dispatch)
# is measured again rather than priced from: its points may mean something else (lstsq measured
# on square operands priced tall ones wrongly). MEASURING is raised when the way something is
# measured changes; a change to the tables above changes the plan by itself.
MEASURING = 4  # 4: memory bandwidth timed beyond the last-level cache (``stream_bytes``)
PLAN = cachefiles.sha256(repr((MEASURING, DTYPES, REPRESENTATIVES, sorted(SQUARE_OPS), sorted(TALL_OPS), TALL,
                              INTEGER_OPS, INTEGER_ONLY, _QUICK_DTYPES)).encode())[:12]


class Calibration(Record):
    """Measurements of one machine; see the module docstring for the fields."""

    __slots__ = ("fingerprint", "machine", "targets", "quick", "created", "seconds", "version", "plan", "extra")  # noqa: RUF023 - the fields, in order

    def __init__(self, fingerprint: str, machine: dict[str, Any], targets: dict[str, dict[str, Any]],
                 quick: bool = False, created: str = "", seconds: float = 0.0, version: int = VERSION,
                 plan: str = PLAN, extra: dict[str, Any] | None = None) -> None:
        self.fingerprint = fingerprint
        self.machine = machine
        self.targets = targets
        self.quick = quick
        self.created = created
        self.seconds = seconds
        self.version = version
        self.plan = plan  # what was measured (``PLAN``); "" for a file older than the field
        self.extra = {} if extra is None else extra

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
        """The calibration in ``text``; ``ValueError`` names what makes it unusable."""
        try:
            data = json.loads(text)
        except RecursionError:
            raise ValueError("JSON nested too deeply") from None
        return cls.from_data(data)

    @classmethod
    def from_data(cls, data: Any) -> Calibration:
        """The calibration in a decoded JSON value, checked whole first (``problem``): one that
        would fail the calls it prices is refused with ``ValueError`` naming the fault."""
        if (fault := problem(data)) is not None:
            raise ValueError(f"not a usable calibration: {fault}")
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
        return cachefiles.write_text(path, self.to_json())


# ---- what a usable calibration holds ------------------------------------------------------------


def problem(data: Any) -> str | None:
    """What makes a decoded calibration unusable, or ``None``: every field the router, the cost
    model and the commands read is checked for its type, and every time and rate for being a finite
    number, positive where it divides or is a logarithm's argument (``cost.TargetModel``)."""
    if not isinstance(data, dict):
        return f"a JSON {_kind(data)}, not an object"
    if data.get("version") != VERSION:
        return f"version {data.get('version')!r} is not {VERSION}"
    for key, kinds, needed in (("fingerprint", str, True), ("machine", dict, True), ("targets", dict, True),
                               ("plan", str, False), ("created", str, False), ("quick", bool, False)):
        if (key in data or needed) and not isinstance(data.get(key), kinds):
            return f"{key!r} is a JSON {_kind(data.get(key))}"
    if "seconds" in data and not _finite(data["seconds"]):
        return "'seconds' is not a number"
    gpus = data["machine"].get("gpus", [])
    if not isinstance(gpus, list) or not all(isinstance(g, dict) for g in gpus):
        return "'machine.gpus' is not a list of objects"
    for name, target in data["targets"].items():
        fault = _target_problem(target)
        if fault is not None:
            return f"target {name!r}: {fault}"
    return None


def _target_problem(target: Any) -> str | None:
    if not isinstance(target, dict):
        return f"a JSON {_kind(target)}, not an object"
    try:
        parse_device(target.get("device", "cpu"))
    except (TypeError, ValueError) as exc:
        return str(exc)
    for key in ("call_overhead_s", "sync_overhead_s", "memory_bandwidth", "memory_bandwidth_bytes"):
        if key in target and not _finite(target[key]):
            return f"{key!r} is not a finite number of at least 0"
    threads = target.get("threads", 1)
    if not isinstance(threads, int) or isinstance(threads, bool) or threads < 1:
        return "'threads' is not a positive integer"
    transfer = target.get("transfer", {})
    if not isinstance(transfer, dict) or not all(_finite(v) for v in transfer.values()):
        return "'transfer' is not an object of finite numbers"
    for key, depth in (("gemm", 1), ("ops", 2)):
        tables = [target.get(key, {})]
        for _ in range(depth):
            if not all(isinstance(t, dict) for t in tables):
                return f"{key!r} is not an object of objects"
            tables = [v for t in tables for v in t.values()]
        if not all(_curve(points) for points in tables):
            return f"{key!r} holds a curve that is not [[size, value], ...] of positive numbers, sizes rising"
    return None


def _kind(value: Any) -> str:
    return {dict: "object", list: "list", str: "string", bool: "boolean", type(None): "null"}.get(
        type(value), "number")


def _finite(value: Any, low: float = 0.0) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value >= low


def _curve(points: Any) -> bool:
    if not isinstance(points, list):
        return False
    if not all(isinstance(p, list) and len(p) == 2 and _finite(p[0], 1e-300) and _finite(p[1], 1e-300)
               for p in points):
        return False
    return all(a[0] < b[0] for a, b in itertools.pairwise(points))


# ---- where calibrations live ---------------------------------------------------------------------


def _default_path(fp: str) -> Path:
    return cache_dir() / f"{cachefiles.CALIBRATION_PREFIX}{fp}.json"


# ---- the hardware fingerprint ------------------------------------------------------------------------


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


_FINGERPRINTED = ("torch", "cupy-cuda13x", "cupy-cuda12x", "cupy", "scikit-learn")
_DIST_FOLDERS = (".dist-info", ".egg-info")


@functools.cache  # read once a process: the first routed call reads it, a script's run waits for it
def _versions() -> dict[str, str]:
    """The versions of the libraries the fingerprint names, as ``importlib.metadata.version`` gives
    them: read from the names of the ``NAME-VERSION.dist-info`` folders on ``sys.path`` (importing
    ``importlib.metadata`` and scanning every distribution costs tens of milliseconds of a script's
    start); ``importlib.metadata`` only for a library installed otherwise (an egg)."""
    found = {"python": platform.python_version(), "numpy": np.__version__}
    wanted = {dist.replace("-", "_").lower(): dist for dist in _FINGERPRINTED}
    eggs = []
    for entry in sys.path:
        try:
            names = os.listdir(entry or ".")
        except OSError:
            continue
        for name in names:
            if not name.endswith(_DIST_FOLDERS):  # most of a site-packages: passed over at C speed
                continue
            stem, _, kind = name.rpartition(".")
            dist, _, version = stem.partition("-")
            dist = dist.lower()
            if dist in wanted and wanted[dist] not in found:
                if kind == "dist-info" and version:
                    found[wanted[dist]] = version
                elif kind == "egg-info":
                    eggs.append(wanted[dist])
    if eggs:
        from importlib import metadata

        for dist in eggs:
            try:
                found.setdefault(dist, metadata.version(dist))
            except metadata.PackageNotFoundError:
                continue
    return {k: found[k] for k in ("python", "numpy", *_FINGERPRINTED) if k in found}


def _identity() -> dict[str, Any]:
    """What the fingerprint is made of: CPU model and count, the GPUs the driver lists, library
    versions; read without importing torch or CuPy, since the first routed call loads the calibration."""
    return {
        "cpu": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "gpu_hardware": _gpu_hardware(),
        "libraries": dict(_versions()),
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
    found = [line.split(":", 1)[1].strip() for gpu in listed(nvidia / "gpus")
             for line in _lines(nvidia / "gpus" / gpu / "information") if line.startswith("Model:")]
    found += _lines(nvidia / "version")[:1]
    drm = Path("/sys/class/drm")
    products = [drm / card / "device" / "product_name" for card in listed(drm) if card.startswith("card")]
    return found + [" ".join(_lines(p)) for p in products if p.is_file()]


def _lines(path: Path) -> list[str]:
    try:
        return path.read_text().splitlines()
    except OSError:
        return []


def machine() -> dict[str, Any]:
    """The fingerprint's parts, and the GPUs as their libraries describe them (probes the targets)."""

    gpus = []
    for name in targets.registry.gpu_names():
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
    return cachefiles.sha256(json.dumps(key, sort_keys=True, default=str).encode())[:16]


# ---- loading --------------------------------------------------------------------------------------


_loaded: dict[str, Calibration | None] = {}


def load(path: str | Path | None = None) -> Calibration | None:
    """The stored calibration of this machine (or the file at ``path``, whatever its plan);
    ``None`` if none, or if it was made to another plan than this dispatch's (``PLAN``)."""
    if path is not None:
        return Calibration.from_data(cachefiles.read_json(path))
    if not stored():  # none at all: this machine's fingerprint (its libraries' versions) is not read
        return None
    fp = fingerprint()
    if fp not in _loaded:
        file = _default_path(fp)
        try:
            found = Calibration.from_data(cachefiles.read_json(file))
        except FileNotFoundError:
            found = None
        except (OSError, ValueError) as exc:  # damaged, foreign or not a file: as if there were none
            warnings.warn(f"dispatch ignores the calibration at {file} ({exc}); calls are routed by the seed's "
                          "table until `python -m dispatch calibrate` measures this machine again",
                          RuntimeWarning, stacklevel=2)
            found = None
        _loaded[fp] = found if found is not None and found.plan == PLAN else None
    return _loaded[fp]


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
        # warm-up among them (...which makes it slower, never faster). One call is not enough: a
        # slow GPU call varies severalfold from one call to the next.
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


# The highest one-minute load average per core seen during the calibration (``note_load``): over
# BUSY_LOAD, other processes held the cores. Batches of fast ops can stay steady then while every
# multi-threaded product stalls (a quick calibration at load 13 on 2 cores: 3 of 34 batches
# disturbed, its factorisations 50x slow).
_LOAD = [0.0]
BUSY_LOAD = 1.0


def note_load(reset: bool = False) -> None:
    """Keep the machine's load average per core, where the system reports one."""
    if reset:
        _LOAD[0] = 0.0
    if hasattr(os, "getloadavg"):
        _LOAD[0] = max(_LOAD[0], os.getloadavg()[0] / (os.cpu_count() or 1))


def busy_note() -> str | None:
    """One line saying that the last calibration's machine was too busy to measure steadily, or
    ``None`` when it was steady enough."""
    disturbed, measured = _SPREAD
    cores = os.cpu_count() or 1
    if _LOAD[0] > BUSY_LOAD:
        why = f"its load average reached {_LOAD[0] * cores:.1f} on {cores} cores"
    elif measured and disturbed > BUSY_SHARE * measured:
        why = f"{disturbed} of {measured} measurements varied over {BUSY_SPREAD}x between their samples"
    else:
        return None
    return (f"dispatch calibrate: the machine was busy: {why}; the least disturbed figures were kept, but "
            "calibrate again when it is quieter")


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


# Memory bandwidth is timed on operands far beyond the last-level cache: an ``add`` whose operands
# fit in it times the cache, several times faster than memory, and would price every call that
# streams from memory (a tall factorisation, a large copy) that much too fast. Each operand is
# STREAM_CACHES times the largest cache, within STREAM_BOUNDS bytes.
STREAM_CACHES = 2
STREAM_BOUNDS = (64 << 20, 1 << 30)
_STREAM_CALLS = {False: 5, True: 3}  # timed after a warm-up, full and quick; the least kept
_DEFAULT_CACHE_BYTES = 32 << 20  # where the system does not say


def cache_bytes(target: Any = None) -> int:
    """The largest cache data stream through on ``target``'s device: the CPU's last-level cache
    (as Linux lists it), or a GPU's L2 (as its library reports it); 32 MiB where neither says."""
    if target is not None and not target.device.is_host:
        try:
            if target.library == "cupy":
                found = target.cupy.cuda.runtime.getDeviceProperties(target.device.index)["l2CacheSize"]
            else:
                found = target.torch.cuda.get_device_properties(target.device.index).L2_cache_size
            return int(found) or _DEFAULT_CACHE_BYTES
        except Exception:  # MPS, or a library without the field: the default
            return _DEFAULT_CACHE_BYTES
    sizes = [_cache_size(" ".join(_lines(p))) for p in Path("/sys/devices/system/cpu/cpu0/cache").glob("index*/size")]
    return max(sizes, default=0) or _DEFAULT_CACHE_BYTES


def _cache_size(text: str) -> int:
    """Bytes of a sysfs cache size (``32768K``, ``1M``); 0 where it is not one."""
    text = text.strip().upper()
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:], 1)
    digits = text.rstrip("KMG")
    return int(digits) * scale if digits.isdigit() else 0


def stream_bytes(target: Any = None) -> int:
    """Bytes of each operand of the bandwidth measurement on ``target`` (``STREAM_CACHES``)."""
    lo, hi = STREAM_BOUNDS
    return min(max(STREAM_CACHES * cache_bytes(target), lo), hi)


def _measure_transfers(target: Any, quick: bool) -> dict[str, float]:
    """Host <-> device bandwidth through dispatch's staging and through plain pageable copies."""

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
# their kernels (once per machine: both cache them on disk), which can take seconds a solver and
# would be charged to the measurements. Child processes make those first calls while the other
# devices are measured, so that the compiles overlap (one process's do not, even from several
# threads); these targets are measured next, their solvers and the host targets once the children
# are done, undisturbed. The children make the solvers' calls in both dtypes, one size and dtype a
# child: each dtype compiles its own kernels.
# ---- Dask: the chunk size that hides a cluster's per-task overhead ------------------------------------

# A chunk's element-wise work should take at least this many times the per-task overhead (5 %).
DASK_WORK_PER_OVERHEAD = 20.0
DASK_CHUNK_BOUNDS = (32 << 20, 1 << 30)
_DEFAULT_BANDWIDTH = 5e9  # bytes/s of one NumPy thread streaming through memory


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

cluster.measure_chunks_with(dask_chunk_bytes)  # a connected cluster's chunk size, measured on first need
