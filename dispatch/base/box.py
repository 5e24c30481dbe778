"""``dispatch.ndarray`` as the layers below it see it.

The array type lives in ``dispatch.arrays``, above the targets and the router, which still tell
its arrays apart and hand back 0-d device results NumPy returns as scalars. The array layer
registers its type and its scalar wrapper here as it loads (``register``); the layers below
ask this module, so no import points up.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from dispatch.base.devices import Device, device_of

__all__ = ["Wrapper", "device", "device_scalar", "ndarray", "register", "register_copies", "valid_on"]


class Wrapper:
    """The base of dispatch's own array types: ``isinstance(x, Wrapper)`` asks whether ``x`` is a
    dispatch array. ``dispatch.ndarray`` itself also names NumPy's arrays (``isinstance`` and
    ``issubclass``, as a drop-in's must), so dispatch's own code asks this class instead."""

    __slots__ = ()


class _Unset:
    """Stands for the array type until ``register``: nothing is an instance of it."""


ndarray: type = _Unset
_scalar: Callable[[Any], Any] | None = None
_valid_on: Callable[[Any, Any], bool] | None = None


def register(array_type: type, scalar: Callable[[Any], Any]) -> None:
    """Called once by ``dispatch.arrays._array``: its array type and its 0-d device result wrapper."""
    global ndarray, _scalar
    ndarray, _scalar = array_type, scalar


def register_copies(valid: Callable[[Any, Any], bool]) -> None:
    """Called once by ``dispatch.arrays.mirrors``: its ``valid_on``."""
    global _valid_on
    _valid_on = valid


def valid_on(x: Any, place: Any) -> bool:
    """Whether ``x`` (a ``dispatch.ndarray`` or a native array) can be read on ``place`` (a target,
    a device, or either's name) with no copy: its data is there, or a valid copy of it is kept
    there (``dispatch.arrays.mirrors.valid_on``)."""
    return _valid_on(x, place)


def device_scalar(native: Any) -> Any:
    """A 0-d device array that stands for a NumPy scalar, as a ``dispatch.ndarray``."""
    return _scalar(native)


def native(x: Any) -> Any:
    """The backend array a ``dispatch.ndarray`` holds, or ``x`` itself."""
    return x._engine_array if isinstance(x, Wrapper) else x


def device(x: Any) -> Device:
    """The device holding ``x``, a ``dispatch.ndarray`` or a native array."""
    return device_of(native(x))


def dtype(x: Any) -> np.dtype:
    """The NumPy dtype of ``x``, a ``dispatch.ndarray`` or a native array."""
    if isinstance(x, (Wrapper, np.ndarray)):
        return x.dtype
    return ndarray._from_native(x).dtype
