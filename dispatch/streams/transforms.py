"""NumPy's output transforms, one *attempt* per raw stream position.

NumPy's C (``distributions.c``, ``_bounded_integers.pyx.in``) turns raw draws into outputs in
a loop whose attempts consume a varying number of draws. Here an attempt is decided for every
position ``p`` at once, as if one started there: it takes ``k[p]`` draws and either accepts
(``accept[p]``, giving ``value[p]``) or rejects, the next attempt then starting at ``p + k[p]``.
``dispatch.streams.scan`` then finds which positions the real loop visits.

``first`` is the vectorized pass, and the device kernels compute the same per position. Its
``exp`` and ``log1p`` (NumPy's vectorized ones here, the device's there) may differ from the
host C library's, which NumPy's C calls, in the last bits. So:

- a test ``lhs < exp(...)`` or ``yy + yy > xx * xx`` whose two sides are too close for that
  to be sure marks the position ``rare``: ``resolve`` then decides it on the host, exactly
  (Python's ``math.exp`` / ``math.log1p`` and the C library's ``expf`` / ``log1pf`` are the
  functions NumPy's C calls). This is vanishingly rare;
- a ziggurat's tail (about 3 outputs in 10,000) returns a value made with ``log1p``: ``first``
  marks it ``tail`` and leaves the uniform it comes from as its value (negative for a negative
  normal), and ``tail_values`` makes the outputs' few tail values on the host.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import math
from collections.abc import Callable

import numpy as np

from dispatch.streams import tables as T
from dispatch.streams.pcg64 import mulhi64

TAIL_TRIES = 3  # pairs of uniforms a first pass tries in a normal's tail; more: rare
PAD = 1 + 2 * TAIL_TRIES  # draws past the last position a first pass reads
# Relative gaps under which another exp or log1p (a few ulps apart) might decide a test otherwise.
MARGIN64 = 2.0**-44
MARGIN32 = 2.0**-21  # float32: expf in the exponential's wedge
MARGIN32_TAIL = 2.0**-18  # float32: the normal's tail, log1pf twice and products
_U64, _U32 = np.uint64, np.uint32
_TWO53 = 1.0 / 9007199254740992.0
_TWO24 = np.float32(1.0 / 16777216.0)

Draw = Callable[[int], int]  # position -> raw draw there (the method's own stream width)


def _libm() -> ctypes.CDLL:
    lib = ctypes.CDLL(ctypes.util.find_library("m") or "libm.so.6")
    for name in ("log1pf", "expf"):
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = ctypes.c_float, [ctypes.c_float]
    return lib


_LIBM = _libm()


def log1pf(x: np.float32) -> np.float32:
    return np.float32(_LIBM.log1pf(float(x)))


def _log1pf_each(x: np.ndarray) -> np.ndarray:
    """The C library's ``log1pf`` of each float32 (one call each: no vector form exists)."""
    fn = _LIBM.log1pf
    return np.array([fn(v) for v in x.astype(np.float32).tolist()], np.float32)


def expf(x: np.float32) -> np.float32:
    return np.float32(_LIBM.expf(float(x)))


def next_double(u: int) -> float:
    return (u >> 11) * _TWO53


def next_float(u: int) -> np.float32:
    return np.float32(u >> 8) * _TWO24


class Method:
    """One transform: which raw stream it reads and how an attempt goes."""

    width = 64  # raw stream: 64-bit draws, or 32-bit ones (``next_uint32``)
    split = 1  # sub-draws per 32-bit word (16-bit, 8-bit and bool buffers)
    dtype: np.dtype
    draws_per_output = 1.02  # a generous mean, for sizing the raw buffer

    def first(self, raw: np.ndarray) -> tuple[np.ndarray, ...]:
        """(k, accept, value, rare, tail) for positions ``0 .. raw.size - PAD - 1``."""
        raise NotImplementedError

    def tail_values(self, uniforms: np.ndarray) -> np.ndarray:
        """The tail outputs made from the uniforms ``first`` left, with the host libm."""
        return uniforms

    def resolve(self, draw: Draw, p: int) -> tuple[int, bool, object]:
        """The attempt at ``p``, exactly, with the host libm."""
        raise NotImplementedError


# ---- uniform --------------------------------------------------------------------------------


class Random64(Method):
    dtype = np.dtype(np.float64)
    draws_per_output = 1.0

    def first(self, raw):
        n = raw.size - PAD
        value = (raw[:n] >> _U64(11)).astype(np.float64) * _TWO53
        return np.ones(n, np.int8), np.ones(n, bool), value, np.zeros(n, bool), np.zeros(n, bool)


