"""A character-level recurrent neural network, trained to predict the next
character of short strings, through the compiler: ``sd.grad`` turns the loops over
time steps into a forward loop that stacks what the adjoint needs and a reversed loop
that accumulates the gradient (tests/test_examples.py checks it equals the tape's).

Run:  python3 examples/rnn.py

The parameters are a dict; the step functions are nested ``def``s closing over
it; the per-step outputs are collected with ``list.append``; a helper takes its
inputs as ``*args``.  The inputs double as targets: the output before reading
character t predicts character t.
"""
import numpy as np

import _engines
from neural_net import logsumexp

ALPHABET = "abcd "


def sigmoid(x):
    return 0.5 * (np.tanh(0.5 * x) + 1.0)


def concat_and_multiply(weights, *args):
    """[*args, 1] @ weights: the trailing column of ones carries the bias."""
    ones = np.ones((args[0].shape[0], 1))
    return np.dot(np.hstack(args + (ones,)), weights)


def init_rnn_params(input_size, state_size, output_size, scale, rng):
    return {"init hiddens": scale * rng.normal(size=(1, state_size)),
            "change": scale * rng.normal(size=(input_size + state_size + 1, state_size)),
            "predict": scale * rng.normal(size=(state_size + 1, output_size))}


def rnn_predict(params, inputs):
    """Log-probabilities of the next character, one (sequences, alphabet) array
    per time step, before and after each input."""
    def update(x, hiddens):
        return np.tanh(concat_and_multiply(params["change"], x, hiddens))

    def log_probs(hiddens):
        output = concat_and_multiply(params["predict"], hiddens)
        return output - logsumexp(output, axis=1, keepdims=True)

    hiddens = np.repeat(params["init hiddens"], inputs.shape[1], axis=0)
    outputs = [log_probs(hiddens)]
    for x in inputs:  # over time steps
        hiddens = update(x, hiddens)
        outputs.append(log_probs(hiddens))
    return outputs


def log_likelihood(log_probs, targets):
    """Mean log-probability per character of one-hot ``targets`` (time, sequence,
    character) under the predicted ``log_probs`` (a list over time)."""
    steps, sequences, _ = targets.shape
    total = 0.0
    for t in range(steps):
        total += np.sum(log_probs[t] * targets[t])
    return total / (steps * sequences)


def training_loss(params, inputs):
    return -log_likelihood(rnn_predict(params, inputs), inputs)


def one_hot_strings(strings):
    """(length, len(strings), len(ALPHABET)) one-hot codes of equal-length strings."""
    codes = np.array([[ALPHABET.index(c) for c in s] for s in strings]).T
    return np.eye(len(ALPHABET))[codes]


def make_strings(rng, count=6, length=8):
    """Strings repeating 'abcd ' from random starting points."""
    pattern = ALPHABET * (length // len(ALPHABET) + 2)
    return [pattern[k:k + length] for k in rng.integers(0, len(ALPHABET), count)]


def string_problem(loss, init_params):
    """``loss`` on a few strings, at parameters ``init_params`` draws for 6 states."""
    rng = np.random.default_rng(0)
    inputs = one_hot_strings(make_strings(rng))
    size = len(ALPHABET)
    return loss, init_params(size, 6, size, 0.3, rng), (inputs,)


def problem():
    return string_problem(training_loss, init_rnn_params)


def check():
    """The compiled gradient equals the eager tape's."""
    _engines.check(problem())


if __name__ == "__main__":
    _engines.train(*problem(), steps=40, learning_rate=1.0, report_every=10)
