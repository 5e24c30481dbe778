"""Moving averages and rolling statistics of a noisy series, by cumulative sums.

Source: the cumulative-sum moving average of the Stack Overflow answer "Moving average or
running mean" (https://stackoverflow.com/a/14314054, ``ret = np.cumsum(a); ret[n:] = ret[n:] -
ret[:-n]; return ret[n - 1:] / n``), checked against ``np.convolve`` with a box kernel, and
the exponentially weighted moving average recurrence (NIST/SEMATECH e-Handbook of Statistical
Methods, section 6.3.2.4 "EWMA control charts",
https://www.itl.nist.gov/div898/handbook/pmc/section3/pmc324.htm) with its control limits.
"""

import sys

import numpy as np

SIZE = 2_000_000  # observations
TINY = 200


def moving_average(a, n=3):
    ret = np.cumsum(a, dtype=float)
    ret[n:] = ret[n:] - ret[:-n]
    return ret[n - 1:] / n


def main(n=SIZE):
    rng = np.random.default_rng(10)
    t = np.arange(n)
    series = np.sin(2 * np.pi * t / 5000) + 0.5 * rng.standard_normal(n) + (t > n // 2) * 0.3
    window = 100
    ma = moving_average(series, window)
    box = np.convolve(series[:20000], np.ones(window) / window, mode="valid")
    sq = moving_average(series ** 2, window)
    rolling_std = np.sqrt(np.maximum(sq - ma ** 2, 0) * window / (window - 1))
    # EWMA of block means, with control limits
    lam = 0.2
    means = series[: n // 100 * 100].reshape(-1, 100).mean(axis=1)
    z = np.empty_like(means)
    z[0] = means[:20].mean()
    for i in range(1, len(means)):
        z[i] = lam * means[i] + (1 - lam) * z[i - 1]
    sigma = means[:20].std(ddof=1)
    limit = 3 * sigma * np.sqrt(lam / (2 - lam))
    out = np.abs(z - means[:20].mean()) > limit
    print(f"moving_average observations={n} window={window}")
    print(f"cumsum and convolve agree: {bool(np.allclose(ma[:len(box)], box))}")
    print(f"moving average range {ma.min():.8g} to {ma.max():.8g}")
    print(f"mean rolling std {rolling_std.mean():.8g}")
    print(f"EWMA points out of control {int(out.sum())} of {len(z)}, first at block {int(np.argmax(out))}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else SIZE)
