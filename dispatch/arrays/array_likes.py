"""Objects NumPy reads through their ``__array__`` alone, shown to NumPy as it can read them.

A class written under ``import dispatch as np`` whose ``__array__`` returns ``np.asarray(...)``
returns a dispatch array, and NumPy's coercion takes nothing but a ``numpy.ndarray`` from
``__array__`` ("object __array__ method not producing an array"). dispatch hands such an object
to NumPy's functions inside a small proxy whose ``__array__`` reads the host array out of it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["for_numpy", "read_whole"]

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


def _alone(kind: type) -> bool:
    """Whether NumPy reads objects of ``kind`` through their ``__array__`` alone."""
    alone = _THROUGH_ARRAY.get(kind)
    if alone is None:
        alone = _THROUGH_ARRAY[kind] = (hasattr(kind, "__array__") and not issubclass(kind, (np.ndarray, np.generic))
                                        and not any(hasattr(kind, name) for name in _OTHER_PROTOCOLS))
    return alone


def for_numpy(value: Any) -> Any:
    """``value`` as NumPy's functions may be given it: an object NumPy reads through its
    ``__array__`` alone comes inside ``_NumpysArrayLike``; anything else as it is."""
    return _NumpysArrayLike(value) if _alone(type(value)) else value


def read_whole(value: Any, dtype: Any, copy: bool | None) -> tuple[Any, bool | None] | None:
    """What ``np.array(value, dtype, copy=copy)`` takes from an object read through ``__array__``
    alone, as NumPy's coercion does: ``__array__``'s result itself (a dispatch array among them)
    and the copy still to make: only where a cast needs one, once ``copy=True`` was asked of
    ``__array__`` (NumPy trusts it). None for any other object, or an ``__array__`` without the
    ``copy`` keyword (NumPy's deprecated path, left to it)."""
    if not _alone(type(value)):
        return None
    args = () if dtype is None else (dtype,)
    try:  # (NumPy asks for no copy keyword where a copy is made if needed)
        got = value.__array__(*args) if copy is None else value.__array__(*args, copy=bool(copy))
    except TypeError as error:
        if "copy" in str(error):
            return None
        raise
    if not isinstance(got, np.ndarray) and not hasattr(type(got), "__array__"):
        return None  # not an array: NumPy's coercion refuses it with its own error
    return got, (None if copy else copy)  # a cast it still needs is made
