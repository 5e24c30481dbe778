"""Scale-out: when arrays outgrow a device or the host, hand them to Dask.

The ``dask`` target (``dispatch.targets.dask_target``) holds ``dask.array`` arrays, chunked
NumPy arrays on CPU workers or CuPy arrays on GPU workers. This module decides *when* work
goes there and keeps the connection:

- ``use_cluster(client_or_address)`` (or ``DISPATCH_DASK_SCHEDULER``) connects a Dask
  cluster; ``use_cluster(None)`` disconnects. Without one, Dask's threaded scheduler runs in
  this process.
- the sizes the router's scale-out rule reads (``_operand_reason``; asked before its policy by
  ``dispatch.routing.router``): data already in Dask stays there (residency); with a cluster
  connected, a call whose data spans more than one chunk, or takes more than
  ``memory_fraction()`` of the free memory of the device holding its operands, goes to Dask where
  the cluster's memory and spill space can hold it (``capacity_bytes``). Without a cluster, Dask
  takes nothing unasked (``using("dask")``): work too large for its GPU runs on the host where
  the host can hold it (``_host_reason``), and a request nothing can hold raises NumPy's
  ``MemoryError`` (Dask's threaded scheduler in this process has no more memory than NumPy).
- ``result_reason`` is the same test for creation functions and random draws, which have no
  operands: the result's size decides, so an array larger than the host is created chunk by
  chunk on a cluster that can hold it, and never exists whole on one machine.
- ``chunk_bytes()``: about 128 MiB per chunk by default (Dask's own default), or what the
  connected cluster's measured per-task overhead asks for (``calibration.dask_chunk_bytes``).

The router asks again whenever it reuses a decision for a call over ``LIVE_ELEMENTS`` (free memory
changes), so it costs nothing on small calls. Running work on Dask is ``dispatch.arrays.scale_out``'s.
"""

from __future__ import annotations

import contextlib
import math
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from dispatch import targets
from dispatch.base import settings
from dispatch.base.devices import HOST, Device
from dispatch.base.settings import ENV
from dispatch.base.state import STATE

__all__ = ["active", "address", "capacity_bytes", "chunk_bytes", "chunk_bytes_set", "client", "connected",
           "device_free_bytes", "free_bytes", "gpu_workers", "host_free_bytes", "host_memory_bytes",
           "local_cluster_options", "measure_chunks_with", "memory_fraction", "on_change", "result_bytes",
           "result_reason", "scheduler", "set_chunk_bytes", "set_memory_fraction", "use_cluster"]


def _fmt_bytes(n: int) -> str:
    """``n`` bytes as the trace writes them (``dispatch.tracing``, loaded with the first reason written)."""
    from dispatch.tracing import _fmt_bytes as fmt

    return fmt(n)


def _log() -> Any:
    """dispatch's logger: ``logging`` loads with the first message, not with a script's first call."""
    import logging

    return logging.getLogger("dispatch")


DEFAULT_CHUNK_BYTES = 128 << 20  # Dask's own default chunk size (array.chunk-size)
DEFAULT_TIMEOUT_S = 5.0

_fraction = ENV.memory_fraction  # DISPATCH_MEMORY_FRACTION
_chunk_bytes: int | None = ENV.chunk_bytes  # DISPATCH_DASK_CHUNK_BYTES
_client: Any = None
_owned = False  # the client was made here from an address: close it on disconnect
_gpu_workers = False
_measured_chunk: dict[str, int] = {}  # scheduler address -> chunk bytes from its task overhead
_measure_chunk: Callable[[Any], int] | None = None
_listeners: list[Callable[[], None]] = []

# Calls whose largest operand has at least this many elements consult the hook every time (a
# cached decision for them is reused only while the work still fits). A power of two, so a
# size bucket of the decision cache is all above or all below it.
LIVE_ELEMENTS = 1 << 22


