"""Warnings raised inside a routed call name the user's line, as NumPy's do.

NumPy's ufuncs warn (``divide by zero encountered``) from C, at the innermost Python frame, and
its Python functions warn a fixed number of frames up: under dispatch those frames are
dispatch's own. A warning located in dispatch's files is issued again at the first frame
outside them, through the whole machinery (filters by the caller's module, the caller's
once-per-line registry), so ``warnings.catch_warnings(record=True)``, ``-W error`` and the
printed line are what NumPy would give.
"""

from __future__ import annotations

import os
import sys
import warnings
from typing import Any

__all__ = ["install"]

_HOME = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep  # the dispatch package
_show = getattr(warnings, "_showwarnmsg", None)  # the hook the warnings machinery calls to show one


def _ours(filename: str) -> bool:
    return filename.startswith(_HOME)


def _showwarnmsg(msg: Any) -> None:
    if not _ours(msg.filename or ""):
        _show(msg)
        return
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename != msg.filename:  # (NumPy's frames warned a few up)
        frame = frame.f_back
    registry = frame.f_globals.get("__warningregistry__") if frame is not None else None
    while frame is not None and _ours(frame.f_code.co_filename):
        frame = frame.f_back
    if frame is None:  # dispatch's own work, from no caller's line (an import): as it is
        _show(msg)
        return
    if registry is not None:
        # dispatch's line must not count as warned: the next caller's line warns too
        for lineno in (msg.lineno, 0):  # ("module" filters register line 0)
            registry.pop((str(msg.message), msg.category, lineno), None)
    caller = frame.f_globals
    # no module_globals: CPython's warn_explicit would ask the caller's loader for its source, and
    # the loader of ``python -c``'s __main__ raises ImportError; the line is read from the file instead
    warnings.warn_explicit(msg.message, msg.category, frame.f_code.co_filename, frame.f_lineno,
                           module=caller.get("__name__"), registry=caller.setdefault("__warningregistry__", {}),
                           source=msg.source)


def install() -> None:
    """Point the warnings machinery's hook at ``_showwarnmsg`` (once)."""
    if _show is not None and warnings._showwarnmsg is not _showwarnmsg:  # (a Python without the hook: as it is)
        warnings._showwarnmsg = _showwarnmsg
