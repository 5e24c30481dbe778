"""What the router hands the call path: the key of a kind of call, and a decision about it.

A decision's ``kind`` says which rule made it (``DecisionKind``); its ``reason`` says why in
words, for the trace. Code tests the kind, never the words.
"""

from __future__ import annotations

import enum
from typing import Any

try:  # the field reader ``collections.namedtuple`` uses: the same speed as a named tuple's
    from _collections import _tuplegetter
except ImportError:  # another Python
    from operator import itemgetter

    def _tuplegetter(index: int, doc: str) -> property:
        return property(itemgetter(index), doc=doc)

__all__ = ["CallKey", "Decision", "DecisionKind", "Watched", "is_forced"]


def is_forced(forced: str | None) -> bool:
    """Whether a key's ``forced`` part names a target (``using("cupy")``), not routing (``None``, ``"auto"``)."""
    return forced is not None and forced != "auto"


_tuple_new = tuple.__new__  # (bound once, as a named tuple's ``__new__`` has it)


class CallKey(tuple):
    """A kind of call, as the router caches its decisions and the history its timings.

    A named tuple of ``op``, ``dtypes``, ``bucket``, ``devices``, ``forced`` and ``layout``,
    written out: ``typing.NamedTuple`` builds its class by compiling source at each start.
    """

    __slots__ = ()
    _fields = ("op", "dtypes", "bucket", "devices", "forced", "layout")
    __match_args__ = _fields

    def __new__(cls, op: str, dtypes: tuple, bucket: int, devices: frozenset, forced: str | None,
                layout: Any) -> CallKey:
        return _tuple_new(cls, (op, dtypes, bucket, devices, forced, layout))

    op = _tuplegetter(0, "the op's name")
    dtypes = _tuplegetter(1, "the arrays' dtypes, in order")
    bucket = _tuplegetter(2, "the bit length of the largest array's element count")
    devices = _tuplegetter(3, "the devices holding the arrays")
    forced = _tuplegetter(4, "the target forced where it was made (``using``, ``set_backend``)")
    layout = _tuplegetter(5, "what else tells calls of one size apart (a reduction's axis, a product)")

    def __repr__(self) -> str:
        return "CallKey(" + ", ".join(f"{name}={value!r}" for name, value in zip(self._fields, self, strict=True)) + ")"

    def __getnewargs__(self) -> tuple:
        return tuple(self)

    def _replace(self, **changes: Any) -> CallKey:
        values = [changes.pop(name, value) for name, value in zip(self._fields, self, strict=True)]
        if changes:
            raise ValueError(f"Got unexpected field names: {list(changes)!r}")
        return CallKey(*values)

    def _asdict(self) -> dict[str, Any]:
        return dict(zip(self._fields, self, strict=True))

    def is_forced(self) -> bool:
        """Made under a forced target (not ``auto``): rule 1 decides it, never a region's plan."""
        return is_forced(self.forced)

    def elsewhere(self) -> tuple:
        """The key but for the devices: the same kind of call wherever its inputs are."""
        return (self.op, self.dtypes, self.bucket, self.forced, self.layout)


class DecisionKind(enum.Enum):
    """Which rule of the router made a decision (its reason says the rest)."""

    EXACT = "exact"  # strict mode keeps an op that may differ from NumPy's last bits on NumPy
    FORCED = "forced"  # a target forced by ``set_backend``, ``using`` or ``DISPATCH_BACKEND``
    LOCAL = "local"  # views, casts, indexing: where the data is
    HOST_OP = "host op"  # I/O, printing, random streams, functions outside the catalog: NumPy
    SMALL = "small"  # host data too small for any engine's call overhead: NumPy
    FLOOR = "floor"  # host data under the op's floor (the host shortcut, as a trace records it)
    SCALE_OUT = "scale-out"  # data in Dask, or work too large for the device holding it
    SEED = "seed"  # the seed policy's table
    COST = "cost"  # the cost policy, on its models
    HISTORY = "history"  # the cost policy, on what such calls measured
    PLANNED = "planned"  # the plan of the region the call belongs to (``dispatch.routing.live``)
    CREATED = "created"  # a creation made where its line's last result moved (``dispatch.arrays.creations``)
    EXPLORING = "exploring"  # the cost policy measures an alternative (not cached)
    ORACLE = "oracle"  # the oracle policy (benchmarks)
    FALLBACK = "fallback"  # a target refused such a call (or a forced one is unavailable): NumPy



class Decision:
    """Where one kind of call runs, which rule said so (``kind``), why in words (``reason``), and
    what it is expected to take."""

    __slots__ = ("calls", "explored", "key", "kind", "live", "predicted", "reason", "sample", "settled", "target")

    def __init__(self, target: Any, kind: DecisionKind, reason: str, predicted: float | None = None,
                 key: tuple = (), sample: bool = False, explored: bool = False) -> None:
        self.target = target
        self.kind = kind
        self.reason = reason
        self.predicted = predicted
        self.key = key
        self.sample = sample  # time this call and learn from it
        self.explored = explored  # a measurement of an alternative: decided for this call alone
        self.settled = False  # measured often enough: only one call in SETTLED_EVERY is timed
        self.calls = 0
        self.live = False  # decided for data large enough to need Dask: whether it still fits is asked each call

    def __repr__(self) -> str:
        p = f", predicted {self.predicted:.3g} s" if self.predicted is not None else ""
        return f"<decision {self.target.name}: {self.reason}{p}>"


class Watched(dict):
    """A dict that calls ``changed()`` whenever an entry is removed or replaced (and, with
    ``added``, set afresh): the router's caches, whose changes end what the memo served under
    them (the router's epoch). A new decision changes no other's standing."""

    __slots__ = ("added", "changed")

    def __init__(self, changed: Any, added: bool = False) -> None:
        super().__init__()
        self.changed = changed
        self.added = added

    def __setitem__(self, key: Any, value: Any) -> None:
        replaced = self.added or key in self
        super().__setitem__(key, value)
        if replaced:
            self.changed()

    def __delitem__(self, key: Any) -> None:
        super().__delitem__(key)
        self.changed()

    def pop(self, *args: Any) -> Any:
        value = super().pop(*args)
        self.changed()
        return value

    def popitem(self) -> tuple:
        item = super().popitem()
        self.changed()
        return item

    def setdefault(self, key: Any, default: Any = None) -> Any:
        if key in self:
            return self[key]
        self[key] = default
        return default

    def update(self, *args: Any, **kwargs: Any) -> None:
        super().update(*args, **kwargs)
        self.changed()

    def clear(self) -> None:
        super().clear()
        self.changed()
