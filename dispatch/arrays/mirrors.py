"""Device copies of host arrays (mirrors), kept while neither side is written.

A host array a device call reads is copied there once: the copy is kept beside the host data
and served to later calls on that device (k-means' points, a design matrix, read by every
iteration's product) until the host memory is written. Validity is one counter per block of
host memory (the NumPy array that owns it, found through ``.base``): every write dispatch sees
bumps it (``wrote``), whichever array or view wrote, so a view's write invalidates the copies of
its base and of every other view. The writes dispatch sees: ``__setitem__``, ``out=``, in-place
operators, the in-place methods (``sort``, ``fill``, ``put``...), ``ufunc.at`` and every op the
catalog marks as writing (``Op.mutates``); while any mirror is kept the compiled fast path hands
such calls to Python (``_compiled.set_mirrors``).

What dispatch cannot see is a write through a NumPy array it does not hold: the memory handed
out by ``numpy.asarray(x)`` (``__array__``, ``.data``, DLPack), or a NumPy array wrapped without
a copy (``dispatch.asarray(a)``), whose caller still holds ``a``. Such memory is the caller's
(``escape``): its mirrors are dropped at once and it is never mirrored again, so no stale copy
can be read. Memory under ``MIN_BYTES`` is never mirrored (a copy that small costs less than
the bookkeeping), which keeps the fast path for small arrays whole.

Mirrors are the first thing given back under memory pressure: a device keeps at most
``budget()`` bytes of them, least recently used dropped first, and all of a device's are dropped
when a call there runs out of memory (``evict``).
"""

from __future__ import annotations

import weakref
from collections import OrderedDict
from typing import Any

import numpy as np

from dispatch.arrays import _compiled

__all__ = [
    "MIN_BYTES",
    "budget",
    "clear",
    "escape",
    "evict",
    "keep",
    "keepable",
    "kept",
    "lookup",
    "released",
    "set_budget",
    "stats",
    "valid",
    "wrote",
]

MIN_BYTES = 1 << 20  # smaller host memory is copied again each time: cheaper than keeping it
_DEFAULT_BUDGET = 4 << 30  # bytes of mirrors a device keeps (least recently used dropped first)


class _Mirror:
    __slots__ = ("copy", "device", "host", "nbytes", "owner", "version")

    def __init__(self, host: Any, owner: int, version: int, copy: Any, device: Any, nbytes: int) -> None:
        self.host, self.owner, self.version = host, owner, version
        self.copy, self.device, self.nbytes = copy, device, nbytes


# id(owner) -> [version, weakref(owner)]: the memory blocks with mirrors, and their write counters
_versions: dict[int, list] = {}
# (id(host data), target name) -> _Mirror, least recently used first
_mirrors: OrderedDict[tuple[int, str], _Mirror] = OrderedDict()
# id(owner) -> weakref(owner): memory that is the caller's (handed out, or wrapped without a copy)
_escaped: dict[int, Any] = {}
_budget = _DEFAULT_BUDGET
_counts = {"hits": 0, "kept": 0, "invalidated": 0, "evicted": 0, "escaped": 0}


def _owner(data: np.ndarray) -> np.ndarray:
    """The NumPy array owning the memory ``data`` views (itself where it owns it)."""
    base = data.base
    while type(base) is np.ndarray or isinstance(base, np.ndarray):
        data, base = base, base.base
    return data


def _live() -> None:
    """Tell the compiled path whether writes must take the Python path (any mirror kept)."""
    _compiled.set_mirrors(bool(_mirrors), MIN_BYTES)


def lookup(data: np.ndarray, target: Any) -> Any:
    """The copy of ``data`` on ``target`` (its own array type) if one is kept and still valid, else ``None``."""
    if not _mirrors:
        return None
    key = (id(data), target.name)
    mirror = _mirrors.get(key)
    if mirror is None:
        return None
    state = _versions.get(mirror.owner)
    if mirror.host() is not data or state is None or state[0] != mirror.version:
        _drop(key)  # written since, or another array at a reused address
        return None
    _mirrors.move_to_end(key)
    _counts["hits"] += 1
    return mirror.copy


def valid(data: Any, name: str) -> bool:
    """Whether the target ``name`` keeps a copy of ``data`` that is still valid (nothing counted,
    nothing reordered: a price asks, a call reads with ``lookup``)."""
    mirror = _mirrors.get((id(data), name)) if _mirrors else None
    if mirror is None or mirror.host() is not data:
        return False
    state = _versions.get(mirror.owner)
    return state is not None and state[0] == mirror.version


def keepable(data: np.ndarray) -> bool:
    """Whether a copy of ``data`` on a device would be kept (``keep``'s rule on the host side)."""
    owner = _owner(data)
    return owner.nbytes >= MIN_BYTES and id(owner) not in _escaped and _compiled.MIRRORS_SAFE


