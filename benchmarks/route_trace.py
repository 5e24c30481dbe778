"""Where the router sends a workload's calls, and what they cost: for tuning the router.

    python -m benchmarks.route_trace kmeans medium [pairwise small ...] [--warmup 3] [--top 25] [--runs 5]
    python -m benchmarks.route_trace --programs fft_denoise,pca_svd [--against cupy,torch-cuda]
    python -m benchmarks.route_trace --programs nbody,gaussian_blur --converge 6

Each workload runs under the calibrated cost policy (this machine's stored full calibration, or
one measured first) for ``--warmup`` runs, as the suite's ``router`` mode does, then once
traced. Per (op, target, reason): calls, total and median seconds, bytes moved; then the run's
total against plain NumPy's; then ``--runs`` untraced runs beside NumPy's, with the calls
that reached the router.

``--converge N`` runs each program as the warm benchmark's auto worker runs it instead (N runs in
this process with the calibration stored here, each ending as a notebook cell ends), and says per
run how long it took, which decisions the calls that reached the router got, which plans placed
them (and how many were new), and which engines were up: where auto takes several runs to settle,
this shows what it is doing meanwhile.
"""

from __future__ import annotations

import argparse
import re
import statistics
import time
from collections import Counter, defaultdict
from typing import Any

import numpy

import dispatch
from benchmarks.suite import _synchronize, _to_host, full_calibration
from benchmarks.workloads import get
from dispatch.routing import router


def trace_case(name: str, size: str, warmup: int, top: int, runs: int) -> None:
    workload = get(name)
    data = workload.make_data(size)
    start = time.perf_counter()
    workload.run(numpy, **data)
    numpy_s = time.perf_counter() - start
    for _ in range(warmup):
        _to_host(workload.run(dispatch, **data))
    _synchronize()
    start = time.perf_counter()
    with dispatch.trace() as t:
        _to_host(workload.run(dispatch, **data))
        _synchronize()
    routed_s = time.perf_counter() - start
    groups: dict[tuple, list] = defaultdict(list)
    for r in t.records:
        shapes = "x".join(str(s) for s in (r.shapes[0] if r.shapes else []))
        groups[(r.op, shapes, r.target, r.reason[:60])].append(r)
    rows = sorted(groups.items(), key=lambda kv: -sum(r.seconds for r in kv[1]))
    print(f"== {name} {size}: numpy {numpy_s * 1e3:.2f} ms, router (traced) {routed_s * 1e3:.2f} ms, "
          f"{len(t.records)} calls, {sum(r.bytes_moved for r in t.records) / 1e6:.1f} MB moved")
    print(f"{'op':<16}{'first shape':<14}{'target':<12}{'calls':>6}{'total ms':>10}{'med µs':>9}{'MB':>8}  reason")
    for (op, shapes, target, reason), rs in rows[:top]:
        total = sum(r.seconds for r in rs)
        print(f"{op[:15]:<16}{shapes[:13]:<14}{target:<12}{len(rs):>6}{total * 1e3:>10.2f}"
              f"{statistics.median(r.seconds for r in rs) * 1e6:>9.1f}{sum(r.bytes_moved for r in rs) / 1e6:>8.2f}"
              f"  {reason}")
    untraced(workload, data, top, runs)


def untraced(workload: object, data: dict, top: int, runs: int) -> None:
    """The same program without a trace, ``runs`` times, each run timed beside one of plain
    NumPy: a trace sends every call through the router, so it shows decisions that an untraced
    run, whose calls under the floors go straight to NumPy, never asks for. Here only the calls
    that reach the router are counted, by decision, over all runs: a decision seen in fewer
    runs than the others (an exploration) is what makes one run slower than the next."""
    decided: Counter = Counter()
    decide = router.decide

    def counting(op: object, inputs: object, *rest: object) -> object:
        d = decide(op, inputs, *rest)
        decided[(op.name, inputs.size, d.target.name, d.reason[:60])] += 1
        return d

    numpy_ms, routed_ms = [], []
    for _ in range(runs):
        start = time.perf_counter()
        workload.run(numpy, **data)
        numpy_ms.append((time.perf_counter() - start) * 1e3)
        router.decide = counting
        try:
            start = time.perf_counter()
            _to_host(workload.run(dispatch, **data))
            _synchronize()
            routed_ms.append((time.perf_counter() - start) * 1e3)
        finally:
            router.decide = decide
    print(f"-- untraced, {runs} runs: numpy {' '.join(f'{t:.2f}' for t in numpy_ms)} ms; router "
          f"{' '.join(f'{t:.2f}' for t in routed_ms)} ms; median ratio "
          f"{statistics.median(routed_ms) / statistics.median(numpy_ms):.2f}; "
          f"{sum(decided.values()) / runs:.1f} calls routed a run (the rest ran on NumPy under the floors)")
    for (op, size, target, reason), calls in decided.most_common(top):
        print(f"{op[:15]:<16}{size:<14}{target:<12}{calls:>6}  {reason}")


