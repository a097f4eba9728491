"""Jacobians: one vectorised backward walk versus one walk per row.

Two functions of a 100-element float64 vector, each differentiated these ways:

* hand-written NumPy, the baseline: the forward pass, then the backward pass on the
  identity's rows as cotangents (``diag(f'(x))``, ``diag(s') @ W``: the product a
  reverse-mode jacobian computes);
* hand-written NumPy that knows the cotangents are the identity's rows: the dense
  layer's jacobian as ``s'[:, None] * W``, no product (about 8x faster);
* srcdiff ``tape.jacobian`` vectorised (the default): one walk whose adjoints
  carry a leading axis of 100 rows;
* srcdiff ``tape.jacobian(..., experimental_use_pfor=False)``: 100 walks, one per row;
* srcdiff ``sd.jacobian`` (compiled): the compiled backward pass run once on a
  batch of 100 cotangents;
* an ``@sd.function`` under a tape, ``tape.jacobian``: one tape entry whose batch
  of adjoints goes through the same batched compiled backward pass;
* HIPS autograd's ``jacobian`` (one vjp per row), when installed;
* for the dense layer also ``jax.jit(jax.jacrev)``,
  ``torch.autograd.functional.jacobian(vectorize=True)`` and ``tape.jacobian``
  inside ``tf.function``, those installed.

Every system's jacobian is checked against the hand-written one first.
"""
import numpy as np

import srcdiff as sd

import peers
from _timing import compare

N = 100
rng = np.random.default_rng(0)
W = rng.normal(size=(N, N)) / np.sqrt(N)
B = rng.normal(size=N)


def elementwise(x, ns):
    """Ten elementwise primitives."""
    y = ns.sin(x) * x + 0.5
    return ns.tanh(y) * ns.exp(-x * x) - y / (2.0 + x * x)


def elementwise_by_hand(x):
    y = np.sin(x) * x + 0.5
    dy = np.cos(x) * x + np.sin(x)
    t, e, q = np.tanh(y), np.exp(-x * x), 2.0 + x * x
    d = (1 - t * t) * dy * e + t * e * (-2 * x) - (dy * q - y * 2 * x) / (q * q)
    return np.diag(d)


def layer(x, ns):
    """A dense layer: tanh(W @ x + b)."""
    return ns.tanh(ns.matmul(W, x) + B)


def layer_by_hand(x):
    s = np.tanh(W @ x + B)
    return np.diag(1 - s * s) @ W


def layer_by_hand_diagonal(x):
    s = np.tanh(W @ x + B)
    return (1 - s * s)[:, None] * W


# The same functions written for the compiler (NumPy calls on arrays).
def elementwise_compiled(x):
    y = np.sin(x) * x + 0.5
    return np.tanh(y) * np.exp(-x * x) - y / (2.0 + x * x)


def layer_compiled(x):
    return np.tanh(W @ x + B)


def compiled_under_tape(f):
    compiled = sd.function(f)

    def run(x):
        x = sd.constant(x)
        with sd.GradientTape() as tape:
            tape.watch(x)
            y = compiled(x)
        return tape.jacobian(y, x).numpy()
    return run


def peer_jacobians():
    """The dense layer's jacobian by the peers that compile one:
    ``(name, fn of x or None, reason)``."""
    systems = []
    missing = peers.available()
    for name, build in (("jax.jit", _jax_jacobian), ("torch eager", _torch_jacobian),
                        ("tf.function", _tf_jacobian)):
        systems.append((name, None, missing[name]) if missing[name] else (name, build(), None))
    return systems


def _jax_jacobian():
    import jax
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    f = jax.jit(jax.jacrev(lambda x: jnp.tanh(jnp.asarray(W) @ x + jnp.asarray(B))))
    return lambda x: np.asarray(jax.block_until_ready(f(x)))


def _torch_jacobian():
    import torch
    torch.set_num_threads(1)
    w, b = torch.tensor(W), torch.tensor(B)
    return lambda x: torch.autograd.functional.jacobian(
        lambda v: torch.tanh(w @ v + b), torch.tensor(x), vectorize=True).numpy()


def _tf_jacobian():
    import tensorflow as tf
    w, b = tf.constant(W), tf.constant(B)

    @tf.function
    def jacobian(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.tanh(tf.linalg.matvec(w, x) + b)
        return tape.jacobian(y, x)
    return lambda x: jacobian(tf.constant(x)).numpy()


def srcdiff_jacobian(f, use_pfor):
    def run(x):
        x = sd.constant(x)
        with sd.GradientTape(persistent=not use_pfor) as tape:
            tape.watch(x)
            y = f(x, sd)
        return tape.jacobian(y, x, experimental_use_pfor=use_pfor).numpy()
    return run


def autograd_jacobian(f):
    try:
        import autograd
        import autograd.numpy as anp
    except ImportError:
        return None
    return autograd.jacobian(lambda x: f(x, anp))


WORKLOADS = [
    (f"jacobian, {N} elementwise (10 ops)", elementwise, elementwise_compiled,
     [elementwise_by_hand]),
    (f"jacobian, dense layer {N}x{N}", layer, layer_compiled,
     [layer_by_hand, layer_by_hand_diagonal]),
]


def run():
    """Rows of (workload, system, best seconds, median seconds)."""
    x = np.linspace(-1.0, 1.0, N)
    rows = []
    for workload, f, compiled, by_hand in WORKLOADS:
        systems = [("hand-written NumPy", by_hand[0])]
        systems += [("hand-written NumPy, identity's rows exploited", h) for h in by_hand[1:]]
        systems += [("srcdiff tape.jacobian, vectorised", srcdiff_jacobian(f, True)),
                    ("srcdiff tape.jacobian, one walk per row", srcdiff_jacobian(f, False)),
                    ("srcdiff sd.jacobian (compiled)", sd.jacobian(compiled)),
                    ("@sd.function under tape.jacobian", compiled_under_tape(compiled))]
        peer = None if peers.available()["HIPS autograd"] else autograd_jacobian(f)
        if peer is not None:
            systems.append(("HIPS autograd jacobian", peer))
        unavailable = []
        if f is layer:
            for name, fn, reason in peer_jacobians():
                if fn is None:
                    unavailable.append((workload, name, None, None, None, f"unavailable: {reason}"))
                else:
                    systems.append((name, fn))
        reference = by_hand[0](x)
        for name, fn in systems:
            if not np.allclose(fn(x), reference, rtol=1e-10, atol=1e-12):
                raise AssertionError(f"{name} computes a different jacobian than the hand-written one")
        timed = compare([(name, lambda fn=fn: fn(x)) for name, fn in systems])
        rows += [(workload, name, best, median) for name, best, median in timed] + unavailable
    return rows


if __name__ == "__main__":
    from run import print_table
    print_table(run())
