"""Predator-prey dynamics (Lotka-Volterra) from many starting populations.

Source: SciPy Cookbook, "Lotka-Volterra Tutorial",
https://scipy-cookbook.readthedocs.io/items/LoktaVolterraTutorial.html (the rates a = 1,
b = 0.1, c = 1.5, d = 0.75, the start X0 = [10, 5], the fixed point and the conserved
quantity). The cookbook integrates one start with ``odeint``; here a fixed-step Runge-Kutta
scheme advances a batch of starts around X0 together.
"""

import sys

import numpy as np

SIZE = 10000  # starting populations
TINY = 10

a, b, c, d = 1.0, 0.1, 1.5, 0.75


def dX_dt(X):
    """Return the growth rate of fox and rabbit populations."""
    return np.array([a * X[0] - b * X[0] * X[1],
                     -c * X[1] + d * b * X[0] * X[1]])


def invariant(X):
    return d * b * X[0] - c * np.log(X[0]) + b * X[1] - a * np.log(X[1])


def main(n=SIZE):
    rng = np.random.default_rng(3)
    X0 = np.array([10.0, 5.0])[:, None] * rng.uniform(0.5, 1.5, (2, n))
    X = X0.copy()
    dt, steps = 0.01, 1500
    rabbits_max = X[0].copy()
    for _ in range(steps):
        k1 = dX_dt(X)
        k2 = dX_dt(X + dt / 2 * k1)
        k3 = dX_dt(X + dt / 2 * k2)
        k4 = dX_dt(X + dt * k3)
        X = X + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        rabbits_max = np.maximum(rabbits_max, X[0])
    drift = np.abs(invariant(X) - invariant(X0)).max()
    X_f1 = np.array([c / (d * b), a / b])
    print(f"lotka_volterra starts={n} steps={steps} t={dt * steps:g}")
    print(f"fixed point {X_f1.tolist()} rate there {dX_dt(X_f1).tolist()}")
    print(f"mean rabbits {X[0].mean():.10g} mean foxes {X[1].mean():.10g}")
    print(f"largest rabbit population {rabbits_max.max():.10g}")
    print(f"invariant drift below 1e-6: {bool(drift < 1e-6)}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else SIZE)
