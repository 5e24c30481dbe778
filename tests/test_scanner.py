"""The source scanner: call sites, aliases, sizes, notebooks, errors, and meta-tests that its
tables match the libraries they describe."""

from __future__ import annotations

import doctest
import inspect
import json
import os
from pathlib import Path

import numpy as np
import pytest

import converters.scanner
from converters import NUMPY_CATALOG, PYTORCH_CATALOG, SKLEARN_CATALOG, OpComplexity
from converters._scan_walker import ARRAY_METHODS, SKLEARN_METHODS
from converters._static_values import _LOAD_DATASET, _MAKE_DATASET, _SIZE_POSITION
from converters.scanner import iter_source_files, scan_file, scan_notebook, scan_path, scan_source

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
EXAMPLES = ROOT / "examples"
LOW, MEDIUM, HIGH = OpComplexity.LOW, OpComplexity.MEDIUM, OpComplexity.HIGH


def sites(source: str) -> list[tuple[int, str | None, int | None]]:
    """(line, op, size) of every classified site."""
    scan = scan_source(source)
    assert scan.errors == []
    return [(s.line, s.op, s.size) for s in scan.sites]


def line_of(path: Path, text: str) -> int:
    """The 1-based line of the only line of ``path`` containing ``text``."""
    found = [i for i, line in enumerate(path.read_text().splitlines(), 1) if text in line]
    assert len(found) == 1, (text, found)
    return found[0]


# ---- the brief's cases ---------------------------------------------------------------------


def test_literal_shapes_and_propagation():
    source = (
        "import numpy as np\n"
        "np.zeros((1000, 1000))\n"
        "np.random.rand(500, 20)\n"
        "np.ones(10**6)\n"
        "np.arange(1_000_000)\n"
        "X = np.random.rand(2000, 50)\n"
        "np.linalg.svd(X)\n"
        "np.linalg.svd(Y)\n"
    )
    assert sites(source) == [
        (2, "zeros", 1_000_000),
        (3, "random.rand", 10_000),
        (4, "ones", 1_000_000),
        (5, "arange", 1_000_000),
        (6, "random.rand", 100_000),
        (7, "linalg.svd", 100_000),
        (8, "linalg.svd", None),
    ]


def test_dot_of_visible_300_by_300_is_90000_elements():
    scan = scan_source("import numpy as np\nA = np.ones((300, 300))\nB = np.dot(A, A)\n")
    dot = scan.sites[1]
    assert (dot.op, dot.complexity, dot.size, dot.shape) == ("dot", HIGH, 90_000, (300, 300))


@pytest.mark.parametrize(
    "imports, call",
    [
        ("import numpy as np", "np.linalg.svd(A)"),
        ("import numpy", "numpy.linalg.svd(A)"),
        ("import numpy.linalg", "numpy.linalg.svd(A)"),
        ("from numpy import linalg as la", "la.svd(A)"),
        ("from numpy.linalg import svd", "svd(A)"),
        ("from numpy.linalg import svd as decompose", "decompose(A)"),
        ("from numpy.linalg import *", "svd(A)"),
        ("import dispatch as np", "np.linalg.svd(A)"),
        ("from dispatch import linalg", "linalg.svd(A)"),
    ],
)
def test_every_import_form_resolves(imports, call):
    scan = scan_source(f"{imports}\nA = None\n{call}\n")
    assert [(s.line, s.name.split(".", 1)[1], s.op) for s in scan.sites] == [(3, "linalg.svd", "linalg.svd")]


def test_star_import_binds_catalog_names_even_over_builtins():
    assert sites((DATA / "star_imports.py").read_text()) == [
        (4, "zeros", 10_000),
        (5, "sum", 10_000),
        (6, "linalg.svd", 10_000),
        (7, "max", 10_000),
        (7, "ravel", 10_000),
    ]


def test_builtins_without_star_import_are_not_numpy():
    assert sites("import numpy as np\nx = np.zeros(4)\nsum(x)\nmax(x)\n") == [(2, "zeros", 4)]


