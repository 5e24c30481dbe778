"""The ``dispatch`` command line: one module per subcommand.

Each subcommand module defines ``HELP`` (one line), ``add_arguments(parser)`` and
``run(args) -> int``. Errors a user can fix are raised as ``CommandError`` and printed as one
line on stderr, never as a traceback. Exit codes: 0 success, 1 the command failed, 2 usage.
Files a command writes are named by an option (``--output``, ``--html``, ``--profile``,
``--out``), never by a positional argument, and never an existing source file (``writable``).
"""

from __future__ import annotations

import importlib
import os
import sys
import types
from typing import TYPE_CHECKING

import dispatch

if TYPE_CHECKING:
    import argparse

__all__ = ["CommandError", "main", "writable"]

# What a command never overwrites: the user's sources (``migrate --write`` rewrites them, asked to).
SOURCES = (".py", ".ipynb")

# subcommand -> module under dispatch.cli, in the order --help lists them
SUBCOMMANDS: dict[str, str] = {
    "info": "info",
    "calibrate": "calibrate",
    "run": "run",
    "demo": "demo",
    "analyze": "analyze",
    "migrate": "migrate",
    "forget": "forget",
}


class CommandError(Exception):
    """A failure the user can act on; ``code`` is the exit status."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code


def writable(path: str, option: str) -> str:
    """``path``, checked before any work as a file the command may write for ``option``:
    ``CommandError`` (usage) for an existing source file, a folder or a missing folder."""
    if path == "-":
        return path
    if path.endswith(SOURCES) and os.path.lexists(path):
        raise CommandError(f"{option} {path}: refusing to overwrite a source file; name another file", 2)
    if os.path.isdir(path):
        raise CommandError(f"{option} {path}: a folder, not a file", 2)
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise CommandError(f"{option} {path}: no folder {folder}", 2)
    return path


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The parser; given the command line, only its subcommand's module is imported (a script run
    by ``dispatch run`` does not wait for the other commands' imports), else every one."""
    import argparse  # here: ``dispatch run SCRIPT`` builds no parser (``_plain_run``)

    from dispatch.cli._help import HelpFormatter

    parser = argparse.ArgumentParser(
        prog="dispatch",
        formatter_class=HelpFormatter,
        description="Run NumPy, scikit-learn and PyTorch code on the fastest backend for each call.",
    )
    parser.add_argument("--version", action="version", version=f"dispatch {dispatch.__dispatch_version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    chosen = argv[0] if argv and argv[0] in SUBCOMMANDS else None
    for name, module_name in SUBCOMMANDS.items():
        if chosen is not None and name != chosen:
            continue
        module = importlib.import_module(f"dispatch.cli.{module_name}")
        command = sub.add_parser(name, help=module.HELP, description=module.__doc__,
                                 formatter_class=HelpFormatter)
        module.add_arguments(command)
        command.set_defaults(_run=module.run)
    return parser


def _plain_run(argv: list[str]) -> types.SimpleNamespace | None:
    """``run SCRIPT ARGS...``, no option before ``SCRIPT`` and no ``--`` (which the parser drops):
    the namespace the parser makes of it, made without ``argparse``, whose import and parser
    (with its messages' translations) are a share of a short script's start; ``None`` for any other."""
    if len(argv) < 2 or argv[0] != "run" or argv[1].startswith("-") or "--" in argv:
        return None
    command = importlib.import_module("dispatch.cli.run")
    return types.SimpleNamespace(command="run", report=False, profile=None, no_sklearn=False, calibrate=False,
                                 script=argv[1], args=argv[2:], _run=command.run)


def main(argv: list[str] | None = None) -> int:
    args = _plain_run(sys.argv[1:] if argv is None else argv)
    if args is None:
        parser = build_parser(sys.argv[1:] if argv is None else argv)
        args = parser.parse_args(argv)
    if getattr(args, "_run", None) is None:
        parser.print_help()
        return 2
    try:
        return int(args._run(args) or 0)
    except CommandError as exc:
        print(f"dispatch {args.command}: error: {exc}", file=sys.stderr)
        return exc.code
    except BrokenPipeError:  # the reader went away (`| head`): nothing left to say, nor to flush
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except OSError as exc:  # a file the command reads or writes: one line, not a traceback
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"dispatch {args.command}: error: {where}{exc.strerror or exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
