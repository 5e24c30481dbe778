"""Shared by the scikit-learn tests: which estimators can run accelerated (asked of the installed
scikit-learn), data for each, the stock reference and the dtype-aware comparisons."""

from __future__ import annotations

import contextlib
import functools
import inspect
import os
import pickle
import subprocess
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

os.environ.setdefault("SCIPY_ARRAY_API", "1")  # before scipy is imported by scikit-learn below

import sklearn
from sklearn.base import clone, is_classifier, is_regressor
from sklearn.utils import all_estimators, get_tags

import dispatch.sklearn as ds
from dispatch.sklearn._patch import _is_composite

# Parameter settings under which scikit-learn's tags switch Array API support on, for estimators
# whose defaults have none (or whose defaults are random). The tags still decide: a setting the
# installed scikit-learn does not support is dropped at collection.
VARIANTS: dict[str, list[dict[str, Any]]] = {
    "PCA": [{"svd_solver": "full"}, {"svd_solver": "covariance_eigh"},
            {"svd_solver": "randomized", "power_iteration_normalizer": "QR", "random_state": 0}],
    "GaussianMixture": [{"init_params": "random", "random_state": 0},
                        {"init_params": "random_from_data", "random_state": 0}],
    "Nystroem": [{"random_state": 0, "n_components": 50}],
}

# Iterative solvers stop at a tolerance: torch and NumPy take slightly different steps, so
# their answers agree to the solver's tolerance, not to rounding.
RTOL_ITERATIVE = {"LogisticRegression": 1e-4, "PoissonRegressor": 1e-4, "GaussianMixture": 1e-4}

# Calls expected to fall back to NumPy under a forced Array API target, with the reason.
# Central, with why; a scikit-learn that no longer needs the fallback passes too.
EXPECTED_FALLBACKS = {
    # scikit-learn keeps the Array API namespace in the fitted loss (_base_loss.xp): such an
    # estimator would not pickle as plain scikit-learn, so fit runs stock.
    ("PoissonRegressor", "fit"): "_NotPortable",
    # ...and the NumPy loss that the stock fit left is not an Array API one: score runs stock too.
    ("PoissonRegressor", "score"): "failed: TypeError",
}

# Outputs defined up to a sign per column: LinearDiscriminantAnalysis's 'svd' solver does not fix
# the signs of its singular vectors (PCA does, with svd_flip), so LAPACK and torch may pick the
# other sign. Predictions do not depend on it.
SIGN_FREE = {"LinearDiscriminantAnalysis": {"transform", "fit_transform", "scalings_"}}

METHODS_TO_COMPARE = ("predict", "predict_proba", "predict_log_proba", "decision_function", "transform",
                      "score", "score_samples")


@functools.cache
def array_api_cases() -> list[tuple[str, dict[str, Any]]]:
    """(class name, params) for every leaf estimator the installed scikit-learn tags as Array
    API-capable, at its defaults or under one of ``VARIANTS``."""
    cases = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, cls in all_estimators():
            if _is_composite(cls):
                continue
            settings = VARIANTS.get(name, [{}])
            if {} not in settings:
                settings = [{}, *settings]
            for params in settings:
                if "random_state" in inspect.signature(cls).parameters:
                    params = {**params, "random_state": 0}  # random ones compare nothing
                try:
                    est = cls(**params)
                    supported = get_tags(est).array_api_support
                except Exception:
                    continue
                if supported:
                    cases.append((name, params))
    unique = {case_id(c): c for c in cases}
    return list(unique.values())


def estimator_class(name: str) -> type:
    return dict(all_estimators())[name]


def case_id(case: tuple[str, dict]) -> str:
    name, params = case
    return name + "".join(f"-{k}={v}" for k, v in params.items() if k != "random_state")


# ---- data --------------------------------------------------------------------------------------------


@functools.cache
def dataset(name: str) -> tuple[np.ndarray, np.ndarray]:
    from sklearn import datasets
    from sklearn.preprocessing import StandardScaler

    if name == "make_regression":
        X, y = datasets.make_regression(n_samples=300, n_features=12, noise=5.0, random_state=0)
        return X, (y - y.min()) / y.std() + 1.0  # positive, for Poisson
    if name == "make_classification":
        return datasets.make_classification(n_samples=300, n_features=10, n_informative=5, n_classes=3,
                                            random_state=0)
    X, y = getattr(datasets, f"load_{name}")(return_X_y=True)
    if name == "digits":
        X = X[:, X.std(axis=0) > 0]  # 3 pixels are always blank: their components are arbitrary
    if name in ("breast_cancer", "wine", "iris"):
        X = StandardScaler().fit_transform(X)  # unscaled, lbfgs stops at max_iter and compares nothing
    return X, y


