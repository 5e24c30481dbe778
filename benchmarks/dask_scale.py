"""Scale-out with Dask: (a) out of core on a CPU cluster, (b) several GPUs against one GPU and
the host CPU.

(a) A ``LocalCluster`` sized to the host and the chunk size (``cluster.local_cluster_options``:
    workers, threads and memory limits such that every thread's chunks fit its worker with room
    to spare), whose workers may hold a third of the data (memory limit per worker):
    a random matrix drawn chunk by chunk through ``dispatch.random`` (NumPy's stream), kept in
    the cluster (it spills to disk), then a reduction (sum) and a matmul (``x.T @ x``), checked
    against the same numbers streamed through NumPy one chunk at a time on the client (which
    never holds the matrix either).
(b) A ``dask-cuda`` ``LocalCUDACluster`` (one worker per GPU) with CuPy chunks: a large matmul,
    a reduction and the k largest values, each timed through dispatch on the Dask-held data and
    compared, as time ratios, with CuPy on one GPU and NumPy on the host. Sorting: Dask has no
    distributed sort, so the dask target refuses ``sort`` (the call falls back to NumPy on the
    host); what Dask offers instead is ``topk``, timed here against NumPy's and CuPy's
    ``partition``. Skipped, with the reason, where dask-cuda, CuPy or GPUs are missing.

    python -m benchmarks.dask_scale [--quick] [--out dask.json] [--skip-gpu] [--skip-cpu]

Benchmarks report; they assert nothing but the correctness checks printed with the figures.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

MiB = 1 << 20


def _wait(client: Any, arr: Any) -> None:
    from distributed import wait

    with client.as_current():
        wait(arr)


def _spilled(client: Any) -> int:
    def spilled(dask_worker: Any) -> int:
        try:
            return int(dask_worker.data.spilled_total.memory)
        except AttributeError:
            return 0

    return sum(client.run(spilled).values())


# ---- (a) out of core on CPU workers ---------------------------------------------------------------------


def out_of_core(quick: bool) -> dict[str, Any]:
    from distributed import Client, LocalCluster

    import dispatch
    from dispatch import cluster
    from dispatch.targets._dask_create import advanced

    chunk = (8 if quick else 64) * MiB
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    host = cluster.host_memory_bytes() or 8 << 30
    # Room for a worker per core (its own memory and its thread's chunks), within an eighth of the
    # host and 8 GiB: the data, 3x that, spills to disk in minutes on any host.
    per_core = cluster.WORKER_BASE_BYTES + cluster.TASK_CHUNKS * chunk / cluster.WORKING_SHARE
    sizes = cluster.local_cluster_options(chunk, int(min(cores * per_core, host // 8, 8 << 30)))
    workers, threads, limit = sizes["n_workers"], sizes["threads_per_worker"], sizes["memory_limit"]
    cols = 64
    rows = 3 * workers * limit // (8 * cols)  # the data is 3x what the workers may hold
    lc = LocalCluster(**sizes, processes=True, dashboard_address=None, silence_logs=logging.ERROR)
    client = Client(lc, set_as_default=False)
    cluster.set_chunk_bytes(chunk)
    dispatch.use_cluster(client)
    try:
        start = time.perf_counter()
        x = dispatch.random.default_rng(2026).random((rows, cols))  # NumPy's stream, chunk by chunk
        x = x.persist()
        _wait(client, x._engine_array)
        made_s = time.perf_counter() - start
        spilled = _spilled(client)
        start = time.perf_counter()
        total = float(x.sum())
        sum_s = time.perf_counter() - start
        start = time.perf_counter()
        gram = np.asarray(x.T @ x)
        matmul_s = time.perf_counter() - start
        # the reference: the same numbers, one chunk at a time, on the client
        ref_total, ref_gram, offset = 0.0, np.zeros((cols, cols)), 0
        state = np.random.default_rng(2026).bit_generator.state
        step = max(1, x._engine_array.chunks[0][0])
        for lo in range(0, rows, step):
            n = min(step, rows - lo)
            bit_generator = np.random.PCG64()
            bit_generator.state = advanced(state, offset)
            block = np.random.Generator(bit_generator).random((n, cols))
            ref_total += block.sum()
            ref_gram += block.T @ block
            offset += n * cols
        correct = math.isclose(total, ref_total, rel_tol=1e-9) and bool(np.allclose(gram, ref_gram, rtol=1e-9))
    finally:
        dispatch.use_cluster(None)
        cluster.set_chunk_bytes(None)
        client.close()
        lc.close()
    data = rows * cols * 8
    return {
        "cores": cores, "host_memory_bytes": host, "workers": workers, "threads_per_worker": threads,
        "memory_limit_bytes": limit, "data_bytes": data,
        "data_over_limit": data / (workers * limit), "chunk_bytes": chunk, "spilled_bytes": spilled,
        "make_s": made_s, "sum_s": sum_s, "matmul_s": matmul_s, "correct": correct,
    }


# ---- (b) GPUs ------------------------------------------------------------------------------------------


def _gpu_missing() -> str | None:
    for module in ("cupy", "dask_cuda"):
        try:
            __import__(module)
        except Exception as exc:
            return f"{module} cannot be imported: {type(exc).__name__}: {exc}"
    import cupy

    try:
        if cupy.cuda.runtime.getDeviceCount() < 1:
            return "no CUDA device"
    except Exception as exc:
        return f"no usable CUDA device: {exc}"
    return None


def _same(block: Any) -> Any:
    return block


def _timed(run: Any, sync: Any, repeat: int = 3) -> float:
    run()
    sync()
    best = math.inf
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        sync()
        best = min(best, time.perf_counter() - start)
    return best


def gpus(quick: bool) -> dict[str, Any]:
    missing = _gpu_missing()
    if missing is not None:
        return {"skipped": missing}
    import cupy
    import dask.array as da
    from dask_cuda import LocalCUDACluster
    from distributed import Client

    import dispatch
    from dispatch import cluster

    ngpu = cupy.cuda.runtime.getDeviceCount()
    n = 4096 if quick else 16384  # matmul side: 2 GiB per float64 matrix
    m = (1 << 24) if quick else (1 << 30)  # reduction and top-k elements: 8 GiB
    k = 1000
    lc = LocalCUDACluster(dashboard_address=None, silence_logs=logging.ERROR)
    client = Client(lc, set_as_default=False)
    cluster.set_chunk_bytes((64 if quick else 512) * MiB)
    dispatch.use_cluster(client)
    out: dict[str, Any] = {"gpus": ngpu, "matmul_n": n, "elements": m, "k": k, "ops": {}}
    try:
        side = int(math.sqrt(cluster.chunk_bytes() / 8))
        a = da.random.default_rng(cupy.random.default_rng(1)).random((n, n), chunks=(side, side))
        b = da.random.default_rng(cupy.random.default_rng(2)).random((n, n), chunks=(side, side))
        v = da.random.default_rng(cupy.random.default_rng(3)).random(m, chunks=cluster.chunk_bytes() // 8)
        a, b, v = client.persist([a, b, v])
        _wait(client, [a, b, v])
        A, B, V = (dispatch.asarray(x) for x in (a, b, v))  # held by Dask: the calls stay there
        assert A.device == dispatch.Device("dask")

        def on_dask(make: Any) -> tuple[float, Any]:
            held: dict[str, Any] = {}

            def run() -> None:
                # Dask names a result by its graph: the same call twice would find the first
                # result held and compute nothing. A pass-through step named per run avoids that.
                x = make()._engine_array
                held["runs"] = held.get("runs", 0) + 1
                held["r"] = client.persist(x.map_blocks(_same, dtype=x.dtype, token=f"timed-{held['runs']}"))

            seconds = _timed(run, lambda: _wait(client, held["r"]))
            return seconds, held["r"]

        ops = out["ops"]
        sync = cupy.cuda.get_current_stream().synchronize
        ops["matmul"] = _matmul(client, on_dask, A, B, a, b, sync)
        ops["sum"], ops["sort"], ops["topk"] = _vector_ops(client, on_dask, V, v, k, sync)
        for row in ops.values():
            if "dask_s" in row:
                row["speedup_vs_one_gpu"] = row["cupy_s"] / row["dask_s"]
                row["speedup_vs_cpu"] = row["numpy_s"] / row["dask_s"]
    finally:
        dispatch.use_cluster(None)
        cluster.set_chunk_bytes(None)
        client.close()
        lc.close()
    return out


def _matmul(client: Any, on_dask: Any, A: Any, B: Any, a: Any, b: Any, sync: Any) -> dict[str, Any]:
    import cupy

    dask_s, r = on_dask(lambda: A @ B)
    ca, cb = cupy.asarray(a.compute(scheduler=client)), cupy.asarray(b.compute(scheduler=client))
    cupy_s = _timed(lambda: ca @ cb, sync)
    ha, hb = cupy.asnumpy(ca), cupy.asnumpy(cb)
    numpy_s = _timed(lambda: ha @ hb, lambda: None, repeat=1)
    check = cupy.asnumpy(r[:64, :64].compute(scheduler=client))
    return {"dask_s": dask_s, "cupy_s": cupy_s, "numpy_s": numpy_s,
            "correct": bool(np.allclose(check, ha[:64] @ hb[:, :64], rtol=1e-9))}


def _vector_ops(client: Any, on_dask: Any, V: Any, v: Any, k: int, sync: Any) -> tuple[dict, dict, dict]:
    import cupy
    import dask.array as da

    import dispatch

    dask_s, r = on_dask(lambda: V.sum())
    cv = cupy.asarray(v.compute(scheduler=client))
    cupy_s = _timed(lambda: cv.sum(), sync)
    hv = cupy.asnumpy(cv)
    numpy_s = _timed(lambda: hv.sum(), lambda: None)
    total = float(cupy.asnumpy(r.compute(scheduler=client)))
    reduction = {"dask_s": dask_s, "cupy_s": cupy_s, "numpy_s": numpy_s,
                 "correct": math.isclose(total, float(hv.sum()), rel_tol=1e-9)}
    # sorting: refused by the dask target; top-k is what Dask offers
    with dispatch.trace() as t:
        dispatch.sort(dispatch.asarray(v[:1000]))
    sort = {"refused": [why for (_, why) in t.fallbacks] or ["(not refused)"]}
    dask_s, r = on_dask(lambda: dispatch.asarray(da.topk(V._engine_array, k)))
    cupy_s = _timed(lambda: cupy.sort(cupy.partition(cv, cv.size - k)[-k:])[::-1], sync)
    want = np.sort(np.partition(hv, hv.size - k)[-k:])[::-1]
    numpy_s = _timed(lambda: np.sort(np.partition(hv, hv.size - k)[-k:])[::-1], lambda: None)
    top = cupy.asnumpy(r.compute(scheduler=client))
    topk = {"dask_s": dask_s, "cupy_s": cupy_s, "numpy_s": numpy_s, "correct": bool(np.array_equal(top, want))}
    return reduction, sort, topk


# ---- report ------------------------------------------------------------------------------------------------


def summary(result: dict[str, Any]) -> list[str]:
    lines = []
    ooc = result.get("out_of_core")
    if ooc:
        lines.append(
            f"out-of-core {ooc['data_bytes'] / MiB:.0f} MiB = {ooc['data_over_limit']:.1f}x the workers' "
            f"{ooc['workers']} x {ooc['memory_limit_bytes'] / MiB:.0f} MiB ({ooc['threads_per_worker']} threads each; "
            f"{ooc['cores']} cores, {ooc['host_memory_bytes'] / 2**30:.0f} GiB), "
            f"chunks {ooc['chunk_bytes'] / MiB:.0f} MiB, "
            f"spilled {ooc['spilled_bytes'] / MiB:.0f} MiB: "
            f"made {ooc['make_s']:.2f} s, sum {ooc['sum_s']:.2f} s, x.T@x {ooc['matmul_s']:.2f} s, "
            f"{'correct' if ooc['correct'] else 'WRONG'}")
    gpu = result.get("gpu")
    if gpu and "skipped" in gpu:
        lines.append(f"gpu skipped: {gpu['skipped']}")
    elif gpu:
        for name, row in gpu["ops"].items():
            if "refused" in row:
                lines.append(f"{name}: refused by the dask target: {'; '.join(row['refused'])}")
                continue
            lines.append(f"{name} on {gpu['gpus']} GPUs: {row['dask_s'] * 1e3:.1f} ms; "
                         f"{row['speedup_vs_one_gpu']:.2f}x one GPU (CuPy {row['cupy_s'] * 1e3:.1f} ms), "
                         f"{row['speedup_vs_cpu']:.1f}x NumPy ({row['numpy_s'] * 1e3:.1f} ms), "
                         f"{'correct' if row['correct'] else 'WRONG'}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (minutes become seconds)")
    parser.add_argument("--out", type=Path, help="write the figures as JSON here")
    parser.add_argument("--skip-gpu", action="store_true")
    parser.add_argument("--skip-cpu", action="store_true")
    args = parser.parse_args(argv)
    result: dict[str, Any] = {"quick": args.quick}
    if not args.skip_cpu:
        result["out_of_core"] = out_of_core(args.quick)
    if not args.skip_gpu:
        result["gpu"] = gpus(args.quick)
    result["summary"] = summary(result)
    print("\n".join(result["summary"]))
    if args.out:
        args.out.write_text(json.dumps(result, indent=1))
    ok = all(r.get("correct", True) for r in [result.get("out_of_core") or {}, *(
        (result.get("gpu") or {}).get("ops", {}).values())])
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