class Random32(Method):
    width = 32
    dtype = np.dtype(np.float32)
    draws_per_output = 1.0

    def first(self, raw):
        n = raw.size - PAD
        value = (raw[:n] >> _U32(8)).astype(np.float32) * _TWO24
        return np.ones(n, np.int8), np.ones(n, bool), value, np.zeros(n, bool), np.zeros(n, bool)


# ---- the normal's ziggurat --------------------------------------------------------------------


class Normal64(Method):
    """``random_standard_normal``: 8 bits pick the layer, 1 the sign, 52 the magnitude."""

    dtype = np.dtype(np.float64)

    def first(self, raw):
        n = raw.size - PAD
        r = raw[:n]
        idx = (r & _U64(0xFF)).astype(np.intp)
        r8 = r >> _U64(8)
        rabs = (r8 >> _U64(1)) & _U64(0x000FFFFFFFFFFFFF)
        x = rabs.astype(np.float64) * T.wi_double[idx]
        x = np.where((r8 & _U64(1)).astype(bool), -x, x)
        sure_accept = rabs < T.ki_double[idx]
        uniform = [(raw[j : j + n] >> _U64(11)).astype(np.float64) * _TWO53 for j in range(1, PAD + 1)]
        lhs = (T.fi_double[idx - 1] - T.fi_double[idx]) * uniform[0] + T.fi_double[idx]
        negative = ((rabs >> _U64(8)) & _U64(1)).astype(bool)
        return _normal_attempt(idx, sure_accept, lhs, np.exp(-0.5 * x * x), x, uniform, negative,
                               T.ziggurat_nor_inv_r, MARGIN64)

    def tail_values(self, uniforms):
        out = [T.ziggurat_nor_r - T.ziggurat_nor_inv_r * math.log1p(-abs(u)) for u in uniforms.tolist()]
        return np.where(np.signbit(uniforms), -np.array(out, np.float64), out)

    def resolve(self, draw, p):
        r = draw(p)
        idx = r & 0xFF
        r >>= 8
        rabs = (r >> 1) & 0x000FFFFFFFFFFFFF
        x = rabs * float(T.wi_double[idx])
        if r & 1:
            x = -x
        if rabs < int(T.ki_double[idx]):
            return 1, True, x
        if idx == 0:  # the tail: pairs of uniforms until one is accepted
            q = p + 1
            while True:
                xx = -T.ziggurat_nor_inv_r * math.log1p(-next_double(draw(q)))
                yy = -math.log1p(-next_double(draw(q + 1)))
                q += 2
                if yy + yy > xx * xx:
                    v = T.ziggurat_nor_r + xx
                    return q - p, True, (-v if (rabs >> 8) & 1 else v)
        f0, f1 = float(T.fi_double[idx - 1]), float(T.fi_double[idx])
        lhs = (f0 - f1) * next_double(draw(p + 1)) + f1
        return 2, lhs < math.exp(-0.5 * x * x), x


class Normal32(Method):
    """``random_standard_normal_f``: the same on 32-bit draws, 23 bits of magnitude."""

    width = 32
    dtype = np.dtype(np.float32)

    def first(self, raw):
        n = raw.size - PAD
        r = raw[:n]
        idx = (r & _U32(0xFF)).astype(np.intp)
        rabs = (r >> _U32(9)) & _U32(0x007FFFFF)
        x = rabs.astype(np.float32) * T.wi_float[idx]
        x = np.where(((r >> _U32(8)) & _U32(1)).astype(bool), -x, x)
        sure_accept = rabs < T.ki_float[idx]
        uniform = [(raw[j : j + n] >> _U32(8)).astype(np.float32) * _TWO24 for j in range(1, PAD + 1)]
        lhs = ((T.fi_float[idx - 1] - T.fi_float[idx]) * uniform[0] + T.fi_float[idx]).astype(np.float64)
        x64 = x.astype(np.float64)
        negative = ((rabs >> _U32(8)) & _U32(1)).astype(bool)
        return _normal_attempt(idx, sure_accept, lhs, np.exp(-0.5 * x64 * x64), x, uniform, negative,
                               T.ziggurat_nor_inv_r_f, MARGIN32_TAIL)

    def tail_values(self, uniforms):
        xx = -T.ziggurat_nor_inv_r_f * _log1pf_each(-np.abs(uniforms))  # float32 arithmetic, as the C's
        out = T.ziggurat_nor_r_f + xx
        return np.where(np.signbit(uniforms), -out, out)

    def resolve(self, draw, p):
        r = draw(p)
        idx = r & 0xFF
        rabs = (r >> 9) & 0x007FFFFF
        x = np.float32(rabs) * T.wi_float[idx]
        if (r >> 8) & 1:
            x = -x
        if rabs < int(T.ki_float[idx]):
            return 1, True, x
        if idx == 0:
            q = p + 1
            while True:
                xx = -T.ziggurat_nor_inv_r_f * log1pf(-next_float(draw(q)))
                yy = -log1pf(-next_float(draw(q + 1)))
                q += 2
                if yy + yy > xx * xx:
                    v = T.ziggurat_nor_r_f + xx
                    return q - p, True, (-v if (rabs >> 8) & 1 else v)
        lhs = (T.fi_float[idx - 1] - T.fi_float[idx]) * next_float(draw(p + 1)) + T.fi_float[idx]
        return 2, float(lhs) < math.exp(-0.5 * float(x) * float(x)), x


