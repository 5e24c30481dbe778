"""The torch targets: ``torch-cpu`` (a multi-threaded CPU engine on host memory), ``torch-cuda``
(CUDA, and ROCm builds, which report as cuda) and ``torch-mps`` (Apple GPUs).

Each NumPy op torch can run exactly as NumPy would has one line in ``_IMPLS`` or a small
function below; everything else is refused (``Unsupported``) and runs elsewhere. Result
dtypes are checked against NumPy's (``_oracle``) and cast where torch differs. Known
differences handled here, each with the reason:

- NEP 50 promotion: inputs are cast to the loop dtypes NumPy's ufunc resolves to, so
  ``int64 + float32`` computes in float64 as NumPy does, not in float32 as torch would.
- Unsigned integers wider than 8 bits: torch has only partial support; refused.
- Integer division and remainder by zero raise in torch (CPU) or are undefined (CUDA), NumPy
  gives 0 with a warning: refused for integers. Integer powers: NumPy raises on negative
  exponents; refused. Shifts past the bit width differ; refused.
- ``sign(nan)`` is 0 in torch and NaN in NumPy: fixed.
- Views: torch has no negative strides, so ``flip`` and negative-step slices (views in
  NumPy) are refused rather than returned as copies that would not see later writes.
- MPS holds neither float64 nor complex128: refused there.
- Linear algebra on an input holding NaN or infinity: NumPy decides (``targets.FINITE_INPUTS``).
- Complex division, ``cosh`` and ``arctan``: the signs of zeros and the non-finite parts differ
  from NumPy's at zeros and infinities (on CUDA); refused for complex.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dispatch.base import blas_spin, tuning
from dispatch.base.box import device_scalar
from dispatch.base.devices import HOST, Device
from dispatch.base.devices import torch_cpu_to_numpy as _torch_cpu_to_numpy
from dispatch.base.numpy_catalog import DEVICE_DRAWS, NUMPY_CATALOG
from dispatch.base.tiers import Backend
from dispatch.targets import registry
from dispatch.targets._oracle import expected, indexing_gives_scalar, unique_inverse_shape
from dispatch.targets._staging import to_device_torch, to_host_torch
from dispatch.targets.protocol import FINITE_INPUTS, Target, Unavailable, Unsupported, check_finite
from dispatch.targets.registry import host_array as _host

__all__ = ["TorchTarget", "torch_cpu", "torch_cuda", "torch_mps"]

# The dtypes torch computes exactly as NumPy does (its unsigned integers wider than 8 bits are
# partial); MPS holds neither float64 nor complex128.
_DTYPES = frozenset(np.dtype(t) for t in ("bool", "int8", "int16", "int32", "int64", "uint8", "float16", "float32",
                                          "float64", "complex64", "complex128"))
_MPS_DTYPES = _DTYPES - {np.dtype("float64"), np.dtype("complex128")}

# ufuncs whose torch counterpart differs from NumPy for some dtype kinds: name -> kinds refused.
_UFUNC_REFUSED_KINDS = {
    "floor_divide": "biu", "remainder": "biu", "mod": "biu", "fmod": "biu",
    # complex z**w, 1/z and log1p(z): zeros' signs and non-finite parts come out otherwise than
    # NumPy's, 0j**0j is NaN in torch (https://github.com/pytorch/pytorch/issues/45690 is one of them)
    "power": "biuc", "pow": "biuc", "reciprocal": "biuc", "log1p": "c",
    "left_shift": "biu", "right_shift": "biu", "bitwise_left_shift": "biu", "bitwise_right_shift": "biu",
    "sign": "c",  # NumPy 2's complex sign is z/|z|, torch.sign refuses complex
    "float_power": "c",
    # complex 1/0 is NaN in torch, (NaN, inf) in NumPy; (0-0j)/1 loses the zero's sign; CUDA's
    # complex cosh and arctan give other signed zeros than C99's at the special values
    **dict.fromkeys(["divide", "true_divide", "cosh", "arctan", "atan"], "c"),
}
# ufuncs with no exact torch counterpart.
_UFUNC_REFUSED = frozenset({"divmod", "modf", "cbrt", "spacing", "isnat", "bitwise_count", "matvec", "vecmat",
                            "vecdot", "ldexp", "frexp", "gcd", "lcm", "heaviside", "nextafter"})


class TorchTarget(Target):
    """torch on one device kind (``cpu``, ``cuda``, ``mps``)."""

    library = "torch"

    def __init__(self, kind: str) -> None:
        tuning.torch_starts()  # before torch loads, where it has not (dispatch.base.torch_env)
        try:
            import torch
        except Exception as exc:  # ImportError, or a broken CUDA install raising at import
            raise Unavailable(f"torch cannot be imported: {type(exc).__name__}: {exc}") from None
        self.torch = torch
        self.kind = kind
        if kind == "cpu":
            self.name, self.device, self.tier = "torch-cpu", HOST, Backend.SIMD
        elif kind == "cuda":
            if not torch.cuda.is_available():
                raise Unavailable("torch sees no CUDA or ROCm device")
            index = torch.cuda.current_device()
            self.name, self.device, self.tier = "torch-cuda", Device("cuda", index), Backend.GPU
        elif kind == "mps":
            mps = getattr(torch.backends, "mps", None)
            if mps is None or not mps.is_available():
                raise Unavailable("torch sees no MPS device")
            self.name, self.device, self.tier = "torch-mps", Device("mps", 0), Backend.GPU
        else:
            raise ValueError(kind)
        self.tdevice = torch.device(str(self.device) if kind != "cpu" else "cpu")
        self._to_torch = {np.dtype(k): v for k, v in _dtype_pairs(torch)}
        self._to_numpy = {v: k for k, v in self._to_torch.items()}

    # ---- conversions ---------------------------------------------------------------------------

    def owns(self, native: Any) -> bool:
        return isinstance(native, self.torch.Tensor) and native.device.type == self.kind

    def dtype_of(self, native: Any) -> np.dtype:
        try:
            return self._to_numpy[native.dtype]
        except KeyError:
            raise Unsupported(f"torch dtype {native.dtype} has no NumPy counterpart") from None

    def torch_dtype(self, dtype: Any) -> Any:
        dtype = np.dtype(dtype)
        if dtype not in (_MPS_DTYPES if self.kind == "mps" else _DTYPES):
            if dtype in _DTYPES:
                raise Unsupported(f"MPS cannot hold {dtype}")
            raise Unsupported(f"dtype {dtype} is not one torch computes exactly as NumPy does")
        return self._to_torch[dtype]

    def from_host(self, array: np.ndarray) -> Any:
        self._check_dtype(array.dtype)
        if any(s < 0 for s in array.strides) or not array.flags.writeable:
            array = np.array(array)  # torch takes no negative strides, and warns on read-only memory
        tensor = self.torch.from_numpy(array)
        if self.kind == "cpu":
            return tensor

        return to_device_torch(tensor, self.tdevice, array)

    def to_host(self, native: Any) -> np.ndarray:
        if native.device.type != "cpu":

            native = to_host_torch(native)
        return _torch_cpu_to_numpy(native)

    def adopt(self, native: Any) -> Any:
        return self.torch.from_dlpack(native)

    def synchronize(self) -> None:
        if self.kind == "cuda":
            self.torch.cuda.synchronize(self.tdevice)
        elif self.kind == "mps":
            self.torch.mps.synchronize()

    def assign(self, dst: Any, src: Any) -> None:
        if isinstance(src, np.ndarray):
            src = self.from_host(src)
        elif not self.owns(src):
            src = self.adopt(src) if _device_kind(src) == self.kind else self.from_host(_to_numpy(src))
        with self.torch.no_grad():
            dst.copy_(src.to(dst.dtype) if src.dtype != dst.dtype else src)

    def view(self, native: Any, dtype: np.dtype | None) -> Any:
        if dtype is None:
            return native.view(native.shape)
        return native.view(self.torch_dtype(dtype))

    # ---- running ops ---------------------------------------------------------------------------

    def supports(self, op: Any) -> bool:
        if op.ufunc is not None and op.method == "__call__":
            return op.name not in _UFUNC_REFUSED
        # NumPy's stream, drawn on CUDA by dispatch.random (``run`` refuses draws)
        return op.name in _IMPLS or (self.kind == "cuda" and op.name in DEVICE_DRAWS)

    def events(self) -> tuple[Any, Any] | None:
        if self.kind != "cuda":
            return None
        start, end = self.torch.cuda.Event(enable_timing=True), self.torch.cuda.Event(enable_timing=True)
        start.record()
        return start, end

    def run(self, op: Any, args: tuple, kwargs: dict) -> Any:
        if self.kind == "cpu" and blas_spin.spinning():  # NumPy's BLAS threads hold the cores
            return blas_spin.on_one_thread(self.torch, lambda: self._run(op, args, kwargs))
        return self._run(op, args, kwargs)

    def _run(self, op: Any, args: tuple, kwargs: dict) -> Any:
        for a in (*args, *kwargs.values()):
            self._check_input(a)
        impl = _IMPLS.get(op.name)
        if op.ufunc is not None and op.method == "__call__" and impl is None:  # matmul is a ufunc with an impl
            return self._ufunc(op, args, kwargs)
        if impl is None:
            raise Unsupported(f"{op.name} has no exact torch implementation here", lasting=True)
        want = None
        if not op.local:
            want = expected(op.func, args, kwargs, self._dtype_or_numpy)
            if want is None:
                raise Unsupported("NumPy rejects this signature; it decides the error")
        if op.name in FINITE_INPUTS:
            torch = self.torch
            check_finite([a for a in (*args, *kwargs.values()) if isinstance(a, torch.Tensor)],
                         lambda a: bool(torch.isfinite(a).all()))
        try:
            result = impl(self, *args, **kwargs)
        except TypeError as exc:  # a keyword or argument form this implementation does not take
            raise Unsupported(f"{op.name}: {exc}") from None
        return self._match(result, want)

    def _check_input(self, a: Any) -> None:
        if isinstance(a, self.torch.Tensor):
            self._check_dtype(self.dtype_of(a))
        elif isinstance(a, (list, tuple)):
            for v in a:
                if isinstance(v, self.torch.Tensor):
                    self._check_dtype(self.dtype_of(v))

    def _check_dtype(self, dtype: np.dtype) -> None:
        """An input dtype this target cannot compute in: every call with it is refused."""
        try:
            self.torch_dtype(dtype)
        except Unsupported as exc:
            raise Unsupported(str(exc), lasting=True) from None

    def _dtype_or_numpy(self, x: Any) -> np.dtype:
        return self.dtype_of(x) if isinstance(x, self.torch.Tensor) else np.asarray(x).dtype

    def _match(self, result: Any, want: Any) -> Any:
        """Cast to NumPy's dtypes and shape the container as NumPy's."""
        if want is None:
            return result
        items = list(result) if isinstance(result, (tuple, list)) else [result]
        if len(items) != len(want.dtypes):
            raise Unsupported("torch returned a different number of outputs than NumPy")
        for i, (item, dtype, scalar) in enumerate(zip(items, want.dtypes, want.scalars, strict=True)):
            if not isinstance(item, self.torch.Tensor):
                item = self.torch.as_tensor(item, device=self.tdevice)
            if self.dtype_of(item) != dtype:
                item = item.to(self.torch_dtype(dtype))
            items[i] = self._scalar(item) if scalar else item
        return want.build(items)

    def _scalar(self, item: Any) -> Any:
        """A 0-d result NumPy gives as a scalar: on the host make it one, on a device keep it there."""
        return _torch_cpu_to_numpy(item)[()] if self.kind == "cpu" else device_scalar(item)

    def _ufunc(self, op: Any, args: tuple, kwargs: dict) -> Any:
        name = op.name
        if kwargs.keys() - {"dtype"}:
            raise Unsupported(f"keywords {sorted(kwargs.keys() - {'dtype'})} of a ufunc")
        if name in _UFUNC_REFUSED:
            raise Unsupported(f"{name} has no exact torch counterpart", lasting=True)
        if len(args) != op.ufunc.nin:
            raise Unsupported("a ufunc called with outputs as positional arguments")
        in_types = tuple(self.dtype_of(a) if isinstance(a, self.torch.Tensor) else _scalar_type(a) for a in args)
        signature = {}
        if "dtype" in kwargs:
            signature["signature"] = (*([None] * op.ufunc.nin), np.dtype(kwargs["dtype"]))
        try:
            loop = op.ufunc.resolve_dtypes((*in_types, *([None] * op.ufunc.nout)), **signature)
        except Exception:
            raise Unsupported("NumPy has no loop for these dtypes; it decides the error") from None
        refused_kinds = _UFUNC_REFUSED_KINDS.get(name, "")
        if any(d.kind in refused_kinds for d in loop):
            raise Unsupported(f"{name} on {loop[0]} differs in torch")
        torch = self.torch
        operands = []
        for a, dtype in zip(args, loop, strict=False):
            tdtype = self.torch_dtype(dtype)
            if isinstance(a, torch.Tensor):
                operands.append(a.to(tdtype) if a.dtype != tdtype else a)
            else:
                _check_scalar_fits(a, dtype)
                # a 0-d CPU tensor: torch passes it to device kernels as a scalar, with no copy
                operands.append(torch.tensor(a, dtype=tdtype))
        result = _ufunc_function(name)(torch, *operands)
        out = loop[op.ufunc.nin]
        tout = self.torch_dtype(out)
        result = result.to(tout) if result.dtype != tout else result
        return self._scalar(result) if result.ndim == 0 else result  # NumPy's ufuncs give 0-d results as scalars


def _scalar_type(a: Any) -> Any:
    if isinstance(a, (bool, np.generic)):  # (NumPy's float64 is a float, but not a weak one)
        return np.dtype(bool) if type(a) is bool else a.dtype  # Python booleans promote as bool
    if isinstance(a, (int, float, complex)):
        return type(a)  # a weak Python scalar (NEP 50)
    raise Unsupported(f"a {type(a).__name__} operand")


def _check_scalar_fits(value: Any, dtype: np.dtype) -> None:
    if isinstance(value, int) and not isinstance(value, bool) and dtype.kind in "iu":
        info = np.iinfo(dtype)
        if not info.min <= value <= info.max:
            raise Unsupported(f"Python integer {value} out of bounds for {dtype}; NumPy raises")


def _resolve(root: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        root = getattr(root, part)
    return root


def _device_kind(native: Any) -> str:
    module = type(native).__module__
    if module.startswith("cupy"):
        return "cuda"
    return native.device.type


def _to_numpy(native: Any) -> np.ndarray:
    return _host(native)


def _dtype_pairs(torch: Any) -> list[tuple[str, Any]]:
    return [
        ("bool", torch.bool), ("int8", torch.int8), ("int16", torch.int16), ("int32", torch.int32),
        ("int64", torch.int64), ("uint8", torch.uint8), ("float16", torch.float16), ("float32", torch.float32),
        ("float64", torch.float64), ("complex64", torch.complex64), ("complex128", torch.complex128),
        *[(f"uint{b}", getattr(torch, f"uint{b}")) for b in (16, 32, 64) if hasattr(torch, f"uint{b}")],
    ]


# ---- ufuncs whose torch spelling needs a fix ------------------------------------------------------


def _sign(torch: Any, x: Any) -> Any:
    return torch.where(torch.isnan(x), x, torch.sign(x)) if x.is_floating_point() else torch.sign(x)


def _componentwise(fn: Any) -> Any:
    """Complex ``a ± b`` computed on the real and imaginary parts apart: torch's complex add
    multiplies by ``alpha = 1+0j``, which turns an infinite part into NaN in the other part.
    https://github.com/pytorch/pytorch/issues/82510"""

    def apply(torch: Any, a: Any, b: Any) -> Any:
        if not a.is_complex():
            return fn(a, b)
        return torch.view_as_complex(fn(torch.view_as_real(a), torch.view_as_real(b)).contiguous())

    return apply


