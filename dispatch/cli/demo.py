"""Show dispatch at work: a NumPy workload and a scikit-learn pipeline, each run with plain
NumPy / stock scikit-learn and through dispatch, with where each call ran, why, and the time
against plain NumPy. Runs anywhere (CPU only is fine); calibrates this machine quickly first
if it was never calibrated."""

from __future__ import annotations

import argparse
import contextlib
import time
from typing import Any

import dispatch
import dispatch.sklearn
from dispatch import measure, targets
from dispatch.routing import calibration, router

HELP = "run a short NumPy workload and a scikit-learn pipeline through dispatch and show where each call ran"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--size", type=int, default=200_000, help="rows of the NumPy workload (default 200,000)")
    parser.add_argument("--no-calibrate", action="store_true", help="do not calibrate an uncalibrated machine")


def workload(np: Any, x: Any) -> dict[str, Any]:
    """A small analysis a data scientist writes: standardise, covariance, PCA by SVD, a
    spectrum, a histogram of the projections and the heaviest rows."""
    x = np.asarray(x)
    centred = (x - x.mean(axis=0)) / x.std(axis=0)
    cov = centred.T @ centred / (len(centred) - 1)
    _, s, vt = np.linalg.svd(cov)
    projected = centred @ vt[:2].T
    spectrum = np.abs(np.fft.rfft(centred[:, 0]))
    counts, _ = np.histogram(projected[:, 0], bins=20)
    heavy = np.argsort(np.sum(centred**2, axis=1))[-5:]
    return {"explained": s[:2] / s.sum(), "spectrum_peak": spectrum.max(), "counts": counts, "heavy": heavy}


ROUNDS = 5


def _in_turns(first: Any, second: Any, rounds: int = ROUNDS,
              second_in: Any = contextlib.nullcontext) -> tuple[Any, list[float], Any, list[float]]:
    """Each side's result and its time in each of ``rounds`` turns, the sides alternating who
    goes first, so that a busy machine's drift hits both alike; ``second`` runs inside the
    context ``second_in()``, entered and left outside its clock."""
    times: list[list[float]] = [[], []]
    results: list[Any] = [None, None]
    for i in range(rounds):
        for side in ((0, 1) if i % 2 else (1, 0)):
            with second_in() if side else contextlib.nullcontext():
                start = time.perf_counter()
                results[side] = (first, second)[side]()
                times[side].append(time.perf_counter() - start)
    return results[0], times[0], results[1], times[1]


def _median(values: list[float]) -> float:
    values = sorted(values)
    mid = len(values) // 2
    return values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2


def speedup(plain: list[float], routed: list[float]) -> str:
    """The median of the turns' speed-ups with their spread: ``1.15x (1.02-1.31x over 5 turns)``.
    Each turn's ratio compares two runs made side by side, so the spread shows the noise; one
    that spans 1x is said to be within it, and one wholly under 1x says dispatch was slower."""
    ratios = sorted(p / r for p, r in zip(plain, routed, strict=True))
    text = f"{_median(ratios):.2f}x ({ratios[0]:.2f}-{ratios[-1]:.2f}x over {len(ratios)} turns)"
    if ratios[0] < 1 < ratios[-1]:
        return text + ", within this machine's noise"
    return text + (": slower than plain NumPy in every turn" if ratios[-1] < 1 else "")


def moved(t: Any) -> bool:
    """Whether any call of the trace ran elsewhere than on NumPy."""
    return any(r["target"] != "numpy" for r in t.rows())


def _comparison(t: Any, plain_name: str, plain: list[float], ours_name: str, routed: list[float]) -> str:
    if not moved(t):
        return "no call moved: every call ran on NumPy, as without dispatch, so there is no speed-up to show"
    return (f"{plain_name} {_median(plain) * 1e3:.1f} ms, {ours_name} {_median(routed) * 1e3:.1f} ms "
            f"(medians); speed-up {speedup(plain, routed)}")


