"""The drop-in promise, end to end: a NumPy program of a few hundred lines, run unchanged but for
``import dispatch as np``, prints exactly what it prints with plain NumPy.

``examples/numpy_program.py`` uses seeded random data (legacy ``seed``, ``RandomState``,
``default_rng``), broadcasting, fancy and boolean indexing and assignment, reductions, integer
arithmetic, sorting, ``linalg``, ``fft`` and prints arrays as they are. Each run is a fresh
interpreter; stdout is compared byte for byte, under the default routing and with every call
forced onto torch-cpu (``DISPATCH_BACKEND``).
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import require

ROOT = Path(__file__).resolve().parent.parent
PROGRAM = ROOT / "examples" / "numpy_program.py"


def _run(script: Path, tmp_path: Path, **env: str) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("DISPATCH_")}
    environ.update(PYTHONPATH=str(ROOT), DISPATCH_CACHE_DIR=str(tmp_path / "cache"), **env)
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=tmp_path, env=environ)
    assert done.returncode == 0, done.stderr
    return done


def _migrated(tmp_path: Path) -> Path:
    """The program with its one import line changed, and nothing else."""
    source = PROGRAM.read_text()
    assert source.count("\nimport numpy as np\n") == 1
    script = tmp_path / "program.py"
    script.write_text(source.replace("\nimport numpy as np\n", "\nimport dispatch as np\n"))
    return script


def test_the_program_is_a_few_hundred_lines_of_what_the_issue_lists():
    source = PROGRAM.read_text()
    assert len(source.splitlines()) >= 250
    calls = {ast.unparse(node.func) for node in ast.walk(ast.parse(source)) if isinstance(node, ast.Call)}
    for needed in ("np.random.seed", "np.random.RandomState", "np.random.default_rng", "np.linalg.solve",
                   "np.linalg.svd", "np.linalg.eigh", "np.linalg.lstsq", "np.fft.rfft", "np.fft.fft2",
                   "np.fft.irfft", "np.add.at", "np.ix_", "np.nonzero", "np.cumsum", "np.percentile"):
        assert needed in calls, needed


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> str:
    out = _run(PROGRAM, tmp_path_factory.mktemp("plain")).stdout
    assert out.startswith("\n== cleaning ==\nspikes: 15 missing: 25\n") and out.endswith("[ inf  nan -inf]\n")
    return out


def test_default_routing_prints_exactly_what_numpy_prints(plain, tmp_path):
    done = _run(_migrated(tmp_path), tmp_path, DISPATCH_TRACE="1")
    assert done.stdout == plain
    assert "dispatch trace:" in done.stderr  # the calls did go through dispatch


def test_forced_onto_torch_cpu_prints_exactly_what_numpy_prints(plain, tmp_path):
    require("torch-cpu")
    done = _run(_migrated(tmp_path), tmp_path, DISPATCH_BACKEND="torch-cpu", DISPATCH_TRACE="1")
    assert done.stdout == plain
    assert "forced torch-cpu" in done.stderr  # most calls ran on torch; the rest fell back to NumPy
