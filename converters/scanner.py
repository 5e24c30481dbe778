"""Find the NumPy, scikit-learn and PyTorch call sites in Python source, without running it.

>>> from converters.scanner import scan_source
>>> scan = scan_source("import numpy as np\\nA = np.ones((300, 300))\\nB = np.dot(A, A)\\n")
>>> [(s.line, s.op, s.size) for s in scan.sites]
[(2, 'ones', 90000), (3, 'dot', 90000)]

What is recognised (the walk itself is in ``converters._scan_walker``):

- Calls through any import form: ``import numpy as np``, ``import numpy``,
  ``from numpy import linalg as la``, ``from numpy.linalg import svd``, star imports (the
  catalog names the module holds), ``import sklearn.decomposition``,
  ``from torch import nn``... Code already migrated (``import dispatch as np``) reads as NumPy.
- Library calls the catalogs do not list (``np.float64(1)``, ``make_pipeline(...)``,
  ``torch.no_grad()``) are kept apart as *unclassified*: they are real library calls, but
  no complexity or backend is known for them.
- Methods on values the scanner follows, assigned in the same scope or the module:
  NumPy arrays (``x.sum()``, ``x.dot(y)``: methods that are catalog ops), ``Generator`` draws
  (``rng.normal(...)``), scikit-learn estimators (``est.fit(X)``, ``est.predict(X)``; one site per
  step for a pipeline built with ``make_pipeline`` or ``Pipeline``), torch modules
  (calling one is its op for a catalog layer, else a ``Forward``), optimisers (``.step()``,
  ``.zero_grad()``). Methods of values of unknown type are not guessed, with two exceptions in
  files that import torch: ``.backward()`` and ``.zero_grad()`` are autograd's own names, and
  ``.step()`` counts on a receiver named like an optimiser (``optimizer``, ``opt``, ``g_optim``).
- The ``@`` operator on a followed array is a ``matmul`` site; other operators are element-wise
  (LOW) and not reported.

Sizes (``size``: elements, ``None`` when not visible) come from literal shapes
(``np.zeros((1000, 1000))``, ``np.ones(10**6)``, ``np.arange(1_000_000)``,
``np.random.rand(500, 20)``, ``rng.normal(size=(n, 3))``, ``torch.randn(64, 10)``), the documented
sizes of scikit-learn's generators and bundled datasets (``make_classification(n_samples=...)``,
``load_digits()``), ``train_test_split``, and from there through assignments, element-wise
arithmetic, ``@``/``dot``, ``reshape``/``.T`` and shape-keeping or ``n_components`` transformers.
A call's size is its output's for creation and random calls, else its largest array argument's
(for an estimator method, the data ``X``).

Positions: ``line`` is 1-based, ``column`` 1-based in characters. In a notebook, ``line`` counts
inside the cell and ``cell`` is the cell's index in the notebook's ``cells`` list.
"""

from __future__ import annotations

import ast
import json
import os
import re
import tokenize
from collections.abc import Iterator
from dataclasses import dataclass, field

from converters._scan_walker import Found, Walker
from converters._static_values import size_of
from converters.notebook import code_cells, hide_magics
from converters.pytorch_operations import PYTORCH_CATALOG
from converters.sklearn_algorithms import SKLEARN_CATALOG
from dispatch.base.numpy_catalog import NUMPY_CATALOG
from dispatch.base.tiers import OpComplexity

__all__ = [
    "CallSite",
    "FileScan",
    "ScanError",
    "iter_source_files",
    "scan_file",
    "scan_notebook",
    "scan_path",
    "scan_source",
]

_CATALOGS = {"numpy": NUMPY_CATALOG, "scikit-learn": SKLEARN_CATALOG, "pytorch": PYTORCH_CATALOG}
_SKIPPED_DIRS = frozenset({"__pycache__", "site-packages", "node_modules"})
_LINE_BREAK = re.compile(r"\r\n|\r|\n")  # what the tokenizer counts as a new line


@dataclass(frozen=True)
class CallSite:
    """One call of a library function, method or operator.

    ``library`` is ``"numpy"``, ``"scikit-learn"`` or ``"pytorch"`` (the converters' names);
    ``name`` is what was called, resolved (``"numpy.linalg.svd"``,
    ``"sklearn.decomposition.PCA.fit"``); ``op`` its catalog name (``None`` for an
    unclassified call); ``method`` the method called on a followed object (``"fit"``,
    ``"sum"``, ``"__call__"``), ``None`` for a plain call; ``shape`` the array that sized it.
    """

    path: str
    line: int
    column: int
    cell: int | None
    source: str
    library: str
    name: str
    op: str | None
    complexity: OpComplexity | None
    size: int | None
    shape: tuple[int, ...] | None = None
    method: str | None = None

    @property
    def location(self) -> str:
        """``path:line:column``, or ``path[cell]:line:column`` in a notebook."""
        cell = "" if self.cell is None else f"[{self.cell}]"
        return f"{self.path}{cell}:{self.line}:{self.column}"


