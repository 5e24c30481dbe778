"""The benchmark that proves the router: the workload suite under every mode, side by side.

    python -m benchmarks.suite [--sizes small,medium,large] [--only kmeans,pca] [--out suite.json]

Modes, each timed on the same data in one run, in turns sample by sample (the rounds in a
balanced order: each mode holds each place of a round once, and follows each other one equally
often; ``_timing.turns``):

- ``numpy``      plain NumPy, the reference
- ``router``     ``run(dispatch)`` with the calibrated cost policy and its history
- ``seed``       ``run(dispatch)`` with the seed's static MoE table
- ``always-gpu`` ``run(dispatch)`` with every op forced onto the GPU (copying as needed)
- ``port``       the hand port to CuPy (GPU machines) or torch (elsewhere), data starting
                 and ending on the host
- ``oracle``     each op on its measured-best target, found by trying every target per kind
                 of call first
- ``numpy-again`` plain NumPy a second time (not run unless asked for): its ratio to ``numpy``
                 is the spread of the measurement itself, to read the others' ratios against

A timed sample is one run, or for programs shorter than 50 ms on NumPy as many runs as
make 50 ms there (``loops`` in the output), the same count for every mode; so is a warm-up
sample. Programs shorter than half a second on NumPy take at least ``SHORT_REPEATS`` samples a
mode (21), those shorter than 50 ms ``TINY_REPEATS`` (61), the others ``--repeats`` (7); each
round of those run several times a sample opens after an untimed NumPy sample (``_separator``).
Every mode starts from host NumPy data and ends with its results on the host (reading the
results is part of a program), so a device's transfers are counted. Every result is
checked against NumPy's. The adaptive modes learn first, as in a program's first iterations:
the oracle tries every target per kind of call, the router runs the program until it has
settled (no changed decision for 10 runs and 0.5 s, at most 2000 runs or 30 s;
``learning`` in the output); then every mode warms up and is timed, and the timed samples are
steady state. What the router's decisions did meanwhile is in the output too (``timing``:
decisions changed while it was timed), and how many of a traced run's calls, after the
timed samples, each target ran (``targets``; those off NumPy, and why: ``off_numpy``).
Each case keeps every timed sample (``samples``) and each mode's time in the kernel a run
(``kernel_seconds``): on the 2-core machine a large program's runs take two
speeds, the slow ones' extra time spent there, faulting in pages.

Each mode runs as if alone in its process: each routing policy keeps its own decisions and
floors (the router's own rule), and each dispatch mode here its own history, so that what the
seed table's or the forced GPU's calls did to data (sent it to a device, read it back) is not
learned by the router's policy as its own program's behaviour.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import json
import os
import platform
import random
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy

import dispatch
from benchmarks.workloads import SIZE_NAMES, WORKLOADS, _ports, _timing
from dispatch import measure, targets
from dispatch.routing import calibration, router
from dispatch.routing.history import History

try:
    import resource
except ImportError:  # not on Windows
    resource = None

MODES = ("numpy", "router", "seed", "always-gpu", "port", "oracle")
GPU_PREFERENCE = ("cupy", "torch-cuda", "torch-mps")


def _to_host(result: dict[str, Any]) -> dict[str, Any]:
    return {k: numpy.asarray(v) for k, v in result.items()}


def _gpu() -> str | None:
    return next((name for name in GPU_PREFERENCE if targets.probe(name) is not None), None)


def _synchronize() -> None:
    for target in targets.available().values():
        target.synchronize()


POLICY = {"router": "cost", "seed": "seed", "oracle": "oracle"}


@contextlib.contextmanager
def _policy(name: str):
    before = router.policy()
    router.set_policy(name)
    try:
        yield
    finally:
        router.set_policy(before)


_histories: dict[str, History] = {}  # each dispatch mode's own (the router's: the one dispatch loaded)


def _prepare(mode: str) -> None:
    """Set the routing policy and the history a mode runs under, before its clock starts (each
    policy keeps its own decisions and floors across switches)."""
    router.set_policy(POLICY.get(mode, "cost"))
    if mode in ("numpy", "numpy-again", "port"):
        return  # dispatch does not run: the history in place stays
    if not _histories:
        _histories["router"] = router.history
    router.ROUTER.history = _histories.setdefault(mode, History())


def _runner(mode: str, workload: Any, data: dict[str, Any], port: Any) -> Callable[[], dict] | None:
    """A call that runs ``workload`` once under ``mode`` and returns host results."""
    if mode in ("numpy", "numpy-again"):
        return lambda: workload.run(numpy, **data)
    if mode in POLICY:
        return lambda: _to_host(workload.run(dispatch, **data))
    if mode == "always-gpu":
        gpu = _gpu()
        if gpu is None:
            return None

        def run_forced() -> dict:
            with dispatch.using(gpu):
                return _to_host(workload.run(dispatch, **data))

        return run_forced
    if mode == "port":
        if port is None or not port.supports(workload):
            return None
        return lambda: port.run(workload, data)
    raise ValueError(mode)


def _targets_used(run: Callable[[], dict], shown: int = 12) -> tuple[dict[str, int], dict[str, int]]:
    """How many of one run's calls each target ran, after the timed samples (a traced run); and
    the calls off NumPy, counted by op, input shapes and dtypes, target and reason (the ``shown``
    commonest), so that a program slower than NumPy says which of its calls went elsewhere, and why."""
    _prepare("router")
    with dispatch.trace() as t:
        run()
        _synchronize()
    off = collections.Counter(
        f"{r.op} {' '.join('x'.join(map(str, s)) or '()' for s in r.shapes)} {'/'.join(r.dtypes)}: {r.target}, "
        f"{r.reason[:90]}" for r in t.records if r.target != "numpy")
    return dict(collections.Counter(r.target for r in t.records).most_common()), dict(off.most_common(shown))


def _count_calls(workload: Any, data: dict[str, Any]) -> int:
    with _policy("seed"), dispatch.using("numpy"), dispatch.trace() as t:
        workload.run(dispatch, **data)
    return len(t.records)


# A timed sample lasts at least this long: programs shorter than it run several times per
# sample (as ``timeit`` does), or a millisecond program's median of three runs is the noise of
# the machine.
MIN_SAMPLE_S = 0.05


# A program shorter than ``SHORT_PROGRAM_S`` on NumPy takes this many samples at least: its
# samples cost little, and its ratio to NumPy is the one a few percent decides. On an H100
# machine's host, NumPy against itself over seven samples of such programs spread from 0.89x to
# 1.06x; on the 2-core machine pairwise medium (82 ms a run) read 1.054x round by round over
# seven samples, a 95 % interval of 0.931-1.071 (``paired_interval``).
SHORT_REPEATS = 21
SHORT_PROGRAM_S = 0.5
# A program shorter than ``MIN_SAMPLE_S`` on NumPy (run several times a sample) takes this many:
# its ratio to NumPy is mostly dispatch's cost per call, 1-3 % on calls of 4-9 µs, while on the
# 2-core machine its rounds' ratios spread with quartiles 3-7 points apart (kmeans, pca, mlp and
# heat small over 21 rounds): the round-by-round median moved by a point or two between runs, on
# programs the 2-core bar reads by their worst. A sample costs 50 ms.
TINY_REPEATS = 61


def _separator(runners: dict[str, Callable[[], dict]]) -> str:
    """The mode whose untimed sample opens each round of a short program: NumPy where it runs.

    A mode can slow the sample after it: on the 2-core machine each mode's sample right after the
    torch port took 1.10-1.4x its others, for the whole 40 ms sample (torch's pool spinning,
    before ``dispatch.base.torch_env`` asked it to sleep from the suite's start). The rounds' orders
    balance which mode follows which within a round, but a round's first mode always followed the
    same last one of the round before: with six modes the router always opened its rounds after the
    port, NumPy after the seed table, and pairwise small and cosine_topk small took 1.12-1.14x
    NumPy's time by the median, 1.00x in the samples after the other modes. Opening every round
    after the same untimed NumPy sample gives each mode the same company there. A program of
    50 ms or more, one run a sample, is left as it is: a separator would cost a whole run a
    round, for an effect of milliseconds."""
    return "numpy" if "numpy" in runners else next(iter(runners))


def _repeats(repeats: int, run_s: float) -> int:
    """Timed samples per mode: ``TINY_REPEATS`` at least for a program that runs in under
    ``MIN_SAMPLE_S`` on NumPy, ``SHORT_REPEATS`` for one under ``SHORT_PROGRAM_S``."""
    if run_s < MIN_SAMPLE_S:
        return max(repeats, TINY_REPEATS)
    return max(repeats, SHORT_REPEATS) if run_s < SHORT_PROGRAM_S else repeats


def _loops(run_s: float) -> int:
    """Runs per timed sample: enough for ``MIN_SAMPLE_S`` at NumPy's pace, the same for every mode."""
    return max(1, min(1000, round(MIN_SAMPLE_S / max(run_s, 1e-6))))


def _run_seconds(run: Callable[[], dict]) -> float:
    start = time.perf_counter()
    run()
    return time.perf_counter() - start


def _kernel_seconds() -> float:
    """The process's time in the kernel so far: ``getrusage``'s (microseconds) where there is
    one, else ``os.times``' (clock ticks, 10 ms on Linux)."""
    if resource is not None:
        return resource.getrusage(resource.RUSAGE_SELF).ru_stime
    return os.times().system


def _interleaved(runners: dict[str, Callable[[], dict]], warmup: int, repeats: int, loops: int = 1,
                 budget_s: float = 20.0) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """Seconds per run of each mode, taking turns sample by sample (``loops`` runs each), each
    sample synchronised, after ``warmup`` samples' worth of runs of each; and the seconds per
    run the process spent in the kernel meanwhile (page faults, mostly: on a virtual machine a
    large program's runs can take twice as long in some periods, all of it there). The rounds'
    orders are balanced (``_timing.turns``): over as many rounds as modes, each mode holds each
    place once, and follows each other one equally often (twice as many rounds for an odd count).
    For a program of several runs a sample, each round opens after an untimed sample of NumPy
    (``_separator``)."""
    for mode, run in runners.items():
        _prepare(mode)
        for _ in range(warmup * loops):
            run()
            _synchronize()
    times: dict[str, list[float]] = {m: [] for m in runners}
    kernel: dict[str, list[float]] = {m: [] for m in runners}
    separator = _separator(runners) if loops > 1 else None
    for i in range(repeats):
        if separator is not None:
            _prepare(separator)
            for _ in range(loops):
                runners[separator]()
        for mode in _timing.turns(list(runners), i):
            run = runners[mode]
            _prepare(mode)
            _synchronize()
            system, start = _kernel_seconds(), time.perf_counter()
            for _ in range(loops):
                run()
            _synchronize()
            times[mode].append((time.perf_counter() - start) / loops)
            kernel[mode].append((_kernel_seconds() - system) / loops)
        if i >= 2 and max(sum(t) for t in times.values()) > budget_s:
            break
    return times, kernel


def _learn_oracle(run: Callable[[], dict], limit: int = 12) -> int:
    """Run until every kind of call has tried every target (the oracle's measuring pass)."""
    for i in range(limit):
        before = sum(len(v) for v in router.ROUTER.policies["oracle"].tried.values())
        run()
        _synchronize()
        if i and sum(len(v) for v in router.ROUTER.policies["oracle"].tried.values()) == before:
            return i + 1
    return limit


def _learn_router(run: Callable[[], dict], limit: int = 2000, budget_s: float = 30.0, quiet_runs: int = 10,
                  quiet_s: float = 0.5) -> dict[str, Any]:
    """Run until the router has settled: ``quiet_runs`` runs in a row, and ``quiet_s`` seconds,
    with no cached decision changed, as in a program's first iterations."""
    start = time.perf_counter()
    quiet, quiet_since = 0, start
    known: dict[tuple, str] = {}  # each key's last cached target: the router drops a decision now
    # and then to decide it afresh (``router._redecide_now_and_then``), which changes nothing if
    # it decides the same

    def changed() -> bool:
        now = {k: d.target.name for k, d in router.ROUTER.decisions.items()}
        moved = any(known.get(k) != name for k, name in now.items())
        known.update(now)
        return moved

    changed()
    for i in range(limit):
        run()
        _synchronize()
        now = time.perf_counter()
        if not changed():
            quiet += 1
            if quiet >= quiet_runs and now - quiet_since >= quiet_s:
                return {"runs": i + 1, "seconds": now - start, "settled": True}
        else:
            quiet, quiet_since = 0, now
        if now - start > budget_s:
            break
    return {"runs": i + 1, "seconds": time.perf_counter() - start, "settled": False}


def _router_state() -> dict[tuple, str]:
    """The cost policy's decisions (key: target), now. Decisions for a forced target are left
    out: always-GPU runs under the cost policy, ``using`` the GPU, and its forced calls are cached
    there under keys of their own (the forced target is part of the key)."""
    return {k: d.target.name for k, d in router.ROUTER.caches["cost"].items() if k[4] is None}


def _router_changes(before: dict[tuple, str]) -> dict[str, int]:
    """What the router's decisions did since ``before``: decisions changed (dropped and made
    again to another target) or new."""
    now = _router_state()
    changed = sum(1 for k, name in now.items() if before.get(k, name) != name)
    return {"decisions_changed": changed, "decisions_new": len(now.keys() - before.keys())}


def bench_case(workload: Any, size: str, modes: tuple[str, ...], repeats: int, warmup: int,
               port: Any) -> dict[str, Any]:
    data = workload.make_data(size)
    reference = workload.run(numpy, **data)
    runners = {m: r for m in modes if (r := _runner(m, workload, data, port)) is not None}
    checks, learning = {}, {}
    for mode, run in runners.items():
        _prepare(mode)
        if mode == "oracle":
            _learn_oracle(run)
        elif mode == "router":
            learning["router"] = _learn_router(run)
        try:
            workload.check(run(), reference)
            checks[mode] = "ok"
        except AssertionError as exc:
            checks[mode] = f"differs: {str(exc).splitlines()[0][:120]}"
    run_s = _run_seconds(runners.get("numpy") or next(iter(runners.values())))
    loops = _loops(run_s)
    before = _router_state()
    times, kernel = _interleaved(runners, warmup, _repeats(repeats, run_s), loops)
    if "router" in learning:
        learning["router"]["timing"] = _router_changes(before)
    if "router" in runners:
        learning["router"]["targets"], learning["router"]["off_numpy"] = _targets_used(runners["router"])
    n_calls = _count_calls(workload, data)
    seconds = {m: statistics.median(t) for m, t in times.items()}
    return {"workload": workload.NAME, "size": size, "seconds": seconds, "checks": checks, "calls": n_calls,
            "loops": loops, "numpy_us_per_call": seconds["numpy"] / max(n_calls, 1) * 1e6, "learning": learning,
            "samples": times, "kernel_seconds": {m: statistics.median(k) for m, k in kernel.items()}}


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.0f} ms" if seconds >= 0.01 else f"{seconds * 1e3:.2f} ms"