def _normal_attempt(idx, sure_accept, lhs, rhs, x, uniform, negative, inv_r, tail_margin):
    """(k, accept, value, rare, tail) of the normal's ziggurat from its layer, its sure accepts and
    its wedge's two sides (both widths compare the wedge in float64, the C's ``exp``)."""
    wedge = ~sure_accept & (idx != 0)
    k = np.where(wedge, 2, 1).astype(np.int8)
    accept = sure_accept | (wedge & (lhs < rhs))
    rare = wedge & _close(lhs, rhs, MARGIN64)
    tail = ~sure_accept & (idx == 0)
    k, value, rare = _normal_tail(tail, uniform, inv_r, negative, k, x, rare, tail_margin)
    return k, accept | tail, value, rare, tail


def _close(a: np.ndarray, b: np.ndarray, margin: float) -> np.ndarray:
    """Where another last bit in ``a`` or ``b`` might change ``a < b``."""
    return np.abs(a - b) <= np.maximum(np.abs(a), np.abs(b)) * margin


def _normal_tail(tail, uniform, inv_r, negative, k, x, rare, margin):
    """The normal's tail, where pairs of uniforms are tried until ``yy + yy > xx * xx``: the
    draws each position's tries take, and the uniform of the accepted try (signed)."""
    k, value, rare = k.copy(), x.copy(), rare.copy()
    pending = tail.copy()
    with np.errstate(divide="ignore", invalid="ignore"):
        for t in range(TAIL_TRIES):
            ua, ub = uniform[2 * t], uniform[2 * t + 1]
            xx = -inv_r * np.log1p(-ua)
            yy = -np.log1p(-ub)
            lhs, rhs = yy + yy, xx * xx
            unsure = pending & _close(lhs, rhs, margin)
            rare |= unsure
            pending &= ~unsure
            done = pending & (lhs > rhs)
            k[done] = 3 + 2 * t
            value[done] = np.where(negative, -ua, ua)[done]
            pending &= ~done
    rare |= pending  # more tries than a first pass makes
    return k, value, rare


# ---- the exponential's ziggurat ----------------------------------------------------------------


class _ExponentialZig(Method):
    """The vectorised first attempt that both widths share; their tables and constants differ."""

    _uint: type
    _drop: int  # low bits the ziggurat skips before the layer index
    _mantissa: int  # the shift that turns a raw draw into a uniform's mantissa
    _scale: float
    _margin: float
    _we: np.ndarray
    _ke: np.ndarray
    _fe: np.ndarray

    def first(self, raw):
        n = raw.size - PAD
        ri = raw[:n] >> self._uint(self._drop)
        idx = (ri & self._uint(0xFF)).astype(np.intp)
        ri = ri >> self._uint(8)
        x = ri.astype(self.dtype) * self._we[idx]
        sure_accept = ri < self._ke[idx]
        u = (raw[1 : n + 1] >> self._uint(self._mantissa)).astype(self.dtype) * self._scale
        lhs = (self._fe[idx - 1] - self._fe[idx]) * u + self._fe[idx]
        rhs = np.exp(-x)
        wedge = ~sure_accept & (idx != 0)
        tail = ~sure_accept & (idx == 0)
        k = np.where(sure_accept, 1, 2).astype(np.int8)
        accept = sure_accept | tail | (wedge & (lhs < rhs))
        return k, accept, np.where(tail, u, x), wedge & _close(lhs, rhs, self._margin), tail


