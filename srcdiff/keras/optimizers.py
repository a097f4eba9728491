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
    """Adam as Keras computes it: every quantity in the variable's dtype (float32 steps are
    rounded as TensorFlow's), ``m += (g - m) * (1 - beta_1)``, and with ``amsgrad`` the
    largest second moment so far."""

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7,
                 amsgrad=False):
        super().__init__(learning_rate)
        self.beta_1, self.beta_2, self.epsilon = beta_1, beta_2, epsilon
        self.amsgrad = amsgrad
        self._moments = {}

    def _step(self, g, v):
        dtype = g.dtype
        m, s, top = self._moments.get(id(v), (np.zeros_like(g),) * 3)
        m = m + (g - m) * dtype.type(1 - self.beta_1)
        s = s + (np.square(g) - s) * dtype.type(1 - self.beta_2)
        top = np.maximum(top, s) if self.amsgrad else s
        self._moments[id(v)] = (m, s, top)
        t = dtype.type(self.iterations)
        rate = (dtype.type(self.learning_rate) * np.sqrt(1 - dtype.type(self.beta_2) ** t)
                / (1 - dtype.type(self.beta_1) ** t))
        return m * rate / (np.sqrt(top) + dtype.type(self.epsilon))
