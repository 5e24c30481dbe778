"""2-D diffusion by explicit finite differences.

Source: Lorena A. Barba et al., "12 steps to Navier-Stokes" (CFD Python), Step 7: 2-D
diffusion, https://github.com/barbagroup/CFDPython (lessons/09_Step_7.ipynb). The hat-function
initial condition, the stability factor sigma = 0.25 and the array-slicing update are the
lesson's; the grid side is the size parameter.
"""

import sys

import numpy as np

SIZE = 401  # grid points a side
TINY = 21


def diffuse(nt, nx, ny, nu=0.05, sigma=0.25):
    dx = 2 / (nx - 1)
    dy = 2 / (ny - 1)
    dt = sigma * dx * dy / nu
    u = np.ones((ny, nx))
    u[int(0.5 / dy):int(1 / dy + 1), int(0.5 / dx):int(1 / dx + 1)] = 2
    for _ in range(nt + 1):
        un = u.copy()
        u[1:-1, 1:-1] = (un[1:-1, 1:-1]
                         + nu * dt / dx**2 * (un[1:-1, 2:] - 2 * un[1:-1, 1:-1] + un[1:-1, 0:-2])
                         + nu * dt / dy**2 * (un[2:, 1:-1] - 2 * un[1:-1, 1:-1] + un[0:-2, 1:-1]))
        u[0, :] = 1
        u[-1, :] = 1
        u[:, 0] = 1
        u[:, -1] = 1
    return u


def main(n=SIZE):
    u = diffuse(nt=100, nx=n, ny=n)
    print(f"heat_equation grid={n}x{n} steps=100")
    print(f"total heat {u.sum():.10g}")
    print(f"peak {u.max():.10g} centre {u[n // 2, n // 2]:.10g}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else SIZE)
