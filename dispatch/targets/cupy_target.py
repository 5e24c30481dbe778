"""The ``cupy`` target: CuPy on a CUDA (or ROCm) device.

CuPy mirrors NumPy's API, so an op runs as ``cupy.<same name>``; this module holds only the
refusals and fixes where CuPy differs from NumPy:

- Linear algebra on a singular or non-positive-definite matrix returns NaNs silently in CuPy
  unless asked to raise; it is asked (``cupyx.errstate(linalg="raise")``), so NumPy decides.
  An input holding NaN or infinity is left to NumPy too (``targets.FINITE_INPUTS``).
- Out-of-range integer indices wrap around in CuPy and raise ``IndexError`` in NumPy: index
  arrays are range-checked first.
- ``like=`` is NumPy's dispatch keyword; CuPy does not take it.
- object, string and datetime dtypes do not exist on the GPU.
- Random draws must come from NumPy's streams (a seed gives NumPy's numbers): refused.
- Where a CuPy kernel gives other values than NumPy's loop (the sign of a zero, NaN and
  infinities, rounding), the op is computed with NumPy's own algorithm on CuPy's
  element-wise kernels (``_cupy_fixes``) or refused for the dtypes it differs on; each
  table entry below says why.

CuPy compiles its kernels to flush float32 subnormals to zero; NumPy keeps them. That
difference is not handled here: it would mean refusing float32 and complex64 altogether.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dispatch.base.box import device_scalar
from dispatch.base.devices import Device, device_of
from dispatch.base.numpy_catalog import DEVICE_DRAWS
from dispatch.base.tiers import Backend
from dispatch.targets import _cupy_fixes as fixes
from dispatch.targets import registry
from dispatch.targets._oracle import expected, indexing_gives_scalar, signature, unique_inverse_shape
from dispatch.targets._staging import to_device_cupy, to_host_cupy
from dispatch.targets.protocol import (
    FINITE_INPUTS,
    Target,
    Unavailable,
    Unsupported,
    check_finite,
    dtypes_of_kinds,
)
from dispatch.targets.registry import host_array as _host

__all__ = ["CupyTarget"]

_KINDS = "biufc"

# NumPy functions CuPy has under the same name but with other semantics.
_REFUSED = {
    "take": "CuPy wraps out-of-range indices where NumPy raises",
    "put": "CuPy wraps out-of-range indices where NumPy raises",
    "choose": "CuPy wraps out-of-range choices where NumPy raises",
    "einsum_path": "a planning helper, host work",
    "unique_values": "NumPy gives the unique values in its hash table's order, CuPy sorted",
    "i0": "CuPy computes small integer inputs in float16 and gives inf where NumPy gives NaN",
    "kaiser": "CuPy's Bessel function (i0) is computed in single precision",
    **dict.fromkeys(["blackman", "hamming", "hanning"], "CuPy computes the window's cosines in single precision"),
    **dict.fromkeys(["percentile", "quantile"], "CuPy interpolates otherwise than NumPy's lerp (rounding), and "
                    "a NaN in the data does not make the result NaN"),
}

# Functions refused for some input dtypes: name -> (the dtypes' kinds or names, why).
_REFUSED_DTYPES = {
    **dict.fromkeys(["convolve", "polymul"], ("fc", "CuPy convolves floats through FFTs: rounding leaves tiny "
                                              "non-zeros where NumPy's direct sums give 0, and one NaN or inf "
                                              "spreads to every output")),
    "vander": ("c", "CuPy raises complex infinities to powers otherwise than NumPy's running products"),
    **dict.fromkeys(["nansum", "nanprod"], ("c", "CuPy replaces each NaN part of a complex number, NumPy the "
                                                 "whole number")),
    **dict.fromkeys(["setdiff1d", "setxor1d", "union1d"], ("c", "CuPy orders and collapses complex NaNs "
                                                                "otherwise than NumPy's unique")),
    "histogram": ((np.dtype("int8"),), "CuPy's CUB histogram reads int8 samples as unsigned bytes: negative "
                                        "values are lost"),
    "polyval": ((np.dtype("float16"),), "CuPy evaluates float16 polynomials otherwise than NumPy's Horner steps"),
}

# Ufuncs whose CuPy kernel differs from NumPy's loop for some loop dtypes: NumPy name (the
# ufunc's __name__: mod is remainder, pow is power, true_divide is divide) -> (the loop's
# input kinds or dtypes, why).
_UFUNC_REFUSED = {
    "power": ("biuc", "integer powers: NumPy raises on negative exponents, CuPy gives 0; complex powers of "
                      "infinities and zeros differ"),
    "float_power": ("c", "CuPy computes complex64 float_power in single precision, NumPy in complex128; complex "
                         "powers of infinities differ"),
    "reciprocal": ("biu", "NumPy's integer reciprocal of 0 is the minimum integer (the CPU's division), CuPy's 0"),
    "sign": ("c", "CuPy's complex sign of an infinity is NaN, NumPy's is the infinity's direction"),
    **dict.fromkeys(["log", "log2", "log10", "log1p", "exp2", "expm1"],
                    ("c", "CuPy's complex function does not follow C99's rules at infinities and signed zeros, "
                          "NumPy's does")),
    "nextafter": ((np.dtype("float32"),), "CuPy flushes float32 subnormals to zero: nextafter(0, 1) is the "
                                          "smallest normal, not the smallest subnormal"),
    **dict.fromkeys(["add", "subtract", "multiply", "divide"],
                    ((np.dtype("float16"),), "CuPy's float16 arithmetic loses the sign of zeros and infinities "
                                             "(-0.0 + -0.0 is 0.0, 1 / -0.0 is inf)")),
}

# Ufuncs computed with NumPy's algorithm for some loop kinds: name -> (kinds, the function of
# the operands cast to the loop's dtypes).
_UFUNC_FIXED = {
    "remainder": ("f", lambda xp, a, b: fixes.divmod_(xp, a, b)[1]),
    "floor_divide": ("f", lambda xp, a, b: fixes.divmod_(xp, a, b)[0]),
    "divmod": ("f", fixes.divmod_),
    "divide": ("c", fixes.complex_divide),
    "reciprocal": ("c", fixes.complex_reciprocal),
    **{n: ("c", lambda xp, a, b, n=n: fixes.complex_compare(xp, n, a, b))
       for n in ("greater", "greater_equal", "less", "less_equal")},
    **{n: ("c", lambda xp, a, b, n=n: fixes.complex_extreme(xp, n, a, b))
       for n in ("maximum", "minimum", "fmax", "fmin")},
}

class CupyTarget(Target):
    """CuPy on the current CUDA device: ``cupy.<the op's name>``, with the refusals and fixes above."""

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
        self._plans: dict[tuple, tuple[Any, Any]] = {}  # (op, signature) -> (fix, NumPy's result): see _plan

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

        return to_device_cupy(self.cupy, array)

    def to_host(self, native: Any) -> np.ndarray:
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
        elif device_of(src) == self.device:
            src = self.adopt(src)
        else:  # a host tensor (torch-cpu's result written into a device out=), or another device's
            src = self.from_host(_host(src))
        self.cupy.copyto(dst, src, casting="unsafe")

    def view(self, native: Any, dtype: np.dtype | None) -> Any:
        return native.view() if dtype is None else native.view(dtype)

    # ---- running ops ----------------------------------------------------------------------------

    def supports(self, op: Any) -> bool:
        if op.name in _REFUSED or op.work == "random":
            return op.name in DEVICE_DRAWS  # NumPy's stream, drawn by dispatch.random (``run`` refuses draws)
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
        if "like" in kwargs:
            kwargs = {k: v for k, v in kwargs.items() if k != "like"}
        if op.name in _REFUSED:
            raise Unsupported(_REFUSED[op.name], lasting=True)
        if op.work == "random":
            raise Unsupported("random draws come from NumPy's streams (CuPy's give other numbers)", lasting=True)
        if op.name == "__getitem__":
            r = args[0][_checked_key(cupy, args[0], args[1])]
            if r.ndim == 0 and indexing_gives_scalar(args[1]):
                return device_scalar(r)
            return r
        if op.name == "__setitem__":
            if _float_to_integer(_value_dtype(cupy, args[2]), args[0].dtype):
                raise Unsupported(_FLOAT_TO_INTEGER)
            args[0][_checked_key(cupy, args[0], args[1])] = args[2]
            return None
        fn = self._function(op)
        fix, want = self._plan(op, args, kwargs)
        if op.name in FINITE_INPUTS:
            check_finite(_arrays(args, kwargs, cupy.ndarray), lambda a: bool(cupy.isfinite(a).all()))
        if fix is not None:
            result = fix(cupy, args, kwargs, want)
        elif op.name.startswith("linalg."):
            import cupyx

            with cupyx.errstate(linalg="raise"):
                result = fn(*args, **kwargs)
        else:
            result = fn(*args, **{**_DEFAULTS.get(op.name, {}), **kwargs})
        if op.name in _INDEXES_TO_SCALARS:
            return _scalar_items(result)
        return _match(cupy, result, want)

    def runner(self, op: Any, args: tuple, kwargs: dict) -> Any:
        """For a call ``run`` sends straight to CuPy's function (no fix, no check of values, no
        index), that function and NumPy's result description, resolved once."""
        if (op.name in _REFUSED or op.work == "random" or op.name in ("__getitem__", "__setitem__")
                or op.name in FINITE_INPUTS or op.name.startswith("linalg.") or op.name in _INDEXES_TO_SCALARS
                or op.name in _DEFAULTS or "like" in kwargs):
            return super().runner(op, args, kwargs)
        fn = self._function(op)
        fix, want = self._plan(op, args, kwargs)
        if fix is not None:
            return super().runner(op, args, kwargs)
        cupy = self.cupy
        return lambda natives, kw: _match(cupy, fn(*natives, **kw), want)

    def _plan(self, op: Any, args: tuple, kwargs: dict) -> tuple[Any, Any]:
        """What this call needs beyond CuPy's function: a fix of NumPy's algorithm, and
        NumPy's result description; both depend on the call's signature alone (dtypes, shapes
        cut to two elements), so a loop's later calls find them in ``_plans``."""
        key = None if op.local else signature(op.func, args, kwargs, _dtype_of)
        plan = self._plans.get((op, key)) if key is not None else None
        if plan is None:
            cupy = self.cupy
            _refuse_known_differences(cupy, op, args, kwargs)
            fix = _ufunc_fix(cupy, op, args, kwargs) if op.ufunc is not None else _FIXES.get(op.name)
            want = None if op.local else expected(op.func, args, kwargs, _dtype_of)
            if want is None and not op.local and op.mutates is None:
                raise Unsupported("NumPy rejects this signature; it decides the error")
            plan = (fix, want)
            if key is not None:
                self._plans[(op, key)] = plan
        return plan

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


