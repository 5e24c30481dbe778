"""A two-layer perceptron trained by minibatch SGD, forward and backward written by hand.

tanh hidden layer, softmax cross-entropy, gradients by the chain rule (``p - onehot`` through
the usual ``p[rows, y] -= 1``), a fixed pass over the minibatches in order, then accuracy on
the whole set. tanh rather than ReLU: ReLU's kink at zero would let a rounding difference
switch a unit's gradient on or off between backends.
"""

from __future__ import annotations

from typing import Any

import numpy

from benchmarks.workloads import _check, _ports

NAME = "mlp"
SIZES = {
    "small": {"n": 2_048, "d": 32, "hidden": 64, "classes": 4, "batch": 256, "epochs": 1},
    "medium": {"n": 16_384, "d": 64, "hidden": 128, "classes": 10, "batch": 256, "epochs": 1},
    "large": {"n": 65_536, "d": 256, "hidden": 512, "classes": 10, "batch": 512, "epochs": 1},
}
LEARNING_RATE = 0.1

# Over a hundred SGD steps (large) carry rounding differences forward, mildly amplified.
RTOL = 1e-7


def make_data(size: str, seed: int = 0) -> dict[str, Any]:
    p = SIZES[size]
    rng = numpy.random.default_rng(seed)
    n, d, h, c = p["n"], p["d"], p["hidden"], p["classes"]
    X = rng.standard_normal((n, d))
    teacher = rng.standard_normal((d, c))
    y = numpy.argmax(X @ teacher + 0.5 * rng.standard_normal((n, c)), axis=1)
    return {
        "X": X,
        "y": y,
        "W1": rng.normal(scale=1 / numpy.sqrt(d), size=(d, h)),
        "b1": numpy.zeros(h),
        "W2": rng.normal(scale=1 / numpy.sqrt(h), size=(h, c)),
        "b2": numpy.zeros(c),
        "lr": LEARNING_RATE,
        "batch": p["batch"],
        "epochs": p["epochs"],
    }


def run(
    xp: Any, X: Any, y: Any, W1: Any, b1: Any, W2: Any, b2: Any, lr: float, batch: int, epochs: int
) -> dict[str, Any]:
    X, y = xp.asarray(X), xp.asarray(y)
    W1, b1, W2, b2 = xp.asarray(W1), xp.asarray(b1), xp.asarray(W2), xp.asarray(b2)
    rows = xp.arange(batch)
    losses = []
    for _ in range(epochs):
        for start in range(0, X.shape[0] - batch + 1, batch):
            xb, yb = X[start : start + batch], y[start : start + batch]
            hidden = xp.tanh(xb @ W1 + b1)
            logits = hidden @ W2 + b2
            logits = logits - logits.max(axis=1, keepdims=True)
            p = xp.exp(logits)
            p = p / p.sum(axis=1, keepdims=True)
            losses.append(-xp.log(p[rows, yb]).mean())
            p[rows, yb] -= 1.0  # now d(loss)/d(logits) times the batch size
            grad = p / batch
            d_hidden = (grad @ W2.T) * (1.0 - hidden**2)
            # Out-of-place updates: the caller's initial weights stay untouched.
            W2 = W2 - lr * (hidden.T @ grad)
            b2 = b2 - lr * grad.sum(axis=0)
            W1 = W1 - lr * (xb.T @ d_hidden)
            b1 = b1 - lr * d_hidden.sum(axis=0)
    logits = xp.tanh(X @ W1 + b1) @ W2 + b2
    prob = xp.exp(logits - logits.max(axis=1, keepdims=True))
    prob = prob / prob.sum(axis=1, keepdims=True)
    return {
        "W1": W1,
        "b1": b1,
        "W2": W2,
        "b2": b2,
        "losses": xp.stack(losses),
        "probabilities": prob,
        "accuracy": (xp.argmax(prob, axis=1) == y).mean(),
    }


def run_torch_resident(
    torch: Any, X: Any, y: Any, W1: Any, b1: Any, W2: Any, b2: Any, lr: float, batch: int, epochs: int
) -> dict[str, Any]:
    rows = torch.arange(batch, device=X.device)
    losses = []
    for _ in range(epochs):
        for start in range(0, X.shape[0] - batch + 1, batch):
            xb, yb = X[start : start + batch], y[start : start + batch]
            hidden = torch.tanh(xb @ W1 + b1)
            logits = hidden @ W2 + b2
            logits = logits - logits.amax(dim=1, keepdim=True)
            p = torch.exp(logits)
            p = p / p.sum(dim=1, keepdim=True)
            losses.append(-torch.log(p[rows, yb]).mean())
            p[rows, yb] -= 1.0
            grad = p / batch
            d_hidden = (grad @ W2.T) * (1.0 - hidden**2)
            W2 = W2 - lr * (hidden.T @ grad)
            b2 = b2 - lr * grad.sum(dim=0)
            W1 = W1 - lr * (xb.T @ d_hidden)
            b1 = b1 - lr * d_hidden.sum(dim=0)
    logits = torch.tanh(X @ W1 + b1) @ W2 + b2
    prob = torch.exp(logits - logits.amax(dim=1, keepdim=True))
    prob = prob / prob.sum(dim=1, keepdim=True)
    return {
        "W1": W1,
        "b1": b1,
        "W2": W2,
        "b2": b2,
        "losses": torch.stack(losses),
        "probabilities": prob,
        "accuracy": (torch.argmax(prob, dim=1) == y).to(X.dtype).mean(),
    }


# CuPy mirrors every NumPy call above, so the CuPy port is the program itself.
run_cupy_resident = run
run_torch = _ports.torch_roundtrip(run_torch_resident)
run_cupy = _ports.cupy_roundtrip(run_cupy_resident)


def check(result: dict[str, Any], reference: dict[str, Any]) -> None:
    _check.same_keys(result, reference)
    for key in ("W1", "b1", "W2", "b2", "losses", "probabilities"):
        _check.assert_close(key, result[key], reference[key], RTOL)
    # Accuracy may move only through rows whose two best classes are tied within tolerance.
    prob = _check.host(reference["probabilities"])
    top2 = numpy.sort(prob, axis=1)[:, -2:]
    slack = (top2[:, 1] - top2[:, 0] <= 4 * RTOL).sum() / prob.shape[0]
    accuracy, ref_accuracy = _check.host(result["accuracy"]), _check.host(reference["accuracy"])
    _check.same_meta("accuracy", accuracy, ref_accuracy)
    if not abs(float(accuracy) - float(ref_accuracy)) <= slack + 1e-12:
        raise AssertionError(f"accuracy: got {float(accuracy)!r}, expected {float(ref_accuracy)!r}")
