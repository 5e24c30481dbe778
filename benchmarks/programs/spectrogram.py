"""Spectrogram of a chirp by the short-time Fourier transform.

Source: Allen B. Downey, "Think DSP" (Green Tea Press, 2016), chapter 3 "Non-periodic
signals", sections 3.1 "Linear chirp" and 3.5 "Spectrogram",
https://greenteapress.com/thinkdsp/html/thinkdsp004.html (a linear chirp, cut into
overlapping segments, each multiplied by a Hamming window and transformed with ``rfft``; the
peak frequency of each segment follows the chirp). The segments are taken by fancy indexing.
"""

import sys

import numpy as np

SIZE = 30  # seconds of signal at 11,025 Hz
TINY = 1


def main(n=SIZE):
    framerate = 11025
    duration = n
    start, end = 220.0, 880.0
    ts = np.arange(int(framerate * duration)) / framerate
    freqs = np.linspace(start, end, len(ts))
    dts = np.diff(ts, prepend=0)
    phases = 2 * np.pi * np.cumsum(freqs * dts)
    rng = np.random.default_rng(9)
    ys = np.cos(phases) + 0.1 * rng.standard_normal(len(ts))

    seg_length, hop = 512, 256
    starts = np.arange(0, len(ys) - seg_length + 1, hop)
    frames = ys[starts[:, None] + np.arange(seg_length)[None, :]]
    window = np.hamming(seg_length)
    spectrum = np.abs(np.fft.rfft(frames * window, axis=1))
    fs = np.fft.rfftfreq(seg_length, 1 / framerate)
    peaks = fs[spectrum.argmax(axis=1)]
    slope = np.polyfit(ts[starts + seg_length // 2], peaks, 1)[0]
    print(f"spectrogram seconds={duration} rate={framerate} segments={len(starts)}")
    print(f"peak frequency first {peaks[0]:.6g} Hz last {peaks[-1]:.6g} Hz")
    print(f"chirp rate from peaks {slope:.6g} Hz/s (true {(end - start) / duration:.6g})")
    print(f"total energy {np.sum(spectrum ** 2):.8g}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else SIZE)
