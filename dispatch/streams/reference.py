"""The parallel draw on the host, in NumPy: the device kernels' logic, step for step.

``draw`` takes a NumPy ``Generator`` on ``PCG64`` and a ``Plan``: it computes the raw stream
from the generator's state (``pcg64``), decides an attempt at every position (``transforms``,
rare positions on the host libm), finds the loop's attempts and compacts their outputs
(``scan``), then moves NumPy's generator past the draws used, so that NumPy's next draw
continues the same stream.
"""

from __future__ import annotations

import math

import numpy as np

from dispatch.streams import pcg64, scan
from dispatch.streams import transforms as tf
from dispatch.streams.calls import Plan


def stream(method: tf.Method, state: pcg64.State, start: int, count: int) -> np.ndarray:
    """Draws ``start .. start + count - 1`` of the stream ``method`` reads."""
    if method.width == 64:
        return pcg64.raw64(state, start, count)
    s = method.split
    first, stop = start // s, -(-(start + count) // s)
    words = pcg64.raw32(state, first, stop - first)
    return tf.subdraws(words, s)[start - first * s :][:count]


def buffer_size(method: tf.Method, n: int) -> int:
    """Positions to decide for ``n`` outputs: the mean draws per output, with room to spare."""
    return int(n * method.draws_per_output + 8 * math.sqrt(n * method.draws_per_output) + 64)


def outputs(method: tf.Method, state: pcg64.State, n: int) -> tuple[np.ndarray, int]:
    """The first ``n`` outputs from ``state`` and the draws they use."""
    size = buffer_size(method, n)
    while True:
        raw = stream(method, state, 0, size + tf.PAD)
        k, accept, value, rare, tail = method.first(raw)
        k = k.astype(np.int64)

        def at(q: int, raw: np.ndarray = raw) -> int:
            return int(raw[q]) if q < raw.size else int(stream(method, state, q, 1)[0])

        for p in np.flatnonzero(rare):
            k[p], accept[p], value[p] = method.resolve(at, int(p))
            tail[p] = False
        got = scan.chosen(k, accept, n)
        if got is not None:
            break
        size *= 2
    where, used = got
    values, tails = value[where], tail[where]
    if tails.any():
        values[tails] = method.tail_values(values[tails])
    return values, used


def commit(bit_generator: np.random.PCG64, state: pcg64.State, method: tf.Method, used: int) -> None:
    """Move NumPy's generator past ``used`` draws of ``method``'s stream."""
    if method.width == 64:
        pcg64.advance(bit_generator, used, state.has_uint32, state.uinteger)
    else:
        pcg64.advance(bit_generator, *pcg64.after32(state, -(-used // method.split)))


def draw(generator: np.random.Generator, plan: Plan) -> np.ndarray:
    """``plan``'s draw from NumPy's ``generator``, which is then where NumPy's would be."""
    if plan.method is None:
        return np.full(plan.shape, plan.constant, dtype=plan.dtype)
    bit_generator = generator.bit_generator
    state = pcg64.State.of(bit_generator)
    values, used = outputs(plan.method, state, plan.n)
    commit(bit_generator, state, plan.method, used)
    return np.asarray(plan.finish(values, np), dtype=plan.dtype).reshape(plan.shape)