# Keywords whose CuPy default differs from NumPy's: NumPy's default is passed.
_DEFAULTS = {
    "ravel_multi_index": {"mode": "raise"},  # CuPy wraps out-of-range indices by default, NumPy raises
}


def _refuse_known_differences(cupy: Any, op: Any, args: tuple, kwargs: dict) -> None:
    """Refuse the calls this module knows CuPy computes otherwise than NumPy."""
    name = op.name
    if name in _REFUSED_DTYPES:
        which, why = _REFUSED_DTYPES[name]
        if any(_matches(which, a.dtype) for a in _arrays(args, kwargs, cupy.ndarray)):
            raise Unsupported(why, lasting=True)
    if name in _CASTS:
        source = args[0] if args and isinstance(args[0], cupy.ndarray) else None
        dtype = _argument(args, kwargs, 1, "dtype", None)
        if source is not None and dtype is not None and _float_to_integer(source.dtype, _as_dtype(dtype)):
            raise Unsupported(_FLOAT_TO_INTEGER)
    if name in ("nanstd", "nanvar") and args and isinstance(args[0], cupy.ndarray) and args[0].size == 0:
        raise Unsupported("the variance of nothing: NumPy warns and returns NaN, CuPy returns 0")


# Casts: NumPy converts NaN, infinities and floats out of the integer's range as the CPU does
# (x86 gives the minimum integer), CuPy saturates.
_CASTS = frozenset({"astype", "array", "asarray", "asanyarray", "ascontiguousarray", "asfortranarray"})
_FLOAT_TO_INTEGER = ("float to integer casts of NaN, infinities and out-of-range values: NumPy gives what the "
                     "CPU's conversion gives, CuPy saturates")


