"""dispatch's configuration: ``get_config``, ``set_config`` and ``config_context``, as
scikit-learn's, and the setters they gather (``set_backend``, ``using``, ``set_memory_fraction``,
``set_chunk_bytes``). The ``DISPATCH_*`` environment variables give the starting values; they are
read and checked in one place (``dispatch.base.settings``, which lists them).

Threads and contexts: ``set_backend`` (``set_config(backend=...)``) and the other setters are
process-wide. ``using`` (``config_context(backend=...)``) is local to the thread and the
``asyncio`` task that runs it: it is kept in a ``contextvars.ContextVar``, and another thread
keeps routing (or keeps its own ``using``) meanwhile. ``config_context`` sets the other settings
process-wide for the block and restores them after it.

Forcing a target:

A forced target runs every call it can run exactly as NumPy would; calls it refuses still
fall back to NumPy on the host, correctly, with the reason in the trace. ``"auto"`` restores
routing.

Strict mode (``exact``, ``DISPATCH_EXACT=1``): every op whose result may differ from NumPy's in
the last bits on another target (docs/equality.md: float reductions, linear algebra, FFTs,
transcendental functions) runs on NumPy, so full-precision output is NumPy's digit for digit;
the rest (element-wise IEEE arithmetic, indexing, sorting, integer work) is still routed. It
outranks a forced target: under ``using("torch-cpu")`` a float ``sum`` still runs on NumPy.

Scale-out settings (``dispatch.cluster``): ``set_memory_fraction`` (work larger than this
fraction of the free memory of the device holding it goes to Dask; default 0.5,
``DISPATCH_MEMORY_FRACTION``) and ``set_chunk_bytes`` (bytes per Dask chunk; default measured
for a connected cluster, else 128 MiB; ``DISPATCH_DASK_CHUNK_BYTES``). ``using("dask")``
forces Dask.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from dispatch import cluster, targets
from dispatch.base import forksafe, settings
from dispatch.base.state import STATE
from dispatch.base.tuning import tune
from dispatch.cluster import chunk_bytes, memory_fraction, set_chunk_bytes, set_memory_fraction
from dispatch.routing import calibration, router

__all__ = [
    "chunk_bytes",
    "config_context",
    "get_backend",
    "get_config",
    "memory_fraction",
    "set_backend",
    "set_chunk_bytes",
    "set_config",
    "set_memory_fraction",
    "tune",
    "using",
]

_UNSET: Any = object()


def _check(name: str) -> str:
    if not isinstance(name, str):
        raise TypeError(f"a backend is named by a string, not {type(name).__name__}")
    if name == "auto":
        return name
    if name not in targets.names():
        raise ValueError(f"unknown backend {name!r}; choose one of: auto, {', '.join(targets.names())}")
    if name not in forksafe.turned_off:  # a forked child runs those on NumPy (dispatch.forksafe)
        targets.get(name)  # RuntimeError naming why, if it is not available here
    return name


def set_backend(name: str) -> None:
    """Force every call onto the target ``name`` (``"numpy"``, ``"torch-cpu"``, ``"cupy"``,
    ``"torch-cuda"``, ``"torch-mps"``, ``"dask"``, any registered one: ``dispatch.targets.names()``),
    or ``"auto"`` to route again."""
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


def get_config() -> dict[str, Any]:
    """The settings in effect here.

    ``backend`` (``set_backend``, ``using``), ``memory_fraction`` and ``chunk_bytes``
    (``None``: measured for a connected cluster, else 128 MiB) can be set with ``set_config``;
    ``exact`` (strict mode) too; ``trace``, ``pure_python`` and ``heap`` were read at import, ``cache_dir`` and
    ``dask_scheduler`` are read at each use (``dispatch.base.settings``).
    """
    return {
        "backend": get_backend(),
        "exact": router.exact(),
        "memory_fraction": memory_fraction(),
        "chunk_bytes": cluster.chunk_bytes_set(),
        "trace": settings.ENV.trace,
        "pure_python": settings.ENV.pure_python,
        "heap": settings.ENV.heap,
        "cache_dir": str(calibration.cache_dir()),
        "dask_scheduler": settings.dask_scheduler(),
    }


def set_config(*, backend: str | None = None, memory_fraction: float | None = None,
               chunk_bytes: int | None = _UNSET, exact: bool | None = None) -> None:
    """Set settings process-wide; those not given keep their values (``chunk_bytes=None``: back
    to measured or default).

    Parameters
    ----------
    backend : str, optional
        A target name or ``"auto"`` (``set_backend``).
    memory_fraction : float, optional
        In (0, 1] (``set_memory_fraction``).
    chunk_bytes : int or None, optional
        Bytes per Dask chunk (``set_chunk_bytes``).
    exact : bool, optional
        Strict mode: ops whose results may differ from NumPy's in the last bits run on NumPy,
        even under a forced target (``DISPATCH_EXACT``).
    """
    if exact is not None:
        router.set_exact(settings.check_exact(exact))
    if backend is not None:
        set_backend(backend)
    if memory_fraction is not None:
        set_memory_fraction(memory_fraction)
    if chunk_bytes is not _UNSET:
        set_chunk_bytes(chunk_bytes)


@contextlib.contextmanager
def config_context(*, backend: str | None = None, memory_fraction: float | None = None,
                   chunk_bytes: int | None = _UNSET, exact: bool | None = None) -> Iterator[None]:
    """``set_config`` for a ``with`` block, then the settings as they were. ``backend`` is local to
    this thread and task (``using``); the others are process-wide meanwhile."""
    before = get_config()
    with using(backend) if backend is not None else contextlib.nullcontext():
        try:
            set_config(memory_fraction=memory_fraction, chunk_bytes=chunk_bytes, exact=exact)
            yield
        finally:
            if exact is not None:
                router.set_exact(before["exact"])
            if memory_fraction is not None:
                set_memory_fraction(before["memory_fraction"])
            if chunk_bytes is not _UNSET:
                set_chunk_bytes(before["chunk_bytes"])
