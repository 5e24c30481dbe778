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
import statistics
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


def monte_carlo(size: str = "large", seed: int = 0) -> list[str]:
    """The workload end to end: draws plus pricing, NumPy on the host against the device: by
    hand (CuPy), and as the program written for NumPy runs through ``dispatch`` (``xp``), under
    automatic routing (a calibration of the machine in the cache) and under forced targets."""
    import contextlib

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

    where: dict[str, str] = {}

    def through_dispatch(label: str, backend: str | None, routed_draws: bool = True) -> Any:
        def run() -> dict:  # the program as written for NumPy, with ``import dispatch as np``
            from dispatch import random as drandom

            floor = drandom.ROUTED_DRAW_ELEMENTS
            drandom.ROUTED_DRAW_ELEMENTS = floor if routed_draws else 1 << 62  # as before draws were routed
            try:
                with dispatch.using(backend) if backend else contextlib.nullcontext():
                    z = dispatch.random.default_rng(seed).standard_normal(shape)
                    out = {k: float(v) for k, v in mc.run(dispatch, z, **mc.MARKET).items()}
            finally:
                drandom.ROUTED_DRAW_ELEMENTS = floor
            where[label] = z.target
            return out

        return run

    rows = [f"| Monte Carlo ({size}: {shape[0]} x {shape[1]} normals) | ms (median of 5) | first run ms | draws on "
            "| same prices |", "| --- | ---: | ---: | --- | --- |"]
    reference = numpy_run()
    runs = [("NumPy on the host", numpy_run), ("host draws copied, CuPy pricing", host_draw_cupy_run),
            ("device draws (dispatch.random), CuPy pricing", device_draw_cupy_run)]
    for label, backend, routed in (("dispatch, auto, draws kept on the host", None, False),
                                   ("dispatch, auto (draws routed)", None, True),
                                   ('dispatch, using("cupy")', "cupy", True),
                                   ('dispatch, using("torch-cuda")', "torch-cuda", True)):
        runs.append((label, through_dispatch(label, backend, routed)))
    for label, fn in runs:
        _sync(cp)
        t = time.perf_counter()
        fn()
        _sync(cp)
        first = 1e3 * (time.perf_counter() - t)
        for _ in range(2):  # automatic routing settles over the first runs (its history, trials)
            fn()
        times = []
        for _ in range(5):
            _sync(cp)
            t = time.perf_counter()
            got = fn()
            _sync(cp)
            times.append(1e3 * (time.perf_counter() - t))
        same = all(np.isclose(float(got[k]), float(reference[k]), rtol=1e-9, atol=1e-12) for k in reference)
        rows.append(f"| {label} | {statistics.median(times):.1f} | {first:.1f} | {where.get(label, '')} | "
                    f"{'yes' if same else 'NO'} |")
        print(rows[-1], flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="sizes up to 1e7 only")
    parser.add_argument("--out", help="write the tables (markdown) to this file")
    parser.add_argument("--skip-monte-carlo", action="store_true")
    parser.add_argument("--monte-carlo-only", nargs="*", metavar="SIZE",
                        help="only the Monte Carlo program, at these sizes (default: large)")
    a = parser.parse_args()
    sizes = a.monte_carlo_only or ["large"]
    rows = streams(a.quick) if a.monte_carlo_only is None else []
    if not a.skip_monte_carlo:
        try:
            for size in sizes:
                rows += ["", *monte_carlo(size)]
        except Exception as exc:  # the streams' table is kept
            rows += ["", f"Monte Carlo failed: {exc!r}"]
    text = "\n".join(rows) + "\n"
    print(text)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