def test_aliases_file():
    scan = scan_file(str(DATA / "aliases.py"))
    assert scan.errors == []
    got = [(s.line, s.column, s.library, s.op, s.method, s.size) for s in scan.sites]
    assert got == [
        (11, 5, "numpy", "ones", None, 90_000),
        (12, 5, "numpy", "dot", None, 90_000),
        (13, 5, "numpy", "linalg.eigvalsh", None, 90_000),
        (13, 17, "numpy", "matmul", None, 90_000),  # the @ operator
        (14, 12, "numpy", "fft.rfft", None, 1_000_000),
        (14, 21, "numpy", "arange", None, 1_000_000),
        (15, 7, "scikit-learn", "PCA", None, None),
        (16, 6, "scikit-learn", "KMeans", None, None),
        (16, 6, "scikit-learn", "KMeans", "fit", 90_000),
        (17, 10, "scikit-learn", "KMeans", "predict", 90_000),
        (19, 9, "pytorch", "Linear", None, None),
        (20, 7, "pytorch", "Linear", "__call__", 19_200),
        (20, 13, "pytorch", "Randn", None, 19_200),
        (21, 9, "pytorch", "MatMul", None, None),
        (21, 9, "pytorch", "Sum", "sum", None),
        (26, 5, "pytorch", "Backward", "backward", None),  # heuristic: .backward() in a torch file
        (27, 5, "pytorch", "OptimizerStep", "step", None),  # heuristic: receiver named optimizer
        (29, 9, "numpy", "zeros", None, 5),
        (30, 12, "numpy", "linalg.svd", None, 5),  # the local A, not the module's 300x300
    ]
    assert [(s.line, s.name) for s in scan.unclassified] == [(18, "sklearn.pipeline.make_pipeline")]
    assert scan.sites[1].source == "numpy.dot(A, A)"
    assert scan.sites[1].name == "numpy.dot"
    assert scan.sites[8].name == "sklearn.cluster.KMeans.fit"
    assert [s.complexity for s in scan.sites[:3]] == [LOW, HIGH, HIGH]


def test_scheduler_step_and_unknown_array_methods_are_not_guessed():
    source = "import torch\ndef f(scheduler, x, model):\n    scheduler.step()\n    x.sum()\n    model.zero_grad()\n"
    assert sites(source) == [(5, "ZeroGrad", None)]


def test_step_is_not_guessed_without_torch():
    assert sites("def f(optimizer, loss):\n    optimizer.step()\n    loss.backward()\n") == []


def test_optimizer_and_modules_followed_by_assignment():
    source = (
        "import torch\n"
        "from torch import nn\n"
        "class Net(nn.Module):\n"
        "    pass\n"
        "class Deeper(Net):\n"
        "    pass\n"
        "net = Deeper().to('cpu')\n"
        "opt = torch.optim.Adam(net.parameters())\n"
        "x = torch.zeros(8, 4)\n"
        "net(x).backward()\n"
        "opt.step()\n"
        "opt.zero_grad()\n"
    )
    scan = scan_source(source)
    got = [(s.line, s.op, s.method, s.size) for s in scan.sites]
    assert got == [
        (7, "ToDevice", "to", None),
        (8, "Adam", None, None),
        (9, "Zeros", None, 32),
        (10, "Forward", "__call__", 32),
        (10, "Backward", "backward", None),
        (11, "OptimizerStep", "step", None),
        (12, "ZeroGrad", "zero_grad", None),
    ]


def test_sklearn_generators_datasets_and_splits():
    source = (
        "from sklearn.datasets import make_blobs, make_classification, make_regression, load_digits\n"
        "from sklearn.model_selection import train_test_split\n"
        "from sklearn.cluster import KMeans\n"
        "X, y = make_classification(n_samples=2000, n_features=20)\n"
        "KMeans().fit(X)\n"
        "Xr, yr = make_regression(500)\n"
        "KMeans().fit(Xr)\n"
        "Xb, yb = make_blobs()\n"
        "KMeans().fit(Xb)\n"
        "digits = load_digits()\n"
        "KMeans().fit(digits.data)\n"
        "Xd, yd = load_digits(return_X_y=True)\n"
        "Xtr, Xte, ytr, yte = train_test_split(Xd, yd, test_size=0.2)\n"
        "KMeans().fit(Xtr).predict(Xte)\n"
    )
    fits = [(s.line, s.method, s.shape) for s in scan_source(source).sites if s.method]
    assert fits == [
        (5, "fit", (2000, 20)),
        (7, "fit", (500, 100)),  # make_regression's default n_features
        (9, "fit", (100, 2)),  # make_blobs' defaults
        (11, "fit", (1797, 64)),
        (14, "fit", (1437, 64)),  # 1797 - ceil(0.2 * 1797)
        (14, "predict", (360, 64)),
    ]


