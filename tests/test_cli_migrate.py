"""``dispatch migrate``: the codemod's exact output, idempotence, notebooks, refusals, and that
migrated examples print what the originals print."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("libcst")

import dispatch
from dispatch.cli import main
from dispatch.cli._codemod import MigrationError, migrate_notebook, migrate_python, migrate_source

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
EXAMPLES = ROOT / "examples"

IMPORT_FORMS = '''\
"""Doc."""
from __future__ import annotations

import os  # keep me
import numpy as np, os.path
import numpy
import numpy.linalg, numpy.fft
import numpy.linalg as la
import numpy.typing as npt
import numpy.testing
from numpy import (  # grouped
    zeros,
    ones,
)
from numpy.random import default_rng
from numpy.fft import rfft as real_fft
from numpy.testing import assert_allclose
from numpy.lib.stride_tricks import sliding_window_view
from numpy import *
from . import numpy


def f():
    import numpy as xp  # local import

    return xp.ones(3)
'''

IMPORT_FORMS_MIGRATED = '''\
"""Doc."""
from __future__ import annotations

import os  # keep me
import dispatch as np, os.path
import dispatch as numpy
import dispatch as numpy
import dispatch.linalg as la
import numpy.typing as npt
import dispatch as numpy
from dispatch import (  # grouped
    zeros,
    ones,
)
from dispatch.random import default_rng
from dispatch.fft import rfft as real_fft
from numpy.testing import assert_allclose
from numpy.lib.stride_tricks import sliding_window_view
from dispatch import *
from . import numpy


def f():
    import dispatch as xp  # local import

    return xp.ones(3)
'''

SKLEARN = '''\
#!/usr/bin/env python
"""Fit a model."""

import numpy as np
try:
    from sklearn.linear_model import Ridge
except ImportError:
    Ridge = None

X = np.ones((10, 2))


def fit():
    return Ridge().fit(X, X[:, 0])
'''

SKLEARN_MIGRATED = '''\
#!/usr/bin/env python
"""Fit a model."""

import dispatch as np
try:
    from sklearn.linear_model import Ridge
except ImportError:
    Ridge = None

import dispatch.sklearn
dispatch.sklearn.accelerate()

X = np.ones((10, 2))


def fit():
    return Ridge().fit(X, X[:, 0])
'''


def test_import_forms_exactly():
    assert migrate_source(IMPORT_FORMS) == IMPORT_FORMS_MIGRATED


def test_sklearn_accelerator_goes_after_the_leading_imports():
    assert migrate_source(SKLEARN) == SKLEARN_MIGRATED


def test_sklearn_imported_only_in_a_function_puts_the_accelerator_first():
    source = "def fit(X):\n    from sklearn.decomposition import PCA\n    return PCA().fit(X)\n"
    assert migrate_source(source) == "import dispatch.sklearn\ndispatch.sklearn.accelerate()\n" + source


def test_already_accelerated_files_are_left_alone():
    for source in (
        "import sklearn\nimport dispatch.sklearn\ndispatch.sklearn.accelerate()\n",
        "import sklearn\nfrom dispatch.sklearn import accelerate\naccelerate()\n",
    ):
        assert migrate_source(source) == source


def test_files_without_numpy_or_sklearn_are_unchanged():
    for source in ("import os\nprint(os.sep)\n", "import torch\nx = torch.zeros(3)\n", ""):
        assert migrate_source(source) == source


@pytest.mark.parametrize("source", [IMPORT_FORMS, SKLEARN])
def test_idempotent(source):
    once = migrate_source(source)
    assert migrate_source(once) == once


@pytest.mark.parametrize("name", ["numpy_workload.py", "sklearn_pipeline.py", "torch_training.py"])
def test_examples_idempotent(name):
    once = migrate_source((EXAMPLES / name).read_text())
    assert migrate_source(once) == once


def test_encoding_cookie_and_line_endings_are_kept():
    data = "# -*- coding: latin-1 -*-\r\nimport numpy as np\r\nname = 'café'\r\n".encode("latin-1")
    assert migrate_python(data) == "# -*- coding: latin-1 -*-\r\nimport dispatch as np\r\nname = 'café'\r\n".encode(
        "latin-1"
    )


def test_unparseable_source_raises_with_its_position():
    with pytest.raises(MigrationError) as info:
        migrate_source("import numpy as np\n\ndef broken(:\n    pass\n")
    assert (info.value.line, info.value.column) == (3, 12)
    assert info.value.location("x.py") == "x.py:3:12"
    assert info.value.message == "cannot parse: invalid syntax"


# ---- notebooks ------------------------------------------------------------------------------------------


def test_notebook_cells_are_rewritten_and_everything_else_kept():
    text = (DATA / "analysis.ipynb").read_text()
    result = migrate_notebook(text)
    assert result.changed_cells == [
        (
            1,
            "%matplotlib inline\nimport numpy as np\nfrom sklearn.decomposition import PCA",
            "%matplotlib inline\nimport dispatch as np\nfrom sklearn.decomposition import PCA\n\n"
            "import dispatch.sklearn\ndispatch.sklearn.accelerate()",
        )
    ]
    before, after = json.loads(text), json.loads(result.text)
    assert after["cells"][1]["source"] == [
        "%matplotlib inline\n",
        "import dispatch as np\n",
        "from sklearn.decomposition import PCA\n",
        "\n",
        "import dispatch.sklearn\n",
        "dispatch.sklearn.accelerate()",
    ]
    after["cells"][1]["source"] = before["cells"][1]["source"]
    assert after == before  # the rest of the structure is untouched
    assert result.text == json.dumps(json.loads(result.text), indent=1, ensure_ascii=False) + "\n"
    assert migrate_notebook(result.text).changed_cells == []  # idempotent


def test_notebook_with_an_unparseable_cell_is_refused():
    notebook = {
        "cells": [{"cell_type": "code", "source": "import numpy as np\n"}, {"cell_type": "code", "source": "x = (\n"}]
    }
    with pytest.raises(MigrationError) as info:
        migrate_notebook(json.dumps(notebook))
    assert info.value.cell == 1
    assert info.value.location("nb.ipynb").startswith("nb.ipynb[1]:")


# ---- the command ----------------------------------------------------------------------------------------


def test_diff_by_default_and_nothing_written(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    Path("app.py").write_text("import numpy as np\n\nprint(np.ones(3))\n")
    assert main(["migrate", "app.py"]) == 0
    out, err = capsys.readouterr()
    assert out.splitlines() == [
        "--- a/app.py",
        "+++ b/app.py",
        "@@ -1,3 +1,3 @@",
        "-import numpy as np",
        "+import dispatch as np",
        " ",
        " print(np.ones(3))",
    ]
    assert err == "1 file to rewrite, 0 unchanged, 0 refused\n"
    assert Path("app.py").read_text() == "import numpy as np\n\nprint(np.ones(3))\n"


def test_write_rewrites_and_a_second_run_changes_nothing(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    shutil.copytree(EXAMPLES, "examples")
    shutil.copy(DATA / "analysis.ipynb", "examples/analysis.ipynb")
    assert main(["migrate", "--write", "examples"]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err == [
        f"rewrote {os.path.join('examples', 'analysis.ipynb')}",
        f"rewrote {os.path.join('examples', 'least_squares.py')}",
        f"rewrote {os.path.join('examples', 'numpy_program.py')}",
        f"rewrote {os.path.join('examples', 'numpy_workload.py')}",
        f"rewrote {os.path.join('examples', 'sklearn_pipeline.py')}",
        "5 files rewritten, 1 unchanged, 0 refused",
    ]
    assert (
        "import dispatch as np\nfrom dispatch.linalg import solve\n" in Path("examples/numpy_workload.py").read_text()
    )
    assert main(["migrate", "examples"]) == 0
    out, err = capsys.readouterr()
    assert (out, err) == ("", "0 files to rewrite, 6 unchanged, 0 refused\n")


def test_unparseable_files_are_refused_and_the_others_processed(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    shutil.copy(DATA / "broken.py", "a_broken.py")
    Path("b_good.py").write_text("import numpy as np\n")
    assert main(["migrate", "--write", "."]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err.splitlines() == [
        f"dispatch migrate: error: .{os.sep}a_broken.py:4:12: cannot parse: invalid syntax; left unchanged",
        f"rewrote .{os.sep}b_good.py",
        "1 file rewritten, 0 unchanged, 1 refused",
    ]
    assert Path("a_broken.py").read_bytes() == (DATA / "broken.py").read_bytes()
    assert Path("b_good.py").read_text() == "import dispatch as np\n"


def test_without_libcst_migrate_says_what_to_install(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "libcst", None)  # as if libcst were not installed
    monkeypatch.delitem(sys.modules, "dispatch.cli._codemod")
    Path(tmp_path / "a.py").write_text("import numpy\n")
    assert main(["migrate", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("dispatch migrate: error: migrate needs libcst (the [migrate] extra: pip install -e "
                          "'.[migrate]' from dispatch's clone)")
    assert err.count("\n") == 1


@pytest.mark.parametrize("libcst", ["installed", "missing"])
def test_missing_path_is_a_usage_error(tmp_path, libcst):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    # the path is checked before libcst is imported: the same usage error without it
    start = ["-m", "dispatch"] if libcst == "installed" else [
        "-c", "import runpy, sys; sys.modules['libcst'] = None; runpy.run_module('dispatch', run_name='__main__')"]
    done = subprocess.run(
        [sys.executable, *start, "migrate", "nowhere"], capture_output=True, text=True, env=env, cwd=tmp_path
    )
    assert (done.returncode, done.stderr) == (2, "dispatch migrate: error: no such file or directory: nowhere\n")


# ---- migrated examples behave like the originals --------------------------------------------------------


def _run(script: Path) -> str:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, check=True).stdout


def test_numpy_example_runs_deterministically():
    out = _run(EXAMPLES / "numpy_workload.py")
    lines = out.splitlines()
    assert (len(lines), lines[0], lines[-1]) == (12, "shape: (64, 4096) nan left: 0", "checkerboard dot:    22500.0")
    assert _run(EXAMPLES / "numpy_workload.py") == out


@pytest.mark.parametrize(
    "name, library, first, count",
    [
        ("sklearn_pipeline.py", "sklearn", "digits: 1797 images, 64 pixels", 5),
        ("torch_training.py", "torch", "epoch 0: loss ", 6),
    ],
)
def test_other_examples_run(name, library, first, count):
    pytest.importorskip(library)
    lines = _run(EXAMPLES / name).splitlines()
    assert len(lines) == count and lines[0].startswith(first)


def test_migrated_numpy_example_prints_the_same(tmp_path):
    if not hasattr(dispatch, "ndarray"):
        pytest.skip("dispatch has no ndarray yet: `import dispatch as np` cannot run NumPy code before the array lands")
    migrated = tmp_path / "numpy_workload.py"
    migrated.write_text(migrate_source((EXAMPLES / "numpy_workload.py").read_text()))
    assert "import dispatch as np" in migrated.read_text()
    assert _run(migrated) == _run(EXAMPLES / "numpy_workload.py")


def test_migrated_sklearn_example_prints_the_same(tmp_path):
    pytest.importorskip("sklearn")
    if importlib.util.find_spec("dispatch.sklearn") is None:
        pytest.skip("dispatch.sklearn does not exist yet: the migrated example calls dispatch.sklearn.accelerate()")
    migrated = tmp_path / "sklearn_pipeline.py"
    migrated.write_text(migrate_source((EXAMPLES / "sklearn_pipeline.py").read_text()))
    assert _run(migrated) == _run(EXAMPLES / "sklearn_pipeline.py")
