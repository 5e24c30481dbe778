"""Semantic search over float32 embeddings: cosine similarity and the top k documents per
query.

Normalise rows, one similarity matrix per block of queries (a float32 matrix product), the k
best by ``argpartition`` then ``argsort`` of those k. The suite's single-precision program:
embeddings are float32 in practice, and so is its tolerance.
"""

from __future__ import annotations

from typing import Any

import numpy

from benchmarks.workloads import _check, _ports

NAME = "cosine_topk"
SIZES = {
    "small": {"n_queries": 128, "n_docs": 2_048, "d": 64, "k": 10, "block": 256},
    "medium": {"n_queries": 512, "n_docs": 16_384, "d": 128, "k": 10, "block": 512},
    "large": {"n_queries": 4_096, "n_docs": 65_536, "d": 128, "k": 10, "block": 1_024},
}


def make_data(size: str, seed: int = 0) -> dict[str, Any]:
    p = SIZES[size]
    rng = numpy.random.default_rng(seed)
    d = p["d"]
    topics = rng.standard_normal((64, d))
    docs = topics[rng.integers(64, size=p["n_docs"])] + rng.standard_normal((p["n_docs"], d))
    # Queries are perturbed documents: each has true near matches, as in retrieval.
    queries = docs[rng.integers(p["n_docs"], size=p["n_queries"])] + 0.5 * rng.standard_normal((p["n_queries"], d))
    return {
        "queries": queries.astype(numpy.float32),
        "docs": docs.astype(numpy.float32),
        "k": p["k"],
        "block": p["block"],
    }


def run(xp: Any, queries: Any, docs: Any, k: int, block: int) -> dict[str, Any]:
    Q, D = xp.asarray(queries), xp.asarray(docs)
    Q = Q / xp.linalg.norm(Q, axis=1, keepdims=True)
    D = D / xp.linalg.norm(D, axis=1, keepdims=True)
    index, score = [], []
    for start in range(0, Q.shape[0], block):
        S = Q[start : start + block] @ D.T
        best = xp.argpartition(-S, k - 1, axis=1)[:, :k]
        best_s = xp.take_along_axis(S, best, axis=1)
        order = xp.argsort(-best_s, axis=1)
        index.append(xp.take_along_axis(best, order, axis=1))
        score.append(xp.take_along_axis(best_s, order, axis=1))
    return {"index": xp.concatenate(index), "score": xp.concatenate(score)}


def run_torch_resident(torch: Any, queries: Any, docs: Any, k: int, block: int) -> dict[str, Any]:
    Q = queries / torch.linalg.norm(queries, dim=1, keepdim=True)
    D = docs / torch.linalg.norm(docs, dim=1, keepdim=True)
    index, score = [], []
    for start in range(0, Q.shape[0], block):
        S = Q[start : start + block] @ D.T
        best_s, best = torch.topk(S, k, dim=1, largest=True, sorted=True)
        index.append(best)
        score.append(best_s)
    return {"index": torch.cat(index), "score": torch.cat(score)}


# CuPy mirrors every NumPy call above, so the CuPy port is the program itself.
run_cupy_resident = run
run_torch = _ports.torch_roundtrip(run_torch_resident)
run_cupy = _ports.cupy_roundtrip(run_cupy_resident)


def check(result: dict[str, Any], reference: dict[str, Any]) -> None:
    _check.same_keys(result, reference)
    # Documents at (nearly) equal similarity may rank either way on another backend.
    _check.assert_topk("top-k", result["index"], reference["index"], result["score"], reference["score"])