def test_pipeline_fit_runs_every_step_with_shapes_through_transforms():
    source = (
        "import numpy as np\n"
        "from sklearn.pipeline import Pipeline\n"
        "from sklearn.decomposition import PCA\n"
        "from sklearn.preprocessing import StandardScaler\n"
        "from sklearn.linear_model import Ridge\n"
        "X = np.random.rand(1000, 40)\n"
        "pipe = Pipeline([('scale', StandardScaler()), ('pca', PCA(n_components=10)), ('ridge', Ridge())])\n"
        "pipe.fit(X, X[:, 0])\n"
        "pipe.predict(X)\n"
    )
    got = [(s.line, s.op, s.method, s.shape) for s in scan_source(source).sites if s.line >= 8]
    assert got == [
        (8, "StandardScaler", "fit_transform", (1000, 40)),
        (8, "PCA", "fit_transform", (1000, 40)),
        (8, "Ridge", "fit", (1000, 10)),
        (9, "StandardScaler", "transform", (1000, 40)),
        (9, "PCA", "transform", (1000, 40)),
        (9, "Ridge", "predict", (1000, 10)),
    ]


def test_generator_and_legacy_random_sizes():
    source = (
        "import numpy as np\n"
        "rng = np.random.default_rng(0)\n"
        "rng.normal(0, 1, (100, 3))\n"
        "rng.integers(0, 10, size=50)\n"
        "rng.standard_normal((4, 4)).sum()\n"
        "np.random.normal(size=7)\n"
        "np.random.permutation(12)\n"
        "np.random.seed(1)\n"
    )
    assert sites(source) == [
        (2, "random.default_rng", None),
        (3, "random.normal", 300),
        (4, "random.randint", 50),
        (5, "random.standard_normal", 16),
        (5, "sum", 16),
        (6, "random.normal", 7),
        (7, "random.permutation", 12),
        (8, "random.seed", None),
    ]


def test_shapes_through_arithmetic_reductions_reshape_and_transpose():
    source = (
        "import numpy as np\n"
        "N = 200\n"
        "X = np.arange(N * 50).reshape(N, -1)\n"
        "C = (X - X.mean(axis=0)).T @ X\n"
        "np.linalg.eigh(C)\n"
        "np.linalg.norm(X, axis=1)\n"
        "np.linalg.solve(C, unknown)\n"
        "np.sum(np.linspace(0, 1))\n"
    )
    assert sites(source) == [
        (3, "arange", 10_000),
        (3, "reshape", 10_000),
        (4, "matmul", 10_000),  # (50, 200) @ (200, 50)
        (4, "mean", 10_000),
        (5, "linalg.eigh", 2_500),
        (6, "linalg.norm", 10_000),
        (7, "linalg.solve", None),  # an unknown argument may be the largest
        (8, "sum", 50),
        (8, "linspace", 50),
    ]


def test_module_variables_are_seen_by_functions_and_parameters_shadow_them():
    source = (
        "import numpy as np\n"
        "def f():\n"
        "    return np.linalg.inv(M)\n"
        "def g(M):\n"
        "    return np.linalg.inv(M)\n"
        "class K:\n"
        "    M = np.eye(3)\n"
        "    def h(self):\n"
        "        return np.linalg.inv(M)\n"
        "M = np.eye(40)\n"
    )
    assert sites(source) == [
        (3, "linalg.inv", 1_600),  # the module's final M
        (5, "linalg.inv", None),  # the parameter M
        (7, "eye", 9),
        (9, "linalg.inv", 1_600),  # a class body is not an enclosing scope
        (10, "eye", 1_600),
    ]


def test_huge_literal_arithmetic_is_no_size():
    assert sites("import numpy as np\nnp.ones(10**10**9)\nnp.ones(2**70)\n") == [(2, "ones", None), (3, "ones", None)]


def test_reassignment_forgets_a_size():
    assert sites("import numpy as np\nX = np.ones(9)\nX = load()\nnp.sum(X)\n") == [(2, "ones", 9), (4, "sum", None)]


def test_unclassified_library_calls_are_kept_apart():
    scan = scan_source("import numpy as np\nimport torch\nnp.float64(1)\nwith torch.no_grad():\n    pass\n")
    assert scan.sites == []
    assert [(s.line, s.library, s.name, s.op, s.complexity) for s in scan.unclassified] == [
        (3, "numpy", "numpy.float64", None, None),
        (4, "pytorch", "torch.no_grad", None, None),
    ]


