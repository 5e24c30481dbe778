"""Programs nobody tuned on: plain NumPy scripts written from public sources.

Each module here is a script as its source's readers would write it: ``import numpy as np``
at the top, a ``main(n=SIZE)`` that prints a short, deterministic summary of its results
(its first line names the program and the size it ran at), and ``python FILE [N]`` to run it
at size ``N``. Its docstring cites the lecture, tutorial, book or algorithm it follows. Random
numbers come only from ``np.random.default_rng(seed)``. ``SIZE`` takes about 0.05-5 s on NumPy
on one core of a 2-core machine; ``TINY`` is for the tests, a few milliseconds.

They were written for dispatch without looking at its router, and the router is not to be
tuned on them blindly: the table below splits them, once and for all, into a **tuning** half
and a **validation** half, alternating in the alphabetical order of their names (the first,
third, fifth... name tunes; the second, fourth... validates). The split was fixed before
dispatch was run on any of them. Where the router is changed because of what a program shows,
the program must be in the tuning half; the validation half is reported, never tuned on, so its
figures say how the router does on programs it has not seen.

``benchmarks/programs_bench.py`` runs them as users run them (a fresh process per run, and
in one warm process); ``tests/test_programs.py`` checks that each gives NumPy's output under
``import dispatch as np``.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
from types import ModuleType

NAMES = (
    "autocorrelation",
    "binning_grouping",
    "bootstrap",
    "conjugate_gradient",
    "fft_denoise",
    "game_of_life",
    "gaussian_blur",
    "heat_equation",
    "histogram_equalization",
    "ising_model",
    "kernel_density",
    "knn_classifier",
    "linear_regression_gd",
    "logistic_regression_gd",
    "lotka_volterra",
    "mandelbrot",
    "monte_carlo_integration",
    "moving_average",
    "nbody",
    "pagerank_power_iteration",
    "pca_svd",
    "qr_least_squares",
    "random_walk",
    "sir_model",
    "sobel_edges",
    "spectrogram",
)

# Fixed by position in the alphabetical list, before any measurement of dispatch.
TUNING = NAMES[0::2]
VALIDATION = NAMES[1::2]
SPLIT = {**{n: "tuning" for n in TUNING}, **{n: "validation" for n in VALIDATION}}

FOLDER = os.path.dirname(os.path.abspath(__file__))


def path(name: str) -> str:
    """The script file of program ``name``."""
    if name not in SPLIT:
        raise KeyError(f"no program {name!r}; known: {', '.join(NAMES)}")
    return os.path.join(FOLDER, f"{name}.py")


def load(name: str) -> ModuleType:
    """Program ``name`` imported as a module (``np`` is NumPy)."""
    path(name)
    return importlib.import_module(f"benchmarks.programs.{name}")


def load_with(name: str, np: ModuleType) -> ModuleType:
    """A fresh copy of program ``name`` whose ``np`` is ``np`` (NumPy, or ``dispatch``).

    The programs reach NumPy only through the global ``np`` their functions read at call time,
    so binding it after the import is ``import dispatch as np`` at the top of the file.
    """
    spec = importlib.util.spec_from_file_location(f"_program_{name}_{np.__name__}", path(name))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.np = np
    return module
