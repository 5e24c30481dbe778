"""NumPy's ``PCG64`` computed for many stream positions at once.

The generator is a 128-bit LCG (``s <- s * MULT + inc``) whose draw is the XSL-RR output of the
state after the step. Draw ``p`` of a stream depends only on the starting state and ``p``: the
LCG's closed form jumps ``delta`` steps in ``log2(delta)`` squarings, so each of many workers
(here: rows of a NumPy array; on a device: threads) starts at its own offset and steps on from
there. 128-bit values are pairs of ``uint64`` halves, multiplied from 32-bit quarters, exactly
as the device kernels do it.

The 32-bit stream (``next_uint32``) splits each 64-bit draw into its low then its high half;
NumPy keeps an unused high half in the state (``has_uint32`` / ``uinteger``) across calls.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

MULT = 0x2360ED051FC65DA44385DF649FCCF645  # PCG_DEFAULT_MULTIPLIER_128
MASK64 = (1 << 64) - 1
MASK128 = (1 << 128) - 1
_M32 = np.uint64(0xFFFFFFFF)
_S32 = np.uint64(32)


@dataclass(frozen=True)
class State:
    """A ``PCG64`` state as NumPy's ``bit_generator.state`` holds it (Python ints)."""

    state: int
    inc: int
    has_uint32: int = 0
    uinteger: int = 0

    @classmethod
    def of(cls, bit_generator: np.random.PCG64) -> State:
        s = bit_generator.state
        return cls(s["state"]["state"], s["state"]["inc"], s["has_uint32"], s["uinteger"])

    def as_dict(self) -> dict:
        return {"bit_generator": "PCG64", "state": {"state": self.state, "inc": self.inc},
                "has_uint32": self.has_uint32, "uinteger": self.uinteger}


def jump(state: int, inc: int, delta: int) -> int:
    """The LCG state ``delta`` steps after ``state`` (Brown's arbitrary-stride jump)."""
    acc_mult, acc_plus, cur_mult, cur_plus = 1, 0, MULT, inc
    while delta:
        if delta & 1:
            acc_mult = acc_mult * cur_mult & MASK128
            acc_plus = (acc_plus * cur_mult + cur_plus) & MASK128
        cur_plus = (cur_mult + 1) * cur_plus & MASK128
        cur_mult = cur_mult * cur_mult & MASK128
        delta >>= 1
    return (acc_mult * state + acc_plus) & MASK128


def advance(bit_generator: np.random.PCG64, draws64: int, has_uint32: int, uinteger: int) -> None:
    """Move NumPy's generator ``draws64`` 64-bit draws on (its own ``advance``), then set the
    buffered 32-bit half, so that its next draws continue the stream exactly."""
    if draws64:
        bit_generator.advance(draws64)
    state = bit_generator.state
    state["has_uint32"], state["uinteger"] = has_uint32, uinteger
    bit_generator.state = state


# ---- 128-bit arithmetic on uint64 halves (vectorized) ---------------------------------------


def _halves(value: int) -> tuple[np.uint64, np.uint64]:
    return np.uint64(value >> 64), np.uint64(value & MASK64)


