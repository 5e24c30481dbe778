"""Bootstrap confidence intervals for the mean and the median.

Source: Cliburn Chan and Janice McCarthy, "Computational Statistics in Python" (STA 663,
Duke University), "Resampling and Monte Carlo Simulations", section "Bootstrap",
https://people.duke.edu/~ccc14/sta-663/ResamplingAndMonteCarloSimulations.html (resample
with replacement with ``choice``, a statistic per resample, percentile intervals), after B.
Efron and R. Tibshirani, "An Introduction to the Bootstrap" (1993).
"""

import sys

import numpy as np

SIZE = 4000  # bootstrap resamples
TINY = 20


def main(n=SIZE):
    rng = np.random.default_rng(11)
    x = np.concatenate([rng.normal(10, 2, 700), rng.exponential(5, 300)])
    reps = n
    xb = rng.choice(x, (reps, len(x)), replace=True)
    mb = xb.mean(axis=1)
    mdb = np.median(xb, axis=1)
    sb = xb.std(axis=1, ddof=1)
    lo, hi = np.percentile(mb, [2.5, 97.5])
    mlo, mhi = np.percentile(mdb, [2.5, 97.5])
    print(f"bootstrap sample={len(x)} resamples={reps}")
    print(f"mean {x.mean():.10g} 95% CI [{lo:.8g}, {hi:.8g}]")
    print(f"median {np.median(x):.10g} 95% CI [{mlo:.8g}, {mhi:.8g}]")
    print(f"standard error of the mean {mb.std(ddof=1):.8g} (formula {x.std(ddof=1) / np.sqrt(len(x)):.8g})")
    print(f"mean of resampled std {sb.mean():.8g}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else SIZE)
