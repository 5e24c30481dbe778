"""Monte Carlo pricing of European, Asian and up-and-out barrier calls under geometric
Brownian motion, with antithetic variates and standard errors.

The normal draws are made on the host in ``make_data`` with NumPy's generator, not inside
``run``. Every mode then prices the very same paths, so results agree to rounding and are
checked tightly: a torch or CuPy generator yields other numbers (only a loose statistical
check would be possible, blind to a 1e-3 error), and the generators' own speeds, which differ
far more than the pricing arithmetic does, stay out of the timings. The cost is that a round
trip to a GPU carries the draws over the bus; the resident form of a port leaves that out.
"""

from __future__ import annotations

import math
from typing import Any

import numpy

from benchmarks.workloads import _check, _ports

NAME = "monte_carlo"
SIZES = {
    "small": {"n_paths": 2_000, "n_steps": 64},
    "medium": {"n_paths": 20_000, "n_steps": 128},
    "large": {"n_paths": 100_000, "n_steps": 252},
}
MARKET = {"spot": 100.0, "strike": 105.0, "barrier": 140.0, "rate": 0.03, "volatility": 0.25, "maturity": 1.0}


def make_data(size: str, seed: int = 0) -> dict[str, Any]:
    p = SIZES[size]
    rng = numpy.random.default_rng(seed)
    return {"z": rng.standard_normal((p["n_paths"], p["n_steps"])), **MARKET}


def run(
    xp: Any,
    z: Any,
    spot: float,
    strike: float,
    barrier: float,
    rate: float,
    volatility: float,
    maturity: float,
) -> dict[str, Any]:
    z = xp.asarray(z)
    n, steps = z.shape
    dt = maturity / steps
    drift, vol = (rate - 0.5 * volatility**2) * dt, volatility * math.sqrt(dt)
    z = xp.concatenate([z, -z])  # antithetic: path i and path n + i are mirror images
    paths = spot * xp.exp(xp.cumsum(drift + vol * z, axis=1))
    discount = math.exp(-rate * maturity)
    call = xp.maximum(paths[:, -1] - strike, 0.0)
    asian = xp.maximum(paths.mean(axis=1) - strike, 0.0)
    knocked_out = paths.max(axis=1) >= barrier
    barrier_call = xp.where(knocked_out, 0.0, call)
    out = {"terminal_mean": discount * paths[:, -1].mean(), "knock_out_rate": knocked_out.mean()}
    for name, payoff in (("european", call), ("asian", asian), ("barrier", barrier_call)):
        pair = 0.5 * (payoff[:n] + payoff[n:])  # antithetic pairs are the independent samples
        out[f"{name}_price"] = discount * pair.mean()
        out[f"{name}_stderr"] = discount * pair.std(ddof=1) / math.sqrt(n)
    return out


def run_torch_resident(
    torch: Any,
    z: Any,
    spot: float,
    strike: float,
    barrier: float,
    rate: float,
    volatility: float,
    maturity: float,
) -> dict[str, Any]:
    n, steps = z.shape
    dt = maturity / steps
    drift, vol = (rate - 0.5 * volatility**2) * dt, volatility * math.sqrt(dt)
    z = torch.cat([z, -z])
    paths = spot * torch.exp(torch.cumsum(drift + vol * z, dim=1))
    discount = math.exp(-rate * maturity)
    call = torch.clamp(paths[:, -1] - strike, min=0.0)
    asian = torch.clamp(paths.mean(dim=1) - strike, min=0.0)
    knocked_out = paths.amax(dim=1) >= barrier
    barrier_call = torch.where(knocked_out, 0.0, call)
    out = {"terminal_mean": discount * paths[:, -1].mean(), "knock_out_rate": knocked_out.to(z.dtype).mean()}
    for name, payoff in (("european", call), ("asian", asian), ("barrier", barrier_call)):
        pair = 0.5 * (payoff[:n] + payoff[n:])
        out[f"{name}_price"] = discount * pair.mean()
        out[f"{name}_stderr"] = discount * pair.std(correction=1) / math.sqrt(n)
    return out


# CuPy mirrors every NumPy call above, so the CuPy port is the program itself.
run_cupy_resident = run
run_torch = _ports.torch_roundtrip(run_torch_resident)
run_cupy = _ports.cupy_roundtrip(run_cupy_resident)


def check(result: dict[str, Any], reference: dict[str, Any]) -> None:
    _check.same_keys(result, reference)
    for key in reference:
        _check.assert_close(key, result[key], reference[key])
