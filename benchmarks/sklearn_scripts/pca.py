"""Principal components of correlated data: fitted once (the full SVD), then projecting it.

``python pca.py [ROWS] [--accelerate]``: ROWS x 200 features, 16 components kept.
"""

import sys

import numpy as np
from sklearn.decomposition import PCA

ROWS, FEATURES, COMPONENTS = 200_000, 200, 16


def main(rows=ROWS):
    rng = np.random.default_rng(0)
    mixing = rng.standard_normal((FEATURES, FEATURES)) / np.sqrt(FEATURES)
    X = rng.standard_normal((rows, FEATURES)) @ mixing
    model = PCA(n_components=COMPONENTS, svd_solver="full").fit(X)
    projected = model.transform(X)
    print(f"pca rows={rows} features={FEATURES} explained={float(np.sum(model.explained_variance_ratio_)):.4f} "
          f"spread={float(np.std(projected[:, 0])):.4f}")


if __name__ == "__main__":
    if "--accelerate" in sys.argv:
        import dispatch.sklearn

        dispatch.sklearn.accelerate()
    sizes = [a for a in sys.argv[1:] if a != "--accelerate"]
    main(int(sizes[0]) if sizes else ROWS)
