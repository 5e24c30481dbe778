"""dispatch.sklearn inside scikit-learn's composites: Pipeline, ColumnTransformer, FeatureUnion,
GridSearchCV, cross_val_score and other meta-estimators give stock results and the caller's
output type; intermediates stay where the steps computed them."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

pytest.importorskip("sklearn")

import _sklearn_cases as cases
from sklearn.base import BaseEstimator, TransformerMixin, is_classifier
from sklearn.compose import ColumnTransformer, TransformedTargetRegressor
from sklearn.datasets import make_regression
from sklearn.decomposition import PCA
from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
from sklearn.ensemble import BaggingRegressor, VotingClassifier
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.model_selection import GridSearchCV, KFold, cross_val_score
from sklearn.naive_bayes import GaussianNB
from sklearn.pipeline import FeatureUnion, make_pipeline
from sklearn.preprocessing import MinMaxScaler, StandardScaler

import dispatch
import dispatch.sklearn as ds
from dispatch import targets
from dispatch.sklearn import _routing, _run

pytestmark = pytest.mark.skipif(targets.probe("torch-cpu") is None, reason="torch is not installed")


@pytest.fixture(autouse=True, scope="module")
def accelerated():
    ds.accelerate()
    yield
    ds.unaccelerate()


@pytest.fixture(autouse=True)
def quiet():
    ds.forget()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


@pytest.fixture
def arrivals(monkeypatch):
    """(estimator.method, kind of X) for every routed leaf call: what each step was handed."""
    seen: list[tuple[str, str]] = []

    def spy(est, method, X, others=()):
        seen.append((f"{type(est).__name__}.{method}", _routing.array_kind(X)))
        return _routing.choose(est, method, X, others)

    monkeypatch.setattr(_run, "choose", spy)
    return seen


def regression():
    X, y = make_regression(n_samples=400, n_features=20, noise=3.0, random_state=0)
    return X, y


def scaler_pca_ridge():
    return make_pipeline(StandardScaler(), PCA(8), Ridge(solver="svd"))


def test_pipeline_equals_stock_and_keeps_intermediates_on_the_target(arrivals):
    X, y = regression()
    with cases.stock():
        ref = scaler_pca_ridge().fit(X, y)
        want_predict, want_score = ref.predict(X), ref.score(X, y)
    with dispatch.using("torch-cpu"), dispatch.trace() as t:
        pipe = scaler_pca_ridge().fit(X, y)
        got_predict, got_score = pipe.predict(X), pipe.score(X, y)
    assert type(got_predict) is np.ndarray
    np.testing.assert_allclose(got_predict, want_predict, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(got_score, want_score, rtol=1e-9)
    assert {r.target for r in t.records} == {"torch-cpu"}
    # The first step gets the caller's NumPy; the next ones the previous step's output, left
    # where it was computed (a dispatch.ndarray), not copied back to NumPy in between.
    assert arrivals[:3] == [("StandardScaler.fit_transform", "numpy"), ("PCA.fit_transform", "dispatch"),
                            ("Ridge.fit", "dispatch")]
    assert arrivals[3:6] == [("StandardScaler.transform", "numpy"), ("PCA.transform", "dispatch"),
                             ("Ridge.predict", "dispatch")]
    for step in pipe:
        cases.assert_plain(step, type(step).__name__)


def test_pipeline_of_numpy_steps_has_no_conversions(arrivals):
    X, y = regression()
    pipe = scaler_pca_ridge().fit(X, y)
    pipe.predict(X[:32])
    assert {kind for _, kind in arrivals} == {"numpy"}


class Doubler(TransformerMixin, BaseEstimator):
    """A user's own step: it must get the NumPy arrays it was written for."""

    def fit(self, X, y=None):
        assert type(X) is np.ndarray, type(X)
        return self

    def transform(self, X):
        assert type(X) is np.ndarray, type(X)
        return X * 2.0


def test_a_users_own_step_gets_numpy(arrivals):
    X, y = regression()
    with cases.stock():
        want = make_pipeline(StandardScaler(), Doubler(), PCA(5), Ridge()).fit(X, y).predict(X)
    with dispatch.using("torch-cpu"):
        got = make_pipeline(StandardScaler(), Doubler(), PCA(5), Ridge()).fit(X, y).predict(X)
    np.testing.assert_allclose(got, want, rtol=1e-7, atol=1e-9)
    assert all(kind == "numpy" for _, kind in arrivals)  # nothing stays on the target in this pipeline


