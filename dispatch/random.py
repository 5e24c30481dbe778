"""``dispatch.random``: ``numpy.random``, drawing with NumPy's own bit generators.

Draws always happen on the host with NumPy's generators, so a seeded program gets exactly
NumPy's numbers (legacy ``seed`` / ``rand`` / ``normal``... and ``default_rng``). Results are
``dispatch.ndarray``; under a forced device target (``using("cupy")``) they are moved there.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as _np

from dispatch import _call
from dispatch._array import ndarray, wrap
from dispatch._namespace import lazy_namespace

# NumPy's classes that take no arrays keep their meaning as they are.
BitGenerator = _np.random.BitGenerator
SeedSequence = _np.random.SeedSequence
MT19937 = _np.random.MT19937
PCG64 = _np.random.PCG64
PCG64DXSM = _np.random.PCG64DXSM
Philox = _np.random.Philox
SFC64 = _np.random.SFC64

# Methods that shuffle their argument in place.
_IN_PLACE = frozenset({"shuffle"})


def _host_method(method: Any, name: str) -> Any:
    """A NumPy generator method whose array arguments come from the host and whose results
    are dispatch arrays (on the forced device, if one is forced)."""

    @functools.wraps(method)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if name in _IN_PLACE and args and isinstance(args[0], ndarray):
            target, rest = args[0], args[1:]
            target._mutate_host(lambda host: method(host, *_call.host_args(rest), **_call.host_kwargs(kwargs)))
            return None
        result = method(*_call.host_args(args), **_call.host_kwargs(kwargs))
        return _call.to_forced_device(wrap(result))

    return wrapper


class _Proxy:
    """Common to ``Generator`` and ``RandomState``: NumPy's object inside, methods wrapped."""

    __slots__ = ("_numpy",)

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._numpy, name)
        if callable(value) and not name.startswith("_"):
            return _host_method(value, name)
        return value

    def __getstate__(self) -> Any:
        return self._numpy

    def __setstate__(self, state: Any) -> None:
        self._numpy = state

    def __repr__(self) -> str:
        return repr(self._numpy)


class Generator(_Proxy):
    """``numpy.random.Generator`` whose draws are ``dispatch.ndarray``."""

    __slots__ = ()

    def __init__(self, bit_generator: Any) -> None:
        self._numpy = bit_generator if isinstance(bit_generator, _np.random.Generator) else \
            _np.random.Generator(bit_generator)

    @property
    def bit_generator(self) -> Any:
        return self._numpy.bit_generator

    def spawn(self, n_children: int) -> list[Generator]:
        return [Generator(g) for g in self._numpy.spawn(n_children)]


class RandomState(_Proxy):
    """``numpy.random.RandomState`` whose draws are ``dispatch.ndarray``."""

    __slots__ = ()

    def __init__(self, seed: Any = None) -> None:
        self._numpy = seed if isinstance(seed, _np.random.RandomState) else _np.random.RandomState(seed)


def default_rng(seed: Any = None) -> Generator:
    """``numpy.random.default_rng``: the same stream for the same seed."""
    if isinstance(seed, Generator):
        return seed
    return Generator(_np.random.default_rng(seed._numpy if isinstance(seed, _Proxy) else seed))


# Module-level functions (seed, rand, normal...) draw from NumPy's global RandomState, shared
# with NumPy itself, through the call path (so they show in traces).
__getattr__, __dir__ = lazy_namespace(globals(), _np.random, "random.")


__all__ = sorted(n for n in _np.random.__all__ if n != "test")
