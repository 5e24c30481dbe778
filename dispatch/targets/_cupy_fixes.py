"""NumPy's own algorithms, written with CuPy's element-wise kernels, for the ufuncs and
functions whose CuPy kernels give other results than NumPy's loops (the sign of a zero, NaN
and infinities, rounding).

Each function follows NumPy's C loop step by step (the source is named in its docstring),
one CuPy kernel per step: every step rounds as NumPy's does, and no fused multiply-add can
join two of them. The functions take the array module as ``xp``, so that the same code runs
on NumPy itself, which proves it reproduces NumPy's loops bit for bit, on CuPy, and on the
fake CuPy of the CPU tests. Operands come already cast to the dtypes of NumPy's loop.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["angle", "clip", "complex_compare", "complex_divide", "complex_extreme", "complex_reciprocal",
           "divmod_", "lexsort", "sinc", "unique"]


def _const(xp: Any, value: Any, dtype: Any) -> Any:
    """A 0-d array of ``dtype``: no Python scalar whose promotion could differ between libraries."""
    return xp.asarray(value, dtype=dtype)


def divmod_(xp: Any, a: Any, b: Any) -> tuple[Any, Any]:
    """``(floor_divide(a, b), remainder(a, b))`` for floats, as NumPy's ``npy_divmod``
    (npymath/npy_math_internal.h.src): the remainder from ``fmod`` (exact), a zero remainder
    taking the divisor's sign, the quotient ``(a - mod) / b`` snapped to an integer; a zero
    divisor gives ``a / b`` and ``fmod``'s NaN. float16 is computed in float32 and rounded
    once, as NumPy's half loops do."""
    out = a.dtype
    if out == np.float16:
        a, b = a.astype(np.float32), b.astype(np.float32)
    dt = a.dtype
    zero, one, half = _const(xp, 0, dt), _const(xp, 1, dt), _const(xp, 0.5, dt)
    mod = xp.fmod(a, b)
    div = (a - mod) / b
    adjust = (mod != zero) & ((b < zero) != (mod < zero))  # NaN counts as true, as C's `if (mod)`
    was_zero = mod == zero
    mod = xp.where(adjust, mod + b, mod)
    div = xp.where(adjust, div - one, div)
    mod = xp.where(was_zero, xp.copysign(zero, b), mod)
    floordiv = xp.floor(div)
    floordiv = xp.where(div - floordiv > half, floordiv + one, floordiv)
    quotient = a / b
    floordiv = xp.where(div == zero, xp.copysign(zero, quotient), floordiv)
    floordiv = xp.where(b == zero, quotient, floordiv)  # mod is already fmod's NaN there
    if out == np.float16:
        return floordiv.astype(out), mod.astype(out)
    return floordiv, mod


def _parts(z: Any) -> tuple[Any, Any]:
    return z.real, z.imag


def _complex(xp: Any, re: Any, im: Any, dtype: Any) -> Any:
    """A complex array from its parts, written part by part (``re + 1j * im`` would turn an
    infinite part into NaN in the other)."""
    shape = np.broadcast_shapes(re.shape, im.shape)
    z = xp.empty(shape, dtype=dtype)
    z.real[...] = re
    z.imag[...] = im
    return z


def complex_divide(xp: Any, a: Any, b: Any) -> Any:
    """``a / b`` for complex, as NumPy's ``@TYPE@_divide`` (umath/loops.c.src): Smith's
    algorithm, with NumPy's rules for NaN, infinite and zero operands."""
    dt = a.real.dtype
    zero, one = _const(xp, 0, dt), _const(xp, 1, dt)
    ar, ai = _parts(a)
    br, bi = _parts(b)
    br_abs, bi_abs = xp.abs(br), xp.abs(bi)
    ar_nan, ai_nan = xp.isnan(ar), xp.isnan(ai)
    b_nonzero = (br != zero) | (bi != zero)
    a_inf = (~ar_nan & xp.isinf(ar)) | (~ai_nan & xp.isinf(ai))
    nan_case = (~xp.isnan(br) & ~xp.isnan(bi) & (ar_nan | ai_nan)
                & ((a_inf & b_nonzero) | (xp.isinf(br) & xp.isinf(bi))))
    a_nan = xp.where(ar_nan, ar, ai)
    real_big = br_abs >= bi_abs  # isgreaterequal: false when either is NaN
    by_zero = real_big & (br_abs == zero) & (bi_abs == zero)
    zero_special = (ar_nan & ((ai == zero) | ai_nan)) | ((ar == zero) & ai_nan)
    zero_r = xp.where(zero_special, a_nan, ar / br_abs)
    zero_i = xp.where(zero_special, xp.where(ai_nan, ai, ar), ai / bi_abs)
    # |b.real| >= |b.imag|
    rat = bi / br
    scl = one / (br + bi * rat)
    big_r = (ar + ai * rat) * scl
    big_i = (ai - ar * rat) * scl
    # |b.real| < |b.imag|
    rat2 = br / bi
    scl2 = one / (bi + br * rat2)
    small_r = (ar * rat2 + ai) * scl2
    small_i = (ai * rat2 - ar) * scl2
    re = xp.where(nan_case, a_nan, xp.where(by_zero, zero_r, xp.where(real_big, big_r, small_r)))
    im = xp.where(nan_case, a_nan, xp.where(by_zero, zero_i, xp.where(real_big, big_i, small_i)))
    return _complex(xp, re, im, a.dtype)


