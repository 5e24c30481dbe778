"""Dask with CuPy chunks on a dask-cuda cluster (one worker per GPU): results equal NumPy's.

Skipped where CuPy, dask-cuda or a GPU is missing (CI); the GPU script runs it on a GPU machine.
"""

from __future__ import annotations

import logging

import numpy as np
import pytest

cupy = pytest.importorskip("cupy")
pytest.importorskip("dask_cuda")

import dispatch  # noqa: E402
from dispatch import cluster  # noqa: E402

try:
    _GPUS = cupy.cuda.runtime.getDeviceCount()
except Exception:  # no driver
    _GPUS = 0
pytestmark = pytest.mark.skipif(_GPUS < 1, reason="no CUDA device")


@pytest.fixture(scope="module")
def client():
    from dask_cuda import LocalCUDACluster
    from distributed import Client

    lc = LocalCUDACluster(dashboard_address=None, silence_logs=logging.ERROR)
    c = Client(lc, set_as_default=False)
    cluster.set_chunk_bytes(1 << 20)  # small chunks: every call spans several tasks and GPUs
    dispatch.use_cluster(c)
    yield c
    dispatch.use_cluster(None)
    cluster.set_chunk_bytes(None)
    c.close()
    lc.close()


def _held(client, host: np.ndarray):
    """``host`` as a Dask array of CuPy chunks spread over the workers, wrapped by dispatch."""
    import dask.array as da

    chunks = tuple(max(1, s // 4) for s in host.shape)
    x = da.from_array(host, chunks=chunks).map_blocks(cupy.asarray, dtype=host.dtype)
    x = client.persist(x)
    wrapped = dispatch.asarray(x)
    assert wrapped.device == dispatch.Device("dask")
    return wrapped


def _host(result) -> np.ndarray:
    out = np.asarray(result)
    assert type(out) is np.ndarray  # computed and gathered to the host
    return out


def test_the_cluster_has_one_worker_per_gpu(client):
    assert len(client.scheduler_info()["workers"]) == _GPUS


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_elementwise_reductions_and_matmul_equal_numpy(client, dtype):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((512, 384)).astype(dtype)
    b = rng.standard_normal((384, 256)).astype(dtype)
    A, B = _held(client, a), _held(client, b)
    rtol = 1e-5 if dtype == np.float32 else 1e-12
    cases = {
        "exp * 2 + 1": (lambda xp, x, y: xp.exp(x) * 2 + 1, (A, B), (a, b)),
        "sum": (lambda xp, x, y: x.sum(), (A, B), (a, b)),
        "mean axis 0": (lambda xp, x, y: x.mean(axis=0), (A, B), (a, b)),
        "max axis 1": (lambda xp, x, y: x.max(axis=1), (A, B), (a, b)),
        "matmul": (lambda xp, x, y: x @ y, (A, B), (a, b)),
        "transpose slice": (lambda xp, x, y: x.T[::3, 10:20], (A, B), (a, b)),
    }
    for name, (fn, ours, theirs) in cases.items():
        got, want = _host(fn(dispatch, *ours)), fn(np, *theirs)
        want = np.asarray(want)
        assert got.shape == want.shape, name
        assert got.dtype == want.dtype, name
        np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * 100, err_msg=name)


def test_a_result_stays_with_the_cluster_until_read(client):
    a = np.arange(4096.0).reshape(64, 64)
    A = _held(client, a)
    result = (A * 2).sum(axis=0)
    assert result.device == dispatch.Device("dask")
    np.testing.assert_array_equal(_host(result), (a * 2).sum(axis=0))
    assert float(A.sum()) == float(a.sum())
