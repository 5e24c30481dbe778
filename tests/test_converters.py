"""The three converters and their catalogs: seed facts, lookups, and meta-tests that every
entry names something real."""

from __future__ import annotations

import importlib
import subprocess
import sys

import numpy as np
import pytest

from converters import (
    NUMPY_CATALOG,
    PYTORCH_CATALOG,
    SKLEARN_CATALOG,
    NumPyConverter,
    NumPyOp,
    PyTorchConverter,
    PyTorchOperation,
    SklearnAlgorithm,
    SklearnConverter,
)
from converters.numpy_ops import REMOVED_IN_NUMPY
from dispatch import Backend, BackendSelector, OpComplexity

LOW, MEDIUM, HIGH = OpComplexity.LOW, OpComplexity.MEDIUM, OpComplexity.HIGH


# ---- seed facts -----------------------------------------------------------------------------


def test_seed_complexity_tags():
    assert NumPyOp.ADD.complexity() is LOW
    assert NumPyOp.SUM.complexity() is MEDIUM
    assert NumPyOp.DOT.complexity() is HIGH
    assert SklearnAlgorithm.STANDARD_SCALER.complexity() is LOW
    assert SklearnAlgorithm.LINEAR_REGRESSION.complexity() is MEDIUM
    assert SklearnAlgorithm.K_MEANS.complexity() is HIGH
    assert PyTorchOperation.TENSOR_CREATION.complexity() is LOW
    assert PyTorchOperation.LINEAR.complexity() is MEDIUM
    assert PyTorchOperation.FORWARD.complexity() is HIGH


def test_seed_recommendations():
    c = NumPyConverter()
    assert c.recommend_backend(NumPyOp.ADD, 100) is Backend.SCALAR
    assert c.recommend_backend(NumPyOp.ADD, 2_000_000) is Backend.SIMD
    assert c.recommend_backend(NumPyOp.DOT, 50_000) is Backend.GPU


