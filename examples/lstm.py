"""A character-level long short-term memory network, on the strings and the
loss of rnn.py.

Run:  python3 examples/lstm.py

Its step function returns a tuple (hiddens, cells) the loop unpacks.
"""
import numpy as np

import _engines
from neural_net import logsumexp
from rnn import concat_and_multiply, log_likelihood, sigmoid, string_problem

GATES = ("change", "forget", "ingate", "outgate")


def init_lstm_params(input_size, state_size, output_size, scale, rng):
    def draw(*shape):
        return scale * rng.normal(size=shape)

    params = {gate: draw(input_size + state_size + 1, state_size) for gate in GATES}
    params.update({"init cells": draw(1, state_size), "init hiddens": draw(1, state_size),
                   "predict": draw(state_size + 1, output_size)})
    return params


def lstm_predict(params, inputs):
    """Log-probabilities of the next character before and after each input."""
    def update(x, hiddens, cells):
        change = np.tanh(concat_and_multiply(params["change"], x, hiddens))
        forget = sigmoid(concat_and_multiply(params["forget"], x, hiddens))
        ingate = sigmoid(concat_and_multiply(params["ingate"], x, hiddens))
        outgate = sigmoid(concat_and_multiply(params["outgate"], x, hiddens))
        cells = cells * forget + ingate * change
        return outgate * np.tanh(cells), cells

    def log_probs(hiddens):
        output = concat_and_multiply(params["predict"], hiddens)
        return output - logsumexp(output, axis=1, keepdims=True)

    sequences = inputs.shape[1]
    hiddens = np.repeat(params["init hiddens"], sequences, axis=0)
    cells = np.repeat(params["init cells"], sequences, axis=0)
    outputs = [log_probs(hiddens)]
    for x in inputs:
        hiddens, cells = update(x, hiddens, cells)
        outputs.append(log_probs(hiddens))
    return outputs


def training_loss(params, inputs):
    return -log_likelihood(lstm_predict(params, inputs), inputs)


def problem():
    return string_problem(training_loss, init_lstm_params)


def check():
    """The compiled gradient equals the eager tape's."""
    _engines.check(problem())


if __name__ == "__main__":
    _engines.train(*problem(), steps=40, learning_rate=3.0, report_every=10)
