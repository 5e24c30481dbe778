"""MkDocs hooks: pages show what the code says, so they cannot drift from it.

- ``<!-- dispatch-help: NAME -->`` becomes the output of ``dispatch NAME --help``;
- ``<!-- include: PATH -->`` becomes the text of PATH (relative to the repository root), as
  the benchmarks page includes ``benchmarks/RESULTS.md``.
"""

from __future__ import annotations

import argparse
import os
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_MARK = re.compile(r"<!-- (dispatch-help|include): ([\w./-]+) -->")


def _help(name: str) -> str:
    os.environ["COLUMNS"] = "100"  # argparse wraps to the terminal's width: a fixed one here
    from dispatch.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return "```text\n" + sub.choices[name].format_help().rstrip() + "\n```"


def _replace(match: re.Match) -> str:
    kind, arg = match.groups()
    if kind == "dispatch-help":
        return _help(arg)
    return (ROOT / arg).read_text(encoding="utf-8")


def on_page_markdown(markdown: str, **kwargs: object) -> str:
    return _MARK.sub(_replace, markdown)
