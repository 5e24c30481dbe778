"""``dispatch.rec``: ``numpy.rec``, whose record arrays are NumPy's own subclass (as every
subclass stays NumPy's), made from dispatch arrays by the NumPy arrays they hold.

NumPy's ``rec.array`` tells its input apart by ``isinstance(obj, numpy.ndarray)`` and else asks
for ``__array_interface__``, which a structured dispatch array has not (it is read through
``__array__``): its functions are given the host arrays."""

from __future__ import annotations

import functools
from typing import Any

import numpy as _np
from numpy.rec import find_duplicate, format_parser, fromfile, fromstring, recarray, record

from dispatch.arrays import _call

__all__ = ["array", "find_duplicate", "format_parser", "fromarrays", "fromfile", "fromrecords", "fromstring",
           "recarray", "record"]


def _on_host(func: Any) -> Any:
    """NumPy's ``func`` given its first argument (an array, or a list of arrays) as host NumPy."""

    @functools.wraps(func)
    def wrapper(obj: Any, *args: Any, **kwargs: Any) -> Any:
        return func(_call.host_args((obj,))[0], *args, **kwargs)

    wrapper.__module__ = __name__
    return wrapper


array = _on_host(_np.rec.array)
fromarrays = _on_host(_np.rec.fromarrays)
fromrecords = _on_host(_np.rec.fromrecords)
