"""A fake CuPy, built on NumPy, so that ``dispatch/targets/cupy_target.py`` runs in CI.

It proves plumbing, not CuPy semantics: the conversions to and from the "device", the
dtype matching (``_match``), device scalars, range-checked index keys, the pinned staging
path for arrays over 1 MiB, ``assign``, and residency (results stay on the "device" until
asked for, ``x.to("cpu")``). Every computation is NumPy's, so it says nothing about where
CuPy's results differ from NumPy's: that is for the GPU run of the suite.

What it imitates, because dispatch relies on it:

- ``ndarray`` is a subclass of ``numpy.ndarray`` whose module is ``cupy``: its type differs
  from NumPy's, as a real CuPy array's does, and dispatch must tell it apart by its library,
  not by ``isinstance(x, numpy.ndarray)``.
- Functions take device arrays only: a host ``numpy.ndarray`` argument raises ``TypeError``
  as in CuPy (``asarray``, ``array`` and ``asnumpy`` are the crossings). Results are device
  arrays, and reductions give 0-d arrays, never scalars, as in CuPy.
- ``cuda``: ``runtime.getDeviceCount() == 1``, ``runtime.hostRegister`` and ``hostUnregister``
  (recorded in ``runtime.locked``), ``Device().id == 0``, streams and events
  whose ``synchronize`` returns at once, ``alloc_pinned_memory`` and ``MemoryPointer`` copies
  (``ctypes.memmove`` on host memory); ``from_dlpack``; ``cupyx.errstate``.

``install()`` puts it in ``sys.modules`` (``cupy``, ``cupyx`` and their submodules) and returns
a function that restores what was there.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib.util
import sys
import types
from typing import Any

import numpy as np

__all__ = ["install", "real_cupy_installed"]


class ndarray(np.ndarray):  # CuPy's name
    """A "device" array: NumPy memory under CuPy's type."""

    __module__ = "cupy"

    @property
    def device(self) -> Device:
        return Device(0)

    @property
    def data(self) -> MemoryPointer:  # CuPy's device pointer, with byte offsets
        return MemoryPointer(self.__array_interface__["data"][0])

    def get(self) -> np.ndarray:
        return asnumpy(self)

    @property
    def base(self) -> Any:  # CuPy's: the device array viewed, ``None`` for memory the array owns
        base = super().base
        while isinstance(base, np.ndarray) and not isinstance(base, ndarray):
            base = base.base  # (NumPy's own arrays between: the memory under the type)
        return base if isinstance(base, ndarray) else None

    def __getitem__(self, key: Any) -> Any:
        return _device(super().__getitem__(_plain(key, strict=False)))

    def __setitem__(self, key: Any, value: Any) -> None:
        super().__setitem__(_plain(key, strict=False), _plain(value, strict=False))

    def __repr__(self) -> str:
        return repr(self.view(np.ndarray))


# ---- crossing between host and "device" ----------------------------------------------------------------------


def _plain(value: Any, strict: bool = True) -> Any:
    """Device arrays as plain NumPy views, for NumPy to compute on."""
    if isinstance(value, ndarray):
        return value.view(np.ndarray)
    if type(value) is np.ndarray and strict:
        raise TypeError(f"Unsupported type {type(value)}")  # CuPy takes no host arrays
    if type(value) in (list, tuple):
        return type(value)(_plain(v, strict) for v in value)
    if type(value) is dict:
        return {k: _plain(v, strict) for k, v in value.items()}
    return value


def _device(result: Any) -> Any:
    """NumPy's results as device arrays; scalars as 0-d arrays, as CuPy gives them."""
    if isinstance(result, np.ndarray):
        return result if isinstance(result, ndarray) else result.view(ndarray)
    if isinstance(result, np.generic):
        return np.asarray(result).view(ndarray)
    if isinstance(result, tuple):
        items = [_device(r) for r in result]
        return type(result)(*items) if hasattr(result, "_fields") else tuple(items)
    if isinstance(result, list):
        return [_device(r) for r in result]
    return result


def asarray(a: Any, dtype: Any = None, order: Any = None) -> ndarray:
    if isinstance(a, ndarray) and (dtype is None or a.dtype == dtype):
        return a
    return np.array(_plain(a, strict=False), dtype=dtype, order=order or "K", copy=True).view(ndarray)


def array(a: Any, dtype: Any = None, copy: bool = True, order: Any = "K") -> ndarray:
    return np.array(_plain(a, strict=False), dtype=dtype, order=order, copy=True).view(ndarray)


def asnumpy(a: Any, stream: Any = None) -> np.ndarray:
    return np.array(_plain(a, strict=False), copy=True)


def from_dlpack(x: Any) -> ndarray:
    if type(x) is not ndarray and x.__dlpack_device__()[0] == 1:  # kDLCPU: CuPy takes device memory only
        raise TypeError("CPU arrays cannot be directly imported to CuPy. "
                        "Use `cupy.array(numpy.from_dlpack(input))` instead.")
    return np.from_dlpack(x).view(ndarray)


def _forward(fn: Any) -> Any:
    def forwarded(*args: Any, **kwargs: Any) -> Any:
        plain_args = _plain(args)
        result = fn(*plain_args, **_plain(kwargs))
        for arg, plain in zip(args, plain_args, strict=True):
            if result is plain and isinstance(arg, ndarray):
                return arg  # handed back as it is (ascontiguousarray of a contiguous array), as CuPy does
        return _device(result)

    forwarded.__name__ = getattr(fn, "__name__", "forwarded")
    return forwarded


