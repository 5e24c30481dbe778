"""IPython and Jupyter: ``%load_ext dispatch`` routes the notebook's own NumPy calls (names
bound before, imports after), libraries keep NumPy, ``%unload_ext`` puts the names back, and
``%%dispatch_trace`` shows the cell's trace."""

from __future__ import annotations

import io
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("IPython")
from IPython.core.interactiveshell import InteractiveShell

import dispatch


@pytest.fixture(scope="module")
def shell():
    """One IPython shell for these tests; what it changes in the process (``__main__``, two
    builtins) is put back after them, so the tests that follow run as without it."""
    import builtins

    main, names = sys.modules["__main__"], set(vars(builtins))
    yield InteractiveShell.instance()
    InteractiveShell.clear_instance()
    sys.modules["__main__"] = main
    for name in set(vars(builtins)) - names:
        delattr(builtins, name)


@pytest.fixture
def ip(shell, tmp_path, monkeypatch):
    from dispatch.routing import startup

    monkeypatch.setattr(startup, "_forgone", {})  # no engine comes up between these cells for earlier tests' calls
    monkeypatch.chdir(tmp_path)  # the notebook's folder: modules there are the user's
    monkeypatch.syspath_prepend(str(tmp_path))  # as Jupyter puts it on the path
    shell.reset()
    yield shell
    sys.modules.pop("helper", None)
    shell.run_line_magic("unload_ext", "dispatch")
    shell.reset()


def run(ip: InteractiveShell, cell: str) -> None:
    result = ip.run_cell(cell)
    result.raise_error()


def test_load_ext_rebinds_numpy_names_bound_before(ip):
    run(ip, "import numpy as np\nimport numpy.linalg as la\nfrom numpy import mean, ndarray, float64")
    ip.run_line_magic("load_ext", "dispatch")
    ns = ip.user_ns
    assert ns["np"] is dispatch and ns["la"] is dispatch.linalg
    assert ns["mean"] is dispatch.mean
    assert ns["ndarray"] is np.ndarray and ns["float64"] is np.float64  # classes keep their meaning
    run(ip, "x = np.arange(12.0).reshape(3, 4)\ny = mean(x, axis=0)\nz = la.norm(x)")
    assert type(ns["x"]) is dispatch.ndarray and type(ns["y"]) is dispatch.ndarray
    want = np.arange(12.0).reshape(3, 4).mean(axis=0)
    got = np.asarray(ns["y"])
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    assert float(ns["z"]) == np.linalg.norm(np.arange(12.0).reshape(3, 4))
    ip.run_line_magic("unload_ext", "dispatch")
    assert ns["np"] is np and ns["la"] is np.linalg and ns["mean"] is np.mean


def test_imports_after_loading_get_dispatch_and_libraries_keep_numpy(ip, tmp_path):
    (tmp_path / "helper.py").write_text("import numpy\n\ndef twice(a):\n    return numpy.multiply(a, 2)\n")
    ip.run_line_magic("load_ext", "dispatch")
    run(ip, "import numpy as np\nfrom numpy.fft import rfft\nimport helper\nimport json\n"
            "def f():\n    import numpy\n    return numpy\n")
    ns = ip.user_ns
    assert ns["np"] is dispatch and ns["rfft"] is dispatch.fft.rfft
    assert ns["f"]() is dispatch  # a function defined in a cell is the notebook's code too
    assert ns["helper"].numpy is dispatch  # a module in the notebook's folder, as `dispatch run` does
    assert sys.modules["json"] is ns["json"]
    import numpy.linalg

    assert numpy.linalg.__name__ == "numpy.linalg"  # this test module, outside the notebook, keeps NumPy
    ip.run_line_magic("unload_ext", "dispatch")
    run(ip, "import numpy as np2")
    assert ns["np2"] is np


def test_dispatch_trace_cell_magic_shows_the_cells_trace(ip, capsys):
    ip.run_line_magic("load_ext", "dispatch")
    run(ip, "import numpy as np")
    result = ip.run_cell("%%dispatch_trace\nx = np.arange(10.0)\ns = x.sum()\n")
    result.raise_error()
    t = ip.user_ns["_"]
    assert isinstance(t, dispatch.Trace)
    assert [r.op for r in t.records] == ["arange", "sum"]
    assert float(ip.user_ns["s"]) == 45.0
    assert "<Trace: 2 calls" in capsys.readouterr().out
    assert t._repr_html_().startswith("<table><caption>dispatch trace: 2 calls")
    out = io.StringIO()
    t.summary(file=out)
    assert {line.split()[0] for line in out.getvalue().splitlines()[2:]} == {"arange", "sum"}


def test_load_ext_twice_is_once(ip):
    ip.run_line_magic("load_ext", "dispatch")
    ip.run_line_magic("reload_ext", "dispatch")
    run(ip, "import numpy as np")
    ip.run_line_magic("unload_ext", "dispatch")
    import builtins

    assert builtins.__import__.__module__ != "dispatch.cli._script"


def test_the_end_of_each_cell_tells_the_router_that_the_program_waits(ip, monkeypatch):
    """After each cell, the kernel waits for its user: ``startup.idle`` may bring an engine up
    then. ``%load_ext`` asks IPython for it, once however often it is loaded."""
    from dispatch.notebook import cell_ended
    from dispatch.routing import startup

    ends = []
    monkeypatch.setattr(startup, "idle", lambda: ends.append(1))
    ip.run_line_magic("load_ext", "dispatch")
    ip.run_line_magic("reload_ext", "dispatch")
    assert ip.events.callbacks["post_run_cell"].count(cell_ended) == 1
    run(ip, "x = 1")
    run(ip, "y = x + 1")
    assert ends == [1, 1]


def test_import_dispatch_in_a_running_ipython_watches_its_cells():
    """``import dispatch as np`` in a notebook, without ``%load_ext``: the cells' ends are watched too."""
    code = ("from IPython.core.interactiveshell import InteractiveShell\n"
            "ip = InteractiveShell.instance()\n"
            "import dispatch\n"
            "from dispatch.notebook import cell_ended\n"
            "print(ip.events.callbacks['post_run_cell'].count(cell_ended))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["1"]
