"""Connecting a cluster and sizing chunks: ``dispatch.use_cluster`` with a scheduler address, a
cluster object or a client; ``DISPATCH_DASK_SCHEDULER`` connected on first use; chunk sizes
from ``set_chunk_bytes`` / ``DISPATCH_DASK_CHUNK_BYTES``, Dask's 128 MiB by default, and from
the connected cluster's measured per-task overhead.

The work is checked to have run on the cluster's workers (its task stream), not only to equal
NumPy's result.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("dask.array")
pytest.importorskip("distributed")

from distributed import LocalCluster, get_task_stream

import dispatch
from dispatch import cluster, targets
from dispatch.base.devices import DASK
from dispatch.routing import calibration

ROOT = Path(__file__).resolve().parent.parent
MiB = 1 << 20
HANG_S = 120  # a bound on a wait: reached only if something hangs


@pytest.fixture(scope="module")
def local_cluster():
    lc = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, memory_limit="1GiB",
                      dashboard_address=None, silence_logs=logging.ERROR)
    yield lc
    lc.close()


@pytest.fixture
def small_chunks(monkeypatch):
    monkeypatch.delenv("DISPATCH_DASK_SCHEDULER", raising=False)
    cluster.set_chunk_bytes(64 << 10)
    yield
    dispatch.use_cluster(None)
    cluster.set_chunk_bytes(None)


def _runs_on(client) -> None:
    """A computation through dispatch, forced into Dask, runs as tasks on ``client``'s workers
    and equals NumPy's."""
    with dispatch.using("dask"):
        x = dispatch.arange(200_000.0)
    assert x.device == DASK and x._engine_array.numblocks[0] > 1
    with get_task_stream(client) as stream:
        total = float(dispatch.sum(dispatch.sqrt(x)))
    assert total == pytest.approx(float(np.sum(np.sqrt(np.arange(200_000.0)))), rel=1e-12)
    assert len(stream.data) >= x._engine_array.numblocks[0]


def test_use_cluster_with_a_scheduler_address(local_cluster, small_chunks):
    address = local_cluster.scheduler_address
    client = dispatch.use_cluster(address)
    assert cluster.connected() and cluster.address() == address and cluster.client() is client
    _runs_on(client)
    dispatch.use_cluster(None)
    assert not cluster.connected() and client.status == "closed"  # a client made here is closed here


def test_use_cluster_with_a_cluster_object_or_a_client(local_cluster, small_chunks):
    client = dispatch.use_cluster(local_cluster)
    assert cluster.address() == local_cluster.scheduler_address
    _runs_on(client)
    from distributed import Client

    mine = Client(local_cluster, set_as_default=False)
    try:
        assert dispatch.use_cluster(mine) is mine and client.status == "closed"
        _runs_on(mine)
        dispatch.use_cluster(None)
        assert mine.status == "running"  # the user's own client is left open
    finally:
        mine.close()


def test_the_environment_variable_connects_on_first_use(local_cluster, small_chunks, monkeypatch):
    """Probing the dask target connects to the scheduler the variable names (bounded: the
    connection, made inside the probe, must not wait on the probe's own lock)."""
    monkeypatch.setenv("DISPATCH_DASK_SCHEDULER", local_cluster.scheduler_address)
    targets.reset("dask")
    assert cluster.connected()  # named, not yet connected
    probed: list = []
    thread = threading.Thread(target=lambda: probed.append(targets.probe("dask")), daemon=True)
    thread.start()
    thread.join(HANG_S)
    assert not thread.is_alive(), "probing the dask target hung while connecting"
    assert probed[0] is not None, targets.unavailable().get("dask")
    client = cluster.client()
    assert client is not None and cluster.address() == local_cluster.scheduler_address
    _runs_on(client)


# ---- chunk sizes ------------------------------------------------------------------------------------------


def test_default_chunks_are_dasks_128_mib(monkeypatch):
    monkeypatch.delenv("DISPATCH_DASK_SCHEDULER", raising=False)
    monkeypatch.setattr(cluster, "_client", None)
    assert cluster.chunk_bytes() == 128 * MiB
    with dispatch.using("dask"):
        x = dispatch.zeros((6000, 6000))  # 275 MB, lazy: never allocated
    sizes = [np.prod(shape) * 8 for shape in _block_shapes(x._engine_array)]
    assert len(sizes) > 1 and max(sizes) <= 128 * MiB and max(sizes) > 32 * MiB


def test_set_chunk_bytes_sizes_every_new_array():
    cluster.set_chunk_bytes(MiB)
    try:
        with dispatch.using("dask"):
            x = dispatch.ones((1000, 1000))
            r = dispatch.random.default_rng(3).standard_normal(1_000_000)
        for a in (x, r):
            sizes = [np.prod(shape) * 8 for shape in _block_shapes(a._engine_array)]
            assert max(sizes) <= MiB and len(sizes) >= 8
        np.testing.assert_array_equal(np.asarray(r), np.random.default_rng(3).standard_normal(1_000_000))
        with pytest.raises(ValueError, match="expected a whole number of bytes >= 1"):
            cluster.set_chunk_bytes(0)
    finally:
        cluster.set_chunk_bytes(None)


def test_chunk_size_from_a_clusters_task_overhead():
    """20 times the per-task overhead of element-wise work at the given bandwidth, in MiB,
    within 32 MiB and 1 GiB."""
    assert calibration.dask_chunk_bytes(None, bandwidth=5e9, overhead=1e-3) == (10**8 >> 20) * MiB
    assert calibration.dask_chunk_bytes(None, bandwidth=5e9, overhead=1e-6) == 32 * MiB
    assert calibration.dask_chunk_bytes(None, bandwidth=5e9, overhead=1.0) == 1024 * MiB


def test_a_connected_cluster_gets_the_chunk_size_measured_on_it(local_cluster, monkeypatch):
    monkeypatch.delenv("DISPATCH_DASK_SCHEDULER", raising=False)
    measured = []

    def overhead(client, tasks=200):
        measured.append(client.scheduler.address)
        return 2e-3  # seconds per task: 20 x 2 ms at 5 GB/s is 190 MiB

    monkeypatch.setattr(calibration, "dask_task_overhead", overhead)
    monkeypatch.setattr(calibration, "load", lambda: None)  # the default bandwidth, 5 GB/s
    cluster.set_chunk_bytes(None)
    cluster._measured_chunk.pop(local_cluster.scheduler_address, None)
    dispatch.use_cluster(local_cluster)
    try:
        assert cluster.chunk_bytes() == (2 * 10**8 >> 20) * MiB
        assert cluster.chunk_bytes() == (2 * 10**8 >> 20) * MiB
        assert measured == [local_cluster.scheduler_address]  # measured once per scheduler
    finally:
        dispatch.use_cluster(None)
        cluster._measured_chunk.pop(local_cluster.scheduler_address, None)
    assert cluster.chunk_bytes() == 128 * MiB


def test_settings_from_the_environment():
    code = """
        import json
        from dispatch import cluster
        print(json.dumps([cluster.chunk_bytes(), cluster.memory_fraction()]))
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith("DISPATCH_")}
    env.update(PYTHONPATH=str(ROOT), DISPATCH_DASK_CHUNK_BYTES=str(3 * MiB), DISPATCH_MEMORY_FRACTION="0.25")
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=env,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [3 * MiB, 0.25]


def _block_shapes(darr) -> list[tuple[int, ...]]:
    import itertools

    return list(itertools.product(*darr.chunks))