def test_the_issue_one_liner_prints_gpu():
    code = ("from converters import NumPyConverter, NumPyOp; "
            "print(NumPyConverter().recommend_backend(NumPyOp.DOT, 50_000))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out == "GPU\n"


def test_issue_complexity_rules():
    high = ["matmul", "linalg.solve", "linalg.inv", "linalg.svd", "linalg.eig", "linalg.qr", "linalg.cholesky",
            "fft.fft", "sort", "argsort", "unique", "convolve", "einsum"]
    medium = ["sum", "mean", "std", "max", "argmin", "vdot", "cumsum", "cumprod"]
    low = ["add", "exp", "sin", "reshape", "transpose", "concatenate", "where", "zeros"]
    c = NumPyConverter()
    assert {n: c.complexity(n) for n in high} == dict.fromkeys(high, HIGH)
    assert {n: c.complexity(n) for n in medium} == dict.fromkeys(medium, MEDIUM)
    assert {n: c.complexity(n) for n in low} == dict.fromkeys(low, LOW)


# ---- lookups ---------------------------------------------------------------------------------


def test_numpy_lookup_accepts_member_name_and_object():
    c = NumPyConverter()
    assert c.lookup(NumPyOp.LINALG_SVD) is c.lookup("linalg.svd") is c.lookup(np.linalg.svd)
    assert c.lookup(np.add) is NumPyOp.ADD
    assert c.lookup(np.fft.rfft) is NumPyOp.FFT_RFFT
    assert c.lookup(np.random.normal) is NumPyOp.RANDOM_NORMAL
    assert c.lookup(np.random.default_rng(0).normal) is NumPyOp.RANDOM_NORMAL
    assert c.lookup(np.mean) is NumPyOp.MEAN
    assert c.lookup("LINALG_SVD") is NumPyOp.LINALG_SVD


def test_sklearn_lookup_accepts_class_instance_and_name():
    decomposition = pytest.importorskip("sklearn.decomposition")
    c = SklearnConverter()
    assert c.lookup(decomposition.PCA) is c.lookup(decomposition.PCA()) is c.lookup("PCA") is SklearnAlgorithm.PCA
    assert c.complexity(decomposition.PCA) is HIGH


def test_torch_lookup_accepts_objects():
    torch = pytest.importorskip("torch")
    c = PyTorchConverter()
    assert c.lookup(torch.nn.Linear) is PyTorchOperation.LINEAR
    assert c.lookup(torch.nn.Linear(2, 3)) is PyTorchOperation.LINEAR
    assert c.lookup(torch.matmul) is PyTorchOperation.MATMUL
    assert c.lookup(torch.Tensor.backward) is PyTorchOperation.BACKWARD
    assert c.lookup("TensorCreation") is PyTorchOperation.TENSOR_CREATION


@pytest.mark.parametrize(
    ("converter", "bad", "suggestion"),
    [(NumPyConverter(), "linalg.sdv", "linalg.svd"), (SklearnConverter(), "StandardScalar", "StandardScaler"),
     (PyTorchConverter(), "Conv2D", "Conv2d")],
)
def test_unknown_op_names_the_closest(converter, bad, suggestion):
    with pytest.raises(KeyError) as info:
        converter.lookup(bad)
    assert bad in str(info.value) and suggestion in str(info.value)


def test_unknown_object_and_wrong_catalog():
    with pytest.raises(KeyError, match="unknown numpy op"):
        NumPyConverter().lookup(len)
    with pytest.raises(KeyError, match="not a NumPyOp"):
        NumPyConverter().lookup(SklearnAlgorithm.PCA)


def test_converter_uses_its_selector():
    eager = BackendSelector().with_thresholds(BackendSelector().thresholds.with_tier(LOW, simd=10, gpu=100))
    assert NumPyConverter(eager).recommend_backend("add", 101) is Backend.GPU


def test_counterparts():
    c = NumPyConverter()
    assert c.counterpart("dot", "cupy") == "dot"
    assert c.counterpart("dot", "torch") == "matmul"
    assert c.counterpart("isnat", "torch") is None
    assert SklearnConverter().counterpart("PCA", "cuml") == "cuml.decomposition.PCA"
    assert PyTorchConverter().counterpart("MatMul", "numpy") == "matmul"


# ---- meta-tests: every entry names something real -----------------------------------------------


def _resolve(root, dotted):
    obj = root
    for part in dotted.split("."):
        obj = getattr(obj, part)
    return obj


@pytest.mark.parametrize("name", sorted(NUMPY_CATALOG))
def test_every_numpy_op_is_a_numpy_callable(name):
    if name in REMOVED_IN_NUMPY:
        try:
            _resolve(np, name)
        except AttributeError:
            pytest.skip(f"NumPy {np.__version__} has no {name} (removed in NumPy {REMOVED_IN_NUMPY[name]})")
    assert callable(_resolve(np, name)), name


def test_removed_names_are_catalog_entries():
    assert set(REMOVED_IN_NUMPY) <= set(NUMPY_CATALOG)


def _numpy_public_array_functions() -> set[str]:
    """Every ufunc and every public function of numpy, numpy.linalg, numpy.fft and
    numpy.random that a user calls on arrays, read from numpy itself."""
    found = set()
    for module, prefix in ((np, ""), (np.linalg, "linalg."), (np.fft, "fft."), (np.random, "random.")):
        for name in dir(module):
            obj = getattr(module, name)
            if name.startswith("_") or name == "test" or isinstance(obj, type) or not callable(obj):
                continue
            found.add(prefix + name)
    return found


def test_numpy_catalog_coverage():
    public = _numpy_public_array_functions()
    ufuncs = {n for n in dir(np) if isinstance(getattr(np, n), np.ufunc)}
    covered = public & set(NUMPY_CATALOG)
    coverage = len(covered) / len(public)
    print(f"NumPy catalog: {len(NUMPY_CATALOG)} entries, {coverage:.1%} of {len(public)} public functions")
    assert ufuncs <= set(NUMPY_CATALOG), sorted(ufuncs - set(NUMPY_CATALOG))
    assert coverage >= 0.95, sorted(public - set(NUMPY_CATALOG))


@pytest.mark.parametrize("name", sorted(SKLEARN_CATALOG))
def test_every_sklearn_algorithm_is_a_sklearn_class(name):
    pytest.importorskip("sklearn")
    cls = SklearnConverter().estimator_class(name)
    assert isinstance(cls, type) and cls.__name__ == name


def test_sklearn_catalog_breadth():
    modules = {e.counterparts["sklearn"].split(".")[1] for e in SKLEARN_CATALOG.values()}
    print(f"scikit-learn catalog: {len(SKLEARN_CATALOG)} estimators across {len(modules)} modules")
    assert len(SKLEARN_CATALOG) >= 40
    wanted = {"preprocessing", "linear_model", "decomposition", "cluster", "neighbors", "ensemble", "svm",
              "discriminant_analysis", "mixture", "manifold"}
    assert wanted <= modules, wanted - modules


def test_array_api_support_is_read_from_sklearn():
    pytest.importorskip("sklearn")
    from sklearn.utils import get_tags

    c = SklearnConverter()
    for name in ("PCA", "KMeans", "Ridge", "RandomForestClassifier"):
        cls = c.estimator_class(name)
        assert c.array_api_support(name) is bool(get_tags(cls()).array_api_support)


@pytest.mark.parametrize("name", sorted(PYTORCH_CATALOG))
def test_every_pytorch_operation_is_a_torch_object_or_a_documented_concept(name):
    entry = PYTORCH_CATALOG[name]
    path = entry.counterparts.get("torch")
    if path is None:
        assert entry.why, f"{name} is a concept and must say what it means"
        return
    torch = pytest.importorskip("torch")
    obj = _resolve(torch, path)
    assert callable(obj), path


def test_pytorch_catalog_breadth():
    required = {"TensorCreation", "ElementWise", "Reduction", "Linear", "Conv1d", "Conv2d", "Conv3d",
                "MultiheadAttention", "MatMul", "BMM", "Forward", "Backward", "OptimizerStep", "Loss", "DataLoading"}
    assert required <= set(PYTORCH_CATALOG), required - set(PYTORCH_CATALOG)


@pytest.mark.parametrize("catalog", [NumPyOp, SklearnAlgorithm, PyTorchOperation])
def test_catalog_members_are_unique_upper_snake_case(catalog):
    names = [m.name for m in catalog]
    assert len(names) == len(set(names)) == len({m.value for m in catalog})
    assert all(n == n.upper() and n.replace("_", "").isalnum() for n in names)
    print(f"{catalog.__name__}: {len(names)} members")


@pytest.mark.parametrize("catalog", [NUMPY_CATALOG, SKLEARN_CATALOG, PYTORCH_CATALOG])
def test_numpy_counterparts_resolve(catalog):
    for entry in catalog.values():
        target = entry.counterparts.get("numpy")
        if target:
            assert callable(_resolve(np, target)), (entry.name, target)


def test_torch_counterparts_of_numpy_ops_resolve():
    torch = pytest.importorskip("torch")
    missing = [(e.name, e.counterparts["torch"]) for e in NUMPY_CATALOG.values()
               if "torch" in e.counterparts and not _resolves(torch, e.counterparts["torch"])]
    assert not missing


def _resolves(root, dotted):
    try:
        _resolve(root, dotted)
    except AttributeError:
        return False
    return True


def test_converters_import_no_array_library():
    code = ("import sys, converters; heavy = {'torch', 'cupy', 'sklearn', 'dask'} & set(sys.modules); "
            "print(sorted(heavy))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out == "[]\n"


def test_importlib_resolves_every_cuml_name_shape():
    # cuML is CUDA-only and not installed here: check the names are well formed module paths.
    for entry in SKLEARN_CATALOG.values():
        cuml = entry.counterparts.get("cuml")
        if cuml:
            module, _, cls = cuml.rpartition(".")
            assert module.startswith("cuml.") and cls[:1].isupper(), cuml
    assert importlib.util.find_spec("converters") is not None
