"""Small value classes that cost nothing to define: ``repr`` and ``==`` from their ``__slots__``.

A ``dataclasses.dataclass`` compiles its ``__init__``, ``__repr__`` and ``__eq__`` (and, frozen,
``__setattr__`` and ``__hash__``) from source when its class is made: 1-5 million instructions
each, paid at import, so at a script's first routed call. The classes of the call path are
written out instead: each its own ``__init__`` and ``__slots__`` (its fields, in order), these
bases the rest, as a dataclass would have them::

    class Stat(Record):
        __slots__ = ("seconds", "samples")

        def __init__(self, seconds: float, samples: int) -> None:
            self.seconds = seconds
            self.samples = samples

``Stat(1.0, 2)`` reads ``Stat(seconds=1.0, samples=2)`` and equals another ``Stat`` of equal
fields; it is unhashable, as a dataclass with ``eq`` is. A ``Frozen`` record is hashable and its
fields cannot be assigned (``AttributeError``) once ``__init__`` has set them with ``_set``.
"""

from __future__ import annotations

from typing import Any

__all__ = ["Frozen", "Record"]


class Record:
    """Base of a value class whose fields are its ``__slots__``: ``repr`` and ``==`` over them."""

    __slots__ = ()

    def __repr__(self) -> str:
        values = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__)
        return f"{type(self).__qualname__}({values})"

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return all(getattr(self, name) == getattr(other, name) for name in self.__slots__)

    __hash__ = None  # type: ignore[assignment]  # equal by value and mutable, as a dataclass with eq


class Frozen(Record):
    """A ``Record`` whose fields are set once, by ``self._set(...)`` in ``__init__``: hashable."""

    __slots__ = ()

    def _set(self, *values: Any) -> None:
        """Set the fields, in the order of ``__slots__``."""
        for name, value in zip(self.__slots__, values, strict=True):
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"cannot assign to field {name!r} of a frozen {type(self).__qualname__}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r} of a frozen {type(self).__qualname__}")

    def __hash__(self) -> int:
        return hash(tuple(getattr(self, name) for name in self.__slots__))

    # copied and pickled through ``_set``, which ``copy`` and ``pickle`` would bypass
    def __getstate__(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in self.__slots__)

    def __setstate__(self, state: tuple[Any, ...]) -> None:
        self._set(*state)
