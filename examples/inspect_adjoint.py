"""Print the adjoint code srcdiff generates for a function with a loop and a branch.

Run:  python3 examples/inspect_adjoint.py
(or, for any function in a file:  python3 -m srcdiff show examples/inspect_adjoint.py:damped --wrt x,rate)

Read the forward pass for what it keeps: a value is saved only when an
adjoint reads it after it was overwritten (onto a stack inside the loop), and
the branch taken is kept the same way, because the backward pass replays it.
"""
import numpy as np

import srcdiff as sd


def damped(x, rate, steps):
    """Iterate a damped map; large states are squashed instead of scaled."""
    for _ in range(steps):
        if np.sum(x * x) > 1.0:
            x = np.tanh(x)
        else:
            x = x * rate + np.sin(x)
    return np.sum(x ** 2)


def main():
    print(sd.adjoint_source(damped, wrt=("x", "rate")))
    x, rate = np.array([0.3, -0.2, 0.5]), 0.9
    dx, drate = sd.grad(damped, wrt=("x", "rate"))(x, rate, 5)
    h = 1e-6
    numeric = (damped(x, rate + h, 5) - damped(x, rate - h, 5)) / (2 * h)
    print(f"d/drate: compiled {drate:.8f}   finite differences {numeric:.8f}")
    return dx, drate, numeric


if __name__ == "__main__":
    main()
