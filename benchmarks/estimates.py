"""How far the model's estimates are from measured time, on the calls the example programs make.

Each example runs once under ``dispatch run --profile`` to record its calls (op, shapes,
dtypes). Every distinct call the model prices is then run again on its own, on fresh data of
the recorded shapes: plain NumPy, and each other host target of the calibration through
``dispatch.using``, the best of ``--repeat`` runs (a single run of a short script is mostly
first-call costs and the machine's noise). The estimate, from this machine's calibration (a
quick one is measured first where there is none), is divided by that time.

    python -m benchmarks.estimates [--out results.json] [--min-ms 1] [--repeat 3] [examples/numpy_workload.py ...]

Target: every call measured over ``--min-ms`` estimated within 3x of its measured time.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ("examples/least_squares.py", "examples/numpy_workload.py", "examples/numpy_program.py",
            "examples/sklearn_pipeline.py")
WITHIN = 3.0


def ratios(profile: dict, min_seconds: float) -> list[dict]:
    """Per profiled call measured over ``min_seconds`` and priced on its own target: the
    estimate over the measured time (both totals over the call's count)."""
    rows = []
    for call in profile["calls"]:
        estimate = call["estimates"].get(call["target"])
        if call["seconds"] < min_seconds or not estimate:
            continue
        rows.append({"site": call["site"], "op": call["op"], "target": call["target"], "count": call["count"],
                     "measured": call["seconds"], "estimate": estimate, "ratio": estimate / call["seconds"]})
    return rows


def within(rows: list[dict], factor: float = WITHIN) -> int:
    """How many calls' estimates lie within ``factor`` of their measured time, either way."""
    return sum(1 / factor <= r["ratio"] <= factor for r in rows)


def recorded_calls(script: str, folder: str) -> list[dict]:
    """The distinct (op, shapes, dtypes) of the calls ``script`` makes with arrays, from a
    profile of one run (its output discarded)."""
    out = os.path.join(folder, Path(script).stem + ".json")
    subprocess.run([sys.executable, "-m", "dispatch", "run", "--profile", out, script], cwd=ROOT, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env={**os.environ, "PYTHONPATH": str(ROOT)})
    found: dict[tuple, dict] = {}
    for call in json.loads(Path(out).read_text())["calls"]:
        if call["shapes"]:
            key = (call["op"], tuple(map(tuple, call["shapes"])), tuple(call["dtypes"]))
            found.setdefault(key, {"site": call["site"], "op": call["op"], "shapes": call["shapes"],
                                   "dtypes": call["dtypes"]})
    return list(found.values())


def operands(shapes: Sequence[Sequence[int]], dtypes: Sequence[str], seed: int = 0) -> list[np.ndarray]:
    """Fresh operands of these shapes and dtypes: uniform floats, small integers, booleans."""
    rng = np.random.default_rng(seed)
    made = []
    for shape, dtype in zip(shapes, dtypes, strict=True):
        kind = np.dtype(dtype).kind
        if kind == "b":
            made.append(rng.random(shape) < 0.5)
        elif kind in "iu":
            made.append(rng.integers(0, 100, shape).astype(dtype))
        else:
            made.append((rng.random(shape) + 0.5).astype(dtype))
    return made


def function(namespace: Any, op: str) -> Callable[..., Any]:
    fn = namespace
    for part in op.split("."):
        fn = getattr(fn, part)
    return fn


def best_seconds(run: Callable[[], Any], repeat: int = 3) -> float:
    """The least of ``repeat`` timed runs, after one untimed (first-call costs are not the op's)."""
    run()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def measure_call(op: str, shapes: Sequence[Sequence[int]], dtypes: Sequence[str], target: str = "numpy",
                 repeat: int = 3) -> float | None:
    """Seconds of one call of ``op`` on fresh operands of the recorded shapes, on ``target``
    (inputs on the host), best of ``repeat``; ``None`` where the op needs more than its arrays."""
    args = operands(shapes, dtypes)
    if target == "numpy":
        fn = function(np, op)
        run = lambda: fn(*args)  # noqa: E731
    else:
        import dispatch

        fn = function(dispatch, op)

        def run() -> Any:
            with dispatch.using(target):
                return dispatch.asnumpy(fn(*args))
    try:
        return best_seconds(run, repeat)
    except Exception:  # a call that needs arguments besides its arrays (roll's shift, take's indices)
        return None


def compare(calls: list[dict], cal: Any, min_seconds: float, repeat: int = 3,
            targets: Sequence[str] | None = None) -> list[dict]:
    """Each call on each host target of ``cal`` (or ``targets``): the estimate over the best
    measured time, for those measured over ``min_seconds``."""
    from dispatch.cli._pricing import price_call

    host = [name for name, data in cal.targets.items() if str(data.get("device", "cpu")) == "cpu"]
    rows = []
    for call in calls:
        priced = price_call(call["op"], call["shapes"], call["dtypes"], cal)
        for target in targets or host:
            if target not in priced:
                continue
            measured = measure_call(call["op"], call["shapes"], call["dtypes"], target, repeat)
            if measured is None or measured < min_seconds:
                continue
            rows.append({**call, "target": target, "measured": measured, "estimate": priced[target],
                         "ratio": priced[target] / measured})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scripts", nargs="*", default=list(EXAMPLES))
    parser.add_argument("--min-ms", type=float, default=1.0, help="calls measured under this are left out")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs of each call; the least is kept")
    parser.add_argument("--out", help="write every call's figures as JSON")
    args = parser.parse_args()
    from dispatch import measure

    cal = measure.load_or_measure(quick=True)
    found: list[dict] = []
    with tempfile.TemporaryDirectory() as folder:
        for script in args.scripts:
            rows = compare(recorded_calls(script, folder), cal, args.min_ms / 1e3, args.repeat)
            found += rows
            for r in sorted(rows, key=lambda r: -r["measured"]):
                shapes = " ".join("x".join(map(str, s)) for s in r["shapes"])
                print(f"{r['site']:<32} {r['op']:<14} {shapes:<22} {r['target']:<10} "
                      f"measured {r['measured'] * 1e3:8.2f} ms  estimate {r['estimate'] * 1e3:8.2f} ms  "
                      f"x{r['ratio']:.2f}")
    print(f"{within(found)} of {len(found)} calls over {args.min_ms:g} ms estimated within {WITHIN:g}x "
          f"of their measured time (best of {args.repeat})")
    if args.out:
        Path(args.out).write_text(json.dumps(found, indent=1) + "\n")


if __name__ == "__main__":
    main()
