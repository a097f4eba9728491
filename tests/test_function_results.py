"""``@sd.function`` returning several results or a pytree, called under a tape: each
leaf is a Tensor of the tape, and every gradient through any of them equals the eager
tape's on the undecorated function (TensorFlow's tf.function returns such structures).
As with tf.function, one call is one operation: an input that only other leaves read
gets zeros where the eager tape, which follows each leaf, gives None."""
import numpy as np
import pytest

import srcdiff as sd

def pair(x, y):
    return x * y, np.sum(np.sin(x))


def same_twice(x, y):
    z = np.tanh(x) * y
    return z, z


def as_dict(x, y):
    return {"loss": np.sum(x ** 2 * y), "pred": np.tanh(x), "count": 3}


def as_list(x, y):
    return [np.sin(x), np.cos(x) * y]


def nested(x, y):
    a = np.exp(x) * y
    return np.sum(a), {"b": [a, x * 2.0], "c": (np.cos(y), 7)}


def one_constant(x, y):
    return x * y, np.ones(3)


def looped(x, y):
    out = []
    for k in range(3):
        x = np.sin(x) * y
        out.append(x)
    return out


FUNCTIONS = [pair, same_twice, as_dict, as_list, nested, one_constant, looped]


def _arguments():
    rng = np.random.default_rng(0)
    return sd.constant(rng.normal(size=3)), sd.constant(rng.normal(size=3) + 1.5)


def _floats(structure):
    """The floating leaves of ``structure``, in nest order."""
    return [leaf for leaf in sd.nest.flatten(structure)
            if isinstance(leaf, sd.Tensor) and leaf.dtype.kind == "f"]


def _target(structure, weights):
    """A scalar that reads every floating leaf, each with its own weight."""
    return sum(sd.reduce_sum(leaf * w) for leaf, w in zip(_floats(structure), weights))


def _gradients(fn, pick):
    """The gradients of the leaves ``pick`` chooses (weighted) with respect to x, y."""
    x, y = _arguments()
    with sd.GradientTape() as tape:
        tape.watch([x, y])
        result = fn(x, y)
        leaves = _floats(result)
        weights = [np.full(np.shape(leaf.numpy()), 0.5 + k) for k, leaf in enumerate(leaves)]
        chosen = [leaf * w for k, (leaf, w) in enumerate(zip(leaves, weights)) if pick(k)]
        target = sum(sd.reduce_sum(c) for c in chosen)
    return tape.gradient(target, [x, y]), result


@pytest.mark.parametrize("fn", FUNCTIONS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("which", ["all", "first", "last", "even"])
def test_gradients_through_any_leaves_equal_the_eager_tapes(fn, which):
    pick = {"all": lambda k: True, "first": lambda k: k == 0,
            "last": lambda k: k == len(_floats(fn(*_arguments()))) - 1,
            "even": lambda k: k % 2 == 0}[which]
    (dx, dy), compiled = _gradients(sd.function(fn), pick)
    (ex, ey), eager = _gradients(fn, pick)
    for got, want in ((dx, ex), (dy, ey)):
        if want is None:  # as tf.function's: zeros for an input only other leaves read
            assert got is None or not np.any(got.numpy())
        else:
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12, atol=1e-12)
    # the same structure of the same values, each leaf a Tensor
    assert type(compiled) is type(eager)
    for got, want in zip(sd.nest.flatten(compiled), sd.nest.flatten(eager)):
        assert isinstance(got, sd.Tensor)
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-12)


def test_the_gradient_matches_finite_differences():
    x, y = _arguments()
    f = sd.function(nested)
    with sd.GradientTape() as tape:
        tape.watch(x)
        total, rest = f(x, y)
        target = total + 2.0 * sd.reduce_sum(rest["b"][1]) + sd.reduce_sum(rest["b"][0] ** 2)

    def value(xv):
        a = np.exp(xv) * y.numpy()
        return np.sum(a) + 2.0 * np.sum(xv * 2.0) + np.sum(a ** 2)

    eps = 1e-6
    numeric = [(value(x.numpy() + eps * e) - value(x.numpy() - eps * e)) / (2 * eps)
               for e in np.eye(3)]
    np.testing.assert_allclose(tape.gradient(target, x).numpy(), numeric, rtol=1e-6)


def test_a_persistent_tape_walks_the_leaves_twice():
    x, y = _arguments()
    f = sd.function(pair)
    with sd.GradientTape(persistent=True) as tape:
        tape.watch(x)
        a, b = f(x, y)
    first = tape.gradient(b, x).numpy()
    second = tape.gradient(a, x).numpy()
    np.testing.assert_allclose(first, np.cos(x.numpy()), rtol=1e-12)
    np.testing.assert_allclose(second, y.numpy(), rtol=1e-12)
    np.testing.assert_allclose(tape.gradient(b, x).numpy(), first, rtol=0)


def test_the_jacobian_of_one_leaf():
    x, y = _arguments()
    f = sd.function(as_list)
    with sd.GradientTape(persistent=True) as tape:
        tape.watch(x)
        s, c = f(x, y)
    np.testing.assert_allclose(tape.jacobian(c, x).numpy(),
                               np.diag(-np.sin(x.numpy()) * y.numpy()), rtol=1e-12)
    np.testing.assert_allclose(tape.jacobian(s, x, experimental_use_pfor=False).numpy(),
                               np.diag(np.cos(x.numpy())), rtol=1e-12)


def test_a_second_derivative_through_one_leaf():
    x, y = _arguments()
    f = sd.function(pair)
    with sd.GradientTape() as outer:
        outer.watch(x)
        with sd.GradientTape() as inner:
            inner.watch(x)
            _, b = f(x, y)
        d = inner.gradient(b, x)  # cos(x)
    np.testing.assert_allclose(outer.gradient(d, x).numpy(), -np.sin(x.numpy()), rtol=1e-12)


def test_outside_a_tape_the_structure_holds_tensors():
    x, y = _arguments()
    result = sd.function(nested)(x, y)
    assert isinstance(result[1]["b"], list) and isinstance(result[1]["c"], tuple)
    assert all(isinstance(v, sd.Tensor) for v in sd.nest.flatten(result))
    np.testing.assert_allclose(result[0].numpy(), np.sum(np.exp(x.numpy()) * y.numpy()))
