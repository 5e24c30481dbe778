"""Running an unmodified script as ``python SCRIPT ARGS...`` would, with its own NumPy
imports answered by dispatch.

Which imports are redirected: while the script runs, ``builtins.__import__`` and
``importlib.import_module`` are wrapped. An import of ``numpy`` or ``numpy.*`` gets the
dispatch equivalent when the module asking for it is one of the user's: its ``__file__``
lies under the script's folder (symbolic links resolved) and not in a ``site-packages`` or
``dist-packages`` folder, the standard library, or dispatch itself. So the script and the
modules next to it (or below it) get dispatch, and every library (pandas, scikit-learn,
anything installed, the standard library) keeps real NumPy.

=====================================  ===================================================
the user's module says                 it gets
=====================================  ===================================================
``import numpy as np``                 ``dispatch``
``import numpy.linalg [as la]``        ``dispatch`` bound as ``numpy`` (``dispatch.linalg`` as ``la``)
``from numpy import zeros, linalg``    ``dispatch.zeros``, ``dispatch.linalg``
``from numpy.linalg import solve``     ``dispatch.linalg.solve`` (likewise ``fft``, ``random``)
``from numpy.typing import NDArray``   NumPy's own (other submodules are not routed)
``importlib.import_module("numpy")``   ``dispatch`` (the caller's file decides, as above)
=====================================  ===================================================

Not covered: ``importlib.import_module`` bound before the script started, and
``importlib.__import__`` / ``importlib._bootstrap`` called directly; code run with ``exec``
on globals without a ``__file__`` keeps real NumPy.

Python's behaviour is kept: the script runs as ``__main__`` (``__file__`` absolute,
``sys.argv`` = [SCRIPT, *ARGS], its folder first on ``sys.path``); ``sys.exit(code)`` gives
that exit status; an uncaught exception goes to ``sys.excepthook`` with a traceback that
starts at the script (the runner's frames are left out) and exits 1 (130 for
KeyboardInterrupt).
"""

from __future__ import annotations

import builtins
import importlib
import importlib.util
import os
import site
import sys
import types
from _thread import _local as thread_local  # threading.local, without loading threading (2 M instructions)
from collections.abc import Callable
from importlib.machinery import SourceFileLoader
from typing import Any

import dispatch

__all__ = ["ImportRedirect", "ScriptError", "compile_script", "run_script"]

_THIS_FILE = os.path.abspath(__file__)
_ROUTED_SUBMODULES = frozenset({"linalg", "fft", "random"})
_LIBRARY_FOLDERS = frozenset({"site-packages", "dist-packages"})


