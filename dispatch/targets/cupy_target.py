"""The ``cupy`` target: CuPy on a CUDA (or ROCm) device.

CuPy mirrors NumPy's API, so an op runs as ``cupy.<same name>``; this module holds only the
refusals and fixes where CuPy differs from NumPy:

- Linear algebra on a singular or non-positive-definite matrix returns NaNs silently in CuPy
  unless asked to raise; it is asked (``cupyx.errstate(linalg="raise")``), so NumPy decides.
- Out-of-range integer indices wrap around in CuPy and raise ``IndexError`` in NumPy: index
  arrays are range-checked first.
- ``like=`` is NumPy's dispatch keyword; CuPy does not take it.
- object, string and datetime dtypes do not exist on the GPU.
- Random draws must come from NumPy's streams (a seed gives NumPy's numbers): refused.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dispatch.devices import Device
from dispatch.selector import Backend
from dispatch.targets import Target, Unavailable, Unsupported
from dispatch.targets._oracle import expected, indexing_gives_scalar

__all__ = ["CupyTarget"]

_KINDS = "biufc"

# NumPy functions CuPy has under the same name but with other semantics.
_REFUSED = {
    "unique": "NumPy 2's unique_inverse shape and NaN collapsing differ across CuPy versions",
    "take": "CuPy wraps out-of-range indices where NumPy raises",
    "put": "CuPy wraps out-of-range indices where NumPy raises",
    "choose": "CuPy wraps out-of-range choices where NumPy raises",
    "lexsort": "CuPy's lexsort takes only 2-D keys",
    "einsum_path": "a planning helper, host work",
}


class CupyTarget(Target):
    name = "cupy"
    tier = Backend.GPU
    library = "cupy"

    def __init__(self) -> None:
        try:
            import cupy
        except Exception as exc:
            raise Unavailable(f"cupy cannot be imported: {type(exc).__name__}: {exc}") from None
        try:
            count = cupy.cuda.runtime.getDeviceCount()
        except Exception as exc:  # no driver, or a driver too old for this CuPy
            raise Unavailable(f"CuPy finds no usable CUDA device: {type(exc).__name__}: {exc}") from None
        if count == 0:
            raise Unavailable("CuPy finds no CUDA device")
        self.cupy = cupy
        self.device = Device("cuda", cupy.cuda.Device().id)

    # ---- conversions ------------------------------------------------------------------------------

    def owns(self, native: Any) -> bool:
        return isinstance(native, self.cupy.ndarray)

    def dtype_of(self, native: Any) -> np.dtype:
        return native.dtype

    def _check_dtype(self, dtype: np.dtype) -> None:
        if dtype.kind not in _KINDS:
            raise Unsupported(f"dtype {dtype} does not exist on the GPU", lasting=True)

    def from_host(self, array: np.ndarray) -> Any:
        self._check_dtype(array.dtype)
        from dispatch.targets._staging import to_device_cupy

        return to_device_cupy(self.cupy, array)

    def to_host(self, native: Any) -> np.ndarray:
        from dispatch.targets._staging import to_host_cupy

        return to_host_cupy(self.cupy, native)

    def adopt(self, native: Any) -> Any:
        return self.cupy.from_dlpack(native)

    def synchronize(self) -> None:
        self.cupy.cuda.get_current_stream().synchronize()

    def assign(self, dst: Any, src: Any) -> None:
        if self.owns(src):
            pass
        elif isinstance(src, np.ndarray):
            src = self.from_host(src)
        else:
            src = self.adopt(src)
        self.cupy.copyto(dst, src, casting="unsafe")

    def view(self, native: Any, dtype: np.dtype | None) -> Any:
        return native.view() if dtype is None else native.view(dtype)

    # ---- running ops ----------------------------------------------------------------------------

    def supports(self, op: Any) -> bool:
        if op.name in _REFUSED or op.work == "random":
            return False
        if op.name in ("__getitem__", "__setitem__"):
            return True
        try:
            self._function(op)
        except Unsupported:
            return False
        return True

    def events(self) -> tuple[Any, Any] | None:
        start, end = self.cupy.cuda.Event(), self.cupy.cuda.Event()
        start.record()
        return start, end

    def run(self, op: Any, args: tuple, kwargs: dict) -> Any:
        cupy = self.cupy
        for a in _arrays(args, kwargs, cupy.ndarray):
            self._check_dtype(a.dtype)
        kwargs = {k: v for k, v in kwargs.items() if k != "like"}
        if op.name in _REFUSED:
            raise Unsupported(_REFUSED[op.name], lasting=True)
        if op.work == "random":
            raise Unsupported("random draws come from NumPy's streams (CuPy's give other numbers)", lasting=True)
        if op.name == "__getitem__":
            r = args[0][_checked_key(cupy, args[0], args[1])]
            if r.ndim == 0 and indexing_gives_scalar(args[1]):
                from dispatch._array import device_scalar

                return device_scalar(r)
            return r
        if op.name == "__setitem__":
            args[0][_checked_key(cupy, args[0], args[1])] = args[2]
            return None
        fn = self._function(op)
        want = None if op.local else expected(op.func, args, kwargs, _dtype_of)
        if want is None and not op.local and op.mutates is None:
            raise Unsupported("NumPy rejects this signature; it decides the error")
        if op.name.startswith("linalg."):
            import cupyx

            with cupyx.errstate(linalg="raise"):
                result = fn(*args, **kwargs)
        else:
            result = fn(*args, **kwargs)
        if op.name in _INDEXES_TO_SCALARS:
            return _scalar_items(result)
        return _match(cupy, result, want)

    def _function(self, op: Any) -> Any:
        fn = op.cache.get(self)  # per target object: a re-probed target resolves again
        if fn is None:
            if op.ufunc is not None:
                ufunc = getattr(self.cupy, op.ufunc.__name__, None)
                fn = ufunc if op.method == "__call__" else getattr(ufunc, op.method, None)
            else:
                fn = self.cupy
                for part in op.name.split("."):
                    fn = getattr(fn, part, None)
            op.cache[self] = fn = fn if callable(fn) else False
        if fn is False:
            raise Unsupported(f"CuPy has no {op.name}", lasting=True)
        return fn


# View ops that NumPy builds by indexing, so that their 0-d pieces are scalars (unstack of a
# vector gives NumPy scalars; CuPy gives 0-d arrays).
_INDEXES_TO_SCALARS = frozenset({"unstack"})


def _scalar_items(result: Any) -> Any:
    from dispatch._array import device_scalar

    return tuple(device_scalar(r) if r.ndim == 0 else r for r in result)


def _arrays(args: tuple, kwargs: dict, kind: type) -> list[Any]:
    found = []
    for v in (*args, *kwargs.values()):
        if isinstance(v, kind):
            found.append(v)
        elif isinstance(v, (list, tuple)):
            found.extend(x for x in v if isinstance(x, kind))
    return found


def _dtype_of(x: Any) -> np.dtype:
    return x.dtype if hasattr(x, "dtype") else np.asarray(x).dtype


def _checked_key(cupy: Any, a: Any, key: Any) -> Any:
    """``key`` with every integer index array checked against its axis, and every boolean
    one against the axes it covers, as NumPy checks (CuPy wraps out-of-range indices)."""
    keys = key if isinstance(key, tuple) else (key,)
    if any(k is None or k is Ellipsis for k in keys) and any(isinstance(k, (cupy.ndarray, list)) for k in keys):
        raise Unsupported("index arrays mixed with None or Ellipsis")
    axis = 0
    for k in keys:
        if isinstance(k, list):
            k = np.asarray(k)
        if isinstance(k, np.ndarray) and not isinstance(k, cupy.ndarray):
            raise Unsupported("a host index array into a device array")
        if isinstance(k, cupy.ndarray) and k.dtype.kind == "b":
            if tuple(k.shape) != tuple(a.shape[axis:axis + k.ndim]):
                raise Unsupported("a boolean index of another shape: NumPy raises IndexError")
            axis += k.ndim
            continue
        if isinstance(k, cupy.ndarray) and k.dtype.kind in "iu" and k.size:
            if axis >= a.ndim:
                raise Unsupported("too many indices: NumPy raises IndexError")
            lo, hi = int(k.min()), int(k.max())  # one sync: the price of NumPy's IndexError
            if lo < -a.shape[axis] or hi >= a.shape[axis]:
                raise Unsupported("an index out of range: NumPy raises IndexError")
        elif isinstance(k, cupy.ndarray) and k.dtype.kind not in "iu":
            raise Unsupported(f"index arrays of {k.dtype}")
        axis += 1
    return key


def _match(cupy: Any, result: Any, want: Any) -> Any:
    """Cast to NumPy's dtypes; results NumPy returns as scalars become device scalars."""
    if want is None:
        return result
    from dispatch._array import device_scalar

    items = list(result) if isinstance(result, (tuple, list)) else [result]
    if len(items) != len(want.dtypes):
        raise Unsupported("CuPy returned a different number of outputs than NumPy")
    for i, (item, dtype, scalar) in enumerate(zip(items, want.dtypes, want.scalars, strict=True)):
        if not isinstance(item, cupy.ndarray):
            item = cupy.asarray(item)
        if item.dtype != dtype:
            item = item.astype(dtype)
        items[i] = device_scalar(item) if scalar else item
    return want.build(items)