def _numpy_part(size: int) -> None:
    import numpy


    x = numpy.random.default_rng(0).standard_normal((size, 16))
    for _ in range(3):  # warm both sides: first calls pay imports; the router learns from these runs
        workload(numpy, x)
        workload(dispatch, x)
    ref, plain, ours, routed = _in_turns(lambda: workload(numpy, x), lambda: workload(dispatch, x))
    with dispatch.trace() as t:  # one more run, traced, to show where each call ran
        workload(dispatch, x)
    same = all(numpy.allclose(numpy.asarray(ours[k]), ref[k]) for k in ref)
    print(f"\n1. A NumPy workload on {size:,} x 16 float64 ({len(t.records)} calls)")
    print(f"   {_comparison(t, 'plain NumPy', plain, 'through dispatch', routed)}")
    print(f"   results equal NumPy's: {'yes' if same else 'NO'}")
    _print_trace(t)


def _sklearn_part() -> None:
    try:
        from sklearn.datasets import make_classification
        from sklearn.decomposition import PCA
        from sklearn.linear_model import LogisticRegression
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import StandardScaler
    except ImportError:
        print("\n2. scikit-learn is not installed (the [sklearn] extra: pip install -e '.[sklearn]' from "
              "dispatch's clone) to see the pipeline part")
        return
    import numpy


    X, y = make_classification(n_samples=20_000, n_features=40, n_informative=10, random_state=0)

    def pipeline() -> Any:
        return make_pipeline(StandardScaler(), PCA(n_components=10, random_state=0), LogisticRegression(max_iter=300))

    def fit_predict() -> Any:
        return pipeline().fit(X, y).predict(X)

    fit_predict()  # warm both sides: first calls pay imports
    with dispatch.sklearn.accelerated():
        fit_predict()
    stock_pred, stock, pred, accelerated = _in_turns(fit_predict, fit_predict, second_in=dispatch.sklearn.accelerated)
    with dispatch.sklearn.accelerated(), dispatch.trace() as t:  # one more run, traced
        fit_predict()
    agree = float(numpy.mean(pred == stock_pred))
    print("\n2. A scikit-learn pipeline (StandardScaler + PCA + LogisticRegression) on 20,000 x 40")
    print(f"   {_comparison(t, 'stock scikit-learn fit+predict', stock, 'accelerated', accelerated)}")
    print(f"   predictions agree on {agree:.1%} of rows")
    _print_trace(t)


def _print_trace(t: Any) -> None:
    rows = t.rows()
    width = max((len(r["op"]) for r in rows), default=10)
    print(f"   {'call':<{width}}  {'ran on':<10} {'calls':>5} {'time':>10}  why")
    for r in rows[:12]:
        print(f"   {r['op']:<{width}}  {r['target']:<10} {r['calls']:>5} {r['seconds'] * 1e3:>8.2f}ms  {r['reason']}")
    if len(rows) > 12:
        print(f"   ... {len(rows) - 12} more")


def run(args: argparse.Namespace) -> int:
    found = targets.available()
    print(f"dispatch demo: targets here: {', '.join(found)}")
    if all(targets.registry.spec(n).library == "numpy" or targets.registry.spec(n).device_kind == "cluster"
           for n in found):  # NumPy's own, or reached by size only
        print("only NumPy can run these calls here, so every call stays on NumPy: install torch "
              "(the CPU build is enough, see the README) or CuPy to give the router a choice")
    if calibration.load() is None and not args.no_calibrate:
        print("this machine is not calibrated yet: a quick calibration (a few seconds without a GPU, 10-20 s with one; "
              "`python -m dispatch calibrate` does the full one)")
        measure.calibrate(quick=True, progress=False)
    print(f"routing policy: {router.policy()}"
          + (" (the seed's MoE table, cold start)" if router.policy() == "seed" else " (this machine's calibration)"))
    _numpy_part(args.size)
    _sklearn_part()
    print("\nEvery call above was routed per call; `with dispatch.trace() as t: ...; t.summary()` shows the same "
          "in your own code.")
    return 0

