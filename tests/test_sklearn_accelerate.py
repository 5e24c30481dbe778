"""dispatch.sklearn: every estimator scikit-learn can run in Array API mode gives stock
scikit-learn's predictions, transforms and fitted attributes when accelerated; the routing,
the fallbacks, pickling, the patch itself and the output types.

On a CPU machine the Array API path is exercised with ``torch-cpu`` forced; the GPU versions
of these comparisons are in ``test_sklearn_gpu.py``.
"""

from __future__ import annotations

import inspect
import io
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("sklearn")

import _sklearn_cases as cases
from helpers import router_restored
from sklearn.base import clone

import dispatch
import dispatch.sklearn as ds
from dispatch import targets
from dispatch.routing import calibration
from dispatch.routing.history import History
from dispatch.sklearn import _patch, _routing

REPO = Path(__file__).resolve().parents[1]
HAVE_TORCH = targets.probe("torch-cpu") is not None
needs_torch = pytest.mark.skipif(not HAVE_TORCH, reason="torch is not installed: no Array API target on the CPU")


@pytest.fixture(autouse=True, scope="module")
def accelerated():
    ds.accelerate()
    yield
    ds.unaccelerate()


@pytest.fixture(autouse=True)
def fresh_memory():
    ds.forget()
    yield
    ds.forget()


# ---- every Array API estimator equals stock scikit-learn --------------------------------------------------

CASES = [(case, data) for case in cases.array_api_cases() for data in cases.datasets_for(case[0])]


def test_discovery_finds_the_array_api_estimators():
    names = {name for name, _ in cases.array_api_cases()}
    # The installed scikit-learn decides the list; these have had support since 1.6.
    assert {"PCA", "Ridge", "StandardScaler", "LinearDiscriminantAnalysis"} <= names


@needs_torch
@pytest.mark.parametrize(("case", "data_name"), CASES,
                         ids=[f"{cases.case_id(c)}-{d}" for c, d in CASES])
def test_equals_stock_on_torch_cpu(case, data_name):
    cases.compare_on("torch-cpu", case, data_name)


FLOAT32 = [(c, d) for c, d in CASES
           if c[0] in ("PCA", "StandardScaler", "MinMaxScaler", "Ridge", "LinearDiscriminantAnalysis", "GaussianNB")
           and c[1] == {} and d in ("digits", "wine", "iris", "diabetes")]


@needs_torch
@pytest.mark.parametrize(("case", "data_name"), FLOAT32, ids=[f"{cases.case_id(c)}-{d}" for c, d in FLOAT32])
def test_float32_equals_stock_on_torch_cpu(case, data_name):
    cases.compare_on("torch-cpu", case, data_name, np.float32)


@needs_torch
def test_fitted_scalars_are_numpy_scalars_as_stock_stores_them():
    from sklearn.decomposition import PCA
    from sklearn.linear_model import Ridge
    from sklearn.preprocessing import StandardScaler

    X = np.random.default_rng(0).standard_normal((500, 12))
    y = X @ np.arange(12.0)
    for make in (lambda: StandardScaler().fit(X), lambda: PCA(4).fit(X), lambda: Ridge().fit(X, y)):
        stock = make()
        with ds.accelerated(), dispatch.using("torch-cpu"):
            mine = make()
        for name, value in vars(stock).items():
            if isinstance(value, (np.ndarray, np.generic)):
                theirs = vars(mine)[name]
                assert type(theirs) is type(value), f"{type(stock).__name__}.{name}: {type(theirs)} vs {type(value)}"
                assert np.shape(theirs) == np.shape(value) and np.asarray(theirs).dtype == np.asarray(value).dtype


# ---- the default route ------------------------------------------------------------------------------------


def test_default_route_small_data_is_stock_with_the_reason():
    from sklearn.decomposition import PCA

    X, _ = cases.data("iris")
    with cases.stock():
        want = PCA(2).fit(X).transform(X)
    with dispatch.trace() as t:
        got = PCA(2).fit(X).transform(X)
    np.testing.assert_array_equal(got, want)  # stock scikit-learn itself
    assert [r.target for r in t.records] == ["numpy", "numpy"]
    assert all(r.reason == "stock scikit-learn: MoE: HIGH on 600 elements -> SCALAR" for r in t.records)
    assert not t.fallbacks


def test_default_route_large_data_without_gpu_says_so():
    from sklearn.decomposition import PCA

    if _routing.first_gpu() is not None:
        pytest.skip("this machine has a GPU")
    X = np.random.default_rng(0).standard_normal((2000, 10))
    with dispatch.trace() as t:
        PCA(2).fit(X)
    (r,) = t.records
    assert r.target == "numpy"
    assert "GPU, but no GPU here" in r.reason
    assert r.op == "PCA.fit" and r.shapes == [[2000, 10]] and r.dtypes == ["float64"]


