"""k-nearest-neighbour classification by broadcasting and ``argpartition``.

Source: Jake VanderPlas, "Python Data Science Handbook" (O'Reilly, 2016), chapter 2,
"Sorting Arrays", "Example: k-Nearest Neighbors",
https://jakevdp.github.io/PythonDataScienceHandbook/02.08-sorting.html (the squared distances
``np.sum((X[:, np.newaxis, :] - X[np.newaxis, :, :]) ** 2, axis=-1)`` and
``np.argpartition(dist_sq, K + 1, axis=1)``), with a majority vote among the neighbours
(leave-one-out) on three seeded Gaussian classes.
"""

import sys

import numpy as np

SIZE = 1500  # points
TINY = 30


def main(n=SIZE):
    rng = np.random.default_rng(12)
    centers = np.array([[0.0, 0.0], [2.0, 1.0], [0.5, 2.5]])
    labels = rng.integers(0, 3, n)
    X = centers[labels] + rng.standard_normal((n, 2))
    K = 5
    dist_sq = np.sum((X[:, np.newaxis, :] - X[np.newaxis, :, :]) ** 2, axis=-1)
    nearest_partition = np.argpartition(dist_sq, K + 1, axis=1)
    neighbours = nearest_partition[:, :K + 1]
    # drop each point itself (distance 0) from its own neighbours
    own = neighbours == np.arange(n)[:, None]
    votes = np.zeros((n, 3), dtype=int)
    for j in range(K + 1):
        np.add.at(votes, (np.arange(n), labels[neighbours[:, j]]), ~own[:, j])
    predicted = votes.argmax(axis=1)
    accuracy = np.mean(predicted == labels)
    confusion = np.zeros((3, 3), dtype=int)
    np.add.at(confusion, (labels, predicted), 1)
    print(f"knn_classifier points={n} k={K}")
    print(f"leave-one-out accuracy {accuracy:.6f}")
    print(f"confusion {confusion.tolist()}")
    print(f"mean nearest-neighbour distance {np.sqrt(np.sort(dist_sq, axis=1)[:, 1]).mean():.10g}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else SIZE)
