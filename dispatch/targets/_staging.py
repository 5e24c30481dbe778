"""Host <-> device copies through pinned staging buffers, and the count of bytes moved.

Pageable copies run several times slower than copies from pinned memory. Copies over
``THRESHOLD`` are cut into ``CHUNK``-sized pieces through two reusable pinned buffers: while the
copy engine moves one piece, CPU threads fill (or drain) the other; one thread's memcpy alone
would be the bottleneck. Smaller copies go straight through (staging costs more than it saves).

A host array sent to a device a second time (a program's input that every iteration reads:
k-means' points, a design matrix) is page-locked where it is (``cudaHostRegister``) and read
from there by the copy engine alone, at the bus's speed; see ``_locked``. Either way the
caller's array has been read when the call returns, so the caller may change it right after:
a staged copy's source is in the pinned buffer by then, and a copy from locked pages is waited
for. That wait also waits for every kernel queued before the copy, so a copy under
``LOCK_MIN`` bytes is read from locked pages only when nothing is queued (see there).
"""

from __future__ import annotations

import contextlib
import functools
import os
import weakref
from _thread import RLock, allocate_lock  # threading's locks, without loading threading
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:  # the pool's module is imported with the first staged copy: a script on NumPy never needs it
    from concurrent.futures import ThreadPoolExecutor

__all__ = ["CHUNK", "THRESHOLD", "locked_bytes", "moved", "no_locking", "to_device_cupy", "to_device_torch",
           "to_host_cupy", "to_host_torch"]

CHUNK = 16 << 20
THRESHOLD = 1 << 20

_counts = {"to_device": 0, "to_host": 0}
_counts_lock = allocate_lock()


def moved() -> dict[str, int]:
    """Bytes copied host -> device and device -> host since the process started."""
    return dict(_counts)


def _count(direction: str, nbytes: int) -> None:
    with _counts_lock:
        _counts[direction] += nbytes


_SLICE = 2 << 20  # bytes each thread copies at a time
_pool: ThreadPoolExecutor | None = None


def _copy(dst: np.ndarray, src: np.ndarray) -> None:
    """``dst[:] = src`` (flat bytes) on several threads: NumPy releases the GIL while copying."""
    global _pool
    if dst.size <= _SLICE:
        np.copyto(dst, src)
        return
    if _pool is None:
        from concurrent.futures import ThreadPoolExecutor

        _pool = ThreadPoolExecutor(min(8, os.cpu_count() or 1), thread_name_prefix="dispatch-staging")
    starts = range(0, dst.size, _SLICE)
    list(_pool.map(lambda s: np.copyto(dst[s:s + _SLICE], src[s:s + _SLICE]), starts))


class _Stager:
    """Two pinned buffers and their events, for one engine on one device."""

    def __init__(self, engine: Any) -> None:
        self.engine = engine
        self.lock = allocate_lock()
        self.buffers: list[np.ndarray] | None = None  # NumPy views of pinned memory
        self.events: list[Any] = [None, None]
        self.turn = 0  # the buffer the next copy to the device starts in

    def _ready(self) -> list[np.ndarray]:
        if self.buffers is None:
            self.buffers = [self.engine.pinned(CHUNK) for _ in range(2)]
        return self.buffers

    def _wait(self, b: int) -> None:
        if self.events[b] is not None:
            self.events[b].synchronize()
            self.events[b] = None

    def to_device(self, src: np.ndarray, dst_bytes: Any) -> None:
        """Copy the bytes of ``src`` (contiguous) into the device byte buffer ``dst_bytes``."""
        flat = src.reshape(-1).view(np.uint8)
        with self.lock:
            buffers = self._ready()
            for start in range(0, flat.size, CHUNK):
                # Copies take turns, so that a small one waits only for the copy before the last
                # (each waits for the kernels queued before it), not the last one.
                b, self.turn = self.turn, 1 - self.turn
                self._wait(b)  # the copy engine is done with this buffer
                piece = flat[start:start + CHUNK]
                _copy(buffers[b][: piece.size], piece)
                self.events[b] = self.engine.copy_in(dst_bytes, start, b, piece.size)

    def to_host(self, src_bytes: Any, dst: np.ndarray) -> None:
        """Copy the device byte buffer ``src_bytes`` into ``dst`` (a new, contiguous array)."""
        flat = dst.reshape(-1).view(np.uint8)
        starts = list(range(0, flat.size, CHUNK))
        with self.lock:
            buffers = self._ready()
            for b in range(min(2, len(starts))):
                self._wait(b)
            issued = [self.engine.copy_out(src_bytes, s, b, min(CHUNK, flat.size - s))
                      for b, s in zip((0, 1), starts[:2], strict=False)]
            for i, start in enumerate(starts):
                b = i % 2
                issued[b].synchronize()
                size = min(CHUNK, flat.size - start)
                _copy(flat[start:start + size], buffers[b][:size])
                if i + 2 < len(starts):
                    nxt = starts[i + 2]
                    issued[b] = self.engine.copy_out(src_bytes, nxt, b, min(CHUNK, flat.size - nxt))


