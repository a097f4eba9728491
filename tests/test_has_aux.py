"""has_aux=True for sd.grad and sd.value_and_grad (JAX's convention): f returns
(value, aux), the gradient is of the value (checked against finite differences and
against has_aux=False on the value alone), aux passes through untouched, with wrt
tuples, pytree arguments, verbose, on tapes, and as a derivative of a derivative.
Also: a derivative srcdiff made, called on a pytree a tape watches, is recorded."""
import numpy as np
import pytest

import srcdiff as sd
from compiler_programs import finite_difference

RNG = np.random.default_rng(11)
W = RNG.normal(size=(3, 2))
X = RNG.normal(size=(4, 3))


def loss_and_stats(W, x):
    pred = np.tanh(x @ W)
    loss = np.mean(pred ** 2)
    return loss, {"pred": pred, "name": "mse", "count": 4, "top": np.argmax(pred, axis=1)}


def loss_only(W, x):
    pred = np.tanh(x @ W)
    return np.mean(pred ** 2)


def returns_a_pair_by_name(W, x):
    pred = np.tanh(x @ W)
    pair = (np.sum(pred), [pred, 2.0])
    return pair


def tree_loss(params, x):
    h = np.tanh(x @ params["W"] + params["b"])
    return np.sum(h ** 2), h


def tree_loss_only(params, x):
    h = np.tanh(x @ params["W"] + params["b"])
    return np.sum(h ** 2)


def scalar_pair(x):
    return np.sin(x) * x, x * 2.0


def no_pair(W, x):
    return np.sum(x @ W)


def triple(W, x):
    return np.sum(x @ W), 1.0, 2.0


def vector_value(W, x):
    return x @ W, 0.0


def assert_same_aux(aux, expected):
    assert aux.keys() == expected.keys()
    for key in aux:
        np.testing.assert_array_equal(aux[key], expected[key])


def test_grad_returns_the_gradient_and_aux():
    dW, aux = sd.grad(loss_and_stats, has_aux=True)(W, X)
    np.testing.assert_allclose(dW, finite_difference(loss_only, (W, X), 0), rtol=1e-6,
                               atol=1e-9)
    np.testing.assert_allclose(dW, sd.grad(loss_only)(W, X), rtol=1e-12)
    assert_same_aux(aux, loss_and_stats(W, X)[1])
    assert aux["name"] == "mse" and aux["count"] == 4


def test_value_and_grad_returns_the_pair_and_the_gradient():
    (value, aux), dW = sd.value_and_grad(loss_and_stats, has_aux=True)(W, X)
    expected_value, expected_grad = sd.value_and_grad(loss_only)(W, X)
    assert value == pytest.approx(expected_value, rel=1e-12)
    np.testing.assert_allclose(dW, expected_grad, rtol=1e-12)
    assert_same_aux(aux, loss_and_stats(W, X)[1])


def test_wrt_tuple():
    (dW, dx), aux = sd.grad(loss_and_stats, wrt=(0, "x"), has_aux=True)(W, X)
    for g, i in ((dW, 0), (dx, 1)):
        np.testing.assert_allclose(g, finite_difference(loss_only, (W, X), i), rtol=1e-6,
                                   atol=1e-9)
    np.testing.assert_array_equal(aux["pred"], np.tanh(X @ W))


def test_a_pair_returned_by_name():
    dW, aux = sd.grad(returns_a_pair_by_name, has_aux=True)(W, X)
    np.testing.assert_allclose(dW, X.T @ (1 - np.tanh(X @ W) ** 2), rtol=1e-12)
    np.testing.assert_array_equal(aux[0], np.tanh(X @ W))
    assert aux[1] == 2.0