def _float_to_integer(source: np.dtype | None, into: np.dtype | None) -> bool:
    return source is not None and into is not None and source.kind in "fc" and into.kind in "iu"


def _as_dtype(dtype: Any) -> np.dtype | None:
    try:
        return np.dtype(dtype)
    except TypeError:
        return None  # not a dtype: CuPy and NumPy raise


def _value_dtype(cupy: Any, value: Any) -> np.dtype | None:
    """The dtype of a value assigned into an array (``None`` where it has none to tell)."""
    if isinstance(value, (cupy.ndarray, np.ndarray, np.generic)):
        return value.dtype
    if isinstance(value, (bool, int, float, complex, list, tuple)):
        try:
            return np.asarray(value).dtype
        except Exception:  # a list holding device arrays: CuPy decides
            return None
    return None


def _matches(which: Any, dtype: np.dtype) -> bool:
    """``which`` is a string of dtype kinds or a tuple of dtypes."""
    return dtype.kind in which if isinstance(which, str) else dtype in which


def _argument(args: tuple, kwargs: dict, position: int, name: str, default: Any) -> Any:
    return args[position] if len(args) > position else kwargs.get(name, default)


# ---- ufuncs CuPy computes otherwise than NumPy --------------------------------------------------------


def _ufunc_fix(cupy: Any, op: Any, args: tuple, kwargs: dict) -> Any:
    """``None`` where CuPy's ufunc gives NumPy's result; else NumPy's algorithm for these
    operands (``_UFUNC_FIXED``), or ``Unsupported`` (``_UFUNC_REFUSED``)."""
    name = op.ufunc.__name__
    refused, fixed = _UFUNC_REFUSED.get(name), _UFUNC_FIXED.get(name)
    if refused is None and fixed is None:
        return None
    if op.method != "__call__":
        return _method_fix(cupy, op, name, args, kwargs)
    nin = op.ufunc.nin
    inputs = _loop_inputs(op.ufunc, tuple(_operand_type(cupy, a) for a in args[:nin]))
    if inputs is None:
        return None  # NumPy rejects these operands: the call path lets NumPy raise
    every_array = all(isinstance(a, cupy.ndarray) for a in args[:nin])
    for table, entry in (("refused", refused), ("fixed", fixed)):
        if entry is None or not any(_matches(entry[0], d) for d in inputs):
            continue
        if table == "refused":
            raise Unsupported(f"{name} on {inputs[0]}: {entry[1]}", lasting=every_array)
        if len(args) != nin or kwargs:
            raise Unsupported(f"{name} on {inputs[0]} with outputs among the arguments or keywords "
                              f"{sorted(kwargs)}: computed here only in the plain form")
        compute = entry[1]
        return lambda cupy, args, kwargs, want: compute(
            cupy, *(_operand(cupy, a, d) for a, d in zip(args, inputs, strict=True)))
    return None


