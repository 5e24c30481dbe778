"""The ``numpy`` target: NumPy itself on the host. It runs everything, so it is where every
refused or failed call lands. Its counterpart of each op is the NumPy function itself."""

from __future__ import annotations

from typing import Any

import numpy as np

from dispatch.base.devices import HOST, is_backend_type
from dispatch.base.tiers import Backend
from dispatch.targets import registry
from dispatch.targets.protocol import Target
from dispatch.targets.registry import engine_of as _engine_of

__all__ = ["NUMPY", "NumpyTarget"]


class NumpyTarget(Target):
    """NumPy on the host: ``op.func`` on the arguments."""

    name = "numpy"
    device = HOST
    tier = Backend.SCALAR
    library = "numpy"

    def run(self, op: Any, args: tuple, kwargs: dict) -> Any:
        return op.func(*args, **kwargs)

    def from_host(self, array: np.ndarray) -> np.ndarray:
        return array

    def to_host(self, native: np.ndarray) -> np.ndarray:
        return native

    def adopt(self, native: Any) -> np.ndarray:
        return self.from_native(native)

    def owns(self, native: Any) -> bool:
        """NumPy arrays and NumPy's own subclasses (matrix, masked arrays); a device array is
        told apart by its library, as it may subclass numpy.ndarray."""
        return type(native) is np.ndarray or (isinstance(native, np.ndarray) and not is_backend_type(type(native)))

    def from_native(self, native: Any) -> np.ndarray:
        """Any engine's array as host NumPy: a device array is copied back to the host."""
        if self.owns(native):
            return native
        return _engine_of(native).to_host(native)

    def dtype_of(self, native: np.ndarray) -> np.dtype:
        return native.dtype

    def assign(self, dst: np.ndarray, src: Any) -> None:
        np.copyto(dst, self.from_native(src), casting="unsafe")

    def view(self, native: np.ndarray, dtype: np.dtype | None) -> np.ndarray:
        return native.view() if dtype is None else native.view(dtype)


NUMPY = NumpyTarget()

registry.complete("numpy", lambda: NUMPY)
