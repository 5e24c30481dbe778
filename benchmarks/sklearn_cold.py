"""scikit-learn scripts run once, as users run them: the cold-start benchmark's scikit-learn half.

    python -m benchmarks.cold_start --sklearn [--rows lda=20000,lda=1000000] [--repeats 1] [--timeline] [--json F]

Each script of ``benchmarks/sklearn_scripts`` runs in fresh processes, timed by the wall clock
around each: stock scikit-learn (``python SCRIPT ROWS``); the script with
``dispatch.sklearn.accelerate()`` (``--accelerate``) three times in a row, what dispatch learned
kept between them (a cache folder of their own, starting with this machine's calibration files
only); and ``python -m dispatch run SCRIPT ROWS`` three times in a row likewise. Every output is
compared with stock scikit-learn's (``programs_bench.compare``).

Before the timed runs, each script runs once untimed in each way at a small size (``WARM_ROWS``), so that bytecode
is written and the libraries' files were read, as a user's second script finds them; on a GPU
machine also with each GPU target forced, in both ways, so that CuPy's disk cache holds the
kernels these estimators and the script's own NumPy calls use (CuPy compiles a kernel the first
time this machine ever runs it, paid once per machine, not per script: on a fresh H200 machine,
the first 1M-row `lda` under `dispatch run` spent 11.7 s in its fit, 4.2 s in `mean` of a boolean
array and 1.4 s in its draw compiling them; benchmarks/RESULTS.md).

With ``--timeline``, every timed run is watched (``benchmarks/timeline.py``: imports, each routed
call, the engines brought up, the exit), and each run's breakdown is kept in the JSON under
``timelines``: a slow run says where its seconds went.

The goals, per script: run 1 of either kind takes at most 1.05x stock's time, or stock's + 30 ms
where that is larger; on a machine with a GPU, a fit of 10 s or more stock gains at least 3x from
run 1 on.
"""

from __future__ import annotations

import os
import statistics
import sys
from typing import Any

from benchmarks import programs_bench

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "sklearn_scripts")
SCRIPTS = ("lda", "pca")
RUNS = ("1", "2", "3")
KINDS = ("accelerate", "run")
RUN1_RATIO, RUN1_SLACK_S, GPU_STOCK_S, GPU_GAIN = 1.05, 0.030, 10.0, 3.0
WARM_ROWS = 20_000  # the untimed runs' size: large enough for the kernels a large fit compiles


def _command(kind: str, script: str, rows: int) -> list[str]:
    if kind == "stock":
        return [sys.executable, script, str(rows)]
    if kind == "accelerate":
        return [sys.executable, script, str(rows), "--accelerate"]
    return [sys.executable, "-m", "dispatch", "run", script, str(rows)]


def _run(kind: str, script: str, rows: int, cache: str, timeout: float, backend: str = "",
         watch: bool = False) -> dict[str, Any]:
    import subprocess
    import time

    env = {k: v for k, v in os.environ.items() if k != "DISPATCH_BACKEND"}
    env["DISPATCH_CACHE_DIR"] = cache
    if backend:
        env["DISPATCH_BACKEND"] = backend
    if watch:
        from benchmarks import timeline

        done, seen = timeline.run(_command(kind, script, rows), env=env, cwd=programs_bench.REPO, timeout=timeout)
        if done is None:
            return {"seconds": seen["wall"], "rc": None, "stdout": "", "stderr": f"timed out ({timeout} s)",
                    "timeline": seen}
        return {"seconds": seen["wall"], "rc": done.returncode, "stdout": done.stdout,
                "stderr": seen.pop("stderr_tail")[-2000:], "timeline": seen}
    start = time.perf_counter()
    try:
        done = subprocess.run(_command(kind, script, rows), cwd=programs_bench.REPO, env=env, capture_output=True,
                              text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"seconds": time.perf_counter() - start, "rc": None, "stdout": "", "stderr": f"timed out ({timeout} s)"}
    return {"seconds": time.perf_counter() - start, "rc": done.returncode, "stdout": done.stdout,
            "stderr": done.stderr[-2000:]}


def measure(name: str, rows: int, repeats: int, base_cache: str, timeout: float, watch: bool = False) -> dict[str, Any]:
    """Stock, and each kind's runs 1-3 sharing a cache folder, ``repeats`` rounds in rotating order
    (``watch``: each run's timeline kept)."""
    import shutil

    script = os.path.join(HERE, f"{name}.py")
    units = ["stock", *KINDS]
    runs: dict[str, list[dict[str, Any]]] = {"stock": [], **{f"{k} {r}": [] for k in KINDS for r in RUNS}}
    for r in range(repeats):
        for unit in units[r % len(units):] + units[:r % len(units)]:
            if unit == "stock":
                runs["stock"].append(_run("stock", script, rows, base_cache, timeout, watch=watch))
                continue
            cache = programs_bench._fresh_cache(base_cache)
            for run in RUNS:
                runs[f"{unit} {run}"].append(_run(unit, script, rows, cache, timeout, watch=watch))
            shutil.rmtree(cache, ignore_errors=True)
    reference = next((r["stdout"] for r in runs["stock"] if r["rc"] == 0), None)
    best = {c: min(r["seconds"] for r in done if r["rc"] == 0) for c, done in runs.items()
            if any(r["rc"] == 0 for r in done)}
    match = {c: programs_bench.worst(["ERROR" if r["rc"] != 0 else programs_bench.compare(reference, r["stdout"])
                                      if reference is not None else "-" for r in done]) for c, done in runs.items()}
    errors = {c: next(r["stderr"].strip().splitlines()[-1:] for r in done if r["rc"] != 0)
              for c, done in runs.items() if any(r["rc"] != 0 for r in done)}
    out = {"script": name, "rows": rows, "best": best, "match": match, "errors": errors, "reference": reference,
           "seconds": {c: [r["seconds"] for r in done] for c, done in runs.items()},
           "median": {c: statistics.median(r["seconds"] for r in done) for c, done in runs.items()}}
    if watch:
        out["timelines"] = {c: [r.get("timeline") for r in done] for c, done in runs.items()}
    return out


