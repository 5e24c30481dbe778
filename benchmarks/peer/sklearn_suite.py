"""scikit-learn's own tests, run stock and under ``dispatch.sklearn.accelerate()`` side by side.

The test modules come from the installed scikit-learn (the wheel ships ``sklearn/*/tests``)
and run unchanged; the accelerated run only adds the ``accelerate`` plugin, with a target
forced (``torch-cpu`` by default: on a CPU-only machine nothing else would leave NumPy).
Both runs set ``SCIPY_ARRAY_API=1``, as ``accelerate()`` does, so the difference between
them is dispatch alone. Each module runs in its own watched ``pytest`` process; ``--jobs``
runs that many at once (the longest modules first), each on one BLAS thread.

    python -m benchmarks.peer.sklearn_suite                     # the estimators dispatch accelerates
    python -m benchmarks.peer.sklearn_suite decomposition/tests/test_pca.py -k whiten
    python -m benchmarks.peer.sklearn_suite --backend cupy --json sk.json
    python -m benchmarks.peer.sklearn_suite --backend cupy,torch-cuda --jobs 16 --json sk.json  # sk-cupy.json...

A long module can be split by test over several processes (pytest-xdist: ``--workers
test_ridge.py=5,2`` gives ``test_ridge.py`` five, every other module two). ``--stock-from DIR``
takes the stock outcomes from an earlier run's work folder (another machine's, say the CPU
machine's, where stock scikit-learn gives the same outcomes), and runs stock here only the tests
that need this machine's devices (their Array API cases on CuPy, CUDA or MPS), laid over them.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import sklearn

from benchmarks.peer.harness import (
    REPO,
    ModuleResult,
    ModuleRun,
    add_common_arguments,
    conclude,
    dump,
    judge,
    load_expectations,
    read_record,
    run_pytest,
)

HERE = Path(__file__).resolve().parent
SKLEARN_ROOT = Path(sklearn.__file__).resolve().parent
# Modules testing the estimators scikit-learn runs through the Array API, which dispatch routes
# (converters/sklearn_algorithms.py): scalers, linear models, PCA, discriminant analysis...
MODULES = (
    "preprocessing/tests/test_data.py",
    "preprocessing/tests/test_label.py",
    "decomposition/tests/test_pca.py",
    "decomposition/tests/test_incremental_pca.py",
    "decomposition/tests/test_truncated_svd.py",
    "tests/test_discriminant_analysis.py",
    "tests/test_naive_bayes.py",
    "tests/test_kernel_approximation.py",
    "linear_model/tests/test_ridge.py",
    "linear_model/tests/test_base.py",
    "linear_model/tests/test_bayes.py",
    "cluster/tests/test_k_means.py",
    "mixture/tests/test_gaussian_mixture.py",
    "neighbors/tests/test_nearest_centroid.py",
    "covariance/tests/test_covariance.py",
    "feature_selection/tests/test_variance_threshold.py",
)
# The modules that took longest (a few minutes a run on the 2-core machine): started first.
SLOW = ("decomposition/tests/test_pca.py", "linear_model/tests/test_ridge.py", "cluster/tests/test_k_means.py",
        "mixture/tests/test_gaussian_mixture.py", "preprocessing/tests/test_data.py")
PYTEST_INI = "[pytest]\naddopts = -ra -p no:cacheprovider\n"
# The tests stock scikit-learn runs differently on a machine with devices: its Array API cases.
DEVICE_TESTS = "cupy or cuda or mps"


def modules(selection: list[str]) -> list[str]:
    if not selection:
        return list(MODULES)
    missing = [s for s in selection if not (SKLEARN_ROOT / s).is_file()]
    if missing:
        raise SystemExit(f"no such scikit-learn test module: {missing} (paths under {SKLEARN_ROOT})")
    return selection


def parse_workers(text: str) -> dict[str, int]:
    """``"test_ridge.py=5,test_k_means.py=4,2"``: pytest-xdist workers per module (by file name,
    or path under sklearn/), the bare number for every other module (key ``""``; default 1)."""
    out = {"": 1}
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, _, count = part.rpartition("=")
        if not count.isdigit() or int(count) < 1:
            raise ValueError(f"--workers: {part!r} is not MODULE=N or N (N >= 1)")
        out[name] = int(count)
    return out


def workers_for(mod: str, workers: dict[str, int]) -> int:
    return workers.get(mod, workers.get(Path(mod).name, workers.get("", 1)))


def run(selection: list[str], *, keyword: str = "", backend: str = "torch-cpu", timeout: float = 600,
        max_rss_mb: float = 4096, work: Path | None = None, progress=None, jobs: int = 1) -> list[ModuleResult]:
    """Run the chosen modules stock and accelerated; one ``ModuleResult`` each."""
    return run_backends(selection, keyword=keyword, backends=[backend], timeout=timeout, max_rss_mb=max_rss_mb,
                        work=work, progress=progress, jobs=jobs)[backend]


def run_backends(selection: list[str], *, keyword: str = "", backends: list[str], timeout: float = 600,
                 max_rss_mb: float = 4096, work: Path | None = None, progress=None, jobs: int = 1,
                 workers: dict[str, int] | None = None,
                 stock_from: Path | None = None) -> dict[str, list[ModuleResult]]:
    """Run the chosen modules stock once and accelerated with each of ``backends`` forced, ``jobs``
    processes at a time (each split over ``workers_for(module, workers)`` pytest-xdist workers);
    per backend, one ``ModuleResult`` per module (in the modules' order). With ``stock_from``, the
    stock outcomes are that work folder's records, and only ``DEVICE_TESTS`` run stock here."""
    work = Path(work or tempfile.mkdtemp(prefix="sklearn-peer-"))
    work.mkdir(parents=True, exist_ok=True)
    (work / "pytest.ini").write_text(PYTEST_INI, encoding="utf-8")
    site = SKLEARN_ROOT.parent
    base = {k: v for k, v in os.environ.items() if not k.startswith(("DISPATCH_", "PYTEST_"))}
    base.update(PYTHONPATH=os.pathsep.join([str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])]),
                PYTHONDONTWRITEBYTECODE="1", SCIPY_ARRAY_API="1", SKLEARN_SKIP_NETWORK_TESTS="1",
                DISPATCH_CACHE_DIR=str(work / "dispatch-cache"),
                OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    variants = {"stock": ([], base), **{b: (["-p", "benchmarks.peer.accelerate"], {**base, "DISPATCH_BACKEND": b})
                                       for b in backends}}
    chosen = modules(selection)
    tasks = [(mod, v) for mod in sorted(chosen, key=lambda m: m not in SLOW) for v in variants]
    runs: dict[tuple[str, str], ModuleRun] = {}
    lock = threading.Lock()

    def one(task: tuple[str, str]) -> None:
        mod, variant = task
        extra, env = variants[variant]
        selected = keyword
        if stock_from is not None and variant == "stock":
            selected = f"({keyword}) and ({DEVICE_TESTS})" if keyword else DEVICE_TESTS
        n = workers_for(mod, workers or {})
        args = [str(SKLEARN_ROOT / mod), "-q", "--rootdir", str(site), "--confcutdir", str(site),
                "-c", str(work / "pytest.ini"), *(["-k", selected] if selected else []),
                *(["-n", str(n), "--dist", "worksteal"] if n > 1 else [])]
        tag = f"{variant}-{mod.replace('/', '_')}"
        ran = run_pytest([*extra, *args], cwd=work, env=env, record=work / f"{tag}.jsonl",
                         log=work / f"{tag}.log", timeout=timeout, max_rss_mb=max_rss_mb * n)
        if stock_from is not None and variant == "stock":
            ran.outcomes = {**read_record(stock_from / f"{tag}.jsonl"), **ran.outcomes}
        with lock:  # one report per module, once its last run is in
            runs[task] = ran
            if progress and all((mod, v) in runs for v in variants):
                progress({b: ModuleResult.compare("sklearn/" + mod, runs[mod, "stock"], runs[mod, b])
                          for b in backends})

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        list(pool.map(one, tasks))
    return {b: [ModuleResult.compare("sklearn/" + mod, runs[mod, "stock"], runs[mod, b]) for mod in chosen]
            for b in backends}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.peer.sklearn_suite", description=__doc__.split("\n\n")[0])
    ap.add_argument("select", nargs="*", help="modules under sklearn/ (default: the accelerated estimators')")
    ap.add_argument("--backend", default="torch-cpu",
                    help="the target forced in the accelerated run; several, comma-separated, share one stock run")
    ap.add_argument("--jobs", type=int, default=1, help="pytest processes at once (default 1)")
    ap.add_argument("--workers", default="1", type=parse_workers,
                    help="pytest-xdist workers per module run: N, or MODULE=N entries and a default N")
    ap.add_argument("--stock-from", type=Path,
                    help="an earlier run's work folder: stock outcomes from its records; only the device "
                         "tests run stock here")
    add_common_arguments(ap)
    a = ap.parse_args(argv)
    if a.json:
        a.json.parent.mkdir(parents=True, exist_ok=True)
    backends = [b for b in a.backend.split(",") if b]
    expectations = load_expectations(HERE / "xfail.toml", HERE / "known_failures.toml")
    done: dict[str, list[ModuleResult]] = {b: [] for b in backends}

    def json_for(backend: str) -> Path | None:
        if not a.json or len(backends) == 1:
            return a.json
        return a.json.with_name(f"{a.json.stem}-{backend}{a.json.suffix}")

    def meta(backend: str) -> dict:
        return {"sklearn": sklearn.__version__, "backend": backend, "keyword": a.keyword, "select": a.select,
                "stock_from": str(a.stock_from) if a.stock_from else None}

    def progress(by_backend: dict[str, ModuleResult]) -> None:
        for backend, res in by_backend.items():
            done[backend].append(res)
            r = res.row()
            print(f"[{len(done[backend])}] {backend} {r['module']}: stock {r['stock_passed']} passed, accelerated "
                  f"{r['peer_passed']}, new failures {r['new_failures']} ({r['status']}, {r['stock_s']}s / "
                  f"{r['peer_s']}s)", file=sys.stderr, flush=True)
            if a.json:
                dump(json_for(backend), done[backend], judge(done[backend], expectations), meta(backend))

    with tempfile.TemporaryDirectory(prefix="peer-") as scratch:  # kept only when --work names it
        results = run_backends(a.select, keyword=a.keyword, backends=backends, timeout=a.timeout,
                               max_rss_mb=a.max_rss, work=a.work or Path(scratch), progress=progress, jobs=a.jobs,
                               workers=a.workers, stock_from=a.stock_from)
    status = 0
    for backend, found in results.items():
        if a.json:
            dump(json_for(backend), found, judge(found, expectations), meta(backend))
        print(f"== {backend}")
        status = max(status, conclude(found, expectations, known=HERE / "known_failures.toml", record=a.record_known,
                                      peer_name="accel", examples=a.examples))
    return status


if __name__ == "__main__":
    sys.exit(main())
