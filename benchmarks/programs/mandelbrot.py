"""The Mandelbrot set by escape time, vectorised.

Source: Nicolas P. Rougier, "From Python to Numpy" (2017), section 5.2 "Temporal
vectorization", ``mandelbrot_numpy``,
https://www.labri.fr/perso/nrougier/from-python-to-numpy/#temporal-vectorization (the escape
count ``N[I] = n`` and ``Z[I] = Z[I]**2 + C[I]`` on the points still below the horizon), in
double precision.
"""

import sys

import numpy as np

SIZE = 400  # pixels a side
TINY = 16


def mandelbrot_numpy(xmin, xmax, ymin, ymax, xn, yn, maxiter, horizon=2.0):
    X = np.linspace(xmin, xmax, xn)
    Y = np.linspace(ymin, ymax, yn)
    C = X + Y[:, None] * 1j
    N = np.zeros(C.shape, dtype=int)
    Z = np.zeros(C.shape, np.complex128)
    for n in range(maxiter):
        I = np.less(abs(Z), horizon)
        N[I] = n
        Z[I] = Z[I]**2 + C[I]
    N[N == maxiter - 1] = 0
    return Z, N


def main(n=SIZE):
    maxiter = 100
    _Z, N = mandelbrot_numpy(-2.25, 0.75, -1.25, 1.25, n, n, maxiter)
    inside = int(np.count_nonzero(N == 0))
    print(f"mandelbrot pixels={n}x{n} maxiter={maxiter}")
    print(f"points never escaping (or at once) {inside}")
    print(f"escape count histogram {np.bincount(N.ravel() // 10, minlength=10).tolist()}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else SIZE)
