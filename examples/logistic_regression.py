"""Logistic regression by gradient descent on the negative log-likelihood.

Run:  python3 examples/logistic_regression.py

The weights are one vector; the data are module globals the loss reads.
"""
import numpy as np

import _engines

rng = np.random.default_rng(0)
inputs = rng.normal(size=(40, 3))
true_weights = np.array([1.5, -2.0, 0.5])
targets = (inputs @ true_weights + 0.5 * rng.normal(size=40)) > 0


def sigmoid(z):
    return 0.5 * (np.tanh(0.5 * z) + 1.0)


def predict(weights, x):
    """The probability that each row of ``x`` has a true label."""
    return sigmoid(np.dot(x, weights))


def training_loss(weights):
    p = predict(weights, inputs)
    likelihood = p * targets + (1 - p) * (1 - targets)
    return -np.sum(np.log(likelihood))


def problem():
    return training_loss, np.zeros(3), ()


def check():
    """The compiled gradient equals the eager tape's."""
    _engines.check(problem())


if __name__ == "__main__":
    check()
    print("compiled gradient == tape gradient")
    _engines.train(*problem(), steps=100, learning_rate=0.02, report_every=20)