def goals(result: dict[str, Any], gpu: bool) -> dict[str, bool]:
    """Run 1 of each kind against stock; on a GPU machine, a 10 s stock fit gains 3x from run 1."""
    best = result["best"]
    stock = best.get("stock")
    out: dict[str, bool] = {}
    if stock is None:
        return out
    for kind in KINDS:
        if f"{kind} 1" in best:
            out[f"{kind}_run1_ok"] = best[f"{kind} 1"] <= max(RUN1_RATIO * stock, stock + RUN1_SLACK_S)
        if gpu and stock >= GPU_STOCK_S and all(f"{kind} {r}" in best for r in RUNS):
            out[f"{kind}_gain_ok"] = max(best[f"{kind} {r}"] for r in RUNS) * GPU_GAIN <= stock
    return out


def table(results: list[dict[str, Any]], gpu: bool) -> list[str]:
    head = ["script", "rows", "stock s", *(f"{k} {r} s" for k in KINDS for r in RUNS), "accelerate 1 / stock",
            "run 1 / stock", "stock / slowest run", "goals", "output"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for res in results:
        b, g = res["best"], goals(res, gpu)
        stock = b.get("stock")
        later = [b[f"{k} {r}"] for k in KINDS for r in RUNS if f"{k} {r}" in b]
        missed = [n for n, ok in g.items() if not ok]
        cells = [res["script"], f"{res['rows']:,}", *(f"{b[c]:.2f}" if c in b else "-" for c in
                                                      ("stock", *(f"{k} {r}" for k in KINDS for r in RUNS))),
                 programs_bench._ratio(b.get("accelerate 1"), stock), programs_bench._ratio(b.get("run 1"), stock),
                 f"{stock / max(later):.1f}x" if stock and later else "-",
                 "met" if not missed else "missed: " + ", ".join(m.replace("_ok", "") for m in missed),
                 programs_bench.worst([m for c, m in res["match"].items() if c != "stock"])]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def main(rows: list[tuple[str, int]], repeats: int, timeout: float, log: Any, watch: bool = False) -> dict[str, Any]:
    """Every script at its row count; the table and the JSON's body (``watch``: each timed run's timeline)."""
    import shutil

    from dispatch.routing import calibration

    gpus = [t for t in programs_bench.available_targets() if t in ("cupy", "torch-cuda", "torch-mps")]
    gpu = bool(gpus)
    base_cache = str(calibration.cache_dir())
    # untimed (the module's docstring): bytecode, the libraries' files and CuPy's kernel cache
    for name in dict.fromkeys(n for n, _ in rows):
        script = os.path.join(HERE, f"{name}.py")
        for kind, backend in [("stock", ""), *((k, "") for k in KINDS), *((k, t) for t in gpus for k in KINDS)]:
            cache = programs_bench._fresh_cache(base_cache)
            _run(kind, script, WARM_ROWS, cache, timeout, backend)
            shutil.rmtree(cache, ignore_errors=True)
    out: dict[str, Any] = {"gpu": gpu, "repeats": repeats, "scripts": []}
    for name, n in rows:
        res = measure(name, n, repeats, base_cache, timeout, watch)
        res["goals"] = goals(res, gpu)
        out["scripts"].append(res)
        log(f"  {name} {n:,}: " + ", ".join(f"{c} {s:.2f} s" for c, s in res["best"].items())
            + "".join(f"; {c} {m}" for c, m in res["match"].items() if m not in ("exact", "-")))
        for contender, seen in res.get("timelines", {}).items():
            from benchmarks import timeline

            for one in filter(None, seen):
                log(f"  -- {name} {n:,} {contender}: " + timeline.describe(one))
    out["summary"] = table(out["scripts"], gpu)
    return out


def parse_rows(text: str, gpu: bool) -> list[tuple[str, int]]:
    """``lda=20000,lda=1000000,pca=1000000``: the scripts and their row counts. By default, for
    this machine: a short script, and fits of 10 s or more stock where there is a GPU
    (LinearDiscriminantAnalysis on 1M x 150 took 12.5 s stock on the H200 machine), of a second
    or two without."""
    if text:
        return [(k, int(v)) for k, v in (part.split("=") for part in text.split(",") if part)]
    large = 1_000_000 if gpu else 100_000
    return [("lda", 20_000), ("lda", large), ("pca", large)]