class ScriptError(Exception):
    """The script cannot be started (missing, a folder, does not compile); ``code`` is the exit status."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


def _package_dir(name: str) -> str | None:
    module = sys.modules.get(name)
    # found, not imported: the script's run does not wait for a package it may never use
    file = getattr(module, "__file__", None) if module is not None else getattr(
        importlib.util.find_spec(name), "origin", None)
    return os.path.dirname(os.path.realpath(file)) + os.sep if file else None


class ImportRedirect:
    """While entered, imports of NumPy made by the files under ``root`` get dispatch.

    ``on_sklearn`` (optional) is called once, after the first import statement that leaves
    scikit-learn imported has finished (scikit-learn is then complete).
    """

    def __init__(self, root: str, on_sklearn: Callable[[], None] | None = None) -> None:
        self.root = os.path.realpath(root).rstrip(os.sep) + os.sep
        excluded = {_package_dir("dispatch"), _package_dir("converters")}
        # the standard library's folder and the installed packages' (``sysconfig.get_paths()``'s
        # stdlib and purelib, read without loading the build's configuration: about 5 ms)
        for path in (os.path.dirname(os.__file__), *getattr(site, "getsitepackages", list)()):
            excluded.add(os.path.realpath(path) + os.sep)
        self.excluded = tuple(p for p in excluded if p and not self.root.startswith(p))
        self.on_sklearn = on_sklearn
        self._users: dict[str, bool] = {}
        self._folders: dict[str, str] = {}  # a folder as named -> its real path
        self._local = thread_local()
        self._saved: tuple[Any, Any] | None = None

    # ---- whose import is it ------------------------------------------------------------------

    def is_users_file(self, filename: str | None) -> bool:
        """Whether ``filename`` is one of the user's files (cached per name)."""
        if not filename or filename.startswith("<"):  # "<string>", "<frozen ...>": no file of the user's
            return False
        found = self._users.get(filename)
        if found is None:
            real = self._real(filename)
            found = (
                real.startswith(self.root)
                and not real.startswith(self.excluded)
                and not _LIBRARY_FOLDERS.intersection(real[len(self.root):].split(os.sep))
            )
            self._users[filename] = found
        return found

    def _real(self, filename: str) -> str:
        """``os.path.realpath(filename)``, its folder's resolved once for all the files in it
        (NumPy's imports name some eighty files of a dozen folders)."""
        folder, name = os.path.split(filename)
        if not folder or not name or name in (os.curdir, os.pardir) or os.path.islink(filename):
            return os.path.realpath(filename)
        real = self._folders.get(folder)
        if real is None:
            real = self._folders[folder] = os.path.realpath(folder)
        return os.path.join(real, name)

    def _users_globals(self, globals_: dict | None) -> bool:
        if globals_ is None:
            globals_ = sys._getframe(2).f_globals  # __import__("numpy") called without globals
        return self.is_users_file(globals_.get("__file__"))

    # ---- the answers -----------------------------------------------------------------------------

    @staticmethod
    def _dispatch_for(name: str, leaf: bool, real: Any) -> Any:
        """What the user gets for an import of ``name`` that returned ``real``; ``leaf``: the
        module named itself (``from numpy.x import ...``, ``import_module``), else the top package."""

        if not leaf or name == "numpy":
            return dispatch
        sub = name[len("numpy."):]
        if sub in _ROUTED_SUBMODULES:
            return importlib.import_module(f"dispatch.{sub}")
        return real  # numpy.typing, numpy.testing...: NumPy's own

    def _import(self, name: str, globals: dict | None = None, locals: Any = None, fromlist: Any = (),
                level: int = 0) -> Any:
        local = self._local
        local.depth = getattr(local, "depth", 0) + 1
        try:
            module = self._original_import(name, globals, locals, fromlist, level)
        finally:
            local.depth -= 1
        if local.depth == 0 and self.on_sklearn is not None and "sklearn" in sys.modules:
            self._sklearn_imported()
        if level == 0 and (name == "numpy" or name.startswith("numpy.")) and self._users_globals(globals):
            return self._dispatch_for(name, bool(fromlist), module)
        return module

    def _import_module(self, name: str, package: str | None = None) -> Any:
        module = self._original_import_module(name, package)
        if getattr(self._local, "depth", 0) == 0 and self.on_sklearn is not None and "sklearn" in sys.modules:
            self._sklearn_imported()
        if (name == "numpy" or name.startswith("numpy.")) and self.is_users_file(
            sys._getframe(1).f_globals.get("__file__")
        ):
            return self._dispatch_for(name, True, module)
        return module

    def _sklearn_imported(self) -> None:
        hook, self.on_sklearn = self.on_sklearn, None  # once, and not again from the imports it makes
        if hook is not None:
            hook()

    # ---- installing --------------------------------------------------------------------------------

    def __enter__(self) -> ImportRedirect:
        self._original_import = builtins.__import__
        self._original_import_module = importlib.import_module
        self._saved = (builtins.__import__, importlib.import_module)
        builtins.__import__ = self._import
        importlib.import_module = self._import_module
        if self.on_sklearn is not None and "sklearn" in sys.modules:
            self._sklearn_imported()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._saved is not None:
            builtins.__import__, importlib.import_module = self._saved
            self._saved = None


