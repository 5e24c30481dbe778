"""dispatch's settings: every ``DISPATCH_*`` environment variable is read and checked here, and
nowhere else; ``dispatch.config`` is the public side (``get_config``, ``set_config``,
``config_context``, ``set_backend``, ``using``...).

=========================== ============ ===============================================
variable                    read         accepted values
=========================== ============ ===============================================
``DISPATCH_BACKEND``        at import    ``auto`` or a registered target's name
``DISPATCH_TRACE``          at import    ``0`` / ``1`` (also ``false`` / ``true``, empty)
``DISPATCH_PURE_PYTHON``    at import    ``0`` / ``1``: the compiled fast path off
``DISPATCH_HEAP``           at import    ``keep`` (default) or ``system``
``DISPATCH_EXACT``          at import    ``0`` / ``1``: strict mode, NumPy's last bits
``DISPATCH_MEMORY_FRACTION`` at import   a number in (0, 1]; default 0.5
``DISPATCH_DASK_CHUNK_BYTES`` at import  a whole number of bytes >= 1
``DISPATCH_CACHE_DIR``      at each use  a directory (the calibration cache)
``DISPATCH_DASK_SCHEDULER`` at each use  a Dask scheduler's address
``DISPATCH_LEARN``          at each use  ``0`` / ``1`` (default): keep what a script's runs learned
=========================== ============ ===============================================

A bad value raises ``ValueError`` naming the variable and what it accepts: at ``import
dispatch`` for those read then, at first use for the others (``DISPATCH_BACKEND`` is checked
against the targets' names once they have registered: ``dispatch.targets``). The same checks
serve the setters (``dispatch.set_memory_fraction``...), which name the setting instead.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from dispatch.base.records import Frozen

__all__ = ["ENV", "Env", "cache_dir", "check_backend", "check_chunk_bytes", "check_exact",
           "check_memory_fraction", "dask_scheduler", "learn", "read"]

BOOLEANS = {"": False, "0": False, "false": False, "no": False, "off": False,
            "1": True, "true": True, "yes": True, "on": True}
HEAPS = ("keep", "system")
DEFAULT_MEMORY_FRACTION = 0.5


class Env(Frozen):
    """The variables read at import, checked."""

    __slots__ = ("backend", "trace", "pure_python", "heap", "memory_fraction", "chunk_bytes", "exact")  # noqa: RUF023 - the fields, in order

    def __init__(self, backend: str = "auto", trace: bool = False, pure_python: bool = False, heap: str = "keep",
                 memory_fraction: float = DEFAULT_MEMORY_FRACTION, chunk_bytes: int | None = None,
                 exact: bool = False) -> None:
        self._set(backend, trace, pure_python, heap, memory_fraction, chunk_bytes, exact)


def check_backend(value: object, what: str = "backend", known: Sequence[str] | None = None) -> str:
    """``value`` if it is ``auto`` or one of the target names ``known`` (any string while they
    are not known yet); ``TypeError`` or ``ValueError`` naming ``what`` otherwise."""
    if not isinstance(value, str):
        raise TypeError(f"a backend is named by a string, not {type(value).__name__}")
    if known is not None and value != "auto" and value not in known:
        raise ValueError(f"{what}={value!r} is not a backend; choose one of: auto, {', '.join(known)}")
    return value


def check_memory_fraction(value: object, what: str = "memory_fraction") -> float:
    """``value`` as a float in (0, 1]; ``ValueError`` naming ``what`` otherwise."""
    try:
        fraction = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        fraction = math.nan
    if not 0.0 < fraction <= 1.0:  # NaN fails too
        raise ValueError(f"{what}={value!r}: expected a number in (0, 1]")
    return fraction


def check_chunk_bytes(value: object, what: str = "chunk_bytes") -> int:
    """``value`` as a whole number of bytes >= 1; ``ValueError`` naming ``what`` otherwise."""
    try:
        nbytes = int(value)  # type: ignore[arg-type]
        whole = float(value) == nbytes  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError):
        nbytes, whole = 0, False
    if not whole or nbytes < 1:
        raise ValueError(f"{what}={value!r}: expected a whole number of bytes >= 1")
    return nbytes


def check_exact(value: object, what: str = "exact") -> bool:
    """``value`` as strict mode's switch (``True`` / ``False``, ``1`` / ``0``); ``ValueError``
    naming ``what`` otherwise."""
    if type(value) is bool or (type(value) is int and value in (0, 1)):
        return bool(value)
    raise ValueError(f"{what}={value!r}: expected True or False")


def _boolean(environ: Mapping[str, str], name: str) -> bool:
    raw = environ.get(name, "")
    try:
        return BOOLEANS[raw.strip().lower()]
    except KeyError:
        raise ValueError(f"{name}={raw!r}: expected 0 or 1 (or false / true)") from None


def read(environ: Mapping[str, str] = os.environ) -> Env:
    """The variables read at import, from ``environ``, checked."""
    backend = check_backend(environ.get("DISPATCH_BACKEND") or "auto", "DISPATCH_BACKEND")
    heap = (environ.get("DISPATCH_HEAP") or "keep").strip().lower()
    if heap not in HEAPS:
        raise ValueError(f"DISPATCH_HEAP={environ['DISPATCH_HEAP']!r}: expected one of: {', '.join(HEAPS)}")
    fraction = environ.get("DISPATCH_MEMORY_FRACTION", "")
    chunk = environ.get("DISPATCH_DASK_CHUNK_BYTES", "")
    return Env(
        backend=backend,
        trace=_boolean(environ, "DISPATCH_TRACE"),
        pure_python=_boolean(environ, "DISPATCH_PURE_PYTHON"),
        heap=heap,
        memory_fraction=check_memory_fraction(fraction, "DISPATCH_MEMORY_FRACTION") if fraction
        else DEFAULT_MEMORY_FRACTION,
        chunk_bytes=check_chunk_bytes(chunk, "DISPATCH_DASK_CHUNK_BYTES") if chunk else None,
        exact=_boolean(environ, "DISPATCH_EXACT"),
    )


ENV = read()


def cache_dir(environ: Mapping[str, str] = os.environ) -> Path | None:
    """``DISPATCH_CACHE_DIR`` (read at each use), or ``None`` where it is not set."""
    raw = environ.get("DISPATCH_CACHE_DIR", "")
    if not raw:
        return None
    if "\0" in raw:
        raise ValueError(f"DISPATCH_CACHE_DIR={raw!r}: expected a directory path")
    return Path(raw)


def dask_scheduler(environ: Mapping[str, str] = os.environ) -> str | None:
    """``DISPATCH_DASK_SCHEDULER`` (read at each use): a scheduler's address, or ``None``."""
    raw = environ.get("DISPATCH_DASK_SCHEDULER", "").strip()
    if not raw:
        return None
    if any(c.isspace() for c in raw):
        raise ValueError(f"DISPATCH_DASK_SCHEDULER={raw!r}: expected a Dask scheduler address "
                         "(such as tcp://host:8786)")
    return raw


def learn(environ: Mapping[str, str] = os.environ) -> bool:
    """``DISPATCH_LEARN`` (read at each use): whether what a script's runs learned is kept between
    them (``dispatch.routing.learned``); on unless set to ``0``."""
    if not environ.get("DISPATCH_LEARN", "").strip():
        return True
    return _boolean(environ, "DISPATCH_LEARN")
