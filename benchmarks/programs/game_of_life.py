"""Conway's Game of Life, vectorised.

Source: Nicolas P. Rougier, "From Python to Numpy" (2017), section 4.2 "Uniform
vectorization: the Game of Life", https://www.labri.fr/perso/nrougier/from-python-to-numpy/
(the ``iterate`` function, with its neighbour count as a sum of eight shifted slices). The
board starts from a seeded random fill instead of a glider.
"""

import sys

import numpy as np

SIZE = 512  # cells a side
TINY = 24


def iterate(Z):
    # Count neighbours
    N = (Z[0:-2, 0:-2] + Z[0:-2, 1:-1] + Z[0:-2, 2:] +
         Z[1:-1, 0:-2] + Z[1:-1, 2:] +
         Z[2:, 0:-2] + Z[2:, 1:-1] + Z[2:, 2:])
    # Apply rules
    birth = (N == 3) & (Z[1:-1, 1:-1] == 0)
    survive = ((N == 2) | (N == 3)) & (Z[1:-1, 1:-1] == 1)
    Z[...] = 0
    Z[1:-1, 1:-1][birth | survive] = 1
    return Z


def main(n=SIZE):
    rng = np.random.default_rng(42)
    Z = rng.integers(0, 2, size=(n, n))
    alive = []
    for _ in range(100):
        Z = iterate(Z)
        alive.append(int(Z.sum()))
    print(f"game_of_life board={n}x{n} generations=100")
    print(f"alive after 1, 10, 100: {alive[0]} {alive[9]} {alive[99]}")
    print(f"row checksum {int((Z.sum(axis=1) * np.arange(n)).sum())}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else SIZE)