def _refresh_live() -> None:
    global LIVE_ELEMENTS
    floor = min(chunk_bytes(), 64 << 20) // 16  # 16: the widest itemsize (complex128)
    LIVE_ELEMENTS = 1 << max(floor.bit_length() - 1, 0)
    for listener in _listeners:
        listener()


def on_change(listener: Callable[[], None]) -> None:
    """Call ``listener()`` whenever a setting or the connection changes (the router forgets its
    decisions then: they were made under another ``LIVE_ELEMENTS``)."""
    _listeners.append(listener)


def measure_chunks_with(measure: Callable[[Any], int]) -> None:
    """How to measure a connected cluster's chunk size (``dispatch.routing.calibration`` tells)."""
    global _measure_chunk
    _measure_chunk = measure


# ---- settings ------------------------------------------------------------------------------------


def memory_fraction() -> float:
    """The fraction of a device's free memory that work may take before it goes to Dask."""
    return _fraction


def set_memory_fraction(fraction: float) -> None:
    """Hand work to Dask when its operands or result would take more than ``fraction`` of the
    free memory of the device holding them (default 0.5, ``DISPATCH_MEMORY_FRACTION``)."""
    global _fraction
    _fraction = settings.check_memory_fraction(fraction)
    _refresh_live()


def chunk_bytes_set() -> int | None:
    """The chunk size set (``set_chunk_bytes``, ``DISPATCH_DASK_CHUNK_BYTES``), or ``None``."""
    return _chunk_bytes


def chunk_bytes() -> int:
    """Bytes per Dask chunk: set explicitly, else measured for the connected cluster, else
    128 MiB."""
    if _chunk_bytes is not None:
        return _chunk_bytes
    if _client is not None:
        _measure(_client)
        measured = _measured_chunk.get(address() or "")
        if measured:
            return measured
    return DEFAULT_CHUNK_BYTES


def set_chunk_bytes(nbytes: int | None) -> None:
    """Bytes per chunk of the arrays dispatch hands to Dask (``None``: measured or default;
    ``DISPATCH_DASK_CHUNK_BYTES``)."""
    global _chunk_bytes
    _chunk_bytes = None if nbytes is None else settings.check_chunk_bytes(nbytes)
    _refresh_live()


# ---- the connection ---------------------------------------------------------------------------------


def use_cluster(client_or_address: Any = None, *, timeout: float | None = None, gpu: bool | None = None) -> Any:
    """Send large work to a Dask cluster: a ``distributed.Client``, a cluster object
    (``LocalCluster``, ``LocalCUDACluster``) or a scheduler address (``"tcp://host:8786"``).
    ``None`` disconnects (and closes a client made here).

    An address that does not answer within ``timeout`` seconds (default 5) raises one
    ``ConnectionError`` naming it. ``gpu`` says whether the workers hold CuPy chunks; by
    default it is asked of the workers (every worker sees a CUDA device). Returns the client.
    """
    return _use(client_or_address, timeout, gpu, reprobe=True)


def _use(client_or_address: Any, timeout: float | None, gpu: bool | None, *, reprobe: bool) -> Any:
    global _client, _owned, _gpu_workers
    _disconnect()
    if client_or_address is None:
        _after_change(reprobe)
        return None
    try:
        from distributed import Client
    except ImportError as exc:
        raise ImportError("dispatch.use_cluster needs dask.distributed (the [dask] extra: pip install -e "
                          "'.[dask]' from dispatch's clone)") from exc
    if isinstance(client_or_address, Client):
        client, owned = client_or_address, False
    else:
        client, owned = _connect(client_or_address, DEFAULT_TIMEOUT_S if timeout is None else timeout), True
    _ship_blocks_by_value()
    _client, _owned = client, owned
    _gpu_workers = _workers_have_gpus(client) if gpu is None else bool(gpu)
    _after_change(reprobe)  # the chunk size (measured on first need, unless set) decides LIVE_ELEMENTS
    return client