def _negative(torch: Any, x: Any) -> Any:
    """``-z`` flips the sign of both parts, zeros included (torch's complex neg leaves +0j)."""
    if x.is_complex():
        return torch.view_as_complex(torch.neg(torch.view_as_real(x)).contiguous())
    return torch.neg(x)


def _remainder(torch: Any, a: Any, b: Any) -> Any:
    """A zero remainder takes the divisor's sign in NumPy; torch gives it the dividend's.
    https://github.com/pytorch/pytorch/issues/193755"""
    r = torch.remainder(a, b)
    if not r.is_floating_point():
        return r
    return torch.where(r == 0, torch.copysign(torch.zeros_like(r), b), r)


def _ufunc_function(name: str) -> Any:
    """``f(torch, *operands)`` for a ufunc: a fix below, else the catalog's torch counterpart."""
    fn = _UFUNC_FIXES.get(name)
    if fn is None:
        torch_name = NUMPY_CATALOG[name].counterparts.get("torch")
        if torch_name is None:
            raise Unsupported(f"{name} has no torch counterpart", lasting=True)
        fn = _UFUNC_FIXES[name] = lambda torch, *xs: _resolve(torch, torch_name)(*xs)
    return fn


_UFUNC_FIXES = {
    "sign": _sign,
    "add": _componentwise(lambda a, b: a + b),
    "subtract": _componentwise(lambda a, b: a - b),
    "negative": _negative,
    "remainder": _remainder,
    "mod": _remainder,
    "conjugate": lambda torch, x: torch.conj_physical(x) if x.is_complex() else x.clone(),
    "conj": lambda torch, x: torch.conj_physical(x) if x.is_complex() else x.clone(),
    "positive": lambda torch, x: x.clone(),
    "invert": lambda torch, x: torch.logical_not(x) if x.dtype == torch.bool else torch.bitwise_not(x),
    "bitwise_not": lambda torch, x: torch.logical_not(x) if x.dtype == torch.bool else torch.bitwise_not(x),
    "bitwise_invert": lambda torch, x: torch.logical_not(x) if x.dtype == torch.bool else torch.bitwise_not(x),
    "absolute": lambda torch, x: torch.abs(x),
    "fabs": lambda torch, x: torch.abs(x),
}


