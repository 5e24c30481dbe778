"""Measuring this machine: ``calibrate()`` times every target that works here, through
dispatch itself, and stores the result (``dispatch.routing.calibration`` holds the record, the
plan and the file). ``python -m dispatch calibrate`` runs it.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from datetime import datetime, timezone
from typing import Any

import numpy as np

import dispatch
from dispatch import cluster, targets
from dispatch.routing import calibration, router, startup

# Bound at import: the start-up children are started by this, not by a stand-in a caller may have
# put on the module since (tests replace ``subprocess.Popen`` to watch the calibration's children).
_Popen = subprocess.Popen

__all__ = ["calibrate", "load_or_measure"]


def load_or_measure(quick: bool = True, progress: bool = False) -> calibration.Calibration:
    """This machine's stored calibration, measured (and stored) first if there is none."""
    found = calibration.load()
    return found if found is not None else calibrate(quick=quick, progress=progress)


def _call_for(op: str) -> Callable[..., Any]:

    fn: Any = dispatch
    for part in op.split("."):
        fn = getattr(fn, part)
    if op == "linalg.svd":
        return lambda a: fn(a, full_matrices=False)
    if op == "linalg.lstsq":
        return lambda a, b: fn(a, b, rcond=None)
    return fn


def _measure_target(target: Any, quick: bool, inputs: calibration._Inputs, tick: Callable[[str], None],
                    which: Callable[[str], bool] = lambda op: True) -> dict:
    """The target's overheads and transfers, and the representative ops ``which`` selects (the
    rest can be added by ``_measure_ops``)."""

    out: dict[str, Any] = {"device": str(target.device), "threads": calibration._threads(target),
                           "transfer": {}, "gemm": {}, "ops": {}}
    with dispatch.using(target.name):
        one = dispatch.asarray(np.ones(1)).to(target.name)
        budget = calibration._OVERHEAD_BUDGET_S[quick]
        out["call_overhead_s"] = calibration._timer(lambda: one + one, lambda: None, budget)
        out["sync_overhead_s"] = 0.0 if target.device.is_host else calibration._timer(
            lambda: one + one, target.synchronize, budget)
        if not target.device.is_host:
            out["transfer"] = calibration._measure_transfers(target, quick)
        out["memory_bandwidth"], out["memory_bandwidth_bytes"] = _measure_bandwidth(target, quick)
    return _measure_ops(target, quick, inputs, tick, out, which)


def _measure_bandwidth(target: Any, quick: bool) -> tuple[float, int]:
    """Bytes per second an ``add`` streams through the target's memory (two operands read, a new
    result written, as NumPy's calls write theirs), on operands of ``calibration.stream_bytes``
    each, beyond its caches; and that size. The least of a few calls after a warm-up: a process's
    first large result waits for the kernel to map its pages, up to ten times the call."""
    dtype = "float64" if calibration._holds(target, "float64") else "float32"
    itemsize = np.dtype(dtype).itemsize
    n = calibration.stream_bytes(target) // itemsize
    a, b = (dispatch.asarray(np.full(n, value, dtype)).to(target.name) for value in (0.5, 0.25))
    add = _call_for("add")
    add(a, b)
    target.synchronize()
    seconds = []
    for _ in range(calibration._STREAM_CALLS[quick]):
        start = time.perf_counter()
        add(a, b)
        target.synchronize()
        seconds.append(time.perf_counter() - start)
    return 3 * n * itemsize / min(seconds), n * itemsize