def _ratio(a: float | None, b: float | None) -> str:
    return f"{a / b:5.2f}x" if a and b else "    - "


def paired(case: dict[str, Any], mode: str) -> float | None:
    """``mode``'s time over NumPy's as the median of each round's ratio (``None`` without both):
    a round's samples are taken back to back, and on a shared machine a short program's rounds
    drift together, by more than the few percent its ratio is judged on. On an H100 machine's
    host, NumPy against itself over 20 small programs' runs took 0.91-1.04x by the medians of
    each mode's samples, 0.99-1.03x so."""
    ratios = _round_ratios(case, mode)
    return statistics.median(ratios) if ratios else None


def _round_ratios(case: dict[str, Any], mode: str) -> list[float]:
    samples = case.get("samples", {})
    mine, numpy_s = samples.get(mode), samples.get("numpy")
    return [a / b for a, b in zip(mine or [], numpy_s or [], strict=False)]


def paired_interval(case: dict[str, Any], mode: str, draws: int = 2000) -> tuple[float, float] | None:
    """A 95 % interval for ``paired``: the rounds resampled with replacement (a percentile
    bootstrap of the median, seeded, so a report reads the same twice). Its width is what the
    number of rounds can tell apart on this machine: with seven rounds of a noisy one, a program
    at 1.02x may read 1.06x."""
    ratios = _round_ratios(case, mode)
    if len(ratios) < 2:
        return None
    rng = random.Random(0)
    medians = sorted(statistics.median(rng.choices(ratios, k=len(ratios))) for _ in range(draws))
    return medians[int(0.025 * draws)], medians[int(0.975 * draws) - 1]