def test_gpu_tier_goes_to_the_gpu_target_and_small_batches_stay_on_numpy(monkeypatch):
    """The serving case: the router keeps small batches on NumPy even with a GPU present."""
    from sklearn.linear_model import Ridge

    monkeypatch.setattr(_routing, "first_gpu", lambda: "torch-cpu")  # stands in for a GPU target
    est = Ridge()
    big = np.zeros((10_000, 100))
    small = np.zeros((32, 100))
    want = _routing.Choice("torch-cpu", "torch-cpu: MoE: MEDIUM on 1,000,000 elements -> GPU")
    assert _routing.choose(est, "predict", big) == want
    choice = _routing.choose(est, "predict", small)
    assert choice.target is None and "SCALAR" in choice.reason
    from sklearn.decomposition import PCA

    assert _routing.choose(PCA(), "transform", small).target is None  # HIGH, 3,200 elements: SIMD tier
    from sklearn.preprocessing import StandardScaler

    assert _routing.choose(StandardScaler(), "transform", big).target is None  # LOW never goes to the GPU


def test_resident_data_stays_where_it_is(monkeypatch):
    from sklearn.linear_model import Ridge

    monkeypatch.setattr(_routing, "resident_target", lambda X: "torch-cpu")
    choice = _routing.choose(Ridge(), "predict", np.zeros((4, 2)))
    assert choice.target == "torch-cpu" and choice.reason == "data is on torch-cpu"


def test_forced_numpy_is_stock():
    from sklearn.linear_model import Ridge

    with dispatch.using("numpy"):
        choice = _routing.choose(Ridge(), "fit", np.zeros((10**6, 10)))
    assert choice == _routing.Choice(None, "stock scikit-learn: forced numpy")


def test_estimators_outside_the_catalog_are_stock():
    from sklearn.cross_decomposition import CCA

    choice = _routing.choose(CCA(), "fit", np.zeros((10**5, 10)))
    assert choice.target is None and "not in the catalog" in choice.reason


# ---- fallbacks --------------------------------------------------------------------------------------------


@needs_torch
def test_sparse_input_falls_back_with_the_reason():
    sparse = pytest.importorskip("scipy.sparse")
    from sklearn.preprocessing import MaxAbsScaler, StandardScaler

    X = sparse.random(50, 8, density=0.3, format="csr", random_state=0)
    with cases.stock():
        want = StandardScaler(with_mean=False).fit(X).transform(X)
    with dispatch.trace() as t, dispatch.using("torch-cpu"):
        got = StandardScaler(with_mean=False).fit(X).transform(X)
        MaxAbsScaler().fit(X)
    assert sparse.issparse(got)
    np.testing.assert_allclose(got.toarray(), want.toarray())
    assert all(r.target == "numpy" and "sparse" in r.reason for r in t.records)
    assert ("StandardScaler.fit", "X is a sparse matrix") in t.fallbacks


@needs_torch
@pytest.mark.filterwarnings("ignore:the matrix subclass:PendingDeprecationWarning")  # NumPy's own, for asmatrix
def test_a_matrix_and_a_nullable_target_go_to_stock_which_decides_as_it_does():
    """An ``np.matrix`` (stock raises TypeError) and a pandas nullable target (stock converts it to
    floats: float ``classes_``) are stock's to handle; torch-cpu took both before."""
    pd = pytest.importorskip("pandas")
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler

    X = np.arange(8.0).reshape(-1, 1)
    for y in (pd.Series([0, 0, 0, 0, 1, 1, 1, 1], dtype="Int64"), pd.Series([False] * 4 + [True] * 4, dtype="boolean")):
        with cases.stock():
            want = LogisticRegression().fit(X, y)
        with dispatch.trace() as t, dispatch.using("torch-cpu"):
            got = LogisticRegression().fit(X, y)
        assert got.classes_.dtype == want.classes_.dtype and got.classes_.tolist() == want.classes_.tolist()
        assert got.predict(X).dtype == want.predict(X).dtype
        assert any("extension dtype" in why for (_, why) in t.fallbacks), t.fallbacks
    matrix = np.asmatrix(np.arange(12.0).reshape(4, 3))
    with cases.stock(), pytest.raises(TypeError, match=r"np\.matrix") as stock:
        StandardScaler().fit_transform(matrix)
    with dispatch.using("torch-cpu"), pytest.raises(TypeError) as ours:
        StandardScaler().fit_transform(matrix)
    assert str(ours.value) == str(stock.value)


@needs_torch
def test_unsupported_hyperparameter_by_tags():
    from sklearn.decomposition import PCA

    X, _ = cases.data("digits")
    with cases.stock():
        want = PCA(5, svd_solver="arpack", random_state=0).fit(X).transform(X)
    with dispatch.trace() as t, dispatch.using("torch-cpu"):
        got = PCA(5, svd_solver="arpack", random_state=0).fit(X).transform(X)
    np.testing.assert_allclose(got, want)
    assert {r.target for r in t.records} == {"numpy"}
    assert "has no Array API support for PCA(" in t.records[0].reason
    assert "svd_solver='arpack'" in t.records[0].reason


