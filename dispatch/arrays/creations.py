"""Where a creation function's result is made: the host, or the device its line's last one moved to.

``rows = np.zeros(shape)`` followed by ``rows += w * padded[...]`` on a device: the host array
moves to the device at that write (``ndarray._moves``), so its constant content crossed the bus,
after the host wrote it, for nothing. Each large array that ``zeros``, ``ones``, ``empty`` or
``full`` makes on the host is noted with its call site (the calling line, by code object and
instruction) and the function; when it moves to a device, the site is noted with that device's engine
(``moved``), and its later results are made there directly (``home``: the fill on the device,
no host memory written, no copy), while nothing is forced.

A guess is undone by the measure that makes small device data's home the host: a result made so
whose elements the program reads or writes one by one from Python goes home to the host once
those accesses have cost about a copy (``ndarray._element_home``), and so does one the host reads
row by row (``ndarray._moves_home``); either forgets its site (``returned``). Only memory of
``mirrors.MIN_BYTES`` or more is noted: smaller data costs little to copy, and the compiled path
hands larger creations to Python only while device copies are kept (``_fastpath.c``, ``SHAPED``).
"""

from __future__ import annotations

import sys
import weakref
from typing import Any

import numpy as np

from dispatch.arrays import mirrors

__all__ = ["NAMES", "clear", "forget", "guessed", "home", "made", "moved", "returned", "site", "stats"]

NAMES = frozenset({"zeros", "ones", "empty", "full"})  # whose content needs no data: made anywhere alike
SITES_MAX = 256  # call sites noted with a device; more, and the table starts over

# id(host array a creation made) -> (weakref(it), its site)
_host_made: dict[int, tuple[Any, tuple]] = {}
# id(device array a creation made on its site's device) -> (weakref(it), its site)
_device_made: dict[int, tuple[Any, tuple]] = {}
_homes: dict[tuple, str] = {}  # call site -> the engine its last result moved to
_counts = {"moved": 0, "made": 0, "returned": 0}


def site(name: str, depth: int = 2) -> tuple:
    """Creation function ``name`` called from the line ``depth`` frames up (its code object and
    instruction: a line that calls the function it is given calls several)."""
    frame = sys._getframe(depth)
    return (frame.f_code, frame.f_lasti, name)


def home(where: tuple) -> str | None:
    """The engine whose device ``where``'s last result moved to, if any."""
    return _homes.get(where) if _homes else None


def made(native: Any, where: tuple, guessed: bool = False) -> None:
    """``native``, a creation's result at ``where``: noted where it holds ``mirrors.MIN_BYTES`` or
    more, on the host, or on a device the site's history chose (``guessed``)."""
    if getattr(native, "nbytes", 0) < mirrors.MIN_BYTES or (not guessed and type(native) is not np.ndarray):
        return
    table = _device_made if guessed else _host_made
    key = id(native)
    try:
        table[key] = (weakref.ref(native, lambda _, key=key, table=table: table.pop(key, None)), where)
    except TypeError:  # an engine's array without weak references: not noted
        return
    if guessed:
        _counts["made"] += 1


def _take(table: dict, native: Any) -> tuple | None:
    entry = table.get(id(native)) if table else None
    if entry is None or entry[0]() is not native:
        return None
    del table[id(native)]
    return entry[1]


def moved(data: Any, engine: Any) -> None:
    """Host array ``data`` moved to ``engine``'s device as a whole: where a creation made it, its
    site's next results are made there."""
    where = _take(_host_made, data)
    if where is None:
        return
    if len(_homes) >= SITES_MAX:
        _homes.clear()
    _homes[where] = engine.name
    _counts["moved"] += 1


def guessed(native: Any) -> bool:
    """Whether device data ``native`` was made there because its site's last result moved there."""
    entry = _device_made.get(id(native)) if _device_made else None
    return entry is not None and entry[0]() is native


def returned(native: Any) -> None:
    """Device data ``native`` made its home the host: where its site's history put it there, the
    site makes its results on the host again."""
    where = _take(_device_made, native)
    if where is not None and _homes.pop(where, None) is not None:
        _counts["returned"] += 1


def forget(where: tuple) -> None:
    """``where`` makes its results on the host again (its engine failed one)."""
    _homes.pop(where, None)


def stats() -> dict[str, int]:
    """Sites that moved a result to a device, results made there for it, and guesses undone."""
    return {**_counts, "sites": len(_homes)}


def clear() -> None:
    """Forget every site and result (the tests' fake device, between tests)."""
    _host_made.clear()
    _device_made.clear()
    _homes.clear()
    for name in _counts:
        _counts[name] = 0