def _measure_ops(target: Any, quick: bool, inputs: calibration._Inputs, tick: Callable[[str], None], out: dict,
                 which: Callable[[str], bool]) -> dict:
    """Measure the representative ops ``which`` selects into ``out`` (and what follows from them)."""

    budget = calibration._POINT_BUDGET_S[quick]
    with dispatch.using(target.name):
        for dtype, representatives in calibration._plan(target, quick):
            ops: dict[str, list[list[float]]] = out["ops"].setdefault(dtype, {})
            for op, sizes, quick_sizes in representatives:
                if not which(op):
                    continue
                tick(f"{target.name} {dtype} {op}")
                fn = _call_for(op)
                points = []
                for size in quick_sizes if quick else sizes:
                    if points and calibration._longer_than(op, points[-1], size, calibration._SLOW_POINT_S):
                        break
                    host = inputs(op, size, dtype)
                    args = tuple(dispatch.asarray(h).to(target.name) for h in host)
                    x = calibration._side(op, size)
                    run = functools.partial(fn, *args)
                    try:
                        tries = [calibration._timer(run, target.synchronize, budget, calibration._SLOW_CALLS[quick])]
                        for pause in calibration._RETRY_PAUSES_S:
                            if not (points and calibration._off_curve(op, points[-1], [x, min(tries)])
                                    and calibration._may_retry(target.name, quick)):
                                break
                            began = time.perf_counter()
                            time.sleep(pause)
                            tries.append(calibration._timer(run, target.synchronize, budget,
                                                            calibration._SLOW_CALLS[quick]))
                            calibration._retried_s[target.name] = (calibration._retried_s.get(target.name, 0.0)
                                                                   + time.perf_counter() - began)
                        seconds = min(tries)
                        key = f"{dtype} {op} {size}"
                        if len(tries) > 1 or key in out.get("measured_again", {}):  # or measured again later
                            out.setdefault("measured_again", {}).setdefault(key, []).extend(tries)
                    except Exception as exc:  # the target cannot run this op at this size (out of memory,
                        # a dtype it lacks): no point there or above, and why kept, so that it is not silent
                        out.setdefault("stopped", {})[f"{dtype} {op}"] = f"at {size}: {type(exc).__name__}: {exc}"[:200]
                        break
                    points.append([x, seconds])
                ops[op] = points
            if "matmul" in ops:
                out["gemm"][dtype] = [[n, 2.0 * n**3 / s] for n, s in ops["matmul"] if s > 0]
    return out


COMPILES_ON_FIRST_CALL = frozenset({"cupy"})
_FIRST_CALL_OPS = ("linalg.solve", "linalg.svd", "linalg.lstsq")
_FIRST_CALLS_WAIT_S = 60.0


