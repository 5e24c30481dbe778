"""The NumPy catalog (public home of ``dispatch.base.numpy_catalog``)."""

from dispatch.base.numpy_catalog import NUMPY_CATALOG, REMOVED_IN_NUMPY, WORKS, NumPyOp

__all__ = ["NUMPY_CATALOG", "REMOVED_IN_NUMPY", "WORKS", "NumPyOp"]
