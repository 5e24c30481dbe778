"""The ``migrate`` codemod: route a file's NumPy imports through dispatch and switch on the
scikit-learn accelerator, changing nothing else (libcst keeps comments and formatting).

Imports, as rewritten::

    import numpy as np                  ->  import dispatch as np
    import numpy                        ->  import dispatch as numpy
    import numpy.linalg                 ->  import dispatch as numpy     (it binds the name numpy)
    import numpy.linalg as la           ->  import dispatch.linalg as la  (likewise fft, random)
    from numpy import a, b              ->  from dispatch import a, b    (and ``*``)
    from numpy.linalg import svd        ->  from dispatch.linalg import svd  (likewise fft, random)

Left as they are: aliased imports and from-imports of every other NumPy submodule
(``import numpy.typing as npt``, ``from numpy.testing import assert_allclose``,
``from numpy.lib.stride_tricks import ...``). ``numpy.typing`` describes types for checkers and
runs nothing; the ``numpy.testing`` helpers accept any array, and a test that checks
results against NumPy should keep NumPy's. An unaliased ``import numpy.testing`` is the exception
above: it binds ``numpy`` and would undo the routing, so it becomes ``import dispatch as numpy``
(dispatch exposes every public NumPy submodule).

A file that imports scikit-learn (anywhere) gains, after its leading block of imports (the
docstring, imports, and ``try``/``if`` blocks of imports at the top), preceded by a blank line::

    dispatch.sklearn.accelerate()

Two statements rather than one line joined by ``;``, which linters reject (E702). A file that
already calls ``dispatch.sklearn.accelerate`` is left alone, so a second run changes nothing.
In a notebook the lines go into the first code cell that imports scikit-learn.
"""

from __future__ import annotations

import ast
import json
from dataclasses import dataclass

import libcst as cst
from libcst.helpers import get_full_name_for_node

from converters.notebook import code_cells, dump_notebook, hide_magics, restore_magics

__all__ = ["MigrationError", "NotebookMigration", "migrate_notebook", "migrate_python", "migrate_source"]

ROUTED_SUBMODULES = ("linalg", "fft", "random")
_ACCELERATE = ("import dispatch.sklearn\n", "dispatch.sklearn.accelerate()\n")


class MigrationError(ValueError):
    """A file (or notebook cell) that cannot be parsed; it is left unchanged."""

    def __init__(self, message: str, line: int | None = None, column: int | None = None, cell: int | None = None):
        super().__init__(message)
        self.message, self.line, self.column, self.cell = message, line, column, cell

    def location(self, path: str) -> str:
        cell = "" if self.cell is None else f"[{self.cell}]"
        where = "".join(f":{v}" for v in (self.line, self.column) if v is not None)
        return f"{path}{cell}{where}"


def _routed(module: str) -> str | None:
    """The dispatch module that stands in for ``module`` in a from-import or aliased import."""
    if module == "numpy":
        return "dispatch"
    root, _, sub = module.partition(".")
    return f"dispatch.{sub}" if root == "numpy" and sub in ROUTED_SUBMODULES else None


def _dotted(name: str) -> cst.Name | cst.Attribute:
    node: cst.Name | cst.Attribute = cst.Name(name.split(".")[0])
    for part in name.split(".")[1:]:
        node = cst.Attribute(value=node, attr=cst.Name(part))
    return node