def mulhi64(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The high 64 bits of the 128-bit product of two uint64 arrays."""
    a0, a1, b0, b1 = a & _M32, a >> _S32, b & _M32, b >> _S32
    p00, p01, p10, p11 = a0 * b0, a0 * b1, a1 * b0, a1 * b1
    mid = (p00 >> _S32) + (p01 & _M32) + (p10 & _M32)
    return p11 + (p01 >> _S32) + (p10 >> _S32) + (mid >> _S32)


def mul128(ah, al, bh, bl):
    """``a * b mod 2**128`` on (high, low) halves."""
    with np.errstate(over="ignore"):
        return mulhi64(al, bl) + al * bh + ah * bl, al * bl


def add128(ah, al, bh, bl):
    with np.errstate(over="ignore"):
        lo = al + bl
        return ah + bh + (lo < al).astype(np.uint64), lo


def output(hi: np.ndarray, lo: np.ndarray) -> np.ndarray:
    """PCG's XSL-RR output: the halves xor-ed, rotated right by the state's top 6 bits."""
    x = hi ^ lo
    rot = hi >> np.uint64(58)
    return (x >> rot) | (x << ((np.uint64(64) - rot) & np.uint64(63)))


def starts(state: int, inc: int, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The LCG states ``offsets`` steps after ``state``, one jump per offset, all at once."""
    offsets = np.asarray(offsets, dtype=np.uint64)
    n = offsets.shape[0]
    mh, ml = np.zeros(n, np.uint64), np.ones(n, np.uint64)  # accumulated multiplier
    ph, pl = np.zeros(n, np.uint64), np.zeros(n, np.uint64)  # accumulated increment
    cur_mult, cur_plus = MULT, inc
    bits = int(offsets.max()).bit_length() if n else 0
    for i in range(bits):
        take = ((offsets >> np.uint64(i)) & np.uint64(1)).astype(bool)
        if take.any():
            ch, cl = _halves(cur_mult)
            qh, ql = _halves(cur_plus)
            nmh, nml = mul128(mh, ml, ch, cl)
            nph, npl = add128(*mul128(ph, pl, ch, cl), qh, ql)
            mh, ml = np.where(take, nmh, mh), np.where(take, nml, ml)
            ph, pl = np.where(take, nph, ph), np.where(take, npl, pl)
        cur_plus = (cur_mult + 1) * cur_plus & MASK128
        cur_mult = cur_mult * cur_mult & MASK128
    sh, sl = _halves(state)
    return add128(*mul128(mh, ml, sh, sl), ph, pl)


def raw64(state: State, start: int, count: int, per_worker: int = 0) -> np.ndarray:
    """64-bit draws ``start .. start + count - 1`` of the stream from ``state``: each worker
    jumps to its first position, then steps ``per_worker`` times (the device kernels' layout)."""
    if count <= 0:
        return np.empty(0, np.uint64)
    per_worker = per_worker or max(16, int(count**0.5))
    workers = -(-count // per_worker)
    sh, sl = starts(state.state, state.inc, start + np.arange(workers, dtype=np.uint64) * np.uint64(per_worker))
    mh, ml = _halves(MULT)
    ih, il = _halves(state.inc)
    out = np.empty((per_worker, workers), np.uint64)
    for j in range(per_worker):
        sh, sl = add128(*mul128(sh, sl, mh, ml), ih, il)
        out[j] = output(sh, sl)
    return out.T.reshape(-1)[:count]


def raw32(state: State, start: int, count: int) -> np.ndarray:
    """32-bit draws ``start ..`` of ``next_uint32``'s stream: a buffered half first, if the
    state holds one, then each 64-bit draw's low and high halves."""
    if count <= 0:
        return np.empty(0, np.uint32)
    h = state.has_uint32
    first = max(start - h, 0)  # position in the halves of the 64-bit draws
    lead = 1 if (h and start == 0) else 0
    first64 = first // 2
    words = raw64(state, first64, (first + count - lead + 1) // 2 - first64 + 1)
    halves = np.empty(2 * words.size, np.uint32)
    halves[0::2], halves[1::2] = words & _M32, words >> _S32
    body = halves[first - 2 * first64:][: count - lead]
    return np.concatenate([np.array([state.uinteger], np.uint32), body]) if lead else body


def after32(state: State, used32: int) -> tuple[int, int, int]:
    """(64-bit draws used, ``has_uint32``, ``uinteger``) once ``used32`` 32-bit draws are made."""
    h = state.has_uint32
    if used32 == 0:
        return 0, h, state.uinteger
    from_words = used32 - h
    if from_words <= 0:
        return 0, 0, state.uinteger
    words = (from_words + 1) // 2
    return words, from_words % 2, draw_at(state, words - 1) >> 32


def draw32_at(state: State, position: int) -> int:
    """The 32-bit draw at ``position`` of ``next_uint32``'s stream, in Python integers."""
    if state.has_uint32:
        if position == 0:
            return state.uinteger
        position -= 1
    word = draw_at(state, position // 2)
    return word >> 32 if position & 1 else word & 0xFFFFFFFF


def draw_at(state: State, position: int) -> int:
    """The 64-bit draw at ``position``, in Python integers (one jump)."""
    s = jump(state.state, state.inc, position + 1)
    hi, lo = s >> 64, s & MASK64
    x, rot = hi ^ lo, hi >> 58
    return ((x >> rot) | (x << ((64 - rot) & 63))) & MASK64
