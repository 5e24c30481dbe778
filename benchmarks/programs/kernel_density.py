"""Gaussian kernel density estimate written out by hand.

Source: Jake VanderPlas, "Python Data Science Handbook" (O'Reilly, 2016), chapter 5, "In
Depth: Kernel Density Estimation",
https://jakevdp.github.io/PythonDataScienceHandbook/05.13-kernel-density-estimation.html (the
bimodal sample ``make_data``, and the estimate as a sum of a Gaussian at each point over the
grid ``x_d``), with Silverman's rule-of-thumb bandwidth (B. W. Silverman, "Density Estimation
for Statistics and Data Analysis", 1986, eq. 3.31). The grid is evaluated in blocks.
"""

import sys

import numpy as np

SIZE = 10000  # sample points
TINY = 30


def make_data(N, f=0.3, rseed=1):
    rand = np.random.default_rng(rseed)
    x = rand.standard_normal(N)
    x[int(f * N):] += 5
    return x


def main(n=SIZE):
    x = make_data(n)
    x_d = np.linspace(-4, 8, 2000)
    sd = x.std(ddof=1)
    iqr = np.subtract(*np.percentile(x, [75, 25]))
    h = 0.9 * min(sd, iqr / 1.34) * len(x) ** (-1 / 5)
    density = np.zeros_like(x_d)
    for start in range(0, len(x_d), 250):
        block = x_d[start:start + 250]
        z = (block[:, None] - x[None, :]) / h
        density[start:start + 250] = np.exp(-0.5 * z ** 2).sum(axis=1)
    density /= len(x) * h * np.sqrt(2 * np.pi)
    area = np.trapezoid(density, x_d)
    modes = np.flatnonzero((density[1:-1] > density[:-2]) & (density[1:-1] > density[2:])) + 1
    print(f"kernel_density points={n} grid={len(x_d)}")
    print(f"bandwidth {h:.10g}")
    print(f"area {area:.8g}")
    print(f"modes at {np.round(x_d[modes], 3).tolist()}")
    print(f"peak density {density.max():.8g}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else SIZE)
