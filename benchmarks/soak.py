"""Soak: a few minutes of mixed routed work in threads and processes, with calibration saves,
history writes and forks in between; every result against NumPy's, every wait bounded, and the
resident memory followed.

- ``--threads`` threads of this process run random calls (element-wise, reductions, scans,
  sorts, products, FFTs) on shared arrays (made once, read by all) and private ones (made per
  call), at sizes on both sides of the routing floors, so calls go to NumPy and to torch-cpu;
  every result is checked against NumPy's with dtype-aware tolerances.
- Each thread now and then saves a calibration and the router's history to the cache folder
  and reads them back (whole files, the same contents).
- The main thread forks a child every ``--fork-every`` seconds, while the threads run; each
  child computes a routed 2M-element sum and a product and checks them against NumPy's.
- ``--procs`` processes (spawn) run the same mixed work for the whole time.
- Resident memory (RSS) of this process is sampled each second: the report gives it at the
  start (after a warm-up), a quarter of the way (caches and pools filled), its peak and at the end.

Every join has a timeout: a thread or child that does not end in time counts as hung. The exit
status is 1 if any result differed, anything hung or failed, or RSS grew by more than
``--rss-slack`` MiB from a quarter of the way to the end.

    python -m benchmarks.soak [--seconds 180] [--threads 4] [--procs 2] [--out soak.json]

Benchmarks report; this one is not part of the test suite.
"""

from __future__ import annotations

import os

# OpenBLAS's fork handler stops its thread pool in the parent: a fork while another thread is in a
# multi-threaded NumPy product leaves that product waiting for ever (plain NumPy, without dispatch,
# hangs the same way on this machine). One BLAS thread keeps that out of what is measured here.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import json
import multiprocessing
import random
import sys
import tempfile
import threading
import time
import traceback
from pathlib import Path
from typing import Any

import numpy

MiB = 1 << 20
SIZES = (1_000, 30_000, 300_000, 2_000_000)  # under and over the floors of each complexity
OPS = ("add", "exp", "sum", "mean", "cumsum", "sort", "matmul", "fft", "std", "where")


def rss_bytes() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _check(got: Any, want: numpy.ndarray, what: str) -> str | None:
    got = numpy.asarray(got)
    if got.shape != want.shape or got.dtype != want.dtype:
        return f"{what}: {got.dtype}{got.shape} != {want.dtype}{want.shape}"
    rtol = 1e-4 if want.dtype == numpy.float32 else 1e-9
    if not numpy.allclose(got, want, rtol=rtol, atol=rtol * max(1.0, float(numpy.abs(want).max(initial=0)))):
        return f"{what}: values differ"
    return None


