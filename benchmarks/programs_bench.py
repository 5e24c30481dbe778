"""Programs nobody tuned on, run as their users run them: against NumPy and every forced target.

    python -m benchmarks.programs_bench --mode cold [--only a,b] [--repeats 3] [--json out.json]
    python -m benchmarks.programs_bench --mode warm [--half validation] [--targets numpy,torch-cpu]

The programs are ``benchmarks.programs``: plain NumPy scripts from public sources, split once
into a tuning half and a validation half; each half gets its own table and totals.

``--mode cold``: every run is a fresh process, timed by the wall clock around it (interpreter
start, imports, the program, its output):

- ``numpy``: ``python SCRIPT``, the script as written (``import numpy as np``);
- ``auto 1``, ``auto 2``, ``auto 3``: ``python -m dispatch run SCRIPT``, three runs in a row,
  dispatch routing; whatever dispatch keeps between processes (today: the calibration, and
  whatever else it stores in its cache folder) is kept from run 1 to run 3, and dropped before
  run 1: each round's three runs share a cache folder of their own that starts with this
  machine's calibration files only;
- ``forced:TARGET``: ``DISPATCH_BACKEND=TARGET python -m dispatch run SCRIPT`` for each target
  that dispatch finds here (``dispatch.targets.available()``, but Dask unless named: see
  ``NOT_FORCED_BY_DEFAULT``; ``--targets`` chooses them), with a fresh cache folder of its own too.

Each round runs every contender once, the three auto runs together, in an order that rotates
from round to round, so that a drifting load on a shared machine hits all alike. The table
gives the best of the rounds; the JSON keeps every time, and the totals are given by best and
by median. The JSON's ``up`` says which engines each auto run left up, with what their
bring-ups took, as the file that run kept for the next says (``engines_kept``).

``--mode warm``: a warm process per program and contender: the program's ``main`` imported
with ``np`` bound to NumPy, or to dispatch (routing, or ``dispatch.set_backend(TARGET)`` for the
whole run), in a process of its own, started together and kept alive; one warm-up run of every
contender, then ``--repeats`` rounds (3) in rotating order; best of the rounds (the JSON's ``up``
says which engines were up in each dispatch worker after each run). The router keeps
what it learns over its process's runs, as a notebook running the program again would; no
contender inherits another's history, memory pools or engines, and none reads or keeps what a
script's runs learn (``DISPATCH_LEARN=0``: a notebook has no script file). Each dispatch
worker ends a run as a notebook's cell ends (``dispatch.notebook.cell_ended``, which IPython
calls): the router may then bring up, in the background, an engine the runs would have saved on,
while the worker waits for its next run as a kernel waits for its user. The worker replies once
every bring-up under way has ended, untimed: a user's pause longer than a bring-up, and no other
contender's run sharing the host with one. Beside the best single forced target, each program
gets a true oracle (``benchmarks.oracle``): the placement minimising its total time over its
recorded call graph, from measured per-call costs and transfers (``--no-oracle`` leaves it out).

Outputs: every run's printed summary is compared with NumPy's: ``exact`` (the same text),
``close`` (the same text but for numbers within the stated tolerance: a number with a decimal
point or an exponent may differ by a relative 1e-6 or by one unit of its last printed digit,
whichever is larger; integers must be equal), else ``DIFFERS`` (or ``ERROR`` where the run
failed). Each table shows per program NumPy's time, each forced target's over NumPy's, the
auto mode's over NumPy's and over the best forced target's, and the worst output match.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
import warnings
from collections.abc import Callable
from typing import Any

from benchmarks import programs

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HALVES = ("tuning", "validation")
AUTO_RUNS = ("auto 1", "auto 2", "auto 3")

# ---- comparing printed summaries ------------------------------------------------------------------

_NUMBER = re.compile(r"[-+]?(?:nan|inf|(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)")
RTOL = 1e-6


def _last_digit(token: str) -> float:
    """One unit of the last printed digit of a float token (``'0.0012'`` -> 1e-4, ``'3.1e-05'`` -> 1e-6)."""
    mantissa, _, exponent = token.lower().partition("e")
    decimals = len(mantissa.partition(".")[2])
    return 10.0 ** (-decimals + (int(exponent) if exponent else 0))


def compare(reference: str, output: str) -> str:
    """``exact``, ``close`` (numbers within the tolerance, text equal) or ``DIFFERS``."""
    if output == reference:
        return "exact"
    ref, out = _NUMBER.findall(reference), _NUMBER.findall(output)
    if len(ref) != len(out) or _NUMBER.sub("#", reference) != _NUMBER.sub("#", output):
        return "DIFFERS"
    for a, b in zip(ref, out, strict=True):
        if a == b:
            continue
        if not any(c in a.lower() for c in ".e") or "n" in a.lower():  # integers, nan, inf: exact
            return "DIFFERS"
        x, y = float(a), float(b)
        if abs(x - y) > max(RTOL * max(abs(x), abs(y)), _last_digit(a) * 1.000001):
            return "DIFFERS"
    return "close"


_MATCH_ORDER = ("exact", "close", "DIFFERS", "ERROR")


def worst(matches: list[str]) -> str:
    return max(matches, key=_MATCH_ORDER.index) if matches else "-"


# ---- the targets ----------------------------------------------------------------------------------


# Not forced unless named: Dask is the target for data larger than one machine's memory, reached
# by size; forced for every call of a program it computes each small array as a graph (the heat
# equation at a 21 x 21 grid took 49 s on the 2-core machine, against milliseconds on NumPy).
NOT_FORCED_BY_DEFAULT = frozenset({"dask"})


def available_targets() -> list[str]:
    """The targets dispatch finds on this machine, in its own order, but those in
    ``NOT_FORCED_BY_DEFAULT`` (probing them imports their libraries: only this harness's process
    pays, never a timed one)."""
    from dispatch import targets

    return [t for t in targets.available() if t not in NOT_FORCED_BY_DEFAULT]


# ---- cold: a fresh process per run ----------------------------------------------------------------


def _calibration_files(cache: str) -> list[str]:
    if not os.path.isdir(cache):
        return []
    return [os.path.join(cache, f) for f in os.listdir(cache) if f.startswith("calibration-")]


def _fresh_cache(base: str) -> str:
    """A cache folder holding only the machine's calibration files from ``base``."""
    folder = tempfile.mkdtemp(prefix="programs-bench-cache-")
    for f in _calibration_files(base):
        shutil.copy2(f, folder)
    return folder


