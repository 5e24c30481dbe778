"""What NumPy would return for a call: result dtypes and kinds, learned by running NumPy
itself on one-element stand-ins of the arguments (same dtypes, same number of dimensions,
same keyword arguments), cached per signature.

A target whose result differs in dtype is cast to NumPy's; a signature NumPy itself rejects
on stand-ins is refused, so the real call runs on NumPy and raises NumPy's error or gives
NumPy's answer. Shape and value semantics are each adapter's job.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["Expected", "expected"]


@dataclass(frozen=True)
class Expected:
    """NumPy's result, described: a dtype per output and whether each is a NumPy scalar."""

    dtypes: tuple[np.dtype, ...]
    scalars: tuple[bool, ...]
    container: type | None  # tuple, list, a named tuple type, or None for one array

    def build(self, items: list[Any]) -> Any:
        """``items`` in NumPy's container: one array, a tuple, a list or a named tuple."""
        if self.container is None:
            return items[0]
        if self.container in (tuple, list):
            return self.container(items)
        return self.container(*items)

    @property
    def dtype(self) -> np.dtype:
        return self.dtypes[0]


_cache: dict[Any, Expected | None] = {}


def _stand_in(x: Any, dtype_of: Any) -> Any:
    if hasattr(x, "shape") and hasattr(x, "dtype") and not isinstance(x, np.generic):
        dtype = dtype_of(x)
        return np.ones((1,) * len(x.shape), dtype=dtype)
    return x


def _signature(x: Any, dtype_of: Any) -> Any:
    if hasattr(x, "shape") and hasattr(x, "dtype") and not isinstance(x, np.generic):
        return ("array", dtype_of(x), len(x.shape))
    if isinstance(x, (list, tuple)):
        return (type(x), tuple(_signature(v, dtype_of) for v in x))
    if isinstance(x, (int, float, complex, bool, str, type(None), np.generic, np.dtype, type)):
        return (type(x), x) if not isinstance(x, (float, complex)) else (type(x),)
    raise TypeError  # not hashable in a useful way: no caching


def expected(func: Any, args: tuple, kwargs: dict, dtype_of: Any) -> Expected | None:
    """NumPy's result description for ``func(*args, **kwargs)``; ``None`` if NumPy rejects
    the stand-ins (the target should then refuse)."""
    try:
        key = (func, _signature(args, dtype_of), _signature(tuple(sorted(kwargs.items())), dtype_of))
    except TypeError:
        key = None
    if key is not None and key in _cache:
        return _cache[key]
    stand_args = tuple(_convert(a, dtype_of) for a in args)
    stand_kwargs = {k: _convert(v, dtype_of) for k, v in kwargs.items()}
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            result = func(*stand_args, **stand_kwargs)
    except Exception:
        found = None
    else:
        found = _describe(result)
    if key is not None:
        _cache[key] = found
    return found


def _convert(x: Any, dtype_of: Any) -> Any:
    if isinstance(x, (list, tuple)):
        return type(x)(_stand_in(v, dtype_of) for v in x)
    return _stand_in(x, dtype_of)


def _describe(result: Any) -> Expected | None:
    items = result if isinstance(result, (tuple, list)) else (result,)
    dtypes, scalars = [], []
    for r in items:
        if isinstance(r, np.ndarray):
            dtypes.append(r.dtype)
            scalars.append(False)
        elif isinstance(r, np.generic):
            dtypes.append(r.dtype)
            scalars.append(True)
        else:
            return None  # lists, Python objects: nothing a target should imitate
    container = type(result) if isinstance(result, (tuple, list)) else None
    return Expected(tuple(dtypes), tuple(scalars), container)
