"""Monte Carlo integration: pi by hit-or-miss, and integrals by the sample mean.

Source: W. H. Press, S. A. Teukolsky, W. T. Vetterling and B. P. Flannery, "Numerical
Recipes" (3rd ed., 2007), section 7.7 "Simple Monte Carlo Integration" (the estimate
V <f> +- V sqrt((<f^2> - <f>^2) / N)), and the hit-or-miss estimate of pi from points in the
unit square (e.g. Scientific Python Lectures' exercises,
https://lectures.scientific-python.org/intro/numpy/). Samples are drawn in batches.
"""

import sys

import numpy as np

SIZE = 40  # batches of 100,000 points
TINY = 2


def main(n=SIZE):
    rng = np.random.default_rng(2024)
    batch = 100_000
    hits = 0
    sums = np.zeros(3)
    sums_sq = np.zeros(3)
    for _ in range(n):
        xy = rng.random((batch, 2))
        hits += int(np.count_nonzero((xy ** 2).sum(axis=1) <= 1.0))
        x = rng.random(batch)
        f = np.stack([np.exp(-x ** 2), np.sqrt(1 - x ** 2), np.sin(np.pi * x) ** 2 / (1 + x)])
        sums += f.sum(axis=1)
        sums_sq += (f ** 2).sum(axis=1)
    N = n * batch
    mean = sums / N
    err = np.sqrt((sums_sq / N - mean ** 2) / N)
    print(f"monte_carlo_integration points={N}")
    print(f"pi by hit-or-miss {4 * hits / N:.8f}")
    for name, m, e in zip(["exp(-x^2)", "sqrt(1-x^2)", "sin^2(pi x)/(1+x)"], mean, err, strict=False):
        print(f"integral of {name} over [0,1]: {m:.8f} +- {e:.2e}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else SIZE)
