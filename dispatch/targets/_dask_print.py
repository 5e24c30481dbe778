"""Printing a Dask-held array as NumPy prints it, computing only what NumPy's summary shows.

NumPy summarises an array of more than ``threshold`` elements: along every axis longer than
``2 * edgeitems`` it prints the first and last ``edgeitems`` and ``...``, and it chooses the
number format from those edge items alone. So the printed text depends only on the corners:
this module computes the corner array (``edgeitems + 1`` leading and ``edgeitems`` trailing
items along each long axis; the extra item is never shown) and prints it with NumPy's
``array2string`` forced to summarise, then adds ``repr``'s ``shape=`` and ``dtype=`` as NumPy
does. Legacy print modes and ``override_repr`` print the whole array.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["text"]


def text(native: Any, how: Any, to_host: Any) -> str:
    opts = np.get_printoptions()
    shape = tuple(native.shape)
    size = math.prod(shape)
    edge = opts["edgeitems"]
    plain = (size <= opts["threshold"] or opts["legacy"] is not False or opts.get("override_repr") is not None
             or how not in (repr, str) or not any(n > 2 * edge for n in shape))
    if plain:
        return how(to_host(native))
    corner = to_host(_corners(native, edge))
    if how is str:
        return np.array2string(corner, separator=" ", prefix="", threshold=0)
    return _repr(corner, shape, size, opts)


def _corners(native: Any, edge: int) -> Any:
    for axis, n in enumerate(native.shape):
        if n > 2 * edge:
            keep = np.r_[0:edge + 1, n - edge:n]
            native = native[(slice(None),) * axis + (keep,)]
    return native


def _repr(corner: np.ndarray, shape: tuple[int, ...], size: int, opts: dict) -> str:
    """NumPy's ``array_repr`` (numpy/_core/arrayprint.py) for an array of ``shape`` whose
    summary is ``corner``'s."""
    prefix = "array("
    body = np.array2string(corner, separator=", ", prefix=prefix, suffix=")", threshold=0)
    extras = [f"shape={shape}"]  # size > threshold here, so NumPy names the shape
    dtype = _dtype_text(corner.dtype)
    if dtype is not None:
        extras.append(f"dtype={dtype}")
    start = prefix + body + ","
    extra = ", ".join(extras) + ")"
    last_line = len(start) - (start.rfind("\n") + 1)
    spacer = "\n" + " " * len(prefix) if last_line + len(extra) + 1 > opts["linewidth"] else " "
    return start + spacer + extra


def _dtype_text(dtype: np.dtype) -> str | None:
    """How NumPy's repr names ``dtype`` (``None`` where the values imply it)."""
    shown = repr(np.zeros(1, dtype))
    at = shown.rfind("dtype=")
    return None if at < 0 else shown[at + len("dtype="):-1]
