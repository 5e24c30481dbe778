"""Small products on one of NumPy's BLAS threads (``dispatch._blas``)."""

from __future__ import annotations

import numpy as np
import pytest

import dispatch
from dispatch import _blas
from dispatch._ops import op_named


class FakeBlas:
    """A BLAS's thread count, as threadpoolctl's controllers show it."""

    def __init__(self, threads: int) -> None:
        self.threads = threads
        self.changes: list[int] = []

    def get_num_threads(self) -> int:
        return self.threads

    def set_num_threads(self, n: int) -> None:
        self.threads = n
        self.changes.append(n)


@pytest.fixture
def blas(monkeypatch):
    fake = FakeBlas(8)
    monkeypatch.setattr(_blas, "_numpy_blas", lambda: [fake])
    monkeypatch.setattr(_blas, "_last_end", float("-inf"))
    monkeypatch.setattr(_blas, "BACK_TO_BACK_S", 0.0)  # every product after other work
    return fake


def test_a_small_product_runs_on_one_thread_and_the_count_is_put_back(blas):
    seen = []
    product = _blas.one_thread_when_small(lambda a, b, **kw: seen.append(blas.threads) or np.matmul(a, b, **kw))
    a, b = np.ones((300, 10)), np.ones((10, 300))  # 900,000 multiply-adds: threaded by OpenBLAS, small
    np.testing.assert_array_equal(product(a, b), np.full((300, 300), 10.0))
    out = np.empty((300, 300))
    assert product(a, b, out=out) is out
    assert seen == [1, 1] and blas.threads == 8 and blas.changes == [1, 8, 1, 8]


def test_products_back_to_back_keep_the_threads_spinning_for_them(blas, monkeypatch):
    """OpenBLAS's threads spin for the next product: where one comes right after another (a
    loop of products), they serve it at once, and the threads pay."""
    seen = []
    product = _blas.one_thread_when_small(lambda a, b: seen.append(blas.threads) or a @ b)
    a = np.ones((300, 10))
    monkeypatch.setattr(_blas, "BACK_TO_BACK_S", 60.0)
    product(a, a.T)  # the first: after other work
    product(a, a.T)
    monkeypatch.setattr(_blas, "BACK_TO_BACK_S", 0.0)
    product(a, a.T)
    assert seen == [1, 8, 1] and blas.threads == 8


@pytest.mark.parametrize("shapes", [
    ((64, 64), (64, 64)),  # 262,144: OpenBLAS runs it on one thread itself
    ((512, 512), (512, 512)),  # large: every thread
    ((300, 10), (10,)),  # not two matrices
    ((2, 300, 10), (2, 10, 300)),  # a stack
])
def test_other_products_run_as_numpy_runs_them(blas, shapes):
    product = _blas.one_thread_when_small(np.matmul)
    a, b = (np.ones(s) for s in shapes)
    np.testing.assert_array_equal(product(a, b), np.matmul(a, b))
    assert blas.changes == []


def test_the_count_is_put_back_after_an_error_and_by_the_last_of_nested_products(blas):
    product = _blas.one_thread_when_small(np.matmul)
    a = np.ones((300, 10))
    with pytest.raises(ValueError):
        product(a, np.ones((300, 300)))  # 10 columns against 300 rows
    assert blas.threads == 8

    def outer(x, y):
        inner = product(x, y)  # another small product while this one runs (as another thread's would)
        assert blas.threads == 1
        return inner

    _blas.one_thread_when_small(outer)(a, a.T)
    assert blas.threads == 8 and blas.changes == [1, 8, 1, 8]


def test_a_blas_of_few_threads_keeps_them(monkeypatch):
    """Few threads spin, each on a core of its own: on the 2-core machine one thread cost more
    than the spinning (mlp small 1.06-1.11x NumPy's time against 1.03-1.05x)."""
    few = FakeBlas(_blas.FEW_THREADS)
    monkeypatch.setattr(_blas, "_numpy_blas", lambda: [few])
    monkeypatch.setattr(_blas, "_last_end", float("-inf"))
    a = np.ones((300, 10))
    np.testing.assert_array_equal(_blas.one_thread_when_small(np.matmul)(a, a.T), np.full((300, 300), 10.0))
    assert few.changes == []


def test_dispatch_runs_numpys_small_products_on_one_thread(monkeypatch):
    """The real BLAS: NumPy's own, found by threadpoolctl under NumPy's directory (on one
    thread here from two threads up, as on a machine of many cores)."""
    monkeypatch.setattr(_blas, "FEW_THREADS", 1)
    monkeypatch.setattr(_blas, "_last_end", float("-inf"))
    monkeypatch.setattr(_blas, "_looked", False)  # looked for again, with one thread as few
    monkeypatch.setattr(_blas, "_found", [])
    found = _blas._numpy_blas()
    if not found or found[0].get_num_threads() < 2:
        pytest.skip("NumPy's BLAS is not a bundled one with threads here")
    lib, threads = found[0], found[0].get_num_threads()
    seen = []
    product = _blas.one_thread_when_small(lambda a, b: seen.append(lib.get_num_threads()) or a @ b)
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((512, 10)), rng.standard_normal((10, 512))  # mlp large's product
    np.testing.assert_allclose(product(a, b), a @ b, rtol=1e-12)
    assert seen == [1] and lib.get_num_threads() == threads
    op = op_named("matmul")
    assert op.ufunc is np.matmul and op.func is not np.matmul  # NumPy's ufunc, run through the wrapper
    result = dispatch.asarray(a) @ dispatch.asarray(b)
    assert result.dtype == np.float64 and result.shape == (512, 512)
    np.testing.assert_allclose(np.asarray(result), a @ b, rtol=1e-12)


def test_a_blas_threadpoolctl_cannot_read_keeps_numpys_threads(monkeypatch):
    import threadpoolctl

    def unreadable():
        raise OSError("cannot read the loaded libraries")

    monkeypatch.setattr(threadpoolctl, "ThreadpoolController", unreadable)
    monkeypatch.setattr(_blas, "_looked", False)
    monkeypatch.setattr(_blas, "_found", [])
    a = np.ones((300, 10))
    np.testing.assert_array_equal(_blas.one_thread_when_small(np.matmul)(a, a.T), np.full((300, 300), 10.0))
    assert _blas._numpy_blas() == [] and _blas._looked
