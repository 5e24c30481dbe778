"""A script run once, as users run it: the cold-start benchmark.

    python -m benchmarks.cold_start [--half validation] [--only a,b] [--repeats 2] [--json out.json]
    python -m benchmarks.cold_start --gil
    python -m benchmarks.cold_start --sklearn [--rows lda=20000,lda=1000000] [--timeline] [--json out.json]

Each program of ``benchmarks.programs`` runs in fresh processes (``programs_bench.cold_program``):
NumPy (``python SCRIPT``); ``python -m dispatch run SCRIPT`` three times in a row with what
dispatch learned kept between them (run 1, 2, 3: a cache folder of their own per program and
round, starting with this machine's calibration files only); and each target forced for the
whole program (``DISPATCH_BACKEND``), each in a fresh cache folder too. Python's bytecode is
written and primed first (``PYTHONDONTWRITEBYTECODE`` is dropped): a user's second script finds
it. So are the device kernels each program compiles: every program runs once at its tiny size in
each mode, untimed, before its timed runs, as CuPy's kernel cache (on disk, once per machine and
kernel) finds them on a machine where they ran before; a machine where CuPy never compiled them
pays seconds more in whichever run first needs them. Best of the rounds, which rotate their
order so that a drifting load hits every contender.

The goals it checks, per program:

- run 1 takes at most 1.05x NumPy's time, or NumPy's time + 30 ms where that is larger;
- runs 2 and 3 take at most 1.10x the best forced target's time.

``--gil [TARGET]`` measures what bringing a target up on a background thread (torch-cpu unless
named) costs the program's own thread: the same routed work (small and medium calls, which hold
the GIL in dispatch's Python) timed in a fresh process alone, and while ``dispatch.routing.bringup``
brings the target up beside it; and the bring-up's own time, beside the work and alone after it.

``--sklearn`` runs scikit-learn scripts instead (``benchmarks/sklearn_cold.py``): stock, under
``dispatch.sklearn.accelerate()`` and under ``python -m dispatch run``, runs 1-3 each.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from typing import Any

from benchmarks import programs, programs_bench

REPO = programs_bench.REPO
RUN1_RATIO, RUN1_SLACK_S, LATER_RATIO = 1.05, 0.030, 1.10


def goals(result: dict[str, Any]) -> dict[str, Any]:
    """Run 1 against NumPy, runs 2 and 3 against the best forced target, for one program."""
    best = result["best"]
    numpy_s = best.get("numpy")
    forced = programs_bench._best_forced(best)
    out: dict[str, Any] = {}
    if numpy_s and "auto 1" in best:
        out["run1_ok"] = best["auto 1"] <= max(RUN1_RATIO * numpy_s, numpy_s + RUN1_SLACK_S)
    if forced and all(r in best for r in ("auto 2", "auto 3")):
        out["later_ok"] = max(best["auto 2"], best["auto 3"]) <= LATER_RATIO * forced[1]
    return out


def table(results: list[dict[str, Any]], half: str) -> list[str]:
    rows = [r for r in results if r["half"] == half]
    if not rows:
        return []
    forced = sorted({c for r in rows for c in r["best"] if c.startswith("forced:")})
    head = ["program", "NumPy s", "run 1 s", "run 2 s", "run 3 s", *(f"{c[7:]} s" for c in forced),
            "run 1 / NumPy", "run 2 / best forced", "run 3 / best forced", "NumPy / run 2", "goals", "output"]
    lines = [f"**{half} half** ({len(rows)} programs)", "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    met = 0
    for r in rows:
        b = r["best"]
        bf = programs_bench._best_forced(b)
        g = goals(r)
        ok = g.get("run1_ok") and g.get("later_ok")
        met += bool(ok)
        said = "met" if ok else ", ".join(n for n, k in (("run 1", "run1_ok"), ("run 2+", "later_ok"))
                                          if not g.get(k)) + " missed"
        name = r["program"] + (f" ({r['size']:,})" if "size" in r else "")
        cells = [name, *(f"{b[c]:.3f}" if c in b else "-" for c in ("numpy", *programs_bench.AUTO_RUNS)),
                 *(f"{b[c]:.3f}" if c in b else "-" for c in forced),
                 programs_bench._ratio(b.get("auto 1"), b.get("numpy")),
                 programs_bench._ratio(b.get("auto 2"), bf[1] if bf else None) + (f" ({bf[0][7:]})" if bf else ""),
                 programs_bench._ratio(b.get("auto 3"), bf[1] if bf else None),
                 programs_bench._ratio(b.get("numpy"), b.get("auto 2")), said,
                 programs_bench.worst([m for c, m in r["match"].items() if c != "numpy"])]
        lines.append("| " + " | ".join(cells) + " |")
    common = [r for r in rows if all(c in r["best"] for c in ("numpy", *programs_bench.AUTO_RUNS, *forced))]
    if common:
        total = {c: sum(r["best"][c] for r in common) for c in ("numpy", *programs_bench.AUTO_RUNS, *forced)}
        bf_total = sum(programs_bench._best_forced(r["best"])[1] for r in common) if forced else None
        lines.append("| " + " | ".join([f"total ({len(common)})", *(f"{total[c]:.3f}" for c in (
            "numpy", *programs_bench.AUTO_RUNS, *forced)), programs_bench._ratio(total["auto 1"], total["numpy"]),
            programs_bench._ratio(total["auto 2"], bf_total), programs_bench._ratio(total["auto 3"], bf_total),
            programs_bench._ratio(total["numpy"], total["auto 2"]), f"{met}/{len(rows)} met", ""]) + " |")
    return lines


# ---- the GIL: a background import beside the program's calls ------------------------------------------

_GIL_CHILD = """
import sys, time
import numpy
import dispatch as np
from dispatch.routing import bringup
mode, target = sys.argv[1], sys.argv[3]
rng = numpy.random.default_rng(0)
small = np.asarray(rng.random(1_000))
medium = np.asarray(rng.random(200_000))
def work(done):
    calls, start = 0, time.perf_counter()
    while not done(start):
        for _ in range(50):
            small + small
            np.sum(small)
        np.sum(medium * 2.0)
        calls += 1
    return calls / (time.perf_counter() - start)
