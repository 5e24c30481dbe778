"""A draw of NumPy's stream on a device: the kernels' three passes, the host's few answers,
and NumPy's generator moved past the draws used.

``draw(generator, plan)`` gives a CuPy array bit-identical to NumPy's own draw, and leaves
``generator`` where NumPy's draw would have left it. ``kernels`` picks the passes' backend:
CUDA through CuPy by default, ``kernels.NumpyKernels()`` to run the same steps on the host.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dispatch.streams import pcg64, reference
from dispatch.streams import transforms as tf
from dispatch.streams.calls import Plan


def outputs(kernels: Any, method: tf.Method, state: pcg64.State, n: int) -> tuple[Any, int]:
    """The first ``n`` outputs from ``state``, on the kernels' device, and the draws they use."""
    size = reference.buffer_size(method, n)
    while True:
        code, value, kmax = kernels.attempts(method, state, size)
        got = kernels.scatter(code, value, kernels.take(code, kmax), n)
        if got is not None:
            break
        size *= 2  # fewer accepted attempts than outputs: decide more positions
    out, tails, used = got
    if tails.size:  # tails' values, made with the host libm's log1p
        where = kernels.xp.asarray(tails)
        out[where] = kernels.xp.asarray(method.tail_values(kernels.to_host(out[where])))
    return out, used


def draw(generator: np.random.Generator, plan: Plan, kernels: Any = None) -> Any:
    """``plan``'s draw from NumPy's ``generator``, made by ``kernels`` (CUDA by default)."""
    if kernels is None:
        from dispatch.streams.kernels import cupy_kernels  # lazy: the CUDA sources are read only to draw there

        kernels = cupy_kernels()
    xp = kernels.xp
    if plan.method is None:
        return xp.full(plan.shape, plan.constant, dtype=plan.dtype)
    bit_generator = generator.bit_generator
    state = pcg64.State.of(bit_generator)
    values, used = outputs(kernels, plan.method, state, plan.n)
    reference.commit(bit_generator, state, plan.method, used)
    return plan.finish(values, xp).astype(plan.dtype, copy=False).reshape(plan.shape)
