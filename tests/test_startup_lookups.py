"""What a short script's first calls look up is found without making what it does not use:
the op of a NumPy function handed to ``__array_function__`` (of the catalog's 500), and where a
NumPy method takes ``out`` by position."""

from __future__ import annotations

import inspect
import os
import re
import subprocess
import sys

import numpy
import pytest

from dispatch.arrays._array import _METHODS, _positional_names
from dispatch.base import ops
from dispatch.base.catalog import parse_table
from dispatch.base.numpy_catalog import NUMPY_CATALOG

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _catalog_functions():
    for name in NUMPY_CATALOG:
        try:
            func = ops._resolve(name)
        except AttributeError:  # an older NumPy without it
            continue
        if not isinstance(func, numpy.ufunc) and callable(func):
            yield name, func


@pytest.mark.parametrize(("name", "func"), list(_catalog_functions()), ids=lambda v: v if isinstance(v, str) else "")
def test_a_numpy_function_gets_the_op_of_a_catalog_name_that_is_it(name, func):
    op = ops.op_for_function(func)
    # NumPy's function, or it adapted (dispatch.arrays.callbacks: the user's function given dispatch arrays)
    assert op.cataloged and (op.func is func or getattr(op.func, "__wrapped__", None) is func)
    assert op.name in NUMPY_CATALOG and ops._resolve(op.name) is func


def test_a_function_outside_the_catalog_runs_on_numpy():
    op = ops.op_for_function(numpy.lib.stride_tricks.sliding_window_view)
    assert not op.cataloged and op.work == "host"
    assert ops.op_for_function(numpy.lib.stride_tricks.sliding_window_view) is op


def test_numpys_function_on_a_dispatch_array_loads_no_other_numpy_module():
    """``numpy.concatenate`` of dispatch arrays finds its op by its own name: NumPy's FFT, random and
    polynomial modules (which the catalog names) stay unloaded."""
    code = ("import sys, numpy, dispatch as np\n"
            "a = np.arange(4.0)\n"
            "print(numpy.concatenate([a, a]).tolist(), numpy.transpose(a).tolist())\n"
            "print([m for m in ('numpy.fft', 'numpy.random', 'numpy.polynomial') if m in sys.modules])\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("DISPATCH_")}
    env["DISPATCH_LEARN"] = "0"
    done = subprocess.run([sys.executable, "-c", code], env=env, cwd=REPO, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["[0.0, 1.0, 2.0, 3.0, 0.0, 1.0, 2.0, 3.0] [0.0, 1.0, 2.0, 3.0]", "[]"]


@pytest.mark.parametrize("method", sorted({*_METHODS, "copy", "astype", "reshape", "transpose"}))
def test_a_methods_positional_parameters_are_inspects(method):
    numpy_method = getattr(numpy.ndarray, method)
    expected = [p.name for p in inspect.signature(numpy_method).parameters.values()
                if p.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    assert _positional_names(numpy_method) == expected



@pytest.mark.parametrize(("table", "error"), [
    ("add LOW map =\nadd LOW map =\n", "catalog line 2: duplicate entry 'add'"),
    ("add LOW map\n", "catalog line 1 has 3 cells, expected 4: 'add LOW map'"),
    ("# head\n\nadd SOME map =\n", "catalog line 3: unknown complexity 'SOME'"),
    ("add LOW map =  # fine\nsum LOW spin =\n", "catalog line 2: unknown work kind 'spin'"),
])
def test_a_bad_catalog_line_is_named(table, error):
    with pytest.raises(ValueError, match=re.escape(error)):
        parse_table(table, ("cupy",), frozenset({"map"}))


def test_a_sound_table_reads_every_line():
    table = parse_table("add LOW map =  # why\nsum MEDIUM map -\n", ("cupy",), frozenset({"map"}))
    assert list(table) == ["add", "sum"]
    assert table["add"].counterparts == {"cupy": "add"} and table["add"].why == "why"
    assert table["sum"].counterparts == {} and table.work("sum") == "map"