_loops: dict[tuple, tuple[np.dtype, ...] | None] = {}


def _loop_inputs(ufunc: np.ufunc, types: tuple) -> tuple[np.dtype, ...] | None:
    """The input dtypes of NumPy's loop for operands of these types (cached)."""
    key = (ufunc, types)
    if key not in _loops:
        try:
            _loops[key] = ufunc.resolve_dtypes((*types, *[None] * ufunc.nout))[:ufunc.nin]
        except Exception:
            _loops[key] = None
    return _loops[key]


def _method_fix(cupy: Any, op: Any, name: str, args: tuple, kwargs: dict) -> Any:
    """``outer`` of a fixed ufunc is the ufunc on broadcast operands; the other methods of a
    ufunc whose kernel differs for these dtypes are refused."""
    arrays = [a for i, a in enumerate(args) if isinstance(a, cupy.ndarray) and not (op.method == "at" and i == 1)]
    dtypes = [a.dtype for a in arrays]
    if kwargs.get("dtype") is not None:
        dtypes.append(np.dtype(kwargs["dtype"]))
    if not dtypes:
        return None
    common = np.result_type(*dtypes)
    refused, fixed = _UFUNC_REFUSED.get(name), _UFUNC_FIXED.get(name)
    if refused is not None and _matches(refused[0], common):
        raise Unsupported(f"{name}.{op.method} on {common}: {refused[1]}", lasting=True)
    if fixed is None or not _matches(fixed[0], common):
        return None
    if op.method == "outer" and len(args) == 2 and len(arrays) == 2 and not kwargs:
        a, b = args
        inputs = _loop_inputs(op.ufunc, (a.dtype, b.dtype))
        if inputs is None:
            return None
        compute = fixed[1]
        return lambda cupy, args, kwargs, want: compute(
            cupy, _operand(cupy, a.reshape(a.shape + (1,) * b.ndim), inputs[0]), _operand(cupy, b, inputs[1]))
    raise Unsupported(f"{name}.{op.method} on {common}: CuPy's {name} kernel differs from NumPy's loop", lasting=True)


