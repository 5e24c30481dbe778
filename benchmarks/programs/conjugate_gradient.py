"""Conjugate gradient on the 2-D Poisson equation, matrix-free.

Source: Jonathan R. Shewchuk, "An Introduction to the Conjugate Gradient Method Without the
Agonizing Pain" (1994), appendix B2 "Conjugate Gradients",
https://www.cs.cmu.edu/~quake-papers/painless-conjugate-gradient.pdf (the recurrences for r, d,
alpha and beta, run for a fixed i_max), applied to the five-point Laplacian on an n x n grid
with zero boundary values (e.g. Y. Saad, "Iterative Methods for Sparse Linear Systems", 2nd
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


def conjugate_gradient(b, i_max):
    x = np.zeros_like(b)
    r = b - laplacian(x)
    d = r.copy()
    delta_new = np.vdot(r, r)
    delta_0 = delta_new
    for _i in range(i_max):
        q = laplacian(d)
        alpha = delta_new / np.vdot(d, q)
        x = x + alpha * d
        r = r - alpha * q
        delta_old = delta_new
        delta_new = np.vdot(r, r)
        beta = delta_new / delta_old
        d = r + beta * d
    return x, np.sqrt(delta_new / delta_0)


def main(n=SIZE):
    h = 1.0 / (n + 1)
    s = np.linspace(h, 1 - h, n)
    X, Y = np.meshgrid(s, s)
    f = 2 * np.pi ** 2 * np.sin(np.pi * X) * np.sin(np.pi * Y)
    u, rel_res = conjugate_gradient(f * h ** 2, i_max=300)
    exact = np.sin(np.pi * X) * np.sin(np.pi * Y)
    print(f"conjugate_gradient grid={n}x{n} iterations=300")
    print(f"relative residual below 1e-6: {bool(rel_res < 1e-6)}")
    print(f"max error against the exact solution {np.abs(u - exact).max():.6e}")
    print(f"solution at centre {u[n // 2, n // 2]:.8g}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else SIZE)
