"""Jupyter notebooks as the migration tools see them: code cells, and IPython magics hidden
from the Python parsers.

A cell is addressed by its position in the notebook's ``cells`` list (0-based, markdown
cells counted), so ``notebook["cells"][index]`` is the cell a report names.

IPython syntax is not Python: line magics (``%matplotlib inline``), shell escapes
(``!pip install x``) and help (``np.sum?``) would stop ``ast`` and ``libcst``. Such lines are
turned into comments that keep their line number and are turned back after a rewrite.
Cells that start with a cell magic (``%%time``, ``%%bash``) are left out entirely: their
body may be any language.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass

__all__ = ["CodeCell", "code_cells", "dump_notebook", "hide_magics", "join_source", "restore_magics"]

# A line magic, shell escape or help request, after optional indentation.
_MAGIC_LINE = re.compile(r"^([ \t]*)([%!]|\?\?|\?).*$|^[^#\n]*\S\?\??[ \t]*$")
_MARKER = "#dispatch-hidden-magic: "


@dataclass(frozen=True)
class CodeCell:
    """One code cell: its position in ``cells`` and its source as one string."""

    index: int
    source: str


def join_source(source: str | list[str]) -> str:
    """A cell's ``source`` (a string, or a list of lines as nbformat writes it) as one string."""
    return source if isinstance(source, str) else "".join(source)


def code_cells(notebook: dict) -> list[CodeCell]:
    """The code cells worth parsing, in order; cell-magic cells are left out.

    Raises ``ValueError`` when ``notebook`` does not have a notebook's structure.
    """
    cells = notebook.get("cells") if isinstance(notebook, dict) else None
    if not isinstance(cells, list):
        raise ValueError("not a Jupyter notebook (no 'cells' list)")
    out = []
    for index, cell in enumerate(cells):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        source = join_source(cell.get("source", ""))
        if source.lstrip().startswith("%%"):
            continue
        out.append(CodeCell(index, source))
    return out


def hide_magics(source: str) -> str:
    """``source`` with every IPython-only line turned into a comment, line numbers kept.

    A cell that parses as Python is returned as it is: ``%`` may start a continuation line.
    """
    try:
        ast.parse(source)
    except (SyntaxError, ValueError):
        pass
    else:
        return source
    lines = source.split("\n")
    for i, line in enumerate(lines):
        if _MAGIC_LINE.match(line) and not line.lstrip().startswith("#"):
            indent = line[: len(line) - len(line.lstrip())]
            lines[i] = f"{indent}{_MARKER}{line[len(indent) :]}"
    return "\n".join(lines)


def restore_magics(source: str) -> str:
    """Undo ``hide_magics``."""
    return re.sub(rf"^([ \t]*){re.escape(_MARKER)}", r"\1", source, flags=re.MULTILINE)


def dump_notebook(notebook: dict, like: str) -> str:
    """Serialise ``notebook`` the way the file ``like`` was written (indent, final newline),
    so that a rewrite changes only the cells it touched."""
    match = re.search(r"^\{\s*\n([ \t]+)\"", like)
    indent = len(match.group(1)) if match else 1  # nbformat writes indent=1
    text = json.dumps(notebook, indent=indent, ensure_ascii=False)
    return text + "\n" if like.endswith("\n") else text
