"""The 2-D Ising model by checkerboard Metropolis updates.

Source: Mark Newman and Gerard Barkema, "Monte Carlo Methods in Statistical Physics" (Oxford,
1999), chapter 3 (the Metropolis algorithm for the Ising model, acceptance
min(1, exp(-beta dE))), vectorised by the checkerboard decomposition: the two sublattices of a
square lattice are updated in turn (e.g. Scientific Python Lectures style; also M. Weigel,
"Simulating spin models on GPU", Comput. Phys. Commun. 182 (2011) 1833). Periodic boundaries
through ``np.roll``; field zero, J = 1.
"""

import sys

import numpy as np

SIZE = 192  # lattice side
TINY = 8


def sweep(spins, beta, rng, masks):
    for mask in masks:
        neighbours = (np.roll(spins, 1, 0) + np.roll(spins, -1, 0)
                      + np.roll(spins, 1, 1) + np.roll(spins, -1, 1))
        dE = 2 * spins * neighbours
        accept = rng.random(spins.shape) < np.exp(-beta * dE)
        flip = mask & accept
        spins = np.where(flip, -spins, spins)
    return spins


def main(n=SIZE):
    rng = np.random.default_rng(99)
    i, j = np.indices((n, n))
    black = (i + j) % 2 == 0
    masks = (black, ~black)
    print(f"ising_model lattice={n}x{n} sweeps=60 per temperature")
    for T in (1.5, 2.269, 3.5):
        spins = np.ones((n, n), dtype=np.int64)
        for _ in range(60):
            spins = sweep(spins, 1.0 / T, rng, masks)
        m = abs(spins.mean())
        energy = -(spins * (np.roll(spins, 1, 0) + np.roll(spins, 1, 1))).sum() / spins.size
        print(f"T={T}: |magnetisation| {m:.8f} energy per spin {energy:.8f}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else SIZE)
