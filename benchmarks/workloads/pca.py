"""Principal component analysis by a thin SVD.

Center the data, ``svd(full_matrices=False)``, fix each component's sign (scikit-learn's
convention: its largest loading is positive), project onto the leading components, and report
explained variance and the relative reconstruction error.
"""

from __future__ import annotations

from typing import Any

import numpy

from benchmarks.workloads import _check, _ports

NAME = "pca"
SIZES = {
    "small": {"n": 1_000, "d": 32, "n_components": 5},
    "medium": {"n": 20_000, "d": 64, "n_components": 8},
    "large": {"n": 100_000, "d": 128, "n_components": 10},
}


def make_data(size: str, seed: int = 0) -> dict[str, Any]:
    p = SIZES[size]
    rng = numpy.random.default_rng(seed)
    n, d, r = p["n"], p["d"], p["n_components"]
    # A low-rank signal with well-separated variances plus isotropic noise: the leading
    # components are well defined (no near-degenerate pair that backends could rotate).
    scales = numpy.geomspace(20.0, 3.0, r)
    loadings = numpy.linalg.qr(rng.standard_normal((d, r)))[0].T
    X = (rng.standard_normal((n, r)) * scales) @ loadings + 0.5 * rng.standard_normal((n, d))
    X += rng.normal(scale=5.0, size=d)
    return {"X": X, "n_components": r}


def run(xp: Any, X: Any, n_components: int) -> dict[str, Any]:
    X = xp.asarray(X)
    n = X.shape[0]
    mean = X.mean(axis=0)
    Xc = X - mean
    _, S, Vt = xp.linalg.svd(Xc, full_matrices=False)
    V = Vt[:n_components]
    largest = xp.argmax(xp.abs(V), axis=1)
    V = V * xp.sign(xp.take_along_axis(V, largest[:, None], axis=1))
    scores = Xc @ V.T
    variance = S**2 / (n - 1)
    residual = Xc - scores @ V
    return {
        "mean": mean,
        "singular_values": S,
        "explained_variance": variance[:n_components],
        "explained_variance_ratio": variance[:n_components] / variance.sum(),
        "components": V,
        "scores": scores,
        "reconstruction_error": xp.sqrt((residual**2).sum() / (Xc**2).sum()),
    }


def run_torch_resident(torch: Any, X: Any, n_components: int) -> dict[str, Any]:
    n = X.shape[0]
    mean = X.mean(dim=0)
    Xc = X - mean
    _, S, Vt = torch.linalg.svd(Xc, full_matrices=False)
    V = Vt[:n_components]
    largest = torch.argmax(torch.abs(V), dim=1)
    V = V * torch.sign(torch.take_along_dim(V, largest[:, None], dim=1))
    scores = Xc @ V.T
    variance = S**2 / (n - 1)
    residual = Xc - scores @ V
    return {
        "mean": mean,
        "singular_values": S,
        "explained_variance": variance[:n_components],
        "explained_variance_ratio": variance[:n_components] / variance.sum(),
        "components": V,
        "scores": scores,
        "reconstruction_error": torch.sqrt((residual**2).sum() / (Xc**2).sum()),
    }


# CuPy mirrors every NumPy call above, so the CuPy port is the program itself.
run_cupy_resident = run
run_torch = _ports.torch_roundtrip(run_torch_resident)
run_cupy = _ports.cupy_roundtrip(run_cupy_resident)


def check(result: dict[str, Any], reference: dict[str, Any]) -> None:
    _check.same_keys(result, reference)
    for key in ("mean", "singular_values", "explained_variance", "explained_variance_ratio", "reconstruction_error"):
        _check.assert_close(key, result[key], reference[key])
    # Singular vectors are defined up to sign; the program fixes a convention, but a backend
    # whose largest loading ties (or a port without the convention) may still flip one.
    # Align each component with the reference before comparing, and flip its scores alike.
    V, ref_V = _check.host(result["components"]), _check.host(reference["components"])
    _check.same_meta("components", V, ref_V)
    signs = numpy.where((V * ref_V).sum(axis=1) < 0, -1.0, 1.0).astype(V.dtype)
    _check.assert_close("components (up to sign)", V * signs[:, None], ref_V)
    scores = _check.host(result["scores"])
    _check.same_meta("scores", scores, _check.host(reference["scores"]))
    _check.assert_close("scores (up to sign)", scores * signs[None, :], reference["scores"])