def _connect(target: Any, timeout: float) -> Any:
    """A client for an address or a cluster object; one clear error if it does not answer."""
    import logging

    from distributed import Client

    where = getattr(target, "scheduler_address", target)
    quiet = [logging.getLogger(n) for n in ("distributed.client", "distributed.comm", "distributed.core")]
    levels = [q.level for q in quiet]
    for q in quiet:  # a refused connection is reported once, below, not logged by every retry
        q.setLevel(logging.CRITICAL)
    try:
        return Client(target, timeout=f"{timeout}s", set_as_default=False)
    except Exception as exc:
        raise ConnectionError(
            f"dispatch: cannot reach the Dask scheduler at {where} within {timeout:g} s "
            f"({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else 'no answer'})") from None
    finally:
        for q, level in zip(quiet, levels, strict=True):
            q.setLevel(level)


def _disconnect() -> None:
    global _client, _owned, _gpu_workers
    client, owned = _client, _owned
    _client, _owned, _gpu_workers = None, False, False
    if client is not None and owned:
        with contextlib.suppress(Exception):
            client.close()


def _after_change(reprobe: bool = True) -> None:
    if reprobe:
        targets.reset("dask")  # probed again: a scheduler from the environment is tried once more
    _refresh_live()


def _env_address() -> str | None:
    return settings.dask_scheduler()


def client() -> Any:
    """The connected ``distributed.Client``, connecting to ``DISPATCH_DASK_SCHEDULER`` on first
    use; ``None`` when no cluster is connected (Dask's threaded scheduler runs the work)."""
    if _client is None and _env_address() is not None:
        # Reached while the dask target is being probed (its constructor connects) or after it
        # was: probing it again from here would wait on that probe's lock for ever.
        _use(_env_address(), None, None, reprobe=False)
    return _client


def connected() -> bool:
    """Whether a cluster is connected (or named by ``DISPATCH_DASK_SCHEDULER``)."""
    return _client is not None or _env_address() is not None


def address() -> str | None:
    """The connected scheduler's address, or ``None``."""
    c = _client
    if c is None:
        return None
    with contextlib.suppress(Exception):
        return c.scheduler.address
    return None


def gpu_workers() -> bool:
    """Whether chunks live on GPU workers as CuPy arrays."""
    return _gpu_workers


def scheduler() -> dict[str, Any]:
    """Keyword arguments for ``dask.compute`` and ``persist``: the connected client, or none
    (Dask's default scheduler)."""
    c = client()
    return {"scheduler": c} if c is not None else {}


def _ship_blocks_by_value() -> None:
    """Workers run dispatch's chunk functions without having dispatch installed."""
    with contextlib.suppress(Exception):
        import cloudpickle

        from dispatch.targets import _dask_blocks

        cloudpickle.register_pickle_by_value(_dask_blocks)


def _has_gpu() -> bool:
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        return False


def _workers_have_gpus(c: Any) -> bool:
    try:
        found = c.run(_has_gpu)
    except Exception:
        return False
    return bool(found) and all(found.values())


def _measure(c: Any) -> None:
    """The chunk size that hides this cluster's per-task overhead, measured once per scheduler."""
    where = address()
    if where is None or where in _measured_chunk:
        return
    _measured_chunk[where] = 0  # measuring: a failure leaves the default
    if _measure_chunk is None:
        return
    try:
        _measured_chunk[where] = _measure_chunk(c)
    except Exception as exc:  # a measurement is advice; the default serves
        _log().info("dispatch: could not measure the Dask cluster's task overhead: %s", exc)


# ---- a local cluster sized to the host ----------------------------------------------------------------------

# A task holds about this many chunks at once (its input, its output, temporaries), and a worker
# starts spilling at 60 % of its memory limit: its threads' chunks should take half at most.
TASK_CHUNKS = 4
WORKING_SHARE = 0.5
WORKER_BASE_BYTES = 256 << 20  # a worker process's own memory: the interpreter, NumPy, distributed


