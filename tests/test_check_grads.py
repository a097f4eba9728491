"""sd.check_grads: it passes on functions whose gradients are right (arrays, floats,
pytrees, float32, array outputs, second order) and fails, naming the argument, the
entry, both values and the tolerance, on rules that are wrong at first or second order."""
from collections import namedtuple

import numpy as np
import pytest

import srcdiff as sd

RNG = np.random.default_rng(7)
X = RNG.normal(size=(4, 3))
W = RNG.normal(size=(3, 2))
Layer = namedtuple("Layer", "W b")
PARAMS = {"layer": Layer(RNG.normal(size=(3, 2)), RNG.normal(size=2)), "scale": [1.5]}


def cube(x):
    return x ** 3


def cube_grad(g, ans, x):
    return g * 3.0 * x ** 2


def wrong_cube(x):
    return x ** 3


def wrong_cube_grad(g, ans, x):
    return g * 2.0 * x ** 2  # deliberately wrong: 3x^2 is the derivative


def flat_cube(x):
    return x ** 3


def flat_cube_grad(g, ans, x):
    return g * 3.0 * sd.stop_gradient(x) ** 2  # right values, no second derivative


def slightly_off(x):
    return x * 1.0


def slightly_off_grad(g, ans, x):
    return g * 1.001


@pytest.fixture(scope="module", autouse=True)
def rules():
    """Registered when the tests run, not when they are collected: a test module that
    reads the registry at collection sees only srcdiff's own rules."""
    for fn, rule in [(cube, cube_grad), (wrong_cube, wrong_cube_grad),
                     (flat_cube, flat_cube_grad), (slightly_off, slightly_off_grad)]:
        sd.register_gradient(fn)(rule)


def sum_cube(x):
    return np.sum(cube(x))


def sum_wrong_cube(x):
    return np.sum(wrong_cube(x))


def sum_flat_cube(x):
    return np.sum(flat_cube(x))


def mlp(x, W, n):
    return np.sum(np.tanh(x @ W)) * n


def tree(params, x):
    h = np.tanh(x @ params["layer"].W + params["layer"].b)
    return np.sum(h ** 2) * params["scale"][0]


def scalars(a, b):
    return a * b * b + np.sin(a)


def elementwise(x):
    return np.sin(x) * np.exp(x)


def wrong_in_b(a, b):
    return np.sum(a * wrong_cube(b))


# --- passes ---

@pytest.mark.parametrize("order", [1, 2])
@pytest.mark.parametrize("f, args", [
    (sum_cube, (np.array([0.5, -1.0, 2.0]),)),
    (mlp, (X, W, 3)),
    (tree, (PARAMS, X)),
    (scalars, (0.3, 1.2)),
    (mlp, (X.astype(np.float32), W.astype(np.float32), 2)),
])
def test_right_gradients_pass(f, args, order):
    assert sd.check_grads(f, args, order=order) is None


def test_an_array_output_is_checked_through_a_cotangent():
    sd.check_grads(elementwise, (X,))


@pytest.mark.parametrize("wrt", ["params", 0, ("x", "params")])
def test_wrt_chooses_the_arguments(wrt):
    sd.check_grads(tree, (PARAMS, X), wrt=wrt)


def test_wrt_leaves_a_wrong_argument_unchecked():
    sd.check_grads(wrong_in_b, (X, X), wrt="a")
    with pytest.raises(AssertionError, match="'b' \\(argument 1\\)"):
        sd.check_grads(wrong_in_b, (X, X))


# --- fails, and says where ---

def test_a_wrong_rule_fails_naming_argument_entry_values_and_tolerance():
    x = np.array([0.5, -1.0, 2.0])
    with pytest.raises(AssertionError) as info:
        sd.check_grads(sum_wrong_cube, (x,))
    message = str(info.value)
    assert "'x' (argument 0)" in message
    assert "x[2]" in message  # the worst entry: |2x^2 - 3x^2| is largest at x = 2
    assert "srcdiff gives 8.0" in message
    assert "give 12.0" in message
    assert "tolerance" in message and "rtol 1e-05" in message
    assert "3 of 3 entries differ" in message


def test_a_wrong_rule_inside_a_pytree_names_the_leaf():
    def loss(p):
        return np.sum(p["a"] * 2.0) + np.sum(wrong_cube(p["b"]))
    with pytest.raises(AssertionError, match=r"p\['b'\]\[1, 0\]"):
        sd.check_grads(loss, ({"a": X, "b": np.array([[0.5], [3.0]])},))


def test_a_rule_without_a_second_derivative_fails_at_order_two():
    x = np.array([0.5, -1.0, 2.0])
    sd.check_grads(sum_flat_cube, (x,), order=1)
    with pytest.raises(AssertionError, match="directional derivative") as info:
        sd.check_grads(sum_flat_cube, (x,), order=2)
    assert "srcdiff gives 0.0" in str(info.value)  # d/dx of 3x^2 v is missing


def sum_slightly_off(x):
    return np.sum(slightly_off(x))


def test_a_looser_tolerance_is_honoured():
    with pytest.raises(AssertionError, match="srcdiff gives 1.001"):
        sd.check_grads(sum_slightly_off, (X,))
    sd.check_grads(sum_slightly_off, (X,), rtol=1e-2)


# --- bad use ---

@pytest.mark.parametrize("args, order, error, match", [
    (X, 1, TypeError, "tuple"),
    ((X,), 3, ValueError, "order"),
    ((np.arange(3),), 1, ValueError, "no gradient to check"),
])
def test_bad_use(args, order, error, match):
    with pytest.raises(error, match=match):
        sd.check_grads(sum_cube, args, order=order)


def test_second_order_needs_a_scalar():
    with pytest.raises(ValueError, match="order=2"):
        sd.check_grads(elementwise, (X,), order=2)