# ---- host arrays read again and again: page-locked in place ----------------------------------------

# Sends of one host buffer before it is locked: the first may be its only one (locking costs
# about as much as a staged copy), the second says the program reads it again.
LOCK_AFTER = 2
# Copies smaller than this are staged, even from locked memory, unless the stream is idle. The
# copy from locked pages is waited for, and on the stream it comes after every kernel queued
# before it; a staged copy is not: a small copy from locked pages would wait for the GPU to
# drain (a minibatch sliced from a locked input, at every step).
LOCK_MIN = 16 << 20
# At most this share of the machine's memory is locked at once (locked pages cannot be swapped).
LOCK_SHARE = 0.25

# Reentrant: freeing an array (a garbage collection) may run its unlock while this thread holds it.
_lock = RLock()
_sends: dict[int, int] = {}  # id of a buffer's owning array -> its sends so far
_locked_owners: dict[int, int] = {}  # id of a locked owner -> its bytes
_refused: set[int] = set()  # owners the driver would not lock: staged, never tried again


_locking = True


@contextlib.contextmanager
def no_locking() -> Iterator[None]:
    """No host memory is locked in the block (calibration times the staged path, which a
    first send takes)."""
    global _locking
    before, _locking = _locking, False
    try:
        yield
    finally:
        _locking = before


def locked_bytes() -> int:
    """Bytes of host memory page-locked in place now."""
    with _lock:
        return sum(list(_locked_owners.values()))  # a copy: a collection may unlock an array meanwhile


def _owner(array: np.ndarray) -> np.ndarray | None:
    """The array that owns ``array``'s memory, if NumPy allocated it (a memory map, or another
    library's buffer, is never locked: its memory may go away by other paths)."""
    base = array
    while type(base) is np.ndarray and not base.flags.owndata:
        base = base.base
    return base if type(base) is np.ndarray else None


@functools.cache
def _memory_total() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 0


def _locked(array: np.ndarray, lock: Any, unlock: Any, idle: Any) -> bool:
    """Whether to read this copy from ``array``'s memory page-locked in place, counting this
    send and locking the memory on the ``LOCK_AFTER``-th; never for a copy under ``LOCK_MIN``
    while work is queued (``idle()`` is false), which is neither counted nor read from there.
    ``lock(ptr, nbytes)`` raises if the driver refuses; ``unlock(ptr)`` runs when the owning
    array is freed, before NumPy frees its memory (weak references are cleared first)."""
    owner = _owner(array) if _locking else None
    if owner is None or (array.nbytes < LOCK_MIN and not idle()):
        return False
    key = id(owner)
    with _lock:
        if key in _locked_owners:
            return True
        sends = _sends.get(key)
        if sends is None:
            weakref.finalize(owner, _forget, key).atexit = False
            sends = 0
        _sends[key] = sends = sends + 1
        if sends < LOCK_AFTER or key in _refused or locked_bytes() + owner.nbytes > LOCK_SHARE * _memory_total():
            return False
        ptr = owner.ctypes.data
        try:
            lock(ptr, owner.nbytes)
        except Exception:  # memory the driver will not lock (already locked by another library...)
            _refused.add(key)
            return False
        _locked_owners[key] = owner.nbytes
    weakref.finalize(owner, _unlock, key, ptr, unlock).atexit = False
    return True


