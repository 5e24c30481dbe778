"""Per-call overhead of dispatch over plain NumPy on small arrays, and the router's decision
cost on a cache hit. Both sides are timed in one run, interleaved, and medians are compared.

    python -m benchmarks.overhead [--out results.json] [--repeat 31]

On a machine with CuPy and torch-cuda it also times calls on data a GPU holds (``DEVICE_CASES``).
Where the compiled fast path is built (``dispatch/arrays/_fastpath.c``), the host calls are timed a
second time through the Python path it stands in for.

Targets (the issues'): median overhead at most 1.5 µs per call on 100-element arrays (a bare
Python ``__array_ufunc__`` wrapper costs about 0.8 µs); a decision cache hit under 1 µs.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import platform
import statistics
import timeit

import numpy

import dispatch
from dispatch.arrays import _compiled

CASES = (
    ("a + b", "na + nb"),
    ("a * b", "na * nb"),
    ("a.sum()", "na.sum()"),
    ("np.sum(a)", "numpy.sum(na)"),
    ("a[3]", "na[3]"),
    ("a[10:20]", "na[10:20]"),
    ("np.mean(a)", "numpy.mean(na)"),
    ("numpy.mean(a)", "numpy.mean(na)"),
    ("np.exp(a)", "numpy.exp(na)"),
    ("np.sum(m, axis=1)", "numpy.sum(nm, axis=1)"),
    ("np.concatenate([a, b])", "numpy.concatenate([na, nb])"),
    ("2.0 * a", "2.0 * na"),
    ("a[1:-1] += b[1:-1]", "na[1:-1] += nb[1:-1]"),
    ("np.abs(a)", "numpy.abs(na)"),
    ("np.where(a > b, a, b)", "numpy.where(na > nb, na, nb)"),
    ("a.max(axis=0)", "na.max(axis=0)"),
    ("np.asarray(na)", "numpy.asarray(na)"),
    ("np.diagonal(m)", "numpy.diagonal(nm)"),
    ("m.T @ m", "nm.T @ nm"),
    ("np.linalg.eigh(g)", "numpy.linalg.eigh(ng)"),
)


def _per_call(stmt: str, env: dict, number: int, repeat: int) -> list[float]:
    return [t / number for t in timeit.repeat(stmt, globals=env, number=number, repeat=repeat)]


def _side_by_side(stmt: str, ref: str, env: dict, number: int, repeat: int) -> tuple[float, float]:
    """Median seconds per call of ``stmt`` and of ``ref``, timed in turns so drift hits both alike."""
    ours, theirs = [], []
    for _ in range(repeat):
        ours += _per_call(stmt, env, number, 1)
        theirs += _per_call(ref, env, number, 1)
    return statistics.median(ours), statistics.median(theirs)


def measure_calls(size: int = 100, repeat: int = 31, number: int = 20_000) -> list[dict]:
    env = {"np": dispatch, "numpy": numpy, "a": dispatch.arange(float(size)), "b": dispatch.ones(size),
           "na": numpy.arange(float(size)), "nb": numpy.ones(size),
           "m": dispatch.ones((10, size // 10)), "nm": numpy.ones((10, size // 10)),
           "g": dispatch.eye(10) * 2.0, "ng": numpy.eye(10) * 2.0}
    rows = []
    for stmt, ref in CASES:
        mine, base = _side_by_side(stmt, ref, env, number, repeat)
        rows.append({"call": stmt, "numpy_us": base * 1e6, "dispatch_us": mine * 1e6,
                     "overhead_us": (mine - base) * 1e6})
    return rows


def measure_decision(repeat: int = 31, number: int = 50_000) -> dict:
    """One ``router.decide`` on a warm cache, and building the call's input summary."""
    from dispatch.arrays._call import Inputs, _collect
    from dispatch.base.ops import op_named
    from dispatch.routing import router

    op = op_named("sum")
    x = dispatch.ones(1_000_000)
    args = (x,)
    inputs = Inputs(_collect(args, {}))
    router.decide(op, inputs, args, {})
    env = {"router": router, "op": op, "inputs": inputs, "args": args, "Inputs": Inputs, "_collect": _collect}
    hit = statistics.median(_per_call("router.decide(op, inputs, args, {})", env, number, repeat))
    summary = statistics.median(_per_call("Inputs(_collect(args, {}))", env, number, repeat))
    return {"cache_hit_us": hit * 1e6, "input_summary_us": summary * 1e6, **_routed_overhead(repeat, number // 5)}


def _routed_overhead(repeat: int, number: int) -> dict[str, float]:
    """Seconds a call that the router decides, and sends to NumPy, costs over NumPy's own:
    ``a + b`` on 100 elements, and a reduction along an axis, with their floors lowered to zero
    for the measure, so that they take the whole call path (as calls over the floors do)
    instead of the small-array one."""
    from dispatch.base.ops import op_named
    from dispatch.routing import router

    ops = [op_named("add"), op_named("sum")]
    saved = [(router.host_floor(op), router.trip_floor(op)) for op in ops]
    for op in ops:
        op.floor = op.trip_floor = 0
    try:
        env = {"np": dispatch, "numpy": numpy, "a": dispatch.arange(100.0), "b": dispatch.ones(100),
               "na": numpy.arange(100.0), "nb": numpy.ones(100), "m": dispatch.ones((10, 10)),
               "nm": numpy.ones((10, 10))}
        figures = {}
        for name, stmt, ref in (("routed_overhead_us", "a + b", "na + nb"),
                                ("routed_axis_overhead_us", "np.sum(m, axis=1)", "numpy.sum(nm, axis=1)")):
            _per_call(stmt, env, number, 1)  # decided once: a cache hit from then on
            mine, base = _side_by_side(stmt, ref, env, number, repeat)
            figures[name] = (mine - base) * 1e6
        return figures
    finally:
        for op, (floor, trip) in zip(ops, saved, strict=True):
            op.floor, op.trip_floor = floor, trip


# Calls on a 512 x 512 float64 array a GPU already holds: each library's own call, and dispatch's
# under the cost policy and forced onto one engine. Each timed batch ends with a device sync, so a
# figure is what a loop of such calls takes, host time and device time together.
DEVICE_CASES = (
    ("cupy: ca + cb", "ca + cb"),
    ("torch: ta + tb", "ta + tb"),
    ("cupy: ca[1:-1, 1:-1]", "ca[1:-1, 1:-1]"),
    ("torch.from_dlpack(ca)", "torch.from_dlpack(ca)"),
    ("cupy.from_dlpack(ta)", "cupy.from_dlpack(ta)"),
    ("dispatch: a + b", "a + b"),
    ("dispatch: a[1:-1, 1:-1]", "a[1:-1, 1:-1]"),
    ("dispatch: np.abs(a)", "np.abs(a)"),
    ("dispatch, forced cupy: a + b", "a + b"),
)


def measure_device_calls(repeat: int = 7, number: int = 2000) -> list[dict]:
    """Microseconds per call on device-resident data (see ``DEVICE_CASES``); empty where CuPy
    and torch-cuda are not both here."""
    from dispatch import targets

    if targets.probe("cupy") is None or targets.probe("torch-cuda") is None:
        return []
    import cupy
    import torch

    host = numpy.random.default_rng(0).random((512, 512))
    ca, cb = cupy.asarray(host), cupy.asarray(host + 1)
    env = {"np": dispatch, "torch": torch, "cupy": cupy, "ca": ca, "cb": cb,
           "ta": torch.as_tensor(host, device="cuda"), "tb": torch.as_tensor(host + 1, device="cuda"),
           "a": dispatch.asarray(ca), "b": dispatch.asarray(cb)}

    def sync() -> None:
        cupy.cuda.Device().synchronize()
        torch.cuda.synchronize()

    rows = []
    for name, stmt in DEVICE_CASES:
        forced = dispatch.using("cupy") if "forced" in name else contextlib.nullcontext()
        with forced:
            timer = timeit.Timer(stmt, globals=env)
            timer.timeit(number // 10)  # kernels built, decisions made
            times = []
            for _ in range(repeat):
                sync()
                start = timeit.default_timer()
                timer.timeit(number)
                sync()
                times.append((timeit.default_timer() - start) / number)
        rows.append({"call": name, "us": statistics.median(times) * 1e6})
    return rows


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", help="write the figures as JSON here")
    parser.add_argument("--repeat", type=int, default=31)
    args = parser.parse_args(argv)
    rows = measure_calls(repeat=args.repeat)
    with _compiled.python_path():  # the same calls through the Python path, where the compiled one is built
        python_rows = measure_calls(repeat=args.repeat) if _compiled.ACTIVE else rows
    decision = measure_decision(repeat=args.repeat)
    median_overhead = statistics.median(r["overhead_us"] for r in rows)
    python_median = statistics.median(r["overhead_us"] for r in python_rows)
    print(f"per-call overhead on 100-element arrays ({platform.processor() or platform.machine()}, "
          f"numpy {numpy.__version__}; fast path {_compiled.STATUS})")
    print(f"{'call':<24}{'numpy µs':>10}{'dispatch µs':>13}{'overhead µs':>13}{'Python path µs':>16}")
    for r, p in zip(rows, python_rows, strict=True):
        print(f"{r['call']:<24}{r['numpy_us']:>10.2f}{r['dispatch_us']:>13.2f}{r['overhead_us']:>13.2f}"
              f"{p['overhead_us']:>16.2f}")
    print(f"median overhead: {median_overhead:.2f} µs per call (target: at most 1.5 µs); "
          f"through the Python path: {python_median:.2f} µs")
    print(f"router decision, cache hit: {decision['cache_hit_us']:.2f} µs (target: under 1 µs); "
          f"building the input summary: {decision['input_summary_us']:.2f} µs; "
          f"a whole call the router decides and sends to NumPy: {decision['routed_overhead_us']:.2f} µs over NumPy's "
          f"({decision['routed_axis_overhead_us']:.2f} µs for a sum along an axis)")
    device = measure_device_calls()
    if device:
        print("calls on a 512 x 512 float64 array on the GPU (µs a call, synchronised per batch)")
        for r in device:
            print(f"{r['call']:<32}{r['us']:>9.2f}")
    result = {"calls": rows, "median_overhead_us": median_overhead, "fast_path": _compiled.STATUS,
              "python_path_calls": python_rows, "python_path_median_overhead_us": python_median, "decision": decision,
              "device_calls": device, "machine": platform.platform()}
    if args.out:
        with open(args.out, "w") as f:
            json.dump(result, f, indent=1)
    return result


if __name__ == "__main__":
    main()
