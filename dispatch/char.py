"""``dispatch.char``: ``numpy.char``, whose ``array`` and ``asarray`` make NumPy's chararray (NumPy's
own subclass, as every subclass stays NumPy's) of a dispatch array from the NumPy array it holds:
NumPy's tell their input apart by ``isinstance(obj, numpy.ndarray)``. Its other functions are
NumPy's, whose calls on dispatch arrays are routed (``__array_function__``)."""

from __future__ import annotations

import numpy as _np
from numpy.char import *  # noqa: F403 - NumPy's names, as they are

from dispatch._namespace import on_host

__all__ = list(_np.char.__all__)

array = on_host(_np.char.array, __name__)
asarray = on_host(_np.char.asarray, __name__)
