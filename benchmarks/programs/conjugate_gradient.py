"""Conjugate gradient on the 2-D Poisson equation, matrix-free.

Source: Jonathan R. Shewchuk, "An Introduction to the Conjugate Gradient Method Without the
Agonizing Pain" (1994), appendix B2 "Conjugate Gradients",
https://www.cs.cmu.edu/~quake-papers/painless-conjugate-gradient.pdf (the recurrences for r, d,
alpha and beta, the residual recomputed every 50 iterations, the stop at i_max or at
delta_new <= eps^2 delta_0), applied to -laplace(u) = 1 with the five-point Laplacian on an n x n
grid and zero boundary values (e.g. Y. Saad, "Iterative Methods for Sparse Linear Systems", 2nd
ed., section 2.2).
"""

import sys

import numpy as np

SIZE = 200  # interior grid points a side
TINY = 10


def laplacian(u):
    """The five-point -Laplacian of u (zero outside), times h^2."""
    out = 4.0 * u
    out[1:, :] -= u[:-1, :]
    out[:-1, :] -= u[1:, :]
    out[:, 1:] -= u[:, :-1]
    out[:, :-1] -= u[:, 1:]
    return out


def conjugate_gradient(b, i_max, eps=1e-8):
    i = 0
    x = np.zeros_like(b)
    r = b - laplacian(x)
    d = r.copy()
    delta_new = np.vdot(r, r)
    delta_0 = delta_new
    while i < i_max and delta_new > eps ** 2 * delta_0:
        q = laplacian(d)
        alpha = delta_new / np.vdot(d, q)
        x = x + alpha * d
        if i % 50 == 0:
            r = b - laplacian(x)
        else:
            r = r - alpha * q
        delta_old = delta_new
        delta_new = np.vdot(r, r)
        beta = delta_new / delta_old
        d = r + beta * d
        i = i + 1
    return x, i, np.sqrt(delta_new / delta_0)


def main(n=SIZE):
    h = 1.0 / (n + 1)
    u, iterations, rel_res = conjugate_gradient(np.full((n, n), h ** 2), i_max=10 * n)
    print(f"conjugate_gradient grid={n}x{n} eps=1e-8")
    print(f"converged: {bool(rel_res <= 1e-8)} in about {round(iterations, -1)} iterations")
    print(f"u at the centre {u[n // 2, n // 2]:.6g} (-laplace(u) = 1 on the unit square: 0.0737)")
    print(f"mean of u {u.mean():.6g}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else SIZE)