def one_call(rng: random.Random, shared: dict[int, numpy.ndarray]) -> str | None:
    """A random routed call against NumPy's; the mismatch, or ``None``."""
    import dispatch

    op, n = rng.choice(OPS), rng.choice(SIZES)
    host = shared[n] if rng.random() < 0.5 else numpy.random.default_rng(rng.randrange(1 << 30)).random(n)
    if rng.random() < 0.2:
        host = host.astype(numpy.float32)
    x = dispatch.asarray(host)
    what = f"{op} of {n} {host.dtype}"
    if op == "add":
        return _check(x + x * 2, host + host * 2, what)
    if op == "exp":
        return _check(dispatch.exp(x), numpy.exp(host), what)
    if op == "sum":
        return _check(dispatch.sum(x), numpy.sum(host), what)
    if op == "mean":
        return _check(x.mean(), host.mean(), what)
    if op == "std":
        return _check(dispatch.std(x), numpy.std(host), what)
    if op == "cumsum":
        return _check(dispatch.cumsum(x), numpy.cumsum(host), what)
    if op == "sort":
        return _check(dispatch.sort(x), numpy.sort(host), what)
    if op == "where":
        return _check(dispatch.where(x > 0.5, x, -x), numpy.where(host > 0.5, host, -host), what)
    if op == "fft":
        return _check(dispatch.fft.rfft(x), numpy.fft.rfft(host), what)
    side = max(2, int(n ** 0.5) // 4)  # matmul: a square of about n / 16 elements
    a, b = host[: side * side].reshape(side, side), host[-side * side:].reshape(side, side)
    return _check(dispatch.asarray(a) @ dispatch.asarray(b), a @ b, f"matmul of {side} x {side} {host.dtype}")


def _calibration() -> Any:
    from dispatch.routing import calibration

    curve = [[1_000, 2e-6], [1_000_000, 1e-3]]
    return calibration.Calibration(fingerprint="soak", machine={"cpu": "soak"}, targets={
        "numpy": {"device": "cpu", "threads": 1, "call_overhead_s": 1e-6, "memory_bandwidth": 1e10,
                  "ops": {"float64": {"add": curve, "sum": curve}}}})


def save_and_read(folder: Path, rng: random.Random) -> str | None:
    """A calibration and the router's history, saved to ``folder`` and read back."""
    from dispatch.routing import calibration, router
    from dispatch.routing.history import History

    cal = _calibration()
    cal.seconds = rng.random()
    path = cal.save(folder / "calibration-soak.json")
    back = calibration.load(path)  # another thread's save may have landed meanwhile: a whole file still
    if back.fingerprint != "soak" or back.targets != cal.targets:
        return "a calibration read back differs"
    history = folder / "history.json"
    router.history.save(history)
    History().load(history)
    return None


def work(seconds: float, seed: int, folder: Path, shared: dict[int, numpy.ndarray], out: dict) -> None:
    rng, calls, bad, saves = random.Random(seed), 0, [], 0
    deadline = time.monotonic() + seconds
    try:
        while time.monotonic() < deadline:
            problem = one_call(rng, shared)
            calls += 1
            if problem:
                bad.append(problem)
            if calls % 25 == 0:
                problem = save_and_read(folder, rng)
                saves += 1
                if problem:
                    bad.append(problem)
    except Exception:
        bad.append(traceback.format_exc(limit=5))
    out.update(calls=calls, saves=saves, bad=bad[:20], mismatches=len(bad))


def _forked(queue: Any, shared: dict[int, numpy.ndarray]) -> None:
    import faulthandler

    import dispatch

    faulthandler.dump_traceback_later(45, exit=True)  # a hung child says where, then ends

    host = shared[2_000_000]
    problems = [_check(dispatch.sum(dispatch.asarray(host)), numpy.sum(host), "sum in a forked child"),
                one_call(random.Random(os.getpid()), shared)]
    queue.put([p for p in problems if p])


def _process(seconds: float, seed: int, folder: str, queue: Any) -> None:
    numpy_rng = numpy.random.default_rng(seed)
    shared = {n: numpy_rng.random(n) for n in SIZES}
    out: dict = {}
    work(seconds, seed, Path(folder), shared, out)
    out["rss_end"] = rss_bytes()
    queue.put(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=180.0)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--procs", type=int, default=2)
    parser.add_argument("--fork-every", type=float, default=5.0)
    parser.add_argument("--rss-slack", type=float, default=100.0, help="MiB RSS may grow, a quarter in to the end")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    folder = Path(tempfile.mkdtemp(prefix="dispatch-soak-"))
    os.environ["DISPATCH_CACHE_DIR"] = str(folder)  # the user's own cache is left alone
    import dispatch  # noqa: F401 - after the cache folder is set

    numpy_rng = numpy.random.default_rng(0)
    shared = {n: numpy_rng.random(n) for n in SIZES}
    warm: dict = {}
    work(10.0, 0, folder, shared, warm)  # torch's pools, the first calls' kernels, the router's tables
    rss_start = rss_bytes()
    start = time.monotonic()

    spawn = multiprocessing.get_context("spawn")
    queue = spawn.Queue()
    procs = [spawn.Process(target=_process, args=(args.seconds, 100 + i, str(folder), queue), daemon=True)
             for i in range(args.procs)]
    for p in procs:
        p.start()
    results = [{} for _ in range(args.threads)]
    threads = [threading.Thread(target=work, args=(args.seconds, 1 + i, folder, shared, results[i]), daemon=True)
               for i in range(args.threads)]
    for t in threads:
        t.start()

    fork = multiprocessing.get_context("fork")
    forks = {"made": 0, "hung": 0, "failed": 0, "bad": []}
    rss_peak, rss_quarter, next_fork = rss_start, None, start
    while time.monotonic() - start < args.seconds:
        time.sleep(1.0)
        rss_peak = max(rss_peak, rss_bytes())
        if rss_quarter is None and time.monotonic() - start >= args.seconds / 4:
            rss_quarter = rss_bytes()
        if time.monotonic() >= next_fork:
            next_fork += args.fork_every
            child_queue = fork.Queue()
            child = fork.Process(target=_forked, args=(child_queue, shared), daemon=True)
            child.start()
            child.join(60)
            forks["made"] += 1
            if child.is_alive():
                child.kill()
                forks["hung"] += 1
            elif child.exitcode != 0:
                forks["failed"] += 1
            else:
                forks["bad"] += child_queue.get(timeout=10)
            print(f"soak: {time.monotonic() - start:.0f} s, fork {forks['made']}: exit {child.exitcode}, "
                  f"RSS {rss_bytes() / MiB:.0f} MiB", file=sys.stderr, flush=True)
    hung_threads = 0
    for t in threads:
        t.join(120)
        hung_threads += t.is_alive()
    children = []
    for _ in procs:
        try:
            children.append(queue.get(timeout=120))
        except Exception:
            children.append({"hung": True})
    for p in procs:
        p.join(30)
        if p.is_alive():
            p.kill()
    rss_end = rss_bytes()
    elapsed = time.monotonic() - start

    mismatches = sum(r.get("mismatches", 0) for r in results + children) + len(forks["bad"])
    hung = hung_threads + forks["hung"] + sum(1 for c in children if c.get("hung"))
    report = {
        "seconds": round(elapsed, 1), "threads": args.threads, "processes": args.procs, "cores": os.cpu_count(),
        "calls": {"threads": sum(r.get("calls", 0) for r in results),
                  "processes": sum(c.get("calls", 0) for c in children)},
        "saves": sum(r.get("saves", 0) for r in results + children),
        "forks": {k: v for k, v in forks.items() if k != "bad"},
        "mismatches": mismatches, "hung": hung,
        "examples": [b for r in results + children for b in r.get("bad", [])][:5] + forks["bad"][:5],
        "rss_mib": {"start": round(rss_start / MiB, 1), "quarter": round((rss_quarter or rss_start) / MiB, 1),
                    "peak": round(rss_peak / MiB, 1),
                    "end": round(rss_end / MiB, 1),
                    "processes_end": [round(c.get("rss_end", 0) / MiB, 1) for c in children]},
    }
    grew = (rss_end - (rss_quarter or rss_start)) / MiB
    ok = not mismatches and not hung and not forks["failed"] and grew <= args.rss_slack
    report["ok"] = ok
    print(json.dumps(report, indent=1))
    if args.out:
        args.out.write_text(json.dumps(report, indent=1))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