def _operand_type(cupy: Any, a: Any) -> Any:
    """What NumPy's type resolution sees: a dtype, or a Python scalar's type (weak, NEP 50)."""
    if isinstance(a, cupy.ndarray):
        return a.dtype
    if isinstance(a, bool):
        return np.dtype(bool)  # Python booleans are not weak
    if isinstance(a, (int, float, complex)):
        return type(a)
    if isinstance(a, np.generic):
        return a.dtype
    raise Unsupported(f"a {type(a).__name__} operand")


def _operand(cupy: Any, a: Any, dtype: np.dtype) -> Any:
    """An operand as a device array of the loop's dtype."""
    if isinstance(a, cupy.ndarray):
        return a if a.dtype == dtype else a.astype(dtype)
    return cupy.asarray(a, dtype=dtype)


# ---- functions CuPy computes otherwise than NumPy ------------------------------------------------------
# Each takes (cupy, args, kwargs, NumPy's result description) and returns CuPy arrays; where
# the difference does not arise it calls CuPy's function.


def _clip(cupy: Any, args: tuple, kwargs: dict, want: Any) -> Any:
    """Real floats with both bounds: NumPy's NaN-propagating clip (CuPy ignores NaN bounds)."""
    a = args[0]
    rest = dict(zip(("a_min", "a_max"), args[1:3], strict=False))
    lo = rest.get("a_min", kwargs.get("a_min", kwargs.get("min")))
    hi = rest.get("a_max", kwargs.get("a_max", kwargs.get("max")))
    plain = len(args) <= 3 and not kwargs.keys() - {"a_min", "a_max", "min", "max"}
    if not plain or lo is None or hi is None or want.dtype.kind != "f":
        return cupy.clip(*args, **kwargs)
    dtype = want.dtype
    return fixes.clip(cupy, _operand(cupy, a, dtype), _operand(cupy, lo, dtype), _operand(cupy, hi, dtype))


def _angle(cupy: Any, args: tuple, kwargs: dict, want: Any) -> Any:
    """Real input: ``arctan2(0, x)`` as NumPy (CuPy gives pi for NaN and 0 for -0.0)."""
    z = args[0]
    if not isinstance(z, cupy.ndarray):
        raise Unsupported("angle of a Python scalar")
    if z.dtype.kind == "c":
        return cupy.angle(*args, **kwargs)
    deg = _argument(args, kwargs, 1, "deg", False)
    return fixes.angle(cupy, _operand(cupy, z, want.dtype), bool(deg))


def _sinc(cupy: Any, args: tuple, kwargs: dict, want: Any) -> Any:
    """NumPy's ``sin(pi x) / (pi x)`` (CuPy's sinpi gives exact zeros where NumPy's sin does not)."""
    if len(args) != 1 or kwargs:
        raise Unsupported("sinc takes one argument")
    return fixes.sinc(cupy, _operand(cupy, args[0], want.dtype))


def _flip(cupy: Any, args: tuple, kwargs: dict, want: Any) -> Any:
    """A 0-d array flipped is NumPy's ``m[()]``: a scalar (CuPy gives the 0-d array)."""
    m = args[0]
    if getattr(m, "ndim", None) != 0:
        return cupy.flip(*args, **kwargs)
    if _argument(args, kwargs, 1, "axis", None) is not None:
        raise Unsupported("an axis of a 0-d array: NumPy raises")
    return device_scalar(m.copy())


