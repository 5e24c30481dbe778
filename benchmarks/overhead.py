"""Per-call overhead of dispatch over plain NumPy on small arrays, and the router's decision
cost on a cache hit. Both sides are timed in one run, interleaved, and medians are compared.

    python -m benchmarks.overhead [--out results.json] [--repeat 31]

Targets (the issues'): median overhead at most 1.5 µs per call on 100-element arrays (a bare
Python ``__array_ufunc__`` wrapper costs about 0.8 µs); a decision cache hit under 1 µs.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import timeit

import numpy

import dispatch

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
)


def _per_call(stmt: str, env: dict, number: int, repeat: int) -> list[float]:
    return [t / number for t in timeit.repeat(stmt, globals=env, number=number, repeat=repeat)]


def measure_calls(size: int = 100, repeat: int = 31, number: int = 20_000) -> list[dict]:
    env = {"np": dispatch, "numpy": numpy, "a": dispatch.arange(float(size)), "b": dispatch.ones(size),
           "na": numpy.arange(float(size)), "nb": numpy.ones(size)}
    rows = []
    for stmt, ref in CASES:
        ours, theirs = [], []
        for _ in range(repeat):  # interleave so drift hits both sides alike
            ours += _per_call(stmt, env, number, 1)
            theirs += _per_call(ref, env, number, 1)
        mine, base = statistics.median(ours), statistics.median(theirs)
        rows.append({"call": stmt, "numpy_us": base * 1e6, "dispatch_us": mine * 1e6,
                     "overhead_us": (mine - base) * 1e6})
    return rows


def measure_decision(repeat: int = 31, number: int = 50_000) -> dict:
    """One ``router.decide`` on a warm cache, and building the call's input summary."""
    from dispatch import router
    from dispatch._call import Inputs, _collect
    from dispatch._ops import op_named

    op = op_named("sum")
    x = dispatch.ones(1_000_000)
    args = (x,)
    inputs = Inputs(_collect(args, {}))
    router.decide(op, inputs, args, {})
    env = {"router": router, "op": op, "inputs": inputs, "args": args, "Inputs": Inputs, "_collect": _collect}
    hit = statistics.median(_per_call("router.decide(op, inputs, args, {})", env, number, repeat))
    summary = statistics.median(_per_call("Inputs(_collect(args, {}))", env, number, repeat))
    return {"cache_hit_us": hit * 1e6, "input_summary_us": summary * 1e6}


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", help="write the figures as JSON here")
    parser.add_argument("--repeat", type=int, default=31)
    args = parser.parse_args(argv)
    rows = measure_calls(repeat=args.repeat)
    decision = measure_decision(repeat=args.repeat)
    median_overhead = statistics.median(r["overhead_us"] for r in rows)
    print(f"per-call overhead on 100-element arrays ({platform.processor() or platform.machine()}, "
          f"numpy {numpy.__version__})")
    print(f"{'call':<16}{'numpy µs':>10}{'dispatch µs':>13}{'overhead µs':>13}")
    for r in rows:
        print(f"{r['call']:<16}{r['numpy_us']:>10.2f}{r['dispatch_us']:>13.2f}{r['overhead_us']:>13.2f}")
    print(f"median overhead: {median_overhead:.2f} µs per call (target: at most 1.5 µs)")
    print(f"router decision, cache hit: {decision['cache_hit_us']:.2f} µs (target: under 1 µs); "
          f"building the input summary: {decision['input_summary_us']:.2f} µs")
    result = {"calls": rows, "median_overhead_us": median_overhead, "decision": decision,
              "machine": platform.platform()}
    if args.out:
        with open(args.out, "w") as f:
            json.dump(result, f, indent=1)
    return result


if __name__ == "__main__":
    main()