class _Ufunc:
    """A NumPy ufunc over device arrays, with its methods."""

    def __init__(self, ufunc: np.ufunc) -> None:
        self._ufunc = ufunc
        self.__name__ = ufunc.__name__
        for method in ("reduce", "accumulate", "reduceat", "outer", "at"):
            setattr(self, method, _forward(getattr(ufunc, method)))

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return _device(self._ufunc(*_plain(args), **_plain(kwargs)))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._ufunc, name)


# NumPy names CuPy does not have that dispatch would otherwise find here (np.matrix is host-only).
_NOT_IN_CUPY = frozenset({"asmatrix", "bmat", "matrix"})


def _namespace(name: str, numpy_module: Any, own: dict[str, Any]) -> types.ModuleType:
    """A module forwarding every NumPy function of ``numpy_module`` over device arrays."""
    module = types.ModuleType(name)
    module.__dict__.update(own)

    def __getattr__(attr: str) -> Any:
        if attr.startswith("__") or attr in _NOT_IN_CUPY:
            raise AttributeError(attr)
        obj = getattr(numpy_module, attr)
        if isinstance(obj, np.ufunc):
            value = _Ufunc(obj)
        elif callable(obj) and not isinstance(obj, type):
            value = _forward(obj)
        else:
            value = obj
        setattr(module, attr, value)
        return value

    module.__getattr__ = __getattr__  # type: ignore[method-assign]
    return module


# ---- cuda ------------------------------------------------------------------------------------------------------


class Device:
    def __init__(self, device: int | None = None) -> None:
        self.id = 0 if device is None else int(device)

    def __enter__(self) -> Device:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def synchronize(self) -> None:
        return None

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Device) and other.id == self.id

    def __hash__(self) -> int:
        return self.id


class Stream:
    ptr = 0
    done = True  # nothing queued; a test sets it False for a busy stream

    def synchronize(self) -> None:
        return None


class Event:
    def record(self, stream: Any = None) -> None:
        return None

    def synchronize(self) -> None:
        return None

    def query(self) -> bool:
        return True


class PinnedMemory(bytearray):
    """Host memory with a pointer, as ``cupy.cuda.alloc_pinned_memory`` gives."""

    @property
    def ptr(self) -> int:
        return ctypes.addressof((ctypes.c_char * len(self)).from_buffer(self))


class MemoryPointer:
    """A device pointer: ``+ offset``, and copies to and from host pointers."""

    def __init__(self, ptr: int) -> None:
        self.ptr = ptr

    def __add__(self, offset: int) -> MemoryPointer:
        return MemoryPointer(self.ptr + offset)

    def copy_from_host_async(self, src: int, size: int, stream: Any = None) -> None:
        ctypes.memmove(self.ptr, src, size)

    def copy_to_host_async(self, dst: int, size: int, stream: Any = None) -> None:
        ctypes.memmove(dst, self.ptr, size)


_STREAM = Stream()
class _Runtime:
    """``cupy.cuda.runtime``: one device; page-locking host memory in place records the ranges
    locked (``locked``) and refuses a range locked twice, as the driver does."""

    def __init__(self) -> None:
        self.locked: dict[int, int] = {}

    def getDeviceCount(self) -> int:
        return 1

    def hostRegister(self, ptr: int, size: int, flags: int) -> None:
        if ptr in self.locked:
            raise RuntimeError("cudaErrorHostMemoryAlreadyRegistered")
        self.locked[ptr] = size

    def hostUnregister(self, ptr: int) -> None:
        if self.locked.pop(ptr, None) is None:
            raise RuntimeError("cudaErrorHostMemoryNotRegistered")


_runtime = _Runtime()
cuda = types.ModuleType("cupy.cuda")
cuda.__dict__.update(
    runtime=_runtime, Device=Device, Stream=Stream, Event=Event, get_current_stream=lambda: _STREAM,
    alloc_pinned_memory=lambda nbytes: PinnedMemory(nbytes), MemoryPointer=MemoryPointer,
)


@contextlib.contextmanager
def errstate(**kwargs: Any):
    """``cupyx.errstate(linalg="raise")``: NumPy's linalg raises already."""
    yield


def _module() -> dict[str, types.ModuleType]:
    own = {"ndarray": ndarray, "asarray": asarray, "array": array, "asnumpy": asnumpy, "from_dlpack": from_dlpack,
           "cuda": cuda, "__version__": "0.0-fake", "__file__": __file__}
    cupy = _namespace("cupy", np, own)
    cupy.linalg = _namespace("cupy.linalg", np.linalg, {})
    cupy.fft = _namespace("cupy.fft", np.fft, {})
    cupy.random = _namespace("cupy.random", np.random, {})
    cupyx = types.ModuleType("cupyx")
    cupyx.errstate = errstate
    return {"cupy": cupy, "cupy.cuda": cuda, "cupy.linalg": cupy.linalg, "cupy.fft": cupy.fft,
            "cupy.random": cupy.random, "cupyx": cupyx}


def install() -> Any:
    """Put the fake in ``sys.modules``; returns ``restore()`` to put back what was there."""
    modules = _module()
    saved = {name: sys.modules.get(name) for name in modules}
    saved.update({name: sys.modules[name] for name in list(sys.modules)
                  if name.startswith(("cupy.", "cupyx.")) and name not in modules})
    for name in list(sys.modules):
        if name.startswith(("cupy.", "cupyx.")):
            del sys.modules[name]
    sys.modules.update(modules)

    def restore() -> None:
        for name in modules:
            sys.modules.pop(name, None)
        for name, module in saved.items():
            if module is not None:
                sys.modules[name] = module

    return restore


def real_cupy_installed() -> bool:
    """Whether a real CuPy can be imported (then the fake must stay out of ``sys.modules``)."""
    try:
        return importlib.util.find_spec("cupy") is not None
    except ValueError:  # a module in sys.modules without a spec: the fake itself
        return False
