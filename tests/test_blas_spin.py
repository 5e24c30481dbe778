"""A torch-cpu call right after a product NumPy ran for the router runs on one torch thread
(``dispatch.base.blas_spin``): NumPy's BLAS threads are still spinning for more work then."""

from __future__ import annotations

import math

import numpy as np
import pytest

import dispatch
from dispatch.base import blas_spin

torch = pytest.importorskip("torch")


@pytest.fixture
def threads_seen(monkeypatch):
    """The torch thread count each torch-cpu call ran with, on a torch of two threads or more."""
    from dispatch.targets.torch_target import TorchTarget

    threads = torch.get_num_threads()
    torch.set_num_threads(max(threads, 2))
    seen = []
    real = TorchTarget._run

    def spy(self, op, args, kwargs):
        seen.append(torch.get_num_threads())
        return real(self, op, args, kwargs)

    monkeypatch.setattr(TorchTarget, "_run", spy)
    monkeypatch.setattr(blas_spin, "_last", -math.inf)
    yield seen
    torch.set_num_threads(threads)


@pytest.mark.parametrize("product", ["a @ b", "linalg.solve"])
def test_a_torch_cpu_call_after_a_numpy_product_runs_on_one_thread(product, threads_seen):
    rng = np.random.default_rng(0)
    an, bn, xn = rng.standard_normal((64, 64)), rng.standard_normal((64, 64)), rng.standard_normal(1000)
    a, b, x = dispatch.asarray(an), dispatch.asarray(bn), dispatch.asarray(xn)
    threads = torch.get_num_threads()
    with dispatch.using("torch-cpu"):
        before = dispatch.exp(x)  # no product yet: torch's own threads
    with dispatch.using("numpy"):
        made = a @ b if product == "a @ b" else dispatch.linalg.solve(a, b)
    assert blas_spin.spinning()
    with dispatch.using("torch-cpu"):
        after = dispatch.exp(x)
    assert threads_seen == [threads, 1]  # (both ran on torch-cpu)
    assert torch.get_num_threads() == threads  # set back
    want = np.exp(xn)
    for got in (before, after):
        got = np.asarray(got)
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-15)
    expected = an @ bn if product == "a @ b" else np.linalg.solve(an, bn)
    np.testing.assert_allclose(np.asarray(made), expected, rtol=1e-12, atol=1e-12)


def test_other_numpy_calls_leave_torch_its_threads(threads_seen):
    x = dispatch.asarray(np.linspace(0.0, 1.0, 1000))
    with dispatch.using("numpy"):
        y = x * 2.0 + 1.0
    assert not blas_spin.spinning()
    with dispatch.using("torch-cpu"):
        z = dispatch.exp(y)
    assert threads_seen == [torch.get_num_threads()]
    np.testing.assert_allclose(np.asarray(z), np.exp(np.linspace(0.0, 1.0, 1000) * 2.0 + 1.0), rtol=1e-15)


def test_the_window_ends(threads_seen, monkeypatch):
    monkeypatch.setattr(blas_spin, "SPIN_S", 0.0)
    a = dispatch.asarray(np.eye(8))
    with dispatch.using("numpy"):
        a @ a
    assert not blas_spin.spinning()
    with dispatch.using("torch-cpu"):
        dispatch.exp(a)
    assert threads_seen == [torch.get_num_threads()]


@pytest.mark.parametrize("product", ["a @ b", "dot", "a.dot(b)", "linalg.solve", "linalg.svd"])
def test_a_product_under_the_floors_opens_the_window_too(product, threads_seen, monkeypatch):
    """Small products run on NumPy without routing (compiled or not): they tell ``blas_spin``
    as routed ones do, or a torch-cpu call right after them would meet NumPy's spinning BLAS."""
    rng = np.random.default_rng(0)
    an, bn = rng.standard_normal((8, 8)), rng.standard_normal((8, 8))
    a, b = dispatch.asarray(an), dispatch.asarray(bn)
    run = {"a @ b": lambda: a @ b, "dot": lambda: dispatch.dot(a, b), "a.dot(b)": lambda: a.dot(b),
           "linalg.solve": lambda: dispatch.linalg.solve(a, b), "linalg.svd": lambda: dispatch.linalg.svd(a)}[product]
    want = {"a @ b": lambda: an @ bn, "dot": lambda: an.dot(bn), "a.dot(b)": lambda: an.dot(bn),
            "linalg.solve": lambda: np.linalg.solve(an, bn), "linalg.svd": lambda: np.linalg.svd(an)[1]}[product]()
    for _ in range(3):  # the floors computed and the decision made: later calls skip the router
        run()
    monkeypatch.setattr(blas_spin, "_last", -math.inf)
    got = run()
    assert blas_spin.spinning()
    got = np.asarray(got[1] if product == "linalg.svd" else got)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
