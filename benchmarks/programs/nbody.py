"""Gravitational N-body simulation, leapfrog (kick-drift-kick) with softening.

Source: Philip Mocz, "Create Your Own N-body Simulation (With Python)" (2020),
https://github.com/pmocz/nbody-python (``getAcc``, ``getEnergy`` and the leapfrog loop are
the article's, with its constants: G = 1, softening 0.1, dt 0.01, total mass 20). Fewer steps
than the article, so that the summary does not depend on the rounding of a chaotic orbit.
"""

import sys

import numpy as np

SIZE = 600  # particles
TINY = 12


def getAcc(pos, mass, G, softening):
    x = pos[:, 0:1]
    y = pos[:, 1:2]
    z = pos[:, 2:3]
    dx = x.T - x
    dy = y.T - y
    dz = z.T - z
    inv_r3 = (dx**2 + dy**2 + dz**2 + softening**2)
    inv_r3[inv_r3 > 0] = inv_r3[inv_r3 > 0]**(-1.5)
    ax = G * (dx * inv_r3) @ mass
    ay = G * (dy * inv_r3) @ mass
    az = G * (dz * inv_r3) @ mass
    return np.hstack((ax, ay, az))


def getEnergy(pos, vel, mass, G):
    KE = 0.5 * np.sum(np.sum(mass * vel**2))
    x = pos[:, 0:1]
    y = pos[:, 1:2]
    z = pos[:, 2:3]
    dx = x.T - x
    dy = y.T - y
    dz = z.T - z
    inv_r = np.sqrt(dx**2 + dy**2 + dz**2)
    inv_r[inv_r > 0] = 1.0 / inv_r[inv_r > 0]
    PE = G * np.sum(np.sum(np.triu(-(mass * mass.T) * inv_r, 1)))
    return KE, PE


def main(n=SIZE):
    t, tEnd, dt = 0.0, 0.5, 0.01
    softening, G = 0.1, 1.0
    rng = np.random.default_rng(17)
    mass = 20.0 * np.ones((n, 1)) / n
    pos = rng.standard_normal((n, 3))
    vel = rng.standard_normal((n, 3))
    vel -= np.mean(mass * vel, 0) / np.mean(mass)
    acc = getAcc(pos, mass, G, softening)
    KE0, PE0 = getEnergy(pos, vel, mass, G)
    Nt = int(np.ceil(tEnd / dt))
    for _ in range(Nt):
        vel += acc * dt / 2.0
        pos += vel * dt
        acc = getAcc(pos, mass, G, softening)
        vel += acc * dt / 2.0
        t += dt
    KE, PE = getEnergy(pos, vel, mass, G)
    print(f"nbody particles={n} steps={Nt}")
    print(f"energy start {KE0 + PE0:.8g} end {KE + PE:.8g}")
    print(f"kinetic {KE:.8g} potential {PE:.8g}")
    print(f"centre of mass {np.abs(np.mean(pos, 0)).max():.3e}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else SIZE)