@needs_torch
def test_unsupported_hyperparameter_learned_by_trying():
    """Ridge declares Array API support, but only its 'svd' solver runs there: the first call
    fails in Array API mode, runs stock, and is remembered; the next goes straight to NumPy."""
    from sklearn.linear_model import Ridge

    X, y = cases.data("diabetes")
    with cases.stock():
        want = Ridge(solver="lsqr").fit(X, y).predict(X)
    with dispatch.trace() as t, dispatch.using("torch-cpu"):
        est = Ridge(solver="lsqr").fit(X, y)
        est2 = Ridge(solver="lsqr").fit(X, y)
        got = est2.predict(X)
        Ridge(solver="svd").fit(X, y)  # other parameters: not remembered as unsupported
    np.testing.assert_allclose(got, want)
    np.testing.assert_allclose(est.coef_, est2.coef_)
    first, second, predict, other = t.records
    assert first.target == "numpy"
    assert first.reason.startswith("stock scikit-learn: fallback: torch-cpu failed: ValueError")
    assert second.target == "numpy" and second.reason.startswith("stock scikit-learn: remembered: torch-cpu failed")
    assert predict.target == "torch-cpu"  # predict is another method: it runs there
    assert other.target == "torch-cpu"
    assert len(ds.unsupported()) == 1


@needs_torch
def test_a_failure_on_one_dtype_is_remembered_for_that_dtype_only():
    """StandardScaler's fit on float16 fails on torch (a product of float64 and Half): stock ran
    it. float64 data still fits on torch, so ``fit`` then ``transform`` and ``fit_transform``
    run on one engine and agree to the bit, as stock's do (scikit-learn's own test_fit_transform)."""
    from sklearn.preprocessing import StandardScaler

    rng = np.random.RandomState(0)
    X = rng.random_sample((5, 4))
    half = X.astype(np.float16)
    _routing.remember_unsupported(StandardScaler(), "fit", "torch-cpu failed: RuntimeError: Half", half)
    with dispatch.using("torch-cpu"):
        assert _routing.choose(StandardScaler(), "fit", half).reason == \
            "stock scikit-learn: remembered: torch-cpu failed: RuntimeError: Half"
        assert _routing.choose(StandardScaler(), "fit", X).target == "torch-cpu"
        StandardScaler().fit(half)  # whatever this torch does with it: stock decides where it fails
        with dispatch.trace() as t:
            apart = StandardScaler().fit(X).transform(X)
            together = StandardScaler().fit_transform(X)
    assert {r.target for r in t.records} == {"torch-cpu"}
    np.testing.assert_array_equal(apart, together)
    assert apart.dtype == X.dtype and apart.shape == X.shape


@needs_torch
def test_estimator_without_array_api_support():
    from sklearn.ensemble import RandomForestClassifier

    X, y = cases.data("iris")
    with cases.stock():
        want = RandomForestClassifier(n_estimators=5, random_state=0).fit(X, y).predict_proba(X)
    with dispatch.trace() as t, dispatch.using("torch-cpu"):
        got = RandomForestClassifier(n_estimators=5, random_state=0).fit(X, y).predict_proba(X)
    np.testing.assert_array_equal(got, want)
    routed = [r for r in t.records if r.op.startswith("DecisionTreeClassifier")]
    assert routed and all("has no Array API support" in r.reason for r in routed)


@needs_torch
def test_string_labels_fall_back():
    from sklearn.discriminant_analysis import LinearDiscriminantAnalysis

    X, y = cases.data("iris")
    labels = np.array(["setosa", "versicolor", "virginica"])[y]
    with dispatch.trace() as t, dispatch.using("torch-cpu"):
        got = LinearDiscriminantAnalysis().fit(X, labels).predict(X)
    with cases.stock():
        want = LinearDiscriminantAnalysis().fit(X, labels).predict(X)
    np.testing.assert_array_equal(got, want)
    assert t.records[0].target == "numpy" and "dtype <U10" in t.records[0].reason


@needs_torch
def test_dataframe_input_is_stock_and_keeps_feature_names():
    pd = pytest.importorskip("pandas")
    from sklearn.preprocessing import StandardScaler

    X, _ = cases.data("wine")
    frame = pd.DataFrame(X, columns=[f"f{i}" for i in range(X.shape[1])])
    with dispatch.trace() as t, dispatch.using("torch-cpu"):
        est = StandardScaler().fit(frame)
    assert list(est.feature_names_in_) == list(frame.columns)
    assert "X is a DataFrame" in t.records[0].reason


@needs_torch
def test_set_output_pandas_is_stock():
    pytest.importorskip("pandas")
    from sklearn.preprocessing import StandardScaler

    X, _ = cases.data("wine")
    with dispatch.trace() as t, dispatch.using("torch-cpu"):
        out = StandardScaler().set_output(transform="pandas").fit_transform(X)
    assert type(out).__name__ == "DataFrame"
    assert "set_output" in t.records[0].reason


