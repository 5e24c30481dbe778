"""torch's CPU side set to share the host with NumPy as NumPy does, unless the user set these.

- OpenMP (torch's CPU thread pool) puts idle threads to sleep rather than spin
  (``OMP_WAIT_POLICY=PASSIVE``). A spinning pool keeps the cores busy for a while after each
  torch call, and dispatch runs NumPy's calls right after torch's on the same cores: on a 2-core
  machine that made the NumPy calls of a mixed program up to twice slower, and a NumPy program
  timed right after a torch one took 1.10-1.4x its time.
- Large CPU tensors ask for transparent huge pages (``THP_MEM_ALLOC_ENABLE``), as NumPy does for
  its arrays of 4 MiB or more. Without it, on a 2-core machine whose kernel gives huge pages only
  when asked, each 400 MB torch-cpu result took about 97,700 page faults against NumPy's 567.

torch reads each once: OpenMP's as torch loads, the allocator's at its first CPU tensor. So they
are set when dispatch is imported (a program that imports dispatch before torch gets both), and
again when dispatch makes its first torch target: one that imported torch first has usually made
no tensor yet (a 320 MB product took 78,000 page faults so, against 480 with the variable set
after the import). OpenMP's applies to every library that loads the OpenMP runtime afterwards.
"""

from __future__ import annotations

import os

__all__ = ["DEFAULTS", "set_defaults"]

DEFAULTS = {"OMP_WAIT_POLICY": "PASSIVE", "THP_MEM_ALLOC_ENABLE": "1"}


def set_defaults() -> None:
    """Set both variables where the user has not."""
    for name, value in DEFAULTS.items():
        os.environ.setdefault(name, value)
