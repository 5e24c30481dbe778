"""NumPy's ``Generator(PCG64)`` streams drawn on a CUDA device against NumPy on the host.

For each method and size: NumPy's own draw on the host, the device draw of the same stream
(``dispatch.streams.device``: median of a few runs, synchronised), the speed-up, and whether
every bit and the generator's state after the draw are NumPy's. Then the Monte Carlo program
of ``benchmarks/workloads/monte_carlo.py`` end to end: its normal draws and pricing on the host
in NumPy, against the draws made on the device with ``dispatch.random`` (the same numbers) and
priced there by CuPy, and the program itself run through ``dispatch``: routed automatically (by
the calibration in the cache), with its draws routed or kept on the host, and forced to CuPy or
torch-cuda.

    python -m benchmarks.random_streams [--quick] [--monte-carlo-only [SIZE ...]] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from typing import Any

import numpy as np

from dispatch.streams import calls, device, kernels

CASES = [  # (method, args before size, kwargs, sizes)
    ("standard_normal", (), {}, (10**6, 10**7, 10**8, 10**9)),
    ("standard_normal", (), {"dtype": np.float32}, (10**6, 10**7, 10**8)),
    ("normal", (1.0, 2.0), {}, (10**7, 10**8)),
    ("random", (), {}, (10**6, 10**8, 10**9)),
    ("random", (), {"dtype": np.float32}, (10**8,)),
    ("uniform", (-1.0, 1.0), {}, (10**8,)),
    ("standard_exponential", (), {}, (10**6, 10**8)),
    ("standard_exponential", (), {"dtype": np.float32}, (10**8,)),
    ("exponential", (2.0,), {}, (10**8,)),
    ("integers", (0, 1000), {}, (10**6, 10**8)),
    ("integers", (0, 2**31 + 1), {"dtype": np.uint32}, (10**8,)),
    ("integers", (0, 100), {"dtype": np.uint8}, (10**8,)),
]


def _sync(cp: Any) -> None:
    cp.cuda.runtime.deviceSynchronize()


def _device_ms(cp: Any, k: Any, name: str, args: tuple, kwargs: dict, seed: int, reps: int) -> tuple[float, Any, Any]:
    times, out, gen = [], None, None
    for _ in range(reps):
        gen = np.random.default_rng(seed)
        plan = calls.plan(name, args, kwargs)
        _sync(cp)
        t = time.perf_counter()
        out = device.draw(gen, plan, k)
        _sync(cp)
        times.append(1e3 * (time.perf_counter() - t))
        if _ is not reps - 1:
            del out
    return statistics.median(times), out, gen


def streams(quick: bool) -> list[str]:
    import cupy as cp

    k = kernels.cupy_kernels()
    rows = ["| method | dtype | draws | NumPy (ms) | device (ms) | speed-up | bits and state as NumPy's |",
            "| --- | --- | ---: | ---: | ---: | ---: | --- |"]
    device.draw(np.random.default_rng(0), calls.plan("standard_normal", (1000,), {}), k)  # compile
    for name, pre, kwargs, sizes in CASES:
        for n in sizes:
            if quick and n > 10**7:
                continue
            args = (*pre, n)
            seed = 20260 + n % 97
            g = np.random.default_rng(seed)
            t = time.perf_counter()
            expected = getattr(g, name)(*args, **kwargs)
            host_ms = 1e3 * (time.perf_counter() - t)
            reps = 5 if n <= 10**8 else 2
            try:
                dev_ms, out, gen = _device_ms(cp, k, name, args, kwargs, seed, reps)
            except Exception as exc:  # reported in the table; the others still run
                rows.append(f"| {name} | {kwargs} | {n:.0e} | {host_ms:.1f} | failed: {exc!r} | | NO |")
                print(rows[-1], flush=True)
                continue
            got = cp.asnumpy(out)
            same = got.dtype == expected.dtype and got.shape == expected.shape
            bits = f"u{got.dtype.itemsize}"
            same = same and bool((got.view(bits) == expected.view(bits)).all())
            same = same and gen.bit_generator.state == g.bit_generator.state
            del out, expected
            cp.get_default_memory_pool().free_all_blocks()
            dtype = np.dtype(kwargs.get("dtype", np.int64 if name == "integers" else np.float64)).name
            label = f"{name}({', '.join(map(str, pre))})" if pre else name
            rows.append(f"| {label} | {dtype} | {n:.0e} | {host_ms:.1f} | {dev_ms:.2f} | {host_ms / dev_ms:.0f}x | "
                        f"{'yes' if same else 'NO'} |")
            print(rows[-1], flush=True)
    return rows


def monte_carlo(size: str = "large", seed: int = 0, by_hand: bool = True) -> list[str]:
    """The workload end to end: draws plus pricing, NumPy on the host against the device: by
    hand (CuPy), and as the program written for NumPy runs through ``dispatch`` (``xp``), under
    automatic routing (a calibration of the machine in the cache) and under forced targets."""

    import cupy as cp

    import dispatch
    from benchmarks.workloads import monte_carlo as mc

    p = mc.SIZES[size]
    shape = (p["n_paths"], p["n_steps"])

    def numpy_run() -> dict:
        z = np.random.default_rng(seed).standard_normal(shape)
        return mc.run(np, z, **mc.MARKET)

    def host_draw_cupy_run() -> dict:  # the draws on the host, copied, priced by CuPy
        z = cp.asarray(np.random.default_rng(seed).standard_normal(shape))
        out = mc.run(cp, z, **mc.MARKET)
        return {k: float(v) for k, v in out.items()}

    def device_draw_cupy_run() -> dict:  # NumPy's stream drawn on the device by dispatch.random
        with dispatch.using("cupy"):
            z = dispatch.random.default_rng(seed).standard_normal(shape)
        out = mc.run(cp, cp.from_dlpack(z), **mc.MARKET)  # the same device memory
        return {k: float(v) for k, v in out.items()}

    rows = [f"| Monte Carlo ({size}: {shape[0]} x {shape[1]} normals) | ms (median of 5) | first run ms | draws on "
            "| same prices |", "| --- | ---: | ---: | --- | --- |"]
    reference = numpy_run()
    for label, fn in (("NumPy on the host", numpy_run), ("host draws copied, CuPy pricing", host_draw_cupy_run),
                      ("device draws (dispatch.random), CuPy pricing", device_draw_cupy_run))[:3 if by_hand else 0]:
        first, median, got = _timed(fn, lambda: _sync(cp))
        rows.append(f"| {label} | {median:.1f} | {first:.1f} | | {'yes' if _same(got, reference) else 'NO'} |")
        print(rows[-1], flush=True)
    # each in a fresh process (its own router, history and start-up), which keeps nothing for the next
    # (DISPATCH_LEARN=0: the modes are one script, whose runs would otherwise start from the last one's)
    env = {**os.environ, "DISPATCH_LEARN": "0"}
    for mode, label in DISPATCH_MODES.items():
        done = subprocess.run([sys.executable, "-m", "benchmarks.random_streams", "--dispatch-mode", mode,
                               "--size", size, "--seed", str(seed)], capture_output=True, text=True, timeout=300,
                              env=env)
        print(done.stderr[-3000:], file=sys.stderr, flush=True)
        try:
            r = json.loads(done.stdout.strip().splitlines()[-1])
        except (IndexError, ValueError):
            rows.append(f"| {label} | failed | | | |")
            print(rows[-1], done.stdout[-2000:], flush=True)
            continue
        draws = "/".join(sorted(set(r["draws_on"]), key=r["draws_on"].index))
        rows.append(f"| {label} | {r['median']:.1f} | {r['first']:.1f} | {draws} | "
                    f"{'yes' if _same(r['out'], reference) else 'NO'} |")
        print(rows[-1], flush=True)
    return rows


# The program as written for NumPy, run through ``dispatch`` (``import dispatch as np``).
DISPATCH_MODES = {
    "auto-host-draws": "dispatch, auto, draws kept on the host",
    "auto": "dispatch, auto (draws routed)",
    "cupy": 'dispatch, using("cupy")',
    "torch-cuda": 'dispatch, using("torch-cuda")',
}


def _same(got: dict, reference: dict) -> bool:
    return all(np.isclose(float(got[k]), float(reference[k]), rtol=1e-9, atol=1e-12) for k in reference)


def _timed(fn: Any, sync: Any) -> tuple[float, float, Any]:
    """The first run's ms, the median of 5 after 2 more (automatic routing settles over the
    first runs: its history, its trials), and the last result."""
    sync()
    t = time.perf_counter()
    fn()
    sync()
    first = 1e3 * (time.perf_counter() - t)
    for _ in range(2):
        fn()
    times = []
    for _ in range(5):
        sync()
        t = time.perf_counter()
        got = fn()
        sync()
        times.append(1e3 * (time.perf_counter() - t))
    return first, statistics.median(times), got


def dispatch_mode(mode: str, size: str, seed: int) -> None:
    """One of ``DISPATCH_MODES`` timed in this process; prints a JSON line (and, on stderr, where
    a traced run's first calls went and why)."""
    import contextlib

    import dispatch
    from benchmarks.workloads import monte_carlo as mc
    from dispatch import random as drandom

    p = mc.SIZES[size]
    shape = (p["n_paths"], p["n_steps"])
    if mode == "auto-host-draws":
        drandom.ROUTED_DRAW_ELEMENTS = 1 << 62  # as before draws were routed
    backend = mode if mode in ("cupy", "torch-cuda") else None
    draws_on: list[str] = []

    def run() -> dict:
        with dispatch.using(backend) if backend else contextlib.nullcontext():
            z = dispatch.random.default_rng(seed).standard_normal(shape)
            draws_on.append(z.target)
            return {k: float(v) for k, v in mc.run(dispatch, z, **mc.MARKET).items()}

    def sync() -> None:
        if "cupy" in sys.modules:
            sys.modules["cupy"].cuda.runtime.deviceSynchronize()

    first, median, out = _timed(run, sync)
    with dispatch.trace() as t:
        run()
    for r in t.records[:10]:
        print(f"  {mode}: {r.op} on {r.target}: {r.reason}", file=sys.stderr)
    from dispatch.routing import router

    history = router.ROUTER.history
    for key, per in history.stats.items():
        if key.op.startswith("random."):
            timed = {name: f"{1e3 * s.seconds:.1f} ms x{s.samples}" for name, s in per.items()}
            print(f"  {mode}: {key.op} {key.bucket}: {timed}", file=sys.stderr)
    print(json.dumps({"first": first, "median": median, "out": out, "draws_on": draws_on}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="sizes up to 1e7 only")
    parser.add_argument("--out", help="write the tables (markdown) to this file")
    parser.add_argument("--skip-monte-carlo", action="store_true")
    parser.add_argument("--monte-carlo-only", nargs="*", metavar="SIZE",
                        help="only the Monte Carlo program, at these sizes (default: large)")
    parser.add_argument("--dispatch-only", action="store_true",
                        help="of the Monte Carlo rows, only the program run through dispatch")
    parser.add_argument("--dispatch-mode", choices=sorted(DISPATCH_MODES), help=argparse.SUPPRESS)
    parser.add_argument("--size", default="large", help=argparse.SUPPRESS)
    parser.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    a = parser.parse_args()
    if a.dispatch_mode:
        dispatch_mode(a.dispatch_mode, a.size, a.seed)
        return
    sizes = a.monte_carlo_only or ["large"]
    rows = streams(a.quick) if a.monte_carlo_only is None else []
    if not a.skip_monte_carlo:
        try:
            for size in sizes:
                rows += ["", *monte_carlo(size, by_hand=not a.dispatch_only)]
        except Exception as exc:  # the streams' table is kept
            rows += ["", f"Monte Carlo failed: {exc!r}"]
    text = "\n".join(rows) + "\n"
    print(text)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
