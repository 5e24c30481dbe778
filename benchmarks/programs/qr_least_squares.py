"""Polynomial least squares by QR factorisation, against the normal equations and lstsq.

Source: Lloyd N. Trefethen and David Bau III, "Numerical Linear Algebra" (SIAM, 1997),
Lecture 11 "Least Squares Problems" (Algorithm 11.2: reduced QR, y = Q* b, solve R x = y) and
Lecture 19 "Stability of Least Squares Algorithms" (fitting exp(sin(4t)) on [0, 1] by a
polynomial, solved by Householder QR, by the normal equations and by the SVD). Here with a
lower degree, on many sample points, for several right-hand sides.
"""

import sys

import numpy as np

SIZE = 200000  # sample points
TINY = 40


def main(n=SIZE):
    m, degree = n, 8
    t = np.linspace(0, 1, m)
    A = np.vander(2 * t - 1, degree + 1, increasing=True)   # powers of s = 2t - 1, well scaled
    b = np.stack([np.exp(np.sin(4 * t)), np.cos(3 * t), 1 / (1 + 25 * (t - 0.5) ** 2)], axis=1)
    Q, R = np.linalg.qr(A)
    x_qr = np.linalg.solve(R, Q.T @ b)
    x_ne = np.linalg.solve(A.T @ A, A.T @ b)
    x_ls = np.linalg.lstsq(A, b, rcond=None)[0]
    residual = np.linalg.norm(A @ x_qr - b, axis=0)
    print(f"qr_least_squares points={m} degree={degree} right-hand sides=3")
    print(f"residual norms {np.round(residual, 8).tolist()}")
    print(f"leading coefficients {np.round(x_qr[0], 8).tolist()}")
    print(f"QR vs lstsq below 1e-8: {bool(np.abs(x_qr - x_ls).max() < 1e-8)}")
    print(f"QR vs normal equations below 1e-6: {bool(np.abs(x_qr - x_ne).max() < 1e-6)}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else SIZE)
