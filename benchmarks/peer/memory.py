"""Peak memory of NumPy's own tests in one long process, stock against ``import dispatch as np``.

The six modules that test public functions' values (``--modules`` picks others) run in one
``pytest`` process per variant, each variant in a fresh process, one after the other: a long
mixed run, where whatever dispatch keeps between calls (caches of arrays or results, memo
entries, lineage) adds up. The peak resident memory is the kernel's count for that process
(``ru_maxrss`` from ``os.wait4``), so a short spike between two samples is not missed; the
process is killed past ``--max-rss`` MB (its tree, sampled) or ``--timeout`` seconds.

    python -m benchmarks.peer.memory                 # the six modules
    python -m benchmarks.peer.memory --json memory.json --max-rss 6000
    python -m benchmarks.peer.memory --programs      # the example programs, each a fresh process

``--programs``: each program of ``benchmarks/programs`` at its default size, run as a user runs
it, ``python PROGRAM`` against ``python -m dispatch run PROGRAM`` (its NumPy imports made
dispatch's), each in a fresh process, in a cache folder of its own (what this machine's user
cache holds is left out), each program's peak compared with the same goal.

Goal: dispatch's peak at most 1.1 times stock's plus 100 MB. Exit status 1 where it is missed.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks.peer.harness import PASSED, read_record, watched
from benchmarks.peer.numpy_suite import child_env, prepare

SIX = ("_core/tests/test_numeric.py", "_core/tests/test_shape_base.py", "_core/tests/test_indexing.py",
       "lib/tests/test_function_base.py", "lib/tests/test_arraysetops.py", "linalg/tests/test_linalg.py")
RATIO, SLACK_MB = 1.1, 100.0  # the goal: dispatch's peak <= RATIO * stock's + SLACK_MB


def peak_of(args: list[str], *, cwd: Path, env: dict[str, str], timeout: float, max_rss_mb: float) -> dict:
    """Run ``python *args`` to its end (or its limits); its peak RSS in MB (the kernel's count for
    the process: ``ru_maxrss``, the larger of its own and any child's it waited for), status and
    seconds. The process tree's sampled sum is kept beside it (``tree_mb``) but is not the peak: a
    test that forks shows the parent's pages twice there, shared as they are."""
    _, status, sampled, own, seconds = watched([sys.executable, *args], cwd=cwd, env=env, stdout=subprocess.DEVNULL,
                                               timeout=timeout, max_rss_mb=max_rss_mb, every=0.2)
    return {"peak_mb": round(own, 1), "tree_mb": round(sampled, 1), "status": status, "seconds": round(seconds, 1)}


def measure(mods: tuple[str, ...] = SIX, *, timeout: float = 1800, max_rss_mb: float = 8192,
            work: Path | None = None, dispatch_env: dict[str, str] | None = None) -> dict:
    """Both variants' peaks over ``mods`` run in one process each, with the tests each passed;
    ``dispatch_env``: variables the dispatch run alone gets (``DISPATCH_BACKEND=numpy``)."""
    work = Path(work or tempfile.mkdtemp(prefix="peer-memory-"))
    packages = sorted({m.split("/")[0] for m in mods})
    roots = prepare(work, packages)
    for root in roots.values():  # one process imports them all: ``_core.tests``, ``lib.tests``, not ``tests`` twice
        for pkg in packages:
            (root / pkg / "__init__.py").touch()
    env = child_env(work, max_rss_mb)
    out = {}
    for variant, root in roots.items():
        record = work / f"{variant}-memory.jsonl"
        record.unlink(missing_ok=True)
        extra = (dispatch_env or {}) if variant == "dispatch" else {}
        run = peak_of(["-m", "pytest", "-p", "benchmarks.peer.record", *mods, "-q", "-m", "not slow",
                       "--rootdir", ".", "-c", "pytest.ini"], cwd=root,
                      env={**env, **extra, "PEER_RECORD": str(record)}, timeout=timeout, max_rss_mb=max_rss_mb)
        outcomes = read_record(record)
        run["passed"] = sum(o in PASSED for o, _ in outcomes.values())
        run["tests"] = len(outcomes)
        out[variant] = run
    stock, peer = out["stock"]["peak_mb"], out["dispatch"]["peak_mb"]
    out["limit_mb"] = round(RATIO * stock + SLACK_MB, 1)
    out["ratio"] = round(peer / stock, 3) if stock else None
    out["met"] = out["dispatch"]["status"] == "ok" and peer <= out["limit_mb"]
    return out


def measure_programs(names: tuple[str, ...], *, timeout: float = 600, max_rss_mb: float = 8192) -> dict:
    """Each program's peak, stock (``python PROGRAM``) and under ``python -m dispatch run``."""
    from benchmarks import programs

    repo = Path(__file__).resolve().parents[2]
    rows = []
    with tempfile.TemporaryDirectory(prefix="memory-cache-") as cache:
        env = {k: v for k, v in os.environ.items() if not k.startswith("DISPATCH_")}
        env.update({"PYTHONPATH": str(repo), "DISPATCH_CACHE_DIR": cache})
        for name in names:
            script = programs.path(name)
            stock = peak_of([script], cwd=repo, env=env, timeout=timeout, max_rss_mb=max_rss_mb)
            peer = peak_of(["-m", "dispatch", "run", script], cwd=repo, env=env, timeout=timeout,
                           max_rss_mb=max_rss_mb)
            limit = round(RATIO * stock["peak_mb"] + SLACK_MB, 1)
            rows.append({"program": name, "half": programs.SPLIT[name], "stock": stock, "dispatch": peer,
                         "limit_mb": limit, "met": peer["status"] == "ok" and peer["peak_mb"] <= limit})
    return {"programs": rows, "met": all(r["met"] for r in rows)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.peer.memory", description=__doc__.split("\n\n")[0])
    ap.add_argument("--modules", nargs="*", default=list(SIX), help="NumPy test modules, run in one process")
    ap.add_argument("--timeout", type=float, default=1800, help="seconds per variant (default 1800)")
    ap.add_argument("--max-rss", type=float, default=8192, help="MB a variant's process may hold (default 8192)")
    ap.add_argument("--json", type=Path, help="write the figures here")
    ap.add_argument("--dispatch-env", nargs="*", default=[], metavar="NAME=VALUE",
                    help="variables for the dispatch run alone (DISPATCH_BACKEND=numpy: no other target loaded)")
    ap.add_argument("--programs", nargs="*", metavar="NAME",
                    help="the example programs instead (all of benchmarks/programs, or those named)")
    a = ap.parse_args(argv)
    if a.programs is not None:
        return _programs_main(a)
    extra = dict(item.split("=", 1) for item in a.dispatch_env)
    with tempfile.TemporaryDirectory(prefix="peer-memory-") as scratch:
        res = measure(tuple(a.modules), timeout=a.timeout, max_rss_mb=a.max_rss, work=Path(scratch),
                      dispatch_env=extra)
    for variant in ("stock", "dispatch"):
        r = res[variant]
        print(f"{variant:<9} peak {r['peak_mb']:>8.0f} MB  {r['passed']:>5} of {r['tests']} tests passed  "
              f"{r['seconds']:>6.0f} s  {r['status']}")
    print(f"dispatch / stock {res['ratio']}; goal: at most {res['limit_mb']:.0f} MB "
          f"({RATIO} x stock + {SLACK_MB:.0f} MB): {'met' if res['met'] else 'missed'}")
    if a.json:
        a.json.write_text(json.dumps({"modules": a.modules, "dispatch_env": extra, **res}, indent=1), encoding="utf-8")
    return 0 if res["met"] else 1


def _programs_main(a: argparse.Namespace) -> int:
    from benchmarks import programs

    res = measure_programs(tuple(a.programs or programs.NAMES), timeout=a.timeout, max_rss_mb=a.max_rss)
    print("| program | half | NumPy peak MB | dispatch peak MB | dispatch / NumPy | goal (1.1 x + 100 MB) |")
    print("|---|---|---:|---:|---:|---|")
    for r in res["programs"]:
        stock, peer = r["stock"]["peak_mb"], r["dispatch"]["peak_mb"]
        status = "met" if r["met"] else f"missed ({r['dispatch']['status']})"
        print(f"| {r['program']} | {r['half']} | {stock:.0f} | {peer:.0f} | {peer / stock:.2f}x | {status} |")
    print(f"goal met on {sum(r['met'] for r in res['programs'])} of {len(res['programs'])}")
    if a.json:
        a.json.write_text(json.dumps(res, indent=1), encoding="utf-8")
    return 0 if res["met"] else 1


if __name__ == "__main__":
    sys.exit(main())