def test_errors_are_stock_errors():
    from sklearn.decomposition import PCA

    with pytest.raises(ValueError, match="n_components=10 must be between 0 and min"):
        with dispatch.using("torch-cpu") if HAVE_TORCH else dispatch.using("numpy"):
            PCA(10).fit(np.zeros((5, 3)))
    assert not ds.unsupported()  # the user's error is not an Array API gap


# ---- pickling ---------------------------------------------------------------------------------------------

@needs_torch
@pytest.mark.parametrize("name", ["PCA", "LinearDiscriminantAnalysis", "RidgeClassifierCV", "StandardScaler"])
def test_pickled_accelerated_estimator_works_without_dispatch(tmp_path, name):
    cls = cases.estimator_class(name)
    X, y = cases.data("iris")
    with dispatch.using("torch-cpu"), dispatch.trace() as t:
        est = cls().fit(X, y)
        want = est.predict(X) if hasattr(est, "predict") else est.transform(X)
    assert t.records[0].target == "torch-cpu"
    assert cases.predict_without_dispatch(tmp_path, est, X, want) == f"ok {name} []"


# ---- the patch itself -------------------------------------------------------------------------------------


def _class_dicts() -> dict:
    return {(cls, name): cls.__dict__.get(name, None)
            for cls in _patch.estimator_classes() for name in _patch.METHODS}


def test_unaccelerate_restores_the_exact_originals():
    ds.unaccelerate()
    before = _class_dicts()
    assert ds.accelerate() is True
    assert ds.accelerate() is False  # idempotent
    patched = _class_dicts()
    changed = [k for k in before if patched[k] is not before[k]]
    assert len(changed) > 500
    for cls, name in changed:  # a wrapper wraps the original, never another wrapper
        wrapped = getattr(patched[(cls, name)], "__wrapped__", None)
        assert not getattr(wrapped, "_dispatch_routed", False)
    assert ds.unaccelerate() is True
    after = _class_dicts()
    assert all(after[k] is before[k] for k in before)
    assert ds.unaccelerate() is False
    ds.accelerate()


def test_accelerated_block_nests_and_restores():
    from sklearn.decomposition import PCA

    ds.unaccelerate()
    original = PCA.__dict__["fit"]
    with ds.accelerated():
        with ds.accelerated():
            assert PCA.__dict__["fit"] is not original
        assert ds.is_accelerated()
    assert PCA.__dict__["fit"] is original and "transform" not in PCA.__dict__
    ds.accelerate()
    with ds.accelerated():
        pass
    assert ds.is_accelerated()  # accelerate() outlives the block


def test_signatures_and_conditional_methods_are_kept():
    from sklearn.decomposition import PCA
    from sklearn.linear_model import LogisticRegression, Ridge, SGDClassifier
    from sklearn.pipeline import make_pipeline

    with cases.stock():
        sig_fit = inspect.signature(PCA.fit)
        sig_proba = inspect.signature(make_pipeline(LogisticRegression()).predict_proba)
    assert inspect.signature(PCA.fit) == sig_fit
    assert inspect.signature(make_pipeline(LogisticRegression()).predict_proba) == sig_proba
    assert not hasattr(make_pipeline(Ridge()), "predict_proba")
    assert hasattr(make_pipeline(LogisticRegression()), "predict_proba")
    assert not hasattr(SGDClassifier(loss="hinge"), "predict_proba")
    assert hasattr(SGDClassifier(loss="log_loss"), "predict_proba")


def test_clone_and_get_params_are_untouched():
    from sklearn.decomposition import PCA

    est = PCA(3, whiten=True)
    assert clone(est).get_params() == est.get_params()


def test_metadata_routing_still_sees_the_signatures():
    import sklearn
    from sklearn.linear_model import Ridge
    from sklearn.model_selection import cross_validate

    X, y = cases.data("diabetes")
    weights = np.linspace(0.5, 1.5, len(y))
    with sklearn.config_context(enable_metadata_routing=True):
        est = Ridge().set_fit_request(sample_weight=True).set_score_request(sample_weight=False)
        got = cross_validate(est, X, y, params={"sample_weight": weights}, cv=3)["test_score"]
        with cases.stock(), sklearn.config_context(enable_metadata_routing=True):
            est = Ridge().set_fit_request(sample_weight=True).set_score_request(sample_weight=False)
            want = cross_validate(est, X, y, params={"sample_weight": weights}, cv=3)["test_score"]
    np.testing.assert_allclose(got, want)


_IMPORT_ORDER = """
import os, sys, json, warnings
warnings.simplefilter("ignore")
from sklearn.decomposition import PCA          # imported before dispatch knows about it
from sklearn.datasets import load_iris
early = PCA(2)                                  # and an instance made before the patch
import dispatch, dispatch.sklearn
assert dispatch.sklearn.accelerate() is True
X, _ = load_iris(return_X_y=True)
with dispatch.using("torch-cpu"), dispatch.trace() as t:
    Z = early.fit_transform(X)
    PCA(2).fit(X)
ref = dispatch.sklearn.unaccelerate()
want = PCA(2).fit_transform(X)
print(json.dumps({{"targets": [r.target for r in t.records], "equal": bool(abs(Z - want).max() < 1e-9),
                  "type": type(Z).__name__}}))
"""


