"""Small calls for counting instructions per call with callgrind, where timings are too noisy.

Run one case (or ``all``) N times after 200 warm-up calls; the count with N calls minus the count
with none, divided by N, is the instructions one call costs::

    for n in 0 2000; do
        PYTHONHASHSEED=0 OPENBLAS_NUM_THREADS=1 valgrind --tool=callgrind \\
            python -m benchmarks.overhead_callgrind all $n 2>&1 | grep Collected
    done
"""

import sys

import dispatch as np

a = np.arange(100.0)
b = np.ones(100)
m = np.ones((10, 10))
CASES = {
    "add": lambda: a + b,
    "sum_method": lambda: a.sum(),
    "np_sum": lambda: np.sum(a),
    "index": lambda: a[3],
    "slice": lambda: a[10:20],
    "np_mean": lambda: np.mean(a),
    "np_exp": lambda: np.exp(a),
    "iadd": lambda: a.__iadd__(b),
    "concat": lambda: np.concatenate([a, b]),
    "sum_axis": lambda: np.sum(m, axis=1),
}


def main(argv: list[str]) -> None:
    case, n = argv[0], int(argv[1])
    calls = list(CASES.values()) if case == "all" else [CASES[case]]
    for call in calls:
        for _ in range(200):
            call()
    for call in calls:
        for _ in range(n):
            call()


if __name__ == "__main__":
    main(sys.argv[1:])
