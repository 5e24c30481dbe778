"""Rewrite Python files and notebooks to run through dispatch: `import numpy as np` becomes
`import dispatch as np` (likewise `import numpy`, `from numpy import ...` and the linalg, fft
and random submodules), and a file that imports scikit-learn gains
`import dispatch.sklearn` and `dispatch.sklearn.accelerate()` after its imports. Nothing else
changes: comments and formatting are kept, and a second run changes nothing.

Shows a unified diff by default; --write rewrites the files. A file that does not parse is
refused with one line and left unchanged; the other files are still processed, and the exit
status is then 1.
"""

from __future__ import annotations

import argparse
import difflib
import io
import os
import sys
import tokenize

from converters.scanner import iter_source_files
from dispatch.cli import CommandError

HELP = "rewrite NumPy imports to dispatch and switch on the scikit-learn accelerator"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="+", metavar="PATH", help="a .py file, a .ipynb notebook or a folder")
    parser.add_argument("--write", action="store_true", help="rewrite the files instead of showing a diff")


def run(args: argparse.Namespace) -> int:
    for path in args.paths:  # a usage error first, whether or not libcst is installed
        if not os.path.exists(path):
            raise CommandError(f"no such file or directory: {path}", 2)
    try:
        from dispatch.cli._codemod import MigrationError  # lazy: libcst is the optional 'migrate' extra
    except ImportError as exc:  # libcst is the optional 'migrate' extra
        raise CommandError(f"migrate needs libcst (the [migrate] extra: pip install -e '.[migrate]' from "
                           f"dispatch's clone) ({exc})") from None

    changed = unchanged = refused = 0
    for path in (file for root in args.paths for file in iter_source_files(root)):
        try:
            diff, write = _migrate_file(path)
        except MigrationError as exc:
            print(f"dispatch migrate: error: {exc.location(path)}: {exc.message}; left unchanged", file=sys.stderr)
            refused += 1
            continue
        except OSError as exc:
            print(f"dispatch migrate: error: {path}: cannot read ({exc.strerror or exc})", file=sys.stderr)
            refused += 1
            continue
        if not diff:
            unchanged += 1
            continue
        changed += 1
        if args.write:
            write()
            print(f"rewrote {path}", file=sys.stderr)
        else:
            sys.stdout.writelines(diff)
    verb = "rewritten" if args.write else "to rewrite"
    print(f"{changed} {_files(changed)} {verb}, {unchanged} unchanged, {refused} refused", file=sys.stderr)
    return 1 if refused else 0


def _files(n: int) -> str:
    return "file" if n == 1 else "files"


def _migrate_file(path: str):
    """The diff lines for ``path`` and a function that writes the migrated file."""
    from dispatch.cli._codemod import migrate_notebook, migrate_python  # lazy: needs libcst (see run)

    if path.endswith(".ipynb"):
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
        result = migrate_notebook(text)
        diff = []
        for index, old, new in result.changed_cells:
            diff += _diff(old, new, f"{path}[{index}]")
        return diff, lambda: _write(path, result.text.encode("utf-8"))
    with open(path, "rb") as handle:
        data = handle.read()
    new = migrate_python(data)
    if new == data:
        return [], None
    return _diff(_decode(data), _decode(new), path), lambda: _write(path, new)


def _decode(data: bytes) -> str:
    encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    return data.decode(encoding).replace("\r\n", "\n")


def _diff(old: str, new: str, name: str) -> list[str]:
    lines = difflib.unified_diff(
        old.splitlines(keepends=True), new.splitlines(keepends=True), fromfile=f"a/{name}", tofile=f"b/{name}"
    )
    return [line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines]


def _write(path: str, data: bytes) -> None:
    try:
        with open(path, "wb") as handle:
            handle.write(data)
    except OSError as exc:
        raise CommandError(f"cannot write {path}: {exc.strerror or exc}") from None