def test_column_counts_characters_not_bytes():
    scan = scan_source("import numpy as np\nlabel = 'é' ; np.zeros(3)\n")
    assert (scan.sites[0].line, scan.sites[0].column) == (2, 15)


def test_multiline_call_keeps_its_source():
    scan = scan_source("import numpy as np\nnp.zeros(\n    (2, 3),\n)\n")
    assert scan.sites[0].source == "np.zeros(\n    (2, 3),\n)"
    assert scan.sites[0].size == 6


# ---- errors, files and folders -------------------------------------------------------------


def test_syntax_error_is_a_record_not_an_exception():
    scan = scan_file(str(DATA / "broken.py"))
    assert scan.sites == []
    assert [(e.line, e.column, e.message) for e in scan.errors] == [(4, 12, "cannot parse: invalid syntax")]
    assert str(scan.errors[0]) == f"{DATA / 'broken.py'}:4:12: cannot parse: invalid syntax"


def test_folder_scan_goes_on_past_broken_files(tmp_path):
    (tmp_path / "a_broken.py").write_text("def (:\n")
    (tmp_path / "b_good.py").write_text("import numpy as np\nnp.ones(3)\n")
    (tmp_path / "binary.py").write_bytes(b"\xff\xfe\x00 not text")
    scans = scan_path(str(tmp_path))
    assert [(os.path.basename(s.path), len(s.sites), len(s.errors)) for s in scans] == [
        ("a_broken.py", 0, 1),
        ("b_good.py", 1, 0),
        ("binary.py", 0, 1),
    ]


def test_iter_source_files_skips_hidden_folders_venvs_and_caches(tmp_path):
    for name in ["a.py", "b.ipynb", "c.txt", ".hidden/d.py", "venv/e.py", "__pycache__/f.py", "pkg/g.py", ".h.py"]:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("")
    (tmp_path / "venv" / "pyvenv.cfg").write_text("home = /usr\n")
    found = [os.path.relpath(p, tmp_path) for p in iter_source_files(str(tmp_path))]
    assert found == ["a.py", "b.ipynb", os.path.join("pkg", "g.py")]
    assert list(iter_source_files(str(tmp_path / "c.txt"))) == [str(tmp_path / "c.txt")]


def test_notebook_cells_lines_and_magics():
    scan = scan_file(str(DATA / "analysis.ipynb"))
    assert scan.errors == []
    got = [(s.cell, s.line, s.column, s.op, s.method, s.size) for s in scan.sites]
    assert got == [
        (2, 1, 5, "random.rand", None, 100_000),
        (2, 3, 12, "linalg.svd", None, 100_000),  # below a !shell line
        (4, 1, 7, "PCA", None, None),  # cell 3 (%%time) is skipped
        (4, 2, 1, "PCA", "fit", 100_000),  # names carry over from earlier cells
    ]
    assert scan.sites[0].location == f"{DATA / 'analysis.ipynb'}[2]:1:5"


def test_notebook_broken_cell_is_one_error_and_other_cells_are_scanned():
    notebook = {
        "cells": [
            {"cell_type": "code", "source": "import numpy as np\n"},
            {"cell_type": "code", "source": ["x = (\n"]},
            {"cell_type": "code", "source": ["np.ones(5)\n"]},
        ]
    }
    scan = scan_notebook(json.dumps(notebook), "nb.ipynb")
    assert [(e.cell, e.line) for e in scan.errors] == [(1, 1)]
    assert [(s.cell, s.line, s.op) for s in scan.sites] == [(2, 1, "ones")]
    assert scan_notebook("{not json", "x.ipynb").errors[0].message.startswith("not a readable notebook")


# ---- the examples ----------------------------------------------------------------------------


