"""1-D random walks: mean squared distance grows like time.

Source: Scientific Python Lectures, "NumPy: creating and manipulating numerical data",
worked example "Diffusion using a random walk algorithm",
https://lectures.scientific-python.org/intro/numpy/operations.html (``n_stories`` walkers of
``t_max`` steps of +-1, ``cumsum`` along time, the mean of the squared distance, compared with
sqrt(t)). A straight-line fit of the mean squared distance replaces the lecture's plot.
"""

import sys

import numpy as np

SIZE = 4000  # walkers (n_stories)
TINY = 50


def main(n=SIZE):
    n_stories, t_max = n, 1000
    rng = np.random.default_rng(1)
    t = np.arange(t_max)
    steps = 2 * rng.integers(0, 1 + 1, (n_stories, t_max)) - 1
    print(f"random_walk walkers={n_stories} steps={t_max}")
    print(f"unique steps {np.unique(steps).tolist()}")
    positions = np.cumsum(steps, axis=1)
    sq_distance = positions**2
    mean_sq_distance = np.mean(sq_distance, axis=0)
    slope, intercept = np.polyfit(t, mean_sq_distance, 1)
    print(f"mean squared distance at end {mean_sq_distance[-1]:.10g}")
    print(f"fit slope {slope:.8g} intercept {intercept:.6g}")
    rms = np.sqrt(mean_sq_distance)
    print(f"rms/sqrt(t) at end {rms[-1] / np.sqrt(t[-1]):.8g}")
    print(f"furthest walker {int(np.abs(positions).max())}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else SIZE)
