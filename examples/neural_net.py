"""A multi-layer perceptron classifying three Gaussian blobs.

Run:  python3 examples/neural_net.py

The parameters are a list of (weights, biases) tuples, one per layer; the loss
is a log posterior with an L2 prior, normalised with a hand-written logsumexp.
"""
import numpy as np

import _engines


def init_params(scale, layer_sizes, rng):
    """One (W, b) tuple per pair of consecutive layer sizes."""
    return [(scale * rng.normal(size=(m, n)), scale * rng.normal(size=n))
            for m, n in zip(layer_sizes[:-1], layer_sizes[1:])]


def logsumexp(x, axis=None, keepdims=False):
    """log(sum(exp(x))) along ``axis``, shifted by the maximum so exp cannot overflow."""
    top = np.max(x, axis=axis, keepdims=True)
    total = np.log(np.sum(np.exp(x - top), axis=axis, keepdims=True)) + top
    return total if keepdims else np.squeeze(total, axis=axis)


def predict(params, inputs):
    """Log class probabilities: tanh hidden layers, a linear last layer."""
    for W, b in params:
        outputs = np.dot(inputs, W) + b
        inputs = np.tanh(outputs)
    return outputs - logsumexp(outputs, axis=1, keepdims=True)


def l2_norm(params):
    return sum(np.sum(W ** 2) + np.sum(b ** 2) for W, b in params)


def log_posterior(params, inputs, targets, l2_reg):
    log_prior = -l2_reg * l2_norm(params)
    log_likelihood = np.sum(predict(params, inputs) * targets)
    return log_prior + log_likelihood


def objective(params, inputs, targets, l2_reg):
    return -log_posterior(params, inputs, targets, l2_reg) / len(inputs)


def make_data(rng, per_class=30):
    """Three blobs in the plane and their one-hot labels."""
    centres = np.array([[2.0, 0.0], [-1.0, 1.7], [-1.0, -1.7]])
    labels = np.repeat(np.arange(3), per_class)
    points = centres[labels] + 0.8 * rng.normal(size=(labels.size, 2))
    return points, np.eye(3)[labels]


def problem():
    rng = np.random.default_rng(0)
    inputs, targets = make_data(rng)
    return objective, init_params(0.3, [2, 8, 8, 3], rng), (inputs, targets, 0.01)


def check():
    """The compiled gradient equals the eager tape's."""
    _engines.check(problem())


if __name__ == "__main__":
    _engines.train(*problem(), steps=60, learning_rate=0.3, report_every=10)