# ---- functions --------------------------------------------------------------------------------------
# Each takes (target, *NumPy's arguments, **NumPy's keywords) and returns torch tensors; keywords it
# does not take raise TypeError, which refuses the call.


def _axis(axis: Any) -> Any:
    return tuple(axis) if isinstance(axis, list) else axis


def _as_float(t: Any, x: Any) -> Any:
    """Integers and booleans computed in float64, as NumPy's mean, std and linalg do."""
    return x if (x.is_floating_point() or x.is_complex()) else x.to(t.torch.float64)


def _no_where(where: Any) -> None:
    if where is not True:
        raise Unsupported("where= in a reduction")


def _no_uint_reduction(t: Any, x: Any) -> None:
    if x.dtype == t.torch.uint8:
        raise Unsupported("NumPy reduces unsigned integers to uint64, which torch cannot hold", lasting=True)


def _sum(t, a, axis=None, dtype=None, keepdims=False, initial=None, where=True):
    _no_where(where)
    if initial is not None:
        raise Unsupported("initial= in sum")
    _no_uint_reduction(t, a)
    kw = {} if dtype is None else {"dtype": t.torch_dtype(dtype)}
    if axis is None:
        r = t.torch.sum(a, **kw)
        return r.reshape((1,) * a.ndim) if keepdims else r
    return t.torch.sum(a, dim=_axis(axis), keepdim=keepdims, **kw)


