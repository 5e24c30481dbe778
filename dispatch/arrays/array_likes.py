"""Objects NumPy reads through their ``__array__`` alone, shown to NumPy as it can read them.

A class written under ``import dispatch as np`` whose ``__array__`` returns ``np.asarray(...)``
returns a dispatch array, and NumPy's coercion takes nothing but a ``numpy.ndarray`` from
``__array__`` ("object __array__ method not producing an array"). dispatch hands such an object
to NumPy's functions inside a small proxy whose ``__array__`` reads the host array out of it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["for_numpy"]

# What else NumPy may read an object by (or hand the call to): such objects are passed as they are.
_OTHER_PROTOCOLS = ("__array_function__", "__array_ufunc__", "__array_interface__", "__array_struct__",
                    "__buffer__", "__dlpack__", "__len__", "__iter__", "__getitem__")
_THROUGH_ARRAY: dict[type, bool] = {}  # type -> whether NumPy reads its objects through __array__ alone


class _NumpysArrayLike:
    """``obj`` with its ``__array__``'s result read down to a ``numpy.ndarray``."""

    __slots__ = ("obj",)

    def __init__(self, obj: Any) -> None:
        self.obj = obj

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> Any:
        args = () if dtype is None else (dtype,)
        got = self.obj.__array__(*args) if copy is None else self.obj.__array__(*args, copy=copy)
        if not isinstance(got, np.ndarray) and hasattr(type(got), "__array__"):
            got = got.__array__()  # a dispatch array (or another array-like): its host array
        return got


def for_numpy(value: Any) -> Any:
    """``value`` as NumPy's functions may be given it: an object NumPy reads through its
    ``__array__`` alone comes inside ``_NumpysArrayLike``; anything else as it is."""
    kind = type(value)
    alone = _THROUGH_ARRAY.get(kind)
    if alone is None:
        alone = _THROUGH_ARRAY[kind] = (hasattr(kind, "__array__") and not issubclass(kind, (np.ndarray, np.generic))
                                        and not any(hasattr(kind, name) for name in _OTHER_PROTOCOLS))
    return _NumpysArrayLike(value) if alone else value
