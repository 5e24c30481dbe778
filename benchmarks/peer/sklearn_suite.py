"""scikit-learn's own tests, run stock and under ``dispatch.sklearn.accelerate()`` side by side.

The test modules come from the installed scikit-learn (the wheel ships ``sklearn/*/tests``)
and run unchanged; the accelerated run only adds the ``accelerate`` plugin, with a target
forced (``torch-cpu`` by default: on a CPU-only machine nothing else would leave NumPy).
Both runs set ``SCIPY_ARRAY_API=1``, as ``accelerate()`` does, so the difference between
them is dispatch alone. Each module runs in its own watched ``pytest`` process.

    python -m benchmarks.peer.sklearn_suite                     # the estimators dispatch accelerates
    python -m benchmarks.peer.sklearn_suite decomposition/tests/test_pca.py -k whiten
    python -m benchmarks.peer.sklearn_suite --backend cupy --json sk.json
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

import sklearn

from benchmarks.peer.harness import (
    REPO,
    ModuleResult,
    add_common_arguments,
    conclude,
    dump,
    judge,
    load_expectations,
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
PYTEST_INI = "[pytest]\naddopts = -ra -p no:cacheprovider\n"


def modules(selection: list[str]) -> list[str]:
    if not selection:
        return list(MODULES)
    missing = [s for s in selection if not (SKLEARN_ROOT / s).is_file()]
    if missing:
        raise SystemExit(f"no such scikit-learn test module: {missing} (paths under {SKLEARN_ROOT})")
    return selection


def run(selection: list[str], *, keyword: str = "", backend: str = "torch-cpu", timeout: float = 600,
        max_rss_mb: float = 4096, work: Path | None = None, progress=None) -> list[ModuleResult]:
    """Run the chosen modules stock and accelerated; one ``ModuleResult`` each."""
    work = Path(work or tempfile.mkdtemp(prefix="sklearn-peer-"))
    work.mkdir(parents=True, exist_ok=True)
    (work / "pytest.ini").write_text(PYTEST_INI, encoding="utf-8")
    site = SKLEARN_ROOT.parent
    base = {k: v for k, v in os.environ.items() if not k.startswith(("DISPATCH_", "PYTEST_"))}
    base.update(PYTHONPATH=str(REPO), PYTHONDONTWRITEBYTECODE="1", SCIPY_ARRAY_API="1",
                SKLEARN_SKIP_NETWORK_TESTS="1", DISPATCH_CACHE_DIR=str(work / "dispatch-cache"),
                OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    variants = {"stock": ([], base), "dispatch": (["-p", "benchmarks.peer.accelerate"],
                                                  {**base, "DISPATCH_BACKEND": backend})}
    results = []
    for mod in modules(selection):
        args = [str(SKLEARN_ROOT / mod), "-q", "--rootdir", str(site), "--confcutdir", str(site),
                "-c", str(work / "pytest.ini")]
        if keyword:
            args += ["-k", keyword]
        runs = {}
        for variant, (extra, env) in variants.items():
            tag = mod.replace("/", "_")
            runs[variant] = run_pytest([*extra, *args], cwd=work, env=env, record=work / f"{variant}-{tag}.jsonl",
                                       log=work / f"{variant}-{tag}.log", timeout=timeout, max_rss_mb=max_rss_mb)
        results.append(ModuleResult.compare("sklearn/" + mod, runs["stock"], runs["dispatch"]))
        if progress:
            progress(results)
    return results


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.peer.sklearn_suite", description=__doc__.split("\n\n")[0])
    ap.add_argument("select", nargs="*", help="modules under sklearn/ (default: the accelerated estimators')")
    ap.add_argument("--backend", default="torch-cpu", help="the target forced in the accelerated run")
    add_common_arguments(ap)
    a = ap.parse_args(argv)
    expectations = load_expectations(HERE / "xfail.toml", HERE / "known_failures.toml")
    meta = {"sklearn": sklearn.__version__, "backend": a.backend, "keyword": a.keyword, "select": a.select}

    def progress(results):
        r = results[-1].row()
        print(f"[{len(results)}] {r['module']}: stock {r['stock_passed']} passed, accelerated {r['peer_passed']}, "
              f"new failures {r['new_failures']} ({r['status']}, {r['stock_s']}s / {r['peer_s']}s)",
              file=sys.stderr, flush=True)
        if a.json:
            dump(a.json, results, judge(results, expectations), meta)

    with tempfile.TemporaryDirectory(prefix="peer-") as scratch:  # kept only when --work names it
        results = run(a.select, keyword=a.keyword, backend=a.backend, timeout=a.timeout, max_rss_mb=a.max_rss,
                      work=a.work or Path(scratch), progress=progress)
    return conclude(results, expectations, known=HERE / "known_failures.toml", record=a.record_known,
                    peer_name="accel", examples=a.examples)


if __name__ == "__main__":
    sys.exit(main())
