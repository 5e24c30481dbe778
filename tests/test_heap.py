"""``dispatch.base.heap``: glibc's heap thresholds, set at the first routed call (never at
``import dispatch``), unless the user chose their own."""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys

import pytest

from dispatch.base import heap


def _glibc() -> bool:
    try:
        return sys.platform.startswith("linux") and hasattr(ctypes.CDLL(None), "gnu_get_libc_version")
    except OSError:
        return False


pytestmark = pytest.mark.skipif(not _glibc(), reason="the thresholds are glibc's")

# In a fresh process: is a 24 MiB block (over glibc's starting threshold of 128 KiB, under the
# 32 MiB kept) mapped on its own (glibc's start), or taken from the heap (the thresholds kept)?
_PROBE = """
import ctypes, numpy
import dispatch
class Info(ctypes.Structure):
    _fields_ = [(n, ctypes.c_int) for n in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks",
                                             "fsmblks", "uordblks", "fordblks", "keepcost")]
libc = ctypes.CDLL(None)
libc.mallinfo.restype = Info
dispatch.asarray([1.0]) + 1  # the first routed call
from dispatch.base import heap
before = libc.mallinfo().hblks
block = numpy.ones(3 << 20)
print(heap.keep(), libc.mallinfo().hblks - before)
"""


def _probe(**env: str) -> tuple[str, int]:
    clean = {k: v for k, v in os.environ.items() if not (k.startswith("MALLOC_") or k == "DISPATCH_HEAP")}
    out = subprocess.run([sys.executable, "-c", _PROBE], env={**clean, **env}, capture_output=True, text=True,
                         check=True, timeout=120).stdout.split()
    return out[0], int(out[1])


def test_loading_the_arrays_keeps_freed_memory_in_the_heap():
    assert _probe() == ("True", 0)


@pytest.mark.parametrize("env", [{"DISPATCH_HEAP": "system"}, {"MALLOC_TRIM_THRESHOLD_": "1048576"}],
                         ids=["opted-out", "user-set"])
def test_the_users_choice_is_left_alone(env):
    assert _probe(**env) == ("False", 1)


def test_the_thresholds_are_glibcs_ceiling():
    assert heap.MMAP_THRESHOLD == 32 << 20
    assert heap.TRIM_THRESHOLD == 2 * heap.MMAP_THRESHOLD


_IMPORT_ONLY = """
import ctypes, json, os, sys
environ = dict(os.environ)
import dispatch
import numpy
class Info(ctypes.Structure):
    _fields_ = [(n, ctypes.c_int) for n in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks",
                                             "fsmblks", "uordblks", "fordblks", "keepcost")]
libc = ctypes.CDLL(None)
libc.mallinfo.restype = Info
before = libc.mallinfo().hblks
block = numpy.ones(3 << 20)
from dispatch.base import heap
print(json.dumps({"environ": dict(os.environ) == environ, "mapped": libc.mallinfo().hblks - before,
                  "tried": heap._kept is not None, "torch": "torch" in sys.modules}))
"""


def test_importing_dispatch_leaves_the_environment_and_the_heap_alone():
    """A library sets no process-wide state as it is imported: no variable, no malloc threshold
    (a 24 MiB block is still mapped on its own, as glibc starts)."""
    import json

    clean = {k: v for k, v in os.environ.items() if not (k.startswith("MALLOC_") or k == "DISPATCH_HEAP"
                                                        or k in ("OMP_WAIT_POLICY", "THP_MEM_ALLOC_ENABLE"))}
    out = subprocess.run([sys.executable, "-c", _IMPORT_ONLY], env=clean, capture_output=True, text=True,
                         check=True, timeout=120).stdout
    assert json.loads(out) == {"environ": True, "mapped": 1, "tried": False, "torch": False}