def complex_reciprocal(xp: Any, z: Any) -> Any:
    """``1 / z`` for complex, as NumPy's ``@TYPE@_reciprocal`` (umath/loops.c.src)."""
    dt = z.real.dtype
    one = _const(xp, 1, dt)
    zr, zi = _parts(z)
    real_big = xp.abs(zi) <= xp.abs(zr)
    r = zi / zr
    d = zr + zi * r
    r2 = zr / zi
    d2 = zr * r2 + zi
    re = xp.where(real_big, one / d, r2 / d2)
    im = xp.where(real_big, -r / d, -one / d2)
    return _complex(xp, re, im, z.dtype)


def _ordered(xp: Any, name: str, ar: Any, ai: Any, br: Any, bi: Any) -> Any:
    """NumPy's complex order (CGT, CGE, CLT, CLE in umath/loops.c.src): lexicographic, and a
    real part decides only when neither imaginary part is NaN."""
    clear = ~xp.isnan(ai) & ~xp.isnan(bi)
    if name == "greater":
        return ((ar > br) & clear) | ((ar == br) & (ai > bi))
    if name == "greater_equal":
        return ((ar > br) & clear) | ((ar == br) & (ai >= bi))
    if name == "less":
        return ((ar < br) & clear) | ((ar == br) & (ai < bi))
    if name == "less_equal":
        return ((ar < br) & clear) | ((ar == br) & (ai <= bi))
    raise ValueError(name)


def complex_compare(xp: Any, name: str, a: Any, b: Any) -> Any:
    """``greater``, ``greater_equal``, ``less``, ``less_equal`` for complex, as NumPy's."""
    return _ordered(xp, name, *_parts(a), *_parts(b))


def complex_extreme(xp: Any, name: str, a: Any, b: Any) -> Any:
    """``maximum``, ``minimum`` (a NaN in either part of either operand wins, the first
    operand's first) and ``fmax``, ``fmin`` (a NaN loses) for complex, as NumPy's loops."""
    ar, ai = _parts(a)
    br, bi = _parts(b)
    order = "greater_equal" if name in ("maximum", "fmax") else "less_equal"
    first = _ordered(xp, order, ar, ai, br, bi)
    if name in ("maximum", "minimum"):
        keep = xp.isnan(ar) | xp.isnan(ai) | first
    else:
        keep = xp.isnan(br) | xp.isnan(bi) | first
    return xp.where(keep, a, b)


def clip(xp: Any, a: Any, lo: Any, hi: Any) -> Any:
    """``clip`` for real floats with both bounds, as NumPy's ``_NPY_CLIP`` (umath/clip.cpp):
    ``min(max(a, lo), hi)`` where a NaN operand, the array's or a bound's, gives NaN, and a
    tie keeps the bound."""
    t = xp.where((a > lo) | xp.isnan(a), a, lo)
    return xp.where((t < hi) | xp.isnan(t), t, hi)


def angle(xp: Any, x: Any, deg: bool) -> Any:
    """``angle`` of real numbers, as NumPy computes it: ``arctan2(0, x)`` (so -0.0 gives pi
    and NaN gives NaN), in degrees by ``*= 180 / pi``."""
    a = xp.arctan2(xp.zeros_like(x), x)
    if deg:
        a = a * _const(xp, 180 / np.pi, a.dtype)
    return a


def sinc(xp: Any, x: Any) -> Any:
    """``sinc`` as NumPy computes it (lib/_function_base_impl.py): ``y = pi * x``, zeros
    replaced by ``eps``, ``sin(y) / y``; complex quotients by NumPy's division."""
    x = x * _const(xp, np.pi, x.dtype)
    eps = np.finfo(x.dtype).eps if x.dtype.kind == "f" else 1e-20
    y = xp.where(x != _const(xp, 0, x.dtype), x, _const(xp, eps, x.dtype))
    if y.dtype.kind == "c":
        return complex_divide(xp, xp.sin(y), y)
    return xp.sin(y) / y


# ---- sorting: NumPy's results from stable sorts ---------------------------------------------------------


def unique(xp: Any, flat: Any, return_index: bool, return_inverse: bool, return_counts: bool) -> tuple:
    """``unique`` of a non-empty 1-D array of integers or booleans, as NumPy's ``_unique1d``
    (lib/_arraysetops_impl.py): a stable sort, a mask of where each run of equal values
    starts; the first index of each value, the position of each element's value, the length
    of each run. Returns ``(values, index?, inverse?, counts?)``, the flags' outputs only."""
    perm = xp.argsort(flat, kind="stable") if return_index or return_inverse else None
    aux = flat[perm] if perm is not None else xp.sort(flat)
    mask = xp.empty(aux.shape, dtype=bool)
    mask[:1] = True
    mask[1:] = aux[1:] != aux[:-1]
    out = [aux[mask]]
    if return_index:
        out.append(perm[mask])
    if return_inverse:
        inverse = xp.empty(mask.shape, dtype=np.intp)
        inverse[perm] = xp.cumsum(mask) - 1
        out.append(inverse)
    if return_counts:
        starts = xp.nonzero(mask)[0]
        ends = xp.concatenate([starts[1:], xp.asarray([mask.size], dtype=starts.dtype)])
        out.append(ends - starts)
    return tuple(out)


def lexsort(xp: Any, keys: list, axis: int) -> Any:
    """``lexsort``: stable sorts by each key in turn, the last key sorted last (the primary
    one). Equal elements keep their order through every stable sort, as in NumPy's."""
    one_d = keys[0].ndim == 1

    def take(a: Any, order: Any) -> Any:
        return a[order] if one_d else xp.take_along_axis(a, order, axis=axis)

    order = xp.argsort(keys[0], axis=axis, kind="stable")
    for key in keys[1:]:
        order = take(order, xp.argsort(take(key, order), axis=axis, kind="stable"))
    return order
