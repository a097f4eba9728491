"""A neural ODE: learn the vector field of a damped cubic oscillator from one
of its trajectories.

Run:  python3 examples/ode_net.py

The dynamics are a small tanh network with a list of (W, b) layers; ``rk4``
integrates any right-hand side ``f(y, t, *args)`` it is given, collecting the
states with ``list.append`` and ``np.stack``; the model passes it a lambda.
"""
import numpy as np

import _engines

TRUE_A = np.array([[-0.1, 2.0], [-2.0, -0.1]])


def rk4(f, y0, times, *args):
    """The solution of dy/dt = f(y, t, *args) at ``times``, by one classical
    Runge-Kutta step between consecutive times."""
    y = y0
    states = [y0]
    for t0, t1 in zip(times[:-1], times[1:]):
        h = t1 - t0
        k1 = f(y, t0, *args)
        k2 = f(y + h / 2 * k1, t0 + h / 2, *args)
        k3 = f(y + h / 2 * k2, t0 + h / 2, *args)
        k4 = f(y + h * k3, t1, *args)
        y = y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        states.append(y)
    return np.stack(states)


def cubic_oscillator(y, t, A):
    return np.dot(y ** 3, A)


def nn_dynamics(params, y):
    for W, b in params:
        outputs = np.dot(y, W) + b
        y = np.tanh(outputs)
    return outputs


def init_params(scale, layer_sizes, rng):
    return [(scale * rng.normal(size=(m, n)), scale * rng.normal(size=n))
            for m, n in zip(layer_sizes[:-1], layer_sizes[1:])]


def ode_predict(params, y0, times):
    return rk4(lambda y, t: nn_dynamics(params, y), y0, times)


def train_loss(params, y0, times, observed):
    return np.mean((ode_predict(params, y0, times) - observed) ** 2)


def problem():
    times = np.linspace(0.0, 1.5, 16)
    y0 = np.array([2.0, 0.0])
    observed = rk4(cubic_oscillator, y0, times, TRUE_A)
    params = init_params(0.3, [2, 16, 2], np.random.default_rng(0))
    return train_loss, params, (y0, times, observed)


def check():
    """The compiled gradient equals the eager tape's."""
    _engines.check(problem())


if __name__ == "__main__":
    _engines.train(*problem(), steps=40, learning_rate=0.1, report_every=10)
