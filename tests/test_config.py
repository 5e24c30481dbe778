"""User control over where calls run: ``dispatch.set_backend(name)``, ``with dispatch.using(name):``
and the ``DISPATCH_BACKEND`` environment variable; ``"auto"`` restores routing. Which target ran
a call is read from the trace (a torch-cpu result lives in host memory, as NumPy's does).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import numpy
import pytest
from conftest import require
from helpers import assert_same

import dispatch

ROOT = Path(__file__).resolve().parent.parent


def ran_on(call) -> tuple[set[str], set[str]]:
    """The targets and the reasons of the calls ``call()`` made."""
    with dispatch.trace() as t:
        call()
    rows = t.rows()
    assert rows
    return {r["target"] for r in rows}, {r["reason"] for r in rows}


@pytest.fixture
def auto():
    assert dispatch.get_backend() == "auto"
    yield
    dispatch.set_backend("auto")


def test_set_backend_forces_every_call_and_auto_restores_routing(auto):
    require("torch-cpu")
    a = dispatch.arange(12.0).reshape(3, 4)
    dispatch.set_backend("torch-cpu")
    assert dispatch.get_backend() == "torch-cpu"
    assert ran_on(lambda: a.sum(axis=0)) == ({"torch-cpu"}, {"forced torch-cpu"})
    assert_same(a.sum(axis=0), numpy.arange(12.0).reshape(3, 4).sum(axis=0))
    # a call the forced target refuses still runs, on NumPy, with NumPy's result
    targets, reasons = ran_on(lambda: dispatch.median(a, axis=1))
    assert targets == {"numpy"} and all("torch-cpu refused" in r for r in reasons)
    assert_same(dispatch.median(a, axis=1), numpy.median(numpy.arange(12.0).reshape(3, 4), axis=1))
    dispatch.set_backend("auto")
    assert dispatch.get_backend() == "auto"
    targets, reasons = ran_on(lambda: a.sum(axis=0))
    assert not any(r.startswith("forced") for r in reasons)


def test_using_nests_restores_and_wins_over_set_backend(auto):
    require("torch-cpu")
    a = dispatch.ones(8)
    dispatch.set_backend("numpy")
    with dispatch.using("torch-cpu"):
        assert dispatch.get_backend() == "torch-cpu"
        assert ran_on(lambda: a + a)[1] == {"forced torch-cpu"}
        with dispatch.using("auto"):
            assert dispatch.get_backend() == "auto"
            assert not any(r.startswith("forced") for r in ran_on(lambda: a + a)[1])
        assert dispatch.get_backend() == "torch-cpu"
    assert dispatch.get_backend() == "numpy"
    with pytest.raises(ZeroDivisionError), dispatch.using("torch-cpu"):
        raise ZeroDivisionError
    assert dispatch.get_backend() == "numpy"
    assert ran_on(lambda: a + a)[1] == {"forced numpy"}


def test_using_is_local_to_its_thread(auto):
    require("torch-cpu")
    seen = []
    with dispatch.using("torch-cpu"):
        thread = threading.Thread(target=lambda: seen.append(dispatch.get_backend()))
        thread.start()
        thread.join()
        assert dispatch.get_backend() == "torch-cpu"
    assert seen == ["auto"]


def test_bad_names_are_refused_at_once():
    with pytest.raises(ValueError, match="unknown backend 'cuda'; choose one of: auto, numpy, torch-cpu"):
        dispatch.set_backend("cuda")
    with pytest.raises(TypeError, match="a backend is named by a string"):
        dispatch.using(None).__enter__()
    assert dispatch.get_backend() == "auto"


def _python(code: str, backend: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("DISPATCH_BACKEND", "DISPATCH_TRACE")}
    env.update(PYTHONPATH=str(ROOT), DISPATCH_BACKEND=backend)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=env,
                          timeout=120)


PROBE = """
    import json, dispatch
    a = dispatch.arange(6.0)
    with dispatch.trace() as t:
        total = float((a * a).sum())
    print(json.dumps({"backend": dispatch.get_backend(), "total": total,
                      "reasons": sorted({r["reason"] for r in t.rows()})}))
"""


@pytest.mark.parametrize("value", ["torch-cpu", "numpy", "auto", ""])
def test_environment_variable_forces_a_target(value):
    if value == "torch-cpu":
        require("torch-cpu")
    done = _python(PROBE, value)
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)
    assert got["total"] == 55.0
    if value in ("auto", ""):
        assert got["backend"] == "auto" and not any(r.startswith("forced") for r in got["reasons"])
    else:
        assert got["backend"] == value and got["reasons"] == [f"forced {value}"]


def test_environment_variable_naming_no_backend_fails_once_with_the_choices():
    done = _python("import dispatch; dispatch.ones(3) + 1", "Torch-CPU")
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert last == ("ValueError: DISPATCH_BACKEND='Torch-CPU' is not a backend; choose one of: auto, numpy, "
                    "torch-cpu, cupy, torch-cuda, torch-mps, dask")
