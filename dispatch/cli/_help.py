"""The command line's help formatter (``dispatch.cli.build_parser``)."""

from __future__ import annotations

import argparse
import os
import sys

__all__ = ["HelpFormatter"]


class HelpFormatter(argparse.HelpFormatter):
    """argparse's, the terminal's width read as ``shutil.get_terminal_size()`` reads it, without
    importing ``shutil``: argparse makes a formatter for each argument added, and ``shutil``
    loads the compression libraries (about 6 ms of every ``dispatch run``)."""

    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24,
                 width: int | None = None) -> None:
        super().__init__(prog, indent_increment, max_help_position, _columns() - 2 if width is None else width)


def _columns() -> int:
    try:
        columns = int(os.environ.get("COLUMNS", "0"))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns or 80
