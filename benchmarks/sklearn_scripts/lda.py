"""Linear discriminant analysis on Gaussian classes: fitted once, then predicting the data.

The shape of the issue's example: ROWS x 150 features, 8 classes (scikit-learn's default SVD
solver). ``python lda.py [ROWS] [--accelerate]``.
"""

import sys

import numpy as np
from sklearn.discriminant_analysis import LinearDiscriminantAnalysis

ROWS, FEATURES, CLASSES = 200_000, 150, 8


def main(rows=ROWS):
    rng = np.random.default_rng(0)
    centers = rng.standard_normal((CLASSES, FEATURES))
    y = rng.integers(0, CLASSES, rows)
    X = centers[y] + 4.0 * rng.standard_normal((rows, FEATURES))
    model = LinearDiscriminantAnalysis().fit(X, y)
    accuracy = float(np.mean(model.predict(X) == y))
    print(f"lda rows={rows} features={FEATURES} classes={CLASSES} accuracy={accuracy:.3f}")


if __name__ == "__main__":
    if "--accelerate" in sys.argv:
        import dispatch.sklearn

        dispatch.sklearn.accelerate()
    sizes = [a for a in sys.argv[1:] if a != "--accelerate"]
    main(int(sizes[0]) if sizes else ROWS)
