"""Logistic regression trained by full-batch gradient descent.

Source: Sebastian Raschka and Vahid Mirjalili, "Python Machine Learning" (3rd ed., Packt,
2019), chapter 3, the ``LogisticRegressionGD`` class,
https://github.com/rasbt/python-machine-learning-book-3rd-edition/blob/master/ch03/ch03.ipynb
(``net_input``, the clipped sigmoid ``activation``, the weight update ``eta * X.T.dot(errors)``
and the logistic cost per epoch). The data are two Gaussian blobs.
"""

import sys

import numpy as np

SIZE = 10000  # samples
TINY = 40


class LogisticRegressionGD:
    def __init__(self, eta=0.05, n_iter=100, random_state=1):
        self.eta = eta
        self.n_iter = n_iter
        self.random_state = random_state

    def fit(self, X, y):
        rgen = np.random.default_rng(self.random_state)
        self.w_ = rgen.normal(loc=0.0, scale=0.01, size=1 + X.shape[1])
        self.cost_ = []
        for _i in range(self.n_iter):
            net_input = self.net_input(X)
            output = self.activation(net_input)
            errors = (y - output)
            self.w_[1:] += self.eta * X.T.dot(errors) / len(y)
            self.w_[0] += self.eta * errors.sum() / len(y)
            cost = (-y.dot(np.log(output)) - ((1 - y).dot(np.log(1 - output)))) / len(y)
            self.cost_.append(cost)
        return self

    def net_input(self, X):
        return np.dot(X, self.w_[1:]) + self.w_[0]

    def activation(self, z):
        return 1. / (1. + np.exp(-np.clip(z, -250, 250)))

    def predict(self, X):
        return np.where(self.net_input(X) >= 0.0, 1, 0)


def main(n=SIZE):
    rng = np.random.default_rng(7)
    d = 10
    X = np.vstack([rng.normal(0.0, 1.0, (n // 2, d)), rng.normal(0.6, 1.0, (n - n // 2, d))])
    y = np.r_[np.zeros(n // 2), np.ones(n - n // 2)]
    lr = LogisticRegressionGD(eta=0.5, n_iter=300).fit(X, y)
    accuracy = (lr.predict(X) == y).mean()
    print(f"logistic_regression_gd samples={n} features={d} epochs={lr.n_iter}")
    print(f"cost first {float(lr.cost_[0]):.10g} last {float(lr.cost_[-1]):.10g}")
    print(f"bias {lr.w_[0]:.8g} mean weight {lr.w_[1:].mean():.8g}")
    print(f"training accuracy {accuracy:.6f}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else SIZE)
