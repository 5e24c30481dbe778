"""Which stream positions NumPy's sequential loop visits, found for all positions at once.

An attempt at ``p`` takes ``k[p]`` draws (``dispatch.streams.transforms``); the loop's attempts
start at 0, then at ``p + k[p]``, and so on. With ``K = max(k)``, a position ``q`` that no
attempt starting before it can jump over (``k[q - j] <= j`` for ``j = 1 .. K - 1``) is visited
by every chain, the one from 0 included: it is a *sync point*. Nearly every position is one
(most attempts take one draw), so each position decides alone whether the loop starts an
attempt there: walk from the last sync point at or before it and see whether the walk lands
on it. The output index of each accepted attempt is then a prefix sum. The device kernels do
the same, one thread per position.
"""

from __future__ import annotations

import numpy as np


def sync_points(k: np.ndarray) -> np.ndarray:
    """``True`` where no attempt that starts earlier takes draws past the position."""
    sync = np.ones(k.size, bool)
    for j in range(1, int(k.max()) if k.size else 1):
        sync[j:] &= k[:-j] <= j
    return sync


def chain_starts(k: np.ndarray) -> np.ndarray:
    """``True`` at the positions where the loop from position 0 starts an attempt."""
    n = k.size
    here = np.arange(n)
    cur = np.maximum.accumulate(np.where(sync_points(k), here, 0))
    behind = cur < here
    while behind.any():
        cur[behind] += k[cur[behind]]
        behind = cur < here
    return cur == here


def chosen(k: np.ndarray, accept: np.ndarray, n: int) -> tuple[np.ndarray, int] | None:
    """The positions of the first ``n`` accepted attempts and the draws they use, or ``None``
    when the positions given hold fewer."""
    if n == 0:
        return np.empty(0, np.intp), 0
    taken = np.flatnonzero(chain_starts(k) & accept)
    if taken.size < n:
        return None
    last = int(taken[n - 1])
    return taken[:n], last + int(k[last])
