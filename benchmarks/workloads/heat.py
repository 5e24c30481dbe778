"""Explicit time stepping of the 2-D heat equation on a square plate: a five-point stencil
written with slices, updated in place.

Fixed (Dirichlet) edges, one hot edge and a few hot spots; ``alpha = D·dt/h²`` below the
stability limit of 1/4. The largest change of each step is kept as a convergence history.
"""

from __future__ import annotations

from typing import Any

import numpy

from benchmarks.workloads import _check, _ports

NAME = "heat"
SIZES = {
    "small": {"n": 128, "steps": 50},
    "medium": {"n": 512, "steps": 100},
    "large": {"n": 2_048, "steps": 50},
}
ALPHA = 0.2


def make_data(size: str, seed: int = 0) -> dict[str, Any]:
    p = SIZES[size]
    rng = numpy.random.default_rng(seed)
    n = p["n"]
    y, x = numpy.mgrid[0:n, 0:n] / n
    u = numpy.zeros((n, n))
    for cy, cx in rng.uniform(0.2, 0.8, size=(5, 2)):
        u += numpy.exp(-((y - cy) ** 2 + (x - cx) ** 2) / 0.002)
    u[0, :] = 1.0  # the hot edge
    u[-1, :] = u[:, 0] = u[:, -1] = 0.0
    return {"u0": u, "alpha": ALPHA, "steps": p["steps"]}


def run(xp: Any, u0: Any, alpha: float, steps: int) -> dict[str, Any]:
    u = xp.asarray(u0).copy()  # the caller's initial state stays untouched
    change = []
    for _ in range(steps):
        inner = u[1:-1, 1:-1]
        laplacian = u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:] - 4.0 * inner
        step = alpha * laplacian
        u[1:-1, 1:-1] += step
        change.append(xp.abs(step).max())
    return {"u": u, "total_heat": u.sum(), "max_change": xp.stack(change)}


def run_torch_resident(torch: Any, u0: Any, alpha: float, steps: int) -> dict[str, Any]:
    u = u0.clone()
    change = []
    for _ in range(steps):
        inner = u[1:-1, 1:-1]
        laplacian = u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:] - 4.0 * inner
        step = alpha * laplacian
        u[1:-1, 1:-1] += step
        change.append(torch.abs(step).amax())
    return {"u": u, "total_heat": u.sum(), "max_change": torch.stack(change)}


# CuPy mirrors every NumPy call above, so the CuPy port is the program itself.
run_cupy_resident = run
run_torch = _ports.torch_roundtrip(run_torch_resident)
run_cupy = _ports.cupy_roundtrip(run_cupy_resident)


def check(result: dict[str, Any], reference: dict[str, Any]) -> None:
    _check.same_keys(result, reference)
    for key in reference:
        _check.assert_close(key, result[key], reference[key])
