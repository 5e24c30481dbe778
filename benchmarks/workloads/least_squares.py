"""Linear regression with several responses: ordinary least squares two ways, inference, and
a ridge path.

Normal equations with ``solve``; the same fit with ``lstsq`` (SVD-based, also giving the
singular values); residuals, standard errors from ``inv(AᵀA)``, t statistics and R²; then a
ridge path over several penalties from one eigendecomposition of ``AᵀA``.
"""

from __future__ import annotations

from typing import Any

import numpy

from benchmarks.workloads import _check, _ports

NAME = "least_squares"
SIZES = {
    "small": {"n": 2_000, "p": 20, "q": 3, "n_penalties": 8},
    "medium": {"n": 40_000, "p": 40, "q": 4, "n_penalties": 8},
    "large": {"n": 200_000, "p": 100, "q": 4, "n_penalties": 8},
}

# cond(A) is about 20 by construction: the normal equations square it (about 400), so
# float64 answers of two valid solvers agree to about 1e-13; 1e-8 leaves ample room.
RTOL = 1e-8


def make_data(size: str, seed: int = 0) -> dict[str, Any]:
    p = SIZES[size]
    rng = numpy.random.default_rng(seed)
    n, k, q = p["n"], p["p"], p["q"]
    # Correlated features on different scales, and an intercept column.
    mixing = numpy.eye(k - 1) + 0.3 * rng.standard_normal((k - 1, k - 1)) / numpy.sqrt(k)
    features = rng.standard_normal((n, k - 1)) @ mixing * numpy.geomspace(1.0, 5.0, k - 1)
    A = numpy.column_stack([numpy.ones(n), features])
    beta = rng.normal(size=(k, q))
    Y = A @ beta + rng.normal(scale=2.0, size=(n, q))
    penalties = numpy.geomspace(1e-2, 1e3, p["n_penalties"]) * n / 1000
    return {"A": A, "Y": Y, "penalties": penalties}


def run(xp: Any, A: Any, Y: Any, penalties: Any) -> dict[str, Any]:
    A, Y, penalties = xp.asarray(A), xp.asarray(Y), xp.asarray(penalties)
    n, p = A.shape
    G = A.T @ A
    AtY = A.T @ Y
    beta_normal = xp.linalg.solve(G, AtY)
    beta, rss, _, singular_values = xp.linalg.lstsq(A, Y, rcond=None)
    residuals = Y - A @ beta
    sigma2 = (residuals**2).sum(axis=0) / (n - p)
    stderr = xp.sqrt(xp.diagonal(xp.linalg.inv(G))[:, None] * sigma2[None, :])
    tss = ((Y - Y.mean(axis=0)) ** 2).sum(axis=0)
    # Ridge path: with G = V diag(w) Vᵀ, (G + λI)⁻¹AᵀY = V diag(1/(w + λ)) VᵀAᵀY for every λ.
    w, V = xp.linalg.eigh(G)
    ridge = V @ ((V.T @ AtY)[None, :, :] / (w[None, :, None] + penalties[:, None, None]))
    ridge_rss = ((Y[None, :, :] - A @ ridge) ** 2).sum(axis=1)
    return {
        "beta_normal": beta_normal,
        "beta": beta,
        "rss": rss,
        "singular_values": singular_values,
        "stderr": stderr,
        "t": beta / stderr,
        "r2": 1.0 - rss / tss,
        "ridge": ridge,
        "ridge_rss": ridge_rss,
    }


def run_torch_resident(torch: Any, A: Any, Y: Any, penalties: Any) -> dict[str, Any]:
    n, p = A.shape
    G = A.T @ A
    AtY = A.T @ Y
    beta_normal = torch.linalg.solve(G, AtY)
    # torch's lstsq returns residuals and singular values only with some CPU drivers (and
    # on CUDA has only the QR driver): take the solution, compute the rest explicitly.
    beta = torch.linalg.lstsq(A, Y).solution
    singular_values = torch.linalg.svdvals(A)
    residuals = Y - A @ beta
    rss = (residuals**2).sum(dim=0)
    sigma2 = rss / (n - p)
    stderr = torch.sqrt(torch.diagonal(torch.linalg.inv(G))[:, None] * sigma2[None, :])
    tss = ((Y - Y.mean(dim=0)) ** 2).sum(dim=0)
    w, V = torch.linalg.eigh(G)
    ridge = V @ ((V.T @ AtY)[None, :, :] / (w[None, :, None] + penalties[:, None, None]))
    ridge_rss = ((Y[None, :, :] - A @ ridge) ** 2).sum(dim=1)
    return {
        "beta_normal": beta_normal,
        "beta": beta,
        "rss": rss,
        "singular_values": singular_values,
        "stderr": stderr,
        "t": beta / stderr,
        "r2": 1.0 - rss / tss,
        "ridge": ridge,
        "ridge_rss": ridge_rss,
    }


# CuPy mirrors every NumPy call above, so the CuPy port is the program itself.
run_cupy_resident = run
run_torch = _ports.torch_roundtrip(run_torch_resident)
run_cupy = _ports.cupy_roundtrip(run_cupy_resident)


def check(result: dict[str, Any], reference: dict[str, Any]) -> None:
    _check.same_keys(result, reference)
    for key in reference:
        _check.assert_close(key, result[key], reference[key], RTOL)
