"""Linear regression by batch gradient descent, checked against the normal equation.

Source: Aurelien Geron, "Hands-On Machine Learning with Scikit-Learn, Keras and TensorFlow"
(2nd ed., O'Reilly, 2019), chapter 4, "The Normal Equation" and "Batch Gradient Descent",
https://github.com/ageron/handson-ml2/blob/master/04_training_linear_models.ipynb
(``X_b = np.c_[np.ones((m, 1)), X]``, ``theta_best = np.linalg.inv(X_b.T.dot(X_b)).dot(X_b.T).dot(y)``,
``gradients = 2/m * X_b.T.dot(X_b.dot(theta) - y)``). Here with several features, standardised.
"""

import sys

import numpy as np

SIZE = 20000  # samples
TINY = 40


def main(n=SIZE):
    rng = np.random.default_rng(42)
    m, k = n, 20
    X = rng.random((m, k)) * 2
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    true_theta = np.arange(1, k + 2, dtype=float).reshape(-1, 1) / 4
    X_b = np.c_[np.ones((m, 1)), X]
    y = X_b.dot(true_theta) + rng.standard_normal((m, 1))
    theta_best = np.linalg.inv(X_b.T.dot(X_b)).dot(X_b.T).dot(y)

    eta = 0.1
    n_iterations = 500
    theta = np.zeros((k + 1, 1))
    for _iteration in range(n_iterations):
        gradients = 2 / m * X_b.T.dot(X_b.dot(theta) - y)
        theta = theta - eta * gradients
    mse = np.mean((X_b.dot(theta) - y) ** 2)
    print(f"linear_regression_gd samples={m} features={k} iterations={n_iterations}")
    print(f"normal equation theta[0:3] {np.round(theta_best[:3, 0], 6).tolist()}")
    print(f"gradient descent theta[0:3] {np.round(theta[:3, 0], 6).tolist()}")
    print(f"largest gap below 1e-9: {bool(np.abs(theta - theta_best).max() < 1e-9)}")
    print(f"mse {mse:.10g}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else SIZE)