@needs_torch
def test_patch_works_whatever_the_import_order():
    env = {"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-c", _IMPORT_ORDER.format()], capture_output=True, text=True,
                         timeout=300, env=env, cwd=str(REPO))
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result == {"targets": ["torch-cpu", "torch-cpu"], "equal": True, "type": "ndarray"}


def test_import_dispatch_does_not_import_sklearn():
    code = textwrap.dedent("""
        import sys, dispatch, dispatch.sklearn
        dispatch.sklearn.choose  # the package imports without scikit-learn
        print(sorted(m for m in sys.modules if m.split(".")[0] in ("sklearn", "scipy")))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_dispatch_sklearn_is_reachable_from_dispatch():
    assert dispatch.sklearn.accelerate is ds.accelerate


# ---- output types -----------------------------------------------------------------------------------------


@needs_torch
def test_dispatch_array_in_dispatch_array_out():
    from sklearn.decomposition import PCA
    from sklearn.neighbors import NearestNeighbors

    X, _ = cases.data("digits")
    Xd = dispatch.asarray(X)
    with cases.stock():
        want = PCA(4).fit(X).transform(X)
        dist, ind = NearestNeighbors(n_neighbors=3).fit(X).kneighbors(X[:5])
    with dispatch.using("torch-cpu"), dispatch.trace() as t:
        got = PCA(4).fit(Xd).transform(Xd)
    assert type(got) is dispatch.ndarray and got.device == "cpu"
    np.testing.assert_allclose(np.asarray(got), want, atol=1e-9)
    assert [r.target for r in t.records] == ["torch-cpu", "torch-cpu"]
    got_default = PCA(4).fit(Xd).transform(Xd)  # stock route: still a dispatch.ndarray out
    assert type(got_default) is dispatch.ndarray
    nn = NearestNeighbors(n_neighbors=3).fit(Xd)
    d, i = nn.kneighbors(Xd[:5])
    assert type(d) is dispatch.ndarray and type(i) is dispatch.ndarray
    np.testing.assert_allclose(np.asarray(d), dist)
    np.testing.assert_array_equal(np.asarray(i), ind)
    assert type(nn.kneighbors(X[:5])[0]) is np.ndarray  # NumPy in, NumPy out


@needs_torch
def test_torch_tensor_in_torch_tensor_out():
    import torch
    from sklearn.linear_model import Ridge

    X, y = cases.data("diabetes")
    with cases.stock():
        want = Ridge().fit(X, y).predict(X)
    with dispatch.using("torch-cpu"):
        got = Ridge().fit(torch.from_numpy(X), torch.from_numpy(y)).predict(torch.from_numpy(X))
    assert isinstance(got, torch.Tensor)
    np.testing.assert_allclose(got.numpy(), want)
    got_stock = Ridge().fit(X, y).predict(torch.from_numpy(X))  # default route: stock, tensor back
    assert isinstance(got_stock, torch.Tensor)


@needs_torch
def test_fit_returns_the_users_estimator_with_numpy_attributes():
    from sklearn.preprocessing import StandardScaler

    X, _ = cases.data("wine")
    est = StandardScaler()
    with dispatch.using("torch-cpu"):
        assert est.fit(X) is est
        est.transform(X)
    stock = {k: type(v) for k, v in cases.fitted_attributes(StandardScaler().fit(X)).items()}
    assert {k: type(v) for k, v in cases.fitted_attributes(est).items()} == stock  # NumPy arrays and scalars
    cases.assert_plain(est, "StandardScaler")


@needs_torch
def test_partial_fit_accumulates_like_stock():
    from sklearn.naive_bayes import GaussianNB

    X, y = cases.data("iris")
    order = np.random.default_rng(0).permutation(len(y))
    X, y = X[order], y[order]
    with cases.stock():
        ref = GaussianNB()
        for part in np.array_split(np.arange(len(y)), 3):
            ref.partial_fit(X[part], y[part], classes=[0, 1, 2])
    est = GaussianNB()
    with dispatch.using("torch-cpu"), dispatch.trace() as t:
        for part in np.array_split(np.arange(len(y)), 3):
            est.partial_fit(X[part], y[part], classes=[0, 1, 2])
    assert {r.target for r in t.records} == {"torch-cpu"}
    for attr in ("theta_", "var_", "class_count_", "class_prior_"):
        np.testing.assert_allclose(getattr(est, attr), getattr(ref, attr), rtol=1e-10)
    np.testing.assert_array_equal(est.predict(X), ref.predict(X))


def test_trace_summary_lists_estimator_calls():
    from sklearn.linear_model import Ridge

    X, y = cases.data("diabetes")
    with dispatch.trace() as t:
        Ridge().fit(X, y).predict(X)
    rows = t.rows()
    assert [r["op"] for r in rows] in (["Ridge.fit", "Ridge.predict"], ["Ridge.predict", "Ridge.fit"])
    assert all(r["target"] == "numpy" for r in rows)
    out = io.StringIO()
    t.summary(file=out)
    assert "Ridge.fit" in out.getvalue()


# ---- large calls are measured on both sides, then run where they were faster ----------------------------


def _large_regression() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(7)
    X = rng.standard_normal((20_000, 60))  # 1.2M elements: over LEARN_MIN
    return X, X @ rng.standard_normal(60) + 0.1 * rng.standard_normal(20_000)


@needs_torch
def test_large_calls_are_measured_both_ways_then_routed_by_the_measurements(monkeypatch):
    from sklearn.linear_model import Ridge

    monkeypatch.setattr(_routing, "first_gpu", lambda: None)  # this machine's other side: torch-cpu
    X, y = _large_regression()
    assert X.size >= _routing.LEARN_MIN
    with dispatch.using("numpy"):  # stock scikit-learn, not measured
        reference = Ridge(alpha=2.0).fit(X, y)
    key = (Ridge, "fit", X.size.bit_length())
    ran = []
    for _ in range(4):
        with dispatch.trace() as t:
            est = Ridge(alpha=2.0).fit(X, y)
        (record,) = [r for r in t.records if r.op == "Ridge.fit"]
        ran.append((record.target, record.reason))
        np.testing.assert_allclose(est.coef_, reference.coef_, rtol=1e-9, atol=1e-12)
        assert type(est.coef_) is np.ndarray and est.coef_.dtype == reference.coef_.dtype
    # first the table's choice (MEDIUM on the CPU tier: stock), then the other side, then the faster
    assert ran[0][0] == "numpy" and ran[0][1].startswith("stock scikit-learn: MoE: MEDIUM")
    assert ran[0][1].endswith("measured first, then torch-cpu")
    assert ran[1] == ("torch-cpu", "torch-cpu: measuring the alternative")
    # a loss of the alternative is measured once more (its first call pays one-time costs)
    assert ran[2][1].split(": ", 1)[1].startswith(("measured torch-cpu ", "measuring torch-cpu again"))
    seen = _routing.measured()[key]
    assert set(seen) == {None, "torch-cpu"} and all(s > 0 for s in seen.values())
    faster = min(seen, key=seen.get)
    assert ran[3][0] == (faster or "numpy")
    assert ran[3][1].startswith(f"{faster or 'stock scikit-learn'}: measured torch-cpu ")
    # the measurements decide: change them and the route follows
    _routing.observe(key, "torch-cpu", 1e-9)
    assert _routing.choose(Ridge(), "fit", X, (y,)).target == "torch-cpu"
    _routing.observe(key, "torch-cpu", 1e9)
    assert _routing.choose(Ridge(), "fit", X, (y,)).target is None


@needs_torch
def test_a_first_loss_of_the_alternative_is_measured_once_more(monkeypatch):
    from sklearn.linear_model import Ridge

    monkeypatch.setattr(_routing, "first_gpu", lambda: None)
    X, y = _large_regression()
    key = (Ridge, "fit", X.size.bit_length())
    _routing.observe(key, None, 1.0)
    _routing.observe(key, "torch-cpu", 5.0)  # its first call: compiled kernels, a new pool...
    again = _routing.choose(Ridge(), "fit", X, (y,))
    assert again.target == "torch-cpu" and again.reason.startswith("torch-cpu: measuring torch-cpu again")
    assert again.learn == key
    _routing.observe(key, "torch-cpu", 0.5)  # the second try replaces the first
    settled = _routing.choose(Ridge(), "fit", X, (y,))
    assert settled.target == "torch-cpu" and settled.reason.startswith("torch-cpu: measured torch-cpu ")
    assert settled.learn is None
    _routing.forget()
    _routing.observe(key, None, 1.0)
    _routing.observe(key, "torch-cpu", 5.0)
    _routing.observe(key, "torch-cpu", 4.0)  # lost twice: stock from now on
    assert _routing.choose(Ridge(), "fit", X, (y,)).target is None


def test_a_large_call_the_other_side_cannot_run_is_not_measured_again(monkeypatch):
    from sklearn.cluster import KMeans

    monkeypatch.setattr(_routing, "first_gpu", lambda: "torch-cpu")  # stands in for a GPU
    X = np.random.default_rng(3).standard_normal((30_000, 40))
    est = KMeans(n_clusters=3, n_init=1, random_state=0)
    if _routing.array_api_support(est):
        pytest.skip("this scikit-learn runs KMeans in Array API mode")
    for _ in range(2):
        choice = _routing.choose(est, "fit", X)
        assert choice.target is None and choice.learn is None
        assert "no Array API support" in choice.reason
    est.fit(X)  # runs stock, not measured
    np.testing.assert_array_equal(est.labels_, KMeans(n_clusters=3, n_init=1, random_state=0).fit(X).labels_)
    assert _routing.measured() == {}


# ---- reasons say where the call ran, and why ---------------------------------------------------------------


_SEED = "heuristic: seed table: "


def _states_its_outcome(target: str, reason: str, gpus: tuple = ()) -> bool:
    """A reason opens with where the call ran ("stock scikit-learn" is NumPy); where it names a
    table's tier that did not run, it says why the call did not move. The seed policy's reasons
    for NumPy's calls name the table's tier first, then where the call ran, and why not on that
    tier where it did not (``gpus``: targets standing in for a GPU)."""
    if reason.startswith(_SEED):
        tier = reason.split(" -> ", 1)[1].split(",")[0].split(":")[0]
        ran_on = "GPU" if target in gpus else {"numpy": "SCALAR", "torch-cpu": "SIMD"}.get(target, "GPU")
        named = f": {'NumPy' if target == 'numpy' else target}" in reason
        why = tier == ran_on or ", but " in reason or "the seed sends only sum, mean and prod" in reason
        return named and why
    if target == "numpy":
        if not reason.startswith("stock scikit-learn: "):
            return False
        wanted_elsewhere = "-> GPU" in reason or "-> SIMD" in reason
        return not wanted_elsewhere or any(why in reason for why in (
            "but no GPU here", "threaded NumPy runs", "measured", "measuring", "no Array API support"))
    return reason.startswith(f"{target}: ") or reason == f"data is on {target}"


def test_every_reason_names_the_target_that_ran_or_why_it_did_not_move(monkeypatch):
    from sklearn.cross_decomposition import CCA
    from sklearn.decomposition import PCA
    from sklearn.linear_model import Ridge
    from sklearn.preprocessing import StandardScaler

    rng = np.random.default_rng(0)
    small, medium = rng.standard_normal((60, 10)), rng.standard_normal((2_000, 10))
    y = rng.standard_normal(2_000)
    records = []

    def run(calls) -> None:
        with dispatch.trace() as t:
            calls()
        records.extend(t.records)

    run(lambda: PCA(2).fit(small).transform(small))  # SCALAR
    run(lambda: PCA(2).fit(medium))  # the table's GPU tier, on a machine without one (or with)
    run(lambda: StandardScaler().fit(medium))  # LOW
    run(lambda: CCA().fit(medium, medium[:, :2]))  # not in the catalog
    with dispatch.using("numpy"):
        run(lambda: Ridge().fit(medium, y))
    if HAVE_TORCH:
        with dispatch.using("torch-cpu"):
            run(lambda: Ridge().fit(medium, y).predict(medium))
            run(lambda: PCA(2, svd_solver="arpack").fit(medium))  # no Array API support with arpack
            run(lambda: Ridge(solver="lsqr").fit(medium, y))  # fails in Array API mode: stock
        monkeypatch.setattr(_routing, "LEARN_MIN", 10_000)  # measured both ways, then routed
        monkeypatch.setattr(_routing, "first_gpu", lambda: None)
        for _ in range(4):
            run(lambda: Ridge(alpha=2.0).fit(medium, y))
        monkeypatch.setattr(_routing, "first_gpu", lambda: "torch-cpu")  # stands in for a GPU
        run(lambda: PCA(2).fit(rng.standard_normal((400, 10))))  # SIMD tier: stock
    contradictions = [(r.op, r.target, r.reason) for r in records if not _states_its_outcome(r.target, r.reason)]
    assert records and not contradictions
    ran = {r.target for r in records}
    assert ran == ({"numpy", "torch-cpu"} if HAVE_TORCH else {"numpy"})


_LAZY = """
import sys
from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
import dispatch.sklearn
dispatch.sklearn.accelerate()
loaded = [m for m in ("pytest", "sklearn.utils._testing", "sklearn.cluster", "torch") if m in sys.modules]
from sklearn.cluster import KMeans  # loaded after the patch: patched as it loads
from sklearn.cluster import MiniBatchKMeans
from sklearn.discriminant_analysis import LinearDiscriminantAnalysis as Again
routed = [getattr(vars(c).get("fit"), "_dispatch_routed", False) for c in (LinearDiscriminantAnalysis, KMeans,
                                                                           MiniBatchKMeans)]
dispatch.sklearn.unaccelerate()
import sklearn.neighbors
print(loaded, routed, Again is LinearDiscriminantAnalysis, "fit" in vars(sklearn.neighbors.KNeighborsClassifier),
      getattr(vars(KMeans)["fit"], "_dispatch_routed", False))
"""


def test_accelerate_patches_modules_as_they_load_not_all_of_scikit_learn():
    """``accelerate()`` imports no module of scikit-learn's that the script did not (all of them,
    with pytest, took seconds); one loaded later has its estimators patched as it loads, until
    ``unaccelerate()``."""
    done = subprocess.run([sys.executable, "-c", _LAZY], cwd=REPO, capture_output=True, text=True, timeout=300,
                          env={**__import__("os").environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["[]", "[True,", "True,", "True]", "True", "True", "False"]


def test_a_class_patched_after_its_base_wraps_the_bases_original():
    """A subclass patched after its base (its module loaded later) wraps the base's original
    method, as one patched with it does: unaccelerate restores both exactly."""
    from sklearn.decomposition import PCA

    class Later(PCA):
        pass

    assert getattr(vars(PCA)["fit"], "_dispatch_routed", False)
    _patch._patch_classes([Later])
    assert _patch._original(Later, "fit") is _patch._originals[(PCA, "fit")]
    assert vars(Later)["fit"].__wrapped__ is _patch._originals[(PCA, "fit")]


_STOCK_ONLY = """
import sys
import numpy as np
from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
X = np.random.default_rng(0).standard_normal((400, 6))
y = (X[:, 0] > 0).astype(int)
stock = LinearDiscriminantAnalysis().fit(X, y).predict_proba(X)
import dispatch.sklearn
dispatch.sklearn.accelerate()
routed = LinearDiscriminantAnalysis().fit(X, y).predict_proba(X)
print(np.array_equal(routed, stock), routed.dtype == stock.dtype, type(routed) is np.ndarray,
      sorted(m for m in sys.modules if m.startswith("dispatch.arrays")))
