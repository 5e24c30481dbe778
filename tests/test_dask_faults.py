"""Faults on a real multi-process cluster: a worker killed in the middle of a computation, a
scheduler that does not answer, and data three times larger than the workers' memory limit.

Every wait here is bounded (a hang fails the test), and nothing asserts on timings.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
import time

import numpy as np
import pytest

pytest.importorskip("dask.array")
pytest.importorskip("distributed")

import dask
from distributed import wait

import dispatch
from dispatch import cluster, targets
from dispatch.base.devices import DASK

HANG_S = 120  # a bound on any wait below: reached only if something hangs


@pytest.fixture(scope="module", autouse=True)
def ship_this_module_by_value():
    """The workers run this module's block function without importing the test suite."""
    import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    yield
    cloudpickle.unregister_pickle_by_value(sys.modules[__name__])


def _local_cluster(**kwargs):
    from distributed import Client, LocalCluster

    lc = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                      silence_logs=logging.CRITICAL, **kwargs)
    return lc, Client(lc, set_as_default=False)


@pytest.fixture
def connected():
    lc, client = _local_cluster(memory_limit="1GiB")
    cluster.set_chunk_bytes(64 << 10)
    dispatch.use_cluster(client)
    yield client
    dispatch.use_cluster(None)
    cluster.set_chunk_bytes(None)
    client.close()
    lc.close()


# ---- a worker lost mid-computation -----------------------------------------------------------------------


def _stall_once(block, marker: str, block_id=None):
    """Chunk (2,): the first attempt writes its worker's pid to ``marker`` and waits to be
    killed; the retry (``marker`` exists) passes the chunk through."""
    if block_id == (2,):
        try:
            fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            return block
        os.write(fd, str(os.getpid()).encode())
        os.close(fd)
        time.sleep(HANG_S)  # killed long before this ends
    return block


def test_a_worker_killed_mid_computation_is_retried(connected, tmp_path):
    marker = str(tmp_path / "stalled")
    with dispatch.using("dask"):
        x = dispatch.arange(100_000.0)  # chunks are tasks: any worker can make them again
    stalled = dispatch.asarray(x._engine_array.map_blocks(_stall_once, marker, dtype=x.dtype))
    y = dispatch.sum(dispatch.sin(stalled) * 2.0)
    result: dict = {}
    compute = threading.Thread(target=lambda: result.setdefault("value", float(y)), daemon=True)
    compute.start()
    deadline = time.monotonic() + HANG_S
    while not (os.path.exists(marker) and os.path.getsize(marker)) and time.monotonic() < deadline:
        time.sleep(0.05)
    pid = int(open(marker).read())
    workers = connected.run(os.getpid)
    assert pid in workers.values()  # a worker process of the cluster, mid-task
    os.kill(pid, signal.SIGKILL)
    compute.join(HANG_S)
    assert not compute.is_alive(), "the computation hung after the worker was lost"
    assert result["value"] == pytest.approx(float(np.sum(np.sin(np.arange(100_000.0)) * 2.0)), rel=1e-12)


def test_host_data_survives_a_lost_worker(connected):
    """Chunks that came from the host travel inside the task graph: a killed worker's share is
    made again from it (scattered data would be lost with the worker)."""
    h = np.random.default_rng(0).standard_normal((400, 50))
    x = dispatch.asarray(h).to("dask")
    with connected.as_current():
        wait(x._engine_array)  # persisted on both workers
    victim = next(iter(connected.run(os.getpid).values()))
    os.kill(victim, signal.SIGKILL)
    assert float(dispatch.sum(x * x)) == pytest.approx(float(np.sum(h * h)), rel=1e-12)
    np.testing.assert_array_equal(np.asarray(x), h)


# ---- an unreachable scheduler -------------------------------------------------------------------------


def _bounded(fn):
    """Run ``fn`` in a thread; its exception, after at most HANG_S (a hang fails)."""
    out: dict = {}

    def run():
        try:
            fn()
        except BaseException as exc:  # the exception is the result
            out["error"] = exc

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(HANG_S)
    assert not t.is_alive(), "hung"
    return out.get("error")


def test_unreachable_scheduler_is_one_clear_error():
    error = _bounded(lambda: dispatch.use_cluster("tcp://127.0.0.1:1", timeout=1))
    assert isinstance(error, ConnectionError)
    assert "tcp://127.0.0.1:1" in str(error) and "1 s" in str(error)
    assert error.__cause__ is None and error.__suppress_context__  # one error, not a chain of retries
    assert not cluster.connected()


def test_unreachable_scheduler_from_the_environment(monkeypatch):
    """``DISPATCH_DASK_SCHEDULER`` naming a dead address: the dask target is unavailable with
    that reason, and calls keep running (on NumPy), without hanging."""
    monkeypatch.setenv("DISPATCH_DASK_SCHEDULER", "tcp://127.0.0.1:1")
    monkeypatch.setattr(cluster, "DEFAULT_TIMEOUT_S", 1.0)
    targets.reset("dask")
    try:
        assert _bounded(lambda: targets.probe("dask")) is None
        assert targets.probe("dask") is None
        assert "tcp://127.0.0.1:1" in targets.unavailable()["dask"]
        a = dispatch.asarray(np.arange(10.0))
        np.testing.assert_array_equal(np.asarray(a + 1), np.arange(10.0) + 1)
    finally:
        monkeypatch.delenv("DISPATCH_DASK_SCHEDULER")
        targets.reset("dask")


# ---- memory pressure: spill, do not crash ----------------------------------------------------------------


def test_data_three_times_the_memory_limit_spills_and_stays_correct():
    """Two workers of 32 MiB each hold 192 MiB of persisted chunks: they spill to disk (by the
    size of what they hold; process-size limits are off, as a bare Python worker exceeds
    32 MiB) and a reduction and a matmul over all of it equal NumPy's."""
    config = {
        "distributed.worker.memory.target": 0.5,  # spill what is held past half the limit
        "distributed.worker.memory.spill": False,
        "distributed.worker.memory.pause": False,
        "distributed.worker.memory.terminate": False,
    }
    with dask.config.set(config):
        lc, client = _local_cluster(memory_limit="32MiB")
    cluster.set_chunk_bytes(2 << 20)
    dispatch.use_cluster(client)
    try:
        rows = (192 << 20) // (8 * 8)  # 3 x the 64 MiB the two workers may hold
        with dispatch.using("dask"):
            x = dispatch.arange(float(rows * 8)).reshape(rows, 8)
        x = x.persist()
        with client.as_current():
            wait(x._engine_array)
        spilled = client.run(lambda dask_worker: len(dask_worker.data.slow))
        assert sum(spilled.values()) > 0, "nothing spilled"
        n = rows * 8
        assert float(x.sum()) == n * (n - 1) / 2  # integers in float64: exact in any order
        gram = np.asarray(x.T @ (x / n))
        h = np.arange(float(n)).reshape(rows, 8)
        np.testing.assert_allclose(gram, h.T @ (h / n), rtol=1e-10)
        assert x.device == DASK
    finally:
        dispatch.use_cluster(None)
        cluster.set_chunk_bytes(None)
        client.close()
        lc.close()
