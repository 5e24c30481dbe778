"""PageRank of a random link graph by power iteration.

Source: the Wikipedia article "PageRank", section "Power method", Python example,
https://en.wikipedia.org/wiki/PageRank#Python (the damped matrix
``M_hat = d * M + (1 - d) / N`` and ``v = M_hat @ v`` repeated), and "Power iteration",
https://en.wikipedia.org/wiki/Power_iteration (the dominant eigenvalue by the Rayleigh
quotient). The graph is a seeded random one, its columns normalised to sum to one.
"""

import sys

import numpy as np

SIZE = 1500  # pages
TINY = 20


def pagerank(M, num_iterations=100, d=0.85):
    N = M.shape[1]
    v = np.ones(N) / N
    M_hat = d * M + (1 - d) / N
    for _i in range(num_iterations):
        v = M_hat @ v
    return v, M_hat


def main(n=SIZE):
    rng = np.random.default_rng(8)
    links = (rng.random((n, n)) < 8 / n).astype(float)
    links[:, links.sum(axis=0) == 0] = 1.0  # a page without links links to every page
    M = links / links.sum(axis=0)
    v, M_hat = pagerank(M)
    eigenvalue = v @ (M_hat @ v) / (v @ v)
    top = np.argsort(-v, kind="stable")[:5]
    print(f"pagerank_power_iteration pages={n} iterations=100")
    print(f"rank sum {v.sum():.10g}")
    print(f"top pages {top.tolist()}")
    print(f"top ranks {np.round(v[top], 8).tolist()}")
    print(f"dominant eigenvalue {eigenvalue:.10g}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else SIZE)