def host_memory_bytes() -> int | None:
    """The host's physical memory: psutil, else /proc/meminfo, else sysconf."""
    try:
        import psutil

        return int(psutil.virtual_memory().total)
    except Exception:
        pass
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return int(os.sysconf("SC_PHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        return None


def local_cluster_options(chunk: int | None = None, memory: int | None = None, *, cores: int | None = None,
                          host_memory: int | None = None) -> dict[str, int]:
    """``n_workers``, ``threads_per_worker`` and ``memory_limit`` (per worker) for a
    ``distributed.LocalCluster`` on this host, so that every thread's chunks fit its worker with
    room to spare: ``TASK_CHUNKS`` chunks a thread within ``WORKING_SHARE`` of the limit, above
    the worker's own ``WORKER_BASE_BYTES``. Of the splits that fit, the one running the most
    threads, nearest Dask's own choice of processes.

    Parameters
    ----------
    chunk : int, optional
        Bytes per chunk (``chunk_bytes()`` by default).
    memory : int, optional
        Bytes the cluster's workers may hold in all (half the host's memory by default, at most 80 %).
    cores, host_memory : int, optional
        The host's cores and memory (this host's by default).

    Raises
    ------
    ValueError
        Where one worker of one thread cannot hold a chunk's work in ``memory``.
    """
    if cores is None:
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    host_memory = host_memory or host_memory_bytes() or 8 << 30
    memory = min(memory or host_memory // 2, int(0.8 * host_memory))
    chunk = chunk or chunk_bytes()
    per_thread = TASK_CHUNKS * chunk / WORKING_SHARE
    preferred = cores if cores <= 4 else min(f for f in range(1, cores + 1) if cores % f == 0 and f * f >= cores)
    best = None
    for workers in range(1, cores + 1):
        limit = memory // workers
        threads = min(cores // workers, int((limit - WORKER_BASE_BYTES) // per_thread))
        if threads < 1:
            continue
        score = (workers * threads, -abs(workers - preferred))
        if best is None or score > best[0]:
            best = (score, {"n_workers": workers, "threads_per_worker": threads, "memory_limit": int(limit)})
    if best is None:
        raise ValueError(f"a chunk of {chunk} bytes needs a worker of {int(WORKER_BASE_BYTES + per_thread)} bytes "
                         f"or more; {memory} bytes are too few")
    return best[1]


# ---- free memory -----------------------------------------------------------------------------------------


def host_free_bytes() -> int | None:
    """Memory available to new allocations on the host: psutil, else /proc/meminfo, else sysconf."""
    try:
        import psutil

        return int(psutil.virtual_memory().available)
    except Exception:
        pass
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return int(os.sysconf("SC_AVPHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        return None


def device_free_bytes(device: Device) -> int | None:
    """Free memory of a GPU, counting what the engines' memory pools hold unused."""
    if device.kind == "cuda":
        if "cupy" in sys.modules:
            try:
                cupy = sys.modules["cupy"]
                with cupy.cuda.Device(device.index or 0):
                    free, _ = cupy.cuda.runtime.memGetInfo()
                return int(free) + int(cupy.get_default_memory_pool().free_bytes())
            except Exception:
                pass
        if "torch" in sys.modules:
            try:
                torch = sys.modules["torch"]
                index = device.index or 0
                free, _ = torch.cuda.mem_get_info(index)
                return int(free) + int(torch.cuda.memory_reserved(index) - torch.cuda.memory_allocated(index))
            except Exception:
                pass
        return None
    if device.kind == "mps" and "torch" in sys.modules:
        try:
            mps = sys.modules["torch"].mps
            return int(mps.recommended_max_memory() - mps.driver_allocated_memory())
        except Exception:
            return None
    return None


def free_bytes(device: Device) -> int | None:
    """Free memory of ``device`` (the host or a GPU); ``None`` if it cannot be asked."""
    return host_free_bytes() if device.is_host else device_free_bytes(device)


def _dask_target() -> Any:
    return targets.probe("dask")


def _operand_reason(op: Any, inputs: Any) -> str | None:
    """Why a call with these operands should run in Dask, or ``None``."""
    result = result_bytes(op, inputs)
    device = inputs.resident or HOST
    need = max(inputs.nbytes, result)
    if not connected():
        return None  # the router's policy decides; a request nothing can hold fails as in NumPy
    if not _cluster_holds(need):
        return None
    if need > chunk_bytes():
        return f"scale-out: {_fmt_bytes(need)} spans chunks of the connected cluster"
    free = free_bytes(device)
    if free is not None and need > _fraction * free:
        return f"scale-out: {_fmt_bytes(need)} > {_fraction:g} of free {device} memory ({_fmt_bytes(free)})"
    return None


def _host_reason(inputs: Any, result: int) -> str | None:
    """Why device operands whose work their GPU cannot hold should run on the host (no cluster)."""
    device = inputs.resident
    if device is None or device.is_host:
        return None
    need = max(inputs.nbytes, result)
    free, host = free_bytes(device), host_free_bytes()
    if free is None or need <= _fraction * free or (host is not None and need > host):
        return None
    return f"too large for {device}: {_fmt_bytes(need)} > {_fraction:g} of its free memory ({_fmt_bytes(free)})"


# A connected cluster's room, by scheduler address: (seconds when read, bytes or None for unbounded).
_capacity: dict[str, tuple[float, int | None]] = {}
CAPACITY_TTL_S = 30.0  # workers come and go: read again after this long
# Of the cluster's memory and spill space, the share one array may take (Dask needs room for
# the tasks' intermediates and for what else the cluster holds).
CAPACITY_SHARE = 0.8


def capacity_bytes() -> int | None:
    """Bytes a connected cluster can hold: its workers' memory limits, plus the free disk space
    they spill to (where spilling is on); ``None`` where unbounded (a worker without a memory
    limit) or unknown, 0 without a cluster."""
    c = client()
    if c is None:
        return 0
    import time

    where = address() or ""
    known = _capacity.get(where)
    if known is not None and time.monotonic() - known[0] < CAPACITY_TTL_S:
        return known[1]
    try:
        try:
            info = c.scheduler_info(n_workers=-1)  # every worker (a few by default in recent versions)
        except TypeError:
            info = c.scheduler_info()
        workers = info["workers"].values()
        limits = [int(w.get("memory_limit") or 0) for w in workers]
        room: int | None = None if not limits or 0 in limits else sum(limits)
        if room is not None and _spills():

            def spill_space(dask_worker: Any) -> tuple[str, int]:  # shipped by value: workers need no dispatch
                import shutil
                import socket

                return socket.gethostname(), int(shutil.disk_usage(dask_worker.local_directory).free)

            disks = c.run(spill_space)  # worker -> (host, free bytes where it spills)
            room += sum(dict(disks.values()).values())  # one figure per host: its workers share a disk
    except Exception as exc:  # unknown: the chunk rule alone decides, as before
        _log().info("dispatch: could not read the Dask cluster's capacity: %s", exc)
        room = None
    _capacity[where] = (time.monotonic(), room)
    return room


def _spills() -> bool:
    import dask

    return dask.config.get("distributed.worker.memory.spill", 0.7) not in (False, None)


def _cluster_holds(nbytes: int) -> bool:
    room = capacity_bytes()
    return room is None or nbytes <= CAPACITY_SHARE * room


# ---- a creation function's result, from its arguments (the scale-out rule's size; Dask's chunks) ----


def created_elements(name: str, args: tuple, kwargs: dict) -> int:
    """The result's element count from the arguments, cheaply; -1 if it cannot be told."""
    try:
        if name in ("zeros", "ones", "empty", "full"):
            shape = args[0] if args else kwargs["shape"]
            return int(shape) if isinstance(shape, (int, np.integer)) else int(math.prod(shape))
        if name == "eye":
            n = args[0] if args else kwargs["N"]
            m = args[1] if len(args) > 1 else kwargs.get("M")
            return int(n) * int(n if m is None else m)
        if name == "identity":
            n = args[0] if args else kwargs["n"]
            return int(n) * int(n)
        if name == "linspace":
            return int(args[2] if len(args) > 2 else kwargs.get("num", 50))
        if name == "arange":
            start, stop, step = arange_args(args, kwargs)
            with np.errstate(all="ignore"):  # a zero step of datetimes: NumPy's arange raises it, not this estimate
                return max(0, math.ceil((stop - start) / step))
    except (TypeError, ValueError, KeyError, ZeroDivisionError, OverflowError):
        return -1
    return -1


_DTYPE_AT = {"zeros": 1, "ones": 1, "empty": 1, "full": 2, "eye": 3, "identity": 1, "linspace": 5}


def created_itemsize(name: str, args: tuple, kwargs: dict) -> int:
    """The result's itemsize from the arguments (8 where NumPy would infer it)."""
    at = _DTYPE_AT.get(name)
    dtype = args[at] if at is not None and len(args) > at else kwargs.get("dtype")
    try:
        return np.dtype(dtype).itemsize if dtype is not None else 8
    except TypeError:
        return 8


def arange_args(args: tuple, kwargs: dict) -> tuple[Any, Any, Any]:
    """``arange``'s (start, stop, step), as its arguments give them."""
    first = args[0] if args else kwargs.get("start_or_stop", kwargs.get("start"))
    stop = args[1] if len(args) > 1 else kwargs.get("stop")
    step = args[2] if len(args) > 2 else kwargs.get("step", 1)
    return (0, first, step) if stop is None else (first, stop, step)


# ---- where a result too large for the host goes -----------------------------------------------------


def result_reason(nbytes: int, elements: int) -> str | None:
    """Why a creation function or a random draw of ``nbytes`` should make a chunked Dask array,
    or ``None``. Cheap for small results and outside ``using("dask")``."""
    if STATE.plain and not STATE.host_only:
        if elements < LIVE_ELEMENTS:
            return None
    else:
        forced = STATE.forced_name()
        if forced == "dask":
            return "forced dask"
        if forced not in (None, "auto"):
            return None
        if elements < LIVE_ELEMENTS:
            return None
    if not connected() or not _cluster_holds(nbytes):
        return None  # NumPy makes it, or raises MemoryError as it would
    if nbytes > chunk_bytes():
        return f"scale-out: {_fmt_bytes(nbytes)} spans chunks of the connected cluster"
    free = host_free_bytes()
    if free is not None and nbytes > _fraction * free:
        return f"scale-out: {_fmt_bytes(nbytes)} > {_fraction:g} of free host memory ({_fmt_bytes(free)})"
    return None


def result_bytes(op: Any, inputs: Any) -> int:
    """About how many bytes ``op``'s result takes, from the operands' shapes."""
    arrays = inputs.arrays
    itemsize = max((d.itemsize for d in inputs.dtypes), default=8)
    work = op.work
    if work == "reduce":
        return 0
    if work == "matmul" and len(arrays) >= 2:
        a, b = arrays[0].shape, arrays[1].shape
        rows = math.prod(a[:-1]) if len(a) > 1 else 1
        return rows * (b[-1] if len(b) > 1 else 1) * itemsize
    if work == "map" and len(arrays) > 1:
        try:
            import numpy as np

            return math.prod(np.broadcast_shapes(*(tuple(a.shape) for a in arrays))) * itemsize
        except ValueError:
            return inputs.nbytes
    if work == "fft":
        return 2 * inputs.nbytes  # real input, complex output
    return inputs.nbytes


if _env_address() is not None:
    _log().debug("dispatch: Dask scheduler from DISPATCH_DASK_SCHEDULER: %s (connected on first use)", _env_address())


@contextlib.contextmanager
def active() -> Any:
    """Inside: Dask's own computations (chunk sizes of boolean masks, ``unique``...) run on the
    connected cluster, which holds the data, rather than on Dask's default scheduler."""
    c = client()
    if c is None:
        yield
        return
    import dask

    with dask.config.set(scheduler=c):
        yield

