"""Binning, grouping and sorting records: histograms three ways and per-group statistics.

Source: Jake VanderPlas, "Python Data Science Handbook" (O'Reilly, 2016), chapter 2:
"Fancy Indexing", "Example: Binning Data" (``np.searchsorted`` with ``np.add.at``, against
``np.histogram``), https://jakevdp.github.io/PythonDataScienceHandbook/02.07-fancy-indexing.html,
and "Aggregations" / "Sorting Arrays" (per-group reductions; ``np.unique`` with inverse indices,
``np.bincount``, a stable ``argsort`` by group, ``np.split`` at group boundaries).
"""

import sys

import numpy as np

SIZE = 400000  # records
TINY = 100


def main(n=SIZE):
    rng = np.random.default_rng(6)
    x = rng.standard_normal(n)

    # compute a histogram by hand
    bins = np.linspace(-5, 5, 20)
    counts = np.zeros_like(bins)
    i = np.searchsorted(bins, x)
    np.add.at(counts, i, 1)
    hist, _ = np.histogram(x, bins)
    print(f"binning_grouping records={n}")
    print(f"hand counts {counts.astype(int).tolist()}")
    print(f"np.histogram agrees: {bool((counts[1:-1] == hist[:-1]).all())}")

    # group records by a key: sums, means, medians
    keys = rng.integers(0, 500, n) * 7 + 3
    values = np.round(rng.gamma(2.0, 10.0, n), 2)
    groups, inverse, sizes = np.unique(keys, return_inverse=True, return_counts=True)
    sums = np.bincount(inverse, weights=values)
    means = sums / sizes
    order = np.argsort(inverse, kind="stable")
    sorted_values = values[order]
    boundaries = np.cumsum(sizes)[:-1]
    medians = np.array([np.median(g) for g in np.split(sorted_values, boundaries)])
    top = groups[np.argsort(-means, kind="stable")[:3]]
    print(f"groups {len(groups)} largest {int(sizes.max())} smallest {int(sizes.min())}")
    print(f"grand total {sums.sum():.2f}")
    print(f"top groups by mean {top.tolist()}")
    print(f"median of group medians {np.median(medians):.6f}")
    print(f"percentiles of values {np.percentile(values, [10, 50, 90]).round(4).tolist()}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else SIZE)
