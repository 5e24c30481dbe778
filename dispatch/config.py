"""Forcing a target: ``set_backend``, ``using`` and the ``DISPATCH_BACKEND`` variable.

A forced target runs every call it can run exactly as NumPy would; calls it refuses still
fall back to NumPy on the host, correctly, with the reason in the trace. ``"auto"`` restores
routing.

Scale-out settings (``dispatch.cluster``): ``set_memory_fraction`` (work larger than this
fraction of the free memory of the device holding it goes to Dask; default 0.5,
``DISPATCH_MEMORY_FRACTION``) and ``set_chunk_bytes`` (bytes per Dask chunk; default measured
for a connected cluster, else 128 MiB; ``DISPATCH_DASK_CHUNK_BYTES``). ``using("dask")``
forces Dask.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from dispatch import forksafe, targets
from dispatch._state import STATE
from dispatch.cluster import chunk_bytes, memory_fraction, set_chunk_bytes, set_memory_fraction

__all__ = ["chunk_bytes", "get_backend", "memory_fraction", "set_backend", "set_chunk_bytes", "set_memory_fraction",
           "using"]


def _check(name: str) -> str:
    if not isinstance(name, str):
        raise TypeError(f"a backend is named by a string, not {type(name).__name__}")
    if name == "auto":
        return name
    if name not in targets.TARGET_NAMES:
        raise ValueError(f"unknown backend {name!r}; choose one of: auto, {', '.join(targets.TARGET_NAMES)}")
    if name not in forksafe.turned_off:  # a forked child runs those on NumPy (dispatch.forksafe)
        targets.get(name)  # RuntimeError naming why, if it is not available here
    return name


def set_backend(name: str) -> None:
    """Force every call onto the target ``name`` (``"numpy"``, ``"torch-cpu"``, ``"cupy"``,
    ``"torch-cuda"``, ``"torch-mps"``, ``"dask"``), or ``"auto"`` to route again."""
    STATE.set_global(_check(name))


def get_backend() -> str:
    """The forced target in effect here, or ``"auto"``."""
    return STATE.forced_name() or "auto"


@contextlib.contextmanager
def using(name: str) -> Iterator[None]:
    """Force a target inside a ``with`` block (this thread and task only)."""
    token = STATE.push_using(_check(name))
    try:
        yield
    finally:
        STATE.pop_using(token)