class _RouteNumpy(cst.CSTTransformer):
    """Rewrites the NumPy imports (see the module docstring)."""

    def leave_Import(self, original: cst.Import, updated: cst.Import) -> cst.Import:
        aliases: list[cst.ImportAlias] = []
        seen: set[tuple[str, str]] = set()
        dropped = False
        for alias in updated.names:
            name = get_full_name_for_node(alias.name) or ""
            asname = alias.asname.name.value if alias.asname is not None else None  # type: ignore[union-attr]
            if name == "numpy" or (name.startswith("numpy.") and asname is None):
                module, bound = "dispatch", asname or "numpy"
            elif asname is not None and _routed(name):
                module, bound = _routed(name), asname  # type: ignore[assignment]
            else:
                aliases.append(alias)
                continue
            if (module, bound) in seen:  # ``import numpy.linalg, numpy.fft`` binds numpy once
                dropped = True
                continue
            seen.add((module, bound))
            as_name = cst.Name(bound)
            new_as = alias.asname.with_changes(name=as_name) if alias.asname else cst.AsName(name=as_name)
            aliases.append(alias.with_changes(name=_dotted(module), asname=new_as))
        if dropped:
            aliases[-1] = aliases[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        return updated.with_changes(names=aliases)

    def leave_ImportFrom(self, original: cst.ImportFrom, updated: cst.ImportFrom) -> cst.ImportFrom:
        if updated.relative or updated.module is None:
            return updated
        routed = _routed(get_full_name_for_node(updated.module) or "")
        return updated if routed is None else updated.with_changes(module=_dotted(routed))


class _Survey(cst.CSTVisitor):
    """Whether a module imports scikit-learn, and whether it already switches on the accelerator."""

    def __init__(self) -> None:
        self.imports_sklearn = False
        self.accelerated = False

    def visit_Import(self, node: cst.Import) -> None:
        for alias in node.names:
            self.imports_sklearn |= (get_full_name_for_node(alias.name) or "").split(".")[0] == "sklearn"

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        if node.relative or node.module is None:
            return
        module = get_full_name_for_node(node.module) or ""
        self.imports_sklearn |= module.split(".")[0] == "sklearn"
        if module == "dispatch.sklearn" and not isinstance(node.names, cst.ImportStar):
            self.accelerated |= any(alias.evaluated_name == "accelerate" for alias in node.names)

    def visit_Call(self, node: cst.Call) -> None:
        self.accelerated |= get_full_name_for_node(node.func) == "dispatch.sklearn.accelerate"


def _survey(module: cst.Module) -> _Survey:
    survey = _Survey()
    module.visit(survey)
    return survey


def _is_import_line(statement: cst.BaseStatement) -> bool:
    return isinstance(statement, cst.SimpleStatementLine) and all(
        isinstance(small, (cst.Import, cst.ImportFrom)) for small in statement.body
    )


def _is_import_block(statement: cst.BaseStatement) -> bool:
    """An import line, or a ``try``/``if`` whose body is only import lines."""
    if _is_import_line(statement):
        return True
    if isinstance(statement, (cst.Try, cst.If)) and isinstance(statement.body, cst.IndentedBlock):
        return all(_is_import_line(s) for s in statement.body.body)
    return False


def _is_docstring(statement: cst.BaseStatement) -> bool:
    return (
        isinstance(statement, cst.SimpleStatementLine)
        and len(statement.body) == 1
        and isinstance(statement.body[0], cst.Expr)
        and isinstance(statement.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    )


def _insert_accelerate(module: cst.Module) -> cst.Module:
    body = list(module.body)
    end = 1 if body and _is_docstring(body[0]) else 0
    while end < len(body) and _is_import_block(body[end]):
        end += 1
    first, second = (cst.parse_statement(line) for line in _ACCELERATE)
    if end > 0:
        first = first.with_changes(leading_lines=[cst.EmptyLine()])
    return module.with_changes(body=[*body[:end], first, second, *body[end:]])


def _parse(source: str | bytes, cell: int | None = None) -> cst.Module:
    try:
        return cst.parse_module(source)
    except cst.ParserSyntaxError as exc:
        line, column, message = exc.editor_line, exc.editor_column, " ".join(exc.message.split())
    try:  # Python's own words and position, where it agrees the code is broken
        ast.parse(source)
    except SyntaxError as exc:
        line, column, message = exc.lineno, exc.offset, exc.msg
    except ValueError:  # null bytes: keep libcst's account
        pass
    raise MigrationError(f"cannot parse: {message}", line, column, cell)


def _migrate_module(module: cst.Module, accelerate: bool) -> cst.Module:
    module = module.visit(_RouteNumpy())
    return _insert_accelerate(module) if accelerate else module


def _migrate(source: str | bytes) -> cst.Module:
    module = _parse(source)
    survey = _survey(module)
    return _migrate_module(module, survey.imports_sklearn and not survey.accelerated)


def migrate_source(source: str) -> str:
    """Migrate Python source given as text.

    Parameters
    ----------
    source : str
        A module's text.

    Returns
    -------
    str
        The migrated text (equal to ``source`` when there is nothing to change).

    Raises
    ------
    MigrationError
        The source does not parse.
    """
    return _migrate(source).code


def migrate_python(data: bytes) -> bytes:
    """Migrate a ``.py`` file's bytes, keeping its encoding and line endings."""
    return _migrate(data).bytes


@dataclass(frozen=True)
class NotebookMigration:
    """A migrated notebook: its new JSON text and each changed cell as (index, old, new)."""

    text: str
    changed_cells: list[tuple[int, str, str]]


def migrate_notebook(text: str) -> NotebookMigration:
    """Migrate the code cells of a notebook given as JSON text; the JSON structure, the other
    cells and the IPython magics stay as they are."""
    try:
        notebook = json.loads(text)
        cells = code_cells(notebook)
    except ValueError as exc:
        raise MigrationError(f"not a readable notebook ({exc})") from None
    modules = {cell.index: _parse(hide_magics(cell.source), cell.index) for cell in cells}
    surveys = {index: _survey(module) for index, module in modules.items()}
    accelerate_in = None
    if not any(s.accelerated for s in surveys.values()):
        accelerate_in = next((i for i, s in surveys.items() if s.imports_sklearn), None)
    changed = []
    for cell in cells:
        new = restore_magics(_migrate_module(modules[cell.index], cell.index == accelerate_in).code)
        if new != cell.source:
            raw = notebook["cells"][cell.index]
            raw["source"] = new if isinstance(raw.get("source"), str) else new.splitlines(keepends=True)
            changed.append((cell.index, cell.source, new))
    return NotebookMigration(dump_notebook(notebook, text) if changed else text, changed)