def _command(contender: str, script: str, size: list[str]) -> tuple[list[str], dict[str, str]]:
    if contender == "numpy":
        return [sys.executable, script, *size], {}
    env = {}
    if contender.startswith("forced:"):
        env["DISPATCH_BACKEND"] = contender.split(":", 1)[1]
    return [sys.executable, "-m", "dispatch", "run", script, *size], env


def _run_process(contender: str, script: str, size: list[str], cache: str, timeout: float) -> dict[str, Any]:
    argv, extra = _command(contender, script, size)
    env = {k: v for k, v in os.environ.items() if k != "DISPATCH_BACKEND"}  # routing unless forced here
    env.update(extra, DISPATCH_CACHE_DIR=cache)
    start = time.perf_counter()
    try:
        done = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"seconds": time.perf_counter() - start, "rc": None, "stdout": "", "stderr": f"timed out ({timeout} s)"}
    seconds = time.perf_counter() - start
    return {"seconds": seconds, "rc": done.returncode, "stdout": done.stdout, "stderr": done.stderr[-2000:]}


def cold_program(name: str, contenders: list[str], repeats: int, base_cache: str, size: list[str],
                 timeout: float, log: Callable[[str], None]) -> dict[str, Any]:
    """Every contender's fresh-process runs of one program, ``repeats`` rounds in rotating order."""
    script = programs.path(name)
    units = [c for c in contenders if c not in AUTO_RUNS]
    if any(c in AUTO_RUNS for c in contenders):
        units.insert(1, "auto")
    runs: dict[str, list[dict[str, Any]]] = {c: [] for c in contenders}
    caches = []
    for r in range(repeats):
        order = units[r % len(units):] + units[:r % len(units)]
        for unit in order:
            cache = _fresh_cache(base_cache)
            caches.append(cache)
            for contender in (AUTO_RUNS if unit == "auto" else (unit,)):
                if contender in runs:
                    done = _run_process(contender, script, size, cache, timeout)
                    if unit == "auto":
                        done["up"] = engines_kept(cache, script)
                    runs[contender].append(done)
    for cache in caches:
        shutil.rmtree(cache, ignore_errors=True)
    return _summarise(name, runs, log)