def _start_first_calls(names: list[str], quick: bool) -> list[subprocess.Popen]:
    """Children making the first calls of the targets named in ``COMPILES_ON_FIRST_CALL``: of its
    solvers at every size and dtype their calibration measures, one child each where there are
    cores enough (four are left to the measurements), the largest sizes spread first; and of every
    other op at every size and dtype it measures, in one child (``others``). They start before
    the target is looked for here, where its library is installed and a GPU is present
    (``_likely``), so that their compiles overlap the parent's imports and CUDA contexts. None
    on a machine calibrated before with these libraries (it has compiled them, and the children
    would only slow the calibration). Other versions, as after an upgrade, compile anew. None
    either where the driver keeps no cache, or on a machine of few cores."""
    slots = (os.cpu_count() or 1) - 4
    if (os.environ.get("CUDA_CACHE_DISABLE") == "1" or slots < 2
            or calibration._default_path(calibration.fingerprint()).exists()):
        return []
    children = []
    dtypes = [d for d in (calibration._QUICK_DTYPES if quick else calibration.DTYPES)
              if d in calibration.DTYPES]  # those its solvers are measured in
    for name in names:
        if name not in COMPILES_ON_FIRST_CALL or not _likely(name):
            continue
        calls = sorted(((size, op, dtype) for op, sizes, quick_sizes in calibration.REPRESENTATIVES
                        if op in _FIRST_CALL_OPS
                        for size in (quick_sizes if quick else sizes) for dtype in dtypes), reverse=True)
        shares = [[f"{op}:{size}:{dtype}" for size, op, dtype in calls[i::slots - 1]] for i in range(slots - 1)]
        shares.append(["others:quick" if quick else "others:full"])
        for share in filter(None, shares):
            children.append(subprocess.Popen(
                [sys.executable, "-c",
                 "import sys; from dispatch.measure import _first_calls; _first_calls()", name, *share],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    return children


def _likely(name: str) -> bool:
    """Whether target ``name`` will probably be found here, known without importing its library:
    the library is installed and the kernel's drivers list a GPU. (A child started in vain ends
    at its first call: its outcome does not matter.)"""
    import importlib.util

    return bool(calibration._driver_gpus()) and importlib.util.find_spec(name.split("-")[0]) is not None


def _first_calls() -> None:
    """A child of ``_start_first_calls``: ``argv`` names the target, then ``op:size:dtype`` calls,
    or ``others:quick`` (``others:full``): every op but the solvers, at every size and dtype such a
    calibration measures on it."""

    name, calls = sys.argv[1], [c.split(":") for c in sys.argv[2:]]
    target = targets.probe(name)
    if target is None:
        return
    if calls and calls[0][0] == "others":
        quick = calls[0][1] == "quick"
        calls = [(op, size, dtype) for dtype, representatives in calibration._plan(target, quick)
                 for op, sizes, quick_sizes in representatives if op not in _FIRST_CALL_OPS
                 for size in (quick_sizes if quick else sizes)]
    inputs = calibration._Inputs()
    with dispatch.using(name):
        for op, size, dtype in calls:
            _call_for(op)(*(dispatch.asarray(h).to(name) for h in inputs(op, int(size), dtype)))
            target.synchronize()


def _finish_first_calls(children: list[subprocess.Popen]) -> None:
    """Wait for the children (they only warm the driver's cache: their outcome does not matter)."""
    deadline = time.perf_counter() + _FIRST_CALLS_WAIT_S
    for child in children:
        try:
            child.wait(timeout=max(deadline - time.perf_counter(), 0.0))
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()


# Targets a quick calibration measures in a child process while this one imports torch (a third
# of a quick calibration's time): CuPy needs none of torch, and its measurements keep one core
# and the GPU busy, which the import leaves alone. The child is done before this process opens
# the GPU. Not where the first-call children run (their compiles disturb it), nor where torch is
# imported already (nothing to overlap), nor on a machine of few cores.
MEASURED_ASIDE = frozenset({"cupy"})
_ASIDE_WAIT_S = 30.0


def _start_aside(names: list[str], quick: bool) -> dict[str, subprocess.Popen]:
    """A child measuring each target of ``MEASURED_ASIDE`` among ``names`` (see there), by name:
    one that a torch target comes before in ``names``, the order they are looked for in."""
    if not quick or (os.cpu_count() or 1) < 4 or not _torch_to_import():
        return {}
    return {name: subprocess.Popen(
        [sys.executable, "-c", "from dispatch.measure import _measure_aside; _measure_aside()", name],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        for i, name in enumerate(names)
        if name in MEASURED_ASIDE and any(n.startswith("torch-") for n in names[:i]) and _likely(name)}


def _torch_to_import() -> bool:
    import importlib.util

    return "torch" not in sys.modules and importlib.util.find_spec("torch") is not None


def _measure_aside() -> None:
    """A child of ``_start_aside``: the target ``argv`` names, measured as a quick calibration
    measures it, with the seconds it took, as JSON on stdout."""

    target = targets.probe(sys.argv[1])
    if target is None:
        sys.exit(1)
    began = time.perf_counter()
    measured = _measure_target(target, True, calibration._Inputs(), lambda label: None)
    json.dump({"measured": measured, "seconds": time.perf_counter() - began}, sys.stdout)


def _finish_aside(child: subprocess.Popen) -> dict[str, Any] | None:
    """What ``child`` measured, or ``None`` where it failed (then this process measures it)."""
    try:
        out, _ = child.communicate(timeout=_ASIDE_WAIT_S)
        return json.loads(out) if child.returncode == 0 else None
    except subprocess.TimeoutExpired:
        child.kill()
        child.communicate()
    except ValueError:
        pass
    return None


def _ticker(total: int, progress: bool) -> Iterator[Callable[[str], None]]:
    if not progress:
        yield lambda label: None
        return
    try:
        from rich.console import Console
        from rich.progress import Progress
    except ImportError:
        count = [0]

        def plain(label: str) -> None:
            count[0] += 1
            print(f"\r[{count[0]}/{total}] {label:<40}", end="", file=sys.stderr, flush=True)

        yield plain
        print(file=sys.stderr)
        return
    with Progress(transient=True, console=Console(stderr=True)) as bar:  # stdout stays the caller's
        task = bar.add_task("calibrating", total=total)
        yield lambda label: bar.update(task, advance=1, description=f"calibrating {label}")


def calibrate(quick: bool = False, progress: bool = True, save: bool = True,
              only: tuple[str, ...] | None = None) -> calibration.Calibration:
    """Measure every available target (or only ``only``), store the result, start routing by it.

    A full calibration takes under 30 seconds; ``quick=True`` under 5 seconds.
    """
    start = time.perf_counter()
    calibration._SPREAD[:] = [0, 0]
    calibration._retried_s.clear()
    calibration.note_load(reset=True)
    phases: dict[str, float] = {}  # seconds spent on other things than measuring the targets
    wanted = [name for name in router.PRICED if only is None or name in only]
    children = _start_first_calls(wanted, quick)  # before any target is looked for
    aside = {} if children else _start_aside(wanted, quick)
    measured_aside: dict[str, dict[str, Any]] = {}
    ticker = None
    try:
        found = []
        for name in wanted:  # the host targets first: torch-cpu's probe is the import _start_aside's children overlap
            if name in aside and (done := _finish_aside(aside.pop(name))) is not None:
                measured_aside[name] = done
            if (target := targets.probe(name)) is not None:
                found.append(target)
        info = calibration.machine()
        inputs = calibration._Inputs()
        result: dict[str, Any] = {}
        ticker = _ticker(sum(len(ops) for target in found for _, ops in calibration._plan(target, quick)), progress)
        tick = next(ticker)
        # While the children run: every device, last and but for its solvers those whose first
        # calls the children make. Then, undisturbed, those solvers, and the host targets.
        devices = sorted((t for t in found if not t.device.is_host), key=lambda t: t.name in COMPILES_ON_FIRST_CALL) \
            if children else []
        compiling = {t.name for t in devices if t.name in COMPILES_ON_FIRST_CALL}
        seconds = dict.fromkeys((t.name for t in found), 0.0)
        phases["finding the targets"] = time.perf_counter() - start
        for target in devices:
            began = time.perf_counter()
            result[target.name] = _measure_target(target, quick, inputs, tick, (lambda op: op not in _FIRST_CALL_OPS)
                                                  if target.name in compiling else (lambda op: True))
            seconds[target.name] += time.perf_counter() - began
        began = time.perf_counter()
        _finish_first_calls(children)
        phases["waiting for the first calls"] = time.perf_counter() - began
        children = []
        for target in found:
            began = time.perf_counter()
            if target.name in compiling:
                _measure_ops(target, quick, inputs, tick, result[target.name], lambda op: op in _FIRST_CALL_OPS)
            elif target.name in measured_aside:
                result[target.name] = measured_aside[target.name]["measured"]
                seconds[target.name] = measured_aside[target.name]["seconds"]
                for dtype, representatives in calibration._plan(target, quick):
                    for op, *_ in representatives:
                        tick(f"{target.name} {dtype} {op}")
            elif target not in devices:
                result[target.name] = _measure_target(target, quick, inputs, tick)
            seconds[target.name] += time.perf_counter() - began
        # What is still far off its curve after its retries is measured again once every target
        # was: what disturbed it has had the others' time to pass (a busy core stalls a threaded
        # BLAS at every barrier, and one bad point ends an op's ladder and misprices every larger
        # size). A child's figures stand (CuPy's first calls stay out of here).
        for target in found:
            if (target.name not in measured_aside and calibration._may_retry(target.name, quick)
                    and (disturbed := calibration._off_curve_ops(result[target.name]))):
                began = time.perf_counter()
                _measure_ops(target, quick, inputs, lambda label: None, result[target.name], disturbed.__contains__)
                seconds[target.name] += time.perf_counter() - began
                calibration._retried_s[target.name] = (calibration._retried_s.get(target.name, 0.0)
                                                       + time.perf_counter() - began)
            result[target.name]["seconds"] = round(seconds[target.name], 2)
    finally:
        _finish_first_calls(children)
        for child in aside.values():  # measuring failed before its target was looked for
            child.kill()
            child.communicate()
        if ticker is not None:
            with contextlib.suppress(StopIteration):
                next(ticker)
    aside_names = [t.name for t in found if t.name in measured_aside]
    began = time.perf_counter()
    # each target's start-up (import, context, first call), in fresh processes: what the router
    # charges the first call that would bring it up (dispatch.routing.startup)
    started = startup_seconds([t.name for t in found if t.name != "numpy"])
    phases["timing start-up"] = time.perf_counter() - began
    cal = calibration.Calibration(
        fingerprint=calibration.fingerprint(info),
        machine=info,
        targets={t.name: result[t.name] for t in found},
        quick=quick,
        created=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        seconds=round(time.perf_counter() - start, 2),
        extra={"phases": {k: round(v, 2) for k, v in phases.items()},
               **({"measured_aside": aside_names} if aside_names else {}), **_dask_extra(result),
               "disturbed": list(calibration._SPREAD), "startup": started},
    )
    calibration.note_load()
    if (note := calibration.busy_note()) is not None:
        logging.getLogger("dispatch").warning(note)
    if save:
        cal.save()
        calibration._loaded[cal.fingerprint] = cal
    router.use_calibration(cal)
    return cal


def _dask_extra(measured: dict[str, Any]) -> dict[str, Any]:
    """With a Dask cluster connected, its per-task overhead and the chunk size chosen from it
    (``"dask"`` in the calibration file); the chunk size serves this session at once."""

    client = cluster.client() if cluster.connected() else None
    if client is None:
        return {}
    overhead = calibration.dask_task_overhead(client)
    chunk = calibration.dask_chunk_bytes(client, measured.get("numpy", {}).get("memory_bandwidth"), overhead)
    where = cluster.address() or ""
    cluster._measured_chunk[where] = chunk
    return {"dask": {"scheduler": where, "task_overhead_s": overhead, "chunk_bytes": chunk}}


# ---- each target's start-up, in fresh processes ----------------------------------------------------

_CHILD = """
import json, sys, time
import numpy as np
name, library = sys.argv[1], sys.argv[2]
start = time.perf_counter()
try:
    __import__(library)
except Exception as exc:
    print(json.dumps({"error": f"{type(exc).__name__}: {exc}"})); sys.exit()
imported = time.perf_counter()
from dispatch import targets
from dispatch.base.ops import op_named
target = targets.probe(name)
if target is None:
    print(json.dumps({"error": targets.unavailable().get(name, "unavailable")})); sys.exit()
x = target.from_host(np.ones(4))
target.synchronize()
context = time.perf_counter()
target.run(op_named("add"), (x, x), {})
target.synchronize()
first = time.perf_counter()
print(json.dumps({"import_s": imported - start, "context_s": context - imported, "first_call_s": first - context}))
"""


def startup_seconds(names: list[str], timeout: float = 120.0) -> dict[str, dict[str, float]]:
    """Each target's start-up, timed in a fresh process of its own (the library's import, the
    device's context with a first copy, and a first call): ``{name: {"import_s", "context_s",
    "first_call_s"}}``; a target that fails to start is left out."""
    found = {}
    for name in names:
        if name not in startup.LIBRARY:
            continue
        start = time.perf_counter()
        try:
            child = _Popen([sys.executable, "-c", _CHILD, name, startup.LIBRARY[name]], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
        except OSError:
            continue
        try:
            out, _ = child.communicate(timeout=timeout)
            data = json.loads(out.strip().splitlines()[-1])
        except subprocess.TimeoutExpired:
            child.kill()
            child.communicate()
            continue
        except (ValueError, IndexError):
            continue
        if "error" not in data:
            found[name] = {k: round(float(v), 4) for k, v in data.items()}
            found[name]["process_s"] = round(time.perf_counter() - start, 4)
    return found
