"""Objects NumPy reads through their ``__array__`` alone, shown to NumPy as it can read them.

A class written under ``import dispatch as np`` whose ``__array__`` returns ``np.asarray(...)``
returns a dispatch array, and NumPy's coercion takes nothing but a ``numpy.ndarray`` from
``__array__`` ("object __array__ method not producing an array"). dispatch hands such an object
to NumPy's functions inside a small proxy whose ``__array__`` reads the host array out of it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["for_numpy", "nested", "read_whole", "refused", "restore"]

# What else NumPy may read an object by (or hand the call to): such objects are passed as they are.
_OTHER_PROTOCOLS = ("__array_function__", "__array_ufunc__", "__array_interface__", "__array_struct__",
                    "__buffer__", "__dlpack__")
# What NumPy may also read of such an object, which its proxy keeps: a sequence's methods (NumPy
# reads through ``__array__`` first), the wrap of a ufunc's result and its priority among inputs.
_SEQUENCE = ("__len__", "__iter__", "__getitem__")
_THROUGH_ARRAY: dict[type, Any] = {}  # type -> the proxy class NumPy is shown its objects in, or None


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


class _Sequence:
    """What NumPy's functions that iterate the object (``len``, ``for``, ``[i]``) read of it."""

    __slots__ = ()

    def __len__(self) -> int:
        return len(self.obj)

    def __iter__(self) -> Any:
        return iter(self.obj)

    def __getitem__(self, key: Any) -> Any:
        return self.obj[key]


class _Wrapping:
    """The object's ``__array_wrap__``, which NumPy asks to wrap a ufunc's result."""

    __slots__ = ()

    def __array_wrap__(self, *args: Any) -> Any:  # (NumPy retries with fewer arguments on a TypeError)
        return self.obj.__array_wrap__(*args)


class _Prioritised:
    """The object's ``__array_priority__``: which input's ``__array_wrap__`` NumPy takes."""

    __slots__ = ()

    @property
    def __array_priority__(self) -> Any:
        return self.obj.__array_priority__


_PARTS = ((_Sequence, _SEQUENCE), (_Wrapping, ("__array_wrap__",)), (_Prioritised, ("__array_priority__",)))
_PROXY_CLASSES: dict[tuple, type] = {}  # which parts -> the proxy class with them
_PROXIES: set[type] = set()  # every proxy class made


def _proxy(kind: type) -> Any:
    """The proxy class NumPy is shown objects of ``kind`` in, if it reads them through their
    ``__array__`` alone; else None."""
    try:
        return _THROUGH_ARRAY[kind]
    except KeyError:
        proxy = None
        if (hasattr(kind, "__array__") and not issubclass(kind, (np.ndarray, np.generic)) and not _numpys(kind)
                and not any(hasattr(kind, name) for name in _OTHER_PROTOCOLS)):
            parts = tuple(part for part, names in _PARTS if any(hasattr(kind, name) for name in names))
            proxy = _PROXY_CLASSES.get(parts)
            if proxy is None:
                proxy = _PROXY_CLASSES[parts] = type("_NumpysArrayLike", (*parts, _NumpysArrayLike), {"__slots__": ()})
                _PROXIES.add(proxy)
        _THROUGH_ARRAY[kind] = proxy
        return proxy


def _numpys(kind: type) -> bool:
    """Whether ``kind`` is one of NumPy's own classes (``poly1d``): handed to NumPy as it is, since
    NumPy's functions tell it by ``isinstance`` and use its methods (``polyder`` gives a poly1d back)."""
    module = getattr(kind, "__module__", None) or ""
    return module == "numpy" or module.startswith("numpy.")


def _alone(kind: type) -> bool:
    """Whether NumPy reads objects of ``kind`` through their ``__array__`` alone."""
    return _proxy(kind) is not None


made = 0  # proxies made so far: a call that made none has none to ``restore``


def for_numpy(value: Any) -> Any:
    """``value`` as NumPy's functions may be given it: an object NumPy reads through its
    ``__array__`` alone comes inside a proxy (``_NumpysArrayLike``); anything else as it is."""
    global made
    proxy = _proxy(type(value))
    if proxy is None:
        return value
    made += 1
    return proxy(value)


_DEPTH = 64  # the most dimensions NumPy reads nested sequences to (a list may hold itself)
_SCALARS = frozenset({int, float, complex, bool, str, bytes, type(None)})


def nested(value: Any, depth: int = _DEPTH) -> Any:
    """``for_numpy`` through nested lists and tuples: ``value`` itself where nothing in it needs a
    proxy, else a copy of the lists holding one."""
    kind = type(value)
    if kind is not list and kind is not tuple:
        return for_numpy(value)
    copied = None
    if depth:
        for i, v in enumerate(value):
            if type(v) in _SCALARS:  # (the common case: numbers, read as they are)
                continue
            new = nested(v, depth - 1)
            if new is not v:
                if copied is None:
                    copied = list(value)
                copied[i] = new
    if copied is None:
        return value
    return copied if kind is list else tuple(copied)


def refused(error: ValueError) -> bool:
    """Whether NumPy refused what an object's ``__array__`` gave (a dispatch array): the call is
    then made again with such objects in proxies (``nested``), and its object array ``restore``d."""
    return "__array__ method not producing an array" in str(error)


def restore(arr: Any) -> Any:
    """An object array NumPy built from proxied objects (``for_numpy``) holding the objects
    themselves, as NumPy's holds the objects it was given (a nested 0-d or ragged array-like);
    also through the lists made for it (``nested``). Any other array as it is."""
    if isinstance(arr, np.ndarray) and arr.dtype.kind == "O":
        flat = arr.reshape(-1)  # (a view where it can be; ``flat`` takes at most 32 dimensions)
        changed = False
        for i, v in enumerate(flat):
            kind = type(v)
            if kind in _PROXIES or kind is list or kind is tuple:
                obj = _restored(v)
                if obj is not v:
                    flat[i] = obj
                    changed = True
        if changed and not np.shares_memory(flat, arr):
            arr[...] = flat.reshape(arr.shape)
    return arr


def _restored(value: Any, depth: int = _DEPTH) -> Any:
    kind = type(value)
    if kind in _PROXIES:
        return value.obj
    if (kind is list or kind is tuple) and depth:
        items = [_restored(v, depth - 1) for v in value]
        if any(new is not old for new, old in zip(items, value, strict=True)):
            if kind is tuple:
                return tuple(items)
            value[:] = items  # (a list ``nested`` made: its own)
    return value


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
