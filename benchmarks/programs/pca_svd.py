"""Principal component analysis by the singular value decomposition.

Source: Jonathon Shlens, "A Tutorial on Principal Component Analysis" (2014),
https://arxiv.org/abs/1404.1100, section VI "A more general solution: singular value
decomposition" and appendix B's ``pca2`` (subtract the mean of each measurement, SVD of the
centred data divided by sqrt(n - 1), the variances as squared singular values, the projection
onto the principal components). The data are seeded: three latent factors seen through 50
noisy measurements.
"""

import sys

import numpy as np

SIZE = 20000  # observations
TINY = 60


def pca2(data):
    """data: M x N, M measurement types, N trials (Shlens's layout)."""
    _M, N = data.shape
    mn = np.mean(data, axis=1)
    data = data - mn[:, None]
    Y = data.T / np.sqrt(N - 1)
    _u, S, PC = np.linalg.svd(Y, full_matrices=False)
    V = S * S
    signals = PC @ data
    return signals, PC, V


def main(n=SIZE):
    rng = np.random.default_rng(4)
    latent = rng.standard_normal((3, n)) * np.array([[5.0], [2.0], [1.0]])
    mixing = rng.standard_normal((50, 3))
    data = mixing @ latent + 0.3 * rng.standard_normal((50, n)) + np.arange(50)[:, None]
    signals, PC, V = pca2(data)
    explained = V / V.sum()
    print(f"pca_svd measurements=50 trials={n}")
    print(f"explained variance ratio {np.round(explained[:4], 8).tolist()}")
    print(f"three components explain {explained[:3].sum():.8f}")
    print(f"signal variances {np.round(signals[:3].var(axis=1, ddof=1), 6).tolist()}")
    print(f"components orthonormal: {bool(np.allclose(PC @ PC.T, np.eye(50)))}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else SIZE)
