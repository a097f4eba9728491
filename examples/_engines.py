"""What the example programs share: one objective, differentiated by both engines.

Every example defines ``problem()`` returning ``(objective, params, args)``, where
``objective(params, *args)`` is a scalar written in plain NumPy and ``params`` is a
pytree: nested dicts, lists and tuples whose leaves are float64 arrays (as autograd
and JAX users write them).  The same ``objective`` runs unchanged on

- the compiled path, ``sd.grad(objective)(params, *args)``, and
- the eager tape, with the leaves of ``params`` as watched ``sd.constant``s.

``check(problem)`` compares the two leaf by leaf; ``finite_difference_check``
compares the eager gradient with central differences along random directions.
Leaves are visited in one order everywhere: lists and tuples in order, dicts by
sorted key.
"""
import numpy as np

import srcdiff as sd
from srcdiff import nest  # the tape's own order of leaves


leaves = nest.flatten  # the arrays of a tree, in the order the docstring states


def tree_map(f, tree, *others):
    """``tree`` with each leaf ``x`` replaced by ``f(x, *the same leaf of others)``."""
    return nest.pack_sequence_as(tree, [f(*xs) for xs in zip(leaves(tree), *map(leaves, others))])


def eager_grad(objective, params, args):
    """The gradient's leaves from the eager tape, running ``objective`` unchanged."""
    watched = tree_map(sd.constant, params)
    with sd.GradientTape() as tape:
        tape.watch(leaves(watched))
        value = objective(watched, *args)
    grads = tape.gradient(value, leaves(watched))
    return [np.zeros_like(p) if g is None else np.asarray(g)
            for g, p in zip(grads, leaves(params))]


def compiled_grad(objective, params, args):
    """The gradient's leaves from the compiled adjoint (``sd.grad``)."""
    return leaves(sd.grad(objective)(params, *args))


def check(problem, rtol=1e-6, atol=1e-9):
    """Assert the compiled gradient equals the eager tape's, leaf by leaf."""
    objective, params, args = problem
    eager, compiled = eager_grad(objective, params, args), compiled_grad(objective, params, args)
    assert len(compiled) == len(eager), f"{len(compiled)} compiled leaves, {len(eager)} eager"
    for i, (c, e) in enumerate(zip(compiled, eager)):
        np.testing.assert_allclose(c, e, rtol=rtol, atol=atol,
                                   err_msg=f"leaf {i}: compiled vs eager tape")


def finite_difference_check(problem, directions=3, eps=1e-6, rtol=1e-5, seed=0):
    """Assert the eager gradient's slope along random directions equals central
    differences of ``objective`` (in float64)."""
    objective, params, args = problem
    grads = eager_grad(objective, params, args)
    rng = np.random.default_rng(seed)
    for _ in range(directions):
        direction = tree_map(lambda p: rng.normal(size=np.shape(p)), params)
        step = tree_map(lambda p, d: eps * d, params, direction)
        ahead = objective(tree_map(np.add, params, step), *args)
        behind = objective(tree_map(np.subtract, params, step), *args)
        numeric = (float(ahead) - float(behind)) / (2 * eps)
        slope = sum(float(np.sum(g * d)) for g, d in zip(grads, leaves(direction)))
        assert abs(slope - numeric) <= rtol * max(1.0, abs(numeric)), \
            f"eager slope {slope} vs finite differences {numeric}"


def gradient_function(objective):
    """``sd.grad(objective)``, or the eager tape's gradient while the compiler refuses
    ``objective`` (the refusal's first line is printed once)."""
    compiled = sd.grad(objective)

    def gradient(params, *args):
        nonlocal compiled
        if compiled is not None:
            try:
                return compiled(params, *args)
            except sd.CompileError as error:
                where = f"line {error.lineno}: " if error.lineno else ""
                print(f"the compiler refuses it today ({where}{error.message.splitlines()[0]});"
                      " training on the eager tape")
                compiled = None
        return nest.pack_sequence_as(params, eager_grad(objective, params, args))
    return gradient


def train(objective, params, args, steps, learning_rate, report_every):
    """Plain gradient descent; prints the loss every ``report_every`` steps and
    returns the trained parameters."""
    gradient = gradient_function(objective)
    for step in range(steps + 1):
        if step % report_every == 0:
            print(f"step {step:4d}   loss {float(objective(params, *args)):.6f}")
        if step < steps:
            params = tree_map(lambda p, d: p - learning_rate * d, params, gradient(params, *args))
    return params