def _prod(t, a, axis=None, dtype=None, keepdims=False, initial=None, where=True):
    _no_where(where)
    if initial is not None or isinstance(axis, (tuple, list)):
        raise Unsupported("initial= or several axes in prod")
    _no_uint_reduction(t, a)
    kw = {} if dtype is None else {"dtype": t.torch_dtype(dtype)}
    if axis is None:
        r = t.torch.prod(a, **kw)
        return r.reshape((1,) * a.ndim) if keepdims else r
    return t.torch.prod(a, dim=axis, keepdim=keepdims, **kw)


def _mean(t, a, axis=None, dtype=None, keepdims=False, *, where=True):
    _no_where(where)
    if a.numel() == 0:
        raise Unsupported("the mean of nothing: NumPy warns and returns NaN")
    if a.dtype == t.torch.float16 and dtype is None:
        # NumPy accumulates float16 in float32 and returns float16.
        return _mean(t, a.to(t.torch.float32), axis, None, keepdims).to(t.torch.float16)
    x = a.to(t.torch_dtype(dtype)) if dtype is not None else _as_float(t, a)
    if axis is None:
        r = t.torch.mean(x)
        return r.reshape((1,) * a.ndim) if keepdims else r
    return t.torch.mean(x, dim=_axis(axis), keepdim=keepdims)


def _var_std(name: str):
    def impl(t, a, axis=None, dtype=None, ddof=0, keepdims=False, *, where=True, mean=None, correction=None):
        _no_where(where)
        if mean is not None:
            raise Unsupported("mean= in var/std")
        if a.numel() == 0:
            raise Unsupported("the variance of nothing: NumPy warns and returns NaN")
        if correction is not None:
            ddof = correction
        if a.dtype == t.torch.float16 and dtype is None:
            raise Unsupported("float16 var/std: NumPy squares the deviations in float16, where they overflow")
        x = a.to(t.torch_dtype(dtype)) if dtype is not None else _as_float(t, a)
        n = a.numel() if axis is None else math.prod(a.shape[i] for i in np.atleast_1d(axis))
        if n - ddof <= 0:
            raise Unsupported("ddof >= number of elements: NumPy warns and returns inf/NaN")
        fn = getattr(t.torch, name)
        return fn(x, dim=None if axis is None else _axis(axis), correction=ddof, keepdim=keepdims)

    return impl


def _minmax(name: str):
    def impl(t, a, axis=None, out=None, keepdims=False, initial=None, where=True):
        _no_where(where)
        if initial is not None:
            raise Unsupported("initial= in max/min")
        if a.numel() == 0:
            raise Unsupported("a zero-size reduction: NumPy raises")
        fn = getattr(t.torch, name)
        if a.is_complex():
            raise Unsupported("complex max/min order lexicographically in NumPy")
        if axis is None:
            r = fn(a)
            return r.reshape((1,) * a.ndim) if keepdims else r
        return fn(a, dim=_axis(axis), keepdim=keepdims)

    return impl


