"""Process tuning for the libraries dispatch drives, applied when routing first needs it or when
the user asks (``dispatch.config.tune``), never at ``import dispatch``:

- torch's CPU side shares the host as NumPy does (``dispatch.base.torch_env``: idle OpenMP
  threads asleep, huge pages for large tensors), set just before dispatch brings torch up;
- freed array memory stays in glibc's heap for the next temporaries (``dispatch.base.heap``),
  set at the first routed call.

A setting of the user's own is always kept. ``describe`` lists what is in effect, with the BLAS
and OpenMP thread pools threadpoolctl finds (``python -m dispatch info``).
"""

from __future__ import annotations

import os
from typing import Any

from dispatch.base import heap

__all__ = ["describe", "routing_starts", "torch_starts", "tune"]

_TORCH_VARIABLES = ("OMP_WAIT_POLICY", "THP_MEM_ALLOC_ENABLE")
_set_here: dict[str, str] = {}  # the variables dispatch set, with the value it gave


def torch_starts() -> None:
    """Just before dispatch imports torch (its first torch target): torch's settings."""
    from dispatch.base import torch_env  # (loaded where torch is)

    for name in _TORCH_VARIABLES:
        if name not in os.environ:
            _set_here[name] = torch_env.DEFAULTS[name]
    torch_env.set_defaults()


def routing_starts() -> None:
    """At the first routed call: the heap's thresholds (once)."""
    heap.keep()


def tune() -> None:
    """Apply every tuning now: before the program imports torch itself, say, so that torch's
    OpenMP pool reads the wait policy as it loads."""
    torch_starts()
    routing_starts()


def describe() -> list[tuple[str, str]]:
    """(setting, state) rows: the tuning dispatch applies, and the thread pools in the process."""
    rows = []
    for name in _TORCH_VARIABLES:
        value = os.environ.get(name)
        if value is None:
            state = "not set (set before dispatch brings torch up)"
        elif _set_here.get(name) == value:
            state = f"{value} (set by dispatch)"
        else:
            state = f"{value} (yours)"
        rows.append((name, state))
    kept = heap.state()
    rows.append(("glibc heap thresholds", kept))
    rows.extend(_pools())
    return rows


def _pools() -> list[tuple[str, str]]:
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return [("thread pools", "threadpoolctl not installed")]
    found: list[dict[str, Any]] = threadpool_info()
    return [(f"{p.get('user_api', '?')} pool", f"{p.get('internal_api', '?')}, {p.get('num_threads', '?')} threads")
            for p in found]
