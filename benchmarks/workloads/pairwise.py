"""k-nearest-neighbour classification from an explicit distance matrix.

For each block of queries: the Euclidean distance matrix to every reference point by the
``||q||² - 2 q·r + ||r||²`` expansion, the k nearest by ``argpartition`` then ``argsort`` of
those k, and a majority vote of their labels. Queries go in blocks so the distance matrix
stays a few hundred megabytes, as anyone would write it for large inputs.
"""

from __future__ import annotations

from typing import Any

import numpy

from benchmarks.workloads import _check, _ports

NAME = "pairwise"
SIZES = {
    "small": {"n_queries": 100, "n_refs": 1_000, "d": 16, "k": 5, "n_classes": 4, "block": 256},
    "medium": {"n_queries": 500, "n_refs": 10_000, "d": 32, "k": 10, "n_classes": 8, "block": 512},
    "large": {"n_queries": 2_000, "n_refs": 50_000, "d": 32, "k": 10, "n_classes": 8, "block": 1_000},
}


def make_data(size: str, seed: int = 0) -> dict[str, Any]:
    p = SIZES[size]
    rng = numpy.random.default_rng(seed)
    d, c = p["d"], p["n_classes"]
    centers = rng.normal(scale=1.5, size=(c, d))
    ref_labels = rng.integers(c, size=p["n_refs"])
    query_labels = rng.integers(c, size=p["n_queries"])
    return {
        "queries": centers[query_labels] + rng.standard_normal((p["n_queries"], d)),
        "refs": centers[ref_labels] + rng.standard_normal((p["n_refs"], d)),
        "ref_labels": ref_labels,
        "query_labels": query_labels,
        "k": p["k"],
        "n_classes": c,
        "block": p["block"],
    }


def run(
    xp: Any, queries: Any, refs: Any, ref_labels: Any, query_labels: Any, k: int, n_classes: int, block: int
) -> dict[str, Any]:
    Q, R = xp.asarray(queries), xp.asarray(refs)
    ref_labels, query_labels = xp.asarray(ref_labels), xp.asarray(query_labels)
    r_sq = (R * R).sum(axis=1)
    index, dist, mean_dist = [], [], []
    for start in range(0, Q.shape[0], block):
        q = Q[start : start + block]
        d2 = (q * q).sum(axis=1)[:, None] - 2.0 * (q @ R.T) + r_sq[None, :]
        D = xp.sqrt(xp.maximum(d2, 0.0))  # the expansion can round below zero
        near = xp.argpartition(D, k - 1, axis=1)[:, :k]
        near_d = xp.take_along_axis(D, near, axis=1)
        order = xp.argsort(near_d, axis=1)
        index.append(xp.take_along_axis(near, order, axis=1))
        dist.append(xp.take_along_axis(near_d, order, axis=1))
        mean_dist.append(D.mean(axis=1))
    index = xp.concatenate(index)
    votes = (ref_labels[index][:, :, None] == xp.arange(n_classes)[None, None, :]).sum(axis=1)
    predicted = xp.argmax(votes, axis=1)
    return {
        "index": index,
        "distance": xp.concatenate(dist),
        "mean_distance": xp.concatenate(mean_dist),
        "predicted": predicted,
        "accuracy": (predicted == query_labels).mean(),
    }


def run_torch_resident(
    torch: Any, queries: Any, refs: Any, ref_labels: Any, query_labels: Any, k: int, n_classes: int, block: int
) -> dict[str, Any]:
    Q, R = queries, refs
    r_sq = (R * R).sum(dim=1)
    index, dist, mean_dist = [], [], []
    for start in range(0, Q.shape[0], block):
        q = Q[start : start + block]
        d2 = (q * q).sum(dim=1)[:, None] - 2.0 * (q @ R.T) + r_sq[None, :]
        D = torch.sqrt(torch.clamp(d2, min=0.0))
        # topk replaces argpartition + argsort: the k smallest, already sorted.
        near_d, near = torch.topk(D, k, dim=1, largest=False, sorted=True)
        index.append(near)
        dist.append(near_d)
        mean_dist.append(D.mean(dim=1))
    index = torch.cat(index)
    classes = torch.arange(n_classes, device=Q.device)
    votes = (ref_labels[index][:, :, None] == classes[None, None, :]).sum(dim=1)
    predicted = torch.argmax(votes, dim=1)
    return {
        "index": index,
        "distance": torch.cat(dist),
        "mean_distance": torch.cat(mean_dist),
        "predicted": predicted,
        "accuracy": (predicted == query_labels).to(Q.dtype).mean(),
    }


# CuPy mirrors every NumPy call above, so the CuPy port is the program itself.
run_cupy_resident = run
run_torch = _ports.torch_roundtrip(run_torch_resident)
run_cupy = _ports.cupy_roundtrip(run_cupy_resident)


def check(result: dict[str, Any], reference: dict[str, Any]) -> None:
    _check.same_keys(result, reference)
    _check.assert_close("mean_distance", result["mean_distance"], reference["mean_distance"])
    # Neighbours at (nearly) equal distance may come in either order on another backend.
    tied_rows = _check.assert_topk(
        "neighbours", result["index"], reference["index"], result["distance"], reference["distance"]
    )
    predicted, ref_predicted = _check.host(result["predicted"]), _check.host(reference["predicted"])
    _check.same_meta("predicted", predicted, ref_predicted)
    _check.assert_equal("predicted (rows without ties)", predicted[~tied_rows], ref_predicted[~tied_rows])
    # A tied row may change its vote: accuracy may move by one query per such row.
    accuracy, ref_accuracy = _check.host(result["accuracy"]), _check.host(reference["accuracy"])
    _check.same_meta("accuracy", accuracy, ref_accuracy)
    slack = tied_rows.sum() / predicted.size
    if not abs(float(accuracy) - float(ref_accuracy)) <= slack + 1e-12:
        raise AssertionError(f"accuracy: got {float(accuracy)!r}, expected {float(ref_accuracy)!r}")
