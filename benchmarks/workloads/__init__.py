"""The workload suite: realistic NumPy programs, each at three sizes, with their own checks.

Every program is written once against a NumPy-like namespace ``xp``, so the same code runs
under plain NumPy (the reference), under ``dispatch`` (``run(dispatch, ...)``) and under any
other mode a harness sets up. Run them from the command line with
``python -m benchmarks.workloads [--size small] [--only kmeans]``.

The interface of a workload module
----------------------------------
``NAME``
    Short id, e.g. ``"kmeans"``.
``SIZES``
    ``{"small": {...}, "medium": {...}, "large": {...}}``: the parameters of each size. On one
    NumPy core, small takes about a millisecond, medium tens of milliseconds, large 0.3-3 s;
    large inputs stay well under 2 GB on the host.
``make_data(size, seed=0) -> dict``
    The inputs, built on the host with ``numpy.random.default_rng(seed)``: NumPy arrays plus
    the size's Python scalars (iteration counts, k, a learning rate). Not timed.
``run(xp, **data) -> dict``
    The program, through ``xp`` only: no other array library, no ``.get()``, no device
    calls. It starts by ``xp.asarray`` on its array inputs (so it also accepts host arrays
    under a GPU namespace) and returns arrays or scalars of ``xp``, left where they were
    computed. It never mutates its inputs: one data dict serves every repeat and every mode.
``check(result, reference) -> None``
    Raises ``AssertionError`` naming the result and the difference when ``result`` differs
    from the NumPy reference ``run(numpy, **data)`` beyond a tolerance by dtype (see
    ``_check.RTOL``); it accepts anything ``numpy.asarray`` converts. It forgives exactly the
    ambiguities of the mathematics: signs of singular vectors, order among tied neighbours,
    tied top customers.

Hand ports (optional, every workload here has both)
    ``run_torch_resident(torch, **device_data)`` and ``run_cupy_resident(cp, **device_data)``
    compute on data already on the device and return device arrays without synchronising;
    ``run_torch(torch, device, **data)`` and ``run_cupy(cp, **data)`` are the round trips:
    host NumPy arrays in, host NumPy arrays out, transfers included. ``_ports.Port`` times
    either form the same way for every engine (``to_device``, ``run_resident``,
    ``synchronize``, ``to_host``). CuPy mirrors the NumPy calls these programs make, so each
    CuPy port is the program itself (``run_cupy_resident = run``); the torch ports are written
    in torch's own idiom (``topk``, ``clamp``, ``dim=``) and parallel to ``run`` line by line.

Random numbers: programs that need them (Monte Carlo) take their draws from ``make_data``, so
every mode computes on identical numbers; see ``monte_carlo``'s docstring.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from types import ModuleType

from benchmarks.workloads import (
    cosine_topk,
    dataprep,
    fft_filter,
    heat,
    kmeans,
    least_squares,
    mlp,
    monte_carlo,
    pairwise,
    pca,
)

__all__ = ["SIZE_NAMES", "WORKLOADS", "get", "iter_cases"]

WORKLOADS: tuple[ModuleType, ...] = (
    kmeans,
    pca,
    least_squares,
    pairwise,
    monte_carlo,
    fft_filter,
    mlp,
    dataprep,
    heat,
    cosine_topk,
)
SIZE_NAMES = ("small", "medium", "large")


def get(name: str) -> ModuleType:
    """The workload module called ``name``."""
    for workload in WORKLOADS:
        if workload.NAME == name:
            return workload
    raise KeyError(f"no workload {name!r}; known: {', '.join(w.NAME for w in WORKLOADS)}")


def iter_cases(
    sizes: Iterable[str] = SIZE_NAMES, only: Iterable[str] | None = None
) -> Iterator[tuple[ModuleType, str]]:
    """``(workload, size_name)`` for every workload (or those named in ``only``) and size."""
    chosen = WORKLOADS if only is None else tuple(get(name) for name in only)
    sizes = tuple(sizes)
    for workload in chosen:
        for size in sizes:
            if size not in workload.SIZES:
                raise KeyError(f"{workload.NAME} has no size {size!r}")
            yield workload, size
