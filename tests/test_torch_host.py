"""torch is loaded to share the host with NumPy as NumPy does: idle threads asleep, huge pages
for large tensors; a setting of the user's own is kept."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytest.importorskip("torch")

_PROBE = ("import os, dispatch.targets as t; assert t.probe('torch-cpu') is not None; "
          "print(os.environ.get('OMP_WAIT_POLICY'), os.environ.get('THP_MEM_ALLOC_ENABLE'))")


def _settings(first: str = "", **env: str) -> str:
    clean = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "THP_MEM_ALLOC_ENABLE")}
    done = subprocess.run([sys.executable, "-c", first + _PROBE], env={**clean, **env}, capture_output=True,
                          text=True, check=True)
    return done.stdout.strip()


def test_torch_is_loaded_with_idle_threads_asleep_and_huge_pages():
    assert _settings() == "PASSIVE 1"


def test_torch_imported_first_gets_them_too():
    """torch reads them at its first CPU tensor, after a program's imports."""
    assert _settings("import torch; ") == "PASSIVE 1"


def test_the_user_s_own_settings_are_kept():
    assert _settings(OMP_WAIT_POLICY="ACTIVE", THP_MEM_ALLOC_ENABLE="0") == "ACTIVE 0"


@pytest.mark.parametrize("user", [None, "ACTIVE"])
def test_importing_dispatch_sets_nothing_and_tune_asks_torch_to_sleep_unless_the_user_chose(user):
    """``import dispatch`` leaves the environment alone; ``dispatch.tune()`` sets torch's settings
    (without importing torch), where the user has not, for a program that imports torch itself."""
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "THP_MEM_ALLOC_ENABLE")}
    if user is not None:
        env["OMP_WAIT_POLICY"] = user
    code = ("import os, sys; import dispatch; "
            "print(os.environ.get('OMP_WAIT_POLICY'), os.environ.get('THP_MEM_ALLOC_ENABLE')); dispatch.tune(); "
            "print(os.environ.get('OMP_WAIT_POLICY'), os.environ.get('THP_MEM_ALLOC_ENABLE'), 'torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    imported, tuned = out.stdout.splitlines()
    assert imported.split() == [str(user), "None"]
    assert tuned.split() == [user or "PASSIVE", "1", "False"]