def datasets_for(name: str) -> list[str]:
    est = estimator_class(name)()
    tags = get_tags(est)
    if tags.input_tags.pairwise:
        return ["iris-kernel"]
    if not tags.input_tags.two_d_array:
        return ["iris-labels", "wine-labels"]
    if is_classifier(est):
        return ["iris", "breast_cancer", "make_classification"]
    if is_regressor(est):
        return ["diabetes", "make_regression"]
    return ["wine", "digits"]


def data(name: str, dtype: Any = np.float64) -> tuple[np.ndarray, np.ndarray | None]:
    """(X, y) by name; ``X`` in ``dtype``. ``-kernel``: a Gram matrix; ``-labels``: X is y."""
    base, _, kind = name.partition("-")
    X, y = dataset(base)
    if kind == "kernel":
        return (X @ X.T).astype(dtype), None
    if kind == "labels":
        return y.copy(), None
    return X.astype(dtype), y


# ---- the reference and the comparisons ------------------------------------------------------------------


@contextlib.contextmanager
def stock() -> Iterator[None]:
    """Stock scikit-learn, unpatched, inside the block (re-patched after if it was patched)."""
    was = ds.is_accelerated()
    ds.unaccelerate()
    try:
        yield
    finally:
        if was:
            ds.accelerate()


def tolerance(dtype: Any, name: str) -> tuple[float, float]:
    """(rtol, atol relative to the largest magnitude) by dtype, looser for iterative solvers."""
    rtol = 2e-4 if np.dtype(dtype) == np.float32 else 1e-7
    return max(rtol, RTOL_ITERATIVE.get(name, 0.0)), rtol


def assert_same(got: Any, want: Any, rtol: float, atol_rel: float, what: str, sign_free: bool = False) -> None:
    """``got`` has ``want``'s type, dtype and shape, and its values within tolerance
    (``sign_free``: up to the sign of each column)."""
    if isinstance(want, Raised):
        assert got == want, f"{what}: {got!r}, stock scikit-learn gave {want!r}"
        return
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want), what
        for i, (g, w) in enumerate(zip(got, want, strict=True)):
            assert_same(g, w, rtol, atol_rel, f"{what}[{i}]")
        return
    if isinstance(want, np.ndarray) and want.ndim:
        assert type(got) is np.ndarray, f"{what}: {type(got).__name__}, not numpy.ndarray"
        assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}"
        assert got.dtype.kind == want.dtype.kind, f"{what}: dtype {got.dtype} != {want.dtype}"
        if want.dtype.kind in "biu":
            np.testing.assert_array_equal(got, want, err_msg=what)
            return
        if want.dtype.kind not in "fc":
            np.testing.assert_array_equal(got, want, err_msg=what)
            return
        assert got.dtype == want.dtype, f"{what}: dtype {got.dtype} != {want.dtype}"
        if sign_free and got.ndim == 2:
            got = got * np.where(np.sum(got * want, axis=0) < 0, -1, 1)
        scale = float(np.nanmax(np.abs(want))) if want.size else 1.0
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol_rel * max(scale, 1.0), err_msg=what)
        return
    assert np.ndim(got) == 0, f"{what}: {got!r} is not a scalar"
    assert not hasattr(got, "device") or isinstance(got, (np.ndarray, np.generic)), f"{what}: {type(got)}"
    np.testing.assert_allclose(float(got), float(want), rtol=rtol, atol=atol_rel, err_msg=what)


def fitted_attributes(est: Any) -> dict[str, Any]:
    return {k: v for k, v in vars(est).items() if k.endswith("_") and not k.startswith("_")}


def assert_plain(value: Any, path: str, depth: int = 0) -> None:
    """No torch / cupy object anywhere in a fitted estimator (so it pickles as plain scikit-learn)."""
    module = type(value).__module__ or ""
    assert not module.startswith(("torch", "cupy")), f"{path} is a {module}.{type(value).__name__}"
    if depth > 3:
        return
    if isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            assert_plain(v, f"{path}[{i}]", depth + 1)
    elif isinstance(value, dict):
        for k, v in value.items():
            assert_plain(v, f"{path}[{k!r}]", depth + 1)
    elif hasattr(value, "__dict__") and not isinstance(value, type) and not callable(value):
        for k, v in vars(value).items():
            assert_plain(v, f"{path}.{k}", depth + 1)


class Raised:
    """A method that raised: the accelerated call must raise the same exception type."""

    def __init__(self, exc: BaseException) -> None:
        self.type = type(exc)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Raised) and other.type is self.type

    def __repr__(self) -> str:
        return f"Raised({self.type.__name__})"


