"""``dispatch.rec``: ``numpy.rec``, whose record arrays are NumPy's own subclass (as every
subclass stays NumPy's), made from dispatch arrays by the NumPy arrays they hold.

NumPy's ``rec.array`` tells its input apart by ``isinstance(obj, numpy.ndarray)`` and else asks
for ``__array_interface__``, which a structured dispatch array has not (it is read through
``__array__``): its functions are given the host arrays."""

from __future__ import annotations

import numpy as _np
from numpy.rec import find_duplicate, format_parser, fromfile, fromstring, recarray, record

from dispatch._namespace import on_host

__all__ = ["array", "find_duplicate", "format_parser", "fromarrays", "fromfile", "fromrecords", "fromstring",
           "recarray", "record"]

array = on_host(_np.rec.array, __name__)
fromarrays = on_host(_np.rec.fromarrays, __name__)
fromrecords = on_host(_np.rec.fromrecords, __name__)