work(lambda start: time.perf_counter() - start >= 0.3)  # warm: the router's modules loaded, first decisions made
if mode == "beside":  # the work goes on until the target is up
    bringup.start(target)
    rate = work(lambda start: bringup.state(target) != "starting")
else:
    rate = work(lambda start: time.perf_counter() - start >= float(sys.argv[2]))
    bringup.start(target)
assert bringup.wait(target, 280) == "ready", bringup.state(target)
print(rate, bringup.seconds_taken()[target])
"""


def gil(target: str = "torch-cpu", repeats: int = 3, window_s: float = 3.0) -> dict[str, Any]:
    """The program's rate of routed work (iterations a second) alone, over ``window_s``, and while
    ``target`` is brought up beside it, until it is up; and the bring-up's time beside the work
    and alone (after it)."""
    runs: dict[str, list[tuple[float, float]]] = {"alone": [], "beside": []}
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "DISPATCH_BACKEND")}
    env["DISPATCH_LEARN"] = "0"
    for r in range(repeats):
        for mode in (("alone", "beside") if r % 2 == 0 else ("beside", "alone")):
            done = subprocess.run([sys.executable, "-c", _GIL_CHILD, mode, str(window_s), target], cwd=REPO, env=env,
                                  capture_output=True, text=True, timeout=300, check=True)
            rate, taken = (float(x) for x in done.stdout.split())
            runs[mode].append((rate, taken))
    alone = statistics.median(r for r, _ in runs["alone"])
    beside = statistics.median(r for r, _ in runs["beside"])
    return {"target": target, "rate_alone": alone, "rate_beside": beside, "slowdown": 1.0 - beside / alone,
            "bringup_alone_s": statistics.median(t for _, t in runs["alone"]),
            "bringup_beside_s": statistics.median(t for _, t in runs["beside"]), "window_s": window_s,
            "runs": runs}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--half", choices=("all", *programs_bench.HALVES), default="all")
    parser.add_argument("--only", default="", help="comma-separated program names")
    parser.add_argument("--sizes", default="", help="program=N,...: sizes other than the programs' defaults")
    parser.add_argument("--targets", default="", help="forced targets (default: every target dispatch finds here)")
    parser.add_argument("--repeats", type=int, default=2, help="timed rounds (default 2)")
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument("--json", metavar="FILE")
    parser.add_argument("--gil", nargs="?", const="torch-cpu", metavar="TARGET",
                        help="measure a background bring-up's cost to the program (default target: torch-cpu)")
    parser.add_argument("--sklearn", action="store_true", help="scikit-learn scripts (benchmarks/sklearn_cold.py)")
    parser.add_argument("--rows", default="", help="with --sklearn: script=rows,... (default: sized for this machine)")
    parser.add_argument("--timeline", action="store_true",
                        help="with --sklearn: each timed run watched, its timeline kept (benchmarks/timeline.py)")
    args = parser.parse_args(argv)
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)  # a user's machine writes bytecode: time what it sees
    os.environ.pop("DISPATCH_LEARN", None)
    if args.gil:
        found = gil(args.gil, repeats=args.repeats)
        print(f"routed work alone {found['rate_alone']:.1f} it/s, beside {args.gil}'s bring-up "
              f"{found['rate_beside']:.1f} it/s until it was up: {found['slowdown']:.0%} slower; "
              f"its bring-up alone {found['bringup_alone_s']:.2f} s, beside the work {found['bringup_beside_s']:.2f} s")
        if args.json:
            programs_bench.save(args.json, found)
        return found

    if args.sklearn:
        from benchmarks import sklearn_cold

        gpu = any(t in ("cupy", "torch-cuda", "torch-mps") for t in programs_bench.available_targets())
        found = sklearn_cold.main(sklearn_cold.parse_rows(args.rows, gpu), args.repeats, args.timeout,
                                  lambda line: print(line, file=sys.stderr, flush=True), args.timeline)
        found["machine"] = programs_bench._machine()
        print("\n".join([f"machine: {found['machine']}; rounds: {args.repeats} (best of)", "", *found["summary"]]))
        if args.json:
            programs_bench.save(args.json, found)
        return found

    from dispatch.routing import calibration

    names = [n for n in programs.NAMES if (args.half == "all" or programs.SPLIT[n] == args.half)
             and (not args.only or n in args.only.split(","))]
    targets = [t for t in args.targets.split(",") if t] or programs_bench.available_targets()
    sizes = dict(part.split("=") for part in args.sizes.split(",") if part)
    base_cache = str(calibration.cache_dir())
    calibrated = bool(programs_bench._calibration_files(base_cache)) and calibration.load() is not None

    def log(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    out: dict[str, Any] = {"machine": programs_bench._machine(), "targets": targets, "calibrated": calibrated,
                           "repeats": args.repeats, "programs": []}
    contenders = ["numpy", *programs_bench.AUTO_RUNS, *(f"forced:{t}" for t in targets)]
    started = time.perf_counter()
    for name in names:
        programs_bench.prime(name, targets, base_cache, args.timeout)  # its kernels compiled, once per machine
        size = sizes.get(name)
        result = programs_bench.cold_program(name, contenders, args.repeats, base_cache, [size] if size else [],
                                             args.timeout, log)
        result["size"] = int(size) if size else programs.load(name).SIZE
        result["goals"] = goals(result)
        out["programs"].append(result)
        if args.json:
            programs_bench.save(args.json, out)
    out["seconds"] = time.perf_counter() - started
    lines = [f"machine: {out['machine']}; targets: {', '.join(targets)}; calibrated: "
             f"{'yes' if calibrated else 'no'}; rounds: {args.repeats} (best of)"]
    for half in programs_bench.HALVES:
        lines += ["", *table(out["programs"], half)]
    print("\n".join(lines))
    out["summary"] = lines
    if args.json:
        programs_bench.save(args.json, out)
    return out


if __name__ == "__main__":
    main()
