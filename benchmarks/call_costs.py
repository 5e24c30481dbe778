"""What routing costs per call of a program, warm, with the machine's devices priced or not.

    python -m benchmarks.call_costs fft_denoise,mandelbrot [--runs 4] [--host-only] [--json FILE]

Each program of ``benchmarks/programs`` runs warm in one process, as ``programs_bench --mode
warm`` runs it: plain NumPy, dispatch forced to NumPy (``using("numpy")``: every call through
the call path, none placed elsewhere) and dispatch routing. One traced run counts the program's
calls; then per untraced run of each mode: its seconds, and, of the routed runs, the calls that
reached the router in Python (by the rule that decided them), those timed to teach the history
(and those of them explored), those recorded for a region's plan (``dispatch.routing.live``) and
those the compiled path served from the memo. The overhead per call is a mode's best time less
NumPy's, over the calls of the traced run.

``--host-only`` routes by this machine's calibration without its devices (the same host, the
same library versions): what the call path costs here where no device is priced.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import time
import warnings
from collections import Counter
from typing import Any

import numpy

import dispatch
from benchmarks import programs
from dispatch.arrays import _compiled
from dispatch.routing import calibration, router


def _host_only() -> None:
    """Route by the stored calibration with its device targets left out."""
    cal = calibration.load()
    if cal is None:
        raise SystemExit("no calibration here: run `python -m dispatch calibrate --quick` first")
    cal.targets = {name: t for name, t in cal.targets.items() if str(t.get("device", "cpu")).startswith("cpu")}
    cal.machine = dict(cal.machine, gpus=[])
    router.use_calibration(cal)


class _Counts:
    """What the router is asked during runs (its functions wrapped, as a profiler would, while
    the ``with`` block lasts)."""

    def __enter__(self) -> _Counts:
        self.decided: Counter = Counter()
        self.timed = self.explored = self.recorded = 0
        live, history = router.ROUTER.live, router.ROUTER.history
        decide, note, observe = router.decide, live.note, history.observe
        self._restore = lambda: (setattr(router, "decide", decide), vars(live).pop("note", None),
                                 vars(history).pop("observe", None))

        def counted_decide(op: Any, inputs: Any, *args: Any, **kwargs: Any) -> Any:
            d = decide(op, inputs, *args, **kwargs)
            self.decided[f"{d.kind.value} {d.target.name}"] += 1
            return d

        def counted_note(*args: Any, **kwargs: Any) -> None:
            self.recorded += 1
            note(*args, **kwargs)

        def counted_observe(key: Any, target: str, seconds: float, explored: bool = False) -> None:
            self.timed += 1
            self.explored += bool(explored)
            observe(key, target, seconds, explored)

        router.decide, live.note, history.observe = counted_decide, counted_note, counted_observe
        self.served = _compiled.memo_served()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._restore()

    def take(self) -> dict[str, Any]:
        served = _compiled.memo_served()
        out = {"decided": sum(self.decided.values()), "by_rule": dict(self.decided.most_common()),
               "timed": self.timed, "explored": self.explored, "recorded": self.recorded,
               "memo_served": served - self.served}
        self.decided.clear()
        self.timed = self.explored = self.recorded = 0
        self.served = served
        return out


def _quiet(main: Any) -> None:
    with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        main()


def measure(name: str, runs: int) -> dict[str, Any]:
    plain = programs.load_with(name, numpy).main
    routed = programs.load_with(name, dispatch).main

    def forced() -> None:
        with dispatch.using("numpy"):
            routed()

    mains = {"numpy": plain, "forced:numpy": forced, "auto": routed}
    for main in mains.values():  # the warm-up, untimed
        _quiet(main)
    with dispatch.trace() as t:
        _quiet(routed)
    calls = len(t.records)
    best = dict.fromkeys(mains, float("inf"))
    per_run = []
    with _Counts() as counts:
        for _ in range(runs):
            for mode, main in mains.items():
                counts.take()
                start = time.perf_counter()
                _quiet(main)
                seconds = time.perf_counter() - start
                best[mode] = min(best[mode], seconds)
                if mode == "auto":
                    per_run.append({"seconds": seconds, **counts.take()})
    overhead = {m: (best[m] - best["numpy"]) / calls * 1e6 for m in ("forced:numpy", "auto")} if calls else {}
    return {"program": name, "calls": calls, "best": best, "overhead_us_per_call": overhead, "auto_runs": per_run}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("programs", help="comma-separated program names")
    parser.add_argument("--runs", type=int, default=4)
    parser.add_argument("--host-only", action="store_true", help="leave the calibration's devices out")
    parser.add_argument("--json", metavar="FILE")
    args = parser.parse_args()
    if args.host_only:
        _host_only()
    rows = []
    for name in args.programs.split(","):
        row = measure(name, args.runs)
        rows.append(row)
        b, o = row["best"], row["overhead_us_per_call"]
        print(f"{name}: {row['calls']} calls; numpy {b['numpy'] * 1e3:.1f} ms, forced numpy "
              f"{b['forced:numpy'] / b['numpy']:.2f}x ({o.get('forced:numpy', 0):+.1f} us/call), auto "
              f"{b['auto'] / b['numpy']:.2f}x ({o.get('auto', 0):+.1f} us/call)")
        for r in row["auto_runs"]:
            print(f"    auto {r['seconds'] * 1e3:.1f} ms: decided {r['decided']}, timed {r['timed']} "
                  f"({r['explored']} explored), recorded {r['recorded']}, memo served {r['memo_served']}; "
                  + ", ".join(f"{k} {v}" for k, v in list(r["by_rule"].items())[:5]))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"host_only": args.host_only, "policy": router.policy(), "programs": rows}, f, indent=1)


if __name__ == "__main__":
    main()