# ---- running the script --------------------------------------------------------------------------


def compile_script(path: str) -> types.CodeType:
    """The script's code object, compiled as Python would; ``ScriptError`` in one line if it
    is missing (status 2) or does not compile (status 1)."""
    if not os.path.exists(path):
        raise ScriptError(f"no such script: {path}", 2)
    if os.path.isdir(path):
        raise ScriptError(f"{path} is a folder; give the script to run (a .py file)", 2)
    try:
        with open(path, "rb") as handle:  # bytes: compile() honours the coding declaration
            source = handle.read()
    except OSError as exc:
        raise ScriptError(f"cannot read {path}: {exc.strerror or exc}", 2) from None
    try:
        return compile(source, os.path.abspath(path), "exec", dont_inherit=True)
    except SyntaxError as exc:
        where = f"{path}:{exc.lineno}" + (f":{exc.offset}" if exc.offset else "")
        raise ScriptError(f"{where}: cannot compile: {exc.msg}", 1) from None
    except ValueError as exc:  # null bytes
        raise ScriptError(f"{path}: cannot compile: {exc}", 1) from None


def exit_status(exc: SystemExit) -> int:
    """The process status Python gives ``raise SystemExit(code)`` (printing a non-integer code)."""
    code = exc.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def run_script(code: types.CodeType, argv: list[str], redirect: ImportRedirect | None = None) -> int:
    """Run ``code`` as ``__main__`` with ``sys.argv = argv``; the exit status Python would give.

    ``sys.argv``, ``sys.path[0]`` and ``sys.modules["__main__"]`` are put back afterwards.
    """
    filename = code.co_filename
    main = types.ModuleType("__main__")
    main.__file__ = filename
    main.__builtins__ = builtins
    main.__loader__ = SourceFileLoader("__main__", filename)
    main.__spec__ = None
    main.__package__ = None
    main.__cached__ = None
    saved_argv, saved_path, saved_main = sys.argv, list(sys.path), sys.modules.get("__main__")
    sys.argv = list(argv)
    folder = os.path.dirname(os.path.realpath(filename))
    if sys.path:
        sys.path[0] = folder
    else:
        sys.path.append(folder)
    sys.modules["__main__"] = main
    try:
        if redirect is not None:
            with redirect:
                exec(code, main.__dict__)
        else:
            exec(code, main.__dict__)
    except SystemExit as exc:
        return exit_status(exc)
    except BaseException as exc:
        _report_uncaught(exc, filename)
        return 130 if isinstance(exc, KeyboardInterrupt) else 1
    finally:
        sys.argv = saved_argv
        sys.path[:] = saved_path
        if saved_main is not None:
            sys.modules["__main__"] = saved_main
    return 0


def _report_uncaught(exc: BaseException, filename: str) -> None:
    """Hand the exception to ``sys.excepthook`` as Python would, with a traceback that starts
    at the script's first frame and has none of this module's frames."""
    seen: set[int] = set()

    def strip(e: BaseException | None, leading: bool) -> None:
        if e is None or id(e) in seen:
            return
        seen.add(id(e))
        frames = []
        tb = e.__traceback__
        while tb is not None:
            frames.append(tb)
            tb = tb.tb_next
        if leading:
            start = next((i for i, t in enumerate(frames) if t.tb_frame.f_code.co_filename == filename), 0)
            frames = frames[start:]
        kept = [t for t in frames if t.tb_frame.f_code.co_filename != _THIS_FILE]
        new = None
        for t in reversed(kept):
            new = types.TracebackType(new, t.tb_frame, t.tb_lasti, t.tb_lineno)
        e.__traceback__ = new
        strip(e.__cause__, False)
        strip(e.__context__, False)
        for inner in getattr(e, "exceptions", ()) or ():
            strip(inner, False)

    strip(exc, True)
    sys.excepthook(type(exc), exc, exc.__traceback__)
