"""NumPy's BLAS threads spin after a product; a torch-cpu call meanwhile runs on one thread.

After a threaded product or decomposition, NumPy's BLAS keeps its worker threads spinning for
more work for a while (OpenBLAS: 2**28 cycles, about 0.1 s; ``OPENBLAS_THREAD_TIMEOUT``, read
only when NumPy loads). A torch-cpu call in that window shares the cores with them, its own
threads waiting on each other: on few cores it runs many times slower than alone, slower than
on one thread. So a torch-cpu call within ``SPIN_S`` of NumPy's last routed product runs on one
torch thread, and what the router measures of it is what it costs there.

Only products and decompositions the router ran on NumPy are seen (``ran``): those under the
op's floor run on NumPy without it. One too small for the BLAS to thread opens the window
too. ``torch.set_num_threads`` is process-wide: another thread running torch-cpu meanwhile
runs on one thread too.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

__all__ = ["BLAS_WORK", "SPIN_S", "on_one_thread", "ran", "spinning"]

SPIN_S = 0.1
BLAS_WORK = frozenset({"matmul", "cubic"})  # the op catalog's kinds of work NumPy hands to its BLAS / LAPACK

_last = -math.inf


def ran() -> None:
    """NumPy just ran a product or decomposition for the router (the compiled path sets
    ``_last`` as this does, itself)."""
    global _last
    _last = time.perf_counter()


def spinning() -> bool:
    """Whether NumPy's BLAS threads may still be spinning."""
    return time.perf_counter() - _last < SPIN_S


def on_one_thread(torch: Any, run: Callable[[], Any]) -> Any:
    """``run()`` with torch's intra-op threads set to one, then set back."""
    threads = torch.get_num_threads()
    if threads == 1:
        return run()
    torch.set_num_threads(1)
    try:
        return run()
    finally:
        torch.set_num_threads(threads)
