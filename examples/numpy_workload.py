"""A plain NumPy workload: sensor readings cleaned, summarised, decomposed and filtered.

It is ordinary NumPy on purpose: the input for the migration tools.

    python examples/numpy_workload.py                    # run it
    python -m dispatch analyze examples/numpy_workload.py  # which calls would go where
    python -m dispatch migrate examples/numpy_workload.py  # the one-line change to dispatch

Runs on a CPU in well under a second; the output is the same on every run.
"""

from __future__ import annotations

import numpy as np
from numpy.linalg import solve

N_SENSORS, N_SAMPLES = 64, 4096


def readings(rng: np.random.Generator) -> np.ndarray:
    """Sine waves of different frequencies, with noise and a few dropped samples (NaN)."""
    t = np.linspace(0.0, 1.0, N_SAMPLES)
    freqs = rng.integers(1, 50, size=N_SENSORS)
    signal = np.sin(2 * np.pi * freqs[:, None] * t[None, :])  # broadcasting: sensors x samples
    noisy = signal + 0.1 * rng.standard_normal((N_SENSORS, N_SAMPLES))
    dropped = rng.choice(noisy.size, size=200, replace=False)
    noisy.flat[dropped] = np.nan
    return noisy


def clean(data: np.ndarray) -> np.ndarray:
    """Fill each dropped sample with its sensor's mean (fancy indexing on a boolean mask)."""
    means = np.nanmean(data, axis=1)
    rows, cols = np.nonzero(np.isnan(data))
    filled = data.copy()
    filled[rows, cols] = means[rows]
    return filled


def summarise(data: np.ndarray) -> None:
    """Reductions along both axes, and the sensors picked out by fancy indexing."""
    centred = data - data.mean(axis=1, keepdims=True)
    spread = centred.std(axis=1)
    loudest = np.argsort(spread)[-3:][::-1]
    print("overall mean:      ", f"{data.mean():.6f}")
    print("loudest sensors:   ", loudest.tolist())
    print("their spread:      ", np.round(spread[loudest], 4).tolist())
    print("peak per sensor #0:", f"{np.max(np.abs(data[0])):.4f}")


def decompose(data: np.ndarray) -> None:
    """Covariance, its leading singular values, and a small least-squares fit."""
    cov = np.cov(data)
    singular = np.linalg.svd(cov, compute_uv=False)
    print("top singular values:", np.round(singular[:3], 3).tolist())
    gram = data @ data.T / N_SAMPLES + np.eye(N_SENSORS)
    weights = solve(gram, np.ones(N_SENSORS))
    print("ridge weights sum:  ", f"{weights.sum():.6f}")
    print("condition number:   ", f"{np.linalg.cond(gram):.3f}")


def spectrum(data: np.ndarray) -> None:
    """The dominant frequency of each sensor from a real FFT."""
    power = np.abs(np.fft.rfft(data, axis=1)) ** 2
    freqs = np.fft.rfftfreq(N_SAMPLES, d=1.0 / N_SAMPLES)
    dominant = freqs[np.argmax(power[:, 1:], axis=1) + 1]
    print("dominant Hz, first 8:", dominant[:8].round().astype(int).tolist())


def legacy_sampling() -> None:
    """The legacy global generator, still common in older code."""
    np.random.seed(0)
    sample = np.random.rand(1000, 8)
    walk = np.cumsum(np.random.randn(10_000))
    print("legacy sample mean: ", f"{sample.mean():.6f}")
    print("random walk end:    ", f"{walk[-1]:.6f}")


def main() -> None:
    rng = np.random.default_rng(0)
    data = clean(readings(rng))
    print("shape:", data.shape, "nan left:", int(np.isnan(data).sum()))
    summarise(data)
    decompose(data)
    spectrum(data)
    legacy_sampling()
    grid = np.zeros((300, 300))
    grid[::2, ::2] = 1.0
    print("checkerboard dot:   ", f"{np.dot(grid, grid).trace():.1f}")


if __name__ == "__main__":
    main()
