"""Denoising periodic signals by cutting their high frequencies in Fourier space.

Source: Scientific Python Lectures, "Fast Fourier transforms: scipy.fft", example "Plotting
and manipulating FFTs for filtering",
https://lectures.scientific-python.org/intro/scipy/auto_examples/plot_fftpack.html (a sine
of period 5 sampled every 0.02 with Gaussian noise, the power spectrum, the peak frequency, the
frequencies above the peak set to zero, the inverse transform). Here with ``np.fft`` on a batch
of signals with different periods.
"""

import sys

import numpy as np

SIZE = 800  # signals
TINY = 8


def main(n=SIZE):
    rng = np.random.default_rng(1234)
    time_step = 0.02
    time_vec = np.arange(0, 40.96, time_step)
    periods = rng.uniform(2.0, 8.0, n)
    clean = np.sin(2 * np.pi / periods[:, None] * time_vec)
    sig = clean + 0.5 * rng.standard_normal((n, time_vec.size))

    sig_fft = np.fft.fft(sig, axis=1)
    power = np.abs(sig_fft)
    sample_freq = np.fft.fftfreq(time_vec.size, d=time_step)
    pos_mask = sample_freq > 0
    freqs = sample_freq[pos_mask]
    peak_freq = freqs[power[:, pos_mask].argmax(axis=1)]

    high_freq_fft = sig_fft.copy()
    high_freq_fft[np.abs(sample_freq)[None, :] > peak_freq[:, None]] = 0
    filtered_sig = np.real(np.fft.ifft(high_freq_fft, axis=1))

    err_before = np.sqrt(np.mean((sig - clean) ** 2))
    err_after = np.sqrt(np.mean((filtered_sig - clean) ** 2))
    print(f"fft_denoise signals={n} samples={time_vec.size}")
    print(f"mean peak frequency {peak_freq.mean():.10g} (true {np.mean(1 / periods):.10g})")
    print(f"rms error before {err_before:.8g} after {err_after:.8g}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else SIZE)
