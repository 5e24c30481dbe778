"""A longer plain NumPy program: a small city's weather stations, from raw readings to a forecast.

Ordinary NumPy from the first line to the last: seeded random data (the legacy global
generator, ``RandomState`` and ``default_rng``), broadcasting, fancy and boolean indexing and
assignment, reductions, integer arithmetic, sorting and searching, linear algebra, FFTs, and
arrays printed as they are. Change ``import numpy as np`` to ``import dispatch as np`` and it
prints exactly the same::

    python examples/numpy_program.py

Runs on a CPU in about a second; the output is the same on every run.
"""

from __future__ import annotations

import numpy as np

N_STATIONS, N_DAYS, N_HOURS = 12, 60, 24


def section(title: str) -> None:
    print()
    print(f"== {title} ==")


# ---- data ------------------------------------------------------------------------------------


def make_stations(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Station coordinates (km) on a grid with jitter, and their altitudes (m)."""
    grid = np.stack(np.meshgrid(np.arange(4), np.arange(3)), axis=-1).reshape(-1, 2) * 10.0
    coords = grid + rng.uniform(-2.0, 2.0, size=grid.shape)
    altitude = rng.integers(50, 900, size=N_STATIONS).astype(np.float64)
    return coords, altitude


def make_temperatures(rng: np.random.Generator, altitude: np.ndarray) -> np.ndarray:
    """Hourly temperatures, stations x days x hours: a seasonal trend, a daily cycle, the lapse
    rate with altitude, noise, and a few faulty readings (NaN and absurd spikes)."""
    days = np.arange(N_DAYS)[:, None]
    hours = np.arange(N_HOURS)[None, :]
    seasonal = 8.0 + 6.0 * np.sin(2 * np.pi * days / 365.0)  # days x 1
    daily = 5.0 * np.sin(2 * np.pi * (hours - 9) / 24.0)  # 1 x hours
    lapse = -0.0065 * altitude[:, None, None]  # stations x 1 x 1
    temps = seasonal[None] + daily[None] + lapse + rng.normal(0.0, 1.2, (N_STATIONS, N_DAYS, N_HOURS))
    flat = temps.reshape(-1)  # a view: writes reach temps
    faulty = rng.choice(flat.size, size=40, replace=False)
    flat[faulty[:25]] = np.nan
    flat[faulty[25:]] = 99.0
    return temps


# ---- cleaning: boolean masks and fancy indexing ----------------------------------------------


def clean(temps: np.ndarray) -> np.ndarray:
    section("cleaning")
    spikes = temps > 60.0
    print("spikes:", int(spikes.sum()), "missing:", int(np.isnan(temps).sum()))
    temps = np.where(spikes, np.nan, temps)
    station_mean = np.nanmean(temps, axis=(1, 2))
    s, d, h = np.nonzero(np.isnan(temps))
    print("first missing (station, day, hour):", list(zip(s[:3].tolist(), d[:3].tolist(), h[:3].tolist(), strict=True)))
    filled = temps.copy()
    filled[s, d, h] = station_mean[s]
    per_station = np.bincount(s, minlength=N_STATIONS)
    print("filled per station:", per_station)
    print("station means:", np.round(station_mean, 2))
    return filled


# ---- summaries: reductions along axes -------------------------------------------------------


def summarise(temps: np.ndarray, altitude: np.ndarray) -> None:
    section("summaries")
    daily_mean = temps.mean(axis=2)  # stations x days
    daily_range = temps.max(axis=2) - temps.min(axis=2)
    print(f"overall mean {temps.mean():.4f}, std {temps.std():.4f}")
    print("warmest hour of day (mean over all):", int(temps.mean(axis=(0, 1)).argmax()))
    coldest = daily_mean.mean(axis=1).argmin()
    print("coldest station:", int(coldest), "at", altitude[coldest], "m")
    print("median daily range per station:", np.round(np.median(daily_range, axis=1), 3))
    print("variance by station:", np.round(temps.var(axis=(1, 2)), 3))
    q = np.percentile(temps, [5, 50, 95])
    print("5/50/95 percentiles:", np.round(q, 3))
    hot = (temps > q[2]).sum(axis=(1, 2))
    print("hours above the 95th percentile:", hot, "total", hot.sum())
    anomalies = daily_mean - daily_mean.mean(axis=1, keepdims=True)
    print("largest anomaly:", np.unravel_index(np.abs(anomalies).argmax(), anomalies.shape))
    run = np.cumsum(anomalies[0])
    print("cumulative anomaly, station 0, every 10th day:", np.round(run[[9, 19, 29, 39, 49]], 3))
    print("any day below zero:", bool((temps < 0).any()), "all stations above -20:", bool((temps > -20).all()))
    counts, edges = np.histogram(temps, bins=8)
    print("histogram:", counts)
    print("edges:", np.round(edges, 2))


# ---- space: broadcasting over station pairs ------------------------------------------------


def neighbours(coords: np.ndarray, temps: np.ndarray) -> None:
    section("neighbours")
    diff = coords[:, None, :] - coords[None, :, :]  # stations x stations x 2
    dist = np.sqrt((diff ** 2).sum(axis=-1))
    np.fill_diagonal(dist, np.inf)
    nearest = dist.argmin(axis=1)
    print("nearest station:", nearest)
    print("distance to it (km):", np.round(dist[np.arange(N_STATIONS), nearest], 2))
    weights = 1.0 / dist ** 2
    weights /= weights.sum(axis=1, keepdims=True)
    station_mean = temps.mean(axis=(1, 2))
    interpolated = weights @ station_mean
    print("interpolated minus measured:", np.round(interpolated - station_mean, 3))
    order = np.lexsort((coords[:, 1], coords[:, 0]))
    print("west to east:", order)
    pairs = np.argwhere(dist < 12.0)
    pairs = pairs[pairs[:, 0] < pairs[:, 1]]
    print("pairs closer than 12 km:", len(pairs), "first:", pairs[:3].tolist())
    rows, cols = np.ix_([0, 5, 11], [1, 0])
    print("corner block of coordinates:")
    print(np.round(coords[rows, cols], 2))


# ---- integers: calendars, counters and bit flags ----------------------------------------------


def integer_work(rng: np.random.RandomState) -> None:
    section("integers")
    day_of_year = np.arange(N_DAYS, dtype=np.int64) + 300
    week, weekday = np.divmod(day_of_year, 7)
    print("weeks:", np.unique(week))
    print("weekday counts:", np.bincount(weekday))
    offsets = np.array([-7, -3, 0, 4, 9])
    print("floor div / mod by 4:", offsets // 4, offsets % 4)
    print("remainder, fmod:", np.remainder(offsets, -3), np.fmod(offsets, -3))
    flags = rng.randint(0, 16, size=10).astype(np.uint8)
    print("flags:", flags, "bit 2 set:", np.nonzero(flags & 4)[0])
    print("inverted:", ~flags, "shifted:", flags << 3)
    small = np.array([120, 125, 127], dtype=np.int8)
    print("int8 wrap:", small + np.int8(5))
    print("promotion:", (small + 1).dtype, (small + 1.0).dtype, (flags * 2).dtype, (flags + np.int16(1)).dtype)
    codes = np.ravel_multi_index(([1, 2, 0], [3, 0, 2]), (3, 4))
    print("ravelled:", codes, "back:", np.unravel_index(codes, (3, 4)))
    counter = np.zeros(6, dtype=np.int64)
    np.add.at(counter, [0, 1, 1, 3, 3, 3, 5], 1)
    print("add.at:", counter, "cumprod:", np.cumprod(counter + 1))
    print("gcd, lcm:", np.gcd(np.array([12, 18, 27]), 6), np.lcm(np.array([4, 6, 10]), 3))


# ---- sorting and searching --------------------------------------------------------------------


def ranking(temps: np.ndarray) -> None:
    section("ranking")
    peak = temps.max(axis=(1, 2))
    order = np.argsort(peak, kind="stable")[::-1]
    print("stations by peak:", order)
    print("peaks, sorted:", np.round(np.sort(peak)[::-1], 3))
    thresholds = np.array([10.0, 15.0, 20.0])
    print("where thresholds fall:", np.searchsorted(np.sort(peak), thresholds))
    top3 = np.partition(peak, -3)[-3:]
    print("three highest:", np.round(np.sort(top3), 3))
    ties = np.array([3, 1, 2, 3, 1, 3])
    print("stable argsort of ties:", np.argsort(ties, kind="stable"))
    values, first, counts = np.unique(ties, return_index=True, return_counts=True)
    print("unique:", values, first, counts)
    rounded = np.round(temps[0, 0], 0)
    print("rounded hours, day 0:", rounded.astype(int))
    print("clipped:", np.clip(rounded, 0, 10).astype(int))


# ---- linear algebra ---------------------------------------------------------------------------


def trends(temps: np.ndarray) -> None:
    section("linear algebra")
    y = temps.mean(axis=2)  # stations x days
    t = np.arange(N_DAYS, dtype=np.float64)
    design = np.column_stack([np.ones(N_DAYS), t, t ** 2])
    coef, residuals, rank, _ = np.linalg.lstsq(design, y.T, rcond=None)
    print("rank", rank, "trend per day, first 4 stations:", np.round(coef[1, :4], 5))
    print("residuals, first 4:", np.round(residuals[:4], 3))
    gram = design.T @ design
    print(f"gram determinant (log10): {np.log10(np.linalg.det(gram)):.4f}")
    sign, logdet = np.linalg.slogdet(gram)
    print("slogdet:", sign, round(float(logdet), 4))
    normal = np.linalg.solve(gram, design.T @ y.T)
    print("normal equations agree:", bool(np.allclose(normal, coef)))
    chol = np.linalg.cholesky(gram / N_DAYS)
    print("cholesky diagonal:", np.round(np.diag(chol), 4))
    q, r = np.linalg.qr(design)
    print("qr: |diag r|", np.round(np.abs(np.diag(r)), 3), "q orthonormal:", bool(np.allclose(q.T @ q, np.eye(3))))
    cov = np.cov(y)
    evals, evecs = np.linalg.eigh(cov)
    lead = evecs[:, -1] * np.sign(evecs[:, -1].sum())
    print("top eigenvalues:", np.round(evals[::-1][:3], 4))
    print("leading pattern:", np.round(lead, 3))
    s = np.linalg.svd(y - y.mean(axis=1, keepdims=True), compute_uv=False)
    print(f"explained by first component: {s[0] ** 2 / (s ** 2).sum():.4f}")
    inv = np.linalg.inv(cov + np.eye(N_STATIONS))
    print(f"inverse trace {np.trace(inv):.5f}, norm {np.linalg.norm(inv):.5f}")
    print("matrix rank of cov:", np.linalg.matrix_rank(cov), f"cond {np.linalg.cond(cov + np.eye(N_STATIONS)):.2f}")
    print(f"matrix power trace: {np.trace(np.linalg.matrix_power(inv, 3)):.3f}")
    pinv = np.linalg.pinv(design)
    print("pinv @ design is identity:", bool(np.allclose(pinv @ design, np.eye(3))))
    print("einsum station-day energy:", np.round(np.einsum("sd,sd->s", y, y)[:4], 2))


# ---- frequencies ------------------------------------------------------------------------------


def spectrum(temps: np.ndarray) -> None:
    section("spectrum")
    series = temps[:, :, :].reshape(N_STATIONS, -1)  # hourly series per station
    series = series - series.mean(axis=1, keepdims=True)
    power = np.abs(np.fft.rfft(series, axis=1)) ** 2
    freqs = np.fft.rfftfreq(series.shape[1], d=1.0)  # cycles per hour
    peak = freqs[np.argmax(power[:, 1:], axis=1) + 1]
    print("dominant period (hours):", np.round(1.0 / peak, 2))
    full = np.fft.fft(series[0])
    print("round trip error below 1e-9:", bool(np.abs(np.fft.ifft(full).real - series[0]).max() < 1e-9))
    back = np.fft.irfft(np.fft.rfft(series[1]), n=series.shape[1])
    print("irfft recovers:", bool(np.allclose(back, series[1])))
    kernel = np.ones(5) / 5.0
    direct = np.convolve(series[0], kernel, mode="same")
    n = series.shape[1] + kernel.size - 1
    via_fft = np.fft.irfft(np.fft.rfft(series[0], n) * np.fft.rfft(kernel, n), n)[2:2 + series.shape[1]]
    print("fft convolution matches:", bool(np.allclose(direct, via_fft)))
    grid = temps[0, :16, :16]
    spec2 = np.fft.fftshift(np.abs(np.fft.fft2(grid - grid.mean())))
    print("2-d spectrum peak at:", np.unravel_index(spec2.argmax(), spec2.shape))
    print("fftfreq(8):", np.fft.fftfreq(8))


# ---- random: the three generators --------------------------------------------------------------


def sampling() -> None:
    section("sampling")
    np.random.seed(7)
    print("legacy rand:", np.round(np.random.rand(4), 6))
    print("legacy randint:", np.random.randint(0, 100, size=6))
    print(f"legacy normal mean {np.random.normal(5.0, 2.0, size=1000).mean():.6f}")
    perm = np.random.permutation(10)
    print("permutation:", perm)
    state = np.random.RandomState(3)
    print("RandomState choice:", state.choice(["north", "south", "east", "west"], size=5))
    print("RandomState poisson:", state.poisson(4.0, size=8))
    rng = np.random.default_rng(2024)
    print("Generator integers:", rng.integers(0, 10, size=8))
    print("Generator exponential:", np.round(rng.exponential(2.0, size=4), 6))
    deck = np.arange(12)
    rng.shuffle(deck)
    print("shuffled:", deck)
    boot = rng.choice(50, size=(3, 5), replace=True)
    print("bootstrap indices:")
    print(boot)
    child_a, child_b = np.random.default_rng(1).spawn(2)
    print("spawned streams:", round(child_a.random(), 6), round(child_b.random(), 6))


# ---- a small simulation: heat on a plate -------------------------------------------------------


def heat(steps: int = 200) -> None:
    section("heat")
    plate = np.zeros((20, 30))
    plate[8:12, 12:18] = 100.0
    edge = np.zeros_like(plate, dtype=bool)
    edge[[0, -1], :] = True
    edge[:, [0, -1]] = True
    for _ in range(steps):
        lap = (np.roll(plate, 1, 0) + np.roll(plate, -1, 0) + np.roll(plate, 1, 1) + np.roll(plate, -1, 1)
               - 4 * plate)
        plate = plate + 0.2 * lap
        plate[edge] = 0.0
    hottest = np.unravel_index(plate.argmax(), plate.shape)
    print(f"total heat {plate.sum():.4f}, max {plate.max():.4f} at {hottest}")
    profile = plate[10, ::3]
    print("profile across row 10:", np.round(profile, 3))
    print("cells above 1 degree:", int(np.count_nonzero(plate > 1.0)))
    print("gradient at the centre:", [round(float(g[10, 15]), 4) for g in np.gradient(plate)])


# ---- arrays printed as they are ----------------------------------------------------------------


def printed() -> None:
    section("printed as is")
    x = np.linspace(-1.0, 1.0, 7)
    print(x)
    print(repr(x.reshape(1, 7)))
    print(np.arange(12).reshape(3, 4).T)
    print(np.array([0.1, np.nan, -np.inf, -0.0]))
    print(np.eye(3, dtype=np.float32) * 2.5)
    print(np.array([1 + 2j, -3.5j]))
    print(np.array([True, False]) & np.array([True, True]))
    print(repr(np.arange(5, dtype=np.uint16)))
    print(np.tile(np.array([1, 2]), (2, 3)))
    print(np.pad(np.ones((2, 2), dtype=int), 1))
    print(np.concatenate([np.zeros(2), np.full(3, 7.25)]), np.split(np.arange(6), 3))
    print(np.diff(np.array([1, 4, 9, 16, 25])), np.repeat(np.array([1, 2]), 3))
    print(np.arange(2000.0))
    print(np.float64(2.5) * 2, np.int32(7) // 2, np.mean(np.arange(4)), np.sum(np.arange(4)))
    with np.printoptions(precision=3, suppress=True):
        print(np.array([1e-5, 1.23456789, 1234.5678]))
    with np.errstate(divide="ignore", invalid="ignore"):
        print(np.array([1.0, 0.0, -1.0]) / 0.0)


def main() -> None:
    rng = np.random.default_rng(0)
    coords, altitude = make_stations(rng)
    temps = clean(make_temperatures(rng, altitude))
    print("temperatures:", temps.shape, temps.dtype)
    summarise(temps, altitude)
    neighbours(coords, temps)
    integer_work(np.random.RandomState(11))
    ranking(temps)
    trends(temps)
    spectrum(temps)
    sampling()
    heat()
    printed()


if __name__ == "__main__":
    main()
