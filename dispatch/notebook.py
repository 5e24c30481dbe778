"""IPython and Jupyter: ``%load_ext dispatch`` routes the notebook's own NumPy calls, as
``dispatch run`` does for a script, and ``%%dispatch_trace`` shows where a cell's calls ran.

Once loaded:

- names of the notebook bound to NumPy's modules (``np`` after ``import numpy as np``, and
  ``numpy.linalg``, ``fft``, ``random``) or to NumPy's functions (``from numpy import mean``)
  are bound to dispatch's instead;
- later imports of NumPy made by the notebook's cells, and by the modules in its folder, get
  dispatch (the rules of ``dispatch.cli._script``); libraries keep real NumPy;
- scikit-learn, once the notebook imports it, is accelerated (``dispatch.sklearn``).

``%unload_ext dispatch`` gives the rebound names and later imports NumPy again (a name bound by
an import made while loaded keeps dispatch until imported again; scikit-learn stays accelerated
until ``dispatch.sklearn.unaccelerate()``). ``%%dispatch_trace`` runs its cell under
``dispatch.trace()`` and shows the trace, which a notebook renders as an HTML table.

After each cell the kernel waits for its user: an engine the cells would have saved on is brought
up then, in the background (``dispatch.routing.startup.idle``), so that the next cell finds it up
without having paid for it. ``watch_cells`` asks IPython for that; ``%load_ext dispatch`` calls
it, and so does ``import dispatch`` in a running IPython. It stays for the kernel's life.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import numpy

import dispatch
from dispatch.cli._script import ImportRedirect
from dispatch.cli.run import _accelerate_sklearn

__all__ = ["cell_ended", "load_ipython_extension", "unload_ipython_extension", "watch_cells"]

# the shell's loaded state: its import redirect and the names rebound, to undo on unload
_LOADED: dict[int, tuple[Any, dict[str, tuple[Any, Any]]]] = {}


def load_ipython_extension(shell: Any) -> None:
    """Called by ``%load_ext dispatch``: route the notebook's NumPy calls; add ``%%dispatch_trace``."""
    if id(shell) in _LOADED:
        return
    redirect = _NotebookRedirect(shell.user_global_ns, os.getcwd(), _accelerate_sklearn)
    redirect.__enter__()
    _LOADED[id(shell)] = (redirect, _rebind(shell.user_global_ns))
    shell.register_magic_function(_trace_magic(shell), magic_kind="cell", magic_name="dispatch_trace")
    watch_cells(shell)


def watch_cells(shell: Any = None) -> None:
    """After each cell of ``shell`` (the running IPython's where none is given; nothing outside
    IPython), tell the router that the program waits (``cell_ended``); once per shell."""
    if shell is None:
        from IPython import get_ipython

        shell = get_ipython()
    if shell is not None and cell_ended not in shell.events.callbacks.get("post_run_cell", ()):
        shell.events.register("post_run_cell", cell_ended)


def cell_ended(*_: Any) -> None:
    """IPython's ``post_run_cell``: bring up what the cells would have saved on (``startup.idle``),
    where a call was routed at all (the router's modules are loaded by the first such call)."""
    startup = sys.modules.get("dispatch.routing.startup")
    if startup is not None:
        startup.idle()


def unload_ipython_extension(shell: Any) -> None:
    """Called by ``%unload_ext dispatch``: the notebook's names and imports are NumPy's again."""
    loaded = _LOADED.pop(id(shell), None)
    if loaded is None:
        return
    redirect, swapped = loaded
    redirect.__exit__(None, None, None)
    ns = shell.user_global_ns
    for name, (old, new) in swapped.items():
        if ns.get(name) is new:  # not rebound by the user since
            ns[name] = old


def _trace_magic(shell: Any) -> Any:
    def dispatch_trace(line: str, cell: str) -> Any:
        """``%%dispatch_trace``: run the cell traced; its trace is the cell's output."""
        with dispatch.trace() as t:
            shell.run_cell(cell)
        return t

    return dispatch_trace


def _numpy_modules() -> dict[int, tuple[Any, Any]]:
    """id(NumPy module) -> (that module, dispatch's)."""
    return {id(m): (m, d) for m, d in ((numpy, dispatch), (numpy.linalg, dispatch.linalg),
                                      (numpy.fft, dispatch.fft), (numpy.random, dispatch.random))}


def _rebind(ns: dict[str, Any]) -> dict[str, tuple[Any, Any]]:
    """Bind the notebook's NumPy modules and functions to dispatch's; name -> (old, new).
    Classes and dtypes (``ndarray``, ``float64``) are left: ``isinstance`` keeps its meaning."""
    modules = _numpy_modules()
    functions = {}
    for numpy_module, dispatch_module in modules.values():
        for name in getattr(numpy_module, "__all__", ()):
            value = getattr(numpy_module, name, None)
            if callable(value) and not isinstance(value, type):
                functions[id(value)] = (dispatch_module, name)
    swapped = {}
    for name, value in list(ns.items()):
        if name.startswith("_"):
            continue
        if id(value) in modules and modules[id(value)][0] is value:
            new = modules[id(value)][1]
        elif id(value) in functions:
            module, attr = functions[id(value)]
            new = getattr(module, attr, None)
            if new is None:
                continue
        else:
            continue
        swapped[name] = (value, new)
        ns[name] = new
    return swapped


class _NotebookRedirect(ImportRedirect):
    """The script runner's import redirect, for which the notebook's cells are the user's code too."""

    def __init__(self, user_ns: dict[str, Any], root: str, on_sklearn: Any) -> None:
        super().__init__(root, on_sklearn)
        self.user_ns = user_ns

    def _users_globals(self, globals_: dict | None) -> bool:
        if globals_ is None:
            globals_ = sys._getframe(2).f_globals
        return globals_ is self.user_ns or self.is_users_file(globals_.get("__file__"))