def _best_s(run: object, rounds: int = 3) -> float:
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        run()
        _synchronize()
        best = min(best, time.perf_counter() - start)
    return best


def trace_program(name: str, warmup: int, top: int, against: list[str]) -> None:
    """Program ``name`` of ``benchmarks.programs`` (its printed output dropped): NumPy's time, the
    router's and each forced target's (best of 3 after ``warmup`` runs), then one routed run
    traced, grouped by (op, first shape, target, call site, reason)."""
    import contextlib
    import io

    from benchmarks import programs

    plain, routed = programs.load_with(name, numpy), programs.load_with(name, dispatch)
    quiet = contextlib.redirect_stdout(io.StringIO())
    with quiet:
        times = {"numpy": _best_s(plain.main)}
        for _ in range(warmup):
            routed.main()
        times["auto"] = _best_s(routed.main)
        for target in against:
            with dispatch.using(target):
                routed.main()
                times[target] = _best_s(routed.main)
        with dispatch.trace() as t:
            routed.main()
            _synchronize()
    groups: dict[tuple, list] = defaultdict(list)
    for r in t.records:
        shapes = "x".join(str(s) for s in (r.shapes[0] if r.shapes else []))
        site = (r.site or "").rsplit("/", 1)[-1]
        groups[(r.op, shapes, r.target, site, r.reason[:70])].append(r)
    rows = sorted(groups.items(), key=lambda kv: -sum(r.seconds for r in kv[1]))
    print(f"== {name}: " + ", ".join(f"{k} {v * 1e3:.1f} ms" for k, v in times.items())
          + f"; traced: {len(t.records)} calls, {sum(r.bytes_moved for r in t.records) / 1e6:.1f} MB moved, "
          f"{sum(r.bytes_kept for r in t.records) / 1e6:.1f} MB from kept copies")
    print(f"{'op':<16}{'first shape':<14}{'target':<11}{'site':<22}{'calls':>6}{'total ms':>9}{'MB':>7}  reason")
    for (op, shapes, target, site, reason), rs in rows[:top]:
        print(f"{op[:15]:<16}{shapes[:13]:<14}{target[:10]:<11}{site[:21]:<22}{len(rs):>6}"
              f"{sum(r.seconds for r in rs) * 1e3:>9.2f}{sum(r.bytes_moved for r in rs) / 1e6:>7.2f}  {reason}")


_PLAN = re.compile(r"\bplan (\d+)\b")