def _with_interval(case: dict[str, Any]) -> str:
    """The router's round-by-round ratio on ``case``, its program, and its 95 % interval."""
    interval = paired_interval(case, "router")
    where = f"{case['workload']} {case['size']}"
    return f"{paired(case, 'router'):.3f} ({where}" + (
        f", 95 % interval {interval[0]:.3f}-{interval[1]:.3f})" if interval else ")")


def report(cases: list[dict[str, Any]], modes: tuple[str, ...]) -> list[str]:
    """The table, then the totals and the issue's criteria, as lines of text."""
    shown = [m for m in modes if any(m in c["seconds"] for c in cases)]
    head = f"{'program':<16}{'size':<8}" + "".join(f"{m:>12}" for m in shown)
    head += f"{'router/numpy':>14}{'router/oracle':>15}"
    lines = [head]
    for c in cases:
        s = c["seconds"]
        row = f"{c['workload']:<16}{c['size']:<8}" + "".join(
            f"{s[m] * 1e3:>10.2f}ms" if m in s else f"{'-':>12}" for m in shown)
        row += f"{_ratio(s.get('router'), s.get('numpy')):>14}{_ratio(s.get('router'), s.get('oracle')):>15}"
        bad = [m for m, v in c["checks"].items() if v != "ok"]
        lines.append(row + (f"   CHECK FAILED: {', '.join(bad)}" if bad else ""))
    totals = {m: sum(c["seconds"].get(m, 0.0) for c in cases) for m in shown}
    lines.append(f"{'total':<24}" + "".join(f"{totals[m]:>11.3f}s" for m in shown))
    r = totals.get("router")
    if r:
        for other in ("numpy", "oracle", "seed", "always-gpu", "port"):
            if totals.get(other):
                lines.append(f"router total / {other} total: {r / totals[other]:.3f}")
        heavy = [c for c in cases if c["numpy_us_per_call"] > 20 and "router" in c["seconds"]]
        worst = max(heavy, key=lambda c: c["seconds"]["router"] / c["seconds"]["numpy"], default=None)
        if worst is not None:
            ratio = worst["seconds"]["router"] / worst["seconds"]["numpy"]
            lines.append(f"worst router/numpy among programs with ops over 20 µs: {ratio:.3f} "
                         f"({worst['workload']} {worst['size']})")
    slow = [c for c in cases if "router" in c["seconds"] and c["seconds"].get("numpy")
            and c["seconds"]["router"] > 1.05 * c["seconds"]["numpy"] and "kernel_seconds" in c]
    if slow:
        lines.append("over 1.05x NumPy's time, with each one's time in the kernel a run (NumPy / router): " + "; ".join(
            f"{c['workload']} {c['size']} {c['seconds']['router'] / c['seconds']['numpy']:.2f}x "
            f"({_ms(c['kernel_seconds']['numpy'])} / {_ms(c['kernel_seconds']['router'])})" for c in slow))
    spread = sorted((c["seconds"]["numpy-again"] / c["seconds"]["numpy"], c["workload"], c["size"])
                    for c in cases if "numpy-again" in c["seconds"] and c["seconds"].get("numpy"))
    if spread:
        low, high = spread[0], spread[-1]
        lines.append(f"numpy-again / numpy, the measurement's own spread: {low[0]:.3f} ({low[1]} {low[2]}) "
                     f"to {high[0]:.3f} ({high[1]} {high[2]})")
    by_round = [(r, c) for c in cases if (r := paired(c, "router")) is not None]
    heavy_rounds = [(r, c) for r, c in by_round if c.get("numpy_us_per_call", 0) > 20]
    if heavy_rounds:
        worst = max(heavy_rounds, key=lambda rc: rc[0])
        again = [r for c in cases if (r := paired(c, "numpy-again")) is not None]
        lines.append(f"router / numpy round by round (the median of each round's ratio), worst among programs with "
                     f"ops over 20 µs: {_with_interval(worst[1])}" + (
                         f"; numpy-again so, every program: {min(again):.3f} to {max(again):.3f}" if again else ""))
    if by_round:
        worst = max(by_round, key=lambda rc: rc[0])
        lines.append(f"router / numpy round by round, worst of every program: {_with_interval(worst[1])}")
    learned = [(c["learning"]["router"], c["workload"], c["size"]) for c in cases if "router" in c.get("learning", {})]
    if learned:
        most = max(learned, key=lambda x: x[0]["runs"])
        unsettled = [f"{w} {s}" for info, w, s in learned if not info["settled"]]
        lines.append(f"router learning before timing: {sum(x[0]['seconds'] for x in learned):.1f} s in all, "
                     f"at most {most[0]['runs']} runs ({most[1]} {most[2]}); "
                     + ("every case settled" if not unsettled else "not settled: " + ", ".join(unsettled)))
        moved = [f"{w} {s} ({', '.join(f'{k} {v}' for k, v in info['timing'].items() if v)})"
                 for info, w, s in learned if any(info.get("timing", {}).values())]
        lines.append("router while timed: " + ("nothing changed" if not moved else "; ".join(moved)))
    failed = [f"{c['workload']}/{c['size']}/{m}" for c in cases for m, v in c["checks"].items() if v != "ok"]
    lines.append("outputs equal NumPy's: " + ("all" if not failed else "NO: " + ", ".join(failed)))
    return lines


