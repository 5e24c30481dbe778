"""The SIR epidemic model, integrated for a grid of transmission and recovery rates.

Source: Christian Hill, "Learning Scientific Programming with Python" (2nd ed., 2020),
"The SIR epidemic model", https://scipython.com/book2/chapter-8-scipy/additional-examples/the-sir-epidemic-model/
(the equations dS/dt = -beta S I / N, dI/dt = beta S I / N - gamma I, dR/dt = gamma I, with
N = 1000, I0 = 1, beta = 0.2, gamma = 1/10 over 160 days). The book integrates one pair of
rates with ``odeint``; here a classical Runge-Kutta step advances a whole grid of (beta,
gamma) pairs at once.
"""

import sys

import numpy as np

SIZE = 140  # rates per axis: SIZE x SIZE epidemics
TINY = 6


def deriv(y, N, beta, gamma):
    S, I, _R = y
    dSdt = -beta * S * I / N
    dIdt = beta * S * I / N - gamma * I
    dRdt = gamma * I
    return np.stack([dSdt, dIdt, dRdt])


def main(n=SIZE):
    N = 1000.0
    beta, gamma = np.meshgrid(np.linspace(0.1, 0.5, n), np.linspace(1 / 20, 1 / 5, n))
    I0, R0 = 1.0, 0.0
    y = np.stack([np.full(beta.shape, N - I0 - R0), np.full(beta.shape, I0), np.full(beta.shape, R0)])
    days, per_day = 160, 4
    h = 1.0 / per_day
    peak = y[1].copy()
    for _ in range(days * per_day):
        k1 = deriv(y, N, beta, gamma)
        k2 = deriv(y + h / 2 * k1, N, beta, gamma)
        k3 = deriv(y + h / 2 * k2, N, beta, gamma)
        k4 = deriv(y + h * k3, N, beta, gamma)
        y = y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        peak = np.maximum(peak, y[1])
    S, I, R = y
    print(f"sir_model grid={n}x{n} days={days} steps={days * per_day}")
    print(f"population kept {np.abs(S + I + R - N).max() < 1e-6}")
    print(f"mean recovered {R.mean():.10g}")
    print(f"largest peak {peak.max():.10g} at index {int(np.argmax(peak))}")
    print(f"epidemics over 500 infected at peak {int((peak > 500).sum())}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else SIZE)