def test_numpy_example_sites():
    path = EXAMPLES / "numpy_workload.py"
    scan = scan_file(str(path))
    assert scan.errors == [] and scan.unclassified == []
    by_line = {}
    for s in scan.sites:
        by_line.setdefault(s.line, []).append((s.op, s.size))
    assert by_line[line_of(path, "np.linalg.svd(cov")] == [("linalg.svd", None)]
    assert by_line[line_of(path, "weights = solve(")] == [("linalg.solve", None), ("ones", 64)]
    assert by_line[line_of(path, "np.fft.rfft(data")] == [("abs", None), ("fft.rfft", None)]
    assert by_line[line_of(path, "np.random.seed(0)")] == [("random.seed", None)]
    assert by_line[line_of(path, "np.random.rand(1000, 8)")] == [("random.rand", 8_000)]
    assert by_line[line_of(path, "grid = np.zeros((300, 300))")] == [("zeros", 90_000)]
    assert by_line[line_of(path, "np.dot(grid, grid)")] == [("dot", 90_000), ("trace", 90_000)]
    assert len(scan.sites) == 34


def test_sklearn_example_sites():
    path = EXAMPLES / "sklearn_pipeline.py"
    scan = scan_file(str(path))
    fit = line_of(path, "model.fit(X_train, y_train)")
    assert [(s.op, s.method, s.shape) for s in scan.sites if s.line == fit] == [
        ("StandardScaler", "fit_transform", (1347, 64)),
        ("PCA", "fit_transform", (1347, 64)),
        ("LogisticRegression", "fit", (1347, 30)),
    ]
    ridge = line_of(path, "ridge.fit(X_scaled, y)")
    assert [(s.op, s.method, s.size) for s in scan.sites if s.line == ridge] == [("Ridge", "fit", 80_000)]
    assert sorted({s.name for s in scan.unclassified}) == [
        "sklearn.datasets.load_digits",
        "sklearn.datasets.make_regression",
        "sklearn.model_selection.train_test_split",
        "sklearn.pipeline.make_pipeline",
    ]


def test_torch_example_sites():
    path = EXAMPLES / "torch_training.py"
    scan = scan_file(str(path))
    ops = {(s.line, s.op) for s in scan.sites}
    assert (line_of(path, "loss.backward()"), "Backward") in ops
    assert (line_of(path, "optimizer.step()"), "OptimizerStep") in ops
    assert (line_of(path, "optimizer.zero_grad()"), "ZeroGrad") in ops
    assert (line_of(path, "DataLoader(make_data()"), "DataLoading") in ops
    loss_line = line_of(path, "loss = loss_fn(model(xb), yb)")
    assert sorted(s.op for s in scan.sites if s.line == loss_line) == ["Forward", "MSELoss"]
    assert (line_of(path, "nn.Conv1d(1, 8"), "Conv1d") in ops
    assert [s.complexity for s in scan.sites if s.op == "Backward"] == [HIGH]


# ---- meta-tests: the tables describe the real libraries ---------------------------------------------------


def test_catalog_names_are_disjoint():
    assert not set(NUMPY_CATALOG) & set(SKLEARN_CATALOG)
    assert not set(NUMPY_CATALOG) & set(PYTORCH_CATALOG)
    assert not set(SKLEARN_CATALOG) & set(PYTORCH_CATALOG)


def test_array_methods_are_ndarray_methods_and_catalog_ops():
    assert all(hasattr(np.ndarray, name) for name in ARRAY_METHODS)
    assert ARRAY_METHODS <= set(NUMPY_CATALOG)


def test_size_positions_match_numpy_signatures():
    generator = np.random.default_rng()
    aliases = {"ranf": "random_sample", "sample": "random_sample"}  # their signatures are (*args, **kwargs)
    for name, position in _SIZE_POSITION.items():
        name = aliases.get(name, name)
        function = getattr(generator, name, None) or getattr(np.random, name)
        parameters = list(inspect.signature(function).parameters)
        expected = parameters.index("size") if "size" in parameters else None
        assert position == expected, name


def test_sklearn_dataset_facts():
    sklearn_datasets = pytest.importorskip("sklearn.datasets")
    for name, (samples, features) in _MAKE_DATASET.items():
        params = inspect.signature(getattr(sklearn_datasets, name)).parameters
        assert (params["n_samples"].default, params["n_features"].default) == (samples, features), name
    for name, shape in _LOAD_DATASET.items():
        assert getattr(sklearn_datasets, name)().data.shape == shape, name
    estimator_methods = {m for m in SKLEARN_METHODS if m not in ("kneighbors", "radius_neighbors")}
    from sklearn.pipeline import Pipeline

    assert all(hasattr(Pipeline, m) for m in estimator_methods - {"partial_fit"})


def test_scanner_doctest():
    result = doctest.testmod(converters.scanner)
    assert (result.failed, result.attempted) == (0, 3)
