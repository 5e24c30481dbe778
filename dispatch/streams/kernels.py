"""The parallel draw's three passes, as CUDA kernels (through CuPy) and in NumPy.

1. ``attempts``: every position's attempt, as a byte ``code`` (draws taken in the low 6 bits,
   ``ACCEPT`` and ``TAIL`` above) and a ``value``; positions whose test the device's ``exp`` /
   ``log1p`` cannot settle for sure are listed (``rare``) for the host to decide.
2. ``take``: whether NumPy's loop starts an attempt at each position and it is accepted
   (``dispatch.streams.scan``'s sync-point walk, one thread per position).
3. ``scatter``: outputs by a prefix sum of ``take``; the draws used; the outputs that are tail
   values still to be made on the host.

``NumpyKernels`` computes the passes with ``dispatch.streams.transforms`` and ``scan``: the same
per-position logic as the CUDA source, which is how CI tests the device path without a device.

In the kernels, a thread starts at word (64-bit draw) ``t`` by one jump through a table of
the LCG's powers, then moves ``T`` words on (``T`` threads) by one affine step, so that
neighbouring threads write neighbouring positions. A 32-bit stream takes two positions from
each word (low half first), after NumPy's buffered half if the state holds one; the 16-bit,
8-bit and bool draws split each 32-bit one further. Floating-point code is compiled without
fused multiply-adds, as NumPy's C is.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import numpy as np

from dispatch.streams import pcg64, reference, scan
from dispatch.streams import tables as T
from dispatch.streams import transforms as tf

ACCEPT, TAIL, STEPS = 0x40, 0x80, 0x3F


def encode(k: np.ndarray, accept: np.ndarray, tail: np.ndarray) -> np.ndarray:
    """Attempts as the kernels' bytes: draws taken, then the ``ACCEPT`` and ``TAIL`` bits."""
    if k.size and int(k.max()) > STEPS:
        raise OverflowError("an attempt takes more draws than a code holds")
    return (k.astype(np.uint8) | (accept.astype(np.uint8) << 6) | (tail.astype(np.uint8) << 7)).astype(np.uint8)


def _resolve_rare(method: tf.Method, state: pcg64.State, rare: np.ndarray, patch: Any) -> int:
    """Decide the listed positions on the host (``transforms.Method.resolve``), handing each
    to ``patch(position, code, value)``; the most draws one takes."""

    def at(q: int) -> int:
        if method.width == 64:
            return pcg64.draw_at(state, q)
        j, part = divmod(q, method.split)
        bits = 32 // method.split
        return (pcg64.draw32_at(state, j) >> (part * bits)) & ((1 << bits) - 1)

    kmax = 1
    for p in rare.tolist():
        k, ok, v = method.resolve(at, p)
        patch(p, int(encode(np.array([k]), np.array([ok]), np.array([False]))[0]), v)
        kmax = max(kmax, k)
    return kmax


class NumpyKernels:
    """The passes in NumPy on the host."""

    xp = np

    def attempts(self, method: tf.Method, state: pcg64.State, size: int) -> tuple[np.ndarray, np.ndarray, int]:
        raw = reference.stream(method, state, 0, size + tf.PAD)
        k, accept, value, rare, tail = method.first(raw)
        code = encode(k, accept, tail & ~rare)
        kmax = int(k.max()) if k.size else 1

        def patch(p: int, c: int, v: Any) -> None:
            code[p], value[p] = c, v

        kmax = max(kmax, _resolve_rare(method, state, np.flatnonzero(rare), patch))
        return code, value, kmax

    def take(self, code: np.ndarray, kmax: int) -> np.ndarray:
        return scan.chain_starts((code & STEPS).astype(np.int64)) & ((code & ACCEPT) != 0)

    def scatter(self, code: np.ndarray, value: np.ndarray, take: np.ndarray, n: int):
        where = np.flatnonzero(take)[:n]
        if where.size < n:
            return None
        used = int(where[-1]) + int(code[where[-1]] & STEPS) if n else 0
        return value[where], np.flatnonzero((code[where] & TAIL) != 0), used

    def to_host(self, a: Any) -> np.ndarray:
        return np.asarray(a)


# ---- CUDA -------------------------------------------------------------------------------------