def _argminmax(name: str):
    def impl(t, a, axis=None, out=None, *, keepdims=False):
        if a.numel() == 0 or a.is_complex() or a.dtype == t.torch.bool:
            raise Unsupported("empty, complex or boolean arg-reductions")
        fn = getattr(t.torch, name)
        if axis is None:
            r = fn(a.reshape(-1))
            return r.reshape((1,) * a.ndim) if keepdims else r
        return fn(a, dim=axis, keepdim=keepdims)

    return impl


def _all_any(name: str):
    def impl(t, a, axis=None, out=None, keepdims=False, *, where=True):
        _no_where(where)
        fn = getattr(t.torch, name)
        x = a if a.dtype == t.torch.bool else a != 0
        if axis is None:
            r = fn(x)
            return r.reshape((1,) * a.ndim) if keepdims else r
        return fn(x, dim=_axis(axis), keepdim=keepdims)

    return impl


def _cumulative(name: str):
    def impl(t, a, axis=None, dtype=None, out=None):
        _no_uint_reduction(t, a)
        kw = {} if dtype is None else {"dtype": t.torch_dtype(dtype)}
        if axis is None:
            a, axis = a.reshape(-1), 0
        if a.dtype == t.torch.bool and dtype is None:
            a = a.to(t.torch.int64)
        if name == "cumprod" and a.is_complex():
            # torch starts the product at 1+0j, which turns an infinite part into NaN in the
            # first element; NumPy copies it. https://github.com/pytorch/pytorch/issues/36469
            raise Unsupported("complex cumprod: torch multiplies the first element by 1+0j")
        return getattr(t.torch, name)(a, dim=axis, **kw)

    return impl


def _matmul_operands(t, a, b):
    dtype = np.result_type(t.dtype_of(a), t.dtype_of(b))
    tdtype = t.torch_dtype(dtype)
    if dtype.kind == "b" or (dtype.kind in "iu" and t.kind != "cpu"):
        raise Unsupported("boolean matrix products, or integer ones on the GPU, in torch")
    return a.to(tdtype), b.to(tdtype)


def _matmul(t, a, b):
    if a.ndim == 0 or b.ndim == 0:
        raise Unsupported("matmul of a scalar: NumPy raises")
    a, b = _matmul_operands(t, a, b)
    return t.torch.matmul(a, b)


def _dot(t, a, b, out=None):
    if a.ndim > 2 or b.ndim > 2:
        raise Unsupported("dot of arrays with more than two dimensions")
    a, b = _matmul_operands(t, a, b)
    if a.ndim == 0 or b.ndim == 0:
        return a * b
    return t.torch.matmul(a, b)


def _vdot(t, a, b):
    a, b = _matmul_operands(t, a.reshape(-1), b.reshape(-1))
    return t.torch.vdot(a, b)


def _inner(t, a, b):
    a, b = _matmul_operands(t, a, b)
    return t.torch.inner(a, b)


def _outer(t, a, b, out=None):
    a, b = _matmul_operands(t, a.reshape(-1), b.reshape(-1))
    return t.torch.outer(a, b)


def _tensordot(t, a, b, axes=2):
    a, b = _matmul_operands(t, a, b)
    return t.torch.tensordot(a, b, dims=axes)


def _einsum(t, subscripts, *operands, out=None, dtype=None, order="K", casting="safe", optimize=False):
    if not isinstance(subscripts, str) or dtype is not None:
        raise Unsupported("einsum in the interleaved form or with dtype=")
    dtypes = [t.dtype_of(o) for o in operands]
    common = t.torch_dtype(np.result_type(*dtypes))
    if np.result_type(*dtypes).kind in "biu":
        raise Unsupported("integer einsum")
    return t.torch.einsum(subscripts, *[o.to(common) for o in operands])


def _linalg_input(t, a):
    if a.dtype == t.torch.float16:
        raise Unsupported("NumPy's linalg refuses float16")
    return _as_float(t, a)


def _svd(t, a, full_matrices=True, compute_uv=True, hermitian=False):
    if hermitian:
        raise Unsupported("hermitian=True")
    a = _linalg_input(t, a)
    if not compute_uv:
        return t.torch.linalg.svdvals(a)
    return tuple(t.torch.linalg.svd(a, full_matrices=full_matrices))  # NumPy's SVDResult is made by _match


def _solve(t, a, b):
    if b.ndim > 1 and tuple(b.shape) == tuple(a.shape[:-1]):
        # torch reads this b as a stack of vectors; NumPy 2 reads any b of more than one
        # dimension as a stack of matrices.
        raise Unsupported("b shaped like a stack of vectors: NumPy reads it as matrices")
    a, b = _linalg_input(t, a), _linalg_input(t, b)
    dtype = t.torch_dtype(np.result_type(t.dtype_of(a), t.dtype_of(b)))
    return t.torch.linalg.solve(a.to(dtype), b.to(dtype))


def _qr(t, a, mode="reduced"):
    if mode not in ("reduced", "complete", "r"):
        raise Unsupported(f"qr mode {mode!r}")
    q, r = t.torch.linalg.qr(_linalg_input(t, a), mode=mode)
    return r if mode == "r" else (q, r)


def _eigh(t, a, UPLO="L"):
    return t.torch.linalg.eigh(_linalg_input(t, a), UPLO=UPLO)


