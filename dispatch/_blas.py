"""Small products between other work on one of NumPy's BLAS threads.

The OpenBLAS that NumPy's wheels bundle splits a product of over ``THREADED_WORK`` multiply-adds
(m·k·n) across its threads, up to one a core, and each of those threads then spins, waiting for
the next product, for a while (OpenBLAS's thread timeout) before it sleeps. Where products come
back to back that pays: the threads are there for the next one. Where other work comes between
them, the spinning threads only take the cores that work runs on: on a 16-core H200 host the
router's mlp large, which keeps a 512 x 10 by 10 x 512 product a minibatch on NumPy and some
twenty calls between two of them on CuPy, kept 11.7 cores busy and ran 429 ms a run, against
339 ms with one BLAS thread (``OPENBLAS_NUM_THREADS=1``); NumPy itself ran pairwise small in
1.74 ms against 1.12, least_squares small in 2.41 against 1.39. So a product of at most
``SMALL_WORK`` multiply-adds (a fraction of a millisecond on one core) made more than
``BACK_TO_BACK_S`` after the last such one ended runs on one thread (threadpoolctl), and NumPy's
thread count is put back right after, on a BLAS of over ``FEW_THREADS`` threads. On the 2-core
machine, with its two threads, one thread cost more than the spinning: with the rule by size
alone mlp medium (products of 256 x 64 by 64 x 128 a few calls apart) ran at 1.15x NumPy's
time against 1.03x without it; with the pause as well, the suite's mlp small ran at 1.06-1.11x
against 1.03-1.05x (pairwise and least_squares small gained: 0.96x against 1.01x, 0.99x against
1.04x).

Only the BLAS that NumPy bundles is touched (found under NumPy's own directory), and only while
such a product runs (from any thread: the count is the process's, so the first of concurrent
such products sets it and the last puts it back, and a large product another thread makes
meanwhile runs on one thread too); without threadpoolctl, or with a BLAS set to one thread
already, products run as NumPy runs them. A product on one thread may differ from a threaded
one in the last bits (OpenBLAS's kernels block it differently), as it does between machines of
different core counts.
"""

from __future__ import annotations

import functools
import os
import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["BACK_TO_BACK_S", "FEW_THREADS", "SMALL_WORK", "THREADED_WORK", "one_thread_when_small"]

THREADED_WORK = 65_536 * 4  # OpenBLAS's GEMM_MULTITHREAD_THRESHOLD (4) times its unit: one thread at or under
SMALL_WORK = 1 << 22  # multiply-adds: about 0.1-0.3 ms on one core
BACK_TO_BACK_S = 100e-6  # a product this soon after the last one keeps the threads, spinning for it
FEW_THREADS = 4  # a BLAS of this many threads or fewer keeps them: few spin, each with a core of its own
_last_end = float("-inf")  # when the last such product ended

_lock = threading.Lock()  # looking for NumPy's BLAS once; the thread count's changes
_found: list[Any] = []  # NumPy's BLAS controllers (threadpoolctl) of many threads, looked for once
_looked = False


def _numpy_blas() -> list[Any]:
    global _looked
    if not _looked:
        with _lock:
            if not _looked:
                home = os.path.dirname(np.__file__)  # .../numpy; its bundled libraries are in .../numpy.libs
                try:
                    from threadpoolctl import ThreadpoolController

                    _found.extend(c for c in ThreadpoolController().select(user_api="blas").lib_controllers
                                  if os.path.realpath(c.filepath).startswith((home + os.sep, home + ".libs" + os.sep))
                                  and c.get_num_threads() > FEW_THREADS)
                except Exception:  # no threadpoolctl, or it cannot read the libraries: NumPy's threads as they are
                    _found.clear()
                _looked = True
    return _found


_depth = 0  # products on one thread now, from any thread of the program
_restore: list[tuple[Any, int]] = []  # what the first of them found


def _on_one_thread(func: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
    """``func(*args, **kwargs)`` with NumPy's BLAS on one thread: the thread count is the
    process's, so the first of concurrent callers sets it and the last puts it back."""
    global _depth
    with _lock:
        if _depth == 0:
            _restore[:] = [(lib, n) for lib in _numpy_blas() if (n := lib.get_num_threads()) > FEW_THREADS]
            for lib, _ in _restore:
                lib.set_num_threads(1)
        _depth += 1
    try:
        return func(*args, **kwargs)
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0:
                for lib, n in _restore:
                    lib.set_num_threads(n)


def one_thread_when_small(func: Callable[..., Any]) -> Callable[..., Any]:
    """``func`` (a NumPy product: ``matmul``, ``dot``) run on one BLAS thread when its operands are
    two host matrices whose product takes over ``THREADED_WORK`` and at most ``SMALL_WORK``
    multiply-adds, the last such product ended over ``BACK_TO_BACK_S`` before, and NumPy's BLAS
    has over ``FEW_THREADS`` threads."""

    @functools.wraps(func)
    def product(*args: Any, **kwargs: Any) -> Any:
        global _last_end
        if len(args) == 2 and _numpy_blas():
            a, b = args
            if type(a) is np.ndarray and type(b) is np.ndarray and a.ndim == 2 and b.ndim == 2:
                if THREADED_WORK < a.shape[0] * a.shape[1] * b.shape[1] <= SMALL_WORK:
                    try:
                        if time.perf_counter() - _last_end < BACK_TO_BACK_S:
                            return func(*args, **kwargs)
                        return _on_one_thread(func, args, kwargs)
                    finally:
                        _last_end = time.perf_counter()
        return func(*args, **kwargs)

    return product
