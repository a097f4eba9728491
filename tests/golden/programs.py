"""Functions whose generated adjoint source is kept in tests/golden/<name>.txt.

Moving a line here changes the line numbers the generated comments quote:
regenerate with ``SRCDIFF_REGEN_GOLDEN=1 python -m pytest tests/test_compiler_golden.py``.
A line marked ``# inactive`` computes nothing the gradient needs: it gets no adjoint
block (the name it assigns may still become active later, as ``out`` does).
"""
import numpy as np


def mlp_layer(W, b, x):
    h = np.tanh(W @ x + b)
    return np.sum(h ** 2)


def loop_overwrite(x, n):
    y = x
    for i in range(n):
        y = np.sin(y) * x
    return np.sum(y)


def branch(x):
    s = np.sum(x)  # inactive
    scale = 2.0  # inactive
    if s > 0.0:
        y = x * scale
    elif s > -1.0:
        y = np.exp(x)
    else:
        y = -x
    return np.sum(y * x)


def while_loop(x):
    k = 0  # inactive
    y = x
    while np.sum(y * y) < 100.0:
        y = y * 1.5 + x
        k = k + 1  # inactive
    return np.sum(y)


def subscript_write(x):
    out = np.zeros(3)  # inactive
    for i in range(3):
        out[i] = x[i] * x[i + 1]
    return np.sum(out * out)


# name: (function, wrt, names that must have no adjoint)
PROGRAMS = {
    "mlp_layer": (mlp_layer, ("W", "b"), ("x",)),
    "loop_overwrite": (loop_overwrite, 0, ("i", "n")),
    "branch": (branch, 0, ("s", "scale")),
    "while_loop": (while_loop, 0, ("k",)),
    "subscript_write": (subscript_write, 0, ("i",)),
}
