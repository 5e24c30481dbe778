"""torch's CPU side set to share the host with NumPy as NumPy does, unless the user set these.

- OpenMP (torch's CPU thread pool) puts idle threads to sleep rather than spin
  (``OMP_WAIT_POLICY=PASSIVE``). A spinning pool keeps the cores busy for a while after each
  torch call, and dispatch runs NumPy's calls right after torch's on the same cores, which the
  spinning threads slow down.
- Large CPU tensors ask for transparent huge pages (``THP_MEM_ALLOC_ENABLE``), as NumPy does for
  its arrays of 4 MiB or more. Without it, where the kernel gives huge pages only when asked, a
  large torch-cpu result takes two orders of magnitude more page faults than NumPy's.

torch reads each once: OpenMP's as torch loads, the allocator's at its first CPU tensor. So they
are set just before dispatch makes its first torch target (``dispatch.base.tuning``), never at
``import dispatch``; a program that imports torch itself first still gets the allocator's (it
has usually made no tensor yet), and one that wants both calls ``dispatch.tune()`` before its
``import torch``. OpenMP's applies to every library that loads the OpenMP runtime afterwards.
"""

from __future__ import annotations

import os

__all__ = ["DEFAULTS", "set_defaults"]

DEFAULTS = {"OMP_WAIT_POLICY": "PASSIVE", "THP_MEM_ALLOC_ENABLE": "1"}


def set_defaults() -> None:
    """Set both variables where the user has not."""
    for name, value in DEFAULTS.items():
        os.environ.setdefault(name, value)
