"""Low-pass filtering of a batch of signals by FFT convolution, checked against direct
convolution.

Zero-pad to a power of two, ``rfft`` signals and filter, multiply, ``irfft``, keep the centred
("same") part; filter the first channel again with ``convolve`` as an independent check; report
the output power spectrum and how much energy each signal kept.
"""

from __future__ import annotations

from typing import Any

import numpy

from benchmarks.workloads import _check, _ports

NAME = "fft_filter"
SIZES = {
    "small": {"n_signals": 8, "n": 4_096, "taps": 63},
    "medium": {"n_signals": 32, "n": 65_536, "taps": 255},
    "large": {"n_signals": 32, "n": 524_288, "taps": 255},
}


def make_data(size: str, seed: int = 0) -> dict[str, Any]:
    p = SIZES[size]
    rng = numpy.random.default_rng(seed)
    n, m = p["n"], p["taps"]
    t = numpy.arange(n) / n
    freqs = rng.uniform(1, n / 4, size=(p["n_signals"], 4))
    amps = rng.uniform(0.5, 2.0, size=(p["n_signals"], 4))
    signals = (amps[:, :, None] * numpy.sin(2 * numpy.pi * freqs[:, :, None] * t)).sum(axis=1)
    signals += 0.3 * rng.standard_normal(signals.shape)
    # Windowed-sinc low-pass FIR, cutoff at a tenth of the sampling rate.
    k = numpy.arange(m) - (m - 1) / 2
    taps = 0.2 * numpy.sinc(0.2 * k) * numpy.hamming(m)
    return {"signals": signals, "taps": taps / taps.sum()}


def run(xp: Any, signals: Any, taps: Any) -> dict[str, Any]:
    x, h = xp.asarray(signals), xp.asarray(taps)
    n, m = x.shape[-1], h.shape[0]
    nfft = 1 << (n + m - 2).bit_length()  # the next power of two >= n + m - 1
    spectrum = xp.fft.rfft(x, n=nfft, axis=-1) * xp.fft.rfft(h, n=nfft)
    full = xp.fft.irfft(spectrum, n=nfft, axis=-1)
    start = (m - 1) // 2  # "same" mode: centred on the input, as convolve(mode="same")
    filtered = full[:, start : start + n]
    return {
        "filtered": filtered,
        "direct": xp.convolve(x[0], h, mode="same"),
        "power": (xp.abs(spectrum) ** 2).mean(axis=0) / nfft,
        "energy_kept": (filtered**2).sum(axis=1) / (x**2).sum(axis=1),
    }


def run_torch_resident(torch: Any, signals: Any, taps: Any) -> dict[str, Any]:
    x, h = signals, taps
    n, m = x.shape[-1], h.shape[0]
    nfft = 1 << (n + m - 2).bit_length()
    spectrum = torch.fft.rfft(x, n=nfft, dim=-1) * torch.fft.rfft(h, n=nfft)
    full = torch.fft.irfft(spectrum, n=nfft, dim=-1)
    start = (m - 1) // 2
    filtered = full[:, start : start + n]
    # conv1d is a correlation: flip the taps to convolve; odd taps and this padding give "same".
    direct = torch.nn.functional.conv1d(x[:1, None, :], h.flip(0)[None, None, :], padding=start)[0, 0]
    return {
        "filtered": filtered,
        "direct": direct,
        "power": (torch.abs(spectrum) ** 2).mean(dim=0) / nfft,
        "energy_kept": (filtered**2).sum(dim=1) / (x**2).sum(dim=1),
    }


# CuPy mirrors every NumPy call above, so the CuPy port is the program itself.
run_cupy_resident = run
run_torch = _ports.torch_roundtrip(run_torch_resident)
run_cupy = _ports.cupy_roundtrip(run_cupy_resident)


def check(result: dict[str, Any], reference: dict[str, Any]) -> None:
    _check.same_keys(result, reference)
    for key in reference:
        _check.assert_close(key, result[key], reference[key])
    # The program's own claim: FFT convolution equals direct convolution (channel 0).
    _check.assert_close("filtered[0] vs direct", _check.host(result["filtered"])[0], result["direct"])