SOURCE = (Path(__file__).parent / "kernels.cu").read_text()
_SCATTER_TYPES = {
    "f64": "double", "f32": "float", "u64": "u64", "u32": "u32", "u16": "unsigned short", "u8": "unsigned char",
}
SCATTER_SOURCE = "".join(
    f"extern \"C\" __global__ void scatter_{name}_{ib}(const unsigned char* code, const {ct}* value, "
    f"const int* take, const {it}* cs, long long n_pos, long long n, {ct}* out, long long* tails, "
    f"unsigned long long* counters, long long cap) "
    f"{{ scatter_impl<{ct}, {it}>(code, value, take, cs, n_pos, n, out, tails, counters, cap); }}\n"
    for name, ct in _SCATTER_TYPES.items()
    for ib, it in (("i32", "int"), ("i64", "long long"))
)

_ARGS = np.dtype([
    ("s_hi", "<u8"), ("s_lo", "<u8"), ("inc_hi", "<u8"), ("inc_lo", "<u8"),
    ("strm_hi", "<u8"), ("strm_lo", "<u8"), ("strp_hi", "<u8"), ("strp_lo", "<u8"),
    ("n_pos", "<i8"), ("n_words", "<i8"), ("rng", "<u8"), ("thr", "<u8"), ("mask", "<u8"),
    ("has32", "<u4"), ("uinteger", "<u4"), ("rare_cap", "<i8"),
])
_THREADS = 256
_MAX_THREADS = 132 * 2048  # a thread per word up to a large GPU's resident threads (132 SMs x 2048)


def jump_table(inc: int) -> np.ndarray:
    """(multiplier, increment) halves of the LCG's 2**i steps, for i = 0 .. 63."""
    rows, mult, plus = [], pcg64.MULT, inc
    for _ in range(64):
        rows.append((mult >> 64, mult & pcg64.MASK64, plus >> 64, plus & pcg64.MASK64))
        plus = (mult + 1) * plus & pcg64.MASK128
        mult = mult * mult & pcg64.MASK128
    return np.array(rows, dtype=np.uint64).reshape(-1)


def _halves(v: int) -> tuple[int, int]:
    return v >> 64, v & pcg64.MASK64


