"""Optimizers that apply gradients to Variables."""
import numpy as np

from ..tensor import IndexedSlices, _raw


def _dense(g):
    return g.numpy() if isinstance(g, IndexedSlices) else np.asarray(_raw(g))


class Optimizer:
    def __init__(self, learning_rate):
        self.learning_rate = learning_rate
        self.iterations = 0

    def apply_gradients(self, grads_and_vars):
        self.iterations += 1
        for g, v in grads_and_vars:
            if g is not None:
                v.assign_sub(self._step(_dense(g).astype(v.dtype), v))


class SGD(Optimizer):
    """Plain gradient descent, with optional momentum."""

    def __init__(self, learning_rate=0.01, momentum=0.0):
        super().__init__(learning_rate)
        self.momentum = momentum
        self._velocity = {}

    def _step(self, g, v):
        if not self.momentum:
            return self.learning_rate * g
        velocity = self.momentum * self._velocity.get(id(v), 0) + self.learning_rate * g
        self._velocity[id(v)] = velocity
        return velocity


class Adam(Optimizer):
    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7):
        super().__init__(learning_rate)
        self.beta_1, self.beta_2, self.epsilon = beta_1, beta_2, epsilon
        self._moments = {}

    def _step(self, g, v):
        m, s = self._moments.get(id(v), (0.0, 0.0))
        m = self.beta_1 * m + (1 - self.beta_1) * g
        s = self.beta_2 * s + (1 - self.beta_2) * g * g
        self._moments[id(v)] = (m, s)
        t = self.iterations
        rate = self.learning_rate * np.sqrt(1 - self.beta_2 ** t) / (1 - self.beta_1 ** t)
        return rate * m / (np.sqrt(s) + self.epsilon)
