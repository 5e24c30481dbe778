"""``dispatch.linalg``: ``numpy.linalg`` with every function routed."""

from __future__ import annotations

import sys

import numpy as _np

from dispatch._namespace import lazy_namespace
from dispatch.arrays._compiled import installed_in

LinAlgError = _np.linalg.LinAlgError

__getattr__, __dir__ = lazy_namespace(globals(), _np.linalg, "linalg.")

__all__ = sorted(n for n in _np.linalg.__all__ if n != "test")

installed_in(sys.modules[__name__])