class CupyKernels:
    """The passes as CUDA kernels through CuPy."""

    def __init__(self) -> None:
        import cupy

        self.xp = cupy
        margins = "".join(f"#define {m} {getattr(tf, m)!r}\n" for m in ("MARGIN64", "MARGIN32", "MARGIN32_TAIL"))
        self.module = cupy.RawModule(code=margins + SOURCE + SCATTER_SOURCE, options=("--fmad=false", "-std=c++14"))
        self.tables = {
            "normal64": cupy.asarray(np.concatenate([T.wi_double, T.fi_double, T.ki_double.view(np.float64)])),
            "exponential64": cupy.asarray(np.concatenate([T.we_double, T.fe_double, T.ke_double.view(np.float64)])),
            "normal32": cupy.asarray(np.concatenate([T.wi_float, T.fi_float, T.ki_float.view(np.float32)])),
            "exponential32": cupy.asarray(np.concatenate([T.we_float, T.fe_float, T.ke_float.view(np.float32)])),
        }
        self._jump: dict[int, Any] = {}

    def _args(self, method: tf.Method, state: pcg64.State, size: int, threads: int, n_words: int,
              cap: int) -> np.ndarray:
        a = np.zeros((), _ARGS)
        a["s_hi"], a["s_lo"] = _halves(state.state)
        a["inc_hi"], a["inc_lo"] = _halves(state.inc)
        a["strm_hi"], a["strm_lo"] = _halves(pow(pcg64.MULT, threads, 1 << 128))
        a["strp_hi"], a["strp_lo"] = _halves(pcg64.jump(0, state.inc, threads))
        a["n_pos"], a["n_words"], a["rare_cap"] = size, n_words, cap
        if isinstance(method, tf.Bounded):
            a["rng"], a["thr"], a["mask"] = method.rng, method.threshold, method.mask
        a["has32"], a["uinteger"] = (state.has_uint32, state.uinteger) if method.width == 32 else (0, 0)
        return a

    def attempts(self, method: tf.Method, state: pcg64.State, size: int):
        cp = self.xp
        if method.width == 64:
            n_words = size
        else:
            n32 = -(-size // method.split)
            n_words = max(-(-(n32 - state.has_uint32) // 2), 1)
        threads = min(n_words, _MAX_THREADS)
        blocks = -(-threads // _THREADS)
        threads = blocks * _THREADS
        cap = 1024 + size // 10_000
        jt = self._jump.get(state.inc)
        if jt is None:
            jt = self._jump[state.inc] = cp.asarray(jump_table(state.inc))
        args = cp.asarray(self._args(method, state, size, threads, n_words, cap).reshape(1).view(np.uint8))
        code = cp.empty(size, cp.uint8)
        value = cp.empty(size, method.dtype)
        rare = cp.empty(cap, cp.int64)
        counters = cp.zeros(2, cp.uint64)
        self._launch(method, blocks, args, jt, code, value, rare, counters)
        n_rare, kmax = (int(c) for c in counters.get())
        if n_rare > cap:  # more undecided positions than room for them: again, with room
            rare = cp.empty(n_rare, cp.int64)
            args = cp.asarray(self._args(method, state, size, threads, n_words, n_rare).reshape(1).view(np.uint8))
            counters[:] = 0
            self._launch(method, blocks, args, jt, code, value, rare, counters)
            n_rare, kmax = (int(c) for c in counters.get())
        if n_rare:  # the host's answers, written back in one scatter
            where, codes, values = [], [], []

            def patch(p: int, c: int, v: Any) -> None:
                where.append(p), codes.append(c), values.append(v)

            kmax = max(kmax, _resolve_rare(method, state, np.sort(rare[:n_rare].get()), patch))
            at = cp.asarray(np.array(where, np.int64))
            code[at] = cp.asarray(np.array(codes, np.uint8))
            value[at] = cp.asarray(np.array(values, method.dtype))
        return code, value, kmax

    def _launch(self, method: tf.Method, blocks: int, args: Any, jt: Any, code: Any, value: Any, rare: Any,
                counters: Any) -> None:
        if isinstance(method, tf.Bounded):
            name = f"attempts_u{method.dtype.itemsize * 8}"
            kind = {"raw": 0, "masked": 1, "lemire": 2}[method.kind]
            params = (args, jt, np.int32(kind), np.int32(method.bits), code, value, counters)
            self.module.get_function(name)((blocks,), (_THREADS,), params)
        else:
            wide = method.width == 64
            family = type(method).__name__
            ident = 0 if family.startswith("Random") else 1 if family.startswith("Normal") else 2
            table = self.tables[family.lower().replace("random", "normal")]  # any table for a uniform
            name = "attempts_f64" if wide else "attempts_f32"
            params = (args, jt, table, np.int32(ident), code, value, rare, counters)
            self.module.get_function(name)((blocks,), (_THREADS,), params)

    def take(self, code: Any, kmax: int) -> Any:
        cp = self.xp
        n = code.size
        take = cp.empty(n, cp.int32)
        if n:
            params = (code, np.int64(n), np.int32(kmax), take)
            self.module.get_function("take_kernel")((-(-n // _THREADS),), (_THREADS,), params)
        return take

    def scatter(self, code: Any, value: Any, take: Any, n: int):
        cp = self.xp
        n_pos = code.size
        wide = n_pos >= 2**31 - 1
        cs = cp.cumsum(take, dtype=cp.int64 if wide else cp.int32)
        if n_pos == 0 or int(cs[-1]) < n:
            return None
        out = cp.empty(n, value.dtype)
        cap = 4096 + n // 500
        tails = cp.empty(cap, cp.int64)
        counters = cp.zeros(2, cp.uint64)
        kind = {np.dtype(np.float64): "f64", np.dtype(np.float32): "f32", np.dtype(np.uint64): "u64",
                np.dtype(np.uint32): "u32", np.dtype(np.uint16): "u16", np.dtype(np.uint8): "u8"}[np.dtype(value.dtype)]
        fn = self.module.get_function(f"scatter_{kind}_{'i64' if wide else 'i32'}")
        fn((-(-n_pos // _THREADS),), (_THREADS,), (code, value, take, cs, np.int64(n_pos), np.int64(n), out, tails,
                                                   counters, np.int64(cap)))
        n_tails, used = (int(c) for c in counters.get())
        if n_tails > cap:
            raise RuntimeError("more tail outputs than expected")
        return out, cp.sort(tails[:n_tails]).get(), used

    def to_host(self, a: Any) -> np.ndarray:
        return self.xp.asnumpy(a)


@functools.cache
def cupy_kernels() -> CupyKernels:
    return CupyKernels()
