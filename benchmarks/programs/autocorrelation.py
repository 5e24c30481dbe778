"""Integrated autocorrelation time of Markov chains, by FFT autocorrelation.

Source: Daniel Foreman-Mackey, "Autocorrelation analysis & convergence", emcee documentation,
https://emcee.readthedocs.io/en/stable/tutorials/autocorr/ (``next_pow_two``,
``autocorr_func_1d`` by the FFT, ``auto_window`` with c = 5, and the estimator that averages
the chains' autocorrelation functions first, ``autocorr_new``). The chains are AR(1)
processes with a known autocorrelation time, (1 + phi) / (1 - phi).
"""

import sys

import numpy as np

SIZE = 20000  # steps per chain
TINY = 200


def next_pow_two(n):
    i = 1
    while i < n:
        i = i << 1
    return i


def autocorr_func_1d(x, norm=True):
    x = np.atleast_1d(x)
    if len(x.shape) != 1:
        raise ValueError("invalid dimensions for 1D autocorrelation function")
    n = next_pow_two(len(x))
    # Compute the FFT and then (from that) the auto-correlation function
    f = np.fft.fft(x - np.mean(x), n=2 * n)
    acf = np.fft.ifft(f * np.conjugate(f))[: len(x)].real
    acf /= 4 * n
    # Optionally normalize
    if norm:
        acf /= acf[0]
    return acf


def auto_window(taus, c):
    m = np.arange(len(taus)) < c * taus
    if np.any(m):
        return np.argmin(m)
    return len(taus) - 1


def autocorr_new(y, c=5.0):
    f = np.zeros(y.shape[1])
    for yy in y:
        f += autocorr_func_1d(yy)
    f /= len(y)
    taus = 2.0 * np.cumsum(f) - 1.0
    window = auto_window(taus, c)
    return taus[window]


def main(n=SIZE):
    rng = np.random.default_rng(21)
    n_chains, phi = 32, 0.9
    noise = rng.standard_normal((n, n_chains))
    y = np.empty((n, n_chains))
    y[0] = noise[0]
    for t in range(1, n):
        y[t] = phi * y[t - 1] + np.sqrt(1 - phi ** 2) * noise[t]
    tau = autocorr_new(y.T)
    print(f"autocorrelation chains={n_chains} steps={n}")
    print(f"integrated autocorrelation time {tau:.8g} (true {(1 + phi) / (1 - phi):.8g})")
    print(f"lag-1 autocorrelation of chain 0 {autocorr_func_1d(y[:, 0])[1]:.8g}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else SIZE)