def _forget(key: int) -> None:
    with _lock:
        _sends.pop(key, None)
        _refused.discard(key)


def _unlock(key: int, ptr: int, unlock: Any) -> None:
    with _lock:
        _locked_owners.pop(key, None)
    try:
        unlock(ptr)
    except Exception:  # the driver is gone (interpreter shutdown): nothing is locked any more
        pass


# ---- torch ---------------------------------------------------------------------------------------


class _TorchEngine:
    def __init__(self, torch: Any, device: Any) -> None:
        self.torch, self.device = torch, device
        self.pinned_tensors: list[Any] = []

    def pinned(self, nbytes: int) -> np.ndarray:
        t = self.torch.empty(nbytes, dtype=self.torch.uint8, pin_memory=True)
        self.pinned_tensors.append(t)
        return t.numpy()

    def _event(self) -> Any:
        event = self.torch.cuda.Event()
        event.record(self.torch.cuda.current_stream(self.device))
        return event

    def copy_in(self, dst_bytes: Any, start: int, b: int, size: int) -> Any:
        dst_bytes[start:start + size].copy_(self.pinned_tensors[b][:size], non_blocking=True)
        return self._event()

    def copy_out(self, src_bytes: Any, start: int, b: int, size: int) -> Any:
        self.pinned_tensors[b][:size].copy_(src_bytes[start:start + size], non_blocking=True)
        return self._event()


_torch_stagers: dict[Any, _Stager] = {}


def _torch_stager(torch: Any, device: Any) -> _Stager:
    stager = _torch_stagers.get(device)
    if stager is None:
        stager = _torch_stagers.setdefault(device, _Stager(_TorchEngine(torch, device)))
    return stager


def to_device_torch(cpu_tensor: Any, device: Any, host: np.ndarray | None = None) -> Any:
    """A CPU tensor (over NumPy memory: ``host``, where it is known) copied to ``device``."""
    import torch

    nbytes = cpu_tensor.numel() * cpu_tensor.element_size()
    _count("to_device", nbytes)
    if nbytes < THRESHOLD or device.type != "cuda":
        return cpu_tensor.to(device)
    reverse = tuple(range(cpu_tensor.ndim - 1, -1, -1))
    flipped = not cpu_tensor.is_contiguous() and cpu_tensor.permute(reverse).is_contiguous()
    if flipped:  # Fortran order: see ``_fortran_only``
        cpu_tensor = cpu_tensor.permute(reverse)
    memory = host if host is not None and cpu_tensor.is_contiguous() else None  # else a copy is sent
    src = cpu_tensor.contiguous().numpy()
    idle = torch.cuda.current_stream(device).query
    if memory is not None and _locked(memory, _torch_lock, _torch_unlock, idle):
        out = torch.from_numpy(src).to(device)  # the copy engine reads locked pages directly
    else:
        out = torch.empty(tuple(cpu_tensor.shape), dtype=cpu_tensor.dtype, device=device)
        _torch_stager(torch, device).to_device(src, out.reshape(-1).view(torch.uint8))
    return out.permute(reverse) if flipped else out


def _torch_lock(ptr: int, nbytes: int) -> None:
    import torch

    error = torch.cuda.cudart().cudaHostRegister(ptr, nbytes, 0)
    if int(error) != 0:
        raise RuntimeError(f"cudaHostRegister: error {int(error)}")


def _torch_unlock(ptr: int) -> None:
    import torch

    torch.cuda.cudart().cudaHostUnregister(ptr)