def converge(name: str, runs: int, top: int = 12, size: list[str] | None = None,
             show: Any = print) -> list[dict[str, Any]]:
    """Program ``name`` routed ``runs`` times in this process as ``programs_bench``'s warm auto
    worker runs it: each run ends as a notebook cell ends (``dispatch.notebook.cell_ended``), then
    waits, untimed, for the engines coming up. Shows, per run, its time, the calls that reached the
    router by decision kind, the plans their reasons name (and how many are new), how many regions
    it planned and how many plans it revised (dropped for straying from what their calls measured,
    or made again where their data had moved), the engines up, and the decisions that changed
    since the run before; then one more run traced.
    Returns each run's record (its ``output`` too, to compare with NumPy's)."""
    from benchmarks import programs
    from benchmarks.programs_bench import _bring_ups_end, _call, _engines_up
    from dispatch.notebook import cell_ended

    size = size or []
    routed = programs.load_with(name, dispatch).main
    start = time.perf_counter()
    _call(programs.load_with(name, numpy).main, size)
    show(f"== {name}: numpy {time.perf_counter() - start:.3f} s (its first run in this process)")
    decide, counted = router.decide, Counter()

    def counting(op: Any, inputs: Any, *rest: Any) -> Any:
        d = decide(op, inputs, *rest)
        counted[(op.name, inputs.size, d.target.name, d.kind.name, d.reason[:90])] += 1
        return d

    records: list[dict[str, Any]] = []
    before: Counter = Counter()
    plans_seen: set[str] = set()
    live = router.ROUTER.live
    for r in range(runs):
        counted.clear()
        planned0, revised0, epoch0 = live.planner.planned, live.revised, router.ROUTER.epoch
        router.decide = counting
        try:
            start = time.perf_counter()
            output = _call(routed, size)
            seconds = time.perf_counter() - start
        finally:
            router.decide = decide
        cell_ended()
        _bring_ups_end()
        kinds: Counter = Counter()
        plans: set[str] = set()
        for (_, _, _, kind, reason), calls in counted.items():
            kinds[kind] += calls
            plans.update(_PLAN.findall(reason))
        new = plans - plans_seen
        plans_seen |= plans
        up = _engines_up()
        made, revised = live.planner.planned - planned0, live.revised - revised0
        changes = router.ROUTER.epoch - epoch0
        records.append({"seconds": seconds, "routed": sum(counted.values()), "kinds": dict(kinds),
                        "plans": sorted(plans, key=int), "new_plans": len(new), "made": made, "revised": revised,
                        "epochs": changes, "up": sorted(up), "output": output})
        by_kind = ", ".join(f"{k} {v}" for k, v in kinds.most_common())
        named = ", ".join(sorted(plans, key=int)) or "-"
        show(f"run {r}: {seconds:.3f} s, {sum(counted.values())} calls routed ({by_kind}); plans {named} "
             f"({len(new)} new); {made} planned, {revised} revised, decisions changed {changes} times; "
             f"up: {', '.join(sorted(up)) or 'numpy only'}")
        changed = [(calls, key) for key, calls in counted.items() if before.get(key) != calls]
        for calls, (op, n, target, kind, reason) in sorted(changed, key=lambda c: -c[0])[:top]:
            show(f"   {calls:5d} {op[:15]:<16}{n:>10} {target[:10]:<11}{kind:<10}{reason}")
        before = Counter(counted)
    with dispatch.trace() as t:
        _call(routed, size)
    groups: dict[tuple, list] = defaultdict(list)
    for rec in t.records:
        shapes = "x".join(str(s) for s in (rec.shapes[0] if rec.shapes else []))
        groups[(rec.op, shapes, rec.target, rec.reason[:70])].append(rec)
    show(f"-- traced: {len(t.records)} calls, {sum(r.seconds for r in t.records) * 1e3:.1f} ms in them, "
         f"{sum(r.bytes_moved for r in t.records) / 1e6:.1f} MB moved")
    for (op, shapes, target, reason), rs in sorted(groups.items(), key=lambda kv: -sum(r.seconds for r in kv[1]))[:top]:
        ms, mb = sum(r.seconds for r in rs) * 1e3, sum(r.bytes_moved for r in rs) / 1e6
        show(f"   {op[:15]:<16}{shapes[:13]:<14}{target[:10]:<11}{len(rs):>6}{ms:>9.2f} ms{mb:>7.2f} MB  {reason}")
    return records


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cases", nargs="*", help="pairs: workload size")
    parser.add_argument("--programs", default="", help="comma-separated names from benchmarks.programs")
    parser.add_argument("--against", default="", help="programs: forced targets timed beside (comma-separated)")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--runs", type=int, default=5, help="untraced runs after the traced one")
    parser.add_argument("--converge", type=int, default=0, metavar="N",
                        help="programs: N runs as the warm benchmark's auto worker runs them, with the "
                             "calibration stored here (none: the seed's table), each shown")
    args = parser.parse_args(argv)
    if len(args.cases) % 2:
        parser.error("give cases as pairs: workload size")
    if args.converge:
        for name in filter(None, args.programs.split(",")):
            converge(name, args.converge, args.top)
        return
    full_calibration()
    for name in filter(None, args.programs.split(",")):
        trace_program(name, args.warmup, args.top, list(filter(None, args.against.split(","))))
    for name, size in zip(args.cases[::2], args.cases[1::2], strict=True):
        trace_case(name, size, args.warmup, args.top, args.runs)


if __name__ == "__main__":
    main()
