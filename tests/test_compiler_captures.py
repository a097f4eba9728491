"""Tensors and Variables that compiled code reads without taking them as arguments: from
a global or closure name, an attribute chain of one, a pytree held by one, in the
function itself or in the functions it calls by name (recursively too).  Each becomes
an input of the compiled code, so under a tape its gradient equals the eager tape's;
one that reaches compiled code any other way (an object passed to a helper) is refused
with CompileError when a tape watches it, never a silent None or zero."""
import types

import numpy as np
import pytest

import srcdiff as sd
from compiler_programs import finite_difference

RNG = np.random.default_rng(11)
X = RNG.uniform(-1.0, 1.0, size=(2,))
W = sd.Variable(RNG.normal(size=(2, 2)), name="W")
B = sd.Variable(RNG.normal(size=(2,)), name="B")
C = sd.constant(RNG.normal(size=(2,)))
LAYERS = [(sd.Variable(RNG.normal(size=(2, 2))), sd.Variable(RNG.normal(size=(2,))))
          for _ in range(2)]
MODEL = types.SimpleNamespace(kernel=sd.Variable(RNG.normal(size=(2, 2))))


def dense(x):
    return np.tanh(x @ W + B)


@sd.function
def dense_compiled(x):
    return np.tanh(x @ W + B)


def scaled(x):
    return dense(x) * C


def deep(x, n):
    if n == 0:
        return x
    return deep(dense(x), n - 1)


def reads_itself(x, n):
    if n == 0:
        return x * C
    return reads_itself(np.sin(x @ W), n - 1) + B


def stack(x):
    for kernel, bias in LAYERS:
        x = np.tanh(x @ kernel + bias)
    return x


def kernel_of_model(x):
    return np.sin(x @ MODEL.kernel)


def make_closure():
    v = sd.Variable(RNG.normal(size=(2,)), name="closure_v")

    def inner(x):
        return x * v + C

    def outer(x):
        return np.sum(inner(x) ** 2)
    return outer, v


def loss_helper(x):
    return np.sum(dense(x) ** 2)


def loss_two_levels(x):
    return np.sum(scaled(dense(x)))


def loss_compiled_helper(x):
    return np.sum(dense_compiled(x) * x)


def loss_recursive_helper(x):
    return np.sum(deep(x, 3))


def loss_recursion_that_reads(x):
    return np.sum(reads_itself(x, 2) ** 2)


def loss_pytree_of_variables(x):
    return np.sum(stack(x) ** 2)


def loss_attribute_of_a_global(x):
    return np.sum(kernel_of_model(x))


def transform(f, x):
    return f(x) * 2.0


def loss_lambda_reading_a_variable(x):  # a closure passed to a helper (closures.py)
    return np.sum(transform(lambda t: np.sin(t @ W) * x, x))


def loss_lambda_calling_a_helper(x):
    return np.sum(transform(lambda t: dense(t) * x, x) ** 2)


def dense_with_defaults(x, scale=2.0, *, shift=0.5):
    return np.tanh(x @ W + B) * scale + shift


def loss_helper_left_to_its_defaults(x):  # W and B follow every parameter, defaults filled
    return np.sum(dense_with_defaults(x) * dense_with_defaults(x, shift=1.0))


CLOSURE_LOSS, CLOSURE_V = make_closure()
CASES = {
    "helper": (loss_helper, [W, B]),
    "two_levels": (loss_two_levels, [W, B, C]),
    "compiled_helper": (loss_compiled_helper, [W, B]),
    "recursive_helper": (loss_recursive_helper, [W, B]),
    "recursion_that_reads": (loss_recursion_that_reads, [W, B, C]),
    "pytree_of_variables": (loss_pytree_of_variables, [v for layer in LAYERS for v in layer]),
    "attribute_of_a_global": (loss_attribute_of_a_global, [MODEL.kernel]),
    "closure_in_a_helper": (CLOSURE_LOSS, [CLOSURE_V, C]),
    "lambda_reading_a_variable": (loss_lambda_reading_a_variable, [W]),
    "lambda_calling_a_helper": (loss_lambda_calling_a_helper, [W, B]),
    "helper_left_to_its_defaults": (loss_helper_left_to_its_defaults, [W, B]),
}


def tape_gradients(fn, sources):
    x = sd.constant(X)
    with sd.GradientTape() as tape:
        tape.watch(x)
        tape.watch([s for s in sources if not isinstance(s, sd.Variable)])
        y = fn(x)
    return y, tape.gradient(y, [x] + sources)


@pytest.mark.parametrize("name", CASES)
def test_under_a_tape_a_captured_value_gets_the_eager_tapes_gradient(name):
    loss, sources = CASES[name]
    y, grads = tape_gradients(sd.function(loss), sources)
    y_eager, eager = tape_gradients(loss, sources)
    np.testing.assert_allclose(np.asarray(y), np.asarray(y_eager), rtol=1e-12)
    for got, want in zip(grads, eager):
        assert want is not None and got is not None
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("name", CASES)
def test_outside_a_tape_captured_values_are_constants(name):
    loss, _ = CASES[name]
    np.testing.assert_allclose(np.asarray(sd.function(loss)(X)), np.asarray(loss(X)),
                               rtol=1e-12)
    np.testing.assert_allclose(sd.grad(loss)(X), finite_difference(loss, (X,), 0),
                               rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("name", ["helper", "two_levels", "pytree_of_variables"])
def test_a_second_derivative_through_a_captured_variable(name):
    loss, sources = CASES[name]
    v = sources[0]

    def second(fn):
        with sd.GradientTape() as outer:
            with sd.GradientTape() as inner:
                y = fn(sd.constant(X))
            g = inner.gradient(y, v)
            total = sd.reduce_sum(g * g)
        return outer.gradient(total, v)

    np.testing.assert_allclose(np.asarray(second(sd.function(loss))),
                               np.asarray(second(loss)), rtol=1e-8, atol=1e-12)


# --- what is refused: a watched value reaching compiled code other than as an input ---

def dense_of(layer, x):
    return x @ layer.kernel


def loss_object_passed_to_a_helper(x):
    return np.sum(dense_of(MODEL, x) ** 2)


def loss_renamed_helper(x):
    f = dense
    return np.sum(f(x))


@pytest.mark.parametrize("loss", [loss_object_passed_to_a_helper, loss_renamed_helper])
def test_a_watched_value_reaching_compiled_code_otherwise_is_refused(loss):
    with sd.GradientTape() as outer:
        with sd.GradientTape() as tape:
            with pytest.raises(sd.CompileError, match=f"compiled code of {loss.__name__}.*"
                               "not an input"):
                sd.function(loss)(sd.constant(X))
            y = np.sum(MODEL.kernel * MODEL.kernel)  # the tapes record as before it
        dy = tape.gradient(y, MODEL.kernel)
    np.testing.assert_allclose(dy.numpy(), 2 * MODEL.kernel.numpy())
    np.testing.assert_allclose(outer.gradient(y, MODEL.kernel).numpy(), dy.numpy())
    # outside a tape nothing is watched: the value, computed
    np.testing.assert_allclose(np.asarray(sd.function(loss)(X)), np.asarray(loss(X)))