class Exponential64(_ExponentialZig):
    """``random_standard_exponential`` (``method="zig"``)."""

    dtype = np.dtype(np.float64)
    _uint, _drop, _mantissa, _scale, _margin = _U64, 3, 11, _TWO53, MARGIN64
    _we, _ke, _fe = T.we_double, T.ke_double, T.fe_double

    def tail_values(self, uniforms):
        return np.array([T.ziggurat_exp_r - math.log1p(-u) for u in uniforms.tolist()], np.float64)

    def resolve(self, draw, p):
        ri = draw(p) >> 3
        idx = ri & 0xFF
        ri >>= 8
        x = ri * float(T.we_double[idx])
        if ri < int(T.ke_double[idx]):
            return 1, True, x
        if idx == 0:
            return 2, True, T.ziggurat_exp_r - math.log1p(-next_double(draw(p + 1)))
        f0, f1 = float(T.fe_double[idx - 1]), float(T.fe_double[idx])
        lhs = (f0 - f1) * next_double(draw(p + 1)) + f1
        return 2, lhs < math.exp(-x), x


class Exponential32(_ExponentialZig):
    """``random_standard_exponential_f`` (``method="zig"``): ``expf`` in its wedge."""

    width = 32
    dtype = np.dtype(np.float32)
    _uint, _drop, _mantissa, _scale, _margin = _U32, 1, 8, _TWO24, MARGIN32
    _we, _ke, _fe = T.we_float, T.ke_float, T.fe_float

    def tail_values(self, uniforms):
        return T.ziggurat_exp_r_f - _log1pf_each(-uniforms)

    def resolve(self, draw, p):
        ri = draw(p) >> 1
        idx = ri & 0xFF
        ri >>= 8
        x = np.float32(ri) * T.we_float[idx]
        if ri < int(T.ke_float[idx]):
            return 1, True, x
        if idx == 0:
            return 2, True, T.ziggurat_exp_r_f - log1pf(-next_float(draw(p + 1)))
        lhs = (T.fe_float[idx - 1] - T.fe_float[idx]) * next_float(draw(p + 1)) + T.fe_float[idx]
        return 2, bool(lhs < expf(-x)), x


# ---- bounded integers ----------------------------------------------------------------------------


_UNSIGNED = {64: np.uint64, 32: np.uint32, 16: np.uint16, 8: np.uint8}


class Bounded(Method):
    """``random_bounded_uint{64,32,16,8}_fill`` and the bool one, for ``off + [0, rng]``.

    ``bits``: the draw's width (64; 32 through ``next_uint32``; 16, 8 and 1 from a 32-bit buffer
    refilled by ``next_uint32`` and started afresh each call). ``kind``: ``"raw"`` (every draw is
    an output), ``"masked"`` (reject draws over ``rng`` under the smallest covering mask) or
    ``"lemire"`` (multiply, reject the biased low part)."""

    def __init__(self, bits: int, kind: str, rng: int) -> None:
        self.bits, self.kind, self.rng = bits, kind, rng
        self.width = 64 if bits == 64 else 32
        self.split = 32 // bits if bits < 32 else 1
        self.dtype = np.dtype(_UNSIGNED[max(bits, 8)])
        full = (1 << bits) - 1
        self.mask = (1 << rng.bit_length()) - 1
        self.threshold = (full - rng) % (rng + 1) if kind == "lemire" else 0
        reject = {"raw": 0.0, "masked": 1 - (rng + 1) / (self.mask + 1), "lemire": self.threshold / (full + 1)}[kind]
        self.draws_per_output = 1.0 / (1.0 - reject)

    def first(self, raw):
        n = raw.size - PAD
        ones, none = np.ones(n, np.int8), np.zeros(n, bool)
        u = raw[:n]
        if self.kind == "raw":
            return ones, np.ones(n, bool), u, none, none
        if self.kind == "masked":
            v = u & u.dtype.type(self.mask)
            return ones, v <= self.rng, v, none, none
        if self.bits == 64:
            hi, lo = _mul64(u, self.rng + 1)
            return ones, lo >= _U64(self.threshold), hi, none, none
        m = u.astype(np.uint64) * _U64(self.rng + 1)
        low = m & _U64((1 << self.bits) - 1)
        return ones, low >= _U64(self.threshold), m >> _U64(self.bits), none, none


def _mul64(a: np.ndarray, b: int) -> tuple[np.ndarray, np.ndarray]:
    bb = np.full(a.shape, b, np.uint64)
    with np.errstate(over="ignore"):
        return mulhi64(a, bb), a * bb


def subdraws(words: np.ndarray, split: int) -> np.ndarray:
    """The 16-bit, 8-bit or 1-bit draws NumPy's buffers take from 32-bit words, low bits first."""
    if split == 1:
        return words
    bits = 32 // split
    shifts = (np.arange(split, dtype=np.uint32) * np.uint32(bits))
    return ((words[:, None] >> shifts) & np.uint32((1 << bits) - 1)).reshape(-1)
