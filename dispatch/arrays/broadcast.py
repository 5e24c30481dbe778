"""``dispatch.broadcast``: NumPy's ``broadcast`` object over the arrays it was given.

NumPy's own object reads a dispatch array through ``__array__``, so its iterators' ``base`` is
the NumPy array inside the wrapper; this one runs NumPy's and hands back the arrays themselves.
"""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np

from dispatch.arrays._array import wrap_host
from dispatch.base.box import Wrapper

__all__ = ["broadcast"]


class _BroadcastType(type):
    """NumPy's broadcast objects are instances of ``dispatch.broadcast`` too, as NumPy's arrays
    are of ``dispatch.ndarray``."""

    def __instancecheck__(cls, obj: Any) -> bool:
        return type(obj) is cls or isinstance(obj, np.broadcast)


class broadcast(metaclass=_BroadcastType):
    """Produce an object that mimics broadcasting: NumPy's ``numpy.broadcast``.

    Parameters
    ----------
    *args : array_like or broadcast
        The arrays to broadcast against one another; a broadcast object stands for its arrays.

    Notes
    -----
    ``iters`` are NumPy's iterators over the broadcast shape, each with the array it was given
    as its ``base`` (a dispatch array itself, not the NumPy data inside it), as NumPy's are.
    """

    __slots__ = ("_arrays", "_numpy")
    # NumPy's: ``broadcast(*arrays)``, whose keywords are refused with a ValueError (below)
    __signature__ = inspect.Signature([inspect.Parameter("arrays", inspect.Parameter.VAR_POSITIONAL)])

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        arrays: list = []
        for x in args:
            if type(x) is broadcast:
                arrays.extend(x._arrays)
            elif isinstance(x, np.broadcast):
                arrays.extend(it.base for it in x.iters)
            else:
                arrays.append(x)
        self._numpy = np.broadcast(*(x.__array__() if isinstance(x, Wrapper) else x for x in arrays), **kwargs)
        # what NumPy made of the rest (lists, scalars) is its iterator's base, as a dispatch array
        self._arrays = tuple(x if isinstance(x, (Wrapper, np.ndarray)) else wrap_host(it.base)
                             for x, it in zip(arrays, self._numpy.iters, strict=True))

    @property
    def iters(self) -> tuple[_Iterator, ...]:
        """One iterator per array, over the broadcast shape; each one's ``base`` is its array."""
        return tuple(_Iterator(it, a) for it, a in zip(self._numpy.iters, self._arrays, strict=True))

    @property
    def shape(self) -> tuple[int, ...]:
        return self._numpy.shape

    @property
    def ndim(self) -> int:
        return self._numpy.ndim

    @property
    def nd(self) -> int:
        return self._numpy.nd

    @property
    def numiter(self) -> int:
        return self._numpy.numiter

    @property
    def size(self) -> int:
        return self._numpy.size

    @property
    def index(self) -> int:
        return self._numpy.index

    def reset(self, /) -> None:
        """Reset the iteration to the first element."""
        self._numpy.reset()

    def __iter__(self) -> broadcast:
        return self

    def __next__(self) -> tuple:
        return next(self._numpy)


class _Iterator:
    """NumPy's iterator over one array of a broadcast (its ``flatiter``), whose ``base`` is the
    array given: iterating and indexing it are NumPy's, over the broadcast shape."""

    __slots__ = ("_it", "base")

    def __init__(self, it: Any, base: Any) -> None:
        self._it = it
        self.base = base

    def __iter__(self) -> _Iterator:
        return self

    def __next__(self) -> Any:
        return next(self._it)

    def __len__(self) -> int:
        return len(self._it)

    def __getitem__(self, key: Any) -> Any:
        return wrap_host(self._it[key.__array__() if isinstance(key, Wrapper) else key])

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        return self._it.__array__(dtype, copy=copy)

    @property
    def index(self) -> int:
        return self._it.index

    @property
    def coords(self) -> tuple[int, ...]:
        return self._it.coords

    def copy(self) -> Any:
        return wrap_host(self._it.copy())
