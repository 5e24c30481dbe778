"""A plain scikit-learn pipeline: scale, reduce, classify the bundled handwritten digits.

The input for the migration tools:

    python examples/sklearn_pipeline.py
    python -m dispatch analyze examples/sklearn_pipeline.py
    python -m dispatch migrate examples/sklearn_pipeline.py

Runs on a CPU in a few seconds; the output is the same on every run.
"""

from __future__ import annotations

from sklearn.datasets import load_digits, make_regression
from sklearn.decomposition import PCA
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler


def digits() -> None:
    X, y = load_digits(return_X_y=True)
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.25, random_state=0)
    model = make_pipeline(StandardScaler(), PCA(n_components=30, random_state=0), LogisticRegression(max_iter=500))
    model.fit(X_train, y_train)
    print(f"digits: {X.shape[0]} images, {X.shape[1]} pixels")
    print(f"digits accuracy: {model.score(X_test, y_test):.4f}")


def regression() -> None:
    X, y = make_regression(n_samples=2000, n_features=40, n_informative=10, noise=5.0, random_state=0)
    scaler = StandardScaler()
    X_scaled = scaler.fit_transform(X)
    ridge = Ridge(alpha=1.0)
    ridge.fit(X_scaled, y)
    pca = PCA(n_components=5)
    components = pca.fit_transform(X_scaled)
    print(f"ridge R^2 on the training set: {ridge.score(X_scaled, y):.4f}")
    print(f"variance kept by 5 components: {pca.explained_variance_ratio_.sum():.4f}")
    print(f"first component range: {components[:, 0].min():.3f} .. {components[:, 0].max():.3f}")


if __name__ == "__main__":
    digits()
    regression()