def engines_kept(cache: str, script: str) -> dict[str, float | None]:
    """The engines other than NumPy that ``dispatch run SCRIPT`` left up, as the file it kept
    for ``script`` in ``cache`` says, each with the seconds its bring-up took where kept."""
    from dispatch.base import cachefiles
    from dispatch.routing import learned

    try:  # (the file's name as ``learned`` makes it, in the run's cache folder)
        kept = cachefiles.read_json(os.path.join(cache, learned.FOLDER, learned.path_for(script).name))
        took = kept.get("bringup") or {}
        return {str(name): took.get(name) for name in kept.get("targets", ())}
    except (OSError, ValueError, AttributeError, TypeError):
        return {}


def _summarise(name: str, runs: dict[str, list[dict[str, Any]]], log: Callable[[str], None]) -> dict[str, Any]:
    reference = next((r["stdout"] for r in runs.get("numpy", []) if r["rc"] == 0), None)
    result: dict[str, Any] = {"program": name, "half": programs.SPLIT[name], "best": {}, "median": {},
                              "seconds": {}, "match": {}, "errors": {}}
    for contender, done in runs.items():
        ok = [r for r in done if r["rc"] == 0]
        times = [r["seconds"] for r in done]
        result["seconds"][contender] = times
        if ok:
            result["best"][contender] = min(r["seconds"] for r in ok)
            result["median"][contender] = statistics.median(r["seconds"] for r in ok)
        matches = ["ERROR" if r["rc"] != 0 else (compare(reference, r["stdout"]) if reference is not None else "-")
                   for r in done]
        result["match"][contender] = worst(matches)
        if any(r.get("up") for r in done):  # which engines were up after each run (warm workers, kept files)
            result.setdefault("up", {})[contender] = [r.get("up", {}) for r in done]
        failed = [r for r in done if r["rc"] != 0]
        if failed:
            result["errors"][contender] = failed[0]["stderr"].strip().splitlines()[-16:] or ["(no message)"]
        differs = [r["stdout"] for r in done if r["rc"] == 0 and reference is not None
                   and compare(reference, r["stdout"]) == "DIFFERS"]
        if differs:
            result.setdefault("outputs", {})[contender] = differs[0]
    if reference is not None:
        result["reference"] = reference
    log(f"  {name}: " + ", ".join(f"{c} {s:.3f} s" for c, s in result["best"].items())
        + "; " + ", ".join(f"{c} {m}" for c, m in result["match"].items() if m not in ("exact", "-")))
    return result


def prime(name: str, targets: list[str], base_cache: str, timeout: float) -> None:
    """Run ``name`` at its tiny size once in each dispatch mode, untimed: bytecode compiled,
    files read and device kernels compiled (CuPy's on-disk cache) before anything is timed, as a
    user's second script finds them."""
    for contender in ("auto", *(f"forced:{t}" for t in targets)):
        cache = _fresh_cache(base_cache)
        _run_process(contender, programs.path(name), [str(_tiny(name))], cache, timeout)
        shutil.rmtree(cache, ignore_errors=True)


def _tiny(name: str) -> int:
    return programs.load(name).TINY


# ---- warm: one process ------------------------------------------------------------------------------


def _call(main: Callable[..., None], size: list[str]) -> str:
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        main(*(int(s) for s in size))
    return buf.getvalue()


def _worker(name: str, contender: str, size: list[str]) -> None:
    """One warm contender of one program, in a process of its own: a run per ``run`` line read on
    stdin, its time and output written back as one JSON line; EOF ends it."""
    results = os.fdopen(os.dup(sys.stdout.fileno()), "w")
    sys.stdout = sys.stderr  # a stray print must not reach the reply channel
    if contender == "numpy":  # a plain NumPy process: dispatch is not even imported
        import numpy

        main = programs.load_with(name, numpy).main
    else:
        import dispatch
        from dispatch.notebook import cell_ended

        main_routed = programs.load_with(name, dispatch).main
        if contender.startswith("forced:"):  # for the whole process, as DISPATCH_BACKEND forces it
            dispatch.set_backend(contender.split(":", 1)[1])

        def main(*args: Any) -> None:
            main_routed(*args)
            cell_ended()  # the cell has ended, the kernel waits: as IPython tells dispatch (dispatch.notebook)
    up = _engines_up if contender != "numpy" else dict
    for line in sys.stdin:
        if line.strip() != "run":
            break
        start = time.perf_counter()
        try:
            out, rc, err = _call(main, size), 0, ""
        except Exception as exc:  # its traceback's end, where dispatch's own frames say why
            out, rc, err = "", 1, "".join(traceback.format_exception(exc)[-8:])
        seconds = time.perf_counter() - start
        if contender != "numpy":
            _bring_ups_end()
        reply = {"seconds": seconds, "rc": rc, "stdout": out, "stderr": err, "up": up()}
        results.write(json.dumps(reply) + "\n")
        results.flush()


