"""A process forked from one that uses dispatch: what the child may touch.

``fork()`` copies the parent's memory but only the thread that called it: torch's thread pools,
a CUDA context, CuPy's memory pools and a Dask client's connection do not survive in the child,
and a call that touches them may never return (a torch-cpu sum of 2M elements hung every child
forked after the parent ran one). So in a forked child:

- the targets not fork-safe (their registration says so: torch's, CuPy's) whose library the
  parent had loaded are unavailable, with the
  reason kept for ``dispatch info``: their calls run on NumPy, forced ones included (``using``
  and ``set_backend`` accept them, as in the parent). An engine
  whose library the parent never loaded comes up in the child on first use, as in any process;
- the router forgets its decisions and the device timings it was waiting for, a Dask client
  is dropped (not closed: its connection is the parent's; the child may connect its own), and
  the locks dispatch takes are made anew (another thread of the parent may have held one).

The handler is registered when ``dispatch`` is imported, and reads only the modules already
loaded: it imports nothing in the child.
"""

from __future__ import annotations

import os
import sys
from _thread import RLock, allocate_lock  # threading's locks, without loading threading

__all__ = ["INHERITED", "turned_off"]

INHERITED = ("its library was loaded by the parent process before fork(); its threads and device state do not "
             "survive in a child")
turned_off: set[str] = set()  # the targets this process turned off as a forked child


def _in_child() -> None:
    registry = sys.modules.get("dispatch.targets.registry")
    if registry is None:
        return  # no engine was ever looked for: nothing inherited
    registry._lock = RLock()
    for spec in registry.specs():
        if not spec.fork_safe and spec.library in sys.modules:
            registry.disable(spec.name, INHERITED)
            turned_off.add(spec.name)
    if (staging := sys.modules.get("dispatch.targets._staging")) is not None:
        staging._lock, staging._counts_lock = RLock(), allocate_lock()
    if (tracing := sys.modules.get("dispatch.tracing")) is not None:
        tracing._lock = allocate_lock()
    if (cluster := sys.modules.get("dispatch.cluster")) is not None:
        cluster._client, cluster._owned = None, False
    if (router := sys.modules.get("dispatch.routing.router")) is not None:
        router.history._lock = allocate_lock()
        router.history._pending.clear()  # device events of the parent's streams
        router.clear_decisions()


if hasattr(os, "register_at_fork"):  # POSIX
    os.register_at_fork(after_in_child=_in_child)
