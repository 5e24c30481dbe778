"""``dispatch.fft``: ``numpy.fft`` with every function routed."""

from __future__ import annotations

import sys

import numpy as _np

from dispatch._namespace import lazy_namespace
from dispatch.arrays._compiled import installed_in

__getattr__, __dir__ = lazy_namespace(globals(), _np.fft, "fft.")

__all__ = sorted(n for n in _np.fft.__all__ if n != "test")

installed_in(sys.modules[__name__])