def keep(data: np.ndarray, target: Any, copy: Any) -> None:
    """Keep ``copy`` (``data`` copied to ``target``) for later calls, where ``data`` is large
    enough and dispatch's own (not handed out or wrapped without a copy)."""
    owner = _owner(data)
    if owner.nbytes < MIN_BYTES or id(owner) in _escaped or target.device.is_host or not _compiled.MIRRORS_SAFE:
        return
    state = _versions.get(id(owner))
    if state is None or state[1]() is not owner:
        oid = id(owner)
        state = _versions[oid] = [0, weakref.ref(owner, lambda _, oid=oid: _forget_owner(oid))]
    key = (id(data), target.name)
    if key in _mirrors:
        _drop(key)
    _mirrors[key] = _Mirror(weakref.ref(data), id(owner), state[0], copy, target.device, data.nbytes)
    _counts["kept"] += 1
    _fit(target.device)
    _live()


def counted() -> bool:
    """Whether any host memory has copies, or had (its write counter kept while it lives): where
    none has, a write needs no bookkeeping."""
    return bool(_versions)


def wrote(data: Any) -> None:
    """Host memory is about to be written (through ``data``, any array or view of it): its copies go."""
    if not _versions or type(data) is not np.ndarray:
        return
    state = _versions.get(id(_owner(data)))
    if state is not None:
        state[0] += 1
        _drop_owner(id(_owner(data)), "invalidated")


def escape(data: Any) -> None:
    """``data``'s memory may be written where dispatch does not see it (handed out, or the
    caller's NumPy array wrapped as it is): drop its copies, and never mirror it again."""
    if type(data) is not np.ndarray:
        return
    owner = _owner(data)
    if owner.nbytes < MIN_BYTES:
        return
    oid = id(owner)
    known = _escaped.get(oid)
    if known is not None and known() is owner:
        return
    _escaped[oid] = weakref.ref(owner, lambda _, oid=oid: _escaped.pop(oid, None))
    _counts["escaped"] += 1
    if oid in _versions:
        _versions[oid][0] += 1
        _drop_owner(oid, "invalidated")


def released(result: Any, handed: list[Any]) -> None:
    """A device call handed back one of the mirrors it was given (or a view of one) as its result:
    the program may now write it there, so it is no longer a copy of the host data."""
    base = getattr(result, "_base", None) if hasattr(result, "_base") else getattr(result, "base", None)
    for copy in handed:
        if result is copy or base is copy:
            for key, mirror in list(_mirrors.items()):
                if mirror.copy is copy:
                    _drop(key)


def evict(device: Any = None, nbytes: int | None = None) -> int:
    """Drop mirrors, least recently used first: on ``device`` (every device where ``None``), until
    ``nbytes`` are freed (all of them where ``None``). The bytes freed."""
    freed = 0
    for key, mirror in list(_mirrors.items()):
        if nbytes is not None and freed >= nbytes:
            break
        if device is None or mirror.device == device:
            freed += mirror.nbytes
            _drop(key)
            _counts["evicted"] += 1
    return freed


def budget() -> int:
    """The bytes of mirrors one device keeps."""
    return _budget


def set_budget(nbytes: int) -> None:
    """Keep at most ``nbytes`` of mirrors per device (least recently used dropped first)."""
    global _budget
    if nbytes < 0:
        raise ValueError(f"a mirror budget is a number of bytes >= 0, not {nbytes}")
    _budget = int(nbytes)
    for device in {m.device for m in _mirrors.values()}:
        _fit(device)


def kept(device: Any = None) -> int:
    """Bytes of mirrors kept (on ``device``)."""
    return sum(m.nbytes for m in _mirrors.values() if device is None or m.device == device)


def stats() -> dict[str, int]:
    """Counts since the process started: hits, kept, invalidated, evicted, escaped; and bytes kept now."""
    return {**_counts, "bytes": kept(), "mirrors": len(_mirrors)}


def clear() -> None:
    """Drop every mirror (and forget which memory was handed out)."""
    _mirrors.clear()
    _versions.clear()
    _escaped.clear()
    _live()


def _fit(device: Any) -> None:
    over = kept(device) - _budget
    if over > 0:
        evict(device, over)


def _drop(key: tuple[int, str]) -> None:
    _mirrors.pop(key, None)  # (the owner's counter stays while it lives: a later copy starts from it)
    if not _mirrors:
        _live()


def _drop_owner(oid: int, why: str | None) -> None:
    for key, mirror in list(_mirrors.items()):
        if mirror.owner == oid:
            _mirrors.pop(key)
            if why is not None:
                _counts[why] += 1
    if not _mirrors:
        _live()


def _forget_owner(oid: int) -> None:
    _versions.pop(oid, None)
    _drop_owner(oid, None)  # the host memory is gone, and its copies with it

_live()  # the compiled path learns MIN_BYTES at import