"""


def test_calls_that_stay_stock_never_load_the_array_machinery():
    """A script whose estimator calls all stay on stock scikit-learn pays for the routing only:
    ``dispatch.arrays`` (the array type, its call path and mirrors) is loaded by a call that
    leaves NumPy, not by ``import dispatch.sklearn`` nor ``accelerate()``. The results are stock's."""
    done = subprocess.run([sys.executable, "-c", _STOCK_ONLY], cwd=REPO, capture_output=True, text=True, timeout=300,
                          env={k: v for k, v in __import__("os").environ.items() if not k.startswith("DISPATCH_")}
                          | {"PYTHONPATH": str(REPO)})
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "True", "True", "[]"]


_BEFORE_SKLEARN = """
import dispatch.sklearn
dispatch.sklearn.accelerate()  # before scikit-learn is imported at all
from sklearn.datasets import load_iris
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
X, y = load_iris(return_X_y=True)
model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=500)).fit(X, y)
print(round(model.score(X, y), 4), all(getattr(vars(c)["fit"], "_dispatch_routed", False)
                                       for c in (LogisticRegression, StandardScaler)))
"""


def test_accelerate_before_scikit_learn_is_imported_patches_what_loads():
    """``accelerate()`` first, scikit-learn imported after (its base loads partly first): the
    estimators are patched as their modules load, and the results are stock's."""
    stock = subprocess.run([sys.executable, "-c", _BEFORE_SKLEARN.replace(
        "import dispatch.sklearn\ndispatch.sklearn.accelerate()", "")], capture_output=True, text=True, timeout=300)
    done = subprocess.run([sys.executable, "-c", _BEFORE_SKLEARN], cwd=REPO, capture_output=True, text=True,
                          timeout=300, env={**__import__("os").environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[0] == stock.stdout.split()[0]
    assert done.stdout.split()[1] == "True"


def test_the_seed_tables_reasons_never_contradict_where_the_call_ran(monkeypatch, tmp_path):
    """Uncalibrated, NumPy's own calls are routed by the seed's table; its GPU tier on a machine
    without a GPU read "seed table says GPU" for a call NumPy ran."""
    from dispatch.routing import router

    monkeypatch.setenv("DISPATCH_CACHE_DIR", str(tmp_path))
    rng = np.random.default_rng(0)
    tall, vector = dispatch.asarray(rng.random((30_000, 12))), dispatch.asarray(rng.random(300_000))
    square = dispatch.asarray(rng.random((200, 200)))
    records = []

    def run(gpus: tuple = ()) -> None:
        router.clear_decisions()
        with dispatch.trace() as t:
            dispatch.linalg.lstsq(tall, vector[:30_000], rcond=None)  # HIGH: the GPU tier
            dispatch.sum(vector)  # MEDIUM: GPU, or torch-cpu's faster sum
            dispatch.cumsum(vector)  # MEDIUM, not one torch-cpu runs faster
            dispatch.cumsum(vector[:20_000])  # the SIMD tier
            square @ square
        records.extend((r, gpus) for r in t.records if r.reason.startswith(_SEED))

    with router_restored(History()):
        assert router.policy() == "seed"
        run()  # this machine as it is
        monkeypatch.setattr(router.calibration, "_driver_gpus", lambda: ["a GPU whose library is not started"])
        run()
        if HAVE_TORCH:
            monkeypatch.setattr(router, "GPU_TARGETS", ("torch-cpu",))  # stands in for a GPU that is up
            run(gpus=("torch-cpu",))
    contradictions = [(r.op, r.target, r.reason) for r, gpus in records
                      if not _states_its_outcome(r.target, r.reason, gpus)]
    assert len(records) >= 12 and not contradictions
    reasons = [r.reason for r, _ in records]
    assert {"GPU", "SIMD"} <= {r.split(" -> ", 1)[1].split(",")[0].split(":")[0] for r in reasons}
    assert any(", but no GPU here" in r for r in reasons) or calibration._driver_gpus()
    assert any(" is not up (" in r or " is not installed" in r for r in reasons)
