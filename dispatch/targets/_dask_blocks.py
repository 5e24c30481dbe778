"""Functions that run inside Dask tasks, one call per chunk: random draws chained through a
bit generator's state, and the chunks of ``arange`` and ``linspace`` computed exactly as
NumPy computes the whole array.

This module imports only NumPy (and CuPy, lazily, for GPU chunks): ``dispatch.cluster``
ships it to the workers by value, so workers need NumPy but not dispatch.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["arange_block", "chunk_of", "draw_block", "draw_pair", "final_state", "linspace_block", "to_gpu"]


def to_gpu(block: Any) -> Any:
    """A host chunk as a CuPy array (GPU workers)."""
    import cupy

    return cupy.asarray(block)


# ---- random draws -----------------------------------------------------------------------------------


def _generator(state: dict, legacy: bool) -> Any:
    """A NumPy generator positioned at ``state`` (a ``Generator`` bit generator state, or a
    ``RandomState.get_state(legacy=False)`` dict with the cached Gaussian)."""
    if legacy:
        rs = np.random.RandomState()
        rs.set_state(state)
        return rs
    bit_generator = getattr(np.random, state["bit_generator"])()
    bit_generator.state = state
    return np.random.Generator(bit_generator)


def _state(gen: Any, legacy: bool) -> dict:
    return gen.get_state(legacy=False) if legacy else gen.bit_generator.state


def draw_pair(state: dict, spec: tuple, shape: tuple) -> tuple[Any, dict]:
    """One chunk of a chained draw and the generator state it leaves: the next chunk starts
    there, so the chunks together are NumPy's one draw of the whole array. ``spec`` is
    ``(method, parameters, legacy, gpu)``."""
    method, params, legacy, gpu = spec
    gen = _generator(state, legacy)
    block = getattr(gen, method)(size=shape, **params)
    return (to_gpu(block) if gpu else block), _state(gen, legacy)


def draw_block(state: dict, spec: tuple, shape: tuple) -> Any:
    """One chunk drawn from ``state`` (a state jumped to directly: no chain)."""
    return draw_pair(state, spec, shape)[0]


def final_state(pair: tuple[Any, dict]) -> dict:
    return pair[1]


def chunk_of(pair: tuple[Any, dict]) -> Any:
    return pair[0]


# ---- arange and linspace, chunk by chunk -------------------------------------------------------------


def arange_block(lo: int, hi: int, first: np.ndarray, gpu: bool) -> Any:
    """Elements ``lo:hi`` of NumPy's ``arange``, whose first two elements are ``first``: NumPy
    sets those two, then fills ``first[0] + i * delta`` with ``delta = first[1] - first[0]``
    computed in the result dtype (``@NAME@_fill`` in numpy/_core/src/multiarray/arraytypes)."""
    dtype = first.dtype
    start, delta = first[:1], first[1:] - first[:1]  # 1-element arrays: integers wrap as in C
    block = (start + np.arange(lo, hi).astype(dtype) * delta).astype(dtype, copy=False)
    for i in range(lo, min(hi, 2)):
        block[i - lo] = first[i]
    return to_gpu(block) if gpu else block


def linspace_block(lo: int, hi: int, num: int, start: Any, stop: Any, endpoint: bool, dt: np.dtype,
                   dtype: Any, gpu: bool) -> Any:
    """Elements ``lo:hi`` of ``numpy.linspace(start, stop, num, endpoint, dtype=dtype)`` for
    scalar ``start`` and ``stop`` (``dt``: the dtype NumPy computes in): the same operations
    as NumPy's, on ``arange(lo, hi)`` instead of ``arange(0, num)``, so every element is bit
    for bit NumPy's."""
    div = (num - 1) if endpoint else num
    start, stop = np.asarray(start), np.asarray(stop)
    integer_dtype = dtype is not None and np.issubdtype(dtype, np.integer)
    delta = np.subtract(stop, start, dtype=type(dt))
    y = np.arange(lo, hi, dtype=dt)
    if div > 0:
        step = delta / div
        if step == 0:
            y /= div
            y *= delta
        else:
            y *= step
    else:
        y = y * delta
    y += start
    if endpoint and num > 1 and hi == num:
        y[-1] = stop
    if integer_dtype:
        np.floor(y, out=y)
    block = y.astype(dtype if dtype is not None else dt, copy=False)
    return to_gpu(block) if gpu else block
