"""What NumPy would return for a call: result dtypes and kinds, learned by running NumPy
itself on small stand-ins of the arguments (same dtypes, same keyword arguments, each axis
cut to at most two elements), cached per signature.

Axes keep their length up to two: an empty axis stays empty and a length-one axis still
broadcasts, so NumPy rejects the stand-ins exactly when it rejects such shapes, and two
elements are enough for ops that need more than one (``irfft`` of one element has no
output length).

A target whose result differs in dtype is cast to NumPy's; a signature NumPy itself rejects
on stand-ins is refused, so the real call runs on NumPy and raises NumPy's error or gives
NumPy's answer. Shape and value semantics are each adapter's job.
"""

from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Iterator
from typing import Any

import numpy as np

from dispatch.base.records import Frozen
from dispatch.targets.protocol import Unsupported

__all__ = ["Expected", "expected", "indexing_gives_scalar", "rejects", "signature", "unique_inverse_shape"]


class Expected(Frozen):
    """NumPy's result, described: a dtype per output and whether each is a NumPy scalar."""

    __slots__ = ("dtypes", "scalars", "container")  # noqa: RUF023 - the fields, in order

    def __init__(self, dtypes: tuple[np.dtype, ...], scalars: tuple[bool, ...], container: type | None) -> None:
        self._set(dtypes, scalars, container)  # container: tuple, list, a named tuple type, or None for one array

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


_cache: dict[Any, tuple[Expected | None, bool]] = {}  # signature -> (description, rejected)


def _small(shape: Any) -> tuple[int, ...]:
    try:
        return _small_cached(shape)
    except TypeError:  # a shape that is not a tuple (a list)
        return _small_cached(tuple(shape))


@functools.lru_cache(maxsize=4096)  # a loop asks for the same few shapes at every call
def _small_cached(shape: tuple) -> tuple[int, ...]:
    return tuple([d if d < 2 else 2 for d in shape])


def _stand_in(x: Any, dtype_of: Any) -> Any:
    """Ones for vectors; identity matrices from two dimensions on, so that factorisations
    (solve, cholesky, inv) accept them."""
    if hasattr(x, "shape") and hasattr(x, "dtype") and not isinstance(x, np.generic):
        shape = _small(x.shape)
        if len(shape) < 2:
            return np.ones(shape, dtype=dtype_of(x))
        stand = np.zeros(shape, dtype=dtype_of(x))
        for i in range(min(shape[-2:])):
            stand[..., i, i] = 1
        return stand
    return x


_array_types: set[type] = set()  # the array types seen: known again by their type alone


def _signature(x: Any, dtype_of: Any) -> Any:
    kind = type(x)
    if kind is tuple or kind is list:  # the arguments themselves, first of all
        return (kind, tuple([_signature(v, dtype_of) for v in x]))
    if kind in _array_types or (hasattr(x, "shape") and hasattr(x, "dtype") and not isinstance(x, np.generic)):
        _array_types.add(kind)
        return ("array", dtype_of(x), _small(x.shape))
    if isinstance(x, (list, tuple)):
        return (type(x), tuple(_signature(v, dtype_of) for v in x))
    if isinstance(x, (int, float, complex, bool, str, type(None), np.generic, np.dtype, type)):
        return (type(x), x) if not isinstance(x, (float, complex)) else (type(x),)
    raise TypeError  # not hashable in a useful way: no caching


# Functions whose result dtype depends on the values, which stand-ins cannot tell: eig gives
# float64 when every eigenvalue is real, complex128 otherwise (roots and poly go through it);
# real_if_close drops the imaginary part only when it is small.
_VALUE_DEPENDENT = frozenset({np.linalg.eig, np.linalg.eigvals, np.roots, np.poly, np.real_if_close})