def _norm(t, x, ord=None, axis=None, keepdims=False):
    x = _linalg_input(t, x)
    if isinstance(ord, str) and ord not in ("fro", "nuc"):
        raise Unsupported(f"norm ord={ord!r}")
    if axis is None and ord is not None and x.ndim > 2:
        raise Unsupported("ord= with no axis on more than two dimensions: NumPy raises")
    if axis is None and ord is None:
        ndim = x.ndim  # (NumPy keeps every dimension of the input, each of length 1)
        r = t.torch.linalg.vector_norm(x.reshape(-1), dim=0)
        return r.reshape((1,) * ndim) if keepdims else r
    return t.torch.linalg.norm(x, ord=ord, dim=_axis(axis), keepdim=keepdims)


def _fft(name: str, sized: str):
    def impl(t, a, n=None, axis=-1, norm=None, out=None):
        if out is not None:
            raise Unsupported("out= in fft")
        x = a if (a.is_floating_point() or a.is_complex()) else a.to(t.torch.float64)
        if x.dtype == t.torch.float16:
            raise Unsupported("float16 FFT: NumPy computes in float32")
        fn = _resolve(t.torch.fft, name)
        kw = {sized: n} if n is not None else {}
        return fn(x, dim=axis, norm=norm, **kw)

    def impl_n(t, a, s=None, axes=None, norm=None, out=None):
        if out is not None:
            raise Unsupported("out= in fft")
        x = a if (a.is_floating_point() or a.is_complex()) else a.to(t.torch.float64)
        if x.dtype == t.torch.float16:
            raise Unsupported("float16 FFT: NumPy computes in float32")
        if s is not None and axes is None:
            raise Unsupported("s= without axes=")
        fn = _resolve(t.torch.fft, name)
        kw = {"s": tuple(s)} if s is not None else {}
        if axes is not None:
            kw["dim"] = tuple(axes)
        elif name.endswith("2"):
            kw["dim"] = (-2, -1)
        return fn(x, norm=norm, **kw)

    return impl_n if name.endswith(("2", "n")) else impl


def _sort(t, a, axis=-1, kind=None, order=None, *, stable=None):
    if order is not None or a.is_complex() or a.ndim == 0:
        raise Unsupported("order=, a 0-d array or complex sort (NumPy orders complex lexicographically)")
    if axis is None:
        a, axis = a.reshape(-1), 0
    return t.torch.sort(a, dim=axis, stable=True).values


def _argsort(t, a, axis=-1, kind=None, order=None, *, stable=None):
    if order is not None or a.is_complex() or a.ndim == 0:
        raise Unsupported("order=, a 0-d array (NumPy gives shape (1,)) or complex argsort")
    if axis is None:
        a, axis = a.reshape(-1), 0
    return t.torch.argsort(a, dim=axis, stable=True)


def _where(t, condition, x=None, y=None):
    if x is None and y is None:
        raise Unsupported("where with one argument is nonzero")
    dtype = np.result_type(*(t.dtype_of(v) if isinstance(v, t.torch.Tensor) else v for v in (x, y)))
    tdtype = t.torch_dtype(dtype)
    x = x.to(tdtype) if isinstance(x, t.torch.Tensor) else t.torch.tensor(x, dtype=tdtype, device=t.tdevice)
    y = y.to(tdtype) if isinstance(y, t.torch.Tensor) else t.torch.tensor(y, dtype=tdtype, device=t.tdevice)
    cond = condition if condition.dtype == t.torch.bool else condition != 0
    return t.torch.where(cond, x, y)


def _clip(t, a, a_min=None, a_max=None, out=None, *, min=None, max=None, **kwargs):
    if kwargs:
        raise Unsupported("ufunc keywords in clip")
    lo = a_min if a_min is not None else min
    hi = a_max if a_max is not None else max
    if a.dtype == t.torch.bool or any(isinstance(v, t.torch.Tensor) for v in (lo, hi)):
        raise Unsupported("clip of booleans or with array bounds")
    dtype = np.result_type(t.dtype_of(a), *(v for v in (lo, hi) if v is not None))
    if dtype != t.dtype_of(a):
        raise Unsupported("clip bounds that change the dtype")
    if dtype.kind in "iu":  # NumPy compares Python integers by value; torch would wrap them into the dtype
        info = np.iinfo(dtype)
        lo = None if lo is None else min(max(lo, info.min), info.max)
        hi = None if hi is None else min(max(hi, info.min), info.max)
    return t.torch.clamp(a, lo, hi)


def _concatenate(t, arrays, axis=0, out=None, *, dtype=None, casting="same_kind"):
    arrays = list(arrays)
    if not all(isinstance(a, t.torch.Tensor) for a in arrays) or not arrays:
        raise Unsupported("concatenate of non-arrays")
    if any(a.ndim == 0 for a in arrays):
        raise Unsupported("zero-dimensional arrays cannot be concatenated: NumPy raises")
    common = dtype if dtype is not None else np.result_type(*(t.dtype_of(a) for a in arrays))
    tdtype = t.torch_dtype(common)
    if axis is None:
        arrays, axis = [a.reshape(-1) for a in arrays], 0
    return t.torch.cat([a.to(tdtype) for a in arrays], dim=axis)


def _stack(t, arrays, axis=0, out=None, *, dtype=None, casting="same_kind"):
    arrays = list(arrays)
    if not all(isinstance(a, t.torch.Tensor) for a in arrays) or not arrays:
        raise Unsupported("stack of non-arrays")
    common = dtype if dtype is not None else np.result_type(*(t.dtype_of(a) for a in arrays))
    tdtype = t.torch_dtype(common)
    return t.torch.stack([a.to(tdtype) for a in arrays], dim=axis)