def full_calibration() -> calibration.Calibration:
    """This machine's stored calibration where it is a full one, else a full one measured now, and
    the router routing by it: the router is judged on what ``python -m dispatch calibrate``
    measures, not on the quick one a first routed call measures."""
    cal = calibration.load()
    if cal is None or cal.quick:
        print(f"no full calibration for this machine yet: measuring one ({'a quick one is stored' if cal else 'none'})",
              file=sys.stderr)
        cal = measure.calibrate(quick=False, progress=False)
    router.use_calibration(cal)
    return cal


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default=",".join(SIZE_NAMES))
    parser.add_argument("--only", default="")
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--repeats", type=int, default=7)  # one round per place of 7 modes
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--out")
    args = parser.parse_args(argv)
    modes = tuple(m for m in args.modes.split(",") if m)
    sizes = [s for s in args.sizes.split(",") if s]
    only = {n for n in args.only.split(",") if n}
    start = time.perf_counter()
    cal = full_calibration()
    ports = _ports.available_ports()
    port = next((p for p in ports if p.name == "cupy"), None) or next(
        (p for p in ports if p.name == "torch-cuda"), None) or next((p for p in ports if p.name == "torch-cpu"), None)
    cases = []
    for workload in WORKLOADS:
        if only and workload.NAME not in only:
            continue
        for size in sizes:
            case = bench_case(workload, size, modes, args.repeats, args.warmup, port)
            cases.append(case)
            print(f"  {workload.NAME} {size}: " + ", ".join(
                f"{m} {s * 1e3:.2f} ms" for m, s in case["seconds"].items()), file=sys.stderr, flush=True)
            if args.out:  # case by case, so a run stopped at a time limit keeps what it measured
                with open(args.out, "w") as f:
                    json.dump({"cases": cases, "partial": True}, f, indent=1, default=str)
    machine = calibration.machine()
    lines = report(cases, modes)
    print(f"machine: {machine['cpu']} x{machine['cpu_count']}; GPUs: "
          f"{', '.join(g.get('name', '?') for g in machine['gpus']) or 'none'}; port: {port.name if port else '-'}")
    print("\n".join(lines))
    result = {"machine": machine, "platform": platform.platform(), "port": port.name if port else None,
              "calibration": {"fingerprint": cal.fingerprint, "created": cal.created, "quick": cal.quick,
                              "seconds": cal.seconds},
              "cases": cases, "summary": lines, "seconds": time.perf_counter() - start}
    if args.out:
        with open(args.out, "w") as f:
            json.dump(result, f, indent=1, default=str)
    return result


if __name__ == "__main__":
    main()