def _bring_ups_end(timeout: float = 120.0) -> None:
    """Wait, untimed, for the engines coming up in the background to be up: the user pauses
    between cells for longer than a bring-up, and no other contender's run shares the host with one."""
    from dispatch.routing import bringup

    for name in bringup.starting():
        bringup.wait(name, timeout)


def _engines_up() -> dict[str, float | None]:
    """The engines up in this process after a run, but NumPy: each with the seconds its background
    bring-up took (``None``: brought up on the program's thread, as a forced target is)."""
    from dispatch import targets
    from dispatch.routing import bringup

    taken = bringup.seconds_taken()
    return {name: taken.get(name) for name in sorted(targets.registry.up()) if name != "numpy"}


class _Contender:
    """A warm contender's worker process (``_worker``), started once per program."""

    def __init__(self, name: str, contender: str, size: list[str], timeout: float) -> None:
        env = {k: v for k, v in os.environ.items() if k != "DISPATCH_BACKEND"}  # routing unless forced here
        env["DISPATCH_LEARN"] = "0"  # a notebook's kernel: no script whose earlier runs are kept (or shared by all)
        self.timeout = timeout
        self.err = tempfile.TemporaryFile("w+")  # a file, not a pipe: a chatty worker never blocks on it
        self.proc = subprocess.Popen([sys.executable, "-m", "benchmarks.programs_bench", "--worker", name, contender,
                                      *size], cwd=REPO, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.err, text=True)

    def run(self) -> dict[str, Any]:
        try:
            self.proc.stdin.write("run\n")
            self.proc.stdin.flush()
            line = self.proc.stdout.readline()
        except (BrokenPipeError, OSError):
            line = ""
        if not line:
            return {"seconds": 0.0, "rc": self.proc.poll() or 1, "stdout": "", "stderr": self.close()[-2000:]}
        return json.loads(line)

    def close(self) -> str:
        """End the worker; what it wrote to stderr."""
        with contextlib.suppress(OSError):
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=self.timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.err.seek(0)
        return self.err.read()


# Between two warm runs: the BLAS threads of the process that ran last spin for more work for about
# 0.1 s (``dispatch.base.blas_spin``), on the cores the next contender's run would share with them.
SETTLE_S = 0.3


def warm_program(name: str, targets: list[str], repeats: int, size: list[str], log: Callable[[str], None],
                 oracle_of: Callable[..., dict[str, Any]] | None = None, timeout: float = 300.0) -> dict[str, Any]:
    """Every contender of one program warm, each in a process of its own (so that what one
    contender leaves in a process, a forced target's history or memory pool, never meets
    another's): one warm-up run each, then ``repeats`` rounds in rotating order."""
    order = ["numpy", "auto", *(f"forced:{t}" for t in targets)]
    workers = {c: _Contender(name, c, size, timeout) for c in order}
    runs: dict[str, list[dict[str, Any]]] = {c: [] for c in order}
    try:
        for contender in order:  # the warm-up, untimed
            workers[contender].run()
            time.sleep(SETTLE_S)
        for r in range(repeats):
            for contender in order[r % len(order):] + order[:r % len(order)]:
                runs[contender].append(workers[contender].run())
                time.sleep(SETTLE_S)
    finally:
        for worker in workers.values():
            worker.close()
    result = _summarise(name, runs, log)
    if oracle_of is not None:
        import dispatch

        routed = programs.load_with(name, dispatch).main
        whole = {c.removeprefix("forced:"): s for c, s in result["best"].items()  # (runs that printed NumPy's output)
                 if c.startswith("forced:") and result["match"].get(c) not in ("DIFFERS", "ERROR")}
        result["oracle"] = oracle_of(routed, result["best"].get("numpy"), size, whole)
        seconds = result["oracle"].get("seconds")
        if seconds is not None:
            result["best"]["oracle"] = seconds
            log(f"    oracle {seconds:.3f} s ({result['oracle']['method']}, {result['oracle']['placed']})")
    return result