def _unique(cupy: Any, args: tuple, kwargs: dict, want: Any) -> Any:
    """Integers and booleans by NumPy's sort-based algorithm (``fixes.unique``): CuPy's own
    unique shapes the inverse otherwise across versions, and floats are left to NumPy, whose
    NaN collapsing and choice between -0.0 and 0.0 follow its sort."""
    return _unique_of(cupy, *args, **kwargs)


def _unique_of(cupy: Any, ar: Any, return_index: bool = False, return_inverse: bool = False,
               return_counts: bool = False, axis: Any = None, *, equal_nan: bool = True, sorted: bool = True) -> Any:
    if not isinstance(ar, cupy.ndarray) or ar.dtype.kind not in "biu" or ar.size == 0:
        raise Unsupported("unique of floats, complex numbers or nothing: NumPy's NaN and signed-zero rules")
    if axis is not None or not sorted:
        raise Unsupported("unique along an axis, or unsorted (NumPy's hash order)")
    out = fixes.unique(cupy, ar.reshape(-1), bool(return_index), bool(return_inverse), bool(return_counts))
    if return_inverse:
        at = 1 + bool(return_index)
        out = (*out[:at], out[at].reshape(unique_inverse_shape(ar.shape)), *out[at + 1:])
    return out if len(out) > 1 else out[0]


def _lexsort(cupy: Any, args: tuple, kwargs: dict, want: Any) -> Any:
    """Stable sorts key by key (``fixes.lexsort``): CuPy's lexsort takes only a 2-D array of
    keys. Integer and boolean keys: NumPy's order of NaNs is its own."""
    keys = _argument(args, kwargs, 0, "keys", None)
    axis = _argument(args, kwargs, 1, "axis", -1)
    keys = list(keys) if isinstance(keys, (list, tuple)) or getattr(keys, "ndim", 0) >= 2 else []
    if not keys or not all(isinstance(k, cupy.ndarray) and k.dtype.kind in "biu" for k in keys):
        raise Unsupported("lexsort of keys other than device arrays of integers or booleans")
    if keys[0].ndim == 0 or any(k.shape != keys[0].shape for k in keys):
        raise Unsupported("lexsort of 0-d keys or keys of unequal shapes: NumPy decides")
    return fixes.lexsort(cupy, keys, axis)


_FIXES = {"clip": _clip, "angle": _angle, "sinc": _sinc, "flip": _flip, "unique": _unique, "lexsort": _lexsort}


# View ops that NumPy builds by indexing, so that their 0-d pieces are scalars (unstack of a
# vector gives NumPy scalars; CuPy gives 0-d arrays).
_INDEXES_TO_SCALARS = frozenset({"unstack"})


def _scalar_items(result: Any) -> Any:
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
    ranged = []  # each integer index array and the length of its axis
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
            ranged.append((k, a.shape[axis]))
        elif isinstance(k, cupy.ndarray) and k.dtype.kind not in "iu":
            raise Unsupported(f"index arrays of {k.dtype}")
        axis += 1
    if ranged:
        # Every bound read back at once: the price of NumPy's IndexError is one sync, which waits
        # for all the work queued before it (``p[rows, y]`` read four bounds, one sync each).
        # As float64: exact below 2**53, past any axis's length above it (as int64, a uint64 index of
        # 2**64 - 1 would read -1, in range).
        bounds = cupy.stack([m.astype(cupy.float64) for k, _ in ranged for m in (k.min(), k.max())]).get()
        for (_, n), lo, hi in zip(ranged, bounds[::2], bounds[1::2], strict=True):
            if lo < -n or hi >= n:
                raise Unsupported("an index out of range: NumPy raises IndexError")
    return key


def _match(cupy: Any, result: Any, want: Any) -> Any:
    """Cast to NumPy's dtypes; results NumPy returns as scalars become device scalars."""
    if want is None:
        return result
    if want.container is None and type(result) is cupy.ndarray and result.dtype == want.dtypes[0] \
            and not want.scalars[0]:
        return result  # one array, as NumPy's: the common case
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


registry.complete("cupy", CupyTarget, dtypes=dtypes_of_kinds(_KINDS), counterparts=_FIXES)
