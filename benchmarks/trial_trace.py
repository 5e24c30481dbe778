"""Each trial a workload's learning runs, side by side: for a program whose learned state moves
from process to process.

    python -m benchmarks.trial_trace mlp large [--out trials.json]

The program is learned as the suite's ``router`` mode learns it (``suite._learn_router``, on this
machine's full calibration), each trial's periods kept as it ends: the program's time from one
call of the kind on trial to the next, per side, in µs. Then five runs of it learned, five of
always-GPU (where a GPU is) and the calls a traced run sent off NumPy. A second process may
land elsewhere: run it several times to see which states a program reaches, and what decided.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from typing import Any

import numpy

from benchmarks import suite
from benchmarks.workloads import get
from dispatch.base.devices import HOST_ONLY
from dispatch.routing import router


def _kind(key: tuple) -> str:
    """A router key's kind of call as words: op, dtypes, size bucket."""
    return f"{key[0]} {'/'.join(map(str, key[1]))} under 2^{key[2]}"


def _name(key: tuple) -> str:
    """A router key as words: its kind of call, where its inputs are, layout."""
    where = "+".join(sorted(str(d) for d in key[3]))
    return f"{_kind(key)} on {where}{f' {key[5]}' if key[5] else ''}"


def _capture(ended: list[dict[str, Any]]) -> Callable[[], None]:
    """Keep each trial's periods as it ends (``trials.finish`` forgets them), and the decisions
    the router holds then for calls with inputs off the host: the neighbours a device side met.
    Returns what puts ``trials.finish`` back."""
    kept = router.ROUTER.trials  # the router's trials: the finish it calls is theirs
    finish = kept.finish

    def keeping(key: tuple, chosen: Any = None) -> None:
        trial = kept.running.get(key)
        if trial is not None:
            ended.append({
                "key": _kind(key),
                "verdict": None if chosen is None else chosen.target.name,
                "reason": None if chosen is None else chosen.reason,
                "everything": trial.everything,
                "periods_us": {side: [round(p * 1e6) for p in ps] for side, ps in trial.periods.items()},
                "device_input_decisions": {_name(k): f"{d.target.name}: {d.reason[:60]}"
                                           for k, d in router.ROUTER.decisions.items() if k[3] != HOST_ONLY},
            })
        finish(key, chosen)

    kept.finish = keeping
    return lambda: vars(kept).pop("finish", None)


def _ms(run: Callable[[], Any], times: int) -> list[float]:
    out = []
    for _ in range(times):
        start = time.perf_counter()
        run()
        suite._synchronize()
        out.append(round((time.perf_counter() - start) * 1e3, 1))
    return out


def trace(name: str, size: str) -> dict[str, Any]:
    ended: list[dict[str, Any]] = []
    restore = _capture(ended)
    try:
        return _learned(name, size, ended)
    finally:
        restore()


def _learned(name: str, size: str, ended: list[dict[str, Any]]) -> dict[str, Any]:
    workload = get(name)
    data = workload.make_data(size)
    result: dict[str, Any] = {"workload": name, "size": size,
                              "numpy_ms": _ms(lambda: workload.run(numpy, **data), 3)}
    routed = suite._runner("router", workload, data, None)
    runs: list[float] = []

    def run() -> None:
        runs.extend(_ms(routed, 1))

    suite._prepare("router")
    result["learning"] = suite._learn_router(run)
    result["learning_runs_ms"] = runs
    result["router_ms"] = _ms(routed, 5)
    forced = suite._runner("always-gpu", workload, data, None)
    if forced is not None:
        suite._prepare("always-gpu")
        _ms(forced, 2)
        result["always_gpu_ms"] = _ms(forced, 5)
    suite._prepare("router")
    result["targets"], result["off_numpy"] = suite._targets_used(routed, 30)
    result["trials"] = ended
    return result


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workload")
    parser.add_argument("size")
    parser.add_argument("--out", help="write the figures here as JSON")
    args = parser.parse_args(argv)
    suite.full_calibration()
    result = trace(args.workload, args.size)
    for t in result["trials"]:
        means = {s: round(sum(p) / len(p)) if p else None for s, p in t["periods_us"].items()}
        print(f"trial of {t['key']}: {t['verdict']}{' (every call)' if t['everything'] else ''}; mean µs {means}")
    summary = {k: result[k] for k in ("numpy_ms", "router_ms", "always_gpu_ms", "targets") if k in result}
    print(json.dumps(summary))
    if args.out:
        with open(args.out, "w") as f:
            json.dump(result, f, indent=1)
    return result


if __name__ == "__main__":
    main()