def test_pipeline_with_dispatch_array_in_gives_dispatch_array_out():
    X, y = regression()
    with cases.stock():
        want = scaler_pca_ridge().fit(X, y).predict(X)
    Xd, yd = dispatch.asarray(X), dispatch.asarray(y)
    with dispatch.using("torch-cpu"):
        got = scaler_pca_ridge().fit(Xd, yd).predict(Xd)
    assert type(got) is dispatch.ndarray
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-7, atol=1e-9)
    got = scaler_pca_ridge().fit(Xd, yd).predict(Xd)  # the default route, stock: still dispatch out
    assert type(got) is dispatch.ndarray


def test_pipeline_transform_and_inverse_transform():
    X, _ = cases.data("wine")
    make = lambda: make_pipeline(StandardScaler(), PCA(5))  # noqa: E731
    with cases.stock():
        ref = make().fit(X)
        want, want_back = ref.transform(X), ref.inverse_transform(ref.transform(X))
    with dispatch.using("torch-cpu"):
        pipe = make().fit(X)
        got = pipe.transform(X)
        back = pipe.inverse_transform(got)
    assert type(got) is np.ndarray and type(back) is np.ndarray
    np.testing.assert_allclose(got, want, atol=1e-9)
    np.testing.assert_allclose(back, want_back, atol=1e-9)


def test_column_transformer():
    X, y = cases.data("wine")

    def make():
        columns = ColumnTransformer([("scale", StandardScaler(), list(range(6))),
                                     ("pca", PCA(3), list(range(6, 10)))], remainder="passthrough")
        return make_pipeline(columns, MinMaxScaler(), LogisticRegression(max_iter=500))

    with cases.stock():
        ref = make().fit(X, y)
        want, want_t = ref.predict_proba(X), ref[0].transform(X)
    with dispatch.using("torch-cpu"), dispatch.trace() as t:
        pipe = make().fit(X, y)
        got, got_t = pipe.predict_proba(X), pipe[0].transform(X)
    assert type(got) is np.ndarray and type(got_t) is np.ndarray
    np.testing.assert_allclose(got_t, want_t, atol=1e-9)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)
    # remainder="passthrough" is a FunctionTransformer (no Array API support): stock; the
    # column stacking is dispatch's own hstack on the kept arrays.
    ran = {r.op.split(".")[0]: r.target for r in t.records if not r.op.startswith(("FunctionTransformer", "hstack"))}
    assert ran == dict.fromkeys(["StandardScaler", "PCA", "MinMaxScaler", "LogisticRegression"], "torch-cpu")


def test_feature_union():
    X, _ = cases.data("digits")
    make = lambda: FeatureUnion([("pca", PCA(4)), ("scale", StandardScaler())])  # noqa: E731
    with cases.stock():
        want = make().fit_transform(X)
    with dispatch.using("torch-cpu"):
        union = make()
        got = union.fit_transform(X)
        again = union.transform(X)
    assert type(got) is np.ndarray and type(again) is np.ndarray
    np.testing.assert_allclose(got, want, atol=1e-8)
    np.testing.assert_allclose(again, want, atol=1e-8)


def test_grid_search_over_ridge_alphas():
    X, y = cases.data("diabetes")
    grid = {"alpha": [0.01, 0.1, 1.0, 10.0]}
    cv = KFold(4, shuffle=True, random_state=0)
    with cases.stock():
        ref = GridSearchCV(Ridge(solver="svd"), grid, cv=cv).fit(X, y)
    with dispatch.using("torch-cpu"), dispatch.trace() as t:
        search = GridSearchCV(Ridge(solver="svd"), grid, cv=cv).fit(X, y)
        got = search.predict(X)
    assert search.best_params_ == ref.best_params_
    np.testing.assert_allclose(search.cv_results_["mean_test_score"], ref.cv_results_["mean_test_score"], rtol=1e-9)
    np.testing.assert_allclose(got, ref.predict(X), rtol=1e-9)
    fits = [r for r in t.records if r.op == "Ridge.fit"]
    assert len(fits) == 4 * 4 + 1 and {r.target for r in fits} == {"torch-cpu"}
    cases.assert_plain(search.best_estimator_, "best_estimator_")


def test_grid_search_over_a_pipeline():
    X, y = cases.data("breast_cancer")
    grid = {"pca__n_components": [3, 6], "lineardiscriminantanalysis__tol": [1e-4, 1e-3]}
    make = lambda: make_pipeline(StandardScaler(), PCA(), LinearDiscriminantAnalysis())  # noqa: E731
    with cases.stock():
        ref = GridSearchCV(make(), grid, cv=3).fit(X, y)
    with dispatch.using("torch-cpu"):
        search = GridSearchCV(make(), grid, cv=3).fit(X, y)
    assert search.best_params_ == ref.best_params_
    np.testing.assert_allclose(search.cv_results_["mean_test_score"], ref.cv_results_["mean_test_score"])
    np.testing.assert_array_equal(search.predict(X), ref.predict(X))


