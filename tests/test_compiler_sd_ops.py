"""srcdiff's own functions (``sd.tanh``, ``sd.constant``, ``sd.ones``...) inside compiled
code: it computes on arrays, so each runs as its NumPy form (ops/forms.py), and the
gradients equal the eager tape's, with ``sd.grad`` and with ``@sd.function`` under a
tape (where a Tensor made inside the code once came out unrecorded: a None gradient).
A srcdiff function without a form is refused there, never a lost gradient."""
import numpy as np
import pytest

import srcdiff as sd

X = np.array([0.3, -0.7, 1.1], dtype=np.float32)

BODIES = {
    "tanh": lambda x: sd.reduce_sum(sd.tanh(x)),
    "exp_sin": lambda x: np.sum(sd.exp(x) * sd.sin(x)),
    "math": lambda x: sd.reduce_sum(sd.math.log1p(x * x) + sd.square(x)),
    "nn": lambda x: sd.reduce_sum(sd.nn.relu(x) + sd.nn.sigmoid(x)),
    "constant_literal": lambda x: np.sum(sd.constant(2.0) * x),
    "constant_of_x": lambda x: np.sum(sd.constant(x) * x),
    "convert_literal": lambda x: np.sum(sd.convert_to_tensor([1.0, 2.0, 3.0]) * x),
    "convert_x": lambda x: np.sum(sd.convert_to_tensor(x) ** 2),
    "ones": lambda x: np.sum(sd.ones(3) * x),
    "zeros_like": lambda x: np.sum((sd.zeros_like(x) + x) * x),
    "ones_like": lambda x: np.sum(sd.ones_like(x) * sd.sin(x)),
    "cast": lambda x: np.sum(sd.cast(x, sd.float32) * 2.0),
    "stop_gradient": lambda x: np.sum(sd.stop_gradient(x) * x),
    "eye": lambda x: np.sum(sd.eye(3) @ x),
    "concat": lambda x: sd.reduce_sum(sd.concat([x, x * 2.0], axis=0) ** 2),
    "stack": lambda x: sd.reduce_sum(sd.stack([x, sd.sin(x)], axis=1) ** 2),
    "einsum": lambda x: sd.reduce_sum(sd.einsum("i,i->", x, x) * x),
    "sparse_cross_entropy": lambda x: sd.reduce_sum(
        sd.nn.sparse_softmax_cross_entropy_with_logits(labels=np.array([2]),
                                                       logits=sd.reshape(x * x, [1, 3]) + x)),
}


def _named(name):
    body = BODIES[name]

    def fn(x):
        return body(x)
    fn.__name__ = fn.__qualname__ = name
    return fn


def _eager(fn, x):
    xt = sd.constant(x)
    with sd.GradientTape() as tape:
        tape.watch(xt)
        y = fn(xt)
    return tape.gradient(y, xt).numpy()


@pytest.mark.parametrize("name", sorted(BODIES))
def test_sd_functions_in_compiled_code_give_the_eager_tapes_gradient(name):
    fn = _named(name)
    want = _eager(fn, X)
    np.testing.assert_allclose(sd.grad(fn)(X), want, rtol=1e-6)
    np.testing.assert_allclose(_eager(sd.function(fn), X), want, rtol=1e-6)


def test_a_srcdiff_function_without_a_numpy_form_is_refused_not_dropped():
    def filled(x):
        return np.sum(sd.fill([3], 2.0) * x)

    with pytest.raises(sd.CompileError, match="computed a Tensor"):
        _eager(sd.function(filled), X)


@pytest.mark.parametrize("shape", [(2, 3), (3, 2)])
def test_a_constant_reshaped_or_broadcast_passes_the_gradient_back(shape):
    def reshaped(x):
        return np.sum(np.sin(sd.constant(x, shape=shape)) * np.arange(6.0).reshape(shape))

    def broadcast(v):
        return np.sum(np.sin(sd.constant(v, shape=shape)) * np.arange(6.0).reshape(shape))

    x, v = np.linspace(-1.0, 1.0, 6), np.array(0.4)
    weights = np.arange(6.0).reshape(shape)
    np.testing.assert_allclose(sd.grad(reshaped)(x),
                               (np.cos(x.reshape(shape)) * weights).ravel(), rtol=1e-12)
    np.testing.assert_allclose(sd.grad(broadcast)(v), np.sum(np.cos(v) * weights), rtol=1e-12)
