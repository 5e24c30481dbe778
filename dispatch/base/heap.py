"""Freed array memory kept for the next array: glibc's heap thresholds, set once.

A NumPy program frees temporaries and makes new ones of the same sizes at every step. glibc
gives the free memory at the top of its heap back to the system once more of it is free than
its trim threshold, and the next temporary then faults in every page it touches again (a 4 MB
temporary: about a thousand page faults). glibc starts its thresholds low and raises them as
large blocks are freed, so whether a program pays depends on where its blocks happened to land,
which dispatch's own allocations change.

``keep`` sets them where glibc's own rule tops out (blocks up to 32 MiB come from the heap; the
top of the heap is given back past 64 MiB free) at the first routed call (``dispatch.base.tuning``). glibc
only, and not where the user chose: a ``MALLOC_*_`` variable, ``GLIBC_TUNABLES`` naming malloc,
or ``DISPATCH_HEAP=system``. The cost: up to 64 MiB of freed memory stays with the process.
"""

from __future__ import annotations

import ctypes
import os
import sys

from dispatch.base.settings import ENV

__all__ = ["MMAP_THRESHOLD", "TRIM_THRESHOLD", "keep", "state"]

_M_TRIM_THRESHOLD = -1  # mallopt's parameters (malloc.h)
_M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 32 << 20  # glibc's ceiling for the threshold it raises itself (64-bit)
TRIM_THRESHOLD = 2 * MMAP_THRESHOLD  # twice it, as glibc's own rule keeps them

_kept: bool | None = None  # None: not tried yet


def keep() -> bool:
    """Set the thresholds (once); whether they are set."""
    global _kept
    if _kept is None:
        _kept = not _user_chose() and _set()
    return _kept


def state() -> str:
    """Whether the thresholds are set, in words."""
    if _kept:
        return f"kept (blocks up to {MMAP_THRESHOLD >> 20} MiB from the heap, trimmed past {TRIM_THRESHOLD >> 20} MiB)"
    if _kept is None:
        return "glibc's own (set at the first routed call)"
    return "glibc's own (" + ("yours" if _user_chose() else "not glibc") + ")"


def _user_chose() -> bool:
    env = os.environ  # glibc's own variables; DISPATCH_HEAP is checked by dispatch.base.settings
    return (ENV.heap == "system"
            or any(name.startswith("MALLOC_") and name.endswith("_") for name in env)
            or "glibc.malloc" in env.get("GLIBC_TUNABLES", ""))


def _set() -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None)
        libc.gnu_get_libc_version  # noqa: B018 - glibc's alone (musl's mallopt ignores these)
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    return bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD))