def test_cross_val_score():
    X, y = regression()
    with cases.stock():
        want = cross_val_score(scaler_pca_ridge(), X, y, cv=5)
    with dispatch.using("torch-cpu"), dispatch.trace() as t:
        got = cross_val_score(scaler_pca_ridge(), X, y, cv=5)
    np.testing.assert_allclose(got, want, rtol=1e-9)
    assert {r.target for r in t.records} == {"torch-cpu"}


@pytest.mark.parametrize("make", [
    lambda: TransformedTargetRegressor(regressor=Ridge(solver="svd"), transformer=StandardScaler()),
    lambda: BaggingRegressor(Ridge(solver="svd"), n_estimators=4, random_state=0),
    lambda: VotingClassifier([("lda", LinearDiscriminantAnalysis()), ("nb", GaussianNB())], voting="soft"),
], ids=["TransformedTargetRegressor", "BaggingRegressor", "VotingClassifier"])
def test_meta_estimators(make):
    est = make()
    X, y = cases.data("iris" if is_classifier(est) else "diabetes")
    with cases.stock():
        want = make().fit(X, y).predict(X)
    with dispatch.using("torch-cpu"), dispatch.trace() as t:
        got = make().fit(X, y).predict(X)
    assert type(got) is np.ndarray
    np.testing.assert_allclose(got, want, rtol=1e-7, atol=1e-9)
    assert "torch-cpu" in {r.target for r in t.records}


def test_pipeline_pickles_as_plain_sklearn(tmp_path):
    X, y = regression()
    with dispatch.using("torch-cpu"):
        pipe = scaler_pca_ridge().fit(X, y)
        want = pipe.predict(X)
    assert cases.predict_without_dispatch(tmp_path, pipe, X, want) == "ok Pipeline []"


def test_serving_loop_default_route_stays_on_numpy():
    X, y = regression()
    pipe = scaler_pca_ridge().fit(X, y)
    with dispatch.trace() as t:
        for i in range(10):
            pipe.predict(X[i * 32:(i + 1) * 32])
    assert {r.target for r in t.records} == {"numpy"}
    assert not t.fallbacks
    assert all("MoE" in r.reason for r in t.records)


def test_serving_loop_skips_routing_once_a_composite_ran_stock_throughout(monkeypatch):
    from dispatch.sklearn import _run

    X, y = regression()
    with dispatch.using("numpy"):
        want = scaler_pca_ridge().fit(X, y).predict(X[:32])
    pipe = scaler_pca_ridge().fit(X, y)
    routed = []
    choose = _run.choose
    monkeypatch.setattr(_run, "choose", lambda *a, **k: routed.append(type(a[0]).__name__) or choose(*a, **k))
    first = pipe.predict(X[:32])
    assert routed == ["StandardScaler", "PCA", "Ridge"]  # each step routed once, all stock
    assert _composite_remembered(pipe)  # so the pipeline itself runs whole as stock from now on
    routed.clear()
    for i in range(5):  # the next batches of that shape: the pipeline runs whole as stock, unrouted
        got = pipe.predict(X[i * 32:(i + 1) * 32])
        assert type(got) is np.ndarray and got.shape == (32,)
    assert routed == []
    np.testing.assert_allclose(first, want, rtol=1e-12)
    np.testing.assert_allclose(pipe.predict(X[:32]), want, rtol=1e-12)
    pipe.predict(X[:48])  # another shape is routed afresh
    assert routed == ["StandardScaler", "PCA", "Ridge"]


def test_a_composite_whose_step_ran_elsewhere_keeps_routing(monkeypatch):
    from dispatch.sklearn import _routing, _run

    if targets.probe("torch-cpu") is None:
        pytest.skip("torch is not installed")
    X, y = regression()
    pipe = scaler_pca_ridge().fit(X, y)
    with dispatch.using("numpy"):
        want = pipe.predict(X[:32])
    real, ridge_routed = _run.choose, []

    def choose(est, method, X, others=()):
        if type(est).__name__ == "Ridge":  # Ridge.predict runs on torch-cpu, as on a GPU target
            ridge_routed.append(method)
            return _routing.Choice("torch-cpu", "test: elsewhere")
        return real(est, method, X, others)

    monkeypatch.setattr(_run, "choose", choose)
    for _ in range(3):  # not stock throughout: every call is routed again
        np.testing.assert_allclose(pipe.predict(X[:32]), want, rtol=1e-9)
    assert ridge_routed == ["predict"] * 3
    assert not _composite_remembered(pipe)


def _composite_remembered(est, method: str = "predict") -> bool:
    from dispatch.sklearn import _run

    return any(key[:3] == (id(est), type(est), method) for key in _run._stock_calls)
