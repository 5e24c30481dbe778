"""k-means clustering: Lloyd iterations from fixed initial centroids.

Squared distances by the expansion ``||x||² - 2 x·c + ||c||²`` (one matrix product per
iteration), assignment by ``argmin``, cluster sizes by ``bincount`` and cluster sums by a
one-hot matrix product, as a vectorised NumPy implementation does it. A fixed number of
iterations (no convergence test) keeps the work, and the results, identical on every backend.
"""

from __future__ import annotations

from typing import Any

import numpy

from benchmarks.workloads import _check, _ports

NAME = "kmeans"
SIZES = {
    "small": {"n": 2_000, "d": 8, "k": 8, "n_iter": 10},
    "medium": {"n": 30_000, "d": 16, "k": 16, "n_iter": 10},
    "large": {"n": 200_000, "d": 32, "k": 32, "n_iter": 10},
}


def make_data(size: str, seed: int = 0) -> dict[str, Any]:
    p = SIZES[size]
    rng = numpy.random.default_rng(seed)
    n, d, k = p["n"], p["d"], p["k"]
    centers = rng.normal(scale=4.0, size=(k, d))
    truth = rng.integers(k, size=n)
    X = centers[truth] + rng.standard_normal((n, d))
    # One initial centroid inside each blob: every cluster stays populated, and points sit
    # far from any tie between two centroids, so labels cannot flip between backends.
    first = numpy.unique(truth, return_index=True)[1]
    return {"X": X, "init": X[first].copy(), "n_iter": p["n_iter"]}


def run(xp: Any, X: Any, init: Any, n_iter: int) -> dict[str, Any]:
    X = xp.asarray(X)
    C = xp.asarray(init)
    k = C.shape[0]
    clusters = xp.arange(k)
    x_sq = (X * X).sum(axis=1)[:, None]

    def assign(C):
        d2 = x_sq - 2.0 * (X @ C.T) + (C * C).sum(axis=1)[None, :]
        return d2, xp.argmin(d2, axis=1)

    shifts = []
    for _ in range(n_iter):
        _, labels = assign(C)
        counts = xp.bincount(labels, minlength=k)
        onehot = (labels[:, None] == clusters[None, :]).astype(X.dtype)
        sums = onehot.T @ X
        # An empty cluster keeps its centroid instead of becoming 0/0.
        C_new = xp.where(counts[:, None] > 0, sums / xp.maximum(counts, 1)[:, None], C)
        shifts.append(((C_new - C) ** 2).sum())
        C = C_new
    d2, labels = assign(C)
    inertia = xp.maximum(d2.min(axis=1), 0.0).sum()  # the expansion can round below zero
    return {
        "centroids": C,
        "labels": labels,
        "counts": xp.bincount(labels, minlength=k),
        "inertia": inertia,
        "shifts": xp.stack(shifts),
    }


def run_torch_resident(torch: Any, X: Any, init: Any, n_iter: int) -> dict[str, Any]:
    C = init
    k = C.shape[0]
    clusters = torch.arange(k, device=X.device)
    x_sq = (X * X).sum(dim=1)[:, None]

    def assign(C):
        d2 = x_sq - 2.0 * (X @ C.T) + (C * C).sum(dim=1)[None, :]
        return d2, torch.argmin(d2, dim=1)

    shifts = []
    for _ in range(n_iter):
        _, labels = assign(C)
        counts = torch.bincount(labels, minlength=k)
        onehot = (labels[:, None] == clusters[None, :]).to(X.dtype)
        sums = onehot.T @ X
        C_new = torch.where(counts[:, None] > 0, sums / counts.clamp(min=1)[:, None], C)
        shifts.append(((C_new - C) ** 2).sum())
        C = C_new
    d2, labels = assign(C)
    inertia = d2.min(dim=1).values.clamp(min=0.0).sum()
    return {
        "centroids": C,
        "labels": labels,
        "counts": torch.bincount(labels, minlength=k),
        "inertia": inertia,
        "shifts": torch.stack(shifts),
    }


# CuPy mirrors every NumPy call above, so the CuPy port is the program itself.
run_cupy_resident = run
run_torch = _ports.torch_roundtrip(run_torch_resident)
run_cupy = _ports.cupy_roundtrip(run_cupy_resident)


def check(result: dict[str, Any], reference: dict[str, Any]) -> None:
    _check.same_keys(result, reference)
    _check.assert_equal("labels", result["labels"], reference["labels"])
    _check.assert_equal("counts", result["counts"], reference["counts"])
    _check.assert_close("centroids", result["centroids"], reference["centroids"])
    _check.assert_close("inertia", result["inertia"], reference["inertia"])
    _check.assert_close("shifts", result["shifts"], reference["shifts"])