def test_pytree_argument():
    params = {"W": W, "b": RNG.normal(size=2)}
    (grads, dx), h = sd.grad(tree_loss, wrt=(0, 1), has_aux=True)(params, X)
    expected = sd.grad(tree_loss_only, wrt=(0, 1))(params, X)
    for key in params:
        np.testing.assert_allclose(grads[key], expected[0][key], rtol=1e-12)
    np.testing.assert_allclose(dx, expected[1], rtol=1e-12)
    np.testing.assert_array_equal(h, np.tanh(X @ W + params["b"]))


def test_verbose_prints_the_adjoint(capsys):
    sd.grad(loss_and_stats, has_aux=True, verbose=True)
    assert "def loss_and_stats_backward" in capsys.readouterr().out


def test_scalar_float_argument():
    g, aux = sd.grad(scalar_pair, has_aux=True)(0.7)
    assert g == pytest.approx(np.cos(0.7) * 0.7 + np.sin(0.7), rel=1e-12)
    assert aux == pytest.approx(1.4)


@pytest.mark.parametrize("f, error, match", [
    (no_pair, TypeError, "must return a pair \\(value, aux\\), but it returned a float64"),
    (triple, TypeError, "a tuple of 3"),
    (vector_value, ValueError, "scalar output"),
])
def test_bad_use(f, error, match):
    with pytest.raises(error, match=match):
        sd.grad(f, has_aux=True)(W, X)
    with pytest.raises(error, match=match):
        sd.value_and_grad(f, has_aux=True)(W, X)


def test_a_pair_without_has_aux_says_to_pass_it():
    with pytest.raises(ValueError, match="has_aux=True"):
        sd.grad(loss_and_stats)(W, X)


# --- on tapes ---

def test_under_a_tape_the_gradient_is_recorded_and_aux_passes():
    x = sd.constant(0.7, dtype=sd.float64)
    with sd.GradientTape() as tape:
        tape.watch(x)
        g, aux = sd.grad(scalar_pair, has_aux=True)(x)
    second = tape.gradient(g, x)
    assert float(second) == pytest.approx(2 * np.cos(0.7) - 0.7 * np.sin(0.7), rel=1e-12)
    assert float(aux) == pytest.approx(1.4)


def test_a_derivative_of_a_derivative_with_aux():
    second, aux = sd.grad(sd.grad(scalar_pair, has_aux=True), has_aux=True)(0.7)
    assert second == pytest.approx(2 * np.cos(0.7) - 0.7 * np.sin(0.7), rel=1e-12)
    assert aux == pytest.approx(1.4)
    with pytest.raises(ValueError, match="scalar output"):
        sd.grad(sd.grad(scalar_pair, has_aux=True))(0.7)


def test_a_pytree_a_tape_watches_is_recorded_through_a_derivative():
    """sd.grad(f)(params) with params a dict of watched Tensors: the outer tape sees how
    the gradient depends on them (it gave None, as if unconnected, before)."""
    params = {"W": sd.constant(W), "b": sd.constant(RNG.normal(size=2))}
    v = {"W": RNG.normal(size=W.shape), "b": RNG.normal(size=2)}
    with sd.GradientTape() as tape:
        tape.watch(params)
        g = sd.grad(tree_loss_only)(params, X)
        directional = sd.reduce_sum(g["W"] * v["W"]) + sd.reduce_sum(g["b"] * v["b"])
    hv = tape.gradient(directional, params)
    plain = {k: p.numpy() for k, p in params.items()}

    def along(key, entry):  # d/d params[key][entry] of <grad f, v>, by central differences
        def directional_at(value):
            moved = {k: a.copy() for k, a in plain.items()}
            moved[key][entry] = value
            grads = sd.grad(tree_loss_only)(moved, X)
            return sum(np.sum(grads[k] * v[k]) for k in grads)
        at = plain[key][entry]
        return (directional_at(at + 1e-6) - directional_at(at - 1e-6)) / 2e-6

    for key in params:
        expected = np.array([along(key, e) for e in np.ndindex(plain[key].shape)])
        np.testing.assert_allclose(hv[key].numpy().ravel(), expected, rtol=1e-5, atol=1e-7)
