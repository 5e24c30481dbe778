"""dispatch.sklearn on a GPU: the same comparisons with stock scikit-learn as on the CPU, on each
GPU target present (cupy, torch-cuda, torch-mps), and data staying on the device between
pipeline steps, measured in bytes copied (``dispatch.targets._staging.moved``).

Every test here is marked ``gpu`` and skips where the target is missing.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

pytest.importorskip("sklearn")

import _sklearn_cases as cases
from sklearn.datasets import make_regression
from sklearn.decomposition import PCA
from sklearn.linear_model import Ridge
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import dispatch
import dispatch.sklearn as ds
from dispatch import targets
from dispatch.sklearn import _routing
from dispatch.targets import _staging

pytestmark = pytest.mark.gpu

GPU_TARGETS = tuple(targets.registry.gpu_names())


@pytest.fixture(params=GPU_TARGETS)
def gpu(request):
    if targets.probe(request.param) is None:
        pytest.skip(f"{request.param} is not available here")
    return request.param


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


def _dtype_for(target: str):
    return np.float32 if target == "torch-mps" else np.float64  # MPS holds no float64


CASES = [(case, data) for case in cases.array_api_cases() for data in cases.datasets_for(case[0])]


@pytest.mark.parametrize(("case", "data_name"), CASES, ids=[f"{cases.case_id(c)}-{d}" for c, d in CASES])
def test_equals_stock_on_the_gpu(gpu, case, data_name):
    cases.compare_on(gpu, case, data_name, _dtype_for(gpu))


def _moved() -> dict[str, int]:
    return dict(_staging.moved())


def _diff(before: dict[str, int]) -> dict[str, int]:
    now = _staging.moved()
    return {k: now[k] - before[k] for k in now}


def _data(target: str):
    X, y = make_regression(n_samples=20_000, n_features=64, noise=1.0, random_state=0)
    dtype = _dtype_for(target)
    return X.astype(dtype), y.astype(dtype)


def _pipeline():
    return make_pipeline(StandardScaler(), PCA(8), Ridge(solver="svd"))


def test_pipeline_moves_the_data_to_the_device_once(gpu):
    X, y = _data(gpu)
    with cases.stock():
        want = _pipeline().fit(X, y).predict(X)
    with dispatch.using(gpu), dispatch.trace() as t:
        before = _moved()
        pipe = _pipeline().fit(X, y)
        fit_moved = _diff(before)
        before = _moved()
        got = pipe.predict(X)
        predict_moved = _diff(before)
    assert type(got) is np.ndarray
    rtol = 1e-3 if X.dtype == np.float32 else 1e-7
    np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * float(np.abs(want).max()))
    assert {r.target for r in t.records} == {gpu}
    # X goes over once (y once per step, the fitted attributes back); copying between steps
    # would be 3 * X.nbytes.
    assert fit_moved["to_device"] <= X.nbytes + 3 * y.nbytes + 64 * 1024, fit_moved
    assert predict_moved["to_device"] <= X.nbytes + 64 * 1024, predict_moved
    assert predict_moved["to_host"] <= got.nbytes + 64 * 1024, predict_moved


def test_device_resident_input_moves_nothing_and_stays(gpu):
    X, y = _data(gpu)
    with cases.stock():
        want = _pipeline().fit(X, y).predict(X)
    Xd, yd = dispatch.asarray(X).to(gpu), dispatch.asarray(y).to(gpu)
    before = _moved()
    with dispatch.trace() as t:  # no forcing: the data being on the device decides
        got = _pipeline().fit(Xd, yd).predict(Xd)
    moved = _diff(before)
    assert type(got) is dispatch.ndarray and got.device == Xd.device
    assert {r.target for r in t.records} == {gpu}
    assert {r.reason for r in t.records} == {f"data is on {gpu}"}
    assert moved["to_device"] <= 64 * 1024, moved  # the fitted attributes of three small steps
    rtol = 1e-3 if X.dtype == np.float32 else 1e-7
    np.testing.assert_allclose(np.asarray(got), want, rtol=rtol, atol=rtol * float(np.abs(want).max()))


def test_default_route_sends_large_work_to_the_gpu_and_small_batches_to_numpy():
    first = _routing.first_gpu()
    if first is None:
        pytest.skip("no GPU target here")
    X, _ = _data(first)
    with dispatch.trace() as t:
        pca = PCA(8).fit(X)
        pca.transform(X[:32])
    big, small = t.records
    assert big.target == first and big.reason.startswith(f"{first}: MoE: HIGH on 1,280,000 elements -> GPU")
    assert small.target == "numpy" and "SIMD" in small.reason


def test_pickled_gpu_fit_works_without_dispatch(gpu, tmp_path):
    X, y = _data(gpu)
    with dispatch.using(gpu):
        est = make_pipeline(StandardScaler(), PCA(8), Ridge(solver="svd")).fit(X, y)
        want = est.predict(X[:100])
    for step in est:
        cases.assert_plain(step, type(step).__name__)
    assert cases.predict_without_dispatch(tmp_path, est, X[:100], want) == "ok Pipeline []"
