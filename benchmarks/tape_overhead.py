"""Tape overhead: 1000 tiny elementwise ops on a 10-element float64 vector.

The same function is differentiated by each system:

* hand-written NumPy: the forward pass saves what the backward pass reads, and
  the backward pass is the adjoint code written out by hand (the floor);
* srcdiff's GradientTape: record, then ``tape.gradient``;
* HIPS autograd's ``grad`` and PyTorch eager (peer tape-based systems), when installed.

Each block below is 8 primitives (``sin * + tanh - exp * -``), so 125 blocks
make 1000 ops; a final ``sum`` makes the target a scalar for autograd's sake.
"""
import numpy as np

import srcdiff as sd

import peers
from _timing import compare

N_BLOCKS = 125
OPS_PER_BLOCK = 8
N_OPS = N_BLOCKS * OPS_PER_BLOCK


def block(a, ns):
    """One block of 8 primitives, written once for any NumPy-like namespace ``ns``."""
    y = ns.sin(a)
    z = ns.tanh(a * y + 0.5)
    w = ns.exp(-z)
    return a - 0.1 * w


def program(x, ns):
    a = x
    for _ in range(N_BLOCKS):
        a = block(a, ns)
    return ns.sum(a) if hasattr(ns, "sum") else ns.reduce_sum(a)


def hand_written(x):
    """The value and gradient of ``program`` by hand: forward saves, backward adjoints."""
    saved = []
    a = x
    for _ in range(N_BLOCKS):
        y = np.sin(a)
        z = np.tanh(a * y + 0.5)
        w = np.exp(-z)
        saved.append((a, y, z, w))
        a = a - 0.1 * w
    value = np.sum(a)
    ga = np.ones_like(a)
    for a, y, z, w in reversed(saved):
        gw = -0.1 * ga
        gz = -(gw * w)
        gu = gz * (1 - z * z)          # tanh' through the + 0.5
        ga = ga + gu * y + (gu * a) * np.cos(a)
    return value, ga


def srcdiff_grad(x):
    x = sd.constant(x)
    with sd.GradientTape() as tape:
        tape.watch(x)
        value = program(x, sd)
    return value, tape.gradient(value, x)


def autograd_grad_fn():
    try:
        import autograd
        import autograd.numpy as anp
    except ImportError:
        return None
    return autograd.value_and_grad(lambda x: program(x, anp))


def torch_grad_fn():
    """PyTorch eager, the peer closest to a tape: the same program on ``torch``."""
    if peers.available()["torch eager"]:
        return None
    import torch
    torch.set_num_threads(1)

    def value_and_grad(x):
        leaf = torch.tensor(x, dtype=torch.float64, requires_grad=True)
        value = program(leaf, torch)
        return value, torch.autograd.grad(value, leaf)[0]
    return value_and_grad


def run():
    """Rows of (workload, system, seconds, ratio to hand-written)."""
    x = np.linspace(-1.0, 1.0, 10)
    reference = hand_written(x)[1]
    systems = [("hand-written NumPy", hand_written), ("srcdiff GradientTape", srcdiff_grad)]
    autograd_fn = None if peers.available()["HIPS autograd"] else autograd_grad_fn()
    if autograd_fn is not None:
        systems.append(("HIPS autograd", autograd_fn))
    torch_fn = torch_grad_fn()
    if torch_fn is not None:
        systems.append(("torch eager", torch_fn))
    for name, fn in systems:
        grad = peers.as_numpy((None, [fn(x)[1]]))[1][0]
        if not np.allclose(grad, reference, rtol=1e-10, atol=1e-12):
            raise AssertionError(f"{name} computes a different gradient than the hand-written one")
    timed = compare([(name, lambda fn=fn: fn(x)) for name, fn in systems])
    return [(f"{N_OPS} elementwise ops, 10 floats", name, best, median)
            for name, best, median in timed]


if __name__ == "__main__":
    from run import print_table
    print_table(run())