def _call(func: Any, *args: Any) -> Any:
    try:
        return func(*args)
    except (ValueError, np.linalg.LinAlgError, ArithmeticError) as exc:
        return Raised(exc)


def run_methods(est: Any, X: np.ndarray, y: np.ndarray | None) -> dict[str, Any]:
    """Fit, then every comparable method; ``fit_transform`` and ``inverse_transform`` too.
    A method that raises is recorded as ``Raised`` (digits' constant pixels make PCA's
    covariance singular for ``score``: stock raises, so must the accelerated call)."""
    out: dict[str, Any] = {}
    fit_args = (X,) if y is None else (X, y)
    fitted = est.fit(*fit_args)
    assert fitted is est
    for method in METHODS_TO_COMPARE:
        if not hasattr(est, method):
            continue
        if method == "score":
            try:
                out[method] = _call(est.score, *fit_args)
            except TypeError:
                continue
        else:
            out[method] = _call(getattr(est, method), X)
    if isinstance(out.get("transform"), np.ndarray) and hasattr(est, "inverse_transform"):
        try:
            out["inverse_transform"] = est.inverse_transform(out["transform"])
        except (NotImplementedError, ValueError, TypeError):
            pass
    if hasattr(est, "fit_transform"):
        out["fit_transform"] = _call(clone(est).fit_transform, *fit_args)
    return out


def compare_on(target: str, case: tuple[str, dict], data_name: str, dtype: Any = np.float64) -> None:
    """Fit and call every method of one estimator with ``target`` forced; everything equals
    stock scikit-learn, the fitted estimator is plain, and the trace shows it ran there."""
    import dispatch

    name, params = case
    cls = estimator_class(name)
    X, y = data(data_name, dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with stock():
            ref = cls(**params)
            want = run_methods(ref, X, y)
        est = cls(**params)
        with dispatch.trace() as t, dispatch.using(target):
            got = run_methods(est, X, y)
    rtol, atol = tolerance(dtype, name)
    sign_free = SIGN_FREE.get(name, set())
    assert set(got) == set(want)
    for method in want:
        assert_same(got[method], want[method], rtol, atol, f"{name}.{method}", method in sign_free)
    for attr, value in fitted_attributes(ref).items():
        if isinstance(value, np.ndarray) and value.dtype.kind in "biufc":
            assert_same(getattr(est, attr), value, rtol, atol, f"{name}.{attr}", attr in sign_free)
    assert_plain(est, name)
    # It really ran on the target: every routed call, bar the expected fallbacks.
    assert t.records, "no call was recorded"
    for r in t.records:
        op_class, _, method = r.op.partition(".")
        expected = EXPECTED_FALLBACKS.get((op_class, method))
        if r.target != target:
            assert expected is not None and expected in r.reason, f"{r.op} ran on {r.target}: {r.reason}"
        else:
            assert r.reason == f"{target}: forced"
    unexpected = {k: n for k, n in t.fallbacks.items() if tuple(k[0].split(".")) not in EXPECTED_FALLBACKS}
    assert not unexpected


def sklearn_version() -> str:
    return sklearn.__version__


# ---- a process without dispatch ------------------------------------------------------------------------

REPO = Path(__file__).resolve().parents[1]

_UNPICKLE = """
import importlib.abc, pickle, sys
class Refuse(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("dispatch", "converters", "torch", "cupy"):
            raise ImportError(name + " is not installed here")
        return None
sys.meta_path.insert(0, Refuse())
sys.path = [p for p in sys.path if p not in ("", REPO)]
import numpy as np
with open(PATH, "rb") as f:
    est, X, want = pickle.load(f)
got = est.predict(X) if hasattr(est, "predict") else est.transform(X)
np.testing.assert_allclose(got, want, rtol=1e-4 if want.dtype == np.float32 else 1e-7)
print("ok", type(est).__name__, sorted(m for m in sys.modules if m.split(".")[0] in ("dispatch", "torch")))
"""


def predict_without_dispatch(tmp: Path, est: Any, X: np.ndarray, want: np.ndarray) -> str:
    """Unpickle ``est`` in a Python where dispatch, torch and cupy cannot be imported, predict
    (or transform) ``X`` and compare with ``want``; returns what that process printed."""
    path = tmp / "est.pkl"
    path.write_bytes(pickle.dumps((est, X, want)))
    code = f"REPO, PATH = {str(REPO)!r}, {str(path)!r}\n" + _UNPICKLE
    out = subprocess.run([sys.executable, "-I", "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()