def _oracle_of(targets: list[str]) -> Callable[..., dict[str, Any]]:
    """The warm table's oracle (``benchmarks.oracle``): each target's recorded run of the program,
    the bus measured once, the cheapest placement of the recorded graph."""
    from benchmarks import oracle

    names = list(dict.fromkeys(["numpy", *targets]))
    transfer = oracle.transfer_model(names)

    def of(routed: Callable[..., None], numpy_seconds: float | None, size: list[str],
           whole: dict[str, float]) -> dict[str, Any]:
        try:
            return oracle.oracle(oracle.record(routed, size, names), transfer, numpy_seconds, whole)
        except Exception as exc:  # reported in the table as a missing oracle
            return {"error": f"{type(exc).__name__}: {exc}"}

    return of


# ---- the tables -------------------------------------------------------------------------------------


def _ratio(a: float | None, b: float | None) -> str:
    return f"{a / b:.2f}x" if a and b else "-"


def _best_forced(times: dict[str, float]) -> tuple[str, float] | None:
    forced = [(c, s) for c, s in times.items() if c.startswith("forced:")]
    return min(forced, key=lambda cs: cs[1]) if forced else None


def table(results: list[dict[str, Any]], half: str, mode: str) -> list[str]:
    """A Markdown table of one half's programs, then its totals (by best and by median)."""
    rows = [r for r in results if r["half"] == half]
    if not rows:
        return []
    forced = sorted({c for r in rows for c in r["seconds"] if c.startswith("forced:")})
    autos = [c for c in ("auto", *AUTO_RUNS) if any(c in r["seconds"] for r in rows)]
    last = autos[-1]
    oracle = any("oracle" in r["best"] for r in rows)
    head = ["program", "NumPy s", *(f"forced {c[7:]} / NumPy" for c in forced), *(f"{a} / NumPy" for a in autos),
            *(f"{a} / best forced" for a in dict.fromkeys((autos[0], last))),
            *(("oracle / NumPy", f"{last} / oracle") if oracle else ()), "output"]
    lines = [f"**{half} half** ({len(rows)} programs, {mode})", "",
             "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        b = r["best"]
        numpy_s = b.get("numpy")
        bf = _best_forced(b)
        matches = [m for c, m in r["match"].items() if c != "numpy"]
        cells = [r["program"], f"{numpy_s:.3f}" if numpy_s else "-",
                 *(_ratio(b.get(c), numpy_s) for c in forced), *(_ratio(b.get(a), numpy_s) for a in autos),
                 *(_ratio(b.get(a), bf[1] if bf else None) + (f" ({bf[0][7:]})" if bf and a == last else "")
                   for a in dict.fromkeys((autos[0], last))),
                 *((_ratio(b.get("oracle"), numpy_s), _ratio(b.get(last), b.get("oracle"))) if oracle else ()),
                 worst(matches)]
        lines.append("| " + " | ".join(cells) + " |")
    for stat in ("best", "median"):
        common = [r for r in rows if all(c in r[stat] for c in ("numpy", *autos, *forced))]
        if not common:
            continue
        total = {c: sum(r[stat][c] for r in common) for c in ("numpy", *autos, *forced)}
        bf_total = sum(_best_forced(r[stat])[1] for r in common) if forced else None
        with_oracle = [r for r in common if "oracle" in r["best"]]
        oracle_total = sum(r["best"]["oracle"] for r in with_oracle)
        cells = [f"total ({stat}, {len(common)})", f"{total['numpy']:.3f}",
                 *(_ratio(total[c], total["numpy"]) for c in forced),
                 *(_ratio(total[a], total["numpy"]) for a in autos),
                 *(_ratio(total[a], bf_total) for a in dict.fromkeys((autos[0], last))),
                 *((_ratio(oracle_total, sum(r[stat]["numpy"] for r in with_oracle)),
                    _ratio(sum(r[stat][last] for r in with_oracle), oracle_total)) if oracle and stat == "best"
                   else ("", "") if oracle else ()), ""]
        lines.append("| " + " | ".join(cells) + " |")
    bad = [(r["program"], c, m) for r in rows for c, m in r["match"].items() if m in ("DIFFERS", "ERROR")]
    lines.append("")
    lines.append("outputs: " + ("every run matched NumPy's (exact or within the tolerance)" if not bad else
                                "; ".join(f"{p} {c}: {m}" for p, c, m in bad)))
    return lines


def report(out: dict[str, Any]) -> list[str]:
    """The tables of a run (``main``'s result, or its JSON), mode by mode and half by half."""
    lines = [f"machine: {out['machine']}; targets: {', '.join(out['targets'])}; "
             f"calibrated: {'yes' if out['calibrated'] else 'no (routing by the seed table)'}; "
             f"rounds: {out['repeats']}"]
    for mode, done in out["modes"].items():
        lines += ["", f"## {mode}", ""]
        for half in HALVES:
            lines += [*table(done["programs"], half, "fresh processes" if mode == "cold" else "warm process"), ""]
    return lines


def _machine() -> str:
    from dispatch.routing import calibration

    info = calibration.machine()
    gpus = ", ".join(g.get("name", "?") for g in info.get("gpus", [])) or "no GPU"
    return f"{info.get('cpu', platform.processor())} x{info.get('cpu_count', os.cpu_count())}, {gpus}"


def save(path: str, found: dict) -> None:
    """Write what a run measured so far as JSON (after each program, so a run cut short keeps it)."""
    with open(path, "w") as f:
        json.dump(found, f, indent=1)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=("cold", "warm", "both"), default="both")
    parser.add_argument("--half", choices=("all", *HALVES), default="all")
    parser.add_argument("--only", default="", help="comma-separated program names")
    parser.add_argument("--targets", default="", help="forced targets (default: every target dispatch finds here)")
    parser.add_argument("--repeats", type=int, default=3, help="timed rounds (default 3)")
    parser.add_argument("--size", choices=("default", "tiny"), default="default",
                        help="each program's SIZE (default) or TINY (a quick check of the harness)")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds a fresh-process run may take")
    parser.add_argument("--json", metavar="FILE", help="write every time and output match to FILE")
    parser.add_argument("--no-oracle", action="store_true", help="warm mode: leave out the oracle (benchmarks.oracle)")
    parser.add_argument("--report", metavar="FILE", help="print the tables of a --json FILE (measure nothing)")
    parser.add_argument("--worker", nargs="+", metavar="ARG", help=argparse.SUPPRESS)  # NAME CONTENDER [SIZE]
    args = parser.parse_args(argv)
    if args.worker:
        _worker(args.worker[0], args.worker[1], args.worker[2:])
        return {}
    if args.report:
        with open(args.report) as f:
            saved = json.load(f)
        print("\n".join(report(saved)))
        return saved

    from dispatch.routing import calibration

    names = [n for n in programs.NAMES if (args.half == "all" or programs.SPLIT[n] == args.half)
             and (not args.only or n in args.only.split(","))]
    targets = [t for t in args.targets.split(",") if t] or available_targets()
    base_cache = str(calibration.cache_dir())
    calibrated = bool(_calibration_files(base_cache)) and calibration.load() is not None

    def log(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    out: dict[str, Any] = {"machine": _machine(), "platform": platform.platform(), "targets": targets,
                           "calibrated": calibrated, "repeats": args.repeats, "size": args.size, "modes": {}}
    modes = ("cold", "warm") if args.mode == "both" else (args.mode,)
    for mode in modes:
        log(f"{mode}: {len(names)} programs")
        started = time.perf_counter()
        results: list[dict[str, Any]] = []
        out["modes"][mode] = {"programs": results}
        contenders = ["numpy", *AUTO_RUNS, *(f"forced:{t}" for t in targets)]
        oracle_of = None
        if mode == "cold":
            prime(names[0], targets, base_cache, args.timeout)
        for name in names:
            size = [str(_tiny(name))] if args.size == "tiny" else []
            if mode == "cold":
                results.append(cold_program(name, contenders, args.repeats, base_cache, size, args.timeout, log))
            else:
                if oracle_of is None and not args.no_oracle:
                    oracle_of = _oracle_of(targets)
                results.append(warm_program(name, targets, args.repeats, size, log, oracle_of, args.timeout))
            if args.json:  # program by program, so that a run cut short keeps what it measured
                save(args.json, out)
        out["modes"][mode]["seconds"] = time.perf_counter() - started
    lines = report(out)
    print("\n".join(lines))
    out["summary"] = lines
    if args.json:
        save(args.json, out)
    return out


if __name__ == "__main__":
    main()