@dataclass(frozen=True)
class ScanError:
    """A file (or notebook cell) that could not be read or parsed."""

    path: str
    message: str
    line: int | None = None
    column: int | None = None
    cell: int | None = None

    def __str__(self) -> str:
        cell = "" if self.cell is None else f"[{self.cell}]"
        where = "".join(f":{v}" for v in (self.line, self.column) if v is not None)
        return f"{self.path}{cell}{where}: {self.message}"


@dataclass
class FileScan:
    """What one file holds: classified sites, unclassified library calls and errors."""

    path: str
    sites: list[CallSite] = field(default_factory=list)
    unclassified: list[CallSite] = field(default_factory=list)
    errors: list[ScanError] = field(default_factory=list)


def scan_source(source: str, path: str = "<string>") -> FileScan:
    """Scan Python source.

    Parameters
    ----------
    source : str
        The module's text.
    path : str
        The name the records carry.

    Returns
    -------
    FileScan
        Its sites in source order; a syntax error becomes ``errors[0]``, not an exception.
    """
    scan = FileScan(path)
    _scan_into(scan, Walker(), source, None)
    return scan


def scan_notebook(text: str, path: str = "<notebook>") -> FileScan:
    """Scan the code cells of a Jupyter notebook given as its JSON text.

    Names carry from cell to cell in notebook order, as when the cells run top to bottom.
    A cell that does not parse is one error record; the other cells are still scanned.
    """
    scan = FileScan(path)
    try:
        cells = code_cells(json.loads(text))
    except ValueError as exc:  # JSONDecodeError is a ValueError
        scan.errors.append(ScanError(path, f"not a readable notebook: {exc}"))
        return scan
    walker = Walker()
    for cell in cells:
        _scan_into(scan, walker, hide_magics(cell.source), cell.index)
    return scan


def scan_file(path: str) -> FileScan:
    """Scan one ``.py`` file (any other name is read as Python too) or ``.ipynb`` notebook."""
    try:
        if path.endswith(".ipynb"):
            with open(path, encoding="utf-8") as handle:
                return scan_notebook(handle.read(), path)
        with tokenize.open(path) as handle:  # honours a PEP 263 coding line
            source = handle.read()
    except (OSError, SyntaxError, UnicodeDecodeError) as exc:
        return FileScan(path, errors=[ScanError(path, f"cannot read: {exc}")])
    return scan_source(source, path)


def scan_path(path: str) -> list[FileScan]:
    """Scan a file, or every ``.py`` and ``.ipynb`` file under a folder (``iter_source_files``)."""
    return [scan_file(file) for file in iter_source_files(path)]


def iter_source_files(path: str) -> Iterator[str]:
    """``path`` itself if it is a file; else the ``.py`` and ``.ipynb`` files under it, sorted,
    skipping hidden folders, virtual environments (a folder holding ``pyvenv.cfg``),
    ``__pycache__``, ``site-packages`` and ``node_modules``."""
    if not os.path.isdir(path):
        yield path
        return
    for folder, dirs, files in os.walk(path):
        dirs[:] = sorted(
            d
            for d in dirs
            if not d.startswith(".")
            and d not in _SKIPPED_DIRS
            and not os.path.exists(os.path.join(folder, d, "pyvenv.cfg"))
        )
        for name in sorted(files):
            if name.endswith((".py", ".ipynb")) and not name.startswith("."):
                yield os.path.join(folder, name)


def _scan_into(scan: FileScan, walker: Walker, source: str, cell: int | None) -> None:
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        scan.errors.append(ScanError(scan.path, f"cannot parse: {exc.msg}", exc.lineno, exc.offset, cell))
        return
    except ValueError as exc:  # null bytes
        scan.errors.append(ScanError(scan.path, f"cannot parse: {exc}", cell=cell))
        return
    try:
        walker.walk(tree)
    except RecursionError:
        walker.take_found()
        scan.errors.append(ScanError(scan.path, "cannot scan: expressions nested too deeply", cell=cell))
        return
    lines = _LINE_BREAK.split(source) if not source.isascii() else None
    found = sorted(walker.take_found(), key=lambda f: (f.node.lineno, f.node.col_offset))  # type: ignore[attr-defined]
    for record in found:
        site = _site(scan.path, source, lines, cell, record)
        (scan.sites if site.op is not None else scan.unclassified).append(site)


def _site(path: str, source: str, lines: list[str] | None, cell: int | None, found: Found) -> CallSite:
    node = found.node
    line, column = node.lineno, node.col_offset  # type: ignore[attr-defined]
    if lines is not None and line <= len(lines):  # col_offset counts UTF-8 bytes
        column = len(lines[line - 1].encode()[:column].decode(errors="replace"))
    complexity = _CATALOGS[found.library][found.op].complexity if found.op is not None else None
    return CallSite(
        path=path,
        line=line,
        column=column + 1,
        cell=cell,
        source=ast.get_source_segment(source, node) or "",
        library=found.library,
        name=found.name,
        op=found.op,
        complexity=complexity,
        size=size_of(found.shape),
        shape=found.shape,
        method=found.method,
    )
