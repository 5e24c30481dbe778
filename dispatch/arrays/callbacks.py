"""NumPy's functions that call the user's function on arrays (``apply_along_axis``,
``apply_over_axes``, ``piecewise``) run on NumPy; the user's function is given dispatch arrays
there, as under NumPy it is given NumPy's (``x.view(np.ndarray)`` in it is the module's type).

``install`` makes these ops call NumPy's function with the user's function adapted, on every
path (the namespace, ``__array_function__``, the compiled path): each reads ``op.func``."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from dispatch.arrays._array import wrap_host
from dispatch.base.ops import op_named

__all__ = ["install"]


def _given_dispatch_arrays(func: Any) -> Any:
    """``func`` called with the NumPy arrays NumPy passes it as dispatch arrays (views of them)."""
    if not callable(func):
        return func  # (piecewise takes values among its functions)

    @functools.wraps(func)
    def called(*args: Any, **kwargs: Any) -> Any:
        return func(*[wrap_host(a) for a in args], **{k: wrap_host(v) for k, v in kwargs.items()})

    return called


def _apply_along_axis(func1d: Any, axis: Any, arr: Any, *args: Any, **kwargs: Any) -> Any:
    return np.apply_along_axis(_given_dispatch_arrays(func1d), axis, arr, *args, **kwargs)


def _apply_over_axes(func: Any, a: Any, axes: Any) -> Any:
    return np.apply_over_axes(_given_dispatch_arrays(func), a, axes)


def _piecewise(x: Any, condlist: Any, funclist: Any, *args: Any, **kw: Any) -> Any:
    if isinstance(funclist, (list, tuple)):
        funclist = [_given_dispatch_arrays(f) for f in funclist]
    return np.piecewise(x, condlist, funclist, *args, **kw)


_ADAPTED = {"apply_along_axis": _apply_along_axis, "apply_over_axes": _apply_over_axes, "piecewise": _piecewise}


def install() -> None:
    """The ops of NumPy's functions that call the user's function run them with it adapted."""
    for name, adapted in _ADAPTED.items():
        op = op_named(name)
        op.func = functools.wraps(op.func)(adapted)