def to_host_torch(tensor: Any) -> Any:
    """A device tensor copied to a new CPU tensor (over NumPy memory)."""
    import torch

    nbytes = tensor.numel() * tensor.element_size()
    _count("to_host", nbytes)
    if nbytes < THRESHOLD or tensor.device.type != "cuda" or tensor.is_conj() or tensor.is_neg():
        return tensor.resolve_conj().resolve_neg().cpu()
    src = tensor.contiguous()
    host = torch.empty(tuple(tensor.shape), dtype=tensor.dtype)
    _torch_stager(torch, tensor.device).to_host(src.reshape(-1).view(torch.uint8), host.numpy())
    return host


# ---- CuPy ------------------------------------------------------------------------------------------


class _CupyEngine:
    def __init__(self, cupy: Any) -> None:
        self.cupy = cupy
        self.pinned_memory: list[Any] = []

    def pinned(self, nbytes: int) -> np.ndarray:
        mem = self.cupy.cuda.alloc_pinned_memory(nbytes)
        self.pinned_memory.append(mem)
        return np.frombuffer(mem, np.uint8, nbytes)

    def _event(self) -> Any:
        event = self.cupy.cuda.Event()
        event.record()
        return event

    def copy_in(self, dst: Any, start: int, b: int, size: int) -> Any:
        stream = self.cupy.cuda.get_current_stream()
        (dst.data + start).copy_from_host_async(self.pinned_memory[b].ptr, size, stream)
        return self._event()

    def copy_out(self, src: Any, start: int, b: int, size: int) -> Any:
        stream = self.cupy.cuda.get_current_stream()
        (src.data + start).copy_to_host_async(self.pinned_memory[b].ptr, size, stream)
        return self._event()


# Keyed by the module too: a stager holds the cupy it was made with (tests swap in a fake one).
_cupy_stagers: dict[tuple[Any, int], _Stager] = {}
_stagers_lock = allocate_lock()


def _cupy_stager(cupy: Any) -> _Stager:
    key = (cupy, cupy.cuda.Device().id)
    stager = _cupy_stagers.get(key)
    if stager is None:
        with _stagers_lock:
            for other in [k for k in _cupy_stagers if k[0] is not cupy]:  # a module swapped out: its pinned buffers go
                del _cupy_stagers[other]
            stager = _cupy_stagers.setdefault(key, _Stager(_CupyEngine(cupy)))
    return stager


def to_device_cupy(cupy: Any, array: np.ndarray) -> Any:
    """A host array copied to the current CUDA device as a CuPy array."""
    _count("to_device", array.nbytes)
    if array.ndim == 0:  # CuPy reads a 0-d array as a scalar: float16 -0.0 would arrive as 0.0
        return cupy.asarray(array.reshape(1)).reshape(())
    if array.nbytes < THRESHOLD:
        return cupy.asarray(array)
    flipped = _fortran_only(array)
    src = np.ascontiguousarray(array.T if flipped else array)
    out = cupy.empty(src.shape, dtype=array.dtype)
    runtime = cupy.cuda.runtime
    stream = cupy.cuda.get_current_stream()
    if _locked(src, lambda ptr, nbytes: runtime.hostRegister(ptr, nbytes, 0), runtime.hostUnregister,
               lambda: stream.done):
        out.data.copy_from_host_async(src.ctypes.data, src.nbytes, stream)  # the copy engine reads locked pages
        stream.synchronize()
    else:
        _cupy_stager(cupy).to_device(src, out)
    return out.T if flipped else out


def _fortran_only(array: np.ndarray) -> bool:
    """Fortran order and not C order (``a.T`` of a C array): copied as the C-ordered bytes of its
    transpose and transposed back on the device, instead of reordered on the host first (the
    reorder costs the host several times the copy)."""
    return array.ndim > 1 and array.flags.f_contiguous and not array.flags.c_contiguous


def to_host_cupy(cupy: Any, native: Any) -> np.ndarray:
    """A CuPy array copied to a new host array."""
    _count("to_host", native.nbytes)
    if native.nbytes < THRESHOLD:
        return cupy.asnumpy(native)
    src = cupy.ascontiguousarray(native)
    out = np.empty(native.shape, dtype=native.dtype)
    _cupy_stager(cupy).to_host(src, out)
    return out
