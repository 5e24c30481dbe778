"""What one estimator call would take on each calibrated target: ``seconds(cls, method, X, others)``.

No NumPy kernel is an estimator, but the catalog says what shape of work each one does, and
this machine's calibration prices the NumPy call of that shape on every target it measured:

- a fit of a ``gram`` or ``svd`` estimator is priced as a factorisation of X
  (``linalg.svd``; a tall X by the calibration's tall curve);
- a fit of a ``pairwise`` one as the product of X with its transpose;
- a fit of a ``scale`` one, and every call that is not a fit (``predict``, ``transform``,
  ``score``...), as one pass over X (``add``);
- ``iterative`` and ``trees`` work is not priced (how many passes is not known before the call).

A device also pays the copy of the call's arrays to it. Start-up is not in these prices:
``dispatch.routing.startup`` adds it where a target is not up yet.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from converters import SklearnConverter
from dispatch.base.ops import op_named
from dispatch.routing import cost, router

__all__ = ["FITS", "forget", "seconds", "work_of"]

FITS = frozenset({"fit", "fit_transform", "fit_predict", "partial_fit"})
_OP_FOR_WORK = {"gram": "linalg.svd", "svd": "linalg.svd", "pairwise": "matmul", "scale": "add"}


class _Shaped:
    __slots__ = ("dtype", "shape")

    def __init__(self, shape: tuple[int, ...], dtype: np.dtype) -> None:
        self.shape, self.dtype = shape, dtype


class _Inputs:
    """The arrays of the NumPy call an estimator's work is priced as (what ``cost`` reads)."""

    def __init__(self, shapes: list[tuple[int, ...]], dtype: np.dtype) -> None:
        self.arrays = [_Shaped(s, dtype) for s in shapes]
        self.dtypes = tuple(dtype for _ in shapes)
        self.size = max(math.prod(s) for s in shapes)
        self.nbytes = sum(math.prod(s) for s in shapes) * dtype.itemsize


def seconds(cls: type, method: str, X: Any, others: tuple = ()) -> dict[str, float]:
    """Seconds for ``cls().<method>(X, *others)`` on each target this machine's calibration
    measured, host data copied to a device included; empty where nothing prices it (no
    calibration, a work shape with no price, X not a matrix)."""
    shape = tuple(int(s) for s in getattr(X, "shape", ()))
    if len(shape) != 2 or not router.ROUTER.models:
        return {}
    dtype = np.dtype(getattr(X, "dtype", np.float64))
    moved = sum(_nbytes(a) for a in (X, *others))
    return dict(_priced(cls, method in FITS, shape, dtype.str if dtype.kind == "f" else "<f8", moved,
                        id(router.ROUTER.selector())))


@functools.lru_cache(maxsize=256)
def _priced(cls: type, fit: bool, shape: tuple[int, int], dtype: str, moved: int, _table: int) -> tuple:
    op_name = _OP_FOR_WORK.get(work_of(cls) or "") if fit else "add"
    if op_name is None:
        return ()
    shapes = [shape, shape[::-1]] if op_name == "matmul" else [shape]
    inputs, op = _Inputs(shapes, np.dtype(dtype)), op_named(op_name)
    out = []
    for name, model in router.ROUTER.models.items():
        compute = cost.compute_seconds(model, op, inputs)
        if compute is None:
            continue
        out.append((name, compute if model.device.is_host else compute + model.to_device_seconds(moved)))
    return tuple(out)


def forget() -> None:
    """Drop the prices kept (a new calibration, tests)."""
    _priced.cache_clear()


def _nbytes(a: Any) -> int:
    if not (hasattr(a, "shape") and hasattr(a, "dtype")):
        return 0
    try:
        return math.prod(int(s) for s in a.shape) * np.dtype(a.dtype).itemsize
    except TypeError:  # a torch dtype: such data is on its device already, or priced as 8 bytes
        return math.prod(int(s) for s in a.shape) * 8


@functools.cache
def work_of(cls: type) -> str | None:
    """The catalog work shape of ``cls`` or of its nearest catalogued base class."""
    converter = SklearnConverter()
    for klass in cls.__mro__:
        try:
            return converter.lookup(klass.__name__).entry.work
        except KeyError:
            continue
    return None