# Arguments that index into an axis, which two-element stand-ins cannot hold (kth=4 of a
# 1000-long axis): the stand-in call gets index 0, which leaves the result's dtype as it is.
# Where the real index is out of range, the target raises and NumPy runs the call, raising its own error.
_AXIS_INDEX = {np.argpartition: (1, "kth"), np.partition: (1, "kth")}


def _axis_indices_zeroed(func: Any, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    position, name = _AXIS_INDEX[func]
    if name in kwargs:
        return args, {**kwargs, name: 0}
    if len(args) > position:
        return (*args[:position], 0, *args[position + 1:]), kwargs
    return args, kwargs


def expected(func: Any, args: tuple, kwargs: dict, dtype_of: Any) -> Expected | None:
    """NumPy's result description for ``func(*args, **kwargs)``; ``None`` if NumPy rejects
    the stand-ins (the target should then refuse) or gives no array or NumPy scalar (a Python
    ``bool``, a list). ``Unsupported`` where stand-ins cannot tell: a result dtype that
    depends on the values, or a one-shot iterator among the arguments (running NumPy on it
    would consume it)."""
    return _learn(func, args, kwargs, dtype_of)[0]


def rejects(func: Any, args: tuple, kwargs: dict, dtype_of: Any) -> bool:
    """Whether NumPy raises on the stand-ins of this call (where ``expected`` is ``None``
    because NumPy refused it, not because its result is a Python object)."""
    return _learn(func, args, kwargs, dtype_of)[1]


def signature(func: Any, args: tuple, kwargs: dict, dtype_of: Any) -> tuple | None:
    """What NumPy's answer for ``func(*args, **kwargs)`` depends on: the function, each
    array's dtype and shape cut to two elements an axis, every other argument's type (and
    value, but for floats); ``None`` where an argument cannot be told this way."""
    try:
        return (func, _signature(args, dtype_of), _signature(tuple(sorted(kwargs.items())), dtype_of) if kwargs else ())
    except TypeError:
        return None


def _learn(func: Any, args: tuple, kwargs: dict, dtype_of: Any) -> tuple[Expected | None, bool]:
    if func in _VALUE_DEPENDENT:
        raise Unsupported(f"{func.__name__}: NumPy's result dtype depends on the values", lasting=True)
    if any(isinstance(a, Iterator) for a in (*args, *kwargs.values())):
        raise Unsupported("an iterator among the arguments: NumPy reads it once")
    key = signature(func, args, kwargs, dtype_of)
    if key is not None and key in _cache:
        return _cache[key]
    if func in _AXIS_INDEX:
        args, kwargs = _axis_indices_zeroed(func, args, kwargs)
    stand_args = tuple(_convert(a, dtype_of) for a in args)
    stand_kwargs = {k: _convert(v, dtype_of) for k, v in kwargs.items()}
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            result = func(*stand_args, **stand_kwargs)
    except Exception:
        learned: tuple[Expected | None, bool] = (None, True)
    else:
        learned = (_describe(result), False)
    if key is not None:
        _cache[key] = learned
    return learned


def indexing_gives_scalar(key: Any) -> bool:
    """Whether NumPy gives a scalar (not a 0-d array) when ``a[key]`` has no dimensions left:
    it does unless the key holds an Ellipsis (``a[..., 0]`` is a 0-d view)."""
    keys = key if isinstance(key, tuple) else (key,)
    return not any(k is Ellipsis for k in keys)


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


def unique_inverse_shape(shape: tuple[int, ...]) -> tuple[int, ...]:
    """The shape of the inverse ``unique(a, return_inverse=True)`` gives for an ``a`` of
    ``shape``: NumPy 2 gives ``a``'s shape, NumPy 1 a flat array."""
    return shape if _inverse_keeps_ndim(len(shape)) else (math.prod(shape),)


@functools.cache
def _inverse_keeps_ndim(ndim: int) -> bool:
    return np.unique(np.zeros((1,) * ndim, dtype=np.int8), return_inverse=True)[1].ndim == ndim