def _reshape(t, a, shape=None, order="C", *, newshape=None, copy=None):
    if order != "C" or copy is not None:
        raise Unsupported("order= or copy= in reshape")
    shape = shape if shape is not None else newshape
    return a.reshape(tuple(shape) if isinstance(shape, (list, tuple)) else (shape,))


def _transpose(t, a, axes=None):
    if axes is None:
        axes = tuple(range(a.ndim))[::-1]
    return a.permute(*axes)


def _squeeze(t, a, axis=None):
    if axis is None:
        return a.squeeze() if 1 in a.shape else a  # nothing to squeeze: NumPy hands the array back
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    for ax in axes:
        if a.shape[ax] != 1:
            raise Unsupported("squeezing an axis whose length is not one: NumPy raises")
    return a.squeeze(tuple(ax % a.ndim for ax in axes))


def _expand_dims(t, a, axis):
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    ndim = a.ndim + len(axes)
    if any(not -ndim <= ax < ndim for ax in axes) or len({ax % ndim for ax in axes}) != len(axes):
        raise Unsupported("an axis out of range or repeated: NumPy raises")
    axes = sorted(ax % ndim for ax in axes)
    out = a
    for ax in axes:
        out = out.unsqueeze(ax)
    return out


def _index_key(t, a, key):
    """A key torch reads as NumPy does, or ``Unsupported``.

    Basic keys (ints, slices with positive steps, None, Ellipsis) are the same in both. One
    integer or boolean index array is allowed, alone: on a GPU an out-of-range index would be a
    device-side assert, so its range is checked first, as NumPy checks it.
    """
    if isinstance(key, list):
        key = np.asarray(key)
    if isinstance(key, np.ndarray):
        if key.dtype.kind not in "bi":
            raise Unsupported(f"index arrays of {key.dtype}")
        key = t.from_host(key)
    keys = key if isinstance(key, tuple) else (key,)
    for k in keys:
        if isinstance(k, slice) and k.step is not None and k.step < 0:
            raise Unsupported("negative steps (views in NumPy; torch has no negative strides)")
        if isinstance(k, (list, np.ndarray)) or (isinstance(k, t.torch.Tensor) and isinstance(key, tuple)):
            raise Unsupported("index arrays inside a tuple key")
        if isinstance(k, np.generic) and k.dtype.kind in "iu":
            raise Unsupported("NumPy integer scalars as keys")
    if isinstance(key, t.torch.Tensor):
        if key.dtype == t.torch.bool:
            if tuple(key.shape) != tuple(a.shape[: key.ndim]):
                raise Unsupported("a boolean index of another shape: NumPy raises IndexError")
        elif key.dtype in (t.torch.int64, t.torch.int32):
            if a.ndim == 0:
                raise Unsupported("an integer index into a 0-d array")
            if key.numel():
                lo, hi = t.torch.stack(t.torch.aminmax(key)).tolist()  # one read back: one sync
                if lo < -a.shape[0] or hi >= a.shape[0]:
                    raise Unsupported("an index out of range: NumPy raises IndexError")
        else:
            raise Unsupported(f"index arrays of {key.dtype}")
    return key


def _getitem(t, a, key):
    r = a[_index_key(t, a, key)]
    return t._scalar(r) if r.ndim == 0 and indexing_gives_scalar(key) else r


def _setitem(t, a, key, value):
    key = _index_key(t, a, key)
    if isinstance(key, t.torch.Tensor) and key.dtype != t.torch.bool:
        raise Unsupported("integer-array assignment (NumPy's order for repeated indices)")
    into = t.dtype_of(a)
    source = t.dtype_of(value) if isinstance(value, t.torch.Tensor) else np.asarray(value).dtype
    if (into.kind in "biu" and source.kind in "fc") or (into.kind != "c" and source.kind == "c"):
        raise Unsupported(f"assigning {source} into {into} (NaN, inf and imaginary parts differ)")
    if isinstance(value, t.torch.Tensor):
        value = value.to(a.dtype)
    elif isinstance(value, (int, float, complex, bool)):
        _check_scalar_fits(value, into)
    else:
        raise Unsupported(f"assigning a {type(value).__name__}")
    with t.torch.no_grad():
        a[key] = value


def _ravel(t, a, order="C"):
    if order != "C":
        raise Unsupported(f"ravel order={order!r}")
    return a.reshape(-1)


def _astype(t, x, dtype, /, *, copy=True, device=None):
    if device is not None:
        raise Unsupported("device= in astype")
    tdtype = t.torch_dtype(dtype)
    if x.is_complex() and not np.dtype(dtype).kind == "c":
        raise Unsupported("complex to real casts (NumPy warns and drops the imaginary part)")
    if x.is_floating_point() and np.dtype(dtype).kind in "iub":
        raise Unsupported("float to integer casts of NaN and inf differ")
    return x.to(tdtype, copy=copy)


def _copy(t, a, order="K", subok=False):
    if order == "C":
        return a.clone(memory_format=t.torch.contiguous_format)
    if order != "K":
        raise Unsupported(f"copy in order {order!r}: torch keeps no Fortran order")
    return a.clone()  # (strides kept, as order "K" keeps them)


