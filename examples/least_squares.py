"""A plain NumPy regression on a tall design matrix: 300,000 observations of 12 features.

Large enough that each call takes milliseconds, not microseconds: the input for checking what
``analyze`` estimates against what the calls take.

    python examples/least_squares.py
    python -m dispatch analyze examples/least_squares.py

Runs on a CPU in about a second; the output is the same on every run.
"""

from __future__ import annotations

import numpy as np

N_OBS, N_FEATURES = 300_000, 12


def main() -> None:
    rng = np.random.default_rng(0)
    Z = rng.standard_normal((N_OBS, N_FEATURES))
    true_beta = np.linspace(-1.0, 1.0, N_FEATURES)
    y = Z @ true_beta + 0.1 * rng.standard_normal(N_OBS)
    beta, _, rank, singular = np.linalg.lstsq(Z, y, rcond=None)
    fit = Z @ beta
    residual = y - fit
    print("rank:", int(rank), "largest error in beta:", f"{np.max(np.abs(beta - true_beta)):.4f}")
    print("residual std:", f"{np.std(residual):.4f}", "condition:", f"{singular[0] / singular[-1]:.3f}")
    gram = Z.T @ Z
    normal = np.linalg.solve(gram, Z.T @ y)
    print("normal equations agree:", bool(np.allclose(normal, beta)))
    order = np.argsort(residual)
    print("worst residuals at:", order[-3:].tolist())
    spectrum = np.abs(np.fft.rfft(residual)) ** 2
    print("residual power below 1% of the band:", f"{spectrum[: N_OBS // 200].sum() / spectrum.sum():.4f}")


if __name__ == "__main__":
    main()
