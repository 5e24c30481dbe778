"""Which ``Generator`` calls a parallel draw reproduces, and how: a call becomes a ``Plan``.

``plan`` returns ``None`` for anything else (another bit generator, a scalar draw, array
parameters, ``out=``, bad arguments: NumPy's own method then answers, errors included).
"""

from __future__ import annotations

import math
import numbers
import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from dispatch.streams import transforms as tf

# The methods drawn in parallel.
METHODS = frozenset(
    {"random", "standard_normal", "normal", "uniform", "standard_exponential", "exponential", "integers"}
)


@dataclass(frozen=True)
class Plan:
    """A draw of ``n`` outputs of ``method``, finished by ``finish(values, xp)`` into ``shape``."""

    method: tf.Method | None  # None: every output is ``constant`` and no draw is made
    shape: tuple[int, ...]
    n: int
    finish: Callable[[Any, Any], Any]
    dtype: np.dtype
    constant: Any = None


def _shape(size: Any) -> tuple[int, ...] | None:
    if size is None:
        return None
    try:
        shape = (operator.index(size),) if np.ndim(size) == 0 else tuple(operator.index(s) for s in size)
    except TypeError:
        return None
    return shape if all(s >= 0 for s in shape) else None


def _real(value: Any) -> float | None:
    if isinstance(value, (numbers.Real, np.floating, np.integer)) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, np.ndarray) and value.ndim == 0 and value.dtype.kind in "fiu":
        return float(value)
    return None


def _bind(name: str, args: tuple, kwargs: dict) -> dict | None:
    names = {
        "random": ("size", "dtype", "out"),
        "standard_normal": ("size", "dtype", "out"),
        "standard_exponential": ("size", "dtype", "method", "out"),
        "normal": ("loc", "scale", "size"),
        "uniform": ("low", "high", "size"),
        "exponential": ("scale", "size"),
        "integers": ("low", "high", "size", "dtype", "endpoint"),
    }[name]
    if len(args) > len(names) or any(k not in names for k in kwargs):
        return None
    bound = dict(zip(names, args, strict=False))
    if any(k in bound for k in kwargs):
        return None
    bound.update(kwargs)
    return bound


def _identity(values: Any, xp: Any) -> Any:
    return values


def plan(name: str, args: tuple, kwargs: dict) -> Plan | None:
    """The plan for ``Generator.<name>(*args, **kwargs)`` on a ``PCG64``, or ``None``."""
    if name not in METHODS:
        return None
    b = _bind(name, args, kwargs)
    if b is None or b.get("out") is not None:
        return None
    shape = _shape(b.get("size"))
    if shape is None:
        return None
    n = math.prod(shape)
    if name == "integers":
        return _integers(b, shape, n)
    try:
        dtype = np.dtype(b.get("dtype", np.float64))
    except TypeError:
        return None
    if dtype not in (np.float64, np.float32):
        return None
    wide = dtype == np.float64
    if name == "random":
        return Plan(tf.Random64() if wide else tf.Random32(), shape, n, _identity, dtype)
    if name == "standard_normal":
        return Plan(tf.Normal64() if wide else tf.Normal32(), shape, n, _identity, dtype)
    if name == "standard_exponential":
        if b.get("method", "zig") != "zig":
            return None
        return Plan(tf.Exponential64() if wide else tf.Exponential32(), shape, n, _identity, dtype)
    if name == "normal":
        loc, scale = _real(b.get("loc", 0.0)), _real(b.get("scale", 1.0))
        if loc is None or scale is None or not scale >= 0:
            return None
        return Plan(tf.Normal64(), shape, n, lambda z, xp: loc + scale * z, dtype)
    if name == "uniform":
        low, high = _real(b.get("low", 0.0)), _real(b.get("high", 1.0))
        if low is None or high is None:
            return None
        span = high - low
        if not (math.isfinite(span) and span >= 0):
            return None
        return Plan(tf.Random64(), shape, n, lambda u, xp: low + span * u, dtype)
    scale = _real(b.get("scale", 1.0))  # exponential
    if scale is None or not scale >= 0:
        return None
    return Plan(tf.Exponential64(), shape, n, lambda x, xp: scale * x, dtype)


def _integers(b: dict, shape: tuple[int, ...], n: int) -> Plan | None:
    low, high = b.get("low"), b.get("high")
    if high is None:
        low, high = 0, low
    if not all(isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)) for v in (low, high)):
        return None
    try:
        dtype = np.dtype(b.get("dtype", np.int64))
    except TypeError:
        return None
    if dtype == np.bool_:
        bits, lowest, highest = 1, 0, 1
    elif dtype.kind in "iu" and dtype.itemsize in (1, 2, 4, 8):
        bits = 8 * dtype.itemsize
        info = np.iinfo(dtype)
        lowest, highest = int(info.min), int(info.max)
    else:
        return None
    low, high = int(low), int(high) - (0 if b.get("endpoint", False) else 1)
    if low < lowest or high > highest or low > high:
        return None  # NumPy raises: its own method says why
    rng = high - low
    fill = max(bits, 8)
    unsigned = np.dtype(f"uint{fill}")
    off = low & ((1 << fill) - 1)
    if bits == 1:
        finish = (lambda v, xp: v.astype(xp.bool_)) if rng else None
        method = tf.Bounded(1, "raw", 1) if rng else None
    else:
        draw_bits = 32 if (fill == 64 and rng <= 0xFFFFFFFF) else fill
        kind = "raw" if rng == (1 << draw_bits) - 1 else "lemire"
        method = tf.Bounded(draw_bits, kind, rng) if rng else None

        def finish(v: Any, xp: Any) -> Any:
            return (v.astype(unsigned) + unsigned.type(off)).astype(unsigned).view(dtype)

    if method is None:
        return Plan(None, shape, n, _identity, dtype, constant=np.array(low, dtype=dtype))
    return Plan(method, shape, n, finish, dtype)