def _unique(t, ar, return_index=False, return_inverse=False, return_counts=False, axis=None, *, equal_nan=True,
            sorted=True):
    if not _sortable_exactly(t, ar) or ar.numel() == 0:
        raise Unsupported("unique of floats, complex numbers or nothing (NumPy's NaN and signed-zero rules), or of "
                          "unsigned integers torch cannot sort")
    if axis is not None or not sorted:
        raise Unsupported("unique along an axis, or unsorted (NumPy's hash order)")
    flat = ar.reshape(-1)
    values, inverse, counts = t.torch.unique(flat, sorted=True, return_inverse=True, return_counts=True)
    out = [values]
    if return_index:  # each value's first position, as NumPy's stable sort finds it
        first = t.torch.full_like(values, flat.numel(), dtype=t.torch.int64)
        positions = t.torch.arange(flat.numel(), device=flat.device)
        out.append(first.scatter_reduce_(0, inverse, positions, "amin"))
    if return_inverse:
        out.append(inverse.reshape(unique_inverse_shape(tuple(ar.shape))))
    if return_counts:
        out.append(counts)
    return tuple(out) if len(out) > 1 else values


def _lexsort(t, keys, axis=-1):
    """Stable sorts key by key, the last key sorted last (the primary one): torch has no lexsort."""
    keys = list(keys) if isinstance(keys, (list, tuple)) or getattr(keys, "ndim", 0) >= 2 else []
    if not keys or not all(isinstance(k, t.torch.Tensor) and _sortable_exactly(t, k) for k in keys):
        raise Unsupported("lexsort of keys other than arrays of integers or booleans")
    if keys[0].ndim == 0 or any(k.shape != keys[0].shape for k in keys):
        raise Unsupported("lexsort of 0-d keys or keys of unequal shapes: NumPy decides")
    order = t.torch.argsort(keys[0], dim=axis, stable=True)
    for key in keys[1:]:
        order = order.gather(axis, t.torch.argsort(key.gather(axis, order), dim=axis, stable=True))
    return order


def _sortable_exactly(t, a) -> bool:
    """Integers and booleans sort the same everywhere; torch sorts no unsigned integer wider than a byte."""
    return not (a.is_floating_point() or a.is_complex()) and a.dtype not in (
        t.torch.uint16, t.torch.uint32, t.torch.uint64)


_IMPLS: dict[str, Any] = {
    # reductions
    "sum": _sum, "prod": _prod, "mean": _mean,
    "std": _var_std("std"), "var": _var_std("var"),
    "max": _minmax("amax"), "amax": _minmax("amax"), "min": _minmax("amin"), "amin": _minmax("amin"),
    "argmax": _argminmax("argmax"), "argmin": _argminmax("argmin"),
    "all": _all_any("all"), "any": _all_any("any"),
    "cumsum": _cumulative("cumsum"), "cumprod": _cumulative("cumprod"),
    # products
    "matmul": _matmul, "dot": _dot, "vdot": _vdot, "inner": _inner, "outer": _outer,
    "tensordot": _tensordot, "einsum": _einsum,
    # linalg
    "linalg.svd": _svd, "linalg.solve": _solve, "linalg.qr": _qr, "linalg.eigh": _eigh,
    "linalg.inv": lambda t, a: t.torch.linalg.inv(_linalg_input(t, a)),
    "linalg.det": lambda t, a: t.torch.linalg.det(_linalg_input(t, a)),
    "linalg.slogdet": lambda t, a: tuple(t.torch.linalg.slogdet(_linalg_input(t, a))),
    "linalg.cholesky": lambda t, a, upper=False: t.torch.linalg.cholesky(_linalg_input(t, a), upper=upper),
    "linalg.eigvalsh": lambda t, a, UPLO="L": t.torch.linalg.eigvalsh(_linalg_input(t, a), UPLO=UPLO),
    "linalg.svdvals": lambda t, x: t.torch.linalg.svdvals(_linalg_input(t, x)),
    "linalg.matrix_power": lambda t, a, n: t.torch.linalg.matrix_power(_linalg_input(t, a), n),
    "linalg.norm": _norm,
    # fft
    **{f"fft.{n}": _fft(n, "n") for n in ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft")},
    **{f"fft.{n}": _fft(n, "s") for n in ("fft2", "ifft2", "fftn", "ifftn", "rfft2", "irfft2", "rfftn", "irfftn")},
    # sorting and selection
    "sort": _sort, "argsort": _argsort, "unique": _unique, "lexsort": _lexsort,
    # element-wise functions that are not ufuncs
    "where": _where, "clip": _clip,
    # shapes, copies, indexing
    "concatenate": _concatenate, "concat": _concatenate, "stack": _stack,
    "reshape": _reshape, "transpose": _transpose, "permute_dims": _transpose,
    "swapaxes": lambda t, a, axis1, axis2: a.transpose(axis1, axis2),
    "moveaxis": lambda t, a, source, destination: t.torch.movedim(a, source, destination),
    "squeeze": _squeeze, "expand_dims": _expand_dims,
    "ravel": _ravel,
    "diagonal": lambda t, a, offset=0, axis1=0, axis2=1: t.torch.diagonal(a, offset, axis1, axis2),
    "real": lambda t, val: t.torch.real(val) if val.is_complex() else val,
    "imag": lambda t, val: t.torch.imag(val) if val.is_complex() else t.torch.zeros_like(val),
    "astype": _astype, "copy": _copy,
    "__getitem__": _getitem, "__setitem__": _setitem,
}


def torch_cpu() -> TorchTarget:
    return TorchTarget("cpu")


def torch_cuda() -> TorchTarget:
    return TorchTarget("cuda")


def torch_mps() -> TorchTarget:
    return TorchTarget("mps")


for _name, _make, _dtypes in (("torch-cpu", torch_cpu, _DTYPES), ("torch-cuda", torch_cuda, _DTYPES),
                              ("torch-mps", torch_mps, _MPS_DTYPES)):
    registry.complete(_name, _make, dtypes=_dtypes, counterparts=_IMPLS)
